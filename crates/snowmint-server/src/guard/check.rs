//! A guard that answers a request itself or hands it on unchanged:
//! the cross-site refusal and the token check are each one [`Rule`].
//!
//! A rule decides from the request head alone, before anything below it
//! runs, so its layer needs no boxed future, no clone of the routes below
//! and no copy of the application state per request (as
//! `axum::middleware::from_fn` would): the future is the inner one, or an
//! answer that is already made.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use pin_project_lite::pin_project;
use tower::{Layer, Service};

/// What a guard checks: `Some(answer)` refuses the request with that
/// answer, `None` lets it through.
pub(crate) trait Rule: Clone + Send + Sync + 'static {
    /// The refusal of `request`, if it is refused.
    fn refuse(&self, request: &Request) -> Option<Response>;
}

/// No rule (`None`) lets every request through.
impl<R: Rule> Rule for Option<R> {
    fn refuse(&self, request: &Request) -> Option<Response> {
        self.as_ref().and_then(|rule| rule.refuse(request))
    }
}

/// Wraps routes in [`Check`] with `rule`.
#[derive(Debug, Clone)]
pub(crate) struct CheckLayer<R>(pub(crate) R);

impl<S, R: Rule> Layer<S> for CheckLayer<R> {
    type Service = Check<S, R>;

    fn layer(&self, inner: S) -> Check<S, R> {
        Check {
            inner,
            rule: self.0.clone(),
        }
    }
}

/// Routes behind a [`Rule`].
#[derive(Debug, Clone)]
pub(crate) struct Check<S, R> {
    inner: S,
    rule: R,
}

impl<S, R> Check<S, R> {
    /// What it guards.
    #[cfg(test)]
    pub(crate) fn inner(&self) -> &S {
        &self.inner
    }

    /// What it guards, to change.
    pub(crate) fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

impl<S, R> Service<Request> for Check<S, R>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    R: Rule,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Checked<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Checked<S::Future> {
        match self.rule.refuse(&request) {
            Some(answer) => Checked::Refused {
                answer: Some(answer),
            },
            None => Checked::Passed {
                future: self.inner.call(request),
            },
        }
    }
}

pin_project! {
    /// The future of a [`Check`]: the routes' own, or the refusal.
    #[project = CheckedProj]
    pub(crate) enum Checked<F> {
        Passed { #[pin] future: F },
        Refused { answer: Option<Response> },
    }
}

impl<F> Future for Checked<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CheckedProj::Passed { future } => future.poll(cx),
            CheckedProj::Refused { answer } => {
                Poll::Ready(Ok(answer.take().expect("a refusal is polled once")))
            }
        }
    }
}
