//! The lease session: claim an identity, keep its lease alive, fence the
//! holder when renewals stop, re-claim, and revoke on shutdown.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use snowmint::Generator;
use tokio::sync::{Notify, watch};

use crate::bridge::Bridge;
use crate::claim::{self, Pool};
use crate::config::{EtcdConfig, fence_margin};
use crate::error::EtcdError;
use crate::holder::Holder;
use crate::keys::Keys;
use crate::ops::{self, Claimed, Conn, Granted, Wanted};
use crate::renewal::{self, Stream, Verdict};
use crate::status::{LeaseState, SharedStatus, update};
use crate::store::EtcdStore;
use crate::{Fence, Identity};

/// The first wait, and the longest, between two looks for a free identity
/// while every one of the pool is held (with +-25 % jitter, doubling).
const FULL_WAIT_MIN: Duration = Duration::from_millis(1500);
const FULL_WAIT_MAX: Duration = Duration::from_secs(10);

/// Pause before retrying a failed renewal.
const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(200);

/// Durations derived from the TTL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    ttl: Duration,
    /// Keep-alive period: three tries fit in the fence window.
    renew_every: Duration,
    /// Bound on one etcd request.
    pub(crate) request: Duration,
}

impl Timing {
    pub(crate) fn new(ttl: Duration) -> Timing {
        let window = ttl.saturating_sub(fence_margin(ttl));
        let renew_every = (window / 3).max(Duration::from_millis(100));
        Timing {
            ttl,
            renew_every,
            request: renew_every.min(Duration::from_secs(2)),
        }
    }

    /// The fence deadline for a keep-alive sent at `sent` that etcd
    /// answered with `ttl`.
    pub(crate) fn deadline(sent: Instant, ttl: Duration) -> Instant {
        sent + ttl.saturating_sub(fence_margin(ttl))
    }
}

/// Exponential backoff with jitter, capped.
struct Backoff {
    next: Duration,
    min: Duration,
    max: Duration,
    seed: u64,
}

impl Backoff {
    fn new(min: Duration, max: Duration) -> Backoff {
        let seed = u64::from(std::process::id())
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.subsec_nanos().into());
        Backoff {
            next: min,
            min,
            max,
            seed: seed | 1,
        }
    }

    fn reset(&mut self) {
        self.next = self.min;
    }

    /// The next wait: the current step, +-25 % jitter, then doubles.
    fn step(&mut self) -> Duration {
        // xorshift64: cheap jitter so instances started together spread out.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let jitter = (self.seed % 500) as f64 / 1000.0 + 0.75;
        let wait = self.next.mul_f64(jitter);
        self.next = (self.next * 2).min(self.max);
        wait
    }
}

pub(crate) struct Session {
    pub(crate) config: EtcdConfig,
    pub(crate) keys: Keys,
    pub(crate) timing: Timing,
    pub(crate) bridge: Bridge,
    pub(crate) holder: Arc<Holder>,
    pub(crate) status: SharedStatus,
    pub(crate) current: Arc<Mutex<Option<i64>>>,
    /// Counts installations, so `LeasedGenerator::start` can wait for one.
    pub(crate) installed: watch::Sender<u64>,
    /// Endpoints and the one in use; each task takes a sibling.
    pub(crate) conn: Conn,
}

impl Session {
    pub(crate) async fn run(self, mut shutdown: watch::Receiver<bool>) {
        // Stops with this task, also when it is aborted.
        let _versions = crate::versions::Watch::spawn(
            self.conn.each(),
            self.timing.request,
            Arc::clone(&self.status),
            self.config.confirm_renewals,
        );
        tokio::select! {
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
        if let Some(lease) = current {
            // From the endpoint that last worked, then the others.
            let mut conn = self.conn.sibling();
            let mut outcome = Ok(());
            for _ in 0..conn.len() {
                outcome = match conn.client().await {
                    Ok(client) => ops::revoke(client, lease, self.timing.request).await,
                    Err(e) => Err(e),
                };
                if outcome.is_ok() {
                    break;
                }
                conn.failed();
            }
            match outcome {
                Ok(()) => {
                    tracing::info!(lease = %format_args!("{lease:x}"), "etcd lease revoked; identity freed")
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not revoke the etcd lease; it expires by itself")
                }
            }
        }
        update(&self.status, |s| s.state = LeaseState::Stopped);
    }

    /// Connects, claims, holds; forever (until cancelled by shutdown).
    async fn lifecycle(&self) {
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
        // Waiting for a free identity: one scan per wait, 1.5 s apart at
        // first, then further: under one request a second on average.
        let mut waiting = Backoff::new(FULL_WAIT_MIN, FULL_WAIT_MAX);
        let mut prefer = None;
        // Identities whose reservation mark is damaged: never claimed again
        // by this process (an operator has to look at them).
        let mut avoid = HashSet::new();
        let mut conn = self.conn.sibling();
        loop {
            match self
                .claim_and_hold(&mut conn, prefer, &mut avoid, &mut backoff)
                .await
            {
                Ok(held) => {
                    prefer = Some(held);
                    waiting.reset();
                }
                Err(e) => {
                    if matches!(e, EtcdError::AllTaken { .. }) {
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
                            conn.failed();
                        }
                        self.unreachable(&e, &mut backoff).await;
                    }
                }
            }
        }
    }

    fn all_taken(&self) -> EtcdError {
        EtcdError::AllTaken {
            prefix: self.keys.prefix().to_owned(),
            datacenter: self.config.datacenter,
        }
    }

    async fn unreachable(&self, e: &EtcdError, backoff: &mut Backoff) {
        let wait = backoff.step();
        tracing::warn!(error = %e, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "no identity yet (etcd unreachable or failing); not ready");
        update(&self.status, |s| {
            if s.state != LeaseState::Fenced {
                s.state = LeaseState::Connecting;
            }
            s.last_error = Some(e.to_string());
        });
        tokio::time::sleep(wait).await;
    }

    /// Grants a lease, claims an identity, installs its generator and keeps
    /// the lease alive until it is lost. Returns the identity number held.
    async fn claim_and_hold(
        &self,
        conn: &mut Conn,
        prefer: Option<u16>,
        avoid: &mut HashSet<u16>,
        backoff: &mut Backoff,
    ) -> Result<u16, EtcdError> {
        let t = self.timing.request;
        let pool = Pool::new(self.config.datacenter);
        let wanted = Wanted {
            pool,
            prefer,
            avoid,
        };
        // Look before leasing: while every identity of the pool is held, a
        // retry costs etcd this one read, and no lease.
        let taken = ops::scan(conn.client().await?, &self.keys, pool, t).await?;
        if claim::order(pool, &taken, avoid, prefer, None).is_empty() {
            return Err(self.all_taken());
        }
        let granted = ops::grant(conn.client().await?, self.timing.ttl, t).await?;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(granted.id);
        update(&self.status, |s| {
            s.state = LeaseState::Claiming;
            s.lease = Some(granted.id);
            s.granted_ttl = Some(granted.ttl);
        });
        let claimed = match conn.client().await {
            Ok(client) => {
                ops::claim(
                    client,
                    &self.keys,
                    granted.id,
                    &self.config.holder,
                    wanted,
                    Some(taken),
                    t,
                )
                .await
            }
            Err(e) => Err(e),
        };
        let n = match claimed {
            Ok(Claimed {
                identity: Some(n), ..
            }) => n,
            other => {
                self.give_up(conn, granted.id).await;
                return Err(other.err().unwrap_or_else(|| self.all_taken()));
            }
        };
        let identity = Identity::from_ordinal(n.into()).expect("claims return 0..=1023");
        // The generator loads the mark through the blocking bridge: build it
        // off the async workers, with its start write (readiness trusts the
        // store only once a write has succeeded).
        let lost = Arc::new(Notify::new());
        let store = EtcdStore::new(self.bridge.clone(), n, granted.id, Arc::clone(&lost));
        let factory = Arc::clone(&self.config.generator);
        let built = tokio::task::spawn_blocking(move || {
            factory(identity, store).inspect(|g| {
                let _ = g.renew_reservation();
            })
        })
        .await;
        let generator = match built {
            Ok(Ok(generator)) => Arc::new(generator),
            Ok(Err(e)) => {
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
                self.give_up(conn, granted.id).await;
                return Err(EtcdError::Build {
                    identity,
                    source: e,
                });
            }
            Err(_) => {
                self.give_up(conn, granted.id).await;
                return Err(EtcdError::BuildPanicked { identity });
            }
        };
        let fence = Arc::new(Fence::until(Timing::deadline(granted.sent, granted.ttl)));
        self.holder
            .install(Arc::clone(&generator), Arc::clone(&fence));
        self.installed.send_modify(|n| *n += 1);
        backoff.reset();
        update(&self.status, |s| {
            s.state = LeaseState::Held;
            s.identity = Some(identity);
            s.claims += 1;
            s.last_error = None;
        });
        tracing::info!(
            %identity,
            lease = %format_args!("{:x}", granted.id),
            ttl_s = granted.ttl.as_secs(),
            reserved_until_ms = generator.reserved_until_ms(),
            "holding worker identity"
        );
        let why = self.hold(conn, granted, n, generator, fence, &lost).await;
        // Fence at once: the identity may already be someone else's.
        self.holder.clear();
        // Usually gone already; if only the key was lost, free the lease too.
        self.give_up(conn, granted.id).await;
        tracing::warn!(%identity, reason = %why, "worker identity lost: not issuing; claiming again");
        update(&self.status, |s| s.last_error = Some(why.to_string()));
        Ok(n)
    }

    /// Best-effort revoke of a lease that holds nothing useful. A failure
    /// is left to expire; the next request decides whether to fail over.
    async fn give_up(&self, conn: &mut Conn, lease: i64) {
        if let Ok(client) = conn.client().await {
            let _ = ops::revoke(client, lease, self.timing.request).await;
        }
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Keeps the lease alive; extends the fence on each answer, clears the
    /// holder when the fence closes, re-installs when renewals come back.
    /// Returns why it stopped: the lease is gone on the server (expired or
    /// revoked), or the identity key is no longer bound to it (deleted or
    /// taken over by hand while the lease lives; seen after a renewal, or
    /// at once when a reservation write is refused for it, `lost`).
    async fn hold(
        &self,
        conn: &mut Conn,
        granted: Granted,
        n: u16,
        generator: Arc<Generator>,
        mut fence: Arc<Fence>,
        lost: &Notify,
    ) -> EtcdError {
        let identity = Identity::from_ordinal(n.into()).expect("claims return 0..=1023");
        let not_holder = || EtcdError::NotHolder {
            key: self.keys.identity(n),
            lease: granted.id,
        };
        let lease = granted.id;
        let mut deadline = Timing::deadline(granted.sent, granted.ttl);
        let mut installed = true;
        let mut stream: Option<Stream> = None;
        let mut next = Instant::now() + self.timing.renew_every;
        let mut failing_since: Option<Instant> = None;
        // Answers in a row that a read did not confirm (logged once a streak).
        let mut unconfirmed = 0u64;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next.into()) => {}
                () = tokio::time::sleep_until(deadline.into()), if installed => {
                    // The deadline the fence holds has passed on the fine
                    // clock; its coarse reading may lag by a tick: close it
                    // now rather than poll until it agrees.
                    fence.expire();
                    self.holder.clear();
                    installed = false;
                    update(&self.status, |s| {
                        s.state = LeaseState::Fenced;
                        s.fenced += 1;
                    });
                    tracing::warn!(
                        %identity,
                        silent_for_s = failing_since.map(|t| t.elapsed().as_secs_f64()),
                        "no lease renewal in time: fenced, not issuing"
                    );
                    continue;
                }
                // A reservation write was refused: the key is not ours.
                () = lost.notified() => return not_holder(),
            }
            let t = self.timing.request;
            let attempt = Instant::now();
            // A live lease is not enough: the key can be deleted (or put
            // under another lease) while it lives, and then the identity is
            // free for anyone to claim. So each renewal is followed by a
            // linearizable read of the key, which also confirms that the
            // leader that answered still leads (see `renewal.rs`); the fence
            // moves only when both answer and agree.
            // Whether etcd answered the keep-alive but the read after it
            // failed: a renewal not confirmed, too.
            let mut answered = false;
            let renewed = match renewal::keep_alive(conn, &mut stream, lease, t).await {
                Ok(answer) => match renewal::confirm(conn, &self.keys, n, lease, t).await {
                    Ok(read) => Ok((
                        answer,
                        renewal::judge(&answer, &read, self.config.confirm_renewals),
                    )),
                    Err(e) => {
                        answered = true;
                        Err(e)
                    }
                },
                Err(e) => Err(e),
            };
            match renewed {
                Ok((_, Verdict::NotHolder)) => return not_holder(),
                Ok((_, Verdict::Unconfirmed { renewed, read })) => {
                    if unconfirmed == 0 {
                        tracing::warn!(
                            %identity,
                            endpoint = conn.endpoint(),
                            keep_alive_term = ?renewed,
                            read_term = ?read,
                            "etcd answered a lease keep-alive from a leader that a read after it \
                             does not confirm (a deposed leader, etcd issue 15247): not counted, \
                             the fence stays"
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
                    next = Instant::now() + wait;
                }
                Ok((answer, Verdict::Extend(new_deadline))) => {
                    let ttl = answer.ttl;
                    unconfirmed = 0;
                    deadline = new_deadline;
                    if installed {
                        fence.extend(deadline);
                    } else {
                        // The lease (and the key) outlived the silence.
                        fence = Arc::new(Fence::until(deadline));
                        self.holder
                            .install(Arc::clone(&generator), Arc::clone(&fence));
                        self.installed.send_modify(|n| *n += 1);
                        installed = true;
                        tracing::info!(%identity, "lease renewed again; issuing");
                    }
                    failing_since = None;
                    update(&self.status, |s| {
                        s.state = LeaseState::Held;
                        s.renewals += 1;
                        s.granted_ttl = Some(ttl);
                    });
                    next = answer.sent + self.timing.renew_every;
                }
                Err(gone @ EtcdError::LeaseGone { .. }) => return gone,
                Err(e) => {
                    stream = None;
                    conn.failed();
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
                    next = Instant::now() + RETRY_AFTER_FAILURE;
                }
            }
        }
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
    fn the_fence_closes_a_margin_before_the_lease_can_expire() {
        let sent = Instant::now();
        for secs in [2, 3, 5, 10, 60, 3600] {
            let ttl = Duration::from_secs(secs);
            let margin = fence_margin(ttl);
            assert!(margin >= Duration::from_secs(1) && margin >= ttl / 5);
            assert!(margin < ttl);
            assert_eq!(Timing::deadline(sent, ttl), sent + ttl - margin);
            let timing = Timing::new(ttl);
            assert!(timing.renew_every * 3 <= ttl - margin, "{secs}");
            assert!(timing.request <= timing.renew_every);
        }
    }

    #[test]
    fn waiting_for_a_free_identity_costs_under_one_request_a_second() {
        for _ in 0..100 {
            let mut b = Backoff::new(FULL_WAIT_MIN, FULL_WAIT_MAX);
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

    #[test]
    fn backoff_grows_to_its_cap_with_jitter() {
        let mut b = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
        let waits: Vec<Duration> = (0..12).map(|_| b.step()).collect();
        assert!(waits[0] >= Duration::from_millis(150) && waits[0] <= Duration::from_millis(250));
        assert!(waits.iter().all(|w| *w <= Duration::from_millis(12_500)));
        assert!(waits[11] >= Duration::from_millis(7_500));
        b.reset();
        assert!(b.step() <= Duration::from_millis(250));
    }
}
