//! [`Layout`]: the bit layout of Twitter's IDs and of other systems'.
//!
//! A layout keeps three invariants, each in one file:
//!
//! 1. **Fields** (`field.rs`): the time field `timestamp` is the first,
//!    most significant; names are valid and distinct; widths add up to at
//!    most 64, and the bits above them are 0. A spec's fields are checked
//!    by `Layout::from_fields` (`spec.rs`), renamed ones by
//!    `Layout::with_names`, with the name checks of `field.rs`.
//! 2. **The end** (`build.rs`): the time field's last millisecond is at
//!    most [`MAX_UNIX_MS`](crate::time::MAX_UNIX_MS),
//!    9999-12-31T23:59:59.999Z, checked once when a layout is built, so
//!    the arithmetic on an accepted layout (`compose.rs`, `span.rs`,
//!    `range.rs`) cannot overflow.
//! 3. **Slots** (`slot.rs`): the fields that fill the contract's
//!    `datacenter`, `worker` and `sequence`, by name first, then by
//!    position; the presets (`preset.rs`) keep theirs.
//!
//! This file holds the type and the figures that follow from its fields;
//! `compose.rs` builds and takes apart IDs by slot, `range.rs` checks values
//! against their ranges, `span.rs` gives the IDs of a time span. Within the
//! folder, imports run one way: `preset` uses `build`, and `build` and
//! `field` use `slot`.

mod build;
mod compose;
mod field;
mod preset;
mod range;
mod slot;
mod span;
#[cfg(test)]
mod tests;

pub use self::compose::{Parts, compose, decode};
pub use self::field::LayoutField;
pub(crate) use self::field::field_name;
pub use self::slot::FieldOrder;
pub use self::span::IdSpan;
pub use crate::format::{
    DATACENTER_BITS, DATACENTER_SHIFT, MAX_BATCH, MAX_DATACENTER, MAX_DELTA_MS, MAX_ID,
    MAX_SEQUENCE, MAX_TIMESTAMP_MS, MAX_WORKER, MIN_TIMESTAMP_MS, SEQUENCE_BITS, TIMESTAMP_BITS,
    TIMESTAMP_SHIFT, TWITTER_EPOCH_MS, WORKER_BITS, WORKER_SHIFT,
};
pub use crate::name::{FieldName, MAX_FIELDS, MAX_NAME_LEN};

use self::slot::{SLOT_DATACENTER, SLOT_SEQUENCE, SLOT_WORKER, Slot};

/// A Snowflake bit layout: an epoch, a time unit, and named fields of
/// given widths from the most significant bit down, the first one the
/// time field `timestamp`.
///
/// The widths add up to at most 64. Below 64, the bits above the fields
/// are always 0 (with 63 that is just the sign bit of a signed 64-bit
/// integer). At exactly 64 the timestamp's top bit *is* the sign bit
/// (Discord's 42 bits as its documentation counts them, Instagram's 41 and
/// Mastodon's 48 bits): every ID is at most 2^63 - 1, so that bit is
/// always 0 and only half the field's range is usable;
/// [`max_delta_ms`](Layout::max_delta_ms) and
/// [`max_timestamp_ms`](Layout::max_timestamp_ms) say what actually fits.
///
/// [`Layout::TWITTER`] is the default everywhere. The other presets are in
/// [`Layout::PRESETS`] (by name: [`Layout::by_name`]); any other layout is
/// written as a spec, `epoch=EPOCH;unit=UNIT;fields=NAME:BITS,...`
/// ([`Layout::parse`], [`Layout::spec`]), or built with [`Layout::new`].
///
/// # The fields, and the three slots
///
/// [`fields`](Layout::fields) lists every field with its name, width and
/// shift, the time field first ([`time_field`](Layout::time_field));
/// [`compose_fields`](Layout::compose_fields) and
/// [`field_values`](Layout::field_values) build and take apart IDs by those
/// names. For the contract's fixed keys, the fields below the time also fill
/// three slots, which [`Parts`], [`compose`](Layout::compose) and the JSON
/// object's top-level `datacenter`, `worker` and `sequence` keep in every
/// layout: a field named `datacenter`, `worker` or `sequence` fills its own
/// slot; of the other fields, the lowest fills the `sequence` slot if it is
/// free, then from the bottom up the next free of `worker` and
/// `datacenter`. So Instagram's `shard` and Sonyflake's `machine` fill the
/// worker slot, Mastodon's `sequence_data` the sequence slot, and in
/// `timestamp:41,worker:5,datacenter:5,sequence:12` each field its own.
/// The presets keep the slots they always had: Discord's `worker` and
/// `process` fill the datacenter and worker slots, where Twitter's layout
/// has those bits.
///
/// ```
/// use snowmint::{Field, Layout};
///
/// // Discord's epoch is 2015-01-01; its "worker" and "process" IDs sit
/// // where Twitter keeps datacenter and worker.
/// let id = Layout::DISCORD.compose(1420070400000 + 1000, 1, 1, 0)?;
/// assert_eq!(id.get(), 4194439168);
/// assert_eq!(Layout::DISCORD.decode(id).timestamp_ms, 1420070401000);
/// assert_eq!(Layout::DISCORD.label(Field::Worker), "process");
///
/// // Sonyflake counts 10 ms units and keeps the machine ID lowest.
/// let sony = Layout::by_name("sonyflake").unwrap();
/// assert_eq!(sony.unit_ms(), 10);
/// assert_eq!(sony.label(Field::Worker), "machine");
/// assert_eq!(sony.worker_shift(), 0);
///
/// // A custom layout: 2020 epoch, 10 bits of machine, 12 of sequence.
/// let mine: Layout = "epoch=2020-01-01;fields=timestamp:41,machine:10,sequence:12".parse()?;
/// assert_eq!(mine.max_worker(), 1023);
/// assert_eq!(mine.name(), "custom");
/// assert_eq!(mine.spec(), "epoch=1577836800000;fields=timestamp:41,machine:10,sequence:12");
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    epoch_ms: u64,
    /// Milliseconds per step of the timestamp field (Sonyflake: 10).
    unit_ms: u64,
    name: &'static str,
    /// How many of `names`/`widths` are used; index 0 is the timestamp.
    len: u8,
    /// Sum of the widths, at most 64.
    total: u8,
    names: [FieldName; MAX_FIELDS],
    widths: [u8; MAX_FIELDS],
    /// The fields in the datacenter, worker and sequence slots.
    slots: [Slot; 3],
}

impl Default for Layout {
    fn default() -> Self {
        Layout::TWITTER
    }
}

impl Layout {
    /// The shift of field `index`: the widths below it.
    const fn shift_of(&self, index: usize) -> u32 {
        let mut below = 0u32;
        let mut i = index + 1;
        while i < self.len as usize {
            below += self.widths[i] as u32;
            i += 1;
        }
        below
    }

    /// The epoch in Unix milliseconds.
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Milliseconds per step of the timestamp field: 1, or 10 for Sonyflake.
    pub const fn unit_ms(&self) -> u64 {
        self.unit_ms
    }

    /// The sum of the fields' widths, at most 64; the bits above them are 0.
    pub const fn total_bits(&self) -> u32 {
        self.total as u32
    }

    /// Whether bit 63 is a sign bit of its own (widths add up to 63 or
    /// less), rather than the timestamp's top bit (widths add up to 64).
    pub const fn has_sign_bit(&self) -> bool {
        self.total < 64
    }

    /// The largest ID of the layout: every bit of its fields set, except a
    /// sign bit ([`MAX_ID`] when the widths add up to 63 or 64).
    pub const fn max_id(&self) -> u64 {
        if self.total >= 63 {
            MAX_ID
        } else {
            mask(self.total as u32)
        }
    }

    /// Width of the timestamp field (with the sign bit, if it is the top).
    pub const fn timestamp_bits(&self) -> u32 {
        self.widths[0] as u32
    }

    /// Width of the datacenter slot's field (0 if none).
    pub const fn datacenter_bits(&self) -> u32 {
        self.slots[SLOT_DATACENTER].bits as u32
    }

    /// Width of the worker slot's field (0 if none).
    pub const fn worker_bits(&self) -> u32 {
        self.slots[SLOT_WORKER].bits as u32
    }

    /// Width of the sequence slot's field (0 if none).
    pub const fn sequence_bits(&self) -> u32 {
        self.slots[SLOT_SEQUENCE].bits as u32
    }

    /// Where the worker slot's field starts.
    pub const fn worker_shift(&self) -> u32 {
        self.slots[SLOT_WORKER].shift as u32
    }

    /// Where the datacenter slot's field starts.
    pub const fn datacenter_shift(&self) -> u32 {
        self.slots[SLOT_DATACENTER].shift as u32
    }

    /// Where the sequence slot's field starts.
    pub const fn sequence_shift(&self) -> u32 {
        self.slots[SLOT_SEQUENCE].shift as u32
    }

    /// Where the timestamp field starts: the widths of all other fields.
    pub const fn timestamp_shift(&self) -> u32 {
        self.total as u32 - self.widths[0] as u32
    }

    /// Largest datacenter ID.
    pub const fn max_datacenter(&self) -> u64 {
        mask(self.datacenter_bits())
    }

    /// Largest worker ID.
    pub const fn max_worker(&self) -> u64 {
        mask(self.worker_bits())
    }

    /// Largest sequence number.
    pub const fn max_sequence(&self) -> u64 {
        mask(self.sequence_bits())
    }

    /// Largest value of the timestamp field an ID can hold: all of its bits
    /// below a separate sign bit, all but its top bit where that is the
    /// sign bit.
    pub const fn max_delta_units(&self) -> u64 {
        if self.has_sign_bit() {
            mask(self.timestamp_bits())
        } else {
            mask(self.timestamp_bits() - 1)
        }
    }

    /// Largest number of milliseconds since the epoch an ID can hold (the
    /// start of its last time unit).
    pub const fn max_delta_ms(&self) -> u64 {
        self.max_delta_units() * self.unit_ms
    }

    /// First encodable Unix-ms timestamp (the epoch).
    pub const fn min_timestamp_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Last encodable Unix-ms timestamp: the last millisecond of the last
    /// time unit.
    pub const fn max_timestamp_ms(&self) -> u64 {
        self.epoch_ms + self.max_delta_ms() + (self.unit_ms - 1)
    }
}

/// `2^bits - 1`, for `bits` in `0..=63`.
const fn mask(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        u64::MAX >> (64 - bits)
    }
}
