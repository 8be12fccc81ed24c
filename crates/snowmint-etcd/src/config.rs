//! What a lease session needs to know, and the durations derived from it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use snowmint::Generator;

use crate::store::EtcdStore;
use snowmint::Identity;

/// Shortest lease etcd grants in its default configuration.
pub const MIN_LEASE_TTL: Duration = Duration::from_secs(2);
/// Longest lease accepted (an hour: a dead instance's identity stays
/// unusable that long).
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(3600);
/// The default lease TTL.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);
/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "/snowmint";

/// Builds the generator for a newly claimed identity over its etcd store.
/// The default is [`default_generator`]; tests inject clocks here.
pub type GeneratorFactory =
    Arc<dyn Fn(Identity, EtcdStore) -> Result<Generator, snowmint::BuildError> + Send + Sync>;

/// `Generator::builder(dc, w).store(store).build()` with the system clock.
pub fn default_generator(
    identity: Identity,
    store: EtcdStore,
) -> Result<Generator, snowmint::BuildError> {
    Generator::builder_for(identity).store(store).build()
}

/// Where and how to lease an identity: a builder, so options (TLS to etcd,
/// say) can be added without breaking callers.
///
/// ```
/// use std::time::Duration;
/// use snowmint_etcd::EtcdConfig;
///
/// let config = EtcdConfig::new(["http://127.0.0.1:2379"])
///     .lease_ttl(Duration::from_secs(10))
///     .prefix("/snowmint");
/// assert_eq!(config.validate(), Ok(()));
/// assert_eq!(
///     config.lease_ttl(Duration::from_secs(1)).validate().unwrap_err().to_string(),
///     "lease-ttl must be 2..=3600 whole seconds, got 1"
/// );
/// ```
#[derive(Clone)]
pub struct EtcdConfig {
    pub(crate) endpoints: Vec<String>,
    pub(crate) prefix: String,
    pub(crate) lease_ttl: Duration,
    pub(crate) holder: String,
    pub(crate) generator: GeneratorFactory,
}

impl fmt::Debug for EtcdConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdConfig")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .field("lease_ttl", &self.lease_ttl)
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl EtcdConfig {
    /// etcd client URLs (`http://10.0.0.1:2379`, ...) with the defaults:
    /// prefix [`DEFAULT_PREFIX`], a [`DEFAULT_LEASE_TTL`] lease, this host
    /// and process as the holder, the system clock. Surrounding spaces of
    /// each URL are ignored (`a, b` as typed in a flag).
    pub fn new<I, S>(endpoints: I) -> EtcdConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: DEFAULT_PREFIX.to_owned(),
            lease_ttl: DEFAULT_LEASE_TTL,
            holder: default_holder(),
            generator: Arc::new(default_generator),
        }
    }

    /// The lease TTL, whole seconds in 2..=3600 (etcd may grant more; the
    /// session uses what it grants). A longer TTL rides out longer etcd
    /// hiccups; a shorter one frees a crashed holder's identity sooner.
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> EtcdConfig {
        self.lease_ttl = ttl;
        self
    }

    /// The key prefix: clusters with different prefixes share one etcd
    /// without sharing identities (and so mint overlapping IDs).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> EtcdConfig {
        self.prefix = prefix.into();
        self
    }

    /// What the identity key says about its holder, for operators reading
    /// etcd (default `<hostname> pid <pid>`).
    #[must_use]
    pub fn holder(mut self, holder: impl Into<String>) -> EtcdConfig {
        self.holder = holder.into();
        self
    }

    /// How each claimed identity's generator is built (default
    /// [`default_generator`]); tests inject clocks here.
    #[must_use]
    pub fn generator(mut self, factory: GeneratorFactory) -> EtcdConfig {
        self.generator = factory;
        self
    }

    /// The endpoints, as given.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The key prefix, as given.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The lease TTL asked for.
    pub fn ttl(&self) -> Duration {
        self.lease_ttl
    }

    /// Checks the values; the error names the setting (as the `snowmint
    /// serve` flag is named), the value and what is allowed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.endpoints.is_empty() || self.endpoints.iter().any(|e| e.trim().is_empty()) {
            return Err(ConfigError::Endpoints {
                got: self.endpoints.join(","),
            });
        }
        let secs = self.lease_ttl.as_secs();
        if self.lease_ttl.subsec_nanos() != 0
            || !(MIN_LEASE_TTL.as_secs()..=MAX_LEASE_TTL.as_secs()).contains(&secs)
        {
            return Err(ConfigError::LeaseTtl {
                got: self.lease_ttl,
            });
        }
        if !self.prefix.starts_with('/') || self.prefix.chars().any(char::is_whitespace) {
            return Err(ConfigError::Prefix {
                got: self.prefix.clone(),
            });
        }
        Ok(())
    }
}

/// `<hostname> pid <pid>`: `$HOSTNAME`, else the kernel's hostname.
fn default_holder() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    format!("{host} pid {}", std::process::id())
}

/// An invalid [`EtcdConfig`]; the message names the setting as the
/// `snowmint serve` flag does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No endpoint, or an empty one.
    #[error("etcd must be one or more URLs separated by commas, got {got:?}")]
    Endpoints {
        /// The endpoints, joined by commas.
        got: String,
    },
    /// Not whole seconds in 2..=3600.
    #[error(
        "lease-ttl must be {}..={} whole seconds, got {}",
        MIN_LEASE_TTL.as_secs(),
        MAX_LEASE_TTL.as_secs(),
        got.as_secs_f64()
    )]
    LeaseTtl {
        /// The TTL asked for.
        got: Duration,
    },
    /// Not starting with `/`, or with spaces.
    #[error("etcd-prefix must start with '/' and contain no spaces, got {got:?}")]
    Prefix {
        /// The prefix asked for.
        got: String,
    },
}

/// The safety margin subtracted from the lease TTL: the fence closes this
/// long before the lease could expire on the server. `max(1 s, TTL / 5)`.
pub fn fence_margin(ttl: Duration) -> Duration {
    (ttl / 5).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_with_the_flag_name() {
        let o = EtcdConfig::new(["http://127.0.0.1:2379"]);
        assert_eq!(o.validate(), Ok(()));
        let o = o.lease_ttl(Duration::from_secs(1));
        assert_eq!(
            o.validate().unwrap_err().to_string(),
            "lease-ttl must be 2..=3600 whole seconds, got 1"
        );
        let o = o.lease_ttl(Duration::from_millis(2500));
        assert!(matches!(o.validate(), Err(ConfigError::LeaseTtl { .. })));
        assert!(o.validate().unwrap_err().to_string().contains("got 2.5"));
        let o = o.lease_ttl(DEFAULT_LEASE_TTL).prefix("snowmint");
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .starts_with("etcd-prefix must start with '/'")
        );
        let o = EtcdConfig::new(Vec::<String>::new());
        assert!(matches!(o.validate(), Err(ConfigError::Endpoints { .. })));
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .starts_with("etcd must be")
        );
    }
}
