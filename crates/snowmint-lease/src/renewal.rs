//! When a keep-alive counts: a renewal moves the fence only once a read
//! after its answer confirms that the one who answered still decided.
//!
//! A coordinator that replicates its leases answers a keep-alive from the
//! lease table of the member that leads. A leader that was stuck (a paused
//! process, a slow disk) and has been replaced can, for a moment after it
//! resumes, still take itself for the leader and answer from its stale
//! table, while the new leader renews nothing and lets the lease expire; so
//! the answer alone proves nothing. Such a coordinator gives each answer a
//! term ([`Renewal::term`](crate::Renewal::term)): a number that grows with
//! each new leader and names one.
//!
//! The rule, kept in [`judge`]: after the keep-alive's answer has arrived,
//! the session reads the identity linearizably
//! ([`Coordinator::confirm`](crate::Coordinator::confirm)), which the
//! coordinator serves only once a leader has confirmed that it still leads,
//! with a term at least that leader's. The renewal counts only when the two
//! terms are equal: then no leader of a later term had been elected when
//! that confirmation happened, so the leader that renewed was the leader
//! when it renewed. A deposed leader's answer carries the old term, a read
//! after the election the new one: it does not count, and the fence stays
//! where it was; the next renewal (answered by the new leader) may count. A
//! coordinator without terms, whose one primary answers everything
//! ([`Coordinator::has_terms`](crate::Coordinator::has_terms)), needs only
//! the read. The fence deadline is still measured from when the keep-alive
//! was *sent*. The argument, and what it assumes, is in
//! `docs/distributed.md`; what this means on etcd (raft terms, etcd issue
//! 15247) is on crate `snowmint-etcd`'s coordinator.

use std::time::Duration;

use crate::config::Timing;
pub use crate::coordinator::Confirmation;

/// What the coordinator answered to one keep-alive, and when it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// When the request was sent (lease clock): the fence counts from here.
    pub sent: Duration,
    /// The TTL the coordinator answered with (> 0).
    pub ttl: Duration,
    /// The answer's term (see [`Renewal::term`](crate::Renewal::term));
    /// `None` without one.
    pub term: Option<u64>,
}

/// What one renewal does to the fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It counts: the fence moves to this deadline (lease clock).
    Extend(Duration),
    /// Answered, but not confirmed by a read of the same term: the fence
    /// stays; try again soon.
    Unconfirmed {
        /// The keep-alive answer's term.
        renewed: Option<u64>,
        /// The read's term.
        read: Option<u64>,
    },
    /// The identity key is no longer bound to the lease.
    NotHolder,
}

/// The rule: with `t_k` the keep-alive answer's term and `t_r` the term of a
/// linearizable read of the identity sent after that answer arrived, the
/// renewal counts (the fence moves to *sent + TTL - margin*) only when the read
/// shows the identity still bound to the lease and `t_k == t_r > 0`: no leader
/// of a later term had been elected when it renewed (the argument is in
/// `docs/distributed.md`). With `confirm` false (a coordinator without terms,
/// or the test-only switch `LeaseConfig::confirm_renewals`), every answer
/// counts, terms or not.
pub fn judge(renewal: &KeepAlive, read: &Confirmation, confirm: bool) -> Verdict {
    if !read.holds {
        return Verdict::NotHolder;
    }
    let deadline = Timing::deadline(renewal.sent, renewal.ttl);
    if !confirm {
        return Verdict::Extend(deadline);
    }
    match (renewal.term, read.term) {
        // Term 0 is no term: terms count from 1 (Raft's first election
        // makes term 1).
        (Some(renewed), Some(read)) if renewed == read && renewed > 0 => Verdict::Extend(deadline),
        (renewed, read) => Verdict::Unconfirmed { renewed, read },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::fence_margin;

    /// A lease-clock reading `ms` after its origin.
    fn at_ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    const TTL: Duration = Duration::from_secs(10);

    fn answer(sent: Duration, term: Option<u64>) -> KeepAlive {
        KeepAlive {
            sent,
            ttl: TTL,
            term,
        }
    }

    fn read(term: Option<u64>) -> Confirmation {
        Confirmation { holds: true, term }
    }

    #[test]
    fn a_renewal_counts_only_when_a_read_after_it_reports_its_term() {
        let sent = at_ms(100_000);
        let deadline = sent + TTL - fence_margin(TTL);
        assert_eq!(
            judge(&answer(sent, Some(7)), &read(Some(7)), true),
            Verdict::Extend(deadline)
        );
        // A deposed leader's answer, read after the election: not counted.
        assert_eq!(
            judge(&answer(sent, Some(7)), &read(Some(8)), true),
            Verdict::Unconfirmed {
                renewed: Some(7),
                read: Some(8)
            }
        );
        // Nothing proves leadership without both terms.
        for (renewed, confirmed) in [
            (None, Some(7)),
            (Some(7), None),
            (None, None),
            (Some(0), Some(0)),
        ] {
            assert!(
                matches!(
                    judge(&answer(sent, renewed), &read(confirmed), true),
                    Verdict::Unconfirmed { .. }
                ),
                "{renewed:?} {confirmed:?}"
            );
        }
        // A read that lags the answer (it cannot in etcd; a proxy might
        // mix members up) does not count either.
        assert!(matches!(
            judge(&answer(sent, Some(8)), &read(Some(7)), true),
            Verdict::Unconfirmed { .. }
        ));
    }

    #[test]
    fn the_deadline_counts_from_when_the_keep_alive_was_sent() {
        let sent = at_ms(97_000);
        let Verdict::Extend(deadline) = judge(&answer(sent, Some(2)), &read(Some(2)), true) else {
            panic!("confirmed");
        };
        assert_eq!(deadline, sent + TTL - fence_margin(TTL));
        assert!(deadline < at_ms(100_000) + TTL - fence_margin(TTL));
    }

    #[test]
    fn a_key_no_longer_ours_wins_over_everything() {
        let lost = Confirmation {
            holds: false,
            term: Some(3),
        };
        for confirm in [true, false] {
            assert_eq!(
                judge(&answer(at_ms(1), Some(3)), &lost, confirm),
                Verdict::NotHolder
            );
        }
    }

    #[test]
    fn without_the_check_every_answer_counts() {
        let sent = at_ms(100_000);
        assert_eq!(
            judge(&answer(sent, Some(7)), &read(Some(8)), false),
            Verdict::Extend(sent + TTL - fence_margin(TTL))
        );
        assert!(matches!(
            judge(&answer(sent, None), &read(None), false),
            Verdict::Extend(_)
        ));
    }

    /// An in-memory stand-in for a three-member etcd cluster, just enough of
    /// it to replay etcd issue 15247: members apply entries of the terms
    /// their leader commits, a leader renews leases in its own table, a
    /// paused member does nothing, and a linearizable read needs a leader
    /// confirmed by a majority of running members at its term.
    #[derive(Clone)]
    struct FakeCluster {
        /// Per member: the term of its last applied entry, its raft term,
        /// whether it is paused, whom it takes for the leader.
        members: Vec<FakeMember>,
        /// Lease expiry per member's lease table, in ms of fake time.
        leases: Vec<BTreeMap<i64, u64>>,
        now_ms: u64,
    }

    #[derive(Clone, Copy)]
    struct FakeMember {
        applied_term: u64,
        term: u64,
        paused: bool,
        leader: usize,
    }

    impl FakeCluster {
        fn new(leader: usize, term: u64) -> FakeCluster {
            let member = FakeMember {
                applied_term: term,
                term,
                paused: false,
                leader,
            };
            FakeCluster {
                members: vec![member; 3],
                leases: vec![BTreeMap::new(); 3],
                now_ms: 0,
            }
        }

        /// A keep-alive sent to member `m`: the header is filled first
        /// (its applied term), then the lease is renewed in the table of
        /// the member it takes for the leader.
        fn keep_alive(&mut self, m: usize, lease: i64, ttl_ms: u64) -> Option<u64> {
            let member = self.members[m];
            if member.paused {
                return None;
            }
            let leader = member.leader;
            if self.members[leader].paused {
                return None;
            }
            self.leases[leader].insert(lease, self.now_ms + ttl_ms);
            Some(member.applied_term)
        }

        /// A linearizable read served by member `m`: its leader confirms at
        /// its term with a majority of running members whose term is not
        /// higher; then `m` has applied that leader's entries.
        fn read(&mut self, m: usize) -> Option<u64> {
            let leader = self.members[m].leader;
            if self.members[m].paused || self.members[leader].paused {
                return None;
            }
            let term = self.members[leader].term;
            let acks = self
                .members
                .iter()
                .filter(|x| !x.paused && x.term <= term)
                .count();
            if acks * 2 <= self.members.len() {
                // A leader of a later term exists: this one steps down, and
                // `m` learns of the real leader and reads through it.
                let newest = self
                    .members
                    .iter()
                    .filter(|x| !x.paused)
                    .max_by_key(|x| x.term)?;
                let (real, newest) = (newest.leader, newest.term);
                self.members[m].leader = real;
                self.members[m].term = newest;
                self.members[leader].leader = real;
                self.members[leader].term = newest;
                self.members[m].applied_term = newest;
                return Some(newest);
            }
            self.members[m].applied_term = term;
            Some(term)
        }

        /// The running members other than `except` elect `winner` at the
        /// next term; its table takes every lease with the full TTL from now
        /// (as etcd's `Promote` does).
        fn elect(&mut self, winner: usize, ttl_ms: u64) {
            let term = self.members.iter().map(|m| m.term).max().unwrap_or(0) + 1;
            let leases: Vec<i64> = self.leases.iter().flat_map(|t| t.keys().copied()).collect();
            for member in self.members.iter_mut().filter(|m| !m.paused) {
                member.term = term;
                member.applied_term = term;
                member.leader = winner;
            }
            for lease in leases {
                self.leases[winner].insert(lease, self.now_ms + ttl_ms);
            }
        }
    }

    #[test]
    fn a_deposed_leaders_answer_is_not_counted_and_the_next_one_is() {
        let at = at_ms;
        let ttl_ms = TTL.as_millis() as u64;
        let mut etcd = FakeCluster::new(0, 5);
        let lease = 42;
        let renew = |etcd: &mut FakeCluster, confirm: bool| {
            let sent = at(etcd.now_ms);
            let term = etcd.keep_alive(0, lease, ttl_ms)?;
            let answer = KeepAlive {
                sent,
                ttl: TTL,
                term: Some(term),
            };
            let read = etcd.read(0)?;
            Some(judge(&answer, &read_holds(read), confirm))
        };
        // The instance talks to member 0, the leader: renewals count.
        assert!(matches!(renew(&mut etcd, true), Some(Verdict::Extend(_))));
        // Member 0 is paused; 1 and 2 elect 1 at term 6.
        etcd.members[0].paused = true;
        etcd.now_ms = 1_500;
        etcd.elect(1, ttl_ms);
        assert_eq!(
            renew(&mut etcd, true),
            None,
            "a paused member answers nothing"
        );
        // Member 0 resumes, still taking itself for the leader of term 5:
        // it renews in its own table and answers with term 5.
        etcd.members[0].paused = false;
        etcd.now_ms = 6_000;
        let stale = etcd.clone();
        let verdict = renew(&mut etcd, true).unwrap();
        assert_eq!(
            verdict,
            Verdict::Unconfirmed {
                renewed: Some(5),
                read: Some(6)
            }
        );
        assert!(
            etcd.leases[1][&lease] < etcd.leases[0][&lease],
            "the real leader never saw that renewal"
        );
        // Without the check the same answer would have moved the fence past
        // the real leader's expiry of the lease.
        let mut unchecked = stale;
        let Some(Verdict::Extend(deadline)) = renew(&mut unchecked, false) else {
            panic!("counted without the check");
        };
        assert!(deadline > at(unchecked.leases[1][&lease]));
        // Member 0 now follows member 1: the next renewal is real, and counts.
        etcd.now_ms = 6_200;
        let Some(Verdict::Extend(deadline)) = renew(&mut etcd, true) else {
            panic!("the next renewal counts");
        };
        assert_eq!(etcd.leases[1][&lease], 6_200 + ttl_ms);
        assert!(deadline <= at(etcd.leases[1][&lease]));
    }

    fn read_holds(term: u64) -> Confirmation {
        Confirmation {
            holds: true,
            term: Some(term),
        }
    }
}
