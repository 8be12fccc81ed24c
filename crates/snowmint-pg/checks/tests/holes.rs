//! Issue 42's smaller holes, in a real PostgreSQL 15 server of each test's
//! own: no mint in a read-only transaction, layout slots no ordinary role can
//! use up, and one state for specs that mint the same IDs.
//!
//! Needs the extension installed (`scripts/pg-extension --test` installs it
//! and runs these).

use std::collections::HashSet;

use snowmint::Layout;
use snowmint_pg_checks::{Cluster, Setup, db_error};

/// The database's mark (`snowmint.mark`, Unix ms; 0 before the first).
fn db_mark(client: &mut postgres::Client) -> i64 {
    client
        .query_one(
            "SELECT coalesce(pg_sequence_last_value('snowmint.mark'), 0)",
            &[],
        )
        .expect("read snowmint.mark")
        .get(0)
}

#[test]
fn a_read_only_transaction_is_refused_and_changes_nothing() {
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    let first: i64 = client
        .query_one("SELECT snowmint.nextval()", &[])
        .unwrap()
        .get(0);
    let mark = db_mark(&mut client);
    assert!(mark > 0, "a mint raised the database's mark");
    // Past the mark, so that a mint would have to raise it.
    std::thread::sleep(std::time::Duration::from_millis(
        (mark - snowmint::unix_now_ms() as i64 + 200).max(0) as u64,
    ));
    for (how, setup) in [
        ("BEGIN READ ONLY", "BEGIN READ ONLY"),
        // A statement of its own, in a transaction that starts read-only.
        (
            "default_transaction_read_only",
            "SET default_transaction_read_only = on",
        ),
    ] {
        client.batch_execute(setup).unwrap();
        let err = client
            .query_one("SELECT snowmint.nextval()", &[])
            .unwrap_err();
        let (message, code) = db_error(&err);
        assert_eq!(code, "25006", "{how}: {message}");
        assert_eq!(
            message,
            "snowmint.nextval() cannot mint in a read-only transaction: minting writes the \
             database's mark (the sequence snowmint.mark) to WAL before it returns an ID",
            "{how}"
        );
        client
            .batch_execute("ROLLBACK; RESET default_transaction_read_only")
            .unwrap();
        assert_eq!(db_mark(&mut client), mark, "{how}: the mark did not move");
    }
    let next: i64 = client
        .query_one("SELECT snowmint.nextval()", &[])
        .unwrap()
        .get(0);
    assert!(next > first, "minting goes on after the refusals");
    assert!(db_mark(&mut client) > mark, "and raises the mark");
}

/// `count` distinct specs, none of any preset's geometry (their epochs
/// differ), each with 10 bits of node fields so identity 1/2 fits.
fn specs(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            format!(
                "epoch={};fields=timestamp:41,datacenter:5,worker:5,sequence:12",
                1_600_000_000_000u64 + i as u64
            )
        })
        .collect()
}

#[test]
fn no_ordinary_role_can_use_up_the_layout_slots() {
    let cluster = Cluster::start(&Setup::default());
    let mut admin = cluster.connect();
    admin
        .batch_execute(
            "CREATE ROLE app LOGIN; GRANT USAGE ON SCHEMA snowmint TO app;
             GRANT CREATE ON SCHEMA public TO app",
        )
        .unwrap();
    let mut app = postgres::Config::new()
        .host_path(cluster.socket_dir())
        .user("app")
        .dbname("postgres")
        .connect(postgres::NoTls)
        .expect("connect as app");
    // More distinct layouts than the server has slots: each refused, naming
    // the setting, and nothing registered.
    for spec in specs(40) {
        let err = app
            .query_one("SELECT snowmint.nextval($1)", &[&spec])
            .unwrap_err();
        let (message, code) = db_error(&err);
        assert_eq!(code, "55000", "{spec}: {message}");
        assert!(
            message.contains("snowmint.layouts") && message.contains(&spec),
            "{spec}: the refusal names the setting and the layout: {message}"
        );
    }
    // Every preset the identity fits still mints, for the ordinary role too.
    for preset in ["twitter", "discord"] {
        let id: i64 = app
            .query_one("SELECT snowmint.nextval($1)", &[&preset])
            .unwrap_or_else(|e| panic!("{preset} after 40 other layouts: {e}"))
            .get(0);
        assert!(id > 0);
    }
    // A layout a superuser listed mints, for anyone.
    let listed = specs(2);
    admin
        .batch_execute(&format!(
            "ALTER SYSTEM SET snowmint.layouts = '{}'",
            listed.join(" | ")
        ))
        .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for spec in &listed {
        let mut fresh = postgres::Config::new()
            .host_path(cluster.socket_dir())
            .user("app")
            .dbname("postgres")
            .connect(postgres::NoTls)
            .unwrap();
        let id: i64 = loop {
            match fresh.query_one("SELECT snowmint.nextval($1)", &[spec]) {
                Ok(row) => break row.get(0),
                Err(e) => {
                    assert!(std::time::Instant::now() < deadline, "{spec}, listed: {e}");
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
        };
        let layout = Layout::parse(spec).unwrap();
        let parts = layout.decode(snowmint::SnowflakeId::new(id as u64).unwrap());
        assert_eq!((parts.datacenter, parts.worker), (1, 2), "{spec}");
    }
    // Setting the list is a superuser's: an ordinary role cannot.
    let err = app
        .batch_execute("ALTER SYSTEM SET snowmint.layouts = 'x'")
        .unwrap_err();
    assert_eq!(db_error(&err).1, "42501");
}

#[test]
fn specs_that_mint_the_same_ids_share_one_state() {
    // Identity 3/3: a layout with the datacenter and worker fields swapped
    // mints the same IDs as Twitter's.
    let cluster = Cluster::start(&Setup {
        identity: Some((3, 3)),
        ..Setup::default()
    });
    let swapped = "epoch=1288834974657;fields=timestamp:41,worker:5,datacenter:5,sequence:12";
    let layout = Layout::parse(swapped).unwrap();
    assert_eq!(
        layout.compose(1288834975657, 3, 3, 7).unwrap(),
        Layout::TWITTER.compose(1288834975657, 3, 3, 7).unwrap(),
        "the swapped layout mints Twitter's IDs for identity 3/3"
    );
    let mut a = cluster.connect();
    let mut b = cluster.connect();
    let mut seen = HashSet::new();
    let mut last = 0i64;
    for round in 0..3_000 {
        for (client, spec) in [(&mut a, "twitter"), (&mut b, swapped)] {
            let id: i64 = client
                .query_one("SELECT snowmint.nextval($1)", &[&spec])
                .unwrap()
                .get(0);
            assert!(
                seen.insert(id),
                "round {round}: {id} ({spec}) was minted before"
            );
            assert!(id > last, "round {round}: {id} ({spec}) after {last}");
            last = id;
        }
    }
}
