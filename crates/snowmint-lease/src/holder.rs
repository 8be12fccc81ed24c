//! The fenced slot every mint goes through, leased or not.
//!
//! A [`Holder`] holds at most one tenure: an identity's [`Generator`]
//! together with the [`Fence`] it may issue under. A lease session installs
//! a tenure when it claims an identity and empties the slot when it may no
//! longer issue; a static identity (nobody else can hold it) is a tenure
//! whose fence never closes ([`Holder::fixed`]). Every mint looks at the
//! fence before it claims IDs and again after, before it hands them over:
//! IDs claimed while the fence closed (the claim waited for the clock, or
//! for a reservation write) are dropped, never returned. This file is the
//! one place that rule is kept; `LeasedGenerator` and `snowmint serve`
//! (static or leased) all mint through it.

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use snowmint::{
    GenerateError, Generator, GeneratorMetrics, IdRange, Identity, SnowflakeId, StoreError,
};

use crate::Fence;

/// Why a mint issued nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MintError {
    /// No identity is held (starting, lost and claiming again, or stopped).
    NotHeld,
    /// The lease's fence has closed: the lease may have expired.
    Fenced,
    /// A batch of `count` outside `1..=4096`.
    Count(usize),
    /// The generator refused (clock far behind, end of the timestamp range,
    /// the reservation mark could not be written).
    Generate(GenerateError),
}

impl fmt::Display for MintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MintError::NotHeld => f.write_str("no worker identity is held right now"),
            MintError::Fenced => f.write_str(
                "the worker identity's lease may have expired; \
                 no IDs until it is renewed",
            ),
            // The core's message: one home for the rule and its words.
            MintError::Count(n) => fmt::Display::fmt(&GenerateError::Count { requested: *n }, f),
            MintError::Generate(e) => write!(f, "generator: {e}"),
        }
    }
}

impl std::error::Error for MintError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MintError::Generate(e) => Some(e),
            _ => None,
        }
    }
}

impl From<GenerateError> for MintError {
    fn from(e: GenerateError) -> MintError {
        match e {
            // The generator is where a batch's size is checked.
            GenerateError::Count { requested } => MintError::Count(requested),
            e => MintError::Generate(e),
        }
    }
}

/// One identity held under one lease: what the session installs.
#[derive(Debug)]
pub(crate) struct Tenure {
    pub(crate) identity: Identity,
    pub(crate) generator: Arc<Generator>,
    pub(crate) fence: Arc<Fence>,
}

impl Tenure {
    /// One claim of up to `n` IDs, handed over only if the fence was open
    /// before and is open after it. With `block` false it never waits
    /// (`GenerateError::WouldBlock` where the generator would).
    #[inline]
    fn claim(&self, n: usize, block: bool) -> Result<IdRange, MintError> {
        // No clock here: an expired fence is also cleared by the session,
        // and the check after the claim is the one that decides.
        if self.fence.is_expired() {
            return Err(MintError::Fenced);
        }
        let range = if block {
            self.generator.next_ids(n)?
        } else {
            self.generator.try_next_ids(n)?
        };
        // The claim may have taken a while (a wait, a store write): IDs
        // claimed after the fence closed are never handed over.
        if !self.fence.is_open() {
            return Err(MintError::Fenced);
        }
        Ok(range)
    }

    #[inline]
    fn next_id(&self) -> Result<SnowflakeId, MintError> {
        if self.fence.is_expired() {
            return Err(MintError::Fenced);
        }
        let id = self.generator.next_id()?;
        if !self.fence.is_open() {
            return Err(MintError::Fenced);
        }
        Ok(id)
    }
}

/// The fenced slot every mint goes through, leased or static: it holds at
/// most one tenure (an identity's generator and the fence it issues under),
/// and every mint looks at the fence before it claims IDs and again after,
/// so IDs claimed while the fence closed are dropped, never returned.
///
/// A static identity is a tenure whose fence never closes:
///
/// ```
/// use std::sync::Arc;
/// use snowmint_lease::{Holder, MintError};
///
/// let holder = Holder::fixed(Arc::new(snowmint::Generator::new(1, 2)?));
/// let mut ids = Vec::new();
/// // What needs a wait (the millisecond the generator was built in, say)
/// // comes back to finish on a thread that may block.
/// if let Some(rest) = holder.try_mint_ranges(3, |run| ids.extend(run))? {
///     rest.finish(|run| ids.extend(run))?;
/// }
/// assert!(ids[0] < ids[1] && ids[1] < ids[2]);
/// assert_eq!(holder.try_mint_ranges(0, |_| {}).unwrap_err(), MintError::Count(0));
/// assert_eq!(Holder::default().next_id(), Err(MintError::NotHeld));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct Holder {
    // Read on every mint without a lock (an `ArcSwap` load); written only
    // when an identity is won or lost.
    slot: ArcSwapOption<Tenure>,
}

impl Holder {
    /// A holder of `generator`'s identity for good: its fence never closes
    /// (a static identity, which no other process can hold).
    pub fn fixed(generator: Arc<Generator>) -> Holder {
        let holder = Holder::default();
        holder.install(generator, Arc::new(Fence::never()));
        holder
    }

    pub(crate) fn install(&self, generator: Arc<Generator>, fence: Arc<Fence>) {
        // The identity is the generator's own: nothing to keep in step.
        let identity = generator.identity();
        self.slot.store(Some(Arc::new(Tenure {
            identity,
            generator,
            fence,
        })));
    }

    /// Stops issuing now: empties the slot and closes the tenure's fence,
    /// so the rest of a batch already under way stops too.
    pub(crate) fn clear(&self) {
        if let Some(tenure) = self.slot.swap(None) {
            tenure.fence.expire();
        }
    }

    pub(crate) fn current(&self) -> Option<Arc<Tenure>> {
        self.slot.load_full()
    }

    /// One fresh ID from the identity held, if its fence is open. May wait
    /// as the core generator does (the next millisecond, a clock catching
    /// up, a reservation write).
    #[inline]
    pub fn next_id(&self) -> Result<SnowflakeId, MintError> {
        // A guard, not a clone of the Arc: no shared count touched per mint.
        let guard = self.slot.load();
        guard.as_ref().ok_or(MintError::NotHeld)?.next_id()
    }

    /// 1..=`n` consecutive IDs of one millisecond (fewer when the
    /// millisecond has fewer left); with `block` false it never waits
    /// (`GenerateError::WouldBlock` where the generator would).
    pub fn next_ids(&self, n: usize, block: bool) -> Result<IdRange, MintError> {
        let guard = self.slot.load();
        guard.as_ref().ok_or(MintError::NotHeld)?.claim(n, block)
    }

    /// Mints `n` (1..=4096) IDs as runs of consecutive IDs into `sink`,
    /// issuing at once what needs no wait and returning the rest, if any, as
    /// a [`PendingMint`] to finish on a thread that may block. All of one
    /// batch come from one tenure, strictly increasing.
    pub fn try_mint_ranges(
        &self,
        n: usize,
        mut sink: impl FnMut(IdRange),
    ) -> Result<Option<PendingMint>, MintError> {
        let guard = self.slot.load();
        let tenure = guard.as_ref().ok_or(MintError::NotHeld)?;
        let mut left = n;
        if issue(tenure, &mut left, false, &mut sink)? {
            Ok(None)
        } else {
            Ok(Some(PendingMint {
                tenure: Arc::clone(tenure),
                left,
            }))
        }
    }

    /// Whether a mint would succeed now, and as which identity; else why not
    /// (none held, fenced, or what the generator would answer: a clock too
    /// far behind, a failing reservation write). Never waits.
    pub fn ready(&self) -> Result<Identity, MintError> {
        let guard = self.slot.load();
        let tenure = guard.as_ref().ok_or(MintError::NotHeld)?;
        if !tenure.fence.is_open() {
            return Err(MintError::Fenced);
        }
        tenure.generator.check_ready()?;
        Ok(tenure.identity)
    }

    /// The identity, if held and its fence open: one look, so the answer
    /// never mixes two tenures (a cheaper [`ready`](Holder::ready) that
    /// does not ask the generator).
    pub fn ready_identity(&self) -> Option<Identity> {
        self.slot
            .load()
            .as_ref()
            .filter(|t| t.fence.is_open())
            .map(|t| t.identity)
    }

    /// The identity held and how long its fence stays open from now, in
    /// one look (so the two never come from two tenures); `None` while
    /// nothing is held or the fence is closed. The time left is `None` for
    /// a fence that never closes.
    ///
    /// For a program that publishes the fence to processes that cannot
    /// read it (the PostgreSQL extension's shared memory): an instant
    /// reckoned as a monotonic clock read *before* this call plus the time
    /// left is at most one tick of the kernel's coarse clock past the
    /// fence's own deadline; subtract a tick to stay within it.
    pub fn fence_left(&self) -> Option<(Identity, Option<std::time::Duration>)> {
        self.slot
            .load()
            .as_ref()
            .filter(|t| t.fence.is_open())
            .map(|t| (t.identity, t.fence.remaining()))
    }

    /// The identity held now (fenced or not), if any.
    pub fn identity(&self) -> Option<Identity> {
        self.slot.load().as_ref().map(|t| t.identity)
    }

    /// The held identity's generator's counters, if one is held.
    pub fn generator_metrics(&self) -> Option<GeneratorMetrics> {
        self.slot.load().as_ref().map(|t| t.generator.metrics())
    }

    /// Whether the held generator's mark should be written now (ahead of
    /// the IDs being issued, to retry a failing write, or to prove the store
    /// still takes writes): then call
    /// [`renew_reservation`](Holder::renew_reservation) on a thread that may
    /// block. `false` while fenced or holding nothing. Looked at in place:
    /// no shared count is touched.
    pub fn renewal_due(&self) -> bool {
        self.slot
            .load()
            .as_ref()
            .is_some_and(|t| t.fence.is_open() && t.generator.renewal_due())
    }

    /// Writes the held generator's mark if it is due (see
    /// [`renewal_due`](Holder::renewal_due)); nothing while fenced or
    /// holding nothing. Blocks, at most the generator's store timeout.
    pub fn renew_reservation(&self) -> Result<(), StoreError> {
        match self.current() {
            Some(t) if t.fence.is_open() => t.generator.renew_reservation(),
            _ => Ok(()),
        }
    }

    /// Lowers the mark to the last issued millisecond, if the fence is
    /// still open (a fenced holder may no longer write its identity's mark;
    /// the mark it left is higher than what it issued, which is safe).
    /// Blocks, at most the generator's store timeout.
    pub fn persist_last_issued(&self) -> Result<(), StoreError> {
        match self.current() {
            Some(t) if t.fence.is_open() => t.generator.persist_last_issued(),
            Some(t) => {
                tracing::info!(
                    identity = %t.identity,
                    "fenced at shutdown: the reservation mark stays where it was"
                );
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// Issues `left` IDs from `tenure` into `sink`, counting `left` down; with
/// `block` false, stops without waiting where the generator would wait and
/// returns `false` (the rest is still to mint). Claims at least once, so
/// that the generator, the one place a batch's size is checked, sees a
/// count of 0 too.
fn issue(
    tenure: &Tenure,
    left: &mut usize,
    block: bool,
    sink: &mut impl FnMut(IdRange),
) -> Result<bool, MintError> {
    loop {
        let range = match tenure.claim(*left, block) {
            Err(MintError::Generate(GenerateError::WouldBlock)) => return Ok(false),
            other => other?,
        };
        *left -= range.len().min(*left);
        sink(range);
        if *left == 0 {
            return Ok(true);
        }
    }
}

/// The rest of a batch that [`Holder::try_mint_ranges`] could not issue
/// without waiting. It mints from the same tenure (identity, generator,
/// fence), so the runs stay in increasing order; a re-claim in
/// between ends it with [`MintError::Fenced`] or [`MintError::NotHeld`], never
/// with IDs of another identity.
#[derive(Debug)]
#[must_use = "the rest of the batch is issued only by `finish`"]
pub struct PendingMint {
    tenure: Arc<Tenure>,
    left: usize,
}

impl PendingMint {
    /// How many IDs are still to mint.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Mints the rest into `sink`, waiting as the generator allows (at most
    /// its `max_wait` plus a reservation write). Blocks: call it from a
    /// thread that may block (`tokio::task::spawn_blocking`).
    pub fn finish(mut self, mut sink: impl FnMut(IdRange)) -> Result<(), MintError> {
        issue(&self.tenure, &mut self.left, true, &mut sink).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{LeaseClock, SystemLeaseClock};

    /// A fence open for `d` from now on the system lease clock.
    fn open_for(d: Duration) -> Fence {
        let clock = Arc::new(SystemLeaseClock);
        Fence::until(clock.clone(), clock.now() + d)
    }

    fn holding(fence: Fence) -> Holder {
        let holder = Holder::default();
        holder.install(Arc::new(Generator::new(3, 4).unwrap()), Arc::new(fence));
        holder
    }

    fn mint(holder: &Holder, n: usize) -> Result<Vec<SnowflakeId>, MintError> {
        let mut ids = Vec::new();
        if let Some(pending) = holder.try_mint_ranges(n, |r| ids.extend(r))? {
            pending.finish(|r| ids.extend(r))?;
        }
        Ok(ids)
    }

    #[test]
    fn mints_across_milliseconds_in_order() {
        let holder = holding(Fence::never());
        let ids = mint(&holder, 4096).unwrap();
        assert_eq!(ids.len(), 4096);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let more = mint(&holder, 4096).unwrap();
        assert!(ids[4095] < more[0]);
        assert!(
            ids.iter()
                .all(|id| (id.datacenter(), id.worker()) == (3, 4))
        );
        assert!(holder.next_id().unwrap() > more[4095]);
    }

    #[test]
    fn refuses_bad_counts_closed_fences_and_an_empty_slot() {
        let holder = holding(Fence::never());
        assert_eq!(mint(&holder, 0), Err(MintError::Count(0)));
        assert_eq!(mint(&holder, 4097), Err(MintError::Count(4097)));

        let fence = Arc::new(open_for(Duration::from_secs(60)));
        holder.install(Arc::new(Generator::new(3, 4).unwrap()), Arc::clone(&fence));
        assert!(holder.ready_identity().is_some());
        assert_eq!(mint(&holder, 1).unwrap().len(), 1);
        fence.expire();
        assert_eq!(holder.ready_identity(), None);
        assert_eq!(mint(&holder, 1), Err(MintError::Fenced));
        assert_eq!(holder.next_id(), Err(MintError::Fenced));
        assert_eq!(holder.next_ids(1, false), Err(MintError::Fenced));
        holder.clear();
        assert!(holder.current().is_none());
        assert_eq!(holder.next_id(), Err(MintError::NotHeld));
    }

    #[test]
    fn a_deadline_that_passes_fences_without_anyone_expiring_it() {
        let clock = SystemLeaseClock;
        let deadline = clock.now() + Duration::from_millis(500);
        let holder = holding(open_for(Duration::from_millis(500)));
        // A mint that ended before the deadline was issued (on a machine
        // too loaded to get there in time, this part has nothing to check).
        let first = holder.next_id();
        if clock.now() < deadline {
            assert!(first.is_ok(), "{first:?}");
        }
        let started = std::time::Instant::now();
        while holder.next_id().is_ok() {
            assert!(started.elapsed() < Duration::from_secs(5), "never fenced");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(holder.next_id(), Err(MintError::Fenced));
        assert_eq!(holder.ready(), Err(MintError::Fenced));
    }

    #[test]
    fn try_mint_hands_the_waiting_part_over() {
        let clock = snowmint::ManualClock::new(1_700_000_000_000);
        let generator = Generator::builder(3, 4)
            .clock(clock.clone())
            .build()
            .unwrap();
        clock.advance(1); // past the millisecond it was built in
        let holder = Holder::default();
        holder.install(Arc::new(generator), Arc::new(Fence::never()));
        let mut ids = Vec::new();
        assert!(
            holder
                .try_mint_ranges(100, |r| ids.extend(r))
                .unwrap()
                .is_none()
        );
        // 3996 left in this millisecond: the rest of 4096 must wait.
        let pending = holder
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
        let holder = Holder::default();
        assert_eq!(holder.ready(), Err(MintError::NotHeld));
        let generator = Generator::builder(3, 4)
            .clock(clock.clone())
            .build()
            .unwrap();
        let fence = Arc::new(open_for(Duration::from_secs(60)));
        holder.install(Arc::new(generator), Arc::clone(&fence));
        assert_eq!(holder.ready(), Ok(Identity::new(3, 4).unwrap()));
        clock.rewind(3_600_000);
        let err = holder.ready().unwrap_err();
        assert!(
            matches!(err, MintError::Generate(GenerateError::ClockBehind { .. })),
            "{err:?}"
        );
        clock.advance(3_600_000);
        assert!(holder.ready().is_ok());
        fence.expire();
        assert_eq!(holder.ready(), Err(MintError::Fenced));
    }

    #[test]
    fn ids_claimed_after_the_fence_closed_are_not_handed_over() {
        // The fence is open when the mint starts; the claim then waits
        // 300 ms for its reservation write, past the fence's deadline.
        for single in [false, true] {
            let store = snowmint::FaultyStore::new();
            store.writes().delay(Duration::from_millis(300));
            let generator = Generator::builder(3, 4).store(store).build().unwrap();
            let holder = Holder::default();
            let fence = Arc::new(open_for(Duration::from_millis(100)));
            holder.install(Arc::new(generator), fence);
            if single {
                assert_eq!(holder.next_id(), Err(MintError::Fenced));
            } else {
                let mut handed_over = 0;
                let outcome = holder
                    .try_mint_ranges(10, |range| handed_over += range.len())
                    .and_then(|p| p.map_or(Ok(()), |p| p.finish(|r| handed_over += r.len())));
                assert_eq!(outcome, Err(MintError::Fenced));
                assert_eq!(handed_over, 0);
            }
        }
    }
}
