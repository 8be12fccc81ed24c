//! `snowmint serve --postgres` as a real process against a real PostgreSQL
//! 15: `/readyz` and `/metrics` name the table the name resolved to and the
//! server's epoch; a server that may lose acknowledged commits is refused,
//! `/readyz` and a mint naming the setting (and nothing about where the
//! database is), until `--allow-lost-commits` accepts the risk.
//!
//! Skipped with a printed reason when PostgreSQL is not installed, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::time::{Duration, Instant};

use snowmint_testkit::db::Postgres;

use crate::support::{Response, Serve, Signal};

const DB: &str = "ids";

fn serve(url: &str, more: &[&str]) -> Serve {
    let mut args = vec!["--postgres", url, "--lease-ttl", "2"];
    args.extend_from_slice(more);
    Serve::start(&args, None)
}

/// `/readyz` once its body holds `words`, or the one after 20 s.
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

#[test]
fn readiness_and_metrics_name_the_table_and_epoch_and_refusals_name_the_setting() {
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    pg.create_database(DB);
    pg.psql(
        DB,
        "CREATE SCHEMA app; ALTER ROLE postgres SET search_path = app;",
    );
    let url = pg.url(DB);
    let epoch = pg.psql(
        DB,
        "SELECT system_identifier || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) \
         FROM pg_control_system();",
    );
    let epoch = epoch.trim();
    let mut a = serve(&url, &[]);
    a.wait_ready();
    let readyz = readyz_saying(&a, "coordinator");
    assert_eq!(readyz.status, 200, "{}", readyz.body);
    let body: serde_json::Value = serde_json::from_str(&readyz.body).unwrap();
    assert_eq!(
        body["coordinator"]["table"], "app.snowmint_identities",
        "{body}"
    );
    assert_eq!(body["coordinator"]["epoch"], epoch, "{body}");
    let metrics = a.http("GET", "/metrics").body;
    let info = format!(
        "snowmint_postgres_coordinator_info{{table=\"app.snowmint_identities\",epoch=\"{epoch}\"}} 1"
    );
    assert!(metrics.contains(&info), "{info} not in:\n{metrics}");
    a.signal(Signal::TERM);
    a.wait_exit(Duration::from_secs(30));

    // The role's commits may be lost on a crash: refused, by name.
    pg.psql(DB, "ALTER ROLE postgres SET synchronous_commit = off;");
    let mut b = serve(&url, &[]);
    let readyz = readyz_saying(&b, "synchronous_commit = off");
    assert_eq!(readyz.status, 503, "{}", readyz.body);
    assert!(
        readyz.body.contains("--allow-lost-commits"),
        "{}",
        readyz.body
    );
    assert!(!readyz.body.contains("127.0.0.1"), "{}", readyz.body);
    let mint = b.http("POST", "/api/v1/ids?count=1");
    assert_eq!(mint.status, 503, "{}", mint.body);
    assert!(
        mint.body.contains("synchronous_commit = off"),
        "{}",
        mint.body
    );
    b.signal(Signal::TERM);
    b.wait_exit(Duration::from_secs(30));
    let mut c = serve(&url, &["--allow-lost-commits"]);
    c.wait_ready();
    c.mint(3);
    c.signal(Signal::TERM);
    c.wait_exit(Duration::from_secs(30));
}
