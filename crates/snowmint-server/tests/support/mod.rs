//! Real services for the integration tests: an etcd process on loopback
//! ports, and a TCP proxy that can cut the line between an instance and etcd.
#![allow(dead_code)]

pub mod etcd;
pub mod proxy;

/// Whether a missing external program must fail the test instead of
/// skipping it (`SNOWMINT_REQUIRE_SERVICES=1`, set by `scripts/test` and CI).
pub fn services_required() -> bool {
    std::env::var("SNOWMINT_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

/// Reports why a test cannot run: a skip with a printed reason, or a failure
/// when services are required. Returns `None` so callers can `?`/`let else`.
pub fn skip<T>(reason: &str) -> Option<T> {
    if services_required() {
        panic!("SNOWMINT_REQUIRE_SERVICES=1 but {reason}");
    }
    eprintln!("skipping: {reason} (set SNOWMINT_REQUIRE_SERVICES=1 to make this a failure)");
    None
}
