//! English.

use maud::html;
use snowmint::{Field, JsSafety};

use super::{Guide, Lang, Text};

fn n(v: u64) -> String {
    Lang::En.number(v)
}

pub(super) static TEXT: Text = Text {
    title: "snowmint: Snowflake ID explorer",
    description: "Build a Snowflake ID from its timestamp, datacenter, worker and sequence (or any layout's fields), see its 64 bits, decode an existing ID, find which system made a list of IDs, and learn how the format works.",
    tagline: "Build a Snowflake ID, in Twitter's layout or any other, and see how its values fill the 64 bits, or take an existing ID apart.",
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
    compose_noscript: "After choosing another layout, show the ID: the form then has that layout's fields.",
    compose_reserved: |name| {
        format!(
            "a field named {name} cannot be composed here, the page's own parameter has that name: rename the field, or use GET /api/v1/compose"
        )
    },
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
    ids_label: "Or paste several IDs, one a line",
    ids_hint: |max| {
        format!(
            "Up to {} lines, shown as a table. When this box has IDs, the ID field above is not used.",
            Lang::En.number(max as u64)
        )
    },
    ids_too_many: |max, got| {
        format!(
            "at most {} IDs at once, one a line; got {}",
            Lang::En.number(max as u64),
            Lang::En.number(got as u64)
        )
    },
    line_error: |n, e| format!("line {n}: {e}"),
    layout_label: "Layout",
    layout_default: "default",
    layout_hint: "Read or compose IDs as another system lays out their bits, or as your own (Custom…).",
    repeated: |name| format!("{name} is given more than once in the query; give it once"),
    unknown_param: |name| format!("unknown parameter {name}: no form of this page has it"),
    bad_choice: |name, choices, got| format!("{name} must be one of {choices}, got {got}"),
    range_heading: "IDs of a time span",
    range_from_label: "From",
    range_to_label: "To (inclusive)",
    range_hint: "Blank means now. Unix milliseconds or ISO-8601.",
    range_picker_label: "Or pick (UTC)",
    range_submit: "Show the ID range",
    range_min: "Smallest ID",
    range_max: "Largest ID",
    range_slots: "ID slots",
    range_slots_hint: "Every ID the span can hold: each millisecond, on every datacenter and worker, with every sequence.",
    range_sql: "SQL",
    dialect_label: "SQL dialect",
    dialect_hint: "The database the SQL functions below are for.",
    sql_functions: "SQL functions",
    sql_functions_hint: "Load this script into the database once; then time(id), the fields, min_id(ts), max_id(ts) and compose(...) run inside it. Input out of range gives NULL.",
    sql_api_link: "The same script from the API",
    range_span: "Span",
    result_heading: "Result",
    result_id: "Snowflake ID",
    copy: "Copy",
    copied: "Copied",
    time_utc: "Time (UTC)",
    unix_ms: "Unix ms",
    time_local: "Time (your time zone)",
    discord_markup: "Discord timestamp",
    discord_markup_hint: "Paste into a Discord message: <t:…:F> shows the date and time, <t:…:R> how long ago, each in the reader's own time zone.",
    copy_discord_full: "Copy the date and time markup",
    copy_discord_relative: "Copy the relative time markup",
    og_title: |id, time| format!("Snowflake ID {id}: {time}"),
    og_description: |layout| {
        format!(
            "The Snowflake ID read in the {layout} layout: its time, its 64 bits and the formula, in the snowmint explorer."
        )
    },
    language: "Language",
    share: "Share",
    share_link: "link to this result",
    no_result: "Fix the marked field to see the ID.",
    no_result_list: "Fix the marked line to see the table.",
    no_result_range: "Fix the marked field to see the ID range.",
    list_caption: |n, layout| {
        format!(
            "{} IDs, read in the {layout} layout",
            Lang::En.number(n as u64)
        )
    },
    list_line: "Line",
    list_sort_hint: "Choose a column heading to sort by it; choose it again to reverse.",
    detect_heading: "Which system made these IDs?",
    detect_intro: "Each layout, ranked by how well these IDs fit it: times between its epoch and now, node fields constant or few, sequences small for their width, IDs increasing with time.",
    detect_ambiguous: |n, names| {
        let which = if n == 1 { "this ID" } else { "these IDs" };
        format!(
            "Ambiguous: {which} could come from {names} alike; more IDs from the same system tell them apart."
        )
    },
    detect_score: "score",
    detect_none: "no ID fits this layout",
    detect_reason: |r| r.to_string(),
    layout_custom: "Custom…",
    custom_legend: "Custom layout",
    custom_hint: "Used when the layout is Custom…: its epoch, time unit and fields from the top bit down, the first named timestamp.",
    custom_epoch: "Epoch",
    custom_epoch_hint: "Unix ms or ISO-8601, e.g. 2020-01-01",
    custom_unit: "Time unit",
    custom_unit_hint: "1ms (blank), 10ms, 1s",
    custom_fields: "Fields",
    custom_fields_hint: "NAME:BITS from the top bit down, e.g. timestamp:41,machine:10,sequence:12",
    lab_heading: "The layout lab",
    lab: |r| {
        let span = |ms: u64| {
            let (n, unit) = super::duration(ms);
            let word = match unit {
                super::Unit::Year => "year",
                super::Unit::Day => "day",
                super::Unit::Hour => "hour",
                super::Unit::Second => "second",
            };
            format!("{n} {word}{}", if n == 1 { "" } else { "s" })
        };
        let per = if r.unit_ms == 1 {
            "millisecond".to_owned()
        } else {
            format!("time unit of {} ms", r.unit_ms)
        };
        let mut out = vec![
            format!(
                "{} distinct IDs per {per}, every machine together.",
                r.ids_per_unit
            ),
            if r.end_in_ms >= 0 {
                format!(
                    "Its time runs out at {}, in {}.",
                    r.end,
                    span(r.end_in_ms.unsigned_abs())
                )
            } else {
                format!(
                    "Its time ran out at {}, {} ago.",
                    r.end,
                    span(r.end_in_ms.unsigned_abs())
                )
            },
        ];
        out.push(match r.js_safety() {
            JsSafety::Always { .. } => "Every ID of this layout is a safe JavaScript number, to its end.".to_owned(),
            JsSafety::Stopped { until, after_ms } => format!(
                "IDs of this layout stopped being safe JavaScript numbers {} after its epoch, at {until}: send them as strings.",
                span(after_ms)
            ),
            JsSafety::Stops { until, after_ms } => format!(
                "IDs of this layout stop being safe JavaScript numbers {} after its epoch, at {until}.",
                span(after_ms)
            ),
            _ => "No ID of this layout is a safe JavaScript number: even its epoch's are above 2^53 − 1.".to_owned(),
        });
        out
    },
    layout_row: "Layout",
    bits_heading: "The 64 bits",
    bits_intro: "Most significant bit first. Each segment shows its name, bit range and value.",
    bits_scroll_hint: "Scroll sideways to see all 64 bits →",
    seg_label: |label| match label {
        "sign" => "Sign",
        "timestamp" => "Timestamp",
        "datacenter" => "Datacenter",
        "worker" => "Worker",
        "sequence" => "Sequence",
        "process" => "Process",
        "increment" => "Increment",
        "shard" => "Shard",
        "machine" => "Machine",
        "sequence data" | "sequence_data" => "Sequence data",
        other => other,
    },
    bit: "bit",
    bits: "bits",
    value: "value",
    formula_heading: "The formula",
    formula_legend: "t = timestamp (Unix ms), c = datacenter, m = worker (machine), s = sequence.",
    formula_legend_for: |unit, fields| {
        let mut out = "t = timestamp (Unix ms)".to_owned();
        if unit > 1 {
            out.push_str(&format!(", d counts units of {unit} ms"));
        }
        for (letter, label) in fields {
            out.push_str(&format!(", {letter} = {}", label.to_lowercase()));
        }
        out.push('.');
        out
    },
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
    live_token: "This server requires an API token to mint (Authorization: Bearer), which this page does not send: mint with the API instead.",
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
    guide: Guide {
        heading: "Snowflake IDs explained",
        what_heading: "What a Snowflake ID is",
        what: |_| {
            html! {
                p { "A Snowflake ID is a 64-bit whole number built from three things: the time it was made, to the millisecond; the identity of the machine that made it; and a sequence number that counts the IDs that machine made in the same millisecond. Because every machine has an identity of its own and keeps its own count, many servers can hand out IDs at the same time without asking each other, or a central database, whether a number was already used." }
                p { "The number fits in a signed 64-bit integer (" code { "BIGINT" } " in SQL, " code { "long" } " in Java), so it is cheap to store and to index, and it can be taken apart again: every ID tells when and where it was made." }
            }
        },
        how_heading: "How this tool works",
        how: |f| {
            let l = f.layout;
            html! {
                p { "The compose form puts four values together exactly as a minter does:" }
                ul {
                    li { strong { "Timestamp" } ": Unix time in milliseconds. Leave it blank for the current time, type an ISO-8601 time such as " code { (f.example().time()) } ", or pick a date. It must lie between " (f.epoch()) " and " (f.end()) "." }
                    li { strong { "Datacenter ID" } ": 0–" (l.max_datacenter()) ", " (l.datacenter_bits()) " bits." }
                    li { strong { "Worker ID" } " (the “machine ID” of the original tool): 0–" (l.max_worker()) ", " (l.worker_bits()) " bits." }
                    li { strong { "Sequence" } ": 0–" (l.max_sequence()) ", " (l.sequence_bits()) " bits: which of that worker's IDs of that millisecond this is." }
                }
                p { "The timestamp is counted from an epoch, fixed at " (f.epoch()) " (" code { (f.epoch_ms()) } " in Unix milliseconds), and it cannot be changed here: with another epoch the same four values would make a different ID. The decode form works the other way round: paste an ID in decimal, hexadecimal or base32 and see its four values. Every result has its own link, and the page works without JavaScript." }
            }
        },
        why_heading: "Why the IDs sort by time",
        why: |f| {
            html! {
                p { "The top bit, the sign, is always 0, so every ID is a positive number whether a program reads it as signed or unsigned. Right below it the timestamp fills the next " (f.layout.timestamp_bits()) " bits, the most significant ones. Comparing two numbers comes down to the highest bit where they differ, so an ID from a later millisecond is always the larger number, whatever its datacenter, worker or sequence." }
                p { "Within one millisecond on one worker, the sequence decides: it counts 0, 1, 2 and so on, so those IDs sort in the order they were made. IDs of the same millisecond from different machines sort by datacenter and worker, which says nothing about which came first, and across machines the order is only as good as their clocks agree." }
                p { "That is what makes Snowflake IDs good database keys: new rows land at the end of the index, and ordering by ID is ordering by time." }
            }
        },
        example_heading: "A worked example, step by step",
        example_intro: |f| {
            let e = f.example();
            html! {
                p { "Take the timestamp " code { (e.parts.timestamp_ms) } " (" (e.time()) "), datacenter " (e.parts.datacenter) ", worker " (e.parts.worker) " and sequence " (e.parts.sequence) "." }
            }
        },
        example_steps: [
            |_| html! { "Subtract the epoch to get the milliseconds since it:" },
            |f| {
                let shift = f.layout.timestamp_shift();
                html! { "Shift that " (shift) " bits to the left, which multiplies it by 2^" (shift) " = " (n(1 << shift)) ":" }
            },
            |f| html! { "Shift the datacenter " (f.layout.datacenter_shift()) " bits to the left:" },
            |f| html! { "Shift the worker " (f.layout.worker_shift()) " bits to the left:" },
            |f| html! { "The sequence stays where it is, in the lowest " (f.layout.sequence_bits()) " bits:" },
            |_| html! { "Put the four together:" },
        ],
        example_bits: "The four terms in binary, split into sign, timestamp, datacenter, worker and sequence.",
        example_or: |_| {
            html! {
                p { "Adding the four numbers gives the same result as OR-ing them (" code { "|" } "), because the fields do not overlap. Each value is smaller than 2 to the power of its width, so after its shift it sits entirely in its own bits, and no two terms have a 1 in the same place. With nothing to carry, " code { "+" } " and " code { "|" } " agree." }
            }
        },
        example_shifts: |f| {
            let l = f.layout;
            html! {
                p { "The shifts are the widths of the fields below each one. The sequence takes the lowest " (l.sequence_bits()) " bits, so the worker starts at bit " (l.worker_shift()) ". The worker takes " (l.worker_bits()) " more, so the datacenter starts at " (l.worker_shift()) " + " (l.worker_bits()) " = " (l.datacenter_shift()) ". The datacenter takes " (l.datacenter_bits()) " more, so the timestamp starts at " (l.datacenter_shift()) " + " (l.datacenter_bits()) " = " (l.timestamp_shift()) ", and its " (l.timestamp_bits()) " bits reach bit " (l.timestamp_shift() + l.timestamp_bits() - 1) ", just below the sign." }
            }
        },
        example_link: "Open this example in the explorer",
        uses_heading: "Where Snowflake IDs are used",
        uses: |_, discord| {
            html! {
                p { "Twitter made the format in 2010 for tweet IDs: tweets were written to thousands of database machines, and no single counter could keep up with them all. Discord later used the same 64-bit layout for messages, users and servers, with an epoch of its own (2015-01-01), and Instagram built a similar scheme for its posts inside PostgreSQL, with a shard number where Twitter has datacenter and worker." }
                p { "The same idea serves sharded databases, order and invoice numbers, and event logs: anywhere many writers need unique keys that sort by time, without a round trip to a central counter. " }
                p { "Those systems lay out their bits differently, so one number means a different time in each. The decoder above reads their IDs too: choose the layout, as in " a #uses-discord href=(discord) { "Discord's own example ID" } ", or decode Instagram, Sonyflake (10 ms time units, the machine ID lowest) and Mastodon IDs the same way. The command line does it with " code { "snowmint decode --layout discord ID" } ". The compose form takes the same layouts: its fields are the chosen layout's." }
            }
        },
        minter_heading: "This calculator versus a production minter",
        minter: |f| {
            html! {
                p { "The compose form is a calculator: it remembers nothing from one computation to the next. Give it the same four values twice and it shows the same ID twice. That is what you want when learning the format, and exactly what a minter must never do." }
                p { "A production minter keeps state. It reads a running clock, counts the sequence up for each ID within a millisecond, and once all " (n(f.per_ms())) " IDs of a millisecond are used, it waits for the next one. It never issues an ID twice, not even when the clock steps back, and no other machine mints with its identity." }
                p { code { "snowmint serve" } " runs such a minter: the " a href="#live" { "live IDs from this server" } " above come from it (" code { "POST /api/v1/ids" } "), and the " code { "snowmint" } " library's " code { "Generator" } " does the same inside a Rust program." }
            }
        },
        history_heading: "A short history",
        history: |f| {
            html! {
                p { "Twitter announced Snowflake in 2010, while preparing to move tweets off a single MySQL database onto many servers. Auto-increment IDs come from one database's counter, and that does not scale across many independent database servers: either every insert waits for the one counter, or the servers hand out the same numbers. Snowflake let each server make IDs on its own that are still unique, roughly ordered by time, and small enough for 64 bits. Its epoch, " (f.epoch()) ", dates from the weeks when tweet IDs switched to the new scheme." }
                p { "The name plays on the saying that no two snowflakes are alike. Twitter released Snowflake as open source, and other large platforms adapted the design, Discord and Instagram among them, as did ID libraries in most programming languages, this one included." }
            }
        },
    },
};
