//! The synchronous face of etcd for the core's `ReservationStore`.
//!
//! The generator calls its store from its slow path, which may run on a
//! tokio worker thread, where `Handle::block_on` would panic and a nested
//! runtime would deadlock. So one dedicated thread owns a current-thread
//! runtime and its own etcd client; callers hand it jobs over a bounded
//! queue and wait for the answer with a timeout. Every wait is bounded: the
//! queue refuses when full, the caller gives up after `timeout`, and the
//! thread drops jobs whose caller has already given up.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread;
use std::time::{Duration, Instant};

use etcd_client::TlsOptions;

use crate::error::EtcdError;
use crate::keys::Keys;
use crate::ops::{self, Conn, SeenMark};

/// Jobs waiting for the thread; more means etcd is far behind.
const QUEUE: usize = 16;

enum Job {
    Load {
        n: u16,
        deadline: Instant,
        reply: SyncSender<Result<Option<u64>, EtcdError>>,
    },
    Store {
        n: u16,
        lease: i64,
        until_ms: u64,
        deadline: Instant,
        reply: SyncSender<Result<(), EtcdError>>,
    },
}

/// A handle to the reservation thread; the thread ends when the last
/// handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Bridge {
    jobs: SyncSender<Job>,
    timeout: Duration,
}

impl Bridge {
    /// Starts the thread. `timeout` bounds each call (queueing, request and
    /// answer together).
    pub(crate) fn start(
        endpoints: Vec<String>,
        tls: Option<TlsOptions>,
        keys: Keys,
        timeout: Duration,
    ) -> std::io::Result<Bridge> {
        let (jobs, rx) = mpsc::sync_channel(QUEUE);
        let (ready, started) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("snowmint-etcd-store".to_owned())
            .spawn(move || {
                // Built (and dropped) on its own thread, never inside the
                // caller's async context.
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => {
                        let _ = ready.send(Ok(()));
                        serve(runtime, rx, Conn::new(&endpoints, tls, timeout), keys);
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                    }
                }
            })?;
        started
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the thread stopped at start")))?;
        Ok(Bridge { jobs, timeout })
    }

    /// Identity `n`'s mark; see [`ops::load_mark`].
    pub(crate) fn load(&self, n: u16) -> Result<Option<u64>, EtcdError> {
        let (reply, answer) = mpsc::sync_channel(1);
        let deadline = Instant::now() + self.timeout;
        self.send(Job::Load { n, deadline, reply })?;
        self.wait(&answer)
    }

    /// Raises identity `n`'s mark while `lease` holds it; see [`ops::store_mark`].
    pub(crate) fn store(&self, n: u16, lease: i64, until_ms: u64) -> Result<(), EtcdError> {
        let (reply, answer) = mpsc::sync_channel(1);
        let deadline = Instant::now() + self.timeout;
        self.send(Job::Store {
            n,
            lease,
            until_ms,
            deadline,
            reply,
        })?;
        self.wait(&answer)
    }

    fn send(&self, job: Job) -> Result<(), EtcdError> {
        self.jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => EtcdError::QueueFull,
            TrySendError::Disconnected(_) => EtcdError::WorkerStopped,
        })
    }

    fn wait<T>(&self, answer: &Receiver<Result<T, EtcdError>>) -> Result<T, EtcdError> {
        match answer.recv_timeout(self.timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(EtcdError::Timeout {
                op: "reservation",
                after: self.timeout,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(EtcdError::WorkerStopped),
        }
    }
}

/// `conn`: one endpoint at a time, the next after a failure (see `ops::Conn`).
fn serve(runtime: tokio::runtime::Runtime, jobs: Receiver<Job>, mut conn: Conn, keys: Keys) {
    // Each mark as this thread last read or wrote it: the next write is
    // conditioned on it, one round trip when nobody else moved the mark.
    let mut seen: HashMap<u16, SeenMark> = HashMap::new();
    while let Ok(job) = jobs.recv() {
        let deadline = match &job {
            Job::Load { deadline, .. } | Job::Store { deadline, .. } => *deadline,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            continue; // its caller has given up; the reply channel is dropped
        }
        // The whole job, however many requests it makes, within its deadline.
        let job_done = async {
            let work = async {
                let client = match conn.client().await {
                    Ok(client) => client,
                    Err(e) => {
                        reply_err(job, e);
                        return false;
                    }
                };
                match job {
                    Job::Load { n, reply, .. } => {
                        let result = ops::load_mark(client, &keys, n, left).await;
                        let reached = reached_etcd(&result);
                        remember(&mut seen, n, &result);
                        let _ = reply.send(result.map(|mark| mark.value));
                        reached
                    }
                    Job::Store {
                        n,
                        lease,
                        until_ms,
                        reply,
                        ..
                    } => {
                        let known = seen.get(&n).copied();
                        let result =
                            ops::store_mark(client, &keys, n, lease, until_ms, known, left).await;
                        let reached = reached_etcd(&result);
                        if let Err(e @ EtcdError::DamagedMark { .. }) = &result {
                            tracing::error!(
                                error = %e,
                                "cannot raise a damaged reservation mark; not issuing past it"
                            );
                        }
                        remember(&mut seen, n, &result);
                        let _ = reply.send(result.map(|_| ()));
                        reached
                    }
                }
            };
            tokio::time::timeout(left, work).await.unwrap_or(false)
        };
        // On a timeout the caller gets `Timeout` from its own wait: the job
        // (and its reply channel) is dropped here.
        if !runtime.block_on(job_done) {
            conn.failed();
        }
    }
}

/// Keeps what a request saw of mark `n`, or forgets it after a failure
/// (a write that timed out may have landed or not).
fn remember(seen: &mut HashMap<u16, SeenMark>, n: u16, result: &Result<SeenMark, EtcdError>) {
    match result {
        Ok(mark) => {
            seen.insert(n, *mark);
        }
        Err(_) => {
            seen.remove(&n);
        }
    }
}

/// Whether a request got an answer from etcd (a refusal counts: the
/// endpoint works).
fn reached_etcd<T>(result: &Result<T, EtcdError>) -> bool {
    !result.as_ref().is_err_and(EtcdError::is_transport)
}

fn reply_err(job: Job, e: EtcdError) {
    match job {
        Job::Load { reply, .. } => {
            let _ = reply.send(Err(e));
        }
        Job::Store { reply, .. } => {
            let _ = reply.send(Err(e));
        }
    }
}
