//! [`SqlError`]: an option of the SQL generator that cannot be used.

use alloc::string::String;
use core::fmt;

use crate::error::echo;
use crate::time::Iso8601;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A name that is not one of a closed set (`dialect`, `partition`).
    Unknown {
        field: &'static str,
        found: String,
        allowed: &'static str,
    },
    /// A table, column or prefix that is not a plain SQL identifier.
    Identifier {
        field: &'static str,
        found: String,
        max_len: usize,
    },
    /// A layout field whose function would have the name of another one.
    Clash { name: String, function: String },
    /// A function name longer than the databases keep.
    TooLong { name: String, max_len: usize },
    /// An option the dialect has no use for.
    NotFor {
        field: &'static str,
        dialect: &'static str,
        why: &'static str,
    },
    /// SQLite's ID column has the name of a column the view adds.
    ViewColumn { found: String, columns: String },
    /// No partition period starts in `[from, to)`.
    NoPeriod {
        period: &'static str,
        first_ms: u64,
        to_ms: u64,
    },
}

/// An option of the SQL generator that cannot be used: an unknown dialect
/// or partition period, a table, column or prefix that is not a plain SQL
/// identifier, or a time span in which no partition starts.
///
/// The message names the option, the value that was found and what is
/// allowed, so it can be shown to a user as it is; [`field`](SqlError::field)
/// names the option (`dialect`, `partition`, `sql`, `table`, `column`,
/// `prefix`, `layout` or `to`).
///
/// ```
/// use snowmint::sql::{Dialect, SqlError};
///
/// let err = "oracle".parse::<Dialect>().unwrap_err();
/// assert_eq!(err.to_string(), r#"dialect must be postgres, mysql or sqlite, got "oracle""#);
/// assert_eq!(err.field(), "dialect");
///
/// let err = snowmint::sql::check_identifier("table", "events; DROP TABLE users").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "table must be a plain SQL identifier of 1..=52 characters \
///      (ASCII letters, digits and _, not starting with a digit), \
///      got \"events; DROP TABLE users\""
/// );
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SqlError(pub(crate) Kind);

impl SqlError {
    pub(crate) fn unknown(field: &'static str, found: &str, allowed: &'static str) -> SqlError {
        SqlError(Kind::Unknown {
            field,
            found: echo(found),
            allowed,
        })
    }

    /// The one of `all` whose `name` is `s` (ASCII case-insensitive,
    /// surrounding whitespace ignored), or else the error that names
    /// `field` and the `allowed` names.
    pub(crate) fn by_name<T: Copy>(
        all: &[T],
        name: fn(T) -> &'static str,
        field: &'static str,
        s: &str,
        allowed: &'static str,
    ) -> Result<T, SqlError> {
        all.iter()
            .copied()
            .find(|&t| name(t).eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| SqlError::unknown(field, s, allowed))
    }

    pub(crate) fn identifier(field: &'static str, found: &str, max_len: usize) -> SqlError {
        SqlError(Kind::Identifier {
            field,
            found: echo(found),
            max_len,
        })
    }

    /// The option the error is about: `dialect`, `partition`, `sql` (the
    /// dialect of partitions), `table`, `column`, `prefix`, `layout` (a
    /// field name that cannot become a function) or `to` (no period starts
    /// before it).
    pub fn field(&self) -> &'static str {
        match &self.0 {
            Kind::Unknown { field, .. }
            | Kind::Identifier { field, .. }
            | Kind::NotFor { field, .. } => field,
            Kind::ViewColumn { .. } => "column",
            Kind::Clash { .. } => "layout",
            Kind::TooLong { .. } => "prefix",
            Kind::NoPeriod { .. } => "to",
        }
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Unknown {
                field,
                found,
                allowed,
            } => write!(f, "{field} must be {allowed}, got {found:?}"),
            Kind::Identifier {
                field,
                found,
                max_len,
            } => write!(
                f,
                "{field} must be a plain SQL identifier of 1..={max_len} characters \
                 (ASCII letters, digits and _, not starting with a digit), got {found:?}"
            ),
            Kind::Clash { name, function } => write!(
                f,
                "layout field {name:?} would be the function {function}, which already \
                 has another meaning: rename the field"
            ),
            Kind::TooLong { name, max_len } => write!(
                f,
                "prefix makes the function name {name} longer than {max_len} characters, \
                 more than the databases keep: use a shorter prefix"
            ),
            Kind::NotFor {
                field,
                dialect,
                why,
            } => write!(f, "{field} cannot be used with {dialect}: {why}"),
            Kind::ViewColumn { found, columns } => write!(
                f,
                "column must not be a column the view adds ({columns}), got {found:?}: \
                 use another prefix"
            ),
            Kind::NoPeriod {
                period,
                first_ms,
                to_ms,
            } => write!(
                f,
                "to must be after the first {period} that starts at or after from, \
                 {} ({first_ms}), got {} ({to_ms}): no {period} starts in [from, to)",
                Iso8601(*first_ms as i64),
                Iso8601(*to_ms as i64),
            ),
        }
    }
}

impl fmt::Debug for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SqlError({self})")
    }
}

impl core::error::Error for SqlError {}
