//! Where `snowmint serve`'s log lines go: stderr, as text or as one JSON
//! object a line, written by a thread of its own.
//!
//! A request never writes to stderr itself. Each event (the access log
//! line of every request included) is formatted where it happens and handed
//! to a bounded queue; the `snowmint-log` thread writes the queue to
//! stderr. When stderr cannot keep up (a slow pipe, a stalled log shipper)
//! and [`LogOptions::buffered_lines`] lines are waiting, **new lines are
//! dropped, not waited for**: requests are never slowed by logging. Every
//! dropped line is counted in `snowmint_log_lines_dropped_total`.
//!
//! [`init_logs`] installs this as the process's subscriber and returns a
//! [`LogGuard`]: keep it for the life of the program; dropping it writes
//! what is still queued (waiting at most a second) and stops the thread.
//!
//! With [`LogFormat::Json`] every line on stderr is a JSON object: the
//! events (fields at the top level: `timestamp`, `level`, `message`,
//! `target`, then the event's own), the start-up lines [`serve`](crate::serve)
//! prints (target `snowmint::banner`, which the filter always lets through,
//! so scripts that wait for the address still find it under `RUST_LOG=warn`),
//! and a panic's message (target `snowmint::panic`) instead of the plain
//! text Rust writes by default.

use std::sync::OnceLock;

use tracing_appender::non_blocking::{ErrorCounter, NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

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
    _worker: WorkerGuard,
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
}

/// The dropped-line count of the installed writer, read by the metrics.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Log lines dropped so far because the writer fell behind (0 before
/// [`init_logs`]).
pub(crate) fn dropped_lines() -> u64 {
    DROPPED
        .get()
        .map_or(0, |c| u64::try_from(c.dropped_lines()).unwrap_or(u64::MAX))
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
/// A filter that cannot be read, or a subscriber already installed.
pub fn init_logs(options: &LogOptions) -> Result<LogGuard, LogError> {
    let filter = filter(&options.filter)?;
    let (writer, worker) = writer(options.buffered_lines, std::io::stderr());
    let counter = writer.error_counter();
    tracing::subscriber::set_global_default(subscriber(options.format, filter, writer))
        .map_err(|_| LogError::AlreadyInstalled)?;
    let _ = DROPPED.set(counter);
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
    Ok(LogGuard { _worker: worker })
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

/// The lossy queue in front of `out`, and the guard of its thread.
fn writer<W: std::io::Write + Send + 'static>(
    buffered_lines: usize,
    out: W,
) -> (NonBlocking, WorkerGuard) {
    NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(buffered_lines.max(1))
        .thread_name("snowmint-log")
        .finish(out)
}

/// The subscriber [`init_logs`] installs, writing through `writer`.
fn subscriber(
    format: LogFormat,
    filter: EnvFilter,
    writer: NonBlocking,
) -> Box<dyn tracing::Subscriber + Send + Sync> {
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        // Colour codes only on a terminal: not in files, journald or
        // container logs.
        LogFormat::Text => Box::new(
            logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
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
    use std::io::Write;
    use std::sync::{Arc, Condvar, Mutex};

    /// A writer that blocks until opened, then keeps what it is given.
    #[derive(Clone, Default)]
    struct Gate {
        open: Arc<(Mutex<bool>, Condvar)>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (open, opened) = &*self.open;
            let mut is_open = open.lock().unwrap();
            while !*is_open {
                is_open = opened.wait(is_open).unwrap();
            }
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A writer that cannot keep up costs lines, never a wait: with room
    /// for 4 lines and the writer stuck, 100 events return at once, all but
    /// the few queued (and the one in the writer's hands) are counted as
    /// dropped, and every line that is kept is whole JSON.
    #[test]
    fn a_stuck_writer_drops_and_counts_lines_instead_of_blocking() {
        let gate = Gate::default();
        let (writer, worker) = writer(4, gate.clone());
        let counter = writer.error_counter();
        let subscriber = subscriber(LogFormat::Json, filter("info").unwrap(), writer);
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..100 {
                tracing::info!(target: "snowmint::access", i, "request");
            }
        });
        let dropped = counter.dropped_lines();
        assert!((100 - 4 - 1..=100).contains(&dropped), "dropped {dropped}");
        {
            let (open, opened) = &*gate.open;
            *open.lock().unwrap() = true;
            opened.notify_all();
        }
        drop(worker);
        let written = String::from_utf8(gate.written.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 100 - dropped, "{written}");
        for line in lines {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["message"], "request", "{line}");
        }
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
