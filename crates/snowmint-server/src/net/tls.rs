//! HTTPS: the certificate chain and key `snowmint serve --tls-cert PATH
//! --tls-key PATH` serves with, read from PEM files into a rustls
//! configuration (the ring provider; TLS 1.2 and 1.3; ALPN `h2` and
//! `http/1.1`).
//!
//! The files are read and checked at start ([`Config::check`](crate::Config::check)),
//! so a missing file, one that holds no PEM certificate or key, or a key
//! that does not belong to the certificate is a bad setting (exit status 2
//! in the `snowmint` binary) with a message naming the flag and the path,
//! never a failure on the first connection. The handshake itself runs in
//! each connection's task, within the header timeout (see [`http`](crate::net::accept)).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The PEM files HTTPS is served with.
///
/// ```
/// use snowmint_server::TlsFiles;
///
/// let files = TlsFiles::new("/nonexistent/cert.pem", "/nonexistent/key.pem");
/// assert_eq!(
///     files.server_config().unwrap_err().to_string(),
///     "tls-cert: cannot read /nonexistent/cert.pem: No such file or directory (os error 2)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, the server's certificate first (`--tls-cert`).
    pub cert: PathBuf,
    /// Its private key: PKCS#8, PKCS#1 (RSA) or SEC1 (EC) (`--tls-key`).
    pub key: PathBuf,
}

impl TlsFiles {
    /// The certificate chain at `cert` and its key at `key`.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsFiles {
        TlsFiles {
            cert: cert.into(),
            key: key.into(),
        }
    }

    /// Reads both files and builds the server's TLS configuration, offering
    /// `h2` and `http/1.1` by ALPN.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let chain = read(Flag::Cert, &self.cert)?;
        let chain = CertificateDer::pem_slice_iter(&chain)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::NotPem {
                flag: Flag::Cert,
                path: self.cert.clone(),
                what: "certificate",
                reason: e.to_string(),
            })?;
        if chain.is_empty() {
            return Err(TlsError::NotPem {
                flag: Flag::Cert,
                path: self.cert.clone(),
                what: "certificate",
                reason: "no CERTIFICATE section found".to_owned(),
            });
        }
        let key = read(Flag::Key, &self.key)?;
        let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| TlsError::NotPem {
            flag: Flag::Key,
            path: self.key.clone(),
            what: "private key",
            reason: match e {
                rustls::pki_types::pem::Error::NoItemsFound => {
                    "no PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY section found".to_owned()
                }
                other => other.to_string(),
            },
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Rustls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| TlsError::Key {
                key: self.key.clone(),
                cert: self.cert.clone(),
                reason: match e {
                    rustls::Error::InconsistentKeys(_) => {
                        "it does not belong to the certificate".to_owned()
                    }
                    other => other.to_string(),
                },
            })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn read(flag: Flag, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        flag,
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// Which flag a file came from, as error messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Flag {
    /// `--tls-cert`.
    Cert,
    /// `--tls-key`.
    Key,
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flag::Cert => "tls-cert",
            Flag::Key => "tls-key",
        })
    }
}

/// Why the HTTPS files cannot be used; the message names the flag and the
/// path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The file cannot be read.
    #[error("{flag}: cannot read {}: {reason}", path.display())]
    Read {
        /// Which flag.
        flag: Flag,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        reason: String,
    },
    /// The file holds no PEM section of the kind needed, or a damaged one.
    #[error("{flag}: {} holds no usable PEM {what}: {reason}", path.display())]
    NotPem {
        /// Which flag.
        flag: Flag,
        /// The file.
        path: PathBuf,
        /// `certificate` or `private key`.
        what: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The key does not belong to the certificate, or is of a kind rustls
    /// cannot sign with.
    #[error("tls-key: cannot use {} with the certificate in {}: {reason}", key.display(), cert.display())]
    Key {
        /// The key file.
        key: PathBuf,
        /// The certificate file.
        cert: PathBuf,
        /// Why.
        reason: String,
    },
    /// rustls refused the protocol settings (not expected).
    #[error("cannot set up TLS: {0}")]
    Rustls(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use snowmint_testkit::pki::Pki;

    #[test]
    fn a_matching_pair_offers_h2_and_http11() {
        let pki = Pki::new();
        let config = TlsFiles::new(pki.server_cert(), pki.server_key())
            .server_config()
            .unwrap();
        assert_eq!(config.alpn_protocols, [&b"h2"[..], &b"http/1.1"[..]]);
    }

    #[test]
    fn every_bad_file_is_named_with_its_flag() {
        let pki = Pki::new();
        let dir = pki.dir();
        let missing = dir.join("missing.pem");
        let not_pem = dir.join("not.pem");
        std::fs::write(&not_pem, "hello\n").unwrap();
        let error = |cert: &Path, key: &Path| {
            TlsFiles::new(cert, key)
                .server_config()
                .unwrap_err()
                .to_string()
        };
        let (cert, key) = (pki.server_cert(), pki.server_key());

        let e = error(&missing, &key);
        assert!(
            e.starts_with(&format!("tls-cert: cannot read {}: ", missing.display())),
            "{e}"
        );
        let e = error(&cert, &missing);
        assert!(
            e.starts_with(&format!("tls-key: cannot read {}: ", missing.display())),
            "{e}"
        );
        let e = error(&not_pem, &key);
        assert_eq!(
            e,
            format!(
                "tls-cert: {} holds no usable PEM certificate: no CERTIFICATE section found",
                not_pem.display()
            )
        );
        // A certificate where the key should be: no key in it.
        let e = error(&cert, &cert);
        assert!(
            e.starts_with(&format!(
                "tls-key: {} holds no usable PEM private key: ",
                cert.display()
            )),
            "{e}"
        );
        // Another certificate's key.
        let e = error(&cert, &pki.client_key());
        assert_eq!(
            e,
            format!(
                "tls-key: cannot use {} with the certificate in {}: it does not belong to the certificate",
                pki.client_key().display(),
                cert.display()
            )
        );
    }
}
