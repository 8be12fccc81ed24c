//! A real etcd server for one test: its own temporary data directory, free
//! loopback ports, killed when dropped.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The etcd binary, `$SNOWMINT_ETCD` or else `etcd` on the `PATH`, if it runs.
fn etcd_binary() -> Option<String> {
    let binary = std::env::var("SNOWMINT_ETCD").unwrap_or_else(|_| "etcd".to_owned());
    let runs = Command::new(&binary)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    runs.then_some(binary)
}

/// A free loopback port (the OS picks it; a tiny race with other processes
/// is handled by retrying the start).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// One etcd process.
pub struct EtcdServer {
    child: Child,
    client_addr: SocketAddr,
    dir: TempDir,
    frozen: bool,
}

impl EtcdServer {
    /// Starts etcd and waits until it answers; `None` (after printing why)
    /// when the etcd binary is not installed and services are not required.
    pub fn start() -> Option<EtcdServer> {
        let Some(binary) = etcd_binary() else {
            return super::skip("the `etcd` binary is not installed (apt-get install etcd-server)");
        };
        let mut last_error = String::new();
        for _ in 0..3 {
            match EtcdServer::try_start(&binary, free_port()) {
                Ok(server) => return Some(server),
                Err(e) => last_error = e,
            }
        }
        panic!("etcd did not start: {last_error}");
    }

    /// Starts etcd listening for clients on `client_port` (for tests that
    /// point an instance at a port before etcd is there).
    pub fn start_on(client_port: u16) -> Option<EtcdServer> {
        let Some(binary) = etcd_binary() else {
            return super::skip("the `etcd` binary is not installed (apt-get install etcd-server)");
        };
        Some(
            EtcdServer::try_start(&binary, client_port)
                .unwrap_or_else(|e| panic!("etcd did not start: {e}")),
        )
    }

    /// Whether the etcd binary is there (or its absence is a failure).
    pub fn available() -> bool {
        etcd_binary().is_some() || super::skip::<()>("the `etcd` binary is not installed").is_some()
    }

    fn try_start(binary: &str, client: u16) -> Result<EtcdServer, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let peer = free_port();
        let client_url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = File::create(dir.path().join("etcd.log")).map_err(|e| e.to_string())?;
        let child = Command::new(binary)
            .arg("--name=default")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=default={peer_url}"))
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("spawn {binary}: {e}"))?;
        let mut server = EtcdServer {
            child,
            client_addr: SocketAddr::from(([127, 0, 0, 1], client)),
            dir,
            frozen: false,
        };
        server.wait_healthy(Duration::from_secs(20))?;
        Ok(server)
    }

    /// Polls `/health` over plain HTTP until etcd reports it is serving.
    fn wait_healthy(&mut self, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("etcd exited with {status}: {}", self.log_tail()));
            }
            if health(self.client_addr).unwrap_or(false) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "etcd not healthy after {limit:?}: {}",
            self.log_tail()
        ))
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.client_addr)
    }

    /// The client address, for a proxy to forward to.
    pub fn addr(&self) -> SocketAddr {
        self.client_addr
    }

    /// Stops the process with SIGSTOP: it keeps its sockets but answers nothing.
    pub fn freeze(&mut self) {
        self.signal("-STOP");
        self.frozen = true;
    }

    /// Resumes a frozen process with SIGCONT.
    pub fn thaw(&mut self) {
        self.signal("-CONT");
        self.frozen = false;
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {} failed", self.child.id());
    }

    /// The last lines etcd logged, for failure messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.dir.path().join("etcd.log"))
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        // SIGKILL works on a stopped process too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// `GET /health` with a hand-written HTTP/1.0 request: true when etcd says
/// `"health":"true"`.
fn health(addr: SocketAddr) -> std::io::Result<bool> {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut body = String::new();
    stream.read_to_string(&mut body)?;
    Ok(body.contains("\"health\":\"true\""))
}
