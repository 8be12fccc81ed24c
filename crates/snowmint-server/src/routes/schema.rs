//! The schemas of the API's answers, as the handlers' annotations name
//! them (the answers themselves are built as JSON values).

use utoipa::ToSchema;

/// One segment of the 64 bits (documentation of the core's `Segment`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct SegmentDoc {
    /// `sign`, `timestamp`, `datacenter`, `worker` or `sequence` (the slot, in every layout).
    #[schema(example = "timestamp")]
    name: String,
    /// Width in bits.
    #[schema(example = 41)]
    bits: u32,
    /// The segment's value (the timestamp in the layout's units since its epoch: ms, or 10 ms for Sonyflake).
    #[schema(example = 1000)]
    value: u64,
    /// The segment's bits.
    #[schema(example = "00000000000000000000000000000001111101000")]
    binary: String,
}

/// The JSON object for one ID (documentation of the core's `Breakdown`).
#[derive(ToSchema)]
#[schema(as = Breakdown)]
#[allow(dead_code)]
pub(crate) struct BreakdownDoc {
    /// The ID as a decimal string (JavaScript numbers lose precision above 2^53).
    #[schema(example = "4194439168")]
    id: String,
    /// Unix milliseconds.
    #[schema(example = 1288834975657u64)]
    timestamp_ms: u64,
    /// Milliseconds since the layout's epoch (Twitter's: 1288834974657).
    #[schema(example = 1000)]
    delta_ms: u64,
    /// ISO-8601 UTC.
    #[schema(example = "2010-11-04T01:42:55.657Z")]
    time: String,
    /// Datacenter ID, 0..=31.
    #[schema(example = 1)]
    datacenter: u8,
    /// Worker ID, 0..=31.
    #[schema(example = 1)]
    worker: u8,
    /// Sequence, 0..=4095.
    #[schema(example = 0)]
    sequence: u16,
    /// All 64 bits, most significant first.
    #[schema(example = "0000000000000000000000000000000011111010000000100001000000000000")]
    binary: String,
    /// sign, timestamp, datacenter, worker, sequence, most significant first; in other layouts their order, without zero-width fields (and without `sign` for Instagram and Mastodon).
    segments: Vec<SegmentDoc>,
}

/// `GET /api/v1/range` answers (documentation of the core's `IdSpan`).
#[derive(ToSchema)]
#[schema(as = Range)]
#[allow(dead_code)]
pub(crate) struct RangeDoc {
    /// The first millisecond, Unix ms.
    #[schema(example = 1704067200000u64)]
    from_ms: u64,
    /// The last millisecond, Unix ms (inclusive).
    #[schema(example = 1706745600000u64)]
    to_ms: u64,
    /// The smallest ID of `from_ms`, a decimal string.
    #[schema(example = "1741610183685046272")]
    min: String,
    /// The largest ID of `to_ms`, a decimal string.
    #[schema(example = "1752844207522840575")]
    max: String,
}

/// `POST /api/v1/ids` answers.
#[derive(ToSchema)]
#[schema(as = Ids)]
#[allow(dead_code)]
pub(crate) struct IdsDoc {
    /// Fresh IDs as decimal strings, strictly increasing.
    #[schema(example = json!(["7003029213290274816", "7003029213290274817"]))]
    ids: Vec<String>,
}

/// `/healthz` answers.
#[derive(ToSchema)]
#[schema(as = Status)]
#[allow(dead_code)]
pub(crate) struct StatusDoc {
    /// Always `ok`.
    #[schema(example = "ok")]
    status: String,
}

/// `/readyz` answers while ready.
#[derive(ToSchema)]
#[schema(as = Ready)]
#[allow(dead_code)]
pub(crate) struct ReadyDoc {
    /// Always `ready`.
    #[schema(example = "ready")]
    status: String,
    /// The identity's datacenter ID.
    datacenter: u8,
    /// The identity's worker ID.
    worker: u8,
}
