//! What a chaos run is given ([`Config`]) and how it ended ([`Outcome`]),
//! and what follows from the configuration alone: the free identities of a
//! database run and the schedule's inputs. The run (`run.rs`) and the
//! report (`report.rs`) both read them.

use std::path::PathBuf;

use super::schedule::{Coordinator, Plan};

/// The datacenter the leased instances lease their workers in
/// (`--datacenter` with `--etcd`, `--postgres` or `--mysql`): any other
/// than the static instance's.
pub const ETCD_DATACENTER: u8 = 0;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Length of the load, seconds.
    pub seconds: u64,
    /// The seed of the schedule and of the clients' batch sizes.
    pub seed: u64,
    /// What the instances lease from: etcd, PostgreSQL or MariaDB.
    pub coordinator: Coordinator,
    /// How many `serve --etcd` (`--postgres`, `--mysql`) instances (one
    /// static-mode instance runs too).
    pub instances: usize,
    /// How many etcd members (with etcd).
    pub members: usize,
    /// The instances' `--lease-ttl`, seconds.
    pub lease_ttl: u64,
    /// Each client waits up to this long (drawn from the seed) between mints, ms.
    pub think_ms: u64,
    /// With a database or Redis: how many identities of datacenter
    /// [`ETCD_DATACENTER`] are left free for the instances (its first
    /// workers; a crowd holds the others for good, see
    /// [`Database::crowd`](super::database::Database::crowd)); `None` for `instances + 1`, 32 for all.
    pub free_identities: Option<usize>,
    /// The `snowmint` binary, built with `--features etcd` (and the default `db`).
    pub snowmint: PathBuf,
    /// Where the report goes (`ids.txt`, `summary.json`, `report.html`, `logs/`).
    pub out: PathBuf,
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// Whether the checker passed (and nothing else went wrong).
    pub passed: bool,
    /// The one-line summary printed at the end.
    pub line: String,
}

/// How many identities of datacenter [`ETCD_DATACENTER`] a database run
/// leaves free: [`Config::free_identities`], else one more than the
/// instances; at least one, at most 32.
pub fn free_identities(config: &Config) -> usize {
    config
        .free_identities
        .unwrap_or(config.instances + 1)
        .clamp(1, 32)
}

/// The schedule's inputs for `config`.
pub fn plan(config: &Config) -> Plan {
    Plan {
        seed: config.seed,
        coordinator: config.coordinator,
        seconds: config.seconds,
        instances: config.instances,
        members: config.members,
        lease_ttl: config.lease_ttl,
    }
}
