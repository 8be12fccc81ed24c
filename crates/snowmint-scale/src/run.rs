//! The scale run against etcd (the default): a three-member cluster on
//! loopback, the identities the run does not use (with fewer than 1024)
//! held by one filler lease, and the phases (`phases.rs`) counted by etcd
//! itself, from every member's `/metrics` (`metrics.rs`), with a timeline
//! for `report.html`.
//!
//! - The claim's cost is the claim transactions the sessions sent (a scan
//!   is a read-only `Txn` too, and each new holder writes its mark once at
//!   start, so etcd's own `Txn` count says more than the claims).
//! - The generators' endpoints are members 0 and 1 (rotated, so both carry
//!   half); member 2 is the waiter's alone, and its request count is the
//!   waiter's cost.
//! - The idle `snowmint serve --etcd` processes run under a prefix of
//!   their own, on members 0 and 1.
//!
//! The etcd cluster is killed when the run ends, however it ends.

use std::time::Duration;

use anyhow::{Context, bail};
use snowmint_etcd::{EtcdConfig, LeasedGenerator};
use snowmint_testkit::etcd::EtcdCluster;

pub use crate::config::{
    CLAIM_TXNS_SLACK, Config, MAX_CLAIM_TXNS_PER_IDENTITY, Outcome, Phase, Sample,
};
use crate::fleet::Launch;
pub use crate::fleet::count_duplicates;
use crate::metrics::{Counters, Scraper};
use crate::phases::{self, Coordinator, Words};
pub use crate::phases::{MAX_SERVE_IDLE_TXNS_PER_S, MAX_WAITER_REQUESTS_PER_S};

/// The key prefix of the run's generators.
const PREFIX: &str = "/scale";
/// The serve processes' key prefix: an identity space of their own, apart
/// from the generators'.
const SERVE_PREFIX: &str = "/scale-serve";

/// The run's etcd cluster, and how its requests are counted.
struct Etcd {
    /// Killed when dropped.
    _cluster: EtcdCluster,
    urls: Vec<String>,
    /// Every member.
    scraper: Scraper,
    /// Members 0 and 1, the `serve` processes'.
    serve_scraper: Scraper,
    lease_ttl: u64,
}

impl Etcd {
    /// Starts a three-member cluster and holds every identity from
    /// `identities` on with the filler.
    async fn start(identities: usize, lease_ttl: u64) -> anyhow::Result<Etcd> {
        let cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(3))
            .await?
            .map_err(anyhow::Error::msg)?;
        let urls = cluster.urls();
        let scraper = Scraper::new(&urls)?;
        let serve_scraper = Scraper::new(&urls[..2])?;
        fill_unused(&urls[0], identities).await?;
        Ok(Etcd {
            _cluster: cluster,
            urls,
            scraper,
            serve_scraper,
            lease_ttl,
        })
    }
}

impl Coordinator for Etcd {
    const WORDS: Words = Words {
        who: "etcd ",
        requests: "requests",
        claims: "transactions",
        writes: "mark writes",
        wrote: "wrote to etcd",
    };
    const SAMPLE_EVERY: Duration = Duration::from_secs(1);

    fn name(&self) -> Option<&'static str> {
        None
    }

    fn launcher(&self) -> Launch {
        let (urls, ttl) = (self.urls.clone(), self.lease_ttl);
        std::sync::Arc::new(move |i| Ok(LeasedGenerator::spawn(config_for(&urls, i, ttl))?))
    }

    fn spawn_waiter(&self) -> Box<dyn FnOnce() -> anyhow::Result<LeasedGenerator> + Send> {
        let config = EtcdConfig::new([self.urls[2].clone()])
            .lease_ttl(Duration::from_secs(self.lease_ttl))
            .prefix(PREFIX)
            .holder("scale waiter");
        Box::new(move || Ok(LeasedGenerator::spawn(config)?))
    }

    async fn counts(&self) -> anyhow::Result<Counters> {
        self.scraper.total().await
    }

    async fn waiter_requests(&self) -> anyhow::Result<f64> {
        Ok(self.scraper.member(2).await?.requests)
    }

    fn serve_args(&self) -> Vec<String> {
        vec![
            "--etcd".to_owned(),
            self.urls[..2].join(","),
            "--etcd-prefix".to_owned(),
            SERVE_PREFIX.to_owned(),
            "--lease-ttl".to_owned(),
            self.lease_ttl.to_string(),
        ]
    }

    async fn serve_counts(&self) -> anyhow::Result<Counters> {
        self.serve_scraper.total().await
    }

    fn timeline(&self) -> Option<Scraper> {
        Some(self.scraper.clone())
    }
}

/// The lease settings of generator `i`: members 0 and 1, rotated.
fn config_for(urls: &[String], i: usize, ttl: u64) -> EtcdConfig {
    let endpoints = if i.is_multiple_of(2) {
        [urls[0].clone(), urls[1].clone()]
    } else {
        [urls[1].clone(), urls[0].clone()]
    };
    EtcdConfig::new(endpoints)
        .lease_ttl(Duration::from_secs(ttl))
        .prefix(PREFIX)
        .holder(format!("scale generator {i}"))
}

/// Standard base64, for etcd's JSON gateway.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Holds every identity from `identities` on (ordinal order) with one
/// long lease, through etcd's JSON gateway, so the run's pool is exactly
/// `identities` wide.
async fn fill_unused(url: &str, identities: usize) -> anyhow::Result<()> {
    if identities >= 1024 {
        return Ok(());
    }
    let client = reqwest::Client::new();
    let granted: serde_json::Value = client
        .post(format!("{url}/v3/lease/grant"))
        .json(&serde_json::json!({"TTL": 3600}))
        .send()
        .await
        .context("lease grant")?
        .json()
        .await
        .context("lease grant")?;
    let lease = granted["ID"]
        .as_str()
        .context("lease grant: no ID")?
        .to_owned();
    let ordinals: Vec<usize> = (identities..1024).collect();
    for chunk in ordinals.chunks(100) {
        let puts: Vec<serde_json::Value> = chunk
            .iter()
            .map(|n| {
                let key = format!("{PREFIX}/identities/{}/{}", n / 32, n % 32);
                serde_json::json!({"requestPut": {
                    "key": base64(key.as_bytes()),
                    "value": base64(b"scale filler"),
                    "lease": lease,
                }})
            })
            .collect();
        let response = client
            .post(format!("{url}/v3/kv/txn"))
            .json(&serde_json::json!({"success": puts}))
            .send()
            .await
            .context("filler txn")?;
        if !response.status().is_success() {
            bail!("filler txn: {}", response.status());
        }
    }
    Ok(())
}

/// Runs the phases against a three-member etcd cluster, writes
/// `summary.json` and `report.html` into `out`, and says which bounds
/// broke.
///
/// # Errors
///
/// When etcd does not start or stops answering, or the report cannot be
/// written: the run could not measure.
pub async fn run(config: Config) -> anyhow::Result<Outcome> {
    phases::prepare(&config)?;
    let etcd = Etcd::start(config.identities, config.lease_ttl).await?;
    phases::run(config, etcd).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_etcd_reads_it() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(
            base64(b"/scale/identities/1/2"),
            "L3NjYWxlL2lkZW50aXRpZXMvMS8y"
        );
    }
}
