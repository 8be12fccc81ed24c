//! The functions as SQL text: one expression per function and dialect
//! ([`Exprs`]), and the scripts around them (PostgreSQL and MySQL
//! functions, SQLite's commented expressions and view).
//!
//! Every operator is parenthesised: PostgreSQL and SQLite give `<<`, `>>`,
//! `&` and `|` one precedence (so `a << 22 | b` would shift `a | b`), and
//! bind `+` tighter than all of them. Every name that comes from a layout
//! or an option (a field, a function, a column) is quoted ([`ident`]).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::Dialect;
use super::error::{Kind, SqlError};
use super::shape::{Shape, ShapeField, function_name, ident};
use crate::time::Iso8601;

/// The expressions of one dialect over one shape.
pub(crate) struct Exprs<'a> {
    pub shape: &'a Shape,
    pub dialect: Dialect,
}

impl Exprs<'_> {
    /// `id >> shift`, or `id` when the shift is 0.
    fn shifted(id: &str, shift: u32) -> String {
        if shift == 0 {
            String::from(id)
        } else {
            format!("({id} >> {shift})")
        }
    }

    /// Unix milliseconds of `id`, unsigned in MySQL (where bit operations
    /// are), signed elsewhere.
    fn raw_unix_ms(&self, id: &str) -> String {
        let s = self.shape;
        let mut units = Exprs::shifted(id, s.time_shift);
        if s.unit_ms != 1 {
            units = format!("({units} * {})", s.unit_ms);
        }
        if s.epoch_ms == 0 {
            units
        } else {
            format!("({} + {units})", s.epoch_ms)
        }
    }

    /// `expr`, a function of `id`, where `id` is an ID of the layout (not
    /// negative, no bit above the layout's set), else NULL: the core
    /// refuses such an ID, and the bit arithmetic would read a time and
    /// fields out of it (or, in MySQL, of its unsigned wrap).
    pub fn of_id(&self, id: &str, expr: String) -> String {
        if self.shape.max_id == crate::MAX_ID {
            // Every bigint that is not negative.
            format!("CASE WHEN {id} >= 0 THEN {expr} END")
        } else {
            format!(
                "CASE WHEN {id} BETWEEN 0 AND {} THEN {expr} END",
                self.shape.max_id
            )
        }
    }

    /// `unix_ms(id)`: the ID's (time unit's first) Unix millisecond.
    pub fn unix_ms(&self, id: &str) -> String {
        let ms = self.raw_unix_ms(id);
        match self.dialect {
            Dialect::Mysql => format!("CAST({ms} AS SIGNED)"),
            _ => ms,
        }
    }

    /// The value of one field of `id`.
    pub fn field(&self, f: &ShapeField, id: &str) -> String {
        let v = format!("({} & {})", Exprs::shifted(id, f.shift), f.max());
        match self.dialect {
            // The function returns an integer where the values fit one.
            Dialect::Postgres if f.bits <= 31 => format!("{v}::integer"),
            Dialect::Mysql => format!("CAST({v} AS SIGNED)"),
            _ => v,
        }
    }

    /// `time(id)`: timestamptz (PostgreSQL), DATETIME(3) in UTC (MySQL),
    /// ISO-8601 text (SQLite).
    pub fn time(&self, id: &str) -> String {
        let ms = self.raw_unix_ms(id);
        match self.dialect {
            // timestamp + interval and AT TIME ZONE 'UTC' are immutable
            // (timestamptz + interval is not); whole hours, then the
            // milliseconds within the hour, keep the interval arithmetic
            // (in doubles) exact to the end of PostgreSQL's range.
            Dialect::Postgres => format!(
                "((timestamp '1970-01-01 00:00:00' + ({ms} / 3600000) * interval '1 hour' \
                 + ({ms} % 3600000) * interval '1 millisecond') AT TIME ZONE 'UTC')"
            ),
            // Not FROM_UNIXTIME: it depends on the session's time zone and
            // stops in 2038 in MariaDB.
            Dialect::Mysql => format!(
                "CAST(TIMESTAMPADD(MICROSECOND, {ms} * 1000, TIMESTAMP'1970-01-01 00:00:00') \
                 AS DATETIME(3))"
            ),
            Dialect::Sqlite => {
                format!("strftime('%Y-%m-%dT%H:%M:%fZ', {ms} / 1000.0, 'unixepoch')")
            }
        }
    }

    /// `min_id(ts)` (`max` false) or `max_id(ts)` (`max` true): NULL
    /// outside the layout's range.
    pub fn bound_id(&self, ts: &str, max: bool) -> String {
        let s = self.shape;
        let low = s.low_mask();
        let or_low = |v: String| {
            if max && low != 0 {
                format!("({v} | {low})")
            } else {
                v
            }
        };
        let units = |ms: String| {
            let delta = if s.epoch_ms == 0 {
                ms
            } else {
                format!("({ms} - {})", s.epoch_ms)
            };
            let units = if s.unit_ms == 1 {
                delta
            } else {
                let div = if self.dialect == Dialect::Mysql {
                    "DIV"
                } else {
                    "/"
                };
                format!("({delta} {div} {})", s.unit_ms)
            };
            if s.time_shift == 0 {
                units
            } else {
                format!("({units} << {})", s.time_shift)
            }
        };
        match self.dialect {
            Dialect::Postgres => {
                // Whole days (date arithmetic, an integer) and the
                // microseconds of the day, floored to the millisecond: a
                // microsecond before the epoch is out of range, not the
                // epoch. date_part is a double on every version (extract
                // is numeric only from 14, and a double of the seconds
                // since 1970 floors some milliseconds after 2038 one
                // early); the microseconds of one day are exact in it,
                // and rounded back to an integer.
                let utc = format!("({ts} AT TIME ZONE 'UTC')");
                let ms = format!(
                    "((({utc}::date - date '1970-01-01')::bigint * 86400000) \
                     + ((date_part('epoch', {utc}::time) * 1000000)::bigint / 1000))"
                );
                // An infinite time is out of range too (its date cannot
                // be subtracted from): the first arm keeps it from the
                // arithmetic, at run time and when the planner folds a
                // constant.
                format!(
                    "CASE WHEN NOT isfinite({ts}) THEN NULL WHEN {ms} BETWEEN {} AND {} THEN {} END",
                    s.min_ms,
                    s.max_ms,
                    or_low(units(ms.clone()))
                )
            }
            Dialect::Mysql => {
                let us =
                    format!("TIMESTAMPDIFF(MICROSECOND, TIMESTAMP'1970-01-01 00:00:00', {ts})");
                format!(
                    "CASE WHEN {us} BETWEEN {} AND {} THEN CAST({} AS SIGNED) END",
                    u128::from(s.min_ms) * 1000,
                    u128::from(s.max_ms) * 1000 + 999,
                    or_low(units(format!("({us} DIV 1000)")))
                )
            }
            Dialect::Sqlite => {
                let ms =
                    format!("CAST(round((julianday({ts}) - 2440587.5) * 86400000) AS INTEGER)");
                format!(
                    "CASE WHEN {ms} BETWEEN {} AND {} THEN {} END",
                    s.min_ms,
                    s.max_ms,
                    or_low(units(ms.clone()))
                )
            }
        }
    }

    /// `compose(unix_ms, fields...)`, over arguments named `unix_ms` and
    /// each field's name: NULL when any is out of range.
    pub fn compose(&self) -> String {
        let s = self.shape;
        let mut cond = format!("unix_ms BETWEEN {} AND {}", s.min_ms, s.max_ms);
        for f in &s.fields {
            let _ = write!(
                cond,
                " AND {} BETWEEN 0 AND {}",
                ident(self.dialect, &f.name),
                f.max()
            );
        }
        let div = if self.dialect == Dialect::Mysql {
            "DIV"
        } else {
            "/"
        };
        let mut delta = if s.epoch_ms == 0 {
            String::from("unix_ms")
        } else {
            format!("(unix_ms - {})", s.epoch_ms)
        };
        if s.unit_ms != 1 {
            delta = format!("({delta} {div} {})", s.unit_ms);
        }
        let mut parts = Vec::new();
        parts.push(if s.time_shift == 0 {
            delta
        } else {
            format!("({delta} << {})", s.time_shift)
        });
        for f in &s.fields {
            // A PostgreSQL integer shifted by 32 or more would overflow.
            let v = match self.dialect {
                Dialect::Postgres => format!("{}::bigint", ident(self.dialect, &f.name)),
                _ => ident(self.dialect, &f.name),
            };
            parts.push(if f.shift == 0 {
                v
            } else {
                format!("({v} << {})", f.shift)
            });
        }
        let mut value = parts.join(" | ");
        if parts.len() > 1 {
            value = format!("({value})");
        }
        if self.dialect == Dialect::Mysql {
            value = format!("CAST({value} AS SIGNED)");
        }
        format!("CASE WHEN {cond} THEN {value} END")
    }
}

/// One function: its name without the prefix, its arguments, what it
/// returns, the expression, and what it is for.
struct Function {
    name: String,
    /// A function of the ID (a column of SQLite's view).
    of_id: bool,
    args: Vec<(String, &'static str)>,
    returns: &'static str,
    body: String,
    doc: String,
}

/// SQL types of the dialects.
struct Types {
    bigint: &'static str,
    int: &'static str,
    time: &'static str,
    /// What `min_id` and `max_id` take.
    time_in: &'static str,
}

const PG: Types = Types {
    bigint: "bigint",
    int: "integer",
    time: "timestamptz",
    time_in: "timestamptz",
};

const MY: Types = Types {
    bigint: "BIGINT",
    int: "INT",
    time: "DATETIME(3)",
    // Microseconds in, so a time is floored to its millisecond rather
    // than rounded (MySQL rounds when it narrows a DATETIME).
    time_in: "DATETIME(6)",
};

const LITE: Types = Types {
    bigint: "INTEGER",
    int: "INTEGER",
    time: "TEXT",
    time_in: "TEXT",
};

/// The type of a field: a 32-bit integer when its values fit one.
fn field_type(t: &Types, f: &ShapeField) -> &'static str {
    if f.bits <= 31 { t.int } else { t.bigint }
}

/// Every function of a shape, in the order the script defines them; `id`
/// is the ID as the expressions read it (a parameter, or SQLite's column).
fn all(shape: &Shape, dialect: Dialect, id: &str) -> Vec<Function> {
    let e = Exprs { shape, dialect };
    let t = match dialect {
        Dialect::Postgres => &PG,
        Dialect::Mysql => &MY,
        Dialect::Sqlite => &LITE,
    };
    let mut out = Vec::new();
    let one = |name: &str, returns, body, doc: String| Function {
        name: name.into(),
        of_id: true,
        args: alloc::vec![(String::from(id), t.bigint)],
        returns,
        body: e.of_id(id, body),
        doc,
    };
    let zone = match dialect {
        Dialect::Postgres => "",
        Dialect::Mysql => " (DATETIME in UTC)",
        Dialect::Sqlite => " (ISO-8601 text in UTC)",
    };
    out.push(one(
        "time",
        t.time,
        e.time(id),
        format!("The time of a Snowflake ID{zone}, NULL for a value that is not one"),
    ));
    out.push(one(
        "unix_ms",
        t.bigint,
        e.unix_ms(id),
        "The time of a Snowflake ID in Unix milliseconds, NULL for a value that is not one".into(),
    ));
    for f in &shape.fields {
        out.push(one(
            &f.name,
            field_type(t, f),
            e.field(f, id),
            format!(
                "The {} field of a Snowflake ID ({} bits), NULL for a value that is not one",
                f.name, f.bits
            ),
        ));
    }
    let bound = |name: &str, max: bool, doc: &str| Function {
        name: name.into(),
        of_id: false,
        args: alloc::vec![(String::from("ts"), t.time_in)],
        returns: t.bigint,
        body: e.bound_id("ts", max),
        doc: doc.into(),
    };
    out.push(bound(
        "min_id",
        false,
        "The smallest Snowflake ID of the time unit of ts, NULL outside the layout's range",
    ));
    out.push(bound(
        "max_id",
        true,
        "The largest Snowflake ID of the time unit of ts, NULL outside the layout's range",
    ));
    let mut args = alloc::vec![(String::from("unix_ms"), t.bigint)];
    args.extend(
        shape
            .fields
            .iter()
            .map(|f| (ident(dialect, &f.name), field_type(t, f))),
    );
    out.push(Function {
        name: "compose".into(),
        of_id: false,
        args,
        returns: t.bigint,
        body: e.compose(),
        doc: "A Snowflake ID from its time in Unix milliseconds and its fields, NULL when one is out of range".into(),
    });
    out
}

/// `'text'` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The header every script starts with: what it holds, the command line
/// that makes it, the layout and its range.
fn header(
    dialect: Dialect,
    shape: &Shape,
    prefix: &str,
    table: Option<&str>,
    column: &str,
) -> String {
    let title = match dialect {
        Dialect::Postgres => "functions for PostgreSQL",
        Dialect::Mysql => "functions for MySQL and MariaDB",
        Dialect::Sqlite => "expressions for SQLite",
    };
    // The command line that makes the script.
    let mut command = format!("snowmint sql {}", dialect.name());
    if !shape.preset {
        // A spec holds `;`: quote it for the shell (it has no `'`).
        let _ = write!(command, " --layout '{}'", shape.name);
    } else if shape.name != "twitter" {
        let _ = write!(command, " --layout {}", shape.name);
    }
    if prefix != super::DEFAULT_PREFIX {
        let _ = write!(command, " --prefix {prefix}");
    }
    if let Some(table) = table {
        let _ = write!(command, " --table {table}");
    }
    if column != "id" {
        let _ = write!(command, " --column {column}");
    }
    let mut out = String::new();
    let _ = writeln!(out, "-- Snowflake ID {title}: the {} layout.", shape.name);
    let _ = writeln!(out, "-- Made by `{command}`.");
    let _ = writeln!(out, "--");
    let unit = if shape.unit_ms == 1 {
        String::from("1 ms")
    } else {
        format!("{} ms", shape.unit_ms)
    };
    let _ = writeln!(
        out,
        "-- Epoch {} ({}), time unit {unit}. The fields, from the most significant bit:",
        shape.epoch_ms,
        Iso8601(shape.epoch_ms as i64)
    );
    let top = shape.time_shift + shape.time_bits - 1;
    let mut fields = format!(
        "timestamp {} bits ({top}..{})",
        shape.time_bits, shape.time_shift
    );
    for f in &shape.fields {
        let _ = write!(
            fields,
            ", {} {} ({}..{})",
            f.name,
            f.bits,
            f.shift + f.bits - 1,
            f.shift
        );
    }
    let _ = writeln!(out, "--   {fields}.");
    let _ = writeln!(
        out,
        "-- IDs hold the times {} ..= {} (UTC).",
        Iso8601(shape.min_ms as i64),
        Iso8601(shape.max_ms as i64)
    );
    out
}

/// The PostgreSQL script.
pub(crate) fn postgres(shape: &Shape, prefix: &str) -> Result<String, SqlError> {
    let functions = all(shape, Dialect::Postgres, "id");
    let mut out = header(Dialect::Postgres, shape, prefix, None, "id");
    let name = |n: &str| function_name(prefix, n, false);
    let field = shape.fields.last().map_or("unix_ms", |f| f.name.as_str());
    let _ = write!(
        out,
        "--\n\
         -- Every function is IMMUTABLE: the planner computes a call on constants\n\
         -- once, so `id BETWEEN {min}(a) AND {max}(b)` is a range scan of\n\
         -- the primary key. Input out of range gives NULL (a negative ID, or one\n\
         -- with bits above the layout's). Times are timestamptz: give them a zone.\n\
         --\n\
         --   SELECT {time}(id), {field}(id) FROM events WHERE id = 1541815603606036480;\n\
         --   SELECT count(*) FROM events\n\
         --    WHERE id BETWEEN {min}('2024-01-01Z') AND {max}('2024-01-31 23:59:59.999Z');\n\n",
        min = name("min_id")?,
        max = name("max_id")?,
        time = name("time")?,
        field = function_name(prefix, field, false)?,
    );
    // Not STRICT: PostgreSQL never inlines a STRICT function whose body
    // is a CASE (every body is one), and each body is NULL for a NULL
    // argument as it is.
    for f in &functions {
        let fname = ident(Dialect::Postgres, &function_name(prefix, &f.name, false)?);
        let args: Vec<String> = f.args.iter().map(|(n, t)| format!("{n} {t}")).collect();
        let types: Vec<&str> = f.args.iter().map(|(_, t)| *t).collect();
        let _ = write!(
            out,
            "CREATE OR REPLACE FUNCTION {fname}({}) RETURNS {}\n\
             LANGUAGE sql IMMUTABLE PARALLEL SAFE\n\
             AS $$ SELECT {} $$;\n\
             COMMENT ON FUNCTION {fname}({}) IS {};\n\n",
            args.join(", "),
            f.returns,
            f.body,
            types.join(", "),
            literal(&f.doc),
        );
    }
    trim_end(&mut out);
    Ok(out)
}

/// The MySQL / MariaDB script.
pub(crate) fn mysql(shape: &Shape, prefix: &str) -> Result<String, SqlError> {
    let functions = all(shape, Dialect::Mysql, "id");
    let mut out = header(Dialect::Mysql, shape, prefix, None, "id");
    let name = |n: &str| function_name(prefix, n, false);
    let _ = write!(
        out,
        "--\n\
         -- Load with `mariadb DATABASE < FILE` (or mysql): each function is a single\n\
         -- RETURN, so no DELIMITER is needed. Every function is DETERMINISTIC and\n\
         -- NO SQL (so binary logging accepts it); input out of range gives NULL\n\
         -- (a negative ID, or one with bits above the layout's). Times are DATETIME\n\
         -- in UTC, whatever the session's time_zone (not FROM_UNIXTIME or TIMESTAMP,\n\
         -- which stop in 2038); write them without a zone, '2024-01-01 00:00:00'.\n\
         -- Now is UTC_TIMESTAMP(6), not NOW(), which is in the session's time_zone.\n\
         --\n\
         --   SELECT {time}(id) FROM events WHERE id = 1541815603606036480;\n\
         --   SELECT count(*) FROM events\n\
         --    WHERE id BETWEEN {min}('2024-01-01') AND {max}('2024-01-31 23:59:59.999');\n\
         --   SELECT count(*) FROM events WHERE id >= {min}(UTC_TIMESTAMP(6) - INTERVAL 1 HOUR);\n\n",
        min = name("min_id")?,
        max = name("max_id")?,
        time = name("time")?,
    );
    for f in &functions {
        let fname = ident(Dialect::Mysql, &function_name(prefix, &f.name, false)?);
        let args: Vec<String> = f.args.iter().map(|(n, t)| format!("{n} {t}")).collect();
        let _ = write!(
            out,
            "DROP FUNCTION IF EXISTS {fname};\n\
             CREATE FUNCTION {fname}({}) RETURNS {}\n\
             DETERMINISTIC NO SQL COMMENT {}\n\
             RETURN {};\n\n",
            args.join(", "),
            f.returns,
            literal(&f.doc),
            f.body,
        );
    }
    trim_end(&mut out);
    Ok(out)
}

/// The SQLite script: every expression as a comment, and with a table a
/// view over it with a column per function.
pub(crate) fn sqlite(
    shape: &Shape,
    prefix: &str,
    table: Option<&str>,
    column: &str,
) -> Result<String, SqlError> {
    let functions = all(shape, Dialect::Sqlite, &ident(Dialect::Sqlite, column));
    let mut out = header(Dialect::Sqlite, shape, prefix, table, column);
    let _ = write!(
        out,
        "--\n\
         -- SQLite has no CREATE FUNCTION: write the expression where the call would\n\
         -- be. `{column}` is the ID column; `ts` a time as text in UTC\n\
         -- ('2024-01-01 00:00:00.000', millisecond precision); `unix_ms` and the\n\
         -- fields are integers. Input out of range gives NULL.\n\
         --\n"
    );
    for f in &functions {
        let fname = function_name(prefix, &f.name, false)?;
        let args: Vec<&str> = f.args.iter().map(|(n, _)| n.as_str()).collect();
        let _ = writeln!(out, "-- {fname}({}) = {}", args.join(", "), f.body);
    }
    match table {
        Some(table) => {
            let view = format!("{table}_decoded");
            let columns = functions
                .iter()
                .filter(|f| f.of_id)
                .map(|f| function_name(prefix, &f.name, false))
                .collect::<Result<Vec<_>, _>>()?;
            // SQLite's names are case-insensitive: the view would have two
            // columns of one name.
            if columns.iter().any(|c| c.eq_ignore_ascii_case(column)) {
                return Err(SqlError(Kind::ViewColumn {
                    found: column.into(),
                    columns: columns.join(", "),
                }));
            }
            let (q_view, q_table) = (ident(Dialect::Sqlite, &view), ident(Dialect::Sqlite, table));
            let _ = write!(
                out,
                "\n-- The view {view}: every column of {table}, and what its {column} holds.\n\
                 DROP VIEW IF EXISTS {q_view};\n\
                 CREATE VIEW {q_view} AS SELECT {q_table}.*"
            );
            for (f, name) in functions.iter().filter(|f| f.of_id).zip(&columns) {
                let _ = write!(out, ",\n  {} AS {}", f.body, ident(Dialect::Sqlite, name));
            }
            let _ = writeln!(out, "\nFROM {q_table};");
        }
        None => {
            let _ = writeln!(
                out,
                "--\n-- `snowmint sql sqlite --table T` adds a view over table T with these as columns."
            );
        }
    }
    trim_end(&mut out);
    Ok(out)
}

/// Ends the text with exactly one newline.
fn trim_end(out: &mut String) {
    while out.ends_with('\n') {
        out.pop();
    }
    out.push('\n');
}
