//! [`LeasedGenerator`]: the handle a program mints from.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use snowmint::{Generator, IdRange, Identity, SnowflakeId};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::bridge::Bridge;
use crate::config::EtcdConfig;
use crate::error::EtcdError;
use crate::holder::{Holder, MintError, PendingMint};
use crate::keys::Keys;
use crate::ops::Conn;
use crate::session::{Session, Timing};
use crate::status::{LeaseMetrics, LeaseState};

/// A generator whose worker identity is leased from etcd.
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
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = snowmint_etcd::EtcdConfig::new(["http://127.0.0.1:2379"])
///     .lease_ttl(std::time::Duration::from_secs(10))
///     .prefix("/snowmint");
/// let minter = snowmint_etcd::LeasedGenerator::start(config).await?; // once an identity is held
/// let id = minter.next_id()?;   // Err (never a risky ID) while fenced
/// println!("{id} as {}", minter.identity().unwrap());
/// minter.shutdown().await;      // revokes the lease: the identity is free at once
/// # Ok(()) }
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
    /// How long a graceful stop may take: the revoke tries each endpoint,
    /// a connect and a request timeout each.
    stop_within: Duration,
}

impl LeasedGenerator {
    /// Starts a lease session and waits until it holds an identity (for as
    /// long as that takes: etcd down, or all 1024 identities held, means
    /// waiting; wrap it in a timeout to bound it). Fails at once only for
    /// an invalid config or when the session's threads cannot start.
    pub async fn start(config: EtcdConfig) -> Result<LeasedGenerator, EtcdError> {
        let leased = LeasedGenerator::spawn(config)?;
        leased.held().await;
        Ok(leased)
    }

    /// Starts a lease session and returns at once: not ready until an
    /// identity is held (a server answers "not ready" meanwhile).
    pub fn spawn(config: EtcdConfig) -> Result<LeasedGenerator, EtcdError> {
        config.validate()?;
        // The TLS files are read here, once: connections made later use
        // what they held at start.
        let tls = config.tls_options()?;
        let timing = Timing::new(config.lease_ttl);
        let keys = Keys::new(&config.prefix);
        let bridge = Bridge::start(
            config.endpoints.clone(),
            tls.clone(),
            keys.clone(),
            timing.request,
        )
        .map_err(|source| EtcdError::Thread {
            what: "reservation thread",
            source,
        })?;
        let status = Arc::new(Mutex::new(LeaseMetrics::new()));
        let holder = Arc::new(Holder::default());
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (installed_tx, installed) = watch::channel(0);
        let conn = Conn::new(&config.endpoints, tls, timing.request);
        let endpoints = u32::try_from(conn.len()).unwrap_or(u32::MAX).min(64);
        let datacenter = config.datacenter;
        let session = Session {
            config,
            keys,
            timing,
            bridge,
            holder: Arc::clone(&holder),
            status: Arc::clone(&status),
            current: Arc::new(Mutex::new(None)),
            installed: installed_tx,
            conn,
        };
        // Last, so that no error path drops a runtime inside the caller's
        // async context.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("snowmint-etcd-lease")
            .enable_all()
            .build()
            .map_err(|source| EtcdError::Thread {
                what: "runtime",
                source,
            })?;
        let task = runtime.spawn(session.run(shutdown_rx));
        Ok(LeasedGenerator {
            holder,
            status,
            installed,
            shutdown,
            task: Mutex::new(Some(task)),
            runtime: Mutex::new(Some(runtime)),
            datacenter,
            stop_within: timing.request * (2 * endpoints + 1),
        })
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
        self.holder.current().map(|t| t.identity)
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
    /// ([`EtcdConfig::datacenter`]), if scoped to one.
    pub fn datacenter_scope(&self) -> Option<u8> {
        self.datacenter
    }

    /// Whether it is waiting because every identity it may claim is held
    /// by others (all 1024, or its datacenter's 32): not ready until one is
    /// freed.
    pub fn all_taken(&self) -> bool {
        self.metrics().state == LeaseState::AllTaken
    }

    /// The current identity's generator, if any: for its metrics, or to
    /// renew its reservation ahead of time.
    pub fn generator(&self) -> Option<Arc<Generator>> {
        self.holder.current().map(|t| Arc::clone(&t.generator))
    }

    /// The session's state and counters now.
    pub fn metrics(&self) -> LeaseMetrics {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Graceful shutdown: stops issuing (renewals write nothing from here
    /// on), then revokes the lease, so the identity is free at once. The
    /// mark in etcd is not lowered: [`EtcdStore`](crate::EtcdStore) only
    /// raises it, so it stays up to one window ahead of the last ID issued. Bounded by
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
        match tokio::task::spawn_blocking(move || holder.persist_last_issued()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(
                error = %e,
                "could not lower the reservation mark at shutdown; it stays higher, which is safe"
            ),
            Err(_) => tracing::warn!("lowering the reservation mark at shutdown panicked"),
        }
        self.shutdown.send_replace(true);
        if tokio::time::timeout(self.stop_within, &mut task)
            .await
            .is_err()
        {
            tracing::warn!("etcd session did not stop in time; its lease will expire by itself");
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
