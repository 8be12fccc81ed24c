//! The format (fixed): Twitter's layout as constants, the contract's
//! numbers that every other part of the crate builds on.

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
