//! Every refusal of the extension, with the SQLSTATE PostgreSQL reports.

use std::fmt;

use pgrx::PgSqlErrorCode;

/// Why a call could not give its answer. Nothing is minted or changed when
/// one is returned.
#[derive(Debug)]
pub enum Refusal {
    /// An argument is out of range or malformed (the core's message, which
    /// names the field, the value and the allowed range).
    Input(String),
    /// A value is NULL where one is needed (an element of an array
    /// argument), the message naming it.
    Null(String),
    /// The server is not set up for minting: not preloaded, the identity
    /// unset, the mark unusable.
    Setup(String),
    /// Minting is refused on a standby.
    ReadOnly,
    /// Minting is refused in a read-only transaction: it raises the
    /// database's WAL-logged mark.
    ReadOnlyTransaction,
    /// The durable mark could not be written.
    Store(String),
    /// A limit was reached: the wait for the next time unit, the number of
    /// layouts, the end of a layout's time.
    Limit(String),
}

impl Refusal {
    /// The SQLSTATE of this refusal.
    pub fn code(&self) -> PgSqlErrorCode {
        match self {
            Refusal::Input(_) => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            Refusal::Null(_) => PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            Refusal::Setup(_) => PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Refusal::ReadOnly | Refusal::ReadOnlyTransaction => {
                PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION
            }
            Refusal::Store(_) => PgSqlErrorCode::ERRCODE_IO_ERROR,
            Refusal::Limit(_) => PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        }
    }

    /// Reports the refusal as an SQL error (does not return).
    pub fn raise(self) -> ! {
        let code = self.code();
        pgrx::ereport!(ERROR, code, self.to_string());
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Input(m)
            | Refusal::Null(m)
            | Refusal::Setup(m)
            | Refusal::Store(m)
            | Refusal::Limit(m) => f.write_str(m),
            Refusal::ReadOnly => f.write_str(
                "snowmint.nextval() cannot mint on a standby (recovery is in progress): \
                 a standby shares its primary's settings, so it would mint as its identity",
            ),
            Refusal::ReadOnlyTransaction => f.write_str(
                "snowmint.nextval() cannot mint in a read-only transaction: minting writes the \
                 database's mark (the sequence snowmint.mark) to WAL before it returns an ID",
            ),
        }
    }
}

impl From<snowmint::Error> for Refusal {
    fn from(err: snowmint::Error) -> Refusal {
        Refusal::Input(err.to_string())
    }
}

/// The value of `result`, or its refusal raised as an SQL error.
pub fn or_raise<T>(result: Result<T, Refusal>) -> T {
    match result {
        Ok(v) => v,
        Err(refusal) => refusal.raise(),
    }
}
