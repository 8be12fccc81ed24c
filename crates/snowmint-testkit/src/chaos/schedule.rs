//! The nemesis's plan: which fault, when, on whom, for how long, drawn from
//! the seed before the run starts.
//!
//! The same seed (with the same `seconds`, instance count and TTL) gives the
//! same schedule. The timing of a run is not reproducible: when a request
//! lands relative to a fault depends on the machine.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A kind of fault. Its [`name`](FaultKind::name) says which family it is
/// in: `kill`, `pause`, `partition`, `clock`, `etcd` for the store's, and
/// `stale_leader` for the one that acts on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// SIGKILL an etcd-mode instance, then start it again.
    InstanceKill,
    /// SIGSTOP an etcd-mode instance for longer than its lease TTL, then SIGCONT.
    InstancePause,
    /// Cut an etcd-mode instance's line to every etcd member, then heal it.
    Partition,
    /// Step an etcd-mode instance's wall clock back, then forward past the
    /// real time, then back to it, while it runs.
    ClockStep,
    /// SIGKILL the static-mode instance and start it with its clock set back.
    StaticKillClockBack,
    /// SIGKILL the etcd member that leads, then start it again.
    EtcdLeaderKill,
    /// SIGSTOP one etcd member, then SIGCONT.
    EtcdMemberPause,
    /// SIGTERM one etcd member, then start it again.
    EtcdMemberRestart,
    /// Route an etcd-mode instance's traffic to the etcd leader only, SIGSTOP
    /// the leader for longer than an election (cut off, as root, from what
    /// the other members send it until a moment after it resumes), SIGCONT
    /// it, and route the instance back after a while: the resumed former
    /// leader answers the instance's keep-alives from its stale lease table
    /// (etcd issue 15247).
    StaleLeader,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 9] = [
        FaultKind::InstanceKill,
        FaultKind::InstancePause,
        FaultKind::Partition,
        FaultKind::ClockStep,
        FaultKind::StaticKillClockBack,
        FaultKind::EtcdLeaderKill,
        FaultKind::EtcdMemberPause,
        FaultKind::EtcdMemberRestart,
        FaultKind::StaleLeader,
    ];

    /// The name in `summary.json` and the report.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::InstanceKill => "instance_kill",
            FaultKind::InstancePause => "instance_pause",
            FaultKind::Partition => "partition",
            FaultKind::ClockStep => "clock_step",
            FaultKind::StaticKillClockBack => "static_kill_clock_back",
            FaultKind::EtcdLeaderKill => "etcd_leader_kill",
            FaultKind::EtcdMemberPause => "etcd_member_pause",
            FaultKind::EtcdMemberRestart => "etcd_member_restart",
            FaultKind::StaleLeader => "stale_leader",
        }
    }

    /// Whether the fault acts on etcd members (else on instances only):
    /// it runs in the etcd lane, one etcd fault at a time.
    pub fn on_etcd(self) -> bool {
        matches!(
            self,
            FaultKind::EtcdLeaderKill
                | FaultKind::EtcdMemberPause
                | FaultKind::EtcdMemberRestart
                | FaultKind::StaleLeader
        )
    }
}

/// What the schedule is drawn for.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The seed.
    pub seed: u64,
    /// Length of the load, in seconds; every fault starts and is planned to
    /// end within it.
    pub seconds: u64,
    /// How many etcd-mode instances (the static one comes after them).
    pub instances: usize,
    /// How many etcd members.
    pub members: usize,
    /// The instances' lease TTL, in seconds.
    pub lease_ttl: u64,
}

/// One planned fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// When it starts, in milliseconds after the load starts.
    pub at_ms: u64,
    /// What it does.
    pub kind: FaultKind,
    /// The instance or member it acts on (instances `0..instances` are in
    /// etcd mode, `instances` is the static one); `None` for the etcd leader,
    /// found when the fault starts. For [`FaultKind::StaleLeader`], the
    /// instance (the member is the leader, found when the fault starts).
    pub target: Option<usize>,
    /// How long the fault holds (down, paused, cut, or each clock step), ms.
    /// For [`FaultKind::StaleLeader`], how long the leader is paused.
    pub hold_ms: u64,
    /// For clock faults: how far the clock steps back, ms.
    pub back_ms: u64,
    /// For [`FaultKind::ClockStep`]: how far past the real time it then
    /// steps forward, ms.
    pub forward_ms: u64,
}

impl Fault {
    /// How long the fault is planned to take, with time for a restart.
    pub fn planned_ms(&self) -> u64 {
        match self.kind {
            FaultKind::ClockStep => 2 * self.hold_ms,
            FaultKind::InstanceKill
            | FaultKind::StaticKillClockBack
            | FaultKind::EtcdLeaderKill
            | FaultKind::EtcdMemberRestart => self.hold_ms + 1500,
            FaultKind::InstancePause | FaultKind::Partition | FaultKind::EtcdMemberPause => {
                self.hold_ms
            }
            FaultKind::StaleLeader => {
                STALE_ROUTE_BEFORE_MS + self.hold_ms + STALE_CUT_AFTER_MS + STALE_ROUTE_AFTER_MS
            }
        }
    }
}

/// How long a [`FaultKind::StaleLeader`] routes the instance to the leader
/// before it pauses the leader (the instance reconnects and renews there).
pub const STALE_ROUTE_BEFORE_MS: u64 = 1500;

/// How long it keeps the instance routed to the former leader after resuming
/// it (the instance's renewals land there, answered stale or forwarded).
pub const STALE_ROUTE_AFTER_MS: u64 = 2000;

/// How long the resumed former leader stays cut off from the other
/// members' packets (when the harness can cut it off): it takes itself for
/// the leader meanwhile, and answers keep-alives from its stale table.
pub const STALE_CUT_AFTER_MS: u64 = 500;

/// etcd's election timeout as the harness runs it (etcd's default).
pub const ELECTION_TIMEOUT_MS: u64 = 1000;

/// The schedule of `plan`: two lanes run side by side, one for faults on
/// instances and one for faults on etcd, each fault after the previous one
/// of its lane, kinds in rounds (each round every kind of the lane, in a
/// shuffled order) so that a run long enough sees every kind; the etcd
/// lane opens with a [`FaultKind::StaleLeader`], so that every run, even a
/// short one, has one; each `stale_leader` targets an instance no fault of
/// the instance lane touches meanwhile (see `clear_target`). Sorted by
/// start.
pub fn schedule(plan: &Plan) -> Vec<Fault> {
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let end_ms = plan.seconds * 1000;
    let ttl_ms = plan.lease_ttl * 1000;
    let mut faults = Vec::new();
    let lanes: [(&[FaultKind], u64); 2] = [
        (
            &[
                FaultKind::InstanceKill,
                FaultKind::InstancePause,
                FaultKind::Partition,
                FaultKind::ClockStep,
                FaultKind::StaticKillClockBack,
            ],
            2000,
        ),
        (
            &[
                FaultKind::EtcdLeaderKill,
                FaultKind::EtcdMemberPause,
                FaultKind::EtcdMemberRestart,
                FaultKind::StaleLeader,
            ],
            3000,
        ),
    ];
    for (kinds, first_ms) in lanes {
        let mut at_ms = first_ms;
        let mut round: Vec<FaultKind> = if kinds.contains(&FaultKind::StaleLeader) {
            vec![FaultKind::StaleLeader]
        } else {
            Vec::new()
        };
        loop {
            if round.is_empty() {
                round = kinds.to_vec();
                round.shuffle(&mut rng);
            }
            let kind = round.pop().expect("refilled above");
            let fault = draw(&mut rng, plan, kind, at_ms, ttl_ms);
            if fault.at_ms + fault.planned_ms() + 1000 > end_ms {
                break;
            }
            at_ms += fault.planned_ms() + rng.random_range(500..=2000);
            faults.push(fault);
        }
    }
    // Drawn after both lanes, so that the other faults of a seed stay put.
    for i in 0..faults.len() {
        if faults[i].kind == FaultKind::StaleLeader {
            faults[i].target = clear_target(&mut rng, plan, &faults, &faults[i]);
        }
    }
    faults.sort_by_key(|f| (f.at_ms, f.kind));
    faults
}

/// An instance for `stale`, drawn among those that no fault of the
/// instance lane (kill, pause, partition, clock step) touches from a TTL
/// before it to a TTL after it: a target that is down, paused or cut off
/// meanwhile (or still claiming again after it) sends the stale leader no
/// keep-alive to answer, and the fault shows nothing. Keeps the target it
/// has when every instance is busy.
fn clear_target(
    rng: &mut ChaCha8Rng,
    plan: &Plan,
    faults: &[Fault],
    stale: &Fault,
) -> Option<usize> {
    let ttl_ms = plan.lease_ttl * 1000;
    let from = stale.at_ms.saturating_sub(ttl_ms);
    let to = stale.at_ms + stale.planned_ms() + ttl_ms;
    let busy = |instance: usize| {
        faults.iter().any(|f| {
            !f.kind.on_etcd()
                && f.target == Some(instance)
                && f.at_ms < to
                && f.at_ms + f.planned_ms() > from
        })
    };
    let free: Vec<usize> = (0..plan.instances).filter(|&i| !busy(i)).collect();
    if free.is_empty() {
        stale.target
    } else {
        Some(free[rng.random_range(0..free.len())])
    }
}

fn draw(rng: &mut ChaCha8Rng, plan: &Plan, kind: FaultKind, at_ms: u64, ttl_ms: u64) -> Fault {
    let instance = |rng: &mut ChaCha8Rng| Some(rng.random_range(0..plan.instances.max(1)));
    let member = |rng: &mut ChaCha8Rng| Some(rng.random_range(0..plan.members.max(1)));
    let (target, hold_ms, back_ms, forward_ms) = match kind {
        FaultKind::InstanceKill => (instance(rng), rng.random_range(200..=2000), 0, 0),
        FaultKind::InstancePause => (instance(rng), ttl_ms + rng.random_range(500..=2500), 0, 0),
        FaultKind::Partition => (
            instance(rng),
            rng.random_range(1000..=2 * ttl_ms + 1000),
            0,
            0,
        ),
        FaultKind::ClockStep => (
            instance(rng),
            rng.random_range(1000..=3000),
            rng.random_range(500..=5000),
            rng.random_range(0..=3000),
        ),
        FaultKind::StaticKillClockBack => (
            Some(plan.instances),
            rng.random_range(200..=1000),
            rng.random_range(1000..=4000),
            0,
        ),
        FaultKind::EtcdLeaderKill => (None, rng.random_range(500..=3000), 0, 0),
        FaultKind::EtcdMemberPause => (member(rng), rng.random_range(1000..=5000), 0, 0),
        FaultKind::EtcdMemberRestart => (member(rng), rng.random_range(200..=2000), 0, 0),
        // Longer than an election, and short enough that the paused leader's
        // own lease table has not expired the instance's lease when it
        // resumes (renewed at most a renewal period, a third of the fence
        // window, before the pause): only then can it answer stale.
        FaultKind::StaleLeader => {
            let fence_window = ttl_ms - (ttl_ms / 5).max(1000);
            let longest = (ttl_ms - fence_window / 3).max(ELECTION_TIMEOUT_MS * 2);
            (
                instance(rng),
                rng.random_range(ELECTION_TIMEOUT_MS * 3 / 2..=longest),
                0,
                0,
            )
        }
    };
    Fault {
        at_ms,
        kind,
        target,
        hold_ms,
        back_ms,
        forward_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(seed: u64, seconds: u64) -> Plan {
        Plan {
            seed,
            seconds,
            instances: 5,
            members: 3,
            lease_ttl: 3,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        assert_eq!(schedule(&plan(7, 60)), schedule(&plan(7, 60)));
        assert_ne!(schedule(&plan(7, 60)), schedule(&plan(8, 60)));
    }

    #[test]
    fn faults_fit_in_the_run_and_hit_real_targets() {
        for seed in 0..50 {
            let faults = schedule(&plan(seed, 30));
            assert!(!faults.is_empty());
            assert!(
                faults.iter().any(|f| f.kind == FaultKind::StaleLeader),
                "every run has a stale_leader"
            );
            for f in &faults {
                assert!(f.at_ms + f.planned_ms() <= 30_000, "{f:?}");
                match (f.kind, f.target) {
                    (FaultKind::EtcdLeaderKill, t) => assert_eq!(t, None),
                    (FaultKind::StaleLeader, Some(t)) => assert!(t < 5),
                    (FaultKind::StaticKillClockBack, t) => assert_eq!(t, Some(5)),
                    (k, Some(t)) if k.on_etcd() => assert!(t < 3),
                    (_, Some(t)) => assert!(t < 5),
                    (_, None) => panic!("{f:?} has no target"),
                }
                if f.kind == FaultKind::InstancePause {
                    assert!(f.hold_ms > 3000, "a pause outlasts the TTL");
                }
                if f.kind == FaultKind::StaleLeader {
                    assert!(f.hold_ms > ELECTION_TIMEOUT_MS, "outlasts an election");
                    assert!(f.hold_ms < 3000, "shorter than the lease");
                }
            }
        }
    }

    /// The instance a stale leader should fool is up, reachable and holding
    /// its lease the whole time: no fault of the other lane touches it.
    #[test]
    fn a_stale_leaders_target_is_left_alone_by_the_instance_lane() {
        for seed in 0..200 {
            let plan = plan(seed, 60);
            let faults = schedule(&plan);
            let ttl_ms = plan.lease_ttl * 1000;
            for stale in faults.iter().filter(|f| f.kind == FaultKind::StaleLeader) {
                let (from, to) = (
                    stale.at_ms.saturating_sub(ttl_ms),
                    stale.at_ms + stale.planned_ms() + ttl_ms,
                );
                let clash = faults.iter().find(|f| {
                    !f.kind.on_etcd()
                        && f.target == stale.target
                        && f.at_ms < to
                        && f.at_ms + f.planned_ms() > from
                });
                assert_eq!(clash, None, "seed {seed}: {stale:?}");
            }
        }
    }

    #[test]
    fn a_minute_sees_every_kind() {
        let faults = schedule(&plan(1, 60));
        for kind in FaultKind::ALL {
            assert!(faults.iter().any(|f| f.kind == kind), "{kind:?} missing");
        }
    }

    #[test]
    fn kind_names_name_their_family() {
        for kind in FaultKind::ALL {
            let name = kind.name();
            assert!(
                ["kill", "pause", "partition", "clock", "restart", "leader"]
                    .iter()
                    .any(|f| name.contains(f))
            );
            let stale = kind == FaultKind::StaleLeader;
            assert_eq!(kind.on_etcd(), name.contains("etcd") || stale);
        }
    }
}
