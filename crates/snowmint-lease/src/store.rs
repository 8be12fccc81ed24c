//! The reservation store of one (identity, lease), on the coordinator.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use snowmint::{ReservationStore, StoreError, StoreErrorKind};
use tokio::sync::Notify;

use crate::bridge::Bridge;
use crate::coordinator::LeaseId;
use crate::error::LeaseError;

/// Keeps an identity's "reserved until" mark on the coordinator (in etcd at
/// `<prefix>/reserved/<dc>/<worker>`).
///
/// The mark is not bound to the lease, so the next holder of the identity
/// reads it before it issues. Writes only raise the mark, and only while the
/// identity is still bound to this store's lease: a fenced instance
/// cannot move the next holder's mark, and its own writes fail, so its
/// generator stops issuing.
///
/// **Never lowered.** A `store` at or below the highest mark this store
/// knows is on the coordinator returns at once, with no round trip; so
/// [`Generator::persist_last_issued`](snowmint::Generator::persist_last_issued)
/// at shutdown leaves the mark where it was (up to one reservation window
/// ahead of the last ID), and it is safe: every write only raises. Lowering
/// would need a write that is certain no later holder has issued, for a gain
/// of at most one window of borrowed time for the next holder (which issues
/// at once either way), so it is not done. A write refused because the identity key is no
/// longer bound to the lease (deleted or taken over by hand) also tells the
/// lease session at once, which fences and claims again. `store` blocks
/// (bounded by the request timeout) on a dedicated thread; see the bridge.
#[derive(Debug)]
pub struct LeaseStore {
    bridge: Bridge,
    identity: u16,
    lease: LeaseId,
    /// What the session checks the generator by.
    seen: Arc<Seen>,
    /// The last millisecond this process issued under an identity it held
    /// before: loaded as if it were the mark, so the generator issues only
    /// above it and the process's IDs keep increasing across re-claims
    /// (guarantee 2). Never written as a mark.
    floor_ms: u64,
    /// Notified when the coordinator says the identity is not bound to `lease`
    /// any more: the session must not wait for its next renewal to notice.
    lost: Arc<Notify>,
}

impl LeaseStore {
    /// The store of identity number `n` held under `lease` by other means
    /// than a [`LeasedGenerator`](crate::LeasedGenerator) (a tool, a test):
    /// marks through `io` (see [`mark_thread`](crate::mark_thread)).
    pub fn new(io: Arc<dyn crate::MarkIo>, n: u16, lease: LeaseId) -> LeaseStore {
        LeaseStore::of_session(Bridge::over(io), n, lease, Arc::new(Notify::new()), 0)
    }

    pub(crate) fn of_session(
        bridge: Bridge,
        identity: u16,
        lease: LeaseId,
        lost: Arc<Notify>,
        floor_ms: u64,
    ) -> LeaseStore {
        LeaseStore {
            bridge,
            identity,
            lease,
            seen: Arc::new(Seen::default()),
            floor_ms,
            lost,
        }
    }

    /// A view of what the store has done, kept when the store is moved into
    /// a generator.
    pub(crate) fn probe(&self) -> Probe {
        Probe(Arc::clone(&self.seen))
    }

    /// The lease this store writes under.
    pub fn lease(&self) -> LeaseId {
        self.lease
    }
}

fn store_error(e: LeaseError) -> StoreError {
    let kind = match e {
        LeaseError::DamagedMark { .. } => StoreErrorKind::Damaged,
        LeaseError::Timeout { .. } => StoreErrorKind::Timeout,
        _ => StoreErrorKind::Other,
    };
    StoreError::new(kind, format!("reservation on the coordinator: {e}"))
}

/// The rule every coordinator's mark write follows: a write of `until_ms`
/// over the mark `current` is made only if it raises it. Marks are only ever
/// raised, so that a fenced holder's late write, a re-ordered one, or one
/// from a previous holder can never take the mark below IDs already issued.
///
/// ```
/// assert!(snowmint_lease::raises(None, 5));
/// assert!(snowmint_lease::raises(Some(4), 5));
/// assert!(!snowmint_lease::raises(Some(5), 5));
/// assert!(!snowmint_lease::raises(Some(6), 5));
/// ```
pub fn raises(current: Option<u64>, until_ms: u64) -> bool {
    current.is_none_or(|mark| mark < until_ms) || planted!(MarkLoweredAtHandover)
}

/// What a [`LeaseStore`] has done.
#[derive(Debug, Default)]
struct Seen {
    /// The highest mark this store knows is on the coordinator: a lower
    /// write is already covered and needs no round trip.
    durable: AtomicU64,
    /// Whether the mark was loaded through it.
    loaded: AtomicBool,
}

/// A view of a [`LeaseStore`] moved into a generator.
#[derive(Debug)]
pub(crate) struct Probe(Arc<Seen>);

impl Probe {
    /// Whether a generator loaded its mark through the store.
    pub(crate) fn loaded(&self) -> bool {
        self.0.loaded.load(Ordering::Acquire)
    }
}

impl ReservationStore for LeaseStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        let mark = self.bridge.load(self.identity).map_err(store_error)?;
        if let Some(mark) = mark {
            self.seen.durable.fetch_max(mark, Ordering::AcqRel);
        }
        self.seen.loaded.store(true, Ordering::Release);
        Ok(match (mark, self.floor_ms) {
            (mark, 0) => mark,
            (mark, floor) => Some(mark.map_or(floor, |m| m.max(floor))),
        })
    }

    fn store(&self, until_ms: u64) -> Result<(), StoreError> {
        if until_ms <= self.seen.durable.load(Ordering::Acquire) && !planted!(MarkLoweredAtHandover)
        {
            return Ok(());
        }
        self.bridge
            .store(self.identity, self.lease, until_ms)
            .map_err(|e| {
                if matches!(e, LeaseError::NotHolder { .. }) {
                    self.lost.notify_one();
                }
                store_error(e)
            })?;
        self.seen.durable.fetch_max(until_ms, Ordering::AcqRel);
        Ok(())
    }
}
