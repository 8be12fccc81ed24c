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
        (
            &["--header-timeout", "0"],
            "error: header-timeout must be 1..=3600 (seconds), got 0",
        ),
        (
            &["--shutdown-timeout", "-1"],
            "error: shutdown-timeout must be 0..=3600 (seconds), got -1",
        ),
        (
            &["--idle-timeout", "99999999"],
            "error: idle-timeout must be 1..=86400 (seconds), got 99999999",
        ),
        (
            &["--max-connections", "abc"],
            r#"error: max-connections must be a whole number 1..=1000000 (connections), got "abc""#,
        ),
        (
            &["--client-quota", "0"],
            "error: client-quota must be 1..=4294967295 (IDs per second), got 0",
        ),
        (
            &["--lease-ttl", "1"],
            "error: lease-ttl must be 2..=3600 (seconds), got 1",
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
    let (mut child, addr) = start_serve(&["--datacenter", "3", "--worker", "4"], dir.path());

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

/// Starts `snowmint serve` on a free port with `args`; returns the child
/// and the address it printed.
fn start_serve(args: &[&str], state_dir: &std::path::Path) -> (std::process::Child, String) {
    let mut child = snowmint()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .arg("--state-dir")
        .arg(state_dir)
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
    // Keep draining stderr so logging never blocks the server.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, addr)
}

/// The machine restarts with its clock an hour behind the reservation mark
/// (an hour-long NTP step back after a crash): mints must fail within the
/// wait bound, readiness must say so, and health must not wait for either.
#[cfg(unix)]
#[test]
fn a_clock_an_hour_behind_the_mark_fails_mints_fast_and_keeps_health_fast() {
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    let dir = tempfile::tempdir().unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    std::fs::write(
        dir.path().join("snowmint-0-0.reservation"),
        format!("reserved_until_ms={}\n", now + 3_600_000),
    )
    .unwrap();
    let (mut child, addr) = start_serve(&[], dir.path());

    let (status, body) = http(&addr, "GET", "/readyz");
    assert!(status.contains("503"), "{status} {body}");
    assert!(body.contains("ms behind the IDs already issued"), "{body}");

    let minting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mints: Vec<_> = (0..8)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let (status, body) = http(&addr, "POST", "/api/v1/ids?count=4096");
                (status, body, started.elapsed())
            })
        })
        .collect();
    let health = {
        let (addr, minting) = (addr.clone(), minting.clone());
        std::thread::spawn(move || {
            let mut slowest = Duration::ZERO;
            let mut probes = 0;
            while probes < 20 || minting.load(std::sync::atomic::Ordering::SeqCst) {
                let started = Instant::now();
                let (status, _) = http(&addr, "GET", "/healthz");
                assert!(status.contains("200"), "{status}");
                slowest = slowest.max(started.elapsed());
                probes += 1;
            }
            slowest
        })
    };
    for mint in mints {
        let (status, body, took) = mint.join().unwrap();
        assert!(status.contains("503"), "{status} {body}");
        assert!(body.contains("ms behind the IDs already issued"), "{body}");
        // The generator's wait bound is 1 s.
        assert!(took < Duration::from_millis(1500), "a mint took {took:?}");
    }
    minting.store(false, std::sync::atomic::Ordering::SeqCst);
    let slowest = health.join().unwrap();
    assert!(
        slowest < Duration::from_millis(50),
        "/healthz took {slowest:?}"
    );
    let (status, _) = http(&addr, "GET", "/readyz");
    assert!(status.contains("503"), "{status}");

    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
    // Nothing was issued, so the mark stays where it was.
    let kept = std::fs::read_to_string(dir.path().join("snowmint-0-0.reservation")).unwrap();
    assert_eq!(kept, format!("reserved_until_ms={}\n", now + 3_600_000));
}
