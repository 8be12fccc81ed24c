//! The presets: Twitter, Discord, Instagram, Sonyflake, Mastodon.

use alloc::string::{String, ToString};

use super::Layout;
use super::build::preset;
use crate::format::{
    DATACENTER_BITS, SEQUENCE_BITS, TIMESTAMP_BITS, TWITTER_EPOCH_MS, WORKER_BITS,
};
use crate::name::PRESET_NAMES;

impl Layout {
    /// Twitter's layout: epoch 1288834974657, a sign bit, then widths
    /// 41 / 5 / 5 / 12.
    pub const TWITTER: Layout = preset(
        PRESET_NAMES[0],
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
        PRESET_NAMES[1],
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
        PRESET_NAMES[2],
        1_314_220_021_721,
        1,
        &[("timestamp", 41), ("shard", 13), ("sequence", 10)],
    );

    /// Sonyflake's layout (sony/sonyflake v1): 39 bits of 10 ms units since
    /// 1409529600000 (2014-09-01T00:00:00Z), then an 8-bit sequence, then a
    /// 16-bit machine ID (the `worker` slot) as the lowest field.
    pub const SONYFLAKE: Layout = preset(
        PRESET_NAMES[3],
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
        PRESET_NAMES[4],
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
    pub const PRESET_NAMES: [&'static str; 5] = PRESET_NAMES;

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
}
