//! Real etcd servers on loopback: [`EtcdServer`], one member for one test
//! (its own temporary data directory, its own loopback address, killed when
//! dropped; with [`EtcdServer::start_tls`], clients must come over TLS with
//! a client certificate), and [`EtcdCluster`], several members running
//! Raft, for fault tests that kill, pause and restart them.
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
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::pki::{Pair, Pki};

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
pub fn random_loopback() -> Ipv4Addr {
    let r = RandomState::new().hash_one((std::process::id(), Instant::now()));
    let [x, y, z, ..] = r.to_le_bytes();
    Ipv4Addr::new(127, x.clamp(1, 254), y, z.clamp(1, 254))
}

/// A port nothing listens on at `ip` (the OS picks it). Nobody else uses
/// `ip` (one from [`random_loopback`]), so it stays free.
///
/// # Panics
///
/// When nothing can bind on `ip`.
pub fn free_port_on(ip: Ipv4Addr) -> u16 {
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

/// One etcd process, a cluster of one.
pub struct EtcdServer {
    child: Child,
    client_addr: SocketAddr,
    /// Where `/health` answers over plain HTTP: the client address, or the
    /// metrics listener of an etcd that wants client certificates.
    health_addr: SocketAddr,
    tls: bool,
    dir: TempDir,
}

impl EtcdServer {
    /// Starts etcd and waits until it answers; `None` (after printing why)
    /// when the etcd binary is not installed and services are not required.
    ///
    /// # Panics
    ///
    /// When etcd does not start, or is missing under
    /// `SNOWMINT_REQUIRE_SERVICES=1`.
    pub fn start() -> Option<EtcdServer> {
        let Some(binary) = etcd_binary() else {
            return crate::skip("the `etcd` binary is not installed (apt-get install etcd-server)");
        };
        let mut last_error = String::new();
        for _ in 0..3 {
            match EtcdServer::try_start(&binary, unused_addr(), None) {
                Ok(server) => return Some(server),
                Err(StartError::AddressTaken(e)) => last_error = e,
                Err(StartError::Other(e)) => panic!("etcd did not start: {e}"),
            }
        }
        panic!("etcd did not start: {last_error}");
    }

    /// Starts etcd serving clients over TLS only (`https://` URLs) with a
    /// server certificate from `pki` for its address, and wanting a
    /// certificate issued by `pki`'s CA from every client
    /// (`--client-cert-auth`); `None` as [`EtcdServer::start`].
    ///
    /// # Panics
    ///
    /// As [`EtcdServer::start`].
    pub fn start_tls(pki: &Pki) -> Option<EtcdServer> {
        let Some(binary) = etcd_binary() else {
            return crate::skip("the `etcd` binary is not installed (apt-get install etcd-server)");
        };
        let mut last_error = String::new();
        for _ in 0..3 {
            match EtcdServer::try_start(&binary, unused_addr(), Some(pki)) {
                Ok(server) => return Some(server),
                Err(StartError::AddressTaken(e)) => last_error = e,
                Err(StartError::Other(e)) => panic!("etcd did not start with TLS: {e}"),
            }
        }
        panic!("etcd did not start with TLS: {last_error}");
    }

    /// Starts etcd listening for clients on `client` (from [`unused_addr`],
    /// for tests that point an instance at an address before etcd is there).
    ///
    /// # Panics
    ///
    /// As [`EtcdServer::start`].
    pub fn start_on(client: SocketAddr) -> Option<EtcdServer> {
        let Some(binary) = etcd_binary() else {
            return crate::skip("the `etcd` binary is not installed (apt-get install etcd-server)");
        };
        Some(
            EtcdServer::try_start(&binary, client, None)
                .unwrap_or_else(|e| panic!("etcd did not start on {client}: {e:?}")),
        )
    }

    /// Whether the etcd binary is there (or its absence is a failure).
    pub fn available() -> bool {
        etcd_binary().is_some() || crate::skip::<()>("the `etcd` binary is not installed").is_some()
    }

    fn try_start(
        binary: &str,
        client: SocketAddr,
        pki: Option<&Pki>,
    ) -> Result<EtcdServer, StartError> {
        let other = |e: std::io::Error| StartError::Other(e.to_string());
        let IpAddr::V4(ip) = client.ip() else {
            return Err(StartError::Other(format!("{client} is not IPv4")));
        };
        let dir = tempfile::tempdir().map_err(other)?;
        let mut ports = std::iter::repeat_with(|| free_port_on(ip)).filter(|&p| p != client.port());
        let peer = SocketAddr::from((ip, ports.next().expect("an endless iterator")));
        let peer_url = format!("http://{peer}");
        let tls = pki.map(|pki| {
            let metrics = std::iter::repeat_with(|| free_port_on(ip))
                .find(|&p| p != client.port() && p != peer.port())
                .expect("an endless iterator");
            MemberTls {
                ca: pki.ca(),
                server: pki.issue_server(&format!("etcd-{ip}"), &[IpAddr::V4(ip)]),
                metrics: SocketAddr::from((ip, metrics)),
            }
        });
        let health_addr = tls.as_ref().map_or(client, |t| t.metrics);
        let child = spawn(
            binary,
            &Member {
                name: "default".to_owned(),
                client,
                peer,
                data_dir: dir.path().join("data"),
                log: dir.path().join("etcd.log"),
                tls,
                uid: None,
            },
            &format!("default={peer_url}"),
            None,
        )?;
        let mut server = EtcdServer {
            child,
            client_addr: client,
            health_addr,
            tls: pki.is_some(),
            dir,
        };
        server.wait_healthy(Duration::from_secs(20))?;
        Ok(server)
    }

    fn wait_healthy(&mut self, limit: Duration) -> Result<(), StartError> {
        let log = self.dir.path().join("etcd.log");
        wait_healthy(
            &mut self.child,
            self.client_addr,
            self.health_addr,
            &log,
            limit,
        )
    }

    /// The client URL, `http://127.X.Y.Z:PORT` (`https://` when started
    /// with [`EtcdServer::start_tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.client_addr)
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
    /// nothing. Returns once every thread of it has stopped.
    ///
    /// # Panics
    ///
    /// When the process is gone or does not stop within 10 s.
    pub fn freeze(&mut self) {
        crate::signal::stop(self.child.id(), Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("freeze etcd: {e}"));
    }

    /// Resumes a frozen process with SIGCONT; returns once no thread of it
    /// is stopped.
    ///
    /// # Panics
    ///
    /// When the process is gone or does not resume within 10 s.
    pub fn thaw(&mut self) {
        crate::signal::resume(self.child.id(), Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("thaw etcd: {e}"));
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

/// Where one etcd member listens and keeps its data.
#[derive(Debug, Clone)]
struct Member {
    name: String,
    client: SocketAddr,
    peer: SocketAddr,
    data_dir: PathBuf,
    log: PathBuf,
    tls: Option<MemberTls>,
    /// The user the member runs as, when the tests run as root: a cluster
    /// member's own, so that iptables can tell its packets from the others'
    /// (`cut_off`: its new connections to the peers are refused too).
    uid: Option<u32>,
}

/// A user ID of a cluster member's own (see [`Member::uid`]), when running
/// as root: unused by anything else on the machine, and unique among the
/// members this process starts.
fn member_uid() -> Option<u32> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % 64;
    Some(100_000 + (std::process::id() % 100_000) * 64 + n)
}

/// Makes `member`'s data directory its user's (and the cluster's
/// directory traversable by it).
fn give_to(member: &Member, cluster_dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Some(uid) = member.uid else {
        return Ok(());
    };
    std::fs::set_permissions(cluster_dir, std::fs::Permissions::from_mode(0o755))?;
    std::fs::create_dir_all(&member.data_dir)?;
    std::fs::set_permissions(&member.data_dir, std::fs::Permissions::from_mode(0o700))?;
    std::os::unix::fs::chown(&member.data_dir, Some(uid), Some(uid))
}

/// A member that serves clients over TLS and wants their certificates.
#[derive(Debug, Clone)]
struct MemberTls {
    /// The CA client certificates must come from.
    ca: PathBuf,
    /// The member's own certificate, for its client address.
    server: Pair,
    /// A plain HTTP listener for `/health` (and `/metrics`), so the test
    /// can wait for it without a client certificate.
    metrics: SocketAddr,
}

/// Starts one etcd member of the cluster `initial_cluster`
/// (`name=http://peer,...`); its log is appended to `member.log`.
fn spawn(
    binary: &str,
    member: &Member,
    initial_cluster: &str,
    token: Option<&str>,
) -> Result<Child, StartError> {
    let other = |e: std::io::Error| StartError::Other(e.to_string());
    let scheme = if member.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let client_url = format!("{scheme}://{}", member.client);
    let peer_url = format!("http://{}", member.peer);
    let log = File::options()
        .create(true)
        .append(true)
        .open(&member.log)
        .map_err(other)?;
    let mut command = Command::new(binary);
    if let Some(uid) = member.uid {
        use std::os::unix::process::CommandExt;
        command.uid(uid).gid(uid);
    }
    command
        .arg(format!("--name={}", member.name))
        .arg(format!("--data-dir={}", member.data_dir.display()))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster={initial_cluster}"))
        .arg("--log-level=warn");
    if let Some(token) = token {
        command.arg(format!("--initial-cluster-token={token}"));
    }
    if let Some(tls) = &member.tls {
        command
            .arg(format!("--cert-file={}", tls.server.cert.display()))
            .arg(format!("--key-file={}", tls.server.key.display()))
            .arg(format!("--trusted-ca-file={}", tls.ca.display()))
            .arg("--client-cert-auth")
            .arg(format!("--listen-metrics-urls=http://{}", tls.metrics));
    }
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(other)?)
        .stderr(log)
        .spawn()
        .map_err(|e| StartError::Other(format!("spawn {binary}: {e}")))
}

/// Polls `/health` over plain HTTP on `health` (the client address, or a
/// TLS member's metrics listener) until etcd reports it is serving, then
/// makes sure it was this etcd that answered: the socket listening on the
/// client address must be one of its own.
fn wait_healthy(
    child: &mut Child,
    client: SocketAddr,
    health: SocketAddr,
    log: &Path,
    limit: Duration,
) -> Result<(), StartError> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            let log = log_tail(log);
            let message = format!("etcd exited with {status}: {log}");
            return Err(if log.contains("address already in use") {
                StartError::AddressTaken(message)
            } else {
                StartError::Other(message)
            });
        }
        if self::health(health).unwrap_or(false) {
            return listener_owned_by(client, child.id())
                .and_then(|()| listener_owned_by(health, child.id()))
                .map_err(StartError::AddressTaken);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(StartError::Other(format!(
        "etcd on {client} not healthy after {limit:?}: {}",
        log_tail(log)
    )))
}

/// A cluster of etcd members running Raft on loopback, each on an address of
/// its own (see [`random_loopback`]); every member is killed when the cluster
/// is dropped.
///
/// Members can be killed, terminated, paused and restarted one at a time;
/// [`EtcdCluster::leader`] says which one leads.
pub struct EtcdCluster {
    binary: String,
    members: Vec<Member>,
    children: Vec<Option<Child>>,
    initial_cluster: String,
    dir: TempDir,
}

impl EtcdCluster {
    /// Starts `size` members and waits until each is healthy (a leader is
    /// elected) and owns its client socket.
    ///
    /// # Errors
    ///
    /// When the etcd binary is missing, or the cluster does not come up in
    /// three tries on fresh addresses.
    pub fn start(size: usize) -> Result<EtcdCluster, String> {
        let binary = etcd_binary()
            .ok_or("the `etcd` binary is not installed (apt-get install etcd-server)")?;
        let mut last_error = String::new();
        for _ in 0..3 {
            match EtcdCluster::try_start(&binary, size) {
                Ok(cluster) => return Ok(cluster),
                Err(StartError::AddressTaken(e)) => last_error = e,
                Err(StartError::Other(e)) => {
                    return Err(format!("etcd cluster did not start: {e}"));
                }
            }
        }
        Err(format!("etcd cluster did not start: {last_error}"))
    }

    fn try_start(binary: &str, size: usize) -> Result<EtcdCluster, StartError> {
        let dir = tempfile::tempdir().map_err(|e| StartError::Other(e.to_string()))?;
        let members: Vec<Member> = (0..size)
            .map(|i| {
                let ip = random_loopback();
                let client = free_port_on(ip);
                let peer = std::iter::repeat_with(|| free_port_on(ip))
                    .find(|&p| p != client)
                    .expect("an endless iterator");
                Member {
                    name: format!("etcd{i}"),
                    client: SocketAddr::from((ip, client)),
                    peer: SocketAddr::from((ip, peer)),
                    data_dir: dir.path().join(format!("etcd{i}")),
                    log: dir.path().join(format!("etcd{i}.log")),
                    tls: None,
                    uid: member_uid(),
                }
            })
            .collect();
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}=http://{}", m.name, m.peer))
            .collect::<Vec<_>>()
            .join(",");
        let token = dir
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let mut cluster = EtcdCluster {
            binary: binary.to_owned(),
            children: Vec::new(),
            members,
            initial_cluster,
            dir,
        };
        for member in &cluster.members {
            give_to(member, cluster.dir.path()).map_err(|e| StartError::Other(e.to_string()))?;
            let child = spawn(binary, member, &cluster.initial_cluster, token.as_deref())?;
            cluster.children.push(Some(child));
        }
        for i in 0..size {
            cluster.wait_member(i, Duration::from_secs(30))?;
        }
        Ok(cluster)
    }

    fn wait_member(&mut self, i: usize, limit: Duration) -> Result<(), StartError> {
        let member = &self.members[i];
        let child = self.children[i]
            .as_mut()
            .ok_or_else(|| StartError::Other(format!("{} is not running", member.name)))?;
        wait_healthy(child, member.client, member.client, &member.log, limit)
    }

    /// How many members the cluster has.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the cluster has no members (never, once started).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Member `i`'s name, `etcd<i>`.
    pub fn name(&self, i: usize) -> &str {
        &self.members[i].name
    }

    /// Member `i`'s client address, for a proxy to forward to.
    pub fn addr(&self, i: usize) -> SocketAddr {
        self.members[i].client
    }

    /// Every member's client URL.
    pub fn urls(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("http://{}", m.client))
            .collect()
    }

    /// Member `i`'s process ID, while it runs.
    pub fn pid(&mut self, i: usize) -> Option<u32> {
        let child = self.children[i].as_mut()?;
        match child.try_wait() {
            Ok(None) => Some(child.id()),
            _ => None,
        }
    }

    /// SIGKILLs member `i` and reaps it; `false` when it was not running.
    pub fn kill(&mut self, i: usize) -> bool {
        let running = self.pid(i).is_some();
        if let Some(mut child) = self.children[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        running
    }

    /// SIGTERMs member `i` (a graceful stop) and reaps it, SIGKILLing it
    /// after `limit`; `false` when it was not running.
    pub fn terminate(&mut self, i: usize, limit: Duration) -> bool {
        let Some(pid) = self.pid(i) else {
            self.children[i] = None;
            return false;
        };
        let _ = crate::signal::send(pid, rustix::process::Signal::TERM);
        let start = Instant::now();
        while start.elapsed() < limit && self.pid(i).is_some() {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill(i);
        true
    }

    /// Pauses member `i` with SIGSTOP (see [`crate::signal::stop`]).
    ///
    /// # Errors
    ///
    /// When it is not running or does not stop.
    pub fn pause(&mut self, i: usize) -> std::io::Result<()> {
        let pid = self
            .pid(i)
            .ok_or_else(|| std::io::Error::other(format!("{} is not running", self.name(i))))?;
        crate::signal::stop(pid, Duration::from_secs(10))
    }

    /// Resumes a paused member `i` with SIGCONT.
    ///
    /// # Errors
    ///
    /// When it is not running or does not resume.
    pub fn resume(&mut self, i: usize) -> std::io::Result<()> {
        let pid = self
            .pid(i)
            .ok_or_else(|| std::io::Error::other(format!("{} is not running", self.name(i))))?;
        crate::signal::resume(pid, Duration::from_secs(10))
    }

    /// Cuts paused member `i` off from everything the other members send it
    /// (a one-way partition: iptables drops the packets to its peer listener
    /// and to its connections to them) until the result is dropped; it
    /// still hears clients. See [`Isolation`](crate::isolate::Isolation).
    ///
    /// # Errors
    ///
    /// When it is not running, or iptables is missing or refuses (not root).
    pub fn cut_off(&mut self, i: usize) -> Result<crate::isolate::Isolation, String> {
        let pid = self
            .pid(i)
            .ok_or_else(|| format!("{} is not running", self.name(i)))?;
        let v4 = |a: SocketAddr| match a.ip() {
            IpAddr::V4(ip) => ip,
            IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
        };
        let others: Vec<usize> = (0..self.len()).filter(|&m| m != i).collect();
        let peers: Vec<Ipv4Addr> = others.iter().map(|&m| v4(self.members[m].client)).collect();
        let listeners: Vec<SocketAddr> = others.iter().map(|&m| self.members[m].peer).collect();
        let own = self.members[i].client;
        let isolation = crate::isolate::Isolation::inbound(pid, v4(own), own.port(), &peers)?;
        match self.members[i].uid {
            Some(uid) => isolation.no_new_connections(uid, &listeners),
            None => Ok(isolation),
        }
    }

    /// Starts member `i` again on its data directory and addresses (after
    /// [`kill`](Self::kill) or [`terminate`](Self::terminate)) and waits
    /// until it is healthy and owns its client socket.
    ///
    /// # Errors
    ///
    /// When it is still running, or does not come back within `limit`.
    pub fn restart(&mut self, i: usize, limit: Duration) -> Result<(), String> {
        if self.pid(i).is_some() {
            return Err(format!("{} is still running", self.name(i)));
        }
        let child = spawn(&self.binary, &self.members[i], &self.initial_cluster, None)
            .map_err(|e| format!("{e:?}"))?;
        self.children[i] = Some(child);
        self.wait_member(i, limit).map_err(|e| format!("{e:?}"))
    }

    /// Which member leads, as `etcdctl endpoint status -w json` says (asked of
    /// every member; `None` when none answers or they name no member of ours).
    pub fn leader(&self) -> Option<usize> {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.urls().join(",")))
            .args(["--command-timeout=2s", "endpoint", "status", "-w", "json"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let statuses: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        statuses.as_array()?.iter().find_map(|entry| {
            let status = &entry["Status"];
            let leader = status["leader"].as_u64()?;
            (status["header"]["member_id"].as_u64()? == leader)
                .then(|| {
                    let endpoint = entry["Endpoint"].as_str()?;
                    self.urls().iter().position(|u| u == endpoint)
                })
                .flatten()
        })
    }

    /// The last lines member `i` logged, for failure messages.
    pub fn log_tail(&self, i: usize) -> String {
        log_tail(&self.members[i].log)
    }

    /// The directory holding every member's data and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        // SIGKILL works on a stopped process too.
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

/// Puts each of `keys` into the etcd at `url` under one lease of `ttl_secs`
/// (with `etcdctl`), so that those identities are held by "someone else":
/// claims pick among free identities at random, and a test that needs "the
/// one free identity" takes the others away with this. Panics if etcdctl
/// fails (a test's set-up).
pub fn hold_keys(url: &str, keys: impl IntoIterator<Item = String>, ttl_secs: u64) {
    let etcdctl = |args: &[&str]| {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={url}"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("etcdctl runs");
        assert!(
            out.status.success(),
            "etcdctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("etcdctl prints text")
    };
    // "lease 694d7b1c30f0a00b granted with TTL(600s)"
    let granted = etcdctl(&["lease", "grant", &ttl_secs.to_string()]);
    let lease = granted
        .split_whitespace()
        .nth(1)
        .expect("etcdctl names the lease")
        .to_owned();
    for key in keys {
        etcdctl(&["put", &format!("--lease={lease}"), &key, "someone else"]);
    }
}
