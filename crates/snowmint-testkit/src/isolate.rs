//! Cutting one etcd member off from what the others send it, with iptables
//! (as root): a one-way partition, for a leader that must not hear of the
//! election that replaces it (etcd issue 15247).

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::{Command, Stdio};

/// iptables rules dropping the TCP packets sent to some local addresses
/// (and, with [`no_new_connections`](Isolation::no_new_connections), the
/// connections one user opens to some listeners); removed when dropped.
#[derive(Debug)]
pub struct Isolation(Vec<SocketAddrV4>, Vec<Vec<String>>);

impl Isolation {
    /// Drops every TCP packet to the listeners of process `pid` on `ip`
    /// other than port `client` (its peer listener), and to its connections
    /// to any of `peers` (where the others answer it). Take it while the
    /// process is stopped (SIGSTOP), so that it opens no new connection.
    ///
    /// # Errors
    ///
    /// When iptables is missing or refuses (not root), or nothing was found
    /// to cut.
    pub fn inbound(
        pid: u32,
        ip: Ipv4Addr,
        client: u16,
        peers: &[Ipv4Addr],
    ) -> Result<Isolation, String> {
        let to = sockets_of(pid, ip, client, peers);
        if to.is_empty() {
            return Err(format!("process {pid} has no peer sockets on {ip} to cut"));
        }
        let mut made = Isolation(Vec::new(), Vec::new());
        for addr in to {
            match rule("-I", addr) {
                Ok(true) => made.0.push(addr),
                Ok(false) => {
                    return Err(format!(
                        "`iptables -I INPUT -d {addr} -j DROP` failed (root?)"
                    ));
                }
                Err(e) => return Err(format!("iptables: {e}")),
            }
        }
        Ok(made)
    }

    /// Also refuses every new connection that user `uid` (the isolated
    /// process's own, and no other process's) opens to `listeners`: the
    /// rules above cover the sockets it has, and it re-dials its peers as
    /// soon as it resumes (etcd's stream readers do), on new local ports.
    ///
    /// # Errors
    ///
    /// When iptables refuses.
    pub fn no_new_connections(
        mut self,
        uid: u32,
        listeners: &[std::net::SocketAddr],
    ) -> Result<Isolation, String> {
        for listener in listeners {
            let args: Vec<String> = [
                "OUTPUT",
                "-p",
                "tcp",
                "--syn",
                "-m",
                "owner",
                "--uid-owner",
                &uid.to_string(),
                "-d",
                &listener.ip().to_string(),
                "--dport",
                &listener.port().to_string(),
                "-j",
                "DROP",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            match iptables("-I", &args) {
                Ok(true) => self.1.push(args),
                Ok(false) => return Err(format!("`iptables -I {}` failed", args.join(" "))),
                Err(e) => return Err(format!("iptables: {e}")),
            }
        }
        Ok(self)
    }

    /// The addresses whose packets are dropped.
    pub fn addrs(&self) -> &[SocketAddrV4] {
        &self.0
    }
}

impl Drop for Isolation {
    fn drop(&mut self) {
        for &addr in &self.0 {
            let _ = rule("-D", addr);
        }
        for args in &self.1 {
            let _ = iptables("-D", args);
        }
    }
}

fn iptables(op: &str, args: &[String]) -> std::io::Result<bool> {
    let status = Command::new("iptables")
        .arg("-w")
        .arg(op)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    Ok(status.success())
}

fn rule(op: &str, to: SocketAddrV4) -> std::io::Result<bool> {
    let status = Command::new("iptables")
        .args(["-w", op, "INPUT", "-p", "tcp", "-d", &to.ip().to_string()])
        .args(["--dport", &to.port().to_string(), "-j", "DROP"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    Ok(status.success())
}

/// The local ends of process `pid`'s TCP sockets: listening ones on `ip`
/// other than port `except`, and connected ones whose other end is on one
/// of `remotes` (from /proc/net/tcp and the process's descriptors).
fn sockets_of(pid: u32, ip: Ipv4Addr, except: u16, remotes: &[Ipv4Addr]) -> Vec<SocketAddrV4> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    // "0100007F:1F90", or in tcp6 a v4-mapped "0000000000000000FFFF00000100007F:1F90".
    let parse = |field: &str| -> Option<SocketAddrV4> {
        let (addr, port) = field.split_once(':')?;
        let addr = if addr.len() == 32 {
            addr.strip_prefix("0000000000000000FFFF0000")?
        } else {
            addr
        };
        let word = u32::from_str_radix(addr, 16).ok()?;
        Some(SocketAddrV4::new(
            Ipv4Addr::from(word.to_ne_bytes()),
            u16::from_str_radix(port, 16).ok()?,
        ))
    };
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() <= 9 || !inodes.contains(f[9]) {
                continue;
            }
            let (Some(local), Some(remote)) = (parse(f[1]), parse(f[2])) else {
                continue;
            };
            let wanted = match f[3] {
                "0A" => *local.ip() == ip && local.port() != except,
                "01" => remotes.contains(remote.ip()),
                _ => false,
            };
            if wanted && !found.contains(&local) {
                found.push(local);
            }
        }
    }
    found
}
