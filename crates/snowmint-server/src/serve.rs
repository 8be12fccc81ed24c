//! The lifecycle of `snowmint serve`: start the identity source, serve
//! both listeners until shutdown, end the identity source; the SIGHUP
//! token reload and the start-up banner.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use crate::app::{admin_app, app};
use crate::config::{Config, DbSettings, EtcdSettings, IdentitySource, RedisSettings, StartError};
use crate::guard::origin::Origins;
use crate::guard::token::ApiToken;
use crate::logs::{self, LogFormat};
use crate::mint::generator;
use crate::mint::hostname;
use crate::mint::lane::Admission;
use crate::mint::minter::{Identity, Minter};
use crate::net::accept::{self as http, Limits};
use crate::routes::state::AppState;

/// The state of a static identity source (`config.identity_source` is
/// [`IdentitySource::Static`] or [`IdentitySource::FromHostname`]): its
/// generator with the reservation in its state directory, after its start
/// write (see [`Minter::start_static`]), and the admission `config` asks
/// for. A leased source is refused ([`StartError::NotStatic`]): only
/// [`serve`] starts one. Blocks on the disk: call it before serving, or
/// from a blocking thread.
pub fn static_state(config: &Config) -> Result<AppState, StartError> {
    let (identity, state_dir) = match &config.identity_source {
        IdentitySource::Static {
            identity,
            state_dir,
        } => (*identity, state_dir),
        IdentitySource::FromHostname { state_dir } => {
            (hostname::identity_from_hostname()?, state_dir)
        }
        IdentitySource::Etcd(_) | IdentitySource::Database(_) | IdentitySource::Redis(_) => {
            return Err(StartError::NotStatic);
        }
    };
    let generator = generator::static_generator(identity, state_dir)?;
    crate::mint::minter::start_write(&generator);
    Ok(AppState::new(Minter::from_generator(generator)).with_admission(admission_for(config)))
}

/// The admission control `config` asks for.
pub(crate) fn admission_for(config: &Config) -> Admission {
    match config.client_quota {
        Some(quota) => Admission::default().with_client_quota(quota),
        None => Admission::default(),
    }
}

/// Why [`serve`] or [`run`] stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The identity source could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The reservation could not be persisted at shutdown.
    #[error("cannot persist the reservation at shutdown: {0}")]
    Persist(generator::StoreError),
}

/// `snowmint serve`: starts the identity source `config` asks for
/// (`config.identity_source`), serves [`app`] on `listener` (and
/// [`admin_app`] on `config.admin_listen`, bound here) with
/// `config.limits` until `shutdown` resolves, then ends the identity
/// source: the reservation mark is lowered to what was issued and an etcd
/// lease is revoked, so the identity is free at once. In etcd mode it
/// serves (not ready) while the lease session looks for an identity. With
/// `config.api_token_file`, SIGHUP re-reads the token.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    config.check()?;
    let tls = match &config.tls {
        Some(files) => Some(tokio_rustls::TlsAcceptor::from(
            files.server_config().map_err(StartError::from)?,
        )),
        None => None,
    };
    let token = config
        .api_token_file
        .as_ref()
        .map(ApiToken::load)
        .transpose()
        .map_err(StartError::from)?;
    let origins = Origins::new(&config.cors_origins).map_err(StartError::from)?;
    let admin = match config.admin_listen {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .map_err(|source| StartError::AdminListen { addr, source })?,
        ),
        None => None,
    };
    let minter = match &config.identity_source {
        // The static source touches the disk (lock, mark, start write):
        // not on an async worker.
        IdentitySource::Static { .. } | IdentitySource::FromHostname { .. } => {
            let config = config.clone();
            tokio::task::spawn_blocking(move || start_minter(&config))
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?
        }
        IdentitySource::Etcd(_) | IdentitySource::Database(_) | IdentitySource::Redis(_) => {
            start_minter(&config)?
        }
    };
    if config.announce {
        announce(&config, &listener, admin.as_ref(), &minter);
    }
    let mut state = AppState::new(minter)
        .with_admission(admission_for(&config))
        .with_origins(origins);
    let mut reloader = None;
    if let Some(token) = token {
        reloader = Some(tokio::spawn(reload_on_sighup(token.clone())));
        state = state.with_token(token);
    }
    let served = serve_state(
        Listeners {
            public: listener,
            admin,
        },
        state,
        config.limits,
        tls,
        shutdown,
    )
    .await;
    if let Some(reloader) = reloader {
        reloader.abort();
    }
    served
}

/// Re-reads the token file on every SIGHUP; a failed read keeps the token
/// in force and says why (never what the file holds).
async fn reload_on_sighup(token: ApiToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP; the API token will not be re-read");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            match token.reload() {
                Ok(()) => {
                    tracing::info!(path = %token.path().display(), "SIGHUP: API token re-read")
                }
                Err(e) => tracing::warn!(error = %e, "SIGHUP: the API token in force is kept"),
            }
        }
    }
    #[cfg(not(unix))]
    let _ = token;
}

/// Starts the identity source `config` asks for
/// (`config.identity_source`): the static generator is built (its mark
/// read, its lock taken) before this returns; an etcd lease session is
/// started and holds no identity yet (not ready until it does).
fn start_minter(config: &Config) -> Result<Arc<Minter>, StartError> {
    let minter = match &config.identity_source {
        IdentitySource::Static {
            identity,
            state_dir,
        } => Minter::start_static(*identity, state_dir)?,
        IdentitySource::FromHostname { state_dir } => {
            Minter::start_static(hostname::identity_from_hostname()?, state_dir)?
        }
        #[cfg(feature = "etcd")]
        IdentitySource::Etcd(etcd) => Minter::start_leased(etcd.etcd_config())?,
        #[cfg(not(feature = "etcd"))]
        IdentitySource::Etcd(_) => return Err(StartError::EtcdNotBuilt),
        #[cfg(feature = "db")]
        IdentitySource::Database(db) => Minter::start_leased_db(db.db_config())?,
        #[cfg(not(feature = "db"))]
        IdentitySource::Database(db) => {
            return Err(StartError::DbNotBuilt {
                flag: db.kind.flag(),
            });
        }
        #[cfg(feature = "redis")]
        IdentitySource::Redis(redis) => Minter::start_leased_redis(redis.redis_config())?,
        #[cfg(not(feature = "redis"))]
        IdentitySource::Redis(_) => return Err(StartError::RedisNotBuilt),
    };
    Ok(minter)
}

/// The lines `snowmint serve` prints once its identity source has started:
/// the admin listener's first (when there is one), then the public one's,
/// which scripts wait for. As text, `snowmint: ...` lines straight to
/// stderr; as JSON, log events (the same words in `message`, the address
/// and the identity as fields of their own).
fn announce(config: &Config, listener: &TcpListener, admin: Option<&TcpListener>, minter: &Minter) {
    // With TLS both listeners speak HTTPS.
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let json = config.log_format == LogFormat::Json;
    if let Some(admin) = admin {
        let addr = admin
            .local_addr()
            .ok()
            .or(config.admin_listen)
            .unwrap_or(config.listen);
        let url = format!("{scheme}://{addr}/");
        if json {
            tracing::info!(target: logs::BANNER_TARGET, %url, "admin (health, readiness, metrics) on {url}");
        } else {
            eprintln!("snowmint: admin (health, readiness, metrics) on {url}");
        }
    }
    let addr = listener.local_addr().unwrap_or(config.listen);
    let url = format!("{scheme}://{addr}/");
    match &config.identity_source {
        IdentitySource::Etcd(etcd) => announce_leased(&url, etcd, json),
        IdentitySource::Database(db) => announce_db(&url, db, json),
        IdentitySource::Redis(redis) => announce_redis(&url, redis, json),
        IdentitySource::Static { state_dir, .. } | IdentitySource::FromHostname { state_dir } => {
            announce_static(&url, minter.identity(), state_dir, json)
        }
    }
}

/// The public listener's line in etcd mode: where the identity is leased.
fn announce_leased(url: &str, etcd: &EtcdSettings, json: bool) {
    let endpoints = etcd.endpoints.join(",");
    let ttl_s = etcd.lease.ttl.as_secs();
    if json {
        tracing::info!(
            target: logs::BANNER_TARGET,
            %url,
            etcd = %endpoints,
            prefix = %etcd.prefix,
            lease_ttl_s = ttl_s,
            datacenter = etcd.lease.datacenter,
            "serving the explorer on {url} (identity leased from etcd)"
        );
    } else {
        let scope = etcd.lease.scope_text();
        eprintln!(
            "snowmint: serving the explorer on {url} (identity leased from etcd {endpoints} under {}, lease TTL {ttl_s} s{scope})",
            etcd.prefix,
        );
    }
}

/// The public listener's line in database mode: which database (never its
/// URL, which may hold a password) and table.
fn announce_db(url: &str, db: &DbSettings, json: bool) {
    let ttl_s = db.lease.ttl.as_secs();
    let kind = db.kind.flag();
    if json {
        tracing::info!(
            target: logs::BANNER_TARGET,
            %url,
            coordinator = kind,
            table = %db.table,
            lease_ttl_s = ttl_s,
            datacenter = db.lease.datacenter,
            "serving the explorer on {url} (identity leased from {kind})"
        );
    } else {
        let scope = db.lease.scope_text();
        eprintln!(
            "snowmint: serving the explorer on {url} (identity leased from {kind} table {}, lease TTL {ttl_s} s{scope})",
            db.table,
        );
    }
}

/// The public listener's line in Redis mode: the prefix and, with Sentinel,
/// the master's name (never the URL, which may hold a password).
fn announce_redis(url: &str, redis: &RedisSettings, json: bool) {
    let ttl_s = redis.lease.ttl.as_secs();
    let via = redis
        .master
        .as_ref()
        .map(|m| format!(" (Sentinel master {m})"))
        .unwrap_or_default();
    if json {
        tracing::info!(
            target: logs::BANNER_TARGET,
            %url,
            coordinator = "redis",
            prefix = %redis.prefix,
            master = redis.master.as_deref(),
            lease_ttl_s = ttl_s,
            datacenter = redis.lease.datacenter,
            "serving the explorer on {url} (identity leased from redis)"
        );
    } else {
        let scope = redis.lease.scope_text();
        eprintln!(
            "snowmint: serving the explorer on {url} (identity leased from redis{via} under prefix {}, lease TTL {ttl_s} s{scope})",
            redis.prefix,
        );
    }
}

/// The public listener's line for a static identity (a started static
/// source holds it) and its state directory.
fn announce_static(url: &str, identity: Option<Identity>, state_dir: &Path, json: bool) {
    if json {
        tracing::info!(
            target: logs::BANNER_TARGET,
            %url,
            datacenter = identity.map(|i| i.datacenter()),
            worker = identity.map(|i| i.worker()),
            state_dir = %state_dir.display(),
            "serving the explorer on {url}"
        );
    } else {
        let identity = identity.map_or_else(|| "no identity".to_owned(), |i| i.to_string());
        eprintln!(
            "snowmint: serving the explorer on {url} ({identity}, state in {})",
            state_dir.display()
        );
    }
}

/// The sockets [`run_with`] serves: the public one, and optionally one
/// for health, readiness and metrics.
#[derive(Debug)]
pub struct Listeners {
    /// The explorer, the API, and (without `admin`) `/metrics`.
    pub public: TcpListener,
    /// `/healthz`, `/readyz` and `/metrics` ([`admin_app`]).
    pub admin: Option<TcpListener>,
}

impl From<TcpListener> for Listeners {
    fn from(public: TcpListener) -> Listeners {
        Listeners {
            public,
            admin: None,
        }
    }
}

/// Serves [`app`] on `listener` with the default [`Limits`]; see
/// [`run_with`].
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    run_with(listener, state, Limits::default(), shutdown).await
}

/// Serves [`app`] on the public listener, and [`admin_app`] on the admin
/// one if any, until `shutdown` resolves (with the connection limit, the
/// timeouts and the shutdown deadline of [`Limits`], which each listener
/// keeps), then ends the state's identity source ([`Minter::shutdown`]).
pub async fn run_with(
    listeners: impl Into<Listeners>,
    state: AppState,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    serve_state(listeners.into(), state, limits, None, shutdown).await
}

/// [`run_with`], over TLS when `tls` is given (on both listeners).
async fn serve_state(
    listeners: Listeners,
    mut state: AppState,
    limits: Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let Listeners { public, admin } = listeners;
    state = state.with_admin_listener(admin.is_some());
    let minter = Arc::clone(&state.minter);
    if let Ok(addr) = public.local_addr() {
        match minter.identity() {
            Some(identity) => tracing::info!(
                %addr,
                datacenter = identity.datacenter(),
                worker = identity.worker(),
                "listening"
            ),
            None => tracing::info!(%addr, "listening; no identity held yet"),
        }
    }
    let metrics = Arc::clone(&state.metrics);
    // One shutdown for both loops.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let admin = admin.map(|listener| {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "admin listening");
        }
        http::serve(
            listener,
            admin_app(state.clone()),
            limits,
            tls.clone(),
            Arc::clone(&metrics),
            until_stopped(stopped.clone()),
        )
    });
    let public = http::serve(
        public,
        app(state),
        limits,
        tls,
        Arc::clone(&metrics),
        until_stopped(stopped),
    );
    // Renewals ahead of need and probes of an idle store, so that `/readyz`
    // finds a store that stopped taking writes (within the generator's
    // `max_proof_age_ms`).
    let keeper = tokio::spawn({
        let minter = Arc::clone(&minter);
        async move {
            let mut every = tokio::time::interval(crate::mint::minter::KEEP_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                minter.renew_in_background_if_due();
            }
        }
    });
    let stopping = Arc::new(std::sync::OnceLock::new());
    tokio::join!(
        {
            let stopping = Arc::clone(&stopping);
            async move {
                shutdown.await;
                let _ = stopping.set(Instant::now());
                let _ = stop.send(true);
            }
        },
        public,
        async move {
            if let Some(admin) = admin {
                admin.await;
            }
        },
    );
    keeper.abort();
    // The mark is what keeps a restart with the clock set back from
    // reissuing: lower it to what was issued; then free a leased identity.
    // `--shutdown-timeout` covers this too: what is left of it, at least a
    // second, so a stuck store cannot hold the process.
    let spent = stopping.get().map_or(Duration::ZERO, Instant::elapsed);
    let left = limits
        .shutdown_timeout
        .saturating_sub(spent)
        .max(Duration::from_secs(1));
    tracing::info!(deadline = ?left, "stopped serving; persisting the reservation");
    match tokio::time::timeout(left, minter.shutdown()).await {
        Ok(persisted) => persisted.map_err(RunError::Persist),
        Err(_) => Err(RunError::Persist(generator::StoreError::new(
            snowmint::StoreErrorKind::Timeout,
            format!(
                "the reservation store did not answer within the shutdown timeout \
                 ({} ms left of it); the stored mark stays where it was, at or above \
                 every issued ID",
                left.as_millis()
            ),
        ))),
    }
}
