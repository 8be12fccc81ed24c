//! The lease session: claim an identity, keep its lease alive, fence the
//! holder when renewals stop, re-claim, and revoke on shutdown.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use etcd_client::{LeaseKeepAliveStream, LeaseKeeper};
use snowmint::Generator;
use tokio::sync::{Notify, watch};

use crate::bridge::Bridge;
use crate::config::{EtcdConfig, fence_margin};
use crate::error::EtcdError;
use crate::holder::Holder;
use crate::keys::Keys;
use crate::ops::{self, Conn, Granted};
use crate::status::{LeaseState, SharedStatus, update};
use crate::store::EtcdStore;
use crate::{Fence, Identity};

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
    fn deadline(sent: Instant, ttl: Duration) -> Instant {
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
                Ok(held) => prefer = Some(held),
                Err(e) => {
                    if matches!(e, EtcdError::AllTaken { .. }) {
                        let wait = backoff.step().max(self.timing.ttl);
                        tracing::error!(error = %e, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "no worker identity free; not ready");
                        update(&self.status, |s| {
                            s.state = LeaseState::AllTaken;
                            s.last_error = Some(e.to_string());
                        });
                        tokio::time::sleep(wait).await;
                    } else {
                        if e.is_transport() {
                            conn.failed();
                        }
                        self.unreachable(&e, &mut backoff).await;
                    }
                }
            }
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
                    prefer,
                    avoid,
                    t,
                )
                .await
            }
            Err(e) => Err(e),
        };
        let n = match claimed {
            Ok(Some(n)) => n,
            other => {
                self.give_up(conn, granted.id).await;
                return Err(other.err().unwrap_or(EtcdError::AllTaken {
                    prefix: self.keys.prefix().to_owned(),
                }));
            }
        };
        let identity = Identity::from_ordinal(n.into()).expect("claims return 0..=1023");
        // The generator loads the mark through the blocking bridge: build it
        // off the async workers.
        let lost = Arc::new(Notify::new());
        let store = EtcdStore::new(self.bridge.clone(), n, granted.id, Arc::clone(&lost));
        let factory = Arc::clone(&self.config.generator);
        let built = tokio::task::spawn_blocking(move || factory(identity, store)).await;
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
        let mut stream: Option<(LeaseKeeper, LeaseKeepAliveStream)> = None;
        let mut next = Instant::now() + self.timing.renew_every;
        let mut failing_since: Option<Instant> = None;
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
            let sent = Instant::now();
            // A live lease is not enough: the key can be deleted (or put
            // under another lease) while it lives, and then the identity is
            // free for anyone to claim. So each renewal is followed by a
            // look at the key; the fence moves only when both answer.
            let renewed = match self.renew(conn, &mut stream, lease).await {
                Ok(ttl) => match self.holds(conn, n, lease).await {
                    Ok(true) => Ok(ttl),
                    Ok(false) => return not_holder(),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            match renewed {
                Ok(ttl) => {
                    deadline = Timing::deadline(sent, ttl);
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
                    next = sent + self.timing.renew_every;
                }
                Err(gone @ EtcdError::LeaseGone { .. }) => return gone,
                Err(e) => {
                    stream = None;
                    conn.failed();
                    if failing_since.is_none() {
                        tracing::warn!(%identity, error = %e, "lease renewal failed; retrying");
                    }
                    failing_since.get_or_insert(sent);
                    update(&self.status, |s| {
                        s.renewal_failures += 1;
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

    /// Whether identity `n`'s key is still bound to `lease`.
    async fn holds(&self, conn: &mut Conn, n: u16, lease: i64) -> Result<bool, EtcdError> {
        let client = conn.client().await?;
        ops::holds(client, &self.keys, n, lease, self.timing.request).await
    }

    /// One keep-alive round trip: the TTL etcd answered with. A stream that
    /// failed or timed out is dropped by the caller, so a late answer is
    /// never taken for a newer request's.
    async fn renew(
        &self,
        conn: &mut Conn,
        stream: &mut Option<(LeaseKeeper, LeaseKeepAliveStream)>,
        lease: i64,
    ) -> Result<Duration, EtcdError> {
        let t = self.timing.request;
        let gone = |e: &etcd_client::Error| match e {
            // etcd-client also reports a closed request channel (a dead
            // stream: a transport failure) as this error; only its own
            // "lease not found" is etcd saying the lease is gone.
            etcd_client::Error::LeaseKeepAliveError(m) => m == "lease not found",
            etcd_client::Error::GRpcStatus(s) => s.message().contains("lease not found"),
            _ => false,
        };
        if stream.is_none() {
            let client = conn.client().await?;
            match tokio::time::timeout(t, client.lease_keep_alive(lease)).await {
                Ok(Ok(opened)) => *stream = Some(opened),
                Ok(Err(e)) if gone(&e) => return Err(EtcdError::LeaseGone { lease }),
                Ok(Err(source)) => {
                    return Err(EtcdError::Request {
                        op: "lease keep-alive",
                        source,
                    });
                }
                Err(_) => {
                    return Err(EtcdError::Timeout {
                        op: "lease keep-alive",
                        after: t,
                    });
                }
            }
        }
        let (keeper, responses) = stream.as_mut().expect("opened above");
        let round = async {
            keeper.keep_alive().await?;
            responses.message().await
        };
        match tokio::time::timeout(t, round).await {
            Ok(Ok(Some(response))) if response.ttl() > 0 => {
                Ok(Duration::from_secs(response.ttl() as u64))
            }
            Ok(Ok(Some(_))) => Err(EtcdError::LeaseGone { lease }),
            Ok(Ok(None)) => Err(EtcdError::KeepAliveEnded),
            Ok(Err(e)) if gone(&e) => Err(EtcdError::LeaseGone { lease }),
            Ok(Err(source)) => Err(EtcdError::Request {
                op: "lease keep-alive",
                source,
            }),
            Err(_) => Err(EtcdError::Timeout {
                op: "lease keep-alive",
                after: t,
            }),
        }
    }
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
