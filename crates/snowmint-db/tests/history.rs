//! The database's own life and configuration, against real PostgreSQL 15
//! and MariaDB servers started for each test on loopback: a row whose epoch
//! is not the server's (its history changed under it) fences its holder and
//! is re-claimed as untrusted; one table name that would be two tables is
//! refused with both names; a server that may lose acknowledged commits is
//! refused unless told to accept it; a TTL above the table's bound is
//! refused; a table of the layout before epochs is brought up to date in
//! place.
//!
//! Skipped with a printed reason when the servers are not installed, unless
//! SNOWMINT_REQUIRE_SERVICES=1 (as `scripts/test` sets).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use snowmint_db::{DbConfig, LeasedGenerator};
use snowmint_testkit::db::{Mariadb, Postgres};

const DB: &str = "ids";
const TTL: Duration = Duration::from_secs(2);

fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("snowmint_lease=info,snowmint_db=info")
        .try_init();
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

async fn until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn held(minter: &LeasedGenerator) {
    until(Duration::from_secs(60), "an identity held", || {
        minter.identity().is_some()
    })
    .await;
}

/// Waits until `a` is refused for a reason that says `why`: its last error
/// and its refusal (what readiness and a mint tell clients) both say it,
/// and it holds nothing. Returns the refusal.
async fn refused(a: &LeasedGenerator, why: &str) -> String {
    until(Duration::from_secs(30), why, || {
        a.metrics().refusal.is_some_and(|r| r.contains(why))
    })
    .await;
    let metrics = a.metrics();
    assert!(a.identity().is_none(), "{metrics:?}");
    let last = metrics.last_error.unwrap_or_default();
    assert!(last.contains(why), "{last}");
    metrics.refusal.unwrap_or_default()
}

/// A database of either kind, for the tests both run.
enum Server {
    Postgres(Postgres),
    Mariadb(Mariadb),
}

impl Server {
    fn postgres() -> Option<Server> {
        logs();
        let pg = Postgres::start_tcp()?;
        pg.create_database(DB);
        Some(Server::Postgres(pg))
    }

    fn mariadb() -> Option<Server> {
        logs();
        let my = Mariadb::start_tcp()?;
        my.create_database(DB);
        Some(Server::Mariadb(my))
    }

    fn config(&self) -> DbConfig {
        match self {
            Server::Postgres(pg) => DbConfig::postgres(pg.url(DB)),
            Server::Mariadb(my) => DbConfig::mysql(my.url(DB)),
        }
        .lease_ttl(TTL)
    }

    fn sql(&self, script: &str) -> String {
        match self {
            Server::Postgres(pg) => pg.psql(DB, script),
            Server::Mariadb(my) => my.sql(DB, script),
        }
    }
}

/// The database's history changed under a holder (its row now carries
/// another epoch, as after a failover to a server that lacked the last
/// commits): the holder's next renewal fails and it fences; its re-claim
/// is untrusted, so it issues again only after the table's longest TTL, and
/// above the claim's time plus that bound plus the reserve window, whatever
/// the row's mark says.
async fn another_epoch_fences_and_waits_the_bound(server: Server) {
    const BOUND_MS: u64 = 4_000;
    let a = LeasedGenerator::spawn(server.config().datacenter(3)).unwrap();
    held(&a).await;
    let identity = a.identity().unwrap();
    let n = u16::from(identity.datacenter()) * 32 + u16::from(identity.worker());
    tokio::task::block_in_place(|| a.next_id().unwrap());
    let epoch = a
        .metrics()
        .coordinator_info
        .iter()
        .find(|(k, _)| *k == "epoch")
        .map(|(_, v)| v.clone())
        .expect("the coordinator names its epoch");
    server.sql(&format!(
        "UPDATE snowmint_identities SET longest_ttl_ms = {BOUND_MS};"
    ));
    let claims = a.metrics().claims;
    let before_ms = now_ms();
    let changed = Instant::now();
    server.sql(&format!(
        "UPDATE snowmint_identities SET epoch = 'lost/{epoch}' WHERE identity = {n};"
    ));
    // Its next renewal finds the row of another epoch: lost, re-claimed.
    until(Duration::from_secs(10), "a re-claimed", || {
        a.metrics().claims > claims
    })
    .await;
    let first = tokio::task::block_in_place(|| {
        loop {
            if let Ok(id) = a.next_id() {
                break id;
            }
            assert!(
                changed.elapsed() < Duration::from_secs(30),
                "a never issued again: {:?}",
                a.metrics()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let waited = changed.elapsed();
    let metrics = a.metrics();
    assert!(metrics.claims > claims, "{metrics:?}");
    assert!(
        waited >= Duration::from_millis(BOUND_MS),
        "a issued {waited:?} after its row's epoch changed: before the table's longest TTL \
         ({BOUND_MS} ms)"
    );
    let first_ms = first.timestamp_ms();
    let floor = before_ms + BOUND_MS + snowmint::DEFAULT_RESERVE_WINDOW_MS;
    assert!(
        first_ms >= floor,
        "a's first ID after the change is of {first_ms} ms, below the claim's time plus the \
         bound plus the reserve window ({floor} ms): the untrusted mark was its floor"
    );
    a.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_row_of_another_epoch_fences_and_is_reclaimed_untrusted() {
    let Some(server) = Server::postgres() else {
        return;
    };
    another_epoch_fences_and_waits_the_bound(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_row_of_another_epoch_fences_and_is_reclaimed_untrusted() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    another_epoch_fences_and_waits_the_bound(server).await;
}

/// A lease TTL above the table's declared bound is refused, naming both.
async fn a_ttl_above_the_bound_is_refused(server: Server) {
    let a = LeasedGenerator::spawn(server.config()).unwrap();
    held(&a).await;
    a.shutdown().await;
    server.sql("UPDATE snowmint_identities SET longest_ttl_ms = 5000;");
    let b = LeasedGenerator::spawn(server.config().lease_ttl(Duration::from_secs(10))).unwrap();
    let why = refused(&b, "longest_ttl_ms 5000").await;
    assert!(why.contains("lease-ttl 10 s"), "{why}");
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_ttl_above_the_tables_bound_is_refused() {
    let Some(server) = Server::postgres() else {
        return;
    };
    a_ttl_above_the_bound_is_refused(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_ttl_above_the_tables_bound_is_refused() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    a_ttl_above_the_bound_is_refused(server).await;
}

/// Two deployments whose connections resolve the one unqualified name
/// through different `search_path`s: the second is refused, naming both
/// tables, and creates nothing beside the first; qualified, it holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_second_search_path_is_refused_naming_both_tables() {
    logs();
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    pg.create_database(DB);
    pg.psql(DB, "CREATE SCHEMA app;");
    let url = |path: &str| format!("{}?options=-csearch_path%3D{path}", pg.url(DB));
    let a = LeasedGenerator::spawn(DbConfig::postgres(url("app")).lease_ttl(TTL)).unwrap();
    held(&a).await;
    let b = LeasedGenerator::spawn(DbConfig::postgres(url("public")).lease_ttl(TTL)).unwrap();
    let why = refused(&b, "app.snowmint_identities exists too").await;
    assert!(why.contains("public.snowmint_identities"), "{why}");
    let tables = pg.psql(
        DB,
        "SELECT string_agg(schemaname || '.' || tablename, ',') FROM pg_tables \
         WHERE tablename = 'snowmint_identities';",
    );
    assert_eq!(tables.trim(), "app.snowmint_identities");
    b.shutdown().await;
    // Named with its schema, the same table is the one table.
    let c = LeasedGenerator::spawn(
        DbConfig::postgres(url("public"))
            .table("app.snowmint_identities")
            .lease_ttl(TTL),
    )
    .unwrap();
    held(&c).await;
    assert_ne!(c.identity(), a.identity());
    let readiness = c.metrics().coordinator_info;
    assert!(
        readiness.contains(&("table", "app.snowmint_identities".to_owned())),
        "{readiness:?}"
    );
    c.shutdown().await;
    a.shutdown().await;
}

/// `synchronous_commit = off` for the role: refused, naming the setting;
/// held with `allow_lost_commits`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_synchronous_commit_off_is_refused_unless_allowed() {
    logs();
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    pg.create_database(DB);
    pg.psql(DB, "ALTER ROLE postgres SET synchronous_commit = off;");
    let config = DbConfig::postgres(pg.url(DB)).lease_ttl(TTL);
    let a = LeasedGenerator::spawn(config.clone()).unwrap();
    let why = refused(&a, "synchronous_commit = off").await;
    assert!(why.contains("--allow-lost-commits"), "{why}");
    a.shutdown().await;
    let b = LeasedGenerator::spawn(config.allow_lost_commits(true)).unwrap();
    held(&b).await;
    assert_eq!(b.metrics().refusal, None);
    b.shutdown().await;
}

/// A MariaDB that flushes its log once a second: refused, naming the
/// setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_log_flushed_once_a_second_is_refused_unless_allowed() {
    logs();
    let Some(my) = Mariadb::start_tcp() else {
        return;
    };
    my.create_database(DB);
    my.sql(DB, "SET GLOBAL innodb_flush_log_at_trx_commit = 0;");
    let config = DbConfig::mysql(my.url(DB)).lease_ttl(TTL);
    let a = LeasedGenerator::spawn(config.clone()).unwrap();
    refused(&a, "innodb_flush_log_at_trx_commit = 0").await;
    a.shutdown().await;
    let b = LeasedGenerator::spawn(config.allow_lost_commits(true)).unwrap();
    held(&b).await;
    b.shutdown().await;
}

/// A table of the layout before epochs (snowmint 0.4), its marks in
/// place: brought to this layout where it is, every row stamped with the
/// server's epoch, and the marks still the floor.
async fn layout_1_is_upgraded_in_place(server: Server, create: &str) {
    let ahead_ms = now_ms() + 20_000;
    server.sql(create);
    server.sql(&format!(
        "UPDATE snowmint_identities SET mark = {ahead_ms};"
    ));
    let a = LeasedGenerator::spawn(server.config().datacenter(1)).unwrap();
    held(&a).await;
    let id = tokio::task::block_in_place(|| {
        loop {
            match a.next_id() {
                Ok(id) => break id,
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    });
    assert!(
        id.timestamp_ms() >= ahead_ms,
        "{id:?} below the mark {ahead_ms}"
    );
    let stamped = server.sql(
        "SELECT COUNT(*) FROM snowmint_identities WHERE epoch IS NOT NULL \
         AND longest_ttl_ms = 60000;",
    );
    assert_eq!(stamped.trim(), "1024");
    a.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_table_of_layout_1_is_upgraded_in_place() {
    let Some(server) = Server::postgres() else {
        return;
    };
    layout_1_is_upgraded_in_place(
        server,
        "CREATE TABLE snowmint_identities (identity smallint PRIMARY KEY CHECK (identity \
         BETWEEN 0 AND 1023), lease bigint, holder text, instance bigint, ttl_ms bigint, \
         expires_ms bigint NOT NULL DEFAULT 0, released boolean NOT NULL DEFAULT true, mark \
         bigint); COMMENT ON TABLE snowmint_identities IS 'snowmint coordinator table, layout \
         1'; INSERT INTO snowmint_identities (identity) SELECT generate_series(0, 1023);",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_table_of_layout_1_is_upgraded_in_place() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    layout_1_is_upgraded_in_place(
        server,
        "CREATE TABLE snowmint_identities (identity SMALLINT NOT NULL PRIMARY KEY, lease BIGINT \
         NULL, holder VARCHAR(255) NULL, instance BIGINT NULL, ttl_ms BIGINT NULL, expires_ms \
         BIGINT NOT NULL DEFAULT 0, released BOOLEAN NOT NULL DEFAULT TRUE, mark BIGINT NULL) \
         ENGINE=InnoDB COMMENT='snowmint coordinator table, layout 1'; INSERT INTO \
         snowmint_identities (identity) SELECT seq FROM seq_0_to_1023;",
    )
    .await;
}
