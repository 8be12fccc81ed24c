//! The `snowmint` binary, run as a user runs it: arguments in, stdout,
//! stderr and exit status out.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::{bad, ok, run_with, snowmint};

fn compose(ts: &str, dc: &str, worker: &str, seq: &str) -> Vec<String> {
    [
        "compose",
        "--timestamp",
        ts,
        "--datacenter",
        dc,
        "--worker",
        worker,
        "--sequence",
        seq,
    ]
    .map(String::from)
    .to_vec()
}

/// The reference case (1288834975657, 1, 1, 0) with `--FIELD` given `value`.
fn compose_with(field: &str, value: &str) -> Vec<String> {
    let mut argv = compose("1288834975657", "1", "1", "0");
    let i = argv
        .iter()
        .position(|a| *a == format!("--{field}"))
        .unwrap();
    argv[i + 1] = value.to_owned();
    argv
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn compose_json(ts: &str, dc: &str, worker: &str, seq: &str) -> Value {
    let mut a = compose(ts, dc, worker, seq);
    a.push("--json".into());
    serde_json::from_str(&ok(&args(&a))).expect("--json prints JSON")
}

/// The line of the human view whose whitespace-separated words are `words`.
fn has_row(out: &str, words: &[&str]) -> bool {
    out.lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == words)
}

const REFERENCE_SPLIT: &str =
    "0 | 00000000000000000000000000000001111101000 | 00001 | 00001 | 000000000000";

/// The contract's object for the reference case, field for field.
fn reference_object() -> Value {
    json!({
        "id": "4194439168",
        "timestamp_ms": 1288834975657u64,
        "delta_ms": 1000,
        "time": "2010-11-04T01:42:55.657Z",
        "datacenter": 1,
        "worker": 1,
        "sequence": 0,
        "binary": REFERENCE_SPLIT.replace(" | ", ""),
        "segments": [
            {"name": "sign", "bits": 1, "value": 0, "binary": "0"},
            {"name": "timestamp", "bits": 41, "value": 1000,
             "binary": "00000000000000000000000000000001111101000"},
            {"name": "datacenter", "bits": 5, "value": 1, "binary": "00001"},
            {"name": "worker", "bits": 5, "value": 1, "binary": "00001"},
            {"name": "sequence", "bits": 12, "value": 0, "binary": "000000000000"},
        ],
    })
}

#[test]
fn reference_case_human_view() {
    let out = ok(&args(&compose("1288834975657", "1", "1", "0")));
    for row in [
        &["id", "4194439168"][..],
        &["hex", "00000000fa021000"],
        &["base32", "0000003x04400"],
        &["time", "2010-11-04T01:42:55.657Z"],
        &["unix", "ms", "1288834975657"],
        &["datacenter", "1"],
        &["worker", "1"],
        &["sequence", "0"],
        &["63", "sign", "1", "0", "0"],
        &[
            "62..22",
            "timestamp",
            "41",
            "1000",
            "00000000000000000000000000000001111101000",
        ],
        &["21..17", "datacenter", "5", "1", "00001"],
        &["16..12", "worker", "5", "1", "00001"],
        &["11..0", "sequence", "12", "0", "000000000000"],
    ] {
        assert!(has_row(&out, row), "no row {row:?} in\n{out}");
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with("delta ms") && l.contains("1000")),
        "{out}"
    );
    assert!(out.lines().any(|l| l == REFERENCE_SPLIT), "{out}");
    assert!(!out.contains('\x1b'), "colour into a pipe:\n{out}");
}

#[test]
fn reference_case_json_is_the_contract_object() {
    let mut a = compose("1288834975657", "1", "1", "0");
    a.push("--json".into());
    let text = ok(&args(&a));
    assert_eq!(text.lines().count(), 1, "{text}");
    // Fields in the contract's order, the ID as a string.
    assert!(
        text.starts_with(r#"{"id":"4194439168","timestamp_ms":1288834975657,"delta_ms":1000,"#),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v, reference_object());
    assert_eq!(v["binary"].as_str().unwrap().len(), 64);

    // Decoding the ID gives the same object.
    let decoded: Value = serde_json::from_str(&ok(&["decode", "4194439168", "--json"])).unwrap();
    assert_eq!(decoded, reference_object());
}

#[test]
fn boundaries_compose() {
    let first = compose_json("1288834974657", "0", "0", "0");
    assert_eq!(first["id"], "0");
    assert_eq!(first["time"], "2010-11-04T01:42:54.657Z");
    assert_eq!(first["binary"], "0".repeat(64));

    let last = compose_json("3487858230208", "31", "31", "4095");
    assert_eq!(last["id"], "9223372036854775807");
    assert_eq!(last["time"], "2080-07-10T17:30:30.208Z");
    assert_eq!(last["binary"], format!("0{}", "1".repeat(63)));
    assert_eq!(last["delta_ms"], 2199023255551u64);

    let human = ok(&args(&compose("3487858230208", "31", "31", "4095")));
    assert!(has_row(&human, &["id", "9223372036854775807"]), "{human}");
    assert!(has_row(&human, &["hex", "7fffffffffffffff"]), "{human}");
    assert!(has_row(&human, &["base32", "7zzzzzzzzzzzz"]), "{human}");
}

#[test]
fn one_past_each_bound_is_refused() {
    const RANGE: &str =
        "1288834974657..=3487858230208 (2010-11-04T01:42:54.657Z ..= 2080-07-10T17:30:30.208Z)";
    let mut cases = vec![
        (
            compose("1288834974656", "0", "0", "0"),
            format!("timestamp must be {RANGE}, got 1288834974656: before the epoch"),
        ),
        (
            compose("3487858230209", "31", "31", "4095"),
            format!(
                "timestamp must be {RANGE}, got 3487858230209: \
                 past the last millisecond the timestamp bits can hold"
            ),
        ),
    ];
    // Each field below the time one past its largest value, and negative.
    for (field, max) in [("datacenter", 31), ("worker", 31), ("sequence", 4095)] {
        for value in [(max + 1).to_string(), "-1".to_owned()] {
            cases.push((
                compose_with(field, &value),
                format!("{field} must be 0..={max}, got {value}"),
            ));
        }
    }
    for (argv, expected) in cases {
        assert_eq!(bad(&args(&argv)), expected, "{argv:?}");
        let mut json = argv.clone();
        json.push("--json".into());
        assert_eq!(bad(&args(&json)), expected, "{json:?}");
    }
}

#[test]
fn non_numbers_and_huge_numbers_name_the_field() {
    for (field, range) in [
        ("datacenter", "0..=31"),
        ("worker", "0..=31"),
        ("sequence", "0..=4095"),
    ] {
        for value in [
            "abc",
            "1.5",
            "",
            "0x1",
            "99999999999999999999999999999999999999999",
        ] {
            let argv = compose_with(field, value);
            let msg = bad(&args(&argv));
            assert!(
                msg.starts_with(&format!("{field} must be ")) && msg.contains(range),
                "{field}={value:?}: {msg}"
            );
        }
    }
    let msg = bad(&args(&compose("yesterday", "1", "1", "0")));
    assert!(msg.starts_with("timestamp must be "), "{msg}");
    assert!(msg.contains("1288834974657..=3487858230208"), "{msg}");
    assert!(msg.contains(r#"got "yesterday""#), "{msg}");
}

#[test]
fn missing_or_malformed_flags_are_one_line() {
    let msg = bad(&["compose", "--worker", "1", "--sequence", "0"]);
    assert!(
        msg.contains("--datacenter") && msg.contains("0..=31"),
        "{msg}"
    );
    let msg = bad(&[
        "compose",
        "--datacenter",
        "--worker",
        "1",
        "--sequence",
        "0",
    ]);
    assert!(
        msg.contains("--datacenter") && msg.contains("0..=31"),
        "{msg}"
    );
    let msg = bad(&["decode"]);
    assert!(
        msg.contains("<ID>") && msg.contains("0..=9223372036854775807"),
        "{msg}"
    );
    let msg = bad(&["decode", "5", "--from", "octal"]);
    assert!(
        msg.contains("octal") && msg.contains("decimal, hex, base32"),
        "{msg}"
    );
    let msg = bad(&["decode", "5", "--layout", "flickr"]);
    assert!(
        msg.contains("flickr") && msg.contains("twitter, discord, instagram, sonyflake, mastodon"),
        "{msg}"
    );
    let msg = bad(&["decode", "5", "--color", "sometimes"]);
    assert!(msg.contains("auto, always, never"), "{msg}");
    let msg = bad(&["decode", "5", "--jsn"]);
    assert!(msg.contains("--jsn") && msg.contains("--json"), "{msg}");
    bad(&["frobnicate"]);
    bad(&[
        "compose",
        "--datacenter",
        "1",
        "--datacenter",
        "2",
        "--worker",
        "1",
        "--sequence",
        "0",
    ]);
}

#[test]
fn decode_refuses_what_is_not_an_id() {
    const MAX: &str = "9223372036854775807";
    for (input, expected) in [
        (
            "abc",
            format!(r#"id must be a decimal integer 0..={MAX}, got "abc""#),
        ),
        ("-5", format!("id must be 0..={MAX}, got -5")),
        (
            "9223372036854775808",
            format!("id must be 0..={MAX}, got 9223372036854775808: the sign bit is set"),
        ),
        (
            "99999999999999999999999",
            format!("id must be 0..={MAX}, got 99999999999999999999999: more than 64 bits"),
        ),
        (
            "",
            format!(r#"id must be a decimal integer 0..={MAX}, got """#),
        ),
        (
            "1e3",
            format!(r#"id must be a decimal integer 0..={MAX}, got "1e3""#),
        ),
    ] {
        assert_eq!(bad(&["decode", input]), expected, "{input:?}");
        assert_eq!(bad(&["decode", "--json", input]), expected, "{input:?}");
    }
    let max = ok(&["decode", MAX, "--json"]);
    assert!(max.contains(r#""id":"9223372036854775807""#), "{max}");
}

#[test]
fn decode_other_forms() {
    for (from, input) in [
        ("hex", "0xfa021000"),
        ("hex", "00000000FA021000"),
        ("base32", "0000003x04400"),
        ("base32", "0000003X04400"),
        ("decimal", "4194439168"),
        // As the API's and the page's `from` read it (the core's parser).
        ("HEX", "0xFA021000"),
        ("Base32", "0000003x04400"),
    ] {
        let v: Value =
            serde_json::from_str(&ok(&["decode", input, "--from", from, "--json"])).unwrap();
        assert_eq!(v, reference_object(), "--from {from} {input}");
    }
    let msg = bad(&["decode", "0xg", "--from", "hex"]);
    assert!(msg.starts_with("id must be hexadecimal"), "{msg}");
    let msg = bad(&["decode", "8000000000000000", "--from", "hex"]);
    assert!(msg.ends_with("the sign bit is set"), "{msg}");
    let msg = bad(&["decode", "8000000000000", "--from", "base32"]);
    assert!(msg.ends_with("the sign bit is set"), "{msg}");
    let msg = bad(&["decode", "0000003u04400", "--from", "base32"]);
    assert!(msg.starts_with("id must be Crockford base32"), "{msg}");
}

#[test]
fn decode_discord_layout() {
    // Discord's documented example: 2016-04-30 11:18:25.796 UTC, internal
    // worker 1, process 0, increment 7.
    let v: Value = serde_json::from_str(&ok(&[
        "decode",
        "175928847299117063",
        "--layout",
        "discord",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["timestamp_ms"], 1462015105796u64);
    assert_eq!(v["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(v["delta_ms"], 1462015105796u64 - 1420070400000);
    assert_eq!(
        (&v["datacenter"], &v["worker"], &v["sequence"]),
        (&json!(1), &json!(0), &json!(7))
    );
    let human = ok(&["decode", "175928847299117063", "--layout", "discord"]);
    assert!(human.contains("discord epoch"), "{human}");
    // Discord's own names for its fields.
    for row in [&["worker", "1"][..], &["process", "0"], &["increment", "7"]] {
        assert!(has_row(&human, row), "{row:?} in {human}");
    }
    // The same ID read as Twitter's is six years earlier.
    let twitter: Value =
        serde_json::from_str(&ok(&["decode", "175928847299117063", "--json"])).unwrap();
    assert_eq!(
        twitter["timestamp_ms"],
        1462015105796u64 - 1420070400000 + 1288834974657
    );
}

#[test]
fn decode_the_other_layouts() {
    // "Sharding & IDs at Instagram" (2012): 1387263000 ms since the epoch
    // 1314220021721, shard 1341, sequence 5001 % 1024, built as
    // `(ms - epoch) << 23 | shard << 10 | seq`.
    let instagram = (1387263000u64 << 23) | (1341 << 10) | (5001 % 1024);
    let v: Value = serde_json::from_str(&ok(&[
        "decode",
        &instagram.to_string(),
        "--layout",
        "instagram",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["timestamp_ms"], 1314220021721u64 + 1387263000);
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(1341), &json!(905)));
    // 41 + 13 + 10 = 64 bits: no separate sign segment; every field by its
    // own name (the shard fills the top-level `worker` slot).
    let segments = v["segments"].as_array().unwrap();
    let names: Vec<&str> = segments
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["timestamp", "shard", "sequence"]);
    let human = ok(&["decode", &instagram.to_string(), "--layout", "instagram"]);
    assert!(has_row(&human, &["shard", "1341"]), "{human}");
    assert!(
        has_row(&human, &["22..10", "shard", "13", "1341", "0010100111101"]),
        "{human}"
    );

    // sony/sonyflake sonyflake.go: `elapsed << (8+16) | sequence << 16 |
    // machineID`, elapsed in 10 ms units since 2014-09-01T00:00:00Z.
    let elapsed = (1704067200000u64 - 1409529600000) / 10;
    let sonyflake = (elapsed << 24) | (3 << 16) | 0x7F7F;
    let human = ok(&["decode", &sonyflake.to_string(), "--layout", "sonyflake"]);
    for row in [
        &["time", "2024-01-01T00:00:00.000Z"][..],
        &["sequence", "3"],
        &["machine", "32639"],
        &["time", "unit", "10", "ms"],
    ] {
        assert!(has_row(&human, row), "{row:?} in {human}");
    }

    // docs.joinmastodon.org, Status entity example: id 103270115826048975,
    // created_at 2019-12-08T03:48:33.901Z (set apart from the ID, so the
    // same second).
    let v: Value = serde_json::from_str(&ok(&[
        "decode",
        "103270115826048975",
        "--layout",
        "MASTODON",
        "--json",
    ]))
    .unwrap();
    let time = v["time"].as_str().unwrap();
    assert!(time.starts_with("2019-12-08T03:48:33."), "{v}");
}

#[test]
fn iso_8601_timestamps() {
    let id = |ts: &str| compose_json(ts, "1", "1", "0")["id"].clone();
    assert_eq!(id("2010-11-04T01:42:55.657Z"), "4194439168");
    assert_eq!(id("2010-11-04T02:42:55.657+01:00"), "4194439168");
    assert_eq!(id("2010-11-04 01:42:55.657"), "4194439168");
    assert_eq!(
        compose_json("2080-07-10T17:30:30.208Z", "31", "31", "4095")["id"],
        "9223372036854775807"
    );
    for past in [
        "2080-07-10T17:30:30.209Z",
        "2010-11-04T01:42:54.656Z",
        "1970-01-01",
    ] {
        let msg = bad(&args(&compose(past, "1", "1", "0")));
        assert!(
            msg.starts_with("timestamp must be 1288834974657..=3487858230208"),
            "{msg}"
        );
    }
    let msg = bad(&args(&compose("2010-02-30", "1", "1", "0")));
    assert!(msg.contains(r#"got "2010-02-30""#), "{msg}");
}

#[test]
fn without_a_timestamp_it_is_now() {
    let now = snowmint::unix_now_ms;
    let node = [
        "--datacenter",
        "3",
        "--worker",
        "7",
        "--sequence",
        "9",
        "--json",
    ];
    // No --timestamp, and `--timestamp now`.
    for time in [&[][..], &["--timestamp", "now"]] {
        let argv = [&["compose"][..], time, &node].concat();
        let before = now();
        let v: Value = serde_json::from_str(&ok(&argv)).unwrap();
        let after = now();
        let t = v["timestamp_ms"].as_u64().unwrap();
        assert!((before..=after).contains(&t), "{before} <= {t} <= {after}");
        assert_eq!(
            (&v["datacenter"], &v["worker"], &v["sequence"]),
            (&json!(3), &json!(7), &json!(9))
        );
    }
}

#[test]
fn colour_flags() {
    let argv = ["decode", "4194439168"];
    let plain = ok(&argv);
    assert!(!plain.contains('\x1b'));
    let never = run_with(&["decode", "4194439168", "--color", "never"], &[]);
    assert_eq!(never.stdout, plain);

    let always = run_with(&["decode", "4194439168", "--color", "always"], &[]);
    assert_eq!(always.code, Some(0));
    assert!(
        always
            .stdout
            .contains("\x1b[36m00000000000000000000000000000001111101000\x1b[0m")
    );
    // Without the escapes it is the plain view.
    assert_eq!(strip_ansi(&always.stdout), plain);
    // An explicit flag beats the environment.
    let forced = run_with(
        &["--color", "always", "decode", "4194439168"],
        &[("NO_COLOR", "1")],
    );
    assert!(forced.stdout.contains('\x1b'));
    // JSON is never coloured.
    let json = run_with(
        &["decode", "4194439168", "--json", "--color", "always"],
        &[],
    );
    assert!(!json.stdout.contains('\x1b'));
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs the binary on a pseudo-terminal through util-linux `script`, so the
/// `auto` colour choice sees a terminal. `None` (with the reason printed)
/// when `script` is missing, unless the services are required.
fn on_terminal(cli_args: &str, env: &[(&str, &str)]) -> Option<String> {
    let bin = env!("CARGO_BIN_EXE_snowmint");
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &format!("'{bin}' {cli_args}"), "/dev/null"])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for (k, v) in env {
        cmd.env(k, v);
    }
    match cmd.output() {
        Ok(out) => {
            assert!(out.status.success(), "{out:?}");
            Some(String::from_utf8(out.stdout).unwrap())
        }
        Err(e) if std::env::var("SNOWMINT_REQUIRE_SERVICES").as_deref() == Ok("1") => {
            panic!("cannot run `script` (util-linux) for the terminal test: {e}")
        }
        Err(e) => {
            eprintln!("skipping the terminal colour test: cannot run `script` (util-linux): {e}");
            None
        }
    }
}

#[test]
fn colour_on_a_terminal_unless_no_color() {
    let Some(coloured) = on_terminal("decode 4194439168", &[]) else {
        return;
    };
    assert!(coloured.contains("\x1b[36m"), "{coloured:?}");
    let Some(no_color) = on_terminal("decode 4194439168", &[("NO_COLOR", "1")]) else {
        return;
    };
    assert!(!no_color.contains('\x1b'), "{no_color:?}");
    let Some(never) = on_terminal("decode 4194439168 --color never", &[]) else {
        return;
    };
    assert!(!never.contains('\x1b'), "{never:?}");
}

#[test]
fn help_has_examples() {
    for sub in ["compose", "decode", "range"] {
        let out = ok(&[sub, "--help"]);
        assert!(out.contains("Examples:"), "{sub}: {out}");
        assert!(out.contains(&format!("snowmint {sub} ")), "{sub}: {out}");
    }
    let out = ok(&["--help"]);
    assert!(out.contains("compose") && out.contains("decode"), "{out}");
}

#[test]
fn a_failed_write_is_a_runtime_error() {
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipping: no /dev/full on this system to make stdout fail");
        return;
    }
    let out = snowmint()
        .args(["decode", "4194439168"])
        .stdout(std::fs::File::create(full).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: cannot write to stdout"),
        "{stderr}"
    );
}
