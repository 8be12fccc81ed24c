//! Snowflake IDs inside a database: SQL functions for PostgreSQL and
//! MySQL/MariaDB, expressions for SQLite, and time partitions by ID range.
//!
//! The questions people ask of their IDs are asked in SQL: when was this
//! row made, which rows are from last week (through the primary key, with
//! no timestamp column), partition this table by month. [`functions`]
//! writes a script that defines, for a layout's fields (the default prefix
//! is [`DEFAULT_PREFIX`], `snowflake_`):
//!
//! | function | returns |
//! |---|---|
//! | `time(id)` | the time: `timestamptz` (PostgreSQL), `DATETIME(3)` in UTC (MySQL), ISO-8601 text (SQLite) |
//! | `unix_ms(id)` | the time in Unix milliseconds |
//! | one per other field, by its name | `datacenter(id)`, `worker(id)`, `sequence(id)` for Twitter's layout; `shard(id)` for Instagram's |
//! | `min_id(ts)`, `max_id(ts)` | the smallest and largest ID of the time unit of `ts`, for `WHERE id BETWEEN ...` |
//! | `compose(unix_ms, fields...)` | an ID from its values |
//!
//! Input out of range gives `NULL`, where the core would refuse it (an ID
//! that is negative or has bits above the layout's, a time outside the
//! layout's range, a field value above its width). The
//! functions are `IMMUTABLE` (PostgreSQL) and `DETERMINISTIC` (MySQL), so
//! the planner computes calls on constants once; each is one expression
//! over the database's own integer and time arithmetic, exact over the
//! whole range of the layout (not `FROM_UNIXTIME`, which MariaDB stops in
//! 2038). SQLite has no `CREATE FUNCTION`: its script lists the expressions
//! as comments, and with a table, defines a view with one column each.
//!
//! [`partitions`] writes the DDL of one partition per day, week or month
//! ([`Period`]) that starts in a span, with contiguous ID bounds.
//!
//! ```
//! use snowmint::Layout;
//! use snowmint::sql::{self, Dialect, Options, Period};
//!
//! let script = sql::functions(Dialect::Postgres, &Layout::INSTAGRAM, &Options::default())?;
//! assert!(script.contains("CREATE OR REPLACE FUNCTION \"snowflake_shard\"(id bigint) RETURNS integer"));
//!
//! let jan = snowmint::parse_timestamp("2024-01-01T00:00:00Z", 0)?;
//! let apr = snowmint::parse_timestamp("2024-04-01T00:00:00Z", 0)?;
//! let ddl = sql::partitions(Dialect::Postgres, &Layout::TWITTER, "events", "id", Period::Month, jan, apr)?;
//! assert!(ddl.contains(
//!     "CREATE TABLE \"events_2024_01\" PARTITION OF \"events\" \
//!      FOR VALUES FROM (1741610183685046272) TO (1752844207518646272);"
//! ));
//! assert_eq!(ddl.matches("PARTITION OF").count(), 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every name that goes into the SQL text (a table, a column, the prefix)
//! must be a plain identifier ([`check_identifier`]), so no input can change
//! what a script does; and every name from a layout or an option (a field,
//! a function, a table, a column) is quoted, `"user"` (PostgreSQL) or
//! `` `user` `` (MySQL, SQLite), so that no database takes one for a
//! keyword.

mod error;
mod functions;
mod partition;
mod shape;

use alloc::string::String;
use core::fmt;
use core::str::FromStr;

use self::error::Kind;
pub use self::error::SqlError;
pub use self::partition::{Period, partitions};
pub use self::shape::{MAX_COLUMN_LEN, MAX_PREFIX_LEN, MAX_TABLE_LEN, check_identifier};
use self::shape::{Shape, function_name};
use crate::layout::Layout;

/// The prefix of every function's name unless another is asked for.
pub const DEFAULT_PREFIX: &str = "snowflake_";

/// The database a script is for.
///
/// ```
/// use snowmint::sql::Dialect;
/// assert_eq!("MySQL".parse::<Dialect>()?, Dialect::Mysql);
/// assert_eq!(Dialect::Postgres.name(), "postgres");
/// # Ok::<(), snowmint::sql::SqlError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL (12 and later): SQL functions.
    Postgres,
    /// MySQL 8 and MariaDB 10.3 and later: stored functions.
    Mysql,
    /// SQLite: expressions, and a view over a table.
    Sqlite,
}

impl Dialect {
    /// Every dialect, in the order of their names in messages.
    pub const ALL: [Dialect; 3] = [Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite];

    /// `postgres`, `mysql` or `sqlite`: what `--sql`, `snowmint sql` and
    /// `?dialect=` take.
    pub const fn name(self) -> &'static str {
        match self {
            Dialect::Postgres => "postgres",
            Dialect::Mysql => "mysql",
            Dialect::Sqlite => "sqlite",
        }
    }

    /// The names of [`ALL`](Dialect::ALL).
    pub const NAMES: [&'static str; 3] = ["postgres", "mysql", "sqlite"];

    /// Reads a dialect's name (ASCII case-insensitive), naming `field` in
    /// the error (`dialect`, or `sql` for the CLI's `--sql`).
    pub fn parse_for(field: &'static str, s: &str) -> Result<Dialect, SqlError> {
        SqlError::by_name(
            &Dialect::ALL,
            Dialect::name,
            field,
            s,
            "postgres, mysql or sqlite",
        )
    }
}

/// A dialect and a period show as their names (`postgres`, `month`), the
/// names their `FromStr` reads.
macro_rules! display_by_name {
    ($($ty:ty),*) => {$(
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}
display_by_name!(Dialect, Period);

impl FromStr for Dialect {
    type Err = SqlError;

    fn from_str(s: &str) -> Result<Dialect, SqlError> {
        Dialect::parse_for("dialect", s)
    }
}

/// What a script of [`functions`] is made with, besides the dialect and
/// the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'a> {
    /// Put before every function's name ([`DEFAULT_PREFIX`] by default).
    pub prefix: &'a str,
    /// SQLite only: a table to define a view over, `<table>_decoded`, with
    /// a column per function of the ID.
    pub table: Option<&'a str>,
    /// SQLite only: the ID column the expressions read (`id` by default).
    pub column: Option<&'a str>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            prefix: DEFAULT_PREFIX,
            table: None,
            column: None,
        }
    }
}

/// The script of SQL functions (PostgreSQL, MySQL) or expressions (SQLite)
/// for `layout`'s IDs; see the [module](self).
///
/// Refused: a prefix, table or column that is not a plain identifier, a
/// table or column for a dialect other than SQLite (whose functions take
/// the ID as their argument), a column of the name of one the view adds
/// (`snowflake_time`, ...), and a layout field whose function would have
/// the name of another (`time`, `unix_ms`, `min_id`, `max_id`, `compose`).
///
/// ```
/// use snowmint::Layout;
/// use snowmint::sql::{self, Dialect, Options};
///
/// let lite = sql::functions(
///     Dialect::Sqlite,
///     &Layout::TWITTER,
///     &Options { table: Some("events"), ..Options::default() },
/// )?;
/// assert!(lite.contains("CREATE VIEW `events_decoded` AS SELECT `events`.*"));
///
/// let err = sql::functions(
///     Dialect::Mysql,
///     &Layout::TWITTER,
///     &Options { prefix: "sf-", ..Options::default() },
/// )
/// .unwrap_err();
/// assert_eq!(err.field(), "prefix");
/// # Ok::<(), snowmint::sql::SqlError>(())
/// ```
pub fn functions(dialect: Dialect, layout: &Layout, options: &Options) -> Result<String, SqlError> {
    check_identifier("prefix", options.prefix)?;
    for (field, value) in [("table", options.table), ("column", options.column)] {
        let Some(value) = value else { continue };
        if dialect != Dialect::Sqlite {
            return Err(SqlError(Kind::NotFor {
                field,
                dialect: dialect.name(),
                why: "only sqlite takes a table (for a view over it); the functions take the ID",
            }));
        }
        check_identifier(field, value)?;
    }
    let shape = Shape::of(layout);
    for f in &shape.fields {
        function_name(options.prefix, &f.name, true)?;
    }
    match dialect {
        Dialect::Postgres => functions::postgres(&shape, options.prefix),
        Dialect::Mysql => functions::mysql(&shape, options.prefix),
        Dialect::Sqlite => {
            let column = options.column.unwrap_or("id");
            functions::sqlite(&shape, options.prefix, options.table, column)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn dialect_names_round_trip() {
        for d in Dialect::ALL {
            assert_eq!(d.name().parse::<Dialect>().unwrap(), d);
        }
        assert_eq!(Dialect::NAMES, Dialect::ALL.map(Dialect::name));
        let e = Dialect::parse_for("sql", "oracle").unwrap_err();
        assert_eq!(e.field(), "sql");
    }

    #[test]
    fn every_preset_in_every_dialect() {
        for layout in Layout::PRESETS {
            for d in Dialect::ALL {
                let s = functions(d, &layout, &Options::default()).unwrap();
                assert!(s.ends_with(";\n") || s.ends_with("columns.\n"), "{s}");
                // One definition per function.
                let n = 5 + Shape::of(&layout).fields.len();
                let defs = match d {
                    Dialect::Postgres => s.matches("CREATE OR REPLACE FUNCTION").count(),
                    Dialect::Mysql => s.matches("CREATE FUNCTION").count(),
                    Dialect::Sqlite => s.matches("\n-- snowflake_").count(),
                };
                assert_eq!(defs, n, "{}/{d}", layout.name());
            }
        }
    }

    #[test]
    fn options_are_checked() {
        let l = Layout::TWITTER;
        let with = |d, table, column, prefix| {
            functions(
                d,
                &l,
                &Options {
                    prefix,
                    table,
                    column,
                },
            )
        };
        let e = with(Dialect::Postgres, Some("events"), None, "p_").unwrap_err();
        assert_eq!(e.field(), "table");
        assert!(
            e.to_string()
                .starts_with("table cannot be used with postgres"),
            "{e}"
        );
        let e = with(Dialect::Sqlite, Some("ev'ents"), None, "p_").unwrap_err();
        assert_eq!(e.field(), "table");
        let e = with(Dialect::Sqlite, Some("events"), Some("id)"), "p_").unwrap_err();
        assert_eq!(e.field(), "column");
        let e = with(Dialect::Sqlite, None, None, "p;").unwrap_err();
        assert_eq!(e.field(), "prefix");
        let s = with(Dialect::Sqlite, Some("events"), Some("snowflake"), "sf_").unwrap();
        assert!(s.contains("(`snowflake` >> 22)"), "{s}");
        assert!(s.contains(" AS `sf_worker`"), "{s}");
        assert!(!s.contains("(id >> ") && !s.contains("`id`"), "{s}");
        // The view's columns are the functions of the ID, whatever the ID
        // column is called (`ts` and `unix_ms` are also parameters).
        for column in ["ts", "unix_ms", "id"] {
            let s = with(Dialect::Sqlite, Some("events"), Some(column), "sf_").unwrap();
            let view = &s[s.find("CREATE VIEW").unwrap()..];
            assert_eq!(view.matches(" AS `sf_").count(), 5, "{view}");
            assert!(
                !view.contains("sf_min_id") && !view.contains("sf_compose"),
                "{view}"
            );
        }
        let e = with(Dialect::Sqlite, Some("events"), Some("SF_Time"), "sf_").unwrap_err();
        assert_eq!(e.field(), "column");
        assert_eq!(
            e.to_string(),
            "column must not be a column the view adds (sf_time, sf_unix_ms, sf_datacenter, \
             sf_worker, sf_sequence), got \"SF_Time\": use another prefix"
        );
    }

    #[test]
    fn every_name_from_a_layout_or_an_option_is_quoted() {
        let l: Layout = "epoch=0;fields=timestamp:41,partition:5,position:5,sequence:12"
            .parse()
            .unwrap();
        let pg = functions(Dialect::Postgres, &l, &Options::default()).unwrap();
        assert!(
            pg.contains(
                "FUNCTION \"snowflake_compose\"(unix_ms bigint, \"partition\" integer, \
                 \"position\" integer, \"sequence\" integer)"
            ),
            "{pg}"
        );
        assert!(pg.contains("(\"partition\"::bigint << 17)"), "{pg}");
        assert!(
            pg.contains("FUNCTION \"snowflake_position\"(id bigint)"),
            "{pg}"
        );
        let my = functions(Dialect::Mysql, &l, &Options::default()).unwrap();
        assert!(
            my.contains("(unix_ms BIGINT, `partition` INT, `position` INT, `sequence` INT)"),
            "{my}"
        );
        assert!(
            my.contains("DROP FUNCTION IF EXISTS `snowflake_partition`;"),
            "{my}"
        );
        // PostgreSQL folds an unquoted name to lower case: quoted, it is
        // the same name.
        let (a, b) = (1704067200000, 1711929600000);
        let ddl = partitions(Dialect::Postgres, &l, "User", "Order", Period::Month, a, b).unwrap();
        assert!(
            ddl.contains("CREATE TABLE \"user_2024_01\" PARTITION OF \"user\" FOR VALUES"),
            "{ddl}"
        );
        assert!(ddl.contains("PARTITION BY RANGE (\"order\")"), "{ddl}");
        let ddl = partitions(Dialect::Mysql, &l, "user", "order", Period::Month, a, b).unwrap();
        assert!(
            ddl.contains("ALTER TABLE `user` PARTITION BY RANGE (`order`) ("),
            "{ddl}"
        );
    }

    #[test]
    fn functions_of_the_id_refuse_a_value_that_is_not_an_id_of_the_layout() {
        let l: Layout = "epoch=0;fields=timestamp:40,node:8".parse().unwrap();
        for d in Dialect::ALL {
            let s = functions(d, &l, &Options::default()).unwrap();
            let guard = match d {
                Dialect::Sqlite => "CASE WHEN `id` BETWEEN 0 AND 281474976710655 THEN",
                _ => "CASE WHEN id BETWEEN 0 AND 281474976710655 THEN",
            };
            // time, unix_ms and node.
            assert_eq!(s.matches(guard).count(), 3, "{s}");
        }
        // A layout of 63 bits or more takes every bigint that is not negative.
        let s = functions(Dialect::Mysql, &Layout::TWITTER, &Options::default()).unwrap();
        assert_eq!(s.matches("CASE WHEN id >= 0 THEN").count(), 5, "{s}");
    }

    /// `extract` answers numeric from PostgreSQL 14 and a double before
    /// it, so a script using it would compute differently on 12 and 13
    /// than where it is tested; `date_part` is a double on every version.
    #[test]
    fn postgres_scripts_compute_alike_on_every_version() {
        for layout in Layout::PRESETS {
            let s = functions(Dialect::Postgres, &layout, &Options::default()).unwrap();
            assert!(!s.to_ascii_lowercase().contains("extract("), "{s}");
            assert!(s.contains("date_part('epoch', "), "{s}");
        }
    }

    #[test]
    fn partitions_refuse_sqlite_and_bad_names() {
        let l = Layout::TWITTER;
        let (a, b) = (1704067200000, 1711929600000);
        let e = partitions(Dialect::Sqlite, &l, "t", "id", Period::Month, a, b).unwrap_err();
        assert_eq!(e.field(), "sql");
        assert_eq!(
            e.to_string(),
            r#"sql must be postgres or mysql (SQLite has no partitions), got "sqlite""#
        );
        let e = partitions(Dialect::Postgres, &l, "t;", "id", Period::Month, a, b).unwrap_err();
        assert_eq!(e.field(), "table");
        let my = partitions(Dialect::Mysql, &l, "events", "id", Period::Month, a, b).unwrap();
        assert!(
            my.contains("ALTER TABLE `events` PARTITION BY RANGE (`id`) ("),
            "{my}"
        );
        let min = |ms| l.min_id_at(ms).unwrap();
        let mar = format!("  PARTITION p2024_03 VALUES LESS THAN ({}) -- ", min(b));
        let before = format!("  PARTITION p_before VALUES LESS THAN ({}), -- ", min(a));
        assert!(my.contains(&mar) && my.contains(&before), "{my}");
    }
}
