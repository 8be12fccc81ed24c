//! Identities leased from real PostgreSQL 15 and MariaDB servers (and
//! PgBouncer 1.18 in transaction mode), each started for its test on
//! loopback: no two holders at once, regions, a crashed holder's identity
//! re-claimed above its mark after the hand-over wait, the database paused
//! past the TTL, cut off through a proxy, its clock stepped, a standby or
//! read-only server refused, a table of another layout refused.
//!
//! Skipped with a printed reason when the servers are not installed, unless
//! SNOWMINT_REQUIRE_SERVICES=1 (as `scripts/test` sets).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowmint::{Clock, Generator, SnowflakeId, SystemClock};
use snowmint_db::{DbConfig, GeneratorFactory, LeaseState, LeasedGenerator, MintError};
use snowmint_testkit::chaos::checker::{Recorder, Rules};
use snowmint_testkit::db::{Mariadb, PgBouncer, Postgres};
use snowmint_testkit::proxy::Proxy;

const DB: &str = "ids";
const TTL: Duration = Duration::from_secs(2);
/// How fast the crashed holder's clock runs: its mark this far past the
/// host's clock.
const AHEAD_MS: u64 = 60_000;
/// A TTL that a hand-over wait cannot hide in: longer than twice the
/// all-taken backoff's longest wait (12.5 s) and a claim.
const LONG_TTL: Duration = Duration::from_secs(40);

/// A PostgreSQL of the testkit's as the coordinator.
fn postgres(url: String) -> DbConfig {
    DbConfig::postgres(url)
}

/// A database under test.
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
            Server::Postgres(pg) => postgres(pg.url(DB)),
            Server::Mariadb(my) => DbConfig::mysql(my.url(DB)),
        }
        .lease_ttl(TTL)
    }

    fn port(&self) -> u16 {
        match self {
            Server::Postgres(pg) => pg.port(),
            Server::Mariadb(my) => my.port(),
        }
    }

    /// The same server at another address (a proxy's).
    fn config_at(&self, addr: SocketAddr) -> DbConfig {
        let url = match self {
            Server::Postgres(pg) => pg.url(DB),
            Server::Mariadb(my) => my.url(DB),
        };
        let url = url.replace(&format!("127.0.0.1:{}", self.port()), &addr.to_string());
        match self {
            Server::Postgres(_) => postgres(url),
            Server::Mariadb(_) => DbConfig::mysql(url),
        }
        .lease_ttl(TTL)
    }

    fn sql(&self, script: &str) -> String {
        match self {
            Server::Postgres(pg) => pg.psql(DB, script),
            Server::Mariadb(my) => my.sql(DB, script),
        }
    }

    fn product(&self) -> &'static str {
        match self {
            Server::Postgres(_) => "PostgreSQL",
            Server::Mariadb(_) => "MySQL",
        }
    }

    /// Stops the server's every process (SIGSTOP).
    fn pause(&self) {
        match self {
            Server::Postgres(pg) => pg.pause(),
            Server::Mariadb(my) => {
                snowmint_testkit::signal::stop(my.pid(), Duration::from_secs(10)).unwrap()
            }
        }
    }

    fn resume(&self) {
        match self {
            Server::Postgres(pg) => pg.resume(),
            Server::Mariadb(my) => {
                snowmint_testkit::signal::resume(my.pid(), Duration::from_secs(10)).unwrap()
            }
        }
    }
}

/// The lease crates' log, captured with each test's output (shown when it
/// fails): what a holder did is the first thing a failure needs.
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("snowmint_lease=info,snowmint_db=info,coordinators=info")
        .try_init();
}

async fn held(minter: &LeasedGenerator) {
    tokio::time::timeout(Duration::from_secs(60), minter.held())
        .await
        .unwrap_or_else(|_| panic!("no identity within a minute: {:?}", minter.metrics()));
}

/// `n` IDs, off the async workers (a mint may wait).
fn mint(minter: &LeasedGenerator, n: usize) -> Vec<SnowflakeId> {
    tokio::task::block_in_place(|| (0..n).map(|_| minter.next_id().unwrap()).collect())
}

/// Every ID a test minted, by minter, for the chaos harness's checker
/// (`snowmint_testkit::chaos::checker`), the one checker of mint logs: no
/// duplicate; each minter's IDs strictly increase in real time, also across
/// a re-claim (each minter is one `LeasedGenerator`, never restarted);
/// holders of one identity issued one after the other, each above everything
/// the ones before issued; every minter named minted.
struct Minted(Mutex<Recorder>);

impl Minted {
    fn new() -> Minted {
        Minted(Mutex::new(Recorder::since(Instant::now())))
    }

    fn record(&self, name: &str, started: Instant, ids: &[SnowflakeId]) {
        let ended = Instant::now();
        self.0
            .lock()
            .unwrap()
            .record(name, started, ended, ids.iter().map(|id| id.get()));
    }

    /// [`mint`], recorded as `name`'s.
    fn take(&self, name: &str, minter: &LeasedGenerator, n: usize) -> Vec<SnowflakeId> {
        let started = Instant::now();
        let ids = mint(minter, n);
        self.record(name, started, &ids);
        ids
    }

    /// One ID, if `minter` issues one now, recorded as `name`'s.
    fn try_one(&self, name: &str, minter: &LeasedGenerator) -> Option<SnowflakeId> {
        let started = Instant::now();
        let id = minter.next_id().ok()?;
        self.record(name, started, &[id]);
        Some(id)
    }

    /// Panics with every violation, unless all of `minters` minted and
    /// every rule held.
    fn check(&self, minters: &[&str]) {
        let mut log = self.0.lock().unwrap();
        for name in minters {
            log.instance(name);
        }
        let rules = Rules {
            every_instance_mints: minters.len(),
            one_minter_each: true,
            one_tenure_each: true,
        };
        if let Err(why) = log.verdict(&rules) {
            panic!("what was minted: {why}");
        }
    }
}

/// The host's clock, `ms` fast.
struct Ahead {
    clock: SystemClock,
    ms: u64,
}

impl Ahead {
    fn new(ms: u64) -> Ahead {
        Ahead {
            clock: SystemClock::new(),
            ms,
        }
    }
}

impl Clock for Ahead {
    fn now_ms(&self) -> u64 {
        self.clock.now_ms() + self.ms
    }

    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration {
        self.clock
            .sleep_until_ms(target_ms.saturating_sub(self.ms), max)
    }
}

/// Waits until `f` holds, or panics naming `what` after `limit`.
async fn until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `a`'s last error says `why` (the wait named `what`), and
/// that it holds no identity; returns that error.
async fn refused(a: &LeasedGenerator, what: &str, why: &str) -> String {
    until(Duration::from_secs(30), what, || {
        a.metrics().last_error.is_some_and(|e| e.contains(why))
    })
    .await;
    assert!(a.identity().is_none());
    a.metrics().last_error.unwrap_or_default()
}

/// Many holders of one region: each its own identity, every ID theirs and
/// unique; the 33rd waits (all taken, naming the table) until one stops,
/// and then takes the freed identity at once (a clean release).
///
/// Their TTL is long ([`LONG_TTL`]) so that "at once" can be told from a
/// hand-over wait: the waiter looks again within its all-taken backoff (at
/// most 12.5 s), claims and issues well within half the TTL of the graceful
/// stop; a graceful stop taken for a crash would have it wait the whole TTL
/// after its claim.
async fn holders_never_share(server: Server) {
    let config = || server.config().lease_ttl(LONG_TTL).datacenter(3);
    let fleet: Vec<LeasedGenerator> = (0..32)
        .map(|i| LeasedGenerator::spawn(config().holder(format!("h{i}"))).unwrap())
        .collect();
    for minter in &fleet {
        held(minter).await;
    }
    let minted = Minted::new();
    let names: Vec<String> = (0..32).map(|i| format!("h{i}")).collect();
    let mut identities = HashSet::new();
    for (minter, name) in fleet.iter().zip(&names) {
        let identity = minter.identity().unwrap();
        assert_eq!(identity.datacenter(), 3);
        assert!(identities.insert(identity), "{identity} held twice");
        for id in minted.take(name, minter, 300) {
            assert_eq!((id.datacenter(), id.worker()), (3, identity.worker()));
        }
    }
    let waiter = LeasedGenerator::spawn(config().holder("waiter")).unwrap();
    until(Duration::from_secs(30), "the 33rd sees all taken", || {
        waiter.metrics().state == LeaseState::AllTaken
    })
    .await;
    let why = waiter.metrics().last_error.unwrap_or_default();
    assert!(
        why.contains(&format!("datacenter 3 in {} table ", server.product()))
            && why.contains("snowmint_identities are held"),
        "{why}"
    );
    assert_eq!(waiter.next_id(), Err(MintError::NotHeld));
    let freed = fleet[7].identity().unwrap();
    fleet[7].shutdown().await;
    let stopped = Instant::now();
    // Released cleanly: the waiter claims at its next look and issues at
    // once, with no hand-over wait (the TTL) before its first ID.
    held(&waiter).await;
    assert_eq!(waiter.identity(), Some(freed));
    let first = minted.take("waiter", &waiter, 1)[0];
    let first_after = stopped.elapsed();
    assert_eq!((first.datacenter(), first.worker()), (3, freed.worker()));
    assert!(
        first_after < LONG_TTL / 2,
        "the waiter issued its first ID {first_after:?} after h7's graceful stop (TTL \
         {LONG_TTL:?}): it waited as after a crash ({:?})",
        waiter.metrics()
    );
    minted.take("waiter", &waiter, 300);
    for minter in fleet.iter().chain([&waiter]) {
        minter.shutdown().await;
    }
    // No ID twice, and the waiter issued as h7's identity above h7.
    let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
    all.push("waiter");
    minted.check(&all);
    // Every row released and its lease ended.
    let open = server.sql(
        "SELECT identity, holder, lease, expires_ms, released FROM snowmint_identities \
         WHERE expires_ms <> 0 OR NOT released",
    );
    assert_eq!(open.trim(), "", "rows still held after every shutdown");
}

/// Holder "a" of datacenter 7 (with `config`), every other worker of the
/// datacenter held by someone else for ever: the next holder can only take
/// a's identity. Returns a, its identity and the identity's row number.
async fn sole_holder_of_datacenter_7(
    server: &Server,
    config: DbConfig,
) -> (LeasedGenerator, snowmint::Identity, u16) {
    let a = LeasedGenerator::start(config.datacenter(7).holder("a"))
        .await
        .unwrap();
    let identity = a.identity().unwrap();
    let n = u16::from(identity.datacenter()) * 32 + u16::from(identity.worker());
    server.sql(&format!(
        "UPDATE snowmint_identities SET lease = 1, expires_ms = 9000000000000, released = false \
         WHERE identity BETWEEN 224 AND 255 AND identity <> {n};"
    ));
    (a, identity, n)
}

/// A holder that crashes (no release): its identity is claimed again only
/// once its lease expired on the database, and issued under only after one
/// more TTL (it did not release), above every ID the crashed one issued.
///
/// The crashed holder's clock runs [`AHEAD_MS`] fast, so its mark is that
/// far past the next holder's clock: the next holder's IDs are above the
/// mark only because it read the mark (its own clock, and the hand-over
/// wait, would put them a minute below).
async fn crashed_holder_is_reclaimed_above_its_mark(server: Server) {
    let fast: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .store(store)
            .clock(Ahead::new(AHEAD_MS))
            .build()
    });
    let (a, identity, n) =
        sole_holder_of_datacenter_7(&server, server.config().generator(fast)).await;
    let minted = Minted::new();
    let last_of_a = *minted.take("a", &a, 5000).last().unwrap();
    let crashed = Instant::now();
    a.abandon();
    let mark: u64 = server
        .sql(&format!(
            "SELECT mark FROM snowmint_identities WHERE identity = {n}"
        ))
        .trim()
        .parse()
        .expect("the crashed holder's mark");
    let now_ms = SystemClock::new().now_ms();
    assert!(
        mark >= last_of_a.timestamp_ms() && mark > now_ms + AHEAD_MS / 2,
        "the crashed holder's mark {mark} is not far ahead of the clock ({now_ms})"
    );
    // b's clock is the host's; it may issue up to the mark's distance ahead of it.
    let borrowing: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .store(store)
            .max_borrow_ms(AHEAD_MS * 2)
            .build()
    });
    let b = LeasedGenerator::spawn(
        server
            .config()
            .generator(borrowing)
            .datacenter(7)
            .holder("b"),
    )
    .unwrap();
    until(Duration::from_secs(30), "b claims, and waits", || {
        b.metrics().state == LeaseState::Handover
    })
    .await;
    let claimed = crashed.elapsed();
    assert_eq!(b.metrics().identity, Some(identity));
    assert!(b.next_id().is_err(), "b issues during the hand-over wait");
    held(&b).await;
    until(Duration::from_secs(30), "b issues", || b.ready().is_ok()).await;
    let issued = crashed.elapsed();
    // Claimed only after A's lease expired; issued a TTL after the claim.
    // `claimed` is when the test saw the hand-over state, which b enters
    // only once its generator is built (the mark read from the database)
    // after the claim: up to a quarter TTL later on a loaded machine.
    assert!(
        claimed + Duration::from_millis(500) >= TTL,
        "claimed after {claimed:?}"
    );
    assert!(
        issued >= claimed + TTL - TTL / 4,
        "claimed (seen) after {claimed:?}, issued after {issued:?}: the wait was shorter than \
         the TTL"
    );
    let first = minted.take("b", &b, 1)[0];
    assert!(
        first.timestamp_ms() > mark,
        "b's first ID is of {} ms, at or below the crashed holder's mark {mark} (the clock \
         read {}): the mark was not its floor",
        first.timestamp_ms(),
        SystemClock::new().now_ms()
    );
    b.shutdown().await;
    // b issued above every ID of the crashed holder.
    minted.check(&["a", "b"]);
}

/// A holder that took an identity over uncleanly and is shut down during
/// its hand-over wait does not release it: the crashed holder's fence may
/// still be open, so the next holder must wait too, not issue at once.
async fn shut_down_in_the_hand_over_wait_is_not_a_release(server: Server) {
    // b waits a's TTL: long enough to shut b down inside it on a loaded
    // machine.
    let long = Duration::from_secs(6);
    let (a, identity, n) =
        sole_holder_of_datacenter_7(&server, server.config().lease_ttl(long)).await;
    mint(&a, 100);
    a.abandon();
    let b = LeasedGenerator::spawn(server.config().datacenter(7).holder("b")).unwrap();
    until(Duration::from_secs(30), "b claims, and waits", || {
        b.metrics().state == LeaseState::Handover
    })
    .await;
    assert_eq!(b.metrics().identity, Some(identity));
    b.shutdown().await;
    let row = server.sql(&format!(
        "SELECT holder, released FROM snowmint_identities WHERE identity = {n}"
    ));
    let released = row.trim().rsplit(['|', '\t']).next().unwrap_or_default();
    assert!(
        matches!(released, "f" | "0"),
        "b released an identity it never issued under, its hand-over wait not over: {row}"
    );
    let c = LeasedGenerator::spawn(server.config().datacenter(7).holder("c")).unwrap();
    until(Duration::from_secs(30), "c claims, and waits too", || {
        c.metrics().state == LeaseState::Handover
    })
    .await;
    assert!(c.next_id().is_err(), "c issues during its hand-over wait");
    held(&c).await;
    until(Duration::from_secs(30), "c issues", || c.ready().is_ok()).await;
    c.shutdown().await;
}

/// The database stops answering (every process SIGSTOPped) for longer than
/// the TTL: the holder fences within the TTL, and once the database is
/// back it holds an identity again and issues above everything before.
async fn paused_database_fences_then_recovers(server: Server) {
    let a = LeasedGenerator::start(server.config()).await.unwrap();
    fenced_then_recovers(
        a,
        "fenced while paused",
        || server.pause(),
        TTL * 2,
        || server.resume(),
    )
    .await;
}

/// The line to the database cut (a proxy that drops every connection and
/// accepts none): fenced within the TTL; restored, issuing again.
async fn cut_off_through_a_proxy(server: Server) {
    let upstream: SocketAddr = format!("127.0.0.1:{}", server.port()).parse().unwrap();
    let proxy = Proxy::start(upstream).await;
    let addr: SocketAddr = proxy.url().trim_start_matches("http://").parse().unwrap();
    let a = LeasedGenerator::start(server.config_at(addr))
        .await
        .unwrap();
    fenced_then_recovers(
        a,
        "fenced when cut off",
        || proxy.cut(),
        TTL,
        || proxy.restore(),
    )
    .await;
}

/// `a` mints, then loses its database (`cut`): it fences within the TTL
/// (`fenced` names the wait); `outage` past the fence the database is back
/// (`restore`), `a` issues again, above everything it issued before.
async fn fenced_then_recovers(
    a: LeasedGenerator,
    fenced: &str,
    cut: impl FnOnce(),
    outage: Duration,
    restore: impl FnOnce(),
) {
    let minted = Minted::new();
    minted.take("a", &a, 1000);
    cut();
    let since = Instant::now();
    until(TTL + Duration::from_secs(1), fenced, || {
        a.next_id().is_err()
    })
    .await;
    assert!(
        since.elapsed() <= TTL,
        "fenced only after {:?}",
        since.elapsed()
    );
    tokio::time::sleep(outage).await;
    restore();
    until(Duration::from_secs(60), "issuing again", || {
        a.ready().is_ok()
    })
    .await;
    minted.take("a", &a, 1);
    a.shutdown().await;
    // Above everything before the outage.
    minted.check(&["a"]);
}

/// A table that is not this layout's (another comment) is never used.
async fn foreign_table_is_refused(server: Server) {
    let create = match server {
        Server::Postgres(_) => {
            "CREATE TABLE other_ids (identity smallint PRIMARY KEY, lease bigint, holder text, \
             instance bigint, ttl_ms bigint, expires_ms bigint NOT NULL DEFAULT 0, released \
             boolean NOT NULL DEFAULT true, mark bigint); COMMENT ON TABLE other_ids IS 'mine';"
        }
        Server::Mariadb(_) => {
            "CREATE TABLE other_ids (identity SMALLINT PRIMARY KEY, lease BIGINT, holder TEXT, \
             instance BIGINT, ttl_ms BIGINT, expires_ms BIGINT NOT NULL DEFAULT 0, released \
             BOOLEAN NOT NULL DEFAULT TRUE, mark BIGINT) COMMENT='mine';"
        }
    };
    server.sql(create);
    let a = LeasedGenerator::spawn(server.config().table("other_ids")).unwrap();
    let why = refused(
        &a,
        "the foreign table refused",
        "is not a snowmint coordinator table of this layout",
    )
    .await;
    assert!(why.contains("\"mine\""), "{why}");
    a.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_holders_never_share_an_identity() {
    let Some(server) = Server::postgres() else {
        return;
    };
    holders_never_share(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_holders_never_share_an_identity() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    holders_never_share(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_crashed_holder_is_reclaimed_above_its_mark() {
    let Some(server) = Server::postgres() else {
        return;
    };
    crashed_holder_is_reclaimed_above_its_mark(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_crashed_holder_is_reclaimed_above_its_mark() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    crashed_holder_is_reclaimed_above_its_mark(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_shut_down_in_the_hand_over_wait_is_not_a_release() {
    let Some(server) = Server::postgres() else {
        return;
    };
    shut_down_in_the_hand_over_wait_is_not_a_release(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_shut_down_in_the_hand_over_wait_is_not_a_release() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    shut_down_in_the_hand_over_wait_is_not_a_release(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_paused_past_the_ttl_fences_then_recovers() {
    let Some(server) = Server::postgres() else {
        return;
    };
    paused_database_fences_then_recovers(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_paused_past_the_ttl_fences_then_recovers() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    paused_database_fences_then_recovers(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cut_off_through_a_proxy_fences_then_recovers() {
    let Some(server) = Server::postgres() else {
        return;
    };
    cut_off_through_a_proxy(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_cut_off_through_a_proxy_fences_then_recovers() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    cut_off_through_a_proxy(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_table_of_another_layout_is_refused() {
    let Some(server) = Server::postgres() else {
        return;
    };
    foreign_table_is_refused(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_table_of_another_layout_is_refused() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    foreign_table_is_refused(server).await;
}

/// A standby is never leased from: not ready, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_standby_is_refused() {
    let Some(primary) = Postgres::start_tcp() else {
        return;
    };
    primary.create_database(DB);
    let Some(standby) = Postgres::start_standby(&primary) else {
        return;
    };
    let a = LeasedGenerator::spawn(postgres(standby.url(DB)).lease_ttl(TTL)).unwrap();
    refused(
        &a,
        "the standby refused",
        "it is a standby (pg_is_in_recovery() is true)",
    )
    .await;
    a.shutdown().await;
}

/// A read-only MariaDB is never leased from; once writable, it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_read_only_is_refused() {
    let Some(my) = Mariadb::start_tcp() else {
        return;
    };
    my.create_database(DB);
    my.set_read_only(true);
    let a = LeasedGenerator::spawn(DbConfig::mysql(my.url(DB)).lease_ttl(TTL)).unwrap();
    refused(
        &a,
        "the read-only server refused",
        "it is read-only (@@global.read_only is on)",
    )
    .await;
    my.set_read_only(false);
    held(&a).await;
    a.shutdown().await;
}

/// Through PgBouncer in transaction mode (no prepared statement outlives a
/// transaction), with fewer server connections than holders' connections:
/// every holder claims, renews and issues, and nothing it sent is refused,
/// as each holder's own errors and every mint say (a statement prepared in
/// one transaction and used in the next, on another server connection, is
/// refused to the client: "prepared statement ... does not exist").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_through_pgbouncer_in_transaction_mode() {
    logs();
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    pg.create_database(DB);
    let Some(bouncer) = PgBouncer::start(&pg, 3) else {
        return;
    };
    let fleet: Vec<LeasedGenerator> = (0..12)
        .map(|_| LeasedGenerator::spawn(postgres(bouncer.url(DB)).lease_ttl(TTL)).unwrap())
        .collect();
    let minted = Minted::new();
    let names: Vec<String> = (0..fleet.len()).map(|i| format!("m{i}")).collect();
    // What the holders saw go wrong: each error they reported while the
    // test watched, and each mint the generator refused (its store's
    // error names the server's). A renewal may miss its third of a second
    // on a loaded machine (and be retried, or fence for a moment); nothing
    // else may go wrong.
    let mut errors: Vec<String> = Vec::new();
    let look = |errors: &mut Vec<String>| {
        for (minter, name) in fleet.iter().zip(&names) {
            if let Some(e) = minter.metrics().last_error
                && !e.contains("got no answer within")
                && !errors.iter().any(|seen| seen.ends_with(&e))
            {
                errors.push(format!("{name}: {e}"));
            }
        }
    };
    let start = Instant::now();
    while !fleet.iter().all(|m| m.identity().is_some()) {
        look(&mut errors);
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not every holder claimed within a minute: {errors:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut identities = HashSet::new();
    for minter in &fleet {
        held(minter).await;
        assert!(identities.insert(minter.identity().unwrap()));
    }
    // Renewals and marks keep going through the pooler for a few TTLs.
    let until_at = Instant::now() + TTL * 3;
    let (mut mints, mut fenced) = (0, 0);
    while Instant::now() < until_at {
        for (minter, name) in fleet.iter().zip(&names) {
            let started = Instant::now();
            match minter.next_id() {
                Ok(id) => minted.record(name, started, &[id]),
                Err(MintError::Fenced | MintError::NotHeld) => fenced += 1,
                Err(e) => errors.push(format!("{name} did not mint: {e}")),
            }
            mints += 1;
        }
        look(&mut errors);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        errors.is_empty(),
        "what the holders saw go wrong through PgBouncer ({fenced} of {mints} mints \
         fenced): {errors:#?}"
    );
    minted.check(&names.iter().map(String::as_str).collect::<Vec<_>>());
    for minter in &fleet {
        let m = minter.metrics();
        assert_eq!(m.state, LeaseState::Held, "{m:?}");
        assert_eq!(m.claims, 1, "{m:?}");
        assert!(m.renewals >= 2, "{m:?}");
    }
    for minter in &fleet {
        minter.shutdown().await;
    }
}

/// The database's clock stepped forward past the TTL ends every lease
/// early: a second holder takes the identity while the first still issues
/// (its fence open until its next renewal is refused), but (no release)
/// waits one TTL before issuing, by when the first holder's fence has
/// closed; stepped back, leases only look longer: the holder keeps
/// renewing and issuing throughout, never fenced, never claiming again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_clock_stepped_forward_then_back() {
    logs();
    let Some(pg) = Postgres::builder().tcp().faketime().start() else {
        return;
    };
    pg.create_database(DB);
    let config = || postgres(pg.url(DB)).lease_ttl(TTL).datacenter(9);
    let a = LeasedGenerator::start(config().holder("a")).await.unwrap();
    let identity = a.identity().unwrap();
    let n = 9 * 32 + u16::from(identity.worker());
    pg.psql(
        DB,
        &format!(
            "UPDATE snowmint_identities SET lease = 1, expires_ms = 9000000000000, \
             released = false WHERE identity BETWEEN 288 AND 319 AND identity <> {n};"
        ),
    );
    let minted = Minted::new();
    minted.take("a", &a, 1000);
    // Stepped just after one of A's renewals counted: A's fence stays open
    // until its next one (a third of the usable TTL on), which the step
    // makes the database refuse; A issues in between, its lease already
    // over on the database.
    let renewals = a.metrics().renewals;
    until(TTL, "a renews", || a.metrics().renewals > renewals).await;
    pg.set_clock_offset_ms(10_000);
    let stepped = Instant::now();
    let b = LeasedGenerator::spawn(config().holder("b")).unwrap();
    let mut a_after_step = 0;
    let mut a_last = None;
    while b.metrics().identity.is_none() {
        if minted.try_one("a", &a).is_some() {
            a_after_step += 1;
            a_last = Some(stepped.elapsed());
        }
        assert!(
            stepped.elapsed() < Duration::from_secs(30),
            "b never claims"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let claimed = Instant::now();
    assert_eq!(b.metrics().identity, Some(identity));
    // While B waits, A's IDs and B's never meet: A is fenced by the time B
    // issues (A's renewal is refused: its lease is gone on the database).
    while b.ready().is_err() {
        if minted.try_one("a", &a).is_some() {
            a_after_step += 1;
            a_last = Some(stepped.elapsed());
        }
        assert!(
            claimed.elapsed() < Duration::from_secs(30),
            "b never issues"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let b_issues = stepped.elapsed();
    assert!(
        a.next_id().is_err(),
        "a still issues once b does ({b_issues:?} after the step)"
    );
    assert!(
        a_after_step > 0,
        "a never minted after the step: no lease was seen ending early under its holder"
    );
    assert!(claimed.elapsed() + Duration::from_millis(100) >= TTL);
    minted.take("b", &b, 1);
    tracing::info!(a_after_step, ?a_last, ?b_issues, "after the step forward");
    // Back: B's lease only looks longer; B keeps renewing and issuing, as
    // the same tenure (no fence, no new claim).
    let before = b.metrics();
    pg.set_clock_offset_ms(-10_000);
    let back = Instant::now();
    while back.elapsed() < TTL * 2 {
        assert!(
            minted.try_one("b", &b).is_some(),
            "b stopped issuing {:?} after the step back: {:?}",
            back.elapsed(),
            b.metrics()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = b.metrics();
    assert_eq!(after.state, LeaseState::Held, "{after:?}");
    assert_eq!(
        (after.identity, after.claims, after.fenced),
        (Some(identity), before.claims, before.fenced),
        "b claimed again or fenced after the step back: {after:?}"
    );
    assert!(
        after.renewals >= before.renewals + 3,
        "b's renewals after the step back: {before:?} then {after:?}"
    );
    a.shutdown().await;
    b.shutdown().await;
    // B issued above every ID of A, one after the other, and kept rising.
    minted.check(&["a", "b"]);
}

/// The coordinator's contract, request by request (what the session relies
/// on, `snowmint_lease::Coordinator`): a claim wins only a free identity and
/// says how its last holder let go; renewals, reads, marks and releases act
/// only under the lease that holds; marks only rise; a revoke frees at once.
async fn coordinator_contract(server: Server) {
    use snowmint_lease::{Claimant, Claimed, Coordinator, LeaseSource, Pool, Previous};
    let t = Duration::from_secs(5);
    let mut a = server.config().coordinator(t).unwrap();
    let mut b = a.sibling();
    let who = |holder, instance| Claimant {
        holder,
        instance,
        ttl: TTL,
    };
    let la = a.grant(TTL, t).await.unwrap().lease;
    let lb = b.grant(TTL, t).await.unwrap().lease;
    assert_ne!(la, lb);
    assert_eq!(
        a.claim(la, 5, &who("a", 1), t).await.unwrap(),
        Claimed::Won(Previous::Clean)
    );
    assert_eq!(
        b.claim(lb, 5, &who("b", 2), t).await.unwrap(),
        Claimed::Taken
    );
    let census = b.scan(Pool::new(Some(0)), t).await.unwrap();
    assert!(
        census.taken.contains(&5) && census.taken.len() == 1,
        "{census:?}"
    );
    assert!(a.confirm(5, la, t).await.unwrap().holds);
    assert!(!b.confirm(5, lb, t).await.unwrap().holds);
    assert_eq!(a.keep_alive(la, t).await.unwrap().ttl, TTL);
    assert_eq!(b.keep_alive(lb, t).await.unwrap().ttl, Duration::ZERO);
    // Marks: only the holder's, only upwards.
    let now = 1_800_000_000_000;
    a.raise_mark(5, la, now, t).await.unwrap();
    a.raise_mark(5, la, now - 5000, t).await.unwrap();
    assert_eq!(b.load_mark(5, t).await.unwrap(), Some(now));
    assert!(b.raise_mark(5, lb, now + 1, t).await.is_err());
    assert!(b.release(5, lb, t).await.is_err());
    assert_eq!(b.load_mark(5, t).await.unwrap(), Some(now));
    // Ended without a release: the next claim is unclean, with A's TTL.
    a.revoke(la, t).await.unwrap();
    assert!(!a.confirm(5, la, t).await.unwrap().holds);
    assert_eq!(a.keep_alive(la, t).await.unwrap().ttl, Duration::ZERO);
    assert_eq!(
        b.claim(lb, 5, &who("b", 2), t).await.unwrap(),
        Claimed::Won(Previous::Unclean {
            ttl: TTL,
            holder: "a".to_owned()
        })
    );
    assert!(
        a.raise_mark(5, la, now + 1, t).await.is_err(),
        "a mark under an ended lease"
    );
    // Released, then revoked: clean for the next.
    b.release(5, lb, t).await.unwrap();
    b.revoke(lb, t).await.unwrap();
    let lc = a.grant(TTL, t).await.unwrap().lease;
    assert_eq!(
        a.claim(lc, 5, &who("c", 3), t).await.unwrap(),
        Claimed::Won(Previous::Clean)
    );
    assert_eq!(a.load_mark(5, t).await.unwrap(), Some(now));
    assert_eq!(a.load_mark(6, t).await.unwrap(), None);
    // A request cancelled midway (its future dropped before the server
    // answered, as a shutdown cancels a renewal on the wire) leaves nothing
    // for the next request to read: it gets its own answer.
    server.pause();
    let cancelled = tokio::time::timeout(Duration::from_millis(300), a.keep_alive(lc, t)).await;
    server.resume();
    assert!(cancelled.is_err(), "answered while paused: {cancelled:?}");
    assert!(a.confirm(5, lc, t).await.unwrap().holds);
    assert_eq!(a.load_mark(5, t).await.unwrap(), Some(now));
    assert_eq!(a.load_mark(6, t).await.unwrap(), None);
    // The TTL recorded for the next holder is the longest fence that may
    // still be open: D (6 s) ends uncleanly; E (2 s) claims and waits D's
    // TTL; E's claim sent again under its lease (its first answer lost) is
    // answered from the record; E ends too, and F waits D's 6 s, not E's 2.
    let long = Duration::from_secs(6);
    let ld = a.grant(long, t).await.unwrap().lease;
    let d = Claimant {
        holder: "d",
        instance: 4,
        ttl: long,
    };
    assert_eq!(
        a.claim(ld, 7, &d, t).await.unwrap(),
        Claimed::Won(Previous::Clean)
    );
    a.revoke(ld, t).await.unwrap();
    let le = b.grant(TTL, t).await.unwrap().lease;
    let unclean_d = Claimed::Won(Previous::Unclean {
        ttl: long,
        holder: "d".to_owned(),
    });
    assert_eq!(b.claim(le, 7, &who("e", 5), t).await.unwrap(), unclean_d);
    match b.claim(le, 7, &who("e", 5), t).await.unwrap() {
        Claimed::Won(Previous::Unclean { ttl, .. }) => assert_eq!(ttl, long),
        other => panic!("a claim sent again under its lease: {other:?}"),
    }
    b.revoke(le, t).await.unwrap();
    let lf = a.grant(TTL, t).await.unwrap().lease;
    match a.claim(lf, 7, &who("f", 6), t).await.unwrap() {
        Claimed::Won(Previous::Unclean { ttl, holder }) => {
            assert_eq!((ttl, holder.as_str()), (long, "e"));
        }
        other => panic!("after E: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_coordinator_contract() {
    let Some(server) = Server::postgres() else {
        return;
    };
    coordinator_contract(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_keeps_the_coordinator_contract() {
    let Some(server) = Server::mariadb() else {
        return;
    };
    coordinator_contract(server).await;
}
