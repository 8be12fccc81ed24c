//! PostgreSQL: each request one statement, sent with the extended protocol's
//! *unnamed* statement (`query_typed`: parse, bind and execute in one round
//! trip), so nothing outlives a transaction and PgBouncer in transaction
//! mode (1.18: no prepared statements across transactions) can carry it.
//! The database's clock (`clock_timestamp()`) decides every expiry.

use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, NoTls};

use crate::answer::{Before, Row, ServerState, Source};
use crate::table::{Dialect, Table};
use crate::tls::PgTls;

/// The database's clock in Unix milliseconds.
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The statements, written once for a table.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    state: String,
    count: String,
    scan: String,
    claim: String,
    keep_alive: String,
    confirm: String,
    release: String,
    revoke: String,
    load_mark: String,
    raise_mark: String,
    upgrade: Vec<String>,
    ddl: String,
}

impl Statements {
    pub(crate) fn new(table: &Table) -> Statements {
        let t = table.quoted(Dialect::Postgres);
        let c = format!("(SELECT {NOW_MS} AS now_ms) AS c");
        Statements {
            // The epoch is read only on a primary (a standby has no current
            // WAL position; it is refused anyway). `$2`: the table's name
            // when it was given without a schema, to find namesakes.
            state: format!(
                "SELECT pg_is_in_recovery(), current_setting('transaction_read_only'), \
                 to_regclass($1) IS NOT NULL, obj_description(to_regclass($1), 'pg_class'), \
                 CASE WHEN pg_is_in_recovery() THEN '' ELSE {epoch} END, \
                 (SELECT n.nspname || '.' || c.relname FROM pg_class c \
                  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)), \
                 ARRAY(SELECT n.nspname || '.' || c.relname FROM pg_class c \
                  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = $2 \
                  AND c.relkind IN ('r', 'p') AND c.oid IS DISTINCT FROM to_regclass($1) \
                  ORDER BY 1), \
                 current_setting('synchronous_commit'), current_setting('fsync'), \
                 COALESCE($3, current_schema()) || '.' || $4",
                epoch = crate::table::epoch_sql(Dialect::Postgres),
            ),
            count: format!("SELECT count(*), min(longest_ttl_ms) FROM {t}"),
            // A row of another epoch is free (its holder fences at its next
            // request) and unclean.
            scan: format!(
                "SELECT identity, (lease IS NOT NULL AND expires_ms > c.now_ms \
                 AND epoch IS NOT DISTINCT FROM $3), mark, \
                 (lease IS NOT NULL AND NOT released) OR epoch IS DISTINCT FROM $3 \
                 FROM {t}, {c} WHERE identity BETWEEN $1 AND $2"
            ),
            // The row is locked first (`old`), so that what is returned is
            // what the claim replaced; a concurrent claim waits for the lock
            // and then finds the identity taken.
            // `ttl_ms` records the longest fence that may still be open on
            // the identity (`table::recorded_ttl`).
            claim: format!(
                "WITH old AS (SELECT identity, lease, holder, instance, ttl_ms, released, \
                 expires_ms, epoch, longest_ttl_ms FROM {t} WHERE identity = $1 FOR UPDATE) \
                 UPDATE {t} AS t SET lease = $2, holder = $3, instance = $4, \
                 ttl_ms = {recorded}, expires_ms = c.now_ms + $5, released = false, epoch = $6 \
                 FROM old, {c} WHERE t.identity = old.identity \
                 AND (old.lease IS NULL OR old.expires_ms <= c.now_ms \
                 OR old.epoch IS DISTINCT FROM $6 OR old.lease = $2) \
                 RETURNING old.lease, old.holder, old.instance, old.ttl_ms, old.released, \
                 old.epoch, old.longest_ttl_ms",
                recorded = crate::table::recorded_ttl("old.", "$5", "$6"),
            ),
            keep_alive: format!(
                "UPDATE {t} SET expires_ms = c.now_ms + $2 FROM {c} \
                 WHERE lease = $1 AND expires_ms > c.now_ms AND epoch = $3 RETURNING identity"
            ),
            confirm: format!(
                "SELECT COALESCE(lease = $2 AND expires_ms > c.now_ms AND epoch = $3, false) \
                 FROM {t}, {c} WHERE identity = $1"
            ),
            release: format!(
                "UPDATE {t} SET released = true FROM {c} WHERE identity = $1 AND lease = $2 \
                 AND expires_ms > c.now_ms AND epoch = $3 RETURNING identity"
            ),
            revoke: format!(
                "UPDATE {t} SET expires_ms = 0 WHERE lease = $1 AND expires_ms > 0 \
                 RETURNING identity"
            ),
            load_mark: format!("SELECT mark FROM {t} WHERE identity = $1"),
            raise_mark: format!(
                "UPDATE {t} SET mark = GREATEST(COALESCE(mark, 0), $3) FROM {c} \
                 WHERE identity = $1 AND lease = $2 AND expires_ms > c.now_ms AND epoch = $4 \
                 RETURNING mark"
            ),
            upgrade: crate::table::upgrade_statements(Dialect::Postgres, table),
            ddl: crate::table::ddl(Dialect::Postgres, table),
        }
    }
}

/// Where to connect: the URL's settings (without the TLS ones
/// tokio-postgres does not know), and TLS.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) config: Config,
    pub(crate) tls: Option<PgTls>,
    pub(crate) table: Table,
    pub(crate) statements: Arc<Statements>,
}

/// One connection: the client, and the task that drives its socket
/// (aborted with it, so a connection to a server that stopped answering
/// does not linger).
pub(crate) struct Conn {
    client: Client,
    task: JoinHandle<()>,
    s: Arc<Statements>,
    /// The server's epoch, read by `state` when the connection is checked.
    epoch: String,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The error with its causes (tokio-postgres shows "error connecting to
/// server" without saying why).
fn boxed(e: tokio_postgres::Error) -> Source {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text.into()
}

pub(crate) async fn connect(target: &Target) -> Result<Conn, Source> {
    let (client, task) = match &target.tls {
        None => {
            let (client, connection) = target.config.connect(NoTls).await.map_err(boxed)?;
            (
                client,
                tokio::spawn(async move {
                    let _ = connection.await;
                }),
            )
        }
        Some(tls) => {
            let (client, connection) = target
                .config
                .connect(tls.connector())
                .await
                .map_err(boxed)?;
            (
                client,
                tokio::spawn(async move {
                    let _ = connection.await;
                }),
            )
        }
    };
    Ok(Conn {
        client,
        task,
        s: Arc::clone(&target.statements),
        epoch: String::new(),
    })
}

impl Conn {
    async fn query(
        &self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<tokio_postgres::Row>, Source> {
        self.client.query_typed(sql, params).await.map_err(boxed)
    }

    pub(crate) async fn state(&mut self, table: &Table) -> Result<ServerState, Source> {
        let name = table.quoted(Dialect::Postgres);
        let namesake = table.schema().is_none().then(|| table.name().to_owned());
        let (schema, bare) = (table.schema(), table.name());
        let rows = self
            .query(
                &self.s.state,
                &[
                    (&name, Type::TEXT),
                    (&namesake, Type::TEXT),
                    (&schema, Type::TEXT),
                    (&bare, Type::TEXT),
                ],
            )
            .await?;
        let row = rows.first().ok_or("no answer to the server check")?;
        let recovery: bool = row.try_get(0).map_err(boxed)?;
        let read_only: String = row.try_get(1).map_err(boxed)?;
        let exists: bool = row.try_get(2).map_err(boxed)?;
        let comment: Option<String> = row.try_get(3).map_err(boxed)?;
        let epoch: String = row.try_get(4).map_err(boxed)?;
        let resolved: Option<String> = row.try_get(5).map_err(boxed)?;
        let elsewhere: Vec<String> = row.try_get(6).map_err(boxed)?;
        let synchronous_commit: String = row.try_get(7).map_err(boxed)?;
        let fsync: String = row.try_get(8).map_err(boxed)?;
        let home: Option<String> = row.try_get(9).map_err(boxed)?;
        let mut lossy = Vec::new();
        if synchronous_commit == "off" {
            lossy.push("synchronous_commit = off".to_owned());
        }
        if fsync == "off" {
            lossy.push("fsync = off".to_owned());
        }
        self.epoch.clone_from(&epoch);
        let untrusted = if recovery {
            Some("it is a standby (pg_is_in_recovery() is true): lease from the primary".to_owned())
        } else if read_only == "on" {
            Some("its transactions are read-only (transaction_read_only is on)".to_owned())
        } else {
            None
        };
        let (rows, longest_ttl_ms) =
            if exists && comment.as_deref() == Some(crate::table::LAYOUT_MARKER) {
                let count = self.query(&self.s.count, &[]).await?;
                let row = count.first().ok_or("no answer to count(*)")?;
                let n: i64 = row.try_get(0).map_err(boxed)?;
                let longest: Option<i64> = row.try_get(1).map_err(boxed)?;
                (Some(n), longest)
            } else {
                (None, None)
            };
        Ok(ServerState {
            untrusted,
            marker: exists.then_some(comment),
            rows,
            epoch,
            resolved,
            elsewhere,
            home,
            longest_ttl_ms,
            lossy,
        })
    }

    pub(crate) fn epoch(&self) -> &str {
        &self.epoch
    }

    pub(crate) async fn create(&mut self) -> Result<(), Source> {
        self.client.batch_execute(&self.s.ddl).await.map_err(boxed)
    }

    /// Brings a table of the layout before epochs to this one, in one
    /// transaction.
    pub(crate) async fn upgrade(&mut self) -> Result<(), Source> {
        let script = format!("BEGIN;\n{};\nCOMMIT;", self.s.upgrade.join(";\n"));
        self.client.batch_execute(&script).await.map_err(boxed)
    }

    pub(crate) async fn scan(&self, first: u16, last: u16) -> Result<Vec<Row>, Source> {
        let (first, last) = (small(first), small(last));
        let rows = self
            .query(
                &self.s.scan,
                &[
                    (&first, Type::INT2),
                    (&last, Type::INT2),
                    (&self.epoch, Type::TEXT),
                ],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let n: i16 = row.try_get(0).map_err(boxed)?;
                Ok(Row {
                    n: u16::try_from(n).map_err(|_| format!("identity {n} in the table"))?,
                    taken: row.try_get(1).map_err(boxed)?,
                    mark: row.try_get(2).map_err(boxed)?,
                    unclean: row.try_get(3).map_err(boxed)?,
                })
            })
            .collect()
    }

    pub(crate) async fn claim(
        &self,
        n: u16,
        lease: i64,
        holder: &str,
        instance: i64,
        ttl_ms: i64,
    ) -> Result<Option<Before>, Source> {
        let n = small(n);
        let rows = self
            .query(
                &self.s.claim,
                &[
                    (&n, Type::INT2),
                    (&lease, Type::INT8),
                    (&holder, Type::TEXT),
                    (&instance, Type::INT8),
                    (&ttl_ms, Type::INT8),
                    (&self.epoch, Type::TEXT),
                ],
            )
            .await?;
        rows.first()
            .map(|row| {
                Ok(Before {
                    lease: row.try_get(0).map_err(boxed)?,
                    holder: row.try_get(1).map_err(boxed)?,
                    instance: row.try_get(2).map_err(boxed)?,
                    ttl_ms: row.try_get(3).map_err(boxed)?,
                    released: row.try_get(4).map_err(boxed)?,
                    epoch: row.try_get(5).map_err(boxed)?,
                    longest_ttl_ms: row.try_get(6).map_err(boxed)?,
                })
            })
            .transpose()
    }

    pub(crate) async fn keep_alive(&self, lease: i64, ttl_ms: i64) -> Result<bool, Source> {
        let rows = self
            .query(
                &self.s.keep_alive,
                &[
                    (&lease, Type::INT8),
                    (&ttl_ms, Type::INT8),
                    (&self.epoch, Type::TEXT),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    pub(crate) async fn confirm(&self, n: u16, lease: i64) -> Result<Option<bool>, Source> {
        let n = small(n);
        let rows = self
            .query(
                &self.s.confirm,
                &[
                    (&n, Type::INT2),
                    (&lease, Type::INT8),
                    (&self.epoch, Type::TEXT),
                ],
            )
            .await?;
        rows.first()
            .map(|row| row.try_get(0).map_err(boxed))
            .transpose()
    }

    pub(crate) async fn release(&self, n: u16, lease: i64) -> Result<bool, Source> {
        let n = small(n);
        let rows = self
            .query(
                &self.s.release,
                &[
                    (&n, Type::INT2),
                    (&lease, Type::INT8),
                    (&self.epoch, Type::TEXT),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    pub(crate) async fn revoke(&self, lease: i64) -> Result<(), Source> {
        self.query(&self.s.revoke, &[(&lease, Type::INT8)])
            .await
            .map(drop)
    }

    pub(crate) async fn load_mark(&self, n: u16) -> Result<Option<Option<i64>>, Source> {
        let n = small(n);
        let rows = self.query(&self.s.load_mark, &[(&n, Type::INT2)]).await?;
        rows.first()
            .map(|row| row.try_get(0).map_err(boxed))
            .transpose()
    }

    pub(crate) async fn raise_mark(&self, n: u16, lease: i64, until: i64) -> Result<bool, Source> {
        let n = small(n);
        let rows = self
            .query(
                &self.s.raise_mark,
                &[
                    (&n, Type::INT2),
                    (&lease, Type::INT8),
                    (&until, Type::INT8),
                    (&self.epoch, Type::TEXT),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }
}

/// Identity numbers are 0..=1023: always a smallint.
fn small(n: u16) -> i16 {
    i16::try_from(n).expect("identity numbers are 0..=1023")
}
