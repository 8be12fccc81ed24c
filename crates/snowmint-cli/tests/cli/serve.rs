//! `snowmint serve` as a process: flags, a real socket, SIGTERM.

use std::time::{Duration, Instant};

use crate::support::{MINT_BOUND, NOT_HELD_UP, Serve, Signal, bad_serve, http, snowmint};

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

/// `--etcd` given at all is etcd mode: with no URL, or an empty one (a
/// template variable that came out empty), it is refused, never served as
/// the static identity (which a fleet of replicas would all mint as).
#[test]
fn an_etcd_without_a_url_is_refused_not_served_as_static_mode() {
    let refusal = |got: &str| {
        if cfg!(feature = "etcd") {
            format!("etcd must be one or more URLs separated by commas, got {got:?}")
        } else {
            "--etcd needs a snowmint built with `--features etcd` \
             (cargo run --release --features etcd -- serve --etcd URL)"
                .to_owned()
        }
    };
    for (args, env, got) in [
        (&["--datacenter", "5"][..], &[("SNOWMINT_ETCD", "")][..], ""),
        (&["--etcd", ""], &[], ""),
        (&["--etcd", ","], &[], ","),
        (
            &["--etcd", "http://127.0.0.1:1,"],
            &[],
            "http://127.0.0.1:1,",
        ),
        (
            &["--etcd", "http://127.0.0.1:1", "--etcd", ""],
            &[],
            "http://127.0.0.1:1,",
        ),
    ] {
        assert_eq!(bad_serve(args, env), refusal(got), "{args:?} {env:?}");
    }
}

/// A flag the identity source cannot honour is refused, named as the user
/// gave it (on the command line or in the environment, even at its default
/// value), never dropped.
#[test]
fn a_flag_the_identity_source_cannot_honour_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().to_str().unwrap();
    let etcd = "http://127.0.0.1:1";
    let hostname = "the identity is the hostname's ordinal (datacenter N / 32, worker N % 32)";
    let leased_mark =
        "a leased identity keeps its mark in the coordinator, not in a state directory";
    for (args, env, expected) in [
        // Settings of the etcd lease without --etcd.
        (
            &["--lease-ttl", "5"][..],
            &[][..],
            "lease-ttl needs --etcd, --postgres, --mysql or --redis (the TTL of the identity lease), got --lease-ttl 5 without it"
                .to_owned(),
        ),
        (
            &[],
            &[("SNOWMINT_LEASE_TTL", "10")],
            "lease-ttl needs --etcd, --postgres, --mysql or --redis (the TTL of the identity lease), got SNOWMINT_LEASE_TTL=10 \
             without it"
                .to_owned(),
        ),
        (
            &["--etcd-prefix", "/a"],
            &[],
            "etcd-prefix needs --etcd (the key prefix of the identities in etcd), \
             got --etcd-prefix /a without it"
                .to_owned(),
        ),
        (
            &["--datacenter", "3"],
            &[("SNOWMINT_ETCD_PREFIX", "/snowmint")],
            "etcd-prefix needs --etcd (the key prefix of the identities in etcd), \
             got SNOWMINT_ETCD_PREFIX=/snowmint without it"
                .to_owned(),
        ),
        (
            &[
                "--etcd-cert",
                "/tls/client.pem",
                "--etcd-key",
                "/tls/client-key.pem",
            ],
            &[],
            "etcd-cert needs --etcd (TLS to etcd), got --etcd-cert /tls/client.pem without it"
                .to_owned(),
        ),
        (
            &[],
            &[("SNOWMINT_ETCD_CA", "/tls/ca.pem")],
            "etcd-ca needs --etcd (TLS to etcd), got SNOWMINT_ETCD_CA=/tls/ca.pem without it"
                .to_owned(),
        ),
        (
            &[
                "--worker-from-hostname",
                "--state-dir",
                state,
                "--lease-ttl",
                "5",
            ],
            &[],
            "lease-ttl needs --etcd, --postgres, --mysql or --redis (the TTL of the identity lease), got --lease-ttl 5 without it"
                .to_owned(),
        ),
        // Settings of the static identity with --etcd.
        (
            &["--etcd", etcd, "--state-dir", state],
            &[],
            format!("state-dir cannot be set with --etcd, got --state-dir {state}: {leased_mark}"),
        ),
        (
            &["--etcd", etcd],
            &[("SNOWMINT_STATE_DIR", state)],
            format!(
                "state-dir cannot be set with --etcd, got SNOWMINT_STATE_DIR={state}: {leased_mark}"
            ),
        ),
        (
            &[],
            &[("SNOWMINT_ETCD", etcd), ("SNOWMINT_WORKER", "3")],
            "worker cannot be set with --etcd, got SNOWMINT_WORKER=3: the worker is leased \
             (--datacenter N leases only workers of datacenter N)"
                .to_owned(),
        ),
        // One coordinator; the database's flags only with a database.
        (
            &["--etcd", etcd, "--postgres", "postgres://db/ids"],
            &[],
            "postgres cannot be set with --etcd, got --postgres postgres://db/ids: the identity \
             is leased from one coordinator"
                .to_owned(),
        ),
        (
            &["--postgres", "postgres://db/ids"],
            &[("SNOWMINT_MYSQL", "mysql://db/ids")],
            "mysql cannot be set with --postgres, got SNOWMINT_MYSQL=mysql://db/ids: the \
             identity is leased from one coordinator"
                .to_owned(),
        ),
        (
            &["--db-table", "ids"],
            &[],
            "db-table needs --postgres or --mysql (the table of the identities), got \
             --db-table ids without it"
                .to_owned(),
        ),
        (
            &["--allow-lost-commits"],
            &[],
            "allow-lost-commits needs --postgres or --mysql (a database's durability), got \
             --allow-lost-commits without it"
                .to_owned(),
        ),
        (
            &["--etcd", etcd],
            &[("SNOWMINT_ALLOW_LOST_COMMITS", "true")],
            "allow-lost-commits needs --postgres or --mysql (a database's durability), got \
             SNOWMINT_ALLOW_LOST_COMMITS=true without it"
                .to_owned(),
        ),
        (
            &["--etcd", etcd, "--db-table", "ids"],
            &[],
            "db-table needs --postgres or --mysql (the table of the identities), got \
             --db-table ids without it"
                .to_owned(),
        ),
        (
            &["--mysql", "mysql://db/ids", "--etcd-prefix", "/a"],
            &[],
            "etcd-prefix needs --etcd (the key prefix of the identities in etcd), got \
             --etcd-prefix /a without it"
                .to_owned(),
        ),
        (
            &["--mysql", "mysql://db/ids", "--worker", "3"],
            &[],
            "worker cannot be set with --mysql, got --worker 3: the worker is leased \
             (--datacenter N leases only workers of datacenter N)"
                .to_owned(),
        ),
        (
            &["--postgres", "postgres://db/ids", "--db-table", "a-b"],
            &[],
            "db-table must be NAME or SCHEMA.NAME, each of letters, digits and _ (not first a \
             digit), 1..=63 characters, got \"a-b\""
                .to_owned(),
        ),
        (
            &["--postgres", ""],
            &[],
            "postgres must be a URL, got \"\"".to_owned(),
        ),
        (
            &["--mysql", "mysql://u:s3cret@db/ids?bogus=1"],
            &[],
            "mysql is not a MySQL URL (Unknown connection URL parameter `bogus'), got \
             mysql://u:***@db/ids?bogus=1"
                .to_owned(),
        ),
        (
            &["--worker-from-hostname", "--postgres", "postgres://db/ids"],
            &[],
            "postgres cannot be set with --worker-from-hostname, got --postgres \
             postgres://db/ids: the identity comes from the hostname or from a coordinator, \
             not both"
                .to_owned(),
        ),
        // The hostname's ordinal is the whole identity.
        (
            &["--worker-from-hostname", "--etcd", etcd],
            &[],
            format!(
                "etcd cannot be set with --worker-from-hostname, got --etcd {etcd}: \
                 the identity comes from the hostname or from a coordinator, not both"
            ),
        ),
        (
            &["--datacenter", "1"],
            &[("SNOWMINT_WORKER_FROM_HOSTNAME", "true")],
            format!(
                "datacenter cannot be set with --worker-from-hostname, got --datacenter 1: \
                 {hostname}"
            ),
        ),
        // An empty origin is not "no origin".
        (
            &["--state-dir", state, "--cors-origin", ""],
            &[],
            "cors-origin must be an origin like https://app.example.com or \
             http://127.0.0.1:8080 (scheme, host and optional port; no path), got \"\""
                .to_owned(),
        ),
        (
            &["--state-dir", state],
            &[("SNOWMINT_CORS_ORIGIN", "https://app.example,")],
            "cors-origin must be an origin like https://app.example.com or \
             http://127.0.0.1:8080 (scheme, host and optional port; no path), got \"\""
                .to_owned(),
        ),
    ] {
        assert_eq!(bad_serve(args, env), expected, "{args:?} {env:?}");
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
    let mut server = Serve::start(&["--datacenter", "3", "--worker", "4"], Some(dir.path()));

    let ready = server.http("GET", "/readyz");
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert!(
        ready.body.contains(r#""datacenter":3"#) && ready.body.contains(r#""worker":4"#),
        "{}",
        ready.body
    );
    let ids = server.mint(3);

    server.signal(Signal::TERM);
    let status = server.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "graceful shutdown exits 0: {status}");
    let mark = std::fs::read_to_string(dir.path().join("snowmint-3-4.reservation")).unwrap();
    let last_ms = snowmint::SnowflakeId::new(*ids.last().unwrap())
        .unwrap()
        .timestamp_ms();
    // While serving the mark is a window ahead of the IDs; at shutdown it
    // is lowered to the last one's millisecond (and not raised again).
    assert_eq!(mark, format!("reserved_until_ms={last_ms}\n"));
}

/// The machine restarts with its clock an hour behind the reservation mark
/// (an hour-long NTP step back after a crash): mints must fail within the
/// wait bound, readiness must say so, and health must not wait for either.
#[cfg(unix)]
#[test]
fn a_clock_an_hour_behind_the_mark_fails_mints_fast_and_keeps_health_fast() {
    let dir = tempfile::tempdir().unwrap();
    let now = snowmint::unix_now_ms();
    std::fs::write(
        dir.path().join("snowmint-0-0.reservation"),
        format!("reserved_until_ms={}\n", now + 3_600_000),
    )
    .unwrap();
    let mut server = Serve::start(&[], Some(dir.path()));
    let addr = server.addr;

    let ready = http(addr, "GET", "/readyz");
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert!(
        ready.body.contains("ms behind the IDs already issued"),
        "{}",
        ready.body
    );

    let minting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mints: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let started = Instant::now();
                let response = http(addr, "POST", "/api/v1/ids?count=4096");
                (response, started.elapsed())
            })
        })
        .collect();
    let health = {
        let minting = minting.clone();
        std::thread::spawn(move || {
            let mut slowest = Duration::ZERO;
            let mut probes = 0;
            while probes < 20 || minting.load(std::sync::atomic::Ordering::SeqCst) {
                let started = Instant::now();
                let health = http(addr, "GET", "/healthz");
                assert_eq!(health.status, 200, "{}", health.body);
                slowest = slowest.max(started.elapsed());
                probes += 1;
            }
            slowest
        })
    };
    for mint in mints {
        let (response, took) = mint.join().unwrap();
        assert_eq!(response.status, 503, "{}", response.body);
        assert!(
            response.body.contains("ms behind the IDs already issued"),
            "{}",
            response.body
        );
        assert!(took < MINT_BOUND, "a mint took {took:?}");
    }
    minting.store(false, std::sync::atomic::Ordering::SeqCst);
    let slowest = health.join().unwrap();
    eprintln!("slowest /healthz beside the waiting mints: {slowest:?}");
    assert!(slowest < NOT_HELD_UP, "/healthz took {slowest:?}");
    assert_eq!(http(addr, "GET", "/readyz").status, 503);

    server.signal(Signal::TERM);
    assert!(server.wait_exit(Duration::from_secs(20)).success());
    // Nothing was issued, so the mark stays where it was.
    let kept = std::fs::read_to_string(dir.path().join("snowmint-0-0.reservation")).unwrap();
    assert_eq!(kept, format!("reserved_until_ms={}\n", now + 3_600_000));
}
