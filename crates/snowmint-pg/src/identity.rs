//! Where the minting identity comes from.
//!
//! Today: the settings `snowmint.datacenter` and `snowmint.worker`, which an
//! operator sets in `postgresql.conf` (or with `ALTER SYSTEM`) and reloads.
//! Unset (-1, the default) is refused: the extension never mints as a
//! silent 0/0. [`current`] is the one place `nextval` asks; a leased
//! identity (a coordinator) would be another arm of [`Source`].

use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use snowmint::{Identity, MAX_DATACENTER, MAX_WORKER};

use crate::error::{Refusal, or_raise};

/// The value of a setting that was never given.
const UNSET: i32 = -1;

static DATACENTER: GucSetting<i32> = GucSetting::<i32>::new(UNSET);
static WORKER: GucSetting<i32> = GucSetting::<i32>::new(UNSET);

/// Registers `snowmint.datacenter` and `snowmint.worker`, and reserves the
/// `snowmint.` prefix, so a misspelt setting is reported rather than kept.
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
    // SAFETY: a C string that lives for the program; called from _PG_init.
    unsafe { pg_sys::MarkGUCPrefixReserved(c"snowmint".as_ptr()) };
}

/// Where an identity comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The settings `snowmint.datacenter` and `snowmint.worker`.
    Settings,
}

impl Source {
    /// The source this server is configured with.
    pub fn configured() -> Source {
        Source::Settings
    }

    /// The identity to mint as now, or why there is none.
    pub fn identity(self) -> Result<Identity, Refusal> {
        match self {
            Source::Settings => from_settings(DATACENTER.get(), WORKER.get()),
        }
    }
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
pub fn current() -> Result<Identity, Refusal> {
    Source::configured().identity()
}

/// The identity `snowmint.nextval()` mints as, e.g. `datacenter 1, worker 2`;
/// refused, as `nextval` is, while it is unset.
#[pg_extern(stable, parallel_safe)]
fn identity() -> String {
    or_raise(current()).to_string()
}
