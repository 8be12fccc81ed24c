//! The database server a `--coordinator postgres|mysql` run leases from:
//! one PostgreSQL (with a [`PgBouncer`] in transaction mode in front of it
//! for some instances) or one MariaDB, on 127.0.0.1 under libfaketime, and
//! the faults done to it (pause, crash and restart, clock steps).
//!
//! Unless asked otherwise, all but `instances + 1` identities of the
//! instances' datacenter are held by a crowd that never lets go
//! ([`Database::crowd`]), as if other instances held them: a restarted or
//! fenced instance then often has to take an identity another instance
//! left without a release, so the hand-over wait and the marks are put to
//! the test, not only an instance's re-claim of its own identity.
//!
//! The testkit's servers are driven through blocking calls that panic on
//! failure; [`blocking`] runs one on a blocking thread and turns its panic
//! into an error, so that a fault that fails is an incident of the run, not
//! the end of the harness.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;

use super::schedule::Coordinator;
use crate::db::{Mariadb, PgBouncer, Postgres};

/// The database every instance's identity table is in.
pub const DATABASE: &str = "chaos";

/// PgBouncer's `default_pool_size`: a small pool (the instances behind it
/// share its server connections when they outnumber it).
pub const PGBOUNCER_POOL: u32 = 2;

/// The lease token of the rows [`Database::crowd`] takes (the instances'
/// tokens are random 63-bit numbers).
pub const CROWD_LEASE: i64 = 1;

/// When the crowd's rows expire: year 2255, past any clock step.
pub const CROWD_EXPIRES_MS: i64 = 9_000_000_000_000;

/// Which instances reach PostgreSQL through PgBouncer (each through its
/// own proxy to it): the odd ones, `i1`, `i3`, ...
pub fn through_pgbouncer(instance: usize) -> bool {
    instance % 2 == 1
}

enum Server {
    Postgres(Postgres),
    Mariadb(Mariadb),
}

/// The run's database server, and PgBouncer in front of a PostgreSQL.
pub struct Database {
    server: Server,
    bouncer: Mutex<Option<PgBouncer>>,
}

impl Database {
    /// Starts the server of `coordinator` on 127.0.0.1 under libfaketime,
    /// with database [`DATABASE`] in it (the instances create their table),
    /// and for PostgreSQL a PgBouncer of [`PGBOUNCER_POOL`] server
    /// connections. Blocking.
    ///
    /// # Errors
    ///
    /// When the server's programs (or PgBouncer's, or libfaketime) are not
    /// installed, or `coordinator` is etcd.
    ///
    /// # Panics
    ///
    /// When a server does not start (the testkit's servers panic with
    /// their logs): run it through [`blocking`].
    pub fn start(coordinator: Coordinator) -> anyhow::Result<Database> {
        let server = match coordinator {
            Coordinator::Postgres => Server::Postgres(
                Postgres::builder()
                    .tcp()
                    .faketime()
                    .start()
                    .context("PostgreSQL (or libfaketime) is not installed (apt-get install postgresql faketime)")?,
            ),
            Coordinator::Mysql => Server::Mariadb(
                Mariadb::builder()
                    .tcp()
                    .faketime()
                    .start()
                    .context("MariaDB (or libfaketime) is not installed (apt-get install mariadb-server mariadb-client faketime)")?,
            ),
            Coordinator::Etcd => anyhow::bail!("etcd is not a database"),
        };
        let bouncer = match &server {
            Server::Postgres(pg) => {
                pg.create_database(DATABASE);
                Some(
                    PgBouncer::start(pg, PGBOUNCER_POOL)
                        .context("PgBouncer is not installed (apt-get install pgbouncer)")?,
                )
            }
            Server::Mariadb(my) => {
                my.create_database(DATABASE);
                None
            }
        };
        Ok(Database {
            server,
            bouncer: Mutex::new(bouncer),
        })
    }

    /// The server's lane in the report: `postgres` or `mariadb`.
    pub fn lane(&self) -> &'static str {
        match self.server {
            Server::Postgres(_) => "postgres",
            Server::Mariadb(_) => "mariadb",
        }
    }

    /// Where instance `instance`'s proxy forwards to: PgBouncer's port for
    /// [`through_pgbouncer`] instances of a PostgreSQL run, else the server's.
    pub fn upstream(&self, instance: usize) -> SocketAddr {
        let port = match &self.server {
            Server::Postgres(pg) => match lock(&self.bouncer).as_ref() {
                Some(b) if through_pgbouncer(instance) => b.port(),
                _ => pg.port(),
            },
            Server::Mariadb(my) => my.port(),
        };
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// The URL an instance is given (`--postgres URL` or `--mysql URL`,
    /// the flag's name first) to reach [`DATABASE`] at `addr` (its proxy).
    pub fn flag_and_url(&self, addr: SocketAddr) -> (&'static str, String) {
        match &self.server {
            Server::Postgres(_) => (
                "--postgres",
                format!("postgres://postgres@{addr}/{DATABASE}"),
            ),
            Server::Mariadb(_) => (
                "--mysql",
                format!(
                    "mysql://{}:{}@{addr}/{DATABASE}",
                    crate::db::MARIADB_USER,
                    crate::db::MARIADB_PASSWORD
                ),
            ),
        }
    }

    /// SIGSTOP to every process of the server (blocking; panics as the
    /// testkit's `pause` does).
    pub fn pause(&self) {
        match &self.server {
            Server::Postgres(pg) => pg.pause(),
            Server::Mariadb(my) => my.pause(),
        }
    }

    /// SIGCONT to every process of the server (blocking; panics as the
    /// testkit's `resume` does).
    pub fn resume(&self) {
        match &self.server {
            Server::Postgres(pg) => pg.resume(),
            Server::Mariadb(my) => my.resume(),
        }
    }

    /// Crashes the server (PostgreSQL: `pg_ctl stop -m immediate`;
    /// MariaDB: SIGKILL), keeping its data and port (blocking).
    pub fn crash(&self) {
        match &self.server {
            Server::Postgres(pg) => pg.crash(),
            Server::Mariadb(my) => my.crash(),
        }
    }

    /// Starts the crashed server again on its port, waiting until it takes
    /// connections (blocking; panics with its log when it does not start).
    pub fn restart(&self) {
        match &self.server {
            Server::Postgres(pg) => pg.restart(),
            Server::Mariadb(my) => my.restart(),
        }
    }

    /// Loads `script` (the statements of `snowmint sql coordinator
    /// postgres|mysql`) into [`DATABASE`], then binds every identity of
    /// datacenter 0 but the first `free` workers to [`CROWD_LEASE`], a
    /// lease that never expires (blocking; panics as the testkit's clients
    /// do when a statement fails).
    pub fn crowd(&self, script: &str, free: usize) {
        let crowd = format!(
            "UPDATE snowmint_identities SET lease = {CROWD_LEASE}, holder = 'chaos crowd', \
             instance = 0, ttl_ms = 3000, expires_ms = {CROWD_EXPIRES_MS}, released = false \
             WHERE identity BETWEEN {free} AND 31;\n"
        );
        match &self.server {
            Server::Postgres(pg) => {
                pg.psql(DATABASE, script);
                pg.psql(DATABASE, &crowd);
            }
            Server::Mariadb(my) => {
                my.sql(DATABASE, script);
                my.sql(DATABASE, &crowd);
            }
        }
    }

    /// Steps the server's wall clock to `offset_ms` from the real time.
    pub fn set_clock_offset_ms(&self, offset_ms: i64) {
        match &self.server {
            Server::Postgres(pg) => pg.set_clock_offset_ms(offset_ms),
            Server::Mariadb(my) => my.set_clock_offset_ms(offset_ms),
        }
    }

    /// Copies the server's log (and PgBouncer's) into `dir`, as
    /// `LANE.log` and `pgbouncer.log`.
    pub fn keep_logs(&self, dir: &std::path::Path) {
        let log = match &self.server {
            Server::Postgres(pg) => pg.log_file(),
            Server::Mariadb(my) => my.log_file(),
        };
        let _ = std::fs::copy(log, dir.join(format!("{}.log", self.lane())));
        if let Some(bouncer) = lock(&self.bouncer).as_ref() {
            let _ = std::fs::write(dir.join("pgbouncer.log"), bouncer.log());
        }
    }

    /// Ends PgBouncer and the server (also a paused one) at the end of a
    /// run; a server already down is no error (blocking).
    pub fn kill(&self) {
        drop(lock(&self.bouncer).take());
        match &self.server {
            Server::Postgres(pg) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pg.crash()));
            }
            Server::Mariadb(my) => my.crash(),
        }
    }
}

/// Runs `f` on `database` on a blocking thread; its panic (a testkit
/// server call that failed) is an error with the panic's message.
///
/// # Errors
///
/// When `f` panicked.
pub async fn blocking<T: Send + 'static>(
    database: &Arc<Database>,
    f: impl FnOnce(&Database) -> T + Send + 'static,
) -> anyhow::Result<T> {
    let database = Arc::clone(database);
    unpanic(move || f(&database)).await
}

/// Runs `f` on a blocking thread; its panic is an error with the panic's
/// message.
///
/// # Errors
///
/// When `f` panicked.
pub async fn unpanic<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => {
            let panic = e.into_panic();
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "(no message)".to_owned());
            anyhow::bail!("{message}")
        }
        Err(e) => Err(e.into()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
