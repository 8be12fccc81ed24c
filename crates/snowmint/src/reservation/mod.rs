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
//! [`FileStore`] keeps the mark in a small text file and holds an exclusive
//! lock on the identity for as long as it lives, so two processes can never
//! mint as one identity from one state directory; [`MemoryStore`] is for
//! tests, and [`FaultyStore`] wraps a store to make it slow, hang or fail
//! on request, for testing how a program copes with that. The server
//! implements the trait over etcd for leased identities.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::echo;
use crate::identity::Identity;
use crate::layout::{MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS};

mod faulty;

pub use faulty::{FaultyStore, StoreFaults};

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
    /// Another process holds the identity's lock: it is minting as the same
    /// identity from the same state directory.
    InUse,
    /// The store did not answer within the generator's
    /// [`store_timeout`](crate::GeneratorBuilder::store_timeout) (or
    /// answered only after it).
    Timeout,
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
/// line, and owns the identity while it lives.
///
/// **One owner.** [`FileStore::open`] takes an exclusive OS file lock
/// (`flock` on Unix) on `snowmint-<datacenter>-<worker>.lock` beside the
/// mark, and fails with [`StoreErrorKind::InUse`] when another process (or
/// another store in this one) holds it. The lock is held until the last
/// clone of the store is dropped, and the kernel releases it when the
/// process dies, so a crash never leaves the identity locked. Without it two
/// processes on one state directory would each trust the mark, and the one
/// that lowered it last at shutdown could let a restart reissue the other's
/// IDs.
///
/// **Crash-safe writes.** A new mark is written to a temporary file with a
/// name of its own (process ID and a counter), flushed to disk (`fsync`),
/// renamed over the old file (atomic), and the directory is flushed too, so
/// after a crash the file holds either the old mark or the new one, whole.
/// A state directory that `open` creates is flushed into its parent. A file
/// that exists but cannot be read or does not hold exactly one such line
/// with a timestamp in the format's range is an error naming the path; it is
/// never ignored.
///
/// ```
/// use snowmint::{FileStore, Identity, ReservationStore, StoreErrorKind};
/// let dir = tempfile::tempdir()?;
/// let me = Identity::new(1, 2)?;
/// let store = FileStore::open(dir.path(), me)?;
/// assert_eq!(store.load()?, None);
/// store.store(1_700_000_000_000)?;
/// assert_eq!(store.load()?, Some(1_700_000_000_000));
/// assert!(store.path().ends_with("snowmint-1-2.reservation"));
///
/// // A second owner of the same identity and directory is refused.
/// let err = FileStore::open(dir.path(), me).unwrap_err();
/// assert_eq!(err.kind(), StoreErrorKind::InUse);
/// assert!(err.to_string().starts_with("datacenter 1, worker 2 is already minting from "));
/// drop(store);
/// assert!(FileStore::open(dir.path(), me).is_ok(), "free once the owner is gone");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
    /// The open lock file; the lock is released when the last clone drops it.
    _lock: Arc<fs::File>,
}

/// Numbers temporary files within this process (with the process ID, a
/// name no other writer uses).
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FileStore {
    /// The store of `identity` in directory `dir`:
    /// the mark in `snowmint-<datacenter>-<worker>.reservation`, the lock on
    /// `snowmint-<datacenter>-<worker>.lock`.
    ///
    /// Creates `dir` if needed (durably), takes the identity's lock, and
    /// removes temporary files a crashed owner left behind. Fails with
    /// [`StoreErrorKind::InUse`] if another owner holds the lock, and with
    /// [`StoreErrorKind::Io`] if the directory or the lock file cannot be
    /// made.
    pub fn open(dir: impl AsRef<Path>, identity: Identity) -> Result<FileStore, StoreError> {
        let dir = dir.as_ref();
        let name = format!("snowmint-{}-{}", identity.datacenter(), identity.worker());
        let owner = format!("{identity} is already minting from {}", dir.display());
        // The lock's name ends in `.lock`, which no mark's may (see
        // `open_file`), so nothing is ever renamed over it.
        FileStore::open_at(
            dir.join(format!("{name}.reservation")),
            dir.join(format!("{name}.lock")),
            &owner,
        )
    }

    /// A store in the file at `path`, locked through `<path>.lock` beside it
    /// (one lock per mark file: `x` and `x.y` are two owners); otherwise as
    /// [`FileStore::open`].
    ///
    /// A file name ending in `.lock` or `.tmp` is refused: those name the
    /// lock and the temporary files, and a mark kept under such a name could
    /// be its own lock (the first write would rename a new file over the
    /// locked one, and a second owner could then lock the new file) or
    /// another store's.
    ///
    /// ```
    /// use snowmint::FileStore;
    /// let dir = tempfile::tempdir()?;
    /// let err = FileStore::open_file(dir.path().join("mark.lock")).unwrap_err();
    /// assert!(err.to_string().starts_with(
    ///     "reservation file name must not end in `.lock` or `.tmp` \
    ///      (they name the lock and the temporary files), got "
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_file(path: impl Into<PathBuf>) -> Result<FileStore, StoreError> {
        let path = path.into();
        let name = path.file_name().map(|n| n.to_string_lossy());
        if name.is_none_or(|n| n.ends_with(".lock") || n.ends_with(".tmp")) {
            return Err(StoreError::new(
                StoreErrorKind::Other,
                format!(
                    "reservation file name must not end in `.lock` or `.tmp` \
                     (they name the lock and the temporary files), got {}",
                    path.display()
                ),
            ));
        }
        let owner = format!("{} is already in use", path.display());
        let mut lock_path = path.clone().into_os_string();
        lock_path.push(".lock");
        FileStore::open_at(path, lock_path.into(), &owner)
    }

    fn open_at(path: PathBuf, lock_path: PathBuf, owner: &str) -> Result<FileStore, StoreError> {
        let dir = parent_dir(&path).to_owned();
        create_dir_durably(&dir).map_err(|e| StoreError::io("create state directory", &dir, &e))?;
        let lock = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| StoreError::io("open lock file", &lock_path, &e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(StoreError::new(
                    StoreErrorKind::InUse,
                    format!(
                        "{owner} (another process holds {}); stop it, or give this one \
                         another identity or state directory",
                        lock_path.display()
                    ),
                ));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(StoreError::io("lock", &lock_path, &e));
            }
        }
        let store = FileStore {
            path,
            _lock: Arc::new(lock),
        };
        store.remove_stale_temporaries();
        Ok(store)
    }

    /// The file the mark is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `<file name>.` : what every temporary file of this store starts with.
    fn tmp_prefix(&self) -> String {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        format!("{name}.")
    }

    /// Whether `name` is one of this store's temporary files,
    /// `<file name>.<digits>-<digits>.tmp`, and no other store's: the part
    /// after the prefix has no dot, so the temporary file of a store in
    /// `<file name>.<more>` (`x.y` beside `x`) never matches.
    fn is_own_temporary(&self, name: &str) -> bool {
        let Some(rest) = name
            .strip_prefix(&self.tmp_prefix())
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            return false;
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        rest.split_once('-')
            .is_some_and(|(pid, n)| digits(pid) && digits(n))
    }

    /// Temporary files are only ever written by the lock's holder, so any
    /// found now are a crashed owner's leftovers. Best effort: a file that
    /// cannot be removed is harmless (it is never read).
    fn remove_stale_temporaries(&self) {
        let Ok(entries) = fs::read_dir(parent_dir(&self.path)) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if self.is_own_temporary(&name.to_string_lossy()) {
                let _ = fs::remove_file(entry.path());
            }
        }
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
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = self.path.with_file_name(format!(
            "{}{}-{n}.tmp",
            self.tmp_prefix(),
            std::process::id()
        ));
        let written = (|| {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(format!("{KEY}{until_ms}\n").as_bytes())?;
            file.sync_all()?;
            drop(file);
            fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written?;
        sync_dir(parent_dir(&self.path))
    }
}

/// The directory a file is in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Creates `dir` and any missing parents, flushing each new directory's
/// entry into its parent, so a mark written inside survives a crash.
fn create_dir_durably(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = parent_dir(dir);
    if parent != dir {
        create_dir_durably(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => sync_dir(parent),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Flushes the entries of directory `dir` (a rename, a new file) to disk.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

/// Directories cannot be opened for flushing here; the rename is as durable
/// as the platform makes it.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
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
/// to fail. For a store that is slow, hangs, or fails with an error of a
/// given kind, wrap it in a [`FaultyStore`].
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

    fn id(datacenter: u64, worker: u64) -> Identity {
        Identity::new(datacenter, worker).unwrap()
    }

    #[test]
    fn file_store_round_trips_and_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("nested/state");
        let store = FileStore::open(&state, id(3, 4)).unwrap();
        assert!(state.is_dir(), "the directory is created by open");
        assert_eq!(store.load().unwrap(), None);
        store.store(1_700_000_000_000).unwrap();
        store.store(1_700_000_002_000).unwrap();
        assert_eq!(store.load().unwrap(), Some(1_700_000_002_000));
        let text = fs::read_to_string(store.path()).unwrap();
        assert_eq!(text, "reserved_until_ms=1700000002000\n");
        let mut names: Vec<_> = fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["snowmint-3-4.lock", "snowmint-3-4.reservation"],
            "the temporary files were renamed"
        );
    }

    #[test]
    fn one_owner_per_identity_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), id(3, 4)).unwrap();
        let err = FileStore::open(dir.path(), id(3, 4)).unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::InUse);
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "datacenter 3, worker 4 is already minting from {} (another process holds ",
                dir.path().display()
            )),
            "{msg}"
        );
        assert!(msg.contains("snowmint-3-4.lock"), "{msg}");
        // Another identity in the same directory, or the same identity in
        // another directory, is a different owner.
        let other_dir = tempfile::tempdir().unwrap();
        let _a = FileStore::open(dir.path(), id(3, 5)).unwrap();
        let _b = FileStore::open(other_dir.path(), id(3, 4)).unwrap();
        // Clones share the lock; it is released with the last of them.
        let clone = store.clone();
        drop(store);
        assert_eq!(
            FileStore::open(dir.path(), id(3, 4)).unwrap_err().kind(),
            StoreErrorKind::InUse
        );
        drop(clone);
        FileStore::open(dir.path(), id(3, 4)).unwrap();
    }

    #[test]
    fn a_crashed_owners_temporary_files_are_removed_and_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let leftovers = [
            "snowmint-0-0.reservation.4242-7.tmp",
            "snowmint-0-0.reservation.1-0.tmp",
        ];
        for name in leftovers {
            fs::write(dir.path().join(name), "reserved_until_ms=9\n").unwrap();
        }
        // Not this store's: other names, and other stores' temporary files.
        let others = [
            "unrelated.tmp",
            "snowmint-0-0.reservation.tmp",
            "snowmint-0-0.reservation.x-1.tmp",
            "snowmint-0-0.reservation.old.4242-7.tmp",
        ];
        for name in others {
            fs::write(dir.path().join(name), "").unwrap();
        }
        let store = FileStore::open(dir.path(), id(0, 0)).unwrap();
        assert_eq!(store.load().unwrap(), None);
        for name in leftovers {
            assert!(!dir.path().join(name).exists(), "{name}");
        }
        for name in others {
            assert!(dir.path().join(name).exists(), "{name}");
        }
    }

    /// A store in `x` must not take the in-flight temporary files of a store
    /// in `x.y` for its own leftovers: deleting them made that store's write
    /// fail.
    #[test]
    fn temporary_files_belong_to_exactly_one_store() {
        let dir = tempfile::tempdir().unwrap();
        let neighbour = FileStore::open_file(dir.path().join("x.y")).unwrap();
        // The neighbour's write in flight: its temporary file exists.
        let in_flight = dir.path().join(format!("x.y.{}-0.tmp", std::process::id()));
        fs::write(&in_flight, "reserved_until_ms=1700000000000\n").unwrap();
        let store = FileStore::open_file(dir.path().join("x")).unwrap();
        assert!(
            in_flight.exists(),
            "another store's temporary file was removed"
        );
        assert!(neighbour.is_own_temporary(&format!("x.y.{}-0.tmp", 7)));
        assert!(!store.is_own_temporary("x.y.7-0.tmp"));
        assert!(store.is_own_temporary("x.7-0.tmp"));
        for not_own in [
            "x.7-.tmp",
            "x.-0.tmp",
            "x.7-0",
            "x.7.tmp",
            "x.7-0-1.tmp",
            "y.7-0.tmp",
        ] {
            assert!(!store.is_own_temporary(not_own), "{not_own}");
        }
    }

    /// A mark file named like a lock was its own lock: the first write
    /// renamed a new file over the locked one, and a second store of the
    /// same path could then lock the new file and mint as the same owner.
    #[test]
    fn a_mark_can_never_be_a_lock_or_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["x.lock", "x.tmp", "snowmint-0-0.lock", "x.1-2.tmp"] {
            let err = FileStore::open_file(dir.path().join(bad)).unwrap_err();
            assert_eq!(err.kind(), StoreErrorKind::Other, "{bad}");
            assert!(
                err.to_string()
                    .ends_with(&format!("got {}", dir.path().join(bad).display())),
                "{err}"
            );
        }
        assert!(
            FileStore::open_file(dir.path().join("..")).is_err(),
            "no file name"
        );
        // Nothing was created by the refusals.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        // And for a name that is allowed, the lock survives the writes: a
        // second owner stays refused after the mark was renamed over.
        let path = dir.path().join("x.mark");
        let store = FileStore::open_file(&path).unwrap();
        store.store(1_700_000_000_000).unwrap();
        store.store(1_700_000_000_001).unwrap();
        let err = FileStore::open_file(&path).unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::InUse);
        assert!(err.to_string().contains("x.mark.lock"), "{err}");
    }

    #[test]
    fn damaged_files_are_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), id(0, 0)).unwrap();
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
        let store = FileStore::open(dir.path(), id(0, 0)).unwrap();
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
        // A state directory that is a file cannot be created.
        let file = dir.path().join("a-file");
        fs::write(&file, "").unwrap();
        let err = FileStore::open(&file, id(0, 0)).unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::Io);
        assert!(
            err.to_string()
                .starts_with("cannot create state directory "),
            "{err}"
        );
    }

    /// A store shared behind an `Arc` or a `Box` is the same store: its
    /// mark is read (a forwarding `load` that said "no mark" would let a
    /// restart reissue) and written through.
    #[test]
    fn arc_and_box_stores_forward_load_and_store() {
        let inner = MemoryStore::with_mark(1_700_000_000_000);
        let shared: Arc<dyn ReservationStore> = Arc::new(inner.clone());
        let boxed: Box<dyn ReservationStore> = Box::new(inner.clone());
        assert_eq!(shared.load(), Ok(Some(1_700_000_000_000)));
        assert_eq!(boxed.load(), Ok(Some(1_700_000_000_000)));
        shared.store(1_700_000_000_001).unwrap();
        assert_eq!(inner.mark(), Some(1_700_000_000_001));
        boxed.store(1_700_000_000_002).unwrap();
        assert_eq!(inner.mark(), Some(1_700_000_000_002));
        inner.fail(true);
        assert!(shared.store(1).is_err() && boxed.store(1).is_err());
        assert!(shared.load().is_err() && boxed.load().is_err());
        // And a generator over them starts above the mark.
        inner.fail(false);
        let g = crate::Generator::builder(0, 0)
            .store(Arc::new(inner.clone()))
            .build()
            .unwrap();
        assert!(g.last_issued_ms() >= 1_700_000_000_002);
        let g = crate::Generator::builder(0, 0)
            .store(Box::new(inner.clone()) as Box<dyn ReservationStore>)
            .build()
            .unwrap();
        assert!(g.last_issued_ms() >= 1_700_000_000_002);
    }

    #[test]
    fn a_bare_file_name_is_in_the_current_directory() {
        assert_eq!(parent_dir(Path::new("x")), Path::new("."));
        assert_eq!(parent_dir(Path::new("d/x")), Path::new("d"));
        assert_eq!(parent_dir(Path::new("/x")), Path::new("/"));
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
