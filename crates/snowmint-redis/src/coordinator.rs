//! [`RedisCoordinator`]: the lease protocol's [`Coordinator`] on Redis, each
//! request one Lua script ([`crate::scripts`]).
//!
//! A lease is a random 63-bit token chosen by the holder ([`grant`] sends
//! nothing): a claim binds it to an identity's record, and it lives only as
//! long as a record holds it. Every expiry is set and judged by Redis's
//! clock (`TIME`, inside the script that claims or renews); the fence (the
//! session's) is measured on the holder's monotonic clock from before the
//! request was sent. Every script reads the server's epoch (`run_id` and
//! `master_replid`) in the same step: a record written under another epoch
//! (a restart, a failover) or missing (never claimed, or lost) is
//! untrusted, and holders' requests require their record's epoch, so they
//! fence after a restart or a failover and claim again.
//!
//! [`grant`]: Coordinator::grant

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use snowmint_lease::{
    Background, Census, Claimant, Claimed, Confirmation, Coordinator, Granted, LeaseError, LeaseId,
    Pool, Previous, Renewal, SharedStatus, Source,
};

use crate::scripts::Scripts;
use snowmint_lease::redact;

const NAME: &str = "redis";

/// What the coordinator is told to accept.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) prefix: String,
    /// The session's lease TTL.
    pub(crate) ttl: Duration,
    /// The longest TTL this instance declares (at least its lease TTL).
    pub(crate) longest_ttl: Duration,
    /// Replicas that must acknowledge each write (`WAIT`).
    pub(crate) wait_replicas: u32,
}

/// Where connections go: one server, or the master Sentinel names.
#[derive(Clone)]
pub(crate) enum Target {
    Direct(Box<redis::Client>),
    Sentinel(Arc<tokio::sync::Mutex<redis::sentinel::SentinelClient>>),
}

impl Target {
    pub(crate) fn direct(client: redis::Client) -> Target {
        Target::Direct(Box::new(client))
    }

    pub(crate) fn sentinel(client: redis::sentinel::SentinelClient) -> Target {
        Target::Sentinel(Arc::new(tokio::sync::Mutex::new(client)))
    }

    async fn connect(&self, t: Duration) -> Result<MultiplexedConnection, redis::RedisError> {
        // No response timeout of the client's own: each request is bounded
        // by the session's, and a `WAIT` may take most of it.
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(t))
            .set_response_timeout(None);
        match self {
            Target::Direct(client) => {
                client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
            }
            Target::Sentinel(client) => {
                client
                    .lock()
                    .await
                    .get_async_connection_with_config(&config)
                    .await
            }
        }
    }
}

/// What the connections so far found, shared by a coordinator and its
/// siblings.
#[derive(Debug, Default)]
struct Seen {
    epoch: Option<String>,
    status: Option<SharedStatus>,
}

/// Redis as a coordinator of identities: one connection at a time (made on
/// first use and checked; dropped after any failure, so that no late answer
/// is ever taken for a newer request's).
pub struct RedisCoordinator {
    target: Target,
    conn: Option<MultiplexedConnection>,
    shown: String,
    policy: Policy,
    scripts: Arc<Scripts>,
    /// Each lease's TTL and the identities claimed under it.
    leases: HashMap<LeaseId, (Duration, Vec<u16>)>,
    seen: Arc<Mutex<Seen>>,
}

impl std::fmt::Debug for RedisCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCoordinator")
            .field("endpoint", &self.shown)
            .field("prefix", &self.policy.prefix)
            .finish_non_exhaustive()
    }
}

/// Why a request failed: a refusal of the server an operator must act on
/// (named in `/readyz`), or a request that failed.
enum Problem {
    Refused(String),
    Failed(Source),
}

impl From<redis::RedisError> for Problem {
    fn from(e: redis::RedisError) -> Problem {
        let text = redact(&e.to_string());
        for code in ["SNOWMINT_EVICTION ", "SNOWMINT_BOUND ", "SNOWMINT_REPLICA "] {
            if let Some(at) = text.find(code) {
                let why = &text[at + code.len()..];
                let why = why.split(" script: ").next().unwrap_or(why).trim_end();
                return Problem::Refused(format!("refusing Redis: {why}"));
            }
        }
        Problem::Failed(text.into())
    }
}

impl From<Source> for Problem {
    fn from(s: Source) -> Problem {
        Problem::Failed(s)
    }
}

impl RedisCoordinator {
    pub(crate) fn new(target: Target, shown: String, policy: Policy) -> RedisCoordinator {
        RedisCoordinator {
            target,
            conn: None,
            shown,
            policy,
            scripts: Arc::new(Scripts::new()),
            leases: HashMap::new(),
            seen: Arc::default(),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refusal(&self, why: Option<String>) {
        let seen = self.seen();
        if let Some(status) = &seen.status {
            snowmint_lease::update(status, |s| s.refusal = why);
        }
    }

    fn key(&self, n: u16) -> String {
        format!("{}:id:{n}", self.policy.prefix)
    }

    fn meta(&self) -> String {
        format!("{}:meta", self.policy.prefix)
    }

    fn bound_ms(&self) -> u64 {
        millis(self.policy.longest_ttl)
    }

    /// A new connection, checked: a master, without an eviction policy that
    /// may delete our keys, whose declared bound admits our TTL.
    async fn connect(&self, t: Duration) -> Result<MultiplexedConnection, Problem> {
        let mut conn = self.target.connect(t).await?;
        let (role, policy, bound, epoch): (String, String, String, String) = self
            .scripts
            .check
            .key(self.meta())
            .invoke_async(&mut conn)
            .await?;
        if role != "master" {
            return Err(Problem::Refused(format!(
                "refusing Redis: this server is a replica (role:{role}), not the master: its \
                 data may lag the master's"
            )));
        }
        if policy.starts_with("allkeys") {
            return Err(Problem::Refused(format!(
                "refusing Redis: maxmemory-policy is {policy}: Redis may evict any key, a mark \
                 or a claim among them; set maxmemory-policy to noeviction (or a volatile-* \
                 policy: snowmint sets no expiry on its keys)"
            )));
        }
        if let Ok(declared) = bound.parse::<u64>() {
            // Our own TTL, not the bound we declare, must fit.
            let own = millis(self.policy.ttl);
            if own > declared {
                let meta = self.meta();
                return Err(Problem::Refused(format!(
                    "refusing Redis: lease-ttl {own} ms is longer than the longest TTL declared \
                     for this prefix ({meta} bound_ms {declared}): lower --lease-ttl, or raise \
                     the bound: HSET {meta} bound_ms {own}"
                )));
            }
        }
        let mut seen = self.seen();
        match &seen.epoch {
            Some(old) if *old != epoch => tracing::warn!(
                old_epoch = %old,
                new_epoch = %epoch,
                "Redis's epoch changed (a restart or a failover): it may have lost writes; \
                 every identity claimed before is re-claimed as untrusted"
            ),
            None => tracing::info!(epoch = %epoch, endpoint = %self.shown, "Redis epoch"),
            _ => {}
        }
        seen.epoch = Some(epoch);
        if let Some(status) = &seen.status {
            let info = info(&seen, &self.policy.prefix);
            snowmint_lease::update(status, |s| {
                s.coordinator_info = info;
                s.refusal = None;
            });
        }
        Ok(conn)
    }

    /// Runs `op` on the connection (made first if there is none) within
    /// `t`, then `WAIT`s for replicas if it wrote and that was asked for.
    /// The connection goes back only after a success.
    async fn run<T>(
        &mut self,
        op: &'static str,
        t: Duration,
        writes: bool,
        f: impl AsyncFnOnce(&Scripts, &mut MultiplexedConnection) -> Result<T, redis::RedisError>,
    ) -> Result<T, LeaseError> {
        let scripts = Arc::clone(&self.scripts);
        let wait = self.policy.wait_replicas;
        let started = std::time::Instant::now();
        let outcome = tokio::time::timeout(t, async {
            let mut conn = match self.conn.take() {
                Some(conn) => conn,
                None => self.connect(t).await?,
            };
            let value = f(&scripts, &mut conn).await?;
            if writes && wait > 0 {
                // Half of what is left of the request's time: the answer
                // (how many acknowledged) must come back within it.
                let within = t.saturating_sub(started.elapsed()) / 2;
                let acked: i64 = redis::cmd("WAIT")
                    .arg(wait)
                    .arg(millis(within).max(1))
                    .query_async(&mut conn)
                    .await?;
                if acked < i64::from(wait) {
                    return Err(Problem::Failed(
                        format!(
                            "only {acked} of the {wait} replicas asked for acknowledged the \
                             write within {within:?} (WAIT)"
                        )
                        .into(),
                    ));
                }
            }
            self.conn = Some(conn);
            Ok(value)
        })
        .await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(Problem::Refused(why))) => {
                self.refusal(Some(why.clone()));
                Err(LeaseError::Request {
                    coordinator: NAME,
                    op,
                    source: why.into(),
                })
            }
            Ok(Err(Problem::Failed(source))) => Err(LeaseError::Request {
                coordinator: NAME,
                op,
                source,
            }),
            Err(_) => Err(LeaseError::Timeout {
                coordinator: NAME,
                op,
                after: t,
            }),
        }
    }

    fn keys_of(&self, lease: LeaseId) -> Vec<String> {
        self.leases
            .get(&lease)
            .map(|(_, ns)| ns.iter().map(|&n| self.key(n)).collect())
            .unwrap_or_default()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The coordinator's facts as label pairs.
fn info(seen: &Seen, prefix: &str) -> Vec<(&'static str, String)> {
    let mut info = vec![("prefix", prefix.to_owned())];
    if let Some(epoch) = &seen.epoch {
        info.push(("epoch", epoch.clone()));
    }
    info
}

/// A mark read back: Unix milliseconds in the format's range, or damaged.
fn mark(key: String, value: &str) -> Result<u64, LeaseError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|v| (snowmint::MIN_TIMESTAMP_MS..=snowmint::MAX_TIMESTAMP_MS).contains(v))
        .ok_or_else(|| LeaseError::DamagedMark {
            key,
            value: value.chars().take(40).collect(),
        })
}

/// What a claim replaced, as the claim script answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Before {
    pub(crate) lease: String,
    pub(crate) holder: String,
    pub(crate) instance: String,
    pub(crate) ttl_ms: String,
    pub(crate) released: String,
    pub(crate) epoch: String,
    pub(crate) bound_ms: u64,
    pub(crate) current: String,
}

/// How the last holder let go, from what the claim by `lease` replaced.
pub(crate) fn previous(before: &Before, lease: LeaseId, instance: u64, prefix: &str) -> Previous {
    if before.epoch != before.current {
        let why = if before.epoch.is_empty() {
            format!(
                "Redis has no record of this identity under prefix {prefix}: it was never \
                 claimed, or Redis lost it (a restart without persistence, a failover, a \
                 deleted key); Redis's epoch is {}",
                before.current
            )
        } else {
            format!(
                "the record was written by a Redis of epoch {}, this one is of epoch {} (a \
                 restart or a failover: writes may have been lost)",
                before.epoch, before.current
            )
        };
        return Previous::Untrusted {
            bound: Duration::from_millis(before.bound_ms),
            why,
        };
    }
    if before.lease == lease.to_string() {
        // This claim was applied before, its answer lost (a claim sent again
        // under the same lease): what it replaced then is gone, so the wait
        // is the one its record keeps.
        return Previous::Unclean {
            ttl: before.ttl_ms.parse::<u64>().map_or(
                Duration::from_millis(before.bound_ms),
                Duration::from_millis,
            ),
            holder: "an earlier holder (this claim's first answer was lost)".to_owned(),
        };
    }
    let same_instance = before.instance.parse::<u64>().ok() == Some(instance);
    if before.lease.is_empty() || before.released == "1" || same_instance {
        return Previous::Clean;
    }
    let ttl = before.ttl_ms.parse::<u64>().map_or(
        Duration::from_millis(before.bound_ms),
        Duration::from_millis,
    );
    Previous::Unclean {
        ttl,
        holder: if before.holder.is_empty() {
            "unknown".to_owned()
        } else {
            before.holder.clone()
        },
    }
}

impl Coordinator for RedisCoordinator {
    fn sibling(&self) -> RedisCoordinator {
        RedisCoordinator {
            target: self.target.clone(),
            conn: None,
            shown: self.shown.clone(),
            policy: self.policy.clone(),
            scripts: Arc::clone(&self.scripts),
            leases: HashMap::new(),
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

    /// One master decides: the script that renews is the truth.
    fn has_terms(&self) -> bool {
        false
    }

    fn scope(&self) -> String {
        format!("Redis prefix {}", self.policy.prefix)
    }

    /// Hands the status over, so the facts connections find (the epoch,
    /// a refusal) reach metrics and readiness; nothing runs.
    fn background(&self, status: SharedStatus, _t: Duration, _confirm: bool) -> Option<Background> {
        let mut seen = self.seen();
        let info = info(&seen, &self.policy.prefix);
        snowmint_lease::update(&status, |s| s.coordinator_info = info);
        seen.status = Some(status);
        None
    }

    async fn scan(&mut self, pool: Pool, t: Duration) -> Result<Census, LeaseError> {
        let ordinals: Vec<u16> = pool.ordinals().collect();
        let keys: Vec<String> = ordinals.iter().map(|&n| self.key(n)).collect();
        let answer: Vec<redis::Value> = self
            .run("scan", t, false, async |s, c| {
                let mut call = s.scan.prepare_invoke();
                for k in &keys {
                    call.key(k);
                }
                call.invoke_async(c).await
            })
            .await?;
        let mut census = Census {
            taken: HashSet::new(),
            marks: HashMap::new(),
            unclean: HashSet::new(),
        };
        for (n, row) in ordinals.iter().zip(answer.chunks(3)) {
            let [taken, unclean, m] = row else { continue };
            let int = |v: &redis::Value| matches!(v, redis::Value::Int(1));
            if int(taken) {
                census.taken.insert(*n);
            } else if int(unclean) {
                census.unclean.insert(*n);
            }
            if let Ok(text) = redis::from_redis_value_ref::<String>(m)
                && let Ok(ms) = mark(String::new(), &text)
            {
                census.marks.insert(*n, ms);
            }
        }
        Ok(census)
    }

    async fn grant(&mut self, ttl: Duration, _t: Duration) -> Result<Granted, LeaseError> {
        // 63 random bits, never 0.
        let token = RandomState::new().hash_one((std::process::id(), std::time::Instant::now()));
        let lease = i64::try_from(token >> 1).unwrap_or(i64::MAX).max(1);
        self.leases.insert(lease, (ttl, Vec::new()));
        Ok(Granted { lease, ttl })
    }

    async fn claim(
        &mut self,
        lease: LeaseId,
        n: u16,
        who: &Claimant<'_>,
        t: Duration,
    ) -> Result<Claimed, LeaseError> {
        let (key, meta, bound) = (self.key(n), self.meta(), self.bound_ms());
        let answer: Vec<String> = self
            .run("claim", t, true, async |s, c| {
                s.claim
                    .key(&key)
                    .key(&meta)
                    .arg(lease.to_string())
                    .arg(who.holder)
                    .arg(who.instance.to_string())
                    .arg(millis(who.ttl))
                    .arg(bound)
                    .invoke_async(c)
                    .await
            })
            .await?;
        match answer.as_slice() {
            [taken] if taken == "taken" => Ok(Claimed::Taken),
            [
                won,
                lease_was,
                holder,
                instance,
                ttl_ms,
                released,
                epoch,
                bound_ms,
                current,
            ] if won == "won" => {
                if let Some((_, ns)) = self.leases.get_mut(&lease)
                    && !ns.contains(&n)
                {
                    ns.push(n);
                }
                let before = Before {
                    lease: lease_was.clone(),
                    holder: holder.clone(),
                    instance: instance.clone(),
                    ttl_ms: ttl_ms.clone(),
                    released: released.clone(),
                    epoch: epoch.clone(),
                    bound_ms: bound_ms.parse().unwrap_or(bound),
                    current: current.clone(),
                };
                Ok(Claimed::Won(previous(
                    &before,
                    lease,
                    who.instance,
                    &self.policy.prefix,
                )))
            }
            other => Err(LeaseError::Request {
                coordinator: NAME,
                op: "claim",
                source: format!("unexpected answer {other:?}").into(),
            }),
        }
    }

    async fn keep_alive(&mut self, lease: LeaseId, t: Duration) -> Result<Renewal, LeaseError> {
        let ttl = self.leases.get(&lease).map(|(ttl, _)| *ttl);
        let keys = self.keys_of(lease);
        let Some(ttl) = ttl.filter(|_| !keys.is_empty()) else {
            return Ok(Renewal {
                ttl: Duration::ZERO,
                term: None,
            });
        };
        let renewed: i64 = self
            .run("keep-alive", t, true, async |s, c| {
                let mut call = s.keep_alive.prepare_invoke();
                for k in &keys {
                    call.key(k);
                }
                call.arg(lease.to_string())
                    .arg(millis(ttl))
                    .invoke_async(c)
                    .await
            })
            .await?;
        if renewed > 0 {
            Ok(Renewal { ttl, term: None })
        } else {
            self.leases.remove(&lease);
            Ok(Renewal {
                ttl: Duration::ZERO,
                term: None,
            })
        }
    }

    async fn confirm(
        &mut self,
        n: u16,
        lease: LeaseId,
        t: Duration,
    ) -> Result<Confirmation, LeaseError> {
        let key = self.key(n);
        let holds: i64 = self
            .run("confirm", t, false, async |s, c| {
                s.confirm
                    .key(&key)
                    .arg(lease.to_string())
                    .invoke_async(c)
                    .await
            })
            .await?;
        Ok(Confirmation {
            holds: holds == 1,
            term: None,
        })
    }

    async fn release(&mut self, n: u16, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        let key = self.key(n);
        let released: i64 = self
            .run("release", t, true, async |s, c| {
                s.release
                    .key(&key)
                    .arg(lease.to_string())
                    .invoke_async(c)
                    .await
            })
            .await?;
        if released == 1 {
            Ok(())
        } else {
            Err(LeaseError::NotHolder { key, lease })
        }
    }

    async fn revoke(&mut self, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        let keys = self.keys_of(lease);
        self.leases.remove(&lease);
        if keys.is_empty() {
            return Ok(());
        }
        let _: i64 = self
            .run("revoke", t, true, async |s, c| {
                let mut call = s.revoke.prepare_invoke();
                for k in &keys {
                    call.key(k);
                }
                call.arg(lease.to_string()).invoke_async(c).await
            })
            .await?;
        Ok(())
    }

    async fn load_mark(&mut self, n: u16, t: Duration) -> Result<Option<u64>, LeaseError> {
        let key = self.key(n);
        let value: Option<String> = self
            .run("load mark", t, false, async |s, c| {
                s.load_mark.key(&key).invoke_async(c).await
            })
            .await?;
        value.map(|v| mark(key, &v)).transpose()
    }

    async fn raise_mark(
        &mut self,
        n: u16,
        lease: LeaseId,
        until_ms: u64,
        t: Duration,
    ) -> Result<(), LeaseError> {
        let key = self.key(n);
        let raised: i64 = self
            .run("raise mark", t, true, async |s, c| {
                s.raise_mark
                    .key(&key)
                    .arg(lease.to_string())
                    .arg(until_ms)
                    .invoke_async(c)
                    .await
            })
            .await?;
        if raised == 1 {
            Ok(())
        } else {
            Err(LeaseError::NotHolder { key, lease })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPOCH: &str = "e294f7a9/9bd9a747";

    fn before(lease: &str, released: &str, instance: &str) -> Before {
        Before {
            lease: lease.to_owned(),
            holder: "h pid 1".to_owned(),
            instance: instance.to_owned(),
            ttl_ms: "10000".to_owned(),
            released: released.to_owned(),
            epoch: EPOCH.to_owned(),
            bound_ms: 60_000,
            current: EPOCH.to_owned(),
        }
    }

    #[test]
    fn only_a_release_or_this_process_makes_a_hand_over_clean() {
        let p = |b: Before| previous(&b, 99, 7, "snowmint");
        assert_eq!(p(before("5", "1", "1")), Previous::Clean);
        assert_eq!(p(before("5", "0", "7")), Previous::Clean);
        assert_eq!(
            p(before("5", "0", "1")),
            Previous::Unclean {
                ttl: Duration::from_secs(10),
                holder: "h pid 1".to_owned()
            }
        );
    }

    #[test]
    fn a_claim_sent_again_under_its_lease_waits_what_its_record_keeps() {
        let mut b = before("99", "0", "7");
        b.ttl_ms = "30000".to_owned();
        assert!(matches!(
            previous(&b, 99, 7, "snowmint"),
            Previous::Unclean { ttl, .. } if ttl == Duration::from_secs(30)
        ));
    }

    #[test]
    fn a_record_of_another_epoch_or_none_is_untrusted() {
        for epoch in ["other/epoch", ""] {
            for (lease, released, instance) in [("5", "1", "1"), ("5", "0", "7"), ("", "", "")] {
                let mut b = before(lease, released, instance);
                b.epoch = epoch.to_owned();
                match previous(&b, 99, 7, "ids") {
                    Previous::Untrusted { bound, why } => {
                        assert_eq!(bound, Duration::from_secs(60));
                        assert!(why.contains(EPOCH), "{why}");
                    }
                    other => panic!("{epoch:?} {lease}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn marks_outside_the_format_are_damaged() {
        assert_eq!(
            mark("k".into(), "1700000000000").unwrap(),
            1_700_000_000_000
        );
        for bad in ["-1", "0", "x", "99999999999999999999"] {
            assert!(matches!(
                mark("k".into(), bad),
                Err(LeaseError::DamagedMark { .. })
            ));
        }
    }
}
