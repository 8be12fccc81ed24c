//! Which identities a session may claim (its [`Pool`]), and in which order
//! it tries them.
//!
//! A claim first tries the lowest free identity (its previous one before
//! that, if free): a small fleet stays compact, and an identity freed by a
//! stop or a crash is the next one taken. But with N instances starting at
//! once, lowest first alone makes every one of them race for the same key
//! again and again: one wins each round, about N²/2 transactions in all.
//! So a claim that lost a race (someone took its candidate since its scan:
//! others are starting too) looks again at what is free, instead of
//! walking on through a view others have made stale, and tries from a
//! random start: a round then loses only to the few instances that picked
//! the same identity at the same moment (a birthday coincidence, not a
//! queue). N instances starting together need at most about 2.6 N
//! transactions: N in the first round, about 1.6 per instance after.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};

use snowmint::Identity;

/// How many workers one datacenter has: 32.
pub(crate) const WORKERS_PER_DATACENTER: u16 = 1 << snowmint::WORKER_BITS;

/// The identities one session may claim: all 1024, or the 32 workers of one
/// datacenter (a region with its own etcd, `EtcdConfig::datacenter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pool {
    datacenter: Option<u8>,
}

impl Pool {
    /// Every identity.
    #[cfg(test)]
    pub(crate) const ALL: Pool = Pool { datacenter: None };

    /// The workers of `datacenter` (0..=31), or every identity.
    pub(crate) fn new(datacenter: Option<u8>) -> Pool {
        Pool { datacenter }
    }

    /// The datacenter it is scoped to, if any.
    pub(crate) fn datacenter(self) -> Option<u8> {
        self.datacenter
    }

    /// Its first identity number and how many it has.
    fn span(self) -> (u16, u16) {
        match self.datacenter {
            Some(dc) => (
                u16::from(dc) * WORKERS_PER_DATACENTER,
                WORKERS_PER_DATACENTER,
            ),
            None => (0, Identity::COUNT),
        }
    }

    /// How many identities it has: 32 or 1024.
    pub(crate) fn len(self) -> u16 {
        self.span().1
    }

    /// Whether identity number `n` is in it.
    pub(crate) fn contains(self, n: u16) -> bool {
        let (first, len) = self.span();
        (first..first + len).contains(&n)
    }

    /// Its identity numbers, in ordinal order.
    pub(crate) fn ordinals(self) -> impl Iterator<Item = u16> {
        let (first, len) = self.span();
        first..first + len
    }
}

/// The order in which to try the identities of `pool`: `prefer` first (a
/// session's previous identity) if it is free, then every other free one,
/// lowest first, or, with a `start` (after a lost race), from the one
/// `start` picks on, wrapping around. Taken ones (`taken`, as the last scan
/// saw them) and `avoid`ed ones (damaged marks) are left out, and so is a
/// `prefer` outside the pool.
pub(crate) fn order(
    pool: Pool,
    taken: &HashSet<u16>,
    avoid: &HashSet<u16>,
    prefer: Option<u16>,
    start: Option<u64>,
) -> Vec<u16> {
    let start = start.unwrap_or(0);
    let free = |n: &u16| pool.contains(*n) && !taken.contains(n) && !avoid.contains(n);
    let prefer = prefer.filter(free);
    let rest: Vec<u16> = pool
        .ordinals()
        .filter(|n| free(n) && Some(*n) != prefer)
        .collect();
    let mut order = Vec::with_capacity(rest.len() + 1);
    order.extend(prefer);
    if !rest.is_empty() {
        let at = (start % rest.len() as u64) as usize;
        order.extend_from_slice(&rest[at..]);
        order.extend_from_slice(&rest[..at]);
    }
    order
}

/// Where each round of a claim after a lost race starts: a random number
/// per round, unlike any other session's (the hasher's keys are random per process and
/// change per instance; the lease ID is unique in the cluster).
#[derive(Debug)]
pub(crate) struct Spread {
    hasher: RandomState,
    lease: i64,
    round: u64,
}

impl Spread {
    pub(crate) fn new(lease: i64) -> Spread {
        Spread {
            hasher: RandomState::new(),
            lease,
            round: 0,
        }
    }

    /// The next round's start.
    pub(crate) fn next_start(&mut self) -> u64 {
        self.round += 1;
        self.hasher.hash_one((self.lease, self.round))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ns: &[u16]) -> HashSet<u16> {
        ns.iter().copied().collect()
    }

    #[test]
    fn the_previous_identity_comes_first_when_it_is_free() {
        let none = HashSet::new();
        for start in [None, Some(0), Some(500), Some(u64::MAX)] {
            let o = order(Pool::ALL, &none, &none, Some(700), start);
            assert_eq!(o[0], 700);
            assert_eq!(o.len(), 1024);
            assert_eq!(o.iter().filter(|&&n| n == 700).count(), 1);
        }
        // Taken, avoided, or outside the pool: not first, not at all.
        assert!(!order(Pool::ALL, &set(&[700]), &none, Some(700), None).contains(&700));
        assert!(!order(Pool::ALL, &none, &set(&[700]), Some(700), None).contains(&700));
        let dc5 = Pool::new(Some(5));
        let o = order(dc5, &none, &none, Some(700), None);
        assert_eq!(o.len(), 32);
        assert!(!o.contains(&700));
        assert_eq!(order(dc5, &none, &none, Some(170), Some(9))[0], 170);
    }

    #[test]
    fn the_start_spreads_over_the_free_identities_and_every_one_is_tried() {
        let none = HashSet::new();
        let taken = set(&[0, 1, 2, 10]);
        let free: Vec<u16> = (0..1024).filter(|n| !taken.contains(n)).collect();
        // Lowest first, without a start.
        assert_eq!(order(Pool::ALL, &taken, &none, None, None), free);
        for start in [0, 1, 7, 1019, 1020, 123_456_789] {
            let o = order(Pool::ALL, &taken, &none, None, Some(start));
            // Every free identity once, none taken, in ordinal order from
            // the start on, wrapping.
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, free);
            let at = (start % free.len() as u64) as usize;
            assert_eq!(o[0], free[at]);
            assert!(o.windows(2).filter(|w| w[1] < w[0]).count() <= 1);
        }
        // Different starts, different first choices: no race for the lowest.
        let mut spread = Spread::new(42);
        let firsts: HashSet<u16> = (0..64)
            .map(|_| order(Pool::ALL, &none, &none, None, Some(spread.next_start()))[0])
            .collect();
        assert!(firsts.len() > 32, "{} distinct first choices", firsts.len());
        assert!(!firsts.iter().all(|&n| n < 64));
    }

    #[test]
    fn a_datacenter_pool_is_its_32_workers() {
        let none = HashSet::new();
        let dc = Pool::new(Some(5));
        assert_eq!(dc.len(), 32);
        assert_eq!(
            dc.ordinals().collect::<Vec<_>>(),
            (160..192).collect::<Vec<_>>()
        );
        assert!(dc.contains(160) && dc.contains(191) && !dc.contains(159) && !dc.contains(192));
        for start in [None, Some(0), Some(31), Some(32), Some(999)] {
            let o = order(dc, &set(&[161, 0, 500]), &none, None, start);
            assert_eq!(o.len(), 31);
            assert!(o.iter().all(|&n| {
                let id = Identity::from_ordinal(n.into()).unwrap();
                id.datacenter() == 5 && id.worker() != 1
            }));
        }
        assert!(order(dc, &dc.ordinals().collect(), &none, Some(170), None).is_empty());
        assert_eq!(Pool::new(Some(31)).ordinals().last(), Some(1023));
        assert_eq!(Pool::ALL.len(), 1024);
    }

    /// N sessions that scan at once and each claim by `order`, lowest first,
    /// then looking again from a random start after a lost race, in rounds
    /// (a transaction of each session per round; the first of a round's
    /// same picks wins): far fewer than the N²/2 transactions of lowest
    /// first alone.
    #[test]
    fn n_sessions_starting_together_need_about_n_transactions() {
        let none = HashSet::new();
        for n in [32u16, 256, 1024] {
            let pool = Pool::ALL;
            let mut taken = HashSet::new();
            let mut waiting: Vec<Spread> = (0..n).map(|i| Spread::new(i64::from(i))).collect();
            let mut txns = 0usize;
            let mut first = true;
            while !waiting.is_empty() {
                let picks: Vec<u16> = waiting
                    .iter_mut()
                    .map(|s| {
                        let start = (!first).then(|| s.next_start());
                        order(pool, &taken, &none, None, start)[0]
                    })
                    .collect();
                first = false;
                txns += picks.len();
                let mut left = Vec::new();
                for (spread, pick) in waiting.into_iter().zip(picks) {
                    if !taken.insert(pick) {
                        left.push(spread);
                    }
                }
                waiting = left;
            }
            assert_eq!(taken.len(), usize::from(n));
            assert!(
                txns <= 3 * usize::from(n),
                "{n} sessions: {txns} transactions"
            );
        }
    }
}
