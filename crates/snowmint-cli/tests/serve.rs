//! `snowmint serve` as a process: flags, a real socket, SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn snowmint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_snowmint"))
}

/// A minimal HTTP/1.1 exchange: status line and body.
fn http(addr: &str, method: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn bad_flags_exit_2_with_one_line() {
    for (args, expected) in [
        (
            &["--datacenter", "32"][..],
            "error: datacenter must be 0..=31, got 32",
        ),
        (&["--worker", "-1"], "error: worker must be 0..=31, got -1"),
        (
            &["--worker", "abc"],
            r#"error: worker must be a decimal integer 0..=31, got "abc""#,
        ),
    ] {
        let out = snowmint().arg("serve").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end(), expected, "{args:?}");
    }
}

#[cfg(not(feature = "etcd"))]
#[test]
fn etcd_without_the_feature_says_how_to_build_it() {
    let out = snowmint()
        .args(["serve", "--etcd", "http://127.0.0.1:2379"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--features etcd"), "{err}");
}

#[cfg(unix)]
#[test]
fn serves_and_persists_the_reservation_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = snowmint()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--datacenter",
            "3",
            "--worker",
            "4",
        ])
        .arg("--state-dir")
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();

    let (status, body) = http(&addr, "GET", "/readyz");
    assert!(status.contains("200"), "{status}");
    assert!(
        body.contains(r#""datacenter":3"#) && body.contains(r#""worker":4"#),
        "{body}"
    );
    let (status, body) = http(&addr, "POST", "/api/v1/ids?count=3");
    assert!(status.contains("200"), "{status} {body}");
    let ids: Vec<u64> = body.split('"').filter_map(|s| s.parse().ok()).collect();
    assert_eq!(ids.len(), 3, "{body}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful shutdown exits 0: {status}");
    let mark = std::fs::read_to_string(dir.path().join("snowmint-3-4.reservation")).unwrap();
    let last_ms = snowmint::SnowflakeId::new(*ids.last().unwrap())
        .unwrap()
        .timestamp_ms();
    let kept: u64 = mark
        .trim()
        .trim_start_matches("reserved_until_ms=")
        .parse()
        .unwrap();
    assert!(
        kept >= last_ms,
        "the mark {kept} covers the last ID's ms {last_ms}"
    );
}
