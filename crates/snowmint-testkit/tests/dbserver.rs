//! The database servers of `snowmint_testkit::db` for the SQL coordinators'
//! tests, for real: PostgreSQL and MariaDB on 127.0.0.1 (reached with
//! `psql -h 127.0.0.1 -p PORT` and `mariadb -h 127.0.0.1 -P PORT`),
//! restarted on the same port, stopped with SIGSTOP and resumed, under a
//! stepped libfaketime clock; a PostgreSQL hot standby; PgBouncer in
//! transaction mode.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::process::{Resource, getrlimit, setrlimit};
use snowmint_testkit::db::{MARIADB_USER, Mariadb, PgBouncer, Postgres, psql_url};
use snowmint_testkit::signal;

/// How long a query may take on a loaded machine before the test gives up.
const LIMIT: Duration = Duration::from_secs(60);

/// How long a query to a stopped server is given to prove it gets no
/// answer.
const STALL: Duration = Duration::from_secs(2);

/// How far a server's clock may seem from the offset asked for, in
/// seconds, beyond the query's own duration.
const CLOCK_SLACK: f64 = 1.5;

/// `script` through `psql -d URL`, or a panic with psql's message.
fn psql(url: &str, script: &str) -> String {
    psql_url(url, script, LIMIT)
        .unwrap_or_else(|e| panic!("{e}"))
        .trim()
        .to_owned()
}

/// `psql -h 127.0.0.1 -p PORT` (the way a person connects over TCP),
/// running `sql` in `database`.
fn psql_tcp(port: u16, database: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-U", "postgres", "-d", database, "-c", sql])
        .output()
        .expect("run psql");
    assert!(
        out.status.success(),
        "psql -h 127.0.0.1 -p {port}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The real time, in seconds since the epoch.
fn real_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Asserts that `query` (which reads the server's clock as seconds since
/// the epoch) sees the real time shifted by `offset` seconds.
fn assert_clock(offset: f64, query: impl Fn() -> String) {
    let before = real_now();
    let seen: f64 = query().parse().expect("a number of seconds");
    let after = real_now();
    assert!(
        seen >= before + offset - CLOCK_SLACK && seen <= after + offset + CLOCK_SLACK,
        "the server's clock is {:.3} s from the real time (within {:.3} s), not {offset} s",
        seen - before,
        after - before
    );
}

/// The server's clock (`now`: seconds since the epoch, as it reads them)
/// stepped by `set` (ms): real, 30 s ahead, 30 s behind, and still behind
/// after `restart`.
fn steps_both_ways(set: impl Fn(i64), restart: impl Fn(), now: impl Fn() -> String) {
    assert_clock(0.0, &now);
    set(30_000);
    assert_clock(30.0, &now);
    set(-30_000);
    assert_clock(-30.0, &now);
    restart();
    assert_clock(-30.0, &now);
}

/// `mariadb -h 127.0.0.1 -P PORT -u root ARGS` (root over TCP, no
/// password); its output, trimmed.
fn mariadb_root_tcp(port: u16, args: &[&str]) -> String {
    let out = Command::new("mariadb")
        .args(["--no-defaults", "-h", "127.0.0.1", "-P", &port.to_string()])
        .args(["-u", "root"])
        .args(args)
        .output()
        .expect("run mariadb");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Polls `check` until it holds, for up to [`LIMIT`].
fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn socket_only_servers_stay_off_the_network() {
    if let Some(pg) = Postgres::start() {
        assert_eq!(pg.psql("postgres", "SHOW listen_addresses").trim(), "");
    }
    if let Some(my) = Mariadb::start() {
        assert_eq!(my.sql("mysql", "SELECT @@skip_networking").trim(), "1");
    }
}

#[test]
fn postgres_on_loopback_restarts_on_its_port_with_its_data() {
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    let port = pg.port();
    assert_eq!(
        pg.url("app"),
        format!("postgres://postgres@127.0.0.1:{port}/app")
    );
    // Over TCP indeed: a socket connection has no server address.
    assert_eq!(
        psql_tcp(port, "postgres", "SELECT inet_server_addr()"),
        "127.0.0.1"
    );
    let max: u32 = psql_tcp(port, "postgres", "SHOW max_connections")
        .parse()
        .unwrap();
    assert!(max >= 200, "max_connections = {max}");

    pg.create_database("app");
    psql(
        &pg.url("app"),
        "CREATE TABLE t (x int); INSERT INTO t VALUES (1);",
    );
    // The socket still serves, as for the socket-only servers.
    assert_eq!(pg.psql("app", "SELECT count(*) FROM t").trim(), "1");

    let pid = pg.pid();
    pg.restart();
    assert_ne!(pg.pid(), pid, "a new postmaster");
    assert_eq!(pg.port(), port);
    assert_eq!(psql(&pg.url("app"), "SELECT x FROM t"), "1");

    pg.stop();
    let refused = psql_url(&pg.url("app"), "SELECT 1", LIMIT).unwrap_err();
    assert!(refused.contains("refused"), "{refused}");
    pg.restart();
    assert_eq!(psql_tcp(port, "app", "SELECT x FROM t"), "1");
}

#[test]
fn a_stopped_postmaster_stalls_new_connections_until_sigcont() {
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    let url = pg.url("postgres");
    assert_eq!(psql(&url, "SELECT 1"), "1");

    signal::stop(pg.pid(), LIMIT).unwrap();
    let stalled = psql_url(&url, "SELECT 1", STALL).unwrap_err();
    assert!(stalled.contains("no answer within"), "{stalled}");
    // One more, left waiting: SIGCONT lets it through.
    let waiting = {
        let url = url.clone();
        std::thread::spawn(move || psql(&url, "SELECT 2"))
    };
    std::thread::sleep(STALL);
    assert!(!waiting.is_finished(), "answered by a stopped postmaster");
    signal::resume(pg.pid(), LIMIT).unwrap();
    assert_eq!(waiting.join().unwrap(), "2");
    assert_eq!(psql(&url, "SELECT 3"), "3");
}

/// One `psql` session held open: statements in, rows out (through a
/// thread, so a stalled one can be waited for with a limit).
struct Session {
    child: std::process::Child,
    rows: mpsc::Receiver<String>,
}

impl Session {
    fn open(url: &str) -> Session {
        let mut child = Command::new("psql")
            .args(["-X", "-q", "-A", "-t", "-d", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start psql");
        let stdout = child.stdout.take().unwrap();
        let (tx, rows) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Session { child, rows }
    }

    fn send(&mut self, sql: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{sql}").unwrap();
        stdin.flush().unwrap();
    }

    fn row(&self, limit: Duration) -> Option<String> {
        self.rows.recv_timeout(limit).ok()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn pause_stalls_open_sessions_where_a_stopped_postmaster_does_not() {
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    let mut session = Session::open(&pg.url("postgres"));
    session.send("SELECT 1;");
    assert_eq!(session.row(LIMIT).as_deref(), Some("1"));

    // The postmaster alone stopped: an open session's backend still runs.
    signal::stop(pg.pid(), LIMIT).unwrap();
    session.send("SELECT 2;");
    assert_eq!(session.row(LIMIT).as_deref(), Some("2"));
    signal::resume(pg.pid(), LIMIT).unwrap();

    pg.pause();
    for pid in signal::children(pg.pid()) {
        let states = signal::thread_states(pid);
        assert!(
            states.iter().all(|&s| s == 'T'),
            "postgres process {pid} not stopped: {states:?}"
        );
    }
    session.send("SELECT 3;");
    assert_eq!(session.row(STALL), None, "a paused server answered");
    pg.resume();
    assert_eq!(session.row(LIMIT).as_deref(), Some("3"));
}

#[test]
fn postgres_under_faketime_steps_now_both_ways() {
    let Some(pg) = Postgres::builder().tcp().faketime().start() else {
        return;
    };
    let url = pg.url("postgres");
    let now = || psql(&url, "SELECT extract(epoch FROM now())");
    let set = |ms| {
        pg.set_clock_offset_ms(ms);
        assert_eq!(pg.clock_offset_ms(), ms);
    };
    // A restart keeps the clock (pg_ctl runs under it too, and waits).
    steps_both_ways(set, || pg.restart(), now);
    set(0);
    assert_clock(0.0, now);
}

#[test]
fn a_standby_is_in_recovery_and_streams_the_primarys_rows() {
    let Some(primary) = Postgres::start_tcp() else {
        return;
    };
    primary.create_database("app");
    psql(
        &primary.url("app"),
        "CREATE TABLE t (x int); INSERT INTO t VALUES (1);",
    );
    let standby = Postgres::start_standby(&primary).expect("PostgreSQL, as for the primary");
    assert_ne!(standby.port(), primary.port());
    assert_eq!(psql(&standby.url("app"), "SELECT pg_is_in_recovery()"), "t");
    assert_eq!(psql(&primary.url("app"), "SELECT pg_is_in_recovery()"), "f");
    let max: u32 = psql(&standby.url("app"), "SHOW max_connections")
        .parse()
        .unwrap();
    assert!(max >= 200, "max_connections = {max}");

    psql(&primary.url("app"), "INSERT INTO t VALUES (2);");
    eventually("the standby sees the primary's new row", || {
        psql(&standby.url("app"), "SELECT count(*) FROM t") == "2"
    });
    let refused = psql_url(&standby.url("app"), "INSERT INTO t VALUES (3);", LIMIT).unwrap_err();
    assert!(refused.contains("read-only transaction"), "{refused}");
}

#[test]
fn pgbouncer_pools_transactions_in_front_of_postgres() {
    let Some(pg) = Postgres::start_tcp() else {
        return;
    };
    pg.create_database("app");
    let pool_size = 5;
    // Too few files for 4096 clients: PgBouncer::start raises the limit.
    let mut nofile = getrlimit(Resource::Nofile);
    nofile.current = Some(1024);
    setrlimit(Resource::Nofile, nofile).unwrap();
    let Some(bouncer) = PgBouncer::start(&pg, pool_size) else {
        return;
    };
    assert_ne!(bouncer.port(), pg.port());
    assert_eq!(
        bouncer.url("app"),
        format!("postgres://postgres@127.0.0.1:{}/app", bouncer.port())
    );
    assert_eq!(psql_tcp(bouncer.port(), "app", "SELECT 1"), "1");
    let url = bouncer.url("app");
    psql(
        &url,
        "CREATE TABLE t (x int);\nBEGIN;\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);\nCOMMIT;",
    );
    assert_eq!(psql(&url, "SELECT sum(x) FROM t"), "3");

    // 30 clients, each holding a server connection 0.3 s: no more than
    // the pool's 5 at once reach PostgreSQL, so it takes 1.8 s at least.
    let clients = 30;
    let start = Instant::now();
    let running: Vec<_> = (0..clients)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || psql(&url, "SELECT 1 FROM pg_sleep(0.3)"))
        })
        .collect();
    let mut most = 0;
    while !running.iter().all(|c| c.is_finished()) {
        let backends: u32 = pg
            .psql(
                "postgres",
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = 'app' AND backend_type = 'client backend'",
            )
            .trim()
            .parse()
            .unwrap();
        most = most.max(backends);
        std::thread::sleep(Duration::from_millis(50));
    }
    for client in running {
        assert_eq!(client.join().unwrap(), "1");
    }
    let took = start.elapsed();
    assert!(
        most <= pool_size,
        "{most} server connections for a pool of {pool_size}"
    );
    assert!(
        took >= Duration::from_millis(1800),
        "{clients} clients done in {took:?}: not pooled"
    );
    // "kernel file descriptor limit: N (hard: H); max_client_conn: 4096,
    // max expected fd use: M": room for every client.
    let log = bouncer.log();
    let number_after = |label: &str| -> u64 {
        let rest = &log[log
            .find(label)
            .unwrap_or_else(|| panic!("no {label:?} in {log}"))
            + label.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap()
    };
    let limit = number_after("kernel file descriptor limit: ");
    let used = number_after("max expected fd use: ");
    assert!(
        limit >= used,
        "PgBouncer may open {used} files, has {limit}: {log}"
    );
}

#[test]
fn mariadb_on_loopback_refuses_writes_when_read_only_and_restarts() {
    let Some(my) = Mariadb::start_tcp() else {
        return;
    };
    let port = my.port();
    assert_eq!(
        my.url("app"),
        format!("mysql://{MARIADB_USER}:snowmint@127.0.0.1:{port}/app")
    );
    assert_eq!(
        my.root_url("app"),
        format!("mysql://root@127.0.0.1:{port}/app")
    );
    // root over TCP, no password, as `mariadb -h 127.0.0.1 -P PORT`.
    assert_eq!(
        mariadb_root_tcp(
            port,
            &[
                "--batch",
                "--skip-column-names",
                "-e",
                "SELECT CURRENT_USER()"
            ]
        ),
        "root@127.0.0.1"
    );

    my.create_database("app");
    let sql = |script: &str| {
        my.try_sql_tcp("app", script, LIMIT)
            .unwrap_or_else(|e| panic!("{e}"))
            .trim()
            .to_owned()
    };
    assert_eq!(
        sql("SELECT CURRENT_USER()"),
        format!("{MARIADB_USER}@127.0.0.1")
    );
    sql("CREATE TABLE t (x INT); INSERT INTO t VALUES (1);");

    my.set_read_only(true);
    let refused = my
        .try_sql_tcp("app", "INSERT INTO t VALUES (2);", LIMIT)
        .unwrap_err();
    assert!(refused.contains("--read-only"), "{refused}");
    // root holds READ_ONLY ADMIN: read_only does not bind it.
    mariadb_root_tcp(port, &["app", "-e", "INSERT INTO t VALUES (2)"]);
    my.set_read_only(false);
    sql("INSERT INTO t VALUES (3);");

    let pid = my.pid();
    my.restart();
    assert_ne!(my.pid(), pid);
    assert_eq!(my.port(), port);
    assert_eq!(sql("SELECT count(*) FROM t"), "3");

    signal::stop(my.pid(), LIMIT).unwrap();
    let stalled = my.try_sql_tcp("app", "SELECT 1", STALL).unwrap_err();
    assert!(stalled.contains("no answer within"), "{stalled}");
    signal::resume(my.pid(), LIMIT).unwrap();
    assert_eq!(sql("SELECT 1"), "1");

    my.stop();
    assert!(my.try_sql_tcp("app", "SELECT 1", LIMIT).is_err());
    my.restart();
    assert_eq!(sql("SELECT count(*) FROM t"), "3");
}

#[test]
fn mariadb_under_faketime_steps_now_both_ways() {
    let Some(my) = Mariadb::builder().tcp().faketime().start() else {
        return;
    };
    let now = || {
        my.try_sql_tcp("mysql", "SELECT UNIX_TIMESTAMP(NOW(6))", LIMIT)
            .unwrap_or_else(|e| panic!("{e}"))
            .trim()
            .to_owned()
    };
    steps_both_ways(|ms| my.set_clock_offset_ms(ms), || my.restart(), now);
}
