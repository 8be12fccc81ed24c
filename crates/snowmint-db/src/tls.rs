//! TLS to PostgreSQL as a libpq URL asks for it (`sslmode`, `sslrootcert`),
//! with rustls on ring. tokio-postgres itself knows `disable`, `prefer` and
//! `require`; the verifying modes and the root certificate are read here:
//!
//! | sslmode | without `sslrootcert` | with `sslrootcert=FILE` |
//! |---|---|---|
//! | `disable` | no TLS | no TLS |
//! | `prefer` (libpq's default) | TLS if the server offers it, not verified | TLS if offered, chain verified |
//! | `require` | TLS, not verified | TLS, chain verified |
//! | `verify-ca` | refused | TLS, chain verified |
//! | `verify-full` | refused | TLS, chain and host name verified |
//!
//! As libpq does: `prefer` and `require` alone encrypt but do not
//! authenticate the server; give `sslrootcert` (or `verify-full`) for that.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// How the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verify {
    /// Not at all (libpq's `prefer` and `require` without a root certificate).
    Nothing,
    /// Its chain to the root certificate (`verify-ca`).
    Chain,
    /// Its chain and the host name (`verify-full`).
    Full,
}

/// What the URL asked of TLS, taken out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Asked {
    /// The URL without `sslrootcert`, and with `sslmode=verify-*` as
    /// `require` (for tokio-postgres).
    pub(crate) url: String,
    pub(crate) verify_mode: Option<Verify>,
    pub(crate) root: Option<PathBuf>,
}

/// Takes `sslrootcert` and the verifying `sslmode`s out of a libpq URL
/// (`postgres://...?sslmode=verify-full&sslrootcert=/etc/ca.pem`); a
/// `key=value` connection string is left as it is.
pub(crate) fn asked(url: &str) -> Asked {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let (base, query) = match url.split_once('?') {
        Some((base, query)) if is_url => (base, query),
        _ => {
            return Asked {
                url: url.to_owned(),
                verify_mode: None,
                root: None,
            };
        }
    };
    let mut kept = Vec::new();
    let mut verify_mode = None;
    let mut root = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match (key, value) {
            ("sslrootcert", path) => {
                root = Some(PathBuf::from(snowmint_lease::percent_decode(path)))
            }
            ("sslmode", "verify-ca") => {
                verify_mode = Some(Verify::Chain);
                kept.push("sslmode=require".to_owned());
            }
            ("sslmode", "verify-full") => {
                verify_mode = Some(Verify::Full);
                kept.push("sslmode=require".to_owned());
            }
            _ => kept.push(pair.to_owned()),
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Asked {
        url,
        verify_mode,
        root,
    }
}

/// A TLS configuration for tokio-postgres.
#[derive(Clone)]
pub(crate) struct PgTls {
    config: Arc<rustls::ClientConfig>,
}

impl PgTls {
    /// Builds it; `root`'s certificates are read now. An error says which
    /// file or setting is wrong.
    pub(crate) fn new(verify: Verify, root: Option<&Path>) -> Result<PgTls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let chain = match (verify, root) {
            (Verify::Nothing, _) => None,
            (_, None) => {
                return Err(
                    "sslmode=verify-ca and verify-full need sslrootcert=FILE (the CA the \
                     server's certificate chains to)"
                        .to_owned(),
                );
            }
            (_, Some(path)) => {
                let fail =
                    |e: &dyn std::fmt::Display| format!("sslrootcert {}: {e}", path.display());
                let pem = std::fs::read(path).map_err(|e| fail(&e))?;
                let mut roots = rustls::RootCertStore::empty();
                let mut any = false;
                for cert in CertificateDer::pem_slice_iter(&pem) {
                    roots
                        .add(cert.map_err(|e| fail(&e))?)
                        .map_err(|e| fail(&e))?;
                    any = true;
                }
                if !any {
                    return Err(fail(&"no CERTIFICATE section found"));
                }
                let webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .build()
                        .map_err(|e| fail(&e))?;
                Some(webpki)
            }
        };
        let verifier = Arc::new(Verifier {
            chain,
            names: verify == Verify::Full,
            algorithms: provider.signature_verification_algorithms,
        });
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(PgTls {
            config: Arc::new(config),
        })
    }

    pub(crate) fn connector(&self) -> tokio_postgres_rustls::MakeRustlsConnect {
        tokio_postgres_rustls::MakeRustlsConnect::new((*self.config).clone())
    }
}

/// How the server's certificate is checked: not at all (libpq's `require`
/// without a root certificate: encrypted, not authenticated), or by WebPKI
/// with or without the host name (`verify-ca`). The handshake's signatures
/// are checked either way, with the same algorithms.
#[derive(Debug)]
struct Verifier {
    /// `None`: the certificate is not checked.
    chain: Option<Arc<WebPkiServerVerifier>>,
    /// Whether the host name must match (with `chain`).
    names: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifying_modes_and_the_root_are_taken_out_of_the_url() {
        let a = asked(
            "postgres://u:p@db:5432/ids?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x",
        );
        assert_eq!(
            a.url,
            "postgres://u:p@db:5432/ids?sslmode=require&application_name=x"
        );
        assert_eq!(a.verify_mode, Some(Verify::Full));
        assert_eq!(a.root, Some(PathBuf::from("/etc/ca.pem")));
        let a = asked("postgresql://db/ids?sslmode=verify-ca&sslrootcert=/ca.pem");
        assert_eq!(a.verify_mode, Some(Verify::Chain));
        let a = asked("postgres://db/ids");
        assert_eq!(
            (a.url.as_str(), a.verify_mode, a.root),
            ("postgres://db/ids", None, None)
        );
        let a = asked("host=db sslrootcert=/x");
        assert_eq!(a.url, "host=db sslrootcert=/x");
    }

    #[test]
    fn a_verifying_mode_needs_a_root_and_a_root_must_be_pem() {
        let e = PgTls::new(Verify::Full, None).err().unwrap();
        assert!(e.contains("need sslrootcert=FILE"), "{e}");
        let dir = std::env::temp_dir().join(format!("snowmint-db-tls-{}", std::process::id()));
        std::fs::write(&dir, "not a certificate").unwrap();
        let e = PgTls::new(Verify::Full, Some(&dir)).err().unwrap();
        assert!(e.contains("no CERTIFICATE section"), "{e}");
        std::fs::remove_file(&dir).unwrap();
        assert!(PgTls::new(Verify::Nothing, None).is_ok());
    }
}
