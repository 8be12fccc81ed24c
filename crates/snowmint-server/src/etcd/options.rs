//! Options of distributed mode, and the durations derived from them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use snowmint::Generator;

use super::store::EtcdStore;
use crate::Identity;

/// Shortest lease etcd grants in its default configuration.
pub const MIN_LEASE_TTL: Duration = Duration::from_secs(2);
/// Longest lease accepted (an hour: a dead instance's identity stays
/// unusable that long).
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(3600);
/// Default `--lease-ttl`.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

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

/// Options of distributed mode (`snowmint serve --etcd ...`).
#[derive(Clone)]
#[non_exhaustive]
pub struct EtcdOptions {
    /// etcd client URLs, e.g. `http://10.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// Key prefix; clusters with different prefixes share one etcd
    /// without sharing identities.
    pub prefix: String,
    /// Lease TTL, whole seconds in 2..=3600.
    pub lease_ttl: Duration,
    /// What the identity key says about its holder (for operators reading etcd).
    pub holder: String,
    /// Builds each identity's generator.
    pub generator: GeneratorFactory,
}

impl fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .field("lease_ttl", &self.lease_ttl)
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl EtcdOptions {
    /// Options for `endpoints` with the defaults: prefix `/snowmint`, a
    /// 10 s lease, this host and process as the holder, the system clock.
    pub fn new(endpoints: Vec<String>) -> EtcdOptions {
        let host = crate::hostname::current_hostname().unwrap_or_else(|_| "unknown".to_owned());
        EtcdOptions {
            endpoints,
            prefix: super::DEFAULT_PREFIX.to_owned(),
            lease_ttl: DEFAULT_LEASE_TTL,
            holder: format!("{host} pid {}", std::process::id()),
            generator: Arc::new(default_generator),
        }
    }

    /// Checks the options; the error names the flag, the value and what is
    /// allowed.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.endpoints.is_empty() || self.endpoints.iter().any(|e| e.trim().is_empty()) {
            return Err(OptionsError(format!(
                "etcd must be one or more URLs separated by commas, got {:?}",
                self.endpoints.join(",")
            )));
        }
        let secs = self.lease_ttl.as_secs();
        if self.lease_ttl.subsec_nanos() != 0
            || !(MIN_LEASE_TTL.as_secs()..=MAX_LEASE_TTL.as_secs()).contains(&secs)
        {
            return Err(OptionsError(format!(
                "lease-ttl must be {}..={} whole seconds, got {}",
                MIN_LEASE_TTL.as_secs(),
                MAX_LEASE_TTL.as_secs(),
                self.lease_ttl.as_secs_f64()
            )));
        }
        if !self.prefix.starts_with('/') || self.prefix.chars().any(char::is_whitespace) {
            return Err(OptionsError(format!(
                "etcd-prefix must start with '/' and contain no spaces, got {:?}",
                self.prefix
            )));
        }
        Ok(())
    }
}

/// An invalid [`EtcdOptions`] value; the message names the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OptionsError(String);

/// The safety margin subtracted from the lease TTL: the fence closes this
/// long before the lease could expire on the server. `max(1 s, TTL / 5)`.
pub fn fence_margin(ttl: Duration) -> Duration {
    (ttl / 5).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_with_the_flag_name() {
        let mut o = EtcdOptions::new(vec!["http://127.0.0.1:2379".into()]);
        assert_eq!(o.validate(), Ok(()));
        o.lease_ttl = Duration::from_secs(1);
        assert_eq!(
            o.validate().unwrap_err().to_string(),
            "lease-ttl must be 2..=3600 whole seconds, got 1"
        );
        o.lease_ttl = Duration::from_millis(2500);
        assert!(o.validate().unwrap_err().to_string().contains("got 2.5"));
        o.lease_ttl = DEFAULT_LEASE_TTL;
        o.prefix = "snowmint".into();
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .starts_with("etcd-prefix must start with '/'")
        );
        o.prefix = "/snowmint".into();
        o.endpoints = vec![];
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .starts_with("etcd must be")
        );
    }
}
