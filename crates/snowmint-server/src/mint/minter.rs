//! The one thing the routes mint from, whatever the identity source.
//!
//! A [`Minter`] is started from the configuration's identity
//! source and has one lifecycle: [`start_static`](Minter::start_static) or
//! `start_leased` / `start_leased_db` (features `etcd`, `db`), then
//! [`ready`](Minter::ready) / mint for as long as the server runs, then
//! [`shutdown`](Minter::shutdown).
//!
//! Every mint goes through one [`Holder`], the lease crate's fenced slot,
//! whatever the source: a static identity (`--datacenter/--worker`, or
//! `--worker-from-hostname`) is a tenure whose fence never closes
//! ([`Holder::fixed`]: one [`Generator`] over a reservation file in the
//! state directory, which nobody else can hold); a leased one (etcd,
//! PostgreSQL, MySQL) is the [`snowmint_lease::LeasedGenerator`]'s holder,
//! whose session installs and fences tenures. How a mint is claimed,
//! fenced and handed over is written there once; this file keeps what the
//! server adds: the lifecycle, and errors a client may read.
//!
//! Mints never wait on an async worker thread:
//! [`try_mint_ranges`](Minter::try_mint_ranges) issues what it can without
//! waiting and hands the rest over as a [`PendingMint`] for a blocking
//! thread. [`Minter::ready`] answers whether a mint would succeed now.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use snowmint::SnowflakeId;
use snowmint_lease::{Holder, LeasedGenerator};

use crate::mint::generator::{GenerateError, Generator, IdRange, StaticError, StoreError};

pub use snowmint::{Identity, MAX_BATCH};

/// How often [`serve`](crate::serve) asks the minter to renew or probe its
/// reservation ([`Minter::renew_in_background_if_due`]): a quarter of the
/// default reservation window.
pub const KEEP_EVERY: std::time::Duration =
    std::time::Duration::from_millis(snowmint::DEFAULT_RESERVE_WINDOW_MS / 4);

/// Why a mint issued nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MintError {
    /// No identity is held (starting up, or the lease was lost).
    NotReady,
    /// Every identity the lease session may claim is held by other
    /// instances (all 1024, or the 32 workers of its datacenter); it waits
    /// for one to be freed.
    AllTaken {
        /// The datacenter it is scoped to (`--datacenter` with `--etcd`).
        datacenter: Option<u8>,
    },
    /// No identity is held because the coordinator refuses its server or
    /// table (a standby, a setting that loses commits, a table name that
    /// resolves to two tables): an operator must act. `reason` names it, in
    /// words fit for clients.
    Refused {
        /// Why.
        reason: String,
    },
    /// The identity's fence has closed: its lease may have expired.
    Fenced,
    /// `count` outside `1..=4096`.
    Count(usize),
    /// The generator refused (clock far behind, end of the timestamp range,
    /// reservation store failure).
    Generate(GenerateError),
    /// The generator refused (`error`, the clock behind) because the leased
    /// identity held was taken although its mark stood `ahead_ms` ahead of
    /// the clock: no other identity of the pool (the 1024, or the 32 of
    /// `datacenter`) was free when it was claimed.
    AheadOnly {
        /// What the generator answered.
        error: GenerateError,
        /// The identity held.
        identity: Identity,
        /// How far ahead of the clock its mark stood when it was claimed, ms.
        ahead_ms: u64,
        /// The datacenter the lease session is scoped to, if any.
        datacenter: Option<u8>,
    },
    /// The blocking part of a mint could not run (its thread panicked or
    /// the runtime is shutting down). Nothing was issued to the client.
    Interrupted,
}

impl MintError {
    /// A message safe to show to a client: no paths, no internals.
    pub fn public_message(&self) -> String {
        match self {
            MintError::NotReady => {
                "this instance holds no worker identity right now; try again later".to_owned()
            }
            MintError::AllTaken { datacenter } => format!(
                "{} are held by other instances; this instance waits for one to be freed",
                snowmint_lease::Pool::new(*datacenter)
            ),
            MintError::Refused { reason } => {
                format!("this instance holds no worker identity: {reason}")
            }
            MintError::Fenced => "this instance's worker identity lease may have expired; \
                 it issues no IDs until the lease is renewed"
                .to_owned(),
            // The core's words for the core's rule.
            MintError::Count(n) => GenerateError::Count { requested: *n }.to_string(),
            MintError::Interrupted => {
                "the mint was interrupted, so no ID was issued; try again later".to_owned()
            }
            MintError::AheadOnly {
                error,
                identity,
                ahead_ms,
                datacenter,
            } => {
                let (dc, worker) = (identity.datacenter(), identity.worker());
                let (held, others) = match datacenter {
                    Some(_) => (
                        format!("worker {worker} of datacenter {dc}"),
                        format!("no other worker of datacenter {dc}"),
                    ),
                    None => (
                        format!("worker identity {dc}/{worker}"),
                        "no other of the 1024 worker identities".to_owned(),
                    ),
                };
                format!(
                    "{error}: {held} was taken although its mark stood {ahead_ms} ms ahead of \
                     this clock, because {others} was free; try again later"
                )
            }
            MintError::Generate(e) => match e {
                // The clock's and the format's limits are worth telling.
                GenerateError::ClockBehind { .. }
                | GenerateError::ClockStalled { .. }
                | GenerateError::Timestamp(_) => format!("{e}; try again later"),
                // Store messages name paths: keep them in the log.
                GenerateError::Reservation(_) => {
                    "the reservation could not be saved, so no ID was issued; try again later"
                        .to_owned()
                }
                _ => "the generator cannot issue IDs safely right now; try again later".to_owned(),
            },
        }
    }
}

impl fmt::Display for MintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MintError::Generate(e) => write!(f, "generator: {e}"),
            other => f.write_str(&other.public_message()),
        }
    }
}

impl std::error::Error for MintError {}

impl From<GenerateError> for MintError {
    fn from(e: GenerateError) -> MintError {
        MintError::Generate(e)
    }
}

impl From<snowmint_lease::MintError> for MintError {
    fn from(e: snowmint_lease::MintError) -> MintError {
        match e {
            snowmint_lease::MintError::Fenced => MintError::Fenced,
            snowmint_lease::MintError::Count(n) => MintError::Count(n),
            snowmint_lease::MintError::Generate(e) => MintError::Generate(e),
            _ => MintError::NotReady,
        }
    }
}

/// The lease behind a leased identity's holder: readiness reasons,
/// metrics and shutdown are the session's.
#[derive(Debug)]
struct Lease {
    leased: Arc<LeasedGenerator>,
    /// The coordinator's name (`etcd`, `postgres`, `mysql`): the prefix of
    /// its lease metrics.
    coordinator: &'static str,
}

/// The identity source the routes mint from: started once, then ready
/// and minting for as long as the server runs, then shut down.
///
/// ```
/// use snowmint_server::{Minter, MintError};
///
/// let minter = Minter::empty();
/// assert!(!minter.is_ready());
/// assert_eq!(minter.mint(1), Err(MintError::NotReady));
///
/// let minter = Minter::from_generator(snowmint::Generator::new(1, 2)?);
/// let ids = minter.mint(3).unwrap();
/// assert_eq!(ids.len(), 3);
/// assert!(ids[0] < ids[1] && ids[1] < ids[2]);
/// assert_eq!((ids[0].datacenter(), ids[0].worker()), (1, 2));
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug)]
pub struct Minter {
    /// Every mint goes through it: empty (no identity), a static identity's
    /// for good, or a lease session's.
    holder: Arc<Holder>,
    /// The session that fills `holder`, if the identity is leased.
    lease: Option<Lease>,
}

impl Minter {
    /// Starts the static identity source: the generator for `identity`
    /// is built (its mark read from `state_dir`, its lock taken) and has
    /// made its start write before this returns: readiness trusts the store
    /// only once a write has succeeded. A start write that fails is logged,
    /// and the minter starts not ready; renewals retry it. Blocks on the
    /// disk (the write at most the store timeout): call it from a thread
    /// that may block. (`serve` starts the source its configuration asks
    /// for: this one, or a leased one.)
    pub fn start_static(identity: Identity, state_dir: &Path) -> Result<Arc<Minter>, StaticError> {
        let generator = crate::mint::generator::static_generator(identity, state_dir)?;
        start_write(&generator);
        Ok(Minter::from_generator(generator))
    }

    /// A minter with no identity: not ready, every mint answers
    /// [`MintError::NotReady`].
    pub fn empty() -> Arc<Minter> {
        Arc::new(Minter {
            holder: Arc::new(Holder::default()),
            lease: None,
        })
    }

    /// A static minter over `generator`, as its identity: a tenure whose
    /// fence never closes.
    pub fn from_generator(generator: Generator) -> Arc<Minter> {
        Arc::new(Minter {
            holder: Arc::new(Holder::fixed(Arc::new(generator))),
            lease: None,
        })
    }

    /// Starts the etcd identity source: a lease session over `etcd`, its
    /// generators built to probe etcd every 15 s when idle, not every
    /// second (a probe is a Raft write), so that `/readyz` turns 503 at most
    /// 30 s after etcd stops taking writes.
    /// Holds no identity yet when this returns (not ready until it does).
    #[cfg(feature = "etcd")]
    pub fn start_leased(
        etcd: snowmint_etcd::EtcdConfig,
    ) -> Result<Arc<Minter>, snowmint_etcd::EtcdError> {
        let etcd = etcd.generator(Arc::new(crate::mint::generator::leased_generator));
        Ok(Minter::leased(LeasedGenerator::spawn(etcd)?))
    }

    /// Starts the PostgreSQL or MySQL identity source: a lease session over
    /// `db`, its generators built as etcd's are (probed every 15 s when idle).
    /// Holds no identity yet when this returns (not ready until it does).
    #[cfg(feature = "db")]
    pub fn start_leased_db(
        db: snowmint_db::DbConfig,
    ) -> Result<Arc<Minter>, snowmint_lease::LeaseError> {
        let coordinator = db.dialect().name();
        let db = db.generator(Arc::new(crate::mint::generator::leased_generator));
        Ok(Minter::leased_from(
            coordinator,
            LeasedGenerator::spawn(db)?,
        ))
    }

    /// Starts the Redis identity source: a lease session over `redis`, its
    /// generators built as etcd's are (probed every 15 s when idle).
    /// Holds no identity yet when this returns (not ready until it does).
    #[cfg(feature = "redis")]
    pub fn start_leased_redis(
        redis: snowmint_redis::RedisConfig,
    ) -> Result<Arc<Minter>, snowmint_lease::LeaseError> {
        let redis = redis.generator(Arc::new(crate::mint::generator::leased_generator));
        Ok(Minter::leased_from("redis", LeasedGenerator::spawn(redis)?))
    }

    /// A minter over an etcd lease session started elsewhere.
    pub fn leased(leased: LeasedGenerator) -> Arc<Minter> {
        Minter::leased_from("etcd", leased)
    }

    /// A minter over a lease session started elsewhere, from `coordinator`
    /// (`etcd`, `postgres`, `mysql`: the prefix of its lease metrics).
    pub fn leased_from(coordinator: &'static str, leased: LeasedGenerator) -> Arc<Minter> {
        Arc::new(Minter {
            holder: Arc::clone(leased.holder()),
            lease: Some(Lease {
                leased: Arc::new(leased),
                coordinator,
            }),
        })
    }

    /// Mints `n` (1..=4096) fresh IDs, strictly increasing.
    pub fn mint(&self, n: usize) -> Result<Vec<SnowflakeId>, MintError> {
        let mut ids = Vec::with_capacity(n.min(MAX_BATCH));
        self.mint_ranges(n, |range| ids.extend(range))?;
        Ok(ids)
    }

    /// Mints `n` (1..=4096) fresh IDs as consecutive runs, handing each run
    /// to `sink` as it is reserved. On an error, runs already handed over
    /// stay issued (they are never issued again) but the caller should not
    /// use them.
    ///
    /// May block (for the clock, or a reservation write): not for an async
    /// worker thread.
    pub fn mint_ranges(&self, n: usize, mut sink: impl FnMut(IdRange)) -> Result<(), MintError> {
        match self.try_mint_ranges(n, &mut sink)? {
            None => Ok(()),
            Some(pending) => pending.finish(sink),
        }
    }

    /// As [`mint_ranges`](Minter::mint_ranges), but never waits: it issues
    /// what it can at once and returns the rest, if any, as a
    /// [`PendingMint`] to [`finish`](PendingMint::finish) on a thread that
    /// may block (`tokio::task::spawn_blocking`). The rest is minted from
    /// the same tenure, so the runs stay in increasing order.
    pub(crate) fn try_mint_ranges(
        &self,
        n: usize,
        sink: impl FnMut(IdRange),
    ) -> Result<Option<PendingMint>, MintError> {
        match self.holder.try_mint_ranges(n, sink) {
            Ok(pending) => Ok(pending.map(PendingMint)),
            Err(e) => Err(self.explain(e)),
        }
    }

    /// A holder's error in the words a client reads: for a lease, what the
    /// session knows of why (every identity taken, the coordinator refused,
    /// a mark ahead of this clock).
    fn explain(&self, e: snowmint_lease::MintError) -> MintError {
        match &self.lease {
            Some(lease) => lease.explain(e),
            None => e.into(),
        }
    }

    /// If the generator's reservation mark is due for renewal (ahead of the
    /// IDs being issued, or to retry a failing store), renews it on a
    /// blocking thread of the current tokio runtime. Call it from async
    /// code after a mint and from readiness probes. Nothing while fenced
    /// (a leased identity writes no mark then).
    ///
    /// The server also calls it every quarter window (`KEEP_EVERY`), so
    /// an idle instance probes its store at half the generator's
    /// `max_proof_age_ms` (a static identity's file every second, a leased
    /// identity's etcd every 15 s) and `/readyz` finds a store that stopped
    /// taking writes within that age.
    pub fn renew_in_background_if_due(&self) {
        // Looked at in place: most mints find nothing due, and a clone of
        // the `Arc` would touch a count every worker shares.
        if self.holder.renewal_due() {
            let holder = Arc::clone(&self.holder);
            tokio::task::spawn_blocking(move || {
                if let Err(e) = holder.renew_reservation() {
                    tracing::warn!(error = %e, "renewing the reservation mark failed");
                }
            });
        }
    }

    /// The identity held, if any (for a lease: also while fenced).
    pub fn identity(&self) -> Option<Identity> {
        self.holder.identity()
    }

    /// The current generator's counters, if one is held.
    pub fn generator_metrics(&self) -> Option<snowmint::GeneratorMetrics> {
        self.holder.generator_metrics()
    }

    /// The lease session's coordinator (`etcd`, `postgres`, `mysql`), state
    /// and counters, when the identity is leased.
    pub fn lease_metrics(&self) -> Option<(&'static str, snowmint_lease::LeaseMetrics)> {
        self.lease
            .as_ref()
            .map(|lease| (lease.coordinator, lease.leased.metrics()))
    }

    /// An identity is held and, if leased, its fence is open.
    pub fn is_ready(&self) -> bool {
        self.ready_identity().is_some()
    }

    /// Whether a mint would succeed now: the identity, or why not (none
    /// held, fenced, or what the generator would answer: a clock too far
    /// behind, a failing reservation store, the end of the format's years).
    /// Never waits.
    pub fn ready(&self) -> Result<Identity, MintError> {
        self.holder.ready().map_err(|e| self.explain(e))
    }

    /// The identity, if held and (when leased) its fence still open: one
    /// look, so the answer never mixes two tenures.
    pub fn ready_identity(&self) -> Option<Identity> {
        self.holder.ready_identity()
    }

    /// The end of the lifecycle: for a static identity, lowers the
    /// reservation file's mark to the last millisecond issued (renewals
    /// write nothing after that); for a lease, stops issuing, releases the
    /// identity and ends the lease so the identity is free at once (the
    /// coordinator's mark is not lowered: see `snowmint_lease::LeaseStore`).
    /// Call it once no mint runs any more.
    ///
    /// The write runs on a blocking thread and gives up after the store
    /// timeout (twice that if a write was in flight); a caller with a
    /// deadline of its own wraps this in `tokio::time::timeout`, as
    /// [`serve`](crate::serve) does with `--shutdown-timeout`.
    pub async fn shutdown(&self) -> Result<(), StoreError> {
        if let Some(lease) = &self.lease {
            lease.leased.shutdown().await;
            return Ok(());
        }
        let holder = Arc::clone(&self.holder);
        tokio::task::spawn_blocking(move || holder.persist_last_issued())
            .await
            .unwrap_or_else(|e| {
                Err(StoreError::new(
                    snowmint::StoreErrorKind::Other,
                    format!("the reservation write at shutdown did not run: {e}"),
                ))
            })
    }
}

impl Lease {
    /// Why a leased identity's mint would fail, in the words a client
    /// reads: every identity taken, or a clock behind a mark that stood
    /// ahead when no other identity was free, are the session's to tell.
    fn explain(&self, e: snowmint_lease::MintError) -> MintError {
        let leased = &self.leased;
        match e {
            snowmint_lease::MintError::NotHeld if leased.all_taken() => MintError::AllTaken {
                datacenter: leased.datacenter_scope(),
            },
            snowmint_lease::MintError::NotHeld if leased.metrics().refusal.is_some() => {
                MintError::Refused {
                    reason: leased.metrics().refusal.unwrap_or_default(),
                }
            }
            snowmint_lease::MintError::Generate(error @ GenerateError::ClockBehind { .. }) => {
                let metrics = leased.metrics();
                match (metrics.claimed_ahead_ms, metrics.identity) {
                    (Some(ahead_ms), Some(identity)) => MintError::AheadOnly {
                        error,
                        identity,
                        ahead_ms,
                        datacenter: leased.datacenter_scope(),
                    },
                    _ => MintError::Generate(error),
                }
            }
            other => other.into(),
        }
    }
}

/// The first write of a generator's mark, so that readiness knows whether
/// the store takes writes before the first mint needs one. Blocks (at most
/// the store timeout).
pub(crate) fn start_write(generator: &Generator) {
    if let Err(e) = generator.renew_reservation() {
        tracing::warn!(error = %e, "the reservation store does not take writes; not ready until it does");
    }
}

/// The rest of a mint that [`Minter::try_mint_ranges`] could not issue
/// without waiting: it mints from the same tenure (identity, generator,
/// fence), so the runs stay in increasing order.
#[derive(Debug)]
#[must_use = "the rest of the mint is issued only by `finish`"]
pub struct PendingMint(snowmint_lease::PendingMint);

impl PendingMint {
    /// How many IDs are still to mint.
    pub fn left(&self) -> usize {
        self.0.left()
    }

    /// Mints the rest into `sink`, waiting as the generator allows (at most
    /// its `max_wait` plus a reservation write). Blocks: call it from a
    /// blocking thread.
    pub fn finish(self, sink: impl FnMut(IdRange)) -> Result<(), MintError> {
        Ok(self.0.finish(sink)?)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn static_minter() -> Arc<Minter> {
        Minter::from_generator(Generator::new(3, 4).unwrap())
    }

    #[test]
    fn mints_across_milliseconds_in_order() {
        let minter = static_minter();
        let ids = minter.mint(4096).unwrap();
        assert_eq!(ids.len(), 4096);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let more = minter.mint(4096).unwrap();
        assert!(ids[4095] < more[0]);
        assert!(
            ids.iter()
                .all(|id| (id.datacenter(), id.worker()) == (3, 4))
        );
    }

    #[test]
    fn refuses_bad_counts_and_an_empty_source() {
        let minter = static_minter();
        assert_eq!(minter.mint(0), Err(MintError::Count(0)));
        assert_eq!(minter.mint(4097), Err(MintError::Count(4097)));
        assert!(minter.is_ready());
        let empty = Minter::empty();
        assert!(!empty.is_ready());
        assert_eq!(empty.identity(), None);
        assert_eq!(empty.mint(1), Err(MintError::NotReady));
        assert_eq!(empty.ready(), Err(MintError::NotReady));
    }

    /// A static minter as 3/4 on a manual clock.
    fn on_a_manual_clock() -> (snowmint::ManualClock, Arc<Minter>) {
        let clock = snowmint::ManualClock::new(1_700_000_000_000);
        let generator = Generator::builder(3, 4)
            .clock(clock.clone())
            .build()
            .unwrap();
        (clock, Minter::from_generator(generator))
    }

    /// The server's `PendingMint` carries the holder's rest over, in order.
    #[test]
    fn try_mint_hands_the_waiting_part_over() {
        let (clock, minter) = on_a_manual_clock();
        clock.advance(1); // past the millisecond it was built in
        let mut ids = Vec::new();
        assert!(
            minter
                .try_mint_ranges(100, |r| ids.extend(r))
                .unwrap()
                .is_none()
        );
        // 3996 left in this millisecond: the rest of 4096 must wait.
        let pending = minter
            .try_mint_ranges(4096, |r| ids.extend(r))
            .unwrap()
            .expect("the millisecond ran out");
        assert_eq!(pending.left(), 100);
        assert_eq!(ids.len(), 4096);
        assert_eq!(clock.slept(), Duration::ZERO, "nothing waited yet");
        pending.finish(|r| ids.extend(r)).unwrap();
        assert_eq!(ids.len(), 4196);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(clock.slept(), Duration::from_millis(1));
    }

    /// What the holder answers, in words a client may read.
    #[test]
    fn readiness_says_why_a_mint_would_fail() {
        let (clock, minter) = on_a_manual_clock();
        assert_eq!(minter.ready(), Ok(Identity::new(3, 4).unwrap()));
        clock.rewind(3_600_000);
        let err = minter.ready().unwrap_err();
        assert!(
            matches!(err, MintError::Generate(GenerateError::ClockBehind { .. })),
            "{err:?}"
        );
        assert!(err.public_message().contains("ms behind"), "{err}");
        clock.advance(3_600_000);
        assert!(minter.ready().is_ok());
    }
}
