//! The range of every field, and checks against it.

use super::Layout;
use crate::error::{Error, Field};
use crate::format::MAX_ID;
use crate::id::SnowflakeId;
use crate::parse::parse_in_range;

impl Layout {
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
    pub(super) const fn range_error(&self, field: Field, value: u64) -> Error {
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
}
