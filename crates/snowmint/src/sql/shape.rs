//! What the SQL generator knows of a layout ([`Shape`]), and the names it
//! lets into SQL text (identifiers, checked).

use alloc::string::String;
use alloc::vec::Vec;

use super::Dialect;
use super::error::{Kind, SqlError};
use crate::layout::Layout;

/// The numbers the SQL text is made of: the epoch, the time unit, where
/// the time field sits, and every other field from the most significant
/// down. [`Shape::of`] is the only code here that reads a [`Layout`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    /// What `--layout` takes to mean the layout (a preset's name, or its
    /// spec), for the header comment.
    pub name: String,
    /// Whether `name` is a preset's (a spec needs quoting on a command line).
    pub preset: bool,
    pub epoch_ms: u64,
    pub unit_ms: u64,
    /// Where the time field starts (bits below it belong to the others).
    pub time_shift: u32,
    /// Width of the time field (with the sign bit where that is its top).
    pub time_bits: u32,
    /// First and last Unix millisecond an ID holds.
    pub min_ms: u64,
    pub max_ms: u64,
    /// The largest ID: the bits above the layout's fields (and a sign bit)
    /// clear.
    pub max_id: u64,
    /// The other fields, most significant first; none has zero width.
    pub fields: Vec<ShapeField>,
}

/// One field below the time field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShapeField {
    /// The layout's own name, as an SQL name (`shard`, `sequence_data`).
    pub name: String,
    pub shift: u32,
    pub bits: u32,
}

impl ShapeField {
    /// The largest value, `2^bits - 1`.
    pub fn max(&self) -> u64 {
        u64::MAX >> (64 - self.bits)
    }
}

impl Shape {
    /// The shape of `layout`, with each field under the layout's own name
    /// ([`Layout::label`]: Instagram's `shard`, Sonyflake's `machine`).
    pub fn of(layout: &Layout) -> Shape {
        let fields = layout
            .node_fields()
            .filter(|f| f.bits() > 0)
            .map(|f| ShapeField {
                name: sql_name(f.name()),
                shift: f.shift(),
                bits: f.bits(),
            })
            .collect();
        let time = layout.time_field();
        Shape {
            name: layout.to_param(),
            preset: layout.is_preset(),
            epoch_ms: layout.epoch_ms(),
            unit_ms: layout.unit_ms(),
            time_shift: time.shift(),
            time_bits: time.bits(),
            min_ms: layout.min_timestamp_ms(),
            max_ms: layout.max_timestamp_ms(),
            max_id: layout.max_id(),
            fields,
        }
    }

    /// The smallest ID of the time unit of `ms` (in range).
    pub fn min_id(&self, ms: u64) -> u64 {
        ((ms - self.epoch_ms) / self.unit_ms) << self.time_shift
    }

    /// The bits below the time field, all set: `max_id = min_id | low_mask`.
    pub fn low_mask(&self) -> u64 {
        if self.time_shift == 0 {
            0
        } else {
            u64::MAX >> (64 - self.time_shift)
        }
    }
}

/// A field's label as an SQL name: lower case, anything but a letter, a
/// digit or `_` as `_` (Mastodon's "sequence data" is `sequence_data`).
fn sql_name(label: &str) -> String {
    label
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect()
}

/// The longest table name: its partitions' names (`<table>_2024_01_31`,
/// 11 more) must fit PostgreSQL's 63.
pub const MAX_TABLE_LEN: usize = 52;
/// The longest column name (PostgreSQL keeps 63 bytes of a name).
pub const MAX_COLUMN_LEN: usize = 63;
/// The longest function-name prefix.
pub const MAX_PREFIX_LEN: usize = 40;
/// The longest name a function may get (PostgreSQL keeps 63 bytes, MySQL 64).
pub(crate) const MAX_NAME_LEN: usize = 63;

/// Checks that `value` is a plain SQL identifier, fit to be pasted into SQL
/// text without quoting: an ASCII letter or `_`, then ASCII letters, digits
/// or `_`, at most as long as `field` allows (`table` 52 characters, so
/// that its partitions' names fit; `column` 63; `prefix` 40). Anything
/// else (quotes, spaces, `;`, a schema-qualified name) is refused, so no
/// input can change what the SQL does.
///
/// ```
/// use snowmint::sql::check_identifier;
/// assert!(check_identifier("table", "events").is_ok());
/// assert!(check_identifier("table", "_Events2").is_ok());
/// assert!(check_identifier("table", "2events").is_err());
/// assert!(check_identifier("column", "id\"; --").is_err());
/// assert!(check_identifier("prefix", "").is_err());
/// ```
pub fn check_identifier(field: &'static str, value: &str) -> Result<(), SqlError> {
    let max_len = match field {
        "table" => MAX_TABLE_LEN,
        "prefix" => MAX_PREFIX_LEN,
        _ => MAX_COLUMN_LEN,
    };
    let b = value.as_bytes();
    let plain = !b.is_empty()
        && b.len() <= max_len
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if plain {
        Ok(())
    } else {
        Err(SqlError::identifier(field, value, max_len))
    }
}

/// `name` (a plain identifier: [`check_identifier`], or a field's name) as
/// a quoted identifier of `dialect`, so that no database can take it for a
/// keyword (`partition`, `position`, `user`, ...; each database reserves
/// other words, and each version more): `"name"` in PostgreSQL, in lower
/// case (what PostgreSQL makes of the name unquoted, so `--table Events`
/// still means the table `events`), and `` `name` `` in MySQL and SQLite
/// (where a double-quoted name that is not a column silently becomes a
/// string, and a backquoted one is an error).
pub(crate) fn ident(dialect: Dialect, name: &str) -> String {
    match dialect {
        Dialect::Postgres => alloc::format!("\"{}\"", name.to_ascii_lowercase()),
        Dialect::Mysql | Dialect::Sqlite => alloc::format!("`{name}`"),
    }
}

/// The names of the functions that are not a field's: a field of one of
/// these names (or of a parameter's) would clash.
pub(crate) const RESERVED: [&str; 7] =
    ["time", "unix_ms", "min_id", "max_id", "compose", "id", "ts"];

/// `prefix` + `name` as a function name, refused when a field would take a
/// reserved name or the whole is too long to keep.
pub(crate) fn function_name(prefix: &str, name: &str, field: bool) -> Result<String, SqlError> {
    let mut full = String::from(prefix);
    full.push_str(name);
    if field && RESERVED.contains(&name) {
        return Err(SqlError(Kind::Clash {
            name: name.into(),
            function: full,
        }));
    }
    if full.len() > MAX_NAME_LEN {
        return Err(SqlError(Kind::TooLong {
            name: full,
            max_len: MAX_NAME_LEN,
        }));
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_of_the_presets() {
        let t = Shape::of(&Layout::TWITTER);
        let names: Vec<_> = t
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.shift, f.bits))
            .collect();
        assert_eq!(
            names,
            [
                ("datacenter", 17, 5),
                ("worker", 12, 5),
                ("sequence", 0, 12)
            ]
        );
        assert_eq!((t.time_shift, t.low_mask()), (22, 4194303));
        let i = Shape::of(&Layout::INSTAGRAM);
        let names: Vec<_> = i.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["shard", "sequence"]);
        let s = Shape::of(&Layout::SONYFLAKE);
        let names: Vec<_> = s
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.shift))
            .collect();
        assert_eq!(names, [("sequence", 16), ("machine", 0)]);
        let m = Shape::of(&Layout::MASTODON);
        assert_eq!(m.fields[0].name, "sequence_data");
        assert_eq!(m.fields[0].max(), 65535);
    }

    #[test]
    fn identifiers() {
        for ok in ["a", "_", "events_2024", "A1_b"] {
            assert!(check_identifier("table", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1a",
            "a b",
            "a-b",
            "a.b",
            "\"a\"",
            "a;",
            "é",
            &"a".repeat(53),
        ] {
            let e = check_identifier("table", bad).unwrap_err();
            assert_eq!(e.field(), "table");
        }
        assert!(check_identifier("column", &"a".repeat(63)).is_ok());
        assert!(check_identifier("prefix", &"a".repeat(41)).is_err());
    }

    #[test]
    fn function_names() {
        assert_eq!(
            function_name("snowflake_", "worker", true).unwrap(),
            "snowflake_worker"
        );
        let e = function_name("snowflake_", "time", true).unwrap_err();
        assert_eq!(e.field(), "layout");
        assert!(e.to_string().contains("snowflake_time"), "{e}");
        let e = function_name(&"p".repeat(40), &"f".repeat(30), true).unwrap_err();
        assert_eq!(e.field(), "prefix");
    }
}
