//! The seam: what the protocol asks of a coordinator, and nothing more.
//!
//! A coordinator stores, for each of the 1024 identities, who holds it
//! (bound to a lease that expires unless renewed) and its "reserved until"
//! mark (kept across holders). The protocol (`session/`) decides when to
//! ask what and what an answer means; a coordinator only answers, each
//! request bounded by the timeout it is given. It reads no clock: the
//! session reads its own before each request, so the fence is measured on
//! the holder's clock from when a request was *sent*.
//!
//! What each request must guarantee is on [`Coordinator`].

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use snowmint::Identity;

use crate::error::LeaseError;
use crate::status::SharedStatus;

/// A lease's ID, as the coordinator names it (etcd's lease ID, a
/// database's lease token).
pub type LeaseId = i64;

/// A granted lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granted {
    /// Its ID.
    pub lease: LeaseId,
    /// The TTL the coordinator granted.
    pub ttl: Duration,
}

/// What a coordinator answered to one keep-alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renewal {
    /// The TTL the lease was renewed with; zero when the coordinator says
    /// the lease does not exist (expired, revoked, or unknown to the member
    /// that answered).
    pub ttl: Duration,
    /// The coordinator's term when it answered, if it has terms
    /// ([`Coordinator::has_terms`]): a number that grows with each new
    /// leader of a replicated coordinator and names one, so that an answer
    /// can be matched to the read that confirms it (`renewal.rs`).
    pub term: Option<u64>,
}

/// What a linearizable read of identity `n`'s holder said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Confirmation {
    /// Whether the identity is still bound to the lease.
    pub holds: bool,
    /// The coordinator's term when it answered the read, if it has terms
    /// (see [`Renewal::term`]).
    pub term: Option<u64>,
}

/// What a scan saw of a pool: who holds what, and what the free identities
/// left behind (their marks, and whether their last holder let go cleanly),
/// so the session can prefer an identity it can issue under at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Census {
    /// The identities held by a live lease.
    pub taken: HashSet<u16>,
    /// The marks of the identities that have one (Unix ms); a damaged mark
    /// is left out here and refused when the identity is claimed.
    pub marks: HashMap<u16, u64>,
    /// The identities whose last holder's lease ended without a release
    /// (expired, crashed, or ended early by the coordinator).
    pub unclean: HashSet<u16>,
}

/// How identity `n`'s last holder let go, as the claim that took it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Previous {
    /// Never held, released by a holder that had stopped issuing first, or
    /// last held by this same process (`instance`): issue at once.
    Clean,
    /// Held by a lease that ended without a release. If the coordinator
    /// ended it early (a deposed leader revoking leases it wrongly thinks
    /// expired; a database clock stepped forward), its
    /// holder's fence may still be open, for at most its `ttl`; so the new
    /// holder issues only once `ttl` has passed since the claim.
    Unclean {
        /// The previous holder's lease TTL (its fence's bound).
        ttl: Duration,
        /// Who it was, for the log.
        holder: String,
    },
    /// The coordinator's record of the identity may have lost its last
    /// writes: its database's history changed since the row was written (a
    /// failover to a replica that lacked the last commits, a restore). Who
    /// held it last, and up to where it issued, are unknown: a holder whose
    /// claim was lost may still issue for up to `bound` (the longest TTL any
    /// holder may have, as the coordinator can prove it), and the mark read
    /// is no floor. The new holder issues only once `bound` has passed since
    /// the claim, and only above the claim's time plus `bound` plus the
    /// generator's borrowing bound (a lost holder issued at most that far
    /// ahead of its clock).
    Untrusted {
        /// The longest a lost holder's fence may stay open.
        bound: Duration,
        /// What changed, for the log (`the database's epoch changed from
        /// ... to ...`).
        why: String,
    },
}

/// How a claim of one identity went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// A live lease holds it.
    Taken,
    /// It is bound to the lease now; how its last holder let go.
    Won(Previous),
}

/// Who claims: what the coordinator records about the holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimant<'a> {
    /// For operators (`<hostname> pid <pid>`).
    pub holder: &'a str,
    /// This process's random instance token: an identity it held itself
    /// before is [`Previous::Clean`] to it.
    pub instance: u64,
    /// Its lease TTL, recorded for whoever takes the identity after it.
    pub ttl: Duration,
}

/// A task a coordinator runs beside the session (etcd asks each endpoint
/// for its version), stopped with the session.
pub type Background = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A coordinator of identities.
///
/// What each request must guarantee, for the argument in
/// `docs/distributed.md` to hold:
///
/// - [`claim`](Coordinator::claim) binds identity `n` to the lease only if no
///   live lease holds it, atomically.
/// - A lease granted with TTL `t` ([`grant`](Coordinator::grant)) or renewed
///   with TTL `t` ([`keep_alive`](Coordinator::keep_alive)) does not expire
///   before `t` has passed on the coordinator's clock since the request was
///   sent (the fence closes a margin earlier on the holder's clock). Where a
///   coordinator may end a lease early anyway (a deposed leader revoking
///   what its stale table says expired, a database clock stepped forward),
///   [`claim`](Coordinator::claim) must still say
///   truthfully whether the last holder released the identity
///   ([`Previous`]): the hand-over wait after an unclean one covers it.
/// - [`raise_mark`](Coordinator::raise_mark) writes only while the
///   identity is bound to the lease, and only raises.
/// - [`confirm`](Coordinator::confirm) is linearizable: its answer reflects
///   every write committed before it was sent.
///
/// Each method is one request (or a few, as one step) bounded by `t`;
/// failures are [`LeaseError`]s: [`LeaseError::Timeout`] and
/// [`LeaseError::Request`] for a request that got no usable answer (the
/// session then moves to another endpoint with [`failed`](Coordinator::failed)),
/// [`LeaseError::NotHolder`] when a write or read finds the identity bound
/// to another lease, [`LeaseError::DamagedMark`] for a mark that is not
/// Unix milliseconds.
pub trait Coordinator: Send + Sync + 'static {
    /// Another handle on the same coordinator, endpoint list and position,
    /// with no connection or request state of its own yet (the reservation
    /// thread keeps one).
    fn sibling(&self) -> Self
    where
        Self: Sized;

    /// The last request failed on the way: drop the connection and move to
    /// the next endpoint.
    fn failed(&mut self);

    /// The endpoint in use, for logs.
    fn endpoint(&self) -> String;

    /// How many endpoints there are (a graceful stop tries each).
    fn endpoints(&self) -> usize;

    /// Where the identities live, for operators (`etcd prefix /snowmint`,
    /// `PostgreSQL table snowmint_identities`), named in
    /// [`LeaseError::AllTaken`].
    fn scope(&self) -> String;

    /// The identities of `pool` held now, and what the free ones left.
    fn scan(
        &mut self,
        pool: Pool,
        t: Duration,
    ) -> impl Future<Output = Result<Census, LeaseError>> + Send;

    /// Grants a lease of about `ttl`.
    fn grant(
        &mut self,
        ttl: Duration,
        t: Duration,
    ) -> impl Future<Output = Result<Granted, LeaseError>> + Send;

    /// Binds identity `n` to `lease` if no live lease holds it, records
    /// `who` as its holder, and says how the last holder let go, all before
    /// it returns `Won` (a crash in between must leave the identity looking
    /// unclean to the next claimant, never clean).
    fn claim(
        &mut self,
        lease: LeaseId,
        n: u16,
        who: &Claimant<'_>,
        t: Duration,
    ) -> impl Future<Output = Result<Claimed, LeaseError>> + Send;

    /// Renews `lease` once.
    fn keep_alive(
        &mut self,
        lease: LeaseId,
        t: Duration,
    ) -> impl Future<Output = Result<Renewal, LeaseError>> + Send;

    /// Whether identity `n` is still bound to `lease`, read linearizably.
    fn confirm(
        &mut self,
        n: u16,
        lease: LeaseId,
        t: Duration,
    ) -> impl Future<Output = Result<Confirmation, LeaseError>> + Send;

    /// Records that identity `n`'s holder under `lease` has stopped issuing
    /// and lets go (only while `n` is bound to `lease`), so the next holder
    /// may issue at once; then [`revoke`](Coordinator::revoke) frees it.
    fn release(
        &mut self,
        n: u16,
        lease: LeaseId,
        t: Duration,
    ) -> impl Future<Output = Result<(), LeaseError>> + Send;

    /// Ends `lease` now; what it held is free at once.
    fn revoke(
        &mut self,
        lease: LeaseId,
        t: Duration,
    ) -> impl Future<Output = Result<(), LeaseError>> + Send;

    /// Identity `n`'s mark (Unix ms), `None` if none was ever written.
    fn load_mark(
        &mut self,
        n: u16,
        t: Duration,
    ) -> impl Future<Output = Result<Option<u64>, LeaseError>> + Send;

    /// Raises identity `n`'s mark to at least `until_ms`, only while `n` is
    /// bound to `lease` ([`LeaseError::NotHolder`] otherwise); never lowers
    /// it. Returns once the mark is durable.
    fn raise_mark(
        &mut self,
        n: u16,
        lease: LeaseId,
        until_ms: u64,
        t: Duration,
    ) -> impl Future<Output = Result<(), LeaseError>> + Send;

    /// Whether answers carry terms ([`Renewal::term`]) that a renewal must
    /// be confirmed by (a replicated coordinator, where a deposed leader may
    /// answer from a stale lease table), or whether each answer comes from
    /// the one primary that decides (a database: the statement that renews
    /// is the truth, and a read after it is linearizable without a term).
    /// Default: terms.
    fn has_terms(&self) -> bool {
        true
    }

    /// A task to run beside the session, if the coordinator has one.
    /// `confirm`: whether renewals are confirmed (for its log lines).
    fn background(&self, status: SharedStatus, t: Duration, confirm: bool) -> Option<Background> {
        let _ = (status, t, confirm);
        None
    }
}

/// How many workers one datacenter has: 32.
const WORKERS_PER_DATACENTER: u16 = 1 << snowmint::WORKER_BITS;

/// The identities one session may claim: all 1024, or the 32 workers of one
/// datacenter (a region with its own coordinator, [`LeaseConfig::datacenter`](crate::LeaseConfig::datacenter)).
/// Identities are named by their ordinal, `datacenter * 32 + worker`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool {
    datacenter: Option<u8>,
}

impl Pool {
    /// Every identity.
    pub const ALL: Pool = Pool { datacenter: None };

    /// The workers of `datacenter` (0..=31), or every identity.
    pub fn new(datacenter: Option<u8>) -> Pool {
        Pool { datacenter }
    }

    /// The datacenter it is scoped to, if any.
    pub fn datacenter(self) -> Option<u8> {
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
    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> u16 {
        self.span().1
    }

    /// Whether identity number `n` is in it.
    pub fn contains(self, n: u16) -> bool {
        let (first, len) = self.span();
        (first..first + len).contains(&n)
    }

    /// Its identity numbers, in ordinal order.
    pub fn ordinals(self) -> impl Iterator<Item = u16> {
        let (first, len) = self.span();
        first..first + len
    }
}

/// How messages name a pool: `all 1024 worker identities`, or `all 32
/// worker identities of datacenter N` (the one home of those words).
impl std::fmt::Display for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.datacenter {
            None => write!(f, "all {} worker identities", Identity::COUNT),
            Some(dc) => write!(
                f,
                "all {WORKERS_PER_DATACENTER} worker identities of datacenter {dc}"
            ),
        }
    }
}
