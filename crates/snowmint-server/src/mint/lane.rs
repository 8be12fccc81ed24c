//! The mint lane: admission control for mints, a bounded lane in front of
//! the generator's waits, and optional per-client quotas.
//!
//! One identity can issue at most 4,096 IDs per millisecond, whatever the
//! demand. A mint issues what it can at once on the async worker
//! ([`Minter::try_mint_ranges`](crate::Minter::try_mint_ranges)); the rest
//! waits for the generator (the next millisecond, a clock catching up, a
//! reservation write) in one *lane*, one request at a time, on a blocking
//! thread. The lane admits only what the generator can serve within its
//! wait bound: past that, or when a request cannot get into the lane within
//! the bound, it answers 503 with `Retry-After` at once instead of queueing
//! without bound. A per-client quota (`--client-quota`) answers 429 with
//! `Retry-After` before any of that.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::mint::minter::{MintError, PendingMint};
use crate::routes::error::{ApiError, Throttle};
use crate::routes::metrics::{Metrics, Rejection};

/// IDs one identity can issue per millisecond.
const PER_MS: u64 = snowmint::MAX_SEQUENCE + 1;

/// How often (in quota checks) idle clients are forgotten.
const FORGET_EVERY: u64 = 4096;

/// The lane and the quotas; one per server.
#[derive(Debug)]
pub struct Admission {
    /// IDs admitted to the lane and not yet minted (shared with the
    /// blocking thread, which gives them back when it ends).
    queued: Arc<AtomicU64>,
    /// What the generator can serve within `wait`.
    budget: u64,
    /// How long a request may wait to enter the lane.
    wait: Duration,
    /// Held by the blocking part of a mint until it really ends, even if
    /// the request gave up on it meanwhile.
    lane: Arc<tokio::sync::Mutex<()>>,
    quota: Option<DefaultKeyedRateLimiter<IpAddr>>,
    checks: AtomicU64,
}

impl Default for Admission {
    fn default() -> Admission {
        Admission::new(snowmint::DEFAULT_MAX_WAIT)
    }
}

impl Admission {
    /// A lane for a generator that waits at most `wait`: it admits at most
    /// `4096 * wait in ms` IDs at once.
    pub fn new(wait: Duration) -> Admission {
        let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
        Admission {
            queued: Arc::new(AtomicU64::new(0)),
            budget: ms.saturating_mul(PER_MS),
            wait,
            lane: Arc::new(tokio::sync::Mutex::new(())),
            quota: None,
            checks: AtomicU64::new(0),
        }
    }

    /// Limits each client IP to `ids_per_second` IDs per second (a burst of
    /// as many).
    #[must_use]
    pub fn with_client_quota(mut self, ids_per_second: NonZeroU32) -> Admission {
        self.quota = Some(RateLimiter::keyed(Quota::per_second(ids_per_second)));
        self
    }

    /// Whether clients have quotas, for which a mint needs to know its
    /// client's address.
    pub(crate) fn has_client_quota(&self) -> bool {
        self.quota.is_some()
    }

    /// Takes `n` IDs from `client`'s quota, or answers 429 with
    /// `Retry-After`; a count more than the whole quota, which no wait
    /// lets pass, is a 400 naming `count` and the quota. Without a quota,
    /// or without a known client, admits.
    pub(crate) fn check_quota(
        &self,
        client: Option<IpAddr>,
        n: usize,
        metrics: &Metrics,
    ) -> Result<(), ApiError> {
        let (Some(limiter), Some(ip)) = (&self.quota, client) else {
            return Ok(());
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % FORGET_EVERY == FORGET_EVERY - 1 {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        let n = NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
        let refused = match limiter.check_key_n(&ip, n) {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(not_until)) => {
                let wait = not_until.wait_time_from(governor::clock::Clock::now(
                    &governor::clock::DefaultClock::default(),
                ));
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    None,
                    "this client's ID quota is used up for now; try again later",
                )
                .retry_after(wait.as_secs_f64().ceil() as u64)
            }
            // No wait would ever let it pass: the client's mistake, not
            // the quota's, so no Retry-After (and not counted as refused).
            Err(governor::InsufficientCapacity(quota)) => {
                return Err(ApiError::bad_request(
                    Some("count"),
                    format!(
                        "count must be at most this client's quota of {quota} IDs a second \
                         (--client-quota), got {n}"
                    ),
                ));
            }
        };
        metrics.mint_rejected(Rejection::Quota);
        static THROTTLE: Throttle = Throttle::new();
        if let Some(left_out) = THROTTLE.admit() {
            tracing::warn!(client = %ip, count = n.get(), not_logged_since = left_out, "client quota used up: 429");
        }
        Err(refused)
    }

    /// Mints the rest of `pending` into `body` in the lane, or answers 503
    /// with `Retry-After` at once when the lane holds more than the
    /// generator can serve within its wait bound.
    pub(crate) async fn finish(
        &self,
        pending: PendingMint,
        mut body: Vec<u8>,
        write: fn(&mut Vec<u8>, snowmint::IdRange),
        metrics: &Metrics,
    ) -> Result<Vec<u8>, ApiError> {
        let left = pending.left() as u64;
        let queued = self.queued.fetch_add(left, Ordering::AcqRel);
        let admitted = Admitted(Arc::clone(&self.queued), left);
        if queued + left > self.budget {
            return Err(self.overloaded(metrics));
        }
        let Ok(lane) = tokio::time::timeout(self.wait, Arc::clone(&self.lane).lock_owned()).await
        else {
            return Err(self.overloaded(metrics));
        };
        // The budget and the lane go with the blocking part: if the request
        // is dropped (its timeout, a closed connection) while the generator
        // still waits, they stay taken until that wait really ends, so the
        // next request does not park another blocking thread beside it.
        tokio::task::spawn_blocking(move || {
            let _held = (admitted, lane);
            pending
                .finish(|range| write(&mut body, range))
                .map(|()| body)
        })
        .await
        .map_err(|_| MintError::Interrupted)?
        .map_err(ApiError::from)
    }

    fn overloaded(&self, metrics: &Metrics) -> ApiError {
        metrics.mint_rejected(Rejection::Admission);
        static THROTTLE: Throttle = Throttle::new();
        if let Some(left_out) = THROTTLE.admit() {
            tracing::warn!(
                queued_ids = self.queued.load(Ordering::Relaxed),
                budget = self.budget,
                not_logged_since = left_out,
                "more IDs asked for than can be issued within the wait bound: 503"
            );
        }
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "more IDs are waiting than this instance can issue within its wait bound \
             (4096 per millisecond); try again shortly",
        )
        .retry_after(1)
    }
}

/// Gives the admitted IDs back to the lane's budget when dropped.
struct Admitted(Arc<AtomicU64>, u64);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mint::minter::Minter;

    fn write(out: &mut Vec<u8>, range: snowmint::IdRange) {
        out.extend(range.iter().flat_map(|id| id.to_string().into_bytes()));
    }

    /// A minter whose current millisecond is used up, so every further
    /// mint has to wait for the next one.
    fn exhausted() -> Arc<Minter> {
        let clock = snowmint::ManualClock::new(1_700_000_000_000);
        let generator = snowmint::Generator::builder(0, 0)
            .clock(clock.clone())
            .build()
            .unwrap();
        clock.advance(1);
        let minter = Minter::from_generator(generator);
        assert!(minter.try_mint_ranges(4096, drop).unwrap().is_none());
        minter
    }

    #[tokio::test]
    async fn demand_beyond_the_wait_bound_is_refused_at_once() {
        let minter = exhausted();
        let metrics = Metrics::new(Arc::clone(&minter));
        // A wait bound of 1 ms: the lane admits 4096 IDs at most.
        let admission = Admission::new(Duration::from_millis(1));
        let pending = || minter.try_mint_ranges(4096, drop).unwrap().unwrap();
        let (first, second) = (pending(), pending());
        // Someone is in the lane (and stays there).
        let lane = admission.lane.lock().await;
        let queued = admission.finish(first, Vec::new(), write, &metrics);
        let refused = admission.finish(second, Vec::new(), write, &metrics);
        let started = std::time::Instant::now();
        let (queued, refused) = tokio::join!(queued, refused);
        // The second did not fit the budget: refused without waiting; the
        // first could not enter the lane within the bound.
        for err in [refused.unwrap_err(), queued.unwrap_err()] {
            assert_eq!(err.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert!(err.message().contains("within its wait bound"), "{err:?}");
        }
        assert!(started.elapsed() < Duration::from_millis(500));
        assert_eq!(
            admission.queued.load(Ordering::SeqCst),
            0,
            "budget given back"
        );
        assert!(
            metrics
                .render(crate::routes::metrics::Format::Text)
                .contains(r#"snowmint_mints_rejected_total{reason="admission"} 2"#)
        );
        // Once the lane is free, the rest of a mint is issued there.
        drop(lane);
        let body = admission
            .finish(pending(), Vec::new(), write, &metrics)
            .await
            .unwrap();
        assert!(!body.is_empty());
    }

    /// A request that gives up (its timeout, a closed connection) while the
    /// generator waits for a store write must not give the lane back: the
    /// blocking thread is still parked, and the next request would park
    /// another one beside it.
    #[tokio::test]
    async fn the_lane_stays_taken_until_the_blocking_part_ends() {
        let store = snowmint::FaultyStore::new();
        let writes = store.writes();
        writes.park();
        let generator = snowmint::Generator::builder(0, 0)
            .store(store)
            .store_timeout(Duration::from_secs(600))
            .build()
            .unwrap();
        let minter = Minter::from_generator(generator);
        let metrics = Metrics::new(Arc::clone(&minter));
        let admission = Admission::new(Duration::from_millis(10));
        // No mark yet: the mint must wait for a write.
        let pending = minter.try_mint_ranges(100, drop).unwrap().unwrap();
        let gave_up = tokio::time::timeout(
            Duration::from_millis(50),
            admission.finish(pending, Vec::new(), write, &metrics),
        )
        .await;
        assert!(gave_up.is_err(), "the write is parked");
        assert_eq!(admission.queued.load(Ordering::SeqCst), 100, "budget held");
        assert!(admission.lane.try_lock().is_err(), "lane held");
        // Another mint cannot enter the lane within the bound: refused.
        let pending = minter.try_mint_ranges(1, drop).unwrap().unwrap();
        let err = admission
            .finish(pending, Vec::new(), write, &metrics)
            .await
            .unwrap_err();
        assert_eq!(err.status(), StatusCode::SERVICE_UNAVAILABLE);
        // The store returns: the blocking part ends and gives both back.
        writes.release();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while admission.queued.load(Ordering::SeqCst) != 0 || admission.lane.try_lock().is_err() {
            assert!(std::time::Instant::now() < deadline, "never given back");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[test]
    fn a_quota_refuses_with_retry_after_and_counts() {
        let minter = exhausted();
        let metrics = Metrics::new(minter);
        let admission = Admission::default().with_client_quota(NonZeroU32::new(10).unwrap());
        let ip = Some(IpAddr::from([127, 0, 0, 2]));
        admission.check_quota(ip, 10, &metrics).unwrap();
        let err = admission.check_quota(ip, 1, &metrics).unwrap_err();
        assert_eq!(err.status(), StatusCode::TOO_MANY_REQUESTS);
        let response = axum::response::IntoResponse::into_response(err);
        assert_eq!(response.headers()["retry-after"], "1");
        // More than the whole quota at once can never pass: a 400 that
        // says so, whatever is left of the quota.
        for ip in [ip, Some(IpAddr::from([127, 0, 0, 3]))] {
            let err = admission.check_quota(ip, 11, &metrics).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST);
            assert_eq!(err.field(), Some("count"));
            assert_eq!(
                err.message(),
                "count must be at most this client's quota of 10 IDs a second \
                 (--client-quota), got 11"
            );
        }
        // Another client, or an unknown one, is not affected.
        admission
            .check_quota(Some(IpAddr::from([127, 0, 0, 1])), 10, &metrics)
            .unwrap();
        admission.check_quota(None, 4096, &metrics).unwrap();
        assert!(
            metrics
                .render(crate::routes::metrics::Format::Text)
                .contains(r#"snowmint_mints_rejected_total{reason="quota"} 1"#)
        );
    }
}
