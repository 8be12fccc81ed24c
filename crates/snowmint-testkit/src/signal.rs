//! Signals to a process (or a process group) by ID, and waiting until its
//! threads obey them.

use std::io;
use std::time::{Duration, Instant};

pub use rustix::process::Signal;
use rustix::process::{Pid, kill_process, kill_process_group};

/// Sends `signal` to process `pid`.
///
/// # Errors
///
/// When there is no such process (it exited) or it may not be signalled.
pub fn send(pid: u32, signal: Signal) -> io::Result<()> {
    kill_process(to_pid(pid)?, signal).map_err(io::Error::from)
}

/// Sends `signal` to every process of process group `pgid` (a process
/// started as the leader of a group of its own, and what it started).
///
/// # Errors
///
/// When there is no such group or it may not be signalled.
pub fn send_group(pgid: u32, signal: Signal) -> io::Result<()> {
    kill_process_group(to_pid(pgid)?, signal).map_err(io::Error::from)
}

fn to_pid(pid: u32) -> io::Result<Pid> {
    let raw = i32::try_from(pid).map_err(|_| io::Error::other(format!("pid {pid} too large")))?;
    Pid::from_raw(raw).ok_or_else(|| io::Error::other("pid 0"))
}

/// The state letter of every thread of `pid` (`R`, `S`, `T` for stopped, ...),
/// read from `/proc/PID/task/TID/stat`; empty when the process is gone.
pub fn thread_states(pid: u32) -> Vec<char> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|task| {
                let stat = std::fs::read_to_string(task.ok()?.path().join("stat")).ok()?;
                // "TID (comm) S ...": the comm may hold spaces and parens.
                stat.rsplit_once(')')?.1.trim_start().chars().next()
            })
            .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` has exited: gone, or a zombie its parent has not reaped
/// yet (a child of a stopped parent stays one until the parent resumes).
pub fn exited(pid: u32) -> bool {
    thread_states(pid).iter().all(|&s| s == 'Z' || s == 'X')
}

/// Stops `pid` with SIGSTOP and returns once every thread of it has stopped
/// (`kill` only queues the signal; a thread running on another core could
/// still answer a request sent right after).
///
/// # Errors
///
/// When the process is gone, or its threads are not all stopped after `limit`.
pub fn stop(pid: u32, limit: Duration) -> io::Result<()> {
    send(pid, Signal::STOP)?;
    wait_threads(pid, limit, "stopped", |s| s == 'T')
}

/// Resumes `pid` with SIGCONT and returns once no thread of it is stopped.
///
/// # Errors
///
/// When the process is gone, or a thread is still stopped after `limit`.
pub fn resume(pid: u32, limit: Duration) -> io::Result<()> {
    send(pid, Signal::CONT)?;
    wait_threads(pid, limit, "running", |s| s != 'T')
}

fn wait_threads(
    pid: u32,
    limit: Duration,
    what: &str,
    wanted: impl Fn(char) -> bool,
) -> io::Result<()> {
    let start = Instant::now();
    loop {
        let states = thread_states(pid);
        if states.iter().all(|&s| s == 'Z' || s == 'X') {
            return Err(io::Error::other(format!("process {pid} is gone")));
        }
        if states.iter().all(|&s| wanted(s)) {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(io::Error::other(format!(
                "process {pid}'s threads not all {what} after {limit:?}: {states:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The process IDs whose parent is `pid` (from `/proc/PID/stat`): a
/// PostgreSQL postmaster's backends and auxiliary processes, for example.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let child: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "PID (comm) S PPID ...": the comm may hold spaces and parens.
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            let parent: u32 = fields.nth(1)?.parse().ok()?;
            (parent == pid).then_some(child)
        })
        .collect()
}
