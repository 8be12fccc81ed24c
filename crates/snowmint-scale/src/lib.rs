//! The scale run of distributed mode (`snowmint-scale`, run by
//! `scripts/scale`): a three-member etcd cluster on loopback, N
//! [`LeasedGenerator`](snowmint_etcd::LeasedGenerator)s started at once in
//! this one process, each a real, independent one as a library user runs
//! it (its own lease session, runtime thread, reservation thread and etcd
//! connections), minting; then what that costs etcd, as etcd itself counts
//! it (its `/metrics`).
//!
//! # Layout
//!
//! - `config.rs`: what a run is given and what it records ([`run::Config`],
//!   the timeline's samples, the phases' spans, the outcome).
//! - `phases.rs`: the phases (claim, steady state, one waiter too many, a
//!   storm of crashed holders, idle `serve` processes), the checks and
//!   `summary.json`, written once over a coordinator: how its generators
//!   start, what it counts.
//! - `fleet.rs`: the generators, their mint lanes and the duplicate count.
//! - `run.rs`: the coordinator etcd (the default), counted by
//!   `metrics.rs`: etcd's request counters, scraped from every member.
//! - `db.rs`: the coordinators PostgreSQL (through PgBouncer) and MariaDB
//!   (`--coordinator postgres|mysql`), counted by the database.
//! - `redis.rs`: the coordinator Redis (`--coordinator redis`), counted by
//!   Redis's `INFO commandstats`.
//! - `serve.rs`: what idle `snowmint serve` processes cost the coordinator
//!   (the server's keeper, which the library's generators lack).
//! - `report.rs`: `report.html`, the held identities and etcd's requests
//!   per second over time.

pub mod config;
pub mod db;
mod fleet;
pub mod metrics;
mod phases;
pub mod redis;
pub mod report;
pub mod run;
pub mod serve;
