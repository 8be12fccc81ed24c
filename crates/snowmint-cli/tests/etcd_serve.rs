//! `snowmint serve --etcd` as real processes against a real etcd: two
//! instances lease distinct identities; SIGTERM frees one at once; SIGKILL
//! leaves one held until its lease expires, and the instance that takes it
//! over issues only above what the killed one issued.
//!
//! Skipped with a printed reason when the `etcd` binary is missing, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use snowmint_testkit::etcd::EtcdServer;

/// A `snowmint serve` child process.
struct Serve {
    child: Child,
    addr: SocketAddr,
}

impl Serve {
    fn start(etcd: &str, prefix: &str) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_snowmint"))
            .args(["serve", "--listen", "127.0.0.1:0", "--lease-ttl", "2"])
            .args(["--etcd", etcd, "--etcd-prefix", prefix])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn snowmint serve");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("snowmint: serving the explorer on http://") {
                    let addr: SocketAddr = rest.split('/').next().unwrap().parse().unwrap();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                } else {
                    eprintln!("serve: {line}");
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("snowmint serve printed its address");
        Serve { child, addr }
    }

    /// Status and body of one HTTP/1.0 request.
    fn http(&self, method: &str, path: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response[9..12].parse().unwrap();
        let body = response
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        (status, body)
    }

    /// Waits until `/readyz` says 200; returns (datacenter, worker).
    fn wait_ready(&self) -> (u64, u64) {
        let start = Instant::now();
        loop {
            let (status, body) = self.http("GET", "/readyz");
            if status == 200 {
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                return (
                    v["datacenter"].as_u64().unwrap(),
                    v["worker"].as_u64().unwrap(),
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "not ready: {status} {body}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn mint(&self, count: usize) -> Vec<u64> {
        let (status, body) = self.http("POST", &format!("/api/v1/ids?count={count}"));
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().parse().unwrap())
            .collect()
    }

    fn signal(&mut self, signal: &str) {
        let ok = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal}");
        self.child.wait().unwrap();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn etcdctl_get(etcd: &str, key: &str) -> String {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", etcd, "get", key, "--print-value-only"])
        .output()
        .expect("etcdctl");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn serve_leases_frees_on_sigterm_and_is_taken_over_after_sigkill() {
    let Some(mut etcd) = EtcdServer::start() else {
        return;
    };
    if Command::new("etcdctl").arg("version").output().is_err() {
        snowmint_testkit::skip::<()>(
            "the `etcdctl` binary is not installed (apt-get install etcd-client)",
        );
        return;
    }
    let url = etcd.url();
    let mut a = Serve::start(&url, "/cli");
    assert_eq!(a.wait_ready(), (0, 0));
    let mut b = Serve::start(&url, "/cli");
    assert_eq!(b.wait_ready(), (0, 1));
    let mut issued: Vec<u64> = Vec::new();
    for _ in 0..20 {
        issued.extend(a.mint(100));
        issued.extend(b.mint(100));
    }

    // etcd frozen: within the TTL both answer 503 to mints and /readyz, in
    // the contract's error shape; when it thaws they are ready again, each
    // with its old identity (a re-claim tries that one first).
    etcd.freeze();
    let start = Instant::now();
    while a.http("GET", "/readyz").0 != 503 || b.http("GET", "/readyz").0 != 503 {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "not fenced within the 2 s TTL"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, body) = a.http("POST", "/api/v1/ids?count=1");
    assert_eq!(status, 503, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        error["error"].as_str().unwrap().contains("identity"),
        "{body}"
    );
    assert!(error["field"].is_null(), "{body}");
    etcd.thaw();
    assert_eq!(a.wait_ready(), (0, 0));
    assert_eq!(b.wait_ready(), (0, 1));
    for _ in 0..5 {
        issued.extend(a.mint(100));
        issued.extend(b.mint(100));
    }
    let a_max = *issued
        .iter()
        .filter(|id| (*id >> 12) & 0x3ff == 0)
        .max()
        .unwrap();

    // SIGTERM: graceful; the lease is revoked before the process exits.
    b.signal("-TERM");
    assert_eq!(
        etcdctl_get(&url, "/cli/identities/0/1"),
        "",
        "b's identity is free at once"
    );

    // SIGKILL: a's identity stays held until its lease expires.
    a.signal("-KILL");
    assert_ne!(
        etcdctl_get(&url, "/cli/identities/0/0"),
        "",
        "a's lease outlives it"
    );
    let mark: u64 = etcdctl_get(&url, "/cli/reserved/0/0").parse().unwrap();
    assert!(mark >= snowmint::SnowflakeId::new(a_max).unwrap().timestamp_ms());

    // A newcomer gets the free (0, 1) at once, and (0, 0) after a's lease expires.
    let c = Serve::start(&url, "/cli");
    assert_eq!(c.wait_ready(), (0, 1));
    let start = Instant::now();
    while !etcdctl_get(&url, "/cli/identities/0/0").is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "a's lease never expired"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let d = Serve::start(&url, "/cli");
    assert_eq!(
        d.wait_ready(),
        (0, 0),
        "d takes over the killed instance's identity"
    );
    let d_ids = d.mint(500);
    assert!(
        d_ids[0] > a_max,
        "d issued {} at or below a's {a_max}",
        d_ids[0]
    );
    issued.extend(d_ids);
    issued.extend(c.mint(500));
    let unique: HashSet<_> = issued.iter().collect();
    assert_eq!(unique.len(), issued.len(), "a duplicate across instances");
}
