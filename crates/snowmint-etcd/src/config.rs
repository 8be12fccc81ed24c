//! What an etcd lease session needs to know: the endpoints, the key prefix,
//! TLS, and the common lease settings.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::TlsOptions;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use snowmint_lease::{LeaseConfig, LeaseError, LeaseSource};

use crate::coordinator::EtcdCoordinator;
use crate::keys::Keys;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "/snowmint";

/// Where and how to lease an identity: a builder, so options can be added
/// without breaking callers.
///
/// TLS to etcd: [`ca_cert`](EtcdConfig::ca_cert) with `https://` endpoints,
/// and [`client_cert`](EtcdConfig::client_cert) for an etcd that wants
/// client certificates (`--client-cert-auth`).
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
///     config.clone().lease_ttl(Duration::from_secs(1)).validate().unwrap_err().to_string(),
///     "lease-ttl must be 2..=3600 whole seconds, got 1"
/// );
///
/// // One etcd cluster per region, each region its own datacenter: only the
/// // 32 workers of datacenter 5 are leased.
/// let config = config.datacenter(5);
/// assert_eq!(config.datacenter_scope(), Some(5));
/// assert_eq!(config.validate(), Ok(()));
/// assert_eq!(
///     config.datacenter(32).validate().unwrap_err().to_string(),
///     "datacenter must be 0..=31, got 32"
/// );
/// ```
///
/// The settings every coordinator shares (`lease_ttl`, `datacenter`,
/// `holder`, `generator`, `lease` and their getters) are the lease crate's
/// ([`snowmint_lease::lease_settings`]).
#[derive(Clone)]
pub struct EtcdConfig {
    pub(crate) endpoints: Vec<String>,
    pub(crate) prefix: String,
    /// The settings every coordinator shares (TTL, datacenter, holder,
    /// generator factory, clocks).
    lease: LeaseConfig,
    /// `--etcd-ca`: the CA etcd's certificate must chain to.
    ca: Option<PathBuf>,
    /// `--etcd-cert`, `--etcd-key`: this client's certificate and key.
    client: Option<(PathBuf, PathBuf)>,
}

impl fmt::Debug for EtcdConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdConfig")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .field("lease", &self.lease)
            .field("ca", &self.ca)
            .field("client", &self.client)
            .finish()
    }
}

snowmint_lease::lease_settings!(EtcdConfig);

impl EtcdConfig {
    /// etcd client URLs (`http://10.0.0.1:2379`, ...) with the defaults:
    /// prefix [`DEFAULT_PREFIX`], a [`DEFAULT_LEASE_TTL`](crate::DEFAULT_LEASE_TTL)
    /// lease, this host and process as the holder, the system clocks.
    /// Surrounding spaces of each URL are ignored (`a, b` as typed in a flag).
    pub fn new<I, S>(endpoints: I) -> EtcdConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: DEFAULT_PREFIX.to_owned(),
            lease: LeaseConfig::default(),
            ca: None,
            client: None,
        }
    }

    /// TLS to etcd: etcd's certificate must chain to a CA certificate in the
    /// PEM file at `path` (`--etcd-ca`); the endpoints must then be
    /// `https://` URLs. Read when the session starts (and by
    /// [`validate`](EtcdConfig::validate)), not at each connection.
    #[must_use]
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> EtcdConfig {
        self.ca = Some(path.into());
        self
    }

    /// TLS to etcd: present this certificate chain (PEM, the client's
    /// certificate first) and its private key (PEM) to an etcd started with
    /// `--client-cert-auth` (`--etcd-cert`, `--etcd-key`). Needs
    /// [`ca_cert`](EtcdConfig::ca_cert).
    #[must_use]
    pub fn client_cert(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> EtcdConfig {
        self.client = Some((cert.into(), key.into()));
        self
    }

    /// The key prefix: clusters with different prefixes share one etcd
    /// without sharing identities (and so mint overlapping IDs).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> EtcdConfig {
        self.prefix = prefix.into();
        self
    }

    /// For tests only: `false` lets every keep-alive etcd answers move the
    /// fence, unconfirmed, as before etcd issue 15247 was guarded against
    /// (a deposed leader's answer then extends the fence past the lease).
    #[doc(hidden)]
    #[must_use]
    pub fn confirm_renewals(mut self, confirm: bool) -> EtcdConfig {
        self.lease = self.lease.confirm_renewals(confirm);
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

    /// Checks the values, and reads the TLS files; the error names the
    /// setting (as the `snowmint serve` flag is named), the value or the
    /// file, and what is allowed.
    ///
    /// ```
    /// use snowmint_etcd::EtcdConfig;
    ///
    /// let config = EtcdConfig::new(["https://10.0.0.1:2379"]);
    /// assert_eq!(
    ///     config.validate().unwrap_err().to_string(),
    ///     "etcd-ca is needed for https:// endpoints (the CA etcd's certificate chains to), \
    ///      got etcd https://10.0.0.1:2379 without it"
    /// );
    /// let config = EtcdConfig::new(["http://10.0.0.1:2379"]).ca_cert("/etc/etcd/ca.pem");
    /// assert_eq!(
    ///     config.validate().unwrap_err().to_string(),
    ///     "etcd must be https:// URLs when etcd-ca is set, got http://10.0.0.1:2379"
    /// );
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.endpoints.is_empty() || self.endpoints.iter().any(|e| e.trim().is_empty()) {
            return Err(ConfigError::Endpoints {
                got: self.endpoints.join(","),
            });
        }
        self.lease.validate()?;
        if !self.prefix.starts_with('/') || self.prefix.chars().any(char::is_whitespace) {
            return Err(ConfigError::Prefix {
                got: self.prefix.clone(),
            });
        }
        self.tls_options().map(drop)
    }

    /// The client's TLS settings, the files read and checked (a key that
    /// does not belong to its certificate is found here, not at the first
    /// connection); `None` for plain HTTP.
    pub(crate) fn tls_options(&self) -> Result<Option<TlsOptions>, ConfigError> {
        let endpoints = || self.endpoints.iter().map(|e| e.trim());
        let Some(ca) = &self.ca else {
            if let Some(https) = endpoints().find(|e| e.starts_with("https://")) {
                return Err(ConfigError::CaMissing {
                    endpoint: https.to_owned(),
                });
            }
            if self.client.is_some() {
                return Err(ConfigError::ClientCertWithoutCa);
            }
            return Ok(None);
        };
        if let Some(plain) = endpoints().find(|e| e.starts_with("http://")) {
            return Err(ConfigError::PlainEndpoint {
                endpoint: plain.to_owned(),
            });
        }
        let ca_pem = read(TlsFlag::Ca, ca)?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in certificates(TlsFlag::Ca, ca, &ca_pem)? {
            roots.add(cert).map_err(|e| ConfigError::NotPem {
                flag: TlsFlag::Ca,
                path: ca.clone(),
                what: "CA certificate",
                reason: e.to_string(),
            })?;
        }
        let mut options =
            TlsOptions::new().ca_certificate(etcd_client::Certificate::from_pem(ca_pem));
        if let Some((cert, key)) = &self.client {
            let cert_pem = read(TlsFlag::Cert, cert)?;
            let key_pem = read(TlsFlag::Key, key)?;
            let chain = certificates(TlsFlag::Cert, cert, &cert_pem)?;
            let private_key =
                PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| ConfigError::NotPem {
                    flag: TlsFlag::Key,
                    path: key.clone(),
                    what: "private key",
                    reason: match e {
                        rustls::pki_types::pem::Error::NoItemsFound => {
                            "no PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY section found"
                                .to_owned()
                        }
                        other => other.to_string(),
                    },
                })?;
            // What the client's TLS connector will do with them: a key that
            // does not match the certificate fails here.
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .and_then(|b| {
                    b.with_root_certificates(roots)
                        .with_client_auth_cert(chain, private_key)
                })
                .map_err(|e| ConfigError::Key {
                    key: key.clone(),
                    cert: cert.clone(),
                    reason: match e {
                        rustls::Error::InconsistentKeys(_) => {
                            "it does not belong to the certificate".to_owned()
                        }
                        other => other.to_string(),
                    },
                })?;
            options = options.identity(etcd_client::Identity::from_pem(cert_pem, key_pem));
        }
        Ok(Some(options))
    }
}

fn read(flag: TlsFlag, path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| ConfigError::Read {
        flag,
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// The certificates in a PEM file: at least one.
fn certificates(
    flag: TlsFlag,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let not_pem = |reason: String| ConfigError::NotPem {
        flag,
        path: path.to_owned(),
        what: "certificate",
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| not_pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(not_pem("no CERTIFICATE section found".to_owned()));
    }
    Ok(certs)
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
    /// A common lease setting (TTL, datacenter).
    #[error(transparent)]
    Lease(#[from] snowmint_lease::ConfigError),
    /// Not starting with `/`, or with spaces.
    #[error("etcd-prefix must start with '/' and contain no spaces, got {got:?}")]
    Prefix {
        /// The prefix asked for.
        got: String,
    },
    /// An `https://` endpoint, but no CA to check etcd's certificate with.
    #[error(
        "etcd-ca is needed for https:// endpoints (the CA etcd's certificate chains to), \
         got etcd {endpoint} without it"
    )]
    CaMissing {
        /// The first `https://` endpoint.
        endpoint: String,
    },
    /// TLS is set up, but an endpoint is `http://`.
    #[error("etcd must be https:// URLs when etcd-ca is set, got {endpoint}")]
    PlainEndpoint {
        /// The first `http://` endpoint.
        endpoint: String,
    },
    /// A client certificate without TLS.
    #[error("etcd-cert and etcd-key need etcd-ca and https:// endpoints (TLS to etcd)")]
    ClientCertWithoutCa,
    /// A TLS file cannot be read.
    #[error("{flag}: cannot read {}: {reason}", path.display())]
    Read {
        /// Which setting.
        flag: TlsFlag,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        reason: String,
    },
    /// A TLS file holds no PEM section of the kind needed, or a damaged one.
    #[error("{flag}: {} holds no usable PEM {what}: {reason}", path.display())]
    NotPem {
        /// Which setting.
        flag: TlsFlag,
        /// The file.
        path: PathBuf,
        /// `certificate`, `CA certificate` or `private key`.
        what: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The client key does not belong to the client certificate, or is of
    /// a kind rustls cannot sign with.
    #[error("etcd-key: cannot use {} with the certificate in {}: {reason}", key.display(), cert.display())]
    Key {
        /// The key file.
        key: PathBuf,
        /// The certificate file.
        cert: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Which TLS setting a file came from, named as the `snowmint serve` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFlag {
    /// `--etcd-ca`.
    Ca,
    /// `--etcd-cert`.
    Cert,
    /// `--etcd-key`.
    Key,
}

impl fmt::Display for TlsFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsFlag::Ca => "etcd-ca",
            TlsFlag::Cert => "etcd-cert",
            TlsFlag::Key => "etcd-key",
        })
    }
}

impl LeaseSource for EtcdConfig {
    type Coordinator = EtcdCoordinator;

    fn validate(&self) -> Result<(), LeaseError> {
        EtcdConfig::validate(self).map_err(|e| LeaseError::Config(Box::new(e)))
    }

    fn lease(&self) -> &LeaseConfig {
        &self.lease
    }

    fn coordinator(&self, t: Duration) -> Result<EtcdCoordinator, LeaseError> {
        let tls = self
            .tls_options()
            .map_err(|e| LeaseError::Config(Box::new(e)))?;
        Ok(EtcdCoordinator::new(
            &self.endpoints,
            tls,
            Keys::new(&self.prefix),
            t,
        ))
    }
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
        assert!(matches!(o.validate(), Err(ConfigError::Lease(_))));
        assert!(o.validate().unwrap_err().to_string().contains("got 2.5"));
        let o = o.lease_ttl(crate::DEFAULT_LEASE_TTL).prefix("snowmint");
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

    #[test]
    fn tls_settings_are_checked_with_the_flag_and_the_file() {
        let pki = snowmint_testkit::pki::Pki::new();
        let https = || EtcdConfig::new(["https://127.0.0.1:2379"]);
        let error = |config: EtcdConfig| config.validate().unwrap_err().to_string();

        assert_eq!(https().ca_cert(pki.ca()).validate(), Ok(()));
        let full = https()
            .ca_cert(pki.ca())
            .client_cert(pki.client_cert(), pki.client_key());
        assert_eq!(full.validate(), Ok(()));
        assert!(full.tls_options().unwrap().is_some());
        assert!(
            EtcdConfig::new(["http://127.0.0.1:2379"])
                .tls_options()
                .unwrap()
                .is_none()
        );

        assert!(error(https()).starts_with("etcd-ca is needed for https:// endpoints"));
        assert_eq!(
            error(
                EtcdConfig::new(["https://127.0.0.1:2379", " http://127.0.0.2:2379"])
                    .ca_cert(pki.ca())
            ),
            "etcd must be https:// URLs when etcd-ca is set, got http://127.0.0.2:2379"
        );
        assert_eq!(
            error(
                EtcdConfig::new(["http://127.0.0.1:2379"])
                    .client_cert(pki.client_cert(), pki.client_key())
            ),
            "etcd-cert and etcd-key need etcd-ca and https:// endpoints (TLS to etcd)"
        );

        let missing = pki.dir().join("missing.pem");
        let not_pem = pki.dir().join("not.pem");
        std::fs::write(&not_pem, "hello\n").unwrap();
        let e = error(https().ca_cert(&missing));
        assert!(
            e.starts_with(&format!("etcd-ca: cannot read {}: ", missing.display())),
            "{e}"
        );
        assert_eq!(
            error(https().ca_cert(&not_pem)),
            format!(
                "etcd-ca: {} holds no usable PEM certificate: no CERTIFICATE section found",
                not_pem.display()
            )
        );
        let with_client = |cert: &std::path::Path, key: &std::path::Path| {
            error(https().ca_cert(pki.ca()).client_cert(cert, key))
        };
        let e = with_client(&missing, &pki.client_key());
        assert!(e.starts_with("etcd-cert: cannot read "), "{e}");
        let e = with_client(&pki.client_cert(), &missing);
        assert!(e.starts_with("etcd-key: cannot read "), "{e}");
        let e = with_client(&pki.client_cert(), &pki.client_cert());
        assert!(
            e.starts_with(&format!(
                "etcd-key: {} holds no usable PEM private key: ",
                pki.client_cert().display()
            )),
            "{e}"
        );
        assert_eq!(
            with_client(&pki.client_cert(), &pki.server_key()),
            format!(
                "etcd-key: cannot use {} with the certificate in {}: it does not belong to the certificate",
                pki.server_key().display(),
                pki.client_cert().display()
            )
        );
    }
}
