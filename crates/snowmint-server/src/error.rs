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
        }
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
        (self.status, axum::Json(body)).into_response()
    }
}
