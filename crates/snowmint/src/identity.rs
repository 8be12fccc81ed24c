//! [`Identity`]: the (datacenter, worker) pair a minter issues as.

use core::fmt;

use crate::error::{Error, Field};
use crate::layout::{DATACENTER_BITS, MAX_DATACENTER, MAX_WORKER, WORKER_BITS};

/// A minter's identity: a datacenter ID and a worker ID, both 0..=31.
///
/// Two minters that issue at the same time must never share an identity:
/// it is what keeps their IDs apart. A value of this type is always valid,
/// so code that holds one never checks the ranges again.
///
/// The 1024 identities are also numbered by their *ordinal*,
/// `datacenter * 32 + worker` (the order of the bits in an ID): a
/// Kubernetes StatefulSet pod's ordinal, or an identity key in etcd.
///
/// ```
/// use snowmint::Identity;
///
/// let id = Identity::new(1, 2)?;
/// assert_eq!((id.datacenter(), id.worker()), (1, 2));
/// assert_eq!(id.ordinal(), 34);
/// assert_eq!(Identity::from_ordinal(34)?, id);
/// assert_eq!(id.to_string(), "datacenter 1, worker 2");
///
/// assert_eq!(
///     Identity::new(32, 0).unwrap_err().to_string(),
///     "datacenter must be 0..=31, got 32"
/// );
/// assert_eq!(
///     Identity::from_ordinal(1024).unwrap_err().to_string(),
///     "ordinal must be 0..=1023, got 1024"
/// );
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Identity {
    // Field order gives `Ord` the ordinal's order.
    datacenter: u8,
    worker: u8,
}

impl Identity {
    /// How many identities the format has: 1024.
    pub const COUNT: u16 = 1 << (DATACENTER_BITS + WORKER_BITS);
    /// The largest ordinal, 1023.
    pub const MAX_ORDINAL: u16 = Identity::COUNT - 1;

    /// The identity (`datacenter`, `worker`), each 0..=31; the error names
    /// the field, the value and the range.
    pub const fn new(datacenter: u64, worker: u64) -> Result<Identity, Error> {
        if datacenter > MAX_DATACENTER {
            return Err(Error::out_of_range(
                Field::Datacenter,
                datacenter as i128,
                0,
                MAX_DATACENTER,
            ));
        }
        if worker > MAX_WORKER {
            return Err(Error::out_of_range(
                Field::Worker,
                worker as i128,
                0,
                MAX_WORKER,
            ));
        }
        Ok(Identity {
            datacenter: datacenter as u8,
            worker: worker as u8,
        })
    }

    /// The identity numbered `ordinal` (0..=1023): datacenter
    /// `ordinal / 32`, worker `ordinal % 32`.
    ///
    /// ```
    /// use snowmint::Identity;
    /// assert_eq!(Identity::from_ordinal(0)?, Identity::new(0, 0)?);
    /// assert_eq!(Identity::from_ordinal(33)?, Identity::new(1, 1)?);
    /// assert_eq!(Identity::from_ordinal(1023)?, Identity::new(31, 31)?);
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub const fn from_ordinal(ordinal: u64) -> Result<Identity, Error> {
        if ordinal > Identity::MAX_ORDINAL as u64 {
            return Err(Error::out_of_range(
                Field::Ordinal,
                ordinal as i128,
                0,
                Identity::MAX_ORDINAL as u64,
            ));
        }
        Ok(Identity {
            datacenter: (ordinal >> WORKER_BITS) as u8,
            worker: (ordinal & MAX_WORKER) as u8,
        })
    }

    /// The datacenter ID, 0..=31.
    pub const fn datacenter(self) -> u8 {
        self.datacenter
    }

    /// The worker ID, 0..=31.
    pub const fn worker(self) -> u8 {
        self.worker
    }

    /// The identity's number, `datacenter * 32 + worker`, 0..=1023.
    pub const fn ordinal(self) -> u16 {
        ((self.datacenter as u16) << WORKER_BITS) | self.worker as u16
    }

    /// The identity's bits in an ID of the Twitter layout (datacenter and
    /// worker in place, everything else 0).
    #[cfg(feature = "std")]
    pub(crate) const fn node_bits(self) -> u64 {
        use crate::layout::{DATACENTER_SHIFT, WORKER_SHIFT};
        ((self.datacenter as u64) << DATACENTER_SHIFT) | ((self.worker as u64) << WORKER_SHIFT)
    }

    /// Every identity, in ordinal order.
    ///
    /// ```
    /// use snowmint::Identity;
    /// let all: Vec<Identity> = Identity::all().collect();
    /// assert_eq!(all.len(), 1024);
    /// assert_eq!(all[33], Identity::new(1, 1).unwrap());
    /// ```
    pub fn all() -> impl DoubleEndedIterator<Item = Identity> + ExactSizeIterator + Clone {
        (0..Identity::COUNT).map(|n| Identity {
            datacenter: (n >> WORKER_BITS) as u8,
            worker: (n as u64 & MAX_WORKER) as u8,
        })
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "datacenter {}, worker {}", self.datacenter, self.worker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinal_round_trips_for_every_identity() {
        for n in 0..u64::from(Identity::COUNT) {
            let id = Identity::from_ordinal(n).unwrap();
            assert_eq!(u64::from(id.ordinal()), n);
            assert_eq!(
                Identity::new(id.datacenter().into(), id.worker().into()),
                Ok(id)
            );
            assert_eq!(u64::from(id.datacenter()) * 32 + u64::from(id.worker()), n);
        }
        assert_eq!(Identity::all().count(), 1024);
        assert!(Identity::all().map(Identity::ordinal).eq(0..1024));
    }

    #[test]
    fn out_of_range_names_the_field() {
        assert_eq!(Identity::new(0, 32).unwrap_err().field(), Field::Worker);
        assert_eq!(Identity::new(99, 0).unwrap_err().field(), Field::Datacenter);
        assert_eq!(
            Identity::from_ordinal(u64::MAX).unwrap_err().to_string(),
            "ordinal must be 0..=1023, got 18446744073709551615"
        );
    }

    #[cfg(feature = "std")]
    #[test]
    fn node_bits_place_both_fields() {
        let id = Identity::new(1, 1).unwrap();
        assert_eq!(id.node_bits(), (1 << 17) | (1 << 12));
        assert_eq!(Identity::new(31, 31).unwrap().node_bits(), 0x3ff << 12);
    }

    #[test]
    fn order_is_the_ordinal_order() {
        let a = Identity::new(0, 31).unwrap();
        let b = Identity::new(1, 0).unwrap();
        assert!(a < b);
    }
}
