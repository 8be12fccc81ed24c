//! The chaos harness: a randomized fault test of distributed mode, in the
//! manner of Jepsen.
//!
//! A run starts a three-member etcd cluster on loopback, `instances`
//! `snowmint serve --etcd` processes (each reaching etcd through its own
//! [`Proxy`](crate::proxy::Proxy)s, under a [`FakeClock`](crate::clock::FakeClock))
//! and one static-mode instance with a state directory. Clients mint from
//! every instance the whole time; a nemesis carries out a
//! [`schedule`](schedule::schedule) drawn from the seed (kills, pauses,
//! partitions, clock steps, etcd leader kills, member pauses and restarts);
//! probes record `/readyz`. Then the [`checker`] decides from the recorded
//! [`history`] alone whether any ID was acknowledged twice or out of order,
//! and [`report`] writes `ids.txt`, `summary.json` and `report.html`.
//!
//! `scripts/chaos [--seconds N] [--seed S] [--instances N]` builds and runs it.

pub mod checker;
pub mod history;
pub mod report;
pub mod run;
pub mod schedule;
