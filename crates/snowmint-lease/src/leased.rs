//! [`LeasedGenerator`]: the handle a program mints from.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use snowmint::{GeneratorMetrics, IdRange, Identity, SnowflakeId, StoreError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::bridge::{Bridge, MarkIo};
use crate::config::LeaseSource;
use crate::config::Timing;
use crate::coordinator::Coordinator;
use crate::error::LeaseError;
use crate::holder::{Holder, MintError, PendingMint};
use crate::session::{Blocking, Session};
use crate::status::{LeaseMetrics, LeaseState};

/// A generator whose worker identity is leased from a coordinator (etcd,
/// a database: any [`LeaseSource`]).
///
/// A lease session runs on a runtime of its own (one thread, so mints that
/// block their caller's threads can never starve the keep-alives): it claims
/// a free identity, builds its generator over the identity's reservation
/// mark in etcd, keeps the lease alive, fences the generator when renewals
/// stop answering, claims again when the lease or the key is lost, and
/// revokes the lease on [`shutdown`](LeasedGenerator::shutdown).
///
/// Mints are as cheap as the core generator's plus one atomic load and one
/// coarse clock read (the fence), and return an error, never an ID that
/// could repeat, while no identity is held or the fence is closed.
///
/// With etcd (crate `snowmint-etcd`, which re-exports this type):
///
/// ```text
/// let config = snowmint_etcd::EtcdConfig::new(["http://127.0.0.1:2379"])
///     .lease_ttl(std::time::Duration::from_secs(10))
///     .prefix("/snowmint");
/// let minter = snowmint_etcd::LeasedGenerator::start(config).await?; // once an identity is held
/// let id = minter.next_id()?;   // Err (never a risky ID) while fenced
/// println!("{id} as {}", minter.identity().unwrap());
/// minter.shutdown().await;      // revokes the lease: the identity is free at once
/// ```
#[derive(Debug)]
pub struct LeasedGenerator {
    holder: Arc<Holder>,
    status: Arc<Mutex<LeaseMetrics>>,
    installed: watch::Receiver<u64>,
    shutdown: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
    /// The session's runtime; dropped (without blocking) with the handle.
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    /// The datacenter it leases within, if scoped to one.
    datacenter: Option<u8>,
    /// How the mark is lowered at shutdown (a blocking write).
    blocking: Blocking,
    /// How long a graceful stop may take: the revoke tries each endpoint,
    /// a connect and a request timeout each.
    stop_within: Duration,
}

impl LeasedGenerator {
    /// Starts a lease session and waits until it holds an identity (for as
    /// long as that takes: the coordinator down, or every identity held,
    /// means waiting; wrap it in a timeout to bound it). Fails at once only
    /// for an invalid config or when the session's threads cannot start.
    pub async fn start<S: LeaseSource>(config: S) -> Result<LeasedGenerator, LeaseError> {
        let leased = LeasedGenerator::spawn(config)?;
        leased.held().await;
        Ok(leased)
    }

    /// Starts a lease session and returns at once: not ready until an
    /// identity is held (a server answers "not ready" meanwhile).
    pub fn spawn<S: LeaseSource>(config: S) -> Result<LeasedGenerator, LeaseError> {
        config.validate()?;
        let settings = config.lease().clone();
        let timing = Timing::new(settings.ttl);
        // Files (TLS) are read here, once: connections made later use what
        // they held at start.
        let coordinator = config.coordinator(timing.request)?;
        let bridge = Bridge::start(coordinator.sibling(), timing.request).map_err(|source| {
            LeaseError::Thread {
                what: "reservation thread",
                source,
            }
        })?;
        // Last, so that no error path drops a runtime inside the caller's
        // async context.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("snowmint-lease")
            .enable_all()
            .build()
            .map_err(|source| LeaseError::Thread {
                what: "runtime",
                source,
            })?;
        let seed = random_seed();
        Ok(LeasedGenerator::launch(
            settings,
            coordinator,
            bridge,
            timing,
            Launch::Runtime(runtime),
            seed,
        ))
    }

    /// For a deterministic simulation: the session runs as a task of the
    /// caller's runtime (a single-threaded one on virtual time), blocking
    /// work runs inline, marks go through `marks`, and every random choice
    /// comes from `seed`. Never for production: a caller that blocks its
    /// runtime's threads on mints would starve the keep-alives.
    #[doc(hidden)]
    pub fn simulated<C: Coordinator>(
        settings: crate::LeaseConfig,
        coordinator: C,
        marks: Arc<dyn MarkIo>,
        seed: u64,
    ) -> LeasedGenerator {
        let timing = Timing::new(settings.ttl);
        LeasedGenerator::launch(
            settings,
            coordinator,
            Bridge::over(marks),
            timing,
            Launch::Current,
            seed,
        )
    }

    fn launch<C: Coordinator>(
        settings: crate::LeaseConfig,
        coordinator: C,
        bridge: Bridge,
        timing: Timing,
        launch: Launch,
        seed: u64,
    ) -> LeasedGenerator {
        let status = Arc::new(Mutex::new(LeaseMetrics::new()));
        let holder = Arc::new(Holder::default());
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (installed_tx, installed) = watch::channel(0);
        let endpoints = u32::try_from(coordinator.endpoints())
            .unwrap_or(u32::MAX)
            .min(64);
        let datacenter = settings.datacenter;
        let blocking = match launch {
            Launch::Runtime(_) => Blocking::Threads,
            Launch::Current => Blocking::Inline,
        };
        let session = Session {
            config: settings,
            coordinator,
            timing,
            bridge,
            holder: Arc::clone(&holder),
            status: Arc::clone(&status),
            current: Arc::new(Mutex::new(None)),
            installed: installed_tx,
            instance: splitmix(seed),
            seed: splitmix(seed ^ 0x5eed),
            blocking,
        };
        let (task, runtime) = match launch {
            Launch::Runtime(runtime) => (runtime.spawn(session.run(shutdown_rx)), Some(runtime)),
            Launch::Current => (tokio::spawn(session.run(shutdown_rx)), None),
        };
        LeasedGenerator {
            holder,
            status,
            installed,
            shutdown,
            task: Mutex::new(Some(task)),
            runtime: Mutex::new(runtime),
            datacenter,
            blocking,
            // The release and revoke try each endpoint, a request timeout
            // each, after the mark write.
            stop_within: timing.request * (2 * endpoints + 1),
        }
    }

    /// Resolves once an identity has been held (at once if one is, or was).
    pub async fn held(&self) {
        let mut installed = self.installed.clone();
        let _ = installed.wait_for(|n| *n > 0).await;
    }

    /// One fresh ID, above every ID this process and every earlier holder
    /// of its identity issued. May wait as the core generator does (the next
    /// millisecond, a clock catching up, a reservation write to etcd), at
    /// most its `max_wait` plus one etcd request: call it from a thread that
    /// may block, or use [`try_next_ids`](LeasedGenerator::try_next_ids).
    #[inline]
    pub fn next_id(&self) -> Result<SnowflakeId, MintError> {
        self.holder.next_id()
    }

    /// 1..=`n` consecutive IDs (`n` in 1..=4096) of one millisecond; fewer
    /// than `n` when the millisecond has fewer left (callers loop). May wait
    /// like [`next_id`](LeasedGenerator::next_id).
    pub fn next_ids(&self, n: usize) -> Result<IdRange, MintError> {
        self.holder.next_ids(n, true)
    }

    /// As [`next_ids`](LeasedGenerator::next_ids), but never waits: where it
    /// would, it returns `MintError::Generate(GenerateError::WouldBlock)` and
    /// claims nothing. For async code that must not block its worker.
    pub fn try_next_ids(&self, n: usize) -> Result<IdRange, MintError> {
        self.holder.next_ids(n, false)
    }

    /// Mints `n` (1..=4096) IDs as runs of consecutive IDs into `sink`,
    /// issuing at once what needs no wait and returning the rest, if any, as
    /// a [`PendingMint`] to finish on a thread that may block. All of one
    /// batch come from one identity, strictly increasing.
    pub fn try_mint_ranges(
        &self,
        n: usize,
        sink: impl FnMut(IdRange),
    ) -> Result<Option<PendingMint>, MintError> {
        self.holder.try_mint_ranges(n, sink)
    }

    /// The identity held now (fenced or not), if any.
    pub fn identity(&self) -> Option<Identity> {
        self.holder.identity()
    }

    /// Whether a mint would succeed now, and as which identity; else why not
    /// (no identity, fenced, or what the generator would answer: a clock
    /// too far behind, a failing reservation write). Never waits.
    pub fn ready(&self) -> Result<Identity, MintError> {
        self.holder.ready()
    }

    /// The identity, if held and its fence open (a cheaper [`ready`]
    /// that does not ask the generator).
    ///
    /// [`ready`]: LeasedGenerator::ready
    pub fn ready_identity(&self) -> Option<Identity> {
        self.holder.ready_identity()
    }

    /// The datacenter whose workers it leases
    /// ([`LeaseConfig::datacenter`](crate::LeaseConfig::datacenter)), if scoped to one.
    pub fn datacenter_scope(&self) -> Option<u8> {
        self.datacenter
    }

    /// Whether it is waiting because every identity it may claim is held
    /// by others (all 1024, or its datacenter's 32): not ready until one is
    /// freed.
    pub fn all_taken(&self) -> bool {
        self.metrics().state == LeaseState::AllTaken
    }

    /// The current identity's generator's counters, if one is held.
    pub fn generator_metrics(&self) -> Option<GeneratorMetrics> {
        self.holder.generator_metrics()
    }

    /// Whether the current generator's mark should be written now (ahead of
    /// the IDs being issued, to retry a failing write, or to prove the store
    /// still takes writes), once per renewal: then call
    /// [`renew_reservation`](LeasedGenerator::renew_reservation) on a thread
    /// that may block. `false` while fenced. The session renews by itself
    /// too; this lets a busy caller renew ahead of need.
    pub fn renewal_due(&self) -> bool {
        self.holder.renewal_due()
    }

    /// Writes the current generator's mark if it is due (see
    /// [`renewal_due`](LeasedGenerator::renewal_due)); nothing while fenced
    /// or holding nothing. Blocks, at most the generator's store timeout.
    pub fn renew_reservation(&self) -> Result<(), StoreError> {
        self.holder.renew_reservation()
    }

    /// The fenced slot this session fills and empties, which every mint of
    /// it goes through: for a program that mints from one [`Holder`]
    /// whatever its identity source (a static identity is
    /// [`Holder::fixed`]).
    pub fn holder(&self) -> &Arc<Holder> {
        &self.holder
    }

    /// The session's state and counters now.
    pub fn metrics(&self) -> LeaseMetrics {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Graceful shutdown: stops issuing (renewals write nothing from here
    /// on), then releases the identity and revokes the lease, so the
    /// identity is free at once and its next holder issues at once. The mark
    /// is not lowered: [`LeaseStore`](crate::LeaseStore) only raises it, so
    /// it stays up to one window ahead of the last ID issued. Bounded by
    /// two request timeouts per endpoint; later mints answer
    /// [`MintError::NotHeld`]. Calling it again does nothing.
    pub async fn shutdown(&self) {
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut task) = task else {
            return;
        };
        // The mark write blocks (on the reservation thread): off this worker.
        let holder = Arc::clone(&self.holder);
        match self
            .blocking
            .run(move || holder.persist_last_issued())
            .await
        {
            Some(Ok(())) => {}
            Some(Err(e)) => tracing::warn!(
                error = %e,
                "could not lower the reservation mark at shutdown; it stays higher, which is safe"
            ),
            None => tracing::warn!("lowering the reservation mark at shutdown panicked"),
        }
        self.shutdown.send_replace(true);
        if tokio::time::timeout(self.stop_within, &mut task)
            .await
            .is_err()
        {
            tracing::warn!(
                "the lease session did not stop in time; its lease will expire by itself"
            );
            task.abort();
        }
        self.holder.clear();
    }

    /// Stops the session without revoking the lease, as a crash would: the
    /// identity stays held until the lease expires. For tests of take-over.
    pub fn abandon(self) {
        if let Some(task) = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        self.holder.clear();
        update_stopped(&self.status);
    }
}

fn update_stopped(status: &Mutex<LeaseMetrics>) {
    status.lock().unwrap_or_else(PoisonError::into_inner).state = LeaseState::Stopped;
}

impl Drop for LeasedGenerator {
    fn drop(&mut self) {
        // Never blocks, so dropping is fine inside another runtime too. A
        // session still running (no shutdown) stops without revoking: its
        // lease expires by itself.
        let runtime = self
            .runtime
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(runtime) = runtime {
            runtime.shutdown_background();
        }
    }
}

/// Where the session task runs.
enum Launch {
    /// A runtime of its own (production).
    Runtime(tokio::runtime::Runtime),
    /// The caller's (a simulation).
    Current,
}

/// A seed no other process shares: the hasher's keys are random per
/// process.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one((std::process::id(), std::time::SystemTime::now()))
}

/// splitmix64's output function: seeds that differ in one bit give
/// unrelated values.
fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
