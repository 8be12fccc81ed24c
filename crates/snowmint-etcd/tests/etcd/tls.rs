//! `LeasedGenerator` over TLS against a real etcd that wants client
//! certificates (`--client-cert-auth`), with a CA and certificates made in
//! the test: it leases and mints with a client certificate, and the same
//! etcd refuses a client without one (so client authentication is on, and
//! is what the certificate passes).
//!
//! Skipped with a printed reason when the `etcd` binary is missing, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::collections::HashSet;
use std::time::Duration;

use snowmint_etcd::{EtcdConfig, LeaseState, LeasedGenerator};
use snowmint_testkit::etcd::EtcdServer;
use snowmint_testkit::pki::Pki;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_and_mints_with_a_client_certificate_and_is_refused_without_one() {
    let pki = Pki::new();
    let Some(etcd) = EtcdServer::start_tls(&pki) else {
        return;
    };
    let url = etcd.url();
    assert!(url.starts_with("https://"), "{url}");
    let config = || {
        EtcdConfig::new([url.clone()])
            .lease_ttl(Duration::from_secs(2))
            .prefix("/tls")
            .ca_cert(pki.ca())
    };

    let with_cert = config().client_cert(pki.client_cert(), pki.client_key());
    let minter = tokio::time::timeout(Duration::from_secs(20), LeasedGenerator::start(with_cert))
        .await
        .unwrap_or_else(|_| panic!("no identity within 20 s; etcd said: {}", etcd.log_tail()))
        .expect("a valid config");
    let identity = minter.ready().expect("ready once an identity is held");
    let mut ids = HashSet::new();
    for _ in 0..10 {
        for id in minter.next_ids(1000).unwrap() {
            assert_eq!(
                (id.datacenter(), id.worker()),
                (identity.datacenter(), identity.worker())
            );
            assert!(ids.insert(id), "a duplicate: {id}");
        }
    }
    assert_eq!(minter.metrics().state, LeaseState::Held);

    // The same CA, no client certificate: etcd ends every connection, so
    // the session never gets a lease and says why.
    let without_cert = LeasedGenerator::spawn(config()).expect("a valid config");
    let started = std::time::Instant::now();
    let error = loop {
        if let Some(error) = without_cert.metrics().last_error {
            break error;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no error reported within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(without_cert.ready().is_err(), "ready without a certificate");
    assert_eq!(without_cert.metrics().claims, 0, "{error}");
    assert!(without_cert.identity().is_none(), "{error}");
    without_cert.shutdown().await;

    // And plainly, with etcd's own client: a read without a certificate
    // fails, the same read with one succeeds.
    let read = |identity: bool| {
        let url = url.clone();
        let ca = std::fs::read(pki.ca()).unwrap();
        let cert = std::fs::read(pki.client_cert()).unwrap();
        let key = std::fs::read(pki.client_key()).unwrap();
        async move {
            let mut tls = etcd_client::TlsOptions::new()
                .ca_certificate(etcd_client::Certificate::from_pem(ca));
            if identity {
                tls = tls.identity(etcd_client::Identity::from_pem(cert, key));
            }
            let options = etcd_client::ConnectOptions::new()
                .with_tls(tls)
                .with_timeout(Duration::from_secs(5));
            let mut client = etcd_client::Client::connect([url], Some(options)).await?;
            client.get("/tls/", None).await.map(drop)
        }
    };
    read(true).await.expect("a read with a client certificate");
    let refused = read(false)
        .await
        .expect_err("a read without a client certificate");
    let chain = std::iter::successors(Some(&refused as &(dyn std::error::Error + 'static)), |e| {
        e.source()
    })
    .map(ToString::to_string)
    .collect::<Vec<_>>()
    .join(": ");
    println!("refused: {chain}; the session said: {error}");

    minter.shutdown().await;
}
