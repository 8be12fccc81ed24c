//! The shared memory every backend mints through, and its start.
//!
//! # Invariants
//!
//! 1. `states[i]` is the last issued position of the layout in slot `i`
//!    (time unit since the layout's epoch, sequence), packed by the core's
//!    [`PackedState`] with the layout's sequence bits. It only increases, by
//!    compare-and-swap (`mint.rs`); a backend that wins the swap from `old`
//!    owns the positions after `old` up to its new value, and no other can.
//! 2. `reserved_until` is a durable mark (Unix ms): every ID returned so far
//!    has its time at or below it, because no ID is returned before a mark
//!    at least its time is on disk (`mint.rs`). It is only raised.
//! 3. At start (the postmaster, before any backend exists, also after a
//!    crash of a backend), `reserved_until` is the mark read from the data
//!    directory; the clock is anchored at no earlier than that mark, and a
//!    slot's state starts with the unit of `max(mark, now)` used up
//!    (`register`). So nothing at or below the last mark is issued again,
//!    whatever the wall clock says after the restart.
//! 4. A slot is keyed by the bit structure of its layout ([`Key`]), not its
//!    name: two names or specs of the same bits share one state, so they
//!    cannot issue the same ID twice.

use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pgrx::prelude::*;
use pgrx::{PGRXSharedMemory, PgAtomic, PgLwLock, pg_shmem_init};
use snowmint::{FileStore, Layout, PackedState, ReservationStore, StoreError};

use crate::clock::Clock;
use crate::error::Refusal;

/// How many layouts (by their bits) one server mints in.
pub const MAX_LAYOUTS: usize = 32;

/// The name of the mark file in the data directory.
pub const MARK_FILE: &str = "snowmint.reservation";

/// The words every `nextval` reads.
#[derive(Default)]
pub struct Hot {
    /// Invariant 1, one per slot.
    pub states: [AtomicU64; MAX_LAYOUTS],
    /// Invariant 2.
    pub reserved_until: AtomicU64,
    /// The server's clock, anchored at start (`clock.rs`).
    pub clock: Clock,
    /// The mark loaded at start (Unix ms; 0 without one).
    pub floor_ms: AtomicU64,
    /// The start hook ran and the mark was loaded.
    pub started: AtomicBool,
    /// A backend is renewing the mark ahead of need (others skip it).
    pub renewing: AtomicBool,
}

// SAFETY: atomics only, no pointers: valid in every process that maps it.
unsafe impl PGRXSharedMemory for Hot {}

/// The bits of a layout that decide its IDs (invariant 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Key {
    epoch_ms: u64,
    unit_ms: u64,
    /// Shift and width of the time, datacenter, worker and sequence fields.
    fields: [(u32, u32); 4],
}

impl Key {
    pub fn of(layout: &Layout) -> Key {
        Key {
            epoch_ms: layout.epoch_ms(),
            unit_ms: layout.unit_ms(),
            fields: [
                (layout.timestamp_shift(), layout.timestamp_bits()),
                (layout.datacenter_shift(), layout.datacenter_bits()),
                (layout.worker_shift(), layout.worker_bits()),
                (layout.sequence_shift(), layout.sequence_bits()),
            ],
        }
    }
}

/// The layouts that have a slot, in slot order.
#[derive(Clone, Copy, Default)]
pub struct Slots {
    used: usize,
    keys: [Key; MAX_LAYOUTS],
}

// SAFETY: plain values, no pointers.
unsafe impl PGRXSharedMemory for Slots {}

/// The durable mark as last written (Unix ms); its lock serialises writes.
#[derive(Clone, Copy, Default)]
pub struct Written(pub u64);

// SAFETY: a plain value.
unsafe impl PGRXSharedMemory for Written {}

// SAFETY (all three): names no other code in the server uses.
static HOT: PgAtomic<Hot> = unsafe { PgAtomic::new(c"snowmint.hot") };
static SLOTS: PgLwLock<Slots> = unsafe { PgLwLock::new(c"snowmint.slots") };
static WRITTEN: PgLwLock<Written> = unsafe { PgLwLock::new(c"snowmint.mark") };

/// Set in the postmaster when it preloads the library; inherited by every
/// backend it forks.
static PRELOADED: AtomicBool = AtomicBool::new(false);

/// The mark's store, opened in the postmaster at the first start and
/// inherited by every backend (which shares its lock on the file).
static STORE: Mutex<Option<FileStore>> = Mutex::new(None);

/// Why the last start could not load the mark (inherited like `STORE`).
static START_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Asks for the shared memory and hooks the start (postmaster, preloading).
pub(crate) fn init() {
    PRELOADED.store(true, Ordering::Relaxed);
    pg_shmem_init!(HOT);
    pg_shmem_init!(SLOTS);
    pg_shmem_init!(WRITTEN);
    // SAFETY: hooks are set from _PG_init in the postmaster, single-threaded,
    // chaining the previous one.
    unsafe {
        PREV_STARTUP = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(on_startup);
    }
}

static mut PREV_STARTUP: Option<unsafe extern "C-unwind" fn()> = None;

/// Runs in the postmaster once the shared memory exists (again after a
/// crash restart): loads the mark and anchors the clock (invariant 3).
#[pg_guard]
unsafe extern "C-unwind" fn on_startup() {
    // SAFETY: the hook chain PostgreSQL calls from the postmaster.
    unsafe {
        if let Some(prev) = PREV_STARTUP {
            prev();
        }
    }
    let result = start();
    *START_ERROR.lock().unwrap_or_else(|e| e.into_inner()) = result.err();
}

fn start() -> Result<(), String> {
    let mut store = STORE.lock().unwrap_or_else(|e| e.into_inner());
    if store.is_none() {
        *store = Some(FileStore::open_file(mark_path()).map_err(|e| mark_error(&e))?);
    }
    let mark = store
        .as_ref()
        .map(|s| s.load())
        .transpose()
        .map_err(|e| mark_error(&e))?;
    let mark = mark.flatten().unwrap_or(0);
    let hot = HOT.get();
    hot.reserved_until.store(mark, Ordering::SeqCst);
    hot.floor_ms.store(mark, Ordering::SeqCst);
    hot.clock.anchor(mark);
    *WRITTEN.exclusive() = Written(mark);
    hot.started.store(true, Ordering::SeqCst);
    Ok(())
}

fn mark_error(err: &StoreError) -> String {
    format!("snowmint cannot use its mark in the data directory: {err}")
}

/// `<data directory>/snowmint.reservation`.
fn mark_path() -> PathBuf {
    // SAFETY: PostgreSQL sets DataDir before it loads preloaded libraries.
    let dir = unsafe { CStr::from_ptr(pg_sys::DataDir) };
    PathBuf::from(dir.to_string_lossy().into_owned()).join(MARK_FILE)
}

/// The shared words, once the server started with the library preloaded.
pub fn hot() -> Result<&'static Hot, Refusal> {
    if !PRELOADED.load(Ordering::Relaxed) {
        return Err(Refusal::Setup(
            "snowmint.nextval() needs the extension in shared_preload_libraries \
             (shared_preload_libraries = 'snowmint' in postgresql.conf, then restart the server)"
                .to_owned(),
        ));
    }
    let hot = HOT.get();
    if !hot.started.load(Ordering::Acquire) {
        let why = START_ERROR
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        return Err(Refusal::Setup(why.unwrap_or_else(|| {
            "snowmint's shared memory is not set up".to_owned()
        })));
    }
    Ok(hot)
}

/// The slot of `layout`'s bits, registering it on first use with the start
/// state of invariant 3.
pub fn slot(hot: &Hot, layout: &Layout) -> Result<usize, Refusal> {
    let key = Key::of(layout);
    if let Some(i) = find(&SLOTS.share(), key) {
        return Ok(i);
    }
    let mut slots = SLOTS.exclusive();
    if let Some(i) = find(&slots, key) {
        return Ok(i);
    }
    if slots.used == MAX_LAYOUTS {
        return Err(Refusal::Limit(format!(
            "snowmint mints in at most {MAX_LAYOUTS} layouts per server, and all are in use"
        )));
    }
    let now = hot.clock.now_ms()?;
    let start_ms = now.max(hot.floor_ms.load(Ordering::SeqCst));
    let unit = start_ms.saturating_sub(layout.epoch_ms()) / layout.unit_ms();
    let i = slots.used;
    let start = PackedState::end_of(unit, layout.sequence_bits());
    hot.states[i].store(start.word(), Ordering::SeqCst);
    slots.keys[i] = key;
    slots.used += 1;
    Ok(i)
}

fn find(slots: &Slots, key: Key) -> Option<usize> {
    slots.keys[..slots.used].iter().position(|k| *k == key)
}

/// Durably raises the mark to at least `need_ms` (to `need_ms + window`),
/// waiting for a write in progress; returns once the mark covers `need_ms`.
pub fn reserve(hot: &Hot, need_ms: u64, window_ms: u64) -> Result<(), Refusal> {
    let mut written = WRITTEN.exclusive();
    if written.0 >= need_ms {
        return Ok(());
    }
    write(hot, &mut written, need_ms + window_ms)
}

/// Raises the mark to `until_ms` ahead of need, unless another backend is
/// already doing so.
pub fn renew(hot: &Hot, until_ms: u64) -> Result<(), Refusal> {
    if hot
        .renewing
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return Ok(());
    }
    struct Done<'a>(&'a AtomicBool);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    let _done = Done(&hot.renewing);
    let mut written = WRITTEN.exclusive();
    if written.0 >= until_ms {
        return Ok(());
    }
    write(hot, &mut written, until_ms)
}

fn write(hot: &Hot, written: &mut Written, until_ms: u64) -> Result<(), Refusal> {
    let store = STORE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(store) = store.as_ref() else {
        return Err(Refusal::Setup(
            "snowmint's mark store is not open".to_owned(),
        ));
    };
    store
        .store(until_ms)
        .map_err(|e| Refusal::Store(format!("snowmint cannot write its mark: {e}")))?;
    written.0 = until_ms;
    hot.reserved_until.fetch_max(until_ms, Ordering::SeqCst);
    Ok(())
}
