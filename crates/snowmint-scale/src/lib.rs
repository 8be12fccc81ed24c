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
//! - `metrics.rs`: etcd's request counters, scraped from every member.
//! - `run.rs`: the phases (claim, steady state, one waiter too many, a
//!   storm of crashed holders), the checks and `summary.json`.
//! - `serve.rs`: what idle `snowmint serve --etcd` processes cost etcd
//!   (the server's keeper, which the library's generators lack).
//! - `db.rs`: the same phases against PostgreSQL (through PgBouncer) or
//!   MariaDB (`--coordinator postgres|mysql`).
//! - `report.rs`: `report.html`, the held identities and etcd's requests
//!   per second over time.

pub mod db;
pub mod metrics;
pub mod report;
pub mod run;
pub mod serve;
