//! `INSERT ... SELECT` of 1,000,000 rows into a table whose key defaults to
//! `snowmint.nextval()`, against the same table with `bigserial`, side by
//! side in one server: rounds alternate which goes first; prints each round
//! and the medians in rows per second, and the ratio.
//!
//! `scripts/pg-extension --bench` (installs the extension, then runs this);
//! `ROWS` and `ROUNDS` in the environment change the defaults (1,000,000 and
//! 7).

use std::time::Instant;

use snowmint_pg_checks::{Cluster, Setup};

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

fn main() {
    let rows = env_or("ROWS", 1_000_000) as i64;
    let rounds = env_or("ROUNDS", 7);
    let cluster = Cluster::start(&Setup::default());
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE by_snowmint (id bigint PRIMARY KEY DEFAULT snowmint.nextval(), v integer);
             CREATE TABLE by_sequence (id bigserial PRIMARY KEY, v integer);",
        )
        .expect("create the tables");
    let tables = ["by_snowmint", "by_sequence"];
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    println!("{rows} rows per INSERT ... SELECT, {rounds} rounds");
    for round in 0..rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let table = tables[i];
            client
                .batch_execute(&format!("TRUNCATE {table}; CHECKPOINT"))
                .expect("truncate");
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
    let [snow, seq] = rates.map(median);
    println!("median: snowmint.nextval() {snow:.0} rows/s, bigserial {seq:.0} rows/s");
    println!("ratio: {:.3} (snowmint / bigserial)", snow / seq);
}
