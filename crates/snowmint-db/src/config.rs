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
}

impl fmt::Debug for DbConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbConfig")
            .field("dialect", &self.dialect)
            .field("url", &"<hidden: may hold a password>")
            .field("table", &self.table)
            .field("lease", &self.lease)
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
        }
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
                    mysql_target(&self.url, table).map_err(bad)
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
    let config = tokio_postgres::Config::from_str(&asked.url)
        .map_err(|e| format!("is not a libpq URL ({e}), got {}", hide_password(url)))?;
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
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let shown = format!(
        "postgres://{}:{port}/{}",
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    );
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

#[cfg(feature = "mysql")]
fn mysql_target(url: &str, table: Table) -> Result<(Target, String), String> {
    let opts = mysql_async::Opts::from_url(url)
        .map_err(|e| format!("is not a MySQL URL ({e}), got {}", hide_password(url)))?;
    let shown = format!(
        "mysql://{}:{}/{}",
        opts.ip_or_hostname(),
        opts.tcp_port(),
        opts.db_name().unwrap_or("")
    );
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

/// `scheme://user:***@host...`: a URL fit for a message.
pub(crate) fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "a connection string (not shown: it may hold a password)".to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        None => url.to_owned(),
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
        Ok(DbCoordinator::new(target, shown))
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

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(
            hide_password("postgres://app:s3cret@db:5432/ids?sslmode=require"),
            "postgres://app:***@db:5432/ids?sslmode=require"
        );
        assert_eq!(hide_password("mysql://db/ids"), "mysql://db/ids");
        assert!(!hide_password("host=db password=s3cret").contains("s3cret"));
        let e = DbConfig::postgres("postgres://app:s3cret@db:5432/ids?bogus=1")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("postgres is not a libpq URL"), "{e}");
        assert!(e.contains("bogus") && !e.contains("s3cret"), "{e}");
        let e = DbConfig::mysql("mysql://app:s3cret@db:3306/ids?bogus=1")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("mysql is not a MySQL URL"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
        assert!(!format!("{:?}", DbConfig::mysql("mysql://a:s3cret@b/c")).contains("s3cret"));
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
