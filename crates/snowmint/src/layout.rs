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

/// A Snowflake bit layout: an epoch and the widths of the four fields.
///
/// The widths add up to 63, below a sign bit that is always 0. The fields sit,
/// from the most significant end, in the order timestamp, datacenter, worker,
/// sequence. [`Layout::TWITTER`] is the default everywhere; [`Layout::DISCORD`]
/// and [`Layout::new`] are for decoding IDs from other systems.
///
/// ```
/// use snowmint::Layout;
///
/// // Discord's epoch is 2015-01-01; its "worker" and "process" IDs sit
/// // where Twitter keeps datacenter and worker.
/// let id = Layout::DISCORD.compose(1420070400000 + 1000, 1, 1, 0)?;
/// assert_eq!(id.get(), 4194439168);
/// assert_eq!(Layout::DISCORD.decode(id).timestamp_ms, 1420070401000);
///
/// // A custom layout: 2020 epoch, 10 bits of machine, 12 of sequence.
/// let mine = Layout::new(1577836800000, 41, 0, 10, 12)?;
/// assert_eq!(mine.max_worker(), 1023);
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    epoch_ms: u64,
    timestamp_bits: u8,
    datacenter_bits: u8,
    worker_bits: u8,
    sequence_bits: u8,
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
        timestamp_bits: TIMESTAMP_BITS as u8,
        datacenter_bits: DATACENTER_BITS as u8,
        worker_bits: WORKER_BITS as u8,
        sequence_bits: SEQUENCE_BITS as u8,
    };

    /// Discord's layout: epoch 1420070400000 (2015-01-01T00:00:00Z), the
    /// same widths as Twitter's (Discord calls the middle fields internal
    /// worker ID and internal process ID).
    pub const DISCORD: Layout = Layout {
        epoch_ms: 1_420_070_400_000,
        ..Layout::TWITTER
    };

    /// A layout of the given epoch (Unix ms) and widths.
    ///
    /// The widths must add up to 63, the timestamp must have 1 to 63 bits,
    /// and the last timestamp must fit in a `u64` of Unix milliseconds.
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
        if sum != 63 {
            return Err(Error::layout("the four widths must add up to 63 bits"));
        }
        if timestamp_bits == 0 {
            return Err(Error::layout("the timestamp needs at least 1 bit"));
        }
        if epoch_ms.checked_add(mask(timestamp_bits as u32)).is_none() {
            return Err(Error::layout(
                "the epoch is so late that the last timestamp overflows 64 bits",
            ));
        }
        Ok(Layout {
            epoch_ms,
            timestamp_bits,
            datacenter_bits,
            worker_bits,
            sequence_bits,
        })
    }

    /// A preset by name: `twitter` or `discord` (ASCII case-insensitive).
    pub fn by_name(name: &str) -> Option<Layout> {
        if name.eq_ignore_ascii_case("twitter") {
            Some(Layout::TWITTER)
        } else if name.eq_ignore_ascii_case("discord") {
            Some(Layout::DISCORD)
        } else {
            None
        }
    }

    /// The epoch in Unix milliseconds.
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Width of the timestamp field.
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
        self.sequence_bits as u32
    }

    /// Where the datacenter field starts.
    pub const fn datacenter_shift(&self) -> u32 {
        self.worker_shift() + self.worker_bits as u32
    }

    /// Where the timestamp field starts.
    pub const fn timestamp_shift(&self) -> u32 {
        self.datacenter_shift() + self.datacenter_bits as u32
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

    /// Largest number of milliseconds since the epoch.
    pub const fn max_delta_ms(&self) -> u64 {
        mask(self.timestamp_bits as u32)
    }

    /// First encodable Unix-ms timestamp (the epoch).
    pub const fn min_timestamp_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Last encodable Unix-ms timestamp.
    pub const fn max_timestamp_ms(&self) -> u64 {
        self.epoch_ms + self.max_delta_ms()
    }

    /// The allowed range of a field, inclusive.
    #[inline]
    pub const fn range(&self, field: Field) -> (u64, u64) {
        match field {
            Field::Timestamp => (self.min_timestamp_ms(), self.max_timestamp_ms()),
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
        if let Field::Timestamp = field {
            Error::timestamp(value as i128, min, max)
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
    /// `timestamp_ms` is Unix milliseconds; the epoch is subtracted here.
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
            ((timestamp_ms - self.epoch_ms) << self.timestamp_shift())
                | (datacenter << self.datacenter_shift())
                | (worker << self.worker_shift())
                | sequence,
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
            timestamp_ms: self.epoch_ms + (v >> self.timestamp_shift()),
            datacenter: (v >> self.datacenter_shift()) & self.max_datacenter(),
            worker: (v >> self.worker_shift()) & self.max_worker(),
            sequence: v & self.max_sequence(),
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
        ParsedInt::Int(v) if field == Field::Timestamp => Err(Error::timestamp(v, min, max)),
        ParsedInt::Int(v) => Err(Error::out_of_range(field, v, min, max)),
        ParsedInt::TooWide => Err(Error::too_wide(field, input.trim(), min, max)),
        ParsedInt::NotANumber => Err(Error::syntax(
            field,
            input,
            if field == Field::Timestamp {
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
    }
}
