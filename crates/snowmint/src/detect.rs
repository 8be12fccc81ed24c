//! "Which system made these IDs?": candidate layouts ranked by how well a
//! list of IDs fits each.
//!
//! Every 63-bit number decodes in every layout, so the ranking weighs what
//! real generators leave behind, each worked out per layout:
//!
//! 1. **Times between the layout's epoch and now.** An ID that would have
//!    been minted in the future (past a day of clock skew) was not made by
//!    this layout; one with bits above a narrow layout's fields neither.
//! 2. **Node fields constant or few.** IDs from one system come from few
//!    machines: a field that takes one value across the list is a node
//!    field in the right place, one that takes many is probably time or
//!    sequence bits seen through the wrong layout.
//! 3. **Sequences small for their width.** A sequence restarts at 0 in
//!    every time unit, so it is mostly small; read through the wrong
//!    layout, it holds node or time bits and is large.
//! 4. **IDs increasing with time**, in the order given: noted, and the same
//!    for every layout whose time is its top field.
//!
//! One ID carries no evidence of the second kind, and layouts that differ
//! only in epoch (Twitter's and Discord's) tell apart only by time: the
//! [`Detection`] says when the best candidates are too close to call.

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::error::Field;
use crate::id::SnowflakeId;
use crate::layout::Layout;
use crate::time::Iso8601;

/// Allowed lead of an ID's time over "now": clocks disagree.
const SKEW_MS: u64 = 86_400_000;
/// Candidates within this many thousandths of the best are a tie.
const TIE: u32 = 50;

/// Why a candidate ranks where it does; `Display` in English.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// `count` IDs have bits set above the layout's `bits`.
    TooWide {
        /// IDs that do not fit.
        count: usize,
        /// The layout's width.
        bits: u32,
    },
    /// Every time lies between the epoch and now.
    InRange,
    /// `count` IDs would be minted after now, the latest at `latest_ms`.
    Future {
        /// IDs in the future.
        count: usize,
        /// The latest of their times, Unix ms.
        latest_ms: u64,
    },
    /// These node fields take one value across the list.
    Constant {
        /// The fields' names.
        fields: Vec<String>,
    },
    /// A node field takes `distinct` values across `of` IDs.
    Varies {
        /// The field's name.
        field: String,
        /// How many values it takes.
        distinct: usize,
        /// Of how many IDs.
        of: usize,
    },
    /// The sequence field is at most `max` in `bits` bits.
    SmallSequence {
        /// The field's name.
        field: String,
        /// Its largest value in the list.
        max: u64,
        /// Its width.
        bits: u32,
    },
    /// The sequence field reaches `max`, large for `bits` bits.
    LargeSequence {
        /// The field's name.
        field: String,
        /// Its largest value in the list.
        max: u64,
        /// Its width.
        bits: u32,
    },
    /// The IDs, in the order given, increase with time.
    Increasing,
    /// One ID: node fields tell nothing.
    OneId,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::TooWide { count, bits } => {
                write!(f, "{count} with bits set above the layout's {bits}")
            }
            Reason::InRange => f.write_str("all times between the epoch and now"),
            Reason::Future { count, latest_ms } => write!(
                f,
                "{count} would be minted in the future (up to {})",
                Iso8601(*latest_ms as i64)
            ),
            Reason::Constant { fields } => {
                write!(f, "{} constant across the list", fields.join(", "))
            }
            Reason::Varies {
                field,
                distinct,
                of,
            } => write!(f, "{field} takes {distinct} values in {of} IDs"),
            Reason::SmallSequence { field, max, bits } => {
                write!(f, "{field} small for its {bits} bits (at most {max})")
            }
            Reason::LargeSequence { field, max, bits } => {
                write!(
                    f,
                    "{field} large for a sequence of {bits} bits (up to {max})"
                )
            }
            Reason::Increasing => f.write_str("IDs increase with time"),
            Reason::OneId => f.write_str("one ID says nothing about node fields"),
        }
    }
}

/// One layout's fit, from [`detect`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Candidate {
    /// The layout.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub layout: Layout,
    /// The layout as `--layout` takes it: a preset's name or a spec.
    #[cfg_attr(feature = "serde", serde(rename = "layout"))]
    pub param: String,
    /// 0 (cannot be) to 1 (fits as well as IDs can).
    pub score: f64,
    /// The earliest decoded time, ISO-8601 UTC (`None` if no ID fits).
    pub from: Option<String>,
    /// The latest decoded time.
    pub to: Option<String>,
    /// The reasons, in English, joined by "; ".
    pub why: String,
    /// The reasons, for a surface that words them itself.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub reasons: Vec<Reason>,
}

/// Candidate layouts for a list of IDs, best first; with the `serde`
/// feature the JSON of `snowmint detect --json` and `GET /api/v1/detect`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Detection {
    /// How many IDs were looked at.
    pub ids: usize,
    /// Whether the best candidates are too close to call (always so for
    /// one ID that fits several layouts).
    pub ambiguous: bool,
    /// For an ambiguous result: which layouts tie, in English.
    pub note: Option<String>,
    /// How many of the first candidates tie for best (those the note
    /// names): 1 when one is best, 0 when no layout fits; for a surface
    /// that words the note itself.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub tied: usize,
    /// Every candidate, best first.
    pub candidates: Vec<Candidate>,
}

/// Ranks `layouts` (the [presets](Layout::PRESETS) when empty) by how well
/// `ids` fit each, at `now_ms`.
///
/// ```
/// use snowmint::{Layout, SnowflakeId, detect};
/// // Twenty IDs of one Twitter worker, about one a second in 2024.
/// let ids: Vec<SnowflakeId> = (0..20)
///     .map(|i| Layout::TWITTER.compose(1704067200000 + i * 1237, 3, 7, i % 2).unwrap())
///     .collect();
/// let d = detect(&ids, &[], 1735689600000);
/// assert_eq!(d.candidates[0].layout, Layout::TWITTER);
/// assert!(!d.ambiguous);
/// // Discord's epoch is later: the same bits would be minted in 2028.
/// let discord = d.candidates.iter().find(|c| c.layout == Layout::DISCORD).unwrap();
/// assert!(discord.why.contains("in the future"), "{}", discord.why);
/// ```
pub fn detect(ids: &[SnowflakeId], layouts: &[Layout], now_ms: u64) -> Detection {
    let layouts: &[Layout] = if layouts.is_empty() {
        &Layout::PRESETS
    } else {
        layouts
    };
    // An ID given twice is no more evidence than once: each counts once,
    // in the order it was first given.
    let mut seen = BTreeSet::new();
    let distinct: Vec<SnowflakeId> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
    let mut candidates: Vec<(u32, Candidate)> = layouts
        .iter()
        .map(|l| {
            let (score, from_ms, to_ms, reasons) = judge(l, &distinct, now_ms);
            let why = reasons
                .iter()
                .map(|r| format!("{r}"))
                .collect::<Vec<_>>()
                .join("; ");
            let iso = |ms: u64| format!("{}", Iso8601(ms as i64));
            let candidate = Candidate {
                layout: *l,
                param: l.to_param(),
                score: f64::from(score) / 1000.0,
                from: from_ms.map(iso),
                to: to_ms.map(iso),
                why,
                reasons,
            };
            (score, candidate)
        })
        .collect();
    // Stable: equal scores keep the order given (the presets' order).
    candidates.sort_by_key(|c| core::cmp::Reverse(c.0));
    let best = candidates.first().map_or(0, |c| c.0);
    // One ID cannot tell layouts apart however its bits happen to score:
    // every layout it fits ties.
    let one = distinct.len() == 1;
    let tied: Vec<&str> = candidates
        .iter()
        .filter(|c| best > 0 && (c.0 + TIE >= best || one && c.0 > 0))
        .map(|c| c.1.layout.name())
        .collect();
    let ambiguous = tied.len() > 1;
    let note = ambiguous.then(|| {
        format!(
            "ambiguous: {} could come from {} alike; more IDs from the same system tell them apart",
            if one { "this ID" } else { "these IDs" },
            tied.join(", ")
        )
    });
    Detection {
        ids: ids.len(),
        ambiguous,
        note,
        tied: tied.len(),
        candidates: candidates.into_iter().map(|c| c.1).collect(),
    }
}

/// Score in thousandths, the time range of the IDs that fit, the reasons.
fn judge(
    layout: &Layout,
    ids: &[SnowflakeId],
    now_ms: u64,
) -> (u32, Option<u64>, Option<u64>, Vec<Reason>) {
    let mut reasons = Vec::new();
    let wide = ids.iter().filter(|id| id.get() > layout.max_id()).count();
    if wide > 0 {
        reasons.push(Reason::TooWide {
            count: wide,
            bits: layout.total_bits(),
        });
    }
    let fit: Vec<SnowflakeId> = ids
        .iter()
        .copied()
        .filter(|id| id.get() <= layout.max_id())
        .collect();
    if fit.is_empty() {
        return (0, None, None, reasons);
    }
    let times: Vec<u64> = fit
        .iter()
        .map(|&id| layout.decode(id).timestamp_ms)
        .collect();
    let (from, to) = (
        times.iter().copied().min().unwrap_or(0),
        times.iter().copied().max().unwrap_or(0),
    );
    let future = times
        .iter()
        .filter(|&&t| t > now_ms.saturating_add(SKEW_MS))
        .count();
    if future > 0 {
        reasons.push(Reason::Future {
            count: future,
            latest_ms: to,
        });
    } else if wide == 0 {
        reasons.push(Reason::InRange);
    }

    // Node fields: all but the time and the sequence slot.
    let n = fit.len();
    let mut node_score = 500u32;
    if n == 1 {
        reasons.push(Reason::OneId);
    } else {
        let mut constant = Vec::new();
        let mut scores = Vec::new();
        for f in layout
            .node_fields()
            .filter(|f| f.slot() != Some(Field::Sequence))
        {
            let mut values: Vec<u64> = fit.iter().map(|&id| f.value(id)).collect();
            values.sort_unstable();
            values.dedup();
            scores.push(1000 / values.len() as u32);
            if values.len() == 1 {
                constant.push(String::from(f.name()));
            } else {
                reasons.push(Reason::Varies {
                    field: String::from(f.name()),
                    distinct: values.len(),
                    of: n,
                });
            }
        }
        if !constant.is_empty() {
            reasons.push(Reason::Constant { fields: constant });
        }
        if !scores.is_empty() {
            node_score = scores.iter().sum::<u32>() / scores.len() as u32;
        }
    }

    // The sequence: how many of its bits the values use.
    let mut seq_score = 500u32;
    if let Some(f) = layout
        .node_fields()
        .find(|f| f.slot() == Some(Field::Sequence))
    {
        let values: Vec<u64> = fit.iter().map(|&id| f.value(id)).collect();
        // In u64: a list of millions of IDs sums past u32.
        let used: u64 = values
            .iter()
            .map(|&v| u64::from(1000 * bit_len(v) / f.bits()))
            .sum();
        seq_score = 1000 - (used / n as u64) as u32;
        let max = values.iter().copied().max().unwrap_or(0);
        let field = String::from(f.name());
        reasons.push(if seq_score >= 500 {
            Reason::SmallSequence {
                field,
                max,
                bits: f.bits(),
            }
        } else {
            Reason::LargeSequence {
                field,
                max,
                bits: f.bits(),
            }
        });
    }

    if n > 1 && times.windows(2).all(|w| w[0] <= w[1]) {
        reasons.push(Reason::Increasing);
    }

    let shape = 200 + (400 * node_score + 400 * seq_score) / 1000;
    // Any ID that does not fit, or lies in the future, all but rules the
    // layout out; the rest still ranks it among the ruled out.
    let score = if future > 0 || wide > 0 {
        let ok = (n - future) as u64;
        (u64::from(shape) * ok / ids.len() as u64 / 20) as u32
    } else {
        shape
    };
    (score, Some(from), Some(to), reasons)
}

/// Bits needed to write `v`: 0 for 0.
fn bit_len(v: u64) -> u32 {
    64 - v.leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-01-01T00:00:00Z.
    const NOW: u64 = 1_767_225_600_000;

    fn ms(iso: &str) -> u64 {
        crate::time::parse_iso8601(iso).unwrap() as u64
    }

    fn first(d: &Detection) -> &str {
        d.candidates[0].layout.name()
    }

    #[test]
    fn sonyflake_ids_from_one_machine() {
        // sony/sonyflake v1 `toID`: elapsed 10 ms units << 24 | sequence
        // << 16 | machine; the machine ID defaults to the low 16 bits of
        // the private IP address (here 10.0.3.42). IDs a few seconds apart,
        // a few in the same unit (sequence 1, 2).
        let start = ms("2014-09-01T00:00:00Z") / 10;
        let machine = (3u64 << 8) | 42;
        let ids: Vec<SnowflakeId> = (0..20u64)
            .map(|i| {
                let t = ms("2025-11-20T08:00:00Z") + i * 3_717;
                let seq = if i % 5 == 4 { 1 + i % 3 } else { 0 };
                SnowflakeId::new(((t / 10 - start) << 24) | (seq << 16) | machine).unwrap()
            })
            .collect();
        let d = detect(&ids, &[], NOW);
        assert_eq!(first(&d), "sonyflake", "{d:#?}");
        assert!(!d.ambiguous, "{d:#?}");
        let c = &d.candidates[0];
        assert_eq!(c.from.as_deref(), Some("2025-11-20T08:00:00.000Z"));
        assert!(c.why.contains("machine constant"), "{}", c.why);
        assert!(c.why.contains("sequence small"), "{}", c.why);
    }

    #[test]
    fn twitter_ids_from_one_worker() {
        let ids: Vec<SnowflakeId> = (0..20u64)
            .map(|i| {
                let t = ms("2024-06-01T12:00:00Z") + i * 1_237;
                crate::compose(t, 2, 17, i % 3).unwrap()
            })
            .collect();
        let d = detect(&ids, &[], NOW);
        assert_eq!(first(&d), "twitter", "{d:#?}");
        assert!(!d.ambiguous, "{d:#?}");
        let twitter = &d.candidates[0];
        assert!(
            twitter.why.contains("datacenter, worker constant"),
            "{}",
            twitter.why
        );
        assert!(
            twitter.why.contains("IDs increase with time"),
            "{}",
            twitter.why
        );
    }

    #[test]
    fn instagram_ids_from_one_shard() {
        // "Sharding & IDs at Instagram": (ms - 1314220021721) << 23 | shard
        // << 10 | seq % 1024, the sequence a per-shard counter.
        let ids: Vec<SnowflakeId> = (0..20u64)
            .map(|i| {
                let t = ms("2023-03-01T00:00:00Z") + i * 60_000;
                SnowflakeId::new(((t - 1314220021721) << 23) | (1341 << 10) | ((5001 + i) % 1024))
                    .unwrap()
            })
            .collect();
        let d = detect(&ids, &[], NOW);
        assert_eq!(first(&d), "instagram", "{d:#?}");
        assert!(!d.ambiguous);
    }

    #[test]
    fn one_id_is_ambiguous() {
        let d = detect(&[SnowflakeId::new(175928847299117063).unwrap()], &[], NOW);
        assert!(d.ambiguous, "{d:#?}");
        let note = d.note.unwrap();
        assert!(
            note.contains("twitter") && note.contains("discord"),
            "{note}"
        );
        assert!(
            note.starts_with("ambiguous: this ID could come from twitter, discord"),
            "{note}"
        );
    }

    #[test]
    fn one_sonyflake_id_is_ambiguous_too() {
        // One ID of machine 10.0.3.42: its bits fit Sonyflake's layout best,
        // but one ID cannot decide.
        let start = ms("2014-09-01T00:00:00Z") / 10;
        let t = ms("2025-11-20T08:00:00Z");
        let id = SnowflakeId::new(((t / 10 - start) << 24) | (3 << 8) | 42).unwrap();
        let d = detect(&[id], &[], NOW);
        assert_eq!(first(&d), "sonyflake", "{d:#?}");
        assert!(d.ambiguous, "{d:#?}");
        let fitting = d.candidates.iter().filter(|c| c.score > 0.0).count();
        assert!(fitting > 1, "{d:#?}");
        assert_eq!(d.tied, fitting);
        let note = d.note.unwrap();
        assert!(
            note.starts_with("ambiguous: this ID could come from sonyflake, "),
            "{note}"
        );
        // Given one layout only, there is nothing to be ambiguous about.
        assert!(!detect(&[id], &[Layout::SONYFLAKE], NOW).ambiguous);
    }

    #[test]
    fn an_id_given_twice_is_one_id() {
        let id = crate::compose(ms("2024-06-01T12:00:00Z"), 2, 17, 0).unwrap();
        let once = detect(&[id], &[], NOW);
        let twice = detect(&[id, id, id], &[], NOW);
        assert!(
            twice.candidates.iter().all(|c| !c.why.contains("constant")),
            "{twice:#?}"
        );
        assert_eq!(
            (twice.ambiguous, &twice.note, twice.tied),
            (once.ambiguous, &once.note, once.tied)
        );
        assert_eq!(twice.candidates, once.candidates);
        // A repeat among others adds nothing either.
        let other = crate::compose(ms("2024-06-01T12:00:01Z"), 2, 17, 1).unwrap();
        assert_eq!(
            detect(&[id, other, id, other], &[], NOW).candidates,
            detect(&[id, other], &[], NOW).candidates
        );
    }

    #[test]
    fn a_custom_layout_competes_and_narrow_layouts_refuse_wide_ids() {
        let narrow = Layout::parse("epoch=2020-01-01;fields=timestamp:40,node:4,seq:8").unwrap();
        let ids: Vec<SnowflakeId> = (0..10u64)
            .map(|i| {
                narrow
                    .compose_fields(
                        ms("2025-01-01T00:00:00Z") + i * 999,
                        &[("node", 9), ("seq", 0)],
                    )
                    .unwrap()
            })
            .collect();
        let d = detect(&ids, &[Layout::TWITTER, narrow], NOW);
        assert_eq!(d.candidates[0].layout, narrow, "{d:#?}");
        let wide = [SnowflakeId::new(1 << 60).unwrap()];
        let d = detect(&wide, &[narrow], NOW);
        assert_eq!(d.candidates[0].score, 0.0);
        assert_eq!(d.candidates[0].from, None);
        assert!(
            d.candidates[0]
                .why
                .contains("bits set above the layout's 52")
        );
    }
}
