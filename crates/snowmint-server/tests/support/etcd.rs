//! A real etcd server for one test: its own temporary data directory, its
//! own loopback address, killed when dropped.
//!
//! Tests run in parallel, so two etcd processes must never share a port: a
//! port picked by binding port 0 is free only until that listener closes,
//! and a health check on it can be answered by another test's etcd. So
//! each etcd gets a random address of its own in 127.0.0.0/8 (all of it is
//! loopback on Linux), and after its health check the test makes sure the
//! listening socket on that address belongs to the etcd process it started.

use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
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

/// A random loopback address 127.X.Y.Z other than 127.0.0.0/16, which
/// other programs use.
fn random_loopback() -> Ipv4Addr {
    let r = RandomState::new().hash_one((std::process::id(), Instant::now()));
    let [x, y, z, ..] = r.to_le_bytes();
    Ipv4Addr::new(127, x.clamp(1, 254), y, z.clamp(1, 254))
}

/// A port nothing listens on at `ip` (the OS picks it). Nobody else uses
/// `ip`, so it stays free.
fn free_port_on(ip: Ipv4Addr) -> u16 {
    TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("bind {ip}:0: {e}"))
}

/// An address nothing listens on and no other test will use: a random
/// loopback address of its own and a free port on it. For an etcd started
/// later with [`EtcdServer::start_on`], or an endpoint that must stay dead.
pub fn unused_addr() -> SocketAddr {
    let ip = random_loopback();
    SocketAddr::from((ip, free_port_on(ip)))
}

/// Why a start failed.
#[derive(Debug)]
enum StartError {
    /// The address was taken: worth another try on another one.
    AddressTaken(String),
    /// Anything else.
    Other(String),
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
            match EtcdServer::try_start(&binary, unused_addr()) {
                Ok(server) => return Some(server),
                Err(StartError::AddressTaken(e)) => last_error = e,
                Err(StartError::Other(e)) => panic!("etcd did not start: {e}"),
            }
        }
        panic!("etcd did not start: {last_error}");
    }

    /// Starts etcd listening for clients on `client` (from [`unused_addr`],
    /// for tests that point an instance at an address before etcd is there).
    pub fn start_on(client: SocketAddr) -> Option<EtcdServer> {
        let Some(binary) = etcd_binary() else {
            return super::skip("the `etcd` binary is not installed (apt-get install etcd-server)");
        };
        Some(
            EtcdServer::try_start(&binary, client)
                .unwrap_or_else(|e| panic!("etcd did not start on {client}: {e:?}")),
        )
    }

    /// Whether the etcd binary is there (or its absence is a failure).
    pub fn available() -> bool {
        etcd_binary().is_some() || super::skip::<()>("the `etcd` binary is not installed").is_some()
    }

    fn try_start(binary: &str, client: SocketAddr) -> Result<EtcdServer, StartError> {
        let other = |e: std::io::Error| StartError::Other(e.to_string());
        let IpAddr::V4(ip) = client.ip() else {
            return Err(StartError::Other(format!("{client} is not IPv4")));
        };
        let dir = tempfile::tempdir().map_err(other)?;
        let peer_port = std::iter::repeat_with(|| free_port_on(ip))
            .find(|&p| p != client.port())
            .expect("an endless iterator");
        let peer = SocketAddr::from((ip, peer_port));
        let client_url = format!("http://{client}");
        let peer_url = format!("http://{peer}");
        let log = File::create(dir.path().join("etcd.log")).map_err(other)?;
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
            .stdout(log.try_clone().map_err(other)?)
            .stderr(log)
            .spawn()
            .map_err(|e| StartError::Other(format!("spawn {binary}: {e}")))?;
        let mut server = EtcdServer {
            child,
            client_addr: client,
            dir,
            frozen: false,
        };
        server.wait_healthy(Duration::from_secs(20))?;
        Ok(server)
    }

    /// Polls `/health` over plain HTTP until etcd reports it is serving,
    /// then makes sure it was this etcd that answered: the socket
    /// listening on the client address must be one of its own.
    fn wait_healthy(&mut self, limit: Duration) -> Result<(), StartError> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = self.log_tail();
                let message = format!("etcd exited with {status}: {log}");
                return Err(if log.contains("address already in use") {
                    StartError::AddressTaken(message)
                } else {
                    StartError::Other(message)
                });
            }
            if health(self.client_addr).unwrap_or(false) {
                return match listener_owned_by(self.client_addr, self.child.id()) {
                    Ok(()) => Ok(()),
                    Err(e) => Err(StartError::AddressTaken(e)),
                };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(StartError::Other(format!(
            "etcd not healthy after {limit:?}: {}",
            self.log_tail()
        )))
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.client_addr)
    }

    /// The etcd process's ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The client address, for a proxy to forward to.
    pub fn addr(&self) -> SocketAddr {
        self.client_addr
    }

    /// Stops the process with SIGSTOP: it keeps its sockets but answers
    /// nothing. Returns once every thread of it has stopped (`kill` only
    /// queues the signal; a thread running on another core could still
    /// answer a request sent right after).
    pub fn freeze(&mut self) {
        self.signal("-STOP");
        self.wait_threads("stopped", |state| state == 'T');
        self.frozen = true;
    }

    /// Resumes a frozen process with SIGCONT; returns once no thread of it
    /// is stopped.
    pub fn thaw(&mut self) {
        self.signal("-CONT");
        self.wait_threads("running", |state| state != 'T');
        self.frozen = false;
    }

    /// Waits until every thread's state (the letter in
    /// `/proc/PID/task/TID/stat`) passes `wanted`.
    fn wait_threads(&self, what: &str, wanted: impl Fn(char) -> bool) {
        let tasks = format!("/proc/{}/task", self.child.id());
        let start = Instant::now();
        loop {
            let states: Vec<char> = std::fs::read_dir(&tasks)
                .map(|dir| {
                    dir.filter_map(|task| {
                        let stat = std::fs::read_to_string(task.ok()?.path().join("stat")).ok()?;
                        // "TID (comm) S ...": the comm may hold spaces and parens.
                        stat.rsplit_once(')')?.1.trim_start().chars().next()
                    })
                    .collect()
                })
                .unwrap_or_default();
            if !states.is_empty() && states.iter().all(|&s| wanted(s)) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "etcd's threads not all {what} after 10 s: {states:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
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

/// Checks that the TCP socket listening on `addr` is one of process `pid`'s
/// open files: its inode from `/proc/net/tcp` (or `tcp6`, as an IPv4-mapped
/// address), found among the `socket:[INODE]` links of `/proc/PID/fd`.
pub fn listener_owned_by(addr: SocketAddr, pid: u32) -> Result<(), String> {
    let inode = listening_inode(addr).ok_or_else(|| format!("nothing listens on {addr}"))?;
    let wanted = format!("socket:[{inode}]");
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(|e| format!("cannot list /proc/{pid}/fd: {e}"))?;
    let owned = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|link| link.as_os_str() == wanted.as_str());
    if owned {
        Ok(())
    } else {
        Err(format!(
            "{addr} is served by another process than {pid} (socket inode {inode})"
        ))
    }
}

/// The inode of the socket in state LISTEN on `addr`, if any.
fn listening_inode(addr: SocketAddr) -> Option<u64> {
    let IpAddr::V4(ip) = addr.ip() else {
        return None;
    };
    // The kernel prints each 32-bit word of the address in host order.
    let word = |bytes: [u8; 4]| format!("{:08X}", u32::from_ne_bytes(bytes));
    let port = format!("{:04X}", addr.port());
    let v4 = format!("{}:{port}", word(ip.octets()));
    let mapped = ip.to_ipv6_mapped().octets();
    let v6 = format!(
        "{}{}{}{}:{port}",
        word([mapped[0], mapped[1], mapped[2], mapped[3]]),
        word([mapped[4], mapped[5], mapped[6], mapped[7]]),
        word([mapped[8], mapped[9], mapped[10], mapped[11]]),
        word([mapped[12], mapped[13], mapped[14], mapped[15]]),
    );
    for (table, local) in [("/proc/net/tcp", &v4), ("/proc/net/tcp6", &v6)] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st ... uid timeout inode
            if fields.len() > 9 && fields[1] == local.as_str() && fields[3] == "0A" {
                return fields[9].parse().ok();
            }
        }
    }
    None
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
