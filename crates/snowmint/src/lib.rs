//! Twitter-layout Snowflake IDs.
//!
//! A Snowflake ID is a 64-bit integer: a 0 sign bit, 41 bits of milliseconds
//! since the Twitter epoch (1288834974657, 2010-11-04T01:42:54.657Z), 5 bits
//! of datacenter ID, 5 bits of worker ID and a 12-bit sequence:
//!
//! ```text
//!  63 | 62 ............................ 22 | 21 .. 17 | 16 .. 12 | 11 ...... 0
//! sign|   timestamp: ms since the epoch    |datacenter|  worker  |  sequence
//!   1 |               41                   |    5     |    5     |    12
//! ```
//!
//! # Which part should I use?
//!
//! - To build an ID from its values or take one apart: [`compose`], [`decode`],
//!   and the accessors of [`SnowflakeId`]. Everything is `const fn` and
//!   checked: out-of-range values are an [`Error`] that names the field, the
//!   value and the allowed range.
//! - To show an ID to a person: [`SnowflakeId::breakdown`] (the JSON object of
//!   the snowmint API with the `serde` feature), [`time::Iso8601`].
//! - To read or write other textual forms: [`Encoding`] (decimal, hex,
//!   Crockford base32, all fixed-width and order-preserving except decimal).
//! - To decode and compose IDs of other systems: the presets
//!   [`Layout::PRESETS`] (Twitter, Discord, Instagram, Sonyflake, Mastodon;
//!   [`Layout::by_name`]), or any layout written as a spec
//!   (`epoch=EPOCH;unit=UNIT;fields=NAME:BITS,...`, [`Layout::parse`],
//!   [`Layout::spec`]); [`Layout::fields`] lists a layout's fields with
//!   their names, widths and shifts, for code generated from a layout.
//! - To judge a layout: [`LayoutReport`] (IDs per time unit, when the time
//!   runs out, until when IDs are exact JavaScript numbers). To guess which
//!   layout made a list of IDs: [`detect`].
//! - For time-range queries: [`Layout::span`] (the smallest and largest ID
//!   of a time span), [`Layout::min_id_at`] and [`Layout::max_id_at`].
//! - For IDs inside a database: [`sql`] (SQL functions for PostgreSQL and
//!   MySQL, expressions for SQLite, and time partitions by ID range).
//! - To mint IDs (feature `std`): [`Generator`], lock-free and shared by
//!   `&self` across threads, with a [`Clock`] ([`SystemClock`], or
//!   [`ManualClock`] in tests) and a [`ReservationStore`] ([`FileStore`]) for
//!   crash-safe restarts ([`MemoryStore`] in tests, and [`FaultyStore`] to
//!   test what a program does when its store is slow, hangs or fails).
//!
//! ```
//! use snowmint::SnowflakeId;
//!
//! let id = snowmint::compose(1288834975657, 1, 1, 0)?;
//! assert_eq!(id.get(), 4194439168);
//! assert_eq!(id.to_string().parse::<SnowflakeId>()?, id);
//! assert_eq!(
//!     snowmint::compose(1288834975657, 1, 1, 4096).unwrap_err().to_string(),
//!     "sequence must be 0..=4095, got 4096"
//! );
//! # Ok::<(), snowmint::Error>(())
//! ```
//!
//! # Limits of the format
//!
//! At most 4096 IDs per worker per millisecond (4,096,000 a second), 1024
//! datacenter x worker identities, timestamps until 2080-07-10T17:30:30.208Z,
//! and order across machines only as good as their clocks.
//!
//! # Features
//!
//! - `std` (default): implements `std::error::Error` via `core::error::Error`;
//!   the crate is `no_std` + `alloc` without it.
//! - `serde`: `SnowflakeId` as a decimal string (read from a string or a
//!   number), and `Serialize` for [`Breakdown`].
//! - `tsc` (implies `std`, adds the `quanta` dependency): `SystemClock` reads
//!   the CPU's time-stamp counter instead of `Instant`, recalibrated against
//!   `Instant` about once a second: `next_id` costs about 15 ns instead of about 34.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;

mod breakdown;
#[cfg(feature = "std")]
mod clock;
mod detect;
mod encoding;
mod error;
#[cfg(feature = "std")]
mod flight;
mod format;
#[cfg(feature = "std")]
mod generator;
mod id;
#[cfg(feature = "std")]
mod id_range;
mod identity;
mod lab;
mod layout;
mod name;
mod parse;
mod problem;
#[cfg(feature = "std")]
mod reservation;
#[cfg(feature = "serde")]
mod serde_impl;
mod spec;
pub mod sql;
pub mod time;

pub use breakdown::{Breakdown, Segment};
#[cfg(feature = "std")]
pub use clock::{Clock, ManualClock, SystemClock, unix_now_ms};
pub use detect::{Candidate, Detection, Reason, detect};
pub use encoding::{BASE32_LEN, Base32, Binary, Encoding, HEX_LEN, Hex, UnknownEncoding};
pub use error::{Error, Field};
#[cfg(feature = "std")]
pub use generator::{
    BuildError, DEFAULT_MAX_BORROW_MS, DEFAULT_MAX_WAIT, DEFAULT_RESERVE_WINDOW_MS,
    DEFAULT_STORE_TIMEOUT, GenerateError, Generator, GeneratorBuilder, GeneratorMetrics,
    PackedState,
};
pub use id::SnowflakeId;
#[cfg(feature = "std")]
pub use id_range::{IdRange, IdRangeIter};
pub use identity::Identity;
pub use lab::{FieldReport, JsSafety, LayoutReport};
pub use layout::{
    DATACENTER_BITS, DATACENTER_SHIFT, FieldName, FieldOrder, IdSpan, Layout, LayoutField,
    MAX_BATCH, MAX_DATACENTER, MAX_DELTA_MS, MAX_FIELDS, MAX_ID, MAX_NAME_LEN, MAX_SEQUENCE,
    MAX_TIMESTAMP_MS, MAX_WORKER, MIN_TIMESTAMP_MS, Parts, SEQUENCE_BITS, TIMESTAMP_BITS,
    TIMESTAMP_SHIFT, TWITTER_EPOCH_MS, WORKER_BITS, WORKER_SHIFT, compose, decode,
};
pub use parse::parse_in_range;
pub use problem::LayoutProblem;
#[cfg(feature = "std")]
pub use reservation::{
    FaultyStore, FileStore, MemoryStore, ReservationStore, StoreError, StoreErrorKind, StoreFaults,
};

/// Parses a timestamp as people type it: `now` (the given `now_ms`), Unix
/// milliseconds, or ISO-8601 / RFC 3339 text; then checks it against the
/// Twitter layout's range.
///
/// ```
/// use snowmint::parse_timestamp;
/// assert_eq!(parse_timestamp("1288834975657", 0), Ok(1288834975657));
/// assert_eq!(parse_timestamp("2010-11-04T01:42:55.657Z", 0), Ok(1288834975657));
/// assert_eq!(parse_timestamp("now", 1288834975657), Ok(1288834975657));
/// assert_eq!(
///     parse_timestamp("2080-07-10T17:30:30.209Z", 0).unwrap_err().to_string(),
///     "timestamp must be 1288834974657..=3487858230208 \
///      (2010-11-04T01:42:54.657Z ..= 2080-07-10T17:30:30.208Z), \
///      got 3487858230209: past the last millisecond the timestamp bits can hold"
/// );
/// ```
pub fn parse_timestamp(input: &str, now_ms: u64) -> Result<u64, Error> {
    Layout::TWITTER.parse_timestamp(input, now_ms)
}

/// Compiles the crate README's examples as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
