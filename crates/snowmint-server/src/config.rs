//! The settings of `snowmint serve`: [`Config`], its identity source
//! ([`IdentitySource`], one variant per mode with that mode's settings),
//! its defaults, and the checks [`serve`](crate::serve) and the binary run
//! before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::guard::origin::{OriginError, Origins};
use crate::guard::token::{ApiToken, TokenError};
use crate::logs::LogFormat;
use crate::mint::generator::StaticError;
use crate::mint::hostname::{self, HostnameError};
use crate::mint::minter::Identity;
#[cfg(doc)]
use crate::mint::minter::Minter;
use crate::net::accept::Limits;
use crate::net::tls::{TlsError, TlsFiles};

/// Options of `snowmint serve`.
///
/// `#[non_exhaustive]`: build it with [`Config::default`] and set fields, so
/// new options (etcd TLS, ...) do not break callers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// A second listener for `/healthz`, `/readyz` and `/metrics` (which
    /// then leaves the public one); `None`: all on `listen`.
    pub admin_listen: Option<SocketAddr>,
    /// The file holding the bearer token minting and `/metrics` need;
    /// `None`: no token (a trusted network).
    pub api_token_file: Option<PathBuf>,
    /// Origins (`https://app.example.com`) whose pages may mint from their
    /// visitors' browsers; every other cross-site mint is refused (403).
    pub cors_origins: Vec<String>,
    /// Where the worker identity comes from, with that source's own
    /// settings (and no other's); default: the static identity 0/0 with its
    /// reservation in [`default_state_dir`].
    pub identity_source: IdentitySource,
    /// Connection limit and timeouts.
    pub limits: Limits,
    /// Most IDs per second one client IP may mint; `None`: no quota.
    pub client_quota: Option<std::num::NonZeroU32>,
    /// [`serve`](crate::serve) prints one line to stderr once the identity source has
    /// started: `snowmint: serving the explorer on http://ADDR/ (...)`
    /// (`https://` with `tls`; the `snowmint` binary's; scripts and tests
    /// read it).
    pub announce: bool,
    /// How the log lines are written (as [`init_logs`](crate::init_logs)
    /// was told), which the start-up lines follow: with
    /// [`LogFormat::Json`] they are log events (target `snowmint::banner`),
    /// one JSON object like every other line.
    pub log_format: LogFormat,
    /// Serve HTTPS with this certificate and key (`--tls-cert`,
    /// `--tls-key`); `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: DEFAULT_LISTEN,
            admin_listen: None,
            api_token_file: None,
            cors_origins: Vec::new(),
            identity_source: IdentitySource::Static {
                identity: Identity::default(),
                state_dir: default_state_dir(),
            },
            limits: Limits::default(),
            client_quota: None,
            announce: false,
            log_format: LogFormat::Text,
            tls: None,
        }
    }
}

/// Where the worker identity comes from: a mode of `snowmint serve`, each
/// variant with the settings of that mode only, so that a setting of
/// another mode has nowhere to go (the binary refuses such a flag where it
/// reads the flags). [`serve`](crate::serve) starts it
/// ([`Minter::start_static`], `Minter::leased` with the `etcd` feature),
/// [`Minter::ready`] says whether it can issue now and
/// [`Minter::shutdown`] ends it.
///
/// `#[non_exhaustive]`: a coordinator to come is a variant of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentitySource {
    /// `--datacenter N --worker N --state-dir DIR`: this identity, its
    /// reservation in `state_dir`.
    Static {
        /// The identity minted as.
        identity: Identity,
        /// Where its reservation file is kept.
        state_dir: PathBuf,
    },
    /// `--worker-from-hostname --state-dir DIR`: the identity of the
    /// StatefulSet pod's ordinal (`NAME-N`), otherwise as
    /// [`Static`](IdentitySource::Static).
    FromHostname {
        /// Where its reservation file is kept.
        state_dir: PathBuf,
    },
    /// `--etcd URL[,URL...]`: an identity leased from etcd (needs the
    /// `etcd` feature).
    Etcd(EtcdSettings),
    /// `--postgres URL` or `--mysql URL`: an identity leased from one table
    /// of PostgreSQL or MySQL/MariaDB (needs the `db` feature).
    Database(DbSettings),
    /// `--redis URL` (with `--redis-sentinel`/`--redis-master` for
    /// Sentinel): an identity leased from Redis (needs the `redis`
    /// feature).
    Redis(RedisSettings),
}

/// Which database a [`DbSettings`] leases from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DbKind {
    /// `--postgres URL` (directly, or through PgBouncer in transaction mode).
    Postgres,
    /// `--mysql URL` (MySQL or MariaDB).
    Mysql,
}

impl DbKind {
    /// The flag's name: `postgres`, `mysql`.
    pub fn flag(self) -> &'static str {
        match self {
            DbKind::Postgres => "postgres",
            DbKind::Mysql => "mysql",
        }
    }
}

/// What every coordinator's lease shares: its TTL (`--lease-ttl`) and the
/// datacenter it is scoped to (`--datacenter` with a coordinator). One type,
/// held by [`EtcdSettings`] and [`DbSettings`] alike.
///
/// ```
/// let lease = snowmint_server::LeaseSettings::default();
/// assert_eq!(lease.ttl, snowmint_server::DEFAULT_LEASE_TTL);
/// assert_eq!(lease.datacenter, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseSettings {
    /// TTL of the identity lease (`--lease-ttl`).
    pub ttl: Duration,
    /// Lease only the workers of this datacenter (`--datacenter` with a
    /// coordinator; one coordinator per region, each region its own
    /// datacenter); `None`: any of the 1024 identities.
    pub datacenter: Option<u8>,
}

impl Default for LeaseSettings {
    /// [`DEFAULT_LEASE_TTL`], any datacenter.
    fn default() -> LeaseSettings {
        LeaseSettings {
            ttl: DEFAULT_LEASE_TTL,
            datacenter: None,
        }
    }
}

impl LeaseSettings {
    /// The lease crate's common settings for these.
    #[cfg(any(feature = "etcd", feature = "db", feature = "redis"))]
    pub(crate) fn config(&self) -> snowmint_lease::LeaseConfig {
        let config = snowmint_lease::LeaseConfig::default().lease_ttl(self.ttl);
        match self.datacenter {
            Some(dc) => config.datacenter(dc),
            None => config,
        }
    }

    /// `, workers of datacenter N` when scoped to one, for the start line.
    pub(crate) fn scope_text(&self) -> String {
        self.datacenter
            .map(|dc| format!(", workers of datacenter {dc}"))
            .unwrap_or_default()
    }
}

/// The settings of an identity leased from a database: `--postgres` or
/// `--mysql` and the flags that only they honour.
///
/// ```
/// use snowmint_server::{DbKind, DbSettings};
///
/// let mut db = DbSettings::new(DbKind::Postgres, "postgres://snowmint@db/ids");
/// db.lease.datacenter = Some(5);
/// assert_eq!(db.table, snowmint_server::DEFAULT_DB_TABLE);
/// // Its URL may hold a password: never shown.
/// let db = DbSettings::new(DbKind::Mysql, "mysql://app:s3cr3t@db/ids");
/// assert!(!format!("{db:?}").contains("s3cr3t"));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DbSettings {
    /// Which database.
    pub kind: DbKind,
    /// Its URL (`--postgres`, `--mysql`; may hold a password: never logged).
    pub url: String,
    /// The table of the identities (`--db-table`; several clusters can
    /// share one database).
    pub table: String,
    /// The lease's TTL and datacenter scope.
    pub lease: LeaseSettings,
    /// Whether a database that may lose acknowledged commits on a crash is
    /// used all the same (`--allow-lost-commits`; see
    /// `snowmint_db::DbConfig::allow_lost_commits`).
    pub allow_lost_commits: bool,
}

impl std::fmt::Debug for DbSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named, so that a new one is not left out.
        let DbSettings {
            kind,
            url: _,
            table,
            lease,
            allow_lost_commits,
        } = self;
        f.debug_struct("DbSettings")
            .field("kind", kind)
            .field("url", &"<hidden: may hold a password>")
            .field("table", table)
            .field("lease", lease)
            .field("allow_lost_commits", allow_lost_commits)
            .finish()
    }
}

/// The database table of the identities unless told otherwise:
/// snowmint-db's [`DEFAULT_TABLE`](snowmint_db::DEFAULT_TABLE).
pub const DEFAULT_DB_TABLE: &str = snowmint_db::DEFAULT_TABLE;

impl DbSettings {
    /// This database, with the default table ([`DEFAULT_DB_TABLE`]) and TTL
    /// ([`DEFAULT_LEASE_TTL`]), any datacenter.
    pub fn new(kind: DbKind, url: impl Into<String>) -> DbSettings {
        DbSettings {
            kind,
            url: url.into(),
            table: DEFAULT_DB_TABLE.to_owned(),
            lease: LeaseSettings::default(),
            allow_lost_commits: false,
        }
    }

    /// The lease settings as the database crate takes them.
    #[cfg(feature = "db")]
    pub(crate) fn db_config(&self) -> snowmint_db::DbConfig {
        let db = match self.kind {
            DbKind::Postgres => snowmint_db::DbConfig::postgres(self.url.clone()),
            DbKind::Mysql => snowmint_db::DbConfig::mysql(self.url.clone()),
        };
        db.lease(self.lease.config())
            .table(self.table.clone())
            .allow_lost_commits(self.allow_lost_commits)
    }
}

/// The settings of an identity leased from Redis: `--redis` and the flags
/// that only it honours.
///
/// ```
/// let mut redis = snowmint_server::RedisSettings::new("redis://:s3cr3t@cache:6379/0");
/// redis.lease.datacenter = Some(5);
/// assert_eq!(redis.prefix, snowmint_server::DEFAULT_REDIS_PREFIX);
/// // Its URL may hold a password: never shown.
/// assert!(!format!("{redis:?}").contains("s3cr3t"));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisSettings {
    /// Its URL (`--redis`; `redis://` or `rediss://`; may hold a password:
    /// never logged). With Sentinel, the master's user, password, database
    /// and TLS.
    pub url: String,
    /// The sentinels' `HOST:PORT` (`--redis-sentinel`); empty: no Sentinel.
    pub sentinels: Vec<String>,
    /// The master's name Sentinel knows (`--redis-master`).
    pub master: Option<String>,
    /// Key prefix of the identities (`--redis-prefix`).
    pub prefix: String,
    /// The longest TTL declared for the prefix (`--redis-longest-ttl`).
    pub longest_ttl: Duration,
    /// Replicas that must acknowledge each write (`--redis-wait-replicas`).
    pub wait_replicas: u32,
    /// TLS to Redis: the CA certificate (PEM) Redis's must chain to
    /// (`--redis-ca`; the URL is then `rediss://`); else the system's roots.
    pub ca: Option<PathBuf>,
    /// The lease's TTL and datacenter scope.
    pub lease: LeaseSettings,
}

impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named, so that a new one is not left out.
        let RedisSettings {
            url: _,
            sentinels,
            master,
            prefix,
            longest_ttl,
            wait_replicas,
            ca,
            lease,
        } = self;
        f.debug_struct("RedisSettings")
            .field("url", &"<hidden: may hold a password>")
            .field("sentinels", sentinels)
            .field("master", master)
            .field("prefix", prefix)
            .field("longest_ttl", longest_ttl)
            .field("wait_replicas", wait_replicas)
            .field("ca", ca)
            .field("lease", lease)
            .finish()
    }
}

/// The Redis key prefix unless told otherwise.
pub const DEFAULT_REDIS_PREFIX: &str = "snowmint";
/// The longest TTL a Redis prefix declares unless told otherwise (60 s).
pub const DEFAULT_REDIS_LONGEST_TTL: Duration = Duration::from_secs(60);

impl RedisSettings {
    /// Redis at `url`, with the default prefix ([`DEFAULT_REDIS_PREFIX`]),
    /// bound ([`DEFAULT_REDIS_LONGEST_TTL`]) and TTL, any datacenter, no
    /// Sentinel, no replicas waited for.
    pub fn new(url: impl Into<String>) -> RedisSettings {
        RedisSettings {
            url: url.into(),
            sentinels: Vec::new(),
            master: None,
            prefix: DEFAULT_REDIS_PREFIX.to_owned(),
            longest_ttl: DEFAULT_REDIS_LONGEST_TTL,
            wait_replicas: 0,
            ca: None,
            lease: LeaseSettings::default(),
        }
    }

    /// The lease settings as the Redis crate takes them.
    #[cfg(feature = "redis")]
    pub(crate) fn redis_config(&self) -> snowmint_redis::RedisConfig {
        let mut redis = snowmint_redis::RedisConfig::new(self.url.clone())
            .lease(self.lease.config())
            .prefix(self.prefix.clone())
            .longest_ttl(self.longest_ttl)
            .wait_replicas(self.wait_replicas);
        if let Some(master) = &self.master {
            redis = redis.sentinel(self.sentinels.iter().cloned(), master.clone());
        }
        if let Some(ca) = &self.ca {
            redis = redis.ca_cert(ca);
        }
        redis
    }
}

/// The settings of an identity leased from etcd: `--etcd` and the flags
/// that only it honours. An empty `endpoints`, or an empty one among them,
/// is refused by [`Config::check`], never taken for static mode.
///
/// `#[non_exhaustive]`: build it with [`EtcdSettings::new`] and set fields.
///
/// ```
/// let mut etcd = snowmint_server::EtcdSettings::new(["http://127.0.0.1:2379"]);
/// etcd.lease.datacenter = Some(5);
/// assert_eq!(etcd.prefix, snowmint_server::DEFAULT_ETCD_PREFIX);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EtcdSettings {
    /// The etcd endpoints (`--etcd`).
    pub endpoints: Vec<String>,
    /// Key prefix of the identities (`--etcd-prefix`; several clusters can
    /// share one etcd).
    pub prefix: String,
    /// The lease's TTL and datacenter scope.
    pub lease: LeaseSettings,
    /// TLS to etcd: the CA that signed etcd's certificate (`--etcd-ca`);
    /// the endpoints must then be `https://` URLs.
    pub ca: Option<PathBuf>,
    /// TLS to etcd: this instance's client certificate and key
    /// (`--etcd-cert`, `--etcd-key`), for an etcd with `--client-cert-auth`.
    pub client_cert: Option<TlsFiles>,
}

impl EtcdSettings {
    /// These endpoints, with the default prefix ([`DEFAULT_ETCD_PREFIX`])
    /// and TTL ([`DEFAULT_LEASE_TTL`]), any datacenter, no TLS.
    pub fn new<I, S>(endpoints: I) -> EtcdSettings
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EtcdSettings {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: DEFAULT_ETCD_PREFIX.to_owned(),
            lease: LeaseSettings::default(),
            ca: None,
            client_cert: None,
        }
    }

    /// The lease settings as the lease crate takes them.
    #[cfg(feature = "etcd")]
    pub(crate) fn etcd_config(&self) -> snowmint_etcd::EtcdConfig {
        let mut etcd = snowmint_etcd::EtcdConfig::new(self.endpoints.iter().cloned())
            .lease(self.lease.config())
            .prefix(self.prefix.clone());
        if let Some(ca) = &self.ca {
            etcd = etcd.ca_cert(ca);
        }
        if let Some(client) = &self.client_cert {
            etcd = etcd.client_cert(&client.cert, &client.key);
        }
        etcd
    }
}

/// Every coordinator's lease TTL unless told otherwise: the lease crate's
/// [`DEFAULT_LEASE_TTL`](snowmint_lease::DEFAULT_LEASE_TTL).
pub const DEFAULT_LEASE_TTL: Duration = snowmint_lease::DEFAULT_LEASE_TTL;
/// The etcd key prefix unless told otherwise: snowmint-etcd's own
/// [`DEFAULT_PREFIX`](snowmint_etcd::DEFAULT_PREFIX) (feature `etcd`).
#[cfg(feature = "etcd")]
pub const DEFAULT_ETCD_PREFIX: &str = snowmint_etcd::DEFAULT_PREFIX;
/// The etcd key prefix unless told otherwise. This build has no `etcd`
/// feature, so it cannot lease from etcd and does not link snowmint-etcd
/// (which needs `protoc` to build); the value repeats that crate's for
/// `--help`.
#[cfg(not(feature = "etcd"))]
pub const DEFAULT_ETCD_PREFIX: &str = "/snowmint";

/// Where `snowmint serve` listens unless told otherwise: 127.0.0.1:8080.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    8080,
));

impl Config {
    /// The settings' own faults, found without touching anything but the
    /// files they name (no state directory, no etcd, no socket): a hostname
    /// without an ordinal, an invalid etcd setting (no endpoint or an empty
    /// one, TLS files included), `--etcd` in a build without the `etcd`
    /// feature, HTTPS files that cannot be used, a token file that cannot
    /// be read or is empty, a `--cors-origin` that is not an origin, the
    /// admin listener on the public address. [`serve`](crate::serve) checks
    /// again; a binary calls it first so that a bad flag is reported before
    /// it binds its listener.
    pub fn check(&self) -> Result<(), StartError> {
        if let Some(tls) = &self.tls {
            tls.server_config()?;
        }
        if let Some(path) = &self.api_token_file {
            ApiToken::load(path)?;
        }
        Origins::new(&self.cors_origins)?;
        if self.admin_listen == Some(self.listen) && self.listen.port() != 0 {
            return Err(StartError::AdminSameAsListen(self.listen));
        }
        match &self.identity_source {
            IdentitySource::Static { .. } => Ok(()),
            IdentitySource::FromHostname { .. } => {
                hostname::identity_from_hostname()?;
                Ok(())
            }
            #[cfg(feature = "etcd")]
            IdentitySource::Etcd(etcd) => etcd
                .etcd_config()
                .validate()
                .map_err(|e| StartError::Lease(snowmint_lease::LeaseError::Config(Box::new(e)))),
            #[cfg(not(feature = "etcd"))]
            IdentitySource::Etcd(_) => Err(StartError::EtcdNotBuilt),
            #[cfg(feature = "db")]
            IdentitySource::Database(db) => db
                .db_config()
                .validate()
                .map_err(|e| StartError::Lease(snowmint_lease::LeaseError::Config(Box::new(e)))),
            #[cfg(not(feature = "db"))]
            IdentitySource::Database(db) => Err(StartError::DbNotBuilt {
                flag: db.kind.flag(),
            }),
            #[cfg(feature = "redis")]
            IdentitySource::Redis(redis) => redis
                .redis_config()
                .validate()
                .map_err(|e| StartError::Lease(snowmint_lease::LeaseError::Config(Box::new(e)))),
            #[cfg(not(feature = "redis"))]
            IdentitySource::Redis(_) => Err(StartError::RedisNotBuilt),
        }
    }
}

/// `$XDG_STATE_HOME/snowmint`, else `~/.local/state/snowmint`, else
/// `./.snowmint-state`.
pub fn default_state_dir() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("XDG_STATE_HOME") {
        PathBuf::from(dir).join("snowmint")
    } else if let Some(home) = non_empty("HOME") {
        PathBuf::from(home).join(".local/state/snowmint")
    } else {
        PathBuf::from(".snowmint-state")
    }
}

/// Why [`serve`](crate::serve) could not start: a setting, the identity
/// source, or the admin listener. [`is_usage`](StartError::is_usage) tells
/// a bad setting from a failure of the machine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The hostname gives no identity.
    #[error(transparent)]
    Hostname(#[from] HostnameError),
    /// The static identity's state directory, lock or mark.
    #[error(transparent)]
    Static(#[from] StaticError),
    /// An invalid coordinator setting, or the lease session's threads.
    #[error(transparent)]
    Lease(#[from] snowmint_lease::LeaseError),
    /// The HTTPS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// `--etcd` given to a build without the `etcd` feature.
    #[error(
        "--etcd needs a snowmint built with `--features etcd` \
         (cargo run --release --features etcd -- serve --etcd URL)"
    )]
    EtcdNotBuilt,
    /// `--postgres` or `--mysql` given to a build without the `db` feature.
    #[error(
        "--{flag} needs a snowmint built with `--features db` \
         (cargo run --release --features db -- serve --{flag} URL)"
    )]
    DbNotBuilt {
        /// `postgres` or `mysql`.
        flag: &'static str,
    },
    /// `--redis` given to a build without the `redis` feature.
    #[error(
        "--redis needs a snowmint built with `--features redis` \
         (cargo run --release --features redis -- serve --redis URL)"
    )]
    RedisNotBuilt,
    /// `--api-token-file` cannot be read, is empty or holds more than a token.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// A `--cors-origin` that is not an origin.
    #[error(transparent)]
    CorsOrigin(#[from] OriginError),
    /// `--admin-listen` is the public listener's address.
    #[error(
        "admin-listen must differ from listen (both {0}): the admin listener is a second socket"
    )]
    AdminSameAsListen(std::net::SocketAddr),
    /// [`static_state`](crate::static_state) given a configuration whose
    /// identity is leased, which only [`serve`](crate::serve) starts.
    #[error(
        "static_state needs a static identity source (static or from the hostname), \
         got one leased from a coordinator: serve starts a lease"
    )]
    NotStatic,
    /// The admin listener cannot be bound.
    #[error("cannot listen on {addr} (admin-listen): {source}")]
    AdminListen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl StartError {
    /// Whether the configuration is at fault (a flag to fix: exit status 2)
    /// rather than the machine.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            StartError::Hostname(_)
                | StartError::EtcdNotBuilt
                | StartError::DbNotBuilt { .. }
                | StartError::RedisNotBuilt
                | StartError::Tls(_)
                | StartError::Token(_)
                | StartError::CorsOrigin(_)
                | StartError::NotStatic
                | StartError::AdminSameAsListen(_)
                | StartError::Lease(snowmint_lease::LeaseError::Config(_))
        )
    }
}
