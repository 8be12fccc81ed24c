//! The lease session: claim an identity, keep its lease alive, fence the
//! holder when renewals stop, re-claim, and release on shutdown; written
//! once, over any [`Coordinator`].
//!
//! A session runs tenures one after another ([`Session::lifecycle`]): each
//! grants a lease, claims an identity under it and holds it until the lease
//! or the identity is lost (`tenure.rs`); holding is a small state machine,
//! handing over, issuing, fenced (`hold.rs`). Between tenures the session
//! carries what the next one must know ([`Carried`]).

mod hold;
mod tenure;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use snowmint::Generator;
use tokio::sync::watch;

use crate::backoff::Backoff;
use crate::bridge::Bridge;
use crate::claim::Spread;
use crate::config::{LeaseConfig, Timing};
use crate::coordinator::{Coordinator, LeaseId};
use crate::error::LeaseError;
use crate::fence::Fence;
use crate::holder::Holder;
use crate::status::{LeaseState, SharedStatus, update};

/// The first wait, and the longest, between two looks for a free identity
/// while every one of the pool is held (with +-25 % jitter, doubling).
const FULL_WAIT_MIN: Duration = Duration::from_millis(1500);
const FULL_WAIT_MAX: Duration = Duration::from_secs(10);

/// How blocking work (building a generator, which reads the mark; a mark
/// write) runs: on tokio's blocking threads, or inline where the mark I/O
/// never blocks (a simulation on one thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocking {
    Threads,
    Inline,
}

impl Blocking {
    /// Runs `f` and waits for it, off the async worker.
    pub(crate) async fn run<T: Send + 'static>(
        self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        match self {
            Blocking::Threads => tokio::task::spawn_blocking(f).await.ok(),
            Blocking::Inline => Some(f()),
        }
    }

    /// Runs `f` without waiting for it.
    pub(crate) fn detach(self, f: impl FnOnce() + Send + 'static) {
        match self {
            Blocking::Threads => drop(tokio::task::spawn_blocking(f)),
            Blocking::Inline => f(),
        }
    }
}

/// The lease held now, and the identity claimed under it, if any: what a
/// shutdown releases and revokes.
pub(crate) type Current = Arc<Mutex<Option<(LeaseId, Option<u16>)>>>;

pub(crate) struct Session<C: Coordinator> {
    pub(crate) config: LeaseConfig,
    pub(crate) coordinator: C,
    pub(crate) timing: Timing,
    pub(crate) bridge: Bridge,
    pub(crate) holder: Arc<Holder>,
    pub(crate) status: SharedStatus,
    pub(crate) current: Current,
    /// Counts installations, so `LeasedGenerator::start` can wait for one.
    pub(crate) installed: watch::Sender<u64>,
    /// This process's random token: an identity it held itself is clean to
    /// it. Drawn anew after a claim that went unanswered (`tenure.rs`).
    pub(crate) instance: u64,
    /// Seeds the claim spread and the backoff jitter.
    pub(crate) seed: u64,
    pub(crate) blocking: Blocking,
}

/// What the session carries from one tenure to the next.
struct Carried {
    /// The identity held last: claimed first again when it is free.
    prefer: Option<u16>,
    /// Identities whose reservation mark is damaged: never claimed again
    /// by this process (an operator has to look at them).
    avoid: HashSet<u16>,
    /// The last millisecond issued under any identity so far: the next
    /// identity issues only above it (guarantee 2).
    floor_ms: u64,
    /// Per identity, the instant (lease clock) before which this session
    /// must not issue under it: the end of a hand-over wait it began there.
    /// A lease lost during the wait and a re-claim of the same identity
    /// (which the coordinator answers as clean: the record is this
    /// session's own now) wait what remains of it, whatever the answer.
    waits: HashMap<u16, Duration>,
    /// Where each round of a claim starts.
    spread: Spread,
    /// The waits while the coordinator is unreachable or failing.
    backoff: Backoff,
    /// The waits for a free identity: one scan per wait, 1.5 s apart at
    /// first, then further: under one request a second on average.
    waiting: Backoff,
}

impl<C: Coordinator> Session<C> {
    fn now(&self) -> Duration {
        self.config.clock.now()
    }

    pub(crate) async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        // Stops with this task, also when it is aborted.
        let _background = self
            .coordinator
            .background(
                Arc::clone(&self.status),
                self.timing.request,
                self.config.confirm_renewals,
            )
            .map(|task| AbortOnDrop(tokio::spawn(task)));
        tokio::select! {
            biased;
            _ = shutdown.wait_for(|stop| *stop) => {}
            () = self.lifecycle() => {}
        }
        // Stop issuing first, then free the identity.
        self.holder.clear();
        let current = self.set_current(None);
        if let Some((lease, identity)) = current {
            self.free(lease, identity).await;
        }
        update(&self.status, |s| s.state = LeaseState::Stopped);
    }

    /// Releases `identity` (if claimed) and revokes `lease`, from the
    /// endpoint that last worked, then the others.
    async fn free(&mut self, lease: LeaseId, identity: Option<u16>) {
        let t = self.timing.request;
        let mut outcome = Ok(());
        for _ in 0..self.coordinator.endpoints() {
            outcome = async {
                if let Some(n) = identity {
                    match self.coordinator.release(n, lease, t).await {
                        // Not ours any more: nothing to release.
                        Ok(()) | Err(LeaseError::NotHolder { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                self.coordinator.revoke(lease, t).await
            }
            .await;
            if outcome.is_ok() {
                break;
            }
            self.coordinator.failed();
        }
        match outcome {
            Ok(()) => {
                tracing::info!(lease = %format_args!("{lease:x}"), "lease revoked; identity freed")
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not revoke the lease; it expires by itself")
            }
        }
    }

    /// Connects, claims, holds; forever (until cancelled by shutdown).
    async fn lifecycle(&mut self) {
        let mut carried = Carried {
            prefer: None,
            avoid: HashSet::new(),
            floor_ms: 0,
            waits: HashMap::new(),
            spread: Spread::new(self.seed ^ self.instance),
            backoff: Backoff::new(
                Duration::from_millis(200),
                Duration::from_secs(10),
                self.seed,
            ),
            waiting: Backoff::new(FULL_WAIT_MIN, FULL_WAIT_MAX, self.seed.rotate_left(17)),
        };
        loop {
            match self.claim_and_hold(&mut carried).await {
                Ok(held) => {
                    carried.prefer = Some(held.n);
                    if !planted!(ReclaimForgetsFloor) {
                        carried.floor_ms = carried.floor_ms.max(held.floor_ms);
                    }
                    carried.waiting.reset();
                }
                Err(e @ LeaseError::AllTaken { .. }) => self.all_held(&e, &mut carried).await,
                Err(e) => {
                    carried.waiting.reset();
                    if e.is_transport() {
                        self.coordinator.failed();
                    }
                    self.unreachable(&e, &mut carried.backoff).await;
                }
            }
        }
    }

    fn all_taken(&self) -> LeaseError {
        LeaseError::AllTaken {
            prefix: self.coordinator.scope(),
            datacenter: self.config.datacenter,
        }
    }

    /// Every identity of the pool is held: says so, and waits before the
    /// next look.
    async fn all_held(&self, e: &LeaseError, carried: &mut Carried) {
        let wait = carried.waiting.step();
        tracing::error!(error = %e, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "no worker identity free; not ready");
        update(&self.status, |s| {
            s.state = LeaseState::AllTaken;
            s.last_error = Some(e.to_string());
        });
        tokio::time::sleep(wait).await;
    }

    async fn unreachable(&self, e: &LeaseError, backoff: &mut Backoff) {
        let wait = backoff.step();
        tracing::warn!(error = %e, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "no identity yet (the coordinator is unreachable or failing); not ready");
        update(&self.status, |s| {
            if s.state != LeaseState::Fenced {
                s.state = LeaseState::Connecting;
            }
            s.last_error = Some(e.to_string());
        });
        tokio::time::sleep(wait).await;
    }

    /// Sets what a shutdown releases and revokes; returns what it was.
    fn set_current(
        &self,
        current: Option<(LeaseId, Option<u16>)>,
    ) -> Option<(LeaseId, Option<u16>)> {
        std::mem::replace(
            &mut *self.current.lock().unwrap_or_else(PoisonError::into_inner),
            current,
        )
    }

    /// Installs the generator behind a fence that closes at `deadline`.
    fn install(&self, generator: &Arc<Generator>, deadline: Duration) -> Arc<Fence> {
        let fence = Arc::new(Fence::until(Arc::clone(&self.config.clock), deadline));
        self.holder
            .install(Arc::clone(generator), Arc::clone(&fence));
        self.installed.send_modify(|n| *n += 1);
        update(&self.status, |s| s.state = LeaseState::Held);
        fence
    }

    /// Best-effort release and revoke of a lease that holds nothing useful.
    /// A failure is left to expire; the next request decides whether to
    /// fail over.
    async fn give_up(&mut self, lease: LeaseId, identity: Option<u16>) {
        let t = self.timing.request;
        if let Some(n) = identity {
            let _ = self.coordinator.release(n, lease, t).await;
        }
        let _ = self.coordinator.revoke(lease, t).await;
        self.set_current(None);
    }
}

/// A task aborted when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_for_a_free_identity_costs_under_one_request_a_second() {
        for seed in 0..100 {
            let mut b = Backoff::new(FULL_WAIT_MIN, FULL_WAIT_MAX, seed);
            let mut elapsed = Duration::ZERO;
            // One scan at the start, then one after each wait.
            for scans in 2..200u32 {
                elapsed += b.step();
                if scans > 2 {
                    assert!(
                        f64::from(scans) / elapsed.as_secs_f64() < 1.0,
                        "{scans} scans in {elapsed:?}"
                    );
                }
            }
            assert!(b.step() <= FULL_WAIT_MAX.mul_f64(1.25));
        }
    }
}
