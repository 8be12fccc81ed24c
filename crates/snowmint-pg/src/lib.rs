//! snowmint inside PostgreSQL: `CREATE EXTENSION snowmint`.
//!
//! - [`mint`]: `snowmint.nextval()` and `snowmint.nextval(layout)`, IDs minted
//!   by the server for column defaults, strictly increasing across every
//!   backend, never a duplicate across crashes and restarts with the clock set
//!   back. Needs `shared_preload_libraries = 'snowmint'` (shared memory).
//! - [`identity`]: where the minting identity comes from (the settings
//!   `snowmint.datacenter` and `snowmint.worker`), and `snowmint.identity()`.
//! - [`read`]: the reading functions (`snowmint.time(id)`, the fields,
//!   `min_id`, `max_id`, `compose`), in any layout, natively; they need no
//!   preloading.
//!
//! # Layout
//!
//! - `shared.rs`: the shared memory (one state word per layout, the durable
//!   mark, the clock's anchor) and its start: the mark loaded from the data
//!   directory before any backend runs;
//! - `clock.rs`: one clock for the whole server, the wall clock made
//!   monotonic in shared memory;
//! - `mint.rs`: the claim loop over a shared state word and the reservation;
//! - `layouts.rs`: a backend's cache of parsed layouts;
//! - `error.rs`: every refusal, with its SQLSTATE.
//!
//! Every rule of the format, the layouts and the parsing of values is the
//! core crate's (`snowmint`); this crate only places it in PostgreSQL.

mod clock;
mod error;
pub mod identity;
mod layouts;
pub mod mint;
pub mod read;
mod shared;

use pgrx::prelude::*;

::pgrx::pg_module_magic!(name, version);

/// Registers the settings and, when loaded through
/// `shared_preload_libraries`, the shared memory and its start hook.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    identity::define_settings();
    // SAFETY: a flag PostgreSQL sets while it loads the preloaded libraries
    // in the postmaster; read once, from the one thread PostgreSQL runs.
    if unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        shared::init();
    }
}
