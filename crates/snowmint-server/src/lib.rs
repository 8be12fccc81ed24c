//! The snowmint network service.

pub mod hostname;

#[cfg(feature = "etcd")]
pub mod etcd;
