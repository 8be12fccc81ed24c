//! The core generator as the server uses it: re-exports, the reservation file
//! of the static identity, and how its counters are exported.

use std::path::Path;

pub use crate::standin::{
    FileStore, GenerateError, Generator, GeneratorMetrics, IdRange, StoreError,
};

/// Builds the static identity's generator with its reservation kept in a file
/// under `state_dir` (one file per identity, so two identities never share a
/// mark).
pub fn static_generator(
    datacenter: u8,
    worker: u8,
    state_dir: &Path,
) -> Result<Generator, StaticError> {
    std::fs::create_dir_all(state_dir).map_err(|e| StaticError::StateDir(e.to_string()))?;
    let path = state_dir.join(format!("reservation-{datacenter}-{worker}"));
    let generator = Generator::new(u64::from(datacenter), u64::from(worker))
        .map_err(StaticError::Identity)?
        .with_store(FileStore::new(path));
    Ok(generator)
}

/// Why the static generator could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StaticError {
    /// Datacenter or worker out of range.
    #[error(transparent)]
    Identity(snowmint::Error),
    /// The state directory cannot be created.
    #[error("cannot create the state directory: {0}")]
    StateDir(String),
    /// The reservation file cannot be read.
    #[error("cannot read the reservation: {0}")]
    Store(String),
}

/// Hands each generator counter to `emit(name, help, value)`.
pub(crate) fn encode_metrics(
    m: &GeneratorMetrics,
    emit: &mut dyn FnMut(&str, &str, u64) -> Result<(), std::fmt::Error>,
) -> Result<(), std::fmt::Error> {
    emit("generator_ids", "IDs issued by the generator", m.ids_issued)?;
    emit(
        "generator_clock_backwards",
        "Times the clock was read behind the last issued millisecond",
        m.clock_backwards,
    )?;
    emit(
        "generator_waits",
        "Times the generator waited for the clock",
        m.waits,
    )?;
    emit(
        "generator_borrowed_ms",
        "Milliseconds issued ahead of the clock",
        m.borrowed_ms,
    )?;
    emit(
        "generator_reservations",
        "Reservation marks written to the store",
        m.reservations,
    )?;
    Ok(())
}
