//! The operator's surface of `serve`, judged by operators' tools: a real
//! Prometheus scraping it with the shipped alert rules, the log writer
//! when stderr stalls, and errors as JSON lines under `--log-format json`.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use snowmint_testkit::clock::{FakeClock, libfaketime};
use snowmint_testkit::prometheus::Prometheus;
use snowmint_testkit::serve::Output;

use crate::support::{Listen, Serve, Signal, http, snowmint};

/// How often Prometheus scrapes and evaluates in the test: short, so the
/// test is.
const INTERVAL: Duration = Duration::from_secs(1);

/// A real Prometheus (Debian's) scrapes a running `serve` with
/// deploy/prometheus/alerts.yml loaded. The instance restarts with its
/// clock (libfaketime) an hour behind the IDs it issued (a machine that
/// came back with a wrong clock): readiness is lost and a mint is refused;
/// the alert for mints refused because of the clock fires, and those for
/// readiness and for the clock behind the issued IDs are pending (their
/// `for` not yet over). Prometheus reads the OpenMetrics exposition
/// without error. (A running instance never sees its clock go back: its
/// clock only moves forward; a restart is where a step back bites.)
#[cfg(unix)]
#[test]
fn prometheus_fires_an_alert_when_the_clock_steps_behind_the_issued_ids() {
    let Some(library) = libfaketime() else {
        snowmint_testkit::skip::<()>("libfaketime is not installed (Debian: libfaketime)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut clock = FakeClock::new(library, dir.path().join("offset")).unwrap();
    let start = |listen: Listen, clock: &FakeClock| {
        Serve::spawn(
            Serve::builder()
                .listen(listen)
                .arg("--state-dir")
                .arg(dir.path().join("state"))
                .envs(clock.env()),
        )
    };
    let mut server = start(Listen::Ephemeral, &clock);
    server.wait_ready();
    server.mint(100);

    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus/alerts.yml");
    let Some(prometheus) = Prometheus::start(server.addr, &[&rules], INTERVAL) else {
        return;
    };
    // A scrape that succeeded (as OpenMetrics, which Prometheus asks for)
    // before the clock moves, so the counters have a sample before the
    // refusals.
    let limit = Duration::from_secs(60) + 20 * INTERVAL;
    until(&prometheus, limit, || {
        let targets = prometheus.targets();
        if let Some(target) = targets.first()
            && target["health"] == "up"
        {
            assert_eq!(target["lastError"], "", "{target}");
            return Ok(());
        }
        Err(format!("no successful scrape: {targets:?}"))
    });
    std::thread::sleep(2 * INTERVAL);

    // Stopped (the mark saved), started again on the same address with
    // the clock an hour back.
    server.stop_and_read();
    clock.set_offset_ms(-3_600_000).unwrap();
    let server = start(Listen::Fixed(server.addr), &clock);
    let ready = http(server.addr, "GET", "/readyz");
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert!(ready.body.contains("behind"), "{}", ready.body);
    let refused = http(server.addr, "POST", "/api/v1/ids?count=1");
    assert_eq!(refused.status, 503, "{}", refused.body);

    let state_of = |alerts: &[serde_json::Value], name: &str| {
        alerts
            .iter()
            .find(|a| a["labels"]["alertname"] == name)
            .and_then(|a| a["state"].as_str().map(str::to_owned))
    };
    until(&prometheus, limit, || {
        let alerts = prometheus.alerts();
        let refusing = state_of(&alerts, "SnowmintClockBehindRefusingMints");
        let not_ready = state_of(&alerts, "SnowmintNotReady");
        let behind = state_of(&alerts, "SnowmintClockBehindIssuedIds");
        if refusing.as_deref() == Some("firing") && not_ready.is_some() && behind.is_some() {
            // Their `for` (2 min, 1 min) is far from over.
            assert_eq!(not_ready.as_deref(), Some("pending"), "{alerts:?}");
            assert_eq!(behind.as_deref(), Some("pending"), "{alerts:?}");
            let firing = alerts
                .iter()
                .find(|a| a["labels"]["alertname"] == "SnowmintClockBehindRefusingMints")
                .unwrap();
            assert_eq!(firing["labels"]["severity"], "critical", "{firing}");
            assert_eq!(
                firing["annotations"]["summary"],
                format!(
                    "snowmint {} refuses mints because its clock is behind the IDs already issued",
                    server.addr
                ),
                "{firing}"
            );
            return Ok(());
        }
        Err(format!(
            "the alert did not fire within {limit:?}: {alerts:?}"
        ))
    });
}

/// Calls `probe` every quarter interval until it returns `Ok`; past
/// `limit`, fails the test with its last `Err` and Prometheus's log.
fn until(prometheus: &Prometheus, limit: Duration, mut probe: impl FnMut() -> Result<(), String>) {
    let started = Instant::now();
    while let Err(why) = probe() {
        assert!(started.elapsed() < limit, "{why}\n{}", prometheus.log());
        std::thread::sleep(INTERVAL / 4);
    }
}

/// When nobody reads stderr (a stalled log pipeline), requests go on being
/// answered: the access log is written by a thread of its own, and lines
/// that do not fit its queue are dropped and counted in
/// `snowmint_log_lines_dropped_total`, not waited for. A blocking write
/// per request would hang once the pipe (64 KiB) is full.
#[cfg(unix)]
#[test]
fn a_stalled_stderr_costs_log_lines_not_requests() {
    let dir = tempfile::tempdir().unwrap();
    // Its stderr is read up to the address line, then handed over.
    let mut server = Serve::spawn(
        Serve::builder()
            .output(Output::Pipe)
            .args(["--log-buffer-lines", "50"])
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .env("RUST_LOG", "info"),
    );
    let addr = server.addr;
    let mut stderr = server
        .take_stderr()
        .expect("stderr, after the address line");
    // From here on stderr is not read. Each request is one access-log line
    // (about 130 bytes): the pipe fills after some 500, the queue after 50
    // more, and the rest are dropped.
    let requests = 2_000u64;
    for _ in 0..requests {
        assert_eq!(http(addr, "GET", "/healthz").status, 200);
    }
    let metrics = http(addr, "GET", "/metrics").body;
    let dropped: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("snowmint_log_lines_dropped_total "))
        .unwrap_or_else(|| panic!("no dropped-lines counter: {metrics}"))
        .parse()
        .unwrap();
    // At most the access lines and the few others written meanwhile.
    assert!((1..=requests + 10).contains(&dropped), "dropped {dropped}");

    // It still stops cleanly; what was queued is written once read.
    server.signal(Signal::TERM);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(
        server.wait_exit(Duration::from_secs(30)).success(),
        "{rest}"
    );
    assert!(rest.contains("snowmint::access"), "{rest}");
}

/// Under `--log-format json` an error that ends the run is a JSON line
/// too (with the exit status), not an `error:` line: here a second
/// instance on a state directory already in use.
#[cfg(unix)]
#[test]
fn a_fatal_error_under_json_logs_is_a_json_line() {
    let dir = tempfile::tempdir().unwrap();
    let first = Serve::start(&[], Some(dir.path()));
    first.wait_ready();
    let out = snowmint()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--state-dir",
        ])
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let last = lines.last().expect("a line");
    assert_eq!(last["level"], "ERROR", "{stderr}");
    assert_eq!(last["exit_status"], 1, "{stderr}");
    assert!(
        last["message"]
            .as_str()
            .unwrap()
            .contains("already minting"),
        "{stderr}"
    );
}
