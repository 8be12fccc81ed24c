//! A PostgreSQL 15 server of its own for each check of the extension: a
//! cluster made by `initdb` in a temporary directory, reachable only on a
//! Unix socket in it, with the extension preloaded and created, stopped
//! when dropped.
//!
//! The extension must be installed in the server `pg_config` names
//! (`scripts/pg-extension` does it). PostgreSQL refuses to run as root, so
//! under root `initdb` and `pg_ctl` run as the `postgres` user (`runuser`).
//! What differs from `snowmint-testkit`'s server: the settings the
//! extension needs, starts under libfaketime, `kill -9` of the postmaster,
//! and a client library connection (`postgres`) rather than `psql`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a server may take to start (or its killed processes to go) on a
/// loaded machine.
const LIMIT: Duration = Duration::from_secs(90);

/// libfaketime, as Debian's `faketime` package installs it.
const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// How a cluster is set up.
#[derive(Debug, Clone)]
pub struct Setup {
    /// `shared_preload_libraries = 'snowmint'`.
    pub preload: bool,
    /// `snowmint.datacenter` and `snowmint.worker`, when given.
    pub identity: Option<(u8, u8)>,
    /// The server's wall clock at its first start.
    pub clock: Clock,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            preload: true,
            identity: Some((1, 2)),
            clock: Clock::Real,
        }
    }
}

/// The wall clock a server starts with (the monotonic clock is never faked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The machine's.
    Real,
    /// Offset by libfaketime, e.g. `-3600` (seconds: an hour back).
    Offset(&'static str),
    /// Offset by libfaketime by what [`Cluster::set_clock_file`] last wrote
    /// (`+0` at first), re-read at every reading of the clock.
    File,
}

/// One PostgreSQL server in a directory of its own.
pub struct Cluster {
    bin: PathBuf,
    dir: TempDir,
}

/// The directory of the server programs of the PostgreSQL that
/// `pg_config` names (`$PG_CONFIG`, else `pg_config` on the path).
fn pg_bindir() -> PathBuf {
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

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn check(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Cluster {
    /// Makes a cluster with `setup`, starts it and creates the extension in
    /// database `postgres`.
    pub fn start(setup: &Setup) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let cluster = Cluster {
            bin: pg_bindir(),
            dir,
        };
        if is_root() {
            let out = check(
                Command::new("chown")
                    .args(["postgres:postgres", path(cluster.dir.path())])
                    .output()
                    .expect("run chown"),
                "chown to postgres",
            );
            drop(out);
        }
        let data = cluster.data();
        check(
            cluster
                .as_server_user(&cluster.bin.join("initdb"), &[])
                .args([
                    "-D",
                    path(&data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "--no-sync",
                ])
                .args(["-E", "UTF8", "--locale", "C"])
                .output()
                .expect("run initdb"),
            "initdb",
        );
        let mut conf = format!(
            "listen_addresses = ''\nunix_socket_directories = '{}'\nmax_connections = 40\n",
            path(cluster.dir.path())
        );
        if setup.preload {
            conf.push_str("shared_preload_libraries = 'snowmint'\n");
        }
        if let Some((dc, w)) = setup.identity {
            conf.push_str(&format!(
                "snowmint.datacenter = {dc}\nsnowmint.worker = {w}\n"
            ));
        }
        let conf_path = data.join("postgresql.conf");
        let mut all = std::fs::read_to_string(&conf_path).expect("read postgresql.conf");
        all.push_str(&conf);
        std::fs::write(&conf_path, all).expect("write postgresql.conf");
        if setup.clock == Clock::File {
            cluster.set_clock_file("+0");
        }
        cluster.start_server(setup.clock);
        cluster.sql("CREATE EXTENSION snowmint");
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The path of `name` in the data directory.
    pub fn data_file(&self, name: &str) -> PathBuf {
        self.data().join(name)
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// `program` with `env`, run as `postgres` when we are root.
    fn as_server_user(&self, program: &Path, env: &[(&str, String)]) -> Command {
        let mut cmd = if is_root() {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--", "env"]);
            cmd
        } else {
            Command::new("env")
        };
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.arg(program);
        cmd
    }

    /// The file a [`Clock::File`] server reads its clock's offset from.
    fn clock_file(&self) -> PathBuf {
        self.dir.path().join("faketime")
    }

    /// Sets the offset of a [`Clock::File`] server's wall clock (`-3600`:
    /// an hour back), at once.
    pub fn set_clock_file(&self, offset: &str) {
        let tmp = self.dir.path().join("faketime.tmp");
        std::fs::write(&tmp, format!("{offset}\n")).expect("write the clock file");
        std::fs::rename(&tmp, self.clock_file()).expect("replace the clock file");
    }

    /// Starts the server with the wall clock `clock`.
    pub fn start_server(&self, clock: Clock) {
        let faked = |k: &'static str, v: String| {
            vec![
                ("LD_PRELOAD", FAKETIME_LIB.to_owned()),
                ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
                (k, v),
            ]
        };
        let env: Vec<(&str, String)> = match clock {
            Clock::Real => vec![],
            Clock::Offset(offset) => faked("FAKETIME", offset.to_owned()),
            Clock::File => {
                let mut env = faked(
                    "FAKETIME_TIMESTAMP_FILE",
                    path(&self.clock_file()).to_owned(),
                );
                // Read at every reading of the clock, so a step is seen at
                // once by the backends (an idle postmaster was seen to keep
                // its earlier reading).
                env.push(("FAKETIME_NO_CACHE", "1".to_owned()));
                env
            }
        };
        let out = self
            .as_server_user(&self.bin.join("pg_ctl"), &env)
            .args([
                "-D",
                path(&self.data()),
                "-w",
                "-t",
                &LIMIT.as_secs().to_string(),
            ])
            .args(["-l", path(&self.dir.path().join("server.log")), "start"])
            .output()
            .expect("run pg_ctl start");
        assert!(
            out.status.success(),
            "the server did not start: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
    }

    /// Stops the server cleanly (`pg_ctl stop -m fast`).
    pub fn stop_server(&self) {
        check(
            self.as_server_user(&self.bin.join("pg_ctl"), &[])
                .args(["-D", path(&self.data()), "-m", "fast", "-w", "stop"])
                .output()
                .expect("run pg_ctl stop"),
            "pg_ctl stop",
        );
    }

    /// Sends `SIGKILL` to the postmaster and waits (bounded) until every
    /// process it had started is gone, as a restart needs.
    pub fn kill_postmaster(&self) {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .expect("read postmaster.pid");
        let pid: u32 = pid_file
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("a pid");
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .expect("read the postmaster's children");
        let children: Vec<u32> = children
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect();
        assert!(!children.is_empty(), "a running server has processes");
        check(
            Command::new("kill")
                .args(["-9", &pid.to_string()])
                .output()
                .expect("run kill"),
            "kill -9",
        );
        let deadline = Instant::now() + LIMIT;
        let alive = |p: &u32| {
            // A zombie is gone for our purpose: it holds no memory or lock.
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        // PostgreSQL takes a postmaster that is still a zombie for a live
        // one (its pid answers), so that one must be reaped, by whoever
        // inherited it.
        while Path::new(&format!("/proc/{pid}")).exists() || children.iter().any(alive) {
            assert!(
                Instant::now() < deadline,
                "the killed server's processes did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A hot standby of this server (`pg_basebackup -R`), started.
    pub fn standby(&self) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let standby = Cluster {
            bin: self.bin.clone(),
            dir,
        };
        if is_root() {
            check(
                Command::new("chown")
                    .args(["postgres:postgres", path(standby.dir.path())])
                    .output()
                    .expect("run chown"),
                "chown to postgres",
            );
        }
        check(
            standby
                .as_server_user(&self.bin.join("pg_basebackup"), &[])
                .args([
                    "-h",
                    path(self.dir.path()),
                    "-U",
                    "postgres",
                    "-R",
                    "-X",
                    "stream",
                ])
                .args(["-D", path(&standby.data())])
                .output()
                .expect("run pg_basebackup"),
            "pg_basebackup",
        );
        // Its own socket directory.
        let conf_path = standby.data().join("postgresql.conf");
        let mut conf = std::fs::read_to_string(&conf_path).expect("read postgresql.conf");
        conf.push_str(&format!(
            "unix_socket_directories = '{}'\n",
            path(standby.dir.path())
        ));
        std::fs::write(&conf_path, conf).expect("write postgresql.conf");
        standby.start_server(Clock::Real);
        standby
    }

    /// A new connection to database `postgres`.
    pub fn connect(&self) -> postgres::Client {
        self.try_connect()
            .unwrap_or_else(|e| panic!("connect: {e}\n{}", self.log()))
    }

    /// A new connection to database `postgres`, or why there is none.
    pub fn try_connect(&self) -> Result<postgres::Client, postgres::Error> {
        postgres::Config::new()
            .host_path(self.dir.path())
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

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .as_server_user(&self.bin.join("pg_ctl"), &[])
            .args(["-D", path(&self.data()), "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// `p` as text (our temporary paths are UTF-8).
fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

/// The message and SQLSTATE of a failed statement.
pub fn db_error(err: &postgres::Error) -> (String, String) {
    let db = err
        .as_db_error()
        .unwrap_or_else(|| panic!("not a server error: {err}"));
    (db.message().to_owned(), db.code().code().to_owned())
}
