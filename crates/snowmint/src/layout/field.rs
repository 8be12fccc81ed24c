//! The fields by their own names: [`LayoutField`], listing them, and
//! composing and taking apart IDs by name (invariant 1 of [`Layout`]).

use alloc::string::ToString;
use alloc::vec::Vec;

use super::slot::{SLOT_DATACENTER, SLOT_SEQUENCE, SLOT_WORKER};
use super::{Layout, mask};
use crate::error::{Error, Field, echo};
use crate::id::SnowflakeId;
use crate::name::FieldName;
use crate::parse::parse_in_range;
use crate::problem::LayoutProblem;

/// One field of a [`Layout`], as [`Layout::fields`] lists them: its name,
/// width and position. What a program that generates code for a layout
/// (SQL functions, say) needs: the field's value in an ID `id` is
/// `(id >> shift) & mask`.
///
/// ```
/// use snowmint::Layout;
/// let fields: Vec<(&str, u32, u32)> = Layout::DISCORD
///     .fields()
///     .map(|f| (f.name(), f.bits(), f.shift()))
///     .collect();
/// assert_eq!(
///     fields,
///     [("timestamp", 42, 22), ("worker", 5, 17), ("process", 5, 12), ("increment", 12, 0)]
/// );
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutField<'a> {
    name: &'a str,
    bits: u32,
    shift: u32,
    max: u64,
    slot: Option<Field>,
}

impl<'a> LayoutField<'a> {
    /// The field's name (`timestamp` for the time field).
    pub const fn name(&self) -> &'a str {
        self.name
    }

    /// Its width in bits.
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// Where its least significant bit sits (0 = the lowest bit of the ID).
    pub const fn shift(&self) -> u32 {
        self.shift
    }

    /// `2^bits - 1`: the mask of the field once shifted down.
    pub const fn mask(&self) -> u64 {
        mask(self.bits)
    }

    /// The largest value an ID can hold in the field: [`mask`](Self::mask),
    /// except for a time field that reaches bit 63 (the widths add up to
    /// 64), whose top bit is the sign bit and always 0.
    pub const fn max(&self) -> u64 {
        self.max
    }

    /// Whether this is the time field.
    pub const fn is_time(&self) -> bool {
        matches!(self.slot, Some(Field::Timestamp))
    }

    /// The slot of [`Parts`](crate::Parts) and of the JSON object's top-level keys that
    /// the field fills: [`Field::Timestamp`], [`Field::Datacenter`],
    /// [`Field::Worker`], [`Field::Sequence`], or `None` for a field beyond
    /// those three (shown only by its own name, in the segments).
    pub const fn slot(&self) -> Option<Field> {
        self.slot
    }

    /// The field's value in `id` (the time field in the layout's units
    /// since its epoch).
    pub const fn value(&self, id: SnowflakeId) -> u64 {
        (id.get() >> self.shift) & mask(self.bits)
    }
}

impl Layout {
    /// The fields, most significant first: the time field, then the rest.
    /// See [`LayoutField`].
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    /// let l = Layout::SONYFLAKE;
    /// let shown: Vec<String> = l
    ///     .fields()
    ///     .map(|f| format!("{}:{}@{}", f.name(), f.bits(), f.shift()))
    ///     .collect();
    /// assert_eq!(shown, ["timestamp:39@24", "sequence:8@16", "machine:16@0"]);
    /// assert_eq!(l.fields().nth(2).unwrap().slot(), Some(Field::Worker));
    /// ```
    pub fn fields(&self) -> impl ExactSizeIterator<Item = LayoutField<'_>> + '_ {
        (0..self.len as usize).map(|i| self.field_at(i))
    }

    /// The fields below the time field, most significant first: the
    /// values [`compose_fields`](Layout::compose_fields) takes.
    pub fn node_fields(&self) -> impl ExactSizeIterator<Item = LayoutField<'_>> + '_ {
        (1..self.len as usize).map(|i| self.field_at(i))
    }

    /// The time field (always the first, most significant one).
    pub fn time_field(&self) -> LayoutField<'_> {
        self.field_at(0)
    }

    /// The field called `name`, if the layout has one.
    pub fn field(&self, name: &str) -> Option<LayoutField<'_>> {
        self.fields().find(|f| f.name == name)
    }

    fn field_at(&self, i: usize) -> LayoutField<'_> {
        let bits = u32::from(self.widths[i]);
        let slot = match (i, self.slot_of_index(i)) {
            (0, _) => Some(Field::Timestamp),
            (_, Some(SLOT_DATACENTER)) => Some(Field::Datacenter),
            (_, Some(SLOT_WORKER)) => Some(Field::Worker),
            (_, Some(_)) => Some(Field::Sequence),
            (_, None) => None,
        };
        LayoutField {
            name: self.names[i].as_str(),
            bits,
            shift: self.shift_of(i),
            max: if i == 0 {
                self.max_delta_units()
            } else {
                mask(bits)
            },
            slot,
        }
    }

    /// The values of the fields below the time in `id`, by name, most
    /// significant first.
    ///
    /// ```
    /// use snowmint::{Layout, SnowflakeId};
    /// let id = SnowflakeId::new(175928847299117063)?;
    /// assert_eq!(
    ///     Layout::DISCORD.field_values(id),
    ///     [("worker", 1), ("process", 0), ("increment", 7)]
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn field_values(&self, id: SnowflakeId) -> Vec<(&str, u64)> {
        self.node_fields().map(|f| (f.name, f.value(id))).collect()
    }

    /// Builds an ID from a Unix-ms time and the value of every field below
    /// the time, by name (in any order). Each value is checked against its
    /// field's range, and the error names the field; a name the layout
    /// does not have, a field given twice or one left out is refused
    /// naming it.
    ///
    /// ```
    /// use snowmint::Layout;
    /// // Discord's documented example.
    /// let id = Layout::DISCORD.compose_fields(
    ///     1462015105796,
    ///     &[("worker", 1), ("process", 0), ("increment", 7)],
    /// )?;
    /// assert_eq!(id.get(), 175928847299117063);
    /// let err = Layout::DISCORD
    ///     .compose_fields(1462015105796, &[("worker", 1), ("process", 32), ("increment", 7)])
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "process must be 0..=31, got 32");
    /// assert_eq!(err.field_name(), "process");
    /// let err = Layout::DISCORD
    ///     .compose_fields(1462015105796, &[("worker", 1), ("increment", 7)])
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "process is missing: this layout needs worker, process and increment");
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn compose_fields(
        &self,
        timestamp_ms: u64,
        values: &[(&str, u64)],
    ) -> Result<SnowflakeId, Error> {
        self.check(Field::Timestamp, timestamp_ms)?;
        for (name, _) in values {
            if self.node_fields().all(|f| f.name != *name) {
                return Err(Error::unknown_field(name, &self.node_names()));
            }
        }
        let mut id = ((timestamp_ms - self.epoch_ms) / self.unit_ms) << self.timestamp_shift();
        for f in self.node_fields() {
            let mut given = values.iter().filter(|(n, _)| *n == f.name);
            let Some(&(_, value)) = given.next() else {
                return Err(Error::missing_field(f.name, &self.node_names()));
            };
            if given.next().is_some() {
                return Err(Error::repeated_field(f.name));
            }
            if value > f.max {
                return Err(
                    Error::out_of_range(Field::Id, i128::from(value), 0, f.max).named(f.name)
                );
            }
            id |= value << f.shift;
        }
        Ok(SnowflakeId::from_raw(id))
    }

    /// [`compose_fields`](Layout::compose_fields) of values as people type
    /// them: each is parsed as a decimal integer in its field's range, and
    /// an error names the field.
    ///
    /// ```
    /// use snowmint::Layout;
    /// let id = Layout::SONYFLAKE.parse_fields(1700000000000, &[("machine", "7"), ("sequence", "0")])?;
    /// assert_eq!(Layout::SONYFLAKE.field_values(id), [("sequence", 0), ("machine", 7)]);
    /// assert_eq!(
    ///     Layout::SONYFLAKE.parse_fields(1700000000000, &[("machine", "x"), ("sequence", "0")])
    ///         .unwrap_err()
    ///         .to_string(),
    ///     r#"machine must be a decimal integer 0..=65535, got "x""#
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn parse_fields(
        &self,
        timestamp_ms: u64,
        values: &[(&str, &str)],
    ) -> Result<SnowflakeId, Error> {
        let mut parsed = Vec::with_capacity(values.len());
        for &(name, text) in values {
            let Some(f) = self.node_fields().find(|f| f.name == name) else {
                return Err(Error::unknown_field(name, &self.node_names()));
            };
            let v = parse_in_range(Field::Id, text, 0, f.max).map_err(|e| e.named(f.name))?;
            parsed.push((name, v));
        }
        self.compose_fields(timestamp_ms, &parsed)
    }

    /// The same layout under another name, its datacenter, worker and
    /// sequence fields named as given (names as in a spec: `[a-z0-9_]`,
    /// at most [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) bytes, none of them `timestamp`, no two
    /// the same, and `datacenter`, `worker` or `sequence` only for that
    /// slot's own field); the slots stay where they are.
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    /// let l = Layout::new(0, 41, 0, 10, 12)?.with_names("mine", "dc", "machine", "step")?;
    /// assert_eq!(l.label(Field::Worker), "machine");
    /// assert!(Layout::TWITTER.with_names("x", "a", "a", "b").is_err());
    /// assert_eq!(
    ///     Layout::TWITTER.with_names("x", "worker", "machine", "sequence").unwrap_err().to_string(),
    ///     "invalid layout: worker names the worker slot, not the datacenter slot's field"
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn with_names(
        self,
        name: &'static str,
        datacenter: &str,
        worker: &str,
        sequence: &str,
    ) -> Result<Layout, Error> {
        let mut out = Layout { name, ..self };
        for (slot, slot_name, new) in [
            (SLOT_DATACENTER, "datacenter", datacenter),
            (SLOT_WORKER, "worker", worker),
            (SLOT_SEQUENCE, "sequence", sequence),
        ] {
            if self.slots[slot].bits > 0 {
                let n = field_name(new)?;
                if matches!(new, "datacenter" | "worker" | "sequence") && new != slot_name {
                    return Err(Error::layout(LayoutProblem::NameOfAnotherSlot {
                        name: new.to_string(),
                        slot: slot_name,
                    }));
                }
                out.names[self.slots[slot].index as usize] = n;
            }
        }
        check_names(&out)?;
        Ok(out)
    }

    /// The names of the fields below the time.
    fn node_names(&self) -> Vec<&str> {
        self.node_fields().map(|f| f.name).collect()
    }
}

/// A field name, or an error saying what is wrong with it.
pub(crate) fn field_name(name: &str) -> Result<FieldName, Error> {
    FieldName::new(name).ok_or_else(|| Error::layout(LayoutProblem::BadName { name: echo(name) }))
}

/// Checks that no two fields share a name and only the first is `timestamp`.
pub(crate) fn check_names(layout: &Layout) -> Result<(), Error> {
    let fields: Vec<_> = layout.fields().collect();
    for (i, f) in fields.iter().enumerate() {
        if matches!(f.name(), "sign" | "unused") {
            return Err(Error::layout(LayoutProblem::ReservedName {
                name: f.name().to_string(),
            }));
        }
        if i > 0 && f.name() == "timestamp" {
            return Err(Error::layout(LayoutProblem::TimestampTwice));
        }
        if fields[..i].iter().any(|g| g.name() == f.name()) {
            return Err(Error::layout(LayoutProblem::NamedTwice {
                name: f.name().to_string(),
            }));
        }
    }
    Ok(())
}
