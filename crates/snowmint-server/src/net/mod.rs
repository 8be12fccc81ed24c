//! Connections: the accept loop, its limits and timeouts, and TLS.

pub mod accept;
pub mod tls;
