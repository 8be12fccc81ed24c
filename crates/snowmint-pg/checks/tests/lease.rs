//! Issue 42 part 5: a leased identity (`snowmint.coordinator`), against
//! real PostgreSQL 15 servers started here: one coordinator (a plain
//! server, the table of `snowmint serve --postgres` created in it by the
//! first lease session) and extension clusters pointed at it.
//!
//! - two clusters on one coordinator mint as distinct identities;
//! - a cluster frozen (SIGSTOP to every process) past its lease's TTL,
//!   whose identity another cluster takes meanwhile: after SIGCONT its
//!   first `nextval` is refused (fence closed), and it never mints as that
//!   identity again while the other holds it; the other's IDs start above
//!   everything it minted;
//! - a copy of a data directory started beside its original holds another
//!   identity (or refuses);
//! - `snowmint.coordinator` with `snowmint.datacenter`/`snowmint.worker`
//!   is refused, naming both; the coordinator's password is never shown.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use snowmint_pg_checks::{Cluster, Setup, db_error, pg_bindir};
use snowmint_testkit::db::Postgres;

/// The lease TTL the clusters lease with (s): short, so a test waits for
/// expiries in seconds; the fence closes max(1 s, TTL / 5) before.
const TTL_S: u64 = 4;

/// A password in the coordinator's URL (the coordinator trusts loopback,
/// so it is never checked): it must appear in no message.
const PASSWORD: &str = "Pw9secretQz";

/// How long a cluster may take to hold an identity on a loaded machine.
const HOLD_LIMIT: Duration = Duration::from_secs(60);

/// The coordinator: a plain PostgreSQL 15 on loopback.
fn coordinator() -> Postgres {
    Postgres::builder()
        .bin_dir(pg_bindir())
        .tcp()
        .start()
        .expect("PostgreSQL 15 installed (scripts/pg-extension installs it)")
}

/// The coordinator's URL as the clusters are given it, with a password.
fn url(coordinator: &Postgres) -> String {
    format!(
        "postgres://postgres:{PASSWORD}@127.0.0.1:{}/postgres",
        coordinator.port()
    )
}

/// A cluster leasing its identity from `coordinator`.
fn leased(coordinator: &Postgres) -> Setup {
    Setup {
        identity: None,
        settings: vec![
            ("snowmint.coordinator".to_owned(), url(coordinator)),
            ("snowmint.lease_ttl".to_owned(), TTL_S.to_string()),
        ],
        ..Setup::default()
    }
}

/// (datacenter, worker) of a Twitter-layout ID.
fn identity_of(id: i64) -> (u64, u64) {
    let b = snowmint::decode(id as u64).unwrap();
    (b.datacenter, b.worker)
}

/// `count` IDs in one statement.
fn mint(client: &mut postgres::Client, count: i64) -> Result<Vec<i64>, postgres::Error> {
    Ok(client
        .query(
            "SELECT snowmint.nextval() FROM generate_series(1, $1::bigint)",
            &[&count],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Waits (bounded) until `client`'s server mints; returns its first IDs.
/// Every refusal meanwhile must be the lease's (55000) and must not show
/// the password.
fn first_ids(client: &mut postgres::Client, what: &str) -> Vec<i64> {
    let deadline = Instant::now() + HOLD_LIMIT;
    loop {
        match mint(client, 10) {
            Ok(ids) => return ids,
            Err(e) => {
                let (message, code) = db_error(&e);
                assert_eq!(code, "55000", "{what}: {message}");
                assert!(
                    !message.contains(PASSWORD),
                    "{what} shows the password: {message}"
                );
                assert!(
                    Instant::now() < deadline,
                    "{what} held no identity within {HOLD_LIMIT:?}: {message}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

fn identity_text(client: &mut postgres::Client) -> String {
    client
        .query_one("SELECT snowmint.identity()", &[])
        .unwrap()
        .get(0)
}

fn assert_one_identity(ids: &[i64], what: &str) -> (u64, u64) {
    let set: HashSet<(u64, u64)> = ids.iter().map(|&id| identity_of(id)).collect();
    assert_eq!(set.len(), 1, "{what} minted as {set:?}");
    *set.iter().next().unwrap()
}

#[test]
fn two_clusters_on_one_coordinator_mint_as_distinct_identities() {
    let coordinator = coordinator();
    let a = Cluster::start(&leased(&coordinator));
    let b = Cluster::start(&leased(&coordinator));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let ids_a = first_ids(&mut ca, "cluster A");
    let ids_b = first_ids(&mut cb, "cluster B");
    let id_a = assert_one_identity(&ids_a, "cluster A");
    let id_b = assert_one_identity(&ids_b, "cluster B");
    assert_ne!(id_a, id_b, "both clusters mint as one identity");
    // What the coordinator's table says: two live leases, the
    // identities minted as.
    let held = coordinator.psql(
        "postgres",
        "SELECT identity FROM snowmint_identities WHERE lease IS NOT NULL \
         AND expires_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint ORDER BY 1;",
    );
    let held: Vec<u64> = held.lines().map(|l| l.trim().parse().unwrap()).collect();
    let ordinal = |(dc, w): (u64, u64)| dc * 32 + w;
    let mut want = vec![ordinal(id_a), ordinal(id_b)];
    want.sort();
    assert_eq!(
        held, want,
        "the coordinator's live leases, and the identities minted as"
    );
    // And they keep to them while both mint, for longer than the marks
    // run ahead (2 s).
    let until = Instant::now() + Duration::from_secs(4);
    let mut last = (0, 0);
    while Instant::now() < until {
        let more_a = mint(&mut ca, 200).expect("A mints");
        let more_b = mint(&mut cb, 200).expect("B mints");
        assert_eq!(assert_one_identity(&more_a, "cluster A"), id_a);
        assert_eq!(assert_one_identity(&more_b, "cluster B"), id_b);
        last = (*more_a.last().unwrap(), *more_b.last().unwrap());
    }
    // Every ID returned is covered by its identity's mark on the
    // coordinator (the next holder starts above it).
    for (id, (dc, w)) in [(last.0, id_a), (last.1, id_b)] {
        let mark: i64 = coordinator
            .psql(
                "postgres",
                &format!(
                    "SELECT mark FROM snowmint_identities WHERE identity = {};",
                    dc * 32 + w
                ),
            )
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("the mark of {dc}/{w}: {e}"));
        let ms = snowmint::decode(id as u64).unwrap().timestamp_ms as i64;
        assert!(
            mark >= ms,
            "the coordinator's mark {mark} is below the ID {id} of {ms} ms"
        );
    }
    // snowmint.identity() names the identity and the lease, not the password.
    let text = identity_text(&mut ca);
    assert!(
        text.starts_with(&format!(
            "datacenter {}, worker {} (leased from ",
            id_a.0, id_a.1
        )) && text.contains("fence open for"),
        "{text}"
    );
    assert!(!text.contains(PASSWORD), "{text}");
    for log in [a.log(), b.log()] {
        assert!(!log.contains(PASSWORD), "a server log shows the password");
    }
}

#[test]
fn a_cluster_paused_past_its_ttl_stops_minting_before_another_takes_its_identity() {
    let coordinator = coordinator();
    let a = Cluster::start(&leased(&coordinator));
    let mut ca = a.connect();
    let ids_a = first_ids(&mut ca, "cluster A");
    let id_a = assert_one_identity(&ids_a, "cluster A");
    let x = id_a.0 * 32 + id_a.1;
    let mut last_a = *ids_a.last().unwrap();
    for _ in 0..5 {
        let more = mint(&mut ca, 100).expect("A mints");
        last_a = last_a.max(*more.last().unwrap());
    }
    // Every other identity held by a lease that lives an hour: the only
    // one a newcomer can take is A's, once A's lease has expired.
    coordinator.psql(
        "postgres",
        &format!(
            "UPDATE snowmint_identities SET lease = -1, holder = 'lease.rs filler', \
             instance = 1, ttl_ms = 4000, released = false, \
             expires_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000 \
             WHERE identity <> {x};"
        ),
    );
    a.pause();
    let paused = Instant::now();
    // B can only hold A's identity, after A's lease expired and one more
    // TTL (A did not release it).
    let b = Cluster::start(&leased(&coordinator));
    let mut cb = b.connect();
    let ids_b = first_ids(&mut cb, "cluster B");
    let id_b = assert_one_identity(&ids_b, "cluster B");
    assert_eq!(id_b, id_a, "B took A's identity (the only one free)");
    assert!(
        paused.elapsed() > Duration::from_secs(TTL_S),
        "B minted as A's identity {:?} after A was paused",
        paused.elapsed()
    );
    // B starts above everything A minted as that identity.
    assert!(
        ids_b[0] > last_a,
        "B's first ID {} is not above A's last {last_a}",
        ids_b[0]
    );
    a.resume();
    // A's first call after the pause is refused: its fence closed while it
    // was frozen, whatever its lease worker has seen yet.
    match mint(&mut ca, 1) {
        Ok(ids) => panic!(
            "A minted {ids:?} as {:?} after a pause past its TTL (B holds that identity)",
            identity_of(ids[0])
        ),
        Err(e) => {
            let (message, code) = db_error(&e);
            assert_eq!(code, "55000", "{message}");
            assert!(message.contains("leased identity"), "{message}");
            assert!(!message.contains(PASSWORD), "{message}");
        }
    }
    // And A never mints as B's identity again while B holds it (every
    // other identity is held: A holds none).
    let until = Instant::now() + Duration::from_secs(2 * TTL_S);
    while Instant::now() < until {
        let more_b = mint(&mut cb, 50).expect("B mints");
        assert_eq!(assert_one_identity(&more_b, "cluster B"), id_b);
        if let Ok(ids) = mint(&mut ca, 1) {
            panic!("A minted {ids:?} while B holds its old identity");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = identity_text(&mut ca);
    assert!(text.starts_with("none"), "{text}");
}

#[test]
fn a_copy_of_a_data_directory_holds_another_identity_or_refuses() {
    let coordinator = coordinator();
    let a = Cluster::start(&leased(&coordinator));
    let mut ca = a.connect();
    let ids = first_ids(&mut ca, "cluster A");
    let (dc, w) = assert_one_identity(&ids, "cluster A");
    drop(ca);
    // A consistent copy (as of a clean stop), started beside the original.
    a.stop_server();
    // A clean stop released the identity and ended the lease.
    let row = coordinator.psql(
        "postgres",
        &format!(
            "SELECT released, expires_ms FROM snowmint_identities WHERE identity = {};",
            dc * 32 + w
        ),
    );
    assert_eq!(row.trim(), "t|0", "A's identity after a clean stop");
    let copy = a.start_copy();
    a.start_server();
    let (mut ca, mut cc) = (a.connect(), copy.connect());
    let ids_a = first_ids(&mut ca, "cluster A after its restart");
    let id_a = assert_one_identity(&ids_a, "cluster A");
    let deadline = Instant::now() + Duration::from_secs(3 * TTL_S);
    let mut copy_minted = 0;
    while Instant::now() < deadline {
        let more_a = mint(&mut ca, 100).expect("A mints");
        assert_eq!(assert_one_identity(&more_a, "cluster A"), id_a);
        match mint(&mut cc, 100) {
            Ok(ids_c) => {
                let id_c = assert_one_identity(&ids_c, "the copy");
                assert_ne!(id_c, id_a, "the copy mints as its original's identity");
                copy_minted += ids_c.len();
            }
            Err(e) => {
                let (message, code) = db_error(&e);
                assert_eq!(code, "55000", "the copy: {message}");
            }
        }
    }
    assert!(
        copy_minted > 0,
        "the copy held no identity (all 1024 are free)\n{}",
        copy.log()
    );
}

#[test]
fn a_coordinator_and_an_identity_setting_together_are_refused() {
    let coordinator = coordinator();
    let setup = Setup {
        identity: Some((1, 2)),
        ..leased(&coordinator)
    };
    let failed = std::panic::catch_unwind(|| Cluster::start(&setup));
    let message = match failed {
        Ok(_) => panic!("a server with snowmint.coordinator and snowmint.worker started"),
        Err(panic) => panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default(),
    };
    assert!(
        message
            .contains("snowmint.coordinator and snowmint.datacenter, snowmint.worker are both set"),
        "{message}"
    );
    assert!(!message.contains(PASSWORD), "{message}");
}

#[test]
fn the_coordinators_mark_covers_ids_ahead_of_the_clock() {
    // A server restarted with its clock a minute back mints above its own
    // marks, a minute ahead of its clock; its lease session (whose clock
    // is the server's) keeps the coordinator's mark at that clock plus
    // 2 s. Each ID's time must still be covered by the coordinator's mark
    // of its identity: the identity's next holder starts above that mark.
    let coordinator = coordinator();
    let a = Cluster::start(&Setup {
        faketime: true,
        ..leased(&coordinator)
    });
    let mut ca = a.connect();
    let before = first_ids(&mut ca, "cluster A");
    drop(ca);
    a.stop_server();
    a.set_clock_offset_ms(-60_000);
    a.start_server();
    let mut ca = a.connect();
    let mut ids = first_ids(&mut ca, "cluster A, restarted a minute back");
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        ids.extend(mint(&mut ca, 1000).expect("A mints"));
    }
    let last = *ids.last().unwrap();
    assert!(last > *before.last().unwrap());
    let wall: i64 = ca
        .query_one(
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
            &[],
        )
        .unwrap()
        .get(0);
    let b = snowmint::decode(last as u64).unwrap();
    let ms = b.timestamp_ms as i64;
    assert!(
        ms - wall > 30_000,
        "the IDs run only {} ms ahead of the server's clock: nothing shown",
        ms - wall
    );
    let mark: i64 = coordinator
        .psql(
            "postgres",
            &format!(
                "SELECT mark FROM snowmint_identities WHERE identity = {};",
                b.datacenter * 32 + b.worker
            ),
        )
        .trim()
        .parse()
        .unwrap();
    assert!(
        mark >= ms,
        "the coordinator's mark {mark} is {} ms below the last ID's time {ms} (the IDs run {} ms \
         ahead of the server's clock)",
        ms - mark,
        ms - wall
    );
}

#[test]
fn minting_stops_within_the_ttl_when_the_coordinator_stops_answering() {
    let coordinator = coordinator();
    let a = Cluster::start(&leased(&coordinator));
    let mut ca = a.connect();
    let id = assert_one_identity(&first_ids(&mut ca, "cluster A"), "cluster A");
    // The coordinator frozen: no renewal answers. The fence closes at most
    // TTL - margin after the last renewal counted.
    coordinator.pause();
    let frozen = Instant::now();
    let refused = loop {
        match mint(&mut ca, 1) {
            Ok(ids) => assert_eq!(assert_one_identity(&ids, "cluster A"), id),
            Err(e) => break db_error(&e),
        }
        assert!(
            frozen.elapsed() < Duration::from_secs(TTL_S),
            "A still mints {:?} after the coordinator stopped answering (TTL {TTL_S} s)",
            frozen.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let (message, code) = refused;
    assert!(code == "55000" || code == "58030", "{code}: {message}");
    assert!(!message.contains(PASSWORD), "{message}");
    // Refused by the fence by now (not by a wait for a mark the frozen
    // coordinator does not take), then minting again once it answers.
    std::thread::sleep(Duration::from_secs(TTL_S));
    match mint(&mut ca, 1) {
        Ok(ids) => panic!("A minted {ids:?} with the coordinator frozen"),
        Err(e) => {
            let (message, code) = db_error(&e);
            assert_eq!(code, "55000", "{message}");
            assert!(message.contains("no leased identity"), "{message}");
        }
    }
    let text = identity_text(&mut ca);
    assert!(text.starts_with("none"), "{text}");
    coordinator.resume();
    first_ids(&mut ca, "cluster A, the coordinator back");
}

#[test]
fn a_lease_datacenter_scopes_the_identities_leased() {
    let coordinator = coordinator();
    let mut setup = leased(&coordinator);
    setup
        .settings
        .push(("snowmint.lease_datacenter".to_owned(), "5".to_owned()));
    let a = Cluster::start(&setup);
    let b = Cluster::start(&setup);
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let id_a = assert_one_identity(&first_ids(&mut ca, "cluster A"), "cluster A");
    let id_b = assert_one_identity(&first_ids(&mut cb, "cluster B"), "cluster B");
    assert_eq!((id_a.0, id_b.0), (5, 5), "datacenters leased");
    assert_ne!(id_a, id_b);
}
