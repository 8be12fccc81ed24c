//! English.

use snowmint::Field;

use super::{Lang, Text};

fn n(v: u64) -> String {
    Lang::En.number(v)
}

pub(super) static TEXT: Text = Text {
    title: "snowmint: Snowflake ID explorer",
    description: "Build a Twitter-layout Snowflake ID from its timestamp, datacenter, worker and sequence, see its 64 bits, decode an existing ID, and learn how the format works.",
    tagline: "Build a Twitter-layout Snowflake ID from its four values and see how they fill the 64 bits, or take an existing ID apart.",
    switch: "Norsk (bokmål)",
    skip: "Skip to the result",
    compose_heading: "Compose an ID",
    timestamp_label: "Timestamp (Unix milliseconds)",
    timestamp_hint: |f| {
        format!(
            "Blank means now. ISO-8601 works too, e.g. {}.",
            f.example().time()
        )
    },
    now_button: "Now",
    picker_label: "Or pick a date and time (UTC)",
    datacenter_label: "Datacenter ID",
    worker_label: "Worker ID",
    sequence_label: "Sequence",
    compose_submit: "Show the ID",
    decode_heading: "Decode an ID",
    id_label: "ID",
    id_hint: |f| {
        let (min, max) = f.range(Field::Id);
        format!("An integer {min}–{max}.")
    },
    from_label: "Written in",
    decimal: "decimal",
    hex: "hexadecimal",
    base32: "Crockford base32",
    decode_submit: "Decode",
    result_heading: "Result",
    result_id: "Snowflake ID",
    copy: "Copy",
    copied: "Copied",
    time_utc: "Time (UTC)",
    unix_ms: "Unix ms",
    language: "Language",
    share: "Share",
    share_link: "link to this result",
    no_result: "Fix the marked field to see the ID.",
    bits_heading: "The 64 bits",
    bits_intro: "Most significant bit first. Each segment shows its name, bit range and value.",
    seg_sign: "Sign",
    seg_timestamp: "Timestamp",
    seg_datacenter: "Datacenter",
    seg_worker: "Worker",
    seg_sequence: "Sequence",
    bit: "bit",
    bits: "bits",
    value: "value",
    formula_heading: "The formula",
    formula_legend: "t = timestamp (Unix ms), c = datacenter, m = worker (machine), s = sequence.",
    limits_heading: "Limits of the format",
    limits: |f| {
        let l = f.layout;
        vec![
            format!(
                "At most {} IDs per worker per millisecond: {} a second.",
                f.per_ms(),
                n(f.per_second())
            ),
            format!(
                "{} identities: {} datacenters × {} workers.",
                f.identities(),
                f.datacenters(),
                f.workers()
            ),
            format!(
                "Timestamps run out on {}, 2^{} − 1 ms ({} years) after the epoch {}.",
                f.end(),
                l.timestamp_bits(),
                f.years(),
                f.epoch()
            ),
            "IDs from different machines are ordered only as well as their clocks agree.".to_owned(),
            "The sign bit is always 0, so every ID is a positive signed 64-bit integer. JavaScript numbers lose precision above 2^53, so the API sends IDs as strings.".to_owned(),
        ]
    },
    live_heading: "Live IDs from this server",
    live_intro: "Mint fresh IDs from this server's generator. They are unique and strictly increasing.",
    live_identity: "This server issues as",
    live_not_ready: "This server holds no worker identity right now, so it cannot mint.",
    live_count: "How many",
    live_submit: "Mint",
    live_auto: "Mint one every second",
    live_noscript: "Without JavaScript the button shows the API's JSON answer.",
    live_failed: "Minting failed",
    live_empty: "No IDs minted yet.",
    live_seq: "sequence",
    live_count_error: |f| {
        let (min, max) = f.range(Field::Count);
        format!("count must be {min}..={max}, got")
    },
    api_heading: "API",
    api_text: "The same answers as JSON:",
};
