//! The extension through its database's life (issue 42, first evidence
//! bullet): a promoted streaming standby, a point-in-time recovery from a
//! base backup and archived WAL, and a `pg_dump` restored into a new
//! cluster each mint their first IDs above every ID of the data they carry,
//! after a primary that minted with its clock ahead (libfaketime) and then
//! back, so that its IDs stood ahead of the wall clock (a forced lead).
//!
//! Needs the extension installed (`scripts/pg-extension --test` installs it
//! and runs these).

use std::sync::Barrier;

use snowmint_pg_checks::{
    Cluster, RecoveryTarget, Setup, db_error, faked_clock, wait_for_clock_offset,
};

/// How far ahead of the real time the primary's clock runs at first.
const AHEAD_MS: i64 = 120_000;

/// Rows minted in each of the primary's two phases (ahead, then back).
const ROWS: i64 = 2_000;

/// Sessions whose first IDs are checked on the server that carries the
/// data on.
const SESSIONS: usize = 4;

/// The lead a server may give IDs of its own making (design42: the reserve
/// window, 2 s, plus the borrowing bound, 3 s): a server that carries data
/// on starts above that data, and no further than this beyond the later of
/// the data's highest ID and its wall clock.
const OWN_LEAD_MS: i64 = 5_000;

/// Slack on top of [`OWN_LEAD_MS`] for a loaded machine.
const TOLERANCE_MS: i64 = 3_000;

/// Lines of the server's log in a failure message.
const LOG_LINES: usize = 40;

/// The table every test mints into, through its default.
const TABLE: &str = "CREATE TABLE events (
    id bigint PRIMARY KEY DEFAULT snowmint.nextval(),
    phase text NOT NULL
)";

/// The Unix ms of a twitter-layout ID.
fn ms(id: i64) -> i64 {
    snowmint::decode(id as u64)
        .unwrap_or_else(|e| panic!("{id} is not an ID: {e}"))
        .timestamp_ms as i64
}

/// The real time in Unix ms.
fn wall_ms() -> i64 {
    snowmint::unix_now_ms() as i64
}

/// Inserts `rows` rows of `phase` into `events`, keyed by the default.
fn insert(client: &mut postgres::Client, phase: &str, rows: i64) {
    client
        .execute(
            "INSERT INTO events (phase) SELECT $1 FROM generate_series(1, $2::bigint)",
            &[&phase, &rows],
        )
        .unwrap_or_else(|e| panic!("inserting {rows} rows of {phase}: {e}"));
}

/// `max(id)` and `count(*)` of `events` in `database`.
fn max_and_count(cluster: &Cluster, database: &str) -> (i64, i64) {
    let row = cluster
        .connect_to(database)
        .query_one("SELECT max(id), count(*) FROM events", &[])
        .unwrap();
    (row.get(0), row.get(1))
}

/// The primary's life before the event: `events` (made already in
/// `database`) gets [`ROWS`] rows minted with the clock [`AHEAD_MS`] ahead,
/// then [`ROWS`] more, in a new session, with the clock back at the real
/// time: those stay above the first (the primary's own promise), so they
/// too stand far ahead of the wall clock. Returns `max(id)`.
fn mint_ahead_then_back(primary: &Cluster, database: &str) -> i64 {
    primary.set_clock_offset_ms(AHEAD_MS);
    let mut client = primary.connect_to(database);
    wait_for_clock_offset(&mut client, AHEAD_MS);
    insert(&mut client, "ahead", ROWS);
    primary.set_clock_offset_ms(0);
    let mut client = primary.connect_to(database);
    wait_for_clock_offset(&mut client, 0);
    insert(&mut client, "back", ROWS);
    let row = client
        .query_one(
            "SELECT max(id) FILTER (WHERE phase = 'ahead'), min(id) FILTER (WHERE phase = 'back'),
                    max(id)
               FROM events",
            &[],
        )
        .unwrap();
    let (ahead_max, back_min, max): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert!(
        back_min > ahead_max,
        "the primary itself: with its clock back it minted {back_min}, not above {ahead_max} \
         minted with its clock {AHEAD_MS} ms ahead\n{}",
        primary.log_tail(LOG_LINES)
    );
    // Without a lead on the primary, this test would prove nothing.
    let lead = ms(max) - wall_ms();
    assert!(
        lead > AHEAD_MS / 2,
        "the primary's max(id) {max} stands {lead} ms ahead of the wall clock: expected more \
         than {} ms after minting {AHEAD_MS} ms ahead (else nothing here tests a stale mark)",
        AHEAD_MS / 2
    );
    max
}

/// The first ID of each of [`SESSIONS`] new sessions of `cluster` in
/// `database`, starting together, each from `INSERT INTO events ...
/// RETURNING id` (the table's default).
fn first_ids(cluster: &Cluster, database: &str, what: &str) -> Vec<i64> {
    let barrier = Barrier::new(SESSIONS);
    let answers: Vec<Result<i64, String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..SESSIONS)
            .map(|_| {
                scope.spawn(|| {
                    let mut client = cluster.connect_to(database);
                    barrier.wait();
                    client
                        .query_one(
                            "INSERT INTO events (phase) VALUES ('first') RETURNING id",
                            &[],
                        )
                        .map(|row| row.get::<_, i64>(0))
                        .map_err(|e| match e.as_db_error() {
                            Some(_) => format!("{:?}", db_error(&e)),
                            None => e.to_string(),
                        })
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    answers
        .into_iter()
        .enumerate()
        .map(|(i, answer)| {
            answer.unwrap_or_else(|e| {
                panic!(
                    "{what}: session {i} could not mint its first ID: {e}\n\
                     --- server log (last {LOG_LINES} lines) ---\n{}",
                    cluster.log_tail(LOG_LINES)
                )
            })
        })
        .collect()
}

/// Every ID of `firsts` (minted by `cluster`, `what`) is above `max`, the
/// highest ID of the data it carries; and its lead is bounded: no further
/// than [`OWN_LEAD_MS`] (+ [`TOLERANCE_MS`]) beyond the later of `max`'s
/// time and the wall clock.
fn assert_first_ids_above(cluster: &Cluster, what: &str, firsts: &[i64], max: i64) {
    let wall = wall_ms();
    let max_ms = ms(max);
    for (i, &id) in firsts.iter().enumerate() {
        assert!(
            id > max,
            "{what}: session {i}'s first ID is {id} (at {} ms, {:+} ms from the wall clock); \
             expected above {max}, the highest ID of the data it carries (at {max_ms} ms, \
             {:+} ms from the wall clock): it re-enters milliseconds its primary already used \
             (first IDs of all sessions: {firsts:?})\n\
             --- server log (last {LOG_LINES} lines) ---\n{}",
            ms(id),
            ms(id) - wall,
            max_ms - wall,
            cluster.log_tail(LOG_LINES)
        );
    }
    let bound = max_ms.max(wall) + OWN_LEAD_MS + TOLERANCE_MS;
    for (i, &id) in firsts.iter().enumerate() {
        assert!(
            ms(id) <= bound,
            "{what}: session {i}'s first ID {id} is at {} ms, {:+} ms from the wall clock and \
             {:+} ms from the time of the carried max(id) {max}; expected at most {bound} \
             (the later of those two plus {OWN_LEAD_MS} ms of the server's own lead and \
             {TOLERANCE_MS} ms of slack): the first IDs must be above max(id), so their lead \
             is at least max(id)'s ({:+} ms), but no more than that bound beyond it\n\
             --- server log (last {LOG_LINES} lines) ---\n{}",
            ms(id),
            ms(id) - wall,
            ms(id) - max_ms,
            max_ms - wall,
            cluster.log_tail(LOG_LINES)
        );
    }
}

#[test]
fn a_standby_promoted_after_its_primary_minted_ahead_mints_above_every_replicated_id() {
    let primary = Cluster::start(&faked_clock());
    primary.sql(TABLE);
    // The standby is made while the primary's clock is right: its copy of
    // whatever the primary keeps outside WAL is of that time.
    insert(&mut primary.connect(), "before", 100);
    let standby = primary.standby();
    let max = mint_ahead_then_back(&primary, "postgres");
    standby.catch_up(&primary);
    let (replicated_max, replicated) = max_and_count(&standby, "postgres");
    assert_eq!(
        (replicated_max, replicated),
        (max, 100 + 2 * ROWS),
        "the standby caught up"
    );
    // The primary's machine dies; the standby takes over.
    primary.kill();
    standby.promote();
    let firsts = first_ids(&standby, "postgres", "the promoted standby");
    assert_first_ids_above(&standby, "the promoted standby", &firsts, replicated_max);
}

#[test]
fn point_in_time_recovery_after_minting_ahead_mints_above_every_restored_id() {
    let primary = Cluster::start(&Setup {
        archive_wal: true,
        ..faked_clock()
    });
    primary.sql(TABLE);
    insert(&mut primary.connect(), "before", 100);
    // The base backup is taken before the minting: the minting reaches the
    // restored server through archived WAL only.
    let backup = primary.base_backup();
    let max = mint_ahead_then_back(&primary, "postgres");
    let target = primary.current_wal_lsn();
    // Rows after the target, which the recovery must not restore.
    insert(&mut primary.connect(), "after the target", 100);
    primary.archive_current_wal();
    primary.stop_server();
    let restored = primary.restore(&Setup::default(), &backup, RecoveryTarget::Lsn(target));
    let (restored_max, count) = max_and_count(&restored, "postgres");
    assert_eq!(
        (restored_max, count),
        (max, 100 + 2 * ROWS),
        "the server recovered to the target has the rows up to it, no more\n{}",
        restored.log_tail(LOG_LINES)
    );
    let firsts = first_ids(
        &restored,
        "postgres",
        "the server recovered to a point in time",
    );
    assert_first_ids_above(
        &restored,
        "the server recovered to a point in time",
        &firsts,
        restored_max,
    );
}

#[test]
fn a_pg_dump_of_a_database_minted_ahead_restored_into_a_new_cluster_mints_above_its_ids() {
    let primary = Cluster::start(&faked_clock());
    primary.sql("CREATE DATABASE app");
    primary.psql("app", &format!("CREATE EXTENSION snowmint;\n{TABLE};"));
    insert(&mut primary.connect_to("app"), "before", 100);
    let max = mint_ahead_then_back(&primary, "app");
    let dump = primary.pg_dump("app");
    // What the dump carries of the extension (for the messages).
    let of_ours: Vec<&str> = dump
        .lines()
        .filter(|l| l.contains("EXTENSION") || l.contains("setval"))
        .collect();
    assert!(
        dump.contains("CREATE EXTENSION IF NOT EXISTS snowmint"),
        "pg_dump emits the extension: {of_ours:#?}"
    );
    // A new cluster with the same identity; the restore creates the
    // extension in a new database.
    let fresh = Cluster::start_without_extension(&Setup::default());
    fresh.sql("CREATE DATABASE app");
    fresh.psql("app", &dump);
    let (restored_max, count) = max_and_count(&fresh, "app");
    assert_eq!(
        (restored_max, count),
        (max, 100 + 2 * ROWS),
        "the restored rows"
    );
    let what = format!(
        "the new cluster restored from pg_dump (the dump's lines of the extension: {of_ours:?})"
    );
    let firsts = first_ids(&fresh, "app", &what);
    assert_first_ids_above(&fresh, &what, &firsts, restored_max);
}

/// A promoted standby does not trust its copy of the cluster mark (it is on
/// a new timeline): besides the databases' marks, it starts above its clock
/// plus the most an old primary's IDs run ahead of its own clock (design42:
/// 5 s), since IDs the old primary handed out after the last replicated mark
/// are in no mark it has. A restart on its own timeline trusts its mark
/// again: no such jump.
#[test]
fn a_promoted_standby_starts_above_its_clock_plus_the_old_primarys_lead() {
    let primary = Cluster::start(&Setup::default());
    let standby = primary.standby();
    let mut client = primary.connect();
    client.batch_execute(TABLE).unwrap();
    insert(&mut client, "primary", ROWS);
    standby.catch_up(&primary);
    primary.kill();
    let promoted_at = wall_ms();
    standby.promote();
    let mut client = standby.connect();
    let first: i64 = client
        .query_one("SELECT snowmint.nextval()", &[])
        .unwrap_or_else(|e| {
            panic!(
                "first mint after promotion: {e}\n{}",
                standby.log_tail(LOG_LINES)
            )
        })
        .get(0);
    let after = wall_ms();
    let lead_from_promotion = ms(first) - promoted_at;
    assert!(
        lead_from_promotion >= OWN_LEAD_MS,
        "the promoted standby's first ID is at {} ms, {lead_from_promotion} ms after the \
         promotion began; expected at least {OWN_LEAD_MS} ms (its clock plus the old primary's \
         lead bound)\n{}",
        ms(first),
        standby.log_tail(LOG_LINES)
    );
    assert!(
        ms(first) - after <= OWN_LEAD_MS + TOLERANCE_MS,
        "the first ID leads the clock by {} ms, more than {OWN_LEAD_MS} ms + {TOLERANCE_MS} ms",
        ms(first) - after
    );
    assert!(
        standby.log().contains("IDs start above"),
        "the promoted standby says where IDs start\n{}",
        standby.log_tail(LOG_LINES)
    );
    // A restart on the new timeline trusts the mark: no second jump.
    standby.stop_server();
    standby.start_server();
    let again: i64 = standby
        .connect()
        .query_one("SELECT snowmint.nextval()", &[])
        .unwrap()
        .get(0);
    assert!(again > first, "{again} after {first}");
    let jumps = standby.log().matches("IDs start above").count();
    assert_eq!(
        jumps,
        1,
        "only the promotion untrusts the mark\n{}",
        standby.log_tail(LOG_LINES)
    );
}
