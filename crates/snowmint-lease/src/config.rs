//! The settings every coordinator shares, and the durations derived from them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use snowmint::{Generator, Identity};

use crate::clock::{LeaseClock, SystemLeaseClock};
use crate::coordinator::Coordinator;
use crate::error::LeaseError;
use crate::store::LeaseStore;

/// Shortest lease accepted (etcd's shortest in its default configuration).
pub const MIN_LEASE_TTL: Duration = Duration::from_secs(2);
/// Longest lease accepted (an hour: a dead instance's identity stays
/// unusable that long).
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(3600);
/// The default lease TTL.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// Builds the generator for a newly claimed identity over its store. The
/// default is [`default_generator`]; tests inject clocks here.
pub type GeneratorFactory =
    Arc<dyn Fn(Identity, LeaseStore) -> Result<Generator, snowmint::BuildError> + Send + Sync>;

/// `Generator::builder_for(identity).store(store).build()` with the system clock.
pub fn default_generator(
    identity: Identity,
    store: LeaseStore,
) -> Result<Generator, snowmint::BuildError> {
    Generator::builder_for(identity).store(store).build()
}

/// The safety margin subtracted from the lease TTL: the fence closes this
/// long before the lease could expire on the coordinator. `max(1 s, TTL / 5)`.
pub fn fence_margin(ttl: Duration) -> Duration {
    (ttl / 5).max(Duration::from_secs(1))
}

/// The settings of a lease that do not depend on the coordinator: the TTL,
/// the datacenter scope, the holder's description, how generators are built
/// and the clock the fence reads. Coordinator configurations
/// (`snowmint_etcd::EtcdConfig`, ...) hold one and expose its setters.
///
/// ```
/// use std::time::Duration;
/// use snowmint_lease::LeaseConfig;
///
/// let config = LeaseConfig::default().lease_ttl(Duration::from_secs(10)).datacenter(5);
/// assert!(config.validate().is_ok());
/// assert_eq!(
///     config.lease_ttl(Duration::from_secs(1)).validate().unwrap_err().to_string(),
///     "lease-ttl must be 2..=3600 whole seconds, got 1"
/// );
/// ```
#[derive(Clone)]
pub struct LeaseConfig {
    pub(crate) ttl: Duration,
    pub(crate) holder: String,
    pub(crate) generator: GeneratorFactory,
    /// `--datacenter` with a coordinator: lease only workers of this datacenter.
    pub(crate) datacenter: Option<u8>,
    /// Whether a renewal counts only once a linearizable read after it
    /// confirms the answering leader's raft term (always, but for tests
    /// that show what happens without it).
    pub(crate) confirm_renewals: bool,
    /// The clock the fence and the session read.
    pub(crate) clock: Arc<dyn LeaseClock>,
    /// The wall clock a free identity's mark is compared with (to prefer
    /// one the generator can issue under at once).
    pub(crate) wall: Arc<dyn snowmint::Clock>,
}

impl fmt::Debug for LeaseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseConfig")
            .field("ttl", &self.ttl)
            .field("holder", &self.holder)
            .field("datacenter", &self.datacenter)
            .field("confirm_renewals", &self.confirm_renewals)
            .finish_non_exhaustive()
    }
}

impl Default for LeaseConfig {
    /// A [`DEFAULT_LEASE_TTL`] lease of any of the 1024 identities, this
    /// host and process as the holder, the system clocks.
    fn default() -> LeaseConfig {
        LeaseConfig {
            ttl: DEFAULT_LEASE_TTL,
            holder: default_holder(),
            generator: Arc::new(default_generator),
            datacenter: None,
            confirm_renewals: true,
            clock: Arc::new(SystemLeaseClock),
            wall: Arc::new(snowmint::SystemClock::new()),
        }
    }
}

impl LeaseConfig {
    /// The lease TTL, whole seconds in 2..=3600 (the coordinator may grant
    /// more; the session uses what it grants). A longer TTL rides out longer
    /// coordinator hiccups; a shorter one frees a crashed holder's identity
    /// sooner. Every coordinator's configuration names its setters and
    /// getters alike: `lease_ttl(ttl)` sets, [`ttl`](LeaseConfig::ttl) gets;
    /// `datacenter(n)` sets, [`datacenter_scope`](LeaseConfig::datacenter_scope)
    /// gets.
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> LeaseConfig {
        self.ttl = ttl;
        self
    }

    /// Lease only the 32 workers of `datacenter` (0..=31, checked by
    /// [`validate`](LeaseConfig::validate)) instead of any of the 1024
    /// identities: one coordinator per region, each region its own
    /// datacenter, and no two regions ever share an identity.
    #[must_use]
    pub fn datacenter(mut self, datacenter: u8) -> LeaseConfig {
        self.datacenter = Some(datacenter);
        self
    }

    /// What the coordinator records about the holder, for operators
    /// (default `<hostname> pid <pid>`).
    #[must_use]
    pub fn holder(mut self, holder: impl Into<String>) -> LeaseConfig {
        self.holder = holder.into();
        self
    }

    /// How each claimed identity's generator is built (default
    /// [`default_generator`]); tests inject clocks here.
    #[must_use]
    pub fn generator(mut self, factory: GeneratorFactory) -> LeaseConfig {
        self.generator = factory;
        self
    }

    /// The clock the fence and the session read (default
    /// [`SystemLeaseClock`]); a simulation injects its own.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn LeaseClock>) -> LeaseConfig {
        self.clock = clock;
        self
    }

    /// The wall clock a free identity's mark is compared with, to prefer one
    /// the generator can issue under at once (default the system clock; give
    /// the one the generator factory uses).
    #[must_use]
    pub fn wall_clock(mut self, clock: Arc<dyn snowmint::Clock>) -> LeaseConfig {
        self.wall = clock;
        self
    }

    /// For tests only: `false` lets every keep-alive the coordinator answers
    /// move the fence, unconfirmed (on an etcd with issue 15247 a deposed
    /// leader's answer then extends the fence past the lease).
    #[doc(hidden)]
    #[must_use]
    pub fn confirm_renewals(mut self, confirm: bool) -> LeaseConfig {
        self.confirm_renewals = confirm;
        self
    }

    /// The lease TTL asked for.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The datacenter whose workers are leased, if scoped to one.
    pub fn datacenter_scope(&self) -> Option<u8> {
        self.datacenter
    }

    /// Checks the TTL and the datacenter; the error names the setting as the
    /// `snowmint serve` flag does.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let secs = self.ttl.as_secs();
        if self.ttl.subsec_nanos() != 0
            || !(MIN_LEASE_TTL.as_secs()..=MAX_LEASE_TTL.as_secs()).contains(&secs)
        {
            return Err(ConfigError::LeaseTtl { got: self.ttl });
        }
        if let Some(dc) = self.datacenter {
            Identity::new(dc.into(), 0).map_err(ConfigError::Datacenter)?;
        }
        Ok(())
    }
}

/// Writes the lease settings every coordinator's configuration shares on
/// `$config`, a type with a field `lease` holding a [`LeaseConfig`]: the
/// setters `lease_ttl`, `datacenter`, `holder`, `generator` and `lease`,
/// and the getters `ttl`, `datacenter_scope` and `lease_config`. One home
/// for what they forward, so every coordinator's configuration
/// (`snowmint_etcd::EtcdConfig`, `snowmint_db::DbConfig`, ...) names them
/// alike: `lease_ttl(ttl)` sets and `ttl()` gets, `datacenter(n)` sets and
/// `datacenter_scope()` gets.
#[macro_export]
macro_rules! lease_settings {
    ($config:ty) => {
        impl $config {
            /// The lease TTL, whole seconds in 2..=3600 (the coordinator may
            /// grant more; the session uses what it grants). A longer TTL
            /// rides out longer coordinator hiccups; a shorter one frees a
            /// crashed holder's identity sooner.
            #[must_use]
            pub fn lease_ttl(mut self, ttl: ::std::time::Duration) -> Self {
                self.lease = self.lease.lease_ttl(ttl);
                self
            }

            /// Lease only the 32 workers of `datacenter` (0..=31, checked by
            /// `validate`) instead of any of the 1024 identities: one
            /// coordinator per region, each region its own datacenter, and
            /// no two regions ever share an identity. When all 32 are held
            /// the session waits (not ready) until one is freed.
            #[must_use]
            pub fn datacenter(mut self, datacenter: u8) -> Self {
                self.lease = self.lease.datacenter(datacenter);
                self
            }

            /// What the coordinator records about the holder, for operators
            /// (default `<hostname> pid <pid>`).
            #[must_use]
            pub fn holder(mut self, holder: impl Into<String>) -> Self {
                self.lease = self.lease.holder(holder);
                self
            }

            /// How each claimed identity's generator is built (default
            /// `default_generator`); tests inject clocks here.
            #[must_use]
            pub fn generator(mut self, factory: $crate::GeneratorFactory) -> Self {
                self.lease = self.lease.generator(factory);
                self
            }

            /// Replaces the common lease settings (TTL, datacenter, holder,
            /// generator factory, clocks) at once.
            #[must_use]
            pub fn lease(mut self, lease: $crate::LeaseConfig) -> Self {
                self.lease = lease;
                self
            }

            /// The common lease settings.
            pub fn lease_config(&self) -> &$crate::LeaseConfig {
                &self.lease
            }

            /// The lease TTL asked for.
            pub fn ttl(&self) -> ::std::time::Duration {
                self.lease.ttl()
            }

            /// The datacenter whose workers are leased, if scoped to one
            /// (`datacenter`); `None`: any of the 1024.
            pub fn datacenter_scope(&self) -> ::std::option::Option<u8> {
                self.lease.datacenter_scope()
            }
        }
    };
}

/// What a coordinator's configuration gives
/// [`LeasedGenerator::start`](crate::LeasedGenerator::start): the common
/// settings and a coordinator.
pub trait LeaseSource: fmt::Debug {
    /// The coordinator it builds.
    type Coordinator: Coordinator;

    /// Checks the settings (the common ones with
    /// [`LeaseConfig::validate`](crate::LeaseConfig::validate) and its own),
    /// reading any files they name.
    fn validate(&self) -> Result<(), LeaseError>;

    /// The common settings.
    fn lease(&self) -> &LeaseConfig;

    /// A coordinator for these settings, each request bounded by `t`; its
    /// files are read here, once.
    fn coordinator(&self, t: Duration) -> Result<Self::Coordinator, LeaseError>;
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

/// An invalid common setting; the message names it as the `snowmint serve`
/// flag does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
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
    /// A datacenter outside 0..=31 (the core's message).
    #[error("{0}")]
    Datacenter(snowmint::Error),
}

/// Durations derived from the TTL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) ttl: Duration,
    /// Keep-alive period: three tries fit in the fence window.
    pub(crate) renew_every: Duration,
    /// Bound on one coordinator request.
    pub(crate) request: Duration,
}

impl Timing {
    pub(crate) fn new(ttl: Duration) -> Timing {
        let window = ttl.saturating_sub(fence_margin(ttl));
        let renew_every = (window / 3).max(Duration::from_millis(100));
        Timing {
            ttl,
            renew_every,
            request: renew_every.min(Duration::from_secs(2)),
        }
    }

    /// The fence deadline (on the lease clock) for a lease granted or
    /// renewed with `ttl` by a request sent at `sent`.
    pub(crate) fn deadline(sent: Duration, ttl: Duration) -> Duration {
        sent + ttl.saturating_sub(fence_margin(ttl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_closes_a_margin_before_the_lease_can_expire() {
        let sent = Duration::from_secs(100);
        for secs in [2, 3, 5, 10, 60, 3600] {
            let ttl = Duration::from_secs(secs);
            let margin = fence_margin(ttl);
            assert!(margin >= Duration::from_secs(1) && margin >= ttl / 5);
            assert!(margin < ttl);
            assert_eq!(Timing::deadline(sent, ttl), sent + ttl - margin);
            let timing = Timing::new(ttl);
            assert!(timing.renew_every * 3 <= ttl - margin, "{secs}");
            assert!(timing.request <= timing.renew_every);
        }
    }

    #[test]
    fn settings_are_checked_with_the_flag_name() {
        let o = LeaseConfig::default();
        assert_eq!(o.validate(), Ok(()));
        let o = o.lease_ttl(Duration::from_secs(1));
        assert_eq!(
            o.validate().unwrap_err().to_string(),
            "lease-ttl must be 2..=3600 whole seconds, got 1"
        );
        let o = o.lease_ttl(Duration::from_millis(2500));
        assert!(o.validate().unwrap_err().to_string().contains("got 2.5"));
        let o = o.lease_ttl(DEFAULT_LEASE_TTL).datacenter(32);
        assert_eq!(
            o.validate().unwrap_err().to_string(),
            "datacenter must be 0..=31, got 32"
        );
    }
}
