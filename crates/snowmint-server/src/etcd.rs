//! Distributed mode's wiring (feature `etcd`): the lease itself is
//! `snowmint-etcd`'s; here are only the settings `snowmint serve` passes and
//! how the session appears in `/metrics`.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use snowmint_etcd::{EtcdConfig, LeaseState};

use crate::Config;
use crate::metrics::{counter, gauge};

/// The lease settings of `config`: endpoints, prefix, lease TTL, the
/// datacenter it is scoped to, and TLS (CA, client certificate).
pub fn config_of(config: &Config) -> EtcdConfig {
    let mut etcd = EtcdConfig::new(config.etcd_endpoints.iter().cloned())
        .prefix(config.etcd_prefix.clone())
        .lease_ttl(config.lease_ttl);
    if let Some(dc) = config.etcd_datacenter {
        etcd = etcd.datacenter(dc);
    }
    if let Some(ca) = &config.etcd_ca {
        etcd = etcd.ca_cert(ca);
    }
    if let Some(client) = &config.etcd_client_cert {
        etcd = etcd.client_cert(&client.cert, &client.key);
    }
    etcd
}

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
