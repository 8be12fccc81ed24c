//! Where the minting identity comes from.
//!
//! Either the settings `snowmint.datacenter` and `snowmint.worker`, which an
//! operator sets in `postgresql.conf` (or with `ALTER SYSTEM`) and reloads
//! (unset, -1, the default, is refused: the extension never mints as a
//! silent 0/0); or an identity leased from a coordinator
//! (`snowmint.coordinator`, `lease.rs`), never both. [`current`] is the one
//! place `nextval` asks.

use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use snowmint::{Identity, MAX_DATACENTER, MAX_WORKER};

use crate::error::{Refusal, or_raise};

/// The value of a setting that was never given.
const UNSET: i32 = -1;

static DATACENTER: GucSetting<i32> = GucSetting::<i32>::new(UNSET);
static WORKER: GucSetting<i32> = GucSetting::<i32>::new(UNSET);

/// Registers `snowmint.datacenter` and `snowmint.worker`.
pub(crate) fn define_settings() {
    GucRegistry::define_int_guc(
        c"snowmint.datacenter",
        c"The datacenter ID that snowmint.nextval() mints as (0..=31; -1: unset, refused).",
        c"Set it with snowmint.worker in postgresql.conf or with ALTER SYSTEM, then reload. \
          Every server that mints into the same tables needs an identity of its own.",
        &DATACENTER,
        UNSET,
        MAX_DATACENTER as i32,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowmint.worker",
        c"The worker ID that snowmint.nextval() mints as (0..=31; -1: unset, refused).",
        c"Set it with snowmint.datacenter in postgresql.conf or with ALTER SYSTEM, then reload.",
        &WORKER,
        UNSET,
        MAX_WORKER as i32,
        GucContext::Sighup,
        GucFlags::default(),
    );
}

/// Where an identity comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The settings `snowmint.datacenter` and `snowmint.worker`.
    Settings,
    /// A lease on the coordinator `snowmint.coordinator` (`lease.rs`).
    Leased,
}

/// The identity to mint as, and, when leased, the tenure it was read under
/// (`lease::recheck` looks again just before an ID is returned).
#[derive(Debug, Clone, Copy)]
pub struct Current {
    pub identity: Identity,
    pub lease: Option<crate::lease::Held>,
}

impl Source {
    /// The source this server is configured with.
    pub fn configured() -> Source {
        if crate::lease::is_leased() {
            Source::Leased
        } else {
            Source::Settings
        }
    }

    /// The identity to mint as now, or why there is none.
    pub fn identity(self) -> Result<Current, Refusal> {
        match self {
            Source::Settings => Ok(Current {
                identity: from_settings(DATACENTER.get(), WORKER.get())?,
                lease: None,
            }),
            Source::Leased => {
                both_refused()?;
                let held = crate::lease::held(crate::shared::hot()?)?;
                Ok(Current {
                    identity: held.identity,
                    lease: Some(held),
                })
            }
        }
    }
}

/// The refusal of `snowmint.coordinator` together with `snowmint.datacenter`
/// or `snowmint.worker`: two sources of one identity.
pub fn both_refused() -> Result<(), Refusal> {
    let given: Vec<&str> = [
        ("snowmint.datacenter", DATACENTER.get()),
        ("snowmint.worker", WORKER.get()),
    ]
    .into_iter()
    .filter(|&(_, v)| v != UNSET)
    .map(|(name, _)| name)
    .collect();
    if given.is_empty() || crate::lease::coordinator().is_none() {
        return Ok(());
    }
    Err(Refusal::Setup(format!(
        "snowmint.coordinator and {} are both set: a leased identity (snowmint.coordinator) \
         and an identity of the settings (snowmint.datacenter, snowmint.worker) exclude each \
         other; remove {} or snowmint.coordinator",
        given.join(", "),
        if given.len() == 1 { "it" } else { "them" }
    )))
}

/// The identity of the two settings' values.
fn from_settings(datacenter: i32, worker: i32) -> Result<Identity, Refusal> {
    let unset: Vec<&str> = [
        ("snowmint.datacenter", datacenter),
        ("snowmint.worker", worker),
    ]
    .into_iter()
    .filter(|&(_, v)| v == UNSET)
    .map(|(name, _)| name)
    .collect();
    if !unset.is_empty() {
        return Err(Refusal::Setup(format!(
            "{} not set: snowmint.nextval() mints only as an identity it was given; \
             set snowmint.datacenter (0..={MAX_DATACENTER}) and snowmint.worker \
             (0..={MAX_WORKER}) in postgresql.conf or with ALTER SYSTEM, then reload",
            match unset.as_slice() {
                [one] => format!("{one} is"),
                _ => "snowmint.datacenter and snowmint.worker are".to_owned(),
            }
        )));
    }
    // The settings' ranges are the core's (see define_settings); the core
    // checks them again here.
    Ok(Identity::new(datacenter as u64, worker as u64)?)
}

/// The identity to mint as now, or why there is none.
pub fn current() -> Result<Current, Refusal> {
    Source::configured().identity()
}

/// The identity `snowmint.nextval()` mints as, e.g. `datacenter 1, worker 2`;
/// refused, as `nextval` is, while it is unset. Under a lease, the identity
/// held and the lease's state, e.g. `datacenter 1, worker 2 (leased from
/// postgres://snowmint@db/ids, fence open for 7.2 s)`, or `none (...)` and
/// why (the coordinator shown without its password).
#[pg_extern(volatile, parallel_safe)]
fn identity() -> String {
    match Source::configured() {
        Source::Settings => or_raise(current()).identity.to_string(),
        Source::Leased => {
            or_raise(both_refused());
            // Refused without preloading, as nextval is.
            crate::lease::describe(or_raise(crate::shared::hot()))
        }
    }
}
