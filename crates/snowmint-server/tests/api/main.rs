//! The HTTP contract, through the router (no socket) and over a real socket,
//! one module a surface.

mod access;
mod admin;
mod compose;
mod decode;
mod errors;
mod headers;
mod health;
mod layouts;
mod metrics;
mod mint;
mod openapi;
mod openapi_patterns;
mod page;
mod params;
mod range;
mod socket;
mod sql;
mod support;
