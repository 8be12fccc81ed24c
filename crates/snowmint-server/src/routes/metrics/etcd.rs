//! How distributed mode's lease session (feature `etcd`) appears in
//! `/metrics`; the lease itself is `snowmint-etcd`'s, the settings it is
//! started with are [`Config`](crate::Config)'s.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use snowmint_etcd::LeaseState;

use super::family::{counter, gauge};

/// Exports the lease session's state at each scrape:
///
/// - `snowmint_etcd_lease_state{state}`: 1 for the current state
///   (`connecting`, `claiming`, `all_taken`, `held`, `fenced`, `stopped`);
/// - `snowmint_etcd_identity_info{datacenter,worker,lease}`: the identity
///   held (or last held) and its lease, in hex as `etcdctl` shows it;
/// - `snowmint_etcd_lease_ttl_seconds`: the TTL etcd granted;
/// - counters `snowmint_etcd_{claims,renewals,renewal_failures,fenced}_total`.
///
/// (Names as registered under the server's `snowmint` prefix.)
pub(crate) fn encode(
    status: &snowmint_etcd::LeaseMetrics,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "etcd_lease_state",
        "1 for the etcd lease session's current state",
        None,
        ConstGauge::new(0i64).metric_type(),
    )?;
    for state in LeaseState::ALL {
        ConstGauge::new(i64::from(state == status.state)).encode(family.encode_family(
            &StateLabels {
                state: state.name(),
            },
        )?)?;
    }
    if let (Some(identity), Some(lease)) = (status.identity, status.lease) {
        let mut family = encoder.encode_descriptor(
            "etcd_identity_info",
            "The worker identity and etcd lease held (or last held)",
            None,
            ConstGauge::new(1i64).metric_type(),
        )?;
        let labels = IdentityLabels {
            datacenter: identity.datacenter(),
            worker: identity.worker(),
            lease: format!("{lease:x}"),
        };
        ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
    }
    if let Some(ttl) = status.granted_ttl {
        gauge(
            encoder,
            "etcd_lease_ttl_seconds",
            "The lease TTL etcd granted",
            i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
        )?;
    }
    for (name, help, value) in [
        ("etcd_claims", "Worker identities claimed", status.claims),
        (
            "etcd_renewals",
            "Successful lease keep-alives",
            status.renewals,
        ),
        (
            "etcd_renewal_failures",
            "Lease keep-alives that failed or got no answer in time",
            status.renewal_failures,
        ),
        ("etcd_fenced", "Times minting was fenced off", status.fenced),
    ] {
        counter(encoder, name, help, value)?;
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct IdentityLabels {
    datacenter: u8,
    worker: u8,
    lease: String,
}
