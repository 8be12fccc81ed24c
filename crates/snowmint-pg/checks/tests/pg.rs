//! The extension in a real PostgreSQL 15 server of each test's own.
//!
//! Needs the extension installed (`scripts/pg-extension --test` installs it
//! and runs these).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use postgres::types::ToSql;
use rand::{Rng, SeedableRng, rngs::StdRng};
use snowmint::sql::{self, Dialect, Options};
use snowmint::{Field, Layout};
use snowmint_pg_checks::{
    Cluster, Setup, assert_increasing, db_error, faked_clock, mint, wait_for_clock_offset,
};

/// The message and SQLSTATE of `call`, which must fail.
fn refusal(client: &mut postgres::Client, call: &str) -> (String, String) {
    db_error(&client.query_one(call, &[]).unwrap_err())
}

/// The reading functions answer (they need no preloading, no identity and
/// no mark).
fn assert_reads(client: &mut postgres::Client) {
    let ms: i64 = client
        .query_one("SELECT snowmint.unix_ms(4194439168)", &[])
        .unwrap()
        .get(0);
    assert_eq!(ms, 1288834975657);
}

#[test]
fn concurrent_sessions_mint_unique_increasing_ids() {
    const SESSIONS: usize = 8;
    const PER_SESSION: i64 = 200_000;
    let cluster = Arc::new(Cluster::start(&Setup::default()));
    let barrier = Arc::new(Barrier::new(SESSIONS));
    let threads: Vec<_> = (0..SESSIONS)
        .map(|_| {
            let (cluster, barrier) = (cluster.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut client = cluster.connect();
                barrier.wait();
                // In statements of 20,000, so the sessions interleave.
                (0..PER_SESSION / 20_000)
                    .flat_map(|_| mint(&mut client, 20_000))
                    .collect::<Vec<i64>>()
            })
        })
        .collect();
    let per_session: Vec<Vec<i64>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let mut all = HashSet::new();
    for (i, ids) in per_session.iter().enumerate() {
        assert_eq!(ids.len() as i64, PER_SESSION);
        assert_increasing(ids, &format!("session {i}"));
        for &id in ids {
            assert!(all.insert(id), "{id} minted twice");
            let parts = snowmint::decode(id as u64).unwrap();
            assert_eq!((parts.datacenter, parts.worker), (1, 2), "{id}");
        }
    }
    assert_eq!(all.len(), SESSIONS * PER_SESSION as usize);
    // The sessions really ran at once: every session's span overlaps another's.
    for (i, a) in per_session.iter().enumerate() {
        let overlaps = per_session
            .iter()
            .enumerate()
            .any(|(j, b)| i != j && a[0] < *b.last().unwrap() && b[0] < *a.last().unwrap());
        assert!(overlaps, "session {i} ran alone");
    }
}

#[test]
fn layouts_of_the_same_bits_share_one_sequence() {
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    // Twitter's bits under other names: another spec, the same IDs.
    let spec = "epoch=1288834974657;fields=timestamp:41,dc:5,node:5,seq:12";
    let renamed = Layout::parse(spec).unwrap();
    assert_eq!(renamed.name(), "custom");
    assert_eq!(
        renamed.compose(1288834975657, 1, 1, 0).unwrap().get(),
        4194439168
    );
    let mut ids = Vec::new();
    for _ in 0..2_000 {
        for layout in ["twitter", spec] {
            ids.push(
                client
                    .query_one("SELECT snowmint.nextval($1)", &[&layout])
                    .unwrap()
                    .get::<_, i64>(0),
            );
        }
    }
    assert_increasing(&ids, "twitter by name and by spec");
    // Another layout mints with its own fields.
    let id: i64 = client
        .query_one("SELECT snowmint.nextval('discord')", &[])
        .unwrap()
        .get(0);
    let parts = Layout::DISCORD.decode(snowmint::SnowflakeId::new(id as u64).unwrap());
    assert_eq!((parts.datacenter, parts.worker), (1, 2));
    // An identity that does not fit a layout is refused, naming both.
    let (message, code) = refusal(&mut client, "SELECT snowmint.nextval('instagram')");
    assert_eq!(code, "55000");
    assert_eq!(
        message,
        "snowmint.nextval() cannot mint as datacenter 1, worker 2 in layout instagram: \
         datacenter must be 0..=0, got 1"
    );
}

#[test]
fn a_restart_with_the_clock_an_hour_back_mints_above_every_earlier_id() {
    let cluster = Cluster::start(&faked_clock());
    let before = mint(&mut cluster.connect(), 50_000);
    cluster.stop_server();
    restart_an_hour_back_minting_above(&cluster, &before, "after the restart");
}

/// Starts the stopped (or killed) server again with its wall clock an hour
/// back: it mints above every ID of `before`, in increasing order.
fn restart_an_hour_back_minting_above(cluster: &Cluster, before: &[i64], what: &str) {
    let highest = *before.iter().max().unwrap();
    cluster.set_clock_offset_ms(-3_600_000);
    cluster.start_server();
    let mut client = cluster.connect();
    wait_for_clock_offset(&mut client, -3_600_000);
    let after = mint(&mut client, 50_000);
    assert_increasing(&after, what);
    assert!(after[0] > highest, "{} after {highest}", after[0]);
    // The lead (about an hour) is absorbed as the wall clock advances, not
    // kept as a fixed offset: over 5 s it shrinks by the wall clock's
    // advance, give or take 1.5 s.
    let (id1, lead1, wall1) = lead(&mut client);
    assert!(id1 > *after.last().unwrap(), "{what}");
    assert!(
        lead1 > 3_500_000,
        "{what}: a lead of {lead1} ms, not about an hour"
    );
    std::thread::sleep(Duration::from_secs(5));
    let (id2, lead2, wall2) = lead(&mut client);
    assert!(id2 > id1, "{what}: {id2} after {id1}");
    let (advance, shrink) = (wall2 - wall1, lead1 - lead2);
    assert!(
        (shrink - advance).abs() <= 1_500,
        "{what}: the lead went from {lead1} ms to {lead2} ms while the wall clock advanced \
         {advance} ms: it shrank by {shrink} ms, not second for second"
    );
}

/// One fresh ID: the ID, its lead over the server's wall clock and that
/// wall clock (Unix ms), read in the same statement after `nextval`
/// (`MATERIALIZED`: it runs once, first).
fn lead(client: &mut postgres::Client) -> (i64, i64, i64) {
    let row = client
        .query_one(
            "WITH m AS MATERIALIZED (SELECT snowmint.nextval() AS id) \
             SELECT id, (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM m",
            &[],
        )
        .expect("nextval");
    let (id, wall): (i64, i64) = (row.get(0), row.get(1));
    let ms = snowmint::decode(id as u64).unwrap().timestamp_ms as i64;
    (id, ms - wall, wall)
}

#[test]
fn kill_9_of_the_postmaster_then_a_clock_an_hour_back_mints_above_every_earlier_id() {
    let cluster = Arc::new(Cluster::start(&faked_clock()));
    // A session minting as the postmaster dies: every ID it received
    // counts, also those its orphaned backend minted after the kill.
    let received = Arc::new(AtomicUsize::new(0));
    let minting = {
        let (cluster, received) = (cluster.clone(), received.clone());
        std::thread::spawn(move || {
            let mut client = cluster.connect();
            let mut got = Vec::new();
            while let Ok(rows) = client.query(
                "SELECT snowmint.nextval() FROM generate_series(1, 2000)",
                &[],
            ) {
                got.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
                received.store(got.len(), Ordering::Release);
            }
            got
        })
    };
    // Kill once the session is well under way (a bounded wait for it).
    let deadline = Instant::now() + Duration::from_secs(60);
    while received.load(Ordering::Acquire) < 20_000 {
        assert!(
            Instant::now() < deadline && !minting.is_finished(),
            "the session did not mint"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    cluster.kill_postmaster();
    let before = minting.join().unwrap();
    restart_an_hour_back_minting_above(&cluster, &before, "after the crash");
}

#[test]
fn the_clock_stepping_back_while_running_changes_nothing() {
    let cluster = Cluster::start(&faked_clock());
    let mut client = cluster.connect();
    let before = mint(&mut client, 50_000);
    cluster.set_clock_offset_ms(-3_600_000);
    wait_for_clock_offset(&mut client, -3_600_000);
    let after = mint(&mut client, 50_000);
    assert_increasing(&[before.clone(), after.clone()].concat(), "across the step");
    let fresh = mint(&mut cluster.connect(), 50_000);
    assert!(fresh[0] > *after.last().unwrap());
}

#[test]
fn an_unset_identity_is_refused_until_both_settings_are_given() {
    let cluster = Cluster::start(&Setup {
        identity: None,
        ..Setup::default()
    });
    let mut client = cluster.connect();
    for call in ["SELECT snowmint.nextval()", "SELECT snowmint.identity()"] {
        let (message, code) = refusal(&mut client, call);
        assert_eq!(code, "55000", "{call}");
        assert_eq!(
            message,
            "snowmint.datacenter and snowmint.worker are not set: snowmint.nextval() mints only \
             as an identity it was given; set snowmint.datacenter (0..=31) and snowmint.worker \
             (0..=31) in postgresql.conf or with ALTER SYSTEM, then reload",
            "{call}"
        );
    }
    set_and_reload(&mut client, "snowmint.datacenter", 3);
    wait_for_setting(&mut client, "snowmint.datacenter", "3");
    let (message, _) = refusal(&mut client, "SELECT snowmint.nextval()");
    assert!(
        message.starts_with("snowmint.worker is not set: "),
        "{message}"
    );
    // Out of range, and not settable by a session: PostgreSQL refuses both.
    let (message, _) = db_error(
        &client
            .batch_execute("ALTER SYSTEM SET snowmint.worker = 32")
            .unwrap_err(),
    );
    assert_eq!(
        message,
        "32 is outside the valid range for parameter \"snowmint.worker\" (-1 .. 31)"
    );
    let (message, _) = db_error(&client.batch_execute("SET snowmint.worker = 4").unwrap_err());
    assert_eq!(
        message,
        "parameter \"snowmint.worker\" cannot be changed now"
    );
    // A misspelt setting of ours is refused, not kept.
    let err = client
        .batch_execute("ALTER SYSTEM SET snowmint.wroker = 4")
        .unwrap_err();
    assert!(db_error(&err).0.contains("snowmint.wroker"), "{err}");
    set_and_reload(&mut client, "snowmint.worker", 5);
    wait_for_setting(&mut client, "snowmint.worker", "5");
    let identity: String = client
        .query_one("SELECT snowmint.identity()", &[])
        .unwrap()
        .get(0);
    assert_eq!(identity, "datacenter 3, worker 5");
    let id: i64 = client
        .query_one("SELECT snowmint.nextval()", &[])
        .unwrap()
        .get(0);
    let parts = snowmint::decode(id as u64).unwrap();
    assert_eq!((parts.datacenter, parts.worker), (3, 5));
}

/// `ALTER SYSTEM SET name = value`, then a reload.
fn set_and_reload(client: &mut postgres::Client, name: &str, value: i32) {
    client
        .batch_execute(&format!("ALTER SYSTEM SET {name} = {value}"))
        .unwrap();
    client.batch_execute("SELECT pg_reload_conf()").unwrap();
}

/// Waits (bounded) until this session sees `name = value` after a reload.
fn wait_for_setting(client: &mut postgres::Client, name: &str, value: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now: String = client
            .query_one(&format!("SHOW {name}"), &[])
            .unwrap()
            .get(0);
        if now == value {
            return;
        }
        assert!(Instant::now() < deadline, "{name} stayed {now}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn without_preloading_nextval_is_refused_and_reading_works() {
    let cluster = Cluster::start(&Setup {
        preload: false,
        ..Setup::default()
    });
    let mut client = cluster.connect();
    let (message, code) = refusal(&mut client, "SELECT snowmint.nextval()");
    assert_eq!(code, "55000");
    assert!(message.contains("shared_preload_libraries"), "{message}");
    assert_reads(&mut client);
}

/// Random IDs of `layout`, with its smallest and largest.
fn random_ids(rng: &mut StdRng, layout: &Layout, count: usize) -> Vec<i64> {
    let mut ids: Vec<i64> = (0..count - 2)
        .map(|_| (rng.random::<u64>() & layout.max_id()) as i64)
        .collect();
    ids.extend([0, layout.max_id() as i64]);
    ids
}

/// A preset as its own source draws it, written out here rather than
/// taken from the core: its name, epoch (Unix ms), time unit (ms) and the
/// fields below the time as (name, shift, bits); the time's shift is the
/// sum of their bits.
type Source = (&'static str, i64, i64, &'static [(&'static str, u32, u32)]);

const SOURCES: [Source; 5] = [
    // twitter-archive/snowflake, IdWorker.scala: twepoch = 1288834974657L,
    // datacenterIdShift = 17, workerIdShift = 12, sequenceBits = 12.
    (
        "twitter",
        1_288_834_974_657,
        1,
        &[
            ("datacenter", 17, 5),
            ("worker", 12, 5),
            ("sequence", 0, 12),
        ],
    ),
    // Discord developer docs, Reference > Snowflakes: (snowflake >> 22) +
    // 1420070400000, (snowflake & 0x3E0000) >> 17, (snowflake & 0x1F000) >>
    // 12, snowflake & 0xFFF.
    (
        "discord",
        1_420_070_400_000,
        1,
        &[("worker", 17, 5), ("process", 12, 5), ("increment", 0, 12)],
    ),
    // "Sharding & IDs at Instagram" (2012): our_epoch := 1314220021721,
    // (now_millis - our_epoch) << 23 | shard_id << 10 | seq_id.
    (
        "instagram",
        1_314_220_021_721,
        1,
        &[("shard", 10, 13), ("sequence", 0, 10)],
    ),
    // sony/sonyflake v1: start 2014-09-01T00:00:00Z, units of 10 ms,
    // elapsedTime << (8 + 16) | sequence << 16 | machineID.
    (
        "sonyflake",
        1_409_529_600_000,
        10,
        &[("sequence", 16, 8), ("machine", 0, 16)],
    ),
    // mastodon lib/mastodon/snowflake.rb: Unix ms << 16 | sequence data.
    ("mastodon", 0, 1, &[("sequence_data", 0, 16)]),
];

/// The extension's reading functions against [`SOURCES`] (and the
/// documented examples), not against anything generated from the core's
/// constants: a preset drifting from its source fails here.
fn assert_presets_as_their_sources_draw_them(client: &mut postgres::Client, rng: &mut StdRng) {
    const COUNT: usize = 2_000;
    // Documented examples: Discord's 175928847299117063 is
    // 2016-04-30T11:18:25.796Z, worker 1, process 0, increment 7;
    // Instagram's worked example 1387263000 ms after its epoch, shard 1341,
    // sequence 905.
    let instagram = (1_387_263_000i64 << 23) | (1341 << 10) | 905;
    for (call, expected) in [
        (
            "snowmint.unix_ms(175928847299117063, 'discord')".to_owned(),
            1_462_015_105_796,
        ),
        (
            "snowmint.field(175928847299117063, 'worker', 'discord')".to_owned(),
            1,
        ),
        (
            "snowmint.field(175928847299117063, 'increment', 'discord')".to_owned(),
            7,
        ),
        (
            format!("snowmint.unix_ms({instagram}, 'instagram')"),
            1_314_220_021_721 + 1_387_263_000,
        ),
        (
            format!("snowmint.field({instagram}, 'shard', 'instagram')"),
            1341,
        ),
    ] {
        let got: i64 = client
            .query_one(&format!("SELECT {call}"), &[])
            .unwrap_or_else(|e| panic!("{call}: {e}"))
            .get(0);
        assert_eq!(got, expected, "{call}");
    }
    for (name, epoch, unit, fields) in SOURCES {
        let shift: u32 = fields.iter().map(|f| f.2).sum();
        let layout = Layout::by_name(name).unwrap();
        let ids = random_ids(rng, &layout, COUNT);
        let ms: Vec<i64> = ids.iter().map(|id| (id >> shift) * unit + epoch).collect();
        let values: Vec<Vec<i64>> = fields
            .iter()
            .map(|&(_, at, bits)| {
                ids.iter()
                    .map(|id| (id >> at) & ((1 << bits) - 1))
                    .collect()
            })
            .collect();
        let columns: Vec<String> = (0..fields.len()).map(|i| format!("f{i}")).collect();
        let mut checks = vec![
            "snowmint.unix_ms(id, $1) IS DISTINCT FROM ms".to_owned(),
            format!(
                "snowmint.compose(ms, ARRAY[{}]::bigint[], $1) IS DISTINCT FROM id",
                columns.join(", ")
            ),
            // The first ID of the unit: the time's bits alone.
            format!(
                "snowmint.min_id(to_timestamp(ms / 1000) + ms % 1000 * interval '1 ms', $1) IS DISTINCT FROM id >> {shift} << {shift}"
            ),
        ];
        for (i, (field, _, _)) in fields.iter().enumerate() {
            checks.push(format!(
                "snowmint.field(id, '{field}', $1) IS DISTINCT FROM f{i}"
            ));
        }
        let unnest: Vec<String> = (0..fields.len() + 2)
            .map(|i| format!("${}::bigint[]", i + 2))
            .collect();
        let query = format!(
            "SELECT count(*) FILTER (WHERE {}), count(*) FROM unnest({}) AS t(id, ms, {})",
            checks.join(" OR "),
            unnest.join(", "),
            columns.join(", ")
        );
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&name, &ids, &ms];
        params.extend(values.iter().map(|v| v as &(dyn ToSql + Sync)));
        let row = client.query_one(&query, &params).unwrap();
        assert_eq!(
            (row.get::<_, i64>(0), row.get::<_, i64>(1)),
            (0, COUNT as i64),
            "{name}: {query}"
        );
    }
}

#[test]
fn the_reading_functions_agree_with_snowmint_sql_postgres() {
    const COUNT: usize = 10_000;
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    let mut rng = StdRng::seed_from_u64(31);
    assert_presets_as_their_sources_draw_them(&mut client, &mut rng);
    for layout in Layout::PRESETS {
        let name = layout.name();
        let prefix = format!("ref_{name}_");
        let script = sql::functions(
            Dialect::Postgres,
            &layout,
            &Options {
                prefix: &prefix,
                ..Options::default()
            },
        )
        .unwrap();
        client.batch_execute(&script).unwrap();

        // Decoding: every function of an ID.
        let ids = random_ids(&mut rng, &layout, COUNT);
        let mut checks = vec![
            format!("{prefix}time(id) IS DISTINCT FROM snowmint.time(id, $2)"),
            format!("{prefix}unix_ms(id) IS DISTINCT FROM snowmint.unix_ms(id, $2)"),
        ];
        for f in layout.node_fields() {
            let fname = f.name();
            checks.push(format!(
                "{prefix}{fname}(id) IS DISTINCT FROM snowmint.field(id, '{fname}', $2)"
            ));
            if let Some(slot @ (Field::Datacenter | Field::Worker | Field::Sequence)) = f.slot()
                && f.bits() <= 31
            {
                checks.push(format!(
                    "{prefix}{fname}(id) IS DISTINCT FROM snowmint.{}(id, $2)",
                    slot.name()
                ));
            }
        }
        let query = format!(
            "SELECT count(*) FILTER (WHERE {}), count(*) FROM unnest($1::bigint[]) AS id",
            checks.join(" OR ")
        );
        let row = client.query_one(&query, &[&ids, &name]).unwrap();
        assert_eq!(
            (row.get::<_, i64>(0), row.get::<_, i64>(1)),
            (0, COUNT as i64),
            "{name}: {query}"
        );

        // min_id and max_id of random times in the layout's range.
        let (lo, hi) = (layout.min_timestamp_ms(), layout.max_timestamp_ms());
        let times: Vec<std::time::SystemTime> = (0..COUNT)
            .map(|i| match i {
                0 => lo,
                1 => hi,
                _ => rng.random_range(lo..=hi),
            })
            .map(|ms| std::time::UNIX_EPOCH + Duration::from_millis(ms))
            .collect();
        let query = format!(
            "SELECT count(*) FILTER (WHERE {prefix}min_id(ts) IS DISTINCT FROM snowmint.min_id(ts, $2) \
             OR {prefix}max_id(ts) IS DISTINCT FROM snowmint.max_id(ts, $2)), \
             count({prefix}min_id(ts)) FROM unnest($1::timestamptz[]) AS ts"
        );
        let row = client.query_one(&query, &[&times, &name]).unwrap();
        assert_eq!(
            (row.get::<_, i64>(0), row.get::<_, i64>(1)),
            (0, COUNT as i64),
            "{name}: {query}"
        );

        // compose of random values, with the parameter types of the script.
        let fields: Vec<_> = layout.node_fields().collect();
        let mut columns: Vec<Vec<i64>> = vec![
            (0..COUNT)
                .map(|_| rng.random_range(lo..=hi) as i64)
                .collect(),
        ];
        for f in &fields {
            columns.push(
                (0..COUNT)
                    .map(|_| rng.random_range(0..=f.max()) as i64)
                    .collect(),
            );
        }
        let cast = |bits: u32| if bits <= 31 { "integer" } else { "bigint" };
        let args: Vec<String> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| format!("c{}::{}", i + 1, cast(f.bits())))
            .collect();
        let array: Vec<String> = (1..=fields.len()).map(|i| format!("c{i}")).collect();
        let unnest: Vec<String> = (1..=columns.len())
            .map(|i| format!("${i}::bigint[]"))
            .collect();
        let names: Vec<String> = (0..columns.len()).map(|i| format!("c{i}")).collect();
        let layout_param = columns.len() + 1;
        let mut query = format!(
            "SELECT count(*) FILTER (WHERE {prefix}compose(c0, {}) IS DISTINCT FROM snowmint.compose(c0, ARRAY[{}], ${layout_param})",
            args.join(", "),
            array.join(", ")
        );
        if name == "twitter" {
            query.push_str(&format!(
                " OR {prefix}compose(c0, {}) IS DISTINCT FROM snowmint.compose(c0, {})",
                args.join(", "),
                args.join(", ")
            ));
        }
        query.push_str(&format!(
            "), count({prefix}compose(c0, {})) FROM unnest({}) AS t({})",
            args.join(", "),
            unnest.join(", "),
            names.join(", ")
        ));
        let mut params: Vec<&(dyn ToSql + Sync)> =
            columns.iter().map(|c| c as &(dyn ToSql + Sync)).collect();
        params.push(&name);
        let row = client.query_one(&query, &params).unwrap();
        assert_eq!(
            (row.get::<_, i64>(0), row.get::<_, i64>(1)),
            (0, COUNT as i64),
            "{name}: {query}"
        );
    }
}

#[test]
fn the_reading_functions_refuse_input_out_of_range_naming_it() {
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    for (call, expected) in [
        (
            "SELECT snowmint.compose(1288834975657, 32, 0, 0)",
            "datacenter must be 0..=31, got 32",
        ),
        (
            "SELECT snowmint.compose(1288834975657, 0, 0, -1)",
            "sequence must be 0..=4095, got -1",
        ),
        (
            "SELECT snowmint.compose(1462015105796, ARRAY[1, 32, 0], 'discord')",
            "process must be 0..=31, got 32",
        ),
        (
            "SELECT snowmint.compose(1462015105796, ARRAY[1, 2], 'discord')",
            "fields must have 3 values (worker, process, increment) for layout discord, got 2",
        ),
        ("SELECT snowmint.time(4194439168, 'nope')", ""),
        (
            "SELECT snowmint.field(4194439168, 'shard')",
            "layout twitter has no field \"shard\" below the time; its fields are timestamp, datacenter, worker, sequence",
        ),
        (
            "SELECT snowmint.datacenter(4194439168, 'instagram')",
            "layout instagram has no datacenter field; its fields are timestamp, shard, sequence",
        ),
        (
            "SELECT snowmint.min_id('infinity')",
            "ts must be a finite time, got infinity",
        ),
    ] {
        let (message, code) = refusal(&mut client, call);
        assert_eq!(code, "22023", "{call}: {message}");
        if expected.is_empty() {
            let core = Layout::parse("nope").unwrap_err().to_string();
            assert_eq!(message, core, "{call}");
        } else {
            assert_eq!(message, expected, "{call}");
        }
    }
    // Messages from the core, as the other surfaces print them.
    for (call, core) in [
        (
            "SELECT snowmint.time(-1)",
            "-1".parse::<snowmint::SnowflakeId>()
                .unwrap_err()
                .to_string(),
        ),
        (
            "SELECT snowmint.compose(1288834974656, 0, 0, 0)",
            snowmint::parse_timestamp("1288834974656", 0)
                .unwrap_err()
                .to_string(),
        ),
        (
            "SELECT snowmint.min_id('2000-01-01Z')",
            snowmint::parse_timestamp("946684800000", 0)
                .unwrap_err()
                .to_string(),
        ),
    ] {
        let (message, code) = refusal(&mut client, call);
        assert_eq!(
            (message.as_str(), code.as_str()),
            (core.as_str(), "22023"),
            "{call}"
        );
    }
}

#[test]
fn identity_columns_and_sequences_convert_as_docs_sql_md_says() {
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE events (id bigserial PRIMARY KEY, body text, n integer);
             CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, n integer);
             INSERT INTO events (body) SELECT 'old' FROM generate_series(1, 100);
             INSERT INTO orders (body) SELECT 'old' FROM generate_series(1, 100);",
        )
        .unwrap();
    // The statements of docs/sql.md, "Converting an IDENTITY column or a sequence".
    client
        .batch_execute(
            "ALTER TABLE events ALTER COLUMN id SET DEFAULT snowmint.nextval();
             DROP SEQUENCE events_id_seq;
             ALTER TABLE orders ALTER COLUMN id DROP IDENTITY IF EXISTS;
             ALTER TABLE orders ALTER COLUMN id SET DEFAULT snowmint.nextval();",
        )
        .unwrap();
    for table in ["events", "orders"] {
        client
            .batch_execute(&format!(
                "INSERT INTO {table} (body, n) SELECT 'new', g FROM generate_series(1, 1000) AS g"
            ))
            .unwrap();
        // The primary key already refuses a duplicate; what the default
        // must also do: mint IDs of this server's identity, at about now,
        // increasing in insertion order (bigserial's 101, 102, ... are
        // neither).
        let row = client
            .query_one(
                &format!(
                    "SELECT max(id) FILTER (WHERE body = 'old'), min(id) FILTER (WHERE body = 'new'),
                            count(*) FILTER (WHERE body = 'new'),
                            count(*) FILTER (WHERE body = 'new' AND (
                                snowmint.worker(id) <> 2 OR snowmint.datacenter(id) <> 1
                                OR snowmint.time(id) NOT BETWEEN now() - interval '1 minute'
                                                             AND clock_timestamp() + interval '6 seconds')),
                            (SELECT count(*) FROM (
                                SELECT id <= lag(id) OVER (ORDER BY n) AS lower
                                  FROM {table} WHERE body = 'new') AS o WHERE lower)
                       FROM {table}"
                ),
                &[],
            )
            .unwrap();
        let (old, new): (i64, i64) = (row.get(0), row.get(1));
        assert_eq!(old, 100, "{table}");
        assert!(new > old, "{table}");
        assert_eq!(row.get::<_, i64>(2), 1000, "{table}");
        assert_eq!(
            row.get::<_, i64>(3),
            0,
            "{table}: new IDs not of datacenter 1, worker 2 at about now"
        );
        assert_eq!(
            row.get::<_, i64>(4),
            0,
            "{table}: new IDs not increasing in insertion order"
        );
    }
}

#[test]
fn a_standby_refuses_to_mint() {
    let primary = Cluster::start(&Setup::default());
    primary.sql("SELECT snowmint.nextval()");
    let standby = primary.standby();
    let mut client = standby.connect();
    let in_recovery: bool = client
        .query_one("SELECT pg_is_in_recovery()", &[])
        .unwrap()
        .get(0);
    assert!(in_recovery);
    let (message, code) = refusal(&mut client, "SELECT snowmint.nextval()");
    assert_eq!(code, "25006");
    assert!(
        message.starts_with("snowmint.nextval() cannot mint on a standby"),
        "{message}"
    );
    // Reading works there.
    assert_reads(&mut client);
}

#[test]
fn a_damaged_mark_is_refused_naming_it_never_taken_for_none() {
    let cluster = Cluster::start(&Setup::default());
    cluster.sql("SELECT snowmint.nextval()");
    cluster.stop_server();
    let mark = cluster.data_file("snowmint.reservation");
    let text = std::fs::read_to_string(&mark).unwrap();
    assert!(text.starts_with("reserved_until_ms="), "{text}");
    std::fs::write(&mark, "reserved_until_ms=soon\n").unwrap();
    cluster.start_server();
    let mut client = cluster.connect();
    let (message, code) = refusal(&mut client, "SELECT snowmint.nextval()");
    assert_eq!(code, "55000");
    assert!(
        message.starts_with("snowmint cannot use its mark in the data directory: ")
            && message.contains(mark.to_str().unwrap()),
        "{message}"
    );
    // The server itself runs, and reads.
    assert_reads(&mut client);
}

#[test]
fn a_used_up_time_unit_is_waited_for_at_most_a_second_then_refused() {
    // Two IDs per 10-second unit: the third call of a unit waits, and a wait
    // that the next unit does not end within a second is refused.
    let spec = "epoch=0;unit=10s;fields=timestamp:34,datacenter:5,worker:5,sequence:1";
    let layout = Layout::parse(spec).unwrap();
    let cluster = Cluster::start(&Setup::default());
    // Not a preset: a superuser lists it before it can take a state slot.
    cluster.sql(&format!("ALTER SYSTEM SET snowmint.layouts = '{spec}'"));
    cluster.sql("SELECT pg_reload_conf()");
    let mut client = cluster.connect();
    // The reload reaches a new session at its first statement at the latest.
    let deadline = Instant::now() + Duration::from_secs(10);
    while client
        .query_one("SELECT current_setting('snowmint.layouts')", &[])
        .unwrap()
        .get::<_, String>(0)
        != spec
    {
        assert!(Instant::now() < deadline, "snowmint.layouts not reloaded");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A wait that never ends would be cut here, with another message.
    client
        .batch_execute("SET statement_timeout = '20s'")
        .unwrap();
    let mut ids: Vec<i64> = Vec::new();
    let (refusal, waited) = loop {
        let call = Instant::now();
        match client.query_one("SELECT snowmint.nextval($1)", &[&spec]) {
            Ok(row) => ids.push(row.get(0)),
            Err(err) => break (db_error(&err), call.elapsed()),
        }
        // Two units' worth and a unit boundary at most can pass before a
        // wait must fail.
        assert!(ids.len() <= 4, "{} IDs and no refusal", ids.len());
    };
    assert_eq!(
        refusal,
        (
            "snowmint.nextval(): the 2 IDs of a time unit are used up and the clock did not \
             reach the next unit within 1000 ms"
                .to_owned(),
            "54000".to_owned()
        )
    );
    // The refused call waited its second first: not refused at once, and
    // not much longer (1.5 s of slack for a loaded machine).
    assert!(
        waited >= Duration::from_millis(950) && waited <= Duration::from_millis(2_500),
        "the refusal came after {waited:?}, not after a wait of 1000 ms"
    );
    assert_increasing(&ids, "before the refusal");
    for id in &ids {
        let parts = layout.decode(snowmint::SnowflakeId::new(*id as u64).unwrap());
        assert_eq!((parts.datacenter, parts.worker), (1, 2));
    }
}

#[test]
fn the_restart_after_a_backend_crash_reloads_the_mark() {
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    let before = mint(&mut client, 50_000);
    // A mark an hour ahead, as a clock an hour fast before the crash would
    // have left (no backend writes it while none mints).
    let mark = snowmint::unix_now_ms() + 3_600_000;
    std::fs::write(
        cluster.data_file("snowmint.reservation"),
        format!("reserved_until_ms={mark}\n"),
    )
    .unwrap();
    // kill -9 of one backend: the postmaster ends every backend and makes
    // the shared memory again, state and clock included.
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut client = loop {
        // Until the crash restart is over, a connection is refused.
        if let Ok(mut c) = cluster.try_connect()
            && c.query_one("SELECT 1", &[]).is_ok()
        {
            break c;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not come back: {}",
            cluster.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        cluster
            .log()
            .contains("all server processes terminated; reinitializing")
    );
    let after = mint(&mut client, 50_000);
    assert!(after[0] > *before.last().unwrap());
    let first_ms = snowmint::decode(after[0] as u64).unwrap().timestamp_ms;
    assert!(
        first_ms > mark,
        "the first ID after the crash is at {first_ms}, the mark {mark}"
    );
}

#[test]
fn a_null_among_composes_fields_is_refused_naming_it_and_a_null_argument_gives_null() {
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    for (call, expected) in [
        (
            "SELECT snowmint.compose(1462015105796, ARRAY[1, NULL, 0], 'discord')",
            "fields must not contain NULL: value 2 of 3 (process, for layout discord) is NULL",
        ),
        (
            "SELECT snowmint.compose(1462015105796, ARRAY[NULL, NULL, NULL]::bigint[], 'discord')",
            "fields must not contain NULL: value 1 of 3 (worker, for layout discord) is NULL",
        ),
        (
            "SELECT snowmint.compose(1288834975657, ARRAY[1, 2, NULL], 'twitter')",
            "fields must not contain NULL: value 3 of 3 (sequence, for layout twitter) is NULL",
        ),
    ] {
        let (message, code) = refusal(&mut client, call);
        assert_eq!(
            (message.as_str(), code.as_str()),
            (expected, "22004"),
            "{call}"
        );
    }
    // A NULL argument (not an element): the functions are STRICT.
    for call in [
        "snowmint.compose(1462015105796, NULL::bigint[], 'discord')",
        "snowmint.compose(NULL, ARRAY[1, 2, 0], 'discord')",
        "snowmint.compose(1462015105796, ARRAY[1, 2, 0], NULL)",
        "snowmint.compose(1288834975657, NULL, 0, 0)",
        "snowmint.unix_ms(NULL)",
        "snowmint.time(4194439168, NULL)",
        "snowmint.field(4194439168, NULL)",
        "snowmint.min_id(NULL)",
    ] {
        let null: bool = client
            .query_one(&format!("SELECT {call} IS NULL"), &[])
            .unwrap_or_else(|e| panic!("{call}: {e}"))
            .get(0);
        assert!(null, "{call} is not NULL");
    }
}
