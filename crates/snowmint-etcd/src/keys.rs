//! Where snowmint keeps its state in etcd.
//!
//! ```text
//! <prefix>/identities/<datacenter>/<worker>  bound to the holder's lease; value: holder description
//! <prefix>/reserved/<datacenter>/<worker>    NOT bound to a lease; value: "reserved until" Unix ms
//! <prefix>/tenure/<datacenter>/<worker>      NOT bound to a lease; value: who held it last, and
//!                                            whether it released it ("held ..." / "released ...")
//! ```

use snowmint::Identity;
use snowmint_lease::Pool;

/// The three kinds of key, in the order a census reads them.
const KINDS: [&str; 3] = ["identities", "reserved", "tenure"];

/// Key names under one prefix (one snowmint cluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys under `prefix`; trailing slashes are dropped, so `/snowmint/` and
    /// `/snowmint` name the same cluster.
    pub fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.trim_end_matches('/').to_owned(),
        }
    }

    /// The prefix, without a trailing slash.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The prefix all identity keys share, ending in `/`.
    pub fn identities(&self) -> String {
        format!("{}/identities/", self.prefix)
    }

    /// The prefix of the keys of one kind of `pool`, ending in `/`: all of
    /// them, or one datacenter's (`<prefix>/identities/5/`).
    fn kind_in(&self, kind: &str, pool: Pool) -> String {
        match pool.datacenter() {
            Some(dc) => format!("{}/{kind}/{dc}/", self.prefix),
            None => format!("{}/{kind}/", self.prefix),
        }
    }

    /// The prefix of the identity keys of `pool`.
    pub(crate) fn identities_in(&self, pool: Pool) -> String {
        self.kind_in(KINDS[0], pool)
    }

    /// The prefix of the marks of `pool`.
    pub(crate) fn reserved_in(&self, pool: Pool) -> String {
        self.kind_in(KINDS[1], pool)
    }

    /// The prefix of the tenure records of `pool`.
    pub(crate) fn tenures_in(&self, pool: Pool) -> String {
        self.kind_in(KINDS[2], pool)
    }

    fn key(&self, kind: &str, n: u16) -> String {
        let id = Identity::from_ordinal(n.into()).expect("identity number 0..=1023");
        format!("{}/{kind}/{}/{}", self.prefix, id.datacenter(), id.worker())
    }

    /// The key that says who holds identity number `n`.
    pub fn identity(&self, n: u16) -> String {
        self.key(KINDS[0], n)
    }

    /// The key of identity number `n`'s "reserved until" mark.
    pub fn reserved(&self, n: u16) -> String {
        self.key(KINDS[1], n)
    }

    /// The key of identity number `n`'s tenure record.
    pub fn tenure(&self, n: u16) -> String {
        self.key(KINDS[2], n)
    }

    /// The identity number an identity key names, if it is one of ours.
    pub fn parse_identity(&self, key: &[u8]) -> Option<u16> {
        self.parse(0, key)
    }

    /// The identity number a key of kind `kind` (0 identities, 1 reserved,
    /// 2 tenure) names, if it is one of ours.
    pub(crate) fn parse(&self, kind: usize, key: &[u8]) -> Option<u16> {
        let kind = KINDS.get(kind)?;
        let key = std::str::from_utf8(key).ok()?;
        let rest = key.strip_prefix(&format!("{}/{kind}/", self.prefix))?;
        let (dc, worker) = rest.split_once('/')?;
        let n = Identity::new(dc.parse().ok()?, worker.parse().ok()?)
            .ok()?
            .ordinal();
        // Only the canonical spelling: "01" is not identity 1's key.
        (self.key(kind, n) == key).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every identity number, in ordinal order.
    fn all_identities() -> impl Iterator<Item = u16> {
        Identity::all().map(Identity::ordinal)
    }

    #[test]
    fn keys_round_trip_and_ignore_strangers() {
        let keys = Keys::new("/snowmint/");
        assert_eq!(keys.identity(33), "/snowmint/identities/1/1");
        assert_eq!(keys.reserved(1023), "/snowmint/reserved/31/31");
        for n in all_identities() {
            assert_eq!(keys.parse_identity(keys.identity(n).as_bytes()), Some(n));
            // Scoped to its datacenter, the key is under that datacenter's prefix only.
            let dc = (n / 32) as u8;
            assert!(
                keys.identity(n)
                    .starts_with(&keys.identities_in(Pool::new(Some(dc))))
            );
            let other = Pool::new(Some((dc + 1) % 32));
            assert!(!keys.identity(n).starts_with(&keys.identities_in(other)));
        }
        assert_eq!(keys.identities_in(Pool::ALL), "/snowmint/identities/");
        assert_eq!(
            keys.identities_in(Pool::new(Some(1))),
            "/snowmint/identities/1/"
        );
        for stranger in [
            "/snowmint/identities/32/0",
            "/snowmint/identities/01/1",
            "/snowmint/identities/1",
            "/snowmint/reserved/1/1",
            "/other/identities/1/1",
            "/snowmint/identities/1/1/x",
        ] {
            assert_eq!(keys.parse_identity(stranger.as_bytes()), None, "{stranger}");
        }
    }
}
