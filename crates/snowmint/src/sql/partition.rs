//! Time partitions by ID range: [`Period`] (day, week, month in UTC) and
//! the DDL of the partitions that start in a span.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;
use core::str::FromStr;

use super::Dialect;
use super::error::{Kind, SqlError};
use super::shape::{Shape, check_identifier, ident};
use crate::layout::Layout;
use crate::time::{Iso8601, civil_from_days, days_from_civil};

const DAY_MS: u64 = 86_400_000;

/// How long one partition is: a day, an ISO week (Monday to Sunday) or a
/// month, in UTC.
///
/// ```
/// use snowmint::sql::Period;
/// assert_eq!("month".parse::<Period>()?, Period::Month);
/// assert_eq!(
///     "year".parse::<Period>().unwrap_err().to_string(),
///     r#"partition must be day, week or month, got "year""#
/// );
/// # Ok::<(), snowmint::sql::SqlError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Period {
    /// From midnight to midnight, UTC.
    Day,
    /// From Monday 00:00 UTC to the next; named by ISO week (`2024_w01`).
    Week,
    /// From the first of a month, 00:00 UTC, to the first of the next.
    Month,
}

impl Period {
    /// Every period, shortest first.
    pub const ALL: [Period; 3] = [Period::Day, Period::Week, Period::Month];

    /// The names of [`ALL`](Period::ALL).
    pub const NAMES: [&'static str; 3] = ["day", "week", "month"];

    /// `day`, `week` or `month`.
    pub const fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// The start of the period that holds `ms` (Unix ms, not negative).
    fn start_of(self, ms: u64) -> u64 {
        let days = (ms / DAY_MS) as i64;
        let start = match self {
            Period::Day => days,
            // 1970-01-01 was a Thursday: Monday is 0 here.
            Period::Week => days - (days + 3).rem_euclid(7),
            Period::Month => {
                let (y, m, _) = civil_from_days(days);
                days_from_civil(y, m, 1)
            }
        };
        start as u64 * DAY_MS
    }

    /// The start of the period after the one that starts at `start`.
    fn next(self, start: u64) -> u64 {
        match self {
            Period::Day => start + DAY_MS,
            Period::Week => start + 7 * DAY_MS,
            Period::Month => {
                let (y, m, _) = civil_from_days((start / DAY_MS) as i64);
                let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                days_from_civil(y, m, 1) as u64 * DAY_MS
            }
        }
    }

    /// The first start at or after `ms`.
    fn first_from(self, ms: u64) -> u64 {
        let start = self.start_of(ms);
        if start == ms { start } else { self.next(start) }
    }

    /// The name of the period that starts at `start`: `2024_01_31`,
    /// `2024_w05` (the ISO week) or `2024_01`.
    fn suffix(self, start: u64) -> String {
        let days = (start / DAY_MS) as i64;
        let (y, m, d) = civil_from_days(days);
        match self {
            Period::Day => format!("{y:04}_{m:02}_{d:02}"),
            Period::Week => {
                // The ISO week is the one of its Thursday, in that year.
                let thursday = days + 3;
                let (iso_year, _, _) = civil_from_days(thursday);
                let week = (thursday - days_from_civil(iso_year, 1, 1)) / 7 + 1;
                format!("{iso_year:04}_w{week:02}")
            }
            Period::Month => format!("{y:04}_{m:02}"),
        }
    }
}

impl FromStr for Period {
    type Err = SqlError;

    /// `day`, `week` or `month`, ASCII case-insensitive.
    fn from_str(s: &str) -> Result<Period, SqlError> {
        SqlError::by_name(
            &Period::ALL,
            Period::name,
            "partition",
            s,
            "day, week or month",
        )
    }
}

/// One partition: where it starts and ends (Unix ms), its name, and its
/// bounds as IDs (`None`: below every ID, or above).
struct Part {
    start: u64,
    end: u64,
    suffix: String,
    lower: Option<u64>,
    upper: Option<u64>,
}

/// The partitions of the periods that start in `[from_ms, to_ms)`.
fn parts(shape: &Shape, period: Period, from_ms: u64, to_ms: u64) -> Result<Vec<Part>, SqlError> {
    let first = period.first_from(from_ms);
    if first >= to_ms {
        return Err(SqlError(Kind::NoPeriod {
            period: period.name(),
            first_ms: first,
            to_ms,
        }));
    }
    let bound = |ms: u64| {
        (shape.min_ms..=shape.max_ms)
            .contains(&ms)
            .then(|| shape.min_id(ms))
    };
    let mut out = Vec::new();
    let mut start = first;
    while start < to_ms {
        let end = period.next(start);
        out.push(Part {
            start,
            end,
            suffix: period.suffix(start),
            lower: if start < shape.min_ms {
                None
            } else {
                bound(start)
            },
            upper: bound(end),
        });
        start = end;
    }
    Ok(out)
}

/// A lower bound as PostgreSQL writes it.
fn pg_bound(id: Option<u64>, missing: &str) -> String {
    id.map_or_else(|| String::from(missing), |id| format!("{id}"))
}

/// `2024-01-01 ..< 2024-02-01`, for a comment.
fn span(p: &Part) -> String {
    format!("{} ..< {}", Iso8601(p.start as i64), Iso8601(p.end as i64))
}

/// The DDL of one partition of `table` per [`Period`] that starts in
/// `[from_ms, to_ms)` (Unix ms, UTC), ranged on the ID column `column`:
/// each from the smallest ID of its first millisecond up to, not
/// including, the smallest ID of the next period's, so the ranges are
/// contiguous. PostgreSQL gets, per period,
/// `CREATE TABLE T_2024_01 PARTITION OF T FOR VALUES FROM (min) TO (next min)`
/// (suffixes `2024_01`, `2024_w01` for ISO weeks, `2024_01_31`), with the
/// parent's DDL as a comment; MySQL an
/// `ALTER TABLE T PARTITION BY RANGE (id) (PARTITION p2024_01 VALUES LESS THAN (next min), ...)`.
/// A bound past the layout's last ID is `MAXVALUE`.
///
/// Refused: SQLite (naming `sql`), a table or column that is not a plain
/// identifier, and a span in which no period starts (naming `to`).
pub fn partitions(
    dialect: Dialect,
    layout: &Layout,
    table: &str,
    column: &str,
    period: Period,
    from_ms: u64,
    to_ms: u64,
) -> Result<String, SqlError> {
    check_identifier("table", table)?;
    check_identifier("column", column)?;
    let shape = &Shape::of(layout);
    if dialect == Dialect::Sqlite {
        return Err(SqlError::unknown(
            "sql",
            dialect.name(),
            "postgres or mysql (SQLite has no partitions)",
        ));
    }
    let parts = parts(shape, period, from_ms, to_ms)?;
    let (first, last) = (&parts[0], &parts[parts.len() - 1]);
    let mut out = String::new();
    let _ = write!(
        out,
        "-- Partitions of {table} by {period}, UTC, for the {} layout's IDs in {column}:\n\
         -- the {count} {period}s that start in [{}, {}).\n\
         -- Each holds the IDs from the smallest of its first millisecond up to, not\n\
         -- including, the smallest of the next {period}'s: contiguous, so every ID\n\
         -- finds exactly one.\n",
        shape.name,
        Iso8601(from_ms as i64),
        Iso8601(to_ms as i64),
        count = parts.len(),
    );
    // Quoted: `user`, `order` and `partition` are tables too.
    let (q_table, q_column) = (ident(dialect, table), ident(dialect, column));
    match dialect {
        Dialect::Postgres => {
            let _ = write!(
                out,
                "-- The parent table, if it does not exist yet (the key must hold {column}):\n\
                 --   CREATE TABLE {q_table} ({q_column} bigint NOT NULL, ..., PRIMARY KEY ({q_column})) PARTITION BY RANGE ({q_column});\n"
            );
            for p in &parts {
                let _ = writeln!(
                    out,
                    "CREATE TABLE {} PARTITION OF {q_table} FOR VALUES FROM ({}) TO ({}); -- {}",
                    ident(dialect, &format!("{table}_{}", p.suffix)),
                    pg_bound(p.lower, "MINVALUE"),
                    pg_bound(p.upper, "MAXVALUE"),
                    span(p),
                );
            }
        }
        Dialect::Mysql | Dialect::Sqlite => {
            let _ = write!(
                out,
                "-- MySQL names only upper bounds: p_before takes the IDs below the first\n\
                 -- {period}. A new table takes the same PARTITION BY clause in its CREATE TABLE\n\
                 -- (every unique key must hold {column}):\n\
                 --   CREATE TABLE {q_table} ({q_column} BIGINT NOT NULL, ..., PRIMARY KEY ({q_column})) PARTITION BY RANGE ({q_column}) (...);\n"
            );
            if last.upper.is_some() {
                let after = period.next(last.end);
                let upper = (shape.min_ms..=shape.max_ms)
                    .contains(&after)
                    .then(|| shape.min_id(after));
                let _ = writeln!(
                    out,
                    "-- The next {period}, later:\n\
                     --   ALTER TABLE {q_table} ADD PARTITION (PARTITION p{} VALUES LESS THAN {});",
                    period.suffix(last.end),
                    my_bound(upper),
                );
            }
            let _ = writeln!(
                out,
                "ALTER TABLE {q_table} PARTITION BY RANGE ({q_column}) ("
            );
            // (definition, comment): the comma goes between them.
            let mut lines = Vec::new();
            if let Some(lower) = first.lower.filter(|&l| l > 0) {
                lines.push((
                    format!("  PARTITION p_before VALUES LESS THAN ({lower})"),
                    format!("before {}", Iso8601(first.start as i64)),
                ));
            }
            for p in &parts {
                lines.push((
                    format!(
                        "  PARTITION p{} VALUES LESS THAN {}",
                        p.suffix,
                        my_bound(p.upper)
                    ),
                    span(p),
                ));
            }
            let n = lines.len();
            for (i, (code, comment)) in lines.iter().enumerate() {
                let comma = if i + 1 < n { "," } else { "" };
                let _ = writeln!(out, "{code}{comma} -- {comment}");
            }
            let _ = writeln!(out, ");");
        }
    }
    Ok(out)
}

/// An upper bound as MySQL writes it.
fn my_bound(id: Option<u64>) -> String {
    id.map_or_else(|| String::from("MAXVALUE"), |id| format!("({id})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::time::parse_iso8601;

    fn ms(iso: &str) -> u64 {
        parse_iso8601(iso).unwrap() as u64
    }

    #[test]
    fn periods_start_and_end_in_utc() {
        let jan15 = ms("2024-01-15T12:00:00Z");
        assert_eq!(Period::Month.first_from(jan15), ms("2024-02-01"));
        assert_eq!(Period::Month.first_from(ms("2024-01-01")), ms("2024-01-01"));
        assert_eq!(Period::Month.next(ms("2024-12-01")), ms("2025-01-01"));
        assert_eq!(Period::Month.next(ms("2024-02-01")), ms("2024-03-01"));
        assert_eq!(Period::Day.first_from(jan15), ms("2024-01-16"));
        // 2024-01-15 is a Monday.
        assert_eq!(Period::Week.first_from(jan15), ms("2024-01-22"));
        assert_eq!(Period::Week.first_from(ms("2024-01-15")), ms("2024-01-15"));
        assert_eq!(
            Period::Week.start_of(ms("2024-01-21T23:59:59.999Z")),
            ms("2024-01-15")
        );
    }

    #[test]
    fn names() {
        assert_eq!(Period::Month.suffix(ms("2024-01-01")), "2024_01");
        assert_eq!(Period::Day.suffix(ms("2024-02-29")), "2024_02_29");
        // ISO weeks: 2024-01-01 is a Monday of week 1; 2020-12-28 is in
        // week 53 of 2020; 2018-12-31 is in week 1 of 2019.
        assert_eq!(Period::Week.suffix(ms("2024-01-01")), "2024_w01");
        assert_eq!(Period::Week.suffix(ms("2020-12-28")), "2020_w53");
        assert_eq!(Period::Week.suffix(ms("2018-12-31")), "2019_w01");
    }

    #[test]
    fn contiguous_bounds() {
        let shape = Shape::of(&Layout::TWITTER);
        let parts = parts(&shape, Period::Month, ms("2024-01-01"), ms("2024-04-01")).unwrap();
        let suffixes: Vec<_> = parts.iter().map(|p| p.suffix.as_str()).collect();
        assert_eq!(suffixes, ["2024_01", "2024_02", "2024_03"]);
        for w in parts.windows(2) {
            assert_eq!(w[0].upper, w[1].lower);
        }
        let jan = Layout::TWITTER.min_id_at(ms("2024-01-01")).unwrap().get();
        let apr = Layout::TWITTER.min_id_at(ms("2024-04-01")).unwrap().get();
        assert_eq!((parts[0].lower, parts[2].upper), (Some(jan), Some(apr)));
        // The last month of the format: its end is past every ID.
        let end = parts_at_end();
        assert_eq!(end.last().unwrap().upper, None);
    }

    fn parts_at_end() -> Vec<Part> {
        let shape = Shape::of(&Layout::TWITTER);
        parts(&shape, Period::Month, ms("2080-06-01"), shape.max_ms).unwrap()
    }

    #[test]
    fn no_period_in_the_span() {
        let shape = Shape::of(&Layout::TWITTER);
        let e = parts(&shape, Period::Month, ms("2024-01-02"), ms("2024-02-01"))
            .err()
            .unwrap();
        assert_eq!(e.field(), "to");
        assert_eq!(
            e.to_string(),
            "to must be after the first month that starts at or after from, \
             2024-02-01T00:00:00.000Z (1706745600000), got 2024-02-01T00:00:00.000Z \
             (1706745600000): no month starts in [from, to)"
        );
    }
}
