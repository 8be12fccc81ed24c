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
    /// The epoch of the server that last wrote the row.
    pub(crate) epoch: Option<String>,
    /// The longest TTL any holder of the identity may have.
    pub(crate) longest_ttl_ms: i64,
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
    /// The server's epoch (`table::epoch_sql`).
    pub(crate) epoch: String,
    /// The schema-qualified name the table's name resolves to for this
    /// connection, if a table of that name is found.
    pub(crate) resolved: Option<String>,
    /// Tables of the same name in other schemas, schema-qualified (only when
    /// the name was given without a schema).
    pub(crate) elsewhere: Vec<String>,
    /// Where this connection would create the table, schema-qualified.
    pub(crate) home: Option<String>,
    /// The smallest `longest_ttl_ms` of the table's rows, when its marker is
    /// ours.
    pub(crate) longest_ttl_ms: Option<i64>,
    /// The settings under which the server may lose acknowledged commits on
    /// a crash (`synchronous_commit = off`), named with their values.
    pub(crate) lossy: Vec<String>,
}
