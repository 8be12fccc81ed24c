//! `snowmint serve --etcd` as real processes against a real etcd: two
//! instances lease distinct identities; SIGTERM frees one at once; SIGKILL
//! leaves one held until its lease expires, and the instance that takes it
//! over issues only above what the killed one issued; `--datacenter N`
//! leases only workers of datacenter N, and `/readyz` says when all 32 are
//! held; an identity whose mark stands far ahead is taken last, and
//! `/readyz` says why it cannot issue.
//!
//! Skipped with a printed reason when the `etcd` binary is missing, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

use snowmint_testkit::etcd::EtcdServer;

use crate::support::{Response, Serve, Signal};

/// `snowmint serve` with a 2 s lease of one of datacenter 0's workers from
/// the etcd at `url`, under `prefix`.
fn serve_etcd(url: &str, prefix: &str) -> Serve {
    serve_scoped(url, prefix, "0")
}

/// Takes workers 2..=31 of datacenter 0 under `prefix` away: claims pick a
/// free identity at random, and the tests below need to know which is free.
fn leave_two_free(url: &str, prefix: &str) {
    snowmint_testkit::etcd::hold_keys(
        url,
        (2..32).map(|w| format!("{prefix}/identities/0/{w}")),
        600,
    );
}

/// Sends `signal` and waits for the process to exit.
fn stop(server: &mut Serve, signal: Signal) {
    server.signal(signal);
    server.wait_exit(Duration::from_secs(30));
}

fn etcdctl_get(etcd: &str, key: &str) -> String {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", etcd, "get", key, "--print-value-only"])
        .output()
        .expect("etcdctl");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn serve_leases_frees_on_sigterm_and_is_taken_over_after_sigkill() {
    let Some(mut etcd) = EtcdServer::start() else {
        return;
    };
    if Command::new("etcdctl").arg("version").output().is_err() {
        snowmint_testkit::skip::<()>(
            "the `etcdctl` binary is not installed (apt-get install etcd-client)",
        );
        return;
    }
    let url = etcd.url();
    leave_two_free(&url, "/cli");
    let mut a = serve_etcd(&url, "/cli");
    let a_identity = a.wait_ready();
    let mut b = serve_etcd(&url, "/cli");
    let b_identity = b.wait_ready();
    let mut two = [a_identity, b_identity];
    two.sort_unstable();
    assert_eq!(two, [(0, 0), (0, 1)], "the two free identities");
    let (a_w, b_w) = (a_identity.1, b_identity.1);
    // Who holds worker `w` (empty: nobody), and its mark.
    let holder = |w: u64| etcdctl_get(&url, &format!("/cli/identities/0/{w}"));
    let mark_of = |w: u64| -> u64 {
        etcdctl_get(&url, &format!("/cli/reserved/0/{w}"))
            .parse()
            .unwrap()
    };
    let mut issued: Vec<u64> = Vec::new();
    for _ in 0..20 {
        issued.extend(a.mint(100));
        issued.extend(b.mint(100));
    }

    // etcd frozen: within the TTL both answer 503 to mints and /readyz, in
    // the contract's error shape; when it thaws they are ready again, each
    // with its old identity (a re-claim tries that one first).
    etcd.freeze();
    let start = Instant::now();
    while a.http("GET", "/readyz").status != 503 || b.http("GET", "/readyz").status != 503 {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "not fenced within the 2 s TTL"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let refused = a.http("POST", "/api/v1/ids?count=1");
    let body = &refused.body;
    assert_eq!(refused.status, 503, "{body}");
    let error = refused.json();
    assert!(
        error["error"].as_str().unwrap().contains("identity"),
        "{body}"
    );
    assert!(error["field"].is_null(), "{body}");
    etcd.thaw();
    assert_eq!(a.wait_ready(), a_identity);
    assert_eq!(b.wait_ready(), b_identity);
    for _ in 0..5 {
        issued.extend(a.mint(100));
        issued.extend(b.mint(100));
    }
    let a_max = *issued
        .iter()
        .filter(|id| (*id >> 12) & 0x3ff == a_w)
        .max()
        .unwrap();

    let b_last_ms = issued
        .iter()
        .filter(|id| (*id >> 12) & 0x3ff == b_w)
        .map(|&id| snowmint::SnowflakeId::new(id).unwrap().timestamp_ms())
        .max()
        .unwrap();
    let b_mark = mark_of(b_w);

    // SIGTERM: graceful; the lease is revoked before the process exits.
    stop(&mut b, Signal::TERM);
    assert_eq!(holder(b_w), "", "b's identity is free at once");
    // The mark in etcd is not lowered at shutdown (its writes only raise
    // it: see EtcdStore), so it stays a window ahead of b's last ID.
    let kept = mark_of(b_w);
    assert!(kept >= b_mark, "lowered from {b_mark} to {kept}");
    assert!(
        kept > b_last_ms,
        "{kept} is not above b's last ID's ms {b_last_ms}"
    );

    // SIGKILL: a's identity stays held until its lease expires.
    stop(&mut a, Signal::KILL);
    assert_ne!(holder(a_w), "", "a's lease outlives it");
    let mark = mark_of(a_w);
    assert!(mark >= snowmint::SnowflakeId::new(a_max).unwrap().timestamp_ms());

    // A newcomer gets b's (released) at once, and a's after a's lease
    // expires (and one TTL more before it issues: a did not release it).
    let c = serve_etcd(&url, "/cli");
    assert_eq!(c.wait_ready(), b_identity);
    let start = Instant::now();
    while !holder(a_w).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "a's lease never expired"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let d = serve_etcd(&url, "/cli");
    assert_eq!(
        d.wait_ready(),
        a_identity,
        "d takes over the killed instance's identity"
    );
    let d_ids = d.mint(500);
    assert!(
        d_ids[0] > a_max,
        "d issued {} at or below a's {a_max}",
        d_ids[0]
    );
    issued.extend(d_ids);
    issued.extend(c.mint(500));
    let unique: HashSet<_> = issued.iter().collect();
    assert_eq!(unique.len(), issued.len(), "a duplicate across instances");
}

#[test]
fn serve_mints_from_an_etcd_that_wants_client_certificates() {
    let pki = snowmint_testkit::pki::Pki::new();
    let Some(etcd) = EtcdServer::start_tls(&pki) else {
        return;
    };
    let url = etcd.url();
    assert!(url.starts_with("https://"), "{url}");
    let file = |p: std::path::PathBuf| p.to_str().expect("a UTF-8 path").to_owned();
    let (ca, cert, key) = (
        file(pki.ca()),
        file(pki.client_cert()),
        file(pki.client_key()),
    );
    let server = Serve::start(
        &[
            "--lease-ttl",
            "2",
            "--etcd",
            &url,
            "--etcd-prefix",
            "/tls",
            "--etcd-ca",
            &ca,
            "--etcd-cert",
            &cert,
            "--etcd-key",
            &key,
        ],
        None,
    );
    server.wait_ready();
    let ids = server.mint(1000);
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a duplicate");

    // https:// without the CA, or the CA with http://: refused at start.
    let refused = crate::support::bad(&["serve", "--listen", "127.0.0.1:0", "--etcd", &url]);
    assert_eq!(
        refused,
        format!(
            "etcd-ca is needed for https:// endpoints (the CA etcd's certificate chains to), \
             got etcd {url} without it"
        )
    );
    let plain = url.replacen("https://", "http://", 1);
    let refused = crate::support::bad(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--etcd",
        &plain,
        "--etcd-ca",
        &ca,
    ]);
    assert_eq!(
        refused,
        format!("etcd must be https:// URLs when etcd-ca is set, got {plain}")
    );
}

fn etcdctl(etcd: &str, args: &[&str]) -> String {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", etcd])
        .args(args)
        .output()
        .expect("etcdctl");
    assert!(out.status.success(), "etcdctl {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `server`'s `/readyz` answer once its body holds `words`, or the one
/// after 20 s.
fn readyz_saying(server: &Serve, words: &str) -> Response {
    let start = Instant::now();
    loop {
        let readyz = server.http("GET", "/readyz");
        if readyz.body.contains(words) || start.elapsed() > Duration::from_secs(20) {
            return readyz;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A single etcd for one test, if it and `etcdctl` are installed (else a
/// printed skip, or a failure under SNOWMINT_REQUIRE_SERVICES=1).
fn etcd_and_etcdctl() -> Option<EtcdServer> {
    let etcd = EtcdServer::start()?;
    if Command::new("etcdctl").arg("version").output().is_err() {
        return snowmint_testkit::skip(
            "the `etcdctl` binary is not installed (apt-get install etcd-client)",
        );
    }
    Some(etcd)
}

/// `snowmint serve` with a 2 s lease of a worker of datacenter `dc` from
/// the etcd at `url`, under `prefix`.
fn serve_scoped(url: &str, prefix: &str, dc: &str) -> Serve {
    Serve::start(
        &[
            "--lease-ttl",
            "2",
            "--etcd",
            url,
            "--etcd-prefix",
            prefix,
            "--datacenter",
            dc,
        ],
        None,
    )
}

#[test]
fn serve_with_a_datacenter_leases_only_its_workers_and_says_when_they_are_all_held() {
    let Some(etcd) = etcd_and_etcdctl() else {
        return;
    };
    let url = etcd.url();
    let scoped = |dc: &str| serve_scoped(&url, "/dc", dc);
    let five = scoped("5");
    assert_eq!(five.wait_ready().0, 5, "leases a worker of datacenter 5");
    assert!(five.mint(100).iter().all(|id| (id >> 17) & 31 == 5));

    // Every other worker of datacenter 5 held by someone else: the next
    // instance there answers 503 naming datacenter 5, and waits.
    let lease = etcdctl(&url, &["lease", "grant", "60"]);
    let lease = lease
        .split_whitespace()
        .nth(1)
        .expect("lease ID")
        .to_owned();
    let own = five.wait_ready().1.to_string();
    for worker in (0..32).map(|w: u64| w.to_string()).filter(|w| *w != own) {
        let key = format!("/dc/identities/5/{worker}");
        etcdctl(&url, &["put", "--lease", &lease, &key, "someone else"]);
    }
    let waiting = scoped("5");
    let readyz = readyz_saying(&waiting, "datacenter 5");
    assert_eq!(readyz.status, 503, "{}", readyz.body);
    assert_eq!(
        readyz.json()["error"],
        "not ready: all 32 worker identities of datacenter 5 are held by other instances; \
         this instance waits for one to be freed"
    );
    // Other datacenters are not full: one there is ready at once.
    let six = scoped("6");
    assert_eq!(six.wait_ready().0, 6);
    // A worker of datacenter 5 is freed: the waiting instance takes it.
    let freed = if own == "31" { "30" } else { "31" };
    etcdctl(&url, &["del", &format!("/dc/identities/5/{freed}")]);
    assert_eq!(waiting.wait_ready(), (5, freed.parse().unwrap()));
    let mut ids = five.mint(500);
    ids.extend(waiting.mint(500));
    ids.extend(six.mint(500));
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a duplicate");
}

/// A worker whose mark stands an hour ahead of the clock (a holder whose
/// clock ran fast leaves that) is taken only when no other worker of the
/// datacenter is free, and `/readyz` says why it cannot issue.
#[test]
fn an_identity_whose_mark_is_far_ahead_is_taken_last_and_readyz_says_why() {
    let Some(etcd) = etcd_and_etcdctl() else {
        return;
    };
    let url = etcd.url();
    let scoped = || serve_scoped(&url, "/ahead", "7");
    // Workers 0 and 1 of datacenter 7 free; worker 0's mark an hour ahead.
    snowmint_testkit::etcd::hold_keys(
        &url,
        (2..32).map(|w| format!("/ahead/identities/7/{w}")),
        600,
    );
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let mark = (now_ms + 3_600_000).to_string();
    etcdctl(&url, &["put", "/ahead/reserved/7/0", &mark]);

    let first = scoped();
    assert_eq!(
        first.wait_ready(),
        (7, 1),
        "the worker that can issue at once is taken first"
    );
    assert_eq!(first.mint(10).len(), 10);

    // Only worker 0 is left: taken, but it cannot issue for an hour.
    let second = scoped();
    let readyz = readyz_saying(&second, "was taken");
    assert_eq!(readyz.status, 503, "{}", readyz.body);
    let error = readyz.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.starts_with("not ready: ") && error.contains(" ms behind "),
        "says what the generator refuses: {error}"
    );
    let why = error
        .split_once(": worker 0 of datacenter 7 was taken although its mark stood ")
        .and_then(|(_, rest)| {
            rest.strip_suffix(
                " ms ahead of this clock, because no other worker of datacenter 7 was free; \
                 try again later",
            )
        });
    let ahead_ms: u64 = why
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("says why this identity was taken: {error}"));
    assert!(
        (3_500_000..=3_600_000).contains(&ahead_ms),
        "the mark stood an hour ahead, not {ahead_ms} ms: {error}"
    );
    let minted = second.http("POST", "/api/v1/ids?count=1");
    assert_eq!(minted.status, 503, "{}", minted.body);
}

#[test]
fn serve_refuses_a_worker_with_etcd_and_a_datacenter_out_of_range() {
    let etcd = "http://127.0.0.1:1";
    assert_eq!(
        crate::support::bad(&["serve", "--etcd", etcd, "--worker", "3"]),
        "worker cannot be set with --etcd, got --worker 3: the worker is leased \
         (--datacenter N leases only workers of datacenter N)"
    );
    assert_eq!(
        crate::support::bad(&["serve", "--etcd", etcd, "--datacenter", "32"]),
        "datacenter must be 0..=31, got 32"
    );
}
