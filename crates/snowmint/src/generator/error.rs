//! Why a [`Generator`] cannot be built ([`BuildError`]) or did not return an
//! ID ([`GenerateError`]).

use std::fmt;

#[cfg(doc)]
use super::Generator;
use crate::error::Error;
use crate::layout::{MAX_BATCH, MAX_TIMESTAMP_MS, TWITTER_EPOCH_MS};
use crate::reservation::StoreError;

/// Why a [`Generator`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The datacenter or worker ID is out of range.
    Identity(Error),
    /// The reservation store cannot be read or holds a damaged mark.
    Store(StoreError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Identity(e) => e.fmt(f),
            BuildError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Identity(e) => Some(e),
            BuildError::Store(e) => Some(e),
        }
    }
}

/// Why a [`Generator`] did not return an ID. No ID was lost to another
/// caller: the call can be retried.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GenerateError {
    /// The clock is so far behind the IDs already issued that issuing more
    /// would run further ahead of it than allowed, and it did not catch up
    /// within the wait budget.
    ClockBehind {
        /// How far the clock is behind the last issued ID's millisecond.
        behind_ms: u64,
        /// How long this call waited before giving up.
        waited_ms: u64,
    },
    /// The 4096 IDs of the current millisecond are used up and the clock did
    /// not reach the next millisecond within the wait budget.
    ClockStalled {
        /// How long this call waited before giving up.
        waited_ms: u64,
    },
    /// The millisecond to issue in cannot be encoded: past
    /// 2080-07-10T17:30:30.208Z, or a clock before the epoch.
    Timestamp(Error),
    /// A new "reserved until" mark could not be stored.
    Reservation(StoreError),
    /// A batch of `requested` IDs was asked for; it must be 1..=4096.
    Count {
        /// The count asked for.
        requested: usize,
    },
    /// From [`Generator::try_next_ids`] only: issuing would have to wait
    /// (the millisecond's 4096 IDs are used up, the clock is behind within
    /// the wait bound, or a mark must be written first). Nothing was issued;
    /// [`Generator::next_ids`] would wait.
    WouldBlock,
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenerateError::ClockBehind {
                behind_ms,
                waited_ms,
            } => write!(
                f,
                "the clock is {behind_ms} ms behind the IDs already issued; \
                 waited {waited_ms} ms for it to catch up (issuing now could repeat an ID)"
            ),
            GenerateError::ClockStalled { waited_ms } => write!(
                f,
                "the 4096 IDs of this millisecond are used up and the clock did not \
                 advance within {waited_ms} ms"
            ),
            GenerateError::Timestamp(e) => write!(f, "cannot issue an ID: {e}"),
            GenerateError::Reservation(e) => {
                write!(f, "cannot reserve IDs ahead (no ID was issued): {e}")
            }
            GenerateError::Count { requested } => {
                write!(f, "count must be 1..={MAX_BATCH}, got {requested}")
            }
            GenerateError::WouldBlock => f.write_str(
                "issuing now would have to wait (for the clock or for a reservation write); \
                 no ID was issued",
            ),
        }
    }
}

impl std::error::Error for GenerateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GenerateError::Timestamp(e) => Some(e),
            GenerateError::Reservation(e) => Some(e),
            _ => None,
        }
    }
}

/// For a clock reading (or a borrowed millisecond) outside the format.
pub(super) fn timestamp_error(ms: u64) -> GenerateError {
    GenerateError::Timestamp(Error::timestamp(
        i128::from(ms),
        TWITTER_EPOCH_MS,
        MAX_TIMESTAMP_MS,
    ))
}
