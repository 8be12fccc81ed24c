//! etcd's own request counters, from each member's `/metrics`.
//!
//! etcd 3.4 counts every gRPC message a client sends
//! (`grpc_server_msg_received_total`: one per unary request, one per
//! keep-alive on a lease stream) and every request it has answered
//! (`grpc_server_handled_total`, by method). A member counts what its own
//! clients send it; what it forwards to the leader goes over the peer
//! port, so the sum over the members is what the clients asked for.

use std::time::Duration;

use anyhow::{Context, bail};

/// One member's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    /// gRPC messages received from clients, all methods.
    pub requests: f64,
    /// `Txn` requests answered (any code).
    pub txns: f64,
}

impl std::ops::Add for Counters {
    type Output = Counters;
    fn add(self, other: Counters) -> Counters {
        Counters {
            requests: self.requests + other.requests,
            txns: self.txns + other.txns,
        }
    }
}

impl std::ops::Sub for Counters {
    type Output = Counters;
    fn sub(self, other: Counters) -> Counters {
        Counters {
            requests: self.requests - other.requests,
            txns: self.txns - other.txns,
        }
    }
}

/// Reads the counters out of a Prometheus text exposition.
pub fn parse(text: &str) -> Counters {
    let mut counters = Counters::default();
    for line in text.lines() {
        let Some((name_labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        if name_labels.starts_with("grpc_server_msg_received_total{") {
            counters.requests += value;
        } else if name_labels.starts_with("grpc_server_handled_total{")
            && name_labels.contains("grpc_method=\"Txn\"")
        {
            counters.txns += value;
        }
    }
    counters
}

/// Scrapes the members' `/metrics` (client URLs `http://IP:PORT`).
#[derive(Debug, Clone)]
pub struct Scraper {
    client: reqwest::Client,
    urls: Vec<String>,
}

impl Scraper {
    /// A scraper of `urls`.
    ///
    /// # Errors
    ///
    /// When the HTTP client cannot be built.
    pub fn new(urls: &[String]) -> anyhow::Result<Scraper> {
        Ok(Scraper {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .context("HTTP client")?,
            urls: urls.to_vec(),
        })
    }

    /// Member `i`'s counters now.
    ///
    /// # Errors
    ///
    /// When it does not answer with its metrics.
    pub async fn member(&self, i: usize) -> anyhow::Result<Counters> {
        let url = format!("{}/metrics", self.urls[i]);
        let response = self
            .client
            .get(&url)
            .send()
            .await
            .with_context(|| format!("GET {url}"))?;
        if !response.status().is_success() {
            bail!("GET {url}: {}", response.status());
        }
        Ok(parse(
            &response
                .text()
                .await
                .with_context(|| format!("GET {url}"))?,
        ))
    }

    /// Every member's counters now, summed.
    ///
    /// # Errors
    ///
    /// When a member does not answer.
    pub async fn total(&self) -> anyhow::Result<Counters> {
        let mut total = Counters::default();
        for i in 0..self.urls.len() {
            total = total + self.member(i).await?;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_message_and_the_answered_txns() {
        let text = "\
# HELP grpc_server_msg_received_total Total number of RPC stream messages received on the server.
grpc_server_msg_received_total{grpc_method=\"Put\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 1
grpc_server_msg_received_total{grpc_method=\"LeaseKeepAlive\",grpc_service=\"etcdserverpb.Lease\",grpc_type=\"bidi_stream\"} 40
grpc_server_msg_received_total{grpc_method=\"Txn\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 7
grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Txn\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 6
grpc_server_handled_total{grpc_code=\"Unavailable\",grpc_method=\"Txn\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 1
grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 9
grpc_server_started_total{grpc_method=\"Txn\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 7
";
        assert_eq!(
            parse(text),
            Counters {
                requests: 48.0,
                txns: 7.0
            }
        );
    }
}
