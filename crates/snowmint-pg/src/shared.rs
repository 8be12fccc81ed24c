//! The shared memory every backend mints through.
//!
//! # Invariants
//!
//! 1. `states[i]` is the last ID issued in the layout geometry of slot `i`
//!    (its time unit, node bits and sequence in the layout's places), or the
//!    largest ID of the floor's unit at a start. It only increases, by
//!    compare-and-swap (`mint.rs`); a backend that wins the swap from `old`
//!    owns the ID it swapped in, and no other can.
//! 2. `reserved_until` is the durable cluster mark (Unix ms): every ID returned
//!    so far has its time at or below it, because no ID is returned before a
//!    mark at least its time is on disk. Only the mark writer (`worker.rs`)
//!    writes the file and raises this word; backends ask through `wanted`.
//! 3. At a start (also after a crash), no backend mints until the mark writer
//!    has decided the floor (`started`): the file's mark if the file was
//!    written on this server's history (system identifier and timeline), else
//!    also above `now + window + borrow` (`worker.rs`). A slot's state starts
//!    with the floor's unit used up, and the first mint in each database
//!    raises the floor to that database's WAL-logged mark (`dbmark.rs`).
//! 4. A slot is keyed by the geometry that decides its IDs' order ([`Key`]):
//!    two names or specs of the same geometry share one state, whatever their
//!    node fields, so they cannot issue the same ID twice.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use pgrx::prelude::*;
use pgrx::{PGRXSharedMemory, PgAtomic, PgLwLock, pg_shmem_init};
use snowmint::Layout;

use crate::clock::Reach;
use crate::error::Refusal;

/// How many layout geometries one server mints in (the presets' and those
/// listed in `snowmint.layouts`).
pub const MAX_LAYOUTS: usize = 32;

/// The words every `nextval` reads.
#[derive(Default)]
pub struct Hot {
    /// Invariant 1, one per slot.
    pub states: [AtomicU64; MAX_LAYOUTS],
    /// Invariant 2: the durable cluster mark.
    pub reserved_until: AtomicU64,
    /// The highest cluster mark a backend asked the writer for.
    pub wanted: AtomicU64,
    /// The floor (Unix ms) no ID of this start is at or below.
    pub floor_ms: AtomicU64,
    /// How far a forced lead lets IDs run ahead (`clock.rs`).
    pub reach: Reach,
    /// The mark writer decided the floor (invariant 3).
    pub started: AtomicBool,
    /// The mark writer's latch (an address in shared memory), 0 while it
    /// does not run.
    pub writer_latch: AtomicUsize,
    /// Counts mark writes that failed, for the refusal's words.
    pub write_failures: AtomicU64,
    /// A leased identity's words (`lease.rs`): the tenure, its fence and
    /// its coordinator mark.
    pub lease: LeaseWords,
}

/// The words of a leased identity (`lease.rs`, whose invariants they keep).
#[derive(Default)]
pub struct LeaseWords {
    /// Invariant 2: `generation << 11 | HELD | ordinal`; 0 before any.
    pub tenure: AtomicU64,
    /// Invariant 1: the fence's deadline on [`clock::fence_ns`]; 0: closed.
    pub deadline_ns: AtomicU64,
    /// The session's state ([`State`]).
    pub state: AtomicU64,
    /// Invariant 3: the tenure's coordinator mark known written (Unix ms).
    pub mark_ms: AtomicU64,
    /// The highest coordinator mark a backend asked for.
    pub wanted_ms: AtomicU64,
    /// The lease worker's latch, 0 while it does not run.
    pub latch: AtomicUsize,
    /// Coordinator mark writes that failed.
    pub mark_failures: AtomicU64,
}

// SAFETY: atomics only; the one address (the writer's latch) is in shared
// memory, mapped at the same address in every process.
unsafe impl PGRXSharedMemory for Hot {}

/// The bits of a layout that decide its IDs' order (invariant 4): the time
/// and sequence fields. The node fields (datacenter, worker) are part of the
/// state word itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Key {
    epoch_ms: u64,
    unit_ms: u64,
    /// Shift and width of the time and sequence fields.
    fields: [(u32, u32); 2],
}

impl Key {
    pub fn of(layout: &Layout) -> Key {
        Key {
            epoch_ms: layout.epoch_ms(),
            unit_ms: layout.unit_ms(),
            fields: [
                (layout.timestamp_shift(), layout.timestamp_bits()),
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

/// Why the mark writer could not start minting (shown by every refusal
/// until it can), as UTF-8 bytes; empty when there is no such reason.
#[derive(Clone, Copy)]
pub struct StartError {
    len: usize,
    text: [u8; 480],
}

impl Default for StartError {
    fn default() -> Self {
        StartError {
            len: 0,
            text: [0; 480],
        }
    }
}

// SAFETY: plain values.
unsafe impl PGRXSharedMemory for StartError {}

// SAFETY (all three): names no other code in the server uses.
static HOT: PgAtomic<Hot> = unsafe { PgAtomic::new(c"snowmint.hot") };
static SLOTS: PgLwLock<Slots> = unsafe { PgLwLock::new(c"snowmint.slots") };
static START_ERROR: PgLwLock<StartError> = unsafe { PgLwLock::new(c"snowmint.start_error") };
// SAFETY: as above.
static LEASE_NOTE: PgLwLock<StartError> = unsafe { PgLwLock::new(c"snowmint.lease_note") };

/// Set in the postmaster when it preloads the library; inherited by every
/// backend it forks.
static PRELOADED: AtomicBool = AtomicBool::new(false);

/// Asks for the shared memory (postmaster, preloading).
pub(crate) fn init() {
    PRELOADED.store(true, Ordering::Relaxed);
    pg_shmem_init!(HOT);
    pg_shmem_init!(SLOTS);
    pg_shmem_init!(START_ERROR);
    pg_shmem_init!(LEASE_NOTE);
}

/// The shared words, preloaded or not (the mark writer's access).
pub(crate) fn words() -> &'static Hot {
    HOT.get()
}

/// Records why minting cannot start (`None`: it can).
pub(crate) fn set_start_error(why: Option<&str>) {
    set_text(&START_ERROR, why);
}

/// Records what the lease session last said (`None`: nothing to say); the
/// lease worker only, already redacted.
pub(crate) fn set_lease_note(why: Option<&str>) {
    set_text(&LEASE_NOTE, why);
}

/// What the lease session last said, if anything.
pub(crate) fn lease_note() -> Option<String> {
    if !PRELOADED.load(Ordering::Relaxed) {
        return None;
    }
    let slot = LEASE_NOTE.share();
    (slot.len > 0).then(|| String::from_utf8_lossy(&slot.text[..slot.len]).into_owned())
}

fn set_text(lock: &PgLwLock<StartError>, why: Option<&str>) {
    let mut slot = lock.exclusive();
    let bytes = why.unwrap_or("").as_bytes();
    // Cut at a character boundary that fits.
    let mut len = bytes.len().min(slot.text.len());
    while len > 0 && std::str::from_utf8(&bytes[..len]).is_err() {
        len -= 1;
    }
    slot.text[..len].copy_from_slice(&bytes[..len]);
    slot.len = len;
}

fn start_error() -> Option<String> {
    let slot = START_ERROR.share();
    (slot.len > 0).then(|| String::from_utf8_lossy(&slot.text[..slot.len]).into_owned())
}

/// The shared words, once the server started with the library preloaded
/// and the mark writer decided the floor; waits for that (cancellably) up
/// to `crate::wait::MAX_MARK_WAIT`.
pub fn hot() -> Result<&'static Hot, Refusal> {
    if !PRELOADED.load(Ordering::Relaxed) {
        return Err(Refusal::Setup(
            "snowmint.nextval() needs the extension in shared_preload_libraries \
             (shared_preload_libraries = 'snowmint' in postgresql.conf, then restart the server)"
                .to_owned(),
        ));
    }
    let hot = HOT.get();
    if hot.started.load(Ordering::Acquire) {
        return Ok(hot);
    }
    let waited = crate::wait::wait_until(|| hot.started.load(Ordering::Acquire));
    if waited {
        return Ok(hot);
    }
    Err(Refusal::Setup(start_error().unwrap_or_else(|| {
        format!(
            "snowmint.nextval(): the mark writer (background worker \"snowmint mark writer\") \
             has not decided where IDs start within {} ms; it starts once recovery has ended",
            crate::wait::MAX_MARK_WAIT.as_millis()
        )
    })))
}

/// The slot of `layout`'s geometry, registering it on first use with the
/// start state of invariant 3. `allowed` says whether the layout may take a
/// new slot (a preset, or listed in `snowmint.layouts`), and is asked only
/// when it has none.
pub fn slot(
    hot: &Hot,
    layout: &Layout,
    allowed: impl FnOnce() -> Result<(), Refusal>,
) -> Result<usize, Refusal> {
    let key = Key::of(layout);
    if let Some(i) = find(&SLOTS.share(), key) {
        return Ok(i);
    }
    allowed()?;
    let mut slots = SLOTS.exclusive();
    if let Some(i) = find(&slots, key) {
        return Ok(i);
    }
    if slots.used == MAX_LAYOUTS {
        return Err(Refusal::Limit(format!(
            "snowmint mints in at most {MAX_LAYOUTS} layouts per server, and all are in use \
             (the presets and those listed in snowmint.layouts)"
        )));
    }
    let i = slots.used;
    hot.states[i].store(
        used_up(layout, hot.floor_ms.load(Ordering::SeqCst)),
        Ordering::SeqCst,
    );
    slots.keys[i] = key;
    slots.used += 1;
    Ok(i)
}

fn find(slots: &Slots, key: Key) -> Option<usize> {
    slots.keys[..slots.used].iter().position(|k| *k == key)
}

/// The largest ID of the unit `ms` falls in (or of the layout's first unit),
/// in `layout`'s places: every node and sequence of that unit counts as used.
pub fn used_up(layout: &Layout, ms: u64) -> u64 {
    Key::of(layout).used_up(ms)
}

/// The largest time unit of `layout`.
pub fn max_unit(layout: &Layout) -> u64 {
    Key::of(layout).max_unit()
}

/// Every bit of `layout` below its time field that is not its sequence (the
/// node fields; the time field is always the highest).
pub fn node_mask(layout: &Layout) -> u64 {
    Key::of(layout).node_mask()
}

impl Key {
    fn max_unit(&self) -> u64 {
        (1u64 << self.fields[0].1) - 1
    }

    fn sequence_mask(&self) -> u64 {
        let (shift, bits) = self.fields[1];
        ((1u64 << bits) - 1) << shift
    }

    fn node_mask(&self) -> u64 {
        ((1u64 << self.fields[0].0) - 1) & !self.sequence_mask()
    }

    /// The largest ID of the unit `ms` falls in (or of the first unit).
    fn used_up(&self, ms: u64) -> u64 {
        let unit = (ms.saturating_sub(self.epoch_ms) / self.unit_ms).min(self.max_unit());
        (unit << self.fields[0].0) | self.node_mask() | self.sequence_mask()
    }
}

/// Raises the floor to `ms` (Unix): every slot's state to at least the
/// largest ID of `ms`'s unit, and the reach to `ms` (a lead forced by a
/// mark ahead of the clock shrinks as the wall clock advances).
pub fn raise_floor(hot: &Hot, ms: u64) {
    if hot.floor_ms.fetch_max(ms, Ordering::SeqCst) >= ms {
        return;
    }
    hot.reach.raise_to(ms);
    let slots = SLOTS.share();
    for (i, key) in slots.keys[..slots.used].iter().enumerate() {
        hot.states[i].fetch_max(key.used_up(ms), Ordering::SeqCst);
    }
}
