//! One connection to either database, whichever it is (what its
//! statements answer is `answer.rs`'s; the protocol's meaning of them is
//! `coordinator.rs`'s).

pub(crate) use crate::answer::{Before, Row, ServerState, Source};
use crate::table::{Dialect, Table};

/// Where to connect, for either database.
#[derive(Clone)]
pub(crate) enum Target {
    #[cfg(feature = "postgres")]
    Postgres(Box<crate::pg::Target>),
    #[cfg(feature = "mysql")]
    Mysql(crate::my::Target),
}

impl Target {
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Target::Mysql(_) => Dialect::Mysql,
        }
    }

    pub(crate) fn table(&self) -> &Table {
        match self {
            #[cfg(feature = "postgres")]
            Target::Postgres(t) => &t.table,
            #[cfg(feature = "mysql")]
            Target::Mysql(t) => &t.table,
        }
    }

    pub(crate) async fn connect(&self) -> Result<Conn, Source> {
        match self {
            #[cfg(feature = "postgres")]
            Target::Postgres(t) => crate::pg::connect(t).await.map(Conn::Postgres),
            #[cfg(feature = "mysql")]
            Target::Mysql(t) => crate::my::connect(t).await.map(Conn::Mysql),
        }
    }
}

/// One connection.
pub(crate) enum Conn {
    #[cfg(feature = "postgres")]
    Postgres(crate::pg::Conn),
    #[cfg(feature = "mysql")]
    Mysql(crate::my::Conn),
}

/// `$conn.$op(args)` on whichever database it is.
macro_rules! each {
    ($conn:expr, $c:ident => $call:expr) => {
        match $conn {
            #[cfg(feature = "postgres")]
            Conn::Postgres($c) => $call,
            #[cfg(feature = "mysql")]
            Conn::Mysql($c) => $call,
        }
    };
}

impl Conn {
    pub(crate) async fn state(&mut self, table: &Table) -> Result<ServerState, Source> {
        each!(self, c => c.state(table).await)
    }

    pub(crate) async fn create(&mut self) -> Result<(), Source> {
        each!(self, c => c.create().await)
    }

    /// The server's epoch, as the check of this connection read it.
    pub(crate) fn epoch(&self) -> &str {
        each!(self, c => c.epoch())
    }

    pub(crate) async fn upgrade(&mut self) -> Result<(), Source> {
        each!(self, c => c.upgrade().await)
    }

    pub(crate) async fn scan(&mut self, first: u16, last: u16) -> Result<Vec<Row>, Source> {
        each!(self, c => c.scan(first, last).await)
    }

    pub(crate) async fn claim(
        &mut self,
        n: u16,
        lease: i64,
        holder: &str,
        instance: i64,
        ttl_ms: i64,
    ) -> Result<Option<Before>, Source> {
        each!(self, c => c.claim(n, lease, holder, instance, ttl_ms).await)
    }

    pub(crate) async fn keep_alive(&mut self, lease: i64, ttl_ms: i64) -> Result<bool, Source> {
        each!(self, c => c.keep_alive(lease, ttl_ms).await)
    }

    pub(crate) async fn confirm(&mut self, n: u16, lease: i64) -> Result<Option<bool>, Source> {
        each!(self, c => c.confirm(n, lease).await)
    }

    pub(crate) async fn release(&mut self, n: u16, lease: i64) -> Result<bool, Source> {
        each!(self, c => c.release(n, lease).await)
    }

    pub(crate) async fn revoke(&mut self, lease: i64) -> Result<(), Source> {
        each!(self, c => c.revoke(lease).await)
    }

    pub(crate) async fn load_mark(&mut self, n: u16) -> Result<Option<Option<i64>>, Source> {
        each!(self, c => c.load_mark(n).await)
    }

    pub(crate) async fn raise_mark(
        &mut self,
        n: u16,
        lease: i64,
        until: i64,
    ) -> Result<bool, Source> {
        each!(self, c => c.raise_mark(n, lease, until).await)
    }
}
