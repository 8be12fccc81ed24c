//! The etcd-backed reservation store of one (identity, lease).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use snowmint::{ReservationStore, StoreError, StoreErrorKind};
use tokio::sync::Notify;

use crate::bridge::Bridge;
use crate::error::EtcdError;

/// Keeps an identity's "reserved until" mark at `<prefix>/reserved/<dc>/<worker>`.
///
/// The key is not bound to the lease, so the next holder of the identity
/// reads it before it issues. Writes only raise the mark, and only while the
/// identity key is still bound to this store's lease: a fenced instance
/// cannot move the next holder's mark, and its own writes fail, so its
/// generator stops issuing.
///
/// **Never lowered.** A `store` at or below the highest mark this store
/// knows is in etcd returns at once, with no round trip; so
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
pub struct EtcdStore {
    bridge: Bridge,
    identity: u16,
    lease: i64,
    /// The highest mark this store knows is in etcd: a lower write is
    /// already covered and needs no round trip.
    durable: AtomicU64,
    /// Notified when etcd says the identity key is not bound to `lease`
    /// any more: the session must not wait for its next renewal to notice.
    lost: Arc<Notify>,
}

impl EtcdStore {
    pub(crate) fn new(bridge: Bridge, identity: u16, lease: i64, lost: Arc<Notify>) -> EtcdStore {
        EtcdStore {
            bridge,
            identity,
            lease,
            durable: AtomicU64::new(0),
            lost,
        }
    }

    /// The lease this store writes under.
    pub fn lease(&self) -> i64 {
        self.lease
    }
}

fn store_error(e: EtcdError) -> StoreError {
    let kind = match e {
        EtcdError::DamagedMark { .. } => StoreErrorKind::Damaged,
        _ => StoreErrorKind::Other,
    };
    StoreError::new(kind, format!("etcd reservation: {e}"))
}

impl ReservationStore for EtcdStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        let mark = self.bridge.load(self.identity).map_err(store_error)?;
        if let Some(mark) = mark {
            self.durable.fetch_max(mark, Ordering::AcqRel);
        }
        Ok(mark)
    }

    fn store(&self, until_ms: u64) -> Result<(), StoreError> {
        if until_ms <= self.durable.load(Ordering::Acquire) {
            return Ok(());
        }
        self.bridge
            .store(self.identity, self.lease, until_ms)
            .map_err(|e| {
                if matches!(e, EtcdError::NotHolder { .. }) {
                    self.lost.notify_one();
                }
                store_error(e)
            })?;
        self.durable.fetch_max(until_ms, Ordering::AcqRel);
        Ok(())
    }
}
