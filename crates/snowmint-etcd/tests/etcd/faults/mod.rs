//! `LeasedGenerator` against a real etcd started on loopback ports, under
//! faults: distinct identities, hand-over on graceful stop, fencing when
//! etcd freezes or the line is cut, take-over after a crash with a lagging
//! clock, and no duplicate in the merged log of every ID issued
//! ([`check_log`](crate::support::log::check_log)). One module per kind of
//! fault.

/// The generator a session builds: slow to build, idle, or not what the
/// session asked for.
mod generator;
/// etcd out of reach: frozen, cut off, not yet up, one endpoint dead.
mod outage;
/// Holders come and go: graceful stops, crashes, a full pool.
mod takeover;
/// Someone else writes the keys: a damaged mark, an identity key deleted or
/// taken over under a live lease.
mod tampering;
