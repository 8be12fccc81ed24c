//! What the statements answer, in the same shapes for both databases:
//! `pg.rs` and `my.rs` build them, `backend.rs` passes them on and
//! `coordinator.rs` reads them.

pub(crate) use snowmint_lease::Source;

/// One identity's row as a scan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) n: u16,
    /// A live lease holds it (by the database's clock).
    pub(crate) taken: bool,
    pub(crate) mark: Option<i64>,
    /// Its last holder's lease ended without a release.
    pub(crate) unclean: bool,
}

/// What a claim replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Before {
    pub(crate) lease: Option<i64>,
    pub(crate) holder: Option<String>,
    pub(crate) instance: Option<i64>,
    pub(crate) ttl_ms: Option<i64>,
    pub(crate) released: bool,
}

/// What a new connection found the server and the table to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerState {
    /// Why the server cannot be trusted with leases (a standby, read-only).
    pub(crate) untrusted: Option<String>,
    /// `None`: no such table; `Some(comment)`: the table's comment.
    pub(crate) marker: Option<Option<String>>,
    /// How many rows the table has, when its marker is ours.
    pub(crate) rows: Option<i64>,
}
