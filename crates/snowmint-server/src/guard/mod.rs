//! What a request passes before a route answers it.

pub(crate) mod admission;
pub(crate) mod check;
pub(crate) mod edge;
pub(crate) mod origin;
pub(crate) mod token;
