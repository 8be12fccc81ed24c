//! How distributed mode's lease session appears in `/metrics`, under the
//! coordinator's name (`snowmint_etcd_*`, `snowmint_postgres_*`,
//! `snowmint_mysql_*`); the lease itself is `snowmint-lease`'s, the
//! settings it is started with are [`Config`](crate::Config)'s.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use snowmint_lease::LeaseState;

use super::family::constant;

/// Exports the lease session's state at each scrape (`etcd` below is the
/// coordinator's name; `server_info` is etcd's alone):
///
/// - `snowmint_etcd_lease_state{state}`: 1 for the current state
///   (`connecting`, `claiming`, `all_taken`, `held`, `fenced`, `stopped`);
/// - `snowmint_etcd_identity_info{datacenter,worker,lease}`: the identity
///   held (or last held) and its lease, in hex as `etcdctl` shows it;
/// - `snowmint_etcd_lease_ttl_seconds`: the TTL etcd granted;
/// - counters `snowmint_etcd_{claims,renewals,renewal_failures,fenced}_total`
///   and `snowmint_etcd_renewals_unconfirmed_total` (keep-alive answers a
///   read after them did not confirm: etcd issue 15247);
/// - `snowmint_etcd_server_info{endpoint,version}`: 1 per endpoint whose
///   etcd said its version;
/// - `snowmint_postgres_coordinator_info{table,epoch}` (and `mysql`'s): 1,
///   with the schema-qualified table and the server's epoch.
///
/// (Names as registered under the server's `snowmint` prefix.)
pub(crate) fn encode(
    coordinator: &str,
    status: &snowmint_lease::LeaseMetrics,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let (name, help) = (
        format!("{coordinator}_lease_state"),
        format!("1 for the {coordinator} lease session's current state"),
    );
    let mut family =
        encoder.encode_descriptor(&name, &help, None, ConstGauge::new(0i64).metric_type())?;
    for state in LeaseState::ALL {
        ConstGauge::new(i64::from(state == status.state)).encode(family.encode_family(
            &StateLabels {
                state: state.name(),
            },
        )?)?;
    }
    if let (Some(identity), Some(lease)) = (status.identity, status.lease) {
        let (name, help) = (
            format!("{coordinator}_identity_info"),
            format!("The worker identity and {coordinator} lease held (or last held)"),
        );
        let mut family =
            encoder.encode_descriptor(&name, &help, None, ConstGauge::new(1i64).metric_type())?;
        let labels = IdentityLabels {
            datacenter: identity.datacenter(),
            worker: identity.worker(),
            lease: format!("{lease:x}"),
        };
        ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
    }
    if let Some(ttl) = status.granted_ttl {
        constant(
            encoder,
            &format!("{coordinator}_lease_ttl_seconds"),
            &format!("The lease TTL {coordinator} granted"),
            ConstGauge::new(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX)),
        )?;
    }
    for (name, help, value) in [
        ("claims", "Worker identities claimed", status.claims),
        ("renewals", "Successful lease keep-alives", status.renewals),
        (
            "renewal_failures",
            "Lease keep-alives that failed or got no answer in time",
            status.renewal_failures,
        ),
        ("fenced", "Times minting was fenced off", status.fenced),
        (
            "renewals_unconfirmed",
            "Lease keep-alives the coordinator answered that a linearizable read after them \
             did not confirm (at the same raft term, with etcd), or that failed (a deposed \
             leader's answer, etcd issue 15247); they did not extend the fence",
            status.unconfirmed_renewals,
        ),
    ] {
        constant(
            encoder,
            &format!("{coordinator}_{name}"),
            help,
            ConstCounter::new(value),
        )?;
    }
    if !status.coordinator_info.is_empty() {
        let (name, help) = (
            format!("{coordinator}_coordinator_info"),
            format!(
                "1, labelled with where {coordinator} keeps the identities: the table its name \
                 resolved to, and the epoch of the server's history (it changes on a failover \
                 or a restore)"
            ),
        );
        let mut family =
            encoder.encode_descriptor(&name, &help, None, ConstGauge::new(1i64).metric_type())?;
        ConstGauge::new(1i64).encode(family.encode_family(&status.coordinator_info)?)?;
    }
    if !status.servers.is_empty() {
        let mut family = encoder.encode_descriptor(
            "etcd_server_info",
            "1 per etcd endpoint, labelled with the server version its Status call reported",
            None,
            ConstGauge::new(1i64).metric_type(),
        )?;
        for server in &status.servers {
            let labels = ServerLabels {
                endpoint: server.endpoint.clone(),
                version: server.version.clone(),
            };
            ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServerLabels {
    endpoint: String,
    version: String,
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
