//! A worker identity: the (datacenter, worker) pair an instance issues as.
//!
//! Stands in for the core's `snowmint::Identity` until that lands.

use std::fmt;

/// Number of (datacenter, worker) identities of the format: 32 x 32.
pub const IDENTITIES: u16 = 1024;

/// A worker identity, datacenter and worker each 0..=31.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// Datacenter ID, 0..=31.
    pub datacenter: u8,
    /// Worker ID, 0..=31.
    pub worker: u8,
}

impl Identity {
    /// Identity number `n` (0..=1023): datacenter `n / 32`, worker `n % 32`.
    pub const fn from_ordinal(n: u16) -> Option<Identity> {
        if n < IDENTITIES {
            Some(Identity {
                datacenter: (n / 32) as u8,
                worker: (n % 32) as u8,
            })
        } else {
            None
        }
    }

    /// `datacenter * 32 + worker`.
    pub const fn ordinal(self) -> u16 {
        self.datacenter as u16 * 32 + self.worker as u16
    }

    /// The datacenter ID.
    pub const fn datacenter(self) -> u8 {
        self.datacenter
    }

    /// The worker ID.
    pub const fn worker(self) -> u8 {
        self.worker
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "datacenter {}, worker {}", self.datacenter, self.worker)
    }
}
