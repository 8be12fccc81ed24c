//! `--worker-from-hostname`: the worker identity from a Kubernetes
//! StatefulSet pod's ordinal.
//!
//! A StatefulSet names its pods `NAME-0`, `NAME-1`, ... and each pod's
//! hostname is its name. Ordinal `N` (0..=1023) is identity `N`: datacenter
//! `N / 32`, worker `N % 32`. Two pods of one StatefulSet never share an
//! ordinal, so they never share an identity; nothing but the pod name is
//! needed (no etcd), but two StatefulSets must not mint into the same ID
//! space, and the reservation (`--state-dir`) should be on the pod's
//! persistent volume so a restarted pod never goes back.
//!
//! Only StatefulSet-shaped names are accepted: a host named after its IP
//! address (`ip-10-0-0-5`, `10-0-0-5`) also ends in `-N`, but `ip-10-0-0-5`
//! and `ip-10-0-1-5` would both be identity 5; see
//! [`identity_of_hostname`].

use std::fmt;

use snowmint::Identity;

/// Why a hostname gives no identity.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostnameError {
    /// The name does not end in `-N`.
    NoOrdinal {
        /// The hostname, as read.
        hostname: String,
    },
    /// The ordinal has a leading zero (`web-07`), which no StatefulSet
    /// writes: it would be a second name for identity 7.
    LeadingZero {
        /// The hostname, as read.
        hostname: String,
        /// The digits after the last `-`.
        ordinal: String,
    },
    /// The ordinal is 1024 or more (kept as text: it may not fit a u64).
    OutOfRange {
        /// The hostname, as read.
        hostname: String,
        /// The digits after the last `-`.
        ordinal: String,
    },
    /// The name is derived from an IPv4 address: its last four
    /// dash-separated parts are numbers 0..=255 (`ip-10-0-0-5`), so its
    /// "ordinal" is only the address's last byte, shared by other hosts.
    IpDerived {
        /// The hostname, as read.
        hostname: String,
    },
    /// The hostname could not be read at all.
    Unreadable {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for HostnameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostnameError::NoOrdinal { hostname } => write!(
                f,
                "worker-from-hostname needs a hostname ending in -N with N 0..=1023 \
                 (a StatefulSet pod such as snowmint-3), got {hostname:?}"
            ),
            HostnameError::LeadingZero { hostname, ordinal } => write!(
                f,
                "worker-from-hostname ordinal must be 0..=1023 without leading zeros, as a \
                 StatefulSet writes it (web-7, never web-07: both would be identity 7), \
                 got {ordinal} (from hostname {hostname:?})"
            ),
            HostnameError::IpDerived { hostname } => write!(
                f,
                "worker-from-hostname refuses {hostname:?}: it is derived from an IP address \
                 (its last four dash-separated parts are all 0..=255), so its -N is the \
                 address's last byte, which other hosts share (ip-10-0-0-5 and ip-10-0-1-5 would \
                 both be identity 5); run as a StatefulSet pod NAME-N with N 0..=1023, or set \
                 --datacenter and --worker, or use --etcd"
            ),
            HostnameError::OutOfRange { hostname, ordinal } => write!(
                f,
                "worker-from-hostname ordinal must be 0..=1023, got {ordinal} \
                 (from hostname {hostname:?})"
            ),
            HostnameError::Unreadable { reason } => {
                write!(f, "worker-from-hostname cannot read the hostname: {reason}")
            }
        }
    }
}

impl std::error::Error for HostnameError {}

/// Parses the StatefulSet ordinal at the end of `hostname` (`NAME-N`) and
/// returns the identity of ordinal `N` (0..=1023; see
/// [`Identity::from_ordinal`]).
///
/// A fully qualified name is cut at its first dot first
/// (`snowmint-3.snowmint.default.svc` is pod `snowmint-3`). What is left
/// must be shaped as a StatefulSet pod name:
///
/// - `N` is the whole last dash-separated part: decimal digits, 0..=1023,
///   without leading zeros (a StatefulSet writes `web-7`, never `web-07`,
///   which would be a second name for the same identity);
/// - `NAME` is not empty and does not end in `-`;
/// - the name is not derived from an IPv4 address: if its last four
///   dash-separated parts are all numbers 0..=255 (`ip-10-0-0-5`,
///   `ip-10-0-0-5.ec2.internal`, `10-0-0-5`, `node-192-168-1-20`) it is
///   refused, since `N` is then the address's last byte and hosts in other
///   subnets share it. The pods of a StatefulSet whose own name ends in
///   three such numbers (`web-1-2-3-0`) are refused too: rename it.
///
/// ```
/// use snowmint::Identity;
/// use snowmint_server::identity_of_hostname;
/// let ordinal = |h| identity_of_hostname(h).map(Identity::ordinal);
/// assert_eq!(ordinal("snowmint-0"), Ok(0));
/// assert_eq!(ordinal("ids-eu-west-1023"), Ok(1023));
/// assert_eq!(identity_of_hostname("snowmint-33"), Ok(Identity::new(1, 1)?));
/// assert_eq!(ordinal("snowmint-3.snowmint.default.svc"), Ok(3));
/// assert_eq!(
///     ordinal("snowmint-1024").unwrap_err().to_string(),
///     "worker-from-hostname ordinal must be 0..=1023, got 1024 (from hostname \"snowmint-1024\")"
/// );
/// assert!(ordinal("laptop").is_err());
/// assert!(ordinal("ip-10-0-0-5").unwrap_err().to_string().starts_with(
///     "worker-from-hostname refuses \"ip-10-0-0-5\": it is derived from an IP address"
/// ));
/// # Ok::<(), snowmint::Error>(())
/// ```
pub fn identity_of_hostname(hostname: &str) -> Result<Identity, HostnameError> {
    let pod = hostname.trim().split('.').next().unwrap_or_default();
    let no_ordinal = || HostnameError::NoOrdinal {
        hostname: echo(hostname),
    };
    let (name, digits) = pod.rsplit_once('-').ok_or_else(no_ordinal)?;
    if name.is_empty()
        || name.ends_with('-')
        || digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(no_ordinal());
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(HostnameError::LeadingZero {
            hostname: echo(hostname),
            ordinal: echo(digits),
        });
    }
    if ends_in_ipv4(pod) {
        return Err(HostnameError::IpDerived {
            hostname: echo(hostname),
        });
    }
    match digits.parse::<u64>().map(Identity::from_ordinal) {
        Ok(Ok(identity)) => Ok(identity),
        _ => Err(HostnameError::OutOfRange {
            hostname: echo(hostname),
            ordinal: echo(digits),
        }),
    }
}

/// Whether the last four dash-separated parts of `name` are all numbers
/// 0..=255, as in the names clouds derive from IPv4 addresses.
fn ends_in_ipv4(name: &str) -> bool {
    let parts: Vec<&str> = name.rsplit('-').take(4).collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// This machine's hostname: `$HOSTNAME` if set (Kubernetes sets it to the pod
/// name), else `/proc/sys/kernel/hostname`, else `/etc/hostname`.
pub fn current_hostname() -> Result<String, HostnameError> {
    if let Some(name) = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
    {
        return Ok(name.trim().to_owned());
    }
    let mut reasons = Vec::new();
    for path in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        match std::fs::read_to_string(path) {
            Ok(name) if !name.trim().is_empty() => return Ok(name.trim().to_owned()),
            Ok(_) => reasons.push(format!("{path} is empty")),
            Err(e) => reasons.push(format!("{path}: {e}")),
        }
    }
    Err(HostnameError::Unreadable {
        reason: format!("$HOSTNAME is not set; {}", reasons.join("; ")),
    })
}

/// The identity of this pod: [`identity_of_hostname`] of
/// [`current_hostname`].
pub fn identity_from_hostname() -> Result<Identity, HostnameError> {
    identity_of_hostname(&current_hostname()?)
}

/// Keeps error messages short whatever the hostname is.
fn echo(text: &str) -> String {
    const MAX: usize = 64;
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ordinal of the identity a hostname gives.
    fn ordinal_from_hostname(hostname: &str) -> Result<u16, HostnameError> {
        identity_of_hostname(hostname).map(Identity::ordinal)
    }

    #[test]
    fn statefulset_names_parse() {
        assert_eq!(ordinal_from_hostname("snowmint-0"), Ok(0));
        assert_eq!(ordinal_from_hostname("my-app-v2-17"), Ok(17));
        assert_eq!(ordinal_from_hostname(" snowmint-5\n"), Ok(5));
        assert_eq!(ordinal_from_hostname("snowmint-7.svc.cluster.local"), Ok(7));
        assert_eq!(ordinal_from_hostname("snowmint-1023"), Ok(1023));
    }

    #[test]
    fn names_without_an_ordinal_are_refused_with_the_name() {
        for bad in [
            "snowmint",
            "snowmint-",
            "-3",
            "snowmint-3a",
            "snowmint--1x",
            "",
            "snowmint-+1",
            "snowmint--1",
        ] {
            let err = ordinal_from_hostname(bad).unwrap_err();
            assert!(
                matches!(err, HostnameError::NoOrdinal { .. }),
                "{bad:?}: {err:?}"
            );
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
            assert!(err.to_string().contains("0..=1023"), "{err}");
        }
    }

    #[test]
    fn ordinals_with_leading_zeros_are_refused() {
        for (host, ordinal) in [("snowmint-07", "07"), ("snowmint-00", "00")] {
            let err = ordinal_from_hostname(host).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "worker-from-hostname ordinal must be 0..=1023 without leading zeros, as a \
                     StatefulSet writes it (web-7, never web-07: both would be identity 7), \
                     got {ordinal} (from hostname {host:?})"
                )
            );
        }
    }

    #[test]
    fn ip_derived_names_are_refused_saying_why() {
        for bad in [
            "ip-10-0-0-5",
            "ip-10-0-1-5",
            "ip-10-0-0-5.ec2.internal",
            "ip-172-31-255-255.eu-west-1.compute.internal",
            "10-0-0-5",
            "node-192-168-1-20",
            "ip-0-0-0-0",
        ] {
            let err = ordinal_from_hostname(bad).unwrap_err();
            assert_eq!(
                err,
                HostnameError::IpDerived {
                    hostname: bad.to_owned()
                },
                "{bad:?}"
            );
            let msg = err.to_string();
            assert!(msg.contains(&format!("{bad:?}")), "{msg}");
            assert!(msg.contains("derived from an IP address"), "{msg}");
            assert!(msg.contains("0..=1023"), "{msg}");
        }
    }

    #[test]
    fn names_that_only_look_numeric_are_still_statefulset_pods() {
        for (host, n) in [
            ("snowmint-3", 3),
            ("web-0", 0),
            ("snowmint-1023", 1023),
            // Three numeric parts, or a part above 255: not an address.
            ("web-1-2-3", 3),
            ("web-10-0-300-5", 5),
            ("web-1000-0-0-5", 5),
            ("v2-web-0", 0),
            ("ip-10-0-5", 5),
        ] {
            assert_eq!(ordinal_from_hostname(host), Ok(n), "{host:?}");
        }
    }

    #[test]
    fn ordinals_past_1023_are_refused_with_the_range() {
        for (host, ordinal) in [
            ("snowmint-1024", "1024"),
            ("snowmint-65536", "65536"),
            (
                "snowmint-99999999999999999999999",
                "99999999999999999999999",
            ),
        ] {
            let err = ordinal_from_hostname(host).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "worker-from-hostname ordinal must be 0..=1023, got {ordinal} \
                     (from hostname {host:?})"
                )
            );
        }
    }

    #[test]
    fn long_hostnames_are_shortened_in_messages() {
        let long = format!("{}-x", "a".repeat(500));
        let msg = ordinal_from_hostname(&long).unwrap_err().to_string();
        assert!(msg.len() < 250, "{msg}");
        assert!(msg.contains('…'));
    }
}
