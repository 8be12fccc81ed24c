//! Layouts written as specs everywhere `--layout` is taken, composing in any
//! layout by field name, the layout lab (`snowmint layout`) and `snowmint
//! detect`. Expected values come from each system's documentation or
//! source formula (see crates/snowmint/tests/presets.rs), never from
//! snowmint.

use serde_json::{Value, json};

use crate::support::{bad, ok, run_stdin};

const DISCORD_SPEC: &str =
    "epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12";
const SONYFLAKE_SPEC: &str =
    "epoch=2014-09-01T00:00:00Z;unit=10ms;fields=timestamp:39,sequence:8,machine:16";

fn json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&ok(&args)).expect("--json prints JSON")
}

fn discord_compose(layout: &str) -> Vec<&str> {
    vec![
        "compose",
        "--layout",
        layout,
        "--timestamp",
        "1462015105796",
        "--field",
        "worker=1",
        "--field",
        "process=0",
        "--field",
        "increment=7",
    ]
}

#[test]
fn compose_in_discords_layout_by_field_name() {
    // Discord's developer docs, Reference > Snowflakes: 175928847299117063
    // is 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
    let v = json(&discord_compose("discord"));
    assert_eq!(v["id"], "175928847299117063");
    let segments: Vec<(&str, u64)> = v["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["value"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        segments,
        [
            ("timestamp", 1462015105796 - 1420070400000),
            ("worker", 1),
            ("process", 0),
            ("increment", 7)
        ]
    );
    // The contract's top-level keys keep their slots.
    assert_eq!(
        (&v["datacenter"], &v["worker"], &v["sequence"]),
        (&json!(1), &json!(0), &json!(7))
    );
    // Composing gives what decoding the ID gives.
    assert_eq!(
        v,
        json(&["decode", "175928847299117063", "--layout", "discord"])
    );
    // The fields in any order; a field of Twitter's layout by name too.
    let mut reordered = discord_compose("discord");
    reordered.swap(6, 10);
    assert_eq!(json(&reordered), v);
    let twitter = json(&[
        "compose",
        "--timestamp",
        "1288834975657",
        "--field",
        "datacenter=1",
        "--field",
        "worker=1",
        "--field",
        "sequence=0",
    ]);
    assert_eq!(twitter["id"], "4194439168");
}

#[test]
fn a_spec_works_exactly_as_the_preset_it_spells_out() {
    for (spec, preset) in [(DISCORD_SPEC, "discord"), (SONYFLAKE_SPEC, "sonyflake")] {
        for args in [
            vec!["decode", "175928847299117063"],
            vec!["decode", "175928847299117063", "--json"],
            vec![
                "range",
                "--from",
                "2024-01-01T00:00:00Z",
                "--to",
                "2024-01-02T00:00:00Z",
            ],
            vec!["range", "--from", "1704067200000", "--json"],
            vec!["layout"],
        ] {
            let mut with_spec = args.clone();
            let mut with_name = args.clone();
            with_spec.extend(["--layout", spec]);
            with_name.extend(["--layout", preset]);
            if args[0] == "layout" {
                with_spec = vec!["layout", spec];
                with_name = vec!["layout", preset];
            }
            let (a, b) = (ok(&with_spec), ok(&with_name));
            // The lab's "runs out in" may cross a second between two runs;
            // its JSON carries "now", so only the human view is compared.
            assert_eq!(a, b, "{with_spec:?} vs {with_name:?}");
        }
    }
    assert_eq!(
        ok(&discord_compose(DISCORD_SPEC)),
        ok(&discord_compose("discord"))
    );
    // Sonyflake's source formula: elapsed 10 ms units << 24 | sequence << 16
    // | machine.
    let elapsed = (1704067200000u64 - 1409529600000) / 10;
    let id = (elapsed << 24) | (3 << 16) | 0x7F7F;
    let v = json(&[
        "compose",
        "--layout",
        SONYFLAKE_SPEC,
        "--timestamp",
        "2024-01-01T00:00:00.005Z",
        "--field",
        "machine=32639",
        "--field",
        "sequence=3",
    ]);
    assert_eq!(v["id"], id.to_string());
    assert_eq!(v["time"], "2024-01-01T00:00:00.000Z");
}

#[test]
fn a_custom_layout_of_our_own() {
    // "Our own snowflake": epoch 2020, a 10-bit machine, a 12-bit sequence.
    let spec = "epoch=2020-01-01;fields=timestamp:41,machine:10,sequence:12";
    let t = 1577836800000u64 + 86_400_000;
    let v = json(&[
        "compose",
        "--layout",
        spec,
        "--timestamp",
        &t.to_string(),
        "--field",
        "machine=1023",
        "--field",
        "sequence=5",
    ]);
    let id = (86_400_000u64 << 22) | (1023 << 12) | 5;
    assert_eq!(v["id"], id.to_string());
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(1023), &json!(5)));
    let human = ok(&["decode", &id.to_string(), "--layout", spec]);
    assert!(human.contains("machine       1023"), "{human}");
    assert!(
        human.contains(
            "layout        epoch=1577836800000;fields=timestamp:41,machine:10,sequence:12"
        ),
        "{human}"
    );
    // The range in that layout starts at its own epoch.
    let r = json(&["range", "--from", "2020-01-01T00:00:00Z", "--layout", spec]);
    assert_eq!((&r["min"], &r["max"]), (&json!("0"), &json!("4194303")));
    // A layout narrower than 63 bits refuses IDs with bits above it.
    let msg = bad(&[
        "decode",
        "1099511627776",
        "--layout",
        "epoch=0;fields=timestamp:30,node:10",
    ]);
    assert_eq!(
        msg,
        "id must be 0..=1099511627775, got 1099511627776: bits above the layout's 40 are set"
    );
}

#[test]
fn fields_named_like_the_contracts_keys_report_under_their_own_names() {
    // worker in bits 21..=17 holds 1, datacenter in bits 16..=12 holds 2.
    let spec = "epoch=0;fields=timestamp:41,worker:5,datacenter:5,sequence:12";
    let id = ((1u64 << 17) | (2 << 12)).to_string();
    assert_eq!(id, "139264");
    let v = json(&["decode", &id, "--layout", spec]);
    assert_eq!(
        (&v["datacenter"], &v["worker"], &v["sequence"]),
        (&json!(2), &json!(1), &json!(0)),
        "{v:#}"
    );
    for segment in v["segments"].as_array().unwrap() {
        if let Some(key) = ["datacenter", "worker", "sequence"]
            .into_iter()
            .find(|k| segment["name"] == *k)
        {
            assert_eq!(segment["value"], v[key], "{segment:#}");
        }
    }
    // Composing by field name gives the same object.
    let composed = json(&[
        "compose",
        "--layout",
        spec,
        "--timestamp",
        "0",
        "--field",
        "worker=1",
        "--field",
        "datacenter=2",
        "--field",
        "sequence=0",
    ]);
    assert_eq!(composed, v);
}

#[test]
fn bad_specs_say_what_is_wrong() {
    let cases = [
        (
            "epoch=0;fields=timestamp:41,worker:10,sequence:14",
            "the widths add up to 65 bits, more than 64",
        ),
        (
            "epoch=0;fields=timestamp:70",
            "timestamp must be 1..=64 bits wide, got \"70\"",
        ),
        (
            "epoch=0;fields=worker:10,sequence:12",
            "no field is named timestamp",
        ),
        (
            "epoch=0;unit=0ms;fields=timestamp:41",
            "the time unit must be at least 1 ms",
        ),
        ("fields=timestamp:41,worker:10", "the epoch is missing"),
        (
            "epoch=0;fields=timestamp:41,Worker:10",
            "the field name \"Worker\" must be",
        ),
        ("epoch=0;fields=timestamp:41,w:5,w:5", "w is named twice"),
        // 2^63 units of 2 ms: the time wrapped to 1969 once.
        (
            "epoch=0;unit=2ms;fields=timestamp:63",
            "the time field runs past 9999-12-31T23:59:59.999Z (253402300799999), where dates \
             end: its last millisecond would be 18446744073709551615",
        ),
        (
            "flickr",
            "\"flickr\" is neither a preset (twitter, discord, instagram, sonyflake, mastodon)",
        ),
    ];
    for (spec, want) in cases {
        for line in [
            "decode 5 --layout SPEC",
            "compose --layout SPEC --field worker=1",
            "range --from now --layout SPEC",
            "layout SPEC",
            "detect 5 --layout SPEC",
            "range --from 2024-01-01 --to 2024-03-01 --partition month --sql postgres --table t \
             --layout SPEC",
        ] {
            let args: Vec<&str> = line
                .split_whitespace()
                .map(|word| if word == "SPEC" { spec } else { word })
                .collect();
            let msg = bad(&args);
            assert!(msg.starts_with("invalid layout: "), "{args:?}: {msg}");
            assert!(msg.contains(want), "{args:?}: {msg}");
        }
    }
}

#[test]
fn flags_that_cannot_be_honoured_are_refused() {
    let msg = bad(&[
        "compose",
        "--layout",
        "discord",
        "--datacenter",
        "1",
        "--field",
        "worker=1",
    ]);
    assert_eq!(
        msg,
        "--datacenter is for Twitter's layout; the discord layout's fields are worker, process \
         and increment: give each with --field NAME=VALUE"
    );
    let msg = bad(&["compose", "--worker", "1", "--field", "datacenter=1"]);
    assert_eq!(
        msg,
        "--worker cannot be combined with --field: give every field one way"
    );
    let msg = bad(&[
        "compose", "--layout", "discord", "--field", "worker=1", "--field", "shard=2",
    ]);
    assert_eq!(
        msg,
        "shard is not a field of this layout; its fields are worker, process and increment"
    );
    let msg = bad(&["compose", "--layout", "discord", "--field", "worker=1"]);
    assert_eq!(
        msg,
        "process is missing: this layout needs worker, process and increment"
    );
    let msg = bad(&[
        "compose",
        "--layout",
        "discord",
        "--field",
        "worker=1",
        "--field",
        "worker=2",
        "--field",
        "process=0",
        "--field",
        "increment=0",
    ]);
    assert_eq!(msg, "worker is given more than once");
    let msg = bad(&[
        "compose",
        "--layout",
        "discord",
        "--field",
        "process=32",
        "--field",
        "worker=1",
        "--field",
        "increment=0",
    ]);
    assert_eq!(msg, "process must be 0..=31, got 32");
    let msg = bad(&["compose", "--layout", "discord", "--field", "process"]);
    assert!(msg.starts_with("field must be NAME=VALUE"), "{msg}");
    // A second before Sonyflake's epoch.
    let before_epoch = "compose --layout sonyflake --timestamp 2014-08-31T23:59:59Z \
                        --field machine=1 --field sequence=0";
    let msg = bad(&before_epoch.split_whitespace().collect::<Vec<_>>());
    assert!(
        msg.starts_with("timestamp must be 1409529600000..="),
        "{msg}"
    );
}

#[test]
fn the_layout_lab() {
    let v = json(&["layout", "twitter"]);
    assert_eq!(
        v["spec"],
        "epoch=1288834974657;fields=timestamp:41,datacenter:5,worker:5,sequence:12"
    );
    assert_eq!(v["epoch_ms"], 1288834974657u64);
    assert_eq!(v["unit_ms"], 1);
    assert_eq!(v["ids_per_unit"], 4194304);
    assert_eq!(v["end"], "2080-07-10T17:30:30.208Z");
    assert_eq!(v["js_safe_until"], "2010-11-28T22:14:18.304Z");
    assert_eq!(
        v["fields"][1],
        json!({"name": "datacenter", "bits": 5, "shift": 17, "max": 31})
    );
    let human = ok(&["layout"]);
    assert!(
        human.contains(
            "IDs of this layout stopped being safe JavaScript numbers 24 days after its epoch"
        ),
        "{human}"
    );
    // A 10 ms unit, computed from the formula: the last unit is 2^40 - 1
    // (its last ms 9 ms on); every ID of unit d is at most (d << 23) |
    // (2^23 - 1), at most 2^53 - 1 while d <= 2^30 - 1.
    let epoch = 1577836800000u64;
    let v = json(&[
        "layout",
        "epoch=2020-01-01;unit=10ms;fields=timestamp:40,node:8,step:15",
    ]);
    assert_eq!(v["unit_ms"], 10);
    assert_eq!(v["ids_per_unit"], 1u64 << 23);
    assert_eq!(v["end_ms"], epoch + ((1u64 << 40) - 1) * 10 + 9);
    assert_eq!(v["js_safe_until_ms"], epoch + ((1u64 << 30) - 1) * 10 + 9);
    // A preset's spec can be copied and given back.
    let spec = json(&["layout", "mastodon"])["spec"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(json(&["layout", &spec])["layout"], "mastodon");
}

fn detect(input: &[u64], extra: &[&str]) -> Value {
    let text: String = input.iter().map(|id| format!("{id}\n")).collect();
    let mut args = vec!["detect", "-", "--json"];
    args.extend(extra);
    let r = run_stdin(&args, &text);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

fn first(v: &Value) -> &str {
    v["candidates"][0]["layout"].as_str().unwrap()
}

#[test]
fn detect_names_the_system() {
    // 20 Sonyflake IDs of machine 10.0.3.42 (its default: the low 16 bits
    // of the private address), from the source formula, a few seconds apart.
    let start = 1409529600000u64 / 10;
    let sony: Vec<u64> = (0..20u64)
        .map(|i| {
            let t = 1763625600000 + i * 3_217;
            ((t / 10 - start) << 24) | ((i % 7 / 6) << 16) | ((3 << 8) | 42)
        })
        .collect();
    let v = detect(&sony, &[]);
    assert_eq!(first(&v), "sonyflake", "{v:#}");
    assert_eq!(v["ambiguous"], false);
    let keys: Vec<&str> = {
        let mut k: Vec<&str> = v["candidates"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        k.sort_unstable();
        k
    };
    assert_eq!(keys, ["from", "layout", "score", "to", "why"]);
    // 20 Twitter IDs of one worker.
    let twitter: Vec<u64> = (0..20u64)
        .map(|i| {
            ((1717243200000 + i * 1_237 - 1288834974657) << 22) | (2 << 17) | (17 << 12) | (i % 3)
        })
        .collect();
    let v = detect(&twitter, &[]);
    assert_eq!(first(&v), "twitter", "{v:#}");
    // One ID: Discord's and Twitter's layouts differ only in epoch.
    let v = json(&["detect", "175928847299117063"]);
    assert_eq!(v["ambiguous"], true, "{v:#}");
    assert!(
        v["note"].as_str().unwrap().contains("twitter, discord"),
        "{v:#}"
    );
    let human = ok(&["detect", "175928847299117063"]);
    assert!(
        human.starts_with("ambiguous: this ID could come from"),
        "{human}"
    );
    // One Sonyflake ID is ambiguous too, and an ID given twice is one ID.
    let one = sony[0].to_string();
    let v = json(&["detect", &one]);
    assert_eq!(first(&v), "sonyflake", "{v:#}");
    assert_eq!(v["ambiguous"], true, "{v:#}");
    let twice = json(&["detect", &one, &one]);
    assert_eq!(twice["ids"], 2);
    for key in ["ambiguous", "note", "candidates"] {
        assert_eq!(twice[key], v[key], "{key}");
    }
    // A custom layout given with --layout competes, and wins on its IDs.
    let spec = "epoch=2020-01-01;fields=timestamp:40,node:4,seq:8";
    let ours: Vec<u64> = (0..10u64)
        .map(|i| ((1735689600000 + i * 999 - 1577836800000) << 12) | (9 << 8))
        .collect();
    let v = detect(&ours, &["--layout", spec]);
    // Named by its spec, the epoch in Unix ms.
    assert_eq!(
        first(&v),
        "epoch=1577836800000;fields=timestamp:40,node:4,seq:8",
        "{v:#}"
    );
    // A bad line names its number.
    let r = run_stdin(&["detect", "-"], "5\n\nsix\n");
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.starts_with("error: line 3: id must be"),
        "{}",
        r.stderr
    );
}
