//! A PostgreSQL 15 server of its own for each check of the extension: the
//! testkit's [`Postgres`] (a cluster made by `initdb` in a temporary
//! directory, reachable only on a Unix socket in it, stopped when dropped)
//! with the extension preloaded and created.
//!
//! The extension must be installed in the server `pg_config` names
//! (`scripts/pg-extension` does it). What this adds to the testkit's
//! server: the settings the extension needs, `kill -9` of the postmaster,
//! and a client library connection (`postgres`) rather than `psql`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub use snowmint_testkit::db::{BaseBackup, RecoveryTarget};
use snowmint_testkit::db::{Postgres, PostgresBuilder, Recovery};
use snowmint_testkit::signal::{self, Signal};

/// How long the killed processes of a server may take to go on a loaded
/// machine.
const LIMIT: Duration = Duration::from_secs(90);

/// How a cluster is set up.
#[derive(Debug, Clone)]
pub struct Setup {
    /// `shared_preload_libraries = 'snowmint'`.
    pub preload: bool,
    /// `snowmint.datacenter` and `snowmint.worker`, when given.
    pub identity: Option<(u8, u8)>,
    /// The server runs under libfaketime, its wall clock (at the real time
    /// at first) stepped by [`Cluster::set_clock_offset_ms`]; the monotonic
    /// clock is never faked.
    pub faketime: bool,
    /// The server's `max_connections` (40 by default; the benchmark's 64
    /// pgbench clients need more).
    pub max_connections: u32,
    /// The server archives its WAL into a directory of its own
    /// ([`Cluster::archive_current_wal`], [`Cluster::restore`]).
    pub archive_wal: bool,
    /// More `-c` settings (values that need no quoting), e.g. a leased
    /// identity's `snowmint.coordinator`.
    pub settings: Vec<(String, String)>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            preload: true,
            identity: Some((1, 2)),
            faketime: false,
            max_connections: 40,
            archive_wal: false,
            settings: Vec::new(),
        }
    }
}

/// One PostgreSQL server in a directory of its own.
pub struct Cluster {
    server: Postgres,
    setup: Setup,
}

/// The directory of the server programs of the PostgreSQL that
/// `pg_config` names (`$PG_CONFIG`, else `pg_config` on the path).
pub fn pg_bindir() -> PathBuf {
    let pg_config = std::env::var("PG_CONFIG").unwrap_or_else(|_| "pg_config".to_owned());
    let out = Command::new(&pg_config)
        .arg("--bindir")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {pg_config}: {e} (install postgresql-server-dev-15)")
        });
    assert!(out.status.success(), "{pg_config} --bindir failed");
    PathBuf::from(String::from_utf8(out.stdout).expect("UTF-8").trim())
}

/// The testkit's server with `setup`'s settings and connection limit.
fn builder(setup: &Setup) -> PostgresBuilder {
    let mut builder = Postgres::builder()
        .bin_dir(pg_bindir())
        .max_connections(setup.max_connections);
    if setup.preload {
        builder = builder.setting("shared_preload_libraries", "snowmint");
    }
    if let Some((dc, w)) = setup.identity {
        builder = builder
            .setting("snowmint.datacenter", &dc.to_string())
            .setting("snowmint.worker", &w.to_string());
    }
    if setup.faketime {
        builder = builder.faketime();
    }
    if setup.archive_wal {
        builder = builder.archive_wal();
    }
    for (name, value) in &setup.settings {
        builder = builder.setting(name, value);
    }
    builder
}

/// The started server; the checks need one, so a skip is a failure.
fn started(server: Option<Postgres>) -> Postgres {
    server.expect("PostgreSQL 15 and libfaketime, installed (scripts/pg-extension installs them)")
}

impl Cluster {
    /// Makes a cluster with `setup`, starts it and creates the extension in
    /// database `postgres`.
    pub fn start(setup: &Setup) -> Cluster {
        let cluster = Cluster {
            server: started(builder(setup).start()),
            setup: setup.clone(),
        };
        cluster.sql("CREATE EXTENSION snowmint");
        cluster
    }

    /// The path of `name` in the data directory.
    pub fn data_file(&self, name: &str) -> PathBuf {
        self.server.data_dir().join(name)
    }

    /// The directory of the server's Unix socket, whose port is 5432 (a
    /// client's host: `psql -h`, `pgbench -h`).
    pub fn socket_dir(&self) -> &Path {
        self.server.socket_dir()
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.server.log_file()).unwrap_or_default()
    }

    /// Steps the wall clock of a [`Setup::faketime`] server to `offset_ms`
    /// from the real time (`-3_600_000`: an hour back), at once.
    pub fn set_clock_offset_ms(&self, offset_ms: i64) {
        self.server.set_clock_offset_ms(offset_ms);
    }

    /// Starts the server again, after [`stop_server`](Cluster::stop_server)
    /// or [`kill_postmaster`](Cluster::kill_postmaster).
    pub fn start_server(&self) {
        self.server.restart();
    }

    /// Freezes every process of the server (SIGSTOP), as a stalled machine.
    pub fn pause(&self) {
        self.server.pause();
    }

    /// Thaws what [`pause`](Cluster::pause) froze (SIGCONT).
    pub fn resume(&self) {
        self.server.resume();
    }

    /// Stops the server cleanly (`pg_ctl stop -m fast`).
    pub fn stop_server(&self) {
        self.server.stop();
    }

    /// Sends `SIGKILL` to the postmaster and waits (bounded) until every
    /// process it had started is gone, as a restart needs.
    pub fn kill_postmaster(&self) {
        let pid = self.server.pid();
        let children = signal::children(pid);
        assert!(!children.is_empty(), "a running server has processes");
        signal::send(pid, Signal::KILL).expect("kill -9 the postmaster");
        let deadline = Instant::now() + LIMIT;
        // A zombie is gone for our purpose: it holds no memory or lock. But
        // PostgreSQL takes a postmaster that is still a zombie for a live
        // one (its pid answers), so that one must be reaped, by whoever
        // inherited it.
        while Path::new(&format!("/proc/{pid}")).exists()
            || !children.iter().all(|&child| signal::exited(child))
        {
            assert!(
                Instant::now() < deadline,
                "the killed server's processes did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A hot standby of this server (`pg_basebackup -R`), with its settings
    /// and the real clock, started.
    pub fn standby(&self) -> Cluster {
        let setup = Setup {
            faketime: false,
            archive_wal: false,
            ..self.setup.clone()
        };
        Cluster {
            server: started(builder(&setup).start_standby(&self.server)),
            setup,
        }
    }

    /// The last `lines` lines of the server's log (for failure messages).
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Makes a cluster with `setup` and starts it, without creating the
    /// extension anywhere (a restore creates it).
    pub fn start_without_extension(setup: &Setup) -> Cluster {
        Cluster {
            server: started(builder(setup).start()),
            setup: setup.clone(),
        }
    }

    /// Kills the server as a machine's death would: SIGKILL to the
    /// postmaster and every process of it at once, nothing flushed.
    pub fn kill(&self) {
        self.server.kill();
    }

    /// On a standby of `primary`: waits (bounded) until it has replayed
    /// all `primary` had written.
    pub fn catch_up(&self, primary: &Cluster) {
        self.server.catch_up(&primary.server);
    }

    /// Promotes a standby (`pg_promote()`) and waits until it takes writes.
    pub fn promote(&self) {
        self.server.promote();
    }

    /// A base backup of the running server (`pg_basebackup -X stream`),
    /// for [`restore`](Cluster::restore).
    pub fn base_backup(&self) -> BaseBackup {
        self.server.take_base_backup()
    }

    /// On a [`Setup::archive_wal`] server: ends the current WAL segment and
    /// waits until it is archived, so all written before is restorable.
    pub fn archive_current_wal(&self) -> String {
        self.server.archive_current_wal()
    }

    /// `pg_current_wal_lsn()`: a recovery target after everything written
    /// so far.
    pub fn current_wal_lsn(&self) -> String {
        self.server
            .psql("postgres", "SELECT pg_current_wal_lsn();")
            .trim()
            .to_owned()
    }

    /// Point-in-time recovery: a new server with `setup` (the real clock)
    /// from a copy of `backup`, replaying this server's archived WAL up to
    /// `target`, then promoted there (`recovery_target_action = 'promote'`).
    pub fn restore(&self, setup: &Setup, backup: &BaseBackup, target: RecoveryTarget) -> Cluster {
        let archive = self
            .server
            .wal_archive()
            .expect("restore from a server started with Setup::archive_wal")
            .to_owned();
        let setup = Setup {
            archive_wal: false,
            ..setup.clone()
        };
        let recovery = Recovery { archive, target };
        Cluster {
            server: started(builder(&setup).start_from_backup(backup, &recovery)),
            setup,
        }
    }

    /// A plain-text `pg_dump` of `database`.
    pub fn pg_dump(&self, database: &str) -> String {
        self.server.pg_dump(database)
    }

    /// Runs `script` in `database` through `psql` (stopping at its first
    /// error, a panic with psql's message); the rows, `|` between columns.
    pub fn psql(&self, database: &str, script: &str) -> String {
        self.server.psql(database, script)
    }

    /// A new connection to `database`.
    pub fn connect_to(&self, database: &str) -> postgres::Client {
        postgres::Config::new()
            .host_path(self.server.socket_dir())
            .user("postgres")
            .dbname(database)
            .connect(postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to {database}: {e}\n{}", self.log_tail(40)))
    }

    /// A new connection to database `postgres`.
    pub fn connect(&self) -> postgres::Client {
        self.try_connect()
            .unwrap_or_else(|e| panic!("connect: {e}\n{}", self.log()))
    }

    /// A new connection to database `postgres`, or why there is none.
    pub fn try_connect(&self) -> Result<postgres::Client, postgres::Error> {
        postgres::Config::new()
            .host_path(self.server.socket_dir())
            .user("postgres")
            .dbname("postgres")
            .connect(postgres::NoTls)
    }

    /// Runs `statements` on a new connection.
    pub fn sql(&self, statements: &str) {
        self.connect()
            .batch_execute(statements)
            .unwrap_or_else(|e| panic!("{statements}: {e}"));
    }
}

/// A copy of a cluster's data directory started as a server of its own
/// beside the original ([`Cluster::start_copy`]), on a socket in a
/// directory of its own; stopped (`pg_ctl stop -m immediate`) and removed
/// when dropped.
pub struct CopiedCluster {
    bin: PathBuf,
    dir: PathBuf,
}

/// `program` as a command, run as `postgres` when we are root (the
/// testkit's servers run as that user then).
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl Cluster {
    /// Copies this server's data directory (`cp -a`; stop the server
    /// first, [`stop_server`](Cluster::stop_server), for a consistent
    /// copy) and starts the copy with this cluster's settings and
    /// preloading, on a socket of its own.
    pub fn start_copy(&self) -> CopiedCluster {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "snowmint-copy-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("make the copy's directory");
        let ok = Command::new("cp")
            .arg("-a")
            .arg(self.server.data_dir())
            .arg(dir.join("data"))
            .status()
            .expect("run cp");
        assert!(ok.success(), "cp -a of the data directory failed");
        let _ = std::fs::remove_file(dir.join("data/postmaster.pid"));
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .expect("run chown");
            assert!(ok.success(), "chown of the copy failed");
        }
        let mut options = format!("-c listen_addresses='' -k {}", dir.display());
        if self.setup.preload {
            options.push_str(" -c shared_preload_libraries=snowmint");
        }
        for (name, value) in &self.setup.settings {
            options.push_str(&format!(" -c {name}={value}"));
        }
        options.push_str(&format!(
            " -c max_connections={}",
            self.setup.max_connections
        ));
        let bin = pg_bindir();
        let out = as_server_user(&bin.join("pg_ctl"))
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-o", &options, "-w", "-t", "90", "-l"])
            .arg(dir.join("server.log"))
            .arg("start")
            .output()
            .expect("run pg_ctl");
        let copy = CopiedCluster { bin, dir };
        assert!(
            out.status.success(),
            "the copy did not start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            copy.log()
        );
        copy
    }
}

impl CopiedCluster {
    /// A new connection to database `postgres`.
    pub fn connect(&self) -> postgres::Client {
        postgres::Config::new()
            .host_path(&self.dir)
            .user("postgres")
            .dbname("postgres")
            .connect(postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to the copy: {e}\n{}", self.log()))
    }

    /// The copy's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

impl Drop for CopiedCluster {
    fn drop(&mut self) {
        let _ = as_server_user(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The message and SQLSTATE of a failed statement.
pub fn db_error(err: &postgres::Error) -> (String, String) {
    let db = err
        .as_db_error()
        .unwrap_or_else(|| panic!("not a server error: {err}"));
    (db.message().to_owned(), db.code().code().to_owned())
}

/// `count` IDs from `snowmint.nextval()` in one statement, in call order.
pub fn mint(client: &mut postgres::Client, count: i64) -> Vec<i64> {
    client
        .query(
            "SELECT snowmint.nextval() FROM generate_series(1, $1::bigint)",
            &[&count],
        )
        .expect("nextval")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Panics, naming `what` and the pair, unless `ids` strictly increase.
pub fn assert_increasing(ids: &[i64], what: &str) {
    for w in ids.windows(2) {
        assert!(w[0] < w[1], "{what}: {} then {}", w[0], w[1]);
    }
}

/// The default setup, with the server under libfaketime.
pub fn faked_clock() -> Setup {
    Setup {
        faketime: true,
        ..Setup::default()
    }
}

/// Waits (bounded, 30 s) until the server's wall clock is `offset_ms` from
/// ours, give or take a tenth of it (at least 5 s): libfaketime rereads its
/// control file now and then.
pub fn wait_for_clock_offset(client: &mut postgres::Client, offset_ms: i64) {
    let tolerance = (offset_ms.abs() / 10).max(5_000);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let server_ms: f64 = client
            .query_one(
                "SELECT extract(epoch FROM clock_timestamp())::float8 * 1000",
                &[],
            )
            .unwrap()
            .get(0);
        let off = server_ms as i64 - snowmint::unix_now_ms() as i64;
        if (off - offset_ms).abs() <= tolerance {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server's clock is {off} ms off ours, not {offset_ms}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
