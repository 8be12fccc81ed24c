//! The mark writer: the background worker that decides where IDs start and
//! is the only process that writes the cluster mark.
//!
//! - **Start.** Once recovery has ended (also after a crash restart and
//!   after `pg_promote()`), it loads the mark from
//!   `$PGDATA/snowmint.reservation` and the history stamp from
//!   `$PGDATA/snowmint.history` (the system identifier and timeline of the
//!   server that wrote the mark). Written on this server's history (a clean
//!   or crash restart): IDs start above the mark. Written on another (a
//!   promoted standby, a point-in-time recovery or a restored base backup,
//!   each on a new timeline; a data directory copied into another cluster),
//!   or a stamp without a mark: the mark is not all there is, since IDs the
//!   old server issued after the copy are not in it; IDs start above the
//!   mark and above `now + window + borrow`, which is at or above every ID a
//!   server whose clock agrees with ours can have issued by our rules
//!   (`clock.rs`). The first mint in each database then raises the floor to
//!   that database's WAL-logged mark (`dbmark.rs`), which covers every row
//!   the copy holds. No file at all: a new cluster (also one a dump was
//!   restored into: the databases' marks cover what it holds).
//! - **Marks.** Backends ask for a mark (`Hot::wanted`) and set its latch;
//!   it writes the file (durably: the core's `FileStore`, write, `fsync`,
//!   rename, directory `fsync`) and then publishes the mark. No client
//!   backend ever blocks in a file operation, and no lock of ours is held
//!   across one: when the disk stalls, only this worker waits in the kernel,
//!   and the backends that need a new mark give up after
//!   `mint::MAX_MARK_WAIT` with a clear error (cancellable all along).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pgrx::bgworkers::{
    BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags,
};
use pgrx::pg_sys;
use pgrx::prelude::*;
use snowmint::{DEFAULT_MAX_BORROW_MS, DEFAULT_RESERVE_WINDOW_MS, FileStore, ReservationStore};

use crate::clock;
use crate::shared::{self, Hot};

/// The name of the mark file in the data directory.
pub const MARK_FILE: &str = "snowmint.reservation";

/// The name of the history stamp in the data directory.
pub const HISTORY_FILE: &str = "snowmint.history";

/// Registers the worker (postmaster, preloading).
pub(crate) fn register() {
    BackgroundWorkerBuilder::new("snowmint mark writer")
        .set_type("snowmint mark writer")
        .set_library("snowmint")
        .set_function("snowmint_mark_writer_main")
        .enable_shmem_access(None)
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

/// The worker's body.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn snowmint_mark_writer_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let hot = shared::words();
    // SAFETY: this process's PGPROC, in shared memory for as long as the
    // server runs.
    let latch = unsafe { &raw mut (*pg_sys::MyProc).procLatch } as usize;
    hot.writer_latch.store(latch, Ordering::Release);
    let store = loop {
        match start(hot) {
            Ok(store) => break store,
            Err(why) => {
                shared::set_start_error(Some(&why));
                pgrx::warning!("{why}");
                if !BackgroundWorker::wait_latch(Some(Duration::from_secs(5))) {
                    return;
                }
            }
        }
    };
    let mut failing = false;
    loop {
        write_wanted(hot, &store, &mut failing);
        if !BackgroundWorker::wait_latch(Some(Duration::from_secs(1))) {
            break;
        }
    }
    hot.writer_latch.store(0, Ordering::Release);
}

/// Writes the mark the backends asked for, if it is above the one written.
fn write_wanted(hot: &Hot, store: &FileStore, failing: &mut bool) {
    loop {
        let want = hot.wanted.load(Ordering::SeqCst);
        if want <= hot.reserved_until.load(Ordering::SeqCst) {
            return;
        }
        match store.store(want) {
            Ok(()) => {
                hot.reserved_until.fetch_max(want, Ordering::SeqCst);
                if *failing {
                    pgrx::log!("snowmint: the mark is written again ({want} Unix ms)");
                    *failing = false;
                }
            }
            Err(e) => {
                hot.write_failures.fetch_add(1, Ordering::Relaxed);
                if !*failing {
                    pgrx::warning!(
                        "snowmint cannot write its mark {}: {e}",
                        data_path(MARK_FILE).display()
                    );
                    *failing = true;
                }
                return;
            }
        }
    }
}

/// Decides the floor (module docs) and opens the store.
fn start(hot: &Hot) -> Result<FileStore, String> {
    let path = data_path(MARK_FILE);
    let store = FileStore::open_file(&path).map_err(|e| mark_error(&e.to_string()))?;
    let mark = store.load().map_err(|e| mark_error(&e.to_string()))?;
    // SAFETY: plain reads of the control file's and the WAL's state, valid
    // once recovery has ended (this worker starts then).
    let here = unsafe {
        format!(
            "{}/{}",
            pg_sys::GetSystemIdentifier(),
            pg_sys::GetWALInsertionTimeLine()
        )
    };
    let stamp_path = data_path(HISTORY_FILE);
    let stamp = match std::fs::read_to_string(&stamp_path) {
        Ok(s) => Some(s.trim().to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(format!(
                "snowmint cannot read {}: {e}",
                stamp_path.display()
            ));
        }
    };
    let wall = clock::wall_ms().map_err(|e| e.to_string())?;
    let bound = wall + DEFAULT_RESERVE_WINDOW_MS + DEFAULT_MAX_BORROW_MS;
    let floor = match (mark, &stamp) {
        (None, None) => 0,
        (Some(mark), Some(stamp)) if *stamp == here => mark,
        (mark, _) => {
            let floor = mark.unwrap_or(0).max(bound);
            pgrx::log!(
                "snowmint: the mark ({}) was written on history {} and this server is {here} \
                 (promoted, recovered to a point in time, restored or copied): IDs start above \
                 {floor} (Unix ms), the mark and the clock plus {} ms, and above each \
                 database's own mark",
                mark.map_or_else(|| "none".to_owned(), |m| format!("{m} Unix ms")),
                stamp.as_deref().unwrap_or("unknown"),
                DEFAULT_RESERVE_WINDOW_MS + DEFAULT_MAX_BORROW_MS
            );
            floor
        }
    };
    // The mark first, then the stamp: a crash between leaves the old stamp,
    // which only makes the next start as careful as this one.
    if floor > mark.unwrap_or(0) {
        store.store(floor).map_err(|e| mark_error(&e.to_string()))?;
    }
    if stamp.as_deref() != Some(here.as_str()) {
        write_stamp(&stamp_path, &here)?;
    }
    let written = floor.max(mark.unwrap_or(0));
    hot.reserved_until.fetch_max(written, Ordering::SeqCst);
    shared::raise_floor(hot, floor);
    shared::set_start_error(None);
    hot.started.store(true, Ordering::Release);
    Ok(store)
}

/// Writes `text` to `path` durably (a temporary file, `fsync`, rename,
/// the directory's `fsync`).
fn write_stamp(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let fail = |e: std::io::Error| format!("snowmint cannot write {}: {e}", path.display());
    let tmp = path.with_extension("history.tmp");
    let mut file = std::fs::File::create(&tmp).map_err(fail)?;
    file.write_all(format!("{text}\n").as_bytes())
        .map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(fail)?;
    }
    Ok(())
}

fn mark_error(err: &str) -> String {
    format!("snowmint cannot use its mark in the data directory: {err}")
}

/// `<data directory>/<name>`.
fn data_path(name: &str) -> PathBuf {
    // SAFETY: PostgreSQL sets DataDir before it starts any process.
    let dir = unsafe { std::ffi::CStr::from_ptr(pg_sys::DataDir) };
    PathBuf::from(dir.to_string_lossy().into_owned()).join(name)
}
