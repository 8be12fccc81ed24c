//! The synchronous face of the coordinator for the core's `ReservationStore`.
//!
//! The generator calls its store from its slow path, which may run on a
//! tokio worker thread, where `Handle::block_on` would panic and a nested
//! runtime would deadlock. So one dedicated thread owns a current-thread
//! runtime and a coordinator handle of its own; callers hand it jobs over a
//! bounded queue and wait for the answer with a timeout. Every wait is
//! bounded: the queue refuses when full, the caller gives up after
//! `timeout`, and the thread answers a job whose deadline has passed with a
//! timeout instead of running it.
//!
//! This is the one piece of the protocol's plumbing a simulation replaces
//! (`MarkIo`): a synchronous wait for another task cannot run on the one
//! thread a simulation has. It holds no rule: what a mark write may do is
//! the coordinator's `raise_mark`, and what the store does with its answer
//! is `LeaseStore`'s.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread;
use std::time::{Duration, Instant};

use crate::coordinator::{Coordinator, LeaseId};
use crate::error::LeaseError;

/// Jobs waiting for the thread; more means the coordinator is far behind.
const QUEUE: usize = 16;

/// Synchronous mark reads and writes, as the reservation store needs them.
pub trait MarkIo: Send + Sync + std::fmt::Debug + 'static {
    /// Identity `n`'s mark; see [`Coordinator::load_mark`].
    fn load(&self, n: u16) -> Result<Option<u64>, LeaseError>;
    /// Raises identity `n`'s mark while `lease` holds it; see
    /// [`Coordinator::raise_mark`].
    fn store(&self, n: u16, lease: LeaseId, until_ms: u64) -> Result<(), LeaseError>;
}

enum Job {
    Load {
        n: u16,
        deadline: Instant,
        reply: SyncSender<Result<Option<u64>, LeaseError>>,
    },
    Store {
        n: u16,
        lease: LeaseId,
        until_ms: u64,
        deadline: Instant,
        reply: SyncSender<Result<(), LeaseError>>,
    },
}

/// Synchronous mark I/O over `coordinator`, served by a thread of its own
/// (a current-thread runtime and the coordinator handle), each call bounded
/// by `timeout`: what a [`LeaseStore`](crate::LeaseStore) needs, callable
/// from any thread, a tokio worker's included. The thread ends when the
/// last handle is dropped.
pub fn mark_thread<C: Coordinator>(
    coordinator: C,
    timeout: Duration,
) -> std::io::Result<Arc<dyn MarkIo>> {
    Bridge::start(coordinator, timeout).map(|bridge| bridge.io)
}

/// A handle to the reservation thread; the thread ends when the last
/// handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Bridge {
    io: Arc<dyn MarkIo>,
}

impl Bridge {
    /// Over any synchronous mark I/O (a simulation's).
    pub(crate) fn over(io: Arc<dyn MarkIo>) -> Bridge {
        Bridge { io }
    }

    /// Starts the thread over `coordinator`. `timeout` bounds each call
    /// (queueing, request and answer together).
    pub(crate) fn start<C: Coordinator>(
        coordinator: C,
        timeout: Duration,
    ) -> std::io::Result<Bridge> {
        let (jobs, rx) = mpsc::sync_channel(QUEUE);
        let (ready, started) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("snowmint-lease-store".to_owned())
            .spawn(move || {
                // Built (and dropped) on its own thread, never inside the
                // caller's async context.
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => {
                        let _ = ready.send(Ok(()));
                        serve(runtime, rx, coordinator);
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                    }
                }
            })?;
        started
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the thread stopped at start")))?;
        Ok(Bridge {
            io: Arc::new(Thread { jobs, timeout }),
        })
    }

    pub(crate) fn load(&self, n: u16) -> Result<Option<u64>, LeaseError> {
        self.io.load(n)
    }

    pub(crate) fn store(&self, n: u16, lease: LeaseId, until_ms: u64) -> Result<(), LeaseError> {
        self.io.store(n, lease, until_ms)
    }
}

/// The reservation thread's job queue.
#[derive(Debug)]
struct Thread {
    jobs: SyncSender<Job>,
    timeout: Duration,
}

impl Thread {
    fn send(&self, job: Job) -> Result<(), LeaseError> {
        self.jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => LeaseError::QueueFull,
            TrySendError::Disconnected(_) => LeaseError::WorkerStopped,
        })
    }

    fn wait<T>(&self, answer: &Receiver<Result<T, LeaseError>>) -> Result<T, LeaseError> {
        match answer.recv_timeout(self.timeout) {
            Ok(result) => result,
            // The thread answers every job it takes, a late one with a
            // timeout of its own; so a dropped reply means it stopped.
            Err(mpsc::RecvTimeoutError::Timeout) => Err(timeout(self.timeout)),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(LeaseError::WorkerStopped),
        }
    }
}

fn timeout(after: Duration) -> LeaseError {
    LeaseError::Timeout {
        coordinator: "reservation",
        op: "mark",
        after,
    }
}

impl MarkIo for Thread {
    fn load(&self, n: u16) -> Result<Option<u64>, LeaseError> {
        let (reply, answer) = mpsc::sync_channel(1);
        let deadline = Instant::now() + self.timeout;
        self.send(Job::Load { n, deadline, reply })?;
        self.wait(&answer)
    }

    fn store(&self, n: u16, lease: LeaseId, until_ms: u64) -> Result<(), LeaseError> {
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
}

fn serve<C: Coordinator>(
    runtime: tokio::runtime::Runtime,
    jobs: Receiver<Job>,
    mut coordinator: C,
) {
    while let Ok(job) = jobs.recv() {
        let deadline = match &job {
            Job::Load { deadline, .. } | Job::Store { deadline, .. } => *deadline,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        // The whole job, however many requests it makes, within its deadline.
        let failed = match job {
            Job::Load { n, reply, .. } => {
                let result = if left.is_zero() {
                    Err(timeout(left))
                } else {
                    runtime.block_on(async {
                        tokio::time::timeout(left, coordinator.load_mark(n, left))
                            .await
                            .unwrap_or_else(|_| Err(timeout(left)))
                    })
                };
                let failed =
                    !left.is_zero() && result.as_ref().is_err_and(LeaseError::is_transport);
                let _ = reply.send(result);
                failed
            }
            Job::Store {
                n,
                lease,
                until_ms,
                reply,
                ..
            } => {
                let result = if left.is_zero() {
                    Err(timeout(left))
                } else {
                    runtime.block_on(async {
                        tokio::time::timeout(left, coordinator.raise_mark(n, lease, until_ms, left))
                            .await
                            .unwrap_or_else(|_| Err(timeout(left)))
                    })
                };
                if let Err(e @ LeaseError::DamagedMark { .. }) = &result {
                    tracing::error!(
                        error = %e,
                        "cannot raise a damaged reservation mark; not issuing past it"
                    );
                }
                let failed =
                    !left.is_zero() && result.as_ref().is_err_and(LeaseError::is_transport);
                let _ = reply.send(result);
                failed
            }
        };
        // A request that got no answer: the next goes to another endpoint.
        if failed {
            coordinator.failed();
        }
    }
}
