//! The scale run against a database coordinator (`--coordinator postgres`
//! or `mysql`): the phases of `phases.rs` (claim, steady state, one waiter too
//! many, a storm of crashed holders, idle `serve` processes), with the
//! identities leased from one table of a real PostgreSQL (through
//! PgBouncer in transaction mode: 1024 holders cannot each keep a server
//! connection under PostgreSQL's default 100) or MariaDB server, and what
//! it costs the database as the database counts it:
//!
//! - PostgreSQL: `pg_stat_statements` (the statements the holders send:
//!   every one is a transaction of its own); the waiter's cost is the calls
//!   of the scan and claim statements while every identity is held (no one
//!   else scans or claims then).
//! - MariaDB: `Questions` (statements), and the waiter connects as another
//!   user whose statements `information_schema.USER_STATISTICS` counts.
//!
//! `summary.json` has the keys of the etcd run (`etcd_requests_per_s_*`
//! are then the database's statements per second) and `coordinator`; there
//! is no timeline, so no `report.html`. The identities the run does not use
//! (with fewer than 1024) are held by a filler row lease that never ends.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use snowmint_db::{DbConfig, LeasedGenerator};

use crate::config::{Config, Outcome};
use crate::fleet::Launch;
use crate::metrics::Counters;
/// An idle `serve` may write its mark at most this often, per second.
pub use crate::phases::MAX_SERVE_IDLE_TXNS_PER_S as MAX_SERVE_IDLE_MARKS_PER_S;
/// A waiter may cost the database at most this many statements a second.
pub use crate::phases::MAX_WAITER_REQUESTS_PER_S as MAX_WAITER_STATEMENTS_PER_S;
use crate::phases::{self, Coordinator, Words};
use snowmint_testkit::db::{Mariadb, PgBouncer, Postgres, psql_url};

const DB: &str = "scale";
/// The generators' table.
const TABLE: &str = "scale_identities";

/// Which database, and how to reach and count it.
enum Server {
    Postgres { pg: Postgres, bouncer: PgBouncer },
    Mariadb(Mariadb),
}

/// The run's database server, and the generators' lease settings.
struct Db {
    server: Server,
    lease_ttl: u64,
}

/// The database's counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    /// Statements of every client.
    statements: f64,
    /// The waiter's statements.
    waiter: f64,
    /// Mark writes.
    marks: f64,
}

impl Server {
    fn start(mysql: bool, identities: usize) -> anyhow::Result<Server> {
        if mysql {
            let my = Mariadb::start_tcp().context("MariaDB is not installed")?;
            my.create_database(DB);
            my.sql(DB, "SET GLOBAL userstat = 1;");
            return Ok(Server::Mariadb(my));
        }
        let pg = Postgres::builder()
            .tcp()
            .setting("shared_preload_libraries", "pg_stat_statements")
            .setting("pg_stat_statements.max", "1000")
            .start()
            .context("PostgreSQL is not installed")?;
        pg.create_database(DB);
        pg.psql(DB, "CREATE EXTENSION pg_stat_statements;");
        // Enough server connections for the holders' statements, far fewer
        // than their client connections (2 each).
        let pool = u32::try_from(identities / 16).unwrap_or(64).clamp(8, 64);
        let bouncer = PgBouncer::start(&pg, pool).context("PgBouncer is not installed")?;
        Ok(Server::Postgres { pg, bouncer })
    }

    fn name(&self) -> &'static str {
        match self {
            Server::Postgres { .. } => "postgres",
            Server::Mariadb(_) => "mysql",
        }
    }

    /// The holders' URL: PgBouncer's, or MariaDB's `snowmint` user.
    fn url(&self) -> String {
        match self {
            Server::Postgres { bouncer, .. } => bouncer.url(DB),
            Server::Mariadb(my) => my.url(DB),
        }
    }

    /// The waiter's URL: the same for PostgreSQL (its statements are told
    /// apart by text), another user for MariaDB.
    fn waiter_url(&self) -> String {
        match self {
            Server::Postgres { bouncer, .. } => bouncer.url(DB),
            Server::Mariadb(my) => my.root_url(DB),
        }
    }

    fn config(&self, url: String, table: &str, ttl: u64) -> DbConfig {
        match self {
            Server::Postgres { .. } => DbConfig::postgres(url),
            Server::Mariadb(_) => DbConfig::mysql(url),
        }
        .table(table)
        .lease_ttl(Duration::from_secs(ttl))
    }

    fn sql(&self, script: &str) -> anyhow::Result<String> {
        match self {
            Server::Postgres { pg, .. } => {
                psql_url(&pg.url(DB), script, Duration::from_secs(30)).map_err(anyhow::Error::msg)
            }
            Server::Mariadb(my) => my.try_sql(DB, script).map_err(anyhow::Error::msg),
        }
    }

    fn counts(&self) -> anyhow::Result<Counts> {
        let out = match self {
            Server::Postgres { .. } => self.sql(
                "SELECT \
                 coalesce(sum(calls) FILTER (WHERE query NOT LIKE '%pg_stat%'), 0), \
                 coalesce(sum(calls) FILTER (WHERE query LIKE 'SELECT identity, (lease IS NOT NULL%' \
                   OR query LIKE 'WITH old AS%'), 0), \
                 coalesce(sum(calls) FILTER (WHERE query LIKE '%SET mark = GREATEST%'), 0) \
                 FROM pg_stat_statements;",
            )?,
            Server::Mariadb(_) => self.sql(
                "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE \
                 VARIABLE_NAME = 'QUESTIONS'), \
                 IFNULL((SELECT SELECT_COMMANDS + UPDATE_COMMANDS + OTHER_COMMANDS FROM \
                 information_schema.USER_STATISTICS WHERE USER = 'root'), 0), \
                 (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE \
                 VARIABLE_NAME = 'COM_UPDATE');",
            )?,
        };
        let fields: Vec<f64> = out
            .trim()
            .split(['|', '\t'])
            .map(|f| f.trim().parse().unwrap_or(0.0))
            .collect();
        match fields[..] {
            [statements, waiter, marks] => Ok(Counts {
                statements,
                waiter,
                marks,
            }),
            _ => bail!("unexpected counters: {out:?}"),
        }
    }
}

impl Db {
    /// Starts the server, makes the generators' table, and holds every
    /// identity from `identities` on with the filler.
    async fn start(mysql: bool, identities: usize, lease_ttl: u64) -> anyhow::Result<Db> {
        let server =
            tokio::task::spawn_blocking(move || Server::start(mysql, identities)).await??;
        // The table made by the first holder would race the filler: make it now.
        server.sql(&snowmint_db::ddl(
            if mysql {
                snowmint_db::Dialect::Mysql
            } else {
                snowmint_db::Dialect::Postgres
            },
            &snowmint_db::Table::parse(TABLE).map_err(anyhow::Error::msg)?,
        ))?;
        if identities < 1024 {
            server.sql(&format!(
                "UPDATE {TABLE} SET lease = 1, holder = 'scale filler', expires_ms = 9000000000000, \
                 released = false WHERE identity >= {identities};"
            ))?;
        }
        Ok(Db { server, lease_ttl })
    }
}

impl Coordinator for Db {
    const WORDS: Words = Words {
        who: "",
        requests: "statements",
        claims: "statements",
        writes: "writes",
        wrote: "wrote its mark",
    };
    const SAMPLE_EVERY: Duration = Duration::from_millis(500);

    fn name(&self) -> Option<&'static str> {
        Some(self.server.name())
    }

    fn launcher(&self) -> Launch {
        let config = self.server.config(self.server.url(), TABLE, self.lease_ttl);
        Arc::new(move |i| {
            Ok(LeasedGenerator::spawn(
                config.clone().holder(format!("scale {i}")),
            )?)
        })
    }

    fn spawn_waiter(&self) -> Box<dyn FnOnce() -> anyhow::Result<LeasedGenerator> + Send> {
        let config = self
            .server
            .config(self.server.waiter_url(), TABLE, self.lease_ttl);
        Box::new(move || Ok(LeasedGenerator::spawn(config)?))
    }

    async fn counts(&self) -> anyhow::Result<Counters> {
        let counts = self.server.counts()?;
        Ok(Counters {
            requests: counts.statements,
            txns: counts.marks,
        })
    }

    async fn waiter_requests(&self) -> anyhow::Result<f64> {
        Ok(self.server.counts()?.waiter)
    }

    /// In a table of their own.
    fn serve_args(&self) -> Vec<String> {
        vec![
            format!("--{}", self.server.name()),
            self.server.url(),
            "--db-table".to_owned(),
            "scale_serve".to_owned(),
            "--lease-ttl".to_owned(),
            self.lease_ttl.to_string(),
        ]
    }

    /// MariaDB's `COM_UPDATE` counts keep-alives too.
    fn serve_writes_are_marks(&self) -> bool {
        matches!(self.server, Server::Postgres { .. })
    }
}

/// Runs the phases against PostgreSQL (`mysql` false) or MariaDB.
///
/// # Errors
///
/// When the database does not start or cannot be counted.
pub async fn run(config: Config, mysql: bool) -> anyhow::Result<Outcome> {
    phases::prepare(&config)?;
    let db = Db::start(mysql, config.identities, config.lease_ttl).await?;
    phases::run(config, db).await
}
