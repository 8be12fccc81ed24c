//! [`PgBouncer`] in transaction pooling mode in front of a [`Postgres`].

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use tempfile::TempDir;

use super::{Postgres, START_LIMIT, first_program, is_root, on_a_free_port, path, server_user_dir};

/// PgBouncer's `max_client_conn`: more clients than any test opens.
pub const PGBOUNCER_MAX_CLIENT_CONN: u32 = 4096;

/// One PgBouncer (Debian's, 1.18) on 127.0.0.1 in front of one
/// [`Postgres`], with a directory of its own; killed when dropped.
///
/// Every database of the server is served (`* = ...`), in `pool_mode =
/// transaction`, at most `pool_size` server connections per database and
/// user, [`PGBOUNCER_MAX_CLIENT_CONN`] clients; `auth_type = trust` for
/// user `postgres`. It reaches the server over TCP when the server listens on
/// it, else over its socket. A failed server login is retried after a
/// second (`server_login_retry = 1`), so a restarted server is soon
/// served again.
///
/// Transaction pooling hands a client a different server connection for
/// each transaction: session state (`SET`, advisory locks, named prepared
/// statements, which PgBouncer 1.18 does not track) does not survive from
/// one transaction to the next. The startup parameters
/// `extra_float_digits` and `options` are ignored, not refused.
pub struct PgBouncer {
    child: Child,
    dir: TempDir,
    port: u16,
    pool_size: u32,
}

impl PgBouncer {
    /// Starts a PgBouncer in front of `postgres` with `default_pool_size =
    /// pool_size`, raising this process's open-file limit (which it
    /// inherits) to room for [`PGBOUNCER_MAX_CLIENT_CONN`] clients; `None`
    /// (after printing why) when PgBouncer is not installed and services
    /// are not required.
    ///
    /// # Panics
    ///
    /// When PgBouncer does not start (with its log), or it is missing
    /// under `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start(postgres: &Postgres, pool_size: u32) -> Option<PgBouncer> {
        let server = match postgres.port {
            Some(port) => format!("host=127.0.0.1 port={port}"),
            None => format!(
                "host={} port={}",
                path(postgres.dir.path()),
                postgres.socket_port()
            ),
        };
        PgBouncer::start_with(server, pool_size)
    }

    /// [`start`](PgBouncer::start), in front of whatever answers on
    /// 127.0.0.1:`port` as PostgreSQL (trusting user `postgres`): a
    /// [`Proxy`](crate::proxy::Proxy) to the primary of the day, as a
    /// virtual address that a failover moves.
    ///
    /// # Panics
    ///
    /// As [`start`](PgBouncer::start).
    pub fn start_in_front_of(port: u16, pool_size: u32) -> Option<PgBouncer> {
        PgBouncer::start_with(format!("host=127.0.0.1 port={port}"), pool_size)
    }

    /// Starts it with `server` (libpq's `host=... port=...`) as every
    /// database's server.
    fn start_with(server: String, pool_size: u32) -> Option<PgBouncer> {
        let Some(program) = first_program(&["pgbouncer", "/usr/sbin/pgbouncer"]) else {
            return crate::skip("PgBouncer is not installed (apt-get install pgbouncer)");
        };
        // PgBouncer refuses root: it runs as `postgres`, in here.
        let dir = server_user_dir();
        std::fs::write(dir.path().join("userlist.txt"), "\"postgres\" \"\"\n")
            .expect("write PgBouncer's auth_file");
        // A client socket each, a server socket per pooled connection, and
        // PgBouncer's own.
        raise_open_files(u64::from(PGBOUNCER_MAX_CLIENT_CONN) * 2 + 256);
        let (child, port) = on_a_free_port(true, |port| {
            let port = port.expect("a port, with TCP");
            let config = dir.path().join("pgbouncer.ini");
            std::fs::write(&config, config_text(dir.path(), &server, port, pool_size))
                .expect("write pgbouncer.ini");
            let log = dir.path().join("pgbouncer.log");
            let stderr = File::create(&log).expect("create pgbouncer.log");
            let mut cmd = Command::new(&program);
            if is_root() {
                cmd.args(["-u", "postgres"]);
            }
            let mut child = cmd
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .expect("start pgbouncer");
            match wait_ready(&mut child, &log, port) {
                Ok(()) => Ok((child, port)),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    Err(e)
                }
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
        Some(PgBouncer {
            child,
            dir,
            port,
            pool_size,
        })
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `default_pool_size`: server connections per database and user.
    pub fn pool_size(&self) -> u32 {
        self.pool_size
    }

    /// A libpq URL of `database` through PgBouncer, as user `postgres`
    /// with no password: `postgres://postgres@127.0.0.1:PORT/DATABASE`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// PgBouncer's process ID (one process: a SIGSTOP stalls every client).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What PgBouncer has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until PgBouncer (`child`, logging to `log`) says it is up and
/// accepts a TCP connection on `port`; the error holds its log.
fn wait_ready(child: &mut Child, log: &Path, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + START_LIMIT;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("pgbouncer exited ({status}): {text}"));
        }
        if text.contains("process up")
            && TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "pgbouncer did not listen within {START_LIMIT:?}: {text}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// pgbouncer.ini: PgBouncer on 127.0.0.1:`port` (and a socket in `dir`),
/// every database at `server` (libpq `host=... port=...`).
fn config_text(dir: &Path, server: &str, port: u16, pool_size: u32) -> String {
    let dir = path(dir);
    format!(
        "[databases]\n\
         * = {server}\n\
         \n\
         [pgbouncer]\n\
         listen_addr = 127.0.0.1\n\
         listen_port = {port}\n\
         unix_socket_dir = {dir}\n\
         auth_type = trust\n\
         auth_file = {dir}/userlist.txt\n\
         admin_users = postgres\n\
         pool_mode = transaction\n\
         max_client_conn = {PGBOUNCER_MAX_CLIENT_CONN}\n\
         default_pool_size = {pool_size}\n\
         server_login_retry = 1\n\
         ignore_startup_parameters = extra_float_digits, options\n"
    )
}

/// Raises this process's soft limit of open files to `wanted` (and the
/// hard one, as root, if it is lower); children inherit it. A failure
/// leaves the limit as it was: PgBouncer then warns that it is low.
fn raise_open_files(wanted: u64) {
    let limit = getrlimit(Resource::Nofile);
    // `None` is unlimited.
    if limit.current.is_none_or(|current| current >= wanted) {
        return;
    }
    let maximum = match limit.maximum {
        Some(max) if max < wanted && is_root() => Some(wanted),
        max => max,
    };
    let current = maximum.map_or(wanted, |max| max.min(wanted));
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(current),
            maximum,
        },
    );
}
