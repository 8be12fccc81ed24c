//! The API's one error shape: `{"error": "<message>", "field": "<name>" | null}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::minter::MintError;

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
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The field, if any.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

impl From<snowmint::Error> for ApiError {
    fn from(e: snowmint::Error) -> ApiError {
        ApiError::bad_request(Some(e.field().name()), e.to_string())
    }
}

impl From<MintError> for ApiError {
    fn from(e: MintError) -> ApiError {
        match e {
            MintError::Count(_) => ApiError::bad_request(Some("count"), e.public_message()),
            other => {
                tracing::warn!(error = %other, "mint refused");
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
