//! The Redis a `--coordinator redis` run leases from: one `redis-server`
//! on 127.0.0.1 (the testkit's [`Redis`]), with an append-only file fsync'd
//! at every write (`appendfsync always`), so that a crash-restart loses
//! nothing it acknowledged and is still a new epoch (a new `run_id`), while
//! an empty restart deletes the data files first and loses everything, as
//! a Redis without persistence does. Each instance reaches it through a
//! proxy of its own (`serve --redis redis://PROXY/0 --redis-prefix
//! chaos`), which a partition cuts; the server keeps its port across
//! restarts, so the proxies need no moving.
//!
//! As with the databases, all but the first `free` workers of the
//! instances' datacenter are held by a crowd that never lets go
//! ([`RedisServer::crowd`]): records bound to a lease that never expires,
//! written under the server's current epoch. Redis forgets them at an
//! empty restart and a crash-restart makes them of another epoch, so the
//! harness binds the crowd again after every restart, in one script that
//! leaves alone any record an instance already claimed under the new
//! epoch: a fenced instance then has to take one of the few free
//! identities, often another instance's, with the wait of the bound.
//!
//! Every instance declares the prefix's longest TTL to be its own
//! (`--redis-longest-ttl` = `--lease-ttl`), so a claim after a restart
//! waits one TTL, not the default minute.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::redis::Redis;

/// The key prefix of the instances' identities.
pub const PREFIX: &str = "chaos";

/// The lease token of the crowd's records (the instances' tokens are
/// random 63-bit numbers).
pub const CROWD_LEASE: &str = "1";

/// When the crowd's records expire, Unix ms of Redis's clock: year 2255.
pub const CROWD_EXPIRES_MS: &str = "9000000000000";

/// Binds every identity of datacenter 0 from worker `ARGV[2]` to 31 to the
/// crowd under the current epoch, unless its record already is of that
/// epoch (an instance's claim since the restart, or the crowd's own).
/// ARGV: prefix, first crowd worker, the crowd's recorded TTL (ms).
/// Returns how many records it wrote.
const CROWD: &str = r"
local r = redis.call('INFO', 'replication')
local s = redis.call('INFO', 'server')
local cur = string.match(s, 'run_id:(%x+)') .. '/' .. string.match(r, 'master_replid:(%x+)')
local n = 0
for i = tonumber(ARGV[2]), 31 do
  local k = ARGV[1] .. ':id:' .. i
  if redis.call('HGET', k, 'epoch') ~= cur then
    redis.call('HSET', k, 'lease', ARGV[4], 'holder', 'chaos crowd', 'instance', '0',
      'ttl_ms', ARGV[3], 'expires_ms', ARGV[5], 'released', '0', 'epoch', cur)
    n = n + 1
  end
end
return n
";

/// The run's Redis, and what the crowd holds.
pub struct RedisServer {
    redis: Mutex<Redis>,
    /// How many workers of datacenter 0 are left to the instances.
    free: usize,
    /// The crowd's recorded TTL, ms.
    ttl_ms: u64,
}

impl RedisServer {
    /// Starts Redis on 127.0.0.1 with an append-only file fsync'd at every
    /// write, and binds the crowd (all workers of datacenter 0 from `free`
    /// on). Blocking.
    ///
    /// # Errors
    ///
    /// When `redis-server` (or `redis-cli`) is not installed, or the crowd
    /// cannot be bound.
    ///
    /// # Panics
    ///
    /// When it is installed but does not start: run it through
    /// [`unpanic`](super::database::unpanic).
    pub fn start(free: usize, ttl_ms: u64) -> anyhow::Result<RedisServer> {
        let redis = Redis::builder()
            .setting("appendonly", "yes")
            .setting("appendfsync", "always")
            .start()
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "redis-server or redis-cli is not installed (apt-get install redis-server)"
                )
            })?;
        let server = RedisServer {
            redis: Mutex::new(redis),
            free,
            ttl_ms,
        };
        server.crowd()?;
        Ok(server)
    }

    /// The lane in the report: `redis`.
    pub fn lane(&self) -> &'static str {
        "redis"
    }

    /// Where the server listens (the same across restarts).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], lock(&self.redis).port()))
    }

    /// The flags an instance is given to lease from Redis through `proxy`,
    /// with `ttl_s` as its TTL and the prefix's declared longest one.
    pub fn args(proxy: SocketAddr, ttl_s: u64) -> Vec<String> {
        vec![
            "--redis".to_owned(),
            format!("redis://{proxy}/0"),
            "--redis-prefix".to_owned(),
            PREFIX.to_owned(),
            "--redis-longest-ttl".to_owned(),
            ttl_s.to_string(),
            "--lease-ttl".to_owned(),
            ttl_s.to_string(),
        ]
    }

    /// Binds the crowd under the current epoch (records of another epoch,
    /// or none, taken; those of this epoch left alone); how many
    /// records it wrote. Blocking.
    ///
    /// # Errors
    ///
    /// When the script fails.
    pub fn crowd(&self) -> anyhow::Result<u64> {
        let redis = lock(&self.redis);
        let out = redis
            .try_cli(&[
                "EVAL",
                CROWD,
                "0",
                PREFIX,
                &self.free.to_string(),
                &self.ttl_ms.to_string(),
                CROWD_LEASE,
                CROWD_EXPIRES_MS,
            ])
            .map_err(anyhow::Error::msg)?;
        out.trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("the crowd script answered {out:?}"))
    }

    /// Redis's epoch as the coordinator reads it: `run_id/master_replid`
    /// (empty when it does not answer).
    pub fn epoch(&self) -> String {
        let redis = lock(&self.redis);
        let field = |section: &str, name: &str| -> String {
            redis
                .try_cli(&["INFO", section])
                .ok()
                .and_then(|info| {
                    info.lines()
                        .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
                        .map(str::to_owned)
                })
                .unwrap_or_default()
        };
        let run_id = field("server", "run_id");
        let replid = field("replication", "master_replid");
        format!("{}/{}", short(&run_id), short(&replid))
    }

    /// SIGSTOP (blocking; panics as the testkit's `pause` does).
    pub fn pause(&self) {
        lock(&self.redis).pause();
    }

    /// SIGCONT (blocking; panics as the testkit's `resume` does).
    pub fn resume(&self) {
        lock(&self.redis).resume();
    }

    /// SIGKILL, keeping its data files.
    pub fn kill(&self) {
        lock(&self.redis).kill();
    }

    /// Starts the killed server again on its port from its append-only
    /// file, then binds the crowd under the new epoch; how many records
    /// the crowd took. Blocking; panics when it does not start.
    ///
    /// # Errors
    ///
    /// When the crowd cannot be bound.
    pub fn start_again(&self) -> anyhow::Result<u64> {
        lock(&self.redis).start_again();
        self.crowd()
    }

    /// Kills it, deletes its data and starts it again on its port, empty,
    /// then binds the crowd; how many records the crowd took. Blocking;
    /// panics when it does not start.
    ///
    /// # Errors
    ///
    /// When the crowd cannot be bound.
    pub fn restart_empty(&self) -> anyhow::Result<u64> {
        lock(&self.redis).restart_empty();
        self.crowd()
    }

    /// How many keys it holds now (`DBSIZE`; `None` when it does not answer).
    pub fn keys(&self) -> Option<u64> {
        lock(&self.redis)
            .try_cli(&["DBSIZE"])
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Copies its log into `dir` as `redis.log`.
    pub fn keep_logs(&self, dir: &Path) {
        let _ = std::fs::copy(lock(&self.redis).log(), dir.join("redis.log"));
    }
}

/// The first 8 characters of an ID, for the report.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Runs `f` on `redis` on a blocking thread; its panic (a testkit call that
/// failed) is an error with the panic's message.
///
/// # Errors
///
/// When `f` panicked.
pub async fn blocking<T: Send + 'static>(
    redis: &Arc<RedisServer>,
    f: impl FnOnce(&RedisServer) -> T + Send + 'static,
) -> anyhow::Result<T> {
    let redis = Arc::clone(redis);
    super::database::unpanic(move || f(&redis)).await
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
