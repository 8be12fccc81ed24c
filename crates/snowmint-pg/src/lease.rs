//! A leased identity: `snowmint.coordinator = 'postgres://…'`.
//!
//! The background worker "snowmint lease" runs the lease session of
//! `snowmint serve --postgres` (crate `snowmint-lease` over `snowmint-db`'s
//! PostgreSQL coordinator, the same table, protocol, fence and marks) on a
//! tokio runtime of its own threads, and publishes what it holds into shared
//! memory (`shared::LeaseWords`); backends mint from those words only. The threads
//! never call a PostgreSQL function (they run with every signal blocked, so
//! PostgreSQL's handlers run on the worker's own thread); only the worker's
//! main thread touches PostgreSQL (its latch, the LWLocks of `shared.rs`).
//!
//! # Invariants
//!
//! 1. **Fence.** `deadline_ns` (on [`clock::fence_ns`], `CLOCK_BOOTTIME`:
//!    system-wide, and it counts a suspend as the lease crate's clock does)
//!    is never later than the fence of the tenure in `tenure`: the worker
//!    reads the clock, *then* the time the fence has left, and publishes
//!    their sum less a tick. A frozen worker (SIGSTOP, a stalled machine)
//!    publishes nothing new, and the published deadline passes by itself.
//! 2. **Tenure.** `tenure` = `generation << 11 | HELD | ordinal`. A new
//!    tenure is published in this order: the fence closed (`deadline_ns` =
//!    0), the generation bumped (not held), its coordinator mark, the floor
//!    raised above that mark (`shared::raise_floor`), the identity (held),
//!    the fence opened. A backend reads the tenure before it claims, and
//!    after the marks are covered reads the deadline and then the tenure
//!    again ([`recheck`]): if the tenure is the one it claimed under and the
//!    fence is open, no other tenure was published between, so the mark it
//!    saw was this tenure's and the identity is still this process's.
//! 3. **Marks.** `mark_ms` is the coordinator's mark of the tenure's
//!    identity (Unix ms) known written; before `nextval` returns an ID of
//!    time `ms` under a leased identity, `mark_ms >= ms`. Backends ask
//!    through `wanted_ms` and the worker's latch; the worker writes it with
//!    the tenure's [`LeaseStore`] (raise only, and only while the identity
//!    is bound to its lease) and then raises `mark_ms`.
//! 4. The next holder of an identity starts above its coordinator mark (the
//!    lease crate's rule; here: the floor of invariant 2), so IDs of two
//!    tenures of one identity never meet.

use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pgrx::bgworkers::{
    BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags,
};
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use snowmint::{Generator, Identity, ReservationStore};
use snowmint_db::{DbConfig, LeaseState, LeaseStore, LeasedGenerator};
use snowmint_lease::{DEFAULT_LEASE_TTL, MAX_LEASE_TTL, MIN_LEASE_TTL, redact};

use crate::clock;
use crate::error::Refusal;
use crate::shared::{self, Hot};

/// `snowmint.coordinator`: the coordinator's libpq URL, unset by default.
static COORDINATOR: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
/// `snowmint.lease_datacenter`: lease only the workers of this datacenter
/// (-1: any of the 1024 identities).
static LEASE_DATACENTER: GucSetting<i32> = GucSetting::<i32>::new(-1);
/// `snowmint.lease_ttl`, seconds.
static LEASE_TTL: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_LEASE_TTL.as_secs() as i32);

/// The held bit of the tenure word.
const HELD: u64 = 1 << 10;
/// The identity's ordinal in the tenure word.
const ORDINAL: u64 = HELD - 1;
/// Where the generation starts in the tenure word.
const GENERATION_SHIFT: u32 = 11;

/// What is subtracted from a published deadline: more than one tick of the
/// coarse clock the fence reads (4 ms at 250 Hz, 10 ms at 100 Hz).
const TICK_NS: u64 = 20_000_000;

/// How often the worker publishes the fence and looks for marks to write.
const PUBLISH_EVERY: Duration = Duration::from_millis(20);

/// How long a graceful stop (release and revoke) may take.
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// The session's state as published (`LeaseWords::state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum State {
    /// The worker has not started (yet).
    NotRunning = 0,
    Connecting = 1,
    Claiming = 2,
    AllTaken = 3,
    Handover = 4,
    Held = 5,
    Fenced = 6,
    Stopped = 7,
    /// The settings were refused (the note says why).
    Refused = 8,
}

impl State {
    fn from_word(w: u64) -> State {
        match w {
            1 => State::Connecting,
            2 => State::Claiming,
            3 => State::AllTaken,
            4 => State::Handover,
            5 => State::Held,
            6 => State::Fenced,
            7 => State::Stopped,
            8 => State::Refused,
            _ => State::NotRunning,
        }
    }

    fn of(s: LeaseState) -> State {
        match s {
            LeaseState::Connecting => State::Connecting,
            LeaseState::Claiming => State::Claiming,
            LeaseState::AllTaken => State::AllTaken,
            LeaseState::Handover => State::Handover,
            LeaseState::Held => State::Held,
            LeaseState::Fenced => State::Fenced,
            LeaseState::Stopped => State::Stopped,
            _ => State::Connecting,
        }
    }

    /// In words, for refusals and `snowmint.identity()`.
    fn words(self) -> &'static str {
        match self {
            State::NotRunning => {
                "the lease worker (background worker \"snowmint lease\") is not running yet"
            }
            State::Connecting => "connecting to the coordinator",
            State::Claiming => "claiming an identity",
            State::AllTaken => "every identity is held by others; waiting for one to be freed",
            State::Handover => {
                "handing over: the identity's last holder did not release it, waiting one lease \
                 TTL before minting"
            }
            State::Held => "held",
            State::Fenced => "fenced: no lease renewal in time, not minting until one counts",
            State::Stopped => "stopped",
            State::Refused => "refused",
        }
    }
}

/// Registers `snowmint.coordinator` and `snowmint.lease_ttl`.
pub(crate) fn define_settings() {
    GucRegistry::define_string_guc(
        c"snowmint.coordinator",
        c"Lease the minting identity from this coordinator (a postgres:// URL of the table `snowmint serve --postgres` uses).",
        c"Set in postgresql.conf (superuser only; needs a restart). Excludes snowmint.datacenter \
          and snowmint.worker. Its value may hold a password: it is never shown in a message.",
        &COORDINATOR,
        GucContext::Postmaster,
        GucFlags::SUPERUSER_ONLY,
    );
    GucRegistry::define_int_guc(
        c"snowmint.lease_ttl",
        c"The lease TTL (seconds) of a leased identity (snowmint.coordinator).",
        c"The fence closes max(1 s, TTL / 5) before the lease can expire; a crashed server's \
          identity is free again after one TTL. Needs a restart.",
        &LEASE_TTL,
        MIN_LEASE_TTL.as_secs() as i32,
        MAX_LEASE_TTL.as_secs() as i32,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowmint.lease_datacenter",
        c"Lease only the 32 workers of this datacenter (0..=31; -1, the default: any identity).",
        c"As `snowmint serve --datacenter` with a coordinator: one coordinator table shared by \
          regions, each leasing within its own datacenter. Needs a restart.",
        &LEASE_DATACENTER,
        -1,
        snowmint::MAX_DATACENTER as i32,
        GucContext::Postmaster,
        GucFlags::default(),
    );
}

/// The coordinator's URL, if one is set.
pub fn coordinator() -> Option<String> {
    COORDINATOR
        .get()
        .map(|c| c.to_string_lossy().into_owned())
        .filter(|s| !s.trim().is_empty())
}

thread_local! {
    /// Whether a coordinator is set, read once per process: the setting is
    /// the postmaster's (a restart changes it), and reading a string
    /// setting copies it, which every `nextval` should not pay for.
    static LEASED: std::cell::OnceCell<bool> = const { std::cell::OnceCell::new() };
}

/// Whether this server leases its identity (`snowmint.coordinator` set).
pub fn is_leased() -> bool {
    LEASED.with(|l| *l.get_or_init(|| coordinator().is_some()))
}

/// The coordinator as it may be shown: without its password.
pub fn shown_coordinator() -> String {
    coordinator().map_or_else(|| "no coordinator".to_owned(), |url| redact(&url))
}

/// Registers the lease worker (postmaster, preloading, a coordinator set).
pub(crate) fn register() {
    BackgroundWorkerBuilder::new("snowmint lease")
        .set_type("snowmint lease")
        .set_library("snowmint")
        .set_function("snowmint_lease_main")
        .enable_shmem_access(None)
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

// ---------------------------------------------------------------------
// Backends

/// The identity held under a lease, and the tenure word it was read with.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    pub identity: Identity,
    pub tenure: u64,
}

/// The identity the lease holds now, if its fence is open; else why not.
pub fn held(hot: &Hot) -> Result<Held, Refusal> {
    let w = &hot.lease;
    let tenure = w.tenure.load(Ordering::SeqCst);
    let deadline = w.deadline_ns.load(Ordering::SeqCst);
    if tenure & HELD != 0 && clock::fence_ns() < deadline {
        let identity = Identity::from_ordinal(tenure & ORDINAL).expect("10 bits");
        return Ok(Held { identity, tenure });
    }
    Err(not_held(hot))
}

/// The refusal while no identity may be minted as.
fn not_held(hot: &Hot) -> Refusal {
    let state = State::from_word(hot.lease.state.load(Ordering::SeqCst));
    let why = match state {
        State::Held => "the lease's fence is closed (no renewal in time)".to_owned(),
        other => other.words().to_owned(),
    };
    let note = shared::lease_note()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    Refusal::Setup(format!(
        "snowmint.nextval(): no leased identity to mint as: {why}{note}; coordinator {}",
        shown_coordinator()
    ))
}

/// Makes sure the coordinator's mark of `held`'s identity covers `ms`
/// (waiting, bounded and cancellable, for the lease worker to write it),
/// and asks for it ahead of need.
pub fn cover(hot: &Hot, held: Held, ms: u64, target: u64) -> Result<(), Refusal> {
    let w = &hot.lease;
    let mark = w.mark_ms.load(Ordering::SeqCst);
    if ms + clock::WINDOW_MS / 2 > mark {
        ask(hot, target);
    }
    if ms <= mark {
        return Ok(());
    }
    let covered = crate::wait::wait_until(|| {
        ask(hot, target);
        w.mark_ms.load(Ordering::SeqCst) >= ms || w.tenure.load(Ordering::SeqCst) != held.tenure
    });
    if covered && w.mark_ms.load(Ordering::SeqCst) >= ms {
        return Ok(());
    }
    if w.tenure.load(Ordering::SeqCst) != held.tenure {
        return Err(not_held(hot));
    }
    Err(Refusal::Store(format!(
        "snowmint.nextval(): the coordinator's mark of {} covering {ms} (Unix ms) was not written \
         within {} ms (coordinator {}); nothing was returned",
        held.identity,
        crate::wait::MAX_MARK_WAIT.as_millis(),
        shown_coordinator()
    )))
}

/// Asks the lease worker for a coordinator mark of at least `until_ms`.
fn ask(hot: &Hot, until_ms: u64) {
    let w = &hot.lease;
    if w.wanted_ms.fetch_max(until_ms, Ordering::SeqCst) >= until_ms {
        return;
    }
    let latch = w.latch.load(Ordering::Acquire);
    if latch != 0 {
        // SAFETY: the worker's latch in shared memory (its PGPROC's).
        unsafe { pg_sys::SetLatch(latch as *mut pg_sys::Latch) };
    }
}

/// Just before an ID is returned: the tenure it was claimed under is still
/// the one published, and its fence is open (invariant 2).
pub fn recheck(hot: &Hot, held: Held) -> Result<(), Refusal> {
    let w = &hot.lease;
    let deadline = w.deadline_ns.load(Ordering::SeqCst);
    let tenure = w.tenure.load(Ordering::SeqCst);
    if tenure == held.tenure && clock::fence_ns() < deadline {
        return Ok(());
    }
    Err(not_held(hot))
}

/// `snowmint.identity()` under a lease.
pub fn describe(hot: &Hot) -> String {
    let w = &hot.lease;
    let tenure = w.tenure.load(Ordering::SeqCst);
    let deadline = w.deadline_ns.load(Ordering::SeqCst);
    let state = State::from_word(w.state.load(Ordering::SeqCst));
    let now = clock::fence_ns();
    let from = shown_coordinator();
    let note = shared::lease_note()
        .map(|n| format!(": {n}"))
        .unwrap_or_default();
    if tenure & HELD != 0 && now < deadline {
        let identity = Identity::from_ordinal(tenure & ORDINAL).expect("10 bits");
        return format!(
            "{identity} (leased from {from}, fence open for {:.1} s)",
            (deadline - now) as f64 / 1e9
        );
    }
    if tenure & HELD != 0 && matches!(state, State::Held | State::Fenced) {
        let identity = Identity::from_ordinal(tenure & ORDINAL).expect("10 bits");
        return format!(
            "none: {identity} fenced (leased from {from}, {}{note})",
            state.words()
        );
    }
    format!("none (leasing from {from}: {}{note})", state.words())
}

// ---------------------------------------------------------------------
// The worker

/// What the generator factory hands over for the tenure it builds.
#[derive(Clone)]
struct Stashed {
    /// Counts factory calls.
    build: u64,
    identity: Identity,
    store: Arc<LeaseStore>,
    /// The coordinator mark read when the tenure began (with the session's
    /// carried floor): the new tenure's IDs start above it.
    mark: u64,
}

type Stash = Arc<Mutex<Option<Stashed>>>;

fn stashed(stash: &Stash) -> Option<Stashed> {
    stash.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// The worker's body.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn snowmint_lease_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let hot = shared::words();
    let w = &hot.lease;
    // A worker restarted after a crash: whatever the last one published is
    // no tenure of this one's.
    close(hot);
    shared::set_lease_note(None);
    w.state.store(State::Connecting as u64, Ordering::SeqCst);
    // SAFETY: this process's PGPROC, in shared memory while the server runs.
    let latch = unsafe { &raw mut (*pg_sys::MyProc).procLatch } as usize;
    w.latch.store(latch, Ordering::Release);

    let Some(url) = coordinator() else {
        refuse(hot, "snowmint.coordinator is not set");
        idle();
        return;
    };
    let ttl = Duration::from_secs(LEASE_TTL.get().max(0) as u64);
    let stash: Stash = Arc::new(Mutex::new(None));
    let builds = Arc::new(AtomicU64::new(0));
    let factory = {
        let stash = Arc::clone(&stash);
        Arc::new(move |identity: Identity, store: LeaseStore| {
            let store = Arc::new(store);
            let mark = store
                .load()
                .map_err(snowmint::BuildError::Store)?
                .unwrap_or(0);
            let generator = Generator::builder_for(identity)
                .store(Arc::clone(&store))
                .build()?;
            let build = builds.fetch_add(1, Ordering::SeqCst) + 1;
            *stash.lock().unwrap_or_else(PoisonError::into_inner) = Some(Stashed {
                build,
                identity,
                store,
                mark,
            });
            Ok(generator)
        })
    };
    let mut config = DbConfig::postgres(url)
        .lease_ttl(ttl)
        .holder(holder_name())
        .generator(factory);
    if let Ok(dc) = u8::try_from(LEASE_DATACENTER.get()) {
        config = config.datacenter(dc);
    }
    let leased = match with_signals_blocked(|| LeasedGenerator::spawn(config)) {
        Ok(leased) => leased,
        Err(e) => {
            refuse(hot, &redact(&e.to_string()));
            idle();
            return;
        }
    };
    pgrx::log!(
        "snowmint lease: leasing an identity from {} (lease TTL {} s{})",
        shown_coordinator(),
        ttl.as_secs(),
        u8::try_from(LEASE_DATACENTER.get())
            .map(|dc| format!(", datacenter {dc} only"))
            .unwrap_or_default()
    );
    let mut published: Option<Stashed> = None;
    let mut note = String::new();
    loop {
        publish(hot, &leased, &stash, &mut published, &mut note);
        write_marks(hot, published.as_ref());
        if !BackgroundWorker::wait_latch(Some(PUBLISH_EVERY)) {
            break;
        }
    }
    // Stop minting first, then release the identity (its next holder may
    // mint at once).
    close(hot);
    w.state.store(State::Stopped as u64, Ordering::SeqCst);
    w.latch.store(0, Ordering::Release);
    with_signals_blocked(|| {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            rt.block_on(async {
                let _ = tokio::time::timeout(STOP_WITHIN, leased.shutdown()).await;
            });
        }
        drop(leased);
    });
}

/// `<hostname> snowmint-pg pid <pid>`, what the coordinator records.
fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    format!("{host} snowmint-pg pid {}", std::process::id())
}

/// Closes the fence and ends the tenure (invariant 2's first two steps).
fn close(hot: &Hot) {
    let w = &hot.lease;
    w.deadline_ns.store(0, Ordering::SeqCst);
    let old = w.tenure.load(Ordering::SeqCst);
    w.tenure.store(
        ((old >> GENERATION_SHIFT) + 1) << GENERATION_SHIFT,
        Ordering::SeqCst,
    );
}

fn refuse(hot: &Hot, why: &str) {
    pgrx::warning!("snowmint lease: {why}");
    shared::set_lease_note(Some(why));
    hot.lease
        .state
        .store(State::Refused as u64, Ordering::SeqCst);
}

/// Waits for SIGTERM (the worker is not restarted for a refusal it would
/// repeat).
fn idle() {
    while BackgroundWorker::wait_latch(Some(Duration::from_secs(10))) {}
}

/// Publishes the session's tenure, fence and state (invariants 1, 2).
fn publish(
    hot: &Hot,
    leased: &LeasedGenerator,
    stash: &Stash,
    published: &mut Option<Stashed>,
    note: &mut String,
) {
    let w = &hot.lease;
    let before = stashed(stash);
    let now = clock::fence_ns();
    let view = leased.holder().fence_left();
    let after = stashed(stash);
    let metrics = leased.metrics();
    let same_build = before.as_ref().map(|s| s.build) == after.as_ref().map(|s| s.build);
    match (view, before) {
        (Some((identity, left)), Some(tenure)) if same_build && tenure.identity == identity => {
            if published.as_ref().map(|p| p.build) != Some(tenure.build) {
                begin(hot, &tenure);
                pgrx::log!(
                    "snowmint lease: minting as {identity}, above the coordinator's mark {} \
                     (Unix ms)",
                    tenure.mark
                );
                *published = Some(tenure);
            }
            let deadline = match left {
                None => u64::MAX,
                Some(left) => {
                    let left = u64::try_from(left.as_nanos()).unwrap_or(u64::MAX);
                    now.saturating_add(left).saturating_sub(TICK_NS)
                }
            };
            w.deadline_ns.store(deadline, Ordering::SeqCst);
        }
        _ => w.deadline_ns.store(0, Ordering::SeqCst),
    }
    w.state
        .store(State::of(metrics.state) as u64, Ordering::SeqCst);
    let why = metrics
        .refusal
        .as_deref()
        .or(metrics.last_error.as_deref())
        .filter(|_| metrics.state != LeaseState::Held)
        .map(redact)
        .unwrap_or_default();
    if why != *note {
        if !why.is_empty() {
            pgrx::log!(
                "snowmint lease: {}: {why}",
                State::of(metrics.state).words()
            );
        }
        shared::set_lease_note((!why.is_empty()).then_some(why.as_str()));
        *note = why;
    }
}

/// Publishes a new tenure in invariant 2's order.
fn begin(hot: &Hot, tenure: &Stashed) {
    let w = &hot.lease;
    close(hot);
    w.mark_ms.store(tenure.mark, Ordering::SeqCst);
    w.wanted_ms.store(tenure.mark, Ordering::SeqCst);
    shared::raise_floor(hot, tenure.mark);
    let generation = w.tenure.load(Ordering::SeqCst) >> GENERATION_SHIFT;
    w.tenure.store(
        (generation << GENERATION_SHIFT) | HELD | u64::from(tenure.identity.ordinal()),
        Ordering::SeqCst,
    );
}

/// Writes the coordinator mark the backends asked for (invariant 3).
fn write_marks(hot: &Hot, tenure: Option<&Stashed>) {
    let w = &hot.lease;
    let Some(tenure) = tenure else { return };
    let want = w.wanted_ms.load(Ordering::SeqCst);
    if want <= w.mark_ms.load(Ordering::SeqCst) || w.deadline_ns.load(Ordering::SeqCst) == 0 {
        return;
    }
    let word = w.tenure.load(Ordering::SeqCst);
    // The store's thread blocks, not PostgreSQL's: bounded by the request
    // timeout.
    match tenure.store.store(want) {
        Ok(()) => {
            if w.tenure.load(Ordering::SeqCst) == word {
                w.mark_ms.fetch_max(want, Ordering::SeqCst);
            }
        }
        Err(e) => {
            if w.mark_failures
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(100)
            {
                pgrx::warning!(
                    "snowmint lease: cannot write the coordinator's mark of {}: {}",
                    tenure.identity,
                    redact(&e.to_string())
                );
            }
        }
    }
}

/// Runs `f` with every signal blocked in this thread, so threads it starts
/// (which inherit the mask) never run PostgreSQL's signal handlers.
fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: plain signal-mask calls on this thread, restored below.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}
