//! Real databases for one test each: [`Postgres`] and [`Mariadb`] servers
//! in a temporary directory of their own, listening only on a Unix socket
//! in it (no TCP port, so tests in parallel can never meet), stopped when
//! dropped; and [`Sqlite`], a database file run through the `sqlite3`
//! shell.
//!
//! Every database is driven through its command-line client (`psql`,
//! `mariadb`, `sqlite3`) with a script on standard input, because that is
//! how people load the scripts `snowmint sql` prints: what a test checks
//! is exactly what a user's pipe does, client-side parsing included. A
//! script stops at its first error and the call panics with the client's
//! message.
//!
//! PostgreSQL refuses to run as root, so under root `initdb` and `pg_ctl`
//! run as the `postgres` user (`runuser`) over a directory given to it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

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
fn try_pipe(mut cmd: Command, input: &str, what: &str) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_owned();
    // From a thread: a client that stops reading (an error) must not
    // leave the test blocked on a full pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let _ = writer.join();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{what} failed ({}): {stderr}", out.status));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("{what}: output not UTF-8: {e}"))
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

/// One PostgreSQL server: a cluster of its own in a temporary directory,
/// reachable only through the socket in that directory; stopped (`pg_ctl
/// stop -m immediate`) when dropped.
pub struct Postgres {
    bin: PathBuf,
    dir: TempDir,
}

impl Postgres {
    /// Makes a cluster and starts its server; `None` (after printing why)
    /// when PostgreSQL is not installed and services are not required.
    ///
    /// # Panics
    ///
    /// When the server does not start, or PostgreSQL is missing under
    /// `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start() -> Option<Postgres> {
        let Some(bin) = pg_bindir().filter(|b| runs(&b.join("initdb")) && runs(&b.join("psql")))
        else {
            return crate::skip(
                "PostgreSQL's initdb and psql are not installed (apt-get install postgresql)",
            );
        };
        let dir = tempfile::tempdir().expect("a temporary directory");
        if is_root() {
            // The server's user must own its directory and reach it.
            let uid =
                user_id("postgres").expect("a `postgres` user (the postgresql package makes it)");
            std::os::unix::fs::chown(dir.path(), Some(uid), None).expect("chown to postgres");
        }
        let pg = Postgres { bin, dir };
        let data = pg.dir.path().join("data");
        let out = pg
            .as_server_user(&pg.bin.join("initdb"))
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
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // No TCP at all; the socket in our directory; no fsync (a test's
        // data need not survive a power cut).
        let options = format!("-c listen_addresses='' -k {} -F", path(pg.dir.path()));
        let out = pg
            .as_server_user(&pg.bin.join("pg_ctl"))
            .args(["-D", path(&data), "-o", &options, "-w"])
            .args(["-t", &START_LIMIT.as_secs().to_string()])
            .args(["-l", path(&pg.dir.path().join("server.log")), "start"])
            .output()
            .expect("run pg_ctl start");
        assert!(
            out.status.success(),
            "the PostgreSQL server did not start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(pg.dir.path().join("server.log")).unwrap_or_default()
        );
        Some(pg)
    }

    /// `program` as a command, run as `postgres` when we are root.
    fn as_server_user(&self, program: &Path) -> Command {
        if is_root() {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
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
        try_pipe(cmd, script, "psql")
    }

    /// Makes a database of its own for one part of a test.
    pub fn create_database(&self, name: &str) {
        self.psql("postgres", &format!("CREATE DATABASE {name};"));
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .as_server_user(&self.bin.join("pg_ctl"))
            .args([
                "-D",
                path(&self.dir.path().join("data")),
                "-m",
                "immediate",
                "stop",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
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

/// One MariaDB (or MySQL) server with a data directory of its own, only
/// on a Unix socket in it (`--skip-networking`); killed when dropped.
pub struct Mariadb {
    child: Child,
    client: PathBuf,
    dir: TempDir,
}

impl Mariadb {
    /// Installs a data directory and starts the server; `None` (after
    /// printing why) when MariaDB is not installed and services are not
    /// required.
    ///
    /// # Panics
    ///
    /// When the server does not start, or MariaDB is missing under
    /// `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start() -> Option<Mariadb> {
        let server = first_program(&["mariadbd", "/usr/sbin/mariadbd"]);
        let install = first_program(&["mariadb-install-db"]);
        let client = first_program(&["mariadb"]);
        let (Some(server), Some(install), Some(client)) = (server, install, client) else {
            return crate::skip(
                "MariaDB's mariadbd, mariadb-install-db and mariadb are not installed \
                 (apt-get install mariadb-server mariadb-client)",
            );
        };
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data");
        // Temporary tables in a directory of this server's own: in the
        // shared /tmp, the bootstrap of another server (of another test
        // run, whose process IDs may be the same numbers) can take or
        // remove a file of the same name, and the install fails
        // ("Could not remove temporary table '/tmp/#sql-temptable-...'").
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).expect("a temporary directory for mariadbd");
        let tmpdir = format!("--tmpdir={}", path(&tmp));
        let user = if is_root() {
            vec!["--user=root"]
        } else {
            vec![]
        };
        let out = Command::new(install)
            .args(["--no-defaults", "--auth-root-authentication-method=normal"])
            .args(["--skip-test-db", "--skip-name-resolve"])
            .arg(format!("--datadir={}", path(&data)))
            .arg(&tmpdir)
            .args(&user)
            .output()
            .expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let socket = dir.path().join("mysql.sock");
        let child = Command::new(server)
            .args(["--no-defaults", "--skip-networking", "--skip-log-bin"])
            .args(["--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M"])
            .arg(format!("--datadir={}", path(&data)))
            .arg(&tmpdir)
            .arg(format!("--socket={}", path(&socket)))
            .arg(format!(
                "--pid-file={}",
                path(&dir.path().join("mysqld.pid"))
            ))
            .arg(format!(
                "--log-error={}",
                path(&dir.path().join("error.log"))
            ))
            .args(&user)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mariadbd");
        let mut db = Mariadb { child, client, dir };
        db.wait_ready();
        Some(db)
    }

    /// Waits until the server answers a query.
    fn wait_ready(&mut self) {
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
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "mariadbd exited ({status}): {}",
                    std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd did not answer within {START_LIMIT:?}"
            );
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

    /// Makes a database of its own for one part of a test.
    pub fn create_database(&self, name: &str) {
        self.sql("mysql", &format!("CREATE DATABASE {name};"));
    }
}

impl Drop for Mariadb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
