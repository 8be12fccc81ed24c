//! `snowmint_server::serve` over an identity leased from a real etcd on
//! loopback: not ready until an identity is held; mints and `/readyz`
//! answer 503 while etcd is frozen and recover; `/metrics` shows the lease
//! session; a stop frees the identity at once. (The lease itself is tested
//! against `LeasedGenerator` directly in `crates/snowmint-etcd`.)
//!
//! Skipped with a printed reason when the `etcd` binary is missing, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use snowmint_server::{Config, EtcdSettings, IdentitySource, RunError};
use snowmint_testkit::etcd::EtcdServer;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// One `serve` on a loopback port, stopped by `stop`.
struct Served {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), RunError>>,
    client: reqwest::Client,
}

impl Served {
    async fn start(etcd: &str, prefix: &str, ttl: u64) -> Served {
        let mut settings = EtcdSettings::new([etcd]);
        settings.prefix = prefix.to_owned();
        settings.lease.ttl = Duration::from_secs(ttl);
        let mut config = Config::default();
        // Datacenter 0's 32 workers: a test can take the others away.
        settings.lease.datacenter = Some(0);
        config.identity_source = IdentitySource::Etcd(settings);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(snowmint_server::serve(config, listener, async {
            let _ = stopped.await;
        }));
        Served {
            addr,
            stop: Some(stop),
            task,
            client: reqwest::Client::new(),
        }
    }

    async fn get(&self, method: reqwest::Method, path: &str) -> (u16, String) {
        let response = self
            .client
            .request(method, format!("http://{}{path}", self.addr))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    async fn readyz(&self) -> (u16, String) {
        self.get(reqwest::Method::GET, "/readyz").await
    }

    async fn mint(&self, n: usize) -> (u16, String) {
        self.get(reqwest::Method::POST, &format!("/api/v1/ids?count={n}"))
            .await
    }

    async fn metrics(&self) -> String {
        self.get(reqwest::Method::GET, "/metrics").await.1
    }

    /// Polls `/readyz` until it answers `want`, for at most `limit`.
    async fn wait_readyz(&self, want: u16, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let (status, body) = self.readyz().await;
            if status == want {
                return body;
            }
            assert!(
                start.elapsed() < limit,
                "/readyz not {want} after {limit:?}: {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.await.unwrap().unwrap();
    }
}

fn identity_of(readyz: &str) -> (u64, u64) {
    let v: serde_json::Value = serde_json::from_str(readyz).unwrap();
    (
        v["datacenter"].as_u64().unwrap(),
        v["worker"].as_u64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_server_answers_503_and_exports_the_session_then_recovers() {
    let Some(mut etcd) = EtcdServer::start() else {
        return;
    };
    // A TTL whose request timeout (a sixth of it) a loaded machine meets.
    let ttl = 6;
    let served = Served::start(&etcd.url(), "/served", ttl).await;
    let ready = served.wait_readyz(200, Duration::from_secs(20)).await;
    let (dc, worker) = identity_of(&ready);
    assert_eq!(dc, 0, "scoped to datacenter 0");
    assert_eq!(served.mint(10).await.0, 200);
    let metrics = served.metrics().await;
    for line in [
        "snowmint_etcd_lease_state{state=\"held\"} 1".to_owned(),
        format!("snowmint_etcd_identity_info{{datacenter=\"0\",worker=\"{worker}\",lease="),
        "snowmint_etcd_lease_ttl_seconds 6".to_owned(),
        "snowmint_etcd_claims_total 1".to_owned(),
        "snowmint_ready 1".to_owned(),
        format!("snowmint_identity{{datacenter=\"0\",worker=\"{worker}\"}} 1"),
        "snowmint_etcd_renewals_unconfirmed_total 0".to_owned(),
    ] {
        assert!(metrics.contains(&line), "{line} not in {metrics}");
    }
    // Each endpoint's etcd version, asked at start beside the claim.
    let server_info = format!(
        "snowmint_etcd_server_info{{endpoint=\"{}\",version=\"3.",
        etcd.url()
    );
    let mut metrics = metrics;
    for _ in 0..100 {
        if metrics.contains(&server_info) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        metrics = served.metrics().await;
    }
    assert!(
        metrics.contains(&server_info),
        "{server_info} not in {metrics}"
    );
    // The lease session's families pass promtool too.
    if let Some(findings) = snowmint_testkit::prometheus::check_metrics(&metrics) {
        assert!(
            findings.is_empty(),
            "promtool check metrics: {findings}\n{metrics}"
        );
    }

    etcd.freeze();
    // Not ready within the TTL: the reservation writes stop succeeding
    // first (readiness trusts the store for one window), and the fence
    // closes a margin before the TTL of the last keep-alive sent runs out.
    // The TTL again is the margin for polling on a loaded machine.
    let body = served.wait_readyz(503, Duration::from_secs(ttl) * 2).await;
    assert!(body.contains("not ready"), "{body}");
    let start = Instant::now();
    loop {
        let metrics = served.metrics().await;
        if metrics.contains("snowmint_etcd_lease_state{state=\"fenced\"} 1") {
            assert!(metrics.contains("snowmint_ready 0"), "{metrics}");
            assert!(
                metrics.contains("snowmint_etcd_fenced_total 1"),
                "{metrics}"
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(ttl) * 2,
            "the session never said fenced: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Fenced: a mint says the identity is in doubt, in the error shape.
    let (status, body) = served.mint(2).await;
    assert_eq!(status, 503, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        error["error"].as_str().unwrap().contains("identity"),
        "{body}"
    );
    assert!(error["field"].is_null(), "{body}");

    etcd.thaw();
    let ready = served.wait_readyz(200, Duration::from_secs(30)).await;
    assert_eq!(identity_of(&ready), (0, worker), "its old identity first");
    assert_eq!(served.mint(10).await.0, 200);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_frees_its_identity_at_once() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    // A long TTL: an identity that is free again soon was revoked, not expired.
    let a = Served::start(&etcd.url(), "/freed", 30).await;
    let a_identity = identity_of(&a.wait_readyz(200, Duration::from_secs(20)).await);
    let b = Served::start(&etcd.url(), "/freed", 30).await;
    let b_identity = identity_of(&b.wait_readyz(200, Duration::from_secs(20)).await);
    assert_ne!(a_identity, b_identity);
    // Every other worker of datacenter 0 taken: a's is the one a stop frees.
    let others = (0..32u64)
        .filter(|w| ![a_identity, b_identity].contains(&(0, *w)))
        .map(|w| format!("/freed/identities/0/{w}"));
    snowmint_testkit::etcd::hold_keys(&etcd.url(), others, 600);
    let (status, body) = a.mint(100).await;
    assert_eq!(status, 200, "{body}");
    let a_ids: serde_json::Value = serde_json::from_str(&body).unwrap();
    let a_last: u64 = a_ids["ids"][99].as_str().unwrap().parse().unwrap();
    a.stop().await;

    let c = Served::start(&etcd.url(), "/freed", 30).await;
    let ready = c.wait_readyz(200, Duration::from_secs(10)).await;
    assert_eq!(
        identity_of(&ready),
        a_identity,
        "a's identity, long before its TTL"
    );
    let (status, body) = c.mint(1).await;
    assert_eq!(status, 200, "{body}");
    let c_ids: serde_json::Value = serde_json::from_str(&body).unwrap();
    let c_first: u64 = c_ids["ids"][0].as_str().unwrap().parse().unwrap();
    assert!(
        c_first > a_last,
        "c issued {c_first} at or below a's {a_last}"
    );
    b.stop().await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_etcd_setting_is_refused_before_serving() {
    let mut settings = EtcdSettings::new(["http://127.0.0.1:1"]);
    settings.lease.ttl = Duration::from_secs(1);
    let mut config = Config::default();
    config.identity_source = IdentitySource::Etcd(settings);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = snowmint_server::serve(config, listener, std::future::pending())
        .await
        .unwrap_err();
    let RunError::Start(start) = &err else {
        panic!("{err:?}");
    };
    assert!(start.is_usage(), "{err:?}");
    assert_eq!(
        err.to_string(),
        "lease-ttl must be 2..=3600 whole seconds, got 1"
    );
}

/// etcd's store revision, which counts its writes (puts, transactions
/// that wrote) and nothing else: keep-alives and reads leave it alone.
fn etcd_revision(url: &str) -> u64 {
    let out = std::process::Command::new("etcdctl")
        .args(["--endpoints", url, "get", "--prefix", "/", "--keys-only"])
        .args(["-w", "json"])
        .output()
        .expect("etcdctl runs");
    assert!(out.status.success(), "etcdctl: {out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["header"]["revision"].as_u64().expect("a revision")
}

/// An idle `serve --etcd` costs etcd its keep-alives, not a mark write
/// (a Raft write) a second: it probes etcd's writability every 15 s, and
/// `/readyz` stays 200 meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_writes_no_mark_every_second() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let served = Served::start(&etcd.url(), "/idle", 10).await;
    served.wait_readyz(200, Duration::from_secs(20)).await;
    assert_eq!(served.mint(1).await.0, 200);
    let before = etcd_revision(&etcd.url());
    // Eight idle seconds, watched through `/readyz` (whose calls probe
    // when a probe is due, as the server's own keeper does).
    let idle = Duration::from_secs(8);
    let start = Instant::now();
    while start.elapsed() < idle {
        let (status, body) = served.readyz().await;
        assert_eq!(status, 200, "{body}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let writes = etcd_revision(&etcd.url()) - before;
    assert!(
        writes <= 1,
        "{writes} writes to etcd in {idle:?} of idling (a probe is due every 15 s)"
    );
    served.stop().await;
}
