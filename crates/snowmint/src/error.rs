//! The one error type of the format: what was expected, and what was found.

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt;

use crate::problem::LayoutProblem;
use crate::time::Iso8601;

/// The input field an error is about.
///
/// Its [`name`](Field::name) is the name used by the CLI flags, the query
/// parameters and the JSON fields, so an error can point at the field a user
/// typed into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// The timestamp, in Unix milliseconds.
    Timestamp,
    /// The datacenter ID.
    Datacenter,
    /// The worker ("machine") ID.
    Worker,
    /// The sequence number within one millisecond.
    Sequence,
    /// A whole ID.
    Id,
    /// A bit width or epoch of a custom [`Layout`](crate::Layout).
    Layout,
    /// How many IDs to mint at once.
    Count,
    /// An [`Identity`](crate::Identity)'s number, `datacenter * 32 + worker`.
    Ordinal,
    /// The first millisecond of a time span (`range --from`), a timestamp.
    From,
    /// The last millisecond of a time span (`range --to`), a timestamp.
    To,
    /// A field of a [`Layout`](crate::Layout) other than the four above,
    /// named in the error ([`Error::field_name`]): Discord's `process`,
    /// Sonyflake's `machine`.
    LayoutField,
}

impl Field {
    /// The field's name as the surfaces spell it: `timestamp`, `datacenter`,
    /// `worker`, `sequence`, `id`, `layout`, `count`, `ordinal`, `from`, `to`,
    /// or `field` for any other field of a layout (whose own name is
    /// [`Error::field_name`]).
    pub const fn name(self) -> &'static str {
        match self {
            Field::Timestamp => "timestamp",
            Field::Datacenter => "datacenter",
            Field::Worker => "worker",
            Field::Sequence => "sequence",
            Field::Id => "id",
            Field::Layout => "layout",
            Field::Count => "count",
            Field::Ordinal => "ordinal",
            Field::From => "from",
            Field::To => "to",
            Field::LayoutField => "field",
        }
    }

    /// Whether the field holds a timestamp: `timestamp`, `from` or `to`.
    pub const fn is_time(self) -> bool {
        matches!(self, Field::Timestamp | Field::From | Field::To)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What was found where a value was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// An integer (possibly negative, possibly wider than 64 bits).
    Int(i128),
    /// Text that is not a number in the expected form (shortened if long).
    Text(String),
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Int(v) => write!(f, "{v}"),
            Found::Text(t) => write!(f, "{t:?}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// An integer outside `min..=max`.
    OutOfRange {
        field: Field,
        found: Found,
        min: u64,
        max: u64,
    },
    /// A timestamp outside what the layout's timestamp bits can hold.
    TimestampOutOfRange {
        field: Field,
        found: Found,
        min: u64,
        max: u64,
    },
    /// A time span whose end comes before its start.
    Order { from_ms: u64, to_ms: u64 },
    /// Text that is not in the expected form at all.
    Syntax {
        field: Field,
        found: Found,
        expected: &'static str,
        min: u64,
        max: u64,
    },
    /// A layout that cannot be: widths that do not add up, a bad spec.
    Layout(LayoutProblem),
    /// An error about a field of a layout, under the layout's name for it.
    Named { name: String, inner: Box<ErrorKind> },
    /// A field name the layout does not have; `known` lists its fields.
    UnknownField { name: String, known: String },
    /// A field of the layout that was not given.
    MissingField { name: String, known: String },
    /// A field given twice.
    RepeatedField { name: String },
    /// An ID with bits set above a layout narrower than 63 bits.
    AboveLayout { value: u64, max: u64, bits: u32 },
}

/// An input that cannot be a Snowflake ID or one of its fields.
///
/// The message names the field, the value that was found and the allowed
/// range, so it can be shown to a user as it is:
///
/// ```
/// let err = snowmint::compose(1288834975657, 32, 1, 0).unwrap_err();
/// assert_eq!(err.to_string(), "datacenter must be 0..=31, got 32");
/// assert_eq!(err.field(), snowmint::Field::Datacenter);
///
/// let err = "abc".parse::<snowmint::SnowflakeId>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"id must be a decimal integer 0..=9223372036854775807, got "abc""#
/// );
///
/// let err = snowmint::compose(1288834974656, 0, 0, 0).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "timestamp must be 1288834974657..=3487858230208 \
///      (2010-11-04T01:42:54.657Z ..= 2080-07-10T17:30:30.208Z), \
///      got 1288834974656: before the epoch"
/// );
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Error(pub(crate) ErrorKind);

/// Longest piece of user input repeated in a message.
const MAX_ECHO: usize = 40;

impl Error {
    pub(crate) const fn out_of_range(field: Field, value: i128, min: u64, max: u64) -> Error {
        Error(ErrorKind::OutOfRange {
            field,
            found: Found::Int(value),
            min,
            max,
        })
    }

    // Only the generator (feature `std`) reports a bare timestamp error.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) const fn timestamp(value: i128, min: u64, max: u64) -> Error {
        Error(ErrorKind::TimestampOutOfRange {
            field: Field::Timestamp,
            found: Found::Int(value),
            min,
            max,
        })
    }

    /// [`timestamp`](Error::timestamp) for a time field of another name.
    pub(crate) const fn timestamp_in(field: Field, value: i128, min: u64, max: u64) -> Error {
        Error(ErrorKind::TimestampOutOfRange {
            field,
            found: Found::Int(value),
            min,
            max,
        })
    }

    pub(crate) const fn order(from_ms: u64, to_ms: u64) -> Error {
        Error(ErrorKind::Order { from_ms, to_ms })
    }

    pub(crate) fn syntax(
        field: Field,
        input: &str,
        expected: &'static str,
        min: u64,
        max: u64,
    ) -> Error {
        Error(ErrorKind::Syntax {
            field,
            found: Found::Text(echo(input)),
            expected,
            min,
            max,
        })
    }

    /// An out-of-range error for an integer too wide to hold, given as text.
    pub(crate) fn too_wide(field: Field, input: &str, min: u64, max: u64) -> Error {
        let found = Found::Text(echo(input));
        if field.is_time() {
            Error(ErrorKind::TimestampOutOfRange {
                field,
                found,
                min,
                max,
            })
        } else {
            Error(ErrorKind::OutOfRange {
                field,
                found,
                min,
                max,
            })
        }
    }

    pub(crate) const fn layout(problem: LayoutProblem) -> Error {
        Error(ErrorKind::Layout(problem))
    }

    /// The same error about the layout's field `name`.
    pub(crate) fn named(self, name: &str) -> Error {
        let inner = match self.0 {
            ErrorKind::Named { inner, .. } => inner,
            other => Box::new(other),
        };
        Error(ErrorKind::Named {
            name: echo(name),
            inner,
        })
    }

    /// The name is kept whole, for [`field_name`](Error::field_name) to
    /// give back as typed; the message shortens it.
    pub(crate) fn unknown_field(name: &str, known: &[&str]) -> Error {
        Error(ErrorKind::UnknownField {
            name: name.into(),
            known: list(known),
        })
    }

    pub(crate) fn missing_field(name: &str, known: &[&str]) -> Error {
        Error(ErrorKind::MissingField {
            name: echo(name),
            known: list(known),
        })
    }

    pub(crate) fn repeated_field(name: &str) -> Error {
        Error(ErrorKind::RepeatedField { name: echo(name) })
    }

    pub(crate) const fn above_layout(value: u64, max: u64, bits: u32) -> Error {
        Error(ErrorKind::AboveLayout { value, max, bits })
    }

    /// The name of the field the error is about, as the user wrote it: for
    /// a field of a layout, the layout's own name for it (`process`,
    /// `machine`), for a name the layout does not have that name whole
    /// (the message shortens a long one), else [`field`](Error::field)'s name.
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    /// let err = Layout::SONYFLAKE
    ///     .compose_fields(1700000000000, &[("sequence", 0), ("machine", 65536)])
    ///     .unwrap_err();
    /// assert_eq!(err.field_name(), "machine");
    /// assert_eq!(err.field(), Field::LayoutField);
    /// assert_eq!(err.to_string(), "machine must be 0..=65535, got 65536");
    /// ```
    pub fn field_name(&self) -> &str {
        match &self.0 {
            ErrorKind::Named { name, .. }
            | ErrorKind::UnknownField { name, .. }
            | ErrorKind::MissingField { name, .. }
            | ErrorKind::RepeatedField { name } => name,
            _ => self.field().name(),
        }
    }

    /// The field the error is about.
    ///
    /// A field of a layout whose name is one of the fixed ones
    /// (`timestamp`, `datacenter`, `worker`, `sequence`) is that field,
    /// any other [`Field::LayoutField`]: see [`field_name`](Error::field_name).
    pub fn field(&self) -> Field {
        match &self.0 {
            ErrorKind::OutOfRange { field, .. }
            | ErrorKind::Syntax { field, .. }
            | ErrorKind::TimestampOutOfRange { field, .. } => *field,
            ErrorKind::Layout(_) => Field::Layout,
            ErrorKind::Order { .. } => Field::To,
            ErrorKind::AboveLayout { .. } => Field::Id,
            ErrorKind::Named { name, .. }
            | ErrorKind::UnknownField { name, .. }
            | ErrorKind::MissingField { name, .. }
            | ErrorKind::RepeatedField { name } => match name.as_str() {
                "timestamp" => Field::Timestamp,
                "datacenter" => Field::Datacenter,
                "worker" => Field::Worker,
                "sequence" => Field::Sequence,
                _ => Field::LayoutField,
            },
        }
    }

    /// What is wrong with the layout, for an error about one ([`Field::Layout`]):
    /// a surface that speaks another language words it from this.
    ///
    /// ```
    /// use snowmint::{Layout, LayoutProblem};
    /// let err = Layout::parse("fields=timestamp:41").unwrap_err();
    /// assert_eq!(err.layout_problem(), Some(&LayoutProblem::MissingEpoch));
    /// assert_eq!(snowmint::compose(0, 0, 0, 0).unwrap_err().layout_problem(), None);
    /// ```
    pub fn layout_problem(&self) -> Option<&LayoutProblem> {
        match &self.0 {
            ErrorKind::Layout(problem) => Some(problem),
            _ => None,
        }
    }

    /// Re-labels the error as being about `field`, for callers that parse a
    /// value on behalf of a field with another name.
    #[must_use]
    pub fn with_field(mut self, new: Field) -> Error {
        match &mut self.0 {
            ErrorKind::OutOfRange { field, .. }
            | ErrorKind::Syntax { field, .. }
            | ErrorKind::TimestampOutOfRange { field, .. } => *field = new,
            _ => {}
        }
        self
    }
}

/// `a, b and c`.
fn list(names: &[&str]) -> String {
    let mut out = String::new();
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == names.len() { " and " } else { ", " });
        }
        out.push_str(n);
    }
    out
}

/// Keeps error messages short whatever the user pasted.
pub(crate) fn echo(input: &str) -> String {
    let mut out: String = input.chars().take(MAX_ECHO).collect();
    if input.chars().nth(MAX_ECHO).is_some() {
        out.push('…');
    }
    out
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_kind(&self.0, None, f)
    }
}

/// Writes the message of `kind`, calling its field `name` if given.
fn write_kind(kind: &ErrorKind, name: Option<&str>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let named = |field: &Field| name.unwrap_or(field.name());
    {
        match kind {
            ErrorKind::OutOfRange {
                field,
                found,
                min,
                max,
            } => {
                write!(f, "{} must be {min}..={max}, got {found}", named(field))?;
                if let (Field::Id, Found::Int(v)) = (field, found) {
                    if *v > i128::from(u64::MAX) {
                        f.write_str(": more than 64 bits")?;
                    } else if *v > i128::from(i64::MAX) {
                        f.write_str(": the sign bit is set")?;
                    }
                } else if let Found::Text(_) = found {
                    f.write_str(": more than 64 bits")?;
                }
                Ok(())
            }
            ErrorKind::TimestampOutOfRange {
                field,
                found,
                min,
                max,
            } => {
                write!(
                    f,
                    "{} must be {min}..={max} ({} ..= {}), got {found}",
                    named(field),
                    Iso8601(*min as i64),
                    Iso8601(*max as i64)
                )?;
                match found {
                    Found::Int(v) if *v < i128::from(*min) => f.write_str(": before the epoch"),
                    _ => f.write_str(": past the last millisecond the timestamp bits can hold"),
                }
            }
            ErrorKind::Syntax {
                field,
                found,
                expected,
                min,
                max,
            } => {
                let name = named(field);
                if field.is_time() {
                    write!(
                        f,
                        "{name} must be {expected} in {min}..={max} ({} ..= {}), got {found}",
                        Iso8601(*min as i64),
                        Iso8601(*max as i64)
                    )
                } else {
                    write!(f, "{name} must be {expected} {min}..={max}, got {found}")
                }
            }
            ErrorKind::Layout(problem) => write!(f, "invalid layout: {problem}"),
            ErrorKind::Named { name, inner } => write_kind(inner, Some(name), f),
            ErrorKind::UnknownField { name, known } if known.is_empty() => write!(
                f,
                "{} is not a field of this layout, which has no field but the timestamp",
                echo(name)
            ),
            ErrorKind::UnknownField { name, known } => write!(
                f,
                "{} is not a field of this layout; its fields are {known}",
                echo(name)
            ),
            ErrorKind::MissingField { name, known } => {
                write!(f, "{name} is missing: this layout needs {known}")
            }
            ErrorKind::RepeatedField { name } => write!(f, "{name} is given more than once"),
            ErrorKind::AboveLayout { value, max, bits } => write!(
                f,
                "id must be 0..={max}, got {value}: bits above the layout's {bits} are set"
            ),
            ErrorKind::Order { from_ms, to_ms } => write!(
                f,
                "to must be at or after from {from_ms} ({}), got {to_ms} ({})",
                Iso8601(*from_ms as i64),
                Iso8601(*to_ms as i64)
            ),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("field", &self.field())
            .field("message", &format_args!("{self}"))
            .finish()
    }
}

impl core::error::Error for Error {}
