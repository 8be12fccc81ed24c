//! What is wrong with a layout: the reason of an `invalid layout` error,
//! typed so that a surface can word it in its own language.

use alloc::string::String;
use core::fmt;

use crate::name::{MAX_FIELDS, MAX_NAME_LEN, PRESET_NAMES};
use crate::time::{Iso8601, MAX_UNIX_MS};

/// An example spec for messages: Discord's.
pub(crate) const EXAMPLE: &str =
    "epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12";

/// Why a layout cannot be, from [`Error::layout_problem`](crate::Error::layout_problem).
/// Its `Display` is the English reason that follows `invalid layout: `.
/// Text taken from the input is shortened as the error's message shortens it.
///
/// ```
/// use snowmint::{Layout, LayoutProblem};
/// let err = Layout::parse("epoch=0;fields=timestamp:41,worker:10,sequence:14").unwrap_err();
/// assert_eq!(err.layout_problem(), Some(&LayoutProblem::TooWide { bits: 65 }));
/// assert_eq!(err.to_string(), "invalid layout: the widths add up to 65 bits, more than 64");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutProblem {
    /// Nothing was given.
    Empty,
    /// Text with no `=`: neither a preset's name nor a spec.
    NotASpec {
        /// What was given.
        input: String,
    },
    /// A part of a spec that is not `KEY=VALUE`.
    NotKeyValue {
        /// The part.
        part: String,
    },
    /// A key other than `epoch`, `unit` and `fields`.
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A key given twice.
    RepeatedKey {
        /// The key.
        key: String,
    },
    /// No `epoch=`.
    MissingEpoch,
    /// No `fields=`.
    MissingFields,
    /// An epoch that is neither Unix ms nor an ISO-8601 time from 1970 on.
    BadEpoch {
        /// What was given.
        input: String,
    },
    /// A unit that is not `<n>ms` or `<n>s`.
    BadUnit {
        /// What was given.
        input: String,
    },
    /// A time unit of 0.
    ZeroUnit {
        /// The unit as typed (`0ms`), when it was typed.
        input: Option<String>,
    },
    /// `fields=` with an empty entry (`a:1,,b:2`).
    EmptyEntry,
    /// A field without `:BITS`.
    NoWidth {
        /// The entry.
        entry: String,
    },
    /// A field name that is not 1 to [`MAX_NAME_LEN`] of `[a-z0-9_]`.
    BadName {
        /// The name.
        name: String,
    },
    /// A width outside 1..=64.
    BadWidth {
        /// The field.
        name: String,
        /// The width as given.
        width: String,
    },
    /// More than [`MAX_FIELDS`] fields.
    TooManyFields {
        /// How many were given.
        count: usize,
    },
    /// A field named `sign` or `unused`, the names of the bits above a
    /// layout's fields.
    ReservedName {
        /// The name.
        name: String,
    },
    /// Two fields of one name.
    NamedTwice {
        /// The name.
        name: String,
    },
    /// No field named `timestamp`.
    NoTimestamp,
    /// `timestamp` is not the first (most significant) field.
    TimestampNotFirst {
        /// The field it comes after.
        after: String,
    },
    /// A field other than the time named `timestamp`.
    TimestampTwice,
    /// The name of one slot (`worker`) given to the field of another.
    NameOfAnotherSlot {
        /// The name.
        name: String,
        /// The slot whose field it was given to.
        slot: &'static str,
    },
    /// Widths that add up to more than 64 bits.
    TooWide {
        /// Their sum.
        bits: u32,
    },
    /// A time field whose last millisecond (from the epoch, the unit and
    /// the width) lies past [`MAX_UNIX_MS`], 9999-12-31T23:59:59.999Z.
    PastTheEnd {
        /// That last millisecond, Unix ms (wider than a `u64` can be).
        last_ms: u128,
    },
    /// [`Layout::new`](crate::Layout::new)'s four widths do not add up to 63 or 64.
    FourWidths,
    /// A time field of no bits.
    NoTimestampBits,
}

impl fmt::Display for LayoutProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let presets = || PRESET_NAMES.join(", ");
        match self {
            LayoutProblem::Empty => write!(
                f,
                "empty: give a preset ({}) or a spec like {EXAMPLE}",
                presets()
            ),
            LayoutProblem::NotASpec { input } => write!(
                f,
                "{input:?} is neither a preset ({}) nor a spec like {EXAMPLE}",
                presets()
            ),
            LayoutProblem::NotKeyValue { part } => write!(
                f,
                "{part:?} is not KEY=VALUE (the keys are epoch, unit and fields)"
            ),
            LayoutProblem::UnknownKey { key } => {
                write!(f, "unknown key {key:?}: a spec has epoch, unit and fields")
            }
            LayoutProblem::RepeatedKey { key } => write!(f, "{key} is given more than once"),
            LayoutProblem::MissingEpoch => write!(
                f,
                "the epoch is missing: add epoch=, Unix ms or ISO-8601, as in {EXAMPLE}"
            ),
            LayoutProblem::MissingFields => write!(
                f,
                "the fields are missing: add fields=NAME:BITS,..., as in {EXAMPLE}"
            ),
            LayoutProblem::BadEpoch { input } => write!(
                f,
                "the epoch must be Unix milliseconds or an ISO-8601 time at or after \
                 1970-01-01, got {input:?}"
            ),
            LayoutProblem::BadUnit { input } => write!(
                f,
                "the unit must be <n>ms or <n>s (1ms, 10ms, 1s), got {input:?}"
            ),
            LayoutProblem::ZeroUnit { input: Some(input) } => {
                write!(f, "the time unit must be at least 1 ms, got {input:?}")
            }
            LayoutProblem::ZeroUnit { input: None } => {
                f.write_str("the time unit must be at least 1 ms, got 0")
            }
            LayoutProblem::EmptyEntry => write!(
                f,
                "fields= has an empty entry: write NAME:BITS,NAME:BITS, as in {EXAMPLE}"
            ),
            LayoutProblem::NoWidth { entry } => {
                write!(f, "the field {entry:?} has no width: write NAME:BITS")
            }
            LayoutProblem::BadName { name } => write!(
                f,
                "the field name {name:?} must be 1 to {MAX_NAME_LEN} lower-case letters, \
                 digits and _"
            ),
            LayoutProblem::BadWidth { name, width } => {
                write!(f, "{name} must be 1..=64 bits wide, got {width:?}")
            }
            LayoutProblem::TooManyFields { count } => write!(
                f,
                "{count} fields, more than the {MAX_FIELDS} a layout can have"
            ),
            LayoutProblem::ReservedName { name } => write!(
                f,
                "{name} names the bits above a layout's fields: call the field something else"
            ),
            LayoutProblem::NamedTwice { name } => write!(f, "{name} is named twice"),
            LayoutProblem::NoTimestamp => {
                f.write_str("no field is named timestamp: one field must hold the time")
            }
            LayoutProblem::TimestampNotFirst { after } => write!(
                f,
                "timestamp must be the first field (the most significant), so that IDs \
                 order by time; it comes after {after}"
            ),
            LayoutProblem::TimestampTwice => {
                f.write_str("only the time field may be named timestamp")
            }
            LayoutProblem::NameOfAnotherSlot { name, slot } => {
                write!(
                    f,
                    "{name} names the {name} slot, not the {slot} slot's field"
                )
            }
            LayoutProblem::TooWide { bits } => {
                write!(f, "the widths add up to {bits} bits, more than 64")
            }
            LayoutProblem::PastTheEnd { last_ms } => write!(
                f,
                "the time field runs past {} ({MAX_UNIX_MS}), where dates end: its last \
                 millisecond would be {last_ms}; give it fewer bits, a shorter unit or an \
                 earlier epoch",
                Iso8601(MAX_UNIX_MS as i64)
            ),
            LayoutProblem::FourWidths => {
                f.write_str("the four widths must add up to 63 or 64 bits")
            }
            LayoutProblem::NoTimestampBits => f.write_str("the timestamp needs at least 1 bit"),
        }
    }
}
