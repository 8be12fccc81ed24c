//! Time spans: the IDs of `from..=to`, and times as people type them.

use super::Layout;
use crate::error::{Error, Field};
use crate::id::SnowflakeId;
use crate::parse::{ParsedInt, parse_int};

impl Layout {
    /// The IDs of a time span: every ID whose timestamp lies in
    /// `from_ms..=to_ms` (both inclusive), on every datacenter and worker,
    /// is in `min..=max`; for `WHERE id BETWEEN min AND max` and for paging
    /// APIs that take IDs (Discord's `before` and `after`). In a layout of
    /// coarser time units the span covers whole units.
    ///
    /// Out-of-range times are refused naming `from` or `to`, and so is a
    /// span that ends before it starts (naming `to`).
    ///
    /// ```
    /// use snowmint::Layout;
    /// let span = Layout::TWITTER.span(1288834975657, 1288834975658)?;
    /// assert_eq!(span.min.get(), 1000 << 22);
    /// assert_eq!(span.max.get(), (1001 << 22) | 4194303);
    /// assert_eq!(span.slots(), 2 << 22);
    /// assert_eq!(
    ///     Layout::TWITTER.span(1288834975658, 1288834975657).unwrap_err().to_string(),
    ///     "to must be at or after from 1288834975658 (2010-11-04T01:42:55.658Z), \
    ///      got 1288834975657 (2010-11-04T01:42:55.657Z)"
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn span(&self, from_ms: u64, to_ms: u64) -> Result<IdSpan, Error> {
        if !self.contains(Field::From, from_ms) {
            return Err(self.range_error(Field::From, from_ms));
        }
        if !self.contains(Field::To, to_ms) {
            return Err(self.range_error(Field::To, to_ms));
        }
        if from_ms > to_ms {
            return Err(Error::order(from_ms, to_ms));
        }
        Ok(IdSpan {
            from_ms,
            to_ms,
            min: self.min_id_at(from_ms)?,
            max: self.max_id_at(to_ms)?,
        })
    }

    /// [`span`](Layout::span) of two times as people type them (see
    /// [`parse_timestamp`](Layout::parse_timestamp)); `to` missing means
    /// the same time as `from`. Errors name `from` or `to`.
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    /// let span = Layout::TWITTER.parse_span("2024-01-01T00:00:00Z", None, 0)?;
    /// assert_eq!((span.from_ms, span.to_ms), (1704067200000, 1704067200000));
    /// let err = Layout::TWITTER.parse_span("now", Some("soon"), 1704067200000).unwrap_err();
    /// assert_eq!(err.field(), Field::To);
    /// assert!(err.to_string().starts_with("to must be Unix milliseconds or an ISO-8601 time"));
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn parse_span(&self, from: &str, to: Option<&str>, now_ms: u64) -> Result<IdSpan, Error> {
        let from_ms = self.parse_time_field(Field::From, from, now_ms)?;
        let to_ms = match to {
            Some(to) => self.parse_time_field(Field::To, to, now_ms)?,
            None => from_ms,
        };
        self.span(from_ms, to_ms)
    }

    /// Parses a timestamp as people type it: `now` (the given `now_ms`),
    /// Unix milliseconds, or ISO-8601 / RFC 3339 text; then checks it
    /// against the layout's range. See [`parse_timestamp`](crate::parse_timestamp).
    pub fn parse_timestamp(&self, input: &str, now_ms: u64) -> Result<u64, Error> {
        self.parse_time_field(Field::Timestamp, input, now_ms)
    }

    /// [`parse_timestamp`](Layout::parse_timestamp) for a time field named
    /// `field` (`timestamp`, `from` or `to`).
    fn parse_time_field(&self, field: Field, input: &str, now_ms: u64) -> Result<u64, Error> {
        let trimmed = input.trim();
        if trimmed.eq_ignore_ascii_case("now") {
            return self.check(field, now_ms);
        }
        let (min, max) = self.range(field);
        let syntax = || {
            Error::syntax(
                field,
                input,
                "Unix milliseconds or an ISO-8601 time",
                min,
                max,
            )
        };
        if trimmed.contains(['-', ':', 'T']) && !trimmed.starts_with('-') {
            return match crate::time::parse_iso8601(trimmed) {
                Some(ms) if ms < 0 => Err(Error::timestamp_in(field, i128::from(ms), min, max)),
                Some(ms) => self.check(field, ms as u64),
                None => Err(syntax()),
            };
        }
        match parse_int(input) {
            ParsedInt::NotANumber => Err(syntax()),
            _ => self.parse_field(field, input),
        }
    }
}

/// The IDs of a time span, from [`Layout::span`]: with the `serde` feature
/// it serializes to exactly `{"from_ms": N, "to_ms": N, "min": "ID", "max":
/// "ID"}` (the CLI's `range --json` and `GET /api/v1/range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IdSpan {
    /// The first millisecond, Unix ms.
    pub from_ms: u64,
    /// The last millisecond, Unix ms (inclusive).
    pub to_ms: u64,
    /// The smallest ID of `from_ms`.
    pub min: SnowflakeId,
    /// The largest ID of `to_ms`.
    pub max: SnowflakeId,
}

impl IdSpan {
    /// How many IDs the span can hold: `max - min + 1`, every slot of every
    /// millisecond on every datacenter and worker.
    pub const fn slots(&self) -> u64 {
        self.max.get() - self.min.get() + 1
    }
}
