//! `snowmint serve`: the explorer page and the JSON API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args as _};
use snowmint_server::{
    Config, DbKind, DbSettings, EtcdSettings, IdentitySource, LeaseSettings, RedisSettings,
};

use crate::error::{CliError, FlagError};

/// `snowmint serve`'s command line: its flags, and which of them the user
/// gave.
#[derive(Debug)]
pub struct Serve {
    args: ServeArgs,
    given: Given,
}

impl clap::FromArgMatches for Serve {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Serve, clap::Error> {
        Ok(Serve {
            args: ServeArgs::from_arg_matches(matches)?,
            given: Given::of(matches),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.args.update_from_arg_matches(matches)?;
        self.given = Given::of(matches);
        Ok(())
    }
}

impl clap::Args for Serve {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        with_shared_rules(ServeArgs::augment_args(cmd))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        with_shared_rules(ServeArgs::augment_args_for_update(cmd))
    }
}

/// What every flag of `snowmint serve` shares, written once: it can also
/// come from the environment, as `SNOWMINT_` and its name in capitals
/// (`--lease-ttl`: `SNOWMINT_LEASE_TTL`, `--etcd-ca`: `SNOWMINT_ETCD_CA`).
fn with_shared_rules(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|arg| match arg.get_long() {
        Some(long) => {
            let env = format!("SNOWMINT_{}", long.replace('-', "_").to_uppercase());
            arg.env(env)
        }
        None => arg,
    })
}

/// The flags the user gave, on the command line or in the environment (a
/// default is not given; a variable set to "" is), as a refusal quotes
/// them: `--lease-ttl 5` or `SNOWMINT_LEASE_TTL=5`.
#[derive(Debug)]
struct Given(Vec<GivenFlag>);

#[derive(Debug)]
struct GivenFlag {
    /// clap's ID: the field's name (`lease_ttl`).
    id: String,
    /// The flag's name as messages name it (`lease-ttl`).
    name: String,
    /// As given: `--lease-ttl 5`, `--worker-from-hostname` or `SNOWMINT_LEASE_TTL=5`.
    shown: String,
}

impl Given {
    fn of(matches: &ArgMatches) -> Given {
        let flags = Serve::augment_args(clap::Command::new("serve"));
        let given = flags.get_arguments().filter_map(|arg| {
            let id = arg.get_id().as_str();
            let name = arg.get_long()?;
            let value = || {
                let raw = matches.try_get_raw(id).ok().flatten().into_iter().flatten();
                let value = raw
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(",");
                if value.is_empty() {
                    r#""""#.to_owned()
                } else {
                    value
                }
            };
            let shown = match matches.value_source(id)? {
                ValueSource::CommandLine if arg.get_action().takes_values() => {
                    format!("--{name} {}", value())
                }
                ValueSource::CommandLine => format!("--{name}"),
                ValueSource::EnvVariable => {
                    format!("{}={}", arg.get_env()?.to_string_lossy(), value())
                }
                _ => return None,
            };
            Some(GivenFlag {
                id: id.to_owned(),
                name: name.to_owned(),
                shown,
            })
        });
        Given(given.collect())
    }

    fn get(&self, id: &str) -> Option<&GivenFlag> {
        self.0.iter().find(|flag| flag.id == id)
    }

    /// Refuses the first of `flags` (clap IDs, each with why) that was
    /// given beside the mode flag `mode`, which cannot honour it.
    fn refuse_with(&self, mode: &str, flags: &[(&str, &str)]) -> Result<(), CliError> {
        self.refuse_first(flags, |flag, why| {
            format!(
                "{} cannot be set with {mode}, got {}: {why}",
                flag.name, flag.shown
            )
        })
    }

    /// Refuses the first of `flags` (clap IDs, each with what it sets) that
    /// was given without the mode flag `mode`, the only one to honour it.
    fn refuse_without(&self, mode: &str, flags: &[(&str, &str)]) -> Result<(), CliError> {
        self.refuse_first(flags, |flag, what| {
            format!(
                "{} needs {mode} ({what}), got {} without it",
                flag.name, flag.shown
            )
        })
    }

    /// Refuses the first of `flags` (clap IDs, each with a note) that was
    /// given, in the words `say` makes of it and its note.
    fn refuse_first(
        &self,
        flags: &[(&str, &str)],
        say: impl FnOnce(&GivenFlag, &str) -> String,
    ) -> Result<(), CliError> {
        match flags
            .iter()
            .find_map(|(id, note)| Some((self.get(id)?, *note)))
        {
            Some((flag, note)) => Err(CliError::Usage(say(flag, note))),
            None => Ok(()),
        }
    }
}

/// Flags of `snowmint serve`; each can also come from the environment, as
/// `SNOWMINT_` and its name in capitals (`--lease-ttl`: `SNOWMINT_LEASE_TTL`;
/// `with_shared_rules` gives every flag its variable).
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value_t = snowmint_server::DEFAULT_LISTEN, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Static identity: datacenter ID (0-31) [default: 0]. With --etcd,
    /// --postgres, --mysql or --redis: lease only the 32 workers of this datacenter
    /// (one coordinator per region, each region its own datacenter)
    /// [default: any of the 1024].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = datacenter)]
    pub datacenter: Option<u8>,
    /// Static identity: worker ID (0-31) [default: 0]. Not with --etcd,
    /// --postgres, --mysql or --redis, which lease the worker.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = worker)]
    pub worker: Option<u8>,
    /// Lease the identity from etcd instead (needs the `etcd` feature).
    /// Given at all, even empty, it is etcd mode: no URL, or an empty one,
    /// is refused.
    #[arg(long, value_name = "URL[,URL...]", value_delimiter = ',')]
    pub etcd: Option<Vec<String>>,
    /// Lease the identity from PostgreSQL instead, at this libpq URL
    /// (postgres://USER:PASSWORD@HOST:PORT/DB; ?sslmode=verify-full&sslrootcert=FILE
    /// for TLS), directly or through PgBouncer in transaction mode (needs the
    /// `db` feature). Not with --etcd or --mysql.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// Lease the identity from MySQL or MariaDB instead, at this URL
    /// (mysql://USER:PASSWORD@HOST:PORT/DB; ?require_ssl=true for TLS)
    /// (needs the `db` feature). Not with --etcd or --postgres.
    #[arg(long, value_name = "URL")]
    pub mysql: Option<String>,
    /// Lease the identity from Redis instead, at this URL
    /// (redis://[USER][:PASSWORD]@HOST:PORT/DB; rediss:// for TLS) (needs
    /// the `redis` feature). With --redis-sentinel and --redis-master, the
    /// master is found through Sentinel and the URL gives its user,
    /// password, database and TLS (its host is not used). Not with --etcd,
    /// --postgres or --mysql.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// Find the Redis master through these sentinels (only with --redis and
    /// --redis-master).
    #[arg(
        long,
        value_name = "HOST:PORT[,HOST:PORT...]",
        value_delimiter = ',',
        requires = "redis_master"
    )]
    pub redis_sentinel: Option<Vec<String>>,
    /// The name of the master the sentinels watch (only with --redis and
    /// --redis-sentinel).
    #[arg(long, value_name = "NAME", requires = "redis_sentinel")]
    pub redis_master: Option<String>,
    /// Key prefix of the identities in Redis; clusters with different
    /// prefixes share one Redis without sharing identities (only with
    /// --redis).
    #[arg(long, default_value = snowmint_server::DEFAULT_REDIS_PREFIX, value_name = "PREFIX")]
    pub redis_prefix: String,
    /// The longest lease TTL declared for the prefix: after Redis lost its
    /// data (a restart, a failover), a claim waits this long before it
    /// issues; a --lease-ttl above the prefix's is refused (only with
    /// --redis).
    #[arg(long, value_name = "SECONDS", whole(2, 3600, "seconds"),
          default_value_t = snowmint_server::DEFAULT_REDIS_LONGEST_TTL.as_secs())]
    pub redis_longest_ttl: u64,
    /// After each write, wait until this many replicas acknowledged it
    /// (WAIT); fewer is a failed request (only with --redis).
    #[arg(
        long,
        value_name = "N",
        whole(0, 1000, "replicas"),
        default_value_t = 0
    )]
    pub redis_wait_replicas: u64,
    /// TLS to Redis: verify its certificate against this CA certificate
    /// (PEM) instead of the system's roots; the --redis URL is then
    /// rediss:// (only with --redis, not yet with --redis-sentinel).
    #[arg(long, value_name = "PATH")]
    pub redis_ca: Option<PathBuf>,
    /// The table of the identities (NAME or SCHEMA.NAME), created on first
    /// use if the user may (`snowmint sql coordinator postgres|mysql` prints
    /// it for a DBA); clusters with different tables share one database
    /// without sharing identities (only with --postgres or --mysql).
    #[arg(long, default_value = snowmint_server::DEFAULT_DB_TABLE, value_name = "NAME")]
    pub db_table: String,
    /// Lease from a database that may lose acknowledged commits on a crash
    /// (PostgreSQL synchronous_commit or fsync off; MySQL
    /// innodb_flush_log_at_trx_commit other than 1), which is refused
    /// otherwise: a lost claim or mark can duplicate IDs (only with
    /// --postgres or --mysql).
    #[arg(long)]
    pub allow_lost_commits: bool,
    /// TTL of the identity lease (only with --etcd, --postgres, --mysql or
    /// --redis).
    #[arg(long, value_name = "SECONDS", whole(2, 3600, "seconds"),
          default_value_t = snowmint_server::DEFAULT_LEASE_TTL.as_secs())]
    pub lease_ttl: u64,
    /// Key prefix of the identities in etcd; clusters with different
    /// prefixes share one etcd without sharing identities (only with --etcd).
    #[arg(long, default_value = snowmint_server::DEFAULT_ETCD_PREFIX, value_name = "PREFIX")]
    pub etcd_prefix: String,
    /// Static identity from a Kubernetes StatefulSet pod's ordinal: hostname
    /// NAME-N is identity N (datacenter N / 32, worker N % 32), N 0-1023.
    /// Not with --datacenter, --worker, --etcd, --postgres, --mysql or --redis.
    #[arg(long)]
    pub worker_from_hostname: bool,
    /// Where the static identity's reservation is kept (not with --etcd,
    /// --postgres, --mysql or --redis)
    /// [default: $XDG_STATE_HOME/snowmint, ~/.local/state/snowmint or ./.snowmint-state].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Most connections open at once; a new one beyond it replaces the
    /// connection idle the longest, or is closed when all are busy
    /// [default: the open-file limit (raised to its hard limit) less headroom].
    #[arg(long, value_name = "N", whole(1, 1_000_000, "connections"))]
    pub max_connections: Option<u64>,
    /// A request head must arrive in full within this time.
    #[arg(long, value_name = "SECONDS", whole(1, 3600, "seconds"),
          default_value_t = snowmint_server::DEFAULT_HEADER_TIMEOUT.as_secs())]
    pub header_timeout: u64,
    /// A keep-alive connection with no request for this long is closed.
    #[arg(long, value_name = "SECONDS", whole(1, 86_400, "seconds"),
          default_value_t = snowmint_server::DEFAULT_IDLE_TIMEOUT.as_secs())]
    pub idle_timeout: u64,
    /// On SIGTERM, requests in progress get this long to finish; then the
    /// rest are closed, the reservation is saved and the process exits 0.
    #[arg(long, value_name = "SECONDS", whole(0, 3600, "seconds"),
          default_value_t = snowmint_server::DEFAULT_SHUTDOWN_TIMEOUT.as_secs())]
    pub shutdown_timeout: u64,
    /// Most IDs per second one client IP may mint (429 with Retry-After
    /// beyond it) [default: no quota].
    #[arg(
        long,
        value_name = "IDS_PER_SECOND",
        whole(1, u64::from(u32::MAX), "IDs per second")
    )]
    pub client_quota: Option<u64>,

    // TLS: HTTPS for clients, and to etcd. Each pair comes together or not
    // at all; the files are read and checked at start (exit 2 naming the
    // flag and the path).
    /// Serve HTTPS with this certificate chain (PEM, the server's
    /// certificate first); ALPN offers h2 and http/1.1.
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// TLS to etcd: the CA certificate(s) etcd's certificate must chain to
    /// (PEM); the --etcd URLs are then https://.
    #[arg(long, value_name = "PATH")]
    pub etcd_ca: Option<PathBuf>,
    /// TLS to etcd: this instance's client certificate (PEM), for an etcd
    /// started with --client-cert-auth.
    #[arg(long, value_name = "PATH", requires = "etcd_key")]
    pub etcd_cert: Option<PathBuf>,
    /// The private key of --etcd-cert (PEM).
    #[arg(long, value_name = "PATH", requires = "etcd_cert")]
    pub etcd_key: Option<PathBuf>,
    /// Serve /healthz, /readyz and /metrics on this second address (an
    /// internal interface); /metrics then leaves the public listener.
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<SocketAddr>,
    /// A file holding one token: POST /api/v1/ids and /metrics then need
    /// `Authorization: Bearer <token>` (else 401). SIGHUP re-reads it.
    #[arg(long, value_name = "PATH")]
    pub api_token_file: Option<PathBuf>,
    /// An origin (https://app.example.com) whose pages may mint from their
    /// visitors' browsers (CORS); other cross-site mints are refused (403).
    /// Repeatable.
    #[arg(long, value_name = "ORIGIN", value_delimiter = ',')]
    pub cors_origin: Vec<String>,
    /// Log lines as text or as JSON objects (one a line, for log pipelines).
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
    /// Log lines that may wait for stderr; when it falls this far behind,
    /// new lines are dropped (counted in snowmint_log_lines_dropped_total),
    /// never waited for.
    #[arg(long, value_name = "N", whole(1, 10_000_000, "lines"),
          default_value_t = snowmint_server::DEFAULT_LOG_BUFFER_LINES as u64)]
    pub log_buffer_lines: u64,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (coloured only on a terminal).
    Text,
    /// One JSON object a line, the event's fields at the top level; every
    /// line on stderr, the start-up lines and errors included.
    Json,
}

impl From<LogFormat> for snowmint_server::LogFormat {
    fn from(format: LogFormat) -> snowmint_server::LogFormat {
        match format {
            LogFormat::Text => snowmint_server::LogFormat::Text,
            LogFormat::Json => snowmint_server::LogFormat::Json,
        }
    }
}

/// `#[arg(long, whole(min, max, unit))]`: a flag that takes a whole number
/// in `min..=max` (of `unit`). Its error names the flag, the value and the
/// range, like every other surface's; a negative number is read as a
/// number, and so refused by range, not taken for a flag.
trait WholeNumber {
    /// Makes this (`long`) flag a whole number in `min..=max`.
    fn whole(self, min: u64, max: u64, unit: &'static str) -> clap::Arg;
}

impl WholeNumber for clap::Arg {
    fn whole(self, min: u64, max: u64, unit: &'static str) -> clap::Arg {
        let flag = self
            .get_long()
            .expect("`whole` follows `long` in the flag's #[arg]")
            .to_owned();
        self.allow_negative_numbers(true)
            .value_parser(move |input: &str| parse_whole(&flag, min, max, unit, input))
    }
}

/// A whole number in `min..=max` (of `unit`) for `flag`, or why not.
fn parse_whole(flag: &str, min: u64, max: u64, unit: &str, input: &str) -> Result<u64, FlagError> {
    let text = input.trim();
    match text.parse::<i128>() {
        Ok(v) if (i128::from(min)..=i128::from(max)).contains(&v) => Ok(v as u64),
        Ok(_) => Err(FlagError(format!(
            "{flag} must be {min}..={max} ({unit}), got {text}"
        ))),
        Err(_) => Err(FlagError(format!(
            "{flag} must be a whole number {min}..={max} ({unit}), got {text:?}"
        ))),
    }
}

/// `--datacenter`, checked by the core so the message is the one every surface gives.
fn datacenter(input: &str) -> Result<u8, snowmint::Error> {
    identity_field(snowmint::Field::Datacenter, input)
}

/// `--worker`, checked like `--datacenter`.
fn worker(input: &str) -> Result<u8, snowmint::Error> {
    identity_field(snowmint::Field::Worker, input)
}

fn identity_field(field: snowmint::Field, input: &str) -> Result<u8, snowmint::Error> {
    // Both fields are 5 bits wide, so the checked value fits a u8.
    snowmint::Layout::TWITTER
        .parse_field(field, input)
        .map(|v| v as u8)
}

/// The flags only a coordinator (`--etcd`, `--postgres`, `--mysql`)
/// honours (clap IDs), with what each sets.
const LEASE_ONLY: [(&str, &str); 1] = [("lease_ttl", "the TTL of the identity lease")];

/// The flags only `--etcd` honours (clap IDs), with what each sets.
const ETCD_ONLY: [(&str, &str); 4] = [
    ("etcd_prefix", "the key prefix of the identities in etcd"),
    ("etcd_ca", "TLS to etcd"),
    ("etcd_cert", "TLS to etcd"),
    ("etcd_key", "TLS to etcd"),
];

/// The flags only `--postgres` and `--mysql` honour.
const DB_ONLY: [(&str, &str); 2] = [
    ("db_table", "the table of the identities"),
    ("allow_lost_commits", "a database's durability"),
];

/// The flags only `--redis` honours.
const REDIS_ONLY: [(&str, &str); 6] = [
    ("redis_sentinel", "the sentinels that name the Redis master"),
    ("redis_master", "the Redis master's name"),
    ("redis_prefix", "the key prefix of the identities in Redis"),
    (
        "redis_longest_ttl",
        "the longest TTL declared for the Redis prefix",
    ),
    (
        "redis_wait_replicas",
        "the Redis replicas each write waits for",
    ),
    ("redis_ca", "TLS to Redis"),
];

/// The flags a leased identity cannot honour, with why.
const NOT_WHEN_LEASED: [(&str, &str); 2] = [
    (
        "worker",
        "the worker is leased (--datacenter N leases only workers of datacenter N)",
    ),
    (
        "state_dir",
        "a leased identity keeps its mark in the coordinator, not in a state directory",
    ),
];

/// The coordinators (clap IDs and flags): one at most.
const COORDINATORS: [(&str, &str); 4] = [
    ("etcd", "--etcd"),
    ("postgres", "--postgres"),
    ("mysql", "--mysql"),
    ("redis", "--redis"),
];

/// The flags `--worker-from-hostname` cannot honour, with why.
const NOT_WITH_HOSTNAME: [(&str, &str); 6] = [
    ("datacenter", ORDINAL),
    ("worker", ORDINAL),
    ("etcd", FROM_ONE),
    ("postgres", FROM_ONE),
    ("mysql", FROM_ONE),
    ("redis", FROM_ONE),
];
/// Why `--worker-from-hostname` takes no coordinator.
const FROM_ONE: &str = "the identity comes from the hostname or from a coordinator, not both";
/// Why `--worker-from-hostname` takes no other identity flag.
const ORDINAL: &str = "the identity is the hostname's ordinal (datacenter N / 32, worker N % 32)";

impl Serve {
    fn config(&self) -> Result<Config, CliError> {
        let args = &self.args;
        let mut config = Config::default();
        config.identity_source = self.identity_source()?;
        config.listen = args.listen;
        config.admin_listen = args.admin_listen;
        config.api_token_file = args.api_token_file.clone();
        // Every origin given, an empty one too: `Config::check` refuses
        // what is not an origin.
        config.cors_origins = args.cors_origin.clone();
        let limits = &mut config.limits;
        limits.header_timeout = Duration::from_secs(args.header_timeout);
        limits.idle_timeout = Duration::from_secs(args.idle_timeout);
        limits.shutdown_timeout = Duration::from_secs(args.shutdown_timeout);
        limits.max_connections = args
            .max_connections
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        config.client_quota = args
            .client_quota
            .and_then(|q| u32::try_from(q).ok())
            .and_then(std::num::NonZeroU32::new);
        config.announce = true;
        config.log_format = args.log_format.into();
        config.tls = tls_files(&args.tls_cert, &args.tls_key);
        Ok(config)
    }

    /// The identity source the flags ask for, built once: the mode's flag
    /// picks the variant (`--worker-from-hostname`; `--etcd`, given at all,
    /// even empty, whose endpoints `Config::check` then checks; else the
    /// static identity) and the variant takes its own settings only. A flag
    /// the mode cannot honour is refused, named as the user gave it.
    fn identity_source(&self) -> Result<IdentitySource, CliError> {
        let args = &self.args;
        if args.worker_from_hostname {
            self.given
                .refuse_with("--worker-from-hostname", &NOT_WITH_HOSTNAME)?;
        }
        let mut given = COORDINATORS
            .iter()
            .filter(|(id, _)| match *id {
                "etcd" => args.etcd.is_some(),
                "postgres" => args.postgres.is_some(),
                "mysql" => args.mysql.is_some(),
                _ => args.redis.is_some(),
            })
            .map(|(_, flag)| *flag);
        let mode = given.next();
        if let Some(second) = given.next() {
            let shown = |flag: &str| {
                self.given
                    .get(flag.trim_start_matches("--"))
                    .map_or_else(|| flag.to_owned(), |g| g.shown.clone())
            };
            return Err(CliError::Usage(format!(
                "{} cannot be set with {}, got {}: the identity is leased from one coordinator",
                second.trim_start_matches("--"),
                mode.unwrap_or_default(),
                shown(second)
            )));
        }
        let Some(mode) = mode else {
            self.given
                .refuse_without("--etcd, --postgres, --mysql or --redis", &LEASE_ONLY)?;
            self.given.refuse_without("--etcd", &ETCD_ONLY)?;
            self.given
                .refuse_without("--postgres or --mysql", &DB_ONLY)?;
            self.given.refuse_without("--redis", &REDIS_ONLY)?;
            let state_dir = args
                .state_dir
                .clone()
                .unwrap_or_else(snowmint_server::default_state_dir);
            return Ok(if args.worker_from_hostname {
                IdentitySource::FromHostname { state_dir }
            } else {
                IdentitySource::Static {
                    identity: snowmint::Identity::new(
                        args.datacenter.unwrap_or(0).into(),
                        args.worker.unwrap_or(0).into(),
                    )
                    .expect("both flags are checked by the core's field ranges"),
                    state_dir,
                }
            });
        };
        self.given.refuse_with(mode, &NOT_WHEN_LEASED)?;
        let mut lease = LeaseSettings::default();
        lease.ttl = Duration::from_secs(args.lease_ttl);
        lease.datacenter = args.datacenter;
        if let Some(url) = &args.redis {
            self.given.refuse_without("--etcd", &ETCD_ONLY)?;
            self.given
                .refuse_without("--postgres or --mysql", &DB_ONLY)?;
            let mut redis = RedisSettings::new(url.clone());
            redis.prefix = args.redis_prefix.clone();
            redis.longest_ttl = Duration::from_secs(args.redis_longest_ttl);
            redis.wait_replicas = u32::try_from(args.redis_wait_replicas).unwrap_or(u32::MAX);
            redis.sentinels = args.redis_sentinel.clone().unwrap_or_default();
            redis.master = args.redis_master.clone();
            redis.ca = args.redis_ca.clone();
            redis.lease = lease;
            return Ok(IdentitySource::Redis(redis));
        }
        self.given.refuse_without("--redis", &REDIS_ONLY)?;
        let (kind, url) = match (&args.postgres, &args.mysql) {
            (Some(url), _) => (DbKind::Postgres, url),
            (None, Some(url)) => (DbKind::Mysql, url),
            (None, None) => {
                self.given
                    .refuse_without("--postgres or --mysql", &DB_ONLY)?;
                return self.etcd_source(lease);
            }
        };
        self.given.refuse_without("--etcd", &ETCD_ONLY)?;
        let mut db = DbSettings::new(kind, url.clone());
        db.table = args.db_table.clone();
        db.allow_lost_commits = args.allow_lost_commits;
        db.lease = lease;
        Ok(IdentitySource::Database(db))
    }

    /// `--etcd` and its own flags.
    fn etcd_source(&self, lease: LeaseSettings) -> Result<IdentitySource, CliError> {
        let args = &self.args;
        let endpoints = args.etcd.as_deref().unwrap_or_default();
        let mut etcd = EtcdSettings::new(endpoints.iter().cloned());
        etcd.prefix = args.etcd_prefix.clone();
        etcd.lease = lease;
        etcd.ca = args.etcd_ca.clone();
        etcd.client_cert = tls_files(&args.etcd_cert, &args.etcd_key);
        Ok(IdentitySource::Etcd(etcd))
    }
}

/// A certificate and its key, given together (clap's `requires` holds
/// each of the two to the other).
fn tls_files(cert: &Option<PathBuf>, key: &Option<PathBuf>) -> Option<snowmint_server::TlsFiles> {
    cert.as_ref()
        .zip(key.as_ref())
        .map(|(cert, key)| snowmint_server::TlsFiles::new(cert, key))
}

/// Runs the service until SIGINT or SIGTERM. The identity source, its
/// lifecycle and the shutdown order are the server library's
/// ([`snowmint_server::serve`]); a bad setting it finds exits 2. The log
/// writer ([`snowmint_server::init_logs`]) lives until the end and writes what is
/// queued before the process exits; with `--log-format json` an error that
/// ends the run is one more JSON line, not an `error:` one.
pub fn run_cli(serve: Serve) -> Result<(), CliError> {
    let config = serve.config()?;
    let mut options = snowmint_server::LogOptions::default();
    options.format = config.log_format;
    options.buffered_lines = usize::try_from(serve.args.log_buffer_lines).unwrap_or(usize::MAX);
    if let Ok(filter) = std::env::var("RUST_LOG") {
        options.filter = filter;
    }
    let guard = snowmint_server::init_logs(&options).map_err(|e| match e {
        snowmint_server::LogError::Filter { .. } => CliError::Usage(format!("RUST_LOG: {e}")),
        other => CliError::Runtime(other.into()),
    })?;
    let outcome = run(config);
    match outcome {
        Err(e) if options.format == snowmint_server::LogFormat::Json => {
            let status = match e {
                CliError::Usage(_) => 2,
                _ => 1,
            };
            tracing::error!(target: "snowmint", exit_status = status, "{e}");
            // Written before the process exits.
            drop(guard);
            Err(CliError::Reported(status))
        }
        outcome => {
            drop(guard);
            outcome
        }
    }
}

/// Checks the configuration, binds, and serves until a signal.
fn run(config: Config) -> Result<(), CliError> {
    config.check().map_err(|e| CliError::Usage(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        snowmint_server::serve(config, listener, shutdown_signal())
            .await
            .map_err(|e| match e {
                snowmint_server::RunError::Start(e) if e.is_usage() => {
                    CliError::Usage(e.to_string())
                }
                other => CliError::Runtime(other.into()),
            })
    });
    // A store write stuck in the kernel (a frozen or hung filesystem) keeps
    // its thread: do not wait for it, the shutdown deadline has passed. (The
    // kernel still holds that one thread, and so the process's exit status,
    // until the write returns.)
    runtime.shutdown_background();
    served
}

/// Resolves on ctrl-c (SIGINT) or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The refusals name flags by clap ID: a misspelt one would match no
    /// flag, and so refuse nothing.
    #[test]
    fn every_flag_a_refusal_names_is_a_flag_of_serve() {
        let serve = Serve::augment_args(clap::Command::new("serve"));
        for (id, _) in ETCD_ONLY
            .iter()
            .chain(&LEASE_ONLY)
            .chain(&DB_ONLY)
            .chain(&REDIS_ONLY)
            .chain(&NOT_WHEN_LEASED)
            .chain(&NOT_WITH_HOSTNAME)
            .chain(&COORDINATORS)
        {
            assert!(
                serve.get_arguments().any(|arg| arg.get_id() == *id),
                "{id} is no flag of serve"
            );
        }
    }

    /// `serve` parsed from `args` (no environment: each flag given here).
    fn serve(args: &[&str]) -> Result<Serve, String> {
        let cmd = Serve::augment_args(clap::Command::new("serve").no_binary_name(true));
        let matches = cmd
            .try_get_matches_from(args.iter().copied())
            .map_err(|e| e.to_string())?;
        <Serve as clap::FromArgMatches>::from_arg_matches(&matches).map_err(|e| e.to_string())
    }

    fn source(args: &[&str]) -> Result<IdentitySource, String> {
        serve(args)?.identity_source().map_err(|e| e.to_string())
    }

    #[test]
    fn redis_flags_make_a_redis_source_and_no_other_mode_takes_them() {
        let Ok(IdentitySource::Redis(redis)) = source(&[
            "--redis",
            "redis://:pw@r:6379/0",
            "--redis-sentinel",
            "s1:26379,s2:26379",
            "--redis-master",
            "ids",
            "--redis-prefix",
            "p",
            "--redis-longest-ttl",
            "30",
            "--redis-wait-replicas",
            "1",
            "--redis-ca",
            "/etc/ca.pem",
            "--datacenter",
            "4",
            "--lease-ttl",
            "5",
        ]) else {
            panic!("not a Redis source");
        };
        assert_eq!(redis.url, "redis://:pw@r:6379/0");
        assert_eq!(redis.sentinels, ["s1:26379", "s2:26379"]);
        assert_eq!(redis.master.as_deref(), Some("ids"));
        assert_eq!(redis.prefix, "p");
        assert_eq!(redis.longest_ttl, Duration::from_secs(30));
        assert_eq!(redis.wait_replicas, 1);
        assert_eq!(redis.ca, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(redis.lease.datacenter, Some(4));
        assert_eq!(redis.lease.ttl, Duration::from_secs(5));
        let Ok(IdentitySource::Redis(redis)) = source(&["--redis", "redis://r"]) else {
            panic!("not a Redis source");
        };
        assert_eq!(redis.prefix, snowmint_server::DEFAULT_REDIS_PREFIX);
        assert_eq!(redis.master, None);
        // One coordinator at most.
        let e = source(&["--redis", "redis://r", "--etcd", "http://e:2379"]).unwrap_err();
        assert!(e.starts_with("redis cannot be set with --etcd"), "{e}");
        let e = source(&["--postgres", "postgres://db/ids", "--redis", "redis://r"]).unwrap_err();
        assert!(e.starts_with("redis cannot be set with --postgres"), "{e}");
        // Redis's flags only with --redis, and the others' not with it.
        let e = source(&["--redis-prefix", "p"]).unwrap_err();
        assert_eq!(
            e,
            "redis-prefix needs --redis (the key prefix of the identities in Redis), got \
             --redis-prefix p without it"
        );
        let e = source(&["--etcd", "http://e:2379", "--redis-wait-replicas", "2"]).unwrap_err();
        assert!(e.starts_with("redis-wait-replicas needs --redis"), "{e}");
        let e = source(&["--redis", "redis://r", "--db-table", "t"]).unwrap_err();
        assert!(e.starts_with("db-table needs --postgres or --mysql"), "{e}");
        let e = source(&["--redis", "redis://r", "--etcd-prefix", "/x"]).unwrap_err();
        assert!(e.starts_with("etcd-prefix needs --etcd"), "{e}");
        let e = source(&["--redis", "redis://r", "--worker", "3"]).unwrap_err();
        assert!(e.starts_with("worker cannot be set with --redis"), "{e}");
        // Sentinel's two flags come together.
        let e = serve(&["--redis", "redis://r", "--redis-master", "ids"]).unwrap_err();
        assert!(e.contains("--redis-sentinel"), "{e}");
    }

    /// The environment variables are made from the flags' names: these are
    /// the names users and the docs know, pinned.
    #[test]
    fn every_flag_reads_snowmint_and_its_name_from_the_environment() {
        let serve = Serve::augment_args(clap::Command::new("serve"));
        let env = serve
            .get_arguments()
            .map(|arg| arg.get_env().and_then(|env| env.to_str()).unwrap_or("-"))
            .collect::<Vec<_>>();
        assert_eq!(
            env.join(" "),
            "SNOWMINT_LISTEN SNOWMINT_DATACENTER SNOWMINT_WORKER SNOWMINT_ETCD \
             SNOWMINT_POSTGRES SNOWMINT_MYSQL SNOWMINT_REDIS SNOWMINT_REDIS_SENTINEL \
             SNOWMINT_REDIS_MASTER SNOWMINT_REDIS_PREFIX SNOWMINT_REDIS_LONGEST_TTL \
             SNOWMINT_REDIS_WAIT_REPLICAS SNOWMINT_REDIS_CA SNOWMINT_DB_TABLE SNOWMINT_ALLOW_LOST_COMMITS \
             SNOWMINT_LEASE_TTL \
             SNOWMINT_ETCD_PREFIX SNOWMINT_WORKER_FROM_HOSTNAME SNOWMINT_STATE_DIR \
             SNOWMINT_MAX_CONNECTIONS SNOWMINT_HEADER_TIMEOUT SNOWMINT_IDLE_TIMEOUT \
             SNOWMINT_SHUTDOWN_TIMEOUT SNOWMINT_CLIENT_QUOTA SNOWMINT_TLS_CERT \
             SNOWMINT_TLS_KEY SNOWMINT_ETCD_CA SNOWMINT_ETCD_CERT SNOWMINT_ETCD_KEY \
             SNOWMINT_ADMIN_LISTEN SNOWMINT_API_TOKEN_FILE SNOWMINT_CORS_ORIGIN \
             SNOWMINT_LOG_FORMAT SNOWMINT_LOG_BUFFER_LINES"
        );
    }
}
