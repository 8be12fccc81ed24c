//! `snowmint range` and `snowmint decode -`: a time span's IDs, and many
//! IDs at once.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{bad, ok, run_stdin, spawn_piped};

const EPOCH: u64 = 1288834974657;
/// The contract's formula, `((t - epoch) << 22) | dc << 17 | worker << 12 | seq`.
fn min_of(t: u64) -> u64 {
    (t - EPOCH) << 22
}
fn max_of(t: u64) -> u64 {
    ((t - EPOCH) << 22) | 4194303
}

#[test]
fn january_2024() {
    // The issue's evidence: 2024-01-01T00:00:00Z ..= 2024-02-01T00:00:00Z.
    let (from, to) = (1704067200000u64, 1706745600000u64);
    let out = ok(&[
        "range",
        "--from",
        "2024-01-01T00:00:00Z",
        "--to",
        "2024-02-01T00:00:00Z",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        json!({
            "from_ms": from,
            "to_ms": to,
            "min": min_of(from).to_string(),
            "max": max_of(to).to_string(),
        })
    );
    assert_eq!(out.lines().count(), 1);
    // The same span in Unix ms, and the human view.
    let human = ok(&[
        "range",
        "--from",
        &from.to_string(),
        "--to",
        &to.to_string(),
    ]);
    for words in [
        vec![
            "from".to_owned(),
            "2024-01-01T00:00:00.000Z".into(),
            format!("({from})"),
        ],
        vec![
            "to".to_owned(),
            "2024-02-01T00:00:00.000Z".into(),
            format!("({to})"),
        ],
        vec!["min".to_owned(), min_of(from).to_string()],
        vec!["max".to_owned(), max_of(to).to_string()],
        vec![
            "WHERE".to_owned(),
            "id".into(),
            "BETWEEN".into(),
            min_of(from).to_string(),
            "AND".into(),
            max_of(to).to_string(),
        ],
    ] {
        assert!(
            human
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == words),
            "{words:?} in {human}"
        );
    }
    // Every slot of every millisecond: (to - from + 1) ms of 2^22 IDs.
    let slots = (to - from + 1) << 22;
    assert!(
        human.lines().any(|l| l.starts_with("ID slots")
            && l.split_whitespace().nth(2) == Some(&slots.to_string())),
        "{slots} in {human}"
    );
}

#[test]
fn to_defaults_to_from() {
    let v: Value =
        serde_json::from_str(&ok(&["range", "--from", "1288834975657", "--json"])).unwrap();
    assert_eq!(v["from_ms"], v["to_ms"]);
    assert_eq!(v["min"], min_of(1288834975657).to_string());
    assert_eq!(v["max"], max_of(1288834975657).to_string());
    // `now` works and is one millisecond.
    let v: Value = serde_json::from_str(&ok(&["range", "--from", "now", "--json"])).unwrap();
    assert_eq!(v["from_ms"], v["to_ms"]);
}

#[test]
fn range_in_another_layout() {
    // Discord's epoch 1420070400000, Twitter's widths.
    let t = 1462015105796u64;
    let v: Value = serde_json::from_str(&ok(&[
        "range",
        "--from",
        &t.to_string(),
        "--layout",
        "discord",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["min"], ((t - 1420070400000) << 22).to_string());
}

#[test]
fn range_refusals_name_the_field() {
    let msg = bad(&[
        "range",
        "--from",
        "2024-02-01T00:00:00Z",
        "--to",
        "2024-01-01T00:00:00Z",
    ]);
    assert!(msg.starts_with("to must be at or after from"), "{msg}");
    let msg = bad(&["range", "--from", "yesterday"]);
    assert!(
        msg.starts_with("from must be Unix milliseconds or an ISO-8601 time"),
        "{msg}"
    );
    assert!(msg.ends_with(r#"got "yesterday""#), "{msg}");
    let msg = bad(&["range", "--from", "now", "--to", "2024-13-01T00:00:00Z"]);
    assert!(msg.starts_with("to must be"), "{msg}");
    let msg = bad(&["range", "--from", "1288834974656"]);
    assert!(msg.starts_with("from must be 1288834974657..="), "{msg}");
    assert!(msg.ends_with("before the epoch"), "{msg}");
    let msg = bad(&["range", "--from", "now", "--to", "3487858230209"]);
    assert!(msg.starts_with("to must be"), "{msg}");
    let msg = bad(&["range", "--to", "now"]);
    assert!(msg.contains("--from"), "{msg}");
    let msg = bad(&["range", "--from", "now", "--layout", "flickr"]);
    assert!(
        msg.contains("twitter, discord, instagram, sonyflake, mastodon"),
        "{msg}"
    );
}

#[test]
fn decode_stdin_as_ndjson() {
    // The issue's evidence.
    let r = run_stdin(
        &["decode", "-", "--json"],
        "4194439168\n175928847299117063\n",
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stderr, "");
    let objects: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["id"], "4194439168");
    assert_eq!(objects[0]["timestamp_ms"], 1288834975657u64);
    assert_eq!(objects[1]["id"], "175928847299117063");
    // Each object is the one `decode ID --json` prints.
    assert_eq!(
        objects[1],
        serde_json::from_str::<Value>(&ok(&["decode", "175928847299117063", "--json"])).unwrap()
    );
}

#[test]
fn decode_stdin_skips_blank_lines_and_applies_the_flags() {
    // Discord's documented 175928847299117063 in hex, with a blank line,
    // spaces and a CRLF; read in Discord's layout: worker 1, process 0,
    // increment 7.
    let hex = format!("{:016x}", 175928847299117063u64);
    let input = format!("\n  00000000fa021000 \r\n\n{hex}\n");
    let r = run_stdin(
        &[
            "decode", "-", "--from", "hex", "--layout", "discord", "--json",
        ],
        &input,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let objects: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2, "{}", r.stdout);
    assert_eq!(objects[0]["id"], "4194439168");
    assert_eq!(objects[1]["timestamp_ms"], 1462015105796u64);
    assert_eq!(
        (
            &objects[1]["datacenter"],
            &objects[1]["worker"],
            &objects[1]["sequence"]
        ),
        (&json!(1), &json!(0), &json!(7))
    );
}

#[test]
fn decode_stdin_table() {
    let r = run_stdin(&["decode", "-"], "4194439168\n9223372036854775807\n");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rows: Vec<Vec<&str>> = r
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["id", "time", "datacenter", "worker", "sequence"],
            vec!["4194439168", "2010-11-04T01:42:55.657Z", "1", "1", "0"],
            vec![
                "9223372036854775807",
                "2080-07-10T17:30:30.208Z",
                "31",
                "31",
                "4095"
            ],
        ]
    );
    // Columns line up: every row is as wide as the widest possible.
    let starts: Vec<usize> = r
        .stdout
        .lines()
        .map(|l| {
            l.find("2010")
                .or(l.find("2080"))
                .or(l.find("time"))
                .unwrap()
        })
        .collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{}", r.stdout);
    // The layout's own names head its columns, in bit order.
    let r = run_stdin(&["decode", "-", "--layout", "sonyflake"], "4194439168\n");
    let head: Vec<&str> = r
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(head, ["id", "time", "sequence", "machine"]);
    // Nothing in, nothing out.
    let r = run_stdin(&["decode", "-"], "\n\n");
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (Some(0), "", "")
    );
}

#[test]
fn decode_stdin_stops_at_a_bad_line() {
    let r = run_stdin(
        &["decode", "-", "--json"],
        "4194439168\nabc\n175928847299117063\n",
    );
    assert_eq!(r.code, Some(2));
    // The first line's object stays printed; nothing after the bad line.
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(r.stdout.contains(r#""id":"4194439168""#));
    assert_eq!(
        r.stderr,
        "error: line 2: id must be a decimal integer 0..=9223372036854775807, got \"abc\"\n"
    );
    // Blank lines count: this is line 3.
    let r = run_stdin(&["decode", "-"], "4194439168\n\n9223372036854775808\n");
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.starts_with("error: line 3: id must be 0..=9223372036854775807, got 9223372036854775808: the sign bit is set"),
        "{}",
        r.stderr
    );
    let r = run_stdin(&["decode", "-", "--from", "hex"], "zz\n");
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .starts_with("error: line 1: id must be hexadecimal"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stdout, "");
}

/// Each ID is printed as soon as its line arrives, not when stdin ends.
#[test]
fn decode_stdin_streams() {
    let mut child = spawn_piped(&["decode", "-", "--json"]);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // Lines arrive through a channel, so a run that holds its output back
    // fails at the timeout instead of hanging the test.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    for id in ["4194439168", "175928847299117063"] {
        writeln!(stdin, "{id}").unwrap();
        stdin.flush().unwrap();
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the ID's line before stdin ends");
        assert!(line.contains(&format!(r#""id":"{id}""#)), "{line}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// A reader that goes away ends the run quietly, like the other commands.
#[test]
fn decode_stdin_into_a_closed_pipe() {
    let mut child = spawn_piped(&["decode", "-", "--json"]);
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // Keep writing until the child has gone (its stdin closes with it).
    let writer = std::thread::spawn(move || {
        for _ in 0..200_000 {
            if stdin.write_all(b"4194439168\n").is_err() {
                break;
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
