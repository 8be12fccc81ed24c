//! The `snowmint` binary, run as a user runs it: arguments in; stdout,
//! stderr, exit status and, for `serve`, a real socket out. One test binary
//! with a module per surface; `support` holds what they share.
//!
//! Tests that need a service (etcd, `script`, `curl`) skip with a printed reason
//! when it is missing, unless `SNOWMINT_REQUIRE_SERVICES=1` (set by
//! `scripts/test`), which makes them fail instead.

mod abuse;
mod compose_decode;
#[cfg(feature = "db")]
mod db_serve;
mod docs;
#[cfg(feature = "etcd")]
mod etcd_serve;
#[cfg(target_os = "linux")]
mod frozen;
mod hardening;
mod layouts;
mod next;
mod operator;
mod range;
mod serve;
mod sql;
mod support;
mod surfaces;
mod tls;
mod worker_from_hostname;
