//! The core generator as the server uses it: re-exports, the static
//! identity's generator with its reservation file, and how the generator's
//! counters are exported to Prometheus.

use std::path::Path;

pub use snowmint::{
    BuildError, FileStore, GenerateError, Generator, GeneratorMetrics, IdRange, Identity,
    StoreError,
};

/// Builds the static identity's generator, its reservation kept in a file
/// under `state_dir` (one file per identity, so two identities never share a
/// mark). Takes the identity's lock in that directory for as long as the
/// generator lives: a second process minting as the same identity from the
/// same directory is refused ([`StoreErrorKind::InUse`](snowmint::StoreErrorKind::InUse)).
/// The mark left by an earlier run is read here: no ID at or below it is
/// ever issued, even if the clock was set back meanwhile.
pub fn static_generator(identity: Identity, state_dir: &Path) -> Result<Generator, StaticError> {
    let store = FileStore::open(state_dir, identity).map_err(StaticError::Store)?;
    Generator::builder_for(identity)
        .store(store)
        .build()
        .map_err(StaticError::Build)
}

/// How old the newest mark write of a leased identity may be while
/// `/readyz` still trusts etcd to take the next one (the generator's
/// [`max_proof_age_ms`](snowmint::GeneratorBuilder::max_proof_age_ms)): 30 s.
/// Every mark write is a Raft write, so an idle `serve --etcd` probes etcd
/// with one only every 15 s (a static identity's file: every second), and
/// `/readyz` turns 503 at most 30 s after etcd stops taking writes while
/// it still answers keep-alives; when etcd stops answering at all, the
/// lease's fence closes it sooner.
#[cfg(any(feature = "etcd", feature = "db", feature = "redis"))]
pub(crate) const LEASED_PROOF_AGE: std::time::Duration = std::time::Duration::from_secs(30);

/// Builds a leased identity's generator over its store (the lease
/// session's generator factory in `serve --etcd`, `--postgres`, `--mysql`):
/// the default one, but probed only as often as [`LEASED_PROOF_AGE`] asks
/// (a mark write is a Raft write in etcd, a committed transaction in a
/// database).
#[cfg(any(feature = "etcd", feature = "db", feature = "redis"))]
pub(crate) fn leased_generator(
    identity: Identity,
    store: snowmint_lease::LeaseStore,
) -> Result<Generator, BuildError> {
    Generator::builder_for(identity)
        .store(store)
        .max_proof_age_ms(LEASED_PROOF_AGE.as_millis() as u64)
        .build()
}

/// Why the static generator could not be built. Each message names the
/// path or the identity concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StaticError {
    /// The state directory or the identity's lock cannot be had: another
    /// process mints as this identity from this directory, or the directory
    /// cannot be created.
    #[error(transparent)]
    Store(StoreError),
    /// Datacenter or worker out of range, or the reservation file cannot be
    /// read or is damaged.
    #[error(transparent)]
    Build(BuildError),
}

/// How one exported number is written: a counter (only goes up), or a
/// gauge of milliseconds written in seconds (the base unit Prometheus
/// names carry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    /// A duration or a Unix time kept in milliseconds, exported in seconds.
    GaugeMsAsSeconds,
}

/// One exported metric: kind, name, help, value.
pub(crate) type MetricRow = (Kind, &'static str, &'static str, u64);

/// The generator's counters as metrics.
pub(crate) fn metric_rows(m: &GeneratorMetrics) -> [MetricRow; 11] {
    use Kind::{Counter, GaugeMsAsSeconds};
    [
        (
            Counter,
            "generator_ids",
            "IDs issued by the generator",
            m.ids_issued,
        ),
        (
            Counter,
            "generator_exhaustion_waits",
            "Calls that found a millisecond's 4096 IDs used up and waited for the next",
            m.exhaustion_waits,
        ),
        (
            Counter,
            "generator_clock_regressions",
            "Times the clock went behind the last issued millisecond",
            m.clock_regressions,
        ),
        (
            GaugeMsAsSeconds,
            "generator_largest_regression_seconds",
            "Largest distance seen between a lagging clock and the last issued millisecond",
            m.largest_regression_ms,
        ),
        (
            GaugeMsAsSeconds,
            "generator_borrowed_seconds",
            "How far the last issued millisecond is ahead of the clock now",
            m.borrowed_ms,
        ),
        (
            GaugeMsAsSeconds,
            "generator_largest_borrow_seconds",
            "Furthest ahead of the clock a millisecond was borrowed",
            m.largest_borrow_ms,
        ),
        (
            Counter,
            "generator_clock_behind_errors",
            "Calls refused because the clock stayed too far behind",
            m.clock_behind_errors,
        ),
        (
            Counter,
            "generator_reservation_writes",
            "Reservation marks written to the store",
            m.reservation_writes,
        ),
        (
            Counter,
            "generator_reservation_failures",
            "Failed writes to the reservation store",
            m.reservation_failures,
        ),
        (
            GaugeMsAsSeconds,
            "generator_last_issued_timestamp_seconds",
            "Unix time of the millisecond of the last issued ID",
            m.last_issued_ms,
        ),
        (
            GaugeMsAsSeconds,
            "generator_reserved_until_timestamp_seconds",
            "Unix time of the durable reservation mark, 0 if none",
            m.reserved_until_ms.unwrap_or(0),
        ),
    ]
}
