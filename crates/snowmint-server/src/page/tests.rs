//! The page through the router, without a socket. The HTTP contract of the
//! page (CSP, escaping of input, forms without JavaScript) is pinned by
//! `tests/api.rs`; these pin what the page says and serves besides.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use tower::ServiceExt;

use crate::{AppState, Minter, app};

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
}

async fn get(uri: &str) -> Answer {
    let state = AppState::new(Minter::new());
    let response = app(state)
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

#[tokio::test]
async fn serves_a_favicon_where_browsers_look_for_it() {
    let ico = get("/favicon.ico").await;
    assert_eq!(ico.status, StatusCode::OK);
    assert_eq!(ico.headers[header::CONTENT_TYPE], "image/x-icon");
    // An ICO directory of one image, the image a PNG.
    assert_eq!(&ico.body[..6], &[0, 0, 1, 0, 1, 0]);
    assert_eq!(&ico.body[22..30], b"\x89PNG\r\n\x1a\n");
    let svg = get("/assets/favicon.svg").await;
    assert_eq!(svg.status, StatusCode::OK);
    assert_eq!(svg.headers[header::CONTENT_TYPE], "image/svg+xml");
    assert!(
        svg.text()
            .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")
    );
}

#[tokio::test]
async fn the_head_describes_the_page_in_its_language() {
    let mut descriptions = Vec::new();
    for lang in ["en", "nb"] {
        let page = get(&format!("/?lang={lang}")).await;
        let html = page.text();
        let description = html
            .split_once(r#"<meta name="description" content=""#)
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(content, _)| content.to_owned())
            .unwrap_or_else(|| panic!("no meta description in {lang}"));
        assert!(description.len() > 50, "{lang}: {description}");
        descriptions.push(description);
        assert!(html.contains(r#"<link rel="icon" href="/favicon.ico" sizes="32x32">"#));
        assert!(
            html.contains(r#"<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">"#)
        );
    }
    assert_ne!(descriptions[0], descriptions[1]);
    assert!(descriptions[1].contains("Snowflake-ID"));
}
