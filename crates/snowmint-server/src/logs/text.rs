//! The text format of `serve`'s log, byte for byte tracing-subscriber's
//! full format (`2026-12-02T02:16:05.122030Z  INFO snowmint::access:
//! request method=GET route=/healthz status=200 latency_us=12`), written
//! with less work where the profile found it: the timestamp, and the access
//! line of every request.
//!
//! - **The timestamp** ([`Rfc3339Micros`]): tracing-subscriber formats the
//!   date and time of each line from scratch through `core::fmt` (3 % of a
//!   `/healthz` request's CPU in the profile); this one keeps the date and
//!   time of the current second per thread and writes only the
//!   microseconds. The same text.
//! - **The access line** ([`TextFormat`]): an event of target
//!   `snowmint::access` outside any span, on a writer without colour codes,
//!   is written here: its fields as tracing-subscriber's default visitor
//!   writes them (`name=value`, the value's `Debug`, strings quoted, the
//!   message first and bare) without its styling wrappers (which cost as
//!   much as the fields themselves even when they write no colour code).
//!   Every other event, and the access line in a span (debug level) or on a
//!   terminal, goes to tracing-subscriber's formatter unchanged.
//!
//! A test formats the same events through both and compares the bytes.

use std::cell::Cell;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The target of the access log's line (one a request).
pub(crate) const ACCESS_TARGET: &str = "snowmint::access";

/// RFC 3339 UTC with microseconds, as tracing-subscriber's `SystemTime`
/// writes it: `2026-12-02T02:16:05.122030Z`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rfc3339Micros;

thread_local! {
    /// The second last written on this thread, and its text up to the
    /// seconds (`2026-12-02T02:16:05`).
    static SECOND: Cell<(u64, [u8; 19])> = const { Cell::new((u64::MAX, [0; 19])) };
}

impl FormatTime for Rfc3339Micros {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| fmt::Error)?;
        write_stamp(w, since.as_secs(), since.subsec_micros())
    }
}

/// Writes `secs` (since the Unix epoch) and `micros` as RFC 3339 UTC.
fn write_stamp(w: &mut impl fmt::Write, secs: u64, micros: u32) -> fmt::Result {
    let out = stamp(secs, micros).ok_or(fmt::Error)?;
    // ASCII digits and separators only.
    w.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
}

/// `secs` (since the Unix epoch) and `micros` as RFC 3339 UTC
/// (`2026-12-02T02:16:05.122030Z`), the date and time of the second kept
/// per thread; `None` past the year 9999.
pub(super) fn stamp(secs: u64, micros: u32) -> Option<[u8; 27]> {
    let (cached, mut text) = SECOND.get();
    if cached != secs {
        text = date_time(secs)?;
        SECOND.set((secs, text));
    }
    let mut out = [0u8; 27];
    out[..19].copy_from_slice(&text);
    out[19] = b'.';
    let mut m = micros;
    for i in (20..26).rev() {
        out[i] = b'0' + (m % 10) as u8;
        m /= 10;
    }
    out[26] = b'Z';
    Some(out)
}

/// `YYYY-MM-DDTHH:MM:SS` of `secs` since the Unix epoch (UTC), for years
/// 1970 to 9999 (`None` past them).
fn date_time(secs: u64) -> Option<[u8; 19]> {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    if year > 9999 {
        return None;
    }
    let mut out = *b"0000-00-00T00:00:00";
    let put = |out: &mut [u8; 19], at: usize, width: usize, mut v: u64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(&mut out, 0, 4, year);
    put(&mut out, 5, 2, month);
    put(&mut out, 8, 2, day);
    put(&mut out, 11, 2, rem / 3600);
    put(&mut out, 14, 2, rem % 3600 / 60);
    put(&mut out, 17, 2, rem % 60);
    Some(out)
}

/// The proleptic Gregorian (year, month, day) of `days` since 1970-01-01
/// (Howard Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// tracing-subscriber's full text format with [`Rfc3339Micros`] (or
/// another timer, for tests), the access line written directly; see the
/// [module docs](self).
pub(crate) struct TextFormat<T = Rfc3339Micros> {
    full: Format<Full, T>,
    timer: T,
}

impl TextFormat {
    pub(crate) fn new() -> TextFormat {
        TextFormat::with_timer(Rfc3339Micros)
    }
}

impl<T: FormatTime + Clone> TextFormat<T> {
    pub(crate) fn with_timer(timer: T) -> TextFormat<T> {
        TextFormat {
            full: tracing_subscriber::fmt::format().with_timer(timer.clone()),
            timer,
        }
    }
}

impl<S, N, T> FormatEvent<S, N> for TextFormat<T>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    T: FormatTime,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        if meta.target() != ACCESS_TARGET
            || writer.has_ansi_escapes()
            || ctx.event_scope().is_some()
        {
            return self.full.format_event(ctx, writer, event);
        }
        if self.timer.format_time(&mut writer).is_err() {
            writer.write_str("<unknown time>")?;
        }
        let level = match *meta.level() {
            Level::TRACE => "TRACE",
            Level::DEBUG => "DEBUG",
            Level::INFO => " INFO",
            Level::WARN => " WARN",
            Level::ERROR => "ERROR",
        };
        write!(writer, " {level} {}: ", meta.target())?;
        let mut fields = Fields {
            writer: &mut writer,
            empty: true,
            result: Ok(()),
        };
        event.record(&mut fields);
        fields.result?;
        writer.write_char('\n')
    }
}

/// tracing-subscriber's default field visitor without colour: `name=value`
/// by `Debug`, separated by a space, the message first and bare.
struct Fields<'w, 'a> {
    writer: &'w mut Writer<'a>,
    empty: bool,
    result: fmt::Result,
}

impl Visit for Fields<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.record_debug(field, &format_args!("{value}"));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        let name = field.name();
        if name.starts_with("log.") {
            return;
        }
        if !self.empty {
            self.result = self.writer.write_char(' ');
        }
        self.empty = false;
        self.result = self.result.and_then(|()| match name {
            "message" => write!(self.writer, "{value:?}"),
            name => {
                let name = name.strip_prefix("r#").unwrap_or(name);
                write!(self.writer, "{name}={value:?}")
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::testing::{Buffer, Fixed};

    /// The events `serve` logs, in and out of a span, through `logs`.
    fn events(logs: impl Subscriber + Send + Sync) {
        tracing::subscriber::with_default(logs, || {
            let route = "/api/v1/ids";
            tracing::info!(target: ACCESS_TARGET, method = %"POST", %route, status = 200u16, latency_us = 41u64, "request");
            tracing::info!(target: ACCESS_TARGET, r#type = "x", text = "quoted \"here\"", n = -3i64, ok = true, "request");
            tracing::info!(target: ACCESS_TARGET, "no fields");
            tracing::warn!(target: ACCESS_TARGET, status = 503u16, "request");
            tracing::warn!(error = %"it broke", retry_in_ms = 200u64, "another target");
            let span = tracing::info_span!("request", method = %"GET", uri = %"/healthz");
            span.in_scope(|| {
                tracing::info!(target: ACCESS_TARGET, status = 200u16, "request");
            });
        });
    }

    fn logged(fast: bool) -> String {
        let out = Buffer::default();
        let builder = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_ansi(false)
            .with_max_level(Level::TRACE);
        if fast {
            events(builder.event_format(TextFormat::with_timer(Fixed)).finish());
        } else {
            events(builder.with_timer(Fixed).finish());
        }
        out.text()
    }

    #[test]
    fn lines_are_tracing_subscribers_byte_for_byte() {
        let stock = logged(false);
        assert_eq!(logged(true), stock);
        // What the comparison covered.
        assert!(
            stock.starts_with(
                "2026-12-02T02:16:09.007440Z  INFO snowmint::access: request method=POST \
                 route=/api/v1/ids status=200 latency_us=41\n"
            ),
            "{stock}"
        );
        assert!(
            stock.contains("type=\"x\" text=\"quoted \\\"here\\\"\" n=-3 ok=true"),
            "{stock}"
        );
        assert!(
            stock.contains("request{method=GET uri=/healthz}: snowmint::access"),
            "{stock}"
        );
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_microseconds() {
        let at = |secs, micros| {
            let mut s = String::new();
            write_stamp(&mut s, secs, micros).unwrap();
            s
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 1), "2000-02-29T00:00:00.000001Z");
        assert_eq!(at(951_868_799, 999_999), "2000-02-29T23:59:59.999999Z");
        assert_eq!(at(1_709_251_199, 5), "2024-02-29T23:59:59.000005Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000000Z");
        assert_eq!(at(253_402_300_799, 0), "9999-12-31T23:59:59.000000Z");
        let mut s = String::new();
        assert!(write_stamp(&mut s, 253_402_300_800, 0).is_err());
        // The cached second is per second: the next one is written anew.
        assert_eq!(at(86_399, 0), "1970-01-01T23:59:59.000000Z");
        assert_eq!(at(86_400, 0), "1970-01-02T00:00:00.000000Z");
    }

    /// Every day from 1970 to 2200 against a count of days month by month.
    #[test]
    fn every_day_has_its_date() {
        let mut days = 0u64;
        for year in 1970..2200u64 {
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            let lengths = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            for (month, &length) in (1..).zip(lengths.iter()) {
                for day in 1..=length {
                    assert_eq!(civil_from_days(days), (year, month, day), "day {days}");
                    days += 1;
                }
            }
        }
    }

    /// The live clock, written by both, agrees (but for a second boundary
    /// between the two readings).
    #[test]
    fn the_clock_reads_as_tracing_subscribers() {
        for _ in 0..5 {
            let mut ours = String::new();
            let mut theirs = String::new();
            Rfc3339Micros
                .format_time(&mut Writer::new(&mut ours))
                .unwrap();
            tracing_subscriber::fmt::time::SystemTime
                .format_time(&mut Writer::new(&mut theirs))
                .unwrap();
            if ours[..19] == theirs[..19] {
                assert_eq!(ours.len(), theirs.len(), "{ours} {theirs}");
                return;
            }
        }
        panic!("the two clocks never agreed to the second");
    }
}
