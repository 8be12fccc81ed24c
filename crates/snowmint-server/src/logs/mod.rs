//! Where `snowmint serve`'s log lines go: stderr, as text or as one JSON
//! object a line, written by a thread of its own.
//!
//! A request never writes to stderr itself. Each event (the access log
//! line of every request included) is formatted where it happens and handed
//! to a bounded queue; the `snowmint-log` thread writes the queue to
//! stderr in batches (woken by the first line after it went idle, it lets
//! 10 ms of lines gather, or fewer once half the queue's room is taken,
//! and writes them in one call). When stderr cannot keep up (a slow pipe, a
//! stalled log shipper) and [`LogOptions::buffered_lines`] lines are
//! waiting, **new lines are dropped, not waited for**: requests are never
//! slowed by logging. Every dropped line is counted in
//! `snowmint_log_lines_dropped_total`.
//!
//! [`init_logs`] installs this as the process's subscriber and returns a
//! [`LogGuard`]: keep it for the life of the program; dropping it writes
//! what is still queued (waiting at most a second) and stops the thread.
//! A line logged after that is counted as dropped.
//!
//! With [`LogFormat::Json`] every line on stderr is a JSON object: the
//! events (fields at the top level: `timestamp`, `level`, `message`,
//! `target`, then the event's own), the start-up lines [`serve`](crate::serve)
//! prints (target `snowmint::banner`, which the filter always lets through,
//! so scripts that wait for the address still find it under `RUST_LOG=warn`),
//! and a panic's message (target `snowmint::panic`) instead of the plain
//! text Rust writes by default.

mod access;
#[cfg(test)]
mod testing;
mod text;

pub(crate) use access::access;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// Human-readable lines (coloured only on a terminal).
    #[default]
    Text,
    /// One JSON object a line, the event's fields at the top level.
    Json,
}

/// Lines that may wait for the writer before new ones are dropped, unless
/// told otherwise (about 30 MB of access-log lines).
pub const DEFAULT_LOG_BUFFER_LINES: usize = 128_000;

/// The target of the start-up lines (the addresses served), always let
/// through by [`init_logs`]'s filter.
pub(crate) const BANNER_TARGET: &str = "snowmint::banner";

/// What [`init_logs`] sets up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LogOptions {
    /// Text or JSON.
    pub format: LogFormat,
    /// The filter, as `RUST_LOG` writes it (`info`, `warn,snowmint::access=info`).
    pub filter: String,
    /// Lines that may wait for the writer; past this, new lines are dropped
    /// and counted.
    pub buffered_lines: usize,
}

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions {
            format: LogFormat::Text,
            filter: "info".to_owned(),
            buffered_lines: DEFAULT_LOG_BUFFER_LINES,
        }
    }
}

/// Keeps the log thread running; dropping it writes what is queued (at
/// most a second's wait) and stops the thread.
#[derive(Debug)]
#[must_use = "dropping the guard stops the log writer"]
pub struct LogGuard {
    _writer: WriterGuard,
}

/// Why [`init_logs`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The filter is not one `RUST_LOG` could hold.
    #[error("the log filter {filter:?} cannot be read: {reason}")]
    Filter {
        /// The filter as given.
        filter: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Another subscriber was installed first.
    #[error("a log subscriber is already installed")]
    AlreadyInstalled,
    /// The log writer's thread could not be started.
    #[error("cannot start the log writer thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// The queue of the installed writer, whose dropped-line count the
/// metrics read.
static INSTALLED: OnceLock<Arc<Queue>> = OnceLock::new();

/// Log lines dropped so far because the writer fell behind (0 before
/// [`init_logs`]).
pub(crate) fn dropped_lines() -> u64 {
    INSTALLED.get().map_or(0, |q| q.dropped())
}

/// Installs the process's log subscriber: `options.filter` (with the
/// start-up lines, target `snowmint::banner`, always let through), the
/// format, and a writer thread. Call once, before [`serve`](crate::serve);
/// keep the guard until the program ends.
///
/// Events are formatted where they happen and queued; the `snowmint-log`
/// thread writes them to stderr. When `options.buffered_lines` lines are
/// waiting (stderr does not keep up), new lines are dropped, never waited
/// for, and counted in `snowmint_log_lines_dropped_total`. With
/// [`LogFormat::Json`] a panic's message is an event too (target
/// `snowmint::panic`), so every line on stderr is a JSON object.
///
/// # Errors
///
/// A filter that cannot be read, a subscriber already installed, or no
/// thread for the writer.
pub fn init_logs(options: &LogOptions) -> Result<LogGuard, LogError> {
    let filter = filter(&options.filter)?;
    let (writer, guard) = writer(options.buffered_lines, BATCH_WINDOW, std::io::stderr())?;
    let queue = Arc::clone(&writer.queue);
    // Colour codes only on a terminal: not in files, journald or container
    // logs.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing::subscriber::set_global_default(subscriber(options.format, ansi, filter, writer))
        .map_err(|_| LogError::AlreadyInstalled)?;
    let _ = INSTALLED.set(queue);
    if options.format == LogFormat::Json {
        std::panic::set_hook(Box::new(|info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(not text)".to_owned());
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            tracing::error!(target: "snowmint::panic", location, "panicked: {message}");
        }));
    }
    Ok(LogGuard { _writer: guard })
}

/// `filter` with the banner always let through.
fn filter(filter: &str) -> Result<EnvFilter, LogError> {
    let banner = format!("{BANNER_TARGET}=info");
    let spec = if filter.trim().is_empty() {
        banner
    } else {
        format!("{filter},{banner}")
    };
    EnvFilter::builder()
        .parse(&spec)
        .map_err(|e| LogError::Filter {
            filter: filter.to_owned(),
            reason: e.to_string(),
        })
}

/// How long the writer thread lets lines gather after the first one of a
/// batch before it writes them: the thread is woken about once per window,
/// not once per line, and writes a window's lines in one call. A burst
/// that fills half the queue ends the window early ([`Queue::soon`]).
const BATCH_WINDOW: Duration = Duration::from_millis(10);

/// How long dropping the guard waits for the queued lines to be written.
const FINAL_WRITE_WAIT: Duration = Duration::from_secs(1);

/// The lines waiting for the writer thread.
///
/// A request appends its line under a mutex held for a copy, and wakes the
/// thread only if the thread is idle (the first line of a batch) or if its
/// line is the one that fills half the queue while the thread lets a batch
/// gather (so a burst is written as soon as it is big, not after a window
/// in which it could outgrow the queue while stderr keeps up); the thread
/// waits up to [`BATCH_WINDOW`] for more and takes them all in one swap.
/// (`tracing-appender`'s non-blocking writer wakes its thread for
/// every line and writes each with a call of its own: a futex wake, a
/// context switch and a `write` per request, which cost the HTTP path
/// about a tenth of its throughput.)
#[derive(Debug)]
struct Queue {
    state: Mutex<Pending>,
    /// Signalled when the idle thread has a first line, and at close.
    wake: Condvar,
    /// Lines past `limit`, or after the thread stopped, that were dropped.
    dropped: AtomicU64,
    /// Lines that may wait.
    limit: usize,
    /// Lines that end a batch's window early: half of `limit`.
    soon: usize,
    /// How long a batch may gather ([`BATCH_WINDOW`]).
    window: Duration,
}

#[derive(Debug, Default)]
struct Pending {
    bytes: Vec<u8>,
    lines: usize,
    /// The thread waits for a first line (and must be woken for it).
    idle: bool,
    /// The thread lets a batch gather (and must be woken when it is
    /// `soon` lines).
    gathering: bool,
    /// The guard was dropped: write what is left and stop.
    closed: bool,
    /// The thread took its last batch: nothing queued now is written.
    finished: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding the lock leaves a byte buffer, which is
        // fine to go on with.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one formatted event (tracing's formatter writes each in one
    /// call), or drops and counts it when `limit` lines are waiting or the
    /// thread has stopped.
    fn push(&self, line: &[u8]) {
        let mut pending = self.lock();
        if pending.lines >= self.limit || pending.finished {
            drop(pending);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        pending.bytes.extend_from_slice(line);
        pending.lines += 1;
        let wake = if pending.idle {
            pending.idle = false;
            true
        } else if pending.gathering && pending.lines == self.soon {
            pending.gathering = false;
            true
        } else {
            false
        };
        if wake {
            drop(pending);
            self.wake.notify_one();
        }
    }

    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The writer thread: waits for a first line, lets a window's lines
    /// gather (or `soon` lines), writes them in one call; at close, writes
    /// what is left.
    fn run(&self, out: &mut dyn Write) {
        let mut batch = Vec::new();
        loop {
            let mut pending = self.lock();
            while pending.lines == 0 && !pending.closed {
                pending.idle = true;
                pending = self
                    .wake
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            pending.idle = false;
            let window_ends = Instant::now() + self.window;
            while !pending.closed && pending.lines < self.soon {
                let left = window_ends.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                pending.gathering = true;
                pending = self
                    .wake
                    .wait_timeout(pending, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            pending.gathering = false;
            std::mem::swap(&mut pending.bytes, &mut batch);
            pending.lines = 0;
            let closed = pending.closed;
            pending.finished = closed;
            drop(pending);
            // Nothing to report an error to: stderr is where it would go.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
            if closed {
                return;
            }
        }
    }
}

/// What tracing's formatter writes through: each event goes to the queue.
/// The access line finds it through the dispatcher and, where `direct`
/// says how, writes to the queue itself ([`access`]).
#[derive(Debug, Clone)]
struct QueueWriter {
    queue: Arc<Queue>,
    /// How the subscriber formats an access line, when `access` may write
    /// it the same way without tracing; set by [`subscriber`].
    direct: Option<access::Direct>,
}

impl Write for QueueWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.queue.push(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for QueueWriter {
    type Writer = QueueWriter;
    fn make_writer(&'a self) -> QueueWriter {
        self.clone()
    }
}

/// Stops the writer thread when dropped, once it has written what is
/// queued (waiting at most [`FINAL_WRITE_WAIT`]: a stuck stderr must not
/// hold the process).
#[derive(Debug)]
struct WriterGuard {
    queue: Arc<Queue>,
    done: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.wake.notify_one();
        if self.done.recv_timeout(FINAL_WRITE_WAIT).is_ok()
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

/// The lossy queue in front of `out` (at most `buffered_lines` lines
/// waiting, a batch gathering for at most `window`), and the guard of the
/// thread that writes it.
fn writer<W: Write + Send + 'static>(
    buffered_lines: usize,
    window: Duration,
    mut out: W,
) -> Result<(QueueWriter, WriterGuard), LogError> {
    let limit = buffered_lines.max(1);
    let queue = Arc::new(Queue {
        state: Mutex::new(Pending::default()),
        wake: Condvar::new(),
        dropped: AtomicU64::new(0),
        limit,
        soon: limit.div_ceil(2),
        window,
    });
    let (done_tx, done) = mpsc::channel();
    let thread = {
        let queue = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("snowmint-log".to_owned())
            .spawn(move || {
                queue.run(&mut out);
                let _ = done_tx.send(());
            })
            .map_err(LogError::Thread)?
    };
    Ok((
        QueueWriter {
            queue: Arc::clone(&queue),
            direct: None,
        },
        WriterGuard {
            queue,
            done,
            thread: Some(thread),
        },
    ))
}

/// The subscriber [`init_logs`] installs, writing through `writer`, with
/// colour codes if `ansi`.
fn subscriber(
    format: LogFormat,
    ansi: bool,
    filter: EnvFilter,
    mut writer: QueueWriter,
) -> Box<dyn tracing::Subscriber + Send + Sync> {
    writer.direct = match format {
        LogFormat::Text if ansi => None,
        LogFormat::Text => Some(access::Direct::Text),
        LogFormat::Json => Some(access::Direct::Json),
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(
            logs.with_ansi(ansi)
                .event_format(text::TextFormat::new())
                .finish(),
        ),
        LogFormat::Json => Box::new(
            logs.json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that blocks until opened, then keeps what it is given and
    /// counts the calls it was given it in.
    #[derive(Clone, Default)]
    struct Gate {
        open: Arc<(Mutex<bool>, Condvar)>,
        written: Arc<Mutex<Vec<u8>>>,
        /// Signalled after every write.
        grown: Arc<Condvar>,
        calls: Arc<Mutex<usize>>,
    }

    impl Gate {
        fn open(&self) {
            let (open, opened) = &*self.open;
            *open.lock().unwrap() = true;
            opened.notify_all();
        }
        fn lines(&self) -> Vec<String> {
            let written = String::from_utf8(self.written.lock().unwrap().clone()).unwrap();
            written.lines().map(str::to_owned).collect()
        }
        /// Waits until `n` lines are written, for at most `limit`: whether
        /// they were.
        fn wait_for_lines(&self, n: usize, limit: Duration) -> bool {
            let deadline = Instant::now() + limit;
            let mut written = self.written.lock().unwrap();
            loop {
                if written.iter().filter(|&&b| b == b'\n').count() >= n {
                    return true;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                written = self.grown.wait_timeout(written, left).unwrap().0;
            }
        }
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (open, opened) = &*self.open;
            let mut is_open = open.lock().unwrap();
            while !*is_open {
                is_open = opened.wait(is_open).unwrap();
            }
            *self.calls.lock().unwrap() += 1;
            self.written.lock().unwrap().extend_from_slice(buf);
            self.grown.notify_all();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Logs `n` access events (`i` = 0, 1, ...) as JSON through a queue
    /// with room for `room` lines that `gate` writes: the queue, to read
    /// what it dropped, and the writer's guard.
    fn log_requests(room: usize, gate: &Gate, n: usize) -> (Arc<Queue>, WriterGuard) {
        let (writer, guard) = writer(room, BATCH_WINDOW, gate.clone()).unwrap();
        let queue = Arc::clone(&writer.queue);
        let subscriber = subscriber(LogFormat::Json, false, filter("info").unwrap(), writer);
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..n {
                tracing::info!(target: "snowmint::access", i, "request");
            }
        });
        (queue, guard)
    }

    /// A writer that cannot keep up costs lines, never a wait: with room
    /// for 4 lines and the writer stuck, 100 events return at once; all
    /// but the few queued (at most 4) and the batch in the writer's hands
    /// (at most 4 more) are counted as dropped, and every line that is
    /// kept is whole JSON.
    #[test]
    fn a_stuck_writer_drops_and_counts_lines_instead_of_blocking() {
        let gate = Gate::default();
        let (queue, guard) = log_requests(4, &gate, 100);
        let dropped = usize::try_from(queue.dropped()).unwrap();
        assert!(
            (100 - 4 - 4..=100 - 4).contains(&dropped),
            "dropped {dropped}"
        );
        gate.open();
        drop(guard);
        let lines = gate.lines();
        assert_eq!(lines.len(), 100 - dropped, "{lines:?}");
        for line in lines {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["message"], "request", "{line}");
        }
    }

    /// Lines are written in batches, not one call each: while the writer
    /// is stuck on its first batch, 1000 more lines queue up, and once it
    /// is free they are written in one call. Dropping the guard writes
    /// everything, in order.
    #[test]
    fn queued_lines_are_written_in_one_call_and_all_written_at_the_end() {
        let gate = Gate::default();
        let (queue, guard) = log_requests(10_000, &gate, 1000);
        gate.open();
        drop(guard);
        assert_eq!(queue.dropped(), 0);
        let lines = gate.lines();
        assert_eq!(lines.len(), 1000);
        for (i, line) in lines.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["i"], i, "{line}");
        }
        let calls = *gate.calls.lock().unwrap();
        assert!(
            (1..=2).contains(&calls),
            "{calls} write calls for 1000 lines"
        );
    }

    /// An idle writer is woken by a line: it is written without the guard
    /// being dropped.
    #[test]
    fn a_line_on_an_idle_queue_is_written_soon() {
        let gate = Gate::default();
        gate.open();
        let (writer, guard) = writer(10, BATCH_WINDOW, gate.clone()).unwrap();
        let subscriber = subscriber(LogFormat::Text, false, filter("info").unwrap(), writer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "snowmint::access", "first");
        });
        // Bounded by the test harness's own timeout, not by a guess of
        // this machine's speed: the line must come without a close.
        while gate.lines().is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(gate.lines()[0].contains("first"), "{:?}", gate.lines());
        drop(guard);
    }

    /// A burst is written when it fills half the queue, not only when the
    /// window ends: with room for 120 lines and a window far longer than
    /// the test (so only that wake can start a write), after each of ten
    /// bursts of 60 lines all but fewer than half the room (60) are
    /// written while stderr keeps up, and none is dropped; the rest is
    /// written at the end. (Fewer than 60 left waiting and a burst of 60
    /// never fill the room, however late the writer thread runs; with room
    /// for 100, a writer descheduled under load let 49 + 60 lines wait and
    /// the test dropped some.) (With a fixed window, a queue of 100 at 10 ms
    /// dropped lines above about 10,000 lines a second however fast stderr
    /// was.)
    #[test]
    fn a_burst_that_fills_half_the_queue_is_written_at_once() {
        let gate = Gate::default();
        gate.open();
        let (writer, guard) = writer(120, Duration::from_secs(3600), gate.clone()).unwrap();
        let queue = Arc::clone(&writer.queue);
        let subscriber = subscriber(LogFormat::Json, false, filter("info").unwrap(), writer);
        tracing::subscriber::with_default(subscriber, || {
            for burst in 1..=10 {
                for i in 0..60 {
                    tracing::info!(target: "snowmint::access", i, "request");
                }
                let due = 60 * burst - 59;
                assert!(
                    gate.wait_for_lines(due, Duration::from_secs(20)),
                    "burst {burst}: {} of {due} lines written, {} dropped",
                    gate.lines().len(),
                    queue.dropped()
                );
            }
        });
        assert_eq!(queue.dropped(), 0);
        drop(guard);
        assert_eq!(gate.lines().len(), 600);
    }

    /// Once the guard is dropped and the thread has written the last
    /// batch, a line has nowhere to go: it is counted as dropped, not
    /// queued for no one.
    #[test]
    fn a_line_after_the_writer_stopped_is_counted_as_dropped() {
        let gate = Gate::default();
        gate.open();
        let (writer, guard) = writer(10, BATCH_WINDOW, gate.clone()).unwrap();
        let queue = Arc::clone(&writer.queue);
        let subscriber = subscriber(LogFormat::Text, false, filter("info").unwrap(), writer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "snowmint::access", "before");
            drop(guard);
            tracing::info!(target: "snowmint::access", "after");
        });
        let lines = gate.lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("before"), "{lines:?}");
        assert_eq!(queue.dropped(), 1);
    }

    #[test]
    fn the_banner_passes_any_filter_and_a_bad_filter_is_named() {
        for spec in ["", "warn", "off", "snowmint=error"] {
            let f = filter(spec).unwrap();
            assert!(f.to_string().contains("snowmint::banner=info"), "{f}");
        }
        let err = filter("snowmint=loud").unwrap_err().to_string();
        assert!(err.contains("\"snowmint=loud\""), "{err}");
    }
}
