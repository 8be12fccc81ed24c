//! snowmint-etcd against real etcd servers: one test binary with a module
//! per concern; `support` holds what they share.
//!
//! Tests that need etcd (or `etcdctl`) skip with a printed reason when it is
//! missing, unless `SNOWMINT_REQUIRE_SERVICES=1` (set by `scripts/test`),
//! which makes them fail instead.

mod example;
mod faults;
mod pings;
mod regions;
mod support;
mod tls;
