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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use snowmint_lease::{
    Background, Census, Claimant, Claimed, Confirmation, Coordinator, Granted, LeaseError, LeaseId,
    Pool, Previous, Renewal, SharedStatus,
};

use crate::backend::{Before, Conn, ServerState, Source, Target};
use crate::table::{LAYOUT_1_MARKER, LAYOUT_MARKER};

/// How long a connection may sit idle before it is replaced rather than
/// used: below the shortest idle limit a MySQL session is given (30 s).
const IDLE_LIMIT: Duration = Duration::from_secs(15);

/// What the coordinator is told to accept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    /// The session's lease TTL: no longer than the table's
    /// `longest_ttl_ms`.
    pub(crate) ttl: Duration,
    /// Whether a server that may lose acknowledged commits on a crash is
    /// used all the same (`--allow-lost-commits`).
    pub(crate) allow_lost_commits: bool,
}

/// Why a connection's check failed: a refusal of the server or table (an
/// operator must act), or a request that failed.
enum Problem {
    Refused(String),
    Failed(Source),
}

impl Problem {
    fn into_source(self) -> Source {
        match self {
            Problem::Refused(why) => why.into(),
            Problem::Failed(source) => source,
        }
    }
}

impl From<Source> for Problem {
    fn from(source: Source) -> Problem {
        Problem::Failed(source)
    }
}

/// What the connections so far found, shared by a coordinator and its
/// siblings: the table its name resolved to (pinned by the first), and the
/// server's epoch (its change logged once).
#[derive(Debug, Default)]
struct Seen {
    table: Option<String>,
    epoch: Option<String>,
    /// The status the facts are copied to, once the session handed it over
    /// (`background`).
    status: Option<SharedStatus>,
    warned_lossy: bool,
}

/// A database as a coordinator of identities: one connection at a time
/// (made on first use, after checking the server and the table;
/// dropped after any failure, so that no late answer is ever taken for a
/// newer request's).
pub struct DbCoordinator {
    target: Target,
    /// The connection, and when it last answered.
    conn: Option<(Conn, std::time::Instant)>,
    /// Where, for logs (no password).
    shown: String,
    /// The TTL each lease was granted with.
    ttls: HashMap<LeaseId, Duration>,
    policy: Policy,
    seen: Arc<Mutex<Seen>>,
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
    pub(crate) fn new(target: Target, shown: String, policy: Policy) -> DbCoordinator {
        DbCoordinator {
            target,
            conn: None,
            shown,
            ttls: HashMap::new(),
            policy,
            seen: Arc::default(),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Checks a new connection's server and table; a refusal (a reason an
    /// operator must act on) is also told to the status, for readiness.
    async fn check(&self, conn: &mut Conn) -> Result<(), Source> {
        let outcome = self.inspect(conn).await;
        let refusal = match &outcome {
            Ok(()) => None,
            Err(Problem::Refused(why)) => Some(why.clone()),
            Err(Problem::Failed(_)) => return outcome.map_err(Problem::into_source),
        };
        let seen = self.seen();
        if let Some(status) = &seen.status {
            snowmint_lease::update(status, |s| s.refusal = refusal);
        }
        drop(seen);
        outcome.map_err(Problem::into_source)
    }

    async fn inspect(&self, conn: &mut Conn) -> Result<(), Problem> {
        let table = self.target.table().clone();
        let product = self.target.dialect().product();
        let dialect = self.target.dialect();
        let mut state = conn.state(&table).await?;
        if let Some(why) = &state.untrusted {
            return Err(Problem::Refused(format!("refusing {product}: {why}")));
        }
        self.durability(&state)?;
        self.namesakes(&state)?;
        if state.marker.is_none() {
            // Another instance may be creating it too: whichever way that
            // goes, what counts is what the table is afterwards.
            let created = conn.create().await;
            state = conn.state(&table).await?;
            self.namesakes(&state)?;
            if state.marker.is_none() {
                let why = created.err().map(|e| e.to_string()).unwrap_or_default();
                return Err(Problem::Refused(format!(
                    "table {table} does not exist and could not be created ({why}); a DBA can \
                     create it with the statements of `snowmint sql coordinator {dialect}`"
                )));
            }
        }
        if state.marker.as_ref().and_then(Option::as_deref) == Some(LAYOUT_1_MARKER) {
            // The layout before epochs: add them (another instance may be
            // doing it too; what counts is the table afterwards).
            let upgraded = conn.upgrade().await;
            state = conn.state(&table).await?;
            match &upgraded {
                Ok(()) => tracing::warn!(
                    table = %table,
                    "upgraded the coordinator table to {LAYOUT_MARKER:?}: its rows now record \
                     the server's epoch, taken as trusted from here on"
                ),
                Err(e) => tracing::warn!(table = %table, error = %e, "could not upgrade the table"),
            }
        }
        match state.marker.as_ref().and_then(Option::as_deref) {
            Some(LAYOUT_MARKER) => {}
            other => {
                return Err(Problem::Refused(format!(
                    "table {table} is not a snowmint coordinator table of this layout: its \
                     comment is {:?}, not {LAYOUT_MARKER:?}; name another table, or create \
                     this one with `snowmint sql coordinator {dialect}`",
                    other.unwrap_or(""),
                )));
            }
        }
        match state.rows {
            Some(rows) if rows == i64::from(snowmint::Identity::COUNT) => {}
            rows => {
                return Err(Problem::Refused(format!(
                    "table {table} has {} rows, not one for each of the {} identities; load \
                     the INSERT of `snowmint sql coordinator {dialect}`",
                    rows.unwrap_or(0),
                    snowmint::Identity::COUNT,
                )));
            }
        }
        let ttl_ms = millis(self.policy.ttl);
        if let Some(longest) = state.longest_ttl_ms
            && ttl_ms > longest
        {
            return Err(Problem::Refused(format!(
                "lease-ttl {} s is longer than the longest TTL table {table} declares \
                 (longest_ttl_ms {longest}): after a failover that lost commits, a claim waits \
                 that long for a holder it cannot see; lower --lease-ttl, or raise the bound: \
                 UPDATE {table} SET longest_ttl_ms = {ttl_ms}",
                self.policy.ttl.as_secs()
            )));
        }
        self.note(&state);
        Ok(())
    }

    /// Refuses a server that may lose acknowledged commits on a crash,
    /// unless told to accept it.
    fn durability(&self, state: &ServerState) -> Result<(), Problem> {
        if state.lossy.is_empty() {
            return Ok(());
        }
        let settings = state.lossy.join(", ");
        let product = self.target.dialect().product();
        if !self.policy.allow_lost_commits {
            return Err(Problem::Refused(format!(
                "refusing {product}: it may lose acknowledged commits on a crash \
                 ({settings}), and a lost claim or mark can duplicate IDs; make commits durable, \
                 or accept the risk with --allow-lost-commits"
            )));
        }
        let mut seen = self.seen();
        if !seen.warned_lossy {
            seen.warned_lossy = true;
            tracing::warn!(
                settings = %settings,
                "{product} may lose acknowledged commits on a crash; using it as told \
                 (--allow-lost-commits): a lost claim or mark can duplicate IDs"
            );
        }
        Ok(())
    }

    /// Refuses a table name that resolves to another table than it did for
    /// an earlier connection, or that has namesakes in other schemas (a
    /// role with another `search_path` would see, or create, another
    /// table: two coordinators of the same identities).
    fn namesakes(&self, state: &ServerState) -> Result<(), Problem> {
        let table = self.target.table();
        if !state.elsewhere.is_empty() {
            let others = state.elsewhere.join(", ");
            let seen = match &state.resolved {
                Some(resolved) => format!("resolves to {resolved} for this connection"),
                None => format!(
                    "resolves to no table for this connection (it would create {})",
                    state.home.as_deref().unwrap_or("one in its search_path")
                ),
            };
            return Err(Problem::Refused(format!(
                "table {table} {seen}, but {others} exists too: another role or search_path \
                 would use another table, and two tables hand out the same identities; name the \
                 one to use with --db-table SCHEMA.NAME"
            )));
        }
        if let (Some(resolved), Some(pinned)) = (&state.resolved, &self.seen().table)
            && resolved != pinned
        {
            return Err(Problem::Refused(format!(
                "table {table} resolves to {resolved} for this connection, but to {pinned} for \
                 the first: name the one to use with --db-table SCHEMA.NAME"
            )));
        }
        Ok(())
    }

    /// Keeps what this connection found: the table it resolved (the
    /// first pins it), the server's epoch (a change is logged: the
    /// database's history changed, and every row of the old epoch is
    /// untrusted).
    fn note(&self, state: &ServerState) {
        let mut seen = self.seen();
        if seen.table.is_none()
            && let Some(resolved) = &state.resolved
        {
            tracing::info!(table = %resolved, "leasing identities from table {resolved}");
            seen.table = Some(resolved.clone());
        }
        match &seen.epoch {
            Some(old) if *old != state.epoch => tracing::warn!(
                old_epoch = %old,
                new_epoch = %state.epoch,
                "the database's epoch changed: its history may have lost commits (a failover, \
                 a restore); every identity claimed before is re-claimed as untrusted"
            ),
            None => tracing::info!(epoch = %state.epoch, "database epoch"),
            _ => {}
        }
        seen.epoch = Some(state.epoch.clone());
        if let Some(status) = &seen.status {
            let info = info(&seen);
            snowmint_lease::update(status, |s| s.coordinator_info = info);
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
            // A connection idle for longer than the server may keep it
            // (MySQL's session `wait_timeout`, at least 30 s) is not tried:
            // its first request would fail.
            let mut conn = match self.conn.take() {
                Some((conn, used)) if used.elapsed() < IDLE_LIMIT => conn,
                _ => self.connect(op).await?,
            };
            let value = f(&mut conn).await.map_err(|source| LeaseError::Request {
                coordinator: name,
                op,
                source,
            })?;
            self.conn = Some((conn, std::time::Instant::now()));
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

/// The coordinator's facts as label pairs.
fn info(seen: &Seen) -> Vec<(&'static str, String)> {
    let mut info = Vec::new();
    if let Some(table) = &seen.table {
        info.push(("table", table.clone()));
    }
    if let Some(epoch) = &seen.epoch {
        info.push(("epoch", epoch.clone()));
    }
    info
}

/// How the last holder let go, from what the claim by `lease` replaced, on
/// a server of `epoch`.
fn previous(before: Before, lease: i64, instance: u64, epoch: &str) -> Previous {
    if before.epoch.as_deref() != Some(epoch) {
        let bound = u64::try_from(before.longest_ttl_ms)
            .map_or(snowmint_lease::MAX_LEASE_TTL, Duration::from_millis);
        return Previous::Untrusted {
            bound,
            why: format!(
                "the row was last written by a server of epoch {}, this one is of epoch {epoch}",
                before.epoch.as_deref().unwrap_or("unknown")
            ),
        };
    }
    if before.lease == Some(lease) {
        // This claim was applied before, its answer lost (a claim is sent
        // again under the same lease): what it replaced then is gone, so
        // the wait is the one its record keeps.
        return Previous::Unclean {
            ttl: before
                .ttl_ms
                .and_then(|ms| u64::try_from(ms).ok())
                .map_or(snowmint_lease::MAX_LEASE_TTL, Duration::from_millis),
            holder: "an earlier holder (this claim's first answer was lost)".to_owned(),
        };
    }
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
            policy: self.policy,
            seen: Arc::clone(&self.seen),
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
        let seen = self.seen();
        let table = seen
            .table
            .clone()
            .unwrap_or_else(|| self.target.table().to_string());
        format!("{} table {table}", self.target.dialect().product())
    }

    /// Hands the status over, so the facts connections find (the table,
    /// the epoch) reach metrics and readiness; nothing runs.
    fn background(&self, status: SharedStatus, _t: Duration, _confirm: bool) -> Option<Background> {
        let mut seen = self.seen();
        let info = info(&seen);
        snowmint_lease::update(&status, |s| s.coordinator_info = info);
        seen.status = Some(status);
        None
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
        let (before, epoch) = self
            .run("claim", t, async |c| {
                let before = c.claim(n, lease, &holder, instance, ttl_ms).await?;
                Ok((before, c.epoch().to_owned()))
            })
            .await?;
        Ok(match before {
            None => Claimed::Taken,
            Some(before) => Claimed::Won(previous(before, lease, who.instance, &epoch)),
        })
    }

    async fn keep_alive(&mut self, lease: LeaseId, t: Duration) -> Result<Renewal, LeaseError> {
        let ttl_ms = self.ttls.get(&lease).copied().map_or(0, millis);
        let renewed = self
            .run("keep-alive", t, async |c| c.keep_alive(lease, ttl_ms).await)
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

    const EPOCH: &str = "7642011472967116994/00000001";

    fn before(lease: Option<i64>, released: bool, instance: i64) -> Before {
        Before {
            lease,
            holder: Some("h pid 1".to_owned()),
            instance: Some(instance),
            ttl_ms: Some(10_000),
            released,
            epoch: Some(EPOCH.to_owned()),
            longest_ttl_ms: 60_000,
        }
    }

    #[test]
    fn only_a_release_or_this_process_makes_a_hand_over_clean() {
        let previous = |b| previous(b, 99, 7, EPOCH);
        assert_eq!(previous(before(None, false, 1)), Previous::Clean);
        assert_eq!(previous(before(Some(5), true, 1)), Previous::Clean);
        assert_eq!(previous(before(Some(5), false, 7)), Previous::Clean);
        assert_eq!(
            previous(before(Some(5), false, 1)),
            Previous::Unclean {
                ttl: Duration::from_secs(10),
                holder: "h pid 1".to_owned()
            }
        );
        let mut hand_written = before(Some(5), false, 1);
        hand_written.ttl_ms = None;
        hand_written.instance = None;
        assert!(matches!(
            previous(hand_written),
            Previous::Unclean { ttl, .. } if ttl == snowmint_lease::MAX_LEASE_TTL
        ));
    }

    #[test]
    fn a_claim_sent_again_under_its_lease_waits_what_its_record_keeps() {
        // The row is this lease's (the first answer was lost) and this
        // process's: not clean, but the recorded wait.
        let mut row = before(Some(99), false, 7);
        row.ttl_ms = Some(30_000);
        assert!(matches!(
            previous(row, 99, 7, EPOCH),
            Previous::Unclean { ttl, .. } if ttl == Duration::from_secs(30)
        ));
    }

    #[test]
    fn a_row_of_another_epoch_is_untrusted_whoever_left_it_however() {
        // Released, this process's own, never held: a failover may have
        // lost a later claim over each; wait the table's longest TTL.
        for (lease, released, instance) in
            [(Some(5), true, 1), (Some(5), false, 7), (None, true, 1)]
        {
            for epoch in [Some("7642011472967116994/00000002".to_owned()), None] {
                let mut row = before(lease, released, instance);
                row.epoch = epoch.clone();
                match previous(row, 99, 7, EPOCH) {
                    Previous::Untrusted { bound, why } => {
                        assert_eq!(bound, Duration::from_secs(60));
                        assert!(why.contains(EPOCH), "{why}");
                        let old = epoch.as_deref().unwrap_or("unknown");
                        assert!(why.contains(old), "{why}");
                    }
                    other => panic!("{lease:?} {released} {instance} {epoch:?}: {other:?}"),
                }
            }
        }
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
