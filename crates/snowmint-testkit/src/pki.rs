//! Test certificates, made fresh for each test with `rcgen`: a CA, a
//! server certificate for `localhost` and `127.0.0.1` (more for other
//! addresses with [`Pki::issue_server`]), and a client certificate, each
//! key and certificate a PEM file in a temporary directory that lives as
//! long as the [`Pki`].
//!
//! ```
//! let pki = snowmint_testkit::pki::Pki::new();
//! let ca = std::fs::read_to_string(pki.ca()).unwrap();
//! assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"));
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use tempfile::TempDir;

/// A certificate and its key, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key (PKCS#8).
    pub key: PathBuf,
}

/// A test CA and the certificates it issued; see the [module docs](self).
pub struct Pki {
    dir: TempDir,
    ca: Issuer<'static, KeyPair>,
    server: Pair,
    client: Pair,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl Default for Pki {
    fn default() -> Pki {
        Pki::new()
    }
}

impl Pki {
    /// A new CA (`ca.pem`), a server certificate for `localhost` and
    /// `127.0.0.1` (`server.pem`, `server-key.pem`) and a client
    /// certificate (`client.pem`, `client-key.pem`).
    ///
    /// # Panics
    ///
    /// When the files cannot be written.
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "snowmint test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("the CA certificate");
        write(&dir.path().join("ca.pem"), &cert.pem());
        let ca = Issuer::new(params, key);
        let mut pki = Pki {
            server: Pair {
                cert: PathBuf::new(),
                key: PathBuf::new(),
            },
            client: Pair {
                cert: PathBuf::new(),
                key: PathBuf::new(),
            },
            dir,
            ca,
        };
        pki.server = pki.issue_server("server", &[]);
        pki.client = pki.issue(
            "client",
            "snowmint test client",
            Vec::new(),
            &[ExtendedKeyUsagePurpose::ClientAuth],
        );
        pki
    }

    /// A server certificate for `localhost`, `127.0.0.1` and `ips`, as
    /// `NAME.pem` and `NAME-key.pem`. It is good for client authentication
    /// too: etcd dials itself with its server certificate.
    pub fn issue_server(&self, name: &str, ips: &[IpAddr]) -> Pair {
        let mut names = vec![
            SanType::DnsName("localhost".try_into().expect("a DNS name")),
            SanType::IpAddress(IpAddr::from([127, 0, 0, 1])),
        ];
        names.extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        self.issue(
            name,
            "snowmint test server",
            names,
            &[
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )
    }

    fn issue(
        &self,
        name: &str,
        common_name: &str,
        names: Vec<SanType>,
        usages: &[ExtendedKeyUsagePurpose],
    ) -> Pair {
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.subject_alt_names = names;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = usages.to_vec();
        let cert = params.signed_by(&key, &self.ca).expect("a certificate");
        let pair = Pair {
            cert: self.dir.path().join(format!("{name}.pem")),
            key: self.dir.path().join(format!("{name}-key.pem")),
        };
        write(&pair.cert, &cert.pem());
        write(&pair.key, &key.serialize_pem());
        pair
    }

    /// The CA certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The certificate for `localhost` and `127.0.0.1`.
    pub fn server_cert(&self) -> PathBuf {
        self.server.cert.clone()
    }

    /// Its key.
    pub fn server_key(&self) -> PathBuf {
        self.server.key.clone()
    }

    /// The client certificate.
    pub fn client_cert(&self) -> PathBuf {
        self.client.cert.clone()
    }

    /// Its key.
    pub fn client_key(&self) -> PathBuf {
        self.client.key.clone()
    }

    /// The directory the files are in (removed with the `Pki`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

fn write(path: &Path, pem: &str) {
    std::fs::write(path, pem).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
