//! What idle `snowmint serve` processes cost the coordinator: the
//! library's generators (the other phases) have no keeper, but `serve`
//! renews and probes its reservation on a timer of its own, so its idle
//! cost is measured on real processes: `instances` of them, each holding an
//! identity and minting nothing, their requests counted over `watch` by
//! the coordinator itself.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::metrics::Counters;
use snowmint_testkit::etcd;
use snowmint_testkit::serve::{self, Listen, Output, Served};

/// How long the processes get to start and hold an identity.
const READY_LIMIT: Duration = Duration::from_secs(60);

/// What the idle processes cost the coordinator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleCost {
    /// How many `serve` processes idled.
    pub instances: usize,
    /// Over how long, seconds.
    pub seconds: f64,
    /// The coordinator's client requests (statements) per second, per
    /// process.
    pub requests_per_s: f64,
    /// Its mark writes (etcd's `Txn` requests) per second, per process.
    pub txns_per_s: f64,
}

/// Starts `instances` `serve` processes of `binary` with `args` (the
/// coordinator's flags; their logs in `logs`), waits until each is ready
/// and past its first renewal, then counts (`count`: the coordinator's
/// counters now) over `watch` while they idle. The processes are killed
/// before this returns.
///
/// # Errors
///
/// When a process does not start, exits, or is not ready within a minute,
/// or the counters cannot be read.
pub async fn idle_cost(
    binary: &Path,
    args: &[String],
    instances: usize,
    lease_ttl: u64,
    watch: Duration,
    logs: &Path,
    count: impl AsyncFn() -> anyhow::Result<Counters>,
) -> anyhow::Result<IdleCost> {
    let mut served = spawn_ready(binary, args, instances, logs).await?;
    // Past the start writes and the first renewal of each.
    tokio::time::sleep(Duration::from_secs(lease_ttl / 2 + 1)).await;
    let from = Instant::now();
    let before = count().await?;
    tokio::time::sleep(watch).await;
    let after = count().await?;
    let seconds = from.elapsed().as_secs_f64();
    still_running(&mut served)?;
    drop(served);
    let delta = after - before;
    let per = |n: f64| n / seconds / instances as f64;
    Ok(IdleCost {
        instances,
        seconds,
        requests_per_s: per(delta.requests),
        txns_per_s: per(delta.txns),
    })
}

/// Starts `instances` `serve` processes of `binary` with `args` (the
/// coordinator's flags), each on a loopback address of its own and its log
/// in `logs`, and waits until each is ready.
///
/// # Errors
///
/// When a process does not start, exits, or is not ready within a minute.
pub async fn spawn_ready(
    binary: &Path,
    args: &[String],
    instances: usize,
    logs: &Path,
) -> anyhow::Result<Vec<Served>> {
    std::fs::create_dir_all(logs).with_context(|| format!("create {}", logs.display()))?;
    let builders: Vec<serve::Builder> = (0..instances)
        .map(|i| {
            let ip = etcd::random_loopback();
            serve::Builder::new(binary)
                .name(format!("serve{i}"))
                .listen(Listen::Fixed(SocketAddr::from((
                    ip,
                    etcd::free_port_on(ip),
                ))))
                .args(args)
                .output(Output::File(logs.join(format!("serve{i}.log"))))
                .start_limit(READY_LIMIT)
        })
        .collect();
    tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        let served = serve::start_all(builders)?;
        for s in &served {
            s.wait_ready(READY_LIMIT.saturating_sub(start.elapsed()))?;
        }
        Ok(served)
    })
    .await?
}

/// Fails if any of `served` has exited.
///
/// # Errors
///
/// Naming the first that exited.
pub fn still_running(served: &mut [Served]) -> anyhow::Result<()> {
    for s in served.iter_mut() {
        if let Some(status) = s.try_wait()? {
            bail!("{} exited while idle with {status}", s.name());
        }
    }
    Ok(())
}
