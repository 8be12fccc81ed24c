//! `snowmint next`, run as a user runs it.

use snowmint::SnowflakeId;

use crate::support;

/// Runs `snowmint next ARGS`, which must succeed; returns the IDs printed.
fn next(args: &[&str]) -> Vec<SnowflakeId> {
    let mut all = vec!["next"];
    all.extend_from_slice(args);
    support::ok(&all)
        .lines()
        .map(|l| l.parse().unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

/// A run that must fail with `code`: nothing on stdout, one line on stderr.
/// Returns the message after `error: `.
fn refused(args: &[&str], code: i32) -> String {
    let mut all = vec!["next"];
    all.extend_from_slice(args);
    support::refused(&all, code)
}

#[test]
fn prints_count_ids_unique_and_increasing() {
    let ids = next(&["--count", "10000", "--datacenter", "3", "--worker", "17"]);
    assert_eq!(ids.len(), 10_000);
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing, so unique"
    );
    assert!(
        ids.iter()
            .all(|id| (id.datacenter(), id.worker()) == (3, 17))
    );
}

#[test]
fn defaults_to_one_id_of_identity_0_0() {
    let ids = next(&[]);
    assert_eq!(ids.len(), 1);
    assert_eq!((ids[0].datacenter(), ids[0].worker()), (0, 0));
    let now = snowmint::unix_now_ms();
    assert!(ids[0].timestamp_ms().abs_diff(now) < 60_000, "minted now");
}

#[test]
fn bad_input_names_the_field_and_range() {
    assert_eq!(
        refused(&["--count", "0"], 2),
        "count must be 1..=1000000000, got 0"
    );
    assert_eq!(
        refused(&["--count", "-5"], 2),
        "count must be 1..=1000000000, got -5"
    );
    assert_eq!(
        refused(&["--count", "many"], 2),
        r#"count must be a decimal integer 1..=1000000000, got "many""#
    );
    assert_eq!(
        refused(&["--count", "2", "--datacenter", "32"], 2),
        "datacenter must be 0..=31, got 32"
    );
    assert_eq!(
        refused(&["--worker", "-1"], 2),
        "worker must be 0..=31, got -1"
    );
}

#[test]
fn a_state_dir_carries_the_reservation_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_arg = state.to_str().unwrap();
    let first = next(&["--count", "5000", "--worker", "4", "--state-dir", state_arg]);
    let file = state.join("snowmint-0-4.reservation");
    let text = std::fs::read_to_string(&file).unwrap();
    // On exit the mark is lowered to the last issued millisecond.
    assert_eq!(
        text,
        format!(
            "reserved_until_ms={}\n",
            first.last().unwrap().timestamp_ms()
        )
    );
    let second = next(&["--count", "5000", "--worker", "4", "--state-dir", state_arg]);
    assert!(second[0] > *first.last().unwrap());
    assert!(second[0].timestamp_ms() > first.last().unwrap().timestamp_ms());

    // A damaged state file stops the run: exit 1, the path in the message.
    std::fs::write(&file, "garbage").unwrap();
    let msg = refused(&["--worker", "4", "--state-dir", state_arg], 1);
    assert!(
        msg.starts_with("cannot start the generator: reservation file "),
        "{msg}"
    );
    assert!(msg.contains("snowmint-0-4.reservation is damaged"), "{msg}");
}

#[cfg(unix)]
#[test]
fn a_second_owner_of_an_identity_is_refused_and_no_id_repeats() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_arg = state.to_str().unwrap();
    let identity = [
        "--datacenter",
        "1",
        "--worker",
        "2",
        "--state-dir",
        state_arg,
    ];
    // A long run that holds the identity: nobody reads its output for now,
    // so it blocks on the full pipe, alive.
    let mut first = support::snowmint()
        .args(["next", "--count", "1000000000"])
        .args(identity)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(first.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let mut first_ids: Vec<SnowflakeId> = vec![line.trim().parse().unwrap()];

    // While it runs, a second `next` as the same identity is refused ...
    let mut args = vec!["--count", "10"];
    args.extend(identity);
    let msg = refused(&args, 1);
    let lock = state.join("snowmint-1-2.lock");
    assert_eq!(
        msg,
        format!(
            "datacenter 1, worker 2 is already minting from {state_arg} (another process \
             holds {}); stop it, or give this one another identity or state directory",
            lock.display()
        )
    );
    // ... and so is `serve`: exit 1, one line, nothing on stdout.
    let served = support::snowmint()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(identity)
        .output()
        .unwrap();
    assert_eq!(served.status.code(), Some(1));
    assert!(served.stdout.is_empty());
    let err = String::from_utf8(served.stderr).unwrap();
    assert_eq!(err, format!("error: {msg}\n"));
    // Another identity in the same directory is another owner.
    next(&["--count", "3", "--worker", "3", "--state-dir", state_arg]);

    // The holder crashes (no mark lowered on the way out); its printed IDs
    // are what it issued.
    first.kill().unwrap();
    first.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    // A line cut off by the kill is not an ID anyone received.
    let complete = rest.rfind('\n').map_or("", |end| &rest[..end]);
    first_ids.extend(complete.lines().map(|l| l.parse::<SnowflakeId>().unwrap()));
    assert!(first_ids.len() > 1000, "{}", first_ids.len());

    // The identity is free again, and the next owner issues above all of it.
    let mut args = vec!["--count", "5000"];
    args.extend(identity);
    let second = next(&args);
    let newest = first_ids.iter().max().unwrap();
    assert!(second[0] > *newest, "{} <= {newest}", second[0]);
}
