//! The layout lab: what a layout can hold and until when, for people
//! choosing or judging one (`snowmint layout`, `GET /api/v1/layout`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::layout::Layout;
use crate::time::Iso8601;

/// One field in a [`LayoutReport`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FieldReport {
    /// The field's name.
    pub name: String,
    /// Its width in bits.
    pub bits: u32,
    /// Where its lowest bit sits.
    pub shift: u32,
    /// The largest value an ID can hold in it.
    pub max: u64,
}

/// The figures of a layout, computed from its fields and a time "now".
/// With the `serde` feature it serializes to the JSON of `snowmint layout
/// --json` and `GET /api/v1/layout`.
///
/// ```
/// use snowmint::{Layout, LayoutReport};
/// let r = LayoutReport::new(&Layout::TWITTER, 1704067200000);
/// assert_eq!(r.ids_per_unit, 4194304);
/// assert_eq!(r.end, "2080-07-10T17:30:30.208Z");
/// assert_eq!(r.js_safe_until.as_deref(), Some("2010-11-28T22:14:18.304Z"));
/// // 24 days and some hours after the epoch.
/// assert_eq!(r.js_safe_for_ms.unwrap() / 86_400_000, 24);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LayoutReport {
    /// The preset's name, or `custom`.
    pub layout: String,
    /// The layout as a spec ([`Layout::spec`]).
    pub spec: String,
    /// The epoch, Unix ms.
    pub epoch_ms: u64,
    /// The epoch, ISO-8601 UTC.
    pub epoch: String,
    /// Milliseconds per step of the time field.
    pub unit_ms: u64,
    /// The fields, most significant first.
    pub fields: Vec<FieldReport>,
    /// The widths added up; bits above are 0.
    pub bits_used: u32,
    /// Distinct IDs in one time unit, all nodes together.
    pub ids_per_unit: u64,
    /// The last millisecond the time field can hold, Unix ms.
    pub end_ms: u64,
    /// [`end_ms`](Self::end_ms), ISO-8601 UTC.
    pub end: String,
    /// The last millisecond at which every ID of its time unit is at most
    /// 2^53 - 1 (an exact JavaScript number), Unix ms; `None` if no time
    /// ever was.
    pub js_safe_until_ms: Option<u64>,
    /// [`js_safe_until_ms`](Self::js_safe_until_ms), ISO-8601 UTC.
    pub js_safe_until: Option<String>,
    /// How long after the epoch IDs stayed safe in JavaScript, ms.
    pub js_safe_for_ms: Option<u64>,
    /// The time the figures below were computed at, Unix ms.
    pub now_ms: u64,
    /// Milliseconds from now until [`end_ms`](Self::end_ms); negative once
    /// the layout has run out.
    pub end_in_ms: i64,
}

/// Where a layout's IDs stand against JavaScript's exact numbers (2^53 - 1)
/// at the report's time: the one rule every surface words in its own
/// language ([`LayoutReport::js_safety`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsSafety<'a> {
    /// Every ID of the layout, to its end, is an exact JavaScript number.
    Always {
        /// The last safe millisecond, ISO-8601 UTC (the layout's end or later).
        until: &'a str,
    },
    /// IDs stopped being exact JavaScript numbers before the report's time.
    Stopped {
        /// The last safe millisecond, ISO-8601 UTC.
        until: &'a str,
        /// How long after the epoch that was, ms.
        after_ms: u64,
    },
    /// IDs will stop being exact JavaScript numbers after the report's time.
    Stops {
        /// The last safe millisecond, ISO-8601 UTC.
        until: &'a str,
        /// How long after the epoch that is, ms.
        after_ms: u64,
    },
    /// Not even the epoch's IDs are exact JavaScript numbers.
    Never,
}

impl LayoutReport {
    /// Where this layout's IDs stand against JavaScript's exact numbers at
    /// [`now_ms`](Self::now_ms).
    ///
    /// ```
    /// use snowmint::{JsSafety, Layout, LayoutReport};
    ///
    /// let r = LayoutReport::new(&Layout::TWITTER, 1_700_000_000_000);
    /// assert!(matches!(r.js_safety(), JsSafety::Stopped { after_ms, .. } if after_ms / 86_400_000 == 24));
    /// ```
    pub fn js_safety(&self) -> JsSafety<'_> {
        match (
            self.js_safe_until.as_deref(),
            self.js_safe_until_ms,
            self.js_safe_for_ms,
        ) {
            (Some(until), Some(ms), Some(_)) if ms >= self.end_ms => JsSafety::Always { until },
            (Some(until), Some(ms), Some(after_ms)) if ms < self.now_ms => {
                JsSafety::Stopped { until, after_ms }
            }
            (Some(until), _, Some(after_ms)) => JsSafety::Stops { until, after_ms },
            _ => JsSafety::Never,
        }
    }

    /// The figures of `layout` at `now_ms`.
    pub fn new(layout: &Layout, now_ms: u64) -> LayoutReport {
        let end_ms = layout.max_timestamp_ms();
        let safe = layout.js_safe_until_ms();
        LayoutReport {
            layout: String::from(layout.name()),
            spec: layout.spec(),
            epoch_ms: layout.epoch_ms(),
            epoch: iso(layout.epoch_ms()),
            unit_ms: layout.unit_ms(),
            fields: layout
                .fields()
                .map(|f| FieldReport {
                    name: String::from(f.name()),
                    bits: f.bits(),
                    shift: f.shift(),
                    max: f.max(),
                })
                .collect(),
            bits_used: layout.total_bits(),
            ids_per_unit: layout.ids_per_unit(),
            end_ms,
            end: iso(end_ms),
            js_safe_until_ms: safe,
            js_safe_until: safe.map(iso),
            js_safe_for_ms: safe.map(|s| s - layout.epoch_ms()),
            now_ms,
            end_in_ms: (i128::from(end_ms) - i128::from(now_ms))
                .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        }
    }
}

fn iso(ms: u64) -> String {
    // A layout's times end in 9999 (`time::MAX_UNIX_MS`), far inside i64.
    format!("{}", Iso8601(ms as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ten_millisecond_layout_against_the_formula() {
        // 2020 epoch, 10 ms units, 40 bits of time, 8 of node, 15 of step.
        let l =
            Layout::parse("epoch=2020-01-01;unit=10ms;fields=timestamp:40,node:8,step:15").unwrap();
        let epoch = 1_577_836_800_000u64;
        let r = LayoutReport::new(&l, epoch);
        assert_eq!(r.ids_per_unit, 1 << 23);
        // The last unit is 2^40 - 1; its last millisecond is 9 ms later.
        assert_eq!(r.end_ms, epoch + ((1u64 << 40) - 1) * 10 + 9);
        // Every ID of unit d is at most (d << 23) | (2^23 - 1), which is at
        // most 2^53 - 1 while d <= 2^30 - 1.
        let last_safe_unit = (1u64 << 30) - 1;
        assert_eq!(r.js_safe_until_ms, Some(epoch + last_safe_unit * 10 + 9));
        let max_id = (last_safe_unit << 23) | ((1 << 23) - 1);
        assert_eq!(max_id, (1 << 53) - 1);
        assert_eq!(r.end_in_ms, (r.end_ms - epoch) as i64);
        assert_eq!(
            r.fields.iter().map(|f| f.shift).collect::<Vec<_>>(),
            [23, 15, 0]
        );
    }

    #[test]
    fn safe_forever_and_never() {
        // 30 bits of time, 12 below: every ID is below 2^42.
        let l = Layout::parse("epoch=0;fields=timestamp:30,seq:12").unwrap();
        assert_eq!(l.js_safe_until_ms(), Some(l.max_timestamp_ms()));
        // 54 bits below the time: even the epoch's last ID is 2^54 - 1.
        let l = Layout::parse("epoch=0;fields=timestamp:9,node:54").unwrap();
        assert_eq!(l.js_safe_until_ms(), None);
        let r = LayoutReport::new(&l, 0);
        assert_eq!((r.js_safe_until, r.js_safe_for_ms), (None, None));
    }
}
