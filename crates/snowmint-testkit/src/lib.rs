//! Real services for snowmint's tests, and the chaos harness built on them.
//!
//! Which piece to use:
//!
//! - [`etcd::EtcdServer`]: one etcd member for one test, on a loopback
//!   address of its own, killed when dropped.
//! - [`etcd::EtcdCluster`]: a three-member (or larger) etcd cluster with real
//!   Raft, whose members can be killed, paused and restarted.
//! - [`proxy::Proxy`]: a TCP proxy between an instance and etcd whose line can
//!   be cut (a partition) and restored.
//! - [`pki::Pki`]: a test CA with server and client certificates, as PEM
//!   files (HTTPS, and etcd over TLS: [`etcd::EtcdServer::start_tls`]).
//! - [`db::Postgres`], [`db::Mariadb`], [`db::Sqlite`]: a real database for
//!   one test, on a Unix socket in a temporary directory of its own, stopped
//!   when dropped; driven through its command-line client. For the SQL
//!   coordinators' tests PostgreSQL and MariaDB also listen on 127.0.0.1
//!   (`builder().tcp()`, a `url`), run under libfaketime (`.faketime()`),
//!   restart on their port and pause; [`db::Postgres::start_standby`] is a
//!   streaming hot standby and [`db::PgBouncer`] pools in transaction mode.
//! - [`clock::FakeClock`]: a process's wall clock under libfaketime, stepped
//!   back and forward while it runs.
//! - [`prometheus::Prometheus`]: Debian's Prometheus scraping one target
//!   with alerting rules loaded; [`prometheus::check_metrics`]: `promtool
//!   check metrics` on an exposition.
//! - [`serve::Builder`]: a `snowmint serve` child process for the CLI's
//!   tests, the chaos run and the scale run alike: its address (learned or
//!   fixed), its output (captured, piped, or in a log file), readiness, a
//!   small HTTP/1.1 client, signals, log lines and a bounded exit.
//! - [`chaos`]: the randomized fault test of distributed mode (`snowmint-chaos`,
//!   run by `scripts/chaos`): load, nemesis, checker and report.
//!
//! Tests that need an external program call [`skip`] when it is missing: a
//! printed skip, or a failure under `SNOWMINT_REQUIRE_SERVICES=1`.
//!
//! # Layout
//!
//! - `etcd.rs`: etcd members and clusters, the "process owns its socket" check.
//! - `proxy.rs`: the cuttable, re-routable TCP proxy.
//! - `isolate.rs`: one etcd member cut off from the others' packets (iptables).
//! - `pki.rs`: test certificates (rcgen).
//! - `clock.rs`: libfaketime clock control.
//! - `db.rs`: PostgreSQL, MariaDB and SQLite for the SQL tests; `db/pgbouncer.rs`:
//!   PgBouncer.
//! - `prometheus.rs`: Prometheus and promtool.
//! - `signal.rs`: SIGKILL/SIGSTOP/SIGCONT to a process (or a group) by ID.
//! - `serve.rs`: the `snowmint serve` harness.
//! - `chaos/`: the harness (`schedule`, `history`, `checker`, `report`, `run`).

#![warn(missing_docs)]

pub mod chaos;
pub mod clock;
pub mod db;
pub mod etcd;
pub mod isolate;
pub mod pki;
pub mod prometheus;
pub mod proxy;
pub mod redis;
pub mod serve;
pub mod signal;

/// Whether a missing external program must fail the test instead of
/// skipping it (`SNOWMINT_REQUIRE_SERVICES=1`, set by `scripts/test` and CI).
pub fn services_required() -> bool {
    std::env::var("SNOWMINT_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

/// Reports why a test cannot run: a skip with a printed reason, or a failure
/// when services are required. Returns `None` so callers can `?`/`let else`.
///
/// # Panics
///
/// When `SNOWMINT_REQUIRE_SERVICES=1`.
pub fn skip<T>(reason: &str) -> Option<T> {
    if services_required() {
        panic!("SNOWMINT_REQUIRE_SERVICES=1 but {reason}");
    }
    eprintln!("skipping: {reason} (set SNOWMINT_REQUIRE_SERVICES=1 to make this a failure)");
    None
}

/// Compiles the workspace README's Rust examples as doctests (the README is no
/// crate's: every published crate has a README of its own).
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct WorkspaceReadmeDoctest;
