//! Planted defects, for proving that the simulation catches them
//! (feature `plant`, which only the simulation's build turns on; a release
//! binary of `snowmint` never has it). Each is a one-line deviation from a
//! rule of the protocol, switched on at run time for one schedule.

use std::sync::atomic::{AtomicU8, Ordering};

/// A planted defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// The fence deadline taken from when a renewal's answer arrived, not
    /// from when it was sent.
    FenceFromAnswer,
    /// A renewal counts without its raft-term confirmation.
    RenewalWithoutTerm,
    /// The mark lowered to the last issued millisecond at hand-over.
    MarkLoweredAtHandover,
    /// A re-claim forgets the floor: IDs of the new identity may be below
    /// the old one's.
    ReclaimForgetsFloor,
    /// A keep-alive answer with TTL 0 trusted without a confirming read.
    Ttl0Trusted,
    /// An identity whose last holder did not release it issued under at
    /// once, without the hand-over wait (the overlap of etcd issue 12528).
    HandoverWithoutWait,
    /// The lease clock leaves out time the machine spent suspended (the
    /// bare monotonic clock): a holder woken past its lease's end finds its
    /// fence open.
    SuspendUncounted,
    /// After the coordinator's history changed (a lossy failover), the mark
    /// read is trusted as the floor: a lost holder's IDs may be above it.
    UntrustedMarkTrusted,
    /// A re-claim of an identity forgets the hand-over wait this session
    /// kept for it: answered "clean" (the row is its own now), it issues at
    /// once although the holder before it may still be fenced open.
    HandoverDroppedOnReclaim,
    /// The hand-over wait one margin short: the previous holder's TTL minus
    /// its fence margin, as if its fence closed on the next holder's clock.
    HandoverWaitShort,
    /// The simulation's database model answers a claim as if its epoch had
    /// not changed after a failover that lost commits (the switch is in the
    /// model's coordinator, `crates/snowmint-sim`).
    EpochIgnored,
    /// A claim that went unanswered (and may have been applied) leaves the
    /// session's instance token as it was: its next claim of that identity
    /// is answered as its own, clean, although the wait that claim asked
    /// for was never learned.
    UnansweredClaimKeepsInstance,
    /// The simulation's Redis model answers a claim of an identity with no
    /// record as clean, as if a missing record were one never written: but
    /// after Redis lost everything (a restart without persistence) or a key
    /// was evicted, the record of a holder still fenced open is missing too
    /// (the switch is in the model's coordinator, `crates/snowmint-sim`).
    MissingRecordTrusted,
}

impl Plant {
    /// Every plant, with its name on the command line.
    pub const ALL: [(Plant, &'static str); 13] = [
        (Plant::FenceFromAnswer, "fence-from-answer"),
        (Plant::RenewalWithoutTerm, "renewal-without-term"),
        (Plant::MarkLoweredAtHandover, "mark-lowered-at-handover"),
        (Plant::ReclaimForgetsFloor, "reclaim-forgets-floor"),
        (Plant::Ttl0Trusted, "ttl0-trusted"),
        (Plant::HandoverWithoutWait, "handover-without-wait"),
        (Plant::SuspendUncounted, "suspend-uncounted"),
        (Plant::UntrustedMarkTrusted, "untrusted-mark-trusted"),
        (
            Plant::HandoverDroppedOnReclaim,
            "handover-dropped-on-reclaim",
        ),
        (Plant::HandoverWaitShort, "handover-wait-short"),
        (Plant::EpochIgnored, "epoch-ignored"),
        (
            Plant::UnansweredClaimKeepsInstance,
            "unanswered-claim-keeps-instance",
        ),
        (Plant::MissingRecordTrusted, "missing-record-trusted"),
    ];

    /// The plant of `name`.
    pub fn by_name(name: &str) -> Option<Plant> {
        Plant::ALL.iter().find(|(_, n)| *n == name).map(|(p, _)| *p)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Plant::ALL
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("", |(_, n)| n)
    }
}

static ACTIVE: AtomicU8 = AtomicU8::new(0);

/// Switches `plant` on (or every plant off, with `None`) for this process.
pub fn set(plant: Option<Plant>) {
    let code = plant.map_or(0, |p| {
        1 + Plant::ALL.iter().position(|(q, _)| *q == p).unwrap_or(0) as u8
    });
    ACTIVE.store(code, Ordering::Relaxed);
}

/// Whether `plant` is switched on (also for a simulation's model of a
/// coordinator, where a plant such as [`Plant::EpochIgnored`] lives).
pub fn on(plant: Plant) -> bool {
    let code = ACTIVE.load(Ordering::Relaxed);
    code != 0 && Plant::ALL[usize::from(code - 1)].0 == plant
}
