//! The lease session: claim an identity, keep its lease alive, fence the
//! holder when renewals stop, re-claim, and release on shutdown; written
//! once, over any [`Coordinator`].

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use snowmint::{Clock as _, Generator, Identity};
use tokio::sync::{Notify, watch};

use crate::backoff::Backoff;
use crate::bridge::Bridge;
use crate::claim::{self, Spread};
use crate::config::{LeaseConfig, Timing};
use crate::coordinator::{Claimant, Claimed, Coordinator, Granted, LeaseId, Pool, Previous};
use crate::error::LeaseError;
use crate::fence::Fence;
use crate::holder::Holder;
use crate::renewal::{self, KeepAlive, Verdict};
use crate::status::{LeaseState, SharedStatus, update};
use crate::store::LeaseStore;

/// The first wait, and the longest, between two looks for a free identity
/// while every one of the pool is held (with +-25 % jitter, doubling).
const FULL_WAIT_MIN: Duration = Duration::from_millis(1500);
const FULL_WAIT_MAX: Duration = Duration::from_secs(10);

/// Pause before retrying a failed renewal.
const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(200);

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
    /// This process's random token: an identity it held itself is clean to it.
    pub(crate) instance: u64,
    /// Seeds the claim spread and the backoff jitter.
    pub(crate) seed: u64,
    pub(crate) blocking: Blocking,
}

/// What a claim won.
struct Won {
    /// The identity's number (its ordinal, 0..=1023).
    n: u16,
    /// How its last holder let go.
    previous: Previous,
    /// Its mark as the scan before the claim saw it.
    mark: Option<u64>,
}

/// What a tenure ended with: why, and the last millisecond it issued in.
struct Ended {
    why: LeaseError,
    floor_ms: u64,
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
        let current = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
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
        let mut backoff = Backoff::new(
            Duration::from_millis(200),
            Duration::from_secs(10),
            self.seed,
        );
        // Waiting for a free identity: one scan per wait, 1.5 s apart at
        // first, then further: under one request a second on average.
        let mut waiting = Backoff::new(FULL_WAIT_MIN, FULL_WAIT_MAX, self.seed.rotate_left(17));
        let mut prefer = None;
        // Identities whose reservation mark is damaged: never claimed again
        // by this process (an operator has to look at them).
        let mut avoid = HashSet::new();
        // The last millisecond issued under any identity so far: the next
        // identity issues only above it (guarantee 2).
        let mut floor_ms = 0;
        let mut spread = Spread::new(self.seed ^ self.instance);
        loop {
            match self
                .claim_and_hold(prefer, &mut avoid, &mut backoff, &mut spread, floor_ms)
                .await
            {
                Ok((held, ended)) => {
                    prefer = Some(held);
                    if !planted!(ReclaimForgetsFloor) {
                        floor_ms = floor_ms.max(ended);
                    }
                    waiting.reset();
                }
                Err(e) => {
                    if matches!(e, LeaseError::AllTaken { .. }) {
                        let wait = waiting.step();
                        tracing::error!(error = %e, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "no worker identity free; not ready");
                        update(&self.status, |s| {
                            s.state = LeaseState::AllTaken;
                            s.last_error = Some(e.to_string());
                        });
                        tokio::time::sleep(wait).await;
                    } else {
                        waiting.reset();
                        if e.is_transport() {
                            self.coordinator.failed();
                        }
                        self.unreachable(&e, &mut backoff).await;
                    }
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

    /// Grants a lease, claims an identity, installs its generator and keeps
    /// the lease alive until it is lost. Returns the identity number held
    /// and the last millisecond issued under it.
    async fn claim_and_hold(
        &mut self,
        prefer: Option<u16>,
        avoid: &mut HashSet<u16>,
        backoff: &mut Backoff,
        spread: &mut Spread,
        floor_ms: u64,
    ) -> Result<(u16, u64), LeaseError> {
        let t = self.timing.request;
        let pool = Pool::new(self.config.datacenter);
        let ahead_ms = snowmint::DEFAULT_MAX_BORROW_MS;
        let order = |census: &crate::Census, avoid: &HashSet<u16>, start: u64, now_ms: u64| {
            claim::order(pool, census, avoid, prefer, start, now_ms, ahead_ms)
        };
        // Look before leasing: while every identity of the pool is held, a
        // retry costs the coordinator this one read, and no lease.
        let census = self.coordinator.scan(pool, t).await?;
        if order(&census, avoid, 0, self.config.wall.now_ms()).is_empty() {
            return Err(self.all_taken());
        }
        let sent = self.now();
        let granted = self.coordinator.grant(self.timing.ttl, t).await?;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some((granted.lease, None));
        update(&self.status, |s| {
            s.state = LeaseState::Claiming;
            s.lease = Some(granted.lease);
            s.granted_ttl = Some(granted.ttl);
        });
        let won = match self.claim(&granted, census, avoid, spread, order).await {
            Ok(Some(won)) => won,
            other => {
                // A claim cut off midway may have been applied all the same;
                // it is not released: its last holder may not have let go
                // cleanly, and a release would tell the next holder it had.
                self.give_up(granted.lease, None).await;
                return Err(other.err().unwrap_or_else(|| self.all_taken()));
            }
        };
        let Won { n, previous, mark } = won;
        // A mark this far ahead makes the generator refuse until the clock
        // reaches it; the claim order took it only because nothing else
        // was free (or it was this session's own identity): readiness says so.
        let now_ms = self.config.wall.now_ms();
        let claimed_ahead_ms = mark
            .filter(|&mark| Some(n) != prefer && mark > now_ms.saturating_add(ahead_ms))
            .map(|mark| mark - now_ms);
        // What a shutdown releases. An identity taken over uncleanly is
        // released only once its hand-over wait is over (`hold`): before
        // that the last holder's fence may still be open, and a release
        // would let the next holder issue at once beside it.
        let clean = matches!(previous, Previous::Clean);
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((granted.lease, clean.then_some(n)));
        let identity = Identity::from_ordinal(n.into()).expect("claims return 0..=1023");
        // An unclean hand-over: the previous holder's fence may still be
        // open if the coordinator ended its lease early, for at most its
        // TTL; issue only once that has passed since the claim.
        let issue_from = match &previous {
            Previous::Clean => None,
            Previous::Unclean { .. } if planted!(HandoverWithoutWait) => None,
            Previous::Unclean { ttl, holder } => {
                tracing::warn!(
                    %identity,
                    previous_holder = %holder,
                    wait_s = ttl.as_secs_f64(),
                    "the identity's last holder did not release it: waiting one lease TTL before \
                     issuing, in case its lease was ended early"
                );
                Some(self.now() + *ttl)
            }
        };
        let (generator, lost) = match self.build(identity, n, &granted, avoid, floor_ms).await {
            Ok(built) => built,
            Err(e) => {
                // Nothing was issued under this lease: release it, if its
                // last holder had (see above).
                self.give_up(granted.lease, clean.then_some(n)).await;
                return Err(e);
            }
        };
        backoff.reset();
        update(&self.status, |s| {
            s.identity = Some(identity);
            s.claims += 1;
            s.claimed_ahead_ms = claimed_ahead_ms;
            s.last_error = None;
        });
        tracing::info!(
            %identity,
            lease = %format_args!("{:x}", granted.lease),
            ttl_s = granted.ttl.as_secs(),
            reserved_until_ms = generator.reserved_until_ms(),
            "holding worker identity"
        );
        let ended = self
            .hold(&granted, sent, n, &generator, &lost, issue_from)
            .await;
        // Fence at once: the identity may already be someone else's.
        self.holder.clear();
        let floor_ms = ended.floor_ms.max(generator.last_issued_ms());
        // Usually gone already; if only the key was lost, free the lease too.
        self.give_up(granted.lease, None).await;
        tracing::warn!(%identity, reason = %ended.why, "worker identity lost: not issuing; claiming again");
        update(&self.status, |s| s.last_error = Some(ended.why.to_string()));
        Ok((n, floor_ms))
    }

    /// Claims an identity for `granted` in the order of [`claim::order`]:
    /// one try per round; a try that lost the race scans again (the view it
    /// chose from is stale) and tries from another random start. `None`:
    /// every identity of the pool is held.
    async fn claim(
        &mut self,
        granted: &Granted,
        census: crate::Census,
        avoid: &HashSet<u16>,
        spread: &mut Spread,
        order: impl Fn(&crate::Census, &HashSet<u16>, u64, u64) -> Vec<u16>,
    ) -> Result<Option<Won>, LeaseError> {
        let t = self.timing.request;
        let pool = Pool::new(self.config.datacenter);
        let who = Claimant {
            holder: &self.config.holder,
            instance: self.instance,
            ttl: granted.ttl,
        };
        let mut census = Some(census);
        // Each lost race is another instance's win, so the pool fills within
        // its size in rounds; the bound only stops a pool that churns forever
        // (leases expiring as fast as they are taken), which then waits as full.
        for _ in 0..=pool.len() {
            let seen = match census.take() {
                Some(seen) => seen,
                None => self.coordinator.scan(pool, t).await?,
            };
            let candidates = order(&seen, avoid, spread.next_start(), self.config.wall.now_ms());
            let Some(&n) = candidates.first() else {
                break;
            };
            update(&self.status, |s| s.claim_txns += 1);
            if let Claimed::Won(previous) =
                self.coordinator.claim(granted.lease, n, &who, t).await?
            {
                return Ok(Some(Won {
                    n,
                    previous,
                    mark: seen.marks.get(&n).copied(),
                }));
            }
            // Someone else took it since the scan: look again.
        }
        Ok(None)
    }

    /// Builds the generator of identity `n` over its store (which reads the
    /// mark through the blocking bridge, so off the async workers), with its
    /// start write (readiness trusts the store only once a write has
    /// succeeded), and checks that a custom factory built it for that
    /// identity over that store.
    async fn build(
        &self,
        identity: Identity,
        n: u16,
        granted: &Granted,
        avoid: &mut HashSet<u16>,
        floor_ms: u64,
    ) -> Result<(Arc<Generator>, Arc<Notify>), LeaseError> {
        let lost = Arc::new(Notify::new());
        let store = LeaseStore::of_session(
            self.bridge.clone(),
            n,
            granted.lease,
            Arc::clone(&lost),
            floor_ms,
        );
        let probe = store.probe();
        let factory = Arc::clone(&self.config.generator);
        let built = self
            .blocking
            .run(move || {
                factory(identity, store).inspect(|g| {
                    let _ = g.renew_reservation();
                })
            })
            .await;
        let generator = match built {
            Some(Ok(generator)) => generator,
            Some(Err(e)) => {
                let damaged = matches!(
                    &e,
                    snowmint::BuildError::Store(store) if store.kind() == snowmint::StoreErrorKind::Damaged
                );
                if damaged {
                    avoid.insert(n);
                }
                tracing::error!(
                    %identity,
                    error = %e,
                    skipped_from_now_on = damaged,
                    "cannot build the generator; releasing the identity"
                );
                return Err(LeaseError::Build {
                    identity,
                    source: e,
                });
            }
            None => return Err(LeaseError::BuildPanicked { identity }),
        };
        let why = if generator.identity() != identity {
            Some("it mints as another identity")
        } else if !probe.loaded() || generator.reserved_until_ms().is_none() {
            Some("it does not keep its mark in the store it was given")
        } else {
            None
        };
        if let Some(why) = why {
            tracing::error!(%identity, why, "the generator factory built a generator that cannot be used; releasing the identity");
            return Err(LeaseError::Factory { identity, why });
        }
        Ok((Arc::new(generator), lost))
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
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
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

    /// Keeps the lease alive; extends the fence on each confirmed renewal,
    /// clears the holder when the fence closes, installs the generator once
    /// it may issue (at once, or after an unclean hand-over's wait) and
    /// again when renewals come back. Returns why it stopped: the lease is
    /// gone on the coordinator (expired or revoked), or the identity is no
    /// longer bound to it (deleted or taken over by hand while the lease
    /// lives; seen after a renewal, or at once when a reservation write is
    /// refused for it, `lost`).
    async fn hold(
        &mut self,
        granted: &Granted,
        sent: Duration,
        n: u16,
        generator: &Arc<Generator>,
        lost: &Notify,
        issue_from: Option<Duration>,
    ) -> Ended {
        let identity = Identity::from_ordinal(n.into()).expect("claims return 0..=1023");
        let lease = granted.lease;
        let ended = |why: LeaseError| Ended {
            why,
            floor_ms: generator.last_issued_ms(),
        };
        let not_holder = || LeaseError::NotHolder {
            key: identity.to_string(),
            lease,
        };
        let t = self.timing.request;
        let mut deadline = Timing::deadline(sent, granted.ttl);
        let mut fence: Option<Arc<Fence>> = None;
        // Whether the fence closed for want of renewals (for the log).
        let mut silent = false;
        if issue_from.is_none() {
            fence = Some(self.install(generator, deadline));
        } else {
            update(&self.status, |s| s.state = LeaseState::Handover);
        }
        // The first renewal is timed from the grant, like every later one
        // from the renewal before it.
        let mut next = sent + self.timing.renew_every;
        // The generator probes its store (readiness) and renews its mark
        // ahead of need; a library user has no keeper of its own.
        let probe_every = Duration::from_millis(generator.reserve_window_ms() / 4)
            .clamp(Duration::from_millis(50), self.timing.renew_every);
        let mut next_probe = self.now() + probe_every;
        let mut failing_since: Option<Duration> = None;
        // Answers in a row that a read did not confirm (logged once a streak).
        let mut unconfirmed = 0u64;
        loop {
            let now = self.now();
            let mut wake = next.min(next_probe);
            if fence.is_some() {
                wake = wake.min(deadline);
            } else if let Some(from) = issue_from.filter(|&from| from > now) {
                wake = wake.min(from);
            }
            tokio::select! {
                biased;
                // A reservation write was refused: the key is not ours.
                () = lost.notified() => return ended(not_holder()),
                () = tokio::time::sleep(wake.saturating_sub(now)) => {}
            }
            let now = self.now();
            if now >= deadline {
                if let Some(closed) = fence.take() {
                    // The deadline the fence holds has passed: close it now
                    // rather than wait for a mint to find it closed.
                    closed.expire();
                    self.holder.clear();
                    silent = true;
                    update(&self.status, |s| {
                        s.state = LeaseState::Fenced;
                        s.fenced += 1;
                    });
                    tracing::warn!(
                        %identity,
                        silent_for_s = failing_since.map(|since| now.saturating_sub(since).as_secs_f64()),
                        "no lease renewal in time: fenced, not issuing"
                    );
                }
            } else if fence.is_none() && issue_from.is_none_or(|from| now >= from) {
                fence = Some(self.install(generator, deadline));
                // Any hand-over wait is over (the last holder's fence has
                // closed): a shutdown may release the identity now.
                *self.current.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((lease, Some(n)));
                if silent {
                    tracing::info!(%identity, "lease renewed again; issuing");
                } else if issue_from.is_some() {
                    tracing::info!(%identity, "hand-over wait over; issuing");
                }
                silent = false;
            }
            if now >= next_probe {
                next_probe = now + probe_every;
                if fence.is_some() && generator.renewal_due() {
                    let g = Arc::clone(generator);
                    self.blocking.detach(move || {
                        if let Err(e) = g.renew_reservation() {
                            tracing::warn!(error = %e, "renewing the reservation mark failed");
                        }
                    });
                }
            }
            if now < next {
                continue;
            }
            // A live lease is not enough: the key can be deleted (or put
            // under another lease) while it lives, and then the identity is
            // free for anyone to claim. So each renewal is followed by a
            // linearizable read of the key, which also confirms that the
            // leader that answered still leads (see `renewal.rs`); the fence
            // moves only when both answer and agree.
            let attempt = self.now();
            // Whether the coordinator answered the keep-alive but the read
            // after it failed: a renewal not confirmed, too.
            let mut answered = false;
            let renewed = match self.coordinator.keep_alive(lease, t).await {
                Ok(answer) => match self.coordinator.confirm(n, lease, t).await {
                    Ok(read) if answer.ttl.is_zero() => {
                        // "No such lease", from a member that may be stale
                        // (a deposed leader's table lacks leases granted
                        // after it): believed only when the read agrees.
                        if !read.holds || planted!(Ttl0Trusted) {
                            return ended(LeaseError::LeaseGone { lease });
                        }
                        Ok(Verdict::Unconfirmed {
                            renewed: answer.term,
                            read: read.term,
                        })
                    }
                    Ok(read) => {
                        let answer = KeepAlive {
                            sent: if planted!(FenceFromAnswer) {
                                self.now()
                            } else {
                                attempt
                            },
                            ttl: answer.ttl,
                            term: answer.term,
                        };
                        // A coordinator without terms answers from its one
                        // primary: the read after the answer confirms it.
                        let confirm = self.config.confirm_renewals
                            && self.coordinator.has_terms()
                            && !planted!(RenewalWithoutTerm);
                        Ok(renewal::judge(&answer, &read, confirm))
                    }
                    Err(e) => {
                        answered = true;
                        Err(e)
                    }
                },
                Err(e) => Err(e),
            };
            match renewed {
                Ok(Verdict::NotHolder) => return ended(not_holder()),
                Ok(Verdict::Unconfirmed { renewed, read }) => {
                    if unconfirmed == 0 {
                        tracing::warn!(
                            %identity,
                            endpoint = self.coordinator.endpoint(),
                            keep_alive_term = ?renewed,
                            read_term = ?read,
                            "the coordinator answered a lease keep-alive that a read after it does \
                             not confirm (a deposed leader, etcd issue 15247): not counted, the \
                             fence stays"
                        );
                    }
                    unconfirmed += 1;
                    update(&self.status, |s| {
                        s.unconfirmed_renewals += 1;
                        s.last_error = Some(format!(
                            "keep-alive answered at raft term {} but confirmed at {}: not counted",
                            term_text(renewed),
                            term_text(read)
                        ));
                    });
                    // The next answer, likely from the new leader (or from
                    // this member, which follows it by now), may count. A
                    // server that never confirms (a proxy that strips
                    // headers) is asked at the renewal pace, not in a loop.
                    let wait = if unconfirmed <= 3 {
                        RETRY_AFTER_FAILURE
                    } else {
                        self.timing.renew_every
                    };
                    next = self.now() + wait;
                }
                Ok(Verdict::Extend(new_deadline)) => {
                    unconfirmed = 0;
                    deadline = deadline.max(new_deadline);
                    if let Some(fence) = &fence {
                        fence.extend(deadline);
                    }
                    failing_since = None;
                    update(&self.status, |s| {
                        if fence.is_some() {
                            s.state = LeaseState::Held;
                        }
                        s.renewals += 1;
                    });
                    next = attempt + self.timing.renew_every;
                }
                Err(gone @ LeaseError::LeaseGone { .. }) => return ended(gone),
                Err(e) => {
                    self.coordinator.failed();
                    if failing_since.is_none() {
                        tracing::warn!(%identity, error = %e, "lease renewal failed; retrying");
                    }
                    failing_since.get_or_insert(attempt);
                    update(&self.status, |s| {
                        s.renewal_failures += 1;
                        s.unconfirmed_renewals += u64::from(answered);
                        s.last_error = Some(e.to_string());
                    });
                    // Soon: every moment counts before the fence closes,
                    // and a failure has usually taken a request timeout
                    // already, so this is no hot loop.
                    next = self.now() + RETRY_AFTER_FAILURE;
                }
            }
        }
    }
}

/// A task aborted when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A raft term for a message: the number, or `none`.
fn term_text(term: Option<u64>) -> String {
    term.map_or_else(|| "none".to_owned(), |t| t.to_string())
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
