//! The database's mark: the sequence `snowmint.mark` of each database the
//! extension is created in, WAL-logged like every sequence.
//!
//! Before `nextval` returns an ID of time `ms` in a database, that database's
//! sequence holds at least `ms` (Unix ms), raised with `setval`, which is not
//! undone by a rollback and is written to WAL before the ID is returned. So
//! in WAL order the mark comes before every row that holds an ID it covers:
//! a standby, a point-in-time recovery or a restored base backup that has
//! the row has the mark too. `pg_dump` reads the sequence after its snapshot
//! and dumps its value (the extension registers it with
//! `pg_extension_config_dump`), so a dump carries a mark at or above every ID
//! it holds. The first mint in a database after each start raises the
//! server's floor to the database's mark (`shared::raise_floor`).
//!
//! Raising it takes `ShareUpdateExclusiveLock` on the sequence for the read
//! and the `setval` only (a heavyweight lock: its wait is cancellable and
//! bounded by `lock_timeout` / `statement_timeout`), so two backends never
//! lower it by writing out of order. The calls run as the bootstrap
//! superuser: no role needs or gets a privilege on the sequence, and none
//! can lower it.

use std::cell::Cell;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::error::Refusal;

/// The sequence's name in the extension's schema.
pub const SEQUENCE: &str = "snowmint.mark";

thread_local! {
    /// The database's mark as this backend last read or wrote it; `None`
    /// until the first mint of this backend (which also raises the floor).
    static SEEN: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The mark this backend knows the database holds, reading it (and raising
/// the server's floor to it) on the backend's first mint.
pub fn seen(floor: impl FnOnce(u64)) -> Result<u64, Refusal> {
    if let Some(v) = SEEN.get() {
        return Ok(v);
    }
    let oid = sequence_oid()?;
    let value = as_owner(|| last_value(oid));
    floor(value);
    SEEN.set(Some(value));
    Ok(value)
}

/// Raises the database's mark to at least `until_ms`. With `wait` false it
/// gives up at once (returning `Ok(false)`) if another backend holds the
/// sequence's lock: a renewal ahead of need never waits.
pub fn raise(until_ms: u64, wait: bool) -> Result<bool, Refusal> {
    let oid = sequence_oid()?;
    let lock = pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE;
    // SAFETY: a relation lock of the current transaction, released below.
    unsafe {
        if wait {
            pg_sys::LockRelationOid(oid, lock);
        } else if !pg_sys::ConditionalLockRelationOid(oid, lock) {
            return Ok(false);
        }
    }
    struct Unlock(pg_sys::Oid, pg_sys::LOCKMODE);
    impl Drop for Unlock {
        fn drop(&mut self) {
            // SAFETY: the lock taken above, held by this backend.
            unsafe { pg_sys::UnlockRelationOid(self.0, self.1) };
        }
    }
    let _unlock = Unlock(oid, lock);
    let value = as_owner(|| {
        let cur = last_value(oid);
        if cur < until_ms {
            set_value(oid, until_ms);
            until_ms
        } else {
            cur
        }
    });
    SEEN.set(Some(SEEN.get().unwrap_or(0).max(value)));
    Ok(true)
}

/// The OID of `snowmint.mark` in this database, or why there is none.
fn sequence_oid() -> Result<pg_sys::Oid, Refusal> {
    // SAFETY: catalog lookups by name, valid in any backend connected to a
    // database; they raise no error with missing_ok.
    let oid = unsafe {
        let nsp = pg_sys::get_namespace_oid(c"snowmint".as_ptr(), true);
        if nsp == pg_sys::InvalidOid {
            pg_sys::InvalidOid
        } else {
            pg_sys::get_relname_relid(c"mark".as_ptr(), nsp)
        }
    };
    if oid == pg_sys::InvalidOid {
        return Err(Refusal::Setup(format!(
            "snowmint.nextval() needs the sequence {SEQUENCE} (the database's WAL-logged mark), \
             which this database lacks: the extension was created by version 0.1.0; \
             ALTER EXTENSION snowmint UPDATE creates it"
        )));
    }
    Ok(oid)
}

/// Runs `f` as the bootstrap superuser (the sequence's owner), restoring the
/// caller's user afterwards, also when `f` raises an error.
fn as_owner<T>(f: impl FnOnce() -> T) -> T {
    let mut user = pg_sys::InvalidOid;
    let mut context = 0;
    // SAFETY: saves and switches the current user as SECURITY DEFINER
    // functions do; restored by the guard below.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(
            pg_sys::Oid::from(pg_sys::BOOTSTRAP_SUPERUSERID),
            context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32,
        );
    }
    struct Restore(pg_sys::Oid, i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: the values saved above.
            unsafe { pg_sys::SetUserIdAndSecContext(self.0, self.1) };
        }
    }
    let _restore = Restore(user, context);
    f()
}

/// The sequence's value (0 before the first `setval`).
fn last_value(oid: pg_sys::Oid) -> u64 {
    // SAFETY: a call of the built-in function with its one argument; it
    // returns NULL for a sequence never set, read as 0.
    let value: Option<i64> = unsafe {
        pgrx::fcinfo::direct_function_call(
            |fcinfo| pg_sys::pg_sequence_last_value(fcinfo),
            &[oid.into_datum()],
        )
    };
    value.map_or(0, |v| v.max(0) as u64)
}

/// `setval(oid, value, true)`: WAL-logged, not undone by a rollback.
fn set_value(oid: pg_sys::Oid, value: u64) {
    let value = value.min(i64::MAX as u64) as i64;
    // SAFETY: a call of the built-in function with its arguments.
    let _: Option<i64> = unsafe {
        pgrx::fcinfo::direct_function_call(
            |fcinfo| pg_sys::setval_oid(fcinfo),
            &[oid.into_datum(), value.into_datum()],
        )
    };
}
