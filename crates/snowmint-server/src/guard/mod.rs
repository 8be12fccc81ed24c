//! What a request passes before a route answers it.

pub mod admission;
pub(crate) mod edge;
pub mod origin;
pub mod token;
