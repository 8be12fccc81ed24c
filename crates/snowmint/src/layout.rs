//! The bit layout: the Twitter constants, and [`Layout`] for other systems.

use crate::error::{Error, Field};
use crate::id::SnowflakeId;
use crate::parse::{ParsedInt, parse_int};

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

/// Where the three fields below the timestamp sit.
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

/// A Snowflake bit layout: an epoch, a time unit, the widths of the four
/// fields and their order, and what the layout's own documentation calls
/// each field.
///
/// The widths add up to 63, below a sign bit that is always 0, or to 64:
/// then the timestamp's top bit *is* the sign bit of a signed 64-bit
/// integer (Instagram's 41 and Mastodon's 48 bits). Every ID is at most
/// 2^63 - 1, so in such a layout that bit is always 0 and only half the
/// field's range is usable: [`max_delta_ms`](Layout::max_delta_ms) and
/// [`max_timestamp_ms`](Layout::max_timestamp_ms) say what actually fits.
///
/// [`Layout::TWITTER`] is the default everywhere and the only layout the
/// explorer composes in; the other presets ([`Layout::PRESETS`], looked up
/// with [`Layout::by_name`]) and [`Layout::new`] are for decoding IDs from
/// other systems. Whatever a layout calls its fields, they fill the same
/// three slots: a single identity field (Instagram's shard, Sonyflake's
/// machine) is the `worker`, and [`Parts`] and the JSON object keep the
/// names `datacenter`, `worker` and `sequence`; [`label`](Layout::label)
/// gives the layout's own name for display.
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
/// let mine = Layout::new(1577836800000, 41, 0, 10, 12)?;
/// assert_eq!(mine.max_worker(), 1023);
/// assert_eq!(mine.name(), "custom");
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    epoch_ms: u64,
    /// Milliseconds per step of the timestamp field (Sonyflake: 10).
    unit_ms: u64,
    timestamp_bits: u8,
    datacenter_bits: u8,
    worker_bits: u8,
    sequence_bits: u8,
    order: FieldOrder,
    name: &'static str,
    /// What the layout calls its datacenter, worker and sequence fields.
    labels: [&'static str; 3],
}

impl Default for Layout {
    fn default() -> Self {
        Layout::TWITTER
    }
}

impl Layout {
    /// Twitter's layout: epoch 1288834974657, widths 41 / 5 / 5 / 12.
    pub const TWITTER: Layout = Layout {
        epoch_ms: TWITTER_EPOCH_MS,
        unit_ms: 1,
        timestamp_bits: TIMESTAMP_BITS as u8,
        datacenter_bits: DATACENTER_BITS as u8,
        worker_bits: WORKER_BITS as u8,
        sequence_bits: SEQUENCE_BITS as u8,
        order: FieldOrder::IdentityThenSequence,
        name: "twitter",
        labels: ["datacenter", "worker", "sequence"],
    };

    /// Discord's layout: epoch 1420070400000 (2015-01-01T00:00:00Z), the
    /// same widths as Twitter's. Discord calls the fields internal worker
    /// ID, internal process ID and increment.
    pub const DISCORD: Layout = Layout {
        epoch_ms: 1_420_070_400_000,
        name: "discord",
        labels: ["worker", "process", "increment"],
        ..Layout::TWITTER
    };

    /// Instagram's layout ("Sharding & IDs at Instagram", 2012): 41 bits
    /// of milliseconds since 1314220021721 (2011-08-24T21:07:01.721Z), a
    /// 13-bit logical shard ID (the `worker` slot) and a 10-bit sequence.
    ///
    /// 41 + 13 + 10 = 64: the time field's top bit is the sign bit of
    /// Postgres' `bigint`, so IDs (never negative) can hold 2^40 - 1 ms,
    /// until 2046-06-27T17:00:49.496Z.
    pub const INSTAGRAM: Layout = Layout {
        epoch_ms: 1_314_220_021_721,
        unit_ms: 1,
        timestamp_bits: 41,
        datacenter_bits: 0,
        worker_bits: 13,
        sequence_bits: 10,
        order: FieldOrder::IdentityThenSequence,
        name: "instagram",
        labels: ["datacenter", "shard", "sequence"],
    };

    /// Sonyflake's layout (sony/sonyflake v1): 39 bits of 10 ms units since
    /// 1409529600000 (2014-09-01T00:00:00Z), then an 8-bit sequence, then a
    /// 16-bit machine ID (the `worker` slot) as the lowest field.
    pub const SONYFLAKE: Layout = Layout {
        epoch_ms: 1_409_529_600_000,
        unit_ms: 10,
        timestamp_bits: 39,
        datacenter_bits: 0,
        worker_bits: 16,
        sequence_bits: 8,
        order: FieldOrder::SequenceThenIdentity,
        name: "sonyflake",
        labels: ["datacenter", "machine", "sequence"],
    };

    /// Mastodon's layout (lib/mastodon/snowflake.rb): 48 bits of Unix
    /// milliseconds (epoch 0), then 16 bits of "sequence data" (a salted
    /// hash plus a counter, in the `sequence` slot).
    ///
    /// 48 + 16 = 64: the time field's top bit is the sign bit of the
    /// `bigint`, so IDs hold 2^47 - 1 ms, until the year 6429.
    pub const MASTODON: Layout = Layout {
        epoch_ms: 0,
        unit_ms: 1,
        timestamp_bits: 48,
        datacenter_bits: 0,
        worker_bits: 0,
        sequence_bits: 16,
        order: FieldOrder::IdentityThenSequence,
        name: "mastodon",
        labels: ["datacenter", "worker", "sequence data"],
    };

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
    /// and Twitter's field order; see [`with_unit_ms`](Layout::with_unit_ms),
    /// [`with_order`](Layout::with_order) and
    /// [`with_names`](Layout::with_names) for the rest.
    ///
    /// The widths must add up to 63 (below a sign bit) or 64 (the
    /// timestamp's top bit is the sign bit, see [`Layout`]), the timestamp
    /// must have 1 to 63 bits, and the last timestamp must fit in a `u64`
    /// of Unix milliseconds.
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
            return Err(Error::layout(
                "the four widths must add up to 63 or 64 bits",
            ));
        }
        if timestamp_bits == 0 {
            return Err(Error::layout("the timestamp needs at least 1 bit"));
        }
        Layout {
            epoch_ms,
            unit_ms: 1,
            timestamp_bits,
            datacenter_bits,
            worker_bits,
            sequence_bits,
            order: FieldOrder::IdentityThenSequence,
            name: "custom",
            labels: Layout::TWITTER.labels,
        }
        .validated()
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
            return Err(Error::layout("the time unit must be at least 1 ms"));
        }
        Layout { unit_ms, ..self }.validated()
    }

    /// The same layout with its fields in `order`.
    pub const fn with_order(self, order: FieldOrder) -> Layout {
        Layout { order, ..self }
    }

    /// The same layout under another name, calling its fields `datacenter`,
    /// `worker` and `sequence` (for display; [`Parts`] and the JSON keep
    /// the slot names).
    pub const fn with_names(
        self,
        name: &'static str,
        datacenter: &'static str,
        worker: &'static str,
        sequence: &'static str,
    ) -> Layout {
        Layout {
            name,
            labels: [datacenter, worker, sequence],
            ..self
        }
    }

    /// Checks that the last timestamp fits a `u64`.
    const fn validated(self) -> Result<Layout, Error> {
        let last = match self.max_delta_units().checked_mul(self.unit_ms) {
            Some(ms) => ms.checked_add(self.unit_ms - 1),
            None => None,
        };
        match last {
            Some(ms) if self.epoch_ms.checked_add(ms).is_some() => Ok(self),
            _ => Err(Error::layout(
                "the epoch is so late that the last timestamp overflows 64 bits",
            )),
        }
    }

    /// A preset by name: `twitter`, `discord`, `instagram`, `sonyflake` or
    /// `mastodon` (ASCII case-insensitive, surrounding whitespace ignored).
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

    /// The preset's name (`twitter`, ...), or `custom` for [`Layout::new`].
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// What the layout calls `field`: Instagram's `worker` is its `shard`,
    /// Sonyflake's is its `machine`, Discord's fields are `worker`,
    /// `process` and `increment`. Other fields answer their own name.
    pub const fn label(&self, field: Field) -> &'static str {
        match field {
            Field::Datacenter => self.labels[0],
            Field::Worker => self.labels[1],
            Field::Sequence => self.labels[2],
            other => other.name(),
        }
    }

    /// The epoch in Unix milliseconds.
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Milliseconds per step of the timestamp field: 1, or 10 for Sonyflake.
    pub const fn unit_ms(&self) -> u64 {
        self.unit_ms
    }

    /// The order of the fields below the timestamp.
    pub const fn order(&self) -> FieldOrder {
        self.order
    }

    /// Whether bit 63 is a sign bit of its own (widths add up to 63), rather
    /// than the timestamp's top bit (widths add up to 64).
    pub const fn has_sign_bit(&self) -> bool {
        self.timestamp_bits as u32
            + self.datacenter_bits as u32
            + self.worker_bits as u32
            + self.sequence_bits as u32
            == 63
    }

    /// Width of the timestamp field (with the sign bit, if it is the top).
    pub const fn timestamp_bits(&self) -> u32 {
        self.timestamp_bits as u32
    }

    /// Width of the datacenter field.
    pub const fn datacenter_bits(&self) -> u32 {
        self.datacenter_bits as u32
    }

    /// Width of the worker field.
    pub const fn worker_bits(&self) -> u32 {
        self.worker_bits as u32
    }

    /// Width of the sequence field.
    pub const fn sequence_bits(&self) -> u32 {
        self.sequence_bits as u32
    }

    /// Where the worker field starts.
    pub const fn worker_shift(&self) -> u32 {
        match self.order {
            FieldOrder::IdentityThenSequence => self.sequence_bits as u32,
            FieldOrder::SequenceThenIdentity => 0,
        }
    }

    /// Where the datacenter field starts.
    pub const fn datacenter_shift(&self) -> u32 {
        self.worker_shift() + self.worker_bits as u32
    }

    /// Where the sequence field starts.
    pub const fn sequence_shift(&self) -> u32 {
        match self.order {
            FieldOrder::IdentityThenSequence => 0,
            FieldOrder::SequenceThenIdentity => {
                self.datacenter_shift() + self.datacenter_bits as u32
            }
        }
    }

    /// Where the timestamp field starts.
    pub const fn timestamp_shift(&self) -> u32 {
        self.datacenter_bits as u32 + self.worker_bits as u32 + self.sequence_bits as u32
    }

    /// Largest datacenter ID.
    pub const fn max_datacenter(&self) -> u64 {
        mask(self.datacenter_bits as u32)
    }

    /// Largest worker ID.
    pub const fn max_worker(&self) -> u64 {
        mask(self.worker_bits as u32)
    }

    /// Largest sequence number.
    pub const fn max_sequence(&self) -> u64 {
        mask(self.sequence_bits as u32)
    }

    /// Largest value of the timestamp field an ID can hold: all of its bits
    /// below a separate sign bit, all but its top bit where that is the
    /// sign bit.
    pub const fn max_delta_units(&self) -> u64 {
        if self.has_sign_bit() {
            mask(self.timestamp_bits as u32)
        } else {
            mask(self.timestamp_bits as u32 - 1)
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
            Field::Id | Field::Layout => (0, MAX_ID),
            // One batch: at most one millisecond's IDs.
            Field::Count => (1, self.max_sequence() + 1),
            Field::Ordinal => (
                0,
                (1 << (self.datacenter_bits as u32 + self.worker_bits as u32)) - 1,
            ),
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

    /// Builds an ID from its four values, checking each against its range.
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

    /// Takes an ID apart. Every 63-bit value is a valid ID, so this cannot fail.
    #[inline]
    pub const fn decode(&self, id: SnowflakeId) -> Parts {
        let v = id.get();
        Parts {
            timestamp_ms: self.epoch_ms + (v >> self.timestamp_shift()) * self.unit_ms,
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
        self.compose(timestamp_ms, 0, 0, 0)
    }

    /// The largest ID of a millisecond; see [`min_id_at`](Layout::min_id_at).
    pub const fn max_id_at(&self, timestamp_ms: u64) -> Result<SnowflakeId, Error> {
        self.compose(
            timestamp_ms,
            self.max_datacenter(),
            self.max_worker(),
            self.max_sequence(),
        )
    }
}

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
        let l = Layout::new(0, 63, 0, 0, 0).unwrap();
        assert_eq!(l.max_sequence(), 0);
        assert_eq!(l.compose(5, 0, 0, 0).unwrap().get(), 5);
        assert_eq!(l.decode(SnowflakeId::MAX).timestamp_ms, MAX_ID);
        // 64 bits: the timestamp's top bit is the sign bit.
        let l = Layout::new(0, 64, 0, 0, 0).unwrap();
        assert!(!l.has_sign_bit());
        assert_eq!(l.max_timestamp_ms(), MAX_ID);
        assert!(Layout::new(0, 41, 5, 5, 14).is_err());
        assert!(Layout::TWITTER.with_unit_ms(u64::MAX).is_err());
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
