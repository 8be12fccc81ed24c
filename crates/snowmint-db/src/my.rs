//! MySQL and MariaDB: each request one statement, but for the claim (a
//! locking read and an update in one transaction: MySQL has no `UPDATE ...
//! RETURNING`). The session's time zone is UTC, so that the database's
//! clock in Unix milliseconds is unambiguous; affected rows count the rows
//! *matched* (`CLIENT_FOUND_ROWS`), so a renewal within the same
//! millisecond still counts.

use std::sync::Arc;

use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder, TxOpts};

use crate::answer::{Before, Row, ServerState, Source};
use crate::table::{Dialect, Table};

/// The database's clock in Unix milliseconds (the session is in UTC).
const NOW_MS: &str = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";

/// The statements, written once for a table.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    state: String,
    count: String,
    scan: String,
    lock: String,
    claim: String,
    keep_alive: String,
    confirm: String,
    release: String,
    revoke: String,
    load_mark: String,
    raise_mark: String,
    ddl: Vec<String>,
}

impl Statements {
    pub(crate) fn new(table: &Table) -> Statements {
        let t = table.quoted(Dialect::Mysql);
        Statements {
            state: "SELECT @@global.read_only, (SELECT TABLE_COMMENT FROM \
                    information_schema.TABLES WHERE TABLE_SCHEMA = IFNULL(?, DATABASE()) \
                    AND TABLE_NAME = ?)"
                .to_owned(),
            count: format!("SELECT COUNT(*) FROM {t}"),
            scan: format!(
                "SELECT identity, IFNULL(lease IS NOT NULL AND expires_ms > {NOW_MS}, 0), mark, \
                 IFNULL(lease IS NOT NULL AND NOT released, 0) FROM {t} \
                 WHERE identity BETWEEN ? AND ?"
            ),
            lock: format!(
                "SELECT lease, holder, instance, ttl_ms, released, \
                 (lease IS NULL OR expires_ms <= {NOW_MS}) FROM {t} WHERE identity = ? FOR UPDATE"
            ),
            claim: format!(
                "UPDATE {t} SET lease = ?, holder = ?, instance = ?, ttl_ms = ?, \
                 expires_ms = {NOW_MS} + ?, released = FALSE WHERE identity = ?"
            ),
            keep_alive: format!(
                "UPDATE {t} SET expires_ms = {NOW_MS} + ttl_ms \
                 WHERE lease = ? AND expires_ms > {NOW_MS}"
            ),
            confirm: format!(
                "SELECT IFNULL(lease = ? AND expires_ms > {NOW_MS}, 0) FROM {t} WHERE identity = ?"
            ),
            release: format!(
                "UPDATE {t} SET released = TRUE \
                 WHERE identity = ? AND lease = ? AND expires_ms > {NOW_MS}"
            ),
            revoke: format!("UPDATE {t} SET expires_ms = 0 WHERE lease = ? AND expires_ms > 0"),
            load_mark: format!("SELECT mark FROM {t} WHERE identity = ?"),
            raise_mark: format!(
                "UPDATE {t} SET mark = GREATEST(IFNULL(mark, 0), ?) \
                 WHERE identity = ? AND lease = ? AND expires_ms > {NOW_MS}"
            ),
            ddl: crate::table::ddl_statements(Dialect::Mysql, table),
        }
    }
}

/// Where to connect.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) opts: Opts,
    pub(crate) table: Table,
    pub(crate) statements: Arc<Statements>,
}

/// One connection.
pub(crate) struct Conn {
    conn: mysql_async::Conn,
    s: Arc<Statements>,
}

fn boxed(e: mysql_async::Error) -> Source {
    Box::new(e)
}

pub(crate) async fn connect(target: &Target) -> Result<Conn, Source> {
    let opts = OptsBuilder::from_opts(target.opts.clone())
        .client_found_rows(true)
        .init(vec!["SET time_zone = '+00:00'"]);
    let conn = mysql_async::Conn::new(opts).await.map_err(boxed)?;
    Ok(Conn {
        conn,
        s: Arc::clone(&target.statements),
    })
}

impl Conn {
    pub(crate) async fn state(&mut self, table: &Table) -> Result<ServerState, Source> {
        let row: Option<(i64, Option<String>)> = self
            .conn
            .exec_first(&self.s.state, (table.schema(), table.name()))
            .await
            .map_err(boxed)?;
        let (read_only, comment) = row.ok_or("no answer to the server check")?;
        // A replica that is not read-only is refused too (when this user may
        // ask; without the privilege, read_only is what there is to go by).
        let replica = match self
            .conn
            .query::<mysql_async::Row, _>("SHOW SLAVE STATUS")
            .await
        {
            Ok(rows) => !rows.is_empty(),
            Err(mysql_async::Error::Server(_)) => false,
            Err(e) => return Err(boxed(e)),
        };
        let untrusted = if read_only != 0 {
            Some("it is read-only (@@global.read_only is on): lease from the primary".to_owned())
        } else if replica {
            Some(
                "it is a replica (SHOW SLAVE STATUS names a source): lease from the primary"
                    .to_owned(),
            )
        } else {
            None
        };
        let marker = comment.map(Some);
        let rows = if marker
            .as_ref()
            .is_some_and(|c| c.as_deref() == Some(crate::table::LAYOUT_MARKER))
        {
            let n: Option<i64> = self
                .conn
                .exec_first(&self.s.count, ())
                .await
                .map_err(boxed)?;
            Some(n.unwrap_or(0))
        } else {
            None
        };
        Ok(ServerState {
            untrusted,
            // MySQL gives an empty comment for a table without one.
            marker: marker.map(|c| c.filter(|c| !c.is_empty())),
            rows,
        })
    }

    pub(crate) async fn create(&mut self) -> Result<(), Source> {
        for statement in &self.s.ddl {
            self.conn.query_drop(statement).await.map_err(boxed)?;
        }
        Ok(())
    }

    pub(crate) async fn scan(&mut self, first: u16, last: u16) -> Result<Vec<Row>, Source> {
        let rows: Vec<(u16, i64, Option<i64>, i64)> = self
            .conn
            .exec(&self.s.scan, (first, last))
            .await
            .map_err(boxed)?;
        Ok(rows
            .into_iter()
            .map(|(n, taken, mark, unclean)| Row {
                n,
                taken: taken != 0,
                mark,
                unclean: unclean != 0,
            })
            .collect())
    }

    pub(crate) async fn claim(
        &mut self,
        n: u16,
        lease: i64,
        holder: &str,
        instance: i64,
        ttl_ms: i64,
    ) -> Result<Option<Before>, Source> {
        let lock = self.s.lock.clone();
        let claim = self.s.claim.clone();
        let mut tx = self
            .conn
            .start_transaction(TxOpts::default())
            .await
            .map_err(boxed)?;
        type Locked = (
            Option<i64>,
            Option<String>,
            Option<i64>,
            Option<i64>,
            i64,
            i64,
        );
        let row: Option<Locked> = tx.exec_first(&lock, (n,)).await.map_err(boxed)?;
        let Some((old_lease, old_holder, old_instance, old_ttl, released, free)) = row else {
            tx.rollback().await.map_err(boxed)?;
            return Err(format!("identity {n} has no row").into());
        };
        if free == 0 {
            tx.rollback().await.map_err(boxed)?;
            return Ok(None);
        }
        tx.exec_drop(&claim, (lease, holder, instance, ttl_ms, ttl_ms, n))
            .await
            .map_err(boxed)?;
        tx.commit().await.map_err(boxed)?;
        Ok(Some(Before {
            lease: old_lease,
            holder: old_holder,
            instance: old_instance,
            ttl_ms: old_ttl,
            released: released != 0,
        }))
    }

    async fn affected(&mut self, sql: &str, params: mysql_async::Params) -> Result<bool, Source> {
        self.conn.exec_drop(sql, params).await.map_err(boxed)?;
        Ok(self.conn.affected_rows() > 0)
    }

    pub(crate) async fn keep_alive(&mut self, lease: i64) -> Result<bool, Source> {
        let sql = self.s.keep_alive.clone();
        self.affected(&sql, (lease,).into()).await
    }

    pub(crate) async fn confirm(&mut self, n: u16, lease: i64) -> Result<Option<bool>, Source> {
        let holds: Option<i64> = self
            .conn
            .exec_first(&self.s.confirm, (lease, n))
            .await
            .map_err(boxed)?;
        Ok(holds.map(|h| h != 0))
    }

    pub(crate) async fn release(&mut self, n: u16, lease: i64) -> Result<bool, Source> {
        let sql = self.s.release.clone();
        self.affected(&sql, (n, lease).into()).await
    }

    pub(crate) async fn revoke(&mut self, lease: i64) -> Result<(), Source> {
        let sql = self.s.revoke.clone();
        self.affected(&sql, (lease,).into()).await.map(drop)
    }

    pub(crate) async fn load_mark(&mut self, n: u16) -> Result<Option<Option<i64>>, Source> {
        let row: Option<(Option<i64>,)> = self
            .conn
            .exec_first(&self.s.load_mark, (n,))
            .await
            .map_err(boxed)?;
        Ok(row.map(|(mark,)| mark))
    }

    pub(crate) async fn raise_mark(
        &mut self,
        n: u16,
        lease: i64,
        until: i64,
    ) -> Result<bool, Source> {
        let sql = self.s.raise_mark.clone();
        self.affected(&sql, (until, n, lease).into()).await
    }
}
