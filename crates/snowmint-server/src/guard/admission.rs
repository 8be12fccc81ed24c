//! Admission control for mints: a bounded lane in front of the generator's
//! waits, and optional per-client quotas.
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
    /// IDs admitted to the lane and not yet minted.
    queued: AtomicU64,
    /// What the generator can serve within `wait`.
    budget: u64,
    /// How long a request may wait to enter the lane.
    wait: Duration,
    lane: tokio::sync::Mutex<()>,
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
            queued: AtomicU64::new(0),
            budget: ms.saturating_mul(PER_MS),
            wait,
            lane: tokio::sync::Mutex::new(()),
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

    /// Takes `n` IDs from `client`'s quota, or answers 429 with
    /// `Retry-After`. Without a quota, or without a known client, admits.
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
            Err(_) => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                Some("count"),
                format!("count is more than this client's quota allows at once, got {n}"),
            ),
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
        let _admitted = Admitted(&self.queued, left);
        if queued + left > self.budget {
            return Err(self.overloaded(metrics));
        }
        let Ok(_lane) = tokio::time::timeout(self.wait, self.lane.lock()).await else {
            return Err(self.overloaded(metrics));
        };
        tokio::task::spawn_blocking(move || {
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
struct Admitted<'a>(&'a AtomicU64, u64);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
        // More than the whole quota at once can never pass: say so.
        let err = admission.check_quota(ip, 11, &metrics).unwrap_err();
        assert_eq!(err.field(), Some("count"));
        assert_eq!(
            err.message(),
            "count is more than this client's quota allows at once, got 11"
        );
        // Another client, or an unknown one, is not affected.
        admission
            .check_quota(Some(IpAddr::from([127, 0, 0, 1])), 10, &metrics)
            .unwrap();
        admission.check_quota(None, 4096, &metrics).unwrap();
        assert!(
            metrics
                .render(crate::routes::metrics::Format::Text)
                .contains(r#"snowmint_mints_rejected_total{reason="quota"} 2"#)
        );
    }
}
