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
//! With `--coordinator postgres` or `--coordinator mysql` the instances
//! lease from a [`database`] primary with a standby instead (`serve
//! --postgres URL`, `serve --mysql URL`), each through proxies of its own
//! (for PostgreSQL the even ones on a multi-host URL naming both servers,
//! the odd ones through PgBouncer in transaction mode), and the
//! coordinator's lane of the schedule holds database faults: a lossy
//! failover first (the standby cut off, the primary killed, the standby
//! promoted, a new standby made), then the primary paused for less and more
//! than the TTL, crashed and restarted, its clock stepped both ways by more
//! than the TTL, the line to it cut for some instances. The instance faults
//! and the checker are the same.
//!
//! With `--coordinator redis` the instances lease from one [`redis`]
//! server (`serve --redis URL`, the prefix's longest TTL declared to be
//! the instances' own), each through a proxy of its own, and the
//! coordinator's lane holds Redis's faults: an empty restart first (every
//! key lost), then Redis paused for less and more than the TTL, killed and
//! started again from its append-only file (a new epoch), the line to it
//! cut for some instances.
//!
//! `scripts/chaos [--coordinator etcd|postgres|mysql|redis] [--seconds N]
//! [--seed S] [--instances N]` builds and runs it.

pub mod checker;
pub mod config;
pub mod database;
pub mod history;
pub mod redis;
pub mod report;
pub mod run;
pub mod schedule;
