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
    upgrade: Vec<String>,
    ddl: Vec<String>,
}

impl Statements {
    pub(crate) fn new(table: &Table) -> Statements {
        let t = table.quoted(Dialect::Mysql);
        Statements {
            state: format!(
                "SELECT @@global.read_only, (SELECT TABLE_COMMENT FROM \
                 information_schema.TABLES WHERE TABLE_SCHEMA = IFNULL(?, DATABASE()) \
                 AND TABLE_NAME = ?), {epoch}, (SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) \
                 FROM information_schema.TABLES WHERE TABLE_SCHEMA = IFNULL(?, DATABASE()) \
                 AND TABLE_NAME = ?), CAST(@@GLOBAL.innodb_flush_log_at_trx_commit AS SIGNED)",
                epoch = crate::table::epoch_sql(Dialect::Mysql),
            ),
            count: format!("SELECT COUNT(*), MIN(longest_ttl_ms) FROM {t}"),
            // A row of another epoch is free (its holder fences at its next
            // request) and unclean.
            scan: format!(
                "SELECT identity, IFNULL(lease IS NOT NULL AND expires_ms > {NOW_MS} \
                 AND epoch <=> ?, 0), mark, \
                 IFNULL((lease IS NOT NULL AND NOT released) OR NOT (epoch <=> ?), 0) FROM {t} \
                 WHERE identity BETWEEN ? AND ?"
            ),
            lock: format!(
                "SELECT lease, holder, instance, ttl_ms, released, \
                 (lease IS NULL OR expires_ms <= {NOW_MS} OR NOT (epoch <=> ?) OR lease = ?), epoch, \
                 longest_ttl_ms FROM {t} WHERE identity = ? FOR UPDATE"
            ),
            // `ttl_ms` first: MySQL assigns left to right, so it reads the
            // row as it was (`table::recorded_ttl`).
            claim: format!(
                "UPDATE {t} SET ttl_ms = {recorded}, lease = :lease, holder = :holder, \
                 instance = :instance, expires_ms = {NOW_MS} + :ttl, released = FALSE, \
                 epoch = :epoch WHERE identity = :n",
                recorded = crate::table::recorded_ttl("", ":ttl", ":epoch"),
            ),
            keep_alive: format!(
                "UPDATE {t} SET expires_ms = {NOW_MS} + ? \
                 WHERE lease = ? AND expires_ms > {NOW_MS} AND epoch = ?"
            ),
            confirm: format!(
                "SELECT IFNULL(lease = ? AND expires_ms > {NOW_MS} AND epoch = ?, 0) FROM {t} \
                 WHERE identity = ?"
            ),
            release: format!(
                "UPDATE {t} SET released = TRUE \
                 WHERE identity = ? AND lease = ? AND expires_ms > {NOW_MS} AND epoch = ?"
            ),
            revoke: format!("UPDATE {t} SET expires_ms = 0 WHERE lease = ? AND expires_ms > 0"),
            load_mark: format!("SELECT mark FROM {t} WHERE identity = ?"),
            raise_mark: format!(
                "UPDATE {t} SET mark = GREATEST(IFNULL(mark, 0), ?) \
                 WHERE identity = ? AND lease = ? AND expires_ms > {NOW_MS} AND epoch = ?"
            ),
            upgrade: crate::table::upgrade_statements(Dialect::Mysql, table),
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
    /// The server's epoch, read by `state` when the connection is checked.
    epoch: String,
}

fn boxed(e: mysql_async::Error) -> Source {
    Box::new(e)
}

/// A new connection, its session set whatever the server's defaults are
/// (one `SET`, run by the driver before anything else):
///
/// - `time_zone = '+00:00'`: the database's clock in Unix milliseconds is
///   unambiguous.
/// - `autocommit = 1`: every statement but the claim's two commits by
///   itself. With a server default of 0, the 1024 rows created on first use
///   would never be committed, and the first mark write would open a
///   transaction holding its row lock, every renewal waiting behind it.
/// - `innodb_lock_wait_timeout = 1` (the least MySQL takes): a statement
///   that meets a row locked by another session gets error 1205 after 1 s,
///   within the lease's request timeout (2 s for a TTL of 8 s and more, the
///   default 10 s included), so the answer names the lock instead of the
///   request being cut off (with a TTL under 5 s the request timeout, TTL /
///   5 or less, comes first: the connection is dropped, as after any
///   timeout).
/// - `wait_timeout` = the TTL, at least 30 s (`config::mysql_idle_limit`,
///   carried in the options): a claimant cut off without a FIN right after
///   its `SELECT ... FOR UPDATE` is ended by the server that long after its
///   last statement, which rolls back its transaction and frees the row
///   (the server's default keeps it 8 hours); a live session never idles
///   that long.
/// - `net_read_timeout = net_write_timeout = 10`: every packet here is
///   small; a peer that stalls in the middle of one for five times the
///   longest request timeout is gone.
pub(crate) async fn connect(target: &Target) -> Result<Conn, Source> {
    let idle = target
        .opts
        .wait_timeout()
        .map(|secs| format!(", wait_timeout = {secs}"))
        .unwrap_or_default();
    let session = format!(
        "SET time_zone = '+00:00', autocommit = 1, innodb_lock_wait_timeout = 1, \
         net_read_timeout = 10, net_write_timeout = 10{idle}"
    );
    let opts = OptsBuilder::from_opts(target.opts.clone())
        .client_found_rows(true)
        .init(vec![session]);
    let conn = mysql_async::Conn::new(opts).await.map_err(boxed)?;
    Ok(Conn {
        conn,
        s: Arc::clone(&target.statements),
        epoch: String::new(),
    })
}

/// How a server is asked whether it replicates, in order; the first form it
/// knows answers. MariaDB's lists every connection, named ones included
/// (`CHANGE MASTER 'a' TO ...`, which `SHOW SLAVE STATUS` does not show);
/// MySQL's since 8.0.22 lists every channel (the only form in 8.4, where
/// `SHOW SLAVE STATUS` is a syntax error); the last is MySQL's before 8.0.22.
const REPLICA_STATUS: [&str; 3] = [
    "SHOW ALL SLAVES STATUS",
    "SHOW REPLICA STATUS",
    "SHOW SLAVE STATUS",
];

/// MySQL's `ER_PARSE_ERROR`: the server does not know this form.
const PARSE_ERROR: u16 = 1064;

/// MySQL's `ER_SPECIFIC_ACCESS_DENIED_ERROR`: this user lacks the privilege
/// (`REPLICATION CLIENT`; MariaDB 10.5.9 on: `SLAVE MONITOR`).
const NO_PRIVILEGE: u16 = 1227;

/// Whether the server replicates another.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Replication {
    Primary,
    /// It does: the form and the sources it names.
    Replica(String),
    /// This user may not ask (the one refusal read so): why.
    CannotTell(String),
}

/// What the answer to one of [`REPLICA_STATUS`] tells (`Ok(None)`: ask
/// the next form): the sources it lists, each described; a syntax error
/// leads to the next form, never to "not a replica"; a missing privilege is
/// "cannot tell"; any other error fails the check.
fn judge(
    form: &str,
    answer: Result<Vec<String>, mysql_async::Error>,
) -> Result<Option<Replication>, Source> {
    match answer {
        Ok(sources) if sources.is_empty() => Ok(Some(Replication::Primary)),
        Ok(sources) => Ok(Some(Replication::Replica(format!(
            "{form} lists {}",
            sources.join(", ")
        )))),
        Err(mysql_async::Error::Server(e)) if e.code == PARSE_ERROR => Ok(None),
        Err(mysql_async::Error::Server(e)) if e.code == NO_PRIVILEGE => Ok(Some(
            Replication::CannotTell(format!("{form}: {}", e.message)),
        )),
        Err(e) => Err(format!("{form} failed: {e}").into()),
    }
}

/// The error when the server knew none of [`REPLICA_STATUS`].
fn no_form_known() -> Source {
    format!(
        "the server knows none of {}: cannot tell whether it is a replica",
        REPLICA_STATUS.join(", ")
    )
    .into()
}

/// One row of a replica status as "connection 'a' of 10.0.0.1:3306"
/// (MariaDB's and MySQL's column names, old and new).
fn source_of(row: &mysql_async::Row) -> String {
    let column = |names: &[&str]| {
        names.iter().find_map(|&name| {
            row.get_opt::<Option<String>, _>(name)
                .and_then(Result::ok)
                .flatten()
        })
    };
    let name = column(&["Connection_name", "Channel_Name", "Channel_name"]).unwrap_or_default();
    let host = column(&["Master_Host", "Source_Host"]).unwrap_or_default();
    let port = column(&["Master_Port", "Source_Port"]).unwrap_or_default();
    format!("connection '{name}' of {host}:{port}")
}

impl Conn {
    pub(crate) async fn state(&mut self, table: &Table) -> Result<ServerState, Source> {
        type State = (i64, Option<String>, String, Option<String>, i64);
        let (schema, name) = (table.schema(), table.name());
        let row: Option<State> = self
            .conn
            .exec_first(&self.s.state, (schema, name, schema, name))
            .await
            .map_err(boxed)?;
        let (read_only, comment, epoch, resolved, flush) =
            row.ok_or("no answer to the server check")?;
        self.epoch.clone_from(&epoch);
        // 0: the log is written and flushed once a second, whatever
        // commits; 2: written at commit, flushed once a second (an OS
        // crash loses it).
        let lossy = match flush {
            1 => Vec::new(),
            other => vec![format!("innodb_flush_log_at_trx_commit = {other}")],
        };
        // A replica that is not read-only is refused too (when this user may
        // ask; without the privilege, read_only is what there is to go by).
        let mut replica = None;
        for form in REPLICA_STATUS {
            let answer = self.conn.query::<mysql_async::Row, _>(form).await;
            replica = judge(
                form,
                answer.map(|rows| rows.iter().map(source_of).collect()),
            )?;
            if replica.is_some() {
                break;
            }
        }
        let replica = replica.ok_or_else(no_form_known)?;
        let untrusted = if read_only != 0 {
            Some("it is read-only (@@global.read_only is on): lease from the primary".to_owned())
        } else {
            match replica {
                Replication::Replica(why) => Some(format!(
                    "it is a replica ({why}): lease from the primary (a promoted replica must \
                     drop its replication first: MariaDB RESET SLAVE 'NAME' ALL, MySQL RESET \
                     REPLICA ALL)"
                )),
                Replication::CannotTell(why) => {
                    tracing::warn!(
                        %why,
                        "cannot tell whether the MySQL server is a replica (grant REPLICATION \
                         CLIENT, on MariaDB SLAVE MONITOR); going by read_only alone"
                    );
                    None
                }
                Replication::Primary => None,
            }
        };
        let marker = comment.map(Some);
        let (rows, longest_ttl_ms) = if marker
            .as_ref()
            .is_some_and(|c| c.as_deref() == Some(crate::table::LAYOUT_MARKER))
        {
            let row: Option<(i64, Option<i64>)> = self
                .conn
                .exec_first(&self.s.count, ())
                .await
                .map_err(boxed)?;
            let (n, longest) = row.unwrap_or((0, None));
            (Some(n), longest)
        } else {
            (None, None)
        };
        Ok(ServerState {
            untrusted,
            // MySQL gives an empty comment for a table without one.
            marker: marker.map(|c| c.filter(|c| !c.is_empty())),
            rows,
            epoch,
            resolved,
            // A database is a schema here: the name resolves in the URL's.
            elsewhere: Vec::new(),
            home: None,
            longest_ttl_ms,
            lossy,
        })
    }

    pub(crate) fn epoch(&self) -> &str {
        &self.epoch
    }

    /// Brings a table of the layout before epochs to this one (MySQL's
    /// ALTER TABLE commits by itself; the UPDATE is idempotent, and the
    /// comment goes last, so a cut-off upgrade is finished by the next).
    pub(crate) async fn upgrade(&mut self) -> Result<(), Source> {
        for statement in &self.s.upgrade {
            self.conn.query_drop(statement).await.map_err(boxed)?;
        }
        Ok(())
    }

    pub(crate) async fn create(&mut self) -> Result<(), Source> {
        for statement in &self.s.ddl {
            self.conn.query_drop(statement).await.map_err(boxed)?;
        }
        Ok(())
    }

    pub(crate) async fn scan(&mut self, first: u16, last: u16) -> Result<Vec<Row>, Source> {
        let epoch = self.epoch.clone();
        let rows: Vec<(u16, i64, Option<i64>, i64)> = self
            .conn
            .exec(&self.s.scan, (&epoch, &epoch, first, last))
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
        let epoch = self.epoch.clone();
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
            Option<String>,
            i64,
        );
        let row: Option<Locked> = tx
            .exec_first(&lock, (&epoch, lease, n))
            .await
            .map_err(boxed)?;
        let Some((
            old_lease,
            old_holder,
            old_instance,
            old_ttl,
            released,
            free,
            old_epoch,
            longest_ttl_ms,
        )) = row
        else {
            tx.rollback().await.map_err(boxed)?;
            return Err(format!("identity {n} has no row").into());
        };
        if free == 0 {
            tx.rollback().await.map_err(boxed)?;
            return Ok(None);
        }
        tx.exec_drop(
            &claim,
            mysql_async::Params::from(vec![
                ("lease".to_owned(), mysql_async::Value::from(lease)),
                ("holder".to_owned(), mysql_async::Value::from(holder)),
                ("instance".to_owned(), mysql_async::Value::from(instance)),
                ("ttl".to_owned(), mysql_async::Value::from(ttl_ms)),
                ("epoch".to_owned(), mysql_async::Value::from(&epoch)),
                ("n".to_owned(), mysql_async::Value::from(n)),
            ]),
        )
        .await
        .map_err(boxed)?;
        tx.commit().await.map_err(boxed)?;
        Ok(Some(Before {
            lease: old_lease,
            holder: old_holder,
            instance: old_instance,
            ttl_ms: old_ttl,
            released: released != 0,
            epoch: old_epoch,
            longest_ttl_ms,
        }))
    }

    async fn affected(&mut self, sql: &str, params: mysql_async::Params) -> Result<bool, Source> {
        self.conn.exec_drop(sql, params).await.map_err(boxed)?;
        Ok(self.conn.affected_rows() > 0)
    }

    pub(crate) async fn keep_alive(&mut self, lease: i64, ttl_ms: i64) -> Result<bool, Source> {
        let sql = self.s.keep_alive.clone();
        let epoch = self.epoch.clone();
        self.affected(&sql, (ttl_ms, lease, epoch).into()).await
    }

    pub(crate) async fn confirm(&mut self, n: u16, lease: i64) -> Result<Option<bool>, Source> {
        let holds: Option<i64> = self
            .conn
            .exec_first(&self.s.confirm, (lease, &self.epoch, n))
            .await
            .map_err(boxed)?;
        Ok(holds.map(|h| h != 0))
    }

    pub(crate) async fn release(&mut self, n: u16, lease: i64) -> Result<bool, Source> {
        let sql = self.s.release.clone();
        let epoch = self.epoch.clone();
        self.affected(&sql, (n, lease, epoch).into()).await
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
        let epoch = self.epoch.clone();
        self.affected(&sql, (until, n, lease, epoch).into()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: u16) -> mysql_async::Error {
        mysql_async::Error::Server(mysql_async::ServerError {
            code,
            message: format!("error {code}"),
            state: "42000".to_owned(),
        })
    }

    /// The forms asked in order, each answered by `answers` (by form).
    fn ask(
        answers: impl Fn(&str) -> Result<Vec<String>, mysql_async::Error>,
    ) -> Result<Replication, String> {
        for form in REPLICA_STATUS {
            if let Some(r) = judge(form, answers(form)).map_err(|e| e.to_string())? {
                return Ok(r);
            }
        }
        Err(no_form_known().to_string())
    }

    #[test]
    fn a_syntax_error_leads_to_the_next_form_never_to_not_a_replica() {
        // MariaDB: the first form answers, named connections included.
        assert_eq!(ask(|_| Ok(vec![])), Ok(Replication::Primary));
        assert_eq!(
            ask(|_| Ok(vec!["connection 'a' of db1:3306".to_owned()])),
            Ok(Replication::Replica(
                "SHOW ALL SLAVES STATUS lists connection 'a' of db1:3306".to_owned()
            ))
        );
        // MySQL 8.4: no SHOW ALL SLAVES STATUS, no SHOW SLAVE STATUS.
        let mysql_84 = |form: &str| match form {
            "SHOW REPLICA STATUS" => Ok(vec!["connection '' of db1:3306".to_owned()]),
            _ => Err(server(PARSE_ERROR)),
        };
        assert_eq!(
            ask(mysql_84),
            Ok(Replication::Replica(
                "SHOW REPLICA STATUS lists connection '' of db1:3306".to_owned()
            ))
        );
        // MySQL 5.7: only the last form.
        let mysql_57 = |form: &str| match form {
            "SHOW SLAVE STATUS" => Ok(vec![]),
            _ => Err(server(PARSE_ERROR)),
        };
        assert_eq!(ask(mysql_57), Ok(Replication::Primary));
        // None known: the check fails.
        let e = ask(|_| Err(server(PARSE_ERROR))).unwrap_err();
        assert!(
            e.starts_with("the server knows none of SHOW ALL SLAVES"),
            "{e}"
        );
    }

    #[test]
    fn only_a_missing_privilege_is_read_as_cannot_tell() {
        assert_eq!(
            ask(|_| Err(server(NO_PRIVILEGE))),
            Ok(Replication::CannotTell(
                "SHOW ALL SLAVES STATUS: error 1227".to_owned()
            ))
        );
        for code in [1045, 1142, 1205, 2013] {
            let e = ask(|_| Err(server(code))).unwrap_err();
            assert!(e.starts_with("SHOW ALL SLAVES STATUS failed"), "{e}");
        }
        let e = ask(|_| Err(mysql_async::DriverError::ConnectionClosed.into())).unwrap_err();
        assert!(e.contains("closed"), "{e}");
    }
}
