//! Inserts into a table whose key defaults to `snowmint.nextval()` against
//! the same table with `bigserial`, side by side in one server, in two
//! phases:
//!
//! 1. one session's `INSERT ... SELECT` of 1,000,000 rows;
//! 2. `pgbench` (the one beside `pg_config`'s server) with 64 clients, two
//!    threads, each transaction one `INSERT INTO t (v) VALUES (1)`, for 20 s
//!    (the rate is pgbench's tps without the initial connection time: one
//!    row a transaction).
//!
//! In each phase the rounds alternate which table goes first, each table
//! emptied (`TRUNCATE`, `CHECKPOINT`) before its turn; prints each round,
//! the medians in rows per second and the ratio nextval / bigserial, and
//! at the end both ratios.
//!
//! `scripts/pg-extension --bench` (installs the extension, then runs this).
//! In the environment: `ROWS` (1,000,000) and `ROUNDS` (7) for phase 1,
//! `CLIENTS` (64), `SECONDS` (20) and `ROUNDS` for phase 2.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use snowmint_pg_checks::{Cluster, Setup};

const TABLES: [&str; 2] = ["by_snowmint", "by_sequence"];

fn env_or(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, got {v:?}")),
        Err(_) => default,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The tables of round `round` in their order: alternating which goes first.
fn order(round: u64) -> [usize; 2] {
    if round.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    }
}

/// Empties `table` and writes out the dirty buffers, so that each turn
/// starts alike.
fn empty(client: &mut postgres::Client, table: &str) {
    client
        .batch_execute(&format!("TRUNCATE {table}; CHECKPOINT"))
        .expect("truncate");
}

/// Prints and returns the medians and their ratio.
fn report(phase: &str, rates: [Vec<f64>; 2]) -> f64 {
    let [snow, seq] = rates.map(median);
    let ratio = snow / seq;
    println!(
        "{phase} median: snowmint.nextval() {snow:.0} rows/s, bigserial {seq:.0} rows/s, \
         ratio {ratio:.3} (nextval / bigserial)"
    );
    ratio
}

/// Phase 1: one session's `INSERT ... SELECT` of `rows` rows.
fn insert_select(client: &mut postgres::Client, rows: i64, rounds: u64) -> f64 {
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    println!("phase 1: {rows} rows per INSERT ... SELECT, {rounds} rounds");
    for round in 0..rounds {
        for i in order(round) {
            let table = TABLES[i];
            empty(client, table);
            let start = Instant::now();
            let n = client
                .execute(
                    &format!(
                        "INSERT INTO {table} (v) SELECT g FROM generate_series(1, $1::bigint) AS g"
                    ),
                    &[&rows],
                )
                .expect("insert");
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(n, rows as u64);
            rates[i].push(rows as f64 / secs);
            println!(
                "round {round}: {table:<12} {:>10.0} rows/s ({secs:.3} s)",
                rows as f64 / secs
            );
        }
    }
    let distinct: i64 = client
        .query_one("SELECT count(DISTINCT id) FROM by_snowmint", &[])
        .unwrap()
        .get(0);
    assert_eq!(distinct, rows, "every key is distinct");
    report("INSERT ... SELECT", rates)
}

/// The value after `key` on the first line of pgbench's output that has it.
fn pgbench_value<'a>(out: &'a str, key: &str) -> Option<&'a str> {
    out.lines()
        .find_map(|line| line.trim().strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
}

/// One pgbench run of `script` against the server: its tps without the
/// initial connection time, and the transactions it counted.
fn pgbench(cluster: &Cluster, script: &Path, clients: u64, seconds: u64) -> (f64, i64) {
    let program = Path::new(&pg_bindir()).join("pgbench");
    let out = Command::new(&program)
        .args(["-h".as_ref(), cluster.socket_dir().as_os_str()])
        .args(["-p", "5432", "-U", "postgres", "-n"])
        .args(["-c", &clients.to_string(), "-j", "2"])
        .args(["-T", &seconds.to_string()])
        .arg("-f")
        .arg(script)
        .arg("postgres")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pgbench failed ({}):\n{stdout}\n{stderr}\n{}",
        out.status,
        cluster.log()
    );
    let tps: f64 = pgbench_value(&stdout, "tps = ")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no tps in pgbench's output:\n{stdout}\n{stderr}"));
    let done: i64 = pgbench_value(&stdout, "number of transactions actually processed:")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no transaction count in pgbench's output:\n{stdout}"));
    if let Some(failed) = pgbench_value(&stdout, "number of failed transactions:") {
        assert_eq!(failed, "0", "pgbench counted failures:\n{stdout}\n{stderr}");
    }
    (tps, done)
}

/// The directory of the client programs of the PostgreSQL that `pg_config`
/// names (`$PG_CONFIG`, else `pg_config` on the path), as the checks'
/// server.
fn pg_bindir() -> String {
    let pg_config = std::env::var("PG_CONFIG").unwrap_or_else(|_| "pg_config".to_owned());
    let out = Command::new(&pg_config)
        .arg("--bindir")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {pg_config}: {e}"));
    assert!(out.status.success(), "{pg_config} --bindir failed");
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

/// Phase 2: pgbench's `clients` clients, one row per transaction.
fn concurrent(
    cluster: &Cluster,
    client: &mut postgres::Client,
    clients: u64,
    seconds: u64,
    rounds: u64,
) -> f64 {
    let dir = std::env::temp_dir().join(format!("snowmint-pg-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the pgbench scripts");
    let scripts = TABLES.map(|table| {
        let path = dir.join(format!("{table}.sql"));
        std::fs::write(&path, format!("INSERT INTO {table} (v) VALUES (1);\n"))
            .expect("write a pgbench script");
        path
    });
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    println!(
        "phase 2: pgbench, {clients} clients (-j 2), {seconds} s each, one INSERT a transaction, \
         {rounds} rounds"
    );
    for round in 0..rounds {
        for i in order(round) {
            let table = TABLES[i];
            empty(client, table);
            let (tps, done) = pgbench(cluster, &scripts[i], clients, seconds);
            let rows: i64 = client
                .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                .unwrap()
                .get(0);
            assert_eq!(
                rows, done,
                "{table}: one row per transaction pgbench counted"
            );
            rates[i].push(tps);
            println!("round {round}: {table:<12} {tps:>10.0} rows/s ({rows} rows)");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    report("pgbench", rates)
}

fn main() {
    let rows = env_or("ROWS", 1_000_000) as i64;
    let rounds = env_or("ROUNDS", 7);
    let clients = env_or("CLIENTS", 64);
    let seconds = env_or("SECONDS", 20);
    let cluster = Cluster::start(&Setup {
        // pgbench's clients, ours, and room to spare.
        max_connections: clients as u32 + 16,
        ..Setup::default()
    });
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE by_snowmint (id bigint PRIMARY KEY DEFAULT snowmint.nextval(), v integer);
             CREATE TABLE by_sequence (id bigserial PRIMARY KEY, v integer);",
        )
        .expect("create the tables");
    let single = insert_select(&mut client, rows, rounds);
    let many = concurrent(&cluster, &mut client, clients, seconds, rounds);
    println!(
        "ratios (nextval / bigserial): INSERT ... SELECT {single:.3}, \
         pgbench {clients} clients {many:.3}"
    );
}
