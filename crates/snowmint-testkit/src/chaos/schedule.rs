//! The nemesis's plan: which fault, when, on whom, for how long, drawn from
//! the seed before the run starts.
//!
//! The same seed (with the same coordinator, `seconds`, instance count and
//! TTL) gives the same schedule; with etcd, the schedule a seed gave before
//! the database coordinators existed. The timing of a run is not reproducible: when a request
//! lands relative to a fault depends on the machine.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What the instances lease their identity from, and so which faults the
/// coordinator's lane of the schedule holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Coordinator {
    /// A three-member etcd cluster (`serve --etcd`).
    #[default]
    Etcd,
    /// One PostgreSQL server (`serve --postgres`), some instances through
    /// PgBouncer in transaction mode.
    Postgres,
    /// One MariaDB server (`serve --mysql`).
    Mysql,
    /// One Redis server (`serve --redis`), each instance through a proxy
    /// of its own.
    Redis,
}

impl Coordinator {
    /// The name on the command line and in the report: `etcd`, `postgres`, `mysql`.
    pub fn name(self) -> &'static str {
        match self {
            Coordinator::Etcd => "etcd",
            Coordinator::Postgres => "postgres",
            Coordinator::Mysql => "mysql",
            Coordinator::Redis => "redis",
        }
    }

    /// The one coordinator named `name`, if any.
    pub fn parse(name: &str) -> Option<Coordinator> {
        [
            Coordinator::Etcd,
            Coordinator::Postgres,
            Coordinator::Mysql,
            Coordinator::Redis,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }

    /// The kinds of the coordinator's lane, in the order a round starts from.
    pub fn kinds(self) -> &'static [FaultKind] {
        match self {
            Coordinator::Etcd => &[
                FaultKind::EtcdLeaderKill,
                FaultKind::EtcdMemberPause,
                FaultKind::EtcdMemberRestart,
                FaultKind::StaleLeader,
            ],
            Coordinator::Postgres | Coordinator::Mysql => &[
                FaultKind::DbFailover,
                FaultKind::DbShortPause,
                FaultKind::DbLongPause,
                FaultKind::DbCrashRestart,
                FaultKind::DbPartition,
                FaultKind::DbClockStep,
            ],
            Coordinator::Redis => &[
                FaultKind::RedisEmptyRestart,
                FaultKind::RedisShortPause,
                FaultKind::RedisLongPause,
                FaultKind::RedisCrashRestart,
                FaultKind::RedisPartition,
            ],
        }
    }

    /// Every kind a run with this coordinator can schedule: the instance
    /// lane's, then the coordinator lane's.
    pub fn all_kinds(self) -> Vec<FaultKind> {
        let mut kinds = INSTANCE_KINDS.to_vec();
        kinds.extend_from_slice(self.kinds());
        kinds
    }
}

impl std::fmt::Display for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds of the instance lane (any coordinator).
pub const INSTANCE_KINDS: [FaultKind; 5] = [
    FaultKind::InstanceKill,
    FaultKind::InstancePause,
    FaultKind::Partition,
    FaultKind::ClockStep,
    FaultKind::StaticKillClockBack,
];

/// A kind of fault. Its [`name`](FaultKind::name) says which family it is
/// in: `kill`, `pause`, `partition`, `clock`, `etcd` or `db` for the
/// coordinator's, and `stale_leader` for the one that acts on both.
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
    /// SIGSTOP every process of the database server for less than the lease
    /// TTL (sometimes more than the holders' fence window), then SIGCONT.
    DbShortPause,
    /// SIGSTOP every process of the database server for longer than the
    /// lease TTL, then SIGCONT.
    DbLongPause,
    /// Crash the database server (PostgreSQL: `pg_ctl stop -m immediate`;
    /// MariaDB: SIGKILL), keep it down a while, start it again (crash
    /// recovery) on the same port.
    DbCrashRestart,
    /// Cut the line to the database of some instances (two or more, not
    /// all, when there are enough), then heal it.
    DbPartition,
    /// Step the database server's wall clock forward by more than the TTL,
    /// then back behind the real time by more than the TTL, then to the
    /// real time, while it runs.
    DbClockStep,
    /// A failover that loses the last commits: cut the standby off (its WAL
    /// receiver stopped, or the replica's SQL thread) while the primary
    /// takes claims, renewals and marks for `hold_ms`, SIGKILL the primary,
    /// keep it down `back_ms`, promote the standby (the instances follow it
    /// by their multi-host URL, or the primary's proxy moves to it), then
    /// make a new standby of the new primary for the rest of the run.
    DbFailover,
    /// Kill Redis (SIGKILL) and start it again on its port with nothing:
    /// its data files deleted, as a Redis without persistence (or whose
    /// AOF was not fsync'd) comes back. Every record and mark is gone.
    RedisEmptyRestart,
    /// SIGSTOP Redis for less than the lease TTL (sometimes more than the
    /// holders' fence window), then SIGCONT.
    RedisShortPause,
    /// SIGSTOP Redis for longer than the lease TTL, then SIGCONT.
    RedisLongPause,
    /// Kill Redis (SIGKILL), keep it down a while, start it again on its
    /// port from its append-only file (`appendfsync always`: nothing
    /// acknowledged is lost, but it is a new epoch, a new `run_id`).
    RedisCrashRestart,
    /// Cut the line to Redis of some instances (two or more, not all, when
    /// there are enough), then heal it.
    RedisPartition,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 20] = [
        FaultKind::InstanceKill,
        FaultKind::InstancePause,
        FaultKind::Partition,
        FaultKind::ClockStep,
        FaultKind::StaticKillClockBack,
        FaultKind::EtcdLeaderKill,
        FaultKind::EtcdMemberPause,
        FaultKind::EtcdMemberRestart,
        FaultKind::StaleLeader,
        FaultKind::DbShortPause,
        FaultKind::DbLongPause,
        FaultKind::DbCrashRestart,
        FaultKind::DbPartition,
        FaultKind::DbClockStep,
        FaultKind::DbFailover,
        FaultKind::RedisEmptyRestart,
        FaultKind::RedisShortPause,
        FaultKind::RedisLongPause,
        FaultKind::RedisCrashRestart,
        FaultKind::RedisPartition,
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
            FaultKind::DbShortPause => "db_short_pause",
            FaultKind::DbLongPause => "db_long_pause",
            FaultKind::DbCrashRestart => "db_crash_restart",
            FaultKind::DbPartition => "db_partition",
            FaultKind::DbClockStep => "db_clock_step",
            FaultKind::DbFailover => "db_failover",
            FaultKind::RedisEmptyRestart => "redis_empty_restart",
            FaultKind::RedisShortPause => "redis_short_pause",
            FaultKind::RedisLongPause => "redis_long_pause",
            FaultKind::RedisCrashRestart => "redis_crash_restart",
            FaultKind::RedisPartition => "redis_partition",
        }
    }

    /// Whether the fault acts on etcd members (else on instances or the
    /// database).
    pub fn on_etcd(self) -> bool {
        matches!(
            self,
            FaultKind::EtcdLeaderKill
                | FaultKind::EtcdMemberPause
                | FaultKind::EtcdMemberRestart
                | FaultKind::StaleLeader
        )
    }

    /// Whether the fault acts on the database server or on the lines to it.
    pub fn on_db(self) -> bool {
        matches!(
            self,
            FaultKind::DbShortPause
                | FaultKind::DbLongPause
                | FaultKind::DbCrashRestart
                | FaultKind::DbPartition
                | FaultKind::DbClockStep
                | FaultKind::DbFailover
        )
    }

    /// Whether the fault acts on the Redis server or on the lines to it.
    pub fn on_redis(self) -> bool {
        matches!(
            self,
            FaultKind::RedisEmptyRestart
                | FaultKind::RedisShortPause
                | FaultKind::RedisLongPause
                | FaultKind::RedisCrashRestart
                | FaultKind::RedisPartition
        )
    }

    /// Whether the fault runs in the coordinator's lane (etcd's, the
    /// database's or Redis's), one such fault at a time; else in the
    /// instance lane.
    pub fn on_coordinator(self) -> bool {
        self.on_etcd() || self.on_db() || self.on_redis()
    }
}

/// What the schedule is drawn for.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The seed.
    pub seed: u64,
    /// What the instances lease from: which kinds the coordinator's lane holds.
    pub coordinator: Coordinator,
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
    /// steps forward, ms. For [`FaultKind::DbClockStep`]: how far it first
    /// steps forward (`back_ms`: how far behind the real time it then steps).
    pub forward_ms: u64,
    /// For [`FaultKind::DbPartition`]: the instances whose line is cut
    /// (empty for every other kind).
    pub group: Vec<usize>,
}

impl Fault {
    /// How long the fault is planned to take, with time for a restart.
    pub fn planned_ms(&self) -> u64 {
        match self.kind {
            FaultKind::ClockStep | FaultKind::DbClockStep => 2 * self.hold_ms,
            FaultKind::InstanceKill
            | FaultKind::StaticKillClockBack
            | FaultKind::EtcdLeaderKill
            | FaultKind::EtcdMemberRestart => self.hold_ms + 1500,
            // Crash recovery and a start under load take longer than an etcd member's.
            FaultKind::DbCrashRestart => self.hold_ms + 3000,
            // The promotion, a new standby (a base backup, or a replica
            // replaying the whole binary log), and every instance's wait of
            // the table's longest TTL before it issues again.
            FaultKind::DbFailover => self.hold_ms + self.back_ms + FAILOVER_AFTER_MS,
            // A start, then every instance's claim (untrusted: no record,
            // or one of the old epoch) and its wait of the bound.
            FaultKind::RedisEmptyRestart | FaultKind::RedisCrashRestart => {
                self.hold_ms + REDIS_RESTART_AFTER_MS
            }
            FaultKind::InstancePause
            | FaultKind::Partition
            | FaultKind::EtcdMemberPause
            | FaultKind::DbShortPause
            | FaultKind::DbLongPause
            | FaultKind::DbPartition
            | FaultKind::RedisShortPause
            | FaultKind::RedisLongPause
            | FaultKind::RedisPartition => self.hold_ms,
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

/// How long a [`FaultKind::DbFailover`] is planned to take after the
/// primary is killed and its down time: the promotion, the new standby and
/// the instances' wait after an untrusted claim.
pub const FAILOVER_AFTER_MS: u64 = 12_000;

/// How long a Redis restart ([`FaultKind::RedisEmptyRestart`],
/// [`FaultKind::RedisCrashRestart`]) is planned to take after its down
/// time: the start, and the instances' claims and their wait of the bound
/// (the instances' TTL in a chaos run).
pub const REDIS_RESTART_AFTER_MS: u64 = 5_000;

/// etcd's election timeout as the harness runs it (etcd's default).
pub const ELECTION_TIMEOUT_MS: u64 = 1000;

/// The schedule of `plan`: two lanes run side by side, one for faults on
/// instances and one for faults on the coordinator (etcd, or the database
/// server and the lines to it), each fault after the previous one of its
/// lane, kinds in rounds (each round every kind of the lane, in a shuffled
/// order) so that a run long enough sees every kind; the etcd lane opens
/// with a [`FaultKind::StaleLeader`] and the database lane with a
/// [`FaultKind::DbFailover`] (the Redis lane with a
/// [`FaultKind::RedisEmptyRestart`]), so that every run, even a short one, has one; each `stale_leader` targets an instance no fault of the
/// instance lane touches meanwhile (see `clear_target`), and each
/// `db_partition` cuts instances whose line no `partition` of the instance
/// lane cuts meanwhile (see `partition_group`). Sorted by start.
pub fn schedule(plan: &Plan) -> Vec<Fault> {
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let end_ms = plan.seconds * 1000;
    let ttl_ms = plan.lease_ttl * 1000;
    let mut faults = Vec::new();
    let lanes: [(&[FaultKind], u64); 2] =
        [(&INSTANCE_KINDS, 2000), (plan.coordinator.kinds(), 3000)];
    for (kinds, first_ms) in lanes {
        let mut at_ms = first_ms;
        let mut round: Vec<FaultKind> = [
            FaultKind::StaleLeader,
            FaultKind::DbFailover,
            FaultKind::RedisEmptyRestart,
        ]
        .into_iter()
        .filter(|k| kinds.contains(k))
        .collect();
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
        if matches!(
            faults[i].kind,
            FaultKind::DbPartition | FaultKind::RedisPartition
        ) {
            faults[i].group = partition_group(&mut rng, plan, &faults, &faults[i]);
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
            !f.kind.on_coordinator()
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

/// The instances a `db_partition` cuts: two or more of them and not all
/// (one when there is one or two), drawn among those whose line no
/// `partition` of the instance lane cuts while it holds (a `partition`
/// that heals meanwhile would heal this cut too); fewer when too few are
/// free, and then at least one even if busy.
fn partition_group(rng: &mut ChaCha8Rng, plan: &Plan, faults: &[Fault], cut: &Fault) -> Vec<usize> {
    let (from, to) = (cut.at_ms, cut.at_ms + cut.planned_ms());
    let busy = |instance: usize| {
        faults.iter().any(|f| {
            f.kind == FaultKind::Partition
                && f.target == Some(instance)
                && f.at_ms < to
                && f.at_ms + f.planned_ms() > from
        })
    };
    let n = plan.instances.max(1);
    let size = if n <= 2 { 1 } else { rng.random_range(2..n) };
    let mut free: Vec<usize> = (0..n).filter(|&i| !busy(i)).collect();
    if free.is_empty() {
        free = (0..n).collect();
    }
    free.shuffle(rng);
    free.truncate(size);
    free.sort_unstable();
    free
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
        // Shorter than the TTL: from a quarter of it (the holders renew
        // through it) to nine tenths (past their fence window: they fence,
        // then renew once it resumes, their leases still alive).
        FaultKind::DbShortPause | FaultKind::RedisShortPause => {
            (None, rng.random_range(ttl_ms / 4..=ttl_ms * 9 / 10), 0, 0)
        }
        FaultKind::DbLongPause | FaultKind::RedisLongPause => (
            None,
            rng.random_range(ttl_ms + 500..=2 * ttl_ms + 2000),
            0,
            0,
        ),
        // Down from a moment to more than a TTL.
        FaultKind::DbCrashRestart | FaultKind::RedisCrashRestart | FaultKind::RedisEmptyRestart => {
            (None, rng.random_range(200..=ttl_ms + 1000), 0, 0)
        }
        FaultKind::DbPartition | FaultKind::RedisPartition => {
            (None, rng.random_range(1000..=2 * ttl_ms + 1000), 0, 0)
        }
        // Each step by more than the TTL: forward, every lease looks
        // expired to the database; back, every one looks longer.
        FaultKind::DbClockStep => (
            None,
            rng.random_range(1000..=3000),
            rng.random_range(ttl_ms + 500..=3 * ttl_ms),
            rng.random_range(ttl_ms + 500..=3 * ttl_ms),
        ),
        // Cut off from a TTL to two (every holder renews, and claims and
        // marks land, on the primary alone), then down up to a second.
        FaultKind::DbFailover => (
            None,
            rng.random_range(ttl_ms..=2 * ttl_ms),
            rng.random_range(0..=1000),
            0,
        ),
    };
    Fault {
        at_ms,
        kind,
        target,
        hold_ms,
        back_ms,
        forward_ms,
        group: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(seed: u64, seconds: u64) -> Plan {
        Plan {
            seed,
            coordinator: Coordinator::Etcd,
            seconds,
            instances: 5,
            members: 3,
            lease_ttl: 3,
        }
    }

    fn db_plan(seed: u64, seconds: u64, coordinator: Coordinator) -> Plan {
        Plan {
            coordinator,
            ..plan(seed, seconds)
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
                    !f.kind.on_coordinator()
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
        for kind in Coordinator::Etcd.all_kinds() {
            assert!(faults.iter().any(|f| f.kind == kind), "{kind:?} missing");
        }
    }

    #[test]
    fn kind_names_name_their_family() {
        for kind in FaultKind::ALL {
            let name = kind.name();
            assert!(
                [
                    "kill",
                    "pause",
                    "partition",
                    "clock",
                    "restart",
                    "leader",
                    "failover"
                ]
                .iter()
                .any(|f| name.contains(f))
            );
            let stale = kind == FaultKind::StaleLeader;
            assert_eq!(kind.on_etcd(), name.contains("etcd") || stale);
            assert_eq!(kind.on_db(), name.starts_with("db_"));
            assert_eq!(kind.on_redis(), name.starts_with("redis_"));
        }
    }

    #[test]
    fn coordinators_parse_by_name() {
        for c in [
            Coordinator::Etcd,
            Coordinator::Postgres,
            Coordinator::Mysql,
            Coordinator::Redis,
        ] {
            assert_eq!(Coordinator::parse(c.name()), Some(c));
        }
        assert_eq!(Coordinator::parse("sqlite"), None);
        assert_eq!(Coordinator::default(), Coordinator::Etcd);
    }

    /// With a database, the coordinator's lane holds database faults only
    /// (no etcd fault, no stale leader), each as the issue asks: pauses
    /// shorter and longer than the TTL, clock steps both ways by more than
    /// it, a line cut for some instances but not all, a failover whose
    /// standby is cut off for one to two TTLs; every run, even one of 30 s,
    /// opens with a failover; a minute and a half sees every kind; a seed
    /// gives one schedule.
    #[test]
    fn database_schedules_hold_database_faults_as_drawn() {
        for coordinator in [Coordinator::Postgres, Coordinator::Mysql] {
            let long = schedule(&db_plan(1, 90, coordinator));
            for kind in coordinator.all_kinds() {
                assert!(long.iter().any(|f| f.kind == kind), "{kind:?} missing");
            }
            for seed in 0..100 {
                let short = schedule(&db_plan(seed, 30, coordinator));
                let first = short.iter().find(|f| f.kind.on_db());
                assert_eq!(
                    first.map(|f| f.kind),
                    Some(FaultKind::DbFailover),
                    "seed {seed}"
                );
            }
            for seed in 0..100 {
                let plan = db_plan(seed, 60, coordinator);
                let faults = schedule(&plan);
                assert_eq!(faults, schedule(&plan));
                let ttl_ms = plan.lease_ttl * 1000;
                for f in &faults {
                    assert!(!f.kind.on_etcd(), "seed {seed}: {f:?}");
                    assert!(f.at_ms + f.planned_ms() <= 60_000, "{f:?}");
                    match f.kind {
                        FaultKind::DbShortPause => assert!(f.hold_ms < ttl_ms, "{f:?}"),
                        FaultKind::DbFailover => {
                            assert!((ttl_ms..=2 * ttl_ms).contains(&f.hold_ms), "{f:?}");
                            assert!(f.back_ms <= 1000, "{f:?}");
                        }
                        FaultKind::DbLongPause => assert!(f.hold_ms > ttl_ms, "{f:?}"),
                        FaultKind::DbClockStep => {
                            assert!(f.forward_ms > ttl_ms && f.back_ms > ttl_ms, "{f:?}");
                        }
                        FaultKind::DbPartition => {
                            assert!((1..plan.instances).contains(&f.group.len()), "{f:?}");
                            assert!(f.group.iter().all(|&i| i < plan.instances), "{f:?}");
                            assert!(f.group.windows(2).all(|w| w[0] < w[1]), "{f:?}");
                        }
                        _ => assert!(f.group.is_empty(), "{f:?}"),
                    }
                }
            }
        }
    }

    /// With Redis, the coordinator's lane holds Redis faults only, each as
    /// drawn: pauses shorter and longer than the TTL, a line cut for some
    /// instances but not all; every run, even one of 30 s, opens with a
    /// restart that loses everything; a minute sees every kind.
    #[test]
    fn redis_schedules_hold_redis_faults_as_drawn() {
        let long = schedule(&db_plan(1, 60, Coordinator::Redis));
        for kind in Coordinator::Redis.all_kinds() {
            assert!(long.iter().any(|f| f.kind == kind), "{kind:?} missing");
        }
        for seed in 0..100 {
            let short = schedule(&db_plan(seed, 30, Coordinator::Redis));
            let first = short.iter().find(|f| f.kind.on_coordinator());
            assert_eq!(
                first.map(|f| f.kind),
                Some(FaultKind::RedisEmptyRestart),
                "seed {seed}"
            );
            let plan = db_plan(seed, 60, Coordinator::Redis);
            let ttl_ms = plan.lease_ttl * 1000;
            for f in &schedule(&plan) {
                assert!(!f.kind.on_etcd() && !f.kind.on_db(), "seed {seed}: {f:?}");
                assert!(f.at_ms + f.planned_ms() <= 60_000, "{f:?}");
                match f.kind {
                    FaultKind::RedisShortPause => assert!(f.hold_ms < ttl_ms, "{f:?}"),
                    FaultKind::RedisLongPause => assert!(f.hold_ms > ttl_ms, "{f:?}"),
                    FaultKind::RedisPartition => {
                        assert!((1..plan.instances).contains(&f.group.len()), "{f:?}");
                    }
                    _ => assert!(f.group.is_empty(), "{f:?}"),
                }
            }
        }
    }

    /// A `db_partition` and a `partition` of the instance lane never cut
    /// the same instance's line at once (the first to heal would heal both).
    #[test]
    fn a_db_partition_leaves_out_instances_the_instance_lane_cuts() {
        for seed in 0..200 {
            let faults = schedule(&db_plan(seed, 120, Coordinator::Postgres));
            for cut in faults.iter().filter(|f| f.kind == FaultKind::DbPartition) {
                let clash = faults.iter().find(|f| {
                    f.kind == FaultKind::Partition
                        && f.target.is_some_and(|t| cut.group.contains(&t))
                        && f.at_ms < cut.at_ms + cut.planned_ms()
                        && f.at_ms + f.planned_ms() > cut.at_ms
                });
                assert_eq!(clash, None, "seed {seed}: {cut:?}");
            }
        }
    }

    /// The database coordinators share the instance lane with etcd: a seed
    /// puts the same instance faults at the same times whatever the
    /// coordinator.
    #[test]
    fn the_instance_lane_is_the_same_for_every_coordinator() {
        let instance_lane = |plan: &Plan| -> Vec<Fault> {
            schedule(plan)
                .into_iter()
                .filter(|f| !f.kind.on_coordinator())
                .collect()
        };
        for seed in 0..20 {
            let etcd = instance_lane(&plan(seed, 60));
            assert_eq!(
                etcd,
                instance_lane(&db_plan(seed, 60, Coordinator::Postgres))
            );
            assert_eq!(etcd, instance_lane(&db_plan(seed, 60, Coordinator::Mysql)));
        }
    }
}
