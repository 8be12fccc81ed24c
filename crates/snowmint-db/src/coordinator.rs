//! [`DbCoordinator`]: the lease protocol's [`Coordinator`] on one table of
//! PostgreSQL or MySQL.
//!
//! A lease is a random 63-bit token chosen by the holder ([`grant`] sends
//! nothing: a token is bound to a row by the claim, and lives only as long
//! as a row holds it). Every expiry is set and judged by the database's
//! clock, in the statement that claims or renews, so a holder's clock plays
//! no part in who holds what; the fence (the session's) is measured on the
//! holder's monotonic clock from before the request was sent, so a slow
//! answer only shortens it.
//!
//! [`grant`]: Coordinator::grant

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use snowmint_lease::{
    Census, Claimant, Claimed, Confirmation, Coordinator, Granted, LeaseError, LeaseId, Pool,
    Previous, Renewal,
};

use crate::backend::{Before, Conn, Source, Target};
use crate::table::LAYOUT_MARKER;

/// A database as a coordinator of identities: one connection at a time
/// (made on first use, after checking the server and the table;
/// dropped after any failure, so that no late answer is ever taken for a
/// newer request's).
pub struct DbCoordinator {
    target: Target,
    conn: Option<Conn>,
    /// Where, for logs (no password).
    shown: String,
    /// The TTL each lease was granted with.
    ttls: HashMap<LeaseId, Duration>,
}

impl std::fmt::Debug for DbCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbCoordinator")
            .field("dialect", &self.target.dialect())
            .field("endpoint", &self.shown)
            .field("table", self.target.table())
            .finish_non_exhaustive()
    }
}

impl DbCoordinator {
    pub(crate) fn new(target: Target, shown: String) -> DbCoordinator {
        DbCoordinator {
            target,
            conn: None,
            shown,
            ttls: HashMap::new(),
        }
    }

    fn name(&self) -> &'static str {
        self.target.dialect().name()
    }

    fn request(&self, op: &'static str, source: Source) -> LeaseError {
        LeaseError::Request {
            coordinator: self.name(),
            op,
            source,
        }
    }

    /// A new connection, checked: the server must be a primary that takes
    /// writes, and the table ours (created here if it is missing and this
    /// user may).
    async fn connect(&self, op: &'static str) -> Result<Conn, LeaseError> {
        let mut conn = self
            .target
            .connect()
            .await
            .map_err(|e| self.request("connect", e))?;
        self.check(&mut conn)
            .await
            .map_err(|e| self.request(op, e))?;
        Ok(conn)
    }

    async fn check(&self, conn: &mut Conn) -> Result<(), Source> {
        let table = self.target.table().clone();
        let product = self.target.dialect().product();
        let mut state = conn.state(&table).await?;
        if let Some(why) = &state.untrusted {
            return Err(format!("refusing {product} at {}: {why}", self.shown).into());
        }
        if state.marker.is_none() {
            // Another instance may be creating it too: whichever way that
            // goes, what counts is what the table is afterwards.
            let created = conn.create().await;
            state = conn.state(&table).await?;
            if state.marker.is_none() {
                let why = created.err().map(|e| e.to_string()).unwrap_or_default();
                return Err(format!(
                    "table {table} does not exist and could not be created ({why}); a DBA can \
                     create it with the statements of `snowmint sql coordinator {}`",
                    self.target.dialect()
                )
                .into());
            }
        }
        match state.marker.as_ref().and_then(Option::as_deref) {
            Some(LAYOUT_MARKER) => {}
            other => {
                return Err(format!(
                    "table {table} is not a snowmint coordinator table of this layout: its \
                     comment is {:?}, not {LAYOUT_MARKER:?}; name another table, or create \
                     this one with `snowmint sql coordinator {}`",
                    other.unwrap_or(""),
                    self.target.dialect()
                )
                .into());
            }
        }
        match state.rows {
            Some(rows) if rows == i64::from(snowmint::Identity::COUNT) => Ok(()),
            rows => Err(format!(
                "table {table} has {} rows, not one for each of the {} identities; load the \
                 INSERT of `snowmint sql coordinator {}`",
                rows.unwrap_or(0),
                snowmint::Identity::COUNT,
                self.target.dialect()
            )
            .into()),
        }
    }

    /// Runs `op` on the connection (made first if there is none) within
    /// `t`. The connection is out of `self` while `op` runs and goes back
    /// only once it succeeded: a failure drops it, and so does a request
    /// cancelled midway (a timeout here, or the session stopped by a
    /// shutdown while a renewal was on the wire), so the next request never
    /// reads the rest of another's reply (mysql_async: "Packets out of
    /// sync") but starts on a new connection.
    async fn run<T>(
        &mut self,
        op: &'static str,
        t: Duration,
        f: impl AsyncFnOnce(&mut Conn) -> Result<T, Source>,
    ) -> Result<T, LeaseError> {
        let name = self.name();
        tokio::time::timeout(t, async {
            let mut conn = match self.conn.take() {
                Some(conn) => conn,
                None => self.connect(op).await?,
            };
            let value = f(&mut conn).await.map_err(|source| LeaseError::Request {
                coordinator: name,
                op,
                source,
            })?;
            self.conn = Some(conn);
            Ok(value)
        })
        .await
        .unwrap_or(Err(LeaseError::Timeout {
            coordinator: name,
            op,
            after: t,
        }))
    }

    fn key(&self, n: u16) -> String {
        format!("{} row {n}", self.target.table())
    }
}

/// A mark read back: Unix milliseconds in the format's range, or damaged.
fn mark(key: String, value: i64) -> Result<u64, LeaseError> {
    u64::try_from(value)
        .ok()
        .filter(|v| (snowmint::MIN_TIMESTAMP_MS..=snowmint::MAX_TIMESTAMP_MS).contains(v))
        .ok_or(LeaseError::DamagedMark {
            key,
            value: value.to_string(),
        })
}

/// How the last holder let go, from what the claim replaced.
fn previous(before: Before, instance: u64) -> Previous {
    let same_instance = before.instance.map(i64::cast_unsigned) == Some(instance);
    if before.lease.is_none() || before.released || same_instance {
        return Previous::Clean;
    }
    let ttl_ms = before.ttl_ms.and_then(|ms| u64::try_from(ms).ok());
    Previous::Unclean {
        // A row without a TTL (written by hand): the longest a fence may be.
        ttl: ttl_ms.map_or(snowmint_lease::MAX_LEASE_TTL, Duration::from_millis),
        holder: before.holder.unwrap_or_else(|| "unknown".to_owned()),
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Coordinator for DbCoordinator {
    fn sibling(&self) -> DbCoordinator {
        DbCoordinator {
            target: self.target.clone(),
            conn: None,
            shown: self.shown.clone(),
            ttls: HashMap::new(),
        }
    }

    fn failed(&mut self) {
        self.conn = None;
    }

    fn endpoint(&self) -> String {
        self.shown.clone()
    }

    fn endpoints(&self) -> usize {
        1
    }

    /// One primary decides: the statement that renews is the truth.
    fn has_terms(&self) -> bool {
        false
    }

    fn scope(&self) -> String {
        format!(
            "{} table {}",
            self.target.dialect().product(),
            self.target.table()
        )
    }

    async fn scan(&mut self, pool: Pool, t: Duration) -> Result<Census, LeaseError> {
        let mut ordinals = pool.ordinals();
        let first = ordinals.next().unwrap_or(0);
        let last = ordinals.last().unwrap_or(first);
        let rows = self
            .run("scan", t, async |c| c.scan(first, last).await)
            .await?;
        let mut census = Census {
            taken: HashSet::new(),
            marks: HashMap::new(),
            unclean: HashSet::new(),
        };
        for row in rows {
            if row.taken {
                census.taken.insert(row.n);
            } else if row.unclean {
                census.unclean.insert(row.n);
            }
            if let Some(value) = row.mark
                && let Ok(ms) = mark(String::new(), value)
            {
                census.marks.insert(row.n, ms);
            }
        }
        Ok(census)
    }

    async fn grant(&mut self, ttl: Duration, _t: Duration) -> Result<Granted, LeaseError> {
        // 63 random bits, never 0: one process's tokens never meet
        // another's (the odds are those of a 63-bit collision).
        let token = RandomState::new().hash_one((std::process::id(), std::time::Instant::now()));
        let lease = i64::try_from(token >> 1).unwrap_or(i64::MAX).max(1);
        self.ttls.insert(lease, ttl);
        Ok(Granted { lease, ttl })
    }

    async fn claim(
        &mut self,
        lease: LeaseId,
        n: u16,
        who: &Claimant<'_>,
        t: Duration,
    ) -> Result<Claimed, LeaseError> {
        let holder = who.holder.to_owned();
        let instance = who.instance.cast_signed();
        let ttl_ms = millis(who.ttl);
        let before = self
            .run("claim", t, async |c| {
                c.claim(n, lease, &holder, instance, ttl_ms).await
            })
            .await?;
        Ok(match before {
            None => Claimed::Taken,
            Some(before) => Claimed::Won(previous(before, who.instance)),
        })
    }

    async fn keep_alive(&mut self, lease: LeaseId, t: Duration) -> Result<Renewal, LeaseError> {
        let renewed = self
            .run("keep-alive", t, async |c| c.keep_alive(lease).await)
            .await?;
        let ttl = match renewed {
            true => self.ttls.get(&lease).copied().unwrap_or_default(),
            false => {
                self.ttls.remove(&lease);
                Duration::ZERO
            }
        };
        Ok(Renewal { ttl, term: None })
    }

    async fn confirm(
        &mut self,
        n: u16,
        lease: LeaseId,
        t: Duration,
    ) -> Result<Confirmation, LeaseError> {
        let holds = self
            .run("confirm", t, async |c| c.confirm(n, lease).await)
            .await?;
        Ok(Confirmation {
            holds: holds == Some(true),
            term: None,
        })
    }

    async fn release(&mut self, n: u16, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        let released = self
            .run("release", t, async |c| c.release(n, lease).await)
            .await?;
        if released {
            Ok(())
        } else {
            Err(LeaseError::NotHolder {
                key: self.key(n),
                lease,
            })
        }
    }

    async fn revoke(&mut self, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        self.ttls.remove(&lease);
        self.run("revoke", t, async |c| c.revoke(lease).await).await
    }

    async fn load_mark(&mut self, n: u16, t: Duration) -> Result<Option<u64>, LeaseError> {
        let row = self
            .run("load mark", t, async |c| c.load_mark(n).await)
            .await?;
        match row {
            None => Err(self.request(
                "load mark",
                format!("identity {n} has no row in {}", self.target.table()).into(),
            )),
            Some(None) => Ok(None),
            Some(Some(value)) => mark(self.key(n), value).map(Some),
        }
    }

    async fn raise_mark(
        &mut self,
        n: u16,
        lease: LeaseId,
        until_ms: u64,
        t: Duration,
    ) -> Result<(), LeaseError> {
        let until = i64::try_from(until_ms).unwrap_or(i64::MAX);
        let raised = self
            .run("raise mark", t, async |c| {
                c.raise_mark(n, lease, until).await
            })
            .await?;
        if raised {
            Ok(())
        } else {
            Err(LeaseError::NotHolder {
                key: self.key(n),
                lease,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn before(lease: Option<i64>, released: bool, instance: i64) -> Before {
        Before {
            lease,
            holder: Some("h pid 1".to_owned()),
            instance: Some(instance),
            ttl_ms: Some(10_000),
            released,
        }
    }

    #[test]
    fn only_a_release_or_this_process_makes_a_hand_over_clean() {
        assert_eq!(previous(before(None, false, 1), 7), Previous::Clean);
        assert_eq!(previous(before(Some(5), true, 1), 7), Previous::Clean);
        assert_eq!(previous(before(Some(5), false, 7), 7), Previous::Clean);
        assert_eq!(
            previous(before(Some(5), false, 1), 7),
            Previous::Unclean {
                ttl: Duration::from_secs(10),
                holder: "h pid 1".to_owned()
            }
        );
        let mut hand_written = before(Some(5), false, 1);
        hand_written.ttl_ms = None;
        hand_written.instance = None;
        assert!(matches!(
            previous(hand_written, 7),
            Previous::Unclean { ttl, .. } if ttl == snowmint_lease::MAX_LEASE_TTL
        ));
    }

    #[test]
    fn marks_outside_the_format_are_damaged() {
        assert_eq!(
            mark("k".into(), 1_700_000_000_000).unwrap(),
            1_700_000_000_000
        );
        for bad in [-1, 0, i64::MAX] {
            assert!(matches!(
                mark("k".into(), bad),
                Err(LeaseError::DamagedMark { .. })
            ));
        }
    }
}
