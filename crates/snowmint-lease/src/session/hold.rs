//! Holding one identity: a small state machine.
//!
//! What the holder does with the identity it holds is a [`State`]:
//!
//! ```text
//!                    the wait is over
//!   HandingOver ----------------------> Issuing <-----------+
//!   (after an unclean hand-over)          |                 |
//!                       the fence's       |                 | a wake after a renewal
//!                       deadline passed   v                 | counted (deadline ahead)
//!                                       Fenced -------------+
//! ```
//!
//! A tenure starts issuing at once, or hands over first. The state moves
//! only at a wake, when the clock has passed the deadline of the fence or an
//! unclean hand-over's wait. Beside it, whatever the state, renewals keep
//! the lease alive at their own pace ([`Renewals`]): one that counts moves
//! the deadline; one refused or unconfirmed does not. The tenure ends when
//! the lease is gone on the coordinator or the identity is no longer bound
//! to it ([`Ended`]).

use std::sync::Arc;
use std::time::Duration;

use snowmint::{Generator, Identity};
use tokio::sync::Notify;

use super::Session;
use crate::config::Timing;
use crate::coordinator::{Coordinator, Granted, LeaseId};
use crate::error::LeaseError;
use crate::fence::Fence;
use crate::renewal::{self, KeepAlive, Verdict};
use crate::status::{LeaseState, update};

/// Pause before retrying a failed renewal.
const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(200);

/// What the holder is doing with the identity.
enum State {
    /// Waiting out an unclean hand-over: the last holder's fence may still
    /// be open, so not issuing before the tenure's `issue_from`.
    HandingOver,
    /// Issuing, behind this fence (it closes at the tenure's deadline).
    Issuing(Arc<Fence>),
    /// The fence closed for want of renewals: not issuing until one counts.
    Fenced,
}

/// The renewals' own pace.
struct Renewals {
    /// When the next is due (lease clock).
    next: Duration,
    /// When the first of the failures in a row was sent, if the last failed.
    failing_since: Option<Duration>,
    /// Answers in a row that a read did not confirm (logged once a streak).
    unconfirmed: u64,
}

/// The generator's probe of its store (readiness) and renewal of its mark
/// ahead of need: a library user has no keeper of its own.
struct Probe {
    every: Duration,
    next: Duration,
}

/// A generator built for an identity, and the signal its store raises when
/// a reservation write is refused (the identity is not the lease's any more).
pub(super) struct Built {
    pub(super) generator: Arc<Generator>,
    pub(super) lost: Arc<Notify>,
}

/// One identity held under one lease.
pub(super) struct Tenure {
    pub(super) identity: Identity,
    pub(super) n: u16,
    pub(super) lease: LeaseId,
    pub(super) generator: Arc<Generator>,
    /// Raised when a reservation write was refused: the key is not ours.
    lost: Arc<Notify>,
    /// When an unclean hand-over's wait is over (lease clock), if any.
    issue_from: Option<Duration>,
    /// Where the fence closes (lease clock); moved only forward, by a
    /// renewal that counts.
    deadline: Duration,
    state: State,
    renewals: Renewals,
    probe: Probe,
}

/// What a tenure ended with: why, and the last millisecond it issued in.
pub(super) struct Ended {
    pub(super) why: LeaseError,
    pub(super) floor_ms: u64,
}

/// A renewal that got no usable answer.
struct Failed {
    error: LeaseError,
    /// Whether the keep-alive was answered but the read after it failed: a
    /// renewal not confirmed, too.
    answered: bool,
}

impl Failed {
    fn unanswered(error: LeaseError) -> Failed {
        Failed {
            error,
            answered: false,
        }
    }

    fn unconfirmed(error: LeaseError) -> Failed {
        Failed {
            error,
            answered: true,
        }
    }
}

impl Tenure {
    fn ended(&self, why: LeaseError) -> Ended {
        Ended {
            why,
            floor_ms: self.generator.last_issued_ms(),
        }
    }

    fn not_holder(&self) -> LeaseError {
        LeaseError::NotHolder {
            key: self.identity.to_string(),
            lease: self.lease,
        }
    }

    fn is_issuing(&self) -> bool {
        matches!(self.state, State::Issuing(_))
    }

    /// Whether an unclean hand-over's wait, if any, is over at `now`.
    fn may_issue(&self, now: Duration) -> bool {
        self.issue_from.is_none_or(|from| now >= from)
    }

    /// When to look again: the next renewal or probe, and the next change
    /// of state (the fence's deadline, or the end of a hand-over's wait).
    fn wake(&self, now: Duration) -> Duration {
        let wake = self.renewals.next.min(self.probe.next);
        match self.state {
            State::Issuing(_) => wake.min(self.deadline),
            State::HandingOver | State::Fenced => {
                match self.issue_from.filter(|&from| from > now) {
                    Some(from) => wake.min(from),
                    None => wake,
                }
            }
        }
    }
}

impl<C: Coordinator> Session<C> {
    /// Starts holding identity `n` under `granted` (sent at `sent`): issuing
    /// at once, or handing over until `issue_from`.
    pub(super) fn begin(
        &self,
        n: u16,
        granted: &Granted,
        sent: Duration,
        built: Built,
        issue_from: Option<Duration>,
    ) -> Tenure {
        let Built { generator, lost } = built;
        let deadline = Timing::deadline(sent, granted.ttl);
        let state = match issue_from {
            None => State::Issuing(self.install(&generator, deadline)),
            Some(_) => {
                update(&self.status, |s| s.state = LeaseState::Handover);
                State::HandingOver
            }
        };
        let every = Duration::from_millis(generator.reserve_window_ms() / 4)
            .clamp(Duration::from_millis(50), self.timing.renew_every);
        Tenure {
            identity: Identity::from_ordinal(n.into()).expect("claims return 0..=1023"),
            n,
            lease: granted.lease,
            generator,
            lost,
            issue_from,
            deadline,
            state,
            // The first renewal is timed from the grant, like every later
            // one from the renewal before it.
            renewals: Renewals {
                next: sent + self.timing.renew_every,
                failing_since: None,
                unconfirmed: 0,
            },
            probe: Probe {
                every,
                next: self.now() + every,
            },
        }
    }

    /// Holds `tenure` until it is lost: the lease is gone on the
    /// coordinator (expired or revoked), or the identity is no longer bound
    /// to it (deleted or taken over by hand while the lease lives; seen
    /// after a renewal, or at once when a reservation write is refused for
    /// it).
    pub(super) async fn hold(&mut self, tenure: &mut Tenure) -> Ended {
        loop {
            let now = self.now();
            let wake = tenure.wake(now);
            tokio::select! {
                biased;
                () = tenure.lost.notified() => return tenure.ended(tenure.not_holder()),
                () = tokio::time::sleep(wake.saturating_sub(now)) => {}
            }
            let now = self.now();
            self.follow_deadline(tenure, now);
            self.probe(tenure, now);
            if now < tenure.renewals.next {
                continue;
            }
            let attempt = self.now();
            match self.renew(tenure, attempt).await {
                Ok(Verdict::Extend(deadline)) => self.renewed(tenure, deadline, attempt),
                Ok(Verdict::Unconfirmed { renewed, read }) => {
                    self.unconfirmed(tenure, renewed, read);
                }
                Ok(Verdict::NotHolder) => return tenure.ended(tenure.not_holder()),
                Err(Failed {
                    error: gone @ LeaseError::LeaseGone { .. },
                    ..
                }) => return tenure.ended(gone),
                Err(failed) => self.renewal_failed(tenure, failed, attempt),
            }
        }
    }

    /// The transitions at a wake: Issuing -> Fenced once the deadline has
    /// passed; HandingOver or Fenced -> Issuing while it is ahead, once any
    /// hand-over wait is over.
    fn follow_deadline(&self, tenure: &mut Tenure, now: Duration) {
        if now >= tenure.deadline {
            if tenure.is_issuing() {
                self.fence(tenure, now);
            }
        } else if !tenure.is_issuing() && tenure.may_issue(now) {
            self.issue(tenure);
        }
    }

    /// Issuing -> Fenced: the deadline the fence holds has passed: close it
    /// now rather than wait for a mint to find it closed.
    fn fence(&self, tenure: &mut Tenure, now: Duration) {
        if let State::Issuing(closed) = &tenure.state {
            closed.expire();
        }
        tenure.state = State::Fenced;
        self.holder.clear();
        update(&self.status, |s| {
            s.state = LeaseState::Fenced;
            s.fenced += 1;
        });
        tracing::warn!(
            identity = %tenure.identity,
            silent_for_s = tenure.renewals.failing_since.map(|since| now.saturating_sub(since).as_secs_f64()),
            "no lease renewal in time: fenced, not issuing"
        );
    }

    /// HandingOver or Fenced -> Issuing: installs the generator behind a
    /// fence that closes at the deadline.
    fn issue(&self, tenure: &mut Tenure) {
        let fence = self.install(&tenure.generator, tenure.deadline);
        let was = std::mem::replace(&mut tenure.state, State::Issuing(fence));
        // Any hand-over wait is over (the last holder's fence has closed):
        // a shutdown may release the identity now.
        self.set_current(Some((tenure.lease, Some(tenure.n))));
        let identity = tenure.identity;
        match was {
            State::Fenced => tracing::info!(%identity, "lease renewed again; issuing"),
            State::HandingOver => tracing::info!(%identity, "hand-over wait over; issuing"),
            State::Issuing(_) => {}
        }
    }

    /// Has the generator probe its store and renew its mark, when due.
    fn probe(&self, tenure: &mut Tenure, now: Duration) {
        if now < tenure.probe.next {
            return;
        }
        tenure.probe.next = now + tenure.probe.every;
        if tenure.is_issuing() && tenure.generator.renewal_due() {
            let g = Arc::clone(&tenure.generator);
            self.blocking.detach(move || {
                if let Err(e) = g.renew_reservation() {
                    tracing::warn!(error = %e, "renewing the reservation mark failed");
                }
            });
        }
    }

    /// One renewal, sent at `attempt`: a keep-alive, then a linearizable
    /// read of the identity. A live lease is not enough: the key can be
    /// deleted (or put under another lease) while it lives, and then the
    /// identity is free for anyone to claim; the read also confirms the
    /// answer (see `renewal.rs`). The fence moves only when both answer and
    /// agree.
    async fn renew(&mut self, tenure: &Tenure, attempt: Duration) -> Result<Verdict, Failed> {
        let t = self.timing.request;
        let answer = match self.coordinator.keep_alive(tenure.lease, t).await {
            Ok(answer) => answer,
            Err(error) => return Err(Failed::unanswered(error)),
        };
        let read = match self.coordinator.confirm(tenure.n, tenure.lease, t).await {
            Ok(read) => read,
            // Answered, but not confirmed.
            Err(error) => return Err(Failed::unconfirmed(error)),
        };
        if answer.ttl.is_zero() {
            // "No such lease", from a member that may be stale (a deposed
            // leader's table lacks leases granted after it): believed only
            // when the read agrees.
            if !read.holds || planted!(Ttl0Trusted) {
                let lease = tenure.lease;
                return Err(Failed::unconfirmed(LeaseError::LeaseGone { lease }));
            }
            return Ok(Verdict::Unconfirmed {
                renewed: answer.term,
                read: read.term,
            });
        }
        let answer = KeepAlive {
            sent: if planted!(FenceFromAnswer) {
                self.now()
            } else {
                attempt
            },
            ttl: answer.ttl,
            term: answer.term,
        };
        // A coordinator without terms answers from its one primary: the
        // read after the answer confirms it.
        let confirm = self.config.confirm_renewals
            && self.coordinator.has_terms()
            && !planted!(RenewalWithoutTerm);
        Ok(renewal::judge(&answer, &read, confirm))
    }

    /// A renewal counted: the fence moves to `deadline` (never back).
    fn renewed(&self, tenure: &mut Tenure, deadline: Duration, attempt: Duration) {
        tenure.renewals.unconfirmed = 0;
        tenure.deadline = tenure.deadline.max(deadline);
        if let State::Issuing(fence) = &tenure.state {
            fence.extend(tenure.deadline);
        }
        tenure.renewals.failing_since = None;
        let issuing = tenure.is_issuing();
        update(&self.status, |s| {
            if issuing {
                s.state = LeaseState::Held;
            }
            s.renewals += 1;
        });
        tenure.renewals.next = attempt + self.timing.renew_every;
    }

    /// A renewal answered but not confirmed: the fence stays; ask again
    /// soon.
    fn unconfirmed(&self, tenure: &mut Tenure, renewed: Option<u64>, read: Option<u64>) {
        if tenure.renewals.unconfirmed == 0 {
            tracing::warn!(
                identity = %tenure.identity,
                endpoint = self.coordinator.endpoint(),
                keep_alive_term = ?renewed,
                read_term = ?read,
                "the coordinator answered a lease keep-alive that a read after it does \
                 not confirm (a deposed leader's answer, or a stale member's): not \
                 counted, the fence stays"
            );
        }
        tenure.renewals.unconfirmed += 1;
        update(&self.status, |s| {
            s.unconfirmed_renewals += 1;
            s.last_error = Some(format!(
                "keep-alive answered at term {} but confirmed at {}: not counted",
                term_text(renewed),
                term_text(read)
            ));
        });
        // The next answer, likely from the new leader (or from this member,
        // which follows it by now), may count. A server that never confirms
        // (a proxy that strips headers) is asked at the renewal pace, not
        // in a loop.
        let wait = if tenure.renewals.unconfirmed <= 3 {
            RETRY_AFTER_FAILURE
        } else {
            self.timing.renew_every
        };
        tenure.renewals.next = self.now() + wait;
    }

    /// A renewal got no usable answer: the next endpoint, soon.
    fn renewal_failed(&mut self, tenure: &mut Tenure, failed: Failed, attempt: Duration) {
        let Failed { error, answered } = failed;
        self.coordinator.failed();
        if tenure.renewals.failing_since.is_none() {
            let identity = tenure.identity;
            tracing::warn!(%identity, error = %error, "lease renewal failed; retrying");
        }
        tenure.renewals.failing_since.get_or_insert(attempt);
        update(&self.status, |s| {
            s.renewal_failures += 1;
            s.unconfirmed_renewals += u64::from(answered);
            s.last_error = Some(error.to_string());
        });
        // Soon: every moment counts before the fence closes, and a failure
        // has usually taken a request timeout already, so this is no hot
        // loop.
        tenure.renewals.next = self.now() + RETRY_AFTER_FAILURE;
    }
}

/// A term for a message: the number, or `none`.
fn term_text(term: Option<u64>) -> String {
    term.map_or_else(|| "none".to_owned(), |t| t.to_string())
}
