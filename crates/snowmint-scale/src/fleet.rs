//! The generators of a run, whatever they lease from: the fleet (one slot
//! each), how they are started and crash-stopped, the mint lanes that mint
//! from them, and the count of what they minted.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use snowmint_etcd::LeasedGenerator;

use crate::config::Config;

/// Threads that mint, each for its share of the generators.
pub(crate) const MINT_LANES: usize = 32;

/// How generator `i` is started (its session, of the coordinator the run
/// leases from).
pub(crate) type Launch = Arc<dyn Fn(usize) -> anyhow::Result<LeasedGenerator> + Send + Sync>;

/// The generators, by slot; a killed one leaves its slot empty.
#[derive(Default)]
pub(crate) struct Fleet {
    slots: Mutex<Vec<Option<Arc<LeasedGenerator>>>>,
}

impl Fleet {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Arc<LeasedGenerator>>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live generators of one mint lane.
    fn lane(&self, lane: usize) -> Vec<Arc<LeasedGenerator>> {
        self.lock()
            .iter()
            .enumerate()
            .filter(|(i, _)| i % MINT_LANES == lane)
            .filter_map(|(_, g)| g.clone())
            .collect()
    }

    /// Claim transactions the live generators' sessions have sent.
    pub(crate) fn claim_attempts(&self) -> u64 {
        self.lock()
            .iter()
            .flatten()
            .map(|g| g.metrics().claim_txns)
            .sum()
    }

    /// Identities held now with an open fence, and how many of them two
    /// generators hold at once (never, in one etcd cluster).
    pub(crate) fn held(&self) -> (usize, usize) {
        let mut identities: Vec<u16> = self
            .lock()
            .iter()
            .flatten()
            .filter_map(|g| g.ready_identity())
            .map(|i| i.ordinal())
            .collect();
        let all = identities.len();
        identities.sort_unstable();
        identities.dedup();
        (identities.len(), all - identities.len())
    }
}

/// Starts generators `range` into the fleet's slots with `launch`, off
/// the async workers (each builds a runtime of its own).
pub(crate) async fn start(
    fleet: &Arc<Fleet>,
    launch: &Launch,
    range: Range<usize>,
) -> anyhow::Result<()> {
    let (fleet, launch) = (Arc::clone(fleet), Arc::clone(launch));
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        for i in range {
            let generator = launch(i).with_context(|| format!("start generator {i}"))?;
            let mut slots = fleet.lock();
            if slots.len() <= i {
                slots.resize(i + 1, None);
            }
            slots[i] = Some(Arc::new(generator));
        }
        Ok(())
    })
    .await
    .context("the starting thread panicked")?
}

/// Waits until `want` identities are held, or `limit` passes: how long it
/// took, if it came.
pub(crate) async fn wait_held(
    fleet: &Fleet,
    want: usize,
    since: Instant,
    limit: Duration,
) -> Option<f64> {
    loop {
        if fleet.held().0 >= want {
            return Some(since.elapsed().as_secs_f64());
        }
        if since.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The process's resident memory, KiB.
pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Raises the open-file limit to its hard limit: each generator keeps a
/// few sockets and descriptors of its own.
pub(crate) fn raise_open_files() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// Minted runs of consecutive IDs: (first, how many).
pub(crate) type Runs = Arc<Mutex<Vec<(u64, u32)>>>;

/// One mint lane: every `every`, a batch from each of its generators.
pub(crate) fn mint_lane(
    fleet: Arc<Fleet>,
    lane: usize,
    every: Duration,
    batch: usize,
    stop: Arc<AtomicBool>,
    runs: Runs,
) {
    let mut mine = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let round = Instant::now();
        for generator in fleet.lane(lane) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            // Refusals (not held yet, fenced) are expected around the storm.
            if let Ok(range) = generator.next_ids(batch) {
                mine.push((u64::from(range.first()), range.len() as u32));
            }
        }
        while round.elapsed() < every && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(every));
        }
    }
    runs.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(mine);
}

/// How many IDs the runs hold, and how many of them more than once.
pub fn count_duplicates(runs: &mut [(u64, u32)]) -> (u64, u64) {
    runs.sort_unstable();
    let mut ids = 0;
    let mut duplicates = 0;
    let mut end = 0u64;
    for &(first, len) in runs.iter() {
        let last = first + u64::from(len);
        ids += u64::from(len);
        if first < end {
            duplicates += last.min(end) - first;
        }
        end = end.max(last);
    }
    (ids, duplicates)
}

/// Starts the mint lanes: [`MINT_LANES`] threads, each minting a batch
/// from its share of the fleet every `config.mint_every` until `stop`.
pub(crate) fn start_lanes(
    fleet: &Arc<Fleet>,
    config: &Config,
    stop: &Arc<AtomicBool>,
    runs: &Runs,
) -> anyhow::Result<Vec<std::thread::JoinHandle<()>>> {
    (0..MINT_LANES)
        .map(|lane| {
            let (fleet, stop, runs) = (Arc::clone(fleet), Arc::clone(stop), Arc::clone(runs));
            let (every, batch) = (config.mint_every, config.batch);
            std::thread::Builder::new()
                .name(format!("scale-mint-{lane}"))
                .spawn(move || mint_lane(fleet, lane, every, batch, stop, runs))
                .context("start a mint thread")
        })
        .collect()
}

/// Crash-stops the fleet's first `k` generators at once, as a crash stops
/// them (no revoke: their leases expire), waiting out a mint lane that
/// still holds a clone for its round; how many there were.
pub(crate) async fn crash_first(fleet: &Fleet, k: usize) -> anyhow::Result<usize> {
    let killed: Vec<Arc<LeasedGenerator>> = {
        let mut slots = fleet.lock();
        slots.iter_mut().take(k).filter_map(Option::take).collect()
    };
    let count = killed.len();
    tokio::task::spawn_blocking(move || {
        for mut generator in killed {
            loop {
                match Arc::try_unwrap(generator) {
                    Ok(generator) => {
                        generator.abandon();
                        break;
                    }
                    Err(shared) => {
                        generator = shared;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        }
    })
    .await?;
    Ok(count)
}

/// Stops the mint lanes and checks what they minted: no ID twice, some
/// minted, no identity held by two generators at once (each broken bound
/// pushed onto `failures`). Returns the IDs and the duplicates among them.
pub(crate) fn finish_minting(
    stop: &AtomicBool,
    lanes: Vec<std::thread::JoinHandle<()>>,
    runs: &Runs,
    held_twice: &Mutex<usize>,
    failures: &mut Vec<String>,
) -> (u64, u64) {
    stop.store(true, Ordering::Relaxed);
    for lane in lanes {
        let _ = lane.join();
    }
    let mut runs = std::mem::take(&mut *runs.lock().unwrap_or_else(PoisonError::into_inner));
    let (ids, duplicates) = count_duplicates(&mut runs);
    if duplicates > 0 {
        failures.push(format!("{duplicates} duplicate IDs among {ids}"));
    }
    if ids == 0 {
        failures.push("no ID was minted".to_owned());
    }
    let twice = *held_twice.lock().unwrap_or_else(PoisonError::into_inner);
    if twice > 0 {
        failures.push(format!(
            "{twice} identities were held by two generators at once"
        ));
    }
    (ids, duplicates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_ids_covered_twice() {
        let mut runs = vec![(10, 5), (0, 3), (12, 2), (20, 1), (14, 4)];
        // 0..3, 10..15, 12..14 (2 again), 14..18 (14 again), 20.
        assert_eq!(count_duplicates(&mut runs), (15, 3));
        assert_eq!(count_duplicates(&mut []), (0, 0));
    }
}
