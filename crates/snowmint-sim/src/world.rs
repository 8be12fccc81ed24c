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
//! - the tenure record's TTL is what the next holder must wait: the longest
//!   fence that may still be open on the identity (the claimant's TTL, or
//!   the one recorded before it if that holder did not release); a claim
//!   asked again under the lease it bound is answered from that record;
//! - an early end: the coordinator ends one lease right after a renewal of
//!   it counted, its holder is cut off (its requests hang, it mints on
//!   behind its fence), another holder is made to claim its identity (its
//!   own taken by hand, every other free one held by hand a while), and
//!   that claimant's lease is ended early in its hand-over wait in turn;
//! - a quorum loss (the leader and a follower paused together), after
//!   which clients still connected to the deposed leader send it their
//!   keep-alives while it answers from its stale table.
//!
//! **The SQL coordinator model** (`single_primary`, one schedule in eight):
//! a database's semantics instead (`snowmint-db`): one primary, no terms,
//! no election. In half of those (`lossy_failovers`) the database keeps an
//! epoch and fails over to a replica that lacked its last commits: every
//! write after a recent cut point is gone (claims, renewals, releases, mark
//! raises) and the epoch moves on. A claim of a row last written in an
//! older epoch answers [`Previous::Untrusted`] with the model's declared
//! longest TTL as its bound, whatever the row's released and instance
//! fields say, and takes the row even if its lease looks live; a
//! keep-alive, confirm or mark raise on a tenure from an older epoch
//! answers lost (TTL 0, not held, `NotHolder`). The plant `epoch-ignored`
//! switches the claim's side of that off (`World::stale_row`).
//!
//! **The Redis model** (`redis`, one schedule in thirty-two): the SQL
//! model's one primary, epochs and lossy failovers, and Redis's records:
//! none exists until a claim writes it, and a claim of an identity with no
//! record answers [`Previous::Untrusted`] with the declared bound (a
//! missing record cannot be told from a lost one). Its faults: a restart
//! without persistence (every record, mark and lease gone, a new epoch), a
//! lossy failover as above, and an eviction of one identity's record
//! (refused by configuration, so it happens only with the plant
//! `missing-record-trusted` on, which also makes a claim trust a missing
//! record as never written: `World::stale_row`). A restart or an eviction
//! cuts the holder of the identity it hits off and forces another onto it.
//!
//! Beside the model it keeps the truth the invariants are checked against:
//! each lease's legitimate end (its last renewal by a real leader plus its
//! TTL, in real time); each lease's fence bound (its last renewal that
//! counted, a keep-alive answered and a read after it that saw the
//! identity still bound at the same term, sent at `s` with TTL `t`: its
//! holder's fence may be open until `s + t` in real time, the margin being
//! the allowance for its clock's rate); and every violation found. The
//! rule checked at each mint: no holder issues under an identity while the
//! fence of an earlier holder that issued under it may still be open.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use snowmint_lease::plant::{self, Plant};
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
    /// Claimed by `lease` of `instance`, not released. `ttl_ms`: what the
    /// next holder must wait, the longest fence that may still be open on
    /// the identity (the claimant's TTL, or the one recorded before it if
    /// that holder did not release).
    Held {
        ttl_ms: u64,
        instance: u64,
        lease: LeaseId,
    },
    Released,
}

/// What a database keeps, and a failover to a replica that lacked the last
/// commits rolls back: a copy as of one instant.
#[derive(Debug, Clone)]
struct Db {
    at: u64,
    seq: u64,
    /// Taken just before a claim.
    before_claim: bool,
    leases: BTreeMap<LeaseId, Lease>,
    identities: BTreeMap<u16, LeaseId>,
    marks: BTreeMap<u16, u64>,
    tenures: BTreeMap<u16, Tenure>,
    row_epoch: BTreeMap<u16, u64>,
}

/// The fault that exposes a short hand-over wait, in stages: the
/// coordinator ends `lease` early right after a renewal of it counted, its
/// holder is cut off, and another holder is made to claim its identity;
/// then (`second`) that claimant's lease is ended early during its wait,
/// and it either claims the identity again itself or is cut off too and a
/// third holder takes it.
#[derive(Debug, Clone, Copy)]
struct EarlyEnd {
    lease: LeaseId,
    n: u16,
    second: bool,
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
    /// Whether the database fails over to a replica that lacked its last
    /// commits (the SQL coordinator model's epochs).
    pub lossy_failovers: bool,
    /// Redis's records instead of a table's rows (`snowmint-redis`): with
    /// `single_primary` and `lossy_failovers`; no record until a claim
    /// writes one, and a missing one is untrusted.
    pub redis: bool,
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
    /// The identities the holders share (the rest of the datacenter is
    /// filled).
    pub pool: Vec<u16>,
    /// The model's declared longest lease TTL (ms): at least every
    /// holder's; what a database claim of a row from an older epoch answers
    /// as its bound.
    pub max_ttl_ms: u64,
    /// No fault starts at or after this instant (real ms).
    pub quiet_from: u64,
    /// Holder slots cut off from the coordinator now (until, real ms): their
    /// requests and mark writes hang, but they mint on behind their fence.
    pub holders_cut: BTreeMap<usize, u64>,
    /// Which minter (slot, incarnation) each lease was granted to.
    lease_owner: BTreeMap<LeaseId, (usize, u64)>,
    /// Each lease's fence bound (real ms): its last renewal that counted
    /// (a keep-alive answered, then a read after it that saw the identity
    /// still bound, at the same term), sent at `s` with TTL `t`, keeps its
    /// holder's fence open until `s + t - margin` on its clock: until
    /// `s + t` at most in real time, once the margin's allowance for its
    /// clock's rate (and a descheduled thread) is counted. The checker's
    /// rule: no holder issues under an identity before this instant of
    /// every earlier holder of it that issued.
    fence_open: BTreeMap<LeaseId, u64>,
    /// The last keep-alive answered with a TTL, per lease: (sent, ttl ms,
    /// term), waiting for the read that confirms it.
    answered: BTreeMap<LeaseId, (u64, u64, Option<u64>)>,
    /// Per identity, the leases that claimed it, in order.
    claims_of: BTreeMap<u16, Vec<LeaseId>>,
    /// (lease, identity) pairs under which something was issued (a lease
    /// may have claimed another identity before, unseen: its answer lost).
    pub issued: BTreeSet<(LeaseId, u16)>,
    early_end: Option<EarlyEnd>,
    /// A lossy failover armed for the next renewal that counts of this
    /// lease (on this identity).
    failover_after: Option<(LeaseId, u16)>,
    /// Keys put by hand for a while (identity, until real ms).
    temporary: Vec<(u16, u64)>,
    /// The database's epoch: bumped by a failover that lost commits.
    epoch: u64,
    /// The epoch each row (identity) was last written in.
    row_epoch: BTreeMap<u16, u64>,
    /// The epoch each lease was granted in.
    lease_epoch: BTreeMap<LeaseId, u64>,
    /// Copies of the database as of recent instants (the replica's view).
    journal: std::collections::VecDeque<Db>,
    /// Claims applied (the write's number, identity, lease), for a
    /// failover to name the ones it loses.
    claim_log: Vec<(u64, u16, LeaseId)>,
    /// Writes so far: a copy in the journal holds those below its `seq`.
    writes: u64,
}

impl World {
    pub fn new(seed: u64, origin: tokio::time::Instant) -> World {
        World {
            rng: ChaCha8Rng::seed_from_u64(seed),
            single_primary: false,
            lossy_failovers: false,
            redis: false,
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
            pool: Vec::new(),
            max_ttl_ms: 10_000,
            quiet_from: u64::MAX,
            holders_cut: BTreeMap::new(),
            lease_owner: BTreeMap::new(),
            fence_open: BTreeMap::new(),
            answered: BTreeMap::new(),
            claims_of: BTreeMap::new(),
            issued: BTreeSet::new(),
            early_end: None,
            failover_after: None,
            temporary: Vec::new(),
            epoch: 1,
            row_epoch: BTreeMap::new(),
            lease_epoch: BTreeMap::new(),
            journal: std::collections::VecDeque::new(),
            claim_log: Vec::new(),
            writes: 0,
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
        self.put_by_hand(n);
        self.fault("identity_taken_by_hand");
        Some(n)
    }

    /// The operator deletes the intruding key again.
    pub fn leave(&mut self, n: u16) {
        if self.identities.get(&n) == Some(&INTRUDER) {
            self.identities.remove(&n);
        }
    }

    /// An operator's key on identity `n` (a row written now, in a
    /// database).
    fn put_by_hand(&mut self, n: u16) {
        self.identities.insert(n, INTRUDER);
        self.row_epoch.insert(n, self.epoch);
    }

    /// The minter (slot, incarnation) holding identity `n` now, if any.
    fn holder_of(&self, n: u16) -> Option<(usize, u64)> {
        let lease = self.identities.get(&n)?;
        self.lease_owner.get(lease).copied()
    }

    /// Cuts holder `slot` off from the coordinator for `for_ms`.
    fn cut_off(&mut self, slot: usize, for_ms: u64) {
        let until = self.now() + for_ms;
        let e = self.holders_cut.entry(slot).or_default();
        *e = (*e).max(until);
        self.fault("holder_cut_off");
    }

    /// Makes another holder claim identity `n` soon: one holder's identity
    /// (not of a slot in `spare`) is taken by hand, and every other free
    /// identity of the pool is held by hand for a while, so that `n` is
    /// the only one free.
    fn force_onto(&mut self, n: u16, spare: &[usize]) {
        let now = self.now();
        let until = now + self.rng.random_range(self.max_ttl_ms..=self.max_ttl_ms * 2);
        let movers: Vec<u16> = self
            .pool
            .iter()
            .copied()
            .filter(|&k| k != n)
            .filter(|&k| {
                self.holder_of(k).is_some_and(|(slot, _)| {
                    !spare.contains(&slot) && !self.holders_cut.contains_key(&slot)
                })
            })
            .collect();
        let mut by_hand: Vec<u16> = self
            .pool
            .iter()
            .copied()
            .filter(|&k| k != n && self.claimable(k))
            .collect();
        if !movers.is_empty() {
            by_hand.push(movers[self.rng.random_range(0..movers.len())]);
        }
        for k in by_hand {
            self.put_by_hand(k);
            self.temporary.push((k, until));
        }
        self.fault("holder_forced_onto_identity");
    }

    /// Whether a claim of identity `n` could take it now.
    fn claimable(&self, n: u16) -> bool {
        !self.identities.contains_key(&n) || self.stale_row(n).is_some()
    }

    /// A database's row `n` last written in an older epoch than now: its
    /// record may have lost its last writes (that epoch). Where the claim
    /// of the model decides, so the plant `epoch-ignored` lives here.
    /// Redis's record of `n` missing (epoch 0) is untrusted too, unless
    /// the plant `missing-record-trusted` trusts it as never written.
    fn stale_row(&self, n: u16) -> Option<u64> {
        match self.row_behind(n) {
            Some(0) if plant::on(Plant::MissingRecordTrusted) => None,
            Some(e) if e > 0 && plant::on(Plant::EpochIgnored) => None,
            behind => behind,
        }
    }

    /// The epoch row `n` was last written in, if older than now (a
    /// database's): a tenure on it was lost, whatever the claim says.
    fn row_behind(&self, n: u16) -> Option<u64> {
        // Every row exists from the start (epoch 1); the filler rows stand
        // for holders outside the schedule, alive in every epoch.
        if !self.single_primary || self.identities.get(&n) == Some(&0) {
            return None;
        }
        // Redis has no record until a claim writes one: missing is epoch 0.
        let missing = if self.redis { 0 } else { 1 };
        Some(self.row_epoch.get(&n).copied().unwrap_or(missing)).filter(|&e| e < self.epoch)
    }

    /// Whether `lease` lives, for this epoch's database.
    fn lease_live(&self, lease: LeaseId) -> bool {
        self.leases.contains_key(&lease)
            && (!self.single_primary || self.lease_epoch.get(&lease) == Some(&self.epoch))
    }

    /// Before a write: a copy of the database as it was, now and then
    /// (and always before a claim), for a failover to roll back to.
    fn journal(&mut self, before_claim: bool) {
        if !self.single_primary {
            self.writes += 1;
            return;
        }
        let now = self.now();
        if before_claim || self.journal.back().is_none_or(|db| db.at + 100 <= now) {
            self.journal.push_back(Db {
                at: now,
                seq: self.writes,
                before_claim,
                leases: self.leases.clone(),
                identities: self.identities.clone(),
                marks: self.marks.clone(),
                tenures: self.tenures.clone(),
                row_epoch: self.row_epoch.clone(),
            });
            while self.journal.len() > 1 && self.journal[0].at + 3_000 < now {
                self.journal.pop_front();
            }
        }
        self.writes += 1;
    }

    /// A database fails over to a replica that lacked its last commits:
    /// every write after a recent point is gone (claims, renewals,
    /// releases, mark raises), and the epoch moves on. The holder whose
    /// claim was lost, if any, is cut off, and another holder made to claim
    /// its identity.
    pub fn lossy_failover(&mut self) {
        self.lossy_failover_of(None);
    }

    /// Arms a lossy failover for right after the next renewal that counts
    /// of a lease holding an identity of the pool, with the longest TTL:
    /// its holder is cut off and another made to claim its identity (so
    /// the IDs it issued above the mark the failover kept may meet the new
    /// holder's, unless the new holder starts above where they could be).
    pub fn arm_failover(&mut self) {
        let held: Vec<(u16, LeaseId)> = self
            .pool
            .iter()
            .filter_map(|&n| self.identities.get(&n).map(|&l| (n, l)))
            .filter(|(_, l)| {
                self.leases
                    .get(l)
                    .is_some_and(|lease| lease.ttl_ms == self.max_ttl_ms)
            })
            .collect();
        if held.is_empty() {
            return;
        }
        let (n, lease) = held[self.rng.random_range(0..held.len())];
        self.failover_after = Some((lease, n));
    }

    /// A lossy failover; `victim`: the holder (lease, identity) to cut
    /// off if the failover lost no claim.
    fn lossy_failover_of(&mut self, victim: Option<(LeaseId, u16)>) {
        if !self.lossy_failovers || self.journal.is_empty() {
            return;
        }
        let claims: Vec<usize> = (0..self.journal.len())
            .filter(|&i| self.journal[i].before_claim)
            .collect();
        let i = match claims.last() {
            Some(&i) if self.rng.random_bool(0.5) => i,
            _ => self.rng.random_range(0..self.journal.len()),
        };
        self.journal.truncate(i + 1);
        let db = self.journal[i].clone();
        self.leases = db.leases;
        self.identities = db.identities;
        self.marks = db.marks;
        self.tenures = db.tenures;
        self.row_epoch = db.row_epoch;
        self.epoch += 1;
        self.fault("lossy_failover");
        let lost = self
            .claim_log
            .iter()
            .rev()
            .find(|(seq, _, _)| *seq >= db.seq)
            .copied();
        self.claim_log.retain(|(seq, _, _)| *seq < db.seq);
        if lost.is_some() {
            self.fault("lossy_failover_lost_a_claim");
        }
        let victim = lost.map(|(_, n, lease)| (lease, n)).or(victim);
        if let Some((lease, n)) = victim
            && let Some(&(slot, _)) = self.lease_owner.get(&lease)
        {
            let d = self.rng.random_range(self.max_ttl_ms..=self.max_ttl_ms * 2);
            self.cut_off(slot, d + 1_000);
            self.force_onto(n, &[slot]);
        }
    }

    /// Redis restarts without persistence: every record, mark and lease is
    /// gone (the filler's stand for holders outside the schedule, which
    /// claim theirs again at once), and the epoch (its `run_id`) moves on.
    /// A holder of the pool is cut off, and another made to claim its
    /// identity.
    pub fn redis_restart(&mut self) {
        if !self.redis {
            return;
        }
        let victim = self.pool_victim();
        self.leases.clear();
        self.identities.retain(|_, l| *l == 0);
        self.marks.clear();
        self.tenures.clear();
        self.row_epoch.clear();
        self.journal.clear();
        self.claim_log.clear();
        self.epoch += 1;
        self.fault("redis_restart_empty");
        self.cut_off_and_force(victim);
    }

    /// Redis evicts identity `n`'s record (its lease, tenure and mark),
    /// the epoch unchanged. The real coordinator refuses an eviction policy
    /// that could (`allkeys-*`), so the model evicts only under the plant
    /// `missing-record-trusted`, whose claim then trusts what is left; its
    /// holder is cut off and another made to claim the identity.
    pub fn redis_eviction(&mut self) {
        if !self.redis {
            return;
        }
        if !plant::on(Plant::MissingRecordTrusted) {
            self.fault("redis_eviction_refused");
            return;
        }
        let Some((lease, n)) = self.pool_victim() else {
            return;
        };
        self.journal(false);
        self.identities.remove(&n);
        self.tenures.remove(&n);
        self.marks.remove(&n);
        self.row_epoch.remove(&n);
        self.fault("redis_eviction");
        self.cut_off_and_force(Some((lease, n)));
    }

    /// A lease of a minter holding an identity of the pool, if any.
    fn pool_victim(&mut self) -> Option<(LeaseId, u16)> {
        let held: Vec<(LeaseId, u16)> = self
            .pool
            .iter()
            .filter_map(|&n| self.identities.get(&n).map(|&l| (l, n)))
            .filter(|(l, _)| self.lease_owner.contains_key(l))
            .collect();
        (!held.is_empty()).then(|| held[self.rng.random_range(0..held.len())])
    }

    /// Cuts the holder of `victim` (lease, identity) off, and makes
    /// another holder claim its identity.
    fn cut_off_and_force(&mut self, victim: Option<(LeaseId, u16)>) {
        if let Some((lease, n)) = victim
            && let Some(&(slot, _)) = self.lease_owner.get(&lease)
        {
            let d = self.rng.random_range(self.max_ttl_ms..=self.max_ttl_ms * 2);
            self.cut_off(slot, d + 1_000);
            self.force_onto(n, &[slot]);
        }
    }

    /// Arms the early end: the next renewal that counts of a lease holding
    /// an identity of the pool ends it.
    pub fn arm_early_end(&mut self) {
        if self.early_end.is_some() {
            return;
        }
        let held: Vec<(u16, LeaseId)> = self
            .pool
            .iter()
            .filter_map(|&n| self.identities.get(&n).map(|&l| (n, l)))
            .filter(|(_, l)| self.lease_owner.contains_key(l))
            .collect();
        if held.is_empty() {
            return;
        }
        let (n, lease) = held[self.rng.random_range(0..held.len())];
        self.early_end = Some(EarlyEnd {
            lease,
            n,
            second: false,
        });
    }

    /// A renewal of `lease` on identity `n` just counted: if the early end
    /// is armed for it, the coordinator ends the lease now.
    fn early_end_after(&mut self, lease: LeaseId, n: u16) {
        if self.failover_after == Some((lease, n)) {
            self.failover_after = None;
            if self.now() < self.quiet_from {
                self.lossy_failover_of(Some((lease, n)));
            }
        }
        let Some(armed) = self.early_end else {
            return;
        };
        if armed.lease != lease || armed.n != n {
            return;
        }
        if self.now() >= self.quiet_from {
            self.early_end = None;
            return;
        }
        let Some(&(slot, _)) = self.lease_owner.get(&lease) else {
            return;
        };
        self.revoke(lease);
        let d = self.rng.random_range(self.max_ttl_ms..=self.max_ttl_ms * 2);
        if !armed.second {
            self.fault("early_end_after_renewal");
            self.cut_off(slot, d + 1_000);
            self.force_onto(n, &[slot]);
            // Next: whoever claims it uncleanly loses its lease in its wait.
            self.early_end = Some(EarlyEnd {
                lease: 0,
                n,
                second: true,
            });
        } else {
            self.fault("early_end_in_handover_wait");
            if self.rng.random_bool(0.5) {
                // Someone else takes it: the wait recorded must still cover
                // the holder before.
                self.cut_off(slot, d + 1_000);
                self.force_onto(n, &[slot]);
            }
            self.early_end = None;
        }
    }

    /// `lease`'s holder has stopped issuing under it: its fence is closed.
    fn fence_closed(&mut self, lease: LeaseId) {
        let now = self.now();
        if let Some(until) = self.fence_open.get_mut(&lease) {
            *until = (*until).min(now);
        }
    }

    /// Minter `who` has stopped issuing under every lease it had (it
    /// crashed, or is about to claim again): its fences are closed.
    pub fn fences_closed(&mut self, who: (usize, u64)) {
        let leases: Vec<LeaseId> = self
            .lease_owner
            .iter()
            .filter(|(_, owner)| **owner == who)
            .map(|(l, _)| *l)
            .collect();
        for lease in leases {
            self.fence_closed(lease);
        }
    }

    /// The earliest holder of identity `n` before `lease` that issued under
    /// it and whose fence may still be open at `now` (another minter's:
    /// a session closes its own fence before it claims again), with the
    /// instant it may be open until.
    pub fn open_fence_before(&self, n: u16, lease: LeaseId, now: u64) -> Option<(LeaseId, u64)> {
        let claims = self.claims_of.get(&n)?;
        let mine = self.lease_owner.get(&lease);
        claims
            .iter()
            .take_while(|&&l| l != lease)
            .filter(|&&l| self.issued.contains(&(l, n)) && self.lease_owner.get(&l) != mine)
            .find_map(|l| {
                self.fence_open
                    .get(l)
                    .filter(|&&until| until > now)
                    .map(|&until| (*l, until))
            })
    }

    /// The cluster loses its quorum: the leader and one follower paused
    /// together for `for_ms` (no renewal counts meanwhile; the leader,
    /// deposed, resumes with its stale table).
    pub fn quorum_loss(&mut self, for_ms: u64) {
        if self.single_primary {
            return;
        }
        let Some(leader) = self.leader else {
            return;
        };
        let follower = (leader + 1 + self.rng.random_range(0..2)) % 3;
        self.pause_member(leader, for_ms);
        self.pause_member(follower, for_ms.saturating_sub(500).max(300));
        self.fault("quorum_loss");
    }

    /// A deposed leader that resumed and still answers from its stale
    /// table (before it demotes), if any: a client connected to it sends
    /// its keep-alives there.
    fn stale_member(&self) -> Option<usize> {
        (0..3).find(|&m| {
            self.members[m].paused_until.is_none()
                && self.members[m]
                    .stale
                    .as_ref()
                    .is_some_and(|s| s.demote_at.is_some())
        })
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
        if !self.temporary.is_empty() {
            let over: Vec<u16> = self
                .temporary
                .iter()
                .filter(|(_, until)| *until <= now)
                .map(|(n, _)| *n)
                .collect();
            self.temporary.retain(|(_, until)| *until > now);
            for n in over {
                self.leave(n);
            }
        }
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
            if !self.claimable(n) {
                census.taken.insert(n);
            }
            if let Some(&mark) = self.marks.get(&n) {
                census.marks.insert(n, mark);
            }
            if !census.taken.contains(&n)
                && (matches!(self.tenures.get(&n), Some(Tenure::Held { .. }))
                    || (!self.tenures.contains_key(&n) && self.marks.contains_key(&n))
                    || self.stale_row(n).is_some())
            {
                census.unclean.insert(n);
            }
        }
        Some(census)
    }

    fn grant(
        &mut self,
        m: usize,
        ttl: Duration,
        sent: u64,
        owner: (usize, u64),
    ) -> Option<Granted> {
        if !self.via_leader(m) {
            return None;
        }
        self.journal(false);
        let lease = self.next_lease;
        self.next_lease += 1;
        self.trace(format_args!("grant {lease:x} via member {m}"));
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let expiry = self.coord() + ttl_ms;
        self.leases.insert(lease, Lease { ttl_ms, expiry });
        self.renew_legit(lease, ttl_ms);
        // A session grants a new lease only once it has stopped issuing
        // under the one before (its holder cleared): those fences closed.
        self.fences_closed(owner);
        self.lease_owner.insert(lease, owner);
        self.lease_epoch.insert(lease, self.epoch);
        // The first fence counts from the grant's send.
        self.fence_open.insert(lease, sent + ttl_ms);
        Some(Granted { lease, ttl })
    }

    fn claim(&mut self, m: usize, lease: LeaseId, n: u16, who: &Claimant<'_>) -> Option<Claimed> {
        if !self.via_leader(m) {
            return None;
        }
        // Asked again under the lease it is bound to (the answer was
        // lost): answered from the record, the wait it recorded.
        if self.identities.get(&n) == Some(&lease)
            && self.lease_live(lease)
            && let Some(Tenure::Held {
                ttl_ms, lease: l, ..
            }) = self.tenures.get(&n)
            && *l == lease
        {
            let ttl = Duration::from_millis(*ttl_ms);
            self.trace(format_args!("claim {n} by lease {lease:x} asked again"));
            self.waiting.insert(lease);
            return Some(Claimed::Won(Previous::Unclean {
                ttl,
                holder: "its own claim, asked again".to_owned(),
            }));
        }
        // A row from an older epoch is claimable whatever its lease says.
        let stale = self.stale_row(n);
        if (self.identities.contains_key(&n) && stale.is_none()) || !self.lease_live(lease) {
            return Some(Claimed::Taken);
        }
        self.journal(true);
        self.claim_log.push((self.writes - 1, n, lease));
        self.identities.insert(n, lease);
        self.trace(format_args!(
            "claim {n} by lease {lease:x} ({})",
            who.holder
        ));
        let who_ttl_ms = u64::try_from(who.ttl.as_millis()).unwrap_or(u64::MAX);
        let (previous, recorded_ms) = match (stale, self.tenures.get(&n)) {
            (Some(was), record) => {
                let before = match record {
                    Some(Tenure::Held { ttl_ms, .. }) => *ttl_ms,
                    _ => 0,
                };
                (
                    Previous::Untrusted {
                        bound: Duration::from_millis(self.max_ttl_ms),
                        why: if was == 0 {
                            "no record (Redis may have lost it)".to_owned()
                        } else {
                            format!("the database's epoch changed from {was} to {}", self.epoch)
                        },
                    },
                    // A lost holder may be fenced open for the bound.
                    who_ttl_ms.max(before).max(self.max_ttl_ms),
                )
            }
            (None, None) if !self.marks.contains_key(&n) => (Previous::Clean, who_ttl_ms),
            (None, None) => (
                Previous::Unclean {
                    ttl: who.ttl,
                    holder: "unrecorded".to_owned(),
                },
                who_ttl_ms,
            ),
            (None, Some(Tenure::Released)) => (Previous::Clean, who_ttl_ms),
            (
                None,
                Some(Tenure::Held {
                    instance,
                    ttl_ms,
                    lease: before,
                }),
            ) if *instance == who.instance => {
                // Its own: clean to it. A wait it had not finished under
                // its lease before, it finishes under this one (the session
                // keeps it): a shutdown before then gives it up unreleased.
                if self.waiting.contains(before) {
                    self.waiting.insert(lease);
                }
                (Previous::Clean, who_ttl_ms.max(*ttl_ms))
            }
            (None, Some(Tenure::Held { ttl_ms, .. })) => (
                Previous::Unclean {
                    ttl: Duration::from_millis(*ttl_ms),
                    holder: "another instance".to_owned(),
                },
                // The longest fence that may still be open on it.
                who_ttl_ms.max(*ttl_ms),
            ),
        };
        self.tenures.insert(
            n,
            Tenure::Held {
                ttl_ms: recorded_ms,
                instance: who.instance,
                lease,
            },
        );
        self.row_epoch.insert(n, self.epoch);
        self.claims_of.entry(n).or_default().push(lease);
        if !matches!(previous, Previous::Clean) {
            self.waiting.insert(lease);
            if let Some(armed) = &mut self.early_end
                && armed.second
                && armed.lease == 0
                && armed.n == n
            {
                armed.lease = lease;
            }
        }
        Some(Claimed::Won(previous))
    }

    /// The term an answer of member `m` reports: none from a database.
    fn term_of(&self, m: usize) -> Option<u64> {
        (!self.single_primary).then_some(self.members[m].applied_term)
    }

    fn keep_alive(&mut self, m: usize, lease: LeaseId, sent: u64) -> Option<Renewal> {
        if self.members[m].paused_until.is_some() {
            return None;
        }
        let answer = self.keep_alive_answer(m, lease)?;
        if !answer.ttl.is_zero() {
            let ttl_ms = u64::try_from(answer.ttl.as_millis()).unwrap_or(u64::MAX);
            self.answered.insert(lease, (sent, ttl_ms, answer.term));
        }
        Some(answer)
    }

    fn keep_alive_answer(&mut self, m: usize, lease: LeaseId) -> Option<Renewal> {
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
        if !self.lease_live(lease) {
            // Unknown, or of an older epoch of the database: lost.
            return Some(Renewal {
                ttl: Duration::ZERO,
                term,
            });
        }
        self.journal(false);
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
        let holds = self.identities.get(&n) == Some(&lease) && self.row_behind(n).is_none();
        let term = self.term_of(m);
        if holds {
            self.confirmed.insert(lease);
            // The renewal answered before this read counts (as the session
            // judges it): its holder's fence may be open that much longer.
            if let Some(&(sent, ttl_ms, renewed)) = self.answered.get(&lease)
                && renewed == term
            {
                let e = self.fence_open.entry(lease).or_default();
                *e = (*e).max(sent + ttl_ms);
                self.early_end_after(lease, n);
            }
        }
        Some(Confirmation { holds, term })
    }

    fn release(&mut self, m: usize, n: u16, lease: LeaseId) -> Option<Result<(), LeaseError>> {
        if !self.via_leader(m) {
            return None;
        }
        if self.identities.get(&n) != Some(&lease) || self.row_behind(n).is_some() {
            return Some(Err(not_holder(n, lease)));
        }
        self.journal(false);
        // Released only after it stopped issuing: its fence is closed.
        self.fence_closed(lease);
        self.tenures.insert(n, Tenure::Released);
        self.row_epoch.insert(n, self.epoch);
        self.released.insert(lease);
        Some(Ok(()))
    }

    fn revoke_request(&mut self, m: usize, lease: LeaseId) -> Option<()> {
        if !self.via_leader(m) {
            return None;
        }
        self.trace(format_args!("revoke {lease:x} asked"));
        // A session gives a lease up only when it is gone, or its identity
        // is no longer bound to it, or at a shutdown (released first, unless
        // it is still in its hand-over wait).
        let bound = self.identities.values().any(|&l| l == lease);
        if bound
            && self.confirmed.contains(&lease)
            && self.lease_live(lease)
            && !self.released.contains(&lease)
            && !self.waiting.contains(&lease)
        {
            self.violation(format!(
                "lease {lease:x} given up while healthy (alive, its identity bound to it)"
            ));
        }
        self.journal(false);
        self.revoke(lease);
        // A session gives a lease up only once it has stopped issuing
        // under it.
        self.fence_closed(lease);
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
        if self.identities.get(&n) != Some(&lease) || self.row_behind(n).is_some() {
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
            self.journal(false);
            self.marks.insert(n, until_ms);
            self.row_epoch.insert(n, self.epoch);
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
    /// Which start of the slot's machine this session is (a minter).
    pub incarnation: u64,
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
                // Paused, or cut off: its requests wait.
                let cut = w.holders_cut.get(&self.slot).copied();
                if cut.is_some_and(|until| until <= now) {
                    w.holders_cut.remove(&self.slot);
                }
                let paused = w.holders_paused.get(&self.slot).copied();
                if paused.is_some_and(|until| until <= now) {
                    w.holders_paused.remove(&self.slot);
                }
                match paused.max(cut) {
                    Some(until) if until > now => until - now,
                    _ => return,
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
        let m = {
            let w = lock(&self.world);
            if w.single_primary {
                0
            } else if op == "keep-alive"
                && let Some(stale) = w.stale_member()
            {
                // Still connected to the deposed leader (its keep-alive
                // stream outlived the pause).
                stale
            } else {
                self.member
            }
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
            incarnation: self.incarnation,
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
        let sent = lock(&self.world).now();
        let owner = (self.slot, self.incarnation);
        self.request("grant", t, |w, m| w.grant(m, ttl, sent, owner))
            .await
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
        let sent = lock(&self.world).now();
        self.request("keep-alive", t, |w, m| w.keep_alive(m, lease, sent))
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
        let now = w.now();
        let cut = w
            .holders_cut
            .get(&self.slot)
            .is_some_and(|&until| until > now);
        if w.holders_paused.contains_key(&self.slot) || cut {
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
