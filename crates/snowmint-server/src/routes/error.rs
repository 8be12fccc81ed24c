//! The API's one error shape: `{"error": "<message>", "field": "<name>" | null}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::mint::minter::MintError;

/// An error answered as JSON. Messages are written for the client: they name
/// the field, the value and the allowed range, and never carry internals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    field: Option<String>,
    /// Seconds for a `Retry-After` header (429, 503).
    retry_after: Option<u64>,
}

/// The JSON body of every error.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for people.
    #[schema(example = "datacenter must be 0..=31, got 32")]
    pub error: String,
    /// The input field at fault, or `null`.
    #[schema(example = "datacenter")]
    pub field: Option<String>,
}

impl ApiError {
    /// 400 about `field`.
    pub fn bad_request(field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, field, message)
    }

    /// Any status, with the same shape.
    pub fn new(status: StatusCode, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            field: field.map(str::to_owned),
            retry_after: None,
        }
    }

    /// Adds `Retry-After: <secs>` (at least 1).
    #[must_use]
    pub fn retry_after(mut self, secs: u64) -> ApiError {
        self.retry_after = Some(secs.max(1));
        self
    }

    /// The HTTP status.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The field, if any.
    #[cfg(test)]
    pub(crate) fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

impl From<snowmint::Error> for ApiError {
    fn from(e: snowmint::Error) -> ApiError {
        ApiError::bad_request(Some(e.field().name()), e.to_string())
    }
}

impl From<snowmint::sql::SqlError> for ApiError {
    fn from(e: snowmint::sql::SqlError) -> ApiError {
        ApiError::bad_request(Some(e.field()), e.to_string())
    }
}

impl From<MintError> for ApiError {
    fn from(e: MintError) -> ApiError {
        match e {
            MintError::Count(_) => ApiError::bad_request(Some("count"), e.public_message()),
            other => {
                log_refusal(&other);
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    other.public_message(),
                )
                .retry_after(1)
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.message,
            field: self.field,
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

/// Logs a refused mint, at most once a second (see [`Throttle`]).
fn log_refusal(error: &MintError) {
    static THROTTLE: Throttle = Throttle::new();
    if let Some(left_out) = THROTTLE.admit() {
        tracing::warn!(error = %error, not_logged_since = left_out, "mint refused");
    }
}

/// Lets one log line a second through and counts the others, so that a
/// flood (of refusals, timeouts, ...) never becomes a flood of log lines,
/// each a blocking write to stderr on an async worker.
#[derive(Debug)]
pub(crate) struct Throttle {
    /// Milliseconds since the first call at which the next line may go.
    next_ms: std::sync::atomic::AtomicU64,
    left_out: std::sync::atomic::AtomicU64,
}

impl Throttle {
    pub(crate) const fn new() -> Throttle {
        Throttle {
            next_ms: std::sync::atomic::AtomicU64::new(0),
            left_out: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// `Some(lines left out since the last one)` when this line may go.
    pub(crate) fn admit(&self) -> Option<u64> {
        use std::sync::atomic::Ordering::Relaxed;
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let now = u64::try_from(
            ORIGIN
                .get_or_init(std::time::Instant::now)
                .elapsed()
                .as_millis(),
        )
        .unwrap_or(u64::MAX);
        let next = self.next_ms.load(Relaxed);
        if now >= next
            && self
                .next_ms
                .compare_exchange(next, now + 1000, Relaxed, Relaxed)
                .is_ok()
        {
            Some(self.left_out.swap(0, Relaxed))
        } else {
            self.left_out.fetch_add(1, Relaxed);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Throttle;

    #[test]
    fn a_throttle_lets_one_line_a_second_through_and_counts_the_rest() {
        let throttle = Throttle::new();
        assert_eq!(throttle.admit(), Some(0));
        for _ in 0..5 {
            assert_eq!(throttle.admit(), None);
        }
        // A second later the next line goes, saying how many were left out.
        throttle
            .next_ms
            .store(0, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(throttle.admit(), Some(5));
    }
}
