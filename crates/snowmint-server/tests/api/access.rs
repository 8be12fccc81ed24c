//! Access control: the API token and cross-site mints.

use crate::support::*;

fn token_file(dir: &std::path::Path, token: &str) -> std::path::PathBuf {
    let path = dir.join("api-token");
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path
}

#[tokio::test]
async fn a_token_guards_minting_and_metrics_and_nothing_else() {
    let h = harness();
    let path = token_file(h.dir.path(), "t0ken-for-tests");
    let state = h
        .state
        .clone()
        .with_token(snowmint_server::ApiToken::load(&path).unwrap());
    for uri in ["/api/v1/ids?count=2", "/metrics"] {
        let method = if uri == "/metrics" { "GET" } else { "POST" };
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Basic dDBrZW4tZm9yLXRlc3Rz"),
        ] {
            let headers: Vec<(&str, &str)> =
                auth.map(|a| ("authorization", a)).into_iter().collect();
            let (status, hs, body) = send_full(&state, method, uri, &headers).await;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {uri} {auth:?}: {body}"
            );
            let challenge = hs[header::WWW_AUTHENTICATE].to_str().unwrap();
            assert!(challenge.starts_with("Bearer"), "{challenge}");
            let message = error_shape(uri, &body);
            assert!(message.contains("Authorization: Bearer"), "{message}");
            assert!(!message.contains("t0ken"), "{message}");
        }
        let (status, _, body) = send_full(
            &state,
            method,
            uri,
            &[("authorization", "Bearer t0ken-for-tests")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{method} {uri}: {body}");
    }
    // Everything else stays public.
    for uri in [
        "/",
        REFERENCE_COMPOSE,
        "/api/v1/decode/4194439168",
        "/api/v1/range?from=2024-01-01T00:00:00Z",
        "/api/v1/openapi.json",
        "/healthz",
        "/readyz",
    ] {
        let (status, _, body) = send_full(&state, "GET", uri, &[]).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    }
}

#[tokio::test]
async fn the_live_panel_says_when_minting_needs_a_token() {
    let h = harness();
    let (_, _, page) = send_full(&h.state, "GET", "/", &[]).await;
    assert!(!page.contains("id=\"live-token\""), "no token, no note");
    let path = token_file(h.dir.path(), "abc");
    let state = h
        .state
        .clone()
        .with_token(snowmint_server::ApiToken::load(&path).unwrap());
    for (lang, words) in [
        ("en", "requires an API token"),
        ("nb", "krever et API-token"),
    ] {
        let (_, _, page) = send_full(&state, "GET", &format!("/?lang={lang}"), &[]).await;
        let note = page
            .split("id=\"live-token\"")
            .nth(1)
            .unwrap_or_else(|| panic!("{lang}: no token note"));
        assert!(
            note[..300.min(note.len())].contains(words),
            "{lang}: {note}"
        );
        assert!(!page.contains(">abc<"), "the token itself is never shown");
    }
}

#[tokio::test]
async fn cross_site_mints_are_refused_unless_the_origin_is_allowed() {
    let h = harness();
    let host = ("host", "snow.example:8080");
    let cross_site: &[&[(&str, &str)]] = &[
        &[
            host,
            ("sec-fetch-site", "cross-site"),
            ("origin", "https://evil.example"),
        ],
        &[
            host,
            ("sec-fetch-site", "same-site"),
            ("origin", "http://other.snow.example:8080"),
        ],
        // An older browser: no Sec-Fetch-Site, the Origin decides.
        &[host, ("origin", "https://evil.example")],
        &[host, ("origin", "http://snow.example:8081")],
        &[host, ("origin", "null")],
    ];
    for headers in cross_site {
        let (status, hs, body) = send_full(&h.state, "POST", "/api/v1/ids?count=1", headers).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{headers:?}: {body}");
        assert!(error_shape("403", &body).contains("cross-site"), "{body}");
        assert!(hs.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    }
    // The page's own live mint, and clients that are not browsers.
    let own: &[&[(&str, &str)]] = &[
        &[
            host,
            ("sec-fetch-site", "same-origin"),
            ("origin", "http://snow.example:8080"),
        ],
        &[host, ("origin", "http://snow.example:8080")],
        &[host],
        &[],
    ];
    for headers in own {
        let (status, _, body) = send_full(&h.state, "POST", "/api/v1/ids?count=1", headers).await;
        assert_eq!(status, StatusCode::OK, "{headers:?}: {body}");
    }
    // Reading stays open to everyone.
    let (status, _, _) =
        send_full(&h.state, "GET", "/api/v1/decode/4194439168", cross_site[0]).await;
    assert_eq!(status, StatusCode::OK);
    // No allowed origin: a preflight is just another method.
    let preflight = [
        ("origin", "https://app.example"),
        ("access-control-request-method", "POST"),
        ("access-control-request-headers", "authorization"),
    ];
    let (status, _, body) = send_full(&h.state, "OPTIONS", "/api/v1/ids", &preflight).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    error_shape("405", &body);

    // An allowed origin mints, and gets the CORS headers and the preflight.
    let state = h
        .state
        .clone()
        .with_origins(snowmint_server::Origins::new(["https://app.example"]).unwrap());
    let (status, hs, body) = send_full(&state, "OPTIONS", "/api/v1/ids", &preflight).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        hs[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://app.example"
    );
    let allowed_headers = hs[header::ACCESS_CONTROL_ALLOW_HEADERS].to_str().unwrap();
    assert!(
        allowed_headers.contains("authorization"),
        "{allowed_headers}"
    );
    assert!(
        hs[header::ACCESS_CONTROL_ALLOW_METHODS]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    let from_app = [
        host,
        ("sec-fetch-site", "cross-site"),
        ("origin", "https://app.example"),
    ];
    let (status, hs, body) = send_full(&state, "POST", "/api/v1/ids?count=1", &from_app).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        hs[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://app.example"
    );
    // Others are still refused.
    let (status, _, body) = send_full(&state, "POST", "/api/v1/ids?count=1", cross_site[0]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // A preflight from them gets no permission.
    let evil_preflight = [("origin", "https://evil.example"), preflight[1]];
    let (_, hs, _) = send_full(&state, "OPTIONS", "/api/v1/ids", &evil_preflight).await;
    assert!(
        hs.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
        "{hs:?}"
    );
}
