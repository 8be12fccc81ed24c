//! What a run observed: every acknowledged mint, every readiness probe,
//! every fault as it happened. Times are microseconds since the load
//! started, on the harness's monotonic clock (which libfaketime never
//! touches); `summary.json` gives the wall time of that start.

use super::schedule::FaultKind;

/// One mint answered 200: who answered, when the request started and ended,
/// what was asked and every ID in the answer, in its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mint {
    /// The instance that answered.
    pub instance: usize,
    /// When the request was sent, µs.
    pub start_us: u64,
    /// When the whole answer was read, µs.
    pub end_us: u64,
    /// The `count` asked for.
    pub count: u32,
    /// The IDs, as the answer listed them.
    pub ids: Vec<u64>,
}

/// What `/readyz` said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// 200: a mint would succeed now.
    Ready,
    /// Any other status: fenced, no identity, clock behind.
    NotReady,
    /// No answer: the process is down, paused, or too slow.
    Unreachable,
}

/// One readiness probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// The instance probed.
    pub instance: usize,
    /// When the probe was sent, µs.
    pub at_us: u64,
    /// Its outcome.
    pub readiness: Readiness,
}

/// A fault as the nemesis carried it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRecord {
    /// Its index in the schedule.
    pub index: usize,
    /// Its kind.
    pub kind: FaultKind,
    /// The lane it hit (`i0`.., `static`, `etcd0`..), once known.
    pub lane: Option<String>,
    /// When it started acting, µs.
    pub start_us: u64,
    /// When it was healed (restart done, resumed, line restored), µs.
    pub end_us: Option<u64>,
    /// Whether it acted on a live target (a kill that found no process did not happen).
    pub happened: bool,
    /// What it did, for people.
    pub detail: String,
    /// For a [`FaultKind::StaleLeader`]: how many keep-alive answers the
    /// target instance did not count during the fault (its
    /// `renewals_unconfirmed` counter, before and after), when it answered
    /// `/metrics` both times.
    pub unconfirmed_renewals: Option<u64>,
}

/// Everything observed in one run.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Every mint answered 200.
    pub mints: Vec<Mint>,
    /// Every readiness probe.
    pub probes: Vec<Probe>,
    /// Every fault the nemesis started.
    pub faults: Vec<FaultRecord>,
    /// Failed mint requests per instance, by status (`0` for no answer).
    pub errors: Vec<std::collections::BTreeMap<u16, u64>>,
    /// Things that went wrong outside the checks (an instance that exited on
    /// its own, a restart that failed), with when, µs.
    pub incidents: Vec<(u64, String)>,
}
