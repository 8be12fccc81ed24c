//! MariaDB replication for failover tests: [`MariadbNode`], a server with
//! its binary log on and a `server_id` of its own, which can replicate
//! another node ([`MariadbNode::follow`], GTID-based, from the start of the
//! other's binary log), have its SQL thread stopped so that it falls
//! behind for good ([`MariadbNode::stop_sql_thread`]), and be promoted
//! ([`MariadbNode::promote`]: `STOP SLAVE; RESET SLAVE ALL; SET GLOBAL
//! read_only = 0`, which throws away what it received and had not applied).
//!
//! A node listens on 127.0.0.1 (a free port) and on a socket in its own
//! directory, with the users of [`Mariadb`](super::Mariadb)'s `.tcp()`:
//! `root` without a password and [`MARIADB_USER`], created on each node
//! without being written to its binary log (a replica has its own), so a
//! replica replays only what the tests write. Every node logs the updates
//! it replays (`--log-slave-updates`): a promoted replica's binary log holds
//! the whole history it kept, and a new replica of it can start from
//! scratch. It may run under libfaketime, as [`Mariadb`](super::Mariadb)
//! can.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use tempfile::TempDir;

use super::{
    MARIADB_PASSWORD, MARIADB_USER, START_LIMIT, ServerClock, TCP_MAX_CONNECTIONS, first_program,
    is_root, lock, on_a_free_port, path, pipe, try_pipe,
};
use crate::signal;

/// One MariaDB server with its binary log on, for replication; killed when
/// dropped.
pub struct MariadbNode {
    /// The running server; `None` once killed or stopped.
    child: Mutex<Option<Child>>,
    client: PathBuf,
    server: PathBuf,
    port: u16,
    server_id: u32,
    clock: ServerClock,
    dir: TempDir,
}

impl MariadbNode {
    /// Installs a data directory and starts a server with binary log and
    /// `server_id` (every node of one replication topology needs its own),
    /// on a free port of 127.0.0.1, under libfaketime when `faketime`;
    /// `None` (after printing why) when MariaDB (or libfaketime) is not
    /// installed and services are not required.
    ///
    /// # Panics
    ///
    /// When the server does not start (with its log), or a program is
    /// missing under `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start(server_id: u32, faketime: bool) -> Option<MariadbNode> {
        let server = first_program(&["mariadbd", "/usr/sbin/mariadbd"]);
        let install = first_program(&["mariadb-install-db"]);
        let client = first_program(&["mariadb"]);
        let (Some(server), Some(install), Some(client)) = (server, install, client) else {
            return crate::skip(
                "MariaDB's mariadbd, mariadb-install-db and mariadb are not installed \
                 (apt-get install mariadb-server mariadb-client)",
            );
        };
        let library = ServerClock::library(faketime)?;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let clock = ServerClock::new(library, dir.path());
        let mut node = MariadbNode {
            child: Mutex::new(None),
            client,
            server,
            port: 0,
            server_id,
            clock,
            dir,
        };
        std::fs::create_dir(node.file("tmp")).expect("a temporary directory for mariadbd");
        let out = Command::new(install)
            .args(["--no-defaults", "--auth-root-authentication-method=normal"])
            .args(["--skip-test-db", "--skip-name-resolve"])
            .arg(format!("--datadir={}", path(&node.file("data"))))
            .arg(format!("--tmpdir={}", path(&node.file("tmp"))))
            .args(node.user())
            .output()
            .expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        on_a_free_port(true, |port| {
            node.port = port.expect("a port, with TCP");
            let _ = std::fs::remove_file(node.log_file());
            node.spawn();
            node.wait_ready()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        node.sql(
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
        Some(node)
    }

    /// A new node (`server_id`) that [`follow`](MariadbNode::follow)s
    /// `primary` and has caught up with it.
    ///
    /// # Panics
    ///
    /// As [`start`](MariadbNode::start) and
    /// [`follow`](MariadbNode::follow).
    pub fn replica_of(
        primary: &MariadbNode,
        server_id: u32,
        faketime: bool,
    ) -> Option<MariadbNode> {
        let replica = MariadbNode::start(server_id, faketime)?;
        replica.follow(primary);
        Some(replica)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `--user=root` when we are root (mariadbd refuses root otherwise).
    fn user(&self) -> &'static [&'static str] {
        if is_root() { &["--user=root"] } else { &[] }
    }

    /// Starts `mariadbd` over the data directory (not waiting for it).
    fn spawn(&self) {
        let file = |name: &str| path(&self.file(name)).to_owned();
        let mut cmd = Command::new(&self.server);
        cmd.arg("--no-defaults")
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve"])
            .arg(format!("--port={}", self.port))
            .arg(format!("--max-connections={TCP_MAX_CONNECTIONS}"))
            .arg(format!("--server-id={}", self.server_id))
            .args(["--log-bin=mariadb-bin", "--relay-log=relay-bin"])
            .args(["--log-slave-updates", "--binlog-format=ROW"])
            .args(["--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M"])
            .arg(format!("--datadir={}", file("data")))
            .arg(format!("--tmpdir={}", file("tmp")))
            .arg(format!("--socket={}", file("mysql.sock")))
            .arg(format!("--pid-file={}", file("mysqld.pid")))
            .arg(format!("--log-error={}", path(&self.log_file())))
            .args(self.user())
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
                .args(["-e", "SELECT 1"])
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
            let log = || std::fs::read_to_string(self.log_file()).unwrap_or_default();
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
            .arg(format!("--socket={}", path(&self.file("mysql.sock"))))
            .args(["-u", "root", "--batch", "--skip-column-names", database]);
        cmd
    }

    /// Runs `script` in `database` through the `mariadb` client as root,
    /// stopping at the first error; returns the rows (tabs between columns).
    ///
    /// # Panics
    ///
    /// When the script fails, with the client's message.
    pub fn sql(&self, database: &str, script: &str) -> String {
        pipe(self.client_command(database), script, "mariadb")
    }

    /// [`sql`](MariadbNode::sql), returning the client's message when the
    /// script fails.
    pub fn try_sql(&self, database: &str, script: &str) -> Result<String, String> {
        try_pipe(self.client_command(database), script, "mariadb")
    }

    /// Makes a database (on a primary: its replicas get it too).
    pub fn create_database(&self, name: &str) {
        self.sql("mysql", &format!("CREATE DATABASE {name};"));
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The node's `server_id`.
    pub fn server_id(&self) -> u32 {
        self.server_id
    }

    /// A mysql_async URL of `database` as [`MARIADB_USER`] (bound by
    /// `read_only`).
    pub fn url(&self, database: &str) -> String {
        format!(
            "mysql://{MARIADB_USER}:{MARIADB_PASSWORD}@127.0.0.1:{}/{database}",
            self.port
        )
    }

    /// The server's error log.
    pub fn log_file(&self) -> PathBuf {
        self.file("error.log")
    }

    /// Replicates `primary` from now on: `read_only` on (for
    /// [`MARIADB_USER`]), `CHANGE MASTER TO` it by GTID (`slave_pos`, from
    /// the start of its binary log on a new node), reconnecting every
    /// second, `START SLAVE`; then waits until both replication threads
    /// run and it has applied everything `primary` had logged.
    ///
    /// # Panics
    ///
    /// When a statement fails or it does not catch up within a minute.
    pub fn follow(&self, primary: &MariadbNode) {
        self.sql(
            "mysql",
            &format!(
                "SET GLOBAL read_only = 1;\n\
                 CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
                 MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos, \
                 MASTER_CONNECT_RETRY = 1;\n\
                 START SLAVE;\n",
                primary.port
            ),
        );
        self.catch_up(primary);
    }

    /// Waits until this replica has applied everything `primary` has
    /// logged so far (`MASTER_GTID_WAIT` on its `gtid_binlog_pos`).
    ///
    /// # Panics
    ///
    /// When it has not within a minute (its replication stopped, say).
    pub fn catch_up(&self, primary: &MariadbNode) {
        let pos = primary.sql("mysql", "SELECT @@gtid_binlog_pos;");
        let waited = self.sql(
            "mysql",
            &format!(
                "SELECT MASTER_GTID_WAIT('{}', {});",
                pos.trim(),
                START_LIMIT.as_secs()
            ),
        );
        let status = self.try_sql("mysql", "SHOW SLAVE STATUS\\G");
        assert_eq!(
            waited.trim(),
            "0",
            "the replica did not apply {} within {START_LIMIT:?}: {status:?}",
            pos.trim()
        );
    }

    /// Stops the replica's SQL thread (`STOP SLAVE SQL_THREAD`): it goes on
    /// receiving the primary's binary log into its relay log but applies
    /// nothing more, and [`promote`](MariadbNode::promote) throws the
    /// relay log away: a failover after more commits loses them.
    ///
    /// # Panics
    ///
    /// When the statement fails.
    pub fn stop_sql_thread(&self) {
        self.sql("mysql", "STOP SLAVE SQL_THREAD;");
    }

    /// Makes a replica a primary: `STOP SLAVE; RESET SLAVE ALL; SET GLOBAL
    /// read_only = 0` (what it received and had not applied is lost).
    ///
    /// # Panics
    ///
    /// When a statement fails.
    pub fn promote(&self) {
        self.sql(
            "mysql",
            "STOP SLAVE;\nRESET SLAVE ALL;\nSET GLOBAL read_only = 0;\n",
        );
    }

    /// The server's process ID.
    ///
    /// # Panics
    ///
    /// When it is not running.
    pub fn pid(&self) -> u32 {
        lock(&self.child)
            .as_ref()
            .expect("mariadbd is not running")
            .id()
    }

    /// SIGKILL (a crash: no shutdown), keeping its data and port for
    /// [`restart`](MariadbNode::restart). Killing a dead server does
    /// nothing.
    pub fn kill(&self) {
        if let Some(mut child) = lock(&self.child).take() {
            let _ = signal::send(child.id(), Signal::CONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again (after [`kill`](MariadbNode::kill)) on its
    /// port, data and clock, waiting until it answers (crash recovery
    /// included); a replica resumes replicating.
    ///
    /// # Panics
    ///
    /// When it does not start again (with its log).
    pub fn restart(&self) {
        self.kill();
        self.spawn();
        self.wait_ready()
            .unwrap_or_else(|e| panic!("mariadbd did not restart: {e}"));
    }

    /// Freezes the server (SIGSTOP to its one process).
    ///
    /// # Panics
    ///
    /// When it is not running or does not stop in time.
    pub fn pause(&self) {
        signal::stop(self.pid(), START_LIMIT)
            .unwrap_or_else(|e| panic!("SIGSTOP to mariadbd: {e}"));
    }

    /// Thaws what [`pause`](MariadbNode::pause) froze (SIGCONT).
    ///
    /// # Panics
    ///
    /// When it is not running or does not resume in time.
    pub fn resume(&self) {
        signal::resume(self.pid(), START_LIMIT)
            .unwrap_or_else(|e| panic!("SIGCONT to mariadbd: {e}"));
    }

    /// Steps the server's wall clock to `offset_ms` from the real time.
    ///
    /// # Panics
    ///
    /// When it was started without libfaketime.
    pub fn set_clock_offset_ms(&self, offset_ms: i64) {
        self.clock.set_offset_ms(offset_ms, "MariaDB");
    }
}

impl Drop for MariadbNode {
    fn drop(&mut self) {
        self.kill();
    }
}
