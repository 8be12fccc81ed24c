//! Cross-site requests: a browser on another origin may not make its
//! visitors mint (403), unless `--cors-origin` allows that origin, which
//! then also gets the CORS preflight and headers.
//!
//! A plain cross-site `POST` needs no preflight, so CORS alone does not
//! stop one; the check is the one Go's `net/http.CrossOriginProtection`
//! makes, for requests whose method is not safe (not GET, HEAD, OPTIONS):
//!
//! 1. `Sec-Fetch-Site` (set by every current browser, never by a page's
//!    script) is trusted when present: `same-origin` and `none` (typed in
//!    the address bar) pass, anything else (`same-site`, `cross-site`) is
//!    refused unless `Origin` is allowed;
//! 2. without it, a request without `Origin` is not from a browser and
//!    passes; an `Origin` whose host and port are the request's `Host`
//!    passes; any other (including `null`) must be allowed.
//!
//! Behind a proxy that rewrites `Host`, older browsers (without
//! `Sec-Fetch-Site`) need the public origin in `--cors-origin`.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::guard::check::Rule;
use crate::routes::error::ApiError;

/// The origins `--cors-origin` allows: exact `scheme://host[:port]`.
#[derive(Debug, Clone, Default)]
pub struct Origins(Vec<HeaderValue>);

/// An `--cors-origin` value that is not an origin.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "cors-origin must be an origin like https://app.example.com or http://127.0.0.1:8080 \
     (scheme, host and optional port; no path), got {0:?}"
)]
pub struct OriginError(String);

impl Origins {
    /// Checks each origin; the first bad one is the error.
    pub fn new<I, S>(origins: I) -> Result<Origins, OriginError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        origins
            .into_iter()
            .map(|o| {
                let o = o.as_ref().trim();
                parse(o.as_bytes())
                    .and_then(|_| HeaderValue::from_str(o).ok())
                    .ok_or_else(|| OriginError(o.to_owned()))
            })
            .collect::<Result<_, _>>()
            .map(Origins)
    }

    /// No origin is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn allows(&self, origin: Option<&HeaderValue>) -> bool {
        origin.is_some_and(|o| {
            self.0
                .iter()
                .any(|a| a.as_bytes().eq_ignore_ascii_case(o.as_bytes()))
        })
    }

    /// The CORS layer for the API's routes: these origins may call them
    /// (with `Authorization`), and preflights are answered; `None` when no
    /// origin is allowed (then `OPTIONS` is 405 like any other method).
    pub(crate) fn cors_layer(&self) -> Option<CorsLayer> {
        (!self.is_empty()).then(|| {
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(self.0.iter().cloned()))
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
                .expose_headers([header::RETRY_AFTER, header::WWW_AUTHENTICATE])
                .max_age(std::time::Duration::from_secs(600))
        })
    }
}

/// `scheme://host[:port]` -> (scheme, host, port), the port defaulted.
fn parse(origin: &[u8]) -> Option<(&[u8], &[u8], u16)> {
    let text = std::str::from_utf8(origin).ok()?;
    let (scheme, authority) = text.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (host, port) = split_host_port(authority.as_bytes(), default_port)?;
    Some((scheme.as_bytes(), host, port))
}

/// `host[:port]` (IPv6 in brackets) -> (host, port).
fn split_host_port(authority: &[u8], default_port: u16) -> Option<(&[u8], u16)> {
    let valid = |b: &u8| b.is_ascii_alphanumeric() || b"-._[]:".contains(b);
    if authority.is_empty() || !authority.iter().all(valid) {
        return None;
    }
    let host_end = match authority.first() {
        Some(b'[') => authority.iter().position(|b| *b == b']')? + 1,
        _ => authority
            .iter()
            .position(|b| *b == b':')
            .unwrap_or(authority.len()),
    };
    let (host, rest) = authority.split_at(host_end);
    let port = match rest {
        [] => default_port,
        [b':', digits @ ..] => std::str::from_utf8(digits).ok()?.parse().ok()?,
        _ => return None,
    };
    (!host.is_empty()).then_some((host, port))
}

/// `Sec-Fetch-Site`, which `http` has no constant for: a name looked up by
/// a string is parsed and lowercased for each lookup.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// `Origin` and `Sec-Fetch-Site`, the first value of each as
/// `HeaderMap::get` finds it, in one pass over the request's headers (a
/// handful; the edge has refused more than 16 KiB of them) rather than two
/// hashed lookups (about 200 instructions a mint).
fn origin_and_site(headers: &HeaderMap) -> (Option<&HeaderValue>, Option<&HeaderValue>) {
    let (mut origin, mut site) = (None, None);
    for (name, value) in headers {
        if *name == header::ORIGIN {
            origin = origin.or(Some(value));
        } else if *name == SEC_FETCH_SITE {
            site = site.or(Some(value));
        }
    }
    (origin, site)
}

/// Whether a request that is not safe may go on; see the [module docs](self).
/// `host` is the request's host, looked up only when an `Origin` without
/// `Sec-Fetch-Site` needs it.
fn permitted<'a>(
    headers: &HeaderMap,
    host: impl FnOnce() -> Option<&'a [u8]>,
    allowed: &Origins,
) -> bool {
    let (origin, site) = origin_and_site(headers);
    if let Some(site) = site {
        return matches!(site.as_bytes(), b"same-origin" | b"none") || allowed.allows(origin);
    }
    let Some(origin) = origin else {
        return true;
    };
    let same = match (parse(origin.as_bytes()), host()) {
        (Some((_, o_host, o_port)), Some(host)) => split_host_port(host, o_port)
            .is_some_and(|(h, p)| h.eq_ignore_ascii_case(o_host) && p == o_port),
        _ => false,
    };
    same || allowed.allows(Some(origin))
}

/// The public router's layer: refuses a cross-site request that is not
/// safe (403, in the API's error shape).
#[derive(Debug, Clone)]
pub(crate) struct RefuseCrossSite(pub(crate) Arc<Origins>);

impl Rule for RefuseCrossSite {
    fn refuse(&self, request: &Request) -> Option<Response> {
        if matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        ) {
            return None;
        }
        // HTTP/2 carries the host in the URI (`:authority`), HTTP/1.1 in `Host`.
        let host = || {
            request
                .uri()
                .authority()
                .map(|a| a.as_str().as_bytes())
                .or_else(|| {
                    request
                        .headers()
                        .get(header::HOST)
                        .map(HeaderValue::as_bytes)
                })
        };
        if permitted(request.headers(), host, &self.0) {
            return None;
        }
        Some(
            ApiError::new(
                StatusCode::FORBIDDEN,
                None,
                "cross-site requests may only GET, HEAD or OPTIONS: this origin is not allowed (see --cors-origin)",
            )
            .into_response(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    axum::http::HeaderName::from_static(k),
                    HeaderValue::from_static(v),
                )
            })
            .collect()
    }

    #[test]
    fn origins_must_be_scheme_host_and_port() {
        assert!(
            Origins::new([
                "https://app.example.com",
                "http://127.0.0.1:8080",
                "http://[::1]:9"
            ])
            .is_ok()
        );
        for bad in [
            "app.example.com",
            "https://a.example/",
            "ftp://a.example",
            "https://",
            "https://a b",
            "https://a:x",
            "*",
            "null",
        ] {
            let e = Origins::new([bad]).unwrap_err().to_string();
            assert!(e.starts_with("cors-origin must be an origin"), "{e}");
            assert!(e.ends_with(&format!("got {bad:?}")), "{e}");
        }
    }

    proptest::proptest! {
        /// The one pass finds what two lookups find, with either header
        /// missing, repeated, or among others.
        #[test]
        fn one_pass_finds_the_first_origin_and_site(
            headers in crate::guard::testing::header_maps(vec![
                header::ORIGIN,
                SEC_FETCH_SITE,
                header::HOST,
                HeaderName::from_static("x-a"),
            ]),
        ) {
            proptest::prop_assert_eq!(
                origin_and_site(&headers),
                (headers.get(header::ORIGIN), headers.get(SEC_FETCH_SITE))
            );
        }
    }

    /// Whether a request of these headers to `host` passes with `allowed`.
    fn passes(
        pairs: &[(&'static str, &'static str)],
        host: Option<&[u8]>,
        allowed: &Origins,
    ) -> bool {
        permitted(&headers(pairs), || host, allowed)
    }

    #[test]
    fn the_check_follows_sec_fetch_site_then_origin_against_host() {
        let none = Origins::default();
        let allowed = Origins::new(["https://app.example.com"]).unwrap();
        let host = Some(&b"127.0.0.1:8080"[..]);
        // Not a browser.
        assert!(passes(&[], host, &none));
        // Sec-Fetch-Site decides when present.
        let same_origin = [
            ("sec-fetch-site", "same-origin"),
            ("origin", "https://proxy.example"),
        ];
        assert!(passes(&same_origin, host, &none));
        assert!(passes(&[("sec-fetch-site", "none")], host, &none));
        for site in ["cross-site", "same-site"] {
            let h = [
                ("sec-fetch-site", site),
                ("origin", "https://app.example.com"),
            ];
            assert!(!passes(&h, host, &none), "{site}");
            assert!(passes(&h, host, &allowed), "{site}");
        }
        assert!(!passes(&[("sec-fetch-site", "cross-site")], host, &allowed));
        // Without it, Origin against Host (default ports filled in).
        let origin = |value| [("origin", value)];
        assert!(passes(&origin("http://127.0.0.1:8080"), host, &none));
        assert!(passes(
            &origin("http://snow.example"),
            Some(b"snow.example"),
            &none
        ));
        assert!(passes(
            &origin("https://SNOW.example"),
            Some(b"snow.example:443"),
            &none
        ));
        assert!(!passes(&origin("http://127.0.0.1:8081"), host, &none));
        assert!(!passes(&origin("https://evil.example"), host, &none));
        assert!(!passes(&origin("null"), host, &none));
        assert!(!passes(&origin("http://127.0.0.1:8080"), None, &none));
        assert!(passes(&origin("https://app.example.com"), host, &allowed));
    }
}
