//! [`IdRange`]: the consecutive IDs one batch claim hands out, and their
//! iterator.

use crate::id::SnowflakeId;
use crate::layout::MAX_BATCH;

/// Consecutive IDs of one millisecond, from
/// [`Generator::next_ids`](crate::Generator::next_ids): a first ID and a
/// length (1..=4096), iterated in increasing order.
///
/// ```
/// let range = snowmint::Generator::new(0, 0)?.next_ids(3)?;
/// let ids: Vec<_> = range.into_iter().collect();
/// assert_eq!(ids.len(), range.len());
/// assert_eq!(ids[0], range.first());
/// assert_eq!(*ids.last().unwrap(), range.last());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdRange {
    first: SnowflakeId,
    len: u16,
}

impl IdRange {
    /// `len` (1..=4096) IDs from `first` on, all of one millisecond.
    #[inline]
    pub(crate) fn new(first: SnowflakeId, len: u16) -> IdRange {
        debug_assert!(len >= 1 && usize::from(len) <= MAX_BATCH);
        IdRange { first, len }
    }

    /// The first (smallest) ID.
    pub fn first(&self) -> SnowflakeId {
        self.first
    }

    /// The last (largest) ID.
    pub fn last(&self) -> SnowflakeId {
        SnowflakeId::from_raw(self.first.get() + u64::from(self.len) - 1)
    }

    /// How many IDs: 1..=4096.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether `id` is in the range.
    pub fn contains(&self, id: SnowflakeId) -> bool {
        self.first <= id && id <= self.last()
    }

    /// The IDs, in increasing order.
    pub fn iter(&self) -> IdRangeIter {
        IdRangeIter {
            next: self.first.get(),
            end: self.first.get() + u64::from(self.len),
        }
    }
}

impl IntoIterator for IdRange {
    type Item = SnowflakeId;
    type IntoIter = IdRangeIter;

    fn into_iter(self) -> IdRangeIter {
        self.iter()
    }
}

impl IntoIterator for &IdRange {
    type Item = SnowflakeId;
    type IntoIter = IdRangeIter;

    fn into_iter(self) -> IdRangeIter {
        self.iter()
    }
}

/// Iterator over an [`IdRange`].
#[derive(Debug, Clone)]
pub struct IdRangeIter {
    next: u64,
    end: u64,
}

impl Iterator for IdRangeIter {
    type Item = SnowflakeId;

    #[inline]
    fn next(&mut self) -> Option<SnowflakeId> {
        (self.next < self.end).then(|| {
            self.next += 1;
            SnowflakeId::from_raw(self.next - 1)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.end - self.next) as usize;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for IdRangeIter {
    fn next_back(&mut self) -> Option<SnowflakeId> {
        (self.next < self.end).then(|| {
            self.end -= 1;
            SnowflakeId::from_raw(self.end)
        })
    }
}

impl ExactSizeIterator for IdRangeIter {}
impl core::iter::FusedIterator for IdRangeIter {}
