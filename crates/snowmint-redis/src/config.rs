//! What a Redis lease session needs to know: the server (a URL, or
//! Sentinel's master name and sentinels), the key prefix, the declared
//! longest TTL, replicas to wait for, and the common lease settings.

use std::fmt;
use std::time::Duration;

use snowmint_lease::{LeaseConfig, LeaseError, LeaseSource};

use crate::coordinator::{Policy, RedisCoordinator, Target};

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "snowmint";

/// The longest TTL a prefix declares by default (`<prefix>:meta`
/// `bound_ms`): no holder may lease with a longer one, so that a claim
/// after Redis lost its data (a restart, a failover) knows how long a
/// holder it cannot see may still issue.
pub const DEFAULT_LONGEST_TTL: Duration = Duration::from_secs(60);

/// Where and how to lease an identity from Redis: a builder.
///
/// ```
/// use std::time::Duration;
/// use snowmint_redis::RedisConfig;
///
/// let config = RedisConfig::new("redis://:s3cret@redis.internal:6379/0")
///     .lease_ttl(Duration::from_secs(10))
///     .prefix("ids");
/// assert_eq!(config.validate(), Ok(()));
/// assert_eq!(
///     RedisConfig::new("http://redis.internal").validate().unwrap_err().to_string(),
///     "redis must be a redis:// or rediss:// URL, got \"http://redis.internal\""
/// );
/// // Sentinel: the URL gives the master's user, password, database and TLS.
/// let sentinel = RedisConfig::new("redis://:s3cret@master/0")
///     .sentinel(["10.0.0.1:26379", "10.0.0.2:26379"], "ids-master");
/// assert_eq!(sentinel.validate(), Ok(()));
/// ```
///
/// The settings every coordinator shares (`lease_ttl`, `datacenter`,
/// `holder`, `generator`, `lease` and their getters) are the lease crate's
/// ([`snowmint_lease::lease_settings`]).
#[derive(Clone)]
pub struct RedisConfig {
    url: String,
    sentinels: Vec<String>,
    master: Option<String>,
    prefix: String,
    longest_ttl: Duration,
    wait_replicas: u32,
    ca: Option<std::path::PathBuf>,
    lease: LeaseConfig,
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact(&self.url))
            .field("sentinels", &self.sentinels)
            .field("master", &self.master)
            .field("prefix", &self.prefix)
            .field("longest_ttl", &self.longest_ttl)
            .field("wait_replicas", &self.wait_replicas)
            .field("ca", &self.ca)
            .field("lease", &self.lease)
            .finish()
    }
}

snowmint_lease::lease_settings!(RedisConfig);

impl RedisConfig {
    /// Redis at a URL: `redis://[user][:password]@host:port/db`, or
    /// `rediss://` for TLS (the system's roots verify the server; a
    /// `#insecure` fragment does not). With [`sentinel`](RedisConfig::sentinel),
    /// the URL gives the master's user, password, database and TLS, and its
    /// host is not used.
    pub fn new(url: impl Into<String>) -> RedisConfig {
        RedisConfig {
            url: url.into(),
            sentinels: Vec::new(),
            master: None,
            prefix: DEFAULT_PREFIX.to_owned(),
            longest_ttl: DEFAULT_LONGEST_TTL,
            wait_replicas: 0,
            ca: None,
            lease: LeaseConfig::default(),
        }
    }

    /// Finds the master through Sentinel: the sentinels' `host:port`
    /// addresses and the master's name; every new connection asks them
    /// which server is the master now.
    #[must_use]
    pub fn sentinel<S: Into<String>>(
        mut self,
        sentinels: impl IntoIterator<Item = S>,
        master: impl Into<String>,
    ) -> RedisConfig {
        self.sentinels = sentinels.into_iter().map(Into::into).collect();
        self.master = Some(master.into());
        self
    }

    /// The key prefix (default [`DEFAULT_PREFIX`]): clusters with different
    /// prefixes share one Redis without sharing identities.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> RedisConfig {
        self.prefix = prefix.into();
        self
    }

    /// The longest TTL this instance declares for the prefix (default
    /// [`DEFAULT_LONGEST_TTL`]; at least the lease TTL): a claim whose
    /// record Redis may have lost waits this long before it issues. The
    /// first claim under a prefix records it; a later instance whose TTL is
    /// longer than the recorded one is refused.
    #[must_use]
    pub fn longest_ttl(mut self, bound: Duration) -> RedisConfig {
        self.longest_ttl = bound;
        self
    }

    /// After each write, wait until `n` replicas acknowledged it (`WAIT`),
    /// within the request's timeout; fewer is a failed request. Default 0.
    #[must_use]
    pub fn wait_replicas(mut self, n: u32) -> RedisConfig {
        self.wait_replicas = n;
        self
    }

    /// For `rediss://`: verify the server's certificate against this CA
    /// certificate (PEM) instead of the system's roots (read when the
    /// configuration is checked and the coordinator built). Not yet with
    /// Sentinel.
    #[must_use]
    pub fn ca_cert(mut self, path: impl Into<std::path::PathBuf>) -> RedisConfig {
        self.ca = Some(path.into());
        self
    }

    /// The key prefix.
    pub fn prefix_name(&self) -> &str {
        &self.prefix
    }

    /// The URL with its password hidden.
    pub fn shown_url(&self) -> String {
        redact(&self.url)
    }

    /// Checks the values; the error names the setting as the `snowmint
    /// serve` flag does, and never shows a password.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.lease.validate().map_err(ConfigError::Lease)?;
        self.target().map(drop)
    }

    pub(crate) fn target(&self) -> Result<(Target, String), ConfigError> {
        let bad = |why: String| ConfigError::Invalid { why };
        let url = self.url.trim();
        if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
            return Err(bad(format!(
                "redis must be a redis:// or rediss:// URL, got {:?}",
                redact(&self.url)
            )));
        }
        let p = &self.prefix;
        if p.is_empty()
            || p.len() > 200
            || !p
                .chars()
                .all(|c| c.is_ascii_graphic() && c != '{' && c != '}')
        {
            return Err(bad(format!(
                "redis-prefix must be 1..=200 printable ASCII characters without spaces or \
                 braces, got {p:?}"
            )));
        }
        let ttl = self.lease.ttl();
        if self.longest_ttl < ttl || self.longest_ttl > snowmint_lease::MAX_LEASE_TTL {
            return Err(bad(format!(
                "redis-longest-ttl must be at least lease-ttl ({} s) and at most {} s, got {} s",
                ttl.as_secs(),
                snowmint_lease::MAX_LEASE_TTL.as_secs(),
                self.longest_ttl.as_secs_f64()
            )));
        }
        let info = redis::IntoConnectionInfo::into_connection_info(url).map_err(|e| {
            bad(format!(
                "redis is not a Redis URL ({}), got {}",
                redact(&e.to_string()),
                redact(&self.url)
            ))
        })?;
        let tls = url.starts_with("rediss://");
        let shown;
        let target = match &self.master {
            None => {
                shown = redact(&format!("{}", info.addr()));
                let root = match &self.ca {
                    None => None,
                    Some(_) if !tls => {
                        return Err(bad(
                            "redis-ca needs a rediss:// URL (TLS to Redis)".to_owned()
                        ));
                    }
                    Some(path) => Some(
                        std::fs::read(path)
                            .map_err(|e| bad(format!("redis-ca {}: {e}", path.display())))?,
                    ),
                };
                let client = match root {
                    None => redis::Client::open(info),
                    Some(root) => redis::Client::build_with_tls(
                        info,
                        redis::TlsCertificates {
                            client_tls: None,
                            root_cert: Some(root),
                        },
                    ),
                }
                .map_err(|e| {
                    bad(format!(
                        "redis cannot be used ({}), got {}",
                        redact(&e.to_string()),
                        redact(&self.url)
                    ))
                })?;
                Target::direct(client)
            }
            Some(master) => {
                if self.ca.is_some() {
                    return Err(bad(
                        "redis-ca is not supported with redis-sentinel yet (the system's roots \
                         verify the master)"
                            .to_owned(),
                    ));
                }
                if master.trim().is_empty() {
                    return Err(bad("redis-master must name the master".to_owned()));
                }
                if self.sentinels.is_empty() {
                    return Err(bad(
                        "redis-sentinel must list at least one HOST:PORT".to_owned()
                    ));
                }
                let scheme = if tls { "rediss" } else { "redis" };
                let mut addrs = Vec::new();
                for s in &self.sentinels {
                    let s = s.trim();
                    let ok = s
                        .rsplit_once(':')
                        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
                    if !ok {
                        return Err(bad(format!(
                            "redis-sentinel must be HOST:PORT[,HOST:PORT...], got {s:?}"
                        )));
                    }
                    addrs.push(format!("{scheme}://{s}"));
                }
                let mut node = redis::sentinel::SentinelNodeConnectionInfo::default()
                    .set_redis_connection_info(info.redis_settings().clone());
                if tls {
                    node = node.set_tls_mode(redis::TlsMode::Secure);
                }
                let client = redis::sentinel::SentinelClient::build(
                    addrs,
                    master.clone(),
                    Some(node),
                    redis::sentinel::SentinelServerType::Master,
                )
                .map_err(|e| bad(format!("redis-sentinel: {}", redact(&e.to_string()))))?;
                shown = format!("sentinel {} master {master}", self.sentinels.join(","));
                Target::sentinel(client)
            }
        };
        Ok((target, shown))
    }
}

impl LeaseSource for RedisConfig {
    type Coordinator = RedisCoordinator;

    fn validate(&self) -> Result<(), LeaseError> {
        RedisConfig::validate(self).map_err(|e| LeaseError::Config(Box::new(e)))
    }

    fn lease(&self) -> &LeaseConfig {
        &self.lease
    }

    fn coordinator(&self, _t: Duration) -> Result<RedisCoordinator, LeaseError> {
        let (target, shown) = self.target().map_err(|e| LeaseError::Config(Box::new(e)))?;
        let policy = Policy {
            prefix: self.prefix.clone(),
            ttl: self.lease.ttl(),
            longest_ttl: self.longest_ttl,
            wait_replicas: self.wait_replicas,
        };
        Ok(RedisCoordinator::new(target, shown, policy))
    }
}

/// An invalid setting; the message names it as the `snowmint serve` flag
/// does, and shows no password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A Redis setting (the URL, the prefix, Sentinel, the bound).
    #[error("{why}")]
    Invalid {
        /// What is wrong.
        why: String,
    },
    /// A common setting.
    #[error(transparent)]
    Lease(snowmint_lease::ConfigError),
}

/// `text` (a URL, or a message that quotes one) fit to be shown: every
/// password replaced by `***`, whatever it holds: the coordinators' one
/// redaction, [`snowmint_lease::redact`].
///
/// ```
/// use snowmint_redis::redact;
///
/// assert_eq!(redact("redis://:pa/ss@db:6379/0"), "redis://:***@db:6379/0");
/// assert_eq!(redact("rediss://app:p@ss@db/0"), "rediss://app:***@db/0");
/// assert_eq!(redact("redis://db:6379/0"), "redis://db:6379/0");
/// ```
pub use snowmint_lease::redact;

#[cfg(test)]
mod tests {
    use super::*;

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
        "://@Kx7@@Wq9",
    ];

    #[test]
    fn a_password_is_never_in_a_message_or_the_debug_form() {
        for password in NASTY {
            for url in [
                format!("redis://:{password}@127.0.0.1:6379/0"),
                format!("rediss://app:{password}@db:6379/0"),
                format!("redis://app:{password}@db:notaport/0"),
                format!("http://app:{password}@db:6379/0"),
                format!("redis://app:{password}@db:6379/0?password={password}"),
            ] {
                let shown = redact(&url);
                assert!(!shown.contains("Kx7") && !shown.contains("Wq9"), "{shown}");
                let config = RedisConfig::new(url.clone()).prefix("bad prefix");
                let e = config.validate().unwrap_err().to_string();
                assert!(!e.contains("Kx7") && !e.contains("Wq9"), "{e}");
                let debug = format!("{config:?}");
                assert!(!debug.contains("Kx7") && !debug.contains("Wq9"), "{debug}");
            }
        }
    }

    #[test]
    fn each_setting_is_checked_by_name() {
        let e = |c: RedisConfig| c.validate().unwrap_err().to_string();
        assert_eq!(
            e(RedisConfig::new("redis://db").prefix("")),
            "redis-prefix must be 1..=200 printable ASCII characters without spaces or braces, \
             got \"\""
        );
        assert!(e(RedisConfig::new("redis://db").prefix("a{b}")).starts_with("redis-prefix"));
        assert_eq!(
            e(RedisConfig::new("redis://db").longest_ttl(Duration::from_secs(5))),
            "redis-longest-ttl must be at least lease-ttl (10 s) and at most 3600 s, got 5 s"
        );
        assert_eq!(
            e(RedisConfig::new("redis://db").lease_ttl(Duration::from_secs(1))),
            "lease-ttl must be 2..=3600 whole seconds, got 1"
        );
        assert_eq!(
            e(RedisConfig::new("redis://db").sentinel(["nope"], "m")),
            "redis-sentinel must be HOST:PORT[,HOST:PORT...], got \"nope\""
        );
        assert_eq!(
            e(RedisConfig::new("redis://db").sentinel(Vec::<String>::new(), "m")),
            "redis-sentinel must list at least one HOST:PORT"
        );
        assert_eq!(RedisConfig::new("rediss://db:6380/1").validate(), Ok(()));
    }
}
