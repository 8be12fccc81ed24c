//! The bit layout: the Twitter constants, and [`Layout`] for other systems.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::error::{Error, Field};
use crate::id::SnowflakeId;
use crate::parse::{ParsedInt, parse_int};
use crate::problem::LayoutProblem;
use crate::time::MAX_UNIX_MS;

/// The Twitter epoch, 2010-11-04T01:42:54.657Z, in Unix milliseconds.
pub const TWITTER_EPOCH_MS: u64 = 1_288_834_974_657;
/// Bits of milliseconds since the epoch (bits 62..=22).
pub const TIMESTAMP_BITS: u32 = 41;
/// Bits of datacenter ID (bits 21..=17).
pub const DATACENTER_BITS: u32 = 5;
/// Bits of worker ID, the "machine ID" of the original tool (bits 16..=12).
pub const WORKER_BITS: u32 = 5;
/// Bits of sequence within one millisecond (bits 11..=0).
pub const SEQUENCE_BITS: u32 = 12;

/// Where the worker ID starts.
pub const WORKER_SHIFT: u32 = SEQUENCE_BITS;
/// Where the datacenter ID starts.
pub const DATACENTER_SHIFT: u32 = WORKER_SHIFT + WORKER_BITS;
/// Where the timestamp starts.
pub const TIMESTAMP_SHIFT: u32 = DATACENTER_SHIFT + DATACENTER_BITS;

/// Largest datacenter ID, 31.
pub const MAX_DATACENTER: u64 = (1 << DATACENTER_BITS) - 1;
/// Largest worker ID, 31.
pub const MAX_WORKER: u64 = (1 << WORKER_BITS) - 1;
/// Largest sequence number, 4095: at most 4096 IDs per worker per millisecond.
pub const MAX_SEQUENCE: u64 = (1 << SEQUENCE_BITS) - 1;
/// Largest number of milliseconds since the epoch, 2^41 - 1.
pub const MAX_DELTA_MS: u64 = (1 << TIMESTAMP_BITS) - 1;
/// First encodable Unix-ms timestamp: the epoch itself.
pub const MIN_TIMESTAMP_MS: u64 = TWITTER_EPOCH_MS;
/// Last encodable Unix-ms timestamp, 2080-07-10T17:30:30.208Z.
pub const MAX_TIMESTAMP_MS: u64 = TWITTER_EPOCH_MS + MAX_DELTA_MS;
/// Largest ID, 2^63 - 1: the sign bit is always 0.
pub const MAX_ID: u64 = i64::MAX as u64;
/// IDs one worker can issue in one millisecond, 4096; also the most one
/// batch may ask for (a batch is one millisecond's run of sequence numbers).
pub const MAX_BATCH: usize = 1 << SEQUENCE_BITS;

/// The four values an ID is made of, as plain numbers.
///
/// `timestamp_ms` is Unix milliseconds (the epoch already added back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Parts {
    /// Unix milliseconds.
    pub timestamp_ms: u64,
    /// Datacenter ID.
    pub datacenter: u64,
    /// Worker ID.
    pub worker: u64,
    /// Sequence within the millisecond.
    pub sequence: u64,
}

/// Where the three fields below the timestamp sit, in the layouts
/// [`Layout::new`] builds.
///
/// The timestamp is always the most significant field (below the sign bit,
/// if the layout has one), so IDs order by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldOrder {
    /// Timestamp, datacenter, worker, sequence (Twitter, Discord,
    /// Instagram, Mastodon).
    IdentityThenSequence,
    /// Timestamp, sequence, datacenter, worker (Sonyflake: the machine ID
    /// is the lowest field).
    SequenceThenIdentity,
}

/// Most fields a layout can have, the timestamp included.
pub const MAX_FIELDS: usize = 16;
/// Longest field name, in bytes.
pub const MAX_NAME_LEN: usize = 24;

/// The name of a layout's field: 1 to [`MAX_NAME_LEN`] lower-case ASCII
/// letters, digits and `_`, stored inline so that [`Layout`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldName {
    len: u8,
    bytes: [u8; MAX_NAME_LEN],
}

impl FieldName {
    const EMPTY: FieldName = FieldName {
        len: 0,
        bytes: [0; MAX_NAME_LEN],
    };

    /// A name for the presets and [`Layout::new`]: known to be valid.
    const fn of(name: &str) -> FieldName {
        match FieldName::new(name) {
            Some(n) => n,
            None => panic!("invalid built-in field name"),
        }
    }

    /// `name` if it is 1 to [`MAX_NAME_LEN`] bytes of `[a-z0-9_]`.
    ///
    /// ```
    /// use snowmint::FieldName;
    /// assert_eq!(FieldName::new("machine_id").unwrap().as_str(), "machine_id");
    /// assert!(FieldName::new("Machine").is_none());
    /// assert!(FieldName::new("").is_none());
    /// ```
    pub const fn new(name: &str) -> Option<FieldName> {
        let b = name.as_bytes();
        if b.is_empty() || b.len() > MAX_NAME_LEN {
            return None;
        }
        let mut out = FieldName::EMPTY;
        let mut i = 0;
        while i < b.len() {
            if !matches!(b[i], b'a'..=b'z' | b'0'..=b'9' | b'_') {
                return None;
            }
            out.bytes[i] = b[i];
            i += 1;
        }
        out.len = b.len() as u8;
        Some(out)
    }

    /// The name.
    pub const fn as_str(&self) -> &str {
        let (bytes, _) = self.bytes.split_at(self.len as usize);
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            // Only ASCII is ever stored.
            Err(_) => "",
        }
    }

    /// Whether the name is `other`.
    pub const fn is(&self, other: &str) -> bool {
        let o = other.as_bytes();
        if o.len() != self.len as usize {
            return false;
        }
        let mut i = 0;
        while i < o.len() {
            if o[i] != self.bytes[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}

impl core::fmt::Debug for FieldName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl core::fmt::Display for FieldName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

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

    /// The slot of [`Parts`] and of the JSON object's top-level keys that
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

/// Where a slot's field sits: `bits` 0 when the layout has no such field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Slot {
    index: u8,
    shift: u8,
    bits: u8,
}

const NO_SLOT: Slot = Slot {
    index: u8::MAX,
    shift: 0,
    bits: 0,
};

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

/// Builds a layout from names and widths known to be valid.
const fn preset(name: &'static str, epoch_ms: u64, unit_ms: u64, fields: &[(&str, u8)]) -> Layout {
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
    /// Twitter's layout: epoch 1288834974657, a sign bit, then widths
    /// 41 / 5 / 5 / 12.
    pub const TWITTER: Layout = preset(
        "twitter",
        TWITTER_EPOCH_MS,
        1,
        &[
            ("timestamp", TIMESTAMP_BITS as u8),
            ("datacenter", DATACENTER_BITS as u8),
            ("worker", WORKER_BITS as u8),
            ("sequence", SEQUENCE_BITS as u8),
        ],
    );

    /// Discord's layout, as its developer documentation draws it: a 42-bit
    /// timestamp (bits 63 to 22) since 1420070400000
    /// (2015-01-01T00:00:00Z), then the internal worker ID (5 bits), the
    /// internal process ID (5) and the increment (12). The timestamp's top
    /// bit is the sign bit, so it decodes exactly like Twitter's but for
    /// the epoch.
    ///
    /// Its slots are the ones Twitter's layout has at the same bits (the
    /// worker ID in the datacenter slot, the process ID in the worker
    /// slot), not the rule's: a preset keeps the slots it always had.
    pub const DISCORD: Layout = preset(
        "discord",
        1_420_070_400_000,
        1,
        &[
            ("timestamp", 42),
            ("worker", 5),
            ("process", 5),
            ("increment", 12),
        ],
    )
    .with_slot_indices([1, 2, 3]);

    /// Instagram's layout ("Sharding & IDs at Instagram", 2012): 41 bits
    /// of milliseconds since 1314220021721 (2011-08-24T21:07:01.721Z), a
    /// 13-bit logical shard ID (the `worker` slot) and a 10-bit sequence.
    ///
    /// 41 + 13 + 10 = 64: the time field's top bit is the sign bit of
    /// Postgres' `bigint`, so IDs (never negative) can hold 2^40 - 1 ms,
    /// until 2046-06-27T17:00:49.496Z.
    pub const INSTAGRAM: Layout = preset(
        "instagram",
        1_314_220_021_721,
        1,
        &[("timestamp", 41), ("shard", 13), ("sequence", 10)],
    );

    /// Sonyflake's layout (sony/sonyflake v1): 39 bits of 10 ms units since
    /// 1409529600000 (2014-09-01T00:00:00Z), then an 8-bit sequence, then a
    /// 16-bit machine ID (the `worker` slot) as the lowest field.
    pub const SONYFLAKE: Layout = preset(
        "sonyflake",
        1_409_529_600_000,
        10,
        &[("timestamp", 39), ("sequence", 8), ("machine", 16)],
    );

    /// Mastodon's layout (lib/mastodon/snowflake.rb): 48 bits of Unix
    /// milliseconds (epoch 0), then 16 bits of "sequence data" (a salted
    /// hash plus a counter, in the `sequence` slot).
    ///
    /// 48 + 16 = 64: the time field's top bit is the sign bit of the
    /// `bigint`, so IDs hold 2^47 - 1 ms, until the year 6429.
    pub const MASTODON: Layout = preset(
        "mastodon",
        0,
        1,
        &[("timestamp", 48), ("sequence_data", 16)],
    );

    /// Every preset, Twitter first: what `--layout` and `?layout=` accept,
    /// by [`name`](Layout::name).
    pub const PRESETS: [Layout; 5] = [
        Layout::TWITTER,
        Layout::DISCORD,
        Layout::INSTAGRAM,
        Layout::SONYFLAKE,
        Layout::MASTODON,
    ];

    /// The presets' names, in the order of [`PRESETS`](Layout::PRESETS).
    pub const PRESET_NAMES: [&'static str; 5] = {
        let mut names = [""; 5];
        let mut i = 0;
        while i < 5 {
            names[i] = Layout::PRESETS[i].name;
            i += 1;
        }
        names
    };

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
    const fn push(mut self, name: FieldName, bits: u8, slot: Option<usize>) -> Layout {
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

    /// Assigns the three slots by the rule of [`Layout`]: a field named
    /// `datacenter`, `worker` or `sequence` takes its own slot; of the
    /// fields left, the lowest is the sequence (if no field is named so),
    /// then from the bottom up the next fills the worker slot and the one
    /// above it the datacenter slot, each if no field is named so.
    pub(crate) const fn with_slots_by_rule(mut self) -> Layout {
        self.slots = [NO_SLOT; 3];
        let len = self.len as usize;
        let mut taken = [false; MAX_FIELDS];
        let mut i = 1;
        while i < len {
            let name = self.names[i];
            let slot = if name.is("datacenter") {
                SLOT_DATACENTER
            } else if name.is("worker") {
                SLOT_WORKER
            } else if name.is("sequence") {
                SLOT_SEQUENCE
            } else {
                usize::MAX
            };
            if slot != usize::MAX {
                self.slots[slot].index = i as u8;
                taken[i] = true;
            }
            i += 1;
        }
        // The free slots, in the order the fields left fill them from the
        // bottom up.
        let order = [SLOT_SEQUENCE, SLOT_WORKER, SLOT_DATACENTER];
        let mut k = 0;
        let mut i = len;
        while i > 1 && k < order.len() {
            if self.slots[order[k]].index != u8::MAX {
                k += 1;
                continue;
            }
            i -= 1;
            if !taken[i] {
                self.slots[order[k]].index = i as u8;
                taken[i] = true;
                k += 1;
            }
        }
        self.with_slot_positions()
    }

    /// The same layout with its slots at the fields of the given indices
    /// (datacenter, worker, sequence): for a preset whose slots its own
    /// documentation draws, not the rule.
    const fn with_slot_indices(mut self, indices: [u8; 3]) -> Layout {
        self.slots = [NO_SLOT; 3];
        let mut s = 0;
        while s < 3 {
            self.slots[s].index = indices[s];
            s += 1;
        }
        self.with_slot_positions()
    }

    /// Fills in each slot's shift and width from its field index.
    const fn with_slot_positions(mut self) -> Layout {
        let mut s = 0;
        while s < 3 {
            let index = self.slots[s].index;
            if index == u8::MAX {
                self.slots[s] = NO_SLOT;
            } else {
                self.slots[s].shift = self.shift_of(index as usize) as u8;
                self.slots[s].bits = self.widths[index as usize];
            }
            s += 1;
        }
        self
    }

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

    /// The same layout with its three slot fields in `order` below the
    /// timestamp (fields beyond the slots keep their place above them).
    pub const fn with_order(self, order: FieldOrder) -> Layout {
        let wanted = match order {
            FieldOrder::IdentityThenSequence => [SLOT_DATACENTER, SLOT_WORKER, SLOT_SEQUENCE],
            FieldOrder::SequenceThenIdentity => [SLOT_SEQUENCE, SLOT_DATACENTER, SLOT_WORKER],
        };
        let mut out = Layout {
            name: "custom",
            len: 0,
            names: [FieldName::EMPTY; MAX_FIELDS],
            widths: [0; MAX_FIELDS],
            slots: [NO_SLOT; 3],
            ..self
        };
        // Fields in no slot (the timestamp, and any beyond the three) first.
        let mut i = 0;
        while i < self.len as usize {
            if self.slot_of_index(i).is_none() {
                out = out.push(self.names[i], self.widths[i], None);
            }
            i += 1;
        }
        let mut k = 0;
        while k < 3 {
            let slot = self.slots[wanted[k]];
            if slot.bits > 0 {
                let idx = slot.index as usize;
                out = out.push(self.names[idx], self.widths[idx], Some(wanted[k]));
            }
            k += 1;
        }
        out.with_slot_positions()
    }

    /// The slot of field `index`, if it fills one.
    const fn slot_of_index(&self, index: usize) -> Option<usize> {
        let mut s = 0;
        while s < 3 {
            if self.slots[s].index as usize == index && self.slots[s].bits > 0 {
                return Some(s);
            }
            s += 1;
        }
        None
    }

    /// The same layout under another name, its datacenter, worker and
    /// sequence fields named as given (names as in a spec: `[a-z0-9_]`,
    /// at most [`MAX_NAME_LEN`] bytes, none of them `timestamp`, no two
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
                let n = crate::spec::field_name(new)?;
                if matches!(new, "datacenter" | "worker" | "sequence") && new != slot_name {
                    return Err(Error::layout(LayoutProblem::NameOfAnotherSlot {
                        name: new.to_string(),
                        slot: slot_name,
                    }));
                }
                out.names[self.slots[slot].index as usize] = n;
            }
        }
        crate::spec::check_names(&out)?;
        Ok(out)
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

    /// A preset by name: `twitter`, `discord`, `instagram`, `sonyflake` or
    /// `mastodon` (ASCII case-insensitive, surrounding whitespace ignored).
    /// [`parse`](Layout::parse) takes a spec as well.
    ///
    /// ```
    /// use snowmint::Layout;
    /// assert_eq!(Layout::by_name("Instagram"), Some(Layout::INSTAGRAM));
    /// assert_eq!(Layout::by_name("flickr"), None);
    /// ```
    pub fn by_name(name: &str) -> Option<Layout> {
        let name = name.trim();
        Layout::PRESETS
            .into_iter()
            .find(|l| l.name.eq_ignore_ascii_case(name))
    }

    /// The preset's name (`twitter`, ...), or `custom` for any other layout
    /// (a spec that spells out a preset exactly is that preset).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Whether this is one of the [`PRESETS`](Layout::PRESETS).
    pub const fn is_preset(&self) -> bool {
        !matches!(self.name.as_bytes(), b"custom")
    }

    /// What `--layout` and `?layout=` take to mean this layout: the
    /// preset's name, or else the [`spec`](Layout::spec).
    pub fn to_param(&self) -> String {
        if self.is_preset() {
            self.name.to_string()
        } else {
            self.spec()
        }
    }

    /// The name of the field in `slot` (see [`Layout`]): Instagram's
    /// `worker` is its `shard`, Sonyflake's is its `machine`, Discord's
    /// slots hold `worker`, `process` and `increment`. The time slot is
    /// `timestamp`, and a slot the layout does not have answers its own
    /// name.
    pub const fn label(&self, slot: Field) -> &str {
        let s = match slot {
            Field::Datacenter => SLOT_DATACENTER,
            Field::Worker => SLOT_WORKER,
            Field::Sequence => SLOT_SEQUENCE,
            Field::Timestamp => return self.names[0].as_str(),
            other => return other.name(),
        };
        if self.slots[s].bits == 0 {
            return slot.name();
        }
        self.names[self.slots[s].index as usize].as_str()
    }

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

    /// The names of the fields below the time.
    fn node_names(&self) -> Vec<&str> {
        self.node_fields().map(|f| f.name).collect()
    }

    /// The epoch in Unix milliseconds.
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Milliseconds per step of the timestamp field: 1, or 10 for Sonyflake.
    pub const fn unit_ms(&self) -> u64 {
        self.unit_ms
    }

    /// The order of the sequence and identity slots below the timestamp:
    /// [`FieldOrder::SequenceThenIdentity`] when the sequence sits above an
    /// identity field (Sonyflake).
    pub const fn order(&self) -> FieldOrder {
        let seq = self.slots[SLOT_SEQUENCE];
        let worker = self.slots[SLOT_WORKER];
        if seq.bits > 0 && worker.bits > 0 && seq.shift > worker.shift {
            FieldOrder::SequenceThenIdentity
        } else {
            FieldOrder::IdentityThenSequence
        }
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

    /// The allowed range of a field, inclusive.
    #[inline]
    pub const fn range(&self, field: Field) -> (u64, u64) {
        match field {
            Field::Timestamp | Field::From | Field::To => {
                (self.min_timestamp_ms(), self.max_timestamp_ms())
            }
            Field::Datacenter => (0, self.max_datacenter()),
            Field::Worker => (0, self.max_worker()),
            Field::Sequence => (0, self.max_sequence()),
            Field::Id => (0, self.max_id()),
            // A field of a layout by name: see `LayoutField::max`.
            Field::Layout | Field::LayoutField => (0, MAX_ID),
            // One batch: at most one millisecond's IDs.
            Field::Count => (1, self.max_sequence() + 1),
            Field::Ordinal => (0, (1 << (self.datacenter_bits() + self.worker_bits())) - 1),
        }
    }

    /// Whether `value` is in the range of `field`.
    #[inline]
    pub const fn contains(&self, field: Field, value: u64) -> bool {
        let (min, max) = self.range(field);
        value >= min && value <= max
    }

    /// Checks `value` against the range of `field`.
    pub const fn check(&self, field: Field, value: u64) -> Result<u64, Error> {
        if self.contains(field, value) {
            Ok(value)
        } else {
            Err(self.range_error(field, value))
        }
    }

    /// Checks that `id` can be an ID of this layout: in a layout narrower
    /// than 63 bits, the bits above its fields are 0.
    ///
    /// ```
    /// use snowmint::{Layout, SnowflakeId};
    /// let l: Layout = "epoch=0;fields=timestamp:40,node:8".parse()?;
    /// assert!(l.check_id(SnowflakeId::new(1 << 47)?).is_ok());
    /// assert_eq!(
    ///     l.check_id(SnowflakeId::new(1 << 48)?).unwrap_err().to_string(),
    ///     "id must be 0..=281474976710655, got 281474976710656: \
    ///      bits above the layout's 48 are set"
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn check_id(&self, id: SnowflakeId) -> Result<SnowflakeId, Error> {
        if id.get() > self.max_id() {
            return Err(Error::above_layout(
                id.get(),
                self.max_id(),
                self.total_bits(),
            ));
        }
        Ok(id)
    }

    /// The error for `value` outside the range of `field`.
    const fn range_error(&self, field: Field, value: u64) -> Error {
        let (min, max) = self.range(field);
        if field.is_time() {
            Error::timestamp_in(field, value as i128, min, max)
        } else {
            Error::out_of_range(field, value as i128, min, max)
        }
    }

    /// Parses a decimal integer typed for `field` and checks its range.
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    /// let l = Layout::TWITTER;
    /// assert_eq!(l.parse_field(Field::Worker, "31"), Ok(31));
    /// assert_eq!(
    ///     l.parse_field(Field::Sequence, "4096").unwrap_err().to_string(),
    ///     "sequence must be 0..=4095, got 4096"
    /// );
    /// assert_eq!(
    ///     l.parse_field(Field::Datacenter, "-1").unwrap_err().to_string(),
    ///     "datacenter must be 0..=31, got -1"
    /// );
    /// assert_eq!(
    ///     l.parse_field(Field::Worker, "abc").unwrap_err().to_string(),
    ///     r#"worker must be a decimal integer 0..=31, got "abc""#
    /// );
    /// ```
    pub fn parse_field(&self, field: Field, input: &str) -> Result<u64, Error> {
        let (min, max) = self.range(field);
        parse_in_range(field, input, min, max)
    }

    /// Builds an ID from its time and the three slots' values, checking
    /// each against its range (any field beyond the three slots is 0; see
    /// [`compose_fields`](Layout::compose_fields) for every field by name).
    ///
    /// `timestamp_ms` is Unix milliseconds; the epoch is subtracted here,
    /// and in a layout of coarser time units the millisecond's unit is
    /// taken (so decoding gives the unit's first millisecond).
    #[inline]
    pub const fn compose(
        &self,
        timestamp_ms: u64,
        datacenter: u64,
        worker: u64,
        sequence: u64,
    ) -> Result<SnowflakeId, Error> {
        if !self.contains(Field::Timestamp, timestamp_ms) {
            return Err(self.range_error(Field::Timestamp, timestamp_ms));
        }
        if !self.contains(Field::Datacenter, datacenter) {
            return Err(self.range_error(Field::Datacenter, datacenter));
        }
        if !self.contains(Field::Worker, worker) {
            return Err(self.range_error(Field::Worker, worker));
        }
        if !self.contains(Field::Sequence, sequence) {
            return Err(self.range_error(Field::Sequence, sequence));
        }
        Ok(SnowflakeId::from_raw(
            ((timestamp_ms - self.epoch_ms) / self.unit_ms) << self.timestamp_shift()
                | (datacenter << self.datacenter_shift())
                | (worker << self.worker_shift())
                | (sequence << self.sequence_shift()),
        ))
    }

    /// Builds an ID from [`Parts`], checking each against its range.
    pub const fn compose_parts(&self, parts: Parts) -> Result<SnowflakeId, Error> {
        self.compose(
            parts.timestamp_ms,
            parts.datacenter,
            parts.worker,
            parts.sequence,
        )
    }

    /// Takes an ID apart into its time and three slots. Every 63-bit value
    /// gives an answer (bits above a narrow layout's fields are ignored;
    /// [`check_id`](Layout::check_id) refuses them).
    #[inline]
    pub const fn decode(&self, id: SnowflakeId) -> Parts {
        let v = id.get();
        Parts {
            timestamp_ms: self.epoch_ms
                + ((v >> self.timestamp_shift()) & self.max_delta_units()) * self.unit_ms,
            datacenter: (v >> self.datacenter_shift()) & self.max_datacenter(),
            worker: (v >> self.worker_shift()) & self.max_worker(),
            sequence: (v >> self.sequence_shift()) & self.max_sequence(),
        }
    }

    /// The smallest ID of a millisecond: for range queries and pagination by
    /// time, `min_id_at(a) <= id <= max_id_at(b)` selects every ID minted in
    /// `a..=b`, on every datacenter and worker.
    ///
    /// ```
    /// use snowmint::Layout;
    /// let l = Layout::TWITTER;
    /// assert_eq!(l.min_id_at(1288834975657)?.get(), 4194304000);
    /// assert_eq!(l.max_id_at(1288834975657)?.get(), 4198498303);
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub const fn min_id_at(&self, timestamp_ms: u64) -> Result<SnowflakeId, Error> {
        if !self.contains(Field::Timestamp, timestamp_ms) {
            return Err(self.range_error(Field::Timestamp, timestamp_ms));
        }
        Ok(SnowflakeId::from_raw(
            ((timestamp_ms - self.epoch_ms) / self.unit_ms) << self.timestamp_shift(),
        ))
    }

    /// The largest ID of a millisecond; see [`min_id_at`](Layout::min_id_at).
    pub const fn max_id_at(&self, timestamp_ms: u64) -> Result<SnowflakeId, Error> {
        if !self.contains(Field::Timestamp, timestamp_ms) {
            return Err(self.range_error(Field::Timestamp, timestamp_ms));
        }
        Ok(SnowflakeId::from_raw(
            ((timestamp_ms - self.epoch_ms) / self.unit_ms) << self.timestamp_shift()
                | mask(self.timestamp_shift()),
        ))
    }

    /// How many distinct IDs one time unit holds, on all nodes together:
    /// 2 to the power of the widths below the time (Twitter: 2^22).
    pub const fn ids_per_unit(&self) -> u64 {
        1 << self.timestamp_shift()
    }

    /// The last Unix millisecond at which every ID of its time unit is at
    /// most 2^53 - 1 (a JavaScript number holds it exactly), or `None` if
    /// even the epoch's IDs are larger. Twitter's IDs stopped being safe
    /// 24 days after its epoch:
    ///
    /// ```
    /// use snowmint::{Layout, time::Iso8601};
    /// let t = Layout::TWITTER.js_safe_until_ms().unwrap();
    /// assert_eq!(Iso8601(t as i64).to_string(), "2010-11-28T22:14:18.304Z");
    /// ```
    pub const fn js_safe_until_ms(&self) -> Option<u64> {
        let shift = self.timestamp_shift();
        if shift > 53 {
            return None;
        }
        // (d << shift) | mask(shift) <= 2^53 - 1  <=>  d <= 2^(53 - shift) - 1
        let safe = (1u64 << (53 - shift)) - 1;
        let units = if safe < self.max_delta_units() {
            safe
        } else {
            self.max_delta_units()
        };
        Some(self.epoch_ms + units * self.unit_ms + (self.unit_ms - 1))
    }
}

/// Indices of the three slots in `Layout::slots`.
const SLOT_DATACENTER: usize = 0;
const SLOT_WORKER: usize = 1;
const SLOT_SEQUENCE: usize = 2;

impl Layout {
    /// The IDs of a time span: every ID whose timestamp lies in
    /// `from_ms..=to_ms` (both inclusive), on every datacenter and worker,
    /// is in `min..=max`; for `WHERE id BETWEEN min AND max` and for paging
    /// APIs that take IDs (Discord's `before` and `after`). In a layout of
    /// coarser time units the span covers whole units.
    ///
    /// Out-of-range times are refused naming `from` or `to`, and so is a
    /// span that ends before it starts (naming `to`).
    ///
    /// ```
    /// use snowmint::Layout;
    /// let span = Layout::TWITTER.span(1288834975657, 1288834975658)?;
    /// assert_eq!(span.min.get(), 1000 << 22);
    /// assert_eq!(span.max.get(), (1001 << 22) | 4194303);
    /// assert_eq!(span.slots(), 2 << 22);
    /// assert_eq!(
    ///     Layout::TWITTER.span(1288834975658, 1288834975657).unwrap_err().to_string(),
    ///     "to must be at or after from 1288834975658 (2010-11-04T01:42:55.658Z), \
    ///      got 1288834975657 (2010-11-04T01:42:55.657Z)"
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn span(&self, from_ms: u64, to_ms: u64) -> Result<IdSpan, Error> {
        if !self.contains(Field::From, from_ms) {
            return Err(self.range_error(Field::From, from_ms));
        }
        if !self.contains(Field::To, to_ms) {
            return Err(self.range_error(Field::To, to_ms));
        }
        if from_ms > to_ms {
            return Err(Error::order(from_ms, to_ms));
        }
        Ok(IdSpan {
            from_ms,
            to_ms,
            min: self.min_id_at(from_ms)?,
            max: self.max_id_at(to_ms)?,
        })
    }

    /// [`span`](Layout::span) of two times as people type them (see
    /// [`parse_timestamp`](Layout::parse_timestamp)); `to` missing means
    /// the same time as `from`. Errors name `from` or `to`.
    ///
    /// ```
    /// use snowmint::{Field, Layout};
    /// let span = Layout::TWITTER.parse_span("2024-01-01T00:00:00Z", None, 0)?;
    /// assert_eq!((span.from_ms, span.to_ms), (1704067200000, 1704067200000));
    /// let err = Layout::TWITTER.parse_span("now", Some("soon"), 1704067200000).unwrap_err();
    /// assert_eq!(err.field(), Field::To);
    /// assert!(err.to_string().starts_with("to must be Unix milliseconds or an ISO-8601 time"));
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn parse_span(&self, from: &str, to: Option<&str>, now_ms: u64) -> Result<IdSpan, Error> {
        let from_ms = self.parse_time_field(Field::From, from, now_ms)?;
        let to_ms = match to {
            Some(to) => self.parse_time_field(Field::To, to, now_ms)?,
            None => from_ms,
        };
        self.span(from_ms, to_ms)
    }

    /// Parses a timestamp as people type it: `now` (the given `now_ms`),
    /// Unix milliseconds, or ISO-8601 / RFC 3339 text; then checks it
    /// against the layout's range. See [`parse_timestamp`](crate::parse_timestamp).
    pub fn parse_timestamp(&self, input: &str, now_ms: u64) -> Result<u64, Error> {
        self.parse_time_field(Field::Timestamp, input, now_ms)
    }

    /// [`parse_timestamp`](Layout::parse_timestamp) for a time field named
    /// `field` (`timestamp`, `from` or `to`).
    fn parse_time_field(&self, field: Field, input: &str, now_ms: u64) -> Result<u64, Error> {
        let trimmed = input.trim();
        if trimmed.eq_ignore_ascii_case("now") {
            return self.check(field, now_ms);
        }
        let (min, max) = self.range(field);
        let syntax = || {
            Error::syntax(
                field,
                input,
                "Unix milliseconds or an ISO-8601 time",
                min,
                max,
            )
        };
        if trimmed.contains(['-', ':', 'T']) && !trimmed.starts_with('-') {
            return match crate::time::parse_iso8601(trimmed) {
                Some(ms) if ms < 0 => Err(Error::timestamp_in(field, i128::from(ms), min, max)),
                Some(ms) => self.check(field, ms as u64),
                None => Err(syntax()),
            };
        }
        match parse_int(input) {
            ParsedInt::NotANumber => Err(syntax()),
            _ => self.parse_field(field, input),
        }
    }
}

/// The IDs of a time span, from [`Layout::span`]: with the `serde` feature
/// it serializes to exactly `{"from_ms": N, "to_ms": N, "min": "ID", "max":
/// "ID"}` (the CLI's `range --json` and `GET /api/v1/range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IdSpan {
    /// The first millisecond, Unix ms.
    pub from_ms: u64,
    /// The last millisecond, Unix ms (inclusive).
    pub to_ms: u64,
    /// The smallest ID of `from_ms`.
    pub min: SnowflakeId,
    /// The largest ID of `to_ms`.
    pub max: SnowflakeId,
}

impl IdSpan {
    /// How many IDs the span can hold: `max - min + 1`, every slot of every
    /// millisecond on every datacenter and worker.
    pub const fn slots(&self) -> u64 {
        self.max.get() - self.min.get() + 1
    }
}

/// Parses a decimal integer typed for `field` and checks it against
/// `min..=max`: [`Layout::parse_field`] for a range of your own (say, how
/// many IDs a command may print). Surrounding whitespace is ignored; never
/// panics.
///
/// ```
/// use snowmint::{Field, parse_in_range};
/// assert_eq!(parse_in_range(Field::Count, "10", 1, 100), Ok(10));
/// assert_eq!(
///     parse_in_range(Field::Count, "0", 1, 100).unwrap_err().to_string(),
///     "count must be 1..=100, got 0"
/// );
/// assert_eq!(
///     parse_in_range(Field::Count, "lots", 1, 100).unwrap_err().to_string(),
///     r#"count must be a decimal integer 1..=100, got "lots""#
/// );
/// ```
pub fn parse_in_range(field: Field, input: &str, min: u64, max: u64) -> Result<u64, Error> {
    match parse_int(input) {
        ParsedInt::Int(v) if v >= i128::from(min) && v <= i128::from(max) => Ok(v as u64),
        ParsedInt::Int(v) if field.is_time() => Err(Error::timestamp_in(field, v, min, max)),
        ParsedInt::Int(v) => Err(Error::out_of_range(field, v, min, max)),
        ParsedInt::TooWide => Err(Error::too_wide(field, input.trim(), min, max)),
        ParsedInt::NotANumber => Err(Error::syntax(
            field,
            input,
            if field.is_time() {
                "Unix milliseconds"
            } else {
                "a decimal integer"
            },
            min,
            max,
        )),
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

/// Builds a Twitter-layout ID; see [`Layout::compose`].
///
/// ```
/// let id = snowmint::compose(1288834975657, 1, 1, 0)?;
/// assert_eq!(id.get(), 4194439168);
/// let last = snowmint::compose(3487858230208, 31, 31, 4095)?;
/// assert_eq!(last.get(), 9223372036854775807);
/// # Ok::<(), snowmint::Error>(())
/// ```
#[inline]
pub const fn compose(
    timestamp_ms: u64,
    datacenter: u64,
    worker: u64,
    sequence: u64,
) -> Result<SnowflakeId, Error> {
    Layout::TWITTER.compose(timestamp_ms, datacenter, worker, sequence)
}

/// Takes a Twitter-layout ID given as a plain integer apart, refusing
/// integers with the sign bit set.
///
/// ```
/// let parts = snowmint::decode(4194439168)?;
/// assert_eq!(parts.timestamp_ms, 1288834975657);
/// assert_eq!((parts.datacenter, parts.worker, parts.sequence), (1, 1, 0));
/// assert!(snowmint::decode(1 << 63).is_err());
/// # Ok::<(), snowmint::Error>(())
/// ```
#[inline]
pub const fn decode(id: u64) -> Result<Parts, Error> {
    if id > MAX_ID {
        return Err(Error::out_of_range(Field::Id, id as i128, 0, MAX_ID));
    }
    Ok(Layout::TWITTER.decode(SnowflakeId::from_raw(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_the_contract() {
        assert_eq!(MAX_TIMESTAMP_MS, 3_487_858_230_208);
        assert_eq!(TIMESTAMP_SHIFT, 22);
        assert_eq!(DATACENTER_SHIFT, 17);
        assert_eq!(WORKER_SHIFT, 12);
        assert_eq!(Layout::TWITTER.max_timestamp_ms(), MAX_TIMESTAMP_MS);
    }

    #[test]
    fn layouts_are_validated() {
        assert!(Layout::new(0, 41, 5, 5, 11).is_err());
        assert!(Layout::new(0, 0, 21, 30, 12).is_err());
        assert!(Layout::new(u64::MAX - 5, 41, 5, 5, 12).is_err());
        let l = Layout::new(0, 47, 0, 0, 16).unwrap();
        assert_eq!(l.max_worker(), 0);
        assert_eq!(l.compose(5, 0, 0, 0).unwrap().get(), 5 << 16);
        assert_eq!(l.decode(SnowflakeId::MAX).timestamp_ms, (1 << 47) - 1);
        // 64 bits: the timestamp's top bit is the sign bit.
        let l = Layout::new(0, 48, 0, 0, 16).unwrap();
        assert!(!l.has_sign_bit());
        assert_eq!(l.max_timestamp_ms(), (1 << 47) - 1);
        assert!(Layout::new(0, 41, 5, 5, 14).is_err());
        assert!(Layout::TWITTER.with_unit_ms(u64::MAX).is_err());
    }

    #[test]
    fn a_layout_ends_where_dates_end() {
        // 2^47 ms from 1970 is the year 6429; 2^48 would be 10889.
        assert!(Layout::new(0, 47, 0, 0, 16).is_ok());
        let e = Layout::new(0, 49, 0, 0, 15).unwrap_err();
        assert_eq!(
            e.layout_problem(),
            Some(&LayoutProblem::PastTheEnd {
                last_ms: (1 << 48) - 1
            })
        );
        assert!(
            e.to_string().starts_with(
                "invalid layout: the time field runs past 9999-12-31T23:59:59.999Z \
                 (253402300799999), where dates end: its last millisecond would be 281474976710655;"
            ),
            "{e}"
        );
        // At the bound: 2^41 units of 115 ms end in 9999, of 116 ms after.
        let l = Layout::new(0, 41, 11, 11, 0).unwrap();
        let last = l.with_unit_ms(115).unwrap().max_timestamp_ms();
        assert_eq!(last, (1 << 41) * 115 - 1);
        assert!(last <= MAX_UNIX_MS);
        assert!(l.with_unit_ms(116).is_err());
        let e = Layout::TWITTER.with_unit_ms(1000).unwrap_err();
        assert!(e.to_string().contains("runs past 9999-12-31"), "{e}");
        // The issue's example wrapped to 1969; it is refused now.
        let e = Layout::parse("epoch=0;unit=2ms;fields=timestamp:63").unwrap_err();
        assert!(
            e.to_string()
                .contains("its last millisecond would be 18446744073709551615"),
            "{e}"
        );
    }

    #[test]
    fn fields_named_like_a_slot_fill_that_slot() {
        // The segment named datacenter holds 2 (bits 16..=12), worker 1
        // (bits 21..=17): 1 << 17 | 2 << 12 = 139264.
        let l =
            Layout::parse("epoch=0;fields=timestamp:41,worker:5,datacenter:5,sequence:12").unwrap();
        let p = l.decode(SnowflakeId::new(139264).unwrap());
        assert_eq!((p.datacenter, p.worker, p.sequence), (2, 1, 0));
        assert_eq!(
            (l.label(Field::Datacenter), l.label(Field::Worker)),
            ("datacenter", "worker")
        );
        for f in l.node_fields() {
            assert_eq!(f.slot().map(Field::name), Some(f.name()), "{f:?}");
        }
        assert_eq!(l.compose(0, 2, 1, 0).unwrap().get(), 139264);
        // Only one field by its slot's name: the others fill the free slots
        // from the bottom up (here the lowest, `node`, is the sequence).
        let l = Layout::parse("epoch=0;fields=timestamp:41,worker:10,node:12").unwrap();
        assert_eq!(
            (l.label(Field::Worker), l.label(Field::Sequence)),
            ("worker", "node")
        );
        let l = Layout::parse("epoch=0;fields=timestamp:41,sequence:12,a:5,b:5").unwrap();
        assert_eq!(
            [Field::Datacenter, Field::Worker, Field::Sequence].map(|f| l.label(f)),
            ["a", "b", "sequence"]
        );
    }

    #[test]
    fn presets_keep_their_slots() {
        let slots = |l: &Layout| {
            [Field::Datacenter, Field::Worker, Field::Sequence].map(|f| l.label(f).to_string())
        };
        assert_eq!(slots(&Layout::DISCORD), ["worker", "process", "increment"]);
        assert_eq!(
            slots(&Layout::TWITTER),
            ["datacenter", "worker", "sequence"]
        );
        // The spec of a preset is the preset, slots and all ...
        for preset in Layout::PRESETS {
            let parsed = Layout::parse(&preset.spec()).unwrap();
            assert_eq!(parsed, preset);
            assert_eq!(slots(&parsed), slots(&preset));
        }
        // ... while the same fields under another epoch follow the rule.
        let custom =
            Layout::parse("epoch=0;fields=timestamp:42,worker:5,process:5,increment:12").unwrap();
        assert_eq!(slots(&custom), ["process", "worker", "increment"]);
    }

    #[test]
    fn span_errors_name_from_and_to() {
        let l = Layout::TWITTER;
        let e = l.span(0, TWITTER_EPOCH_MS).unwrap_err();
        assert_eq!(e.field(), Field::From);
        assert!(
            e.to_string().starts_with("from must be 1288834974657..="),
            "{e}"
        );
        let e = l.span(TWITTER_EPOCH_MS, MAX_TIMESTAMP_MS + 1).unwrap_err();
        assert_eq!(e.field(), Field::To);
        assert!(
            e.to_string()
                .ends_with("past the last millisecond the timestamp bits can hold"),
            "{e}"
        );
        let e = l.parse_span("yesterday", None, 0).unwrap_err();
        assert_eq!(e.field(), Field::From);
        assert!(
            e.to_string()
                .starts_with("from must be Unix milliseconds or an ISO-8601 time in "),
            "{e}"
        );
        let e = l
            .parse_span("2024-01-02T00:00:00Z", Some("2024-01-01T00:00:00Z"), 0)
            .unwrap_err();
        assert_eq!(e.field(), Field::To);
        // The message names both times, so a user sees which is which.
        assert!(
            e.to_string().contains("2024-01-02T00:00:00.000Z")
                && e.to_string().contains("2024-01-01T00:00:00.000Z"),
            "{e}"
        );
    }
}
