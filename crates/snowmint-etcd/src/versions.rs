//! Each endpoint's etcd server version (etcd's Status call), asked at start
//! and again now and then, for the log and for metrics: a server with etcd
//! issue 15247 is named in the log, with how renewals are kept safe on it.

use std::time::Duration;

use snowmint_lease::{LeaseError, ServerVersion, SharedStatus, update};

use crate::ops::{self, Conn};

/// How often versions are asked again once every endpoint has answered (a
/// rolling upgrade of etcd shows within this).
const REFRESH: Duration = Duration::from_secs(600);

/// The first and the longest wait before asking an endpoint that did not
/// answer again.
const RETRY: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));

/// Asks every endpoint (one connection each, `t` per request) for its
/// version, forever: again with backoff while some have not answered, and
/// every [`REFRESH`] after. Logs each version when first seen or changed and
/// keeps them in `status.servers`. `confirm`: whether renewals are confirmed
/// by term (always but in tests), for the log.
pub(crate) async fn watch(mut conns: Vec<Conn>, t: Duration, status: SharedStatus, confirm: bool) {
    let mut known: Vec<Option<String>> = vec![None; conns.len()];
    let mut retry = RETRY.0;
    loop {
        let mut missing = false;
        let mut changed = false;
        for (conn, known) in conns.iter_mut().zip(known.iter_mut()) {
            match ask(conn, t).await {
                Ok(version) => {
                    if known.as_deref() != Some(version.as_str()) {
                        log(conn.endpoint(), &version, confirm);
                        *known = Some(version);
                        changed = true;
                    }
                }
                Err(e) => {
                    tracing::debug!(endpoint = conn.endpoint(), error = %e, "etcd version not known yet");
                    conn.failed();
                    missing |= known.is_none();
                }
            }
        }
        if changed {
            let servers: Vec<ServerVersion> = conns
                .iter()
                .zip(&known)
                .filter_map(|(conn, v)| Some(ServerVersion::new(conn.endpoint(), v.clone()?)))
                .collect();
            update(&status, |s| s.servers = servers);
        }
        let wait = if missing {
            let wait = retry;
            retry = (retry * 2).min(RETRY.1);
            wait
        } else {
            retry = RETRY.0;
            REFRESH
        };
        tokio::time::sleep(wait).await;
    }
}

/// One endpoint's version.
async fn ask(conn: &mut Conn, t: Duration) -> Result<String, LeaseError> {
    let client = conn.client().await?;
    let response = ops::timed("status", t, client.status()).await?;
    Ok(response.version().to_owned())
}

fn log(endpoint: &str, version: &str, confirm: bool) {
    let server = ServerVersion::new(endpoint, version);
    match (server.has_issue_15247(), confirm) {
        (Some(false), _) => {
            tracing::info!(endpoint, version, "etcd {version} at {endpoint}");
        }
        (Some(true), true) => tracing::warn!(
            endpoint,
            version,
            "etcd {version} at {endpoint} has etcd issue 15247 (a deposed leader can answer lease \
             keep-alives; fixed in 3.4.31 and 3.5.13): renewals are confirmed by raft term, with a \
             linearizable read after each, before they extend the fence"
        ),
        (None, true) => tracing::warn!(
            endpoint,
            version,
            "etcd at {endpoint} reports version {version:?}, which is not MAJOR.MINOR.PATCH; it may \
             have etcd issue 15247: renewals are confirmed by raft term before they extend the fence"
        ),
        (_, false) => tracing::error!(
            endpoint,
            version,
            "etcd {version} at {endpoint}: renewals are NOT confirmed by raft term (a test \
             setting); on a server with etcd issue 15247 a deposed leader's answer extends the fence"
        ),
    }
}
