//! A program minting under a lease, as the faults' scenarios run it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use snowmint::SnowflakeId;
use snowmint_etcd::{EtcdConfig, LeaseState, LeasedGenerator, MintError};

use super::log::{Batch, Log, check_log, wait_minted};

/// A batch of `n` from one identity, as the server mints them.
pub fn mint(minter: &LeasedGenerator, n: usize) -> Result<Vec<SnowflakeId>, MintError> {
    let mut ids = Vec::with_capacity(n);
    if let Some(pending) = minter.try_mint_ranges(n, |r| ids.extend(r))? {
        pending.finish(|r| ids.extend(r))?;
    }
    Ok(ids)
}

/// A program minting under a lease: a `LeasedGenerator`, and a thread
/// minting from it as fast as a busy client would.
pub struct Instance {
    pub name: String,
    pub minter: Arc<LeasedGenerator>,
    stop: Arc<AtomicBool>,
    minting: Option<JoinHandle<()>>,
}

impl Instance {
    pub fn start(name: &str, config: EtcdConfig, log: &Log) -> Instance {
        let minter = Arc::new(LeasedGenerator::spawn(config).expect("valid config"));
        let stop = Arc::new(AtomicBool::new(false));
        let minting = {
            let (minter, stop, log, name) = (
                Arc::clone(&minter),
                Arc::clone(&stop),
                Arc::clone(log),
                name.to_owned(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    match mint(&minter, 4) {
                        Ok(ids) => log.lock().unwrap().push(Batch {
                            instance: name.clone(),
                            started,
                            ended: Instant::now(),
                            ids,
                        }),
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        Instance {
            name: name.to_owned(),
            minter,
            stop,
            minting: Some(minting),
        }
    }

    pub fn identity(&self) -> Option<(u8, u8)> {
        self.minter.identity().map(|i| (i.datacenter(), i.worker()))
    }

    pub fn is_ready(&self) -> bool {
        self.minter.ready_identity().is_some()
    }

    pub fn state(&self) -> LeaseState {
        self.minter.metrics().state
    }

    pub async fn wait_ready(&self, limit: Duration) {
        let start = Instant::now();
        while !self.is_ready() {
            assert!(
                start.elapsed() < limit,
                "{} not ready after {limit:?}: {:?}",
                self.name,
                self.minter.metrics()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn stop_minting(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.minting.take() {
            t.join().unwrap();
        }
    }

    /// Graceful stop: minting stops, the lease is revoked.
    pub async fn shutdown(mut self) {
        self.stop_minting();
        self.minter.shutdown().await;
    }

    /// The end of a scenario of this instance alone: it mints once more
    /// (after whatever the test did last), stops gracefully, and the log
    /// of what it issued passes [`check_log`].
    pub async fn mints_again_then_stops(self, log: &Log) {
        wait_minted(log, &self.name, Instant::now()).await;
        let name = self.name.clone();
        self.shutdown().await;
        check_log(log, &[&name]);
    }

    /// As SIGKILL: minting stops, the lease is left to expire.
    pub fn kill(mut self) {
        self.stop_minting();
        let minter = Arc::clone(&self.minter);
        drop(self);
        Arc::into_inner(minter)
            .expect("the only handle left")
            .abandon();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop_minting();
    }
}
