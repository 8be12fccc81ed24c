//! Distributed mode: the worker identity leased from etcd (feature `etcd`).
//!
//! See `docs/distributed.md` for the safety argument.

#[allow(dead_code)] // used by the lease session (next commit)
mod bridge;
pub mod keys;
#[allow(dead_code)] // used by the lease session (next commit)
mod ops;

pub use keys::{DEFAULT_PREFIX, Keys};
pub use ops::EtcdError;

#[cfg(test)]
mod tests;
