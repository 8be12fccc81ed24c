//! Building a layout, and the bound every layout's arithmetic relies on
//! (invariant 2 of [`Layout`]): its time ends by 9999-12-31T23:59:59.999Z.

use super::Layout;
use super::slot::{NO_SLOT, SLOT_DATACENTER, SLOT_SEQUENCE, SLOT_WORKER};
use crate::error::Error;
use crate::name::{FieldName, MAX_FIELDS};
use crate::problem::LayoutProblem;
use crate::time::MAX_UNIX_MS;

/// Builds a layout from names and widths known to be valid.
pub(super) const fn preset(
    name: &'static str,
    epoch_ms: u64,
    unit_ms: u64,
    fields: &[(&str, u8)],
) -> Layout {
    let mut names = [FieldName::EMPTY; MAX_FIELDS];
    let mut widths = [0u8; MAX_FIELDS];
    let mut i = 0;
    while i < fields.len() {
        names[i] = FieldName::of(fields[i].0);
        widths[i] = fields[i].1;
        i += 1;
    }
    let layout = Layout {
        epoch_ms,
        unit_ms,
        name,
        len: fields.len() as u8,
        total: 0,
        names,
        widths,
        slots: [NO_SLOT; 3],
    };
    layout.with_total().with_slots_by_rule()
}

impl Layout {
    /// A layout of the given epoch (Unix ms) and widths, in milliseconds
    /// and Twitter's field order, with fields named `timestamp`,
    /// `datacenter`, `worker` and `sequence` (a width of 0 leaves the field
    /// out); see [`with_unit_ms`](Layout::with_unit_ms),
    /// [`with_order`](Layout::with_order) and
    /// [`with_names`](Layout::with_names) for the rest, and
    /// [`parse`](Layout::parse) for any other shape.
    ///
    /// The widths must add up to 63 (below a sign bit) or 64 (the
    /// timestamp's top bit is the sign bit, see [`Layout`]), the timestamp
    /// must have at least 1 bit, and its last millisecond must be at most
    /// [`MAX_UNIX_MS`](crate::time::MAX_UNIX_MS), 9999-12-31T23:59:59.999Z.
    ///
    /// ```
    /// use snowmint::Layout;
    /// assert_eq!(
    ///     Layout::new(0, 41, 5, 5, 11).unwrap_err().to_string(),
    ///     "invalid layout: the four widths must add up to 63 or 64 bits"
    /// );
    /// ```
    pub const fn new(
        epoch_ms: u64,
        timestamp_bits: u8,
        datacenter_bits: u8,
        worker_bits: u8,
        sequence_bits: u8,
    ) -> Result<Layout, Error> {
        let sum = timestamp_bits as u32
            + datacenter_bits as u32
            + worker_bits as u32
            + sequence_bits as u32;
        if sum != 63 && sum != 64 {
            return Err(Error::layout(LayoutProblem::FourWidths));
        }
        if timestamp_bits == 0 {
            return Err(Error::layout(LayoutProblem::NoTimestampBits));
        }
        let mut layout = Layout {
            epoch_ms,
            unit_ms: 1,
            name: "custom",
            len: 0,
            total: 0,
            names: [FieldName::EMPTY; MAX_FIELDS],
            widths: [0; MAX_FIELDS],
            slots: [NO_SLOT; 3],
        };
        layout = layout.push(FieldName::of("timestamp"), timestamp_bits, None);
        layout = layout.push(
            FieldName::of("datacenter"),
            datacenter_bits,
            Some(SLOT_DATACENTER),
        );
        layout = layout.push(FieldName::of("worker"), worker_bits, Some(SLOT_WORKER));
        layout = layout.push(
            FieldName::of("sequence"),
            sequence_bits,
            Some(SLOT_SEQUENCE),
        );
        layout.with_total().with_slot_positions().validated()
    }

    /// A layout of fields known to be valid, its slots by the rule.
    pub(crate) fn build(
        name: &'static str,
        epoch_ms: u64,
        unit_ms: u64,
        fields: &[(FieldName, u8)],
    ) -> Layout {
        let mut layout = Layout {
            epoch_ms,
            unit_ms,
            name,
            len: 0,
            total: 0,
            names: [FieldName::EMPTY; MAX_FIELDS],
            widths: [0; MAX_FIELDS],
            slots: [NO_SLOT; 3],
        };
        for &(name, bits) in fields {
            layout = layout.push(name, bits, None);
        }
        layout.with_total().with_slots_by_rule()
    }

    /// Whether `other` has the same epoch, unit and fields (names and
    /// widths), whatever its name and slots: how a spec that spells out a
    /// preset is known to be that preset.
    pub(crate) fn same_fields(&self, other: &Layout) -> bool {
        self.epoch_ms == other.epoch_ms
            && self.unit_ms == other.unit_ms
            && self.len == other.len
            && self.names == other.names
            && self.widths == other.widths
    }

    /// Appends a field (none if `bits` is 0), in `slot` if given.
    pub(super) const fn push(mut self, name: FieldName, bits: u8, slot: Option<usize>) -> Layout {
        if bits == 0 {
            return self;
        }
        let i = self.len as usize;
        self.names[i] = name;
        self.widths[i] = bits;
        if let Some(s) = slot {
            self.slots[s].index = i as u8;
        }
        self.len += 1;
        self
    }

    /// Sets `total` from the widths.
    const fn with_total(mut self) -> Layout {
        let mut total = 0u32;
        let mut i = 0;
        while i < self.len as usize {
            total += self.widths[i] as u32;
            i += 1;
        }
        self.total = total as u8;
        self
    }

    /// The same layout counting `unit_ms` milliseconds per step of the
    /// timestamp (Sonyflake: 10).
    ///
    /// ```
    /// use snowmint::Layout;
    /// let l = Layout::new(0, 39, 0, 16, 8)?.with_unit_ms(10)?;
    /// assert_eq!(l.decode(l.compose(1234, 0, 0, 0)?).timestamp_ms, 1230);
    /// assert!(Layout::TWITTER.with_unit_ms(0).is_err());
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub const fn with_unit_ms(self, unit_ms: u64) -> Result<Layout, Error> {
        if unit_ms == 0 {
            return Err(Error::layout(LayoutProblem::ZeroUnit { input: None }));
        }
        Layout {
            unit_ms,
            name: "custom",
            ..self
        }
        .validated()
    }

    /// Checks the bound every layout's arithmetic relies on: the last
    /// millisecond of the time field is at most [`MAX_UNIX_MS`]
    /// (9999-12-31T23:59:59.999Z). Below it, every time, ID and span of the
    /// layout is computed in `u64` without overflow: the epoch, the unit and
    /// `max_delta_units() * unit_ms` are each at most that bound, far below
    /// 2^63.
    pub(crate) const fn validated(self) -> Result<Layout, Error> {
        // In u128, where (2^64 - 1)^2 + 2 * (2^64 - 1) still fits.
        let last_ms = self.epoch_ms as u128
            + self.max_delta_units() as u128 * self.unit_ms as u128
            + (self.unit_ms as u128 - 1);
        if last_ms <= MAX_UNIX_MS as u128 {
            Ok(self)
        } else {
            Err(Error::layout(LayoutProblem::PastTheEnd { last_ms }))
        }
    }
}
