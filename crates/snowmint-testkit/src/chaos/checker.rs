//! The checker: reads a [`History`](super::history::History)'s mints and
//! decides, independently of the code under test, whether they keep
//! snowmint's guarantees. Only the 64-bit layout is known here, by hand.
//!
//! 1. No ID was acknowledged twice.
//! 2. Per instance and identity (datacenter, worker), IDs strictly increase
//!    in real time: if request A ended before request B started, both on the
//!    same instance and both with IDs of that identity, every such ID of A is
//!    below every such ID of B.
//! 3. Holders of one identity never interleave: the IDs one instance issued
//!    as an identity and those another instance issued as it lie in ranges
//!    that do not overlap (a later holder starts above the mark its
//!    predecessor left, so all its IDs are above all of the predecessor's).
//! 4. Within one response, IDs strictly increase.
//! 5. Holders of one identity never issue at the same time: no **holder
//!    overlap**, where one instance's mint of an identity ended before
//!    another instance's mint of it started, yet issued higher IDs. That is
//!    two holders issuing at once: the earlier one still within the
//!    reservation it made while it held the identity, below everything of
//!    the later one (so 3 may hold while 5 fails). It happened when etcd
//!    answered a lease keep-alive from a member that was no longer leader
//!    (etcd issue 15247, in Debian's etcd 3.4.23) and that answer extended
//!    the old holder's fence past its lease; renewals now count only once
//!    confirmed by raft term. See docs/distributed.md.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use super::history::Mint;

/// At most this many violations of one kind are listed; the rest are counted.
pub const LISTED_PER_KIND: usize = 20;

/// The (datacenter, worker) identity of an ID: bits 21..12.
pub fn identity(id: u64) -> (u8, u8) {
    (((id >> 17) & 31) as u8, ((id >> 12) & 31) as u8)
}

/// The Unix-ms timestamp of an ID: bits 62..22 after the Twitter epoch.
pub fn timestamp_ms(id: u64) -> u64 {
    (id >> 22) + 1_288_834_974_657
}

/// One broken guarantee, naming the mints involved by their index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// `id` was acknowledged in more than one place: the mints (an index
    /// repeats when one response holds it twice).
    Duplicate {
        /// The ID.
        id: u64,
        /// Every mint it was in, once per occurrence.
        mints: Vec<usize>,
    },
    /// Mint `earlier` ended before mint `later` started, yet an ID of the
    /// identity in `earlier` is not below one in `later`.
    OutOfOrder {
        /// The identity.
        identity: (u8, u8),
        /// The mint that ended first.
        earlier: usize,
        /// Its largest ID of the identity.
        earlier_max: u64,
        /// The mint that started after it.
        later: usize,
        /// Its smallest ID of the identity.
        later_min: u64,
    },
    /// Instances `lower` and `upper` both issued IDs of `identity` in
    /// ranges that overlap: `lower`'s mint `lower_mint` reached
    /// `lower_max`, above `upper`'s mint `upper_mint` starting at
    /// `upper_min`, which is above where `lower`'s range began.
    Interleaved {
        /// The identity.
        identity: (u8, u8),
        /// The mint whose range starts lower.
        lower_mint: usize,
        /// Its largest ID of the identity.
        lower_max: u64,
        /// The other instance's mint, starting inside that range.
        upper_mint: usize,
        /// Its smallest ID of the identity.
        upper_min: u64,
    },
    /// Mint `earlier` of instance `earlier_instance` ended before mint
    /// `later` of another instance started, both as `identity`, yet issued
    /// higher IDs: two holders of one identity issued at the same time.
    HolderOverlap {
        /// The identity.
        identity: (u8, u8),
        /// The mint that ended first.
        earlier: usize,
        /// Its instance.
        earlier_instance: usize,
        /// Its largest ID of the identity.
        earlier_max: u64,
        /// The other instance's mint that started after it.
        later: usize,
        /// Its instance.
        later_instance: usize,
        /// Its smallest ID of the identity.
        later_min: u64,
    },
    /// Within mint `mint`, the ID at `position` is not above the one before.
    NotIncreasing {
        /// The mint.
        mint: usize,
        /// The position in its answer.
        position: usize,
    },
}

impl Violation {
    /// The kind's name: `duplicate`, `out_of_order`, `interleaved`,
    /// `holder_overlap` or `not_increasing`.
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::Duplicate { .. } => "duplicate",
            Violation::OutOfOrder { .. } => "out_of_order",
            Violation::Interleaved { .. } => "interleaved",
            Violation::HolderOverlap { .. } => "holder_overlap",
            Violation::NotIncreasing { .. } => "not_increasing",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Duplicate { id, mints } => {
                write!(f, "duplicate: ID {id} acknowledged by mints {mints:?}")
            }
            Violation::OutOfOrder {
                identity: (dc, worker),
                earlier,
                earlier_max,
                later,
                later_min,
            } => write!(
                f,
                "out of order: identity {dc}/{worker}: mint {earlier} ended before mint {later} \
                 started, but issued {earlier_max} >= {later_min}"
            ),
            Violation::Interleaved {
                identity: (dc, worker),
                lower_mint,
                lower_max,
                upper_mint,
                upper_min,
            } => write!(
                f,
                "interleaved: identity {dc}/{worker}: mint {upper_mint} of another instance \
                 issued {upper_min}, inside the range of mint {lower_mint} (up to {lower_max})"
            ),
            Violation::HolderOverlap {
                identity: (dc, worker),
                earlier,
                earlier_instance,
                earlier_max,
                later,
                later_instance,
                later_min,
            } => write!(
                f,
                "holder overlap: identity {dc}/{worker}: mint {earlier} of instance \
                 {earlier_instance} ended before mint {later} of instance {later_instance} \
                 started, but issued {earlier_max} >= {later_min} (two holders at once)"
            ),
            Violation::NotIncreasing { mint, position } => write!(
                f,
                "not increasing: mint {mint}: the ID at position {position} is not above the one before"
            ),
        }
    }
}

/// What the checker found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// IDs checked.
    pub ids: u64,
    /// Extra acknowledgements of an ID already acknowledged.
    pub duplicates: u64,
    /// Violations found, per kind (all of them counted).
    pub counts: BTreeMap<&'static str, u64>,
    /// The first [`LISTED_PER_KIND`] violations of each kind.
    pub violations: Vec<Violation>,
    /// How many distinct identities minted.
    pub identities: usize,
    /// Pairs of mints of one identity on different instances where the one
    /// that ended first issued higher IDs (each also a
    /// [`Violation::HolderOverlap`]: see the module docs).
    pub holder_overlaps: u64,
}

impl Findings {
    /// Whether every guarantee held.
    pub fn passed(&self) -> bool {
        self.counts.values().all(|&n| n == 0)
    }

    fn add(&mut self, violation: Violation) {
        let count = self.counts.entry(violation.kind()).or_default();
        *count += 1;
        if *count as usize <= LISTED_PER_KIND {
            self.violations.push(violation);
        }
    }
}

/// Checks the five guarantees over `mints`.
pub fn check(mints: &[Mint]) -> Findings {
    let mut findings = Findings::default();
    check_duplicates(mints, &mut findings);
    check_real_time_order(mints, &mut findings);
    check_within_responses(mints, &mut findings);
    findings
}

fn check_duplicates(mints: &[Mint], findings: &mut Findings) {
    let mut all: Vec<u64> = mints.iter().flat_map(|m| m.ids.iter().copied()).collect();
    findings.ids = all.len() as u64;
    all.sort_unstable();
    let mut repeated = Vec::new();
    for pair in all.windows(2) {
        if pair[0] == pair[1] {
            findings.duplicates += 1;
            if repeated.last() != Some(&pair[0]) {
                repeated.push(pair[0]);
            }
        }
    }
    drop(all);
    if repeated.is_empty() {
        return;
    }
    let listed: HashSet<u64> = repeated.iter().take(LISTED_PER_KIND).copied().collect();
    let mut places: HashMap<u64, Vec<usize>> = HashMap::new();
    for (index, mint) in mints.iter().enumerate() {
        for id in &mint.ids {
            if listed.contains(id) {
                places.entry(*id).or_default().push(index);
            }
        }
    }
    for id in repeated {
        let mints = places.remove(&id).unwrap_or_default();
        findings.add(Violation::Duplicate { id, mints });
    }
}

/// The part of one mint that one identity issued.
#[derive(Debug, Clone, Copy)]
struct Segment {
    mint: usize,
    instance: usize,
    start_us: u64,
    end_us: u64,
    min: u64,
    max: u64,
}

fn check_real_time_order(mints: &[Mint], findings: &mut Findings) {
    let mut by_identity: HashMap<(u8, u8), Vec<Segment>> = HashMap::new();
    for (index, mint) in mints.iter().enumerate() {
        let mut parts: HashMap<(u8, u8), (u64, u64)> = HashMap::new();
        for &id in &mint.ids {
            let range = parts.entry(identity(id)).or_insert((id, id));
            range.0 = range.0.min(id);
            range.1 = range.1.max(id);
        }
        for (who, (min, max)) in parts {
            by_identity.entry(who).or_default().push(Segment {
                mint: index,
                instance: mint.instance,
                start_us: mint.start_us,
                end_us: mint.end_us,
                min,
                max,
            });
        }
    }
    findings.identities = by_identity.len();
    let mut identities: Vec<_> = by_identity.into_iter().collect();
    identities.sort_by_key(|(who, _)| *who);
    for (who, segments) in identities {
        // (2): per instance, in real time.
        let mut by_instance: BTreeMap<usize, Vec<Segment>> = BTreeMap::new();
        for s in &segments {
            by_instance.entry(s.instance).or_default().push(*s);
        }
        for own in by_instance.into_values() {
            for (a, b) in real_time_inversions(own) {
                findings.add(Violation::OutOfOrder {
                    identity: who,
                    earlier: a.mint,
                    earlier_max: a.max,
                    later: b.mint,
                    later_min: b.min,
                });
            }
        }
        // (5): across instances, in real time.
        for (a, b) in real_time_inversions(segments.clone())
            .into_iter()
            .filter(|(a, b)| a.instance != b.instance)
        {
            findings.holder_overlaps += 1;
            findings.add(Violation::HolderOverlap {
                identity: who,
                earlier: a.mint,
                earlier_instance: a.instance,
                earlier_max: a.max,
                later: b.mint,
                later_instance: b.instance,
                later_min: b.min,
            });
        }
        // (3): holders' ranges never overlap.
        check_interleaving(who, segments, findings);
    }
}

/// Pairs (A, B) where A ended strictly before B started and A's largest
/// ID is not below B's smallest; for each B, the A with the largest ID.
fn real_time_inversions(mut by_start: Vec<Segment>) -> Vec<(Segment, Segment)> {
    let mut by_end = by_start.clone();
    by_start.sort_by_key(|s| (s.start_us, s.mint));
    by_end.sort_by_key(|s| (s.end_us, s.mint));
    // Sweep B in start order; every A that ended strictly before B started
    // is folded into the running maximum.
    let mut ended = 0;
    let mut highest: Option<Segment> = None;
    let mut found = Vec::new();
    for b in &by_start {
        while ended < by_end.len() && by_end[ended].end_us < b.start_us {
            let a = by_end[ended];
            if highest.is_none_or(|h| a.max > h.max) {
                highest = Some(a);
            }
            ended += 1;
        }
        if let Some(a) = highest
            && a.max >= b.min
        {
            found.push((a, *b));
        }
    }
    found
}

/// (3): walking the segments of one identity in ID order, no segment may
/// start below the highest ID another instance reached before it.
fn check_interleaving(who: (u8, u8), mut segments: Vec<Segment>, findings: &mut Findings) {
    segments.sort_by_key(|s| (s.min, s.mint));
    // The highest segment so far, and the highest of any other instance.
    let mut top: Option<Segment> = None;
    let mut other: Option<Segment> = None;
    for s in segments {
        let rival = match top {
            Some(t) if t.instance != s.instance => Some(t),
            _ => other,
        };
        if let Some(r) = rival
            && r.max > s.min
        {
            findings.add(Violation::Interleaved {
                identity: who,
                lower_mint: r.mint,
                lower_max: r.max,
                upper_mint: s.mint,
                upper_min: s.min,
            });
        }
        match top {
            Some(t) if s.max <= t.max => {
                if t.instance != s.instance && other.is_none_or(|o| s.max > o.max) {
                    other = Some(s);
                }
            }
            Some(t) => {
                if t.instance != s.instance {
                    other = Some(t);
                }
                top = Some(s);
            }
            None => top = Some(s),
        }
    }
}

fn check_within_responses(mints: &[Mint], findings: &mut Findings) {
    for (index, mint) in mints.iter().enumerate() {
        for (position, pair) in mint.ids.windows(2).enumerate() {
            if pair[1] <= pair[0] {
                findings.add(Violation::NotIncreasing {
                    mint: index,
                    position: position + 1,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ID of identity `dc/worker` at millisecond `ms` after the epoch.
    fn id(ms: u64, dc: u64, worker: u64, sequence: u64) -> u64 {
        (ms << 22) | (dc << 17) | (worker << 12) | sequence
    }

    fn mint(instance: usize, start_us: u64, end_us: u64, ids: Vec<u64>) -> Mint {
        Mint {
            instance,
            start_us,
            end_us,
            count: ids.len() as u32,
            ids,
        }
    }

    /// Instance 0 mints as 1/2, hands the identity over to instance 1
    /// (whose clock lags, so it issues above the mark), and instance 2 mints
    /// as 0/0 at the same time.
    fn clean() -> Vec<Mint> {
        vec![
            mint(0, 0, 10, vec![id(100, 1, 2, 0), id(100, 1, 2, 1)]),
            mint(2, 5, 20, vec![id(100, 0, 0, 0)]),
            mint(0, 11, 30, vec![id(101, 1, 2, 0)]),
            mint(1, 40, 50, vec![id(2101, 1, 2, 0), id(2101, 1, 2, 1)]),
            // Overlaps the next one in time: no order between them.
            mint(2, 45, 60, vec![id(103, 0, 0, 5)]),
            mint(2, 46, 61, vec![id(103, 0, 0, 4)]),
        ]
    }

    #[test]
    fn the_layout_by_hand() {
        assert_eq!(identity(4194439168), (1, 1));
        assert_eq!(timestamp_ms(4194439168), 1288834975657);
    }

    #[test]
    fn a_clean_history_passes() {
        let findings = check(&clean());
        assert!(findings.passed(), "{findings:?}");
        assert_eq!(findings.ids, 8);
        assert_eq!(findings.duplicates, 0);
        assert_eq!(findings.identities, 2);
        assert!(findings.violations.is_empty());
    }

    #[test]
    fn a_duplicate_is_found_once_with_both_places() {
        let mut mints = clean();
        mints.push(mint(3, 70, 80, vec![id(50, 5, 5, 0), id(101, 1, 2, 0)]));
        let findings = check(&mints);
        assert_eq!(findings.duplicates, 1);
        assert_eq!(findings.counts["duplicate"], 1);
        assert!(findings.violations.contains(&Violation::Duplicate {
            id: id(101, 1, 2, 0),
            mints: vec![2, 6],
        }));
        // Nothing else is reported for it: the other rules are about order.
        assert_eq!(findings.counts.get("out_of_order"), None);
        assert_eq!(findings.counts.get("interleaved"), None);
        assert_eq!(findings.counts.get("not_increasing"), None);
    }

    #[test]
    fn an_instance_going_back_in_real_time_is_found() {
        let mut mints = clean();
        // Instance 1 issued below its own mint 3, after it had ended.
        mints.push(mint(1, 55, 65, vec![id(2000, 1, 2, 0)]));
        let findings = check(&mints);
        assert_eq!(findings.duplicates, 0);
        assert_eq!(
            findings.violations,
            vec![Violation::OutOfOrder {
                identity: (1, 2),
                earlier: 3,
                earlier_max: id(2101, 1, 2, 1),
                later: 6,
                later_min: id(2000, 1, 2, 0),
            }]
        );
        assert!(!findings.passed());
    }

    #[test]
    fn holders_whose_ranges_interleave_are_found() {
        let mut mints = clean();
        // Instance 3 issued as 1/2 inside the range instance 1 used.
        mints.push(mint(3, 70, 80, vec![id(2101, 1, 2, 2), id(2101, 1, 2, 3)]));
        mints[3].ids.push(id(2101, 1, 2, 5));
        let findings = check(&mints);
        assert_eq!(findings.duplicates, 0);
        let interleaved: Vec<_> = findings
            .violations
            .iter()
            .filter(|v| v.kind() == "interleaved")
            .collect();
        assert_eq!(
            interleaved,
            vec![&Violation::Interleaved {
                identity: (1, 2),
                lower_mint: 3,
                lower_max: id(2101, 1, 2, 5),
                upper_mint: 6,
                upper_min: id(2101, 1, 2, 2),
            }]
        );
        // Mint 3 ended before mint 6 started: in time, they overlap too.
        assert_eq!(findings.counts["holder_overlap"], 1);
    }

    #[test]
    fn two_holders_at_once_in_separate_ranges_fail_as_an_overlap() {
        // The old holder of 1/2 (instance 0) keeps issuing inside its own
        // reservation after instance 1 took over above it: no ID repeats and
        // the ranges stay apart, but in real time they cross.
        let mut mints = clean();
        mints.push(mint(0, 55, 65, vec![id(102, 1, 2, 0)]));
        let findings = check(&mints);
        assert!(!findings.passed(), "{findings:?}");
        assert_eq!(findings.holder_overlaps, 1);
        assert_eq!(findings.duplicates, 0);
        assert_eq!(
            findings.violations,
            vec![Violation::HolderOverlap {
                identity: (1, 2),
                earlier: 3,
                earlier_instance: 1,
                earlier_max: id(2101, 1, 2, 1),
                later: 6,
                later_instance: 0,
                later_min: id(102, 1, 2, 0),
            }]
        );
        assert!(
            findings.violations[0]
                .to_string()
                .contains("two holders at once")
        );
        assert_eq!(check(&clean()).holder_overlaps, 0);
    }

    #[test]
    fn requests_that_touch_in_time_are_not_ordered() {
        // B starts the very microsecond A ends: not "ended before started".
        let mints = vec![
            mint(0, 0, 10, vec![id(200, 1, 1, 0)]),
            mint(1, 10, 20, vec![id(100, 1, 1, 0)]),
        ];
        assert!(check(&mints).passed());
    }

    #[test]
    fn a_response_out_of_order_is_found() {
        let mut mints = clean();
        mints.push(mint(
            4,
            90,
            95,
            vec![id(300, 7, 7, 0), id(300, 7, 7, 2), id(300, 7, 7, 1)],
        ));
        let findings = check(&mints);
        assert_eq!(
            findings.violations,
            vec![Violation::NotIncreasing {
                mint: 6,
                position: 2
            }]
        );
    }

    #[test]
    fn listing_is_capped_but_counting_is_not() {
        let mints: Vec<Mint> = (0..LISTED_PER_KIND as u64 + 5)
            .map(|i| mint(0, i * 10, i * 10 + 5, vec![id(1, 0, 0, 0)]))
            .collect();
        let findings = check(&mints);
        assert_eq!(findings.duplicates, LISTED_PER_KIND as u64 + 4);
        assert_eq!(findings.counts["duplicate"], 1);
        assert_eq!(findings.counts["out_of_order"], LISTED_PER_KIND as u64 + 4);
        assert_eq!(
            findings
                .violations
                .iter()
                .filter(|v| v.kind() == "out_of_order")
                .count(),
            LISTED_PER_KIND
        );
    }
}
