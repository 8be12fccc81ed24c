//! [`EtcdCoordinator`]: the lease protocol's [`Coordinator`] on etcd.
//!
//! # What etcd's answers mean to the protocol
//!
//! - **Terms.** etcd has terms ([`Coordinator::has_terms`]): the term of a
//!   [`Renewal`] and of a [`Confirmation`] is the raft term in the answer's
//!   response header, the term the answering member had applied when it
//!   took the request. etcd answers a keep-alive from the lease table of the
//!   member that leads (a follower forwards it there); a leader that was
//!   stuck (a paused process, a slow disk) and has been replaced can, for a
//!   moment after it resumes, still take itself for the leader and answer
//!   from its stale table while the new leader renews nothing (etcd issue
//!   15247; servers before 3.4.31 and 3.5.13 do). The read that confirms a
//!   renewal is a plain linearizable `Get` of the identity key, which etcd
//!   serves only once a leader has confirmed with a quorum that it still
//!   leads: a deposed leader's keep-alive answer carries the old term, the
//!   read the new one, and the renewal does not count (`renewal.rs` in
//!   `snowmint-lease`). "Lease not found" is an answer with TTL 0, believed
//!   only once that read agrees: a deposed leader's table lacks the leases
//!   granted after it.
//! - **Leases ended early.** etcd before 3.4.31 and 3.5.13 may also revoke
//!   a lease early (a deposed leader revoking what its stale table says
//!   expired, etcd issue 12528): the identity's tenure record then says its
//!   holder did not release it ([`Previous::Unclean`](snowmint_lease::Previous::Unclean)),
//!   and its next holder waits one lease TTL before it issues.

use std::collections::HashMap;
use std::time::Duration;

use etcd_client::TlsOptions;
use snowmint_lease::{
    Background, Census, Claimant, Claimed, Confirmation, Coordinator, Granted, LeaseError, LeaseId,
    Pool, Renewal, SharedStatus,
};

use crate::keys::Keys;
use crate::ops::{self, Conn, SeenMark, Stream};

/// etcd as a coordinator of identities: the keys of [`Keys`], one endpoint
/// at a time (the next after a failure), a keep-alive stream kept open
/// between renewals, and each mark as last seen (so the next write is one
/// round trip).
pub struct EtcdCoordinator {
    conn: Conn,
    keys: Keys,
    stream: Option<Stream>,
    seen: HashMap<u16, SeenMark>,
}

impl std::fmt::Debug for EtcdCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdCoordinator")
            .field("conn", &self.conn)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl EtcdCoordinator {
    pub(crate) fn new(
        endpoints: &[String],
        tls: Option<TlsOptions>,
        keys: Keys,
        timeout: Duration,
    ) -> EtcdCoordinator {
        EtcdCoordinator {
            conn: Conn::new(endpoints, tls, timeout),
            keys,
            stream: None,
            seen: HashMap::new(),
        }
    }

    /// Keeps what a request saw of mark `n`, or forgets it after a failure
    /// (a write that timed out may have landed or not).
    fn remember(&mut self, n: u16, result: &Result<SeenMark, LeaseError>) {
        match result {
            Ok(mark) => {
                self.seen.insert(n, *mark);
            }
            Err(_) => {
                self.seen.remove(&n);
            }
        }
    }
}

impl Coordinator for EtcdCoordinator {
    fn sibling(&self) -> EtcdCoordinator {
        EtcdCoordinator {
            conn: self.conn.sibling(),
            keys: self.keys.clone(),
            stream: None,
            seen: HashMap::new(),
        }
    }

    fn failed(&mut self) {
        self.stream = None;
        self.conn.failed();
    }

    fn endpoint(&self) -> String {
        self.conn.endpoint().to_owned()
    }

    fn endpoints(&self) -> usize {
        self.conn.len()
    }

    fn scope(&self) -> String {
        format!("etcd prefix {}", self.keys.prefix())
    }

    async fn scan(&mut self, pool: Pool, t: Duration) -> Result<Census, LeaseError> {
        ops::census(self.conn.client().await?, &self.keys, pool, t).await
    }

    async fn grant(&mut self, ttl: Duration, t: Duration) -> Result<Granted, LeaseError> {
        ops::grant(self.conn.client().await?, ttl, t).await
    }

    async fn claim(
        &mut self,
        lease: LeaseId,
        n: u16,
        who: &Claimant<'_>,
        t: Duration,
    ) -> Result<Claimed, LeaseError> {
        ops::claim(self.conn.client().await?, &self.keys, lease, n, who, t).await
    }

    async fn keep_alive(&mut self, lease: LeaseId, t: Duration) -> Result<Renewal, LeaseError> {
        let client = self.conn.client().await?;
        let result = ops::keep_alive(client, &mut self.stream, lease, t).await;
        if result.is_err() {
            // Never take a late answer for a newer request's.
            self.stream = None;
        }
        result
    }

    async fn confirm(
        &mut self,
        n: u16,
        lease: LeaseId,
        t: Duration,
    ) -> Result<Confirmation, LeaseError> {
        ops::holds(self.conn.client().await?, &self.keys, n, lease, t).await
    }

    async fn release(&mut self, n: u16, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        ops::release(self.conn.client().await?, &self.keys, n, lease, t).await
    }

    async fn revoke(&mut self, lease: LeaseId, t: Duration) -> Result<(), LeaseError> {
        self.stream = None;
        ops::revoke(self.conn.client().await?, lease, t).await
    }

    async fn load_mark(&mut self, n: u16, t: Duration) -> Result<Option<u64>, LeaseError> {
        let result = ops::load_mark(self.conn.client().await?, &self.keys, n, t).await;
        self.remember(n, &result);
        result.map(|mark| mark.value)
    }

    async fn raise_mark(
        &mut self,
        n: u16,
        lease: LeaseId,
        until_ms: u64,
        t: Duration,
    ) -> Result<(), LeaseError> {
        let known = self.seen.get(&n).copied();
        let client = self.conn.client().await?;
        let result = ops::store_mark(client, &self.keys, n, lease, until_ms, known, t).await;
        self.remember(n, &result);
        result.map(drop)
    }

    fn background(&self, status: SharedStatus, t: Duration, confirm: bool) -> Option<Background> {
        Some(Box::pin(crate::versions::watch(
            self.conn.each(),
            t,
            status,
            confirm,
        )))
    }
}
