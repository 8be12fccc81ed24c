//! The fenced slot the routes mint from.
//!
//! The routes never hold a [`Generator`] directly: an identity source (the
//! static identity of `--datacenter/--worker`, or an etcd lease) installs one
//! into the [`Minter`] together with the [`Identity`] it was built for and a
//! [`Fence`], and empties the slot when it may no longer issue. Every mint
//! checks the fence without a lock before it claims IDs and again after, before
//! it hands them over, so an instance whose lease may have expired stops
//! issuing at once, even if the identity source is slow to notice or the
//! claim itself waited.
//!
//! Mints never wait on an async worker thread:
//! [`try_mint_ranges`](Minter::try_mint_ranges) issues what it can without
//! waiting and hands the rest over as a [`PendingMint`] for a blocking
//! thread. [`Minter::ready`] answers whether a mint would succeed now.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use snowmint::SnowflakeId;

use crate::generator::{GenerateError, Generator, IdRange, StoreError};

pub use snowmint::{Identity, MAX_BATCH};

/// The process-wide origin of the monotonic clock fences count from.
fn monotonic_ns(at: Instant) -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    // An `Instant` before the origin is in the past: 0 reads as expired.
    u64::try_from(at.saturating_duration_since(origin).as_nanos())
        .unwrap_or(u64::MAX - 1)
        // Leave 0 for "expired by hand" and MAX for "never".
        .clamp(1, u64::MAX - 1)
}

/// A deadline on the monotonic clock after which the minter must not issue.
///
/// One `AtomicU64`, checked on every mint without a lock. The static identity
/// uses [`Fence::never`]; a leased identity sets the deadline to the moment
/// the lease could have expired (minus a margin) and [`extend`](Fence::extend)s
/// it on each successful keep-alive.
///
/// ```
/// use std::time::{Duration, Instant};
/// use snowmint_server::Fence;
///
/// let fence = Fence::until(Instant::now() + Duration::from_secs(10));
/// assert!(fence.is_open());
/// fence.expire();
/// assert!(!fence.is_open());
/// fence.extend(Instant::now() + Duration::from_secs(10));
/// assert!(!fence.is_open(), "an expired fence stays expired");
/// assert!(Fence::never().is_open());
/// ```
#[derive(Debug)]
pub struct Fence {
    /// Nanoseconds since the process's monotonic origin; 0 = expired by hand,
    /// `u64::MAX` = never expires.
    deadline_ns: AtomicU64,
}

impl Fence {
    const EXPIRED: u64 = 0;
    const NEVER: u64 = u64::MAX;

    /// A fence that never closes (static identities).
    pub fn never() -> Fence {
        Fence {
            deadline_ns: AtomicU64::new(Self::NEVER),
        }
    }

    /// A fence open until `deadline`.
    pub fn until(deadline: Instant) -> Fence {
        Fence {
            deadline_ns: AtomicU64::new(monotonic_ns(deadline)),
        }
    }

    /// Moves the deadline forward to `deadline` (never backward). A fence that
    /// was [`expire`](Fence::expire)d stays expired: install a new one.
    pub fn extend(&self, deadline: Instant) {
        let new = monotonic_ns(deadline);
        let _ = self
            .deadline_ns
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                (old != Self::EXPIRED && old != Self::NEVER && new > old).then_some(new)
            });
    }

    /// Closes the fence now, for good.
    pub fn expire(&self) {
        self.deadline_ns.store(Self::EXPIRED, Ordering::Release);
    }

    /// Whether minting is still allowed.
    pub fn is_open(&self) -> bool {
        match self.deadline_ns.load(Ordering::Acquire) {
            Self::NEVER => true,
            Self::EXPIRED => false,
            deadline => monotonic_ns(Instant::now()) < deadline,
        }
    }

    /// Time left before the fence closes; `None` if it never does.
    pub fn remaining(&self) -> Option<Duration> {
        match self.deadline_ns.load(Ordering::Acquire) {
            Self::NEVER => None,
            deadline => Some(Duration::from_nanos(
                deadline.saturating_sub(monotonic_ns(Instant::now())),
            )),
        }
    }
}

/// Why a mint issued nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MintError {
    /// No identity is installed (starting up, or the lease was lost).
    NotReady,
    /// The identity's fence has closed: its lease may have expired.
    Fenced,
    /// `count` outside `1..=4096`.
    Count(usize),
    /// The generator refused (clock far behind, end of the timestamp range,
    /// reservation store failure).
    Generate(GenerateError),
    /// The blocking part of a mint could not run (its thread panicked or
    /// the runtime is shutting down). Nothing was issued to the client.
    Interrupted,
}

impl MintError {
    /// A message safe to show to a client: no paths, no internals.
    pub fn public_message(&self) -> String {
        match self {
            MintError::NotReady => {
                "this instance holds no worker identity right now; try again later".to_owned()
            }
            MintError::Fenced => "this instance's worker identity lease may have expired; \
                 it issues no IDs until the lease is renewed"
                .to_owned(),
            MintError::Count(n) => format!("count must be 1..={MAX_BATCH}, got {n}"),
            MintError::Interrupted => {
                "the mint was interrupted, so no ID was issued; try again later".to_owned()
            }
            MintError::Generate(e) => match e {
                // The clock's and the format's limits are worth telling.
                GenerateError::ClockBehind { .. }
                | GenerateError::ClockStalled { .. }
                | GenerateError::Timestamp(_) => format!("{e}; try again later"),
                // Store messages name paths: keep them in the log.
                GenerateError::Reservation(_) => {
                    "the reservation could not be saved, so no ID was issued; try again later"
                        .to_owned()
                }
                _ => "the generator cannot issue IDs safely right now; try again later".to_owned(),
            },
        }
    }
}

impl fmt::Display for MintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MintError::Generate(e) => write!(f, "generator: {e}"),
            other => f.write_str(&other.public_message()),
        }
    }
}

impl std::error::Error for MintError {}

impl From<GenerateError> for MintError {
    fn from(e: GenerateError) -> MintError {
        MintError::Generate(e)
    }
}

/// What an identity source installs.
#[derive(Debug)]
struct Slot {
    identity: Identity,
    generator: Arc<Generator>,
    fence: Arc<Fence>,
}

/// The slot the routes mint from; see the [module docs](self).
///
/// ```
/// use std::sync::Arc;
/// use snowmint_server::{Fence, Identity, Minter, MintError};
///
/// let minter = Minter::new();
/// assert!(!minter.is_ready());
/// assert_eq!(minter.mint(1), Err(MintError::NotReady));
///
/// let generator = Arc::new(snowmint_server::generator::Generator::new(1, 2)?);
/// minter.install(generator, Arc::new(Fence::never()));
/// let ids = minter.mint(3).unwrap();
/// assert_eq!(ids.len(), 3);
/// assert!(ids[0] < ids[1] && ids[1] < ids[2]);
/// assert_eq!((ids[0].datacenter(), ids[0].worker()), (1, 2));
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Minter {
    // Read on every mint without a lock (an `ArcSwap` load); written only
    // when an identity is won or lost.
    slot: ArcSwapOption<Slot>,
}

impl Minter {
    /// An empty minter: not ready, every mint answers [`MintError::NotReady`].
    pub fn new() -> Arc<Minter> {
        Arc::new(Minter::default())
    }

    /// Starts issuing from `generator` (as its identity) while `fence` is open.
    /// Replaces whatever was installed.
    pub fn install(&self, generator: Arc<Generator>, fence: Arc<Fence>) {
        // The identity is the generator's own: nothing to keep in step.
        let identity = generator.identity();
        self.slot.store(Some(Arc::new(Slot {
            identity,
            generator,
            fence,
        })));
    }

    /// Stops issuing now.
    pub fn clear(&self) {
        self.slot.store(None);
    }

    fn current(&self) -> Option<Arc<Slot>> {
        self.slot.load_full()
    }

    /// Mints `n` (1..=4096) fresh IDs, strictly increasing.
    pub fn mint(&self, n: usize) -> Result<Vec<SnowflakeId>, MintError> {
        let mut ids = Vec::with_capacity(n.min(MAX_BATCH));
        self.mint_ranges(n, |range| ids.extend(range))?;
        Ok(ids)
    }

    /// Mints `n` (1..=4096) fresh IDs as consecutive runs, handing each run
    /// to `sink` as it is reserved: the batch route writes them out without
    /// collecting them. On an error, runs already handed over stay issued
    /// (they are never issued again) but the caller should not use them.
    ///
    /// May block (for the clock, or a reservation write): not for an async
    /// worker thread; see [`try_mint_ranges`](Minter::try_mint_ranges).
    pub fn mint_ranges(&self, n: usize, mut sink: impl FnMut(IdRange)) -> Result<(), MintError> {
        match self.try_mint_ranges(n, &mut sink)? {
            None => Ok(()),
            Some(pending) => pending.finish(sink),
        }
    }

    /// As [`mint_ranges`](Minter::mint_ranges), but never waits: it issues
    /// what it can at once and returns the rest, if any, as a
    /// [`PendingMint`] to [`finish`](PendingMint::finish) on a thread that
    /// may block (`tokio::task::spawn_blocking`). The rest is minted from
    /// the same generator, so the runs stay in increasing order.
    pub fn try_mint_ranges(
        &self,
        n: usize,
        mut sink: impl FnMut(IdRange),
    ) -> Result<Option<PendingMint>, MintError> {
        if !(1..=MAX_BATCH).contains(&n) {
            return Err(MintError::Count(n));
        }
        // A guard, not a clone of the Arc: no shared count touched per mint.
        let guard = self.slot.load();
        let slot = guard.as_ref().ok_or(MintError::NotReady)?;
        let mut left = n;
        if issue(slot, &mut left, false, &mut sink)? {
            Ok(None)
        } else {
            Ok(Some(PendingMint {
                slot: Arc::clone(slot),
                left,
            }))
        }
    }

    /// If the installed generator's reservation mark is due for renewal
    /// (ahead of the IDs being issued, or to retry a failing store), renews
    /// it on a blocking thread of the current tokio runtime, once at a time.
    /// Call it from async code after a mint and from readiness probes.
    pub fn renew_in_background_if_due(&self) {
        let guard = self.slot.load();
        if let Some(slot) = guard.as_ref().filter(|s| s.generator.renewal_due()) {
            let generator = Arc::clone(&slot.generator);
            tokio::task::spawn_blocking(move || {
                if let Err(e) = generator.renew_reservation() {
                    tracing::warn!(error = %e, "renewing the reservation mark failed");
                }
            });
        }
    }

    /// The installed identity, if any.
    pub fn identity(&self) -> Option<Identity> {
        self.current().map(|s| s.identity)
    }

    /// The installed generator, if any (for metrics and shutdown).
    pub fn generator(&self) -> Option<Arc<Generator>> {
        self.current().map(|s| Arc::clone(&s.generator))
    }

    /// Installed and the fence still open.
    pub fn is_ready(&self) -> bool {
        self.ready_identity().is_some()
    }

    /// Whether a mint would succeed now: the identity, or why not (nothing
    /// installed, fenced, or what the generator would answer: a clock too
    /// far behind, a failing reservation store, the end of the format's
    /// years). One look at the slot; never waits.
    pub fn ready(&self) -> Result<Identity, MintError> {
        let guard = self.slot.load();
        let slot = guard.as_ref().ok_or(MintError::NotReady)?;
        if !slot.fence.is_open() {
            return Err(MintError::Fenced);
        }
        slot.generator.check_ready()?;
        Ok(slot.identity)
    }

    /// The identity, if installed and its fence still open: one look at the
    /// slot, so the answer never mixes two installations.
    pub fn ready_identity(&self) -> Option<Identity> {
        self.slot
            .load()
            .as_ref()
            .filter(|s| s.fence.is_open())
            .map(|s| s.identity)
    }

    /// Graceful shutdown: persists the installed generator's last issued
    /// timestamp as its reservation mark. Nothing installed, or fenced (a
    /// fenced instance may no longer write its identity's mark; the mark it
    /// left is higher than what it issued, which is safe): nothing to do.
    pub fn persist_last_issued(&self) -> Result<(), StoreError> {
        match self.current() {
            Some(slot) if slot.fence.is_open() => slot.generator.persist_last_issued(),
            Some(slot) => {
                tracing::info!(
                    identity = %slot.identity,
                    "fenced at shutdown: the reservation mark stays where it was"
                );
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// Issues `left` IDs from `slot` into `sink`, counting `left` down; with
/// `block` false, stops without waiting where the generator would wait and
/// returns `false` (the rest is still to mint).
fn issue(
    slot: &Slot,
    left: &mut usize,
    block: bool,
    sink: &mut impl FnMut(IdRange),
) -> Result<bool, MintError> {
    while *left > 0 {
        if !slot.fence.is_open() {
            return Err(MintError::Fenced);
        }
        let range = if block {
            slot.generator.next_ids(*left)?
        } else {
            match slot.generator.try_next_ids(*left) {
                Err(GenerateError::WouldBlock) => return Ok(false),
                other => other?,
            }
        };
        // The claim may have taken a while (a wait, a store write): IDs
        // claimed after the fence closed are never handed over.
        if !slot.fence.is_open() {
            return Err(MintError::Fenced);
        }
        *left -= range.len().min(*left);
        sink(range);
    }
    Ok(true)
}

/// The rest of a mint that [`Minter::try_mint_ranges`] could not issue
/// without waiting.
#[derive(Debug)]
#[must_use = "the rest of the mint is issued only by `finish`"]
pub struct PendingMint {
    slot: Arc<Slot>,
    left: usize,
}

impl PendingMint {
    /// How many IDs are still to mint.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Mints the rest into `sink`, waiting as the generator allows (at most
    /// its `max_wait` plus a reservation write). Blocks: call it from a
    /// blocking thread.
    pub fn finish(mut self, mut sink: impl FnMut(IdRange)) -> Result<(), MintError> {
        issue(&self.slot, &mut self.left, true, &mut sink).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(fence: Fence) -> Arc<Minter> {
        let minter = Minter::new();
        minter.install(Arc::new(Generator::new(3, 4).unwrap()), Arc::new(fence));
        minter
    }

    #[test]
    fn mints_across_milliseconds_in_order() {
        let minter = installed(Fence::never());
        let ids = minter.mint(4096).unwrap();
        assert_eq!(ids.len(), 4096);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let more = minter.mint(4096).unwrap();
        assert!(ids[4095] < more[0]);
        assert!(
            ids.iter()
                .all(|id| (id.datacenter(), id.worker()) == (3, 4))
        );
    }

    #[test]
    fn refuses_bad_counts_and_closed_fences() {
        let minter = installed(Fence::never());
        assert_eq!(minter.mint(0), Err(MintError::Count(0)));
        assert_eq!(minter.mint(4097), Err(MintError::Count(4097)));

        let fence = Arc::new(Fence::until(Instant::now() + Duration::from_secs(60)));
        minter.install(Arc::new(Generator::new(3, 4).unwrap()), Arc::clone(&fence));
        assert!(minter.is_ready());
        assert_eq!(minter.mint(1).unwrap().len(), 1);
        fence.expire();
        assert!(!minter.is_ready());
        assert_eq!(minter.mint(1), Err(MintError::Fenced));
        minter.clear();
        assert_eq!(minter.identity(), None);
        assert_eq!(minter.mint(1), Err(MintError::NotReady));
    }

    #[test]
    fn try_mint_hands_the_waiting_part_over() {
        let clock = snowmint::ManualClock::new(1_700_000_000_000);
        let generator = Generator::builder(3, 4)
            .clock(clock.clone())
            .build()
            .unwrap();
        clock.advance(1); // past the millisecond it was built in
        let minter = Minter::new();
        minter.install(Arc::new(generator), Arc::new(Fence::never()));
        let mut ids = Vec::new();
        assert!(
            minter
                .try_mint_ranges(100, |r| ids.extend(r))
                .unwrap()
                .is_none()
        );
        // 3996 left in this millisecond: the rest of 4096 must wait.
        let pending = minter
            .try_mint_ranges(4096, |r| ids.extend(r))
            .unwrap()
            .expect("the millisecond ran out");
        assert_eq!(pending.left(), 100);
        assert_eq!(ids.len(), 4096);
        assert_eq!(clock.slept(), Duration::ZERO, "nothing waited yet");
        pending.finish(|r| ids.extend(r)).unwrap();
        assert_eq!(ids.len(), 4196);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(clock.slept(), Duration::from_millis(1));
    }

    #[test]
    fn readiness_says_why_a_mint_would_fail() {
        let clock = snowmint::ManualClock::new(1_700_000_000_000);
        let minter = Minter::new();
        assert_eq!(minter.ready(), Err(MintError::NotReady));
        let generator = Generator::builder(3, 4)
            .clock(clock.clone())
            .build()
            .unwrap();
        let fence = Arc::new(Fence::until(Instant::now() + Duration::from_secs(60)));
        minter.install(Arc::new(generator), Arc::clone(&fence));
        assert_eq!(minter.ready(), Ok(Identity::new(3, 4).unwrap()));
        clock.rewind(3_600_000);
        let err = minter.ready().unwrap_err();
        assert!(
            matches!(err, MintError::Generate(GenerateError::ClockBehind { .. })),
            "{err:?}"
        );
        assert!(err.public_message().contains("ms behind"), "{err}");
        clock.advance(3_600_000);
        assert!(minter.ready().is_ok());
        fence.expire();
        assert_eq!(minter.ready(), Err(MintError::Fenced));
    }

    /// A store whose writes take `delay`.
    struct SlowStore(Duration);

    impl snowmint::ReservationStore for SlowStore {
        fn load(&self) -> Result<Option<u64>, StoreError> {
            Ok(None)
        }

        fn store(&self, _until_ms: u64) -> Result<(), StoreError> {
            std::thread::sleep(self.0);
            Ok(())
        }
    }

    #[test]
    fn ids_claimed_after_the_fence_closed_are_not_handed_over() {
        // The fence is open when the mint starts; the claim then waits
        // 300 ms for its reservation write, past the fence's deadline.
        let generator = Generator::builder(3, 4)
            .store(SlowStore(Duration::from_millis(300)))
            .build()
            .unwrap();
        let minter = Minter::new();
        let fence = Arc::new(Fence::until(Instant::now() + Duration::from_millis(100)));
        minter.install(Arc::new(generator), fence);
        let mut handed_over = 0;
        let outcome = minter.mint_ranges(10, |range| handed_over += range.len());
        assert_eq!(outcome, Err(MintError::Fenced));
        assert_eq!(handed_over, 0);
    }

    #[test]
    fn fence_deadlines() {
        let past = Fence::until(Instant::now() - Duration::from_millis(1));
        assert!(!past.is_open());
        let fence = Fence::until(Instant::now() + Duration::from_secs(5));
        fence.extend(Instant::now() + Duration::from_secs(1));
        assert!(
            fence.remaining().unwrap() > Duration::from_secs(2),
            "never backward"
        );
        fence.extend(Instant::now() + Duration::from_secs(50));
        assert!(fence.remaining().unwrap() > Duration::from_secs(10));
        assert_eq!(Fence::never().remaining(), None);
    }
}
