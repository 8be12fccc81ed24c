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
//!
//! Stricter rules, for logs whose instances are known to be more than a
//! chaos run's processes (a test's in-process minters: [`Recorder`]), are
//! asked for by [`Rules`] and [`check_with`]: every instance minted
//! ([`Violation::Silent`]); each instance, one minter that never restarted,
//! issued strictly increasing IDs in real time across every identity it held
//! (guarantee 2 across re-claims, [`Violation::MinterOutOfOrder`]); and each
//! instance held each identity once, so holders of one identity issued one
//! after the other in time ([`Violation::TenuresOverlap`]) and in ID order
//! ([`Violation::TenuresOutOfOrder`]). A chaos run kills and restarts its
//! processes (a restarted one is a new minter, which may issue below the
//! last) and may hand an identity back to an instance that held it before,
//! so [`check`] applies none of them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::time::Instant;

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
    /// ([`Rules::every_instance_mints`]) Instance `instance` minted nothing:
    /// every other rule would pass it unseen.
    Silent {
        /// The instance.
        instance: usize,
    },
    /// ([`Rules::one_minter_each`]) Mint `earlier` of `instance` ended before
    /// its mint `later` started, as another identity, yet an ID of `earlier`
    /// is not below one of `later`: one minter's IDs went back across a
    /// re-claim (guarantee 2). Inversions within one identity are
    /// [`Violation::OutOfOrder`].
    MinterOutOfOrder {
        /// The instance.
        instance: usize,
        /// The mint that ended first.
        earlier: usize,
        /// Its largest ID.
        earlier_max: u64,
        /// The mint that started after it.
        later: usize,
        /// Its smallest ID.
        later_min: u64,
    },
    /// ([`Rules::one_tenure_each`]) Instance `earlier_instance` began issuing
    /// as `identity` first, yet its mint `earlier_last` of it started after
    /// mint `later_first`, the first of `later_instance` as it, had ended:
    /// the two held the identity at the same time.
    TenuresOverlap {
        /// The identity.
        identity: (u8, u8),
        /// The instance that began issuing as it first.
        earlier_instance: usize,
        /// Its last mint of the identity.
        earlier_last: usize,
        /// The instance that began issuing as it later.
        later_instance: usize,
        /// Its first mint of the identity.
        later_first: usize,
    },
    /// ([`Rules::one_tenure_each`]) Instance `later_instance` began issuing as
    /// `identity` after `earlier_instance` had, yet issued `later_min`, not
    /// above the `earlier_max` of the earlier holder: a later holder must
    /// issue above everything its predecessors issued.
    TenuresOutOfOrder {
        /// The identity.
        identity: (u8, u8),
        /// The instance that began issuing as it first.
        earlier_instance: usize,
        /// Its largest ID of the identity.
        earlier_max: u64,
        /// The instance that began issuing as it later.
        later_instance: usize,
        /// Its smallest ID of the identity.
        later_min: u64,
    },
}

impl Violation {
    /// The kind's name: `duplicate`, `out_of_order`, `interleaved`,
    /// `holder_overlap` or `not_increasing`; under [`Rules`] also `silent`,
    /// `minter_out_of_order`, `tenures_overlap` and `tenures_out_of_order`.
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::Duplicate { .. } => "duplicate",
            Violation::OutOfOrder { .. } => "out_of_order",
            Violation::Interleaved { .. } => "interleaved",
            Violation::HolderOverlap { .. } => "holder_overlap",
            Violation::NotIncreasing { .. } => "not_increasing",
            Violation::Silent { .. } => "silent",
            Violation::MinterOutOfOrder { .. } => "minter_out_of_order",
            Violation::TenuresOverlap { .. } => "tenures_overlap",
            Violation::TenuresOutOfOrder { .. } => "tenures_out_of_order",
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
            Violation::Silent { instance } => {
                write!(f, "silent: instance {instance} minted nothing")
            }
            Violation::MinterOutOfOrder {
                instance,
                earlier,
                earlier_max,
                later,
                later_min,
            } => write!(
                f,
                "minter out of order: instance {instance}: mint {earlier} ended before mint \
                 {later} started (as another identity), but issued {earlier_max} >= {later_min} \
                 (its IDs went back across a re-claim)"
            ),
            Violation::TenuresOverlap {
                identity: (dc, worker),
                earlier_instance,
                earlier_last,
                later_instance,
                later_first,
            } => write!(
                f,
                "tenures overlap: identity {dc}/{worker}: mint {earlier_last} of instance \
                 {earlier_instance} started after mint {later_first}, the first of instance \
                 {later_instance} as it, had ended (both held it at the same time)"
            ),
            Violation::TenuresOutOfOrder {
                identity: (dc, worker),
                earlier_instance,
                earlier_max,
                later_instance,
                later_min,
            } => write!(
                f,
                "tenures out of order: identity {dc}/{worker}: instance {later_instance} began \
                 issuing as it after instance {earlier_instance}, but issued {later_min} <= \
                 {earlier_max}"
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

/// The stricter rules [`check_with`] may apply on top of the five
/// guarantees (see the module docs); none by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rules {
    /// Instances `0..every_instance_mints` each minted at least once.
    pub every_instance_mints: usize,
    /// Each instance is one minter that never restarted: its IDs strictly
    /// increase in real time across every identity it held.
    pub one_minter_each: bool,
    /// Each instance held each identity at most once (never handed back to
    /// it): the holders of one identity, taken in the order they began
    /// issuing as it, issued one after the other (each one's last mint of it
    /// started no later than the next one's first ended) and each above
    /// everything the ones before issued as it.
    pub one_tenure_each: bool,
}

/// [`check`], and the stricter `rules` (see the module docs).
pub fn check_with(mints: &[Mint], rules: &Rules) -> Findings {
    let mut findings = check(mints);
    if rules.every_instance_mints > 0 {
        check_every_instance_mints(mints, rules.every_instance_mints, &mut findings);
    }
    if rules.one_minter_each {
        check_minters(mints, &mut findings);
    }
    if rules.one_tenure_each {
        check_tenures(mints, &mut findings);
    }
    findings
}

fn check_every_instance_mints(mints: &[Mint], instances: usize, findings: &mut Findings) {
    let minted: HashSet<usize> = mints
        .iter()
        .filter(|m| !m.ids.is_empty())
        .map(|m| m.instance)
        .collect();
    for instance in (0..instances).filter(|i| !minted.contains(i)) {
        findings.add(Violation::Silent { instance });
    }
}

/// [`Rules::one_minter_each`]: per instance, whole mints in real time.
fn check_minters(mints: &[Mint], findings: &mut Findings) {
    let mut by_instance: BTreeMap<usize, Vec<Segment>> = BTreeMap::new();
    for (index, mint) in mints.iter().enumerate() {
        let (Some(&min), Some(&max)) = (mint.ids.iter().min(), mint.ids.iter().max()) else {
            continue;
        };
        by_instance.entry(mint.instance).or_default().push(Segment {
            mint: index,
            instance: mint.instance,
            start_us: mint.start_us,
            end_us: mint.end_us,
            min,
            max,
        });
    }
    for own in by_instance.into_values() {
        for (a, b) in real_time_inversions(own) {
            // Both IDs of one identity: an `out_of_order` already.
            if identity(a.max) == identity(b.min) {
                continue;
            }
            findings.add(Violation::MinterOutOfOrder {
                instance: a.instance,
                earlier: a.mint,
                earlier_max: a.max,
                later: b.mint,
                later_min: b.min,
            });
        }
    }
}

/// One instance's time issuing as one identity.
#[derive(Debug, Clone, Copy)]
struct Tenure {
    instance: usize,
    /// The mint that started first, and when it started and ended.
    first: usize,
    first_start_us: u64,
    first_end_us: u64,
    /// The mint that started last, and when.
    last: usize,
    last_start_us: u64,
    min: u64,
    max: u64,
}

/// [`Rules::one_tenure_each`].
fn check_tenures(mints: &[Mint], findings: &mut Findings) {
    let mut tenures: BTreeMap<(u8, u8), BTreeMap<usize, Tenure>> = BTreeMap::new();
    for (index, mint) in mints.iter().enumerate() {
        for &id in &mint.ids {
            let t = tenures
                .entry(identity(id))
                .or_default()
                .entry(mint.instance)
                .or_insert(Tenure {
                    instance: mint.instance,
                    first: index,
                    first_start_us: mint.start_us,
                    first_end_us: mint.end_us,
                    last: index,
                    last_start_us: mint.start_us,
                    min: id,
                    max: id,
                });
            if mint.start_us < t.first_start_us {
                (t.first, t.first_start_us, t.first_end_us) = (index, mint.start_us, mint.end_us);
            }
            if mint.start_us > t.last_start_us {
                (t.last, t.last_start_us) = (index, mint.start_us);
            }
            t.min = t.min.min(id);
            t.max = t.max.max(id);
        }
    }
    for (who, holders) in tenures {
        let mut holders: Vec<Tenure> = holders.into_values().collect();
        holders.sort_by_key(|t| (t.first_start_us, t.instance));
        for (i, earlier) in holders.iter().enumerate() {
            for later in &holders[i + 1..] {
                if earlier.last_start_us > later.first_end_us {
                    findings.add(Violation::TenuresOverlap {
                        identity: who,
                        earlier_instance: earlier.instance,
                        earlier_last: earlier.last,
                        later_instance: later.instance,
                        later_first: later.first,
                    });
                }
                if earlier.max >= later.min {
                    findings.add(Violation::TenuresOutOfOrder {
                        identity: who,
                        earlier_instance: earlier.instance,
                        earlier_max: earlier.max,
                        later_instance: later.instance,
                        later_min: later.min,
                    });
                }
            }
        }
    }
}

/// A mint log kept by a test that mints in process, by instance name and
/// [`Instant`]s, as the [`Mint`]s the checker reads: one checker for a
/// chaos run's history and for every test's log of what it minted.
///
/// ```
/// use std::time::{Duration, Instant};
/// use snowmint_testkit::chaos::checker::{Recorder, Rules};
///
/// let start = Instant::now();
/// let mut log = Recorder::since(start);
/// log.record("a", start, start + Duration::from_millis(1), [10 << 22, 11 << 22]);
/// log.record("b", start, start + Duration::from_millis(1), [11 << 22]);
/// let rules = Rules { every_instance_mints: 2, ..Rules::default() };
/// let verdict = log.verdict(&rules).unwrap_err();
/// assert!(verdict.contains("duplicate"), "{verdict}");
/// assert!(verdict.contains("instances: 0 = a, 1 = b"), "{verdict}");
/// ```
#[derive(Debug, Clone)]
pub struct Recorder {
    epoch: Instant,
    names: Vec<String>,
    mints: Vec<Mint>,
}

impl Recorder {
    /// An empty log whose times count from `epoch` (a time before the first
    /// mint; earlier ones count as `epoch`).
    pub fn since(epoch: Instant) -> Recorder {
        Recorder {
            epoch,
            names: Vec::new(),
            mints: Vec::new(),
        }
    }

    /// The instance number of `name`, numbered in the order first seen.
    pub fn instance(&mut self, name: &str) -> usize {
        match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_owned());
                self.names.len() - 1
            }
        }
    }

    /// One mint of `name`: asked at `started`, answered by `ended`, `ids`
    /// in the order answered.
    pub fn record(
        &mut self,
        name: &str,
        started: Instant,
        ended: Instant,
        ids: impl IntoIterator<Item = u64>,
    ) {
        let instance = self.instance(name);
        let us = |t: Instant| {
            u64::try_from(t.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX)
        };
        let ids: Vec<u64> = ids.into_iter().collect();
        self.mints.push(Mint {
            instance,
            start_us: us(started),
            end_us: us(ended),
            count: u32::try_from(ids.len()).unwrap_or(u32::MAX),
            ids,
        });
    }

    /// The mints recorded, in the order recorded.
    pub fn mints(&self) -> &[Mint] {
        &self.mints
    }

    /// [`check_with`] over the mints recorded.
    pub fn check(&self, rules: &Rules) -> Findings {
        check_with(&self.mints, rules)
    }

    /// The IDs checked if every rule held; else every violation listed, and
    /// which name each instance number stands for.
    pub fn verdict(&self, rules: &Rules) -> Result<u64, String> {
        let findings = self.check(rules);
        if findings.passed() {
            return Ok(findings.ids);
        }
        let mut out = format!(
            "{} violations in {} IDs of {} mints: {:?}",
            findings.counts.values().sum::<u64>(),
            findings.ids,
            self.mints.len(),
            findings.counts
        );
        for v in &findings.violations {
            out.push_str(&format!("\n  {v}"));
        }
        let names: Vec<String> = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{i} = {n}"))
            .collect();
        out.push_str(&format!("\n  instances: {}", names.join(", ")));
        Err(out)
    }
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

    /// Instance 0 holds 1/2, loses it and re-claims 3/4 above it; instance
    /// 1 takes 1/2 over above instance 0's IDs: clean under every rule.
    fn reclaimed() -> Vec<Mint> {
        vec![
            mint(0, 0, 10, vec![id(100, 1, 2, 0), id(100, 1, 2, 1)]),
            mint(0, 20, 30, vec![id(101, 1, 2, 0)]),
            mint(1, 40, 50, vec![id(2101, 1, 2, 0)]),
            mint(0, 45, 55, vec![id(102, 3, 4, 0)]),
            mint(1, 60, 70, vec![id(2102, 1, 2, 0)]),
            mint(0, 60, 70, vec![id(102, 3, 4, 1)]),
        ]
    }

    /// What `rules` find in `mints`, which must pass the five guarantees
    /// (what [`check`] alone finds).
    fn only_under(rules: &Rules, mints: &[Mint]) -> Findings {
        assert!(check(mints).passed(), "{:?}", check(mints));
        check_with(mints, rules)
    }

    const ALL: Rules = Rules {
        every_instance_mints: 2,
        one_minter_each: true,
        one_tenure_each: true,
    };

    #[test]
    fn a_clean_reclaim_passes_every_rule() {
        let findings = check_with(&reclaimed(), &ALL);
        assert!(findings.passed(), "{findings:?}");
        assert_eq!(findings.ids, 7);
        assert_eq!(check_with(&clean(), &Rules::default()), check(&clean()));
    }

    #[test]
    fn an_instance_that_minted_nothing_is_found() {
        let rules = Rules {
            every_instance_mints: 3,
            ..Rules::default()
        };
        let mut mints = reclaimed();
        // An empty answer is no mint.
        mints.push(mint(2, 80, 90, vec![]));
        let findings = only_under(&rules, &mints);
        assert_eq!(findings.violations, vec![Violation::Silent { instance: 2 }]);
    }

    #[test]
    fn a_minter_going_back_across_a_reclaim_is_found_only_under_its_rule() {
        // Instance 0 re-claims 3/4 and issues below what it issued as 1/2
        // (a restarted chaos process may: a new minter).
        let mut mints = reclaimed();
        mints.push(mint(0, 80, 90, vec![id(50, 5, 6, 0)]));
        let findings = only_under(&ALL, &mints);
        assert_eq!(
            findings.violations,
            vec![Violation::MinterOutOfOrder {
                instance: 0,
                earlier: 5,
                earlier_max: id(102, 3, 4, 1),
                later: 6,
                later_min: id(50, 5, 6, 0),
            }]
        );
        assert!(
            findings.violations[0]
                .to_string()
                .contains("went back across a re-claim")
        );
        // Within one identity it is an `out_of_order`, reported once.
        let mut mints = reclaimed();
        mints.push(mint(0, 80, 90, vec![id(50, 3, 4, 0)]));
        let findings = check_with(&mints, &ALL);
        assert_eq!(findings.counts.get("minter_out_of_order"), None);
        assert_eq!(findings.counts["out_of_order"], 1);
    }

    #[test]
    fn holders_of_one_identity_at_the_same_time_are_found_only_under_its_rule() {
        // Instance 1 issues as 0/0 between two mints of instance 0, below
        // them, its one mint beside instance 0's first: no two mints
        // ordered in time are inverted and no range holds another's ID, so
        // the five guarantees pass; yet both held 0/0 at once.
        let mints = vec![
            mint(0, 0, 10, vec![id(100, 0, 0, 0)]),
            mint(1, 5, 20, vec![id(50, 0, 0, 0)]),
            mint(0, 30, 40, vec![id(101, 0, 0, 0)]),
        ];
        let rules = Rules {
            one_tenure_each: true,
            ..Rules::default()
        };
        let findings = only_under(&rules, &mints);
        assert_eq!(
            findings.violations,
            vec![
                Violation::TenuresOverlap {
                    identity: (0, 0),
                    earlier_instance: 0,
                    earlier_last: 2,
                    later_instance: 1,
                    later_first: 1,
                },
                Violation::TenuresOutOfOrder {
                    identity: (0, 0),
                    earlier_instance: 0,
                    earlier_max: id(101, 0, 0, 0),
                    later_instance: 1,
                    later_min: id(50, 0, 0, 0),
                },
            ]
        );
        // Beside each other once, the later holder below: out of order only.
        let findings = check_with(&mints[..2], &rules);
        assert_eq!(findings.counts.get("tenures_overlap"), None);
        assert_eq!(findings.counts["tenures_out_of_order"], 1);
        // One after the other, the later one above: clean.
        let handed_over = vec![
            mint(0, 0, 10, vec![id(100, 0, 0, 0)]),
            mint(0, 11, 20, vec![id(101, 0, 0, 0)]),
            mint(1, 15, 30, vec![id(150, 0, 0, 0)]),
        ];
        assert!(check_with(&handed_over, &rules).passed());
    }

    #[test]
    fn an_identity_handed_back_fails_the_one_tenure_rule_only() {
        // 0, then 1, then 0 again as 1/2, each above the last: a chaos run
        // may do it; a test that names `one_tenure_each` does not.
        let mints = vec![
            mint(0, 0, 10, vec![id(100, 1, 2, 0)]),
            mint(1, 20, 30, vec![id(200, 1, 2, 0)]),
            mint(0, 40, 50, vec![id(300, 1, 2, 0)]),
        ];
        let findings = only_under(&ALL, &mints);
        assert_eq!(findings.counts["tenures_overlap"], 1);
        assert_eq!(findings.counts.get("minter_out_of_order"), None);
    }

    #[test]
    fn a_recorder_numbers_instances_by_name_and_counts_from_its_epoch() {
        let epoch = Instant::now();
        let ms = std::time::Duration::from_millis;
        let mut log = Recorder::since(epoch + ms(1));
        log.record("b", epoch, epoch + ms(3), [id(100, 0, 0, 0)]);
        log.record("a", epoch + ms(4), epoch + ms(5), [id(99, 0, 0, 0)]);
        assert_eq!(log.instance("b"), 0);
        assert_eq!(log.instance("c"), 2);
        let m = log.mints();
        assert_eq!((m[0].instance, m[0].start_us, m[0].end_us), (0, 0, 2_000));
        assert_eq!((m[1].instance, m[1].start_us, m[1].count), (1, 3_000, 1));
        let verdict = log.verdict(&ALL).unwrap_err();
        assert!(verdict.contains("holder overlap"), "{verdict}");
        assert!(verdict.contains("tenures out of order"), "{verdict}");
        assert!(
            verdict.contains("instances: 0 = b, 1 = a, 2 = c"),
            "{verdict}"
        );
        let mut log = Recorder::since(epoch);
        log.record("a", epoch, epoch + ms(1), [id(1, 0, 0, 0)]);
        assert_eq!(log.verdict(&Rules::default()), Ok(1));
    }
}
