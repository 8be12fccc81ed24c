//! The MySQL session a coordinator connection sets for itself, and the
//! replica check, against real MariaDB 10.11 servers started for each test
//! on loopback: a server whose default is `autocommit = 0`, a claimant cut
//! off (no FIN) while it holds a row lock, and a replica over a named
//! multi-source connection.
//!
//! Skipped with a printed reason when MariaDB is not installed, unless
//! SNOWMINT_REQUIRE_SERVICES=1 (as `scripts/test` sets).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint::SnowflakeId;
use snowmint_db::{DbConfig, LeasedGenerator};
use snowmint_testkit::db::{MARIADB_PASSWORD, MARIADB_USER, Mariadb};
use snowmint_testkit::proxy::Proxy;

const DB: &str = "ids";
const TABLE: &str = "snowmint_identities";

/// The lease crates' log, captured with each test's output.
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("snowmint_lease=info,snowmint_db=info")
        .try_init();
}

async fn held(minter: &LeasedGenerator, limit: Duration) {
    tokio::time::timeout(limit, minter.held())
        .await
        .unwrap_or_else(|_| panic!("no identity within {limit:?}: {:?}", minter.metrics()));
}

async fn until(limit: Duration, what: &str, f: impl FnMut() -> bool) {
    every(Duration::from_millis(20), limit, what, f).await;
}

/// [`until`], looking every `period`.
async fn every(period: Duration, limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(period).await;
    }
}

/// How often `information_schema.INNODB_TRX` may be read: InnoDB refreshes
/// what it shows only when it was last read more than 100 ms before, so
/// faster reads would see the same old transactions for ever.
const TRX_PERIOD: Duration = Duration::from_millis(150);

/// A URL of `DB` as the testkit's application user, at `addr`.
fn url_at(addr: SocketAddr) -> String {
    format!("mysql://{MARIADB_USER}:{MARIADB_PASSWORD}@{addr}/{DB}")
}

/// On a server whose default is `autocommit = 0` (so that nothing an
/// application writes is committed unless it says so), instances hold and
/// renew: the 1024 rows created on first use and every claim are committed
/// (another session sees them), and each instance mints across many
/// renewals with none failing. Without `autocommit = 1` in the session, no
/// instance ever becomes ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_hold_and_renew_on_a_server_whose_default_is_autocommit_off() {
    logs();
    let Some(my) = Mariadb::builder().tcp().setting("autocommit", "0").start() else {
        return;
    };
    assert_eq!(my.sql("mysql", "SELECT @@global.autocommit;").trim(), "0");
    my.create_database(DB);
    // A TTL of 2 s: a renewal every third of a second.
    let ttl = Duration::from_secs(2);
    let minters: Vec<LeasedGenerator> = (0..2)
        .map(|i| {
            LeasedGenerator::spawn(
                DbConfig::mysql(my.url(DB))
                    .lease_ttl(ttl)
                    .holder(format!("h{i}")),
            )
            .unwrap()
        })
        .collect();
    for minter in &minters {
        held(minter, Duration::from_secs(30)).await;
    }
    // Committed: another session (the client's, autocommit off too) sees
    // the rows and both live leases.
    let seen = my.sql(
        DB,
        &format!(
            "SELECT COUNT(*), SUM(lease IS NOT NULL AND expires_ms > \
             UNIX_TIMESTAMP(NOW(3)) * 1000) FROM {TABLE};"
        ),
    );
    assert_eq!(
        seen.trim(),
        "1024\t2",
        "rows and live leases seen by another session"
    );
    let renewals_before: Vec<u64> = minters.iter().map(|m| m.metrics().renewals).collect();
    let mut ids: HashSet<SnowflakeId> = HashSet::new();
    let mut minted = 0;
    let start = Instant::now();
    // Three TTLs: about 18 renewals each.
    while start.elapsed() < 3 * ttl {
        for minter in &minters {
            let batch: Vec<SnowflakeId> = tokio::task::block_in_place(|| {
                (0..50).map(|_| minter.next_id().unwrap()).collect()
            });
            assert!(batch.windows(2).all(|w| w[0] < w[1]));
            minted += batch.len();
            ids.extend(batch);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(ids.len(), minted, "every ID unique");
    for (minter, before) in minters.iter().zip(renewals_before) {
        let m = minter.metrics();
        assert!(
            m.renewals >= before + 10,
            "renewed {} times in {:?}: {m:?}",
            m.renewals - before,
            3 * ttl
        );
        assert_eq!(m.renewal_failures, 0, "{m:?}");
        assert_eq!(m.fenced, 0, "{m:?}");
    }
    for minter in &minters {
        minter.shutdown().await;
    }
}

/// The transactions in `state` (`LOCK WAIT`, `RUNNING`): the server's
/// thread ID, the user and how many rows it has locked.
fn transactions(my: &Mariadb, state: &str) -> Vec<(u64, String, u64)> {
    my.sql(
        "mysql",
        &format!(
            "SELECT t.trx_mysql_thread_id, p.USER, t.trx_rows_locked \
             FROM information_schema.INNODB_TRX t \
             JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id \
             WHERE t.trx_state = '{state}';"
        ),
    )
    .lines()
    .filter_map(|l| {
        let mut cells = l.split('\t');
        let id = cells.next()?.parse().ok()?;
        let user = cells.next()?.to_owned();
        let locked = cells.next()?.parse().ok()?;
        Some((id, user, locked))
    })
    .collect()
}

fn connected(my: &Mariadb, thread: u64) -> bool {
    !my.sql(
        "mysql",
        &format!("SELECT ID FROM information_schema.PROCESSLIST WHERE ID = {thread};"),
    )
    .trim()
    .is_empty()
}

/// A claimant cut off (no FIN) right after its `SELECT ... FOR UPDATE`
/// keeps that row locked only until the server ends its idle session
/// (`wait_timeout`, 30 s for a TTL of 10 s), not the server default's 8
/// hours; and a claim that meets a locked row gets the server's lock-wait
/// error (after 1 s) within its 2 s request timeout, not a timeout of its
/// own (the server default waits 50 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimant_cut_off_holding_a_row_lock_is_ended_by_the_server() {
    logs();
    let Some(my) = Mariadb::start_tcp() else {
        return;
    };
    let my = Arc::new(my);
    my.create_database(DB);
    let direct: SocketAddr = format!("127.0.0.1:{}", my.port()).parse().unwrap();
    let config =
        |addr: SocketAddr| DbConfig::mysql(url_at(addr)).lease_ttl(Duration::from_secs(10));
    // The table, created and left free.
    let first = LeasedGenerator::start(config(direct)).await.unwrap();
    first.shutdown().await;
    // Another session locks every row, for a minute unless killed.
    let locker = std::thread::spawn({
        let my = Arc::clone(&my);
        move || {
            // Killed: the script fails, as it should.
            let _ = my.try_sql(
                DB,
                &format!(
                    "BEGIN;\nSELECT COUNT(*) FROM {TABLE} FOR UPDATE;\nSELECT SLEEP(60);\n\
                     COMMIT;\n"
                ),
            );
        }
    });
    let mut locker_thread = None;
    every(
        TRX_PERIOD,
        Duration::from_secs(30),
        "the rows locked",
        || {
            locker_thread = transactions(&my, "RUNNING")
                .into_iter()
                .find(|(_, user, _)| user == "root")
                .map(|(id, _, _)| id);
            locker_thread.is_some()
        },
    )
    .await;
    let locker_thread = locker_thread.unwrap();
    let proxy = Proxy::start(direct).await;
    let a = LeasedGenerator::spawn(config(proxy.addr())).unwrap();
    // Its claims meet the lock: the server's answer, within the request.
    until(
        Duration::from_secs(30),
        "a claim refused with the server's lock-wait error",
        || {
            a.metrics()
                .last_error
                .is_some_and(|e| e.contains("Lock wait timeout exceeded"))
        },
    )
    .await;
    // The next claim waiting for the lock: cut its line, then free the
    // rows; its session takes the row lock and waits for a statement that
    // never comes.
    let mut waiting = None;
    every(
        TRX_PERIOD,
        Duration::from_secs(30),
        "a claim waiting for the lock",
        || {
            waiting = transactions(&my, "LOCK WAIT")
                .into_iter()
                .find(|(_, user, _)| user == MARIADB_USER)
                .map(|(id, _, _)| id);
            waiting.is_some()
        },
    )
    .await;
    proxy.cut();
    my.sql("mysql", &format!("KILL {locker_thread};"));
    let claimant = waiting.unwrap();
    let cut_at = Instant::now();
    let _ = locker.join();
    every(
        TRX_PERIOD,
        Duration::from_secs(5),
        "the cut-off claimant holding the row",
        || {
            transactions(&my, "RUNNING")
                .iter()
                .any(|&(id, _, locked)| id == claimant && locked > 0)
        },
    )
    .await;
    // The server ends it after wait_timeout (30 s), which frees the row.
    until(
        Duration::from_secs(45),
        "the cut-off claimant's session ended by the server",
        || !connected(&my, claimant),
    )
    .await;
    let after = cut_at.elapsed();
    assert!(after >= Duration::from_secs(25), "ended after {after:?}");
    assert!(transactions(&my, "RUNNING").is_empty());
    // Restored, `a` claims and issues.
    proxy.restore();
    held(&a, Duration::from_secs(60)).await;
    tokio::task::block_in_place(|| a.next_id().unwrap());
    a.shutdown().await;
}

/// A MariaDB replicating over a named multi-source connection (`CHANGE
/// MASTER 'a' TO ...`, which `SHOW SLAVE STATUS` does not show) and left
/// writable is refused as a replica, naming the connection and its
/// source; its primary is leased from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_over_a_named_connection_is_refused() {
    logs();
    let Some(primary) = Mariadb::builder()
        .tcp()
        .setting("log-bin", "primary")
        .setting("server-id", "1")
        .start()
    else {
        return;
    };
    let Some(replica) = Mariadb::builder().tcp().setting("server-id", "2").start() else {
        return;
    };
    replica.replicate("a", &primary);
    primary.create_database(DB);
    until(Duration::from_secs(30), "the database replicated", || {
        replica
            .sql("mysql", &format!("SHOW DATABASES LIKE '{DB}';"))
            .trim()
            == DB
    })
    .await;
    // What the old check asked sees no source.
    assert_eq!(replica.sql("mysql", "SHOW SLAVE STATUS;").trim(), "");
    assert_eq!(
        replica.sql("mysql", "SELECT @@global.read_only;").trim(),
        "0"
    );
    let ttl = Duration::from_secs(2);
    let a = LeasedGenerator::spawn(DbConfig::mysql(replica.url(DB)).lease_ttl(ttl)).unwrap();
    let why = format!(
        "it is a replica (SHOW ALL SLAVES STATUS lists connection 'a' of 127.0.0.1:{})",
        primary.port()
    );
    until(Duration::from_secs(30), "the replica refused", || {
        a.metrics().last_error.is_some_and(|e| e.contains(&why))
    })
    .await;
    assert!(a.identity().is_none());
    assert!(a.metrics().claims == 0, "{:?}", a.metrics());
    let b = LeasedGenerator::spawn(DbConfig::mysql(primary.url(DB)).lease_ttl(ttl)).unwrap();
    held(&b, Duration::from_secs(30)).await;
    tokio::task::block_in_place(|| b.next_id().unwrap());
    // Still refused, table and all replicated.
    tokio::time::sleep(2 * ttl).await;
    assert!(a.identity().is_none());
    assert!(a.metrics().last_error.is_some_and(|e| e.contains(&why)));
    a.shutdown().await;
    b.shutdown().await;
}
