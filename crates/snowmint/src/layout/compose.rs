//! The three slots' values: [`Parts`], composing and decoding by slot, and
//! the first and last IDs of a time.

use super::{Layout, mask};
use crate::error::{Error, Field};
use crate::format::MAX_ID;
use crate::id::SnowflakeId;

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

impl Layout {
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

/// The Twitter layout's shortcuts on the ID type.
impl SnowflakeId {
    /// Builds an ID from its four values; see [`compose`](crate::compose).
    #[inline]
    pub const fn from_parts(
        timestamp_ms: u64,
        datacenter: u64,
        worker: u64,
        sequence: u64,
    ) -> Result<SnowflakeId, Error> {
        Layout::TWITTER.compose(timestamp_ms, datacenter, worker, sequence)
    }

    /// All four values at once.
    #[inline]
    pub const fn parts(self) -> Parts {
        Layout::TWITTER.decode(self)
    }

    /// The smallest ID of a millisecond; see [`Layout::min_id_at`].
    pub const fn min_at(timestamp_ms: u64) -> Result<SnowflakeId, Error> {
        Layout::TWITTER.min_id_at(timestamp_ms)
    }

    /// The largest ID of a millisecond; see [`Layout::max_id_at`].
    pub const fn max_at(timestamp_ms: u64) -> Result<SnowflakeId, Error> {
        Layout::TWITTER.max_id_at(timestamp_ms)
    }
}
