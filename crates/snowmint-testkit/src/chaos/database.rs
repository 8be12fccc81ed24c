//! The database servers a `--coordinator postgres|mysql` run leases from:
//! a primary with a standby that streams from it (PostgreSQL: a hot
//! standby made with `pg_basebackup`; MariaDB: a GTID replica of a server
//! with its binary log on), on 127.0.0.1 under libfaketime, with PgBouncer
//! in transaction mode in front of a PostgreSQL for some instances; and the
//! faults done to them: the primary paused, crashed and restarted, its
//! clock stepped, and the lossy failover (the standby cut off, the primary
//! killed, the standby promoted, a new standby made of the new primary).
//!
//! How instances follow a failover: a PostgreSQL instance names both
//! servers, each through a proxy of its own, in a multi-host URL with
//! `target_session_attrs=read-write` (so it connects to whichever takes
//! writes); the others reach PgBouncer, which reaches the primary through
//! a proxy of the harness's that the failover moves (a virtual address, as
//! a load balancer or DNS name is in production). A MariaDB instance, which
//! has no multi-host URL, reaches the primary through that moved proxy too.
//! After a failover the harness makes a new standby of the new primary
//! (PostgreSQL: a base backup; MariaDB: a new replica that replays the new
//! primary's binary log from its start) in the place of the killed one, so
//! later faults, a second failover included, find the same set-up.
//!
//! Unless asked otherwise, all but `instances + 1` identities of the
//! instances' datacenter are held by a crowd that never lets go
//! ([`Database::crowd`]), as if other instances held them: a restarted or
//! fenced instance then often has to take an identity another instance
//! left without a release, so the hand-over wait and the marks are put to
//! the test, not only an instance's re-claim of its own identity. (After a
//! failover the crowd's rows are of the old epoch, free to claim like
//! every other.)
//!
//! The testkit's servers are driven through blocking calls that panic on
//! failure; [`blocking`] runs one on a blocking thread and turns its panic
//! into an error, so that a fault that fails is an incident of the run, not
//! the end of the harness.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;

use super::schedule::Coordinator;
use crate::db::replica::MariadbNode;
use crate::db::{PgBouncer, Postgres};
use crate::proxy::Proxy;

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
    Mariadb(MariadbNode),
}

impl Server {
    fn port(&self) -> u16 {
        match self {
            Server::Postgres(pg) => pg.port(),
            Server::Mariadb(my) => my.port(),
        }
    }

    fn log_file(&self) -> std::path::PathBuf {
        match self {
            Server::Postgres(pg) => pg.log_file(),
            Server::Mariadb(my) => my.log_file(),
        }
    }
}

/// The primary, its standby, and the servers a failover left behind.
struct Servers {
    primary: Server,
    standby: Option<Server>,
    /// Where the primary is in a PostgreSQL instance's multi-host URL (0
    /// or 1; the standby is the other).
    primary_slot: usize,
    /// Killed primaries, kept for their logs.
    retired: Vec<Server>,
    /// The `server_id` the next MariaDB server gets.
    next_server_id: u32,
    /// How many failovers so far.
    failovers: u32,
}

/// What a failover cut off: where the standby stopped and where the
/// primary was when it died.
#[derive(Debug, Clone, Default)]
pub struct Cut {
    /// The standby's position when cut off (PostgreSQL: the last WAL
    /// received; MariaDB: `gtid_slave_pos`).
    standby_at: String,
}

/// The run's database servers, PgBouncer in front of a PostgreSQL, and the
/// proxy that stands for the primary's address.
pub struct Database {
    coordinator: Coordinator,
    servers: Mutex<Servers>,
    bouncer: Mutex<Option<PgBouncer>>,
    /// The primary's address for PgBouncer and MariaDB instances: moved by
    /// a failover.
    vip: Proxy,
}

impl Database {
    /// Starts a primary and its standby for `coordinator` on 127.0.0.1
    /// under libfaketime, with database
    /// [`DATABASE`] in it (the instances create their table), `vip` routed
    /// to the primary, and for PostgreSQL a PgBouncer of
    /// [`PGBOUNCER_POOL`] server connections in front of `vip`. Blocking.
    ///
    /// # Errors
    ///
    /// When the servers' programs (or PgBouncer's, or libfaketime) are not
    /// installed, or `coordinator` is etcd.
    ///
    /// # Panics
    ///
    /// When a server does not start (the testkit's servers panic with
    /// their logs): run it through [`unpanic`].
    pub fn start(coordinator: Coordinator, vip: Proxy) -> anyhow::Result<Database> {
        let missing = |what: &str| format!("{what} (or libfaketime) is not installed");
        let (primary, standby, next_server_id) = match coordinator {
            Coordinator::Postgres => {
                let primary = postgres()
                    .start()
                    .with_context(|| missing("PostgreSQL (apt-get install postgresql faketime)"))?;
                primary.create_database(DATABASE);
                let standby = postgres()
                    .start_standby(&primary)
                    .with_context(|| missing("PostgreSQL"))?;
                (Server::Postgres(primary), Server::Postgres(standby), 0)
            }
            Coordinator::Mysql => {
                let primary = MariadbNode::start(1, true).with_context(|| {
                    missing("MariaDB (apt-get install mariadb-server mariadb-client faketime)")
                })?;
                let replica = MariadbNode::replica_of(&primary, 2, true)
                    .with_context(|| missing("MariaDB"))?;
                primary.create_database(DATABASE);
                replica.catch_up(&primary);
                (Server::Mariadb(primary), Server::Mariadb(replica), 3)
            }
            Coordinator::Etcd => anyhow::bail!("etcd is not a database"),
            Coordinator::Redis => anyhow::bail!("Redis is not a SQL database"),
        };
        vip.route(local(primary.port()));
        let bouncer = match coordinator {
            Coordinator::Postgres => Some(
                PgBouncer::start_in_front_of(vip.addr().port(), PGBOUNCER_POOL)
                    .context("PgBouncer is not installed (apt-get install pgbouncer)")?,
            ),
            _ => None,
        };
        Ok(Database {
            coordinator,
            servers: Mutex::new(Servers {
                primary,
                standby: Some(standby),
                primary_slot: 0,
                retired: Vec::new(),
                next_server_id,
                failovers: 0,
            }),
            bouncer: Mutex::new(bouncer),
            vip,
        })
    }

    /// The servers' lane in the report: `postgres` or `mariadb`.
    pub fn lane(&self) -> &'static str {
        match self.coordinator {
            Coordinator::Mysql => "mariadb",
            _ => "postgres",
        }
    }

    /// Where instance `instance`'s proxies forward to, one proxy each:
    /// PgBouncer for [`through_pgbouncer`] instances of a PostgreSQL run,
    /// both servers (slot 0, slot 1) for the other PostgreSQL instances,
    /// the primary's proxy for MariaDB instances.
    pub fn upstreams(&self, instance: usize) -> Vec<SocketAddr> {
        match self.coordinator {
            Coordinator::Postgres if through_pgbouncer(instance) => {
                let port = lock(&self.bouncer).as_ref().map_or(0, PgBouncer::port);
                vec![local(port)]
            }
            Coordinator::Postgres => {
                let servers = lock(&self.servers);
                let standby = servers.standby.as_ref().map_or(0, Server::port);
                let mut slots = vec![local(servers.primary.port()), local(standby)];
                if servers.primary_slot == 1 {
                    slots.reverse();
                }
                slots
            }
            _ => vec![self.vip.addr()],
        }
    }

    /// The flag and URL an instance is given (`--postgres URL` or `--mysql
    /// URL`) to reach [`DATABASE`] at `addrs` (its proxies): with two, a
    /// multi-host URL that connects to the one that takes writes.
    pub fn flag_and_url(&self, addrs: &[SocketAddr]) -> (&'static str, String) {
        let hosts: Vec<String> = addrs.iter().map(ToString::to_string).collect();
        match self.coordinator {
            Coordinator::Mysql => (
                "--mysql",
                format!(
                    "mysql://{}:{}@{}/{DATABASE}",
                    crate::db::MARIADB_USER,
                    crate::db::MARIADB_PASSWORD,
                    hosts[0]
                ),
            ),
            _ if hosts.len() > 1 => (
                "--postgres",
                format!(
                    "postgres://postgres@{}/{DATABASE}?target_session_attrs=read-write",
                    hosts.join(",")
                ),
            ),
            _ => (
                "--postgres",
                format!("postgres://postgres@{}/{DATABASE}", hosts[0]),
            ),
        }
    }

    /// SIGSTOP to every process of the primary (blocking; panics as the
    /// testkit's `pause` does).
    pub fn pause(&self) {
        match &lock(&self.servers).primary {
            Server::Postgres(pg) => pg.pause(),
            Server::Mariadb(my) => my.pause(),
        }
    }

    /// SIGCONT to every process of the primary (blocking; panics as the
    /// testkit's `resume` does).
    pub fn resume(&self) {
        match &lock(&self.servers).primary {
            Server::Postgres(pg) => pg.resume(),
            Server::Mariadb(my) => my.resume(),
        }
    }

    /// Crashes the primary (PostgreSQL: `pg_ctl stop -m immediate`;
    /// MariaDB: SIGKILL), keeping its data and port (blocking).
    pub fn crash(&self) {
        match &lock(&self.servers).primary {
            Server::Postgres(pg) => pg.crash(),
            Server::Mariadb(my) => my.kill(),
        }
    }

    /// Starts the crashed primary again on its port, waiting until it
    /// takes connections (blocking; panics with its log when it does not
    /// start). Its standby streams from it again.
    pub fn restart(&self) {
        match &lock(&self.servers).primary {
            Server::Postgres(pg) => pg.restart(),
            Server::Mariadb(my) => my.restart(),
        }
    }

    /// Cuts the standby off for good (PostgreSQL: its WAL receiver
    /// stopped; MariaDB: its SQL thread stopped): from now on what the
    /// primary commits is lost to a failover. Blocking; panics when there
    /// is no standby or a statement fails.
    pub fn cut_standby(&self) -> Cut {
        let servers = lock(&self.servers);
        let standby_at = match servers.standby.as_ref().expect("a standby") {
            Server::Postgres(pg) => pg.stop_receiving(),
            Server::Mariadb(my) => {
                my.stop_sql_thread();
                my.sql("mysql", "SELECT @@gtid_slave_pos;")
                    .trim()
                    .to_owned()
            }
        };
        Cut { standby_at }
    }

    /// Kills the primary (SIGKILL to its every process), first reading how
    /// far it got past `cut` (a lower bound of what the failover loses:
    /// PostgreSQL in bytes of WAL, MariaDB in transactions). Blocking.
    pub fn kill_primary(&self, cut: &Cut) -> String {
        let servers = lock(&self.servers);
        match &servers.primary {
            Server::Postgres(pg) => {
                let lost = pg.try_psql(
                    "postgres",
                    &format!(
                        "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{}');",
                        cut.standby_at
                    ),
                );
                pg.kill();
                match lost {
                    Ok(bytes) => format!("{} bytes of WAL", bytes.trim()),
                    Err(e) => format!("an unknown amount ({e})"),
                }
            }
            Server::Mariadb(my) => {
                let at = my.try_sql("mysql", "SELECT @@gtid_binlog_pos;");
                my.kill();
                let seq =
                    |pos: &str| -> Option<u64> { pos.trim().rsplit('-').next()?.parse().ok() };
                match at.as_deref().ok().and_then(seq).zip(seq(&cut.standby_at)) {
                    Some((primary, standby)) => format!(
                        "{} transactions ({} to {})",
                        primary.saturating_sub(standby),
                        cut.standby_at,
                        at.unwrap_or_default().trim()
                    ),
                    None => format!("an unknown amount ({at:?}, {})", cut.standby_at),
                }
            }
        }
    }

    /// Promotes the standby (PostgreSQL: `pg_promote()`; MariaDB: `STOP
    /// SLAVE; RESET SLAVE ALL; read_only` off), retires the killed primary
    /// and moves the primary's proxy to the new one. Blocking.
    pub fn promote(&self) {
        let mut servers = lock(&self.servers);
        let standby = servers.standby.take().expect("a standby");
        match &standby {
            Server::Postgres(pg) => pg.promote(),
            Server::Mariadb(my) => my.promote(),
        }
        self.vip.route(local(standby.port()));
        let old = std::mem::replace(&mut servers.primary, standby);
        servers.retired.push(old);
        servers.primary_slot = 1 - servers.primary_slot;
        servers.failovers += 1;
    }

    /// Makes a new standby of the primary in the killed primary's place
    /// (PostgreSQL: a base backup of it, streaming; MariaDB: a new replica,
    /// caught up), under libfaketime. Returns its slot in a PostgreSQL
    /// instance's multi-host URL and its address (for the instances'
    /// proxies to move there). Blocking; panics when it does not start.
    pub fn new_standby(&self) -> (usize, SocketAddr) {
        let mut servers = lock(&self.servers);
        let standby = match &servers.primary {
            Server::Postgres(pg) => Server::Postgres(
                postgres()
                    .start_standby(pg)
                    .expect("PostgreSQL ran a moment ago"),
            ),
            Server::Mariadb(my) => {
                let id = servers.next_server_id;
                Server::Mariadb(
                    MariadbNode::replica_of(my, id, true).expect("MariaDB ran a moment ago"),
                )
            }
        };
        servers.next_server_id += 1;
        let addr = local(standby.port());
        servers.standby = Some(standby);
        (1 - servers.primary_slot, addr)
    }

    /// Loads `script` (the statements of `snowmint sql coordinator
    /// postgres|mysql`) into [`DATABASE`], declares `longest_ttl_ms` the
    /// longest TTL a holder may have (what a claim after a failover waits),
    /// then binds every identity of datacenter 0 but the first `free`
    /// workers to [`CROWD_LEASE`], a lease that never expires (blocking;
    /// panics as the testkit's clients do when a statement fails).
    pub fn crowd(&self, script: &str, free: usize, longest_ttl_ms: u64) {
        let crowd = format!(
            "UPDATE snowmint_identities SET longest_ttl_ms = {longest_ttl_ms};\n\
             UPDATE snowmint_identities SET lease = {CROWD_LEASE}, holder = 'chaos crowd', \
             instance = 0, ttl_ms = 3000, expires_ms = {CROWD_EXPIRES_MS}, released = false \
             WHERE identity BETWEEN {free} AND 31;\n"
        );
        match &lock(&self.servers).primary {
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

    /// Steps the primary's wall clock to `offset_ms` from the real time.
    pub fn set_clock_offset_ms(&self, offset_ms: i64) {
        match &lock(&self.servers).primary {
            Server::Postgres(pg) => pg.set_clock_offset_ms(offset_ms),
            Server::Mariadb(my) => my.set_clock_offset_ms(offset_ms),
        }
    }

    /// Copies the servers' logs (and PgBouncer's) into `dir`: the primary's
    /// as `LANE.log`, the standby's as `LANE-standby.log`, those of killed
    /// primaries as `LANE-killed-N.log`, and `pgbouncer.log`.
    pub fn keep_logs(&self, dir: &std::path::Path) {
        let lane = self.lane();
        let servers = lock(&self.servers);
        let _ = std::fs::copy(servers.primary.log_file(), dir.join(format!("{lane}.log")));
        if let Some(standby) = &servers.standby {
            let _ = std::fs::copy(standby.log_file(), dir.join(format!("{lane}-standby.log")));
        }
        for (n, old) in servers.retired.iter().enumerate() {
            let _ = std::fs::copy(old.log_file(), dir.join(format!("{lane}-killed-{n}.log")));
        }
        if let Some(bouncer) = lock(&self.bouncer).as_ref() {
            let _ = std::fs::write(dir.join("pgbouncer.log"), bouncer.log());
        }
    }

    /// Ends PgBouncer and every server (also a paused one) at the end of a
    /// run; a server already down is no error (blocking).
    pub fn kill(&self) {
        drop(lock(&self.bouncer).take());
        let servers = lock(&self.servers);
        let all = std::iter::once(&servers.primary)
            .chain(servers.standby.as_ref())
            .chain(servers.retired.iter());
        for server in all {
            match server {
                Server::Postgres(pg) => pg.kill(),
                Server::Mariadb(my) => my.kill(),
            }
        }
    }
}

/// How the harness's PostgreSQL servers start: on TCP, under libfaketime.
fn postgres() -> crate::db::PostgresBuilder {
    Postgres::builder().tcp().faketime()
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
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
