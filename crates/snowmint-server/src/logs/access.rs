//! The access log's line, one a request: written straight into the log
//! queue when `serve`'s own subscriber is installed, byte for byte what
//! tracing-subscriber would write for the event.
//!
//! Through tracing, the line cost a request about 1 µs of the server's CPU
//! (10.4 against 9.5 µs on `GET /healthz`, measured side by side with the
//! event switched off, `RUST_LOG=info,snowmint::access=warn`), an eighth of
//! a bare hyper handler's whole request: the event's dispatch through the
//! registry and the filter, the fields' visit through `core::fmt`, the
//! formatter's buffer, a clone of the writer. Here the four fields are
//! known, all `&'static str` labels and integers, so the line is put
//! together in a buffer on the stack and queued with one copy (about 0.2 µs
//! in all).
//!
//! Nothing about what is logged changes:
//! - the filter decides, as it does for the event: the line has a callsite
//!   of its own with the event's metadata (target `snowmint::access`, info,
//!   its fields), whose cached interest is read as `tracing::info!` reads
//!   its own (the subscriber's `enabled` is asked only when the interest is
//!   "sometimes"), so `RUST_LOG=warn` or `snowmint::access=warn` turns the
//!   line off at a cached check. (`tracing::enabled!` would ask `enabled`
//!   for every line, about 120 instructions of the request's 11,000.)
//! - the line goes to the queue of the installed subscriber (found through
//!   the dispatcher, so a scoped subscriber in a test is honoured as a
//!   global one is), counted as dropped like any line when the queue is
//!   full or closed;
//! - whenever the direct line would not be tracing-subscriber's, the event
//!   goes through tracing as before: another subscriber than `serve`'s (a
//!   library user's own), colour codes (a terminal), or a current span (at
//!   debug level each request has one, which the line names).
//!
//! Tests format the same events both ways and compare the bytes.

use std::time::{SystemTime, UNIX_EPOCH};

use tracing::Level;
use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
use tracing_core::callsite::DefaultCallsite;
use tracing_core::{Kind, Metadata};

use super::QueueWriter;
use super::text::{ACCESS_TARGET, stamp};

/// How the installed subscriber writes an access line, when this module
/// may write it instead of tracing-subscriber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direct {
    /// The text format without colour codes.
    Text,
    /// The JSON format (`flatten_event`, no span fields).
    Json,
}

/// The longest line written directly; a longer one (never, with the labels
/// the edge passes) goes through tracing.
const MAX_LINE: usize = 256;

/// Which way [`access`] logged a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Logged {
    /// The filter turned it off.
    Off,
    /// Into the queue, without tracing.
    Direct,
    /// As a tracing event.
    Event,
}

/// The access line's callsite: the metadata of the event it stands for
/// (the fields of the `tracing::info!` below), registered like any
/// callsite, so that its interest is the one the subscribers give the
/// event.
static CALLSITE: DefaultCallsite = DefaultCallsite::new(&META);

static META: Metadata<'static> = tracing_core::metadata! {
    name: "access",
    target: ACCESS_TARGET,
    level: Level::INFO,
    fields: &["message", "method", "route", "status", "latency_us"],
    callsite: &CALLSITE,
    kind: Kind::EVENT,
};

/// Logs one request's access line: `method` and `route` are the edge's
/// labels, `status` the answer's, `latency_us` the time to answer it; says
/// which way. See the [module docs](self).
pub(crate) fn access(
    method: &'static str,
    route: &'static str,
    status: u16,
    latency_us: u64,
) -> Logged {
    // As `tracing::info!` decides for its event: the level first, then the
    // callsite's interest, asking the subscriber only if it is "sometimes".
    if Level::INFO > STATIC_MAX_LEVEL || Level::INFO > LevelFilter::current() {
        return Logged::Off;
    }
    let interest = CALLSITE.interest();
    if interest.is_never() {
        return Logged::Off;
    }
    let written = tracing::dispatcher::get_default(|dispatch| {
        if !interest.is_always() && !dispatch.enabled(&META) {
            return None;
        }
        Some(direct(dispatch, method, route, status, latency_us))
    });
    match written {
        None => Logged::Off,
        Some(true) => Logged::Direct,
        Some(false) => {
            tracing::info!(target: ACCESS_TARGET, %method, %route, status, latency_us, "request");
            Logged::Event
        }
    }
}

/// Writes the line into `dispatch`'s queue, if it is `serve`'s subscriber
/// and would write the event as the line is written here; false if not.
fn direct(
    dispatch: &tracing::Dispatch,
    method: &'static str,
    route: &'static str,
    status: u16,
    latency_us: u64,
) -> bool {
    let Some(writer) = dispatch.downcast_ref::<QueueWriter>() else {
        return false;
    };
    let Some(direct) = writer.direct else {
        return false;
    };
    if dispatch.current_span().id().is_some() {
        return false;
    }
    let Ok(since) = SystemTime::now().duration_since(UNIX_EPOCH) else {
        return false;
    };
    let Some(stamp) = stamp(since.as_secs(), since.subsec_micros()) else {
        return false;
    };
    let mut line = Line::default();
    if !line.access(direct, &stamp, method, route, status, latency_us) {
        return false;
    }
    writer.queue.push(line.bytes());
    true
}

/// A line being put together on the stack.
struct Line {
    buf: [u8; MAX_LINE],
    len: usize,
    /// Something did not fit, or a label would need escaping.
    spoilt: bool,
}

impl Default for Line {
    fn default() -> Line {
        Line {
            buf: [0; MAX_LINE],
            len: 0,
            spoilt: false,
        }
    }
}

impl Line {
    fn put(&mut self, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(room) => {
                room.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.spoilt = true,
        }
    }

    /// A label as it stands in both formats: plain printable ASCII, nothing
    /// that either would quote or escape differently.
    fn label(&mut self, label: &str) {
        let plain = label
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\'));
        if plain {
            self.put(label.as_bytes());
        } else {
            self.spoilt = true;
        }
    }

    fn number(&mut self, n: u64) {
        self.put(itoa::Buffer::new().format(n).as_bytes());
    }

    /// Writes the access line in `direct`'s format, the fields in the order
    /// the edge's event names them; false if it cannot be written here.
    fn access(
        &mut self,
        direct: Direct,
        stamp: &[u8],
        method: &str,
        route: &str,
        status: u16,
        latency_us: u64,
    ) -> bool {
        match direct {
            Direct::Text => {
                self.put(stamp);
                self.put(b"  INFO snowmint::access: request method=");
                self.label(method);
                self.put(b" route=");
                self.label(route);
                self.put(b" status=");
                self.number(u64::from(status));
                self.put(b" latency_us=");
                self.number(latency_us);
                self.put(b"\n");
            }
            Direct::Json => {
                self.put(b"{\"timestamp\":\"");
                self.put(stamp);
                self.put(b"\",\"level\":\"INFO\",\"message\":\"request\",\"method\":\"");
                self.label(method);
                self.put(b"\",\"route\":\"");
                self.label(route);
                self.put(b"\",\"status\":");
                self.number(u64::from(status));
                self.put(b",\"latency_us\":");
                self.number(latency_us);
                self.put(b",\"target\":\"snowmint::access\"}\n");
            }
        }
        !self.spoilt
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::testing::{Buffer, Fixed, MICROS, SECS};
    use crate::logs::{BATCH_WINDOW, LogFormat, filter, subscriber, writer};

    /// The lines tracing-subscriber writes for the edge's event, in
    /// `format` (as `logs::subscriber` sets each up, the timer fixed).
    fn stock(format: Direct, cases: &[(&'static str, &'static str, u16, u64)]) -> String {
        let out = Buffer::default();
        let builder = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_ansi(false)
            .with_timer(Fixed);
        let emit = || {
            for &(method, route, status, latency_us) in cases {
                tracing::info!(target: ACCESS_TARGET, %method, %route, status, latency_us, "request");
            }
        };
        match format {
            Direct::Text => tracing::subscriber::with_default(builder.finish(), emit),
            Direct::Json => tracing::subscriber::with_default(
                builder
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(false)
                    .finish(),
                emit,
            ),
        }
        out.text()
    }

    fn direct(format: Direct, cases: &[(&'static str, &'static str, u16, u64)]) -> String {
        let stamp = stamp(SECS, MICROS).unwrap();
        let mut out = String::new();
        for &(method, route, status, latency_us) in cases {
            let mut line = Line::default();
            assert!(line.access(format, &stamp, method, route, status, latency_us));
            out.push_str(std::str::from_utf8(line.bytes()).unwrap());
        }
        out
    }

    /// Every route label and method label, and the extremes of the numbers.
    fn cases() -> Vec<(&'static str, &'static str, u16, u64)> {
        let mut cases = Vec::new();
        for (i, route) in crate::routes::ROUTES
            .iter()
            .copied()
            .chain(["unmatched"])
            .enumerate()
        {
            let method = [
                "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "OTHER",
            ][i % 8];
            cases.push((
                method,
                route,
                [200, 404, 503][i % 3],
                [0, 41, 999_999][i % 3],
            ));
        }
        cases.push(("GET", "/healthz", u16::MAX, u64::MAX));
        cases.push(("GET", "/healthz", 100, 1));
        cases
    }

    #[test]
    fn direct_lines_are_tracing_subscribers_byte_for_byte() {
        for format in [Direct::Text, Direct::Json] {
            let stock = stock(format, &cases());
            assert_eq!(direct(format, &cases()), stock, "{format:?}");
            assert_eq!(stock.lines().count(), cases().len());
        }
        // What the comparison covered.
        assert!(
            stock(Direct::Json, &cases()[..1]).starts_with(
                "{\"timestamp\":\"2026-12-02T02:16:09.007440Z\",\"level\":\"INFO\",\
                 \"message\":\"request\",\"method\":\"GET\",\"route\":\"/\",\"status\":200,"
            ),
            "{}",
            stock(Direct::Json, &cases()[..1])
        );
    }

    #[test]
    fn a_label_that_would_need_escaping_or_room_is_not_written_directly() {
        let stamp = stamp(SECS, MICROS).unwrap();
        for label in ["a\"b", "a\\b", "a b", "é", "\n"] {
            for format in [Direct::Text, Direct::Json] {
                let mut line = Line::default();
                assert!(
                    !line.access(format, &stamp, "GET", label, 200, 1),
                    "{label:?}"
                );
            }
        }
        let long: &'static str = "x".repeat(MAX_LINE).leak();
        assert!(!Line::default().access(Direct::Text, &stamp, "GET", long, 200, 1));
    }

    /// `access` through `serve`'s subscriber: the filter decides, a line
    /// arrives in the format chosen, written directly, and inside a span the
    /// event goes through tracing, which names the span. Another subscriber
    /// (a library user's) gets the event.
    #[test]
    fn the_filter_decides_and_a_span_is_named() {
        let logged = |format: LogFormat, spec: &str, in_span: bool| {
            let out = Buffer::default();
            let (queue_writer, guard) = writer(100, BATCH_WINDOW, out.clone()).unwrap();
            let subscriber = subscriber(format, false, filter(spec).unwrap(), queue_writer);
            let way = tracing::subscriber::with_default(subscriber, || {
                let span = tracing::info_span!("request", uri = %"/healthz");
                let _entered = in_span.then(|| span.enter());
                access("GET", "/healthz", 200, 12)
            });
            drop(guard);
            (way, out.text())
        };
        let (way, text) = logged(LogFormat::Text, "info", false);
        assert_eq!(way, Logged::Direct);
        assert!(
            text.ends_with(
                "Z  INFO snowmint::access: request method=GET route=/healthz status=200 latency_us=12\n"
            ),
            "{text:?}"
        );
        let (way, json) = logged(LogFormat::Json, "info", false);
        assert_eq!(way, Logged::Direct);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["route"], "/healthz", "{json}");
        assert_eq!(v["latency_us"], 12, "{json}");
        for off in ["warn", "info,snowmint::access=warn", "off"] {
            assert_eq!(
                logged(LogFormat::Text, off, false),
                (Logged::Off, String::new())
            );
            assert_eq!(
                logged(LogFormat::Json, off, false),
                (Logged::Off, String::new())
            );
        }
        let (way, spanned) = logged(LogFormat::Text, "info", true);
        assert_eq!(way, Logged::Event);
        assert!(
            spanned.contains("request{uri=/healthz}: snowmint::access: request method=GET"),
            "{spanned:?}"
        );
        let other = Buffer::default();
        let way = tracing::subscriber::with_default(
            tracing_subscriber::fmt()
                .with_writer(other.clone())
                .with_ansi(false)
                .finish(),
            || access("GET", "/healthz", 200, 12),
        );
        assert_eq!(way, Logged::Event);
        let other = other.text();
        assert!(other.contains("route=/healthz status=200"), "{other:?}");
    }
}
