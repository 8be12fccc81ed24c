//! The snowmint network service.
