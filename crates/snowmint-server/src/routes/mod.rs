//! The routes: the JSON API, the explorer page, the OpenAPI document, the
//! metrics, and the error shape they answer in.

pub(crate) mod api;
pub(crate) mod error;
pub mod metrics;
pub(crate) mod openapi;
pub(crate) mod page;
