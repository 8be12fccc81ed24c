//! The scale run against Redis (`--coordinator redis`): the phases of
//! `phases.rs` (claim, steady state, one waiter too many, a storm of crashed
//! holders, idle `serve` processes), with the identities leased from one
//! real `redis-server` of its own (no persistence, `noeviction`, started by
//! `snowmint_testkit::redis`), and what it costs Redis as Redis counts it:
//! `INFO commandstats`, the commands clients sent. Every request of a
//! holder is one `EVALSHA`; Redis counts the commands its script runs too
//! (`INFO` twice for the epoch, `TIME`, `HMGET`, `HSET`, ...), and those
//! (the commands the scripts call, which no client here sends, and the
//! harness's own `INFO`) are left out.
//!
//! - The prefix declares its longest TTL equal to the run's lease TTL
//!   ([`RedisConfig::longest_ttl`]): on a fresh Redis no identity has a
//!   record, and a missing record is untrusted (it cannot be told from a
//!   lost one), so the first claim of each identity waits that bound before
//!   it issues; at the default 60 s the claim phase would be a minute
//!   longer, and nothing else would change.
//! - Redis does not count commands per client (7.0 has no `tot-cmds`), so
//!   the waiter reaches Redis through a counting proxy of this process, and
//!   the commands it forwarded are the waiter's cost.
//! - The identities the run does not use (with fewer than 1024) are held
//!   by filler records of the current epoch whose lease never ends.
//!
//! `summary.json` has the keys of the etcd run (`etcd_requests_per_s_*` are
//! then Redis's commands per second, `etcd_txns_per_s` its script calls)
//! and `coordinator`; there is no timeline, so no `report.html`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use snowmint_redis::{LeasedGenerator, RedisConfig};
use snowmint_testkit::redis::Redis;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::config::{Config, Outcome};
use crate::fleet::Launch;
use crate::metrics::Counters;
use crate::phases::{self, Coordinator, Words};

/// The generators' key prefix.
const PREFIX: &str = "scale";
/// The `serve` processes' prefix: identities of their own.
const SERVE_PREFIX: &str = "scale-serve";

/// The run's Redis, the waiter's proxy, and the lease settings.
struct RedisRun {
    redis: Redis,
    /// Commands the waiter's proxy forwarded.
    waiter_commands: Arc<AtomicU64>,
    waiter_port: u16,
    lease_ttl: u64,
}

impl RedisRun {
    /// Starts Redis and the waiter's proxy, and holds every identity from
    /// `identities` on with the filler.
    async fn start(identities: usize, lease_ttl: u64) -> anyhow::Result<RedisRun> {
        let redis = tokio::task::spawn_blocking(|| {
            Redis::builder()
                // 1024 holders keep two connections each.
                .setting("maxclients", "10000")
                .setting("maxmemory-policy", "noeviction")
                .start()
        })
        .await?
        .context("redis-server is not installed")?;
        if identities < 1024 {
            let info = cli(&redis, &["INFO"])?;
            let field = |name: &str| {
                info.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim().to_owned())
                    .with_context(|| format!("INFO has no {name}"))
            };
            let epoch = format!("{}/{}", field("run_id:")?, field("master_replid:")?);
            for n in identities..1024 {
                cli(
                    &redis,
                    &[
                        "HSET",
                        &format!("{PREFIX}:id:{n}"),
                        "lease",
                        "filler",
                        "holder",
                        "scale filler",
                        "instance",
                        "filler",
                        "ttl_ms",
                        &(lease_ttl * 1000).to_string(),
                        "expires_ms",
                        "9000000000000",
                        "released",
                        "0",
                        "epoch",
                        &epoch,
                        "mark",
                        "0",
                    ],
                )?;
            }
        }
        let waiter_commands = Arc::new(AtomicU64::new(0));
        let waiter_port = proxy(redis.port(), Arc::clone(&waiter_commands)).await?;
        Ok(RedisRun {
            redis,
            waiter_commands,
            waiter_port,
            lease_ttl,
        })
    }

    fn config(&self, url: String) -> RedisConfig {
        let ttl = Duration::from_secs(self.lease_ttl);
        RedisConfig::new(url)
            .prefix(PREFIX)
            .longest_ttl(ttl)
            .lease_ttl(ttl)
    }
}

fn cli(redis: &Redis, args: &[&str]) -> anyhow::Result<String> {
    redis.try_cli(args).map_err(anyhow::Error::msg)
}

/// The commands the scripts call (`redis.call`): counted by Redis beside
/// the script itself, part of the one request.
const IN_SCRIPTS: [&str; 6] = ["exists", "hget", "hmget", "hset", "info", "time"];

/// Redis's command counts now: the commands clients sent (every command
/// but those the scripts call, and the harness's `INFO`), and the script
/// calls among them.
fn commandstats(redis: &Redis) -> anyhow::Result<Counters> {
    let out = cli(redis, &["INFO", "commandstats"])?;
    let mut counts = Counters::default();
    for line in out.lines() {
        let Some((name, stats)) = line.trim().split_once(':') else {
            continue;
        };
        let Some(name) = name.strip_prefix("cmdstat_") else {
            continue;
        };
        let calls: f64 = stats
            .split(',')
            .find_map(|f| f.strip_prefix("calls="))
            .and_then(|c| c.parse().ok())
            .with_context(|| format!("commandstats: {line:?}"))?;
        if IN_SCRIPTS.contains(&name) {
            continue;
        }
        counts.requests += calls;
        if matches!(name, "evalsha" | "eval") {
            counts.txns += calls;
        }
    }
    if counts.requests == 0.0 && !out.contains("cmdstat_") {
        bail!("unexpected INFO commandstats: {out:?}");
    }
    Ok(counts)
}

/// A proxy on 127.0.0.1 to Redis at `port` that counts the commands
/// (RESP arrays, or inline lines) its clients send into `commands`; its port.
async fn proxy(port: u16, commands: Arc<AtomicU64>) -> anyhow::Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let local = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let commands = Arc::clone(&commands);
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(("127.0.0.1", port)).await else {
                    return;
                };
                let (mut client_rx, mut client_tx) = client.into_split();
                let (mut server_rx, mut server_tx) = server.into_split();
                let up = async move {
                    let mut pending = Vec::new();
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = match client_rx.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if server_tx.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        pending.extend_from_slice(&buf[..n]);
                        while let Some(used) = command_len(&pending) {
                            commands.fetch_add(1, Ordering::Relaxed);
                            pending.drain(..used);
                        }
                    }
                    let _ = server_tx.shutdown().await;
                };
                let down = async move {
                    let _ = tokio::io::copy(&mut server_rx, &mut client_tx).await;
                    let _ = client_tx.shutdown().await;
                };
                tokio::join!(up, down);
            });
        }
    });
    Ok(local)
}

/// The length of the first whole command in `buf` (a RESP array of bulk
/// strings, or an inline line), if it is all there.
fn command_len(buf: &[u8]) -> Option<usize> {
    let line = |from: usize| -> Option<(usize, &[u8])> {
        let end = buf[from..].windows(2).position(|w| w == b"\r\n")? + from;
        Some((end + 2, &buf[from..end]))
    };
    if buf.first()? != &b'*' {
        let end = buf.iter().position(|&b| b == b'\n')?;
        return Some(end + 1);
    }
    let (mut at, head) = line(0)?;
    let parts: usize = std::str::from_utf8(&head[1..]).ok()?.parse().ok()?;
    for _ in 0..parts {
        let (next, head) = line(at)?;
        let len: usize = std::str::from_utf8(head.get(1..)?).ok()?.parse().ok()?;
        at = next + len + 2;
        if at > buf.len() {
            return None;
        }
    }
    Some(at)
}

impl Coordinator for RedisRun {
    const WORDS: Words = Words {
        who: "Redis ",
        requests: "commands",
        claims: "scripts",
        writes: "script calls",
        wrote: "called a script",
    };
    const SAMPLE_EVERY: Duration = Duration::from_millis(500);

    fn name(&self) -> Option<&'static str> {
        Some("redis")
    }

    fn launcher(&self) -> Launch {
        let config = self.config(self.redis.url());
        Arc::new(move |i| {
            Ok(LeasedGenerator::spawn(
                config.clone().holder(format!("scale {i}")),
            )?)
        })
    }

    fn spawn_waiter(&self) -> Box<dyn FnOnce() -> anyhow::Result<LeasedGenerator> + Send> {
        let config = self
            .config(format!("redis://127.0.0.1:{}/0", self.waiter_port))
            .holder("scale waiter");
        Box::new(move || Ok(LeasedGenerator::spawn(config)?))
    }

    async fn counts(&self) -> anyhow::Result<Counters> {
        commandstats(&self.redis)
    }

    async fn waiter_requests(&self) -> anyhow::Result<f64> {
        Ok(self.waiter_commands.load(Ordering::Relaxed) as f64)
    }

    /// Under a prefix of their own, declaring the TTL as its bound.
    fn serve_args(&self) -> Vec<String> {
        vec![
            "--redis".to_owned(),
            self.redis.url(),
            "--redis-prefix".to_owned(),
            SERVE_PREFIX.to_owned(),
            "--redis-longest-ttl".to_owned(),
            self.lease_ttl.to_string(),
            "--lease-ttl".to_owned(),
            self.lease_ttl.to_string(),
        ]
    }

    /// Every request is a script call: keep-alives and marks alike.
    fn serve_writes_are_marks(&self) -> bool {
        false
    }
}

/// Runs the phases against one `redis-server`.
///
/// # Errors
///
/// When Redis does not start or cannot be counted.
pub async fn run(config: Config) -> anyhow::Result<Outcome> {
    phases::prepare(&config)?;
    let redis = RedisRun::start(config.identities, config.lease_ttl).await?;
    phases::run(config, redis).await
}

#[cfg(test)]
mod tests {
    use super::command_len;

    #[test]
    fn commands_are_counted_whole() {
        let two = b"*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n*1\r\n$4\r\nPING\r\n";
        assert_eq!(command_len(two), Some(22));
        assert_eq!(command_len(&two[22..]), Some(14));
        assert_eq!(command_len(&two[..20]), None);
        assert_eq!(command_len(b"PING\r\n"), Some(6));
        assert_eq!(command_len(b"*1\r\n$4\r\nPI"), None);
    }
}
