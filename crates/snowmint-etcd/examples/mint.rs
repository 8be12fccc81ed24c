//! Mints under an identity leased from etcd, in-process: run two at once
//! against one etcd and they mint as two identities.
//!
//! ```sh
//! etcd &   # listens on http://127.0.0.1:2379
//! cargo run -p snowmint-etcd --example mint -- http://127.0.0.1:2379 &
//! cargo run -p snowmint-etcd --example mint -- http://127.0.0.1:2379
//! ```
//!
//! Arguments: `ENDPOINT[,ENDPOINT...] [PREFIX] [LEASE_TTL_SECONDS]
//! [DATACENTER]` (with a datacenter, it leases only that datacenter's
//! workers). It
//! prints `identity DATACENTER WORKER` once it holds one, then one ID a line
//! (a batch of 100 every 20 ms) until stdin closes or says `stop`, or it gets
//! SIGTERM/ctrl-c; then it shuts down gracefully (the lease is revoked, the
//! identity is free at once) and prints `stopped`.

use std::sync::Arc;
use std::time::Duration;

use snowmint_etcd::{EtcdConfig, LeasedGenerator};
use tokio::io::AsyncBufReadExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let endpoints = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:2379".to_owned());
    let prefix = args.next().unwrap_or_else(|| "/snowmint".to_owned());
    let ttl: u64 = args.next().map_or(Ok(10), |t| t.parse())?;
    let mut config = EtcdConfig::new(endpoints.split(','))
        .prefix(prefix)
        .lease_ttl(Duration::from_secs(ttl));
    if let Some(datacenter) = args.next() {
        config = config.datacenter(datacenter.parse()?);
    }

    let minter = Arc::new(LeasedGenerator::start(config).await?);
    let identity = minter.identity().expect("start resolves once one is held");
    println!("identity {} {}", identity.datacenter(), identity.worker());

    let stop = async {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let stdin = async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.trim() == "stop" {
                    break;
                }
            }
        };
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            () = stdin => {}
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok::<(), std::io::Error>(())
    };
    let mint = async {
        loop {
            // `next_id` may wait (the next millisecond, a reservation write
            // to etcd; bounded): off the async workers.
            let m = Arc::clone(&minter);
            let batch = tokio::task::spawn_blocking(move || {
                (0..100).map(|_| m.next_id()).collect::<Result<Vec<_>, _>>()
            })
            .await
            .expect("the batch ran");
            match batch {
                Ok(ids) => {
                    let out: String = ids.iter().map(|id| format!("{id}\n")).collect();
                    print!("{out}");
                }
                // Never a risky ID: while fenced (etcd unreachable), or
                // while claiming again, this errs.
                Err(e) => eprintln!("not minting: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        stopped = stop => stopped?,
        () = mint => {}
    }
    minter.shutdown().await;
    println!("stopped");
    Ok(())
}
