//! Real databases for one test each: [`Postgres`] and [`Mariadb`] servers
//! in a temporary directory of their own, listening on a Unix socket in it
//! (only there by default: no TCP port, so tests in parallel can never
//! meet), stopped when dropped; and [`Sqlite`], a database file run
//! through the `sqlite3` shell.
//!
//! Every database is driven through its command-line client (`psql`,
//! `mariadb`, `sqlite3`) with a script on standard input, because that is
//! how people load the scripts `snowmint sql` prints: what a test checks
//! is exactly what a user's pipe does, client-side parsing included. A
//! script stops at its first error and the call panics with the client's
//! message.
//!
//! For the tests of the SQL coordinators, which connect with Rust drivers,
//! a server can also listen on 127.0.0.1 ([`Postgres::builder`]`.tcp()`,
//! [`Mariadb::builder`]`.tcp()`, each giving a `url(database)`), run under
//! libfaketime with its wall clock stepped while it runs (`.faketime()`),
//! be restarted on the same port, paused and resumed; PostgreSQL also as a
//! streaming hot standby ([`Postgres::start_standby`]) and behind
//! [`PgBouncer`] in transaction mode; and, as an operator's restore would,
//! archiving its WAL ([`PostgresBuilder::archive_wal`]), backed up
//! ([`Postgres::take_base_backup`]) and recovered from the backup to a point
//! in time ([`PostgresBuilder::start_from_backup`]), or dumped
//! ([`Postgres::pg_dump`]).
//!
//! PostgreSQL (and PgBouncer) refuse to run as root, so under root
//! `initdb`, `pg_ctl` and `pgbouncer` run as the `postgres` user
//! (`runuser`, `pgbouncer -u`) over a directory given to it.

mod pgbouncer;
pub mod replica;

use std::io::{Read as _, Write as _};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::Signal;
use tempfile::TempDir;

pub use pgbouncer::{PGBOUNCER_MAX_CLIENT_CONN, PgBouncer};

use crate::clock::{self, FakeClock};
use crate::signal;

/// How long a server may take to start on a loaded machine.
const START_LIMIT: Duration = Duration::from_secs(60);

/// Whether `program --version` runs.
fn runs(program: &Path) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd` with `input` on stdin; its stdout, or a panic with its
/// stderr naming `what`.
fn pipe(cmd: Command, input: &str, what: &str) -> String {
    try_pipe(cmd, input, what).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `cmd` with `input` on stdin: its stdout, or its stderr when it
/// fails.
fn try_pipe(cmd: Command, input: &str, what: &str) -> Result<String, String> {
    run_piped(cmd, input, what, None)
}

/// Runs `cmd` with `input` on stdin, killed if it has not finished within
/// `limit` (if any): its stdout, or its stderr (or the timeout) when it
/// fails.
fn run_piped(
    mut cmd: Command,
    input: &str,
    what: &str,
    limit: Option<Duration>,
) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_owned();
    // From threads: a client that stops reading (an error) must not leave
    // the test blocked on a full pipe, nor one that writes much.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = read_all(Box::new(child.stderr.take().expect("piped stderr")));
    let status = match limit {
        None => child.wait().unwrap_or_else(|e| panic!("{what}: {e}")),
        Some(limit) => {
            let deadline = Instant::now() + limit;
            loop {
                match child.try_wait() {
                    Ok(Some(status)) => break status,
                    Ok(None) => {}
                    Err(e) => panic!("{what}: {e}"),
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    let _ = (writer.join(), stdout.join(), stderr.join());
                    return Err(format!("{what}: no answer within {limit:?} (killed)"));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    let _ = writer.join();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        return Err(format!("{what} failed ({status}): {stderr}"));
    }
    String::from_utf8(stdout).map_err(|e| format!("{what}: output not UTF-8: {e}"))
}

/// Whether this process runs as root.
fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The directory of PostgreSQL's server programs: `$SNOWMINT_PG_BIN`, else
/// the newest `/usr/lib/postgresql/*/bin` (Debian's layout) with `initdb`.
fn pg_bindir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SNOWMINT_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// `max_connections` of a server started with [`PostgresBuilder::tcp`]
/// (unless [`PostgresBuilder::max_connections`] says otherwise): room for
/// a coordinator test's pools and PgBouncer's.
pub const TCP_MAX_CONNECTIONS: u32 = 300;

/// How many free ports a start tries before it gives up: another process
/// may bind the port between our probe and the server's bind.
const PORT_TRIES: u32 = 5;

/// How a [`Postgres`] is started: [`Postgres::builder`], then
/// [`start`](PostgresBuilder::start) or
/// [`start_standby`](PostgresBuilder::start_standby).
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct PostgresBuilder {
    bin: Option<PathBuf>,
    tcp: bool,
    faketime: bool,
    max_connections: Option<u32>,
    settings: Vec<(String, String)>,
    archive_wal: bool,
}

/// Where a new server's data directory comes from.
enum Origin<'a> {
    /// `initdb`.
    Initdb,
    /// A base backup of a running primary, as its streaming standby.
    Standby(&'a Postgres),
    /// A copy of a [`BaseBackup`], recovering to a target from archived WAL.
    Restore(&'a BaseBackup, &'a Recovery),
}

/// A base backup of a server (`pg_basebackup -X stream`, with no standby
/// configuration), kept in a temporary directory of its own (owned by the
/// server's user) until dropped: [`PostgresBuilder::start_from_backup`]
/// starts a server from a copy of it.
pub struct BaseBackup {
    dir: TempDir,
}

impl BaseBackup {
    /// The backup's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

/// Where point-in-time recovery stops: the first start of a server from a
/// [`BaseBackup`] replays archived WAL up to (and including) this target,
/// then promotes (`recovery_target_action = 'promote'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryTarget {
    /// `recovery_target_lsn`, e.g. `0/3000148` (`pg_current_wal_lsn()`).
    Lsn(String),
    /// `recovery_target_time`, a `timestamptz`, e.g.
    /// `2026-12-07 01:02:03.456+00`, compared with the commit times the
    /// primary wrote (by its own clock, faked or not).
    Time(String),
}

/// A point-in-time recovery: archived WAL to replay and where to stop.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// The directory of archived WAL segments, e.g. a
    /// [`Postgres::wal_archive`] (`restore_command` copies from it).
    pub archive: PathBuf,
    /// Where replay stops and the server is promoted.
    pub target: RecoveryTarget,
}

impl PostgresBuilder {
    /// The directory of the server programs to run (`initdb`, `pg_ctl`,
    /// `psql`, ...), e.g. `pg_config --bindir`'s answer; by default
    /// `$SNOWMINT_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`.
    pub fn bin_dir(mut self, dir: impl Into<PathBuf>) -> PostgresBuilder {
        self.bin = Some(dir.into());
        self
    }

    /// Also listens on 127.0.0.1, on a free port ([`Postgres::port`],
    /// [`Postgres::url`]), with `max_connections` =
    /// [`TCP_MAX_CONNECTIONS`]. Loopback connections are trusted (no
    /// password).
    pub fn tcp(mut self) -> PostgresBuilder {
        self.tcp = true;
        self
    }

    /// Runs the server under libfaketime, its wall clock stepped by
    /// [`Postgres::set_clock_offset_ms`] (`now()`, `clock_timestamp()`;
    /// the monotonic clock is left alone). Without libfaketime the start
    /// is a skip.
    pub fn faketime(mut self) -> PostgresBuilder {
        self.faketime = true;
        self
    }

    /// The server's `max_connections` (PostgreSQL's default, 100, unless
    /// [`tcp`](PostgresBuilder::tcp)).
    pub fn max_connections(mut self, n: u32) -> PostgresBuilder {
        self.max_connections = Some(n);
        self
    }

    /// A server setting (`-c name=value`), e.g.
    /// `shared_preload_libraries=pg_stat_statements`. `name` and `value`
    /// must not need quoting.
    pub fn setting(mut self, name: &str, value: &str) -> PostgresBuilder {
        self.settings.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Makes a cluster (`initdb`) and starts its server; `None` (after
    /// printing why) when PostgreSQL (or libfaketime, if asked for) is not
    /// installed and services are not required.
    ///
    /// # Panics
    ///
    /// When the server does not start (with its log), or a program is
    /// missing under `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start(self) -> Option<Postgres> {
        self.launch(Origin::Initdb)
    }

    /// A hot standby of `primary`: a base backup of it (`pg_basebackup -R
    /// -X stream`, over `primary`'s socket) started as a server of its
    /// own, streaming `primary`'s WAL; `pg_is_in_recovery()` is true on it
    /// and it refuses writes. Its `max_connections` is at least
    /// `primary`'s, as a standby must have. `None` as for
    /// [`start`](PostgresBuilder::start).
    ///
    /// # Panics
    ///
    /// When the base backup fails or the standby does not start, or a
    /// program is missing under `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start_standby(self, primary: &Postgres) -> Option<Postgres> {
        self.launch(Origin::Standby(primary))
    }

    /// Archives the server's WAL (`archive_mode = on`, an
    /// `archive_command` that copies each completed segment, never over
    /// one already there) into a directory of its own,
    /// [`Postgres::wal_archive`]. The settings are on the command line, so
    /// a standby or a base backup of it does not inherit them.
    pub fn archive_wal(mut self) -> PostgresBuilder {
        self.archive_wal = true;
        self
    }

    /// Point-in-time recovery: a server whose data directory is a copy of
    /// `backup`, with `recovery.signal` and, in `postgresql.auto.conf`,
    /// `restore_command` (copying from `recovery.archive`),
    /// `recovery_target_lsn` or `recovery_target_time` and
    /// `recovery_target_action = 'promote'`, as an operator restores one.
    /// It is started and this waits until it has reached the target and
    /// been promoted (`pg_is_in_recovery()` false, a new timeline). `None`
    /// as for [`start`](PostgresBuilder::start).
    ///
    /// # Panics
    ///
    /// When the copy fails, the server does not start (recovery ended
    /// before the target: the WAL was not archived), or is not promoted
    /// within a minute; with its log.
    pub fn start_from_backup(self, backup: &BaseBackup, recovery: &Recovery) -> Option<Postgres> {
        let pg = self.launch(Origin::Restore(backup, recovery))?;
        pg.wait_for(
            "promoted at the recovery target",
            "SELECT pg_is_in_recovery()",
            "f",
        );
        Some(pg)
    }

    fn launch(self, origin: Origin<'_>) -> Option<Postgres> {
        let primary = match origin {
            Origin::Standby(primary) => Some(primary),
            Origin::Initdb | Origin::Restore(..) => None,
        };
        let Some(bin) = (self.bin.clone().or_else(pg_bindir))
            .filter(|b| runs(&b.join("initdb")) && runs(&b.join("psql")))
        else {
            return crate::skip(
                "PostgreSQL's initdb and psql are not installed (apt-get install postgresql)",
            );
        };
        let library = ServerClock::library(self.faketime)?;
        // The server's user must own its directory and reach it.
        let dir = server_user_dir();
        let clock = ServerClock::new(library, dir.path());
        let own = self
            .max_connections
            .or(self.tcp.then_some(TCP_MAX_CONNECTIONS));
        let max_connections = match (own, primary.and_then(|p| p.max_connections)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let archive = self.archive_wal.then(|| {
            let archive = dir.path().join("archive");
            std::fs::create_dir(&archive).expect("make the WAL archive directory");
            give_to_server_user(&archive);
            archive
        });
        let mut pg = Postgres {
            bin,
            dir,
            port: None,
            max_connections,
            settings: self.settings.clone(),
            clock,
            archive,
        };
        match origin {
            Origin::Initdb => pg.initdb(),
            Origin::Standby(primary) => pg.base_backup(primary),
            Origin::Restore(backup, recovery) => pg.restore(backup, recovery),
        }
        on_a_free_port(self.tcp, |port| {
            pg.port = port;
            let _ = std::fs::remove_file(pg.log());
            pg.pg_ctl_start("start")
        })
        .unwrap_or_else(|e| panic!("the PostgreSQL server did not start: {e}"));
        Some(pg)
    }
}

/// One PostgreSQL server: a cluster of its own in a temporary directory,
/// reachable through the socket in that directory (and, when started with
/// [`PostgresBuilder::tcp`], on 127.0.0.1); stopped (`pg_ctl stop -m
/// immediate`) when dropped, after a [`SIGCONT`](Postgres::resume) in case
/// it was paused.
///
/// Connections as `postgres` are trusted, over the socket and loopback.
pub struct Postgres {
    bin: PathBuf,
    dir: TempDir,
    /// The TCP port on 127.0.0.1, if any (the socket's name ends in it).
    port: Option<u16>,
    /// `-c max_connections`, if not PostgreSQL's default.
    max_connections: Option<u32>,
    /// Other `-c` settings.
    settings: Vec<(String, String)>,
    /// The server's wall clock.
    clock: ServerClock,
    /// The directory its WAL is archived into, if it is
    /// ([`PostgresBuilder::archive_wal`]).
    archive: Option<PathBuf>,
}

impl Postgres {
    /// Makes a cluster and starts its server, on its socket only; `None`
    /// (after printing why) when PostgreSQL is not installed and services
    /// are not required.
    ///
    /// # Panics
    ///
    /// When the server does not start, or PostgreSQL is missing under
    /// `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start() -> Option<Postgres> {
        Postgres::builder().start()
    }

    /// [`start`](Postgres::start), also listening on 127.0.0.1 (see
    /// [`PostgresBuilder::tcp`]).
    ///
    /// # Panics
    ///
    /// As [`start`](Postgres::start).
    pub fn start_tcp() -> Option<Postgres> {
        Postgres::builder().tcp().start()
    }

    /// A hot standby of `primary`, on TCP (see
    /// [`PostgresBuilder::start_standby`]).
    ///
    /// # Panics
    ///
    /// As [`PostgresBuilder::start_standby`].
    pub fn start_standby(primary: &Postgres) -> Option<Postgres> {
        Postgres::builder().tcp().start_standby(primary)
    }

    /// A server with options: TCP, libfaketime, `max_connections`.
    pub fn builder() -> PostgresBuilder {
        PostgresBuilder::default()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The port in the socket's name: the TCP port, or the default.
    fn socket_port(&self) -> u16 {
        self.port.unwrap_or(5432)
    }

    fn initdb(&self) {
        let out = self
            .as_server_user(&self.bin.join("initdb"))
            .args([
                "-D",
                path(&self.data()),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
            ])
            .args(["-E", "UTF8", "--locale", "C"])
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Copies `primary` into our data directory as a standby of it.
    fn base_backup(&self, primary: &Postgres) {
        primary.pg_basebackup(&self.data(), &["-R"]);
    }

    /// Copies `backup` into our data directory, set up to recover as
    /// `recovery` says.
    fn restore(&self, backup: &BaseBackup, recovery: &Recovery) {
        let out = self
            .as_server_user(Path::new("cp"))
            .args(["-a", path(&backup.data_dir()), path(&self.data())])
            .output()
            .expect("run cp");
        assert!(
            out.status.success(),
            "copying the base backup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let quote = |value: &str| format!("'{}'", value.replace('\'', "''"));
        let archive = path(&recovery.archive);
        let target = match &recovery.target {
            RecoveryTarget::Lsn(lsn) => format!("recovery_target_lsn = {}", quote(lsn)),
            RecoveryTarget::Time(time) => format!("recovery_target_time = {}", quote(time)),
        };
        let conf = self.data().join("postgresql.auto.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap_or_default();
        text.push_str(&format!(
            "restore_command = {}\n{target}\nrecovery_target_action = 'promote'\n",
            quote(&format!("cp {archive}/%f \"%p\""))
        ));
        std::fs::write(&conf, text).expect("write postgresql.auto.conf");
        let signal = self.data().join("recovery.signal");
        std::fs::write(&signal, "").expect("write recovery.signal");
        give_to_server_user(&conf);
        give_to_server_user(&signal);
    }

    /// The server's command-line options.
    fn options(&self) -> String {
        // The socket in our directory. Commits are durable (fsync on, as
        // the SQL coordinators require unless told to accept lost commits).
        let mut options = match self.port {
            None => "-c listen_addresses=''".to_owned(),
            Some(port) => format!("-c listen_addresses=127.0.0.1 -p {port}"),
        };
        options.push_str(&format!(" -k {}", path(self.dir.path())));
        if let Some(n) = self.max_connections {
            options.push_str(&format!(" -c max_connections={n}"));
        }
        if let Some(archive) = &self.archive {
            // pg_ctl runs the server through `/bin/sh -c`: quoted for it.
            let archive = path(archive);
            options.push_str(&format!(
                " -c archive_mode=on -c archive_command='test ! -f {archive}/%f && cp %p {archive}/%f'"
            ));
        }
        for (name, value) in &self.settings {
            options.push_str(&format!(" -c {name}={value}"));
        }
        options
    }

    /// `pg_ctl` as the server's user, under the server's clock if any
    /// (`pg_ctl -w` compares the server's start time with its own).
    fn pg_ctl(&self) -> Command {
        let env = self.clock.env();
        let mut cmd = self.as_server_user_env(&self.bin.join("pg_ctl"), &env);
        cmd.args(["-D", path(&self.data())]);
        cmd
    }

    /// `pg_ctl start` or `restart`, waiting until the server accepts
    /// connections; the error names pg_ctl's message and the server's log.
    fn pg_ctl_start(&self, action: &str) -> Result<(), String> {
        let out = self
            .pg_ctl()
            .args(["-o", &self.options(), "-w"])
            .args(["-t", &START_LIMIT.as_secs().to_string()])
            .args(["-l", path(&self.log())])
            .args(if action == "restart" {
                &["-m", "fast"][..]
            } else {
                &[]
            })
            .arg(action)
            .output()
            .expect("run pg_ctl");
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "pg_ctl {action}: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.log()).unwrap_or_default()
        ))
    }

    /// `program` as a command, run as `postgres` when we are root.
    fn as_server_user(&self, program: &Path) -> Command {
        self.as_server_user_env(program, &[])
    }

    /// `program` with `env` added, run as `postgres` when we are root
    /// (through `env`, so `runuser` itself runs without it).
    fn as_server_user_env(&self, program: &Path, env: &[(&str, String)]) -> Command {
        if is_root() {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]);
            if !env.is_empty() {
                cmd.arg("env")
                    .args(env.iter().map(|(key, value)| format!("{key}={value}")));
            }
            cmd.arg(program);
            cmd
        } else {
            let mut cmd = Command::new(program);
            cmd.envs(env.iter().map(|(key, value)| (key, value)));
            cmd
        }
    }

    /// Runs `script` in `database` through `psql`, stopping at the first
    /// error; returns the rows, unaligned (`|` between columns, no header).
    ///
    /// # Panics
    ///
    /// When the script fails, with psql's message.
    pub fn psql(&self, database: &str, script: &str) -> String {
        self.try_psql(database, script)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`psql`](Postgres::psql), returning psql's message when the script
    /// fails (for statements that must be refused).
    pub fn try_psql(&self, database: &str, script: &str) -> Result<String, String> {
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args([
                "-h",
                path(self.dir.path()),
                "-U",
                "postgres",
                "-d",
                database,
            ])
            .env("PGTZ", "UTC")
            .env("PGOPTIONS", "-c client_min_messages=warning");
        if let Some(port) = self.port {
            cmd.args(["-p", &port.to_string()]);
        }
        try_pipe(cmd, script, "psql")
    }

    /// The directory of the server's Unix socket (a client's host, e.g.
    /// `psql -h`, libpq's `host=`), the socket's port being the TCP port or
    /// 5432.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's data directory (`PGDATA`).
    pub fn data_dir(&self) -> PathBuf {
        self.data()
    }

    /// Makes a database of its own for one part of a test.
    pub fn create_database(&self, name: &str) {
        self.psql("postgres", &format!("CREATE DATABASE {name};"));
    }

    /// The directory its WAL is archived into, when started with
    /// [`PostgresBuilder::archive_wal`].
    pub fn wal_archive(&self) -> Option<&Path> {
        self.archive.as_deref()
    }

    /// Ends the current WAL segment (`pg_switch_wal()`) and waits until it
    /// is in [`wal_archive`](Postgres::wal_archive), so that everything
    /// written before this call can be restored from the archive. Returns
    /// the segment's file name.
    ///
    /// # Panics
    ///
    /// When the server does not archive its WAL, or the segment is not
    /// archived within a minute (with the server's log).
    pub fn archive_current_wal(&self) -> String {
        let archive = self
            .wal_archive()
            .expect("this PostgreSQL does not archive its WAL: start it with .archive_wal()");
        let segment = self
            .psql("postgres", "SELECT pg_walfile_name(pg_switch_wal());")
            .trim()
            .to_owned();
        let deadline = Instant::now() + START_LIMIT;
        while !archive.join(&segment).exists() {
            assert!(
                Instant::now() < deadline,
                "WAL segment {segment} not archived within {START_LIMIT:?}: {}",
                std::fs::read_to_string(self.log()).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        segment
    }

    /// A base backup of the running server (`pg_basebackup -X stream
    /// --checkpoint=fast`, no standby configuration), for
    /// [`PostgresBuilder::start_from_backup`].
    ///
    /// # Panics
    ///
    /// When `pg_basebackup` fails.
    pub fn take_base_backup(&self) -> BaseBackup {
        let backup = BaseBackup {
            dir: server_user_dir(),
        };
        self.pg_basebackup(&backup.data_dir(), &[]);
        backup
    }

    /// `pg_basebackup` of this server into `dest` (WAL streamed, a fast
    /// checkpoint, no sync), with `extra` arguments (`-R`: a standby's).
    ///
    /// # Panics
    ///
    /// When `pg_basebackup` fails.
    fn pg_basebackup(&self, dest: &Path, extra: &[&str]) {
        let out = self
            .as_server_user(&self.bin.join("pg_basebackup"))
            .args(["-D", path(dest)])
            .args(["-h", path(self.dir.path())])
            .args(["-p", &self.socket_port().to_string()])
            .args(["-U", "postgres", "-X", "stream"])
            .args(["--checkpoint=fast", "--no-sync"])
            .args(extra)
            .output()
            .expect("run pg_basebackup");
        assert!(
            out.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A plain-text dump of `database` (`pg_dump`), to be restored with
    /// [`psql`](Postgres::psql) into another server's database.
    ///
    /// # Panics
    ///
    /// When `pg_dump` fails, with its message.
    pub fn pg_dump(&self, database: &str) -> String {
        let mut cmd = Command::new(self.bin.join("pg_dump"));
        cmd.args(["-h", path(self.dir.path())])
            .args(["-p", &self.socket_port().to_string()])
            .args(["-U", "postgres", "-d", database]);
        pipe(cmd, "", "pg_dump")
    }

    /// The TCP port on 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When the server was started without [`PostgresBuilder::tcp`].
    pub fn port(&self) -> u16 {
        self.port
            .expect("this PostgreSQL listens only on its socket: start it with .tcp()")
    }

    /// A libpq URL of `database` over TCP, as user `postgres` with no
    /// password: `postgres://postgres@127.0.0.1:PORT/DATABASE` (for
    /// tokio-postgres, and `psql -d`).
    ///
    /// # Panics
    ///
    /// When the server was started without [`PostgresBuilder::tcp`].
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port())
    }

    /// The postmaster's process ID (from `postmaster.pid`). A SIGSTOP to
    /// it stalls new connections only: the backends of open ones are
    /// processes of their own (see [`pause`](Postgres::pause)).
    ///
    /// # Panics
    ///
    /// When the server is not running.
    pub fn pid(&self) -> u32 {
        self.try_pid()
            .expect("the PostgreSQL server is not running")
    }

    /// SIGCONT to every process of the server, if it runs (a stopped
    /// process cannot obey pg_ctl).
    fn thaw(&self) {
        if let Some(postmaster) = self.try_pid() {
            for pid in signal::children(postmaster).into_iter().chain([postmaster]) {
                let _ = signal::send(pid, Signal::CONT);
            }
        }
    }

    fn try_pid(&self) -> Option<u32> {
        let pidfile = std::fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        pidfile.lines().next()?.trim().parse().ok()
    }

    /// Freezes the whole server: SIGSTOP to the postmaster, then to every
    /// process of it (backends, WAL writer, ...), waiting until each has
    /// stopped. Open connections stall as new ones do, as when the
    /// database's machine hangs.
    ///
    /// # Panics
    ///
    /// When the server is not running or a process does not stop.
    pub fn pause(&self) {
        let postmaster = self.pid();
        signal::stop(postmaster, START_LIMIT)
            .unwrap_or_else(|e| panic!("SIGSTOP to the postmaster: {e}"));
        for child in signal::children(postmaster) {
            if let Err(e) = signal::stop(child, START_LIMIT) {
                // One that exited on its own is no failure.
                assert!(
                    signal::exited(child),
                    "SIGSTOP to postgres process {child}: {e}"
                );
            }
        }
    }

    /// Thaws what [`pause`](Postgres::pause) (or a SIGSTOP to
    /// [`pid`](Postgres::pid)) froze: SIGCONT to every process of the
    /// server, then to the postmaster.
    ///
    /// # Panics
    ///
    /// When the server is not running or a process does not resume.
    pub fn resume(&self) {
        let postmaster = self.pid();
        for child in signal::children(postmaster) {
            if let Err(e) = signal::resume(child, START_LIMIT) {
                assert!(
                    signal::exited(child),
                    "SIGCONT to postgres process {child}: {e}"
                );
            }
        }
        signal::resume(postmaster, START_LIMIT)
            .unwrap_or_else(|e| panic!("SIGCONT to the postmaster: {e}"));
    }

    /// Stops the server (`pg_ctl stop -m fast`), keeping its data and
    /// port for [`restart`](Postgres::restart).
    ///
    /// # Panics
    ///
    /// When pg_ctl fails (the server is not running, or did not stop in
    /// time: a paused server cannot stop).
    pub fn stop(&self) {
        let out = self
            .pg_ctl()
            .args(["-w", "-m", "fast", "-t", &START_LIMIT.as_secs().to_string()])
            .arg("stop")
            .output()
            .expect("run pg_ctl stop");
        assert!(
            out.status.success(),
            "pg_ctl stop failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The server's log file (what `pg_ctl -l` writes), for a harness to keep.
    pub fn log_file(&self) -> PathBuf {
        self.log()
    }

    /// Crashes the server: `pg_ctl stop -m immediate` (every process
    /// quits at once, no checkpoint; the next start replays the WAL, as
    /// after a power cut), after a SIGCONT to every process in case it was
    /// paused. Its data and port are kept: [`restart`](Postgres::restart)
    /// starts it again.
    ///
    /// # Panics
    ///
    /// When pg_ctl fails (the server is not running).
    pub fn crash(&self) {
        self.thaw();
        let out = self
            .pg_ctl()
            .args([
                "-w",
                "-m",
                "immediate",
                "-t",
                &START_LIMIT.as_secs().to_string(),
            ])
            .arg("stop")
            .output()
            .expect("run pg_ctl stop");
        assert!(
            out.status.success(),
            "pg_ctl stop -m immediate failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// [`crash`](Postgres::crash), then [`restart`](Postgres::restart):
    /// the server comes back on the same port after crash recovery.
    ///
    /// # Panics
    ///
    /// As [`crash`](Postgres::crash) and [`restart`](Postgres::restart).
    pub fn crash_restart(&self) {
        self.crash();
        self.restart();
    }

    /// Restarts the server (`pg_ctl restart -m fast`; or starts it again
    /// after [`stop`](Postgres::stop)) on the same port, data and clock,
    /// waiting until it accepts connections.
    ///
    /// # Panics
    ///
    /// When it does not start again (with its log): the port may have been
    /// taken while it was down.
    pub fn restart(&self) {
        self.pg_ctl_start("restart")
            .unwrap_or_else(|e| panic!("the PostgreSQL server did not restart: {e}"));
    }

    /// Steps the server's wall clock to `offset_ms` from the real time
    /// (`30_000`, `-30_000`); its next clock call sees it.
    ///
    /// # Panics
    ///
    /// When the server was started without [`PostgresBuilder::faketime`],
    /// or the control file cannot be written.
    pub fn set_clock_offset_ms(&self, offset_ms: i64) {
        self.clock.set_offset_ms(offset_ms, "PostgreSQL");
    }

    /// The server's clock offset from the real time, in milliseconds (0
    /// when not under libfaketime).
    pub fn clock_offset_ms(&self) -> i64 {
        self.clock.offset_ms()
    }

    /// Kills the server as a machine's death would: SIGKILL to the
    /// postmaster and every process of it at once (no shutdown, nothing
    /// flushed that was not; open connections are reset). Its data and port
    /// are kept, but a killed primary is meant to stay down: its standby is
    /// [`promote`](Postgres::promote)d. Killing a server that is not running
    /// does nothing.
    pub fn kill(&self) {
        let Some(postmaster) = self.try_pid() else {
            return;
        };
        let children = signal::children(postmaster);
        let _ = signal::send(postmaster, Signal::KILL);
        for child in children {
            let _ = signal::send(child, Signal::KILL);
        }
        let deadline = Instant::now() + START_LIMIT;
        while !signal::exited(postmaster) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // A later start must not take the dead postmaster's pid file for a
        // live server's.
        let _ = std::fs::remove_file(self.data().join("postmaster.pid"));
    }

    /// On a standby: pauses the replay of WAL (`pg_wal_replay_pause()`) and
    /// waits until it has paused. The WAL receiver goes on receiving, and
    /// a promotion replays everything received, paused or not
    /// (PostgreSQL 15: "if a promotion is triggered while recovery is
    /// paused, the paused state ends and promotion continues"): to lose
    /// the last commits in a failover, cut the standby off with
    /// [`stop_receiving`](Postgres::stop_receiving).
    ///
    /// # Panics
    ///
    /// When the server is not a standby, or does not pause within a minute.
    pub fn pause_replay(&self) {
        self.psql("postgres", "SELECT pg_wal_replay_pause();");
        self.wait_for(
            "the replay paused",
            "SELECT pg_get_wal_replay_pause_state()",
            "paused",
        );
    }

    /// On a standby: resumes what [`pause_replay`](Postgres::pause_replay)
    /// paused.
    ///
    /// # Panics
    ///
    /// When the server is not a standby.
    pub fn resume_replay(&self) {
        self.psql("postgres", "SELECT pg_wal_replay_resume();");
    }

    /// On a standby: cuts it off from its primary for good, as a standby
    /// whose network to the primary failed: its WAL receiver is stopped
    /// (`primary_conninfo` emptied and the configuration reloaded: PostgreSQL
    /// 13 and later stop the receiver and start none) and this waits until
    /// it has gone. What the standby had not received by then, it never
    /// replays: a [`promote`](Postgres::promote) after more commits on the
    /// primary loses them. Returns the last WAL position received
    /// (`pg_last_wal_receive_lsn()`).
    ///
    /// # Panics
    ///
    /// When the server is not a standby, or its receiver does not stop
    /// within a minute.
    pub fn stop_receiving(&self) -> String {
        self.psql(
            "postgres",
            "ALTER SYSTEM SET primary_conninfo = '';\nSELECT pg_reload_conf();",
        );
        self.wait_for(
            "the WAL receiver stopped",
            "SELECT count(*) FROM pg_stat_wal_receiver",
            "0",
        );
        self.psql("postgres", "SELECT pg_last_wal_receive_lsn();")
            .trim()
            .to_owned()
    }

    /// Promotes a standby to a primary (`pg_promote()`, waiting for it) and
    /// waits until it takes writes (`pg_is_in_recovery()` false). It begins
    /// a new timeline; its WAL receiver, if any, stops.
    ///
    /// # Panics
    ///
    /// When the server is not a standby, or is not promoted within a minute.
    pub fn promote(&self) {
        let promoted = self.psql(
            "postgres",
            &format!("SELECT pg_promote(true, {});", START_LIMIT.as_secs()),
        );
        assert_eq!(promoted.trim(), "t", "pg_promote() did not promote");
        self.wait_for("promoted", "SELECT pg_is_in_recovery()", "f");
    }

    /// On a standby of `primary`: waits until it has replayed everything
    /// `primary` had written when this was called (`pg_current_wal_lsn()`
    /// there, `pg_last_wal_replay_lsn()` here).
    ///
    /// # Panics
    ///
    /// When it has not within a minute.
    pub fn catch_up(&self, primary: &Postgres) {
        let lsn = primary.psql("postgres", "SELECT pg_current_wal_lsn();");
        self.wait_for(
            "caught up",
            &format!(
                "SELECT pg_last_wal_replay_lsn() >= '{}'::pg_lsn",
                lsn.trim()
            ),
            "t",
        );
    }

    /// Whether the server is a standby (`pg_is_in_recovery()`).
    ///
    /// # Panics
    ///
    /// When the query fails.
    pub fn in_recovery(&self) -> bool {
        self.psql("postgres", "SELECT pg_is_in_recovery();").trim() == "t"
    }

    /// The cluster's `system_identifier` (`pg_control_system()`): the same
    /// on a primary and every standby made from it.
    ///
    /// # Panics
    ///
    /// When the query fails.
    pub fn system_identifier(&self) -> String {
        self.psql(
            "postgres",
            "SELECT system_identifier FROM pg_control_system();",
        )
        .trim()
        .to_owned()
    }

    /// Waits (at most a minute) until `query` answers `answer`, or panics
    /// naming `what` and the last answer.
    fn wait_for(&self, what: &str, query: &str, answer: &str) {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let got = self.try_psql("postgres", query);
            if got.as_deref().map(str::trim) == Ok(answer) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "PostgreSQL: not {what} within {START_LIMIT:?}: {got:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.thaw();
        let _ = self
            .pg_ctl()
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Runs `script` through `psql -d URL` (any libpq URL: a
/// [`Postgres::url`], a standby's, a [`PgBouncer::url`]), stopping at the
/// first error, and killing psql if it has not finished within `limit`
/// (a server that is stopped never answers); returns the rows as
/// [`Postgres::psql`] does, or psql's message (or the timeout).
///
/// # Panics
///
/// When `psql` cannot be started.
pub fn psql_url(url: &str, script: &str, limit: Duration) -> Result<String, String> {
    let psql = pg_bindir()
        .map(|bin| bin.join("psql"))
        .filter(|psql| psql.exists())
        .unwrap_or_else(|| PathBuf::from("psql"));
    let mut cmd = Command::new(psql);
    cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url]);
    run_piped(cmd, script, "psql", Some(limit))
}

/// The lock of `m`, even if a panicking thread held it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A TCP port on 127.0.0.1 that nothing listened on a moment ago (the OS
/// picks it). Others may take it before our server binds it: starts try
/// again on another ([`PORT_TRIES`]).
fn free_port() -> u16 {
    crate::etcd::free_port_on(Ipv4Addr::LOCALHOST)
}

/// The user ID of `name`, from `id -u`.
fn user_id(name: &str) -> Option<u32> {
    let out = Command::new("id").args(["-u", name]).output().ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

/// `p` as text (our temporary paths are UTF-8).
fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

/// The first of `names` that runs with `--version`.
fn first_program(names: &[&str]) -> Option<PathBuf> {
    names.iter().map(PathBuf::from).find(|p| runs(p))
}

/// A temporary directory for a PostgreSQL program's files; when we are
/// root, owned by `postgres`, the user it runs as.
fn server_user_dir() -> TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    if is_root() {
        let uid = user_id("postgres").expect("a `postgres` user (the postgresql package makes it)");
        std::os::unix::fs::chown(dir.path(), Some(uid), None).expect("chown to postgres");
    }
    dir
}

/// Gives `file` (made by us) to the server's user when we are root.
fn give_to_server_user(file: &Path) {
    if is_root() {
        let uid = user_id("postgres").expect("a `postgres` user (the postgresql package makes it)");
        std::os::unix::fs::chown(file, Some(uid), None).expect("chown to postgres");
    }
}

/// Starts a server with `start`: on a free port of 127.0.0.1 when `tcp`
/// (else `None`: its socket only), trying another port ([`PORT_TRIES`] in
/// all) when another process took the one picked before the server bound
/// it; `start`'s last answer.
fn on_a_free_port<T>(
    tcp: bool,
    mut start: impl FnMut(Option<u16>) -> Result<T, String>,
) -> Result<T, String> {
    let mut attempt = 1;
    loop {
        let port = tcp.then(free_port);
        match start(port) {
            Err(e)
                if port.is_some()
                    && attempt < PORT_TRIES
                    && e.contains("Address already in use") =>
            {
                attempt += 1;
            }
            answer => return answer,
        }
    }
}

/// A server's wall clock: under libfaketime (stepped while it runs), or
/// the real one.
struct ServerClock(Option<Mutex<FakeClock>>);

impl ServerClock {
    /// libfaketime's library when `faketime` is asked for, looked up before
    /// anything is made: `Some(None)` when it is not, `None` (after
    /// printing why) when it is and libfaketime is not installed.
    fn library(faketime: bool) -> Option<Option<PathBuf>> {
        match (faketime, clock::libfaketime()) {
            (false, _) => Some(None),
            (true, Some(library)) => Some(Some(library)),
            (true, None) => crate::skip("libfaketime is not installed (apt-get install faketime)"),
        }
    }

    /// Under `library`, if any, its control file in `dir`.
    fn new(library: Option<PathBuf>, dir: &Path) -> ServerClock {
        ServerClock(library.map(|library| {
            let clock = FakeClock::new(library, dir.join("clock"))
                .expect("write the faketime control file");
            Mutex::new(clock)
        }))
    }

    /// The environment that puts a process under it (none for the real
    /// clock).
    fn env(&self) -> Vec<(&'static str, String)> {
        self.0.as_ref().map(|c| lock(c).env()).unwrap_or_default()
    }

    /// Puts `cmd` under it.
    fn apply(&self, cmd: &mut Command) {
        if let Some(clock) = &self.0 {
            lock(clock).apply(cmd);
        }
    }

    /// Steps it to `offset_ms` from the real time; a panic when `server`
    /// (`"PostgreSQL"`) does not run under libfaketime.
    fn set_offset_ms(&self, offset_ms: i64, server: &str) {
        let clock = self.0.as_ref().unwrap_or_else(|| {
            panic!("this {server} does not run under libfaketime: start it with .faketime()")
        });
        lock(clock)
            .set_offset_ms(offset_ms)
            .expect("write the faketime control file");
    }

    /// Its offset from the real time, in milliseconds (0 for the real one).
    fn offset_ms(&self) -> i64 {
        self.0.as_ref().map_or(0, |c| lock(c).offset_ms())
    }
}

/// The MariaDB user of [`Mariadb::url`]: every privilege but `SUPER` and
/// `READ_ONLY ADMIN`, so that `read_only` binds it as it binds an
/// application ([`Mariadb::set_read_only`]).
pub const MARIADB_USER: &str = "snowmint";

/// [`MARIADB_USER`]'s password.
pub const MARIADB_PASSWORD: &str = "snowmint";

/// How a [`Mariadb`] is started: [`Mariadb::builder`], then
/// [`start`](MariadbBuilder::start).
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct MariadbBuilder {
    tcp: bool,
    faketime: bool,
    settings: Vec<String>,
}

impl MariadbBuilder {
    /// Also listens on 127.0.0.1, on a free port ([`Mariadb::port`],
    /// [`Mariadb::url`]), with `max_connections` =
    /// [`TCP_MAX_CONNECTIONS`], for users `root` (no password,
    /// [`Mariadb::root_url`]) and [`MARIADB_USER`].
    pub fn tcp(mut self) -> MariadbBuilder {
        self.tcp = true;
        self
    }

    /// Runs the server under libfaketime, its wall clock stepped by
    /// [`Mariadb::set_clock_offset_ms`] (`NOW()`, `UNIX_TIMESTAMP()`).
    /// Without libfaketime the start is a skip.
    pub fn faketime(mut self) -> MariadbBuilder {
        self.faketime = true;
        self
    }

    /// A server option, `--NAME=VALUE` on `mariadbd`'s command line at every
    /// start, after the testkit's own (so it overrides them): a server
    /// default (`("autocommit", "0")`), the binary log for a primary
    /// (`("log-bin", "primary")`, `("server-id", "1")`; see
    /// [`Mariadb::replicate`]).
    pub fn setting(mut self, name: &str, value: &str) -> MariadbBuilder {
        self.settings.push(format!("--{name}={value}"));
        self
    }

    /// Installs a data directory and starts the server; `None` (after
    /// printing why) when MariaDB (or libfaketime, if asked for) is not
    /// installed and services are not required.
    ///
    /// # Panics
    ///
    /// When the server does not start (with its log), or a program is
    /// missing under `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start(self) -> Option<Mariadb> {
        let server = first_program(&["mariadbd", "/usr/sbin/mariadbd"]);
        let install = first_program(&["mariadb-install-db"]);
        let client = first_program(&["mariadb"]);
        let (Some(server), Some(install), Some(client)) = (server, install, client) else {
            return crate::skip(
                "MariaDB's mariadbd, mariadb-install-db and mariadb are not installed \
                 (apt-get install mariadb-server mariadb-client)",
            );
        };
        let library = ServerClock::library(self.faketime)?;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let clock = ServerClock::new(library, dir.path());
        let db = Mariadb {
            child: Mutex::new(None),
            client,
            server,
            port: None,
            clock,
            settings: self.settings,
            dir,
        };
        // Temporary tables in a directory of this server's own: in the
        // shared /tmp, the bootstrap of another server (of another test
        // run, whose process IDs may be the same numbers) can take or
        // remove a file of the same name, and the install fails
        // ("Could not remove temporary table '/tmp/#sql-temptable-...'").
        std::fs::create_dir(db.tmp()).expect("a temporary directory for mariadbd");
        let out = Command::new(install)
            .args(["--no-defaults", "--auth-root-authentication-method=normal"])
            .args(["--skip-test-db", "--skip-name-resolve"])
            .arg(format!("--datadir={}", path(&db.dir.path().join("data"))))
            .arg(format!("--tmpdir={}", path(&db.tmp())))
            .args(db.user())
            .output()
            .expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut db = db;
        on_a_free_port(self.tcp, |port| {
            db.port = port;
            let _ = std::fs::remove_file(db.log());
            db.spawn();
            db.wait_ready()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        if self.tcp {
            // Over TCP from 127.0.0.1 (names unresolved) only accounts of
            // host 127.0.0.1 match: `root@localhost` is the socket's.
            // mariadb-install-db makes `root@127.0.0.1` too (10.11), but
            // may not everywhere. Not in a binary log (if there is one): a
            // replica has the users of its own start.
            db.sql(
                "mysql",
                &format!(
                    "SET sql_log_bin = 0;\n\
                     CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';\n\
                     GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n\
                     CREATE USER '{MARIADB_USER}'@'127.0.0.1' IDENTIFIED BY '{MARIADB_PASSWORD}';\n\
                     GRANT ALL PRIVILEGES ON *.* TO '{MARIADB_USER}'@'127.0.0.1';\n\
                     REVOKE SUPER, READ_ONLY ADMIN ON *.* FROM '{MARIADB_USER}'@'127.0.0.1';\n"
                ),
            );
        }
        Some(db)
    }
}

/// One MariaDB (or MySQL) server with a data directory of its own, on a
/// Unix socket in it (only there, `--skip-networking`, unless started with
/// [`MariadbBuilder::tcp`]); killed when dropped.
pub struct Mariadb {
    /// The running server; `None` after [`stop`](Mariadb::stop).
    child: Mutex<Option<Child>>,
    client: PathBuf,
    server: PathBuf,
    /// The TCP port on 127.0.0.1, if any.
    port: Option<u16>,
    /// The server's wall clock.
    clock: ServerClock,
    /// `--NAME=VALUE` options of [`MariadbBuilder::setting`].
    settings: Vec<String>,
    dir: TempDir,
}

impl Mariadb {
    /// Installs a data directory and starts the server, on its socket
    /// only; `None` (after printing why) when MariaDB is not installed and
    /// services are not required.
    ///
    /// # Panics
    ///
    /// When the server does not start, or MariaDB is missing under
    /// `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start() -> Option<Mariadb> {
        Mariadb::builder().start()
    }

    /// [`start`](Mariadb::start), also listening on 127.0.0.1 (see
    /// [`MariadbBuilder::tcp`]).
    ///
    /// # Panics
    ///
    /// As [`start`](Mariadb::start).
    pub fn start_tcp() -> Option<Mariadb> {
        Mariadb::builder().tcp().start()
    }

    /// A server with options: TCP, libfaketime, server settings.
    pub fn builder() -> MariadbBuilder {
        MariadbBuilder::default()
    }

    fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("error.log")
    }

    /// `--user=root` when we are root (mariadbd refuses root otherwise).
    fn user(&self) -> &'static [&'static str] {
        if is_root() { &["--user=root"] } else { &[] }
    }

    /// Starts `mariadbd` over the data directory (not waiting for it).
    fn spawn(&self) {
        let file = |name: &str| path(&self.dir.path().join(name)).to_owned();
        let mut cmd = Command::new(&self.server);
        cmd.arg("--no-defaults");
        match self.port {
            None => cmd.arg("--skip-networking"),
            Some(port) => cmd
                .args(["--bind-address=127.0.0.1", "--skip-name-resolve"])
                .arg(format!("--port={port}"))
                .arg(format!("--max-connections={TCP_MAX_CONNECTIONS}")),
        };
        cmd.arg("--skip-log-bin")
            .args(["--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M"])
            .arg(format!("--datadir={}", file("data")))
            .arg(format!("--tmpdir={}", path(&self.tmp())))
            .arg(format!("--socket={}", file("mysql.sock")))
            .arg(format!("--pid-file={}", file("mysqld.pid")))
            .arg(format!("--log-error={}", path(&self.log())))
            .args(self.user())
            .args(&self.settings)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.clock.apply(&mut cmd);
        *lock(&self.child) = Some(cmd.spawn().expect("start mariadbd"));
    }

    /// Waits until the server answers a query; the error holds its log.
    fn wait_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let answered = self
                .client_command("mysql")
                .arg("-e")
                .arg("SELECT 1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if answered {
                return Ok(());
            }
            let exited = match lock(&self.child).as_mut() {
                Some(child) => child.try_wait().ok().flatten().map(|s| s.to_string()),
                None => Some("not started".to_owned()),
            };
            let log = || std::fs::read_to_string(self.log()).unwrap_or_default();
            if let Some(status) = exited {
                return Err(format!("mariadbd exited ({status}): {}", log()));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "mariadbd did not answer within {START_LIMIT:?}: {}",
                    log()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn client_command(&self, database: &str) -> Command {
        let mut cmd = Command::new(&self.client);
        cmd.arg("--no-defaults")
            .arg(format!(
                "--socket={}",
                path(&self.dir.path().join("mysql.sock"))
            ))
            .args(["-u", "root", "--batch", "--skip-column-names", database]);
        cmd
    }

    /// Runs `script` in `database` through the `mariadb` client, stopping
    /// at the first error; returns the rows (tabs between columns, no
    /// header, `NULL` for null).
    ///
    /// # Panics
    ///
    /// When the script fails, with the client's message.
    pub fn sql(&self, database: &str, script: &str) -> String {
        pipe(self.client_command(database), script, "mariadb")
    }

    /// [`sql`](Mariadb::sql), returning the client's message when the
    /// script fails (for statements that must be refused).
    pub fn try_sql(&self, database: &str, script: &str) -> Result<String, String> {
        try_pipe(self.client_command(database), script, "mariadb")
    }

    /// [`try_sql`](Mariadb::try_sql) over TCP as [`MARIADB_USER`] (`mariadb
    /// -h 127.0.0.1 -P PORT`), killing the client if it has not finished
    /// within `limit` (a stopped server never answers).
    ///
    /// # Panics
    ///
    /// When the server was started without [`MariadbBuilder::tcp`].
    pub fn try_sql_tcp(
        &self,
        database: &str,
        script: &str,
        limit: Duration,
    ) -> Result<String, String> {
        let mut cmd = Command::new(&self.client);
        cmd.args(["--no-defaults", "--protocol=TCP", "-h", "127.0.0.1"])
            .args(["-P", &self.port().to_string()])
            .args(["-u", MARIADB_USER])
            .arg(format!("--password={MARIADB_PASSWORD}"))
            .args(["--batch", "--skip-column-names", database]);
        run_piped(cmd, script, "mariadb over TCP", Some(limit))
    }

    /// Makes a database of its own for one part of a test.
    pub fn create_database(&self, name: &str) {
        self.sql("mysql", &format!("CREATE DATABASE {name};"));
    }

    /// The TCP port on 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When the server was started without [`MariadbBuilder::tcp`].
    pub fn port(&self) -> u16 {
        self.port
            .expect("this MariaDB listens only on its socket: start it with .tcp()")
    }

    /// A mysql_async URL of `database` over TCP as [`MARIADB_USER`]:
    /// `mysql://snowmint:snowmint@127.0.0.1:PORT/DATABASE`. That user is
    /// bound by [`set_read_only`](Mariadb::set_read_only).
    ///
    /// # Panics
    ///
    /// When the server was started without [`MariadbBuilder::tcp`].
    pub fn url(&self, database: &str) -> String {
        format!(
            "mysql://{MARIADB_USER}:{MARIADB_PASSWORD}@127.0.0.1:{}/{database}",
            self.port()
        )
    }

    /// A URL of `database` over TCP as `root`, no password:
    /// `mysql://root@127.0.0.1:PORT/DATABASE`. Root holds `READ_ONLY
    /// ADMIN`: `read_only` does not bind it.
    ///
    /// # Panics
    ///
    /// When the server was started without [`MariadbBuilder::tcp`].
    pub fn root_url(&self, database: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{database}", self.port())
    }

    /// The server's process ID (for SIGSTOP and SIGCONT: one process holds
    /// every connection).
    ///
    /// # Panics
    ///
    /// When the server is stopped.
    pub fn pid(&self) -> u32 {
        lock(&self.child)
            .as_ref()
            .expect("mariadbd is stopped")
            .id()
    }

    /// `SET GLOBAL read_only`: on, the server refuses writes of
    /// [`MARIADB_USER`] (error 1290, "--read-only option"); root may
    /// still write.
    ///
    /// # Panics
    ///
    /// When the statement fails.
    pub fn set_read_only(&self, on: bool) {
        self.sql(
            "mysql",
            &format!("SET GLOBAL read_only = {};", u8::from(on)),
        );
    }

    /// The server's error log (`--log-error`), for a harness to keep.
    pub fn log_file(&self) -> PathBuf {
        self.log()
    }

    /// Makes this server a replica of `primary` over the multi-source
    /// connection `connection` (`CHANGE MASTER 'a' TO ...` as root over
    /// TCP, from the start of `primary`'s binary log; `""`: the default
    /// connection), starts it and waits until both its threads run. It
    /// stays writable (`read_only` off), as a replica may be.
    ///
    /// `primary` must be started with [`MariadbBuilder::tcp`] and a binary
    /// log (`.setting("log-bin", "primary").setting("server-id", "1")`),
    /// this server with a `server-id` of its own.
    ///
    /// # Panics
    ///
    /// When a statement fails, or the connection's threads do not both run
    /// within a minute (with its status).
    pub fn replicate(&self, connection: &str, primary: &Mariadb) {
        let name = connection.replace('\'', "''");
        self.sql(
            "mysql",
            &format!(
                "CHANGE MASTER '{name}' TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
                 MASTER_USER = 'root', MASTER_USE_GTID = no;\n\
                 START SLAVE '{name}';\n",
                primary.port()
            ),
        );
        let deadline = Instant::now() + START_LIMIT;
        loop {
            // Vertical, with the column names.
            let mut cmd = Command::new(&self.client);
            cmd.arg("--no-defaults")
                .arg(format!(
                    "--socket={}",
                    path(&self.dir.path().join("mysql.sock"))
                ))
                .args(["-u", "root", "--batch", "mysql"]);
            let status = pipe(cmd, &format!("SHOW SLAVE '{name}' STATUS\\G\n"), "mariadb");
            let running = |thread: &str| {
                status
                    .lines()
                    .any(|l| l.trim() == format!("Slave_{thread}_Running: Yes"))
            };
            if running("IO") && running("SQL") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "replication '{connection}' did not start within {START_LIMIT:?}: {status}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Freezes the server: SIGSTOP to its one process, waiting until every
    /// thread has stopped. Open connections stall as new ones do.
    ///
    /// # Panics
    ///
    /// When the server is stopped or does not stop in time.
    pub fn pause(&self) {
        signal::stop(self.pid(), START_LIMIT)
            .unwrap_or_else(|e| panic!("SIGSTOP to mariadbd: {e}"));
    }

    /// Thaws what [`pause`](Mariadb::pause) froze (SIGCONT).
    ///
    /// # Panics
    ///
    /// When the server is stopped or does not resume in time.
    pub fn resume(&self) {
        signal::resume(self.pid(), START_LIMIT)
            .unwrap_or_else(|e| panic!("SIGCONT to mariadbd: {e}"));
    }

    /// Crashes the server: SIGKILL (no shutdown; the next start runs
    /// InnoDB's crash recovery), keeping its data and port for
    /// [`restart`](Mariadb::restart). Crashing a stopped server does
    /// nothing.
    pub fn crash(&self) {
        if let Some(mut child) = lock(&self.child).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// [`crash`](Mariadb::crash), then [`restart`](Mariadb::restart).
    ///
    /// # Panics
    ///
    /// As [`restart`](Mariadb::restart).
    pub fn crash_restart(&self) {
        self.crash();
        self.restart();
    }

    /// Stops the server (SIGTERM, a clean shutdown; SIGKILL if that takes
    /// longer than the start limit), keeping its data and port for
    /// [`restart`](Mariadb::restart). Stopping a stopped server does
    /// nothing.
    pub fn stop(&self) {
        let Some(mut child) = lock(&self.child).take() else {
            return;
        };
        // A paused server could not hear SIGTERM.
        let _ = signal::send(child.id(), Signal::CONT);
        let _ = signal::send(child.id(), Signal::TERM);
        let deadline = Instant::now() + START_LIMIT;
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() >= deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.wait();
    }

    /// Stops the server (as [`stop`](Mariadb::stop), if it runs) and starts
    /// it again on the same port, data and clock, waiting until it answers.
    ///
    /// # Panics
    ///
    /// When it does not start again (with its log): the port may have been
    /// taken while it was down.
    pub fn restart(&self) {
        self.stop();
        self.spawn();
        self.wait_ready()
            .unwrap_or_else(|e| panic!("mariadbd did not restart: {e}"));
    }

    /// Steps the server's wall clock to `offset_ms` from the real time
    /// (`30_000`, `-30_000`); its next clock call sees it.
    ///
    /// # Panics
    ///
    /// When the server was started without [`MariadbBuilder::faketime`],
    /// or the control file cannot be written.
    pub fn set_clock_offset_ms(&self, offset_ms: i64) {
        self.clock.set_offset_ms(offset_ms, "MariaDB");
    }

    /// The server's clock offset from the real time, in milliseconds (0
    /// when not under libfaketime).
    pub fn clock_offset_ms(&self) -> i64 {
        self.clock.offset_ms()
    }
}

impl Drop for Mariadb {
    fn drop(&mut self) {
        if let Some(mut child) = lock(&self.child).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A SQLite database file in a temporary directory, run through the
/// `sqlite3` shell.
pub struct Sqlite {
    dir: TempDir,
}

impl Sqlite {
    /// A new, empty database; `None` (after printing why) when `sqlite3`
    /// is not installed and services are not required.
    ///
    /// # Panics
    ///
    /// When `sqlite3` is missing under `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn open() -> Option<Sqlite> {
        if !runs(Path::new("sqlite3")) {
            return crate::skip("the `sqlite3` shell is not installed (apt-get install sqlite3)");
        }
        Some(Sqlite {
            dir: tempfile::tempdir().expect("a temporary directory"),
        })
    }

    /// Runs `script` through `sqlite3 -bail` (stopping at the first error);
    /// returns the rows (`|` between columns, empty for null).
    ///
    /// # Panics
    ///
    /// When the script fails, with sqlite3's message.
    pub fn sql(&self, script: &str) -> String {
        let mut cmd = Command::new("sqlite3");
        cmd.arg("-bail")
            .arg("-batch")
            .arg(self.dir.path().join("test.db"));
        pipe(cmd, script, "sqlite3")
    }
}
