//! Which identities a session may claim (its [`Pool`]), and in which order
//! it tries them.
//!
//! The order prefers what can issue at once: the session's previous
//! identity if it is free (its IDs stay on one identity), then free
//! identities whose last holder let go cleanly and whose mark is not far
//! ahead of the clock, then those whose last holder's lease ended without a
//! release (a new holder waits one lease TTL before issuing, see
//! [`Previous::Unclean`](crate::Previous::Unclean)), and last those whose
//! mark stands so far ahead that the generator would refuse to issue for a
//! while (taken only when nothing else is free; readiness says why).
//!
//! Within a class a claim starts at a random place: with N instances
//! starting at once, lowest first would make every one race for the same
//! identity, one winning each round, about N²/2 transactions in all. From
//! a random start a round loses only to the few instances that picked the
//! same identity at the same moment (a birthday coincidence, not a queue),
//! and a claim that lost looks again at what is free rather than walking on
//! through a view others have made stale: N instances starting together
//! need about 1.6 N transactions when they start in the same instant, and
//! fewer as their starts spread.

use std::collections::HashSet;

use crate::coordinator::{Census, Pool};

/// The order in which to try the identities of `pool`, as the
/// [module docs](self) say: `prefer` first if free, then the other free
/// ones by class, each class from the place `start` picks, wrapping. Taken
/// ones (as the last scan saw them), `avoid`ed ones (damaged marks) and a
/// `prefer` outside the pool are left out. A mark counts as far ahead when
/// it is more than `ahead_ms` past `now_ms`.
pub(crate) fn order(
    pool: Pool,
    census: &Census,
    avoid: &HashSet<u16>,
    prefer: Option<u16>,
    start: u64,
    now_ms: u64,
    ahead_ms: u64,
) -> Vec<u16> {
    let free = |n: &u16| pool.contains(*n) && !census.taken.contains(n) && !avoid.contains(n);
    let prefer = prefer.filter(free);
    let far_ahead = |n: u16| {
        census
            .marks
            .get(&n)
            .is_some_and(|&mark| mark > now_ms.saturating_add(ahead_ms))
    };
    let class = |n: u16| match (far_ahead(n), census.unclean.contains(&n)) {
        (false, false) => 0,
        (false, true) => 1,
        (true, _) => 2,
    };
    let mut classes: [Vec<u16>; 3] = Default::default();
    for n in pool.ordinals().filter(|n| free(n) && Some(*n) != prefer) {
        classes[class(n)].push(n);
    }
    let mut order = Vec::with_capacity(classes.iter().map(Vec::len).sum::<usize>() + 1);
    order.extend(prefer);
    for rest in classes.iter().filter(|c| !c.is_empty()) {
        let at = (start % rest.len() as u64) as usize;
        order.extend_from_slice(&rest[at..]);
        order.extend_from_slice(&rest[..at]);
    }
    order
}

/// Where each round of a claim starts: a random number per round, unlike
/// any other session's (seeded per session; a simulation seeds it from
/// its schedule).
#[derive(Debug)]
pub(crate) struct Spread {
    state: u64,
}

impl Spread {
    pub(crate) fn new(seed: u64) -> Spread {
        Spread { state: seed }
    }

    /// The next round's start (splitmix64).
    pub(crate) fn next_start(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use snowmint::Identity;

    use super::*;

    fn set(ns: &[u16]) -> HashSet<u16> {
        ns.iter().copied().collect()
    }

    fn taken(ns: &[u16]) -> Census {
        Census {
            taken: set(ns),
            ..Census::default()
        }
    }

    const NOW: u64 = 1_700_000_000_000;

    fn plain(pool: Pool, census: &Census, prefer: Option<u16>, start: u64) -> Vec<u16> {
        order(pool, census, &HashSet::new(), prefer, start, NOW, 3_000)
    }

    #[test]
    fn the_previous_identity_comes_first_when_it_is_free() {
        let none = Census::default();
        for start in [0, 500, u64::MAX] {
            let o = plain(Pool::ALL, &none, Some(700), start);
            assert_eq!(o[0], 700);
            assert_eq!(o.len(), 1024);
            assert_eq!(o.iter().filter(|&&n| n == 700).count(), 1);
        }
        // Taken, avoided, or outside the pool: not first, not at all.
        assert!(!plain(Pool::ALL, &taken(&[700]), Some(700), 0).contains(&700));
        assert!(!order(Pool::ALL, &none, &set(&[700]), Some(700), 0, NOW, 0).contains(&700));
        let dc5 = Pool::new(Some(5));
        let o = plain(dc5, &none, Some(700), 0);
        assert_eq!(o.len(), 32);
        assert!(!o.contains(&700));
        assert_eq!(plain(dc5, &none, Some(170), 9)[0], 170);
    }

    #[test]
    fn the_start_spreads_over_the_free_identities_and_every_one_is_tried() {
        let census = taken(&[0, 1, 2, 10]);
        let free: Vec<u16> = (0..1024).filter(|n| !census.taken.contains(n)).collect();
        for start in [0, 1, 7, 1019, 1020, 123_456_789] {
            let o = plain(Pool::ALL, &census, None, start);
            // Every free identity once, none taken, in ordinal order from
            // the start on, wrapping.
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, free);
            let at = (start % free.len() as u64) as usize;
            assert_eq!(o[0], free[at]);
            assert!(o.windows(2).filter(|w| w[1] < w[0]).count() <= 1);
        }
        // Different sessions, different first choices: no race for the lowest.
        let firsts: HashSet<u16> = (0..64)
            .map(|seed| {
                plain(
                    Pool::ALL,
                    &Census::default(),
                    None,
                    Spread::new(seed).next_start(),
                )[0]
            })
            .collect();
        assert!(firsts.len() > 32, "{} distinct first choices", firsts.len());
        assert!(!firsts.iter().all(|&n| n < 64));
    }

    #[test]
    fn identities_that_can_issue_at_once_come_before_the_others() {
        let mut census = Census::default();
        // 3's last holder did not let go; 4's mark is an hour ahead; 5's
        // mark is ahead by less than the bound.
        census.unclean.insert(3);
        census.marks.insert(4, NOW + 3_600_000);
        census.marks.insert(5, NOW + 2_000);
        let pool = Pool::new(Some(0));
        for start in [0, 3, 31, 1000] {
            let o = plain(pool, &census, None, start);
            assert_eq!(o.len(), 32);
            let at = |n: u16| o.iter().position(|&x| x == n).unwrap();
            assert!(at(5) < at(3), "{o:?}");
            assert_eq!(at(3), 30, "unclean after every clean one: {o:?}");
            assert_eq!(at(4), 31, "far ahead last: {o:?}");
        }
        // The previous identity still comes first, whatever its class.
        assert_eq!(plain(pool, &census, Some(4), 0)[0], 4);
        // Only far-ahead ones free: still offered.
        let mut full = taken(&(0..32).filter(|&n| n != 4).collect::<Vec<_>>());
        full.marks.insert(4, NOW + 3_600_000);
        assert_eq!(plain(pool, &full, None, 0), vec![4]);
    }

    #[test]
    fn a_datacenter_pool_is_its_32_workers() {
        let none = Census::default();
        let dc = Pool::new(Some(5));
        assert_eq!(dc.len(), 32);
        assert_eq!(
            dc.ordinals().collect::<Vec<_>>(),
            (160..192).collect::<Vec<_>>()
        );
        assert!(dc.contains(160) && dc.contains(191) && !dc.contains(159) && !dc.contains(192));
        for start in [0, 31, 32, 999] {
            let o = plain(dc, &taken(&[161, 0, 500]), None, start);
            assert_eq!(o.len(), 31);
            assert!(o.iter().all(|&n| {
                let id = Identity::from_ordinal(n.into()).unwrap();
                id.datacenter() == 5 && id.worker() != 1
            }));
        }
        assert!(plain(dc, &taken(&dc.ordinals().collect::<Vec<_>>()), Some(170), 0).is_empty());
        assert_eq!(Pool::new(Some(31)).ordinals().last(), Some(1023));
        assert_eq!(Pool::ALL.len(), 1024);
        assert!(plain(dc, &none, None, 0).iter().all(|&n| dc.contains(n)));
    }

    /// N sessions that scan at once and each claim by `order` from a random
    /// start, looking again after a lost race, in rounds (a transaction of
    /// each session per round; the first of a round's same picks wins): far
    /// fewer than the N²/2 transactions of lowest first.
    #[test]
    fn n_sessions_starting_together_need_about_one_and_a_half_transactions_each() {
        for n in [32u16, 256, 1024] {
            let pool = Pool::ALL;
            let mut census = Census::default();
            let mut waiting: Vec<Spread> = (0..n).map(|i| Spread::new(u64::from(i))).collect();
            let mut txns = 0usize;
            while !waiting.is_empty() {
                let picks: Vec<u16> = waiting
                    .iter_mut()
                    .map(|s| plain(pool, &census, None, s.next_start())[0])
                    .collect();
                txns += picks.len();
                let mut left = Vec::new();
                for (spread, pick) in waiting.into_iter().zip(picks) {
                    if !census.taken.insert(pick) {
                        left.push(spread);
                    }
                }
                waiting = left;
            }
            assert_eq!(census.taken.len(), usize::from(n));
            // All in one instant, the worst case: about 1.6 N at N = 1024
            // (spread starts cost less; the scale run measures the real case).
            assert!(
                txns * 10 <= 17 * usize::from(n),
                "{n} sessions: {txns} transactions"
            );
        }
    }
}
