//! Debian's Prometheus for tests: `promtool check metrics` on an
//! exposition, and a real Prometheus server that scrapes one target and
//! evaluates alerting rules, on a loopback address of its own.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::etcd::{free_port_on, random_loopback};

/// What `promtool check metrics` says about `exposition` (empty: no
/// finding; it exits 0 on some findings, so its words are what counts).
/// `None` when promtool is not installed (after [`skip`](crate::skip)).
pub fn check_metrics(exposition: &str) -> Option<String> {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return crate::skip("promtool is not installed (Debian: prometheus)");
    };
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(exposition.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool runs");
    let mut said = String::from_utf8_lossy(&out.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() && said.trim().is_empty() {
        said = format!("promtool exited with {}", out.status);
    }
    Some(said.trim().to_owned())
}

/// A Prometheus server scraping one target, with rule files loaded; killed
/// (and its storage removed) when dropped.
#[derive(Debug)]
pub struct Prometheus {
    child: Child,
    /// Where its HTTP API listens.
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts `prometheus` scraping `target` (plain HTTP, `/metrics`, job
    /// `snowmint`) every `interval` and evaluating `rule_files` as often,
    /// with a fresh storage directory; returns once it answers ready (at
    /// most 60 s). `None` when Prometheus is not installed (after
    /// [`skip`](crate::skip)).
    ///
    /// # Panics
    ///
    /// When it cannot be started or does not become ready.
    pub fn start(
        target: SocketAddr,
        rule_files: &[&Path],
        interval: Duration,
    ) -> Option<Prometheus> {
        let binary = which("prometheus")?;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let rules: Vec<String> = rule_files
            .iter()
            .map(|p| {
                let path = std::fs::canonicalize(p)
                    .unwrap_or_else(|e| panic!("rule file {}: {e}", p.display()));
                format!("  - {:?}\n", path.display().to_string())
            })
            .collect();
        let every = format!("{}ms", interval.as_millis().max(1));
        let config = format!(
            "global:\n  scrape_interval: {every}\n  scrape_timeout: {every}\n  \
             evaluation_interval: {every}\nrule_files:\n{}scrape_configs:\n  \
             - job_name: snowmint\n    static_configs:\n      - targets: [\"{target}\"]\n",
            rules.concat()
        );
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).expect("write prometheus.yml");
        let ip = random_loopback();
        let addr = SocketAddr::from((ip, free_port_on(ip)));
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log file");
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let prometheus = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let started = Instant::now();
        while prometheus.get("/-/ready").map(|(status, _)| status) != Some(200) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "prometheus did not become ready: {}",
                prometheus.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(prometheus)
    }

    /// What Prometheus wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// `GET path` on its HTTP API: the status and the body; `None` if it
    /// does not answer.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        stream.write_all(request.as_bytes()).ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).ok()?;
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let body = &raw[end + 4..];
        let status = head.get(9..12)?.parse().ok()?;
        // Prometheus answers small bodies whole, large ones chunked.
        let body = if head.contains("transfer-encoding: chunked") {
            unchunk(body)
        } else {
            body.to_vec()
        };
        Some((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// The alerts Prometheus holds now (`/api/v1/alerts`): each one's
    /// labels, annotations and `state` (`pending` or `firing`).
    pub fn alerts(&self) -> Vec<serde_json::Value> {
        self.api("/api/v1/alerts")["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The scrape targets' health (`/api/v1/targets`), as Prometheus says.
    pub fn targets(&self) -> Vec<serde_json::Value> {
        self.api("/api/v1/targets")["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The `data` of an API answer (`Null` when it does not answer).
    fn api(&self, path: &str) -> serde_json::Value {
        self.get(path)
            .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
            .map(|v| v["data"].clone())
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chunked body, joined.
fn unchunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = body.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&body[..eol]);
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        let rest = &body[eol + 2..];
        if n == 0 || rest.len() < n {
            break;
        }
        out.extend_from_slice(&rest[..n]);
        body = rest[n..].strip_prefix(b"\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// `name` on `PATH`, or a skip.
fn which(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    });
    match found {
        Some(path) => Some(path),
        None => crate::skip(&format!("{name} is not installed (Debian: prometheus)")),
    }
}
