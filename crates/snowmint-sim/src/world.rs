//! The simulated coordinator: an etcd-like cluster of three members in one
//! process, on virtual time, with the faults the protocol must survive.
//!
//! What it models of etcd (3.4.23, issues 15247 and 12528 included):
//! - leases with a TTL on the coordinator's own clock (its rate and steps are
//!   faults), kept by the leader's lessor; identity keys bound to leases and
//!   deleted with them; compares on the key's lease; marks and tenure
//!   records that outlive every lease;
//! - raft terms in every answer: a member reports the term of the last entry
//!   it applied; elections when the leader is paused past the election
//!   timeout, the new leader extending every lease by its TTL (`Promote`);
//! - a deposed leader that resumes and, for a moment before it demotes its
//!   lessor, answers keep-alives from its stale lease table at its old term
//!   (15247) and revokes the leases that table says expired, which the new
//!   leader commits (12528);
//! - answers lost, delayed (so reordered), or applied twice; members paused;
//!   holders paused (their requests hang and they mint nothing) or
//!   suspended (paused, and their monotonic clock stands still meanwhile:
//!   `run.rs`).
//!
//! Beside the model it keeps the truth the invariants are checked against:
//! each lease's legitimate end (its last renewal by a real leader plus its
//! TTL, in real time), and every violation found.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use snowmint_lease::{
    Census, Claimant, Claimed, Confirmation, Coordinator, Granted, LeaseError, LeaseId, MarkIo,
    Pool, Previous, Renewal,
};

/// The lease an operator's intruding key is bound to (no real lease).
const INTRUDER: LeaseId = -7;

/// The election timeout: a leader silent this long is replaced.
pub const ELECTION_MS: u64 = 1_000;

/// The shared world.
pub type Shared = Arc<Mutex<World>>;

pub fn lock(world: &Shared) -> MutexGuard<'_, World> {
    world.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Virtual milliseconds since the schedule began.
pub fn now_ms(origin: tokio::time::Instant) -> u64 {
    u64::try_from(
        tokio::time::Instant::now()
            .duration_since(origin)
            .as_millis(),
    )
    .unwrap_or(u64::MAX)
}

#[derive(Debug, Clone)]
struct Stale {
    /// Its lessor's table as of when it was paused.
    table: BTreeMap<LeaseId, Lease>,
    /// When, after it resumed, it demotes its lessor (real ms); `None` while paused.
    demote_at: Option<u64>,
}

#[derive(Debug, Clone)]
struct Member {
    paused_until: Option<u64>,
    /// The term of the last entry it applied: what its answers report.
    applied_term: u64,
    /// A deposed leader whose lessor still thinks it is primary.
    stale: Option<Stale>,
}

#[derive(Debug, Clone, Copy)]
struct Lease {
    ttl_ms: u64,
    /// Expiry on the coordinator's clock, in the real leader's lessor.
    expiry: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tenure {
    Held { ttl_ms: u64, instance: u64 },
    Released,
}

/// How often the network misbehaves, now.
#[derive(Debug, Clone, Copy)]
pub struct Net {
    pub lost: f64,
    pub duplicated: f64,
    pub delay_max_ms: u64,
}

pub struct World {
    pub rng: ChaCha8Rng,
    /// A database's semantics instead of etcd's (`snowmint-db`): one
    /// primary (member 0) that every request reaches, never replaced (no
    /// election, so no stale leader and no early revoke of 12528), answers
    /// without raft terms; its pauses, lost and late answers and clock steps
    /// and rates stay.
    pub single_primary: bool,
    pub origin: tokio::time::Instant,
    members: Vec<Member>,
    term: u64,
    leader: Option<usize>,
    /// When the leader was paused (real ms), for the election.
    leader_paused_at: Option<u64>,
    leases: BTreeMap<LeaseId, Lease>,
    next_lease: LeaseId,
    identities: BTreeMap<u16, LeaseId>,
    marks: BTreeMap<u16, u64>,
    tenures: BTreeMap<u16, Tenure>,
    /// Leases released by their holder before the revoke (a shutdown).
    released: BTreeSet<LeaseId>,
    /// Leases that took an identity over uncleanly and have issued nothing
    /// under it yet (in their hand-over wait): a shutdown gives them up
    /// without a release, since the last holder's fence may be open.
    pub(crate) waiting: BTreeSet<LeaseId>,
    /// Leases a session has seen confirmed as holding their identity: it
    /// knows it holds, so giving one up while healthy is a fault.
    confirmed: BTreeSet<LeaseId>,
    /// The coordinator's clock: `coord = base_coord + (real - base_real) * rate`.
    rate: f64,
    base_real: u64,
    base_coord: f64,
    /// Each lease's legitimate end (real ms): the protocol's promise is that
    /// nothing is issued under a lease at or after it.
    pub legit_end: BTreeMap<LeaseId, u64>,
    pub net: Net,
    /// Holder slots paused now (until, real ms).
    pub holders_paused: BTreeMap<usize, u64>,
    pub violations: Vec<String>,
    pub faults: BTreeMap<&'static str, u64>,
}

impl World {
    pub fn new(seed: u64, origin: tokio::time::Instant) -> World {
        World {
            rng: ChaCha8Rng::seed_from_u64(seed),
            single_primary: false,
            origin,
            members: vec![
                Member {
                    paused_until: None,
                    applied_term: 1,
                    stale: None,
                };
                3
            ],
            term: 1,
            leader: Some(0),
            leader_paused_at: None,
            leases: BTreeMap::new(),
            next_lease: 0x1000,
            identities: BTreeMap::new(),
            marks: BTreeMap::new(),
            tenures: BTreeMap::new(),
            released: BTreeSet::new(),
            waiting: BTreeSet::new(),
            confirmed: BTreeSet::new(),
            rate: 1.0,
            base_real: 0,
            base_coord: 0.0,
            legit_end: BTreeMap::new(),
            net: Net {
                lost: 0.0,
                duplicated: 0.0,
                delay_max_ms: 5,
            },
            holders_paused: BTreeMap::new(),
            violations: Vec::new(),
            faults: BTreeMap::new(),
        }
    }

    pub fn now(&self) -> u64 {
        now_ms(self.origin)
    }

    fn coord(&self) -> u64 {
        let real = self.now();
        (self.base_coord + (real.saturating_sub(self.base_real)) as f64 * self.rate) as u64
    }

    pub fn fault(&mut self, kind: &'static str) {
        *self.faults.entry(kind).or_default() += 1;
        self.trace(format_args!("fault {kind}"));
    }

    /// With `SIM_TRACE=1`, one line of what happened (for a replay).
    pub fn trace(&self, what: std::fmt::Arguments<'_>) {
        if trace_on() {
            eprintln!(
                "{:>8} ms term {} leader {:?} | {what}",
                self.now(),
                self.term,
                self.leader
            );
        }
    }

    pub fn violation(&mut self, what: String) {
        self.violations.push(format!("t={} ms: {what}", self.now()));
    }

    /// The coordinator's clock runs at `rate` from now on.
    pub fn set_rate(&mut self, rate: f64) {
        self.base_coord = self.coord() as f64;
        self.base_real = self.now();
        self.rate = rate;
        self.fault("coordinator_clock_rate");
    }

    /// The coordinator's clock steps by `ms` (forward or back).
    pub fn step_clock(&mut self, ms: i64) {
        self.base_coord = (self.coord() as f64 + ms as f64).max(0.0);
        self.base_real = self.now();
        self.fault(if ms >= 0 {
            "coordinator_clock_step_forward"
        } else {
            "coordinator_clock_step_back"
        });
    }

    /// Permanently holds identity `n` (a filler: the pool is small, so that
    /// freed identities are taken again).
    pub fn fill(&mut self, n: u16) {
        self.identities.insert(n, 0);
    }

    /// An operator puts a held identity under another lease (`etcdctl put`
    /// with a lease of its own): its holder must move to another identity.
    /// Returns the identity taken.
    pub fn intrude(&mut self) -> Option<u16> {
        let held: Vec<u16> = self
            .identities
            .iter()
            .filter(|(_, l)| **l > 0)
            .map(|(n, _)| *n)
            .collect();
        if held.is_empty() {
            return None;
        }
        let n = held[self.rng.random_range(0..held.len())];
        self.identities.insert(n, INTRUDER);
        self.fault("identity_taken_by_hand");
        Some(n)
    }

    /// The operator deletes the intruding key again.
    pub fn leave(&mut self, n: u16) {
        if self.identities.get(&n) == Some(&INTRUDER) {
            self.identities.remove(&n);
        }
    }

    pub fn pause_member(&mut self, m: usize, for_ms: u64) {
        // A database has one server to pause: the primary.
        let m = if self.single_primary { 0 } else { m };
        let now = self.now();
        if self.members[m].paused_until.is_some() {
            return;
        }
        self.members[m].paused_until = Some(now + for_ms);
        if self.leader == Some(m) {
            self.leader_paused_at = Some(now);
            let table = self.leases.clone();
            self.members[m].stale = Some(Stale {
                table,
                demote_at: None,
            });
            self.fault("leader_pause");
        } else {
            self.fault("follower_pause");
        }
    }

    /// Moves the cluster on to now: elections, resumptions, demotions, the
    /// stale revokes (12528) and lease expiry.
    pub fn tick(&mut self) {
        let now = self.now();
        // An election once the leader has been silent past the timeout (a
        // database's primary has no one to replace it).
        if let (false, Some(l), Some(at)) =
            (self.single_primary, self.leader, self.leader_paused_at)
            && self.members[l].paused_until.is_some()
            && now >= at + ELECTION_MS
        {
            let running: Vec<usize> = (0..3)
                .filter(|&m| self.members[m].paused_until.is_none())
                .collect();
            if running.len() >= 2 {
                let winner = running[self.rng.random_range(0..running.len())];
                self.term += 1;
                self.leader = Some(winner);
                self.leader_paused_at = None;
                for &m in &running {
                    self.members[m].applied_term = self.term;
                }
                // Promote: every lease gets its whole TTL again, plus the
                // election timeout.
                let coord = self.coord();
                let rate = self.rate;
                for (lease, l) in self.leases.iter_mut() {
                    l.expiry = coord + l.ttl_ms + ELECTION_MS;
                    let end = now + ((l.ttl_ms + ELECTION_MS) as f64 / rate) as u64;
                    let e = self.legit_end.entry(*lease).or_default();
                    *e = (*e).max(end);
                }
                self.fault("election");
            } else {
                self.leader = None;
            }
        }
        if self.leader.is_none() {
            // Quorum back: the first running member leads.
            let running: Vec<usize> = (0..3)
                .filter(|&m| {
                    self.members[m].paused_until.is_none() && self.members[m].stale.is_none()
                })
                .collect();
            if running.len() >= 2 {
                self.term += 1;
                self.leader = Some(running[0]);
                for &m in &running {
                    self.members[m].applied_term = self.term;
                }
            }
        }
        // Resumptions.
        for m in 0..3 {
            if self.members[m].paused_until.is_some_and(|u| now >= u) {
                self.members[m].paused_until = None;
                if self.leader == Some(m) {
                    // Resumed before anyone replaced it: it still leads.
                    self.members[m].stale = None;
                    self.leader_paused_at = None;
                } else if let Some(stale) = &mut self.members[m].stale {
                    let window = self.rng.random_range(0..400);
                    stale.demote_at = Some(now + window);
                } else {
                    self.members[m].applied_term = self.term;
                }
            }
        }
        // Deposed leaders that resumed: revoke what their stale table says
        // expired (the new leader commits it), then demote.
        let coord = self.coord();
        for m in 0..3 {
            let Some(stale) = self.members[m].stale.clone() else {
                continue;
            };
            let Some(demote_at) = stale.demote_at else {
                continue;
            };
            if self.leader.is_some() {
                for (&lease, held) in &stale.table {
                    if held.expiry <= coord && self.leases.contains_key(&lease) {
                        self.revoke(lease);
                        self.fault("stale_leader_revoke");
                    }
                }
            }
            if let Some(s) = &mut self.members[m].stale {
                s.table.retain(|_, l| l.expiry > coord);
            }
            if now >= demote_at {
                self.members[m].stale = None;
                self.members[m].applied_term = self.term;
            }
        }
        // Expiry by the real leader.
        if self.leader.is_some() {
            let expired: Vec<LeaseId> = self
                .leases
                .iter()
                .filter(|(_, l)| l.expiry <= coord)
                .map(|(&id, _)| id)
                .collect();
            for lease in expired {
                self.revoke(lease);
            }
        }
    }

    fn revoke(&mut self, lease: LeaseId) {
        self.trace(format_args!(
            "lease {lease:x} ends; frees {:?}",
            self.identities
                .iter()
                .filter(|(_, l)| **l == lease)
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
        ));
        self.leases.remove(&lease);
        self.identities.retain(|_, l| *l != lease);
    }

    /// Whether member `m` can take a request that needs the leader.
    fn via_leader(&self, m: usize) -> bool {
        self.members[m].paused_until.is_none() && self.leader.is_some()
    }

    fn renew_legit(&mut self, lease: LeaseId, ttl_ms: u64) {
        let end = self.now() + (ttl_ms as f64 / self.rate) as u64;
        let e = self.legit_end.entry(lease).or_default();
        *e = (*e).max(end);
    }

    // The requests, as member `m` answers them; `None`: no answer.

    fn scan(&mut self, m: usize, pool: Pool) -> Option<Census> {
        if !self.via_leader(m) {
            return None;
        }
        let mut census = Census::default();
        for n in pool.ordinals() {
            if self.identities.contains_key(&n) {
                census.taken.insert(n);
            }
            if let Some(&mark) = self.marks.get(&n) {
                census.marks.insert(n, mark);
            }
            if !census.taken.contains(&n)
                && (matches!(self.tenures.get(&n), Some(Tenure::Held { .. }))
                    || (!self.tenures.contains_key(&n) && self.marks.contains_key(&n)))
            {
                census.unclean.insert(n);
            }
        }
        Some(census)
    }

    fn grant(&mut self, m: usize, ttl: Duration) -> Option<Granted> {
        if !self.via_leader(m) {
            return None;
        }
        let lease = self.next_lease;
        self.next_lease += 1;
        self.trace(format_args!("grant {lease:x} via member {m}"));
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let expiry = self.coord() + ttl_ms;
        self.leases.insert(lease, Lease { ttl_ms, expiry });
        self.renew_legit(lease, ttl_ms);
        Some(Granted { lease, ttl })
    }

    fn claim(&mut self, m: usize, lease: LeaseId, n: u16, who: &Claimant<'_>) -> Option<Claimed> {
        if !self.via_leader(m) {
            return None;
        }
        if self.identities.contains_key(&n) || !self.leases.contains_key(&lease) {
            return Some(Claimed::Taken);
        }
        self.identities.insert(n, lease);
        self.trace(format_args!(
            "claim {n} by lease {lease:x} ({})",
            who.holder
        ));
        let previous = match self.tenures.get(&n) {
            None if !self.marks.contains_key(&n) => Previous::Clean,
            None => Previous::Unclean {
                ttl: who.ttl,
                holder: "unrecorded".to_owned(),
            },
            Some(Tenure::Released) => Previous::Clean,
            Some(Tenure::Held { instance, .. }) if *instance == who.instance => Previous::Clean,
            Some(Tenure::Held { ttl_ms, .. }) => Previous::Unclean {
                ttl: Duration::from_millis(*ttl_ms),
                holder: "another instance".to_owned(),
            },
        };
        self.tenures.insert(
            n,
            Tenure::Held {
                ttl_ms: u64::try_from(who.ttl.as_millis()).unwrap_or(u64::MAX),
                instance: who.instance,
            },
        );
        if matches!(previous, Previous::Unclean { .. }) {
            self.waiting.insert(lease);
        }
        Some(Claimed::Won(previous))
    }

    /// The term an answer of member `m` reports: none from a database.
    fn term_of(&self, m: usize) -> Option<u64> {
        (!self.single_primary).then_some(self.members[m].applied_term)
    }

    fn keep_alive(&mut self, m: usize, lease: LeaseId) -> Option<Renewal> {
        if self.members[m].paused_until.is_some() {
            return None;
        }
        let coord = self.coord();
        let term = self.term_of(m);
        if let Some(stale) = &mut self.members[m].stale {
            // A deposed leader before it demotes: renews in its own table.
            return Some(match stale.table.get_mut(&lease) {
                Some(l) => {
                    let ttl_ms = l.ttl_ms;
                    l.expiry = coord + ttl_ms;
                    self.fault("stale_keep_alive_answered");
                    Renewal {
                        ttl: Duration::from_millis(ttl_ms),
                        term,
                    }
                }
                None => Renewal {
                    ttl: Duration::ZERO,
                    term,
                },
            });
        }
        self.leader?;
        Some(match self.leases.get_mut(&lease) {
            Some(l) => {
                l.expiry = coord + l.ttl_ms;
                let ttl_ms = l.ttl_ms;
                self.renew_legit(lease, ttl_ms);
                Renewal {
                    ttl: Duration::from_millis(ttl_ms),
                    term,
                }
            }
            None => Renewal {
                ttl: Duration::ZERO,
                term,
            },
        })
    }

    fn confirm(&mut self, m: usize, n: u16, lease: LeaseId) -> Option<Confirmation> {
        if !self.via_leader(m) {
            return None;
        }
        // A linearizable read: served once the member has applied what the
        // leader committed, so it reports the current term; a deposed
        // leader has demoted its lessor by then (etcd demotes it on the
        // leadership change, before it applies the new leader's entries).
        if self.members[m].stale.take().is_some() {
            self.members[m].applied_term = self.term;
        }
        let holds = self.identities.get(&n) == Some(&lease);
        if holds {
            self.confirmed.insert(lease);
        }
        Some(Confirmation {
            holds,
            term: self.term_of(m),
        })
    }

    fn release(&mut self, m: usize, n: u16, lease: LeaseId) -> Option<Result<(), LeaseError>> {
        if !self.via_leader(m) {
            return None;
        }
        if self.identities.get(&n) != Some(&lease) {
            return Some(Err(not_holder(n, lease)));
        }
        self.tenures.insert(n, Tenure::Released);
        self.released.insert(lease);
        Some(Ok(()))
    }

    fn revoke_request(&mut self, m: usize, lease: LeaseId) -> Option<()> {
        if !self.via_leader(m) {
            return None;
        }
        // A session gives a lease up only when it is gone, or its identity
        // is no longer bound to it, or at a shutdown (released first, unless
        // it is still in its hand-over wait).
        let bound = self.identities.values().any(|&l| l == lease);
        if bound
            && self.confirmed.contains(&lease)
            && self.leases.contains_key(&lease)
            && !self.released.contains(&lease)
            && !self.waiting.contains(&lease)
        {
            self.violation(format!(
                "lease {lease:x} given up while healthy (alive, its identity bound to it)"
            ));
        }
        self.revoke(lease);
        let now = self.now();
        if let Some(end) = self.legit_end.get_mut(&lease) {
            *end = (*end).min(now);
        }
        Some(())
    }

    fn load_mark(&mut self, n: u16) -> Option<u64> {
        self.marks.get(&n).copied()
    }

    fn raise_mark(&mut self, n: u16, lease: LeaseId, until_ms: u64) -> Result<(), LeaseError> {
        if self.identities.get(&n) != Some(&lease) {
            return Err(not_holder(n, lease));
        }
        let current = self.marks.get(&n).copied();
        if snowmint_lease::raises(current, until_ms) {
            if let Some(old) = current
                && until_ms < old
            {
                self.violation(format!(
                    "identity {n}'s mark lowered from {old} to {until_ms}"
                ));
            }
            self.marks.insert(n, until_ms);
        }
        Ok(())
    }
}

pub fn trace_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SIM_TRACE").is_ok_and(|v| v == "1"))
}

fn not_holder(n: u16, lease: LeaseId) -> LeaseError {
    LeaseError::NotHolder {
        key: format!("identity {n}"),
        lease,
    }
}

fn timeout(op: &'static str, after: Duration) -> LeaseError {
    LeaseError::Timeout {
        coordinator: "sim",
        op,
        after,
    }
}

/// One holder's coordinator: a cursor over the three members.
#[derive(Debug)]
pub struct SimEtcd {
    pub world: Shared,
    pub slot: usize,
    pub member: usize,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("term", &self.term)
            .finish_non_exhaustive()
    }
}

impl SimEtcd {
    async fn unpaused(&self) {
        loop {
            let left = {
                let mut w = lock(&self.world);
                let now = w.now();
                match w.holders_paused.get(&self.slot).copied() {
                    Some(until) if until > now => until - now,
                    Some(_) => {
                        w.holders_paused.remove(&self.slot);
                        return;
                    }
                    None => return,
                }
            };
            tokio::time::sleep(Duration::from_millis(left)).await;
        }
    }

    /// One request: sent after a delay, answered (or not) by the member in
    /// use, the answer delayed or lost; at most `t`.
    async fn request<T>(
        &mut self,
        op: &'static str,
        t: Duration,
        mut apply: impl FnMut(&mut World, usize) -> Option<T>,
    ) -> Result<T, LeaseError> {
        let m = if lock(&self.world).single_primary {
            0
        } else {
            self.member
        };
        let world = Arc::clone(&self.world);
        let round = async {
            let (there, back, lost, twice) = {
                let mut w = lock(&world);
                let net = w.net;
                let there = w.rng.random_range(0..=net.delay_max_ms);
                let back = w.rng.random_range(0..=net.delay_max_ms);
                let lost = w.rng.random_bool(net.lost);
                let twice = w.rng.random_bool(net.duplicated);
                (there, back, lost, twice)
            };
            tokio::time::sleep(Duration::from_millis(there)).await;
            self.unpaused().await;
            let answer = {
                let mut w = lock(&world);
                w.tick();
                let answer = apply(&mut w, m);
                if twice {
                    w.fault("duplicated");
                    let _ = apply(&mut w, m);
                }
                if lost {
                    w.fault("answer_lost");
                }
                answer.filter(|_| !lost)
            };
            let Some(answer) = answer else {
                std::future::pending::<()>().await;
                unreachable!()
            };
            tokio::time::sleep(Duration::from_millis(back)).await;
            self.unpaused().await;
            answer
        };
        tokio::time::timeout(t, round)
            .await
            .map_err(|_| timeout(op, t))
    }
}

impl Coordinator for SimEtcd {
    fn sibling(&self) -> SimEtcd {
        SimEtcd {
            world: Arc::clone(&self.world),
            slot: self.slot,
            member: self.member,
        }
    }

    fn failed(&mut self) {
        self.member = (self.member + 1) % 3;
    }

    fn endpoint(&self) -> String {
        format!("member{}", self.member)
    }

    fn endpoints(&self) -> usize {
        3
    }

    fn scope(&self) -> String {
        "etcd prefix /sim".to_owned()
    }

    fn has_terms(&self) -> bool {
        !lock(&self.world).single_primary
    }

    async fn scan(&mut self, pool: Pool, t: Duration) -> Result<Census, LeaseError> {
        self.request("scan", t, |w, m| w.scan(m, pool)).await
    }

    async fn grant(&mut self, ttl: Duration, t: Duration) -> Result<Granted, LeaseError> {
        self.request("grant", t, |w, m| w.grant(m, ttl)).await
    }

    async fn claim(
        &mut self,
        lease: LeaseId,
        n: u16,
        who: &Claimant<'_>,
        t: Duration,
    ) -> Result<Claimed, LeaseError> {
        let who = who.clone();
        // A duplicated claim is applied once: the second finds it taken
        // (by its own lease) and its answer is the first's.
        let mut first = None;
        self.request("claim", t, |w, m| {
            let answer = w.claim(m, lease, n, &who);
            if first.is_none() {
                first.clone_from(&answer);
            }
            first.clone()
        })
        .await
    }

    async fn keep_alive(&mut self, lease: LeaseId, t: Duration) -> Result<Renewal, LeaseError> {
        self.request("keep-alive", t, |w, m| w.keep_alive(m, lease))
            .await
    }

    async fn confirm(
        &mut self,
        n: u16,
        lease: LeaseId,
        t: Duration,
    ) -> Result<Confirmation, LeaseError> {
        self.request("confirm", t, |w, m| w.confirm(m, n, lease))
            .await
    }

    async fn release(&mut self, n: u16, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        self.request("release", t, |w, m| w.release(m, n, lease))
            .await?
    }

    async fn revoke(&mut self, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        self.request("revoke", t, |w, m| w.revoke_request(m, lease))
            .await
    }

    async fn load_mark(&mut self, n: u16, t: Duration) -> Result<Option<u64>, LeaseError> {
        self.request("load mark", t, |w, _| Some(w.load_mark(n)))
            .await
    }

    async fn raise_mark(
        &mut self,
        n: u16,
        lease: LeaseId,
        until_ms: u64,
        t: Duration,
    ) -> Result<(), LeaseError> {
        self.request("raise mark", t, |w, _| {
            Some(w.raise_mark(n, lease, until_ms))
        })
        .await?
    }
}

/// The generator's mark I/O in the simulation: synchronous, answered by the
/// world at once (a simulation has one thread; see `bridge.rs`), refused
/// while the holder is paused, failing now and then.
#[derive(Debug)]
pub struct SimMarks {
    pub world: Shared,
    pub slot: usize,
}

impl MarkIo for SimMarks {
    fn load(&self, n: u16) -> Result<Option<u64>, LeaseError> {
        let mut w = lock(&self.world);
        w.tick();
        Ok(w.load_mark(n))
    }

    fn store(&self, n: u16, lease: LeaseId, until_ms: u64) -> Result<(), LeaseError> {
        let mut w = lock(&self.world);
        w.tick();
        if w.holders_paused.contains_key(&self.slot) {
            return Err(timeout("mark", Duration::ZERO));
        }
        let lost = w.net.lost;
        if w.rng.random_bool(lost / 2.0) {
            w.fault("mark_write_failed");
            return Err(timeout("mark", Duration::ZERO));
        }
        let result = w.raise_mark(n, lease, until_ms);
        if result.is_ok() && w.rng.random_bool(lost / 2.0) {
            // Landed, but the answer was lost.
            w.fault("mark_answer_lost");
            return Err(timeout("mark", Duration::ZERO));
        }
        result
    }
}
