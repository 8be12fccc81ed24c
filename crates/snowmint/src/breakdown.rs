//! An ID taken apart for people: the values, the time and the 64 bits split
//! by segment. With the `serde` feature it serializes to exactly the JSON
//! object of the contract (CLI `--json`, `/api/v1/compose`, `/api/v1/decode`).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::error::Field;
use crate::id::SnowflakeId;
use crate::layout::Layout;
use crate::time::Iso8601;

/// One segment of the 64 bits: the sign bit (where the layout has one),
/// bits the layout leaves unused, then each field of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Segment {
    /// `sign`, `unused`, or the field's own name in the layout
    /// (`timestamp`, then Twitter's `datacenter`, `worker`, `sequence`,
    /// Discord's `worker`, `process`, `increment`, Sonyflake's `sequence`,
    /// `machine`, ...).
    pub name: String,
    /// The name for people: underscores shown as spaces (Mastodon's
    /// `sequence data`). For display; not serialized.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub label: String,
    /// The slot the field fills ([`crate::LayoutField::slot`]), for
    /// colours that stay the same across layouts; not serialized.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub slot: Option<Field>,
    /// Width in bits.
    pub bits: u32,
    /// The field's value as a number (the timestamp in the layout's units
    /// since the epoch: milliseconds, or 10 ms for Sonyflake).
    pub value: u64,
    /// The segment's bits, `bits` characters of `0` and `1`.
    pub binary: String,
    /// Position of the segment's most significant bit (63 = top).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub msb: u32,
    /// Position of the segment's least significant bit.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub lsb: u32,
}

impl Segment {
    /// Whether the segment is a field below the time (not the time, the
    /// sign bit or unused bits; no layout may call a field `sign` or
    /// `unused`): the fields [`Layout::node_fields`] lists.
    ///
    /// ```
    /// let b = snowmint::Layout::SONYFLAKE.breakdown(snowmint::SnowflakeId::MIN);
    /// let nodes: Vec<&str> = b.segments.iter().filter(|s| s.is_node()).map(|s| s.name.as_str()).collect();
    /// assert_eq!(nodes, ["sequence", "machine"]);
    /// ```
    pub fn is_node(&self) -> bool {
        self.slot != Some(Field::Timestamp) && self.name != "sign" && self.name != "unused"
    }
}

/// An ID with everything a person wants to see of it.
///
/// ```
/// let b = snowmint::SnowflakeId::new(4194439168)?.breakdown();
/// assert_eq!(b.time, "2010-11-04T01:42:55.657Z");
/// let bits: Vec<&str> = b.segments.iter().map(|s| s.binary.as_str()).collect();
/// assert_eq!(
///     bits.join(" | "),
///     "0 | 00000000000000000000000000000001111101000 | 00001 | 00001 | 000000000000"
/// );
/// assert_eq!((b.segments[1].msb, b.segments[1].lsb), (62, 22));
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Breakdown {
    /// The ID (a decimal string in JSON).
    pub id: SnowflakeId,
    /// Unix milliseconds.
    pub timestamp_ms: u64,
    /// Milliseconds since the layout's epoch (the start of the time unit).
    pub delta_ms: u64,
    /// ISO-8601 UTC with milliseconds.
    pub time: String,
    /// Datacenter ID (Discord's internal worker ID; 0 where the layout has
    /// no such field).
    pub datacenter: u64,
    /// Worker ID (Discord's process, Instagram's shard, Sonyflake's machine).
    pub worker: u64,
    /// Sequence (Discord's increment, Mastodon's sequence data).
    pub sequence: u64,
    /// All 64 bits, most significant first.
    pub binary: String,
    /// The segments, most significant first. Zero-width fields have no
    /// bits to show and are left out, and so is the sign where it is the
    /// timestamp's top bit (Instagram, Mastodon).
    pub segments: Vec<Segment>,
}

impl Layout {
    /// Takes `id` apart for display; see [`Breakdown`].
    pub fn breakdown(&self, id: SnowflakeId) -> Breakdown {
        let parts = self.decode(id);
        let delta = parts.timestamp_ms - self.epoch_ms();
        let binary = id.binary().to_string();
        let total = self.total_bits();
        let mut pieces: Vec<(&str, Option<Field>, u32)> = Vec::new();
        if total < 64 {
            pieces.push(("sign", None, 1));
        }
        if total < 63 {
            pieces.push(("unused", None, 63 - total));
        }
        pieces.extend(self.fields().map(|f| (f.name(), f.slot(), f.bits())));
        let mut start = 0u32;
        let segments = pieces
            .into_iter()
            .map(|(name, slot, bits)| {
                let text = &binary[start as usize..(start + bits) as usize];
                let seg = Segment {
                    name: name.to_string(),
                    label: name.replace('_', " "),
                    slot,
                    bits,
                    // At most 64 bits of 0 and 1 always parse.
                    value: u64::from_str_radix(text, 2).unwrap_or(0),
                    binary: text.to_string(),
                    msb: 63 - start,
                    lsb: 64 - start - bits,
                };
                start += bits;
                seg
            })
            .collect();
        Breakdown {
            id,
            timestamp_ms: parts.timestamp_ms,
            delta_ms: delta,
            time: format!("{}", Iso8601(parts.timestamp_ms as i64)),
            datacenter: parts.datacenter,
            worker: parts.worker,
            sequence: parts.sequence,
            binary,
            segments,
        }
    }
}

impl SnowflakeId {
    /// Takes the ID apart for display, in the Twitter layout.
    pub fn breakdown(self) -> Breakdown {
        Layout::TWITTER.breakdown(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_width_fields_are_left_out() {
        let layout = Layout::new(0, 41, 0, 22, 0).unwrap();
        let b = layout.breakdown(SnowflakeId::MAX);
        let names: Vec<&str> = b.segments.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["sign", "timestamp", "worker"]);
        assert_eq!((b.segments[2].msb, b.segments[2].lsb), (21, 0));

        let layout = Layout::new(0, 41, 0, 10, 12).unwrap();
        let b = layout.breakdown(SnowflakeId::MAX);
        let bits: Vec<(u32, u32)> = b.segments.iter().map(|s| (s.msb, s.lsb)).collect();
        assert_eq!(bits, [(63, 63), (62, 22), (21, 12), (11, 0)]);
    }

    #[test]
    fn unused_top_bits_are_a_segment() {
        let layout = Layout::parse("epoch=0;fields=timestamp:40,node:8").unwrap();
        let b = layout.breakdown(SnowflakeId::new((5 << 8) | 3).unwrap());
        let segs: Vec<(&str, u32, u64)> = b
            .segments
            .iter()
            .map(|s| (s.name.as_str(), s.bits, s.value))
            .collect();
        assert_eq!(
            segs,
            [
                ("sign", 1, 0),
                ("unused", 15, 0),
                ("timestamp", 40, 5),
                ("node", 8, 3)
            ]
        );
        assert_eq!(b.timestamp_ms, 5);
    }
}
