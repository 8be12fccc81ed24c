//! Connections: the accept loop, its limits and timeouts, and TLS.

pub(crate) mod accept;
pub(crate) mod head_errors;
pub(crate) mod tls;
