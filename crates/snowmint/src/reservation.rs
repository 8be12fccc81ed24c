//! Crash-safe restarts: where a [`Generator`](crate::Generator) keeps its
//! "reserved until" mark.
//!
//! Before a generator issues an ID in a millisecond beyond its mark, it
//! durably records a new mark some window ahead ([`ReservationStore::store`]).
//! On start it reads the mark back ([`ReservationStore::load`]) and never
//! issues at or below it, so a crash followed by a restart with the clock set
//! back cannot reissue an ID. The hot path touches the store about once per
//! window, not once per ID.
//!
//! [`FileStore`] keeps the mark in a small text file; [`MemoryStore`] is for
//! tests. The server implements the trait over etcd for leased identities.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::echo;
use crate::layout::{MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS};

/// Durable storage of one identity's "reserved until" mark (Unix ms).
pub trait ReservationStore: Send + Sync + 'static {
    /// The persisted mark, or `None` if nothing was ever stored.
    ///
    /// A store that exists but cannot be read or understood is an error,
    /// never `None`: treating a damaged mark as absent could reissue IDs.
    fn load(&self) -> Result<Option<u64>, StoreError>;

    /// Durably records that IDs up to and including millisecond `until_ms`
    /// may have been issued. Returns only once the mark would survive a
    /// crash.
    fn store(&self, until_ms: u64) -> Result<(), StoreError>;
}

impl<S: ReservationStore + ?Sized> ReservationStore for Arc<S> {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        (**self).load()
    }

    fn store(&self, until_ms: u64) -> Result<(), StoreError> {
        (**self).store(until_ms)
    }
}

impl<S: ReservationStore + ?Sized> ReservationStore for Box<S> {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        (**self).load()
    }

    fn store(&self, until_ms: u64) -> Result<(), StoreError> {
        (**self).store(until_ms)
    }
}

/// What kind of failure a [`StoreError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The stored mark exists but is not a valid mark.
    Damaged,
    /// The store could not be read or written.
    Io,
    /// Any other failure (a remote store's, a test store's).
    Other,
}

/// A reservation store that cannot be read or written, or holds a damaged
/// mark. Its message says which store and what went wrong, and nothing else.
///
/// ```
/// use snowmint::{StoreError, StoreErrorKind};
/// let err = StoreError::new(StoreErrorKind::Other, "etcd: lease expired");
/// assert_eq!(err.to_string(), "etcd: lease expired");
/// assert_eq!(err.kind(), StoreErrorKind::Other);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
}

impl StoreError {
    /// An error with the given message, for implementations of
    /// [`ReservationStore`].
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> StoreError {
        StoreError {
            kind,
            message: message.into(),
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    fn io(action: &str, path: &Path, err: &io::Error) -> StoreError {
        StoreError::new(
            StoreErrorKind::Io,
            format!("cannot {action} {}: {err}", path.display()),
        )
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// The key the file's one line starts with.
const KEY: &str = "reserved_until_ms=";

/// Keeps the mark in a small text file, `reserved_until_ms=<Unix ms>`, one
/// line.
///
/// A new mark is written to a temporary file beside it, flushed to disk
/// (`fsync`), renamed over the old file (atomic), and the directory is
/// flushed too, so after a crash the file holds either the old mark or the
/// new one, whole. A file that exists but cannot be read or does not hold
/// exactly one such line with a timestamp in the format's range is an error
/// naming the path; it is never ignored.
///
/// ```
/// use snowmint::{FileStore, ReservationStore};
/// let dir = tempfile::tempdir()?;
/// let store = FileStore::in_dir(dir.path(), 1, 2);
/// assert_eq!(store.load()?, None);
/// store.store(1_700_000_000_000)?;
/// assert_eq!(store.load()?, Some(1_700_000_000_000));
/// assert!(store.path().ends_with("snowmint-1-2.reservation"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
    tmp: PathBuf,
}

impl FileStore {
    /// The store of identity (`datacenter`, `worker`) in directory `dir`:
    /// the file `snowmint-<datacenter>-<worker>.reservation`. Nothing is
    /// touched until the first load or store; the directory is created by
    /// the first store.
    pub fn in_dir(dir: impl AsRef<Path>, datacenter: u8, worker: u8) -> FileStore {
        FileStore::at(
            dir.as_ref()
                .join(format!("snowmint-{datacenter}-{worker}.reservation")),
        )
    }

    /// A store in the file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> FileStore {
        let path = path.into();
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        FileStore {
            path,
            tmp: tmp.into(),
        }
    }

    /// The file the mark is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn damaged(&self, why: impl fmt::Display) -> StoreError {
        StoreError::new(
            StoreErrorKind::Damaged,
            format!(
                "reservation file {} is damaged: {why}; \
                 it must hold one line `{KEY}<Unix ms>` (remove it only if no ID \
                 of this identity can have been issued later than the clock now reads)",
                self.path.display()
            ),
        )
    }

    fn parse(&self, text: &str) -> Result<u64, StoreError> {
        let line = text.strip_suffix('\n').unwrap_or(text);
        let ms: u64 = line
            .strip_prefix(KEY)
            .filter(|v| v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| self.damaged(format_args!("found {:?}", echo(line))))?;
        if !(MIN_TIMESTAMP_MS..=MAX_TIMESTAMP_MS).contains(&ms) {
            return Err(self.damaged(format_args!(
                "mark {ms} is outside {MIN_TIMESTAMP_MS}..={MAX_TIMESTAMP_MS}"
            )));
        }
        Ok(ms)
    }

    fn write(&self, until_ms: u64) -> io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let mut file = fs::File::create(&self.tmp)?;
        file.write_all(format!("{KEY}{until_ms}\n").as_bytes())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&self.tmp, &self.path)?;
        sync_dir(&self.path)
    }
}

/// Flushes the directory entry of `path` (the rename) to disk.
#[cfg(unix)]
fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::File::open(dir)?.sync_all()
}

/// Directories cannot be opened for flushing here; the rename is as durable
/// as the platform makes it.
#[cfg(not(unix))]
fn sync_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

impl ReservationStore for FileStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        match fs::read(&self.path) {
            Ok(bytes) => {
                let text =
                    String::from_utf8(bytes).map_err(|_| self.damaged("it is not UTF-8 text"))?;
                self.parse(&text).map(Some)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("read reservation file", &self.path, &e)),
        }
    }

    fn store(&self, until_ms: u64) -> Result<(), StoreError> {
        self.write(until_ms)
            .map_err(|e| StoreError::io("write reservation file", &self.path, &e))
    }
}

/// A store in memory, for tests: clones share one mark, and it can be told
/// to fail.
///
/// ```
/// use snowmint::{MemoryStore, ReservationStore};
/// let store = MemoryStore::new();
/// let seen_by_test = store.clone();
/// store.store(1_700_000_000_000)?;
/// assert_eq!(seen_by_test.load()?, Some(1_700_000_000_000));
/// assert_eq!(seen_by_test.writes(), 1);
/// seen_by_test.fail(true);
/// assert_eq!(store.store(1).unwrap_err().to_string(), "memory store: told to fail");
/// # Ok::<(), snowmint::StoreError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<MemoryInner>,
}

#[derive(Debug, Default)]
struct MemoryInner {
    mark: Mutex<Option<u64>>,
    writes: AtomicU64,
    fail: AtomicBool,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// A store that already holds `mark`.
    pub fn with_mark(mark: u64) -> MemoryStore {
        let store = MemoryStore::new();
        *store.lock() = Some(mark);
        store
    }

    /// The current mark.
    pub fn mark(&self) -> Option<u64> {
        *self.lock()
    }

    /// How many times a mark was stored.
    pub fn writes(&self) -> u64 {
        self.inner.writes.load(Ordering::SeqCst)
    }

    /// From now on, make every load and store fail (`true`) or succeed.
    pub fn fail(&self, fail: bool) {
        self.inner.fail.store(fail, Ordering::SeqCst);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<u64>> {
        self.inner
            .mark
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.inner.fail.load(Ordering::SeqCst) {
            Err(StoreError::new(
                StoreErrorKind::Other,
                "memory store: told to fail",
            ))
        } else {
            Ok(())
        }
    }
}

impl ReservationStore for MemoryStore {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        self.check()?;
        Ok(self.mark())
    }

    fn store(&self, until_ms: u64) -> Result<(), StoreError> {
        self.check()?;
        *self.lock() = Some(until_ms);
        self.inner.writes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_store_round_trips_and_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::in_dir(dir.path().join("nested/state"), 3, 4);
        assert_eq!(store.load().unwrap(), None);
        store.store(1_700_000_000_000).unwrap();
        store.store(1_700_000_002_000).unwrap();
        assert_eq!(store.load().unwrap(), Some(1_700_000_002_000));
        let text = fs::read_to_string(store.path()).unwrap();
        assert_eq!(text, "reserved_until_ms=1700000002000\n");
        assert!(!store.tmp.exists(), "the temporary file was renamed");
    }

    #[test]
    fn damaged_files_are_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::in_dir(dir.path(), 0, 0);
        for bad in [
            &b""[..],
            b"reserved_until_ms=",
            b"reserved_until_ms=12x",
            b"reserved_until_ms=+1700000000000",
            b"reserved_until_ms=1700000000000\n\n",
            b"reserved_until_ms=99999999999999999999",
            b"reserved_until_ms=5",
            b"1700000000000\n",
            b"\xff\xfe",
        ] {
            fs::write(store.path(), bad).unwrap();
            let err = store.load().unwrap_err();
            assert_eq!(err.kind(), StoreErrorKind::Damaged, "{bad:?}");
            let msg = err.to_string();
            assert!(msg.contains(&store.path().display().to_string()), "{msg}");
            assert!(msg.contains("is damaged"), "{msg}");
        }
        fs::write(store.path(), "reserved_until_ms=5\n").unwrap();
        assert!(
            store
                .load()
                .unwrap_err()
                .to_string()
                .contains("mark 5 is outside 1288834974657..=3487858230208")
        );
    }

    #[test]
    fn unreadable_files_are_io_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be cannot be read as a file.
        let store = FileStore::in_dir(dir.path(), 0, 0);
        fs::create_dir(store.path()).unwrap();
        let err = store.load().unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::Io);
        assert!(err.to_string().starts_with("cannot read reservation file "));
        assert!(err.to_string().contains("snowmint-0-0.reservation"));
        let err = store.store(1_700_000_000_000).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot write reservation file "),
            "{err}"
        );
    }

    #[test]
    fn memory_store_fails_on_request() {
        let store = MemoryStore::with_mark(7);
        assert_eq!(store.load(), Ok(Some(7)));
        store.fail(true);
        assert!(store.load().is_err());
        assert!(store.store(8).is_err());
        store.fail(false);
        store.store(8).unwrap();
        assert_eq!(store.mark(), Some(8));
        assert_eq!(store.writes(), 1);
    }
}
