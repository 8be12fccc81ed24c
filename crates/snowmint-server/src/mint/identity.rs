//! Where the worker identity comes from: one interface for every source.
//!
//! The configuration's `identity_source` says which source it asks for;
//! `serve` starts it ([`Minter::start_static`], `Minter::leased` (feature `etcd`)),
//! [`Minter::ready`] says whether it can issue now, and
//! [`Minter::shutdown`] ends it. `serve` runs that lifecycle around the
//! HTTP server.

use crate::mint::minter::Identity;
#[cfg(doc)]
use crate::mint::minter::Minter;

/// Which identity source a configuration (`Config`) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentitySource {
    /// `--datacenter/--worker`: this identity, its reservation in the state
    /// directory.
    Static(Identity),
    /// `--worker-from-hostname`: the identity of the StatefulSet pod's
    /// ordinal (`NAME-N`), otherwise as [`Static`](IdentitySource::Static).
    FromHostname,
    /// `--etcd`: an identity leased from etcd (needs the `etcd` feature).
    Etcd,
}
