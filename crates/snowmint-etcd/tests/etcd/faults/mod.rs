//! `LeasedGenerator` against a real etcd started on loopback ports, under
//! faults: distinct identities, hand-over on graceful stop, fencing when
//! etcd freezes or the line is cut, take-over after a crash with a lagging
//! clock, and no duplicate in the merged log of every ID issued
//! ([`check_log`](crate::support::log::check_log)). One module per kind of
//! fault.

mod generator;
mod outage;
mod takeover;
mod tampering;
