//! [`SnowflakeId`], the 63-bit ID type.

use core::fmt;

use crate::error::{Error, Field};
use crate::format::{
    DATACENTER_SHIFT, MAX_DATACENTER, MAX_ID, MAX_SEQUENCE, MAX_WORKER, TIMESTAMP_SHIFT,
    TWITTER_EPOCH_MS, WORKER_SHIFT,
};
use crate::time::Iso8601;

/// A Twitter-layout Snowflake ID: a `u64` whose sign bit is 0.
///
/// Every value from 0 to 2^63 - 1 is a valid ID; the constructors refuse the
/// rest. It orders like the number, which is time order across workers (as
/// far as their clocks agree). `Display` and `FromStr` are decimal; see
/// [`hex`](SnowflakeId::hex) and [`base32`](SnowflakeId::base32) for the
/// other textual forms.
///
/// ```
/// use snowmint::SnowflakeId;
///
/// let id: SnowflakeId = "4194439168".parse()?;
/// assert_eq!(id.timestamp_ms(), 1288834975657);
/// assert_eq!((id.datacenter(), id.worker(), id.sequence()), (1, 1, 0));
/// assert_eq!(id.time().to_string(), "2010-11-04T01:42:55.657Z");
/// assert_eq!(u64::from(id), 4194439168);
/// assert_eq!(id.to_string(), "4194439168");
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct SnowflakeId(u64);

impl SnowflakeId {
    /// The smallest ID, 0.
    pub const MIN: SnowflakeId = SnowflakeId(0);
    /// The largest ID, 2^63 - 1.
    pub const MAX: SnowflakeId = SnowflakeId(MAX_ID);

    /// Wraps an integer, refusing one with the sign bit set.
    pub const fn new(value: u64) -> Result<SnowflakeId, Error> {
        if value > MAX_ID {
            Err(Error::out_of_range(Field::Id, value as i128, 0, MAX_ID))
        } else {
            Ok(SnowflakeId(value))
        }
    }

    /// Wraps an integer known to be at most [`MAX_ID`](crate::MAX_ID); the
    /// sign bit is cleared if it is not.
    pub(crate) const fn from_raw(value: u64) -> SnowflakeId {
        SnowflakeId(value & MAX_ID)
    }

    /// The ID as an integer.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Unix milliseconds when the ID was minted.
    pub const fn timestamp_ms(self) -> u64 {
        TWITTER_EPOCH_MS + self.delta_ms()
    }

    /// Milliseconds since the Twitter epoch: the raw 41-bit timestamp field.
    pub const fn delta_ms(self) -> u64 {
        self.0 >> TIMESTAMP_SHIFT
    }

    /// The mint time: Unix milliseconds (`.0`) that display as ISO-8601 UTC.
    pub const fn time(self) -> Iso8601 {
        Iso8601(self.timestamp_ms() as i64)
    }

    /// The datacenter ID, 0..=31.
    pub const fn datacenter(self) -> u8 {
        ((self.0 >> DATACENTER_SHIFT) & MAX_DATACENTER) as u8
    }

    /// The worker ("machine") ID, 0..=31.
    pub const fn worker(self) -> u8 {
        ((self.0 >> WORKER_SHIFT) & MAX_WORKER) as u8
    }

    /// The sequence within the millisecond, 0..=4095.
    pub const fn sequence(self) -> u16 {
        (self.0 & MAX_SEQUENCE) as u16
    }
}

impl fmt::Display for SnowflakeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for SnowflakeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SnowflakeId({})", self.0)
    }
}

impl fmt::LowerHex for SnowflakeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

impl fmt::UpperHex for SnowflakeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::UpperHex::fmt(&self.0, f)
    }
}

impl fmt::Binary for SnowflakeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Binary::fmt(&self.0, f)
    }
}

impl TryFrom<u64> for SnowflakeId {
    type Error = Error;

    fn try_from(v: u64) -> Result<Self, Self::Error> {
        SnowflakeId::new(v)
    }
}

impl TryFrom<i64> for SnowflakeId {
    type Error = Error;

    fn try_from(v: i64) -> Result<Self, Self::Error> {
        u64::try_from(v)
            .map(SnowflakeId)
            .map_err(|_| Error::out_of_range(Field::Id, i128::from(v), 0, MAX_ID))
    }
}

impl From<SnowflakeId> for u64 {
    fn from(id: SnowflakeId) -> u64 {
        id.0
    }
}

impl From<SnowflakeId> for i64 {
    fn from(id: SnowflakeId) -> i64 {
        // The sign bit is always 0, so this is lossless.
        id.0 as i64
    }
}

impl From<SnowflakeId> for u128 {
    fn from(id: SnowflakeId) -> u128 {
        u128::from(id.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn conversions_refuse_the_sign_bit() {
        assert!(SnowflakeId::try_from(-1i64).is_err());
        assert!(SnowflakeId::try_from(1u64 << 63).is_err());
        assert_eq!(i64::from(SnowflakeId::MAX), i64::MAX);
        assert_eq!(
            SnowflakeId::try_from(u64::MAX).unwrap_err().to_string(),
            "id must be 0..=9223372036854775807, got 18446744073709551615: the sign bit is set"
        );
    }
}
