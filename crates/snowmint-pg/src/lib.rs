//! snowmint inside PostgreSQL: `CREATE EXTENSION snowmint`.
//!
//! - [`mint`]: `snowmint.nextval()` and `snowmint.nextval(layout)`, IDs minted
//!   by the server for column defaults, strictly increasing across every
//!   backend, never a duplicate across crashes and restarts with the clock set
//!   back. Needs `shared_preload_libraries = 'snowmint'` (shared memory).
//! - [`identity`]: where the minting identity comes from (the settings
//!   `snowmint.datacenter` and `snowmint.worker`, or a lease on the
//!   coordinator `snowmint.coordinator`), and `snowmint.identity()`.
//! - [`read`]: the reading functions (`snowmint.time(id)`, the fields,
//!   `min_id`, `max_id`, `compose`), in any layout, natively; they need no
//!   preloading.
//!
//! # Layout
//!
//! - `shared.rs`: the shared memory (one state word per layout geometry,
//!   the cluster mark, the floor, the reach);
//! - `worker.rs`: the mark writer, a background worker: where IDs start
//!   after a start, a failover or a restore, and the only writer of the
//!   cluster mark's file;
//! - `lease.rs`: a leased identity: the lease worker, a background worker
//!   that runs `snowmint serve --postgres`'s lease session (crates
//!   `snowmint-lease`, `snowmint-db`) on threads of its own and publishes
//!   the identity, its fence and its coordinator mark in shared memory;
//! - `dbmark.rs`: each database's WAL-logged mark, the sequence
//!   `snowmint.mark`, which replicas, point-in-time recovery and `pg_dump`
//!   carry;
//! - `clock.rs`: the wall clock, and the reach that bounds a forced lead;
//! - `mint.rs`: the claim loop over a shared state word and the marks;
//! - `wait.rs`: every wait of ours, on the latch, cancellable and bounded;
//! - `layouts.rs`: a backend's cache of parsed layouts, and which layouts
//!   may take a state slot (`snowmint.layouts`);
//! - `error.rs`: every refusal, with its SQLSTATE.
//!
//! Every rule of the format, the layouts and the parsing of values is the
//! core crate's (`snowmint`); this crate only places it in PostgreSQL.

mod clock;
mod dbmark;
mod error;
pub mod identity;
mod layouts;
mod lease;
pub mod mint;
pub mod read;
mod shared;
mod wait;
mod worker;

use pgrx::prelude::*;

::pgrx::pg_module_magic!(name, version);

// The database's WAL-logged mark (`dbmark.rs`): no role but the bootstrap
// superuser (as which `nextval` raises it) may touch it, and `pg_dump` dumps
// its value.
extension_sql!(
    r#"
CREATE SEQUENCE snowmint.mark MINVALUE 0 START 0 NO CYCLE;
COMMENT ON SEQUENCE snowmint.mark IS
    'snowmint''s mark in this database (Unix ms): at or above the time of every ID nextval returned here';
REVOKE ALL ON SEQUENCE snowmint.mark FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('snowmint.mark', '');
"#,
    name = "mark_sequence",
    bootstrap
);

/// Registers the settings and, when loaded through
/// `shared_preload_libraries`, the shared memory, the mark writer and (with
/// `snowmint.coordinator`) the lease worker.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    layouts::define_setting();
    identity::define_settings();
    // SAFETY: a flag PostgreSQL sets while it loads the preloaded libraries
    // in the postmaster; read from the one thread PostgreSQL runs.
    let preloading = unsafe { pg_sys::process_shared_preload_libraries_in_progress };
    // Settings of the postmaster's context can only be defined while
    // preloading (PostgreSQL refuses them later); without preloading there
    // is no lease worker to read them.
    if preloading {
        lease::define_settings();
    }
    // After every setting of ours is defined: a misspelt `snowmint.*`
    // setting is reported and removed rather than kept.
    // SAFETY: a C string that lives for the program; called from _PG_init.
    unsafe { pg_sys::MarkGUCPrefixReserved(c"snowmint".as_ptr()) };
    if preloading {
        // Two sources of one identity: the server does not start (an error
        // in the postmaster's start is fatal), naming both settings.
        if let Err(refusal) = identity::both_refused() {
            refusal.raise();
        }
        shared::init();
        worker::register();
        if lease::coordinator().is_some() {
            lease::register();
        }
    }
}
