//! The schemas of the API's answers, as the handlers' annotations name
//! them (the answers themselves are built as JSON values).

use utoipa::ToSchema;

/// One segment of the 64 bits (documentation of the core's `Segment`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct SegmentDoc {
    /// `sign`, `unused` (bits above a layout narrower than 63 bits), or the field's own name in the layout: `timestamp`, then Twitter's `datacenter`, `worker`, `sequence`, Discord's `worker`, `process`, `increment`, ...
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
    /// sign, timestamp, datacenter, worker, sequence, most significant first; in other layouts their own fields by their own names, in their order (without `sign` where the widths add up to 64: Discord, Instagram, Mastodon).
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

/// One field in the layout lab.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct FieldDoc {
    /// The field's name.
    #[schema(example = "datacenter")]
    name: String,
    /// Its width in bits.
    #[schema(example = 5)]
    bits: u32,
    /// Where its lowest bit sits.
    #[schema(example = 17)]
    shift: u32,
    /// The largest value an ID can hold in it.
    #[schema(example = 31)]
    max: u64,
}

/// `GET /api/v1/layout` answers (documentation of the core's `LayoutReport`).
#[derive(ToSchema)]
#[schema(as = LayoutLab)]
#[allow(dead_code)]
pub(crate) struct LayoutDoc {
    /// The preset's name, or `custom`.
    #[schema(example = "twitter")]
    layout: String,
    /// The layout as a spec, which any `layout` parameter takes back.
    #[schema(
        example = "epoch=1288834974657;fields=timestamp:41,datacenter:5,worker:5,sequence:12"
    )]
    spec: String,
    /// The epoch, Unix ms.
    #[schema(example = 1288834974657u64)]
    epoch_ms: u64,
    /// The epoch, ISO-8601 UTC.
    #[schema(example = "2010-11-04T01:42:54.657Z")]
    epoch: String,
    /// Milliseconds per step of the time field.
    #[schema(example = 1)]
    unit_ms: u64,
    /// The fields, most significant first, the time field first.
    fields: Vec<FieldDoc>,
    /// The widths added up (the bits above are 0).
    #[schema(example = 63)]
    bits_used: u32,
    /// Distinct IDs in one time unit, all nodes together.
    #[schema(example = 4194304)]
    ids_per_unit: u64,
    /// The last millisecond the time field can hold, Unix ms.
    #[schema(example = 3487858230208u64)]
    end_ms: u64,
    /// The same, ISO-8601 UTC.
    #[schema(example = "2080-07-10T17:30:30.208Z")]
    end: String,
    /// The last millisecond at which every ID of its time unit is at most 2^53 - 1 (an exact JavaScript number), Unix ms; `null` if none is.
    #[schema(required = true, example = 1290982458304u64)]
    js_safe_until_ms: Option<u64>,
    /// The same, ISO-8601 UTC.
    #[schema(required = true, example = "2010-11-28T22:14:18.304Z")]
    js_safe_until: Option<String>,
    /// How long after the epoch IDs stayed exact JavaScript numbers, ms.
    #[schema(required = true, example = 2147483647u64)]
    js_safe_for_ms: Option<u64>,
    /// The server's time the answer was computed at, Unix ms.
    now_ms: u64,
    /// Milliseconds from `now_ms` until `end_ms`; negative once the time field has run out.
    end_in_ms: i64,
}

/// One candidate layout of `GET /api/v1/detect`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct CandidateDoc {
    /// The layout as the `layout` parameter takes it: a preset's name or a spec.
    #[schema(example = "discord")]
    layout: String,
    /// 0 (cannot be) to 1 (fits as well as IDs can).
    #[schema(example = 0.7)]
    score: f64,
    /// The earliest time the IDs decode to in this layout, ISO-8601 UTC; `null` if none fits it.
    #[schema(required = true, example = "2016-04-30T11:18:25.796Z")]
    from: Option<String>,
    /// The latest.
    #[schema(required = true, example = "2016-04-30T11:18:25.796Z")]
    to: Option<String>,
    /// Why it ranks where it does.
    #[schema(
        example = "all times between the epoch and now; increment small for its 12 bits (at most 7)"
    )]
    why: String,
}

/// `GET /api/v1/detect` answers (documentation of the core's `Detection`).
#[derive(ToSchema)]
#[schema(as = Detection)]
#[allow(dead_code)]
pub(crate) struct DetectDoc {
    /// How many IDs were looked at.
    #[schema(example = 1)]
    ids: usize,
    /// Whether the best candidates are too close to call (always so for one ID that fits several layouts; an ID given twice counts once).
    ambiguous: bool,
    /// For an ambiguous answer, which layouts tie.
    #[schema(required = true)]
    note: Option<String>,
    /// Every candidate, best first.
    candidates: Vec<CandidateDoc>,
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
    /// Where a database coordinator keeps the identities (only with
    /// `--postgres` or `--mysql`): `table`, the schema-qualified table its
    /// name resolved to, and `epoch`, the server's history (it changes on a
    /// failover or a restore).
    #[schema(value_type = Option<Object>, example = json!({"table": "public.snowmint_identities", "epoch": "7642011472967116994/00000001"}))]
    coordinator: Option<serde_json::Value>,
}
