//! One tenure, from the claim to its end: look, grant a lease, claim an
//! identity under it, build its generator, hold it (`hold.rs`), and let go
//! of what is left once it is lost.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use snowmint::{Clock as _, Identity};
use tokio::sync::Notify;

use super::hold::{Built, Tenure};
use super::{Carried, Session};
use crate::claim;
use crate::coordinator::{Census, Claimant, Claimed, Coordinator, Granted, Pool, Previous};
use crate::error::LeaseError;
use crate::status::{LeaseState, update};
use crate::store::LeaseStore;

/// How many times a claim of one identity is sent when it gets no answer.
const CLAIM_TRIES: usize = 3;

/// The next instance token after `instance` (splitmix64: distinct, and as
/// deterministic as the first, which a simulation's seed draws).
fn next_instance(instance: u64) -> u64 {
    let mut z = instance.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A lease granted, and the identity a claim won under it.
struct Claim {
    granted: Granted,
    /// When the grant was sent (lease clock): the first fence counts from
    /// here.
    sent: Duration,
    won: Won,
}

/// What a claim won.
struct Won {
    /// The identity's number (its ordinal, 0..=1023).
    n: u16,
    /// How its last holder let go.
    previous: Previous,
    /// Its mark as the scan before the claim saw it.
    mark: Option<u64>,
}

/// What a tenure leaves to the next: the identity it held, and the last
/// millisecond it issued in.
pub(super) struct Held {
    pub(super) n: u16,
    pub(super) floor_ms: u64,
}

impl<C: Coordinator> Session<C> {
    /// Grants a lease, claims an identity, installs its generator and keeps
    /// the lease alive until it is lost.
    pub(super) async fn claim_and_hold(
        &mut self,
        carried: &mut Carried,
    ) -> Result<Held, LeaseError> {
        let claim = self.lease_and_claim(carried).await?;
        let mut tenure = self.start_tenure(claim, carried).await?;
        let ended = self.hold(&mut tenure).await;
        // Fence at once: the identity may already be someone else's.
        self.holder.clear();
        let floor_ms = ended.floor_ms.max(tenure.generator.last_issued_ms());
        // Usually gone already; if only the key was lost, free the lease too.
        self.give_up(tenure.lease, None).await;
        let identity = tenure.identity;
        tracing::warn!(%identity, reason = %ended.why, "worker identity lost: not issuing; claiming again");
        update(&self.status, |s| s.last_error = Some(ended.why.to_string()));
        Ok(Held {
            n: tenure.n,
            floor_ms,
        })
    }

    /// The order in which to try the identities of the pool (see
    /// [`claim::order`]), preferring `prefer`.
    fn order(
        &self,
        census: &Census,
        avoid: &HashSet<u16>,
        prefer: Option<u16>,
        start: u64,
        now_ms: u64,
    ) -> Vec<u16> {
        let pool = Pool::new(self.config.datacenter);
        let ahead_ms = snowmint::DEFAULT_MAX_BORROW_MS;
        claim::order(pool, census, avoid, prefer, start, now_ms, ahead_ms)
    }

    /// Looks for a free identity, grants a lease, and claims one under it;
    /// a lease that won nothing is given up.
    async fn lease_and_claim(&mut self, carried: &mut Carried) -> Result<Claim, LeaseError> {
        let t = self.timing.request;
        let pool = Pool::new(self.config.datacenter);
        // Look before leasing: while every identity of the pool is held, a
        // retry costs the coordinator this one read, and no lease.
        let census = self.coordinator.scan(pool, t).await?;
        let now_ms = self.config.wall.now_ms();
        if self
            .order(&census, &carried.avoid, carried.prefer, 0, now_ms)
            .is_empty()
        {
            return Err(self.all_taken());
        }
        let sent = self.now();
        let granted = self.coordinator.grant(self.timing.ttl, t).await?;
        self.set_current(Some((granted.lease, None)));
        update(&self.status, |s| {
            s.state = LeaseState::Claiming;
            s.lease = Some(granted.lease);
            s.granted_ttl = Some(granted.ttl);
        });
        match self.claim(&granted, census, carried).await {
            Ok(Some(won)) => Ok(Claim { granted, sent, won }),
            other => {
                // A claim cut off midway may have been applied all the same;
                // it is not released: its last holder may not have let go
                // cleanly, and a release would tell the next holder it had.
                self.give_up(granted.lease, None).await;
                Err(other.err().unwrap_or_else(|| self.all_taken()))
            }
        }
    }

    /// Claims an identity for `granted` in the order of [`claim::order`]:
    /// one try per round; a try that lost the race scans again (the view it
    /// chose from is stale) and tries from another random start. `None`:
    /// every identity of the pool is held.
    async fn claim(
        &mut self,
        granted: &Granted,
        census: Census,
        carried: &mut Carried,
    ) -> Result<Option<Won>, LeaseError> {
        let t = self.timing.request;
        let pool = Pool::new(self.config.datacenter);
        let mut census = Some(census);
        // Each lost race is another instance's win, so the pool fills within
        // its size in rounds; the bound only stops a pool that churns forever
        // (leases expiring as fast as they are taken), which then waits as full.
        for _ in 0..=pool.len() {
            let seen = match census.take() {
                Some(seen) => seen,
                None => self.coordinator.scan(pool, t).await?,
            };
            let start = carried.spread.next_start();
            let now_ms = self.config.wall.now_ms();
            let candidates = self.order(&seen, &carried.avoid, carried.prefer, start, now_ms);
            let Some(&n) = candidates.first() else {
                break;
            };
            if let Claimed::Won(previous) = self.claim_one(granted, n).await? {
                return Ok(Some(Won {
                    n,
                    previous,
                    mark: seen.marks.get(&n).copied(),
                }));
            }
            // Someone else took it since the scan: look again.
        }
        Ok(None)
    }

    /// Claims identity `n` under `granted`. A claim that got no answer may
    /// have been applied: it is sent again under the same lease, which a
    /// coordinator answers from its record (the wait it recorded). If none
    /// of the tries was answered with a win, this session takes a new
    /// instance token: a claim applied unseen recorded this session as the
    /// holder, and a later claim of it under the old token would be
    /// answered clean (its own) although the hand-over wait that claim
    /// asked for was never learned; under a new token the record is a
    /// stranger's, whose recorded wait the next claim is told.
    async fn claim_one(&mut self, granted: &Granted, n: u16) -> Result<Claimed, LeaseError> {
        let t = self.timing.request;
        let mut unanswered = false;
        let mut claimed = Err(self.all_taken());
        for _ in 0..CLAIM_TRIES {
            let who = Claimant {
                holder: &self.config.holder,
                instance: self.instance,
                ttl: granted.ttl,
            };
            update(&self.status, |s| s.claim_txns += 1);
            claimed = self.coordinator.claim(granted.lease, n, &who, t).await;
            match &claimed {
                Err(e) if e.is_transport() => {
                    unanswered = true;
                    self.coordinator.failed();
                }
                _ => break,
            }
        }
        if unanswered
            && !matches!(claimed, Ok(Claimed::Won(_)))
            && !planted!(UnansweredClaimKeepsInstance)
        {
            self.instance = next_instance(self.instance);
            tracing::warn!(
                identity = n,
                "a claim went unanswered and may have been applied: this session now claims as \
                 a new instance, so that no record of it reads as its own"
            );
        }
        claimed
    }

    /// Builds the generator of the identity won and starts holding it
    /// (issuing at once, or after an unclean hand-over's wait); a tenure
    /// whose generator cannot be built gives its lease up.
    async fn start_tenure(
        &mut self,
        claim: Claim,
        carried: &mut Carried,
    ) -> Result<Tenure, LeaseError> {
        let Claim { granted, sent, won } = claim;
        let Won { n, previous, mark } = won;
        // A mark this far ahead makes the generator refuse until the clock
        // reaches it; the claim order took it only because nothing else
        // was free (or it was this session's own identity): readiness says so.
        let now_ms = self.config.wall.now_ms();
        let ahead_ms = snowmint::DEFAULT_MAX_BORROW_MS;
        let claimed_ahead_ms = mark
            .filter(|&mark| Some(n) != carried.prefer && mark > now_ms.saturating_add(ahead_ms))
            .map(|mark| mark - now_ms);
        let identity = Identity::from_ordinal(n.into()).expect("claims return 0..=1023");
        let issue_from = self.issue_from(identity, n, &previous, carried);
        // What a shutdown releases. An identity with a hand-over wait is
        // released only once the wait is over (`hold`): before that the
        // last holder's fence may still be open, and a release would let
        // the next holder issue at once beside it.
        let clean = issue_from.is_none();
        self.set_current(Some((granted.lease, clean.then_some(n))));
        if let Previous::Untrusted { bound, .. } = &previous
            && !planted!(UntrustedMarkTrusted)
        {
            // A lost holder issued at most until its fence closed (a margin
            // before `bound` after this claim), at most the generator's
            // borrow ahead of its clock: start above that, whatever the mark
            // says. (Safe while its clock was not ahead of this one by more
            // than its fence margin, at least 1 s: docs/distributed.md.)
            let bound_ms = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX);
            let ahead_ms = snowmint::DEFAULT_MAX_BORROW_MS.max(snowmint::DEFAULT_RESERVE_WINDOW_MS);
            let lost_until = now_ms.saturating_add(bound_ms).saturating_add(ahead_ms);
            carried.floor_ms = carried.floor_ms.max(lost_until);
        }
        let built = match self.build(identity, n, &granted, carried).await {
            Ok(built) => built,
            Err(e) => {
                // Nothing was issued under this lease: release it, if its
                // last holder had (see above).
                self.give_up(granted.lease, clean.then_some(n)).await;
                return Err(e);
            }
        };
        carried.backoff.reset();
        update(&self.status, |s| {
            s.identity = Some(identity);
            s.claims += 1;
            s.claimed_ahead_ms = claimed_ahead_ms;
            s.last_error = None;
        });
        tracing::info!(
            %identity,
            lease = %format_args!("{:x}", granted.lease),
            ttl_s = granted.ttl.as_secs(),
            reserved_until_ms = built.generator.reserved_until_ms(),
            "holding worker identity"
        );
        Ok(self.begin(n, &granted, sent, built, issue_from))
    }

    /// When identity `n`, just claimed, may issue from (lease clock), if
    /// not at once: the later of the wait the claim's answer asks for
    /// ([`handover_wait`](Self::handover_wait)) and what remains of a wait
    /// this session began for `n` under an earlier lease. (A lease lost
    /// during its wait, and `n` claimed again: the coordinator answers
    /// clean, since the record is this session's own, but the holder
    /// before may still be fenced open.) Kept in `carried` until it is over.
    fn issue_from(
        &self,
        identity: Identity,
        n: u16,
        previous: &Previous,
        carried: &mut Carried,
    ) -> Option<Duration> {
        let now = self.now();
        carried.waits.retain(|_, until| *until > now);
        let kept = carried
            .waits
            .get(&n)
            .copied()
            .filter(|_| !planted!(HandoverDroppedOnReclaim));
        if let Some(until) = kept {
            tracing::warn!(
                %identity,
                wait_s = until.saturating_sub(now).as_secs_f64(),
                "claimed again within the hand-over wait begun under an earlier lease: \
                 waiting what remains of it before issuing"
            );
        }
        let issue_from = self.handover_wait(identity, previous).max(kept);
        if let Some(until) = issue_from {
            carried.waits.insert(n, until);
        }
        issue_from
    }

    /// When identity `n` may issue from (lease clock), if not at once, by
    /// the claim's answer alone: an unclean hand-over's previous holder's
    /// fence may still be open if the coordinator ended its lease early,
    /// for at most its TTL; issue only once that has passed since the
    /// claim.
    fn handover_wait(&self, identity: Identity, previous: &Previous) -> Option<Duration> {
        match previous {
            Previous::Clean => None,
            Previous::Unclean { .. } if planted!(HandoverWithoutWait) => None,
            Previous::Untrusted { .. } if planted!(HandoverWithoutWait) => None,
            Previous::Untrusted { bound, why } => {
                tracing::warn!(
                    %identity,
                    why = %why,
                    wait_s = bound.as_secs_f64(),
                    "the coordinator may have lost the identity's last writes: waiting the \
                     longest lease TTL before issuing, above anything a lost holder issued"
                );
                Some(self.now() + *bound)
            }
            Previous::Unclean { ttl, holder } => {
                tracing::warn!(
                    %identity,
                    previous_holder = %holder,
                    wait_s = ttl.as_secs_f64(),
                    "the identity's last holder did not release it: waiting one lease TTL before \
                     issuing, in case its lease was ended early"
                );
                let wait = if planted!(HandoverWaitShort) {
                    ttl.saturating_sub(crate::config::fence_margin(*ttl))
                } else {
                    *ttl
                };
                Some(self.now() + wait)
            }
        }
    }

    /// Builds the generator of identity `n` over its store (which reads the
    /// mark through the blocking bridge, so off the async workers), with its
    /// start write (readiness trusts the store only once a write has
    /// succeeded), and checks that a custom factory built it for that
    /// identity over that store. A damaged mark puts `n` on the identities
    /// to avoid.
    async fn build(
        &self,
        identity: Identity,
        n: u16,
        granted: &Granted,
        carried: &mut Carried,
    ) -> Result<Built, LeaseError> {
        let lost = Arc::new(Notify::new());
        let store = LeaseStore::of_session(
            self.bridge.clone(),
            n,
            granted.lease,
            Arc::clone(&lost),
            carried.floor_ms,
        );
        let probe = store.probe();
        let factory = Arc::clone(&self.config.generator);
        let built = self
            .blocking
            .run(move || {
                factory(identity, store).inspect(|g| {
                    let _ = g.renew_reservation();
                })
            })
            .await;
        let generator = match built {
            Some(Ok(generator)) => generator,
            Some(Err(e)) => {
                let damaged = matches!(
                    &e,
                    snowmint::BuildError::Store(store) if store.kind() == snowmint::StoreErrorKind::Damaged
                );
                if damaged {
                    carried.avoid.insert(n);
                }
                tracing::error!(
                    %identity,
                    error = %e,
                    skipped_from_now_on = damaged,
                    "cannot build the generator; releasing the identity"
                );
                return Err(LeaseError::Build {
                    identity,
                    source: e,
                });
            }
            None => return Err(LeaseError::BuildPanicked { identity }),
        };
        let why = if generator.identity() != identity {
            Some("it mints as another identity")
        } else if !probe.loaded() || generator.reserved_until_ms().is_none() {
            Some("it does not keep its mark in the store it was given")
        } else {
            None
        };
        if let Some(why) = why {
            tracing::error!(%identity, why, "the generator factory built a generator that cannot be used; releasing the identity");
            return Err(LeaseError::Factory { identity, why });
        }
        Ok(Built {
            generator: Arc::new(generator),
            lost,
        })
    }
}
