//! What a database lease session needs to know: the database, the table,
//! and the common lease settings.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use snowmint_lease::{LeaseConfig, LeaseError, LeaseSource};

use crate::backend::Target;
use crate::coordinator::DbCoordinator;
use crate::table::{Dialect, Table};

/// Where and how to lease an identity from a database: a builder.
///
/// ```
/// use std::time::Duration;
/// use snowmint_db::DbConfig;
///
/// let config = DbConfig::postgres("postgres://snowmint@db.internal/ids")
///     .lease_ttl(Duration::from_secs(10))
///     .table("snowmint_identities");
/// assert_eq!(config.validate(), Ok(()));
/// assert_eq!(
///     config.table("bad-name").validate().unwrap_err().to_string(),
///     "db-table must be NAME or SCHEMA.NAME, each of letters, digits and _ (not first a \
///      digit), 1..=63 characters, got \"bad-name\""
/// );
/// ```
///
/// The settings every coordinator shares (`lease_ttl`, `datacenter`,
/// `holder`, `generator`, `lease` and their getters) are the lease crate's
/// ([`snowmint_lease::lease_settings`]).
#[derive(Clone)]
pub struct DbConfig {
    dialect: Dialect,
    url: String,
    table: String,
    lease: LeaseConfig,
    allow_lost_commits: bool,
}

impl fmt::Debug for DbConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbConfig")
            .field("dialect", &self.dialect)
            .field("url", &"<hidden: may hold a password>")
            .field("table", &self.table)
            .field("lease", &self.lease)
            .field("allow_lost_commits", &self.allow_lost_commits)
            .finish()
    }
}

snowmint_lease::lease_settings!(DbConfig);

impl DbConfig {
    /// PostgreSQL at a libpq URL (`postgres://user:password@host:port/db`,
    /// `?sslmode=verify-full&sslrootcert=/etc/ca.pem` for TLS; see the
    /// crate docs), directly or through PgBouncer in transaction mode.
    pub fn postgres(url: impl Into<String>) -> DbConfig {
        DbConfig::new(Dialect::Postgres, url.into())
    }

    /// MySQL or MariaDB at a URL (`mysql://user:password@host:port/db`,
    /// `?require_ssl=true` and the other TLS settings of the `mysql_async`
    /// URL for TLS).
    pub fn mysql(url: impl Into<String>) -> DbConfig {
        DbConfig::new(Dialect::Mysql, url.into())
    }

    fn new(dialect: Dialect, url: String) -> DbConfig {
        DbConfig {
            dialect,
            url,
            table: crate::DEFAULT_TABLE.to_owned(),
            lease: LeaseConfig::default(),
            allow_lost_commits: false,
        }
    }

    /// Whether to use a server that may lose acknowledged commits on a
    /// crash (PostgreSQL `synchronous_commit = off` or `fsync = off`; MySQL
    /// `innodb_flush_log_at_trx_commit` other than 1), which is refused by
    /// default: a lost claim or mark can duplicate IDs. Default: `false`.
    #[must_use]
    pub fn allow_lost_commits(mut self, allow: bool) -> DbConfig {
        self.allow_lost_commits = allow;
        self
    }

    /// Whether [`allow_lost_commits`](DbConfig::allow_lost_commits) is set.
    pub fn lost_commits_allowed(&self) -> bool {
        self.allow_lost_commits
    }

    /// The table (`NAME` or `SCHEMA.NAME`; default
    /// [`DEFAULT_TABLE`](crate::DEFAULT_TABLE)): clusters with different
    /// tables share one database without sharing identities.
    #[must_use]
    pub fn table(mut self, table: impl Into<String>) -> DbConfig {
        self.table = table.into();
        self
    }

    /// Which database.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The table, as given.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// Checks the values (and reads a root certificate the URL names); the
    /// error names the setting as the `snowmint serve` flag does.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.lease.validate().map_err(ConfigError::Lease)?;
        self.target().map(drop)
    }

    /// The connection target and how it is shown in logs.
    pub(crate) fn target(&self) -> Result<(Target, String), ConfigError> {
        let table = Table::parse(&self.table).map_err(|why| ConfigError::Table {
            why: format!("db-{why}"),
        })?;
        let flag = self.dialect.name();
        let bad = |why: String| ConfigError::Url { flag, why };
        if self.url.trim().is_empty() {
            return Err(bad(format!("must be a URL, got {:?}", self.url)));
        }
        match self.dialect {
            Dialect::Postgres => {
                #[cfg(feature = "postgres")]
                {
                    postgres_target(&self.url, table).map_err(bad)
                }
                #[cfg(not(feature = "postgres"))]
                {
                    Err(ConfigError::NotBuilt { flag })
                }
            }
            Dialect::Mysql => {
                #[cfg(feature = "mysql")]
                {
                    mysql_target(&self.url, table, self.lease.ttl()).map_err(bad)
                }
                #[cfg(not(feature = "mysql"))]
                {
                    Err(ConfigError::NotBuilt { flag })
                }
            }
        }
    }
}

#[cfg(feature = "postgres")]
fn postgres_target(url: &str, table: Table) -> Result<(Target, String), String> {
    use std::str::FromStr;

    use tokio_postgres::config::{Host, SslMode};

    use crate::tls::{PgTls, Verify};

    let asked = crate::tls::asked(url);
    let config = tokio_postgres::Config::from_str(&asked.url).map_err(|e| {
        format!(
            "is not a libpq URL ({}), got {}{}",
            DbConfig::redact(&e.to_string()),
            DbConfig::redact(url),
            encode_hint(url)
        )
    })?;
    let tls = match (config.get_ssl_mode(), asked.verify_mode) {
        (SslMode::Disable, _) => None,
        (_, Some(verify)) => Some(PgTls::new(verify, asked.root.as_deref())?),
        (_, None) if asked.root.is_some() => {
            Some(PgTls::new(Verify::Chain, asked.root.as_deref())?)
        }
        (_, None) => Some(PgTls::new(Verify::Nothing, None)?),
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    // tokio-postgres ends the password at the first `@`: the rest of a
    // password holding one would be taken for a host or database name (and
    // shown as one).
    misplaced_at(
        url,
        hosts.iter().map(String::as_str).chain(config.get_dbname()),
    )?;
    // Each host with its port (one port given serves every host, as libpq
    // reads it).
    let ports = config.get_ports();
    let port_of = |i: usize| match ports {
        [] => 5432,
        [one] => *one,
        many => many.get(i).copied().unwrap_or(5432),
    };
    let endpoints: Vec<String> = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| format!("{host}:{}", port_of(i)))
        .collect();
    let shown = format!(
        "postgres://{}/{}",
        endpoints.join(","),
        config.get_dbname().unwrap_or("")
    );
    let shown = DbConfig::redact(&shown);
    let statements = Arc::new(crate::pg::Statements::new(&table));
    Ok((
        Target::Postgres(Box::new(crate::pg::Target {
            config,
            tls,
            table,
            statements,
        })),
        shown,
    ))
}

/// The MySQL session's `wait_timeout` (seconds) for a lease TTL: the TTL,
/// at least 30 s. The server ends a session idle that long, which rolls
/// back its transaction and releases its row locks: a claimant cut off
/// without a FIN right after its `SELECT ... FOR UPDATE` holds the row that
/// long, not the server default's 8 hours. A live session never idles that
/// long: while it holds an identity it renews every third of its fence
/// window (at most TTL / 3) and writes or probes its mark as often, and
/// while it waits for one it scans at least every 12.5 s (10 s backoff,
/// 25 % jitter).
#[cfg(feature = "mysql")]
pub(crate) fn mysql_idle_limit(ttl: Duration) -> usize {
    let secs = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    usize::try_from(secs.max(30)).unwrap_or(usize::MAX)
}

#[cfg(feature = "mysql")]
fn mysql_target(url: &str, table: Table, ttl: Duration) -> Result<(Target, String), String> {
    let opts = mysql_async::Opts::from_url(url).map_err(|e| {
        format!(
            "is not a MySQL URL ({}), got {}{}",
            DbConfig::redact(&e.to_string()),
            DbConfig::redact(url),
            encode_hint(url)
        )
    })?;
    // The URL ends the authority at the first `/`: the rest of a password
    // holding one would be taken for the database name.
    misplaced_at(
        url,
        [opts.ip_or_hostname()].into_iter().chain(opts.db_name()),
    )?;
    // The session's idle limit, set on each connection (`my::connect`).
    let opts: mysql_async::Opts = mysql_async::OptsBuilder::from_opts(opts)
        .wait_timeout(Some(mysql_idle_limit(ttl)))
        .into();
    let shown = format!(
        "mysql://{}:{}/{}",
        opts.ip_or_hostname(),
        opts.tcp_port(),
        opts.db_name().unwrap_or("")
    );
    let shown = DbConfig::redact(&shown);
    let statements = Arc::new(crate::my::Statements::new(&table));
    Ok((
        Target::Mysql(crate::my::Target {
            opts,
            table,
            statements,
        }),
        shown,
    ))
}

impl DbConfig {
    /// `text` (a URL, a connection string, or a message that quotes one)
    /// fit to be shown: every password replaced by `***`, whatever it
    /// holds.
    ///
    /// Hidden: in a URL (`scheme://user:password@host...`), everything from
    /// the first `:` after the scheme to the *last* `@` of the text, so a
    /// password holding `/`, `?`, `#`, `@`, `:` or percent-escapes is
    /// hidden whole however a driver would have cut the URL (without a
    /// scheme, the same from the start); and the value of any parameter
    /// whose name holds `pass`, `pwd`, `secret` or `token` (`password=` in
    /// a PostgreSQL `key=value` string, `?password=` or `&sslpassword=` in
    /// a URL's query) to the end of the text. When in doubt more is hidden,
    /// never less.
    ///
    /// ```
    /// use snowmint_db::DbConfig;
    ///
    /// assert_eq!(
    ///     DbConfig::redact("mysql://app:pa/ss@db:3306/ids"),
    ///     "mysql://app:***@db:3306/ids"
    /// );
    /// assert_eq!(
    ///     DbConfig::redact("host=db user=app password='s3 cr3t' dbname=ids"),
    ///     "host=db user=app password=***"
    /// );
    /// assert_eq!(DbConfig::redact("mysql://db/ids"), "mysql://db/ids");
    /// ```
    pub fn redact(text: &str) -> String {
        snowmint_lease::redact(text)
    }
}

/// Refuses a URL whose host or database name, as its driver read it, holds
/// an `@`: the rest of a password that was not percent-encoded, which
/// would be shown as a host or database name.
fn misplaced_at<'a>(url: &str, parts: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    if parts.into_iter().any(|part| part.contains('@')) {
        return Err(format!(
            "has an @ after its user and password (in a host or database name): a user or \
             password holding / ? # or @ must be percent-encoded (%2F %3F %23 %40), got {}",
            DbConfig::redact(url)
        ));
    }
    Ok(())
}

/// The hint for a URL whose userinfo holds what ends a URL's authority.
fn encode_hint(url: &str) -> &'static str {
    let Some((_, rest)) = url.split_once("://") else {
        return "";
    };
    let userinfo = rest.rfind('@').map_or("", |at| &rest[..at]);
    if userinfo.contains(['/', '?', '#', '@']) {
        "; a user or password holding / ? # or @ must be percent-encoded (%2F %3F %23 %40)"
    } else {
        ""
    }
}

impl LeaseSource for DbConfig {
    type Coordinator = DbCoordinator;

    fn validate(&self) -> Result<(), LeaseError> {
        DbConfig::validate(self).map_err(|e| LeaseError::Config(Box::new(e)))
    }

    fn lease(&self) -> &LeaseConfig {
        &self.lease
    }

    fn coordinator(&self, _t: Duration) -> Result<DbCoordinator, LeaseError> {
        let (target, shown) = self.target().map_err(|e| LeaseError::Config(Box::new(e)))?;
        let policy = crate::coordinator::Policy {
            ttl: self.lease.ttl(),
            allow_lost_commits: self.allow_lost_commits,
        };
        Ok(DbCoordinator::new(target, shown, policy))
    }
}

/// An invalid setting; the message names it as the `snowmint serve` flag
/// does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL does not parse, or asks for TLS this build cannot give.
    #[error("{flag} {why}")]
    Url {
        /// `postgres` or `mysql`.
        flag: &'static str,
        /// What is wrong (the URL shown without its password).
        why: String,
    },
    /// A table name that is not an identifier.
    #[error("{why}")]
    Table {
        /// What is wrong.
        why: String,
    },
    /// A common setting.
    #[error(transparent)]
    Lease(snowmint_lease::ConfigError),
    /// A database this build has no driver for.
    #[error("--{flag} needs snowmint-db built with its `{flag}` feature")]
    NotBuilt {
        /// `postgres` or `mysql`.
        flag: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passwords holding every character that ends a part of a URL, each
    /// of markers that appear nowhere else: no piece of one may be shown.
    const NASTY: &[&str] = &[
        "Kx7Wq9",
        "Kx7/Wq9",
        "Kx7@Wq9",
        "Kx7:Wq9",
        "Kx7?Wq9",
        "Kx7#Wq9",
        "Kx7%2FWq9",
        "Kx7@/:?#%40Wq9",
        "Kx7 Wq9",
        "Kx7&sslmode=Wq9",
        "Kx7'Wq9\\'Zj4",
        "://@Kx7@@Wq9",
        "Kx7@db/Wq9",
    ];

    /// The pieces of `password` that must not be shown.
    fn markers(password: &str) -> Vec<&str> {
        ["Kx7", "Wq9", "Zj4"]
            .into_iter()
            .filter(|m| password.contains(m))
            .collect()
    }

    #[test]
    fn a_password_is_hidden_whatever_it_holds() {
        for password in NASTY {
            let cases = [
                format!("mysql://app:{password}@db:3306/ids"),
                format!("mysql://app:{password}@db/ids?require_ssl=true"),
                format!("postgres://app:{password}@127.0.0.1:99999/ids"),
                format!("postgresql://app:{password}@h1:5432,h2:5433/ids?sslmode=require"),
                format!("postgres://app@db/ids?password={password}"),
                format!("postgres://app@db/ids?sslmode=require&sslpassword={password}"),
                format!("host=db user=app password={password} dbname=ids"),
                format!("host=db password = '{password}' dbname=ids"),
                format!("app:{password}@db/ids"),
                format!("connecting to mysql://app:{password}@db/ids failed: refused"),
            ];
            for text in cases {
                let shown = DbConfig::redact(&text);
                for marker in markers(password) {
                    assert!(!shown.contains(marker), "{text:?} shown as {shown:?}");
                }
                assert!(shown.contains("***"), "{text:?} shown as {shown:?}");
            }
        }
    }

    #[test]
    fn what_is_not_secret_is_shown_as_it_is() {
        let cases = [
            // Where the password ends is found whatever it holds.
            (
                "mysql://app:pa/ss@db:3306/ids",
                "mysql://app:***@db:3306/ids",
            ),
            ("mysql://app:p@ss@db/ids", "mysql://app:***@db/ids"),
            (
                "postgres://app:s3cr3t@db:5432/ids?sslmode=require",
                "postgres://app:***@db:5432/ids?sslmode=require",
            ),
            (
                "postgres://app@db/ids?sslmode=require&password=x&application_name=a",
                "postgres://app@db/ids?sslmode=require&password=***",
            ),
            (
                "postgres://app@db/ids?pass%77ord=x",
                "postgres://app@db/ids?pass%77ord=***",
            ),
            ("host=db password=x dbname=ids", "host=db password=***"),
            ("PASSWORD=x", "PASSWORD=***"),
            // Nothing secret: left alone.
            ("mysql://db/ids", "mysql://db/ids"),
            ("mysql://app@db:3306/ids", "mysql://app@db:3306/ids"),
            ("postgres://[::1]:5432/ids", "postgres://[::1]:5432/ids"),
            ("host=db user=app dbname=ids", "host=db user=app dbname=ids"),
            (
                "Access denied for user 'app'@'10.0.0.1' (using password: YES)",
                "Access denied for user 'app'@'10.0.0.1' (using password: YES)",
            ),
            ("", ""),
        ];
        for (text, shown) in cases {
            assert_eq!(DbConfig::redact(text), shown, "{text:?}");
        }
    }

    #[test]
    fn passwords_never_reach_a_message() {
        for password in NASTY {
            let urls = [
                DbConfig::mysql(format!("mysql://app:{password}@127.0.0.1:1/ids?bogus=1")),
                DbConfig::mysql(format!("mysql://app:{password}@127.0.0.1:99999/ids")),
                DbConfig::postgres(format!("postgres://app:{password}@127.0.0.1:99999/ids")),
                DbConfig::postgres(format!(
                    "postgres://app@127.0.0.1:99999/ids?password={password}"
                )),
                DbConfig::postgres(format!("host=127.0.0.1 port=99999 password={password}")),
                DbConfig::postgres(format!("postgres://app:{password}@db/ids?bogus=1")),
            ];
            for (i, config) in urls.into_iter().enumerate() {
                let Err(e) = config.validate() else {
                    panic!("case {i} with {password:?} is valid");
                };
                let e = e.to_string();
                for marker in markers(password) {
                    assert!(!e.contains(marker), "{e}");
                    assert!(!format!("{config:?}").contains(marker));
                }
                assert!(e.contains("***"), "{e}");
            }
        }
        let e = DbConfig::mysql("mysql://app:pa/ss@db/ids")
            .validate()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "mysql is not a MySQL URL (URL parse error: invalid port number), got \
             mysql://app:***@db/ids; a user or password holding / ? # or @ must be \
             percent-encoded (%2F %3F %23 %40)"
        );
        let e = DbConfig::postgres("postgres://app:s3cret@db:5432/ids?bogus=1")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("postgres is not a libpq URL"), "{e}");
        assert!(e.contains("bogus") && !e.contains("s3cret"), "{e}");
        // tokio-postgres would take `ss@db` for the host, and show it.
        let e = DbConfig::postgres("postgres://app:p@ss@db:5432/ids")
            .validate()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "postgres has an @ after its user and password (in a host or database name): a \
             user or password holding / ? # or @ must be percent-encoded (%2F %3F %23 %40), \
             got postgres://app:***@db:5432/ids"
        );
        // Encoded, every one of them is taken.
        assert_eq!(
            DbConfig::mysql("mysql://app:p%40%2F%3F%23ss@db/ids").validate(),
            Ok(())
        );
        assert_eq!(
            DbConfig::postgres("postgres://app:p%40%2F%3F%23ss@db/ids?sslmode=disable").validate(),
            Ok(())
        );
    }

    #[test]
    fn a_multi_host_url_is_shown_host_by_host_without_its_password() {
        #[cfg(feature = "postgres")]
        for (url, shown) in [
            (
                "postgres://app:s3cr3t@10.0.0.1:5433,10.0.0.2:5434/ids?target_session_attrs=read-write",
                "postgres://10.0.0.1:5433,10.0.0.2:5434/ids",
            ),
            (
                "postgres://app:s3cr3t@db1,db2:6432/ids",
                "postgres://db1:5432,db2:6432/ids",
            ),
            ("postgres://app@db/ids", "postgres://db:5432/ids"),
        ] {
            let (_, endpoint) = DbConfig::postgres(url).target().unwrap();
            assert_eq!(endpoint, shown);
        }
    }

    #[test]
    fn a_mysql_session_idles_out_after_the_ttl_but_never_before_30_s() {
        assert_eq!(mysql_idle_limit(Duration::from_secs(2)), 30);
        assert_eq!(mysql_idle_limit(Duration::from_secs(10)), 30);
        assert_eq!(mysql_idle_limit(Duration::from_millis(60_500)), 61);
        assert_eq!(mysql_idle_limit(Duration::from_secs(3600)), 3600);
    }

    #[test]
    fn each_setting_is_checked_by_name() {
        assert_eq!(
            DbConfig::postgres(" ").validate().unwrap_err().to_string(),
            "postgres must be a URL, got \" \""
        );
        assert_eq!(
            DbConfig::mysql("mysql://db/ids")
                .lease_ttl(Duration::from_secs(1))
                .validate()
                .unwrap_err()
                .to_string(),
            "lease-ttl must be 2..=3600 whole seconds, got 1"
        );
        assert_eq!(
            DbConfig::mysql("mysql://db/ids")
                .datacenter(32)
                .validate()
                .unwrap_err()
                .to_string(),
            "datacenter must be 0..=31, got 32"
        );
        let e = DbConfig::postgres("postgres://db/ids?sslmode=verify-full")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("need sslrootcert=FILE"), "{e}");
        let e = DbConfig::postgres("postgres://db/ids?sslmode=verify-ca&sslrootcert=/nonexistent")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslrootcert /nonexistent"), "{e}");
        assert_eq!(
            DbConfig::postgres("postgres://db/ids?sslmode=disable").validate(),
            Ok(())
        );
    }
}
