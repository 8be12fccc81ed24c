//! `--api-token-file`: the bearer token that minting and `/metrics` ask
//! for when one is configured.
//!
//! The token is read from a file (trimmed; one token, no inner whitespace)
//! so that it never appears in a process listing or the environment, and
//! re-read on SIGHUP ([`ApiToken::reload`]): a rotation is "write the new
//! file, send SIGHUP". A re-read that fails keeps the token in force.
//! Requests are compared in constant time (`subtle`), and the token is
//! never logged: neither [`ApiToken`]'s `Debug` nor any log line shows it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::guard::check::Rule;
use crate::routes::error::ApiError;

/// Why the token file cannot be used. Each message names the flag and the
/// path, never the file's content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The file cannot be read.
    #[error("api-token-file {}: cannot read it: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file holds nothing but whitespace.
    #[error("api-token-file {}: the file is empty; it must hold one token", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file holds more than one word, or characters a header cannot carry.
    #[error(
        "api-token-file {}: must hold one token of visible ASCII characters (no spaces, one line)",
        path.display()
    )]
    Malformed {
        /// The file.
        path: PathBuf,
    },
}

/// The configured bearer token, shared by every request and replaced in
/// place by [`reload`](ApiToken::reload). Clones share the token.
#[derive(Clone)]
pub struct ApiToken {
    path: Arc<PathBuf>,
    token: Arc<ArcSwap<Vec<u8>>>,
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiToken")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ApiToken {
    /// Reads the token from `path`: the file's content, trimmed.
    pub fn load(path: impl Into<PathBuf>) -> Result<ApiToken, TokenError> {
        let path = path.into();
        let token = read(&path)?;
        Ok(ApiToken {
            path: Arc::new(path),
            token: Arc::new(ArcSwap::from_pointee(token)),
        })
    }

    /// The file the token comes from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again and, if it holds a valid token, puts it in force
    /// at once; otherwise the token in force stays and the error says why.
    pub fn reload(&self) -> Result<(), TokenError> {
        let token = read(&self.path)?;
        self.token.store(Arc::new(token));
        Ok(())
    }

    /// Whether `authorization` is `Bearer <the token>` (the scheme in any
    /// case). The token is compared in constant time; only its length can
    /// be learnt from the timing.
    pub fn verify(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(given) = authorization.and_then(|v| bearer(v.as_bytes())) else {
            return false;
        };
        bool::from(given.ct_eq(self.token.load().as_slice()))
    }
}

/// The token of an `Authorization: Bearer <token>` value.
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

fn read(path: &Path) -> Result<Vec<u8>, TokenError> {
    let text = std::fs::read(path).map_err(|source| TokenError::Read {
        path: path.to_owned(),
        source,
    })?;
    let token = text.trim_ascii();
    if token.is_empty() {
        return Err(TokenError::Empty {
            path: path.to_owned(),
        });
    }
    // RFC 6750's token is visible ASCII; a second word or line means the
    // file is not what it should be (better refused than half-used).
    if !token.iter().all(u8::is_ascii_graphic) {
        return Err(TokenError::Malformed {
            path: path.to_owned(),
        });
    }
    Ok(token.to_vec())
}

/// The route layer of `POST /api/v1/ids` and `/metrics` when a token is
/// configured: a request without it is answered 401 with
/// `WWW-Authenticate: Bearer`. Without a token the routes get no layer at
/// all.
#[derive(Debug, Clone)]
pub(crate) struct RequireToken(pub(crate) ApiToken);

impl Rule for RequireToken {
    fn refuse(&self, request: &Request) -> Option<Response> {
        let authorization = request.headers().get(header::AUTHORIZATION);
        if self.0.verify(authorization) {
            return None;
        }
        // RFC 6750 section 3: no credentials get a bare challenge; wrong ones
        // `invalid_token`.
        let (challenge, message) = match authorization {
            None => (
                "Bearer",
                "this route needs an API token: send `Authorization: Bearer <token>`",
            ),
            Some(_) => (
                "Bearer error=\"invalid_token\"",
                "the API token is not valid; send `Authorization: Bearer <token>`",
            ),
        };
        let mut response = ApiError::new(StatusCode::UNAUTHORIZED, None, message).into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
        Some(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_file(content: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, content).unwrap();
        (dir, path)
    }

    fn value(s: &str) -> HeaderValue {
        HeaderValue::from_str(s).unwrap()
    }

    #[test]
    fn reads_one_trimmed_token_and_checks_the_bearer_header() {
        let (_dir, path) = token_file("  s3cret-Token_1\n");
        let token = ApiToken::load(&path).unwrap();
        assert!(token.verify(Some(&value("Bearer s3cret-Token_1"))));
        assert!(token.verify(Some(&value("bearer s3cret-Token_1"))));
        for wrong in [
            "Bearer s3cret-Token_",
            "Bearer s3cret-Token_12",
            "Bearer S3cret-Token_1",
            "Basic s3cret-Token_1",
            "Bearer",
            "s3cret-Token_1",
            "",
        ] {
            assert!(!token.verify(Some(&value(wrong))), "{wrong:?}");
        }
        assert!(!token.verify(None));
        assert!(!format!("{token:?}").contains("s3cret"), "{token:?}");
    }

    #[test]
    fn an_empty_missing_or_two_word_file_is_refused_naming_the_flag_and_path() {
        for content in ["", " \n\t\n", "two words", "line\nline"] {
            let (_dir, path) = token_file(content);
            let e = ApiToken::load(&path).unwrap_err().to_string();
            assert!(e.starts_with("api-token-file "), "{e}");
            assert!(e.contains(&path.display().to_string()), "{e}");
            assert!(!e.contains("word") && !e.contains("line\n"), "{e}");
        }
        let e = ApiToken::load("/nonexistent/snowmint-token")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("api-token-file /nonexistent/snowmint-token: cannot read it: "),
            "{e}"
        );
    }

    #[test]
    fn a_reload_replaces_the_token_and_a_failed_one_keeps_it() {
        let (_dir, path) = token_file("old");
        let token = ApiToken::load(&path).unwrap();
        let shared = token.clone();
        std::fs::write(&path, "new\n").unwrap();
        token.reload().unwrap();
        assert!(shared.verify(Some(&value("Bearer new"))));
        assert!(!shared.verify(Some(&value("Bearer old"))));
        std::fs::write(&path, "").unwrap();
        assert!(matches!(token.reload(), Err(TokenError::Empty { .. })));
        assert!(shared.verify(Some(&value("Bearer new"))));
    }
}
