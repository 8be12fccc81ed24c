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
    let state = AppState::new(Minter::empty());
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

/// The ids of the guide's subsections, in order.
const TOPICS: [&str; 7] = ["what", "how", "why", "example", "uses", "minter", "history"];

/// The text of the element whose opening tag ends with `open`.
fn inner<'a>(html: &'a str, open: &str) -> &'a str {
    let (_, rest) = html.split_once(open).unwrap_or_else(|| panic!("no {open}"));
    let (_, rest) = rest.split_once('>').unwrap();
    rest.split_once('<').unwrap().0
}

#[tokio::test]
async fn the_guide_explains_the_format_in_both_languages() {
    let en = get("/?lang=en").await;
    let nb = get("/?lang=nb").await;
    let headings = |html: &str| -> Vec<String> {
        TOPICS
            .iter()
            .map(|key| inner(html, &format!(r#"<h3 id="guide-{key}-h""#)).to_owned())
            .collect()
    };
    let (en_h, nb_h) = (headings(en.text()), headings(nb.text()));
    assert_eq!(en_h[3], "A worked example, step by step");
    assert_eq!(nb_h[3], "Et regneeksempel, steg for steg");
    for (e, n) in en_h.iter().zip(&nb_h) {
        assert!(!e.is_empty() && !n.is_empty() && e != n, "{e} / {n}");
    }
    assert_eq!(
        inner(en.text(), r#"<h2 id="guide-h""#),
        "Snowflake IDs explained"
    );
    assert_eq!(
        inner(nb.text(), r#"<h2 id="guide-h""#),
        "Snowflake-ID-er forklart"
    );
}

#[tokio::test]
async fn the_worked_example_shows_each_step_with_grouped_numbers() {
    let en = get("/").await;
    let html = en.text();
    for step in [
        "<code>1288834975657 − 1288834974657 = 1000</code>",
        "<code>1000 &lt;&lt; 22 = 4,194,304,000</code>",
        "<code>1 &lt;&lt; 17 = 131,072</code>",
        "<code>1 &lt;&lt; 12 = 4,096</code>",
        "4,194,304,000 | 131,072 | 4,096 | 0 = 4,194,439,168",
        "4,194,304,000 + 131,072 + 4,096 + 0 = 4,194,439,168",
        "multiplies it by 2^22 = 4,194,304:",
        "so the timestamp starts at 17 + 5 = 22",
    ] {
        assert!(html.contains(step), "missing {step:?}");
    }
    // The combined row of the binary figure is the ID's own bit split.
    assert!(html.contains(
        "=  0 | 00000000000000000000000000000001111101000 | 00001 | 00001 | 000000000000"
    ));
    assert!(html.contains(
        r##"<a id="example-link" href="/?timestamp=1288834975657&amp;datacenter=1&amp;worker=1&amp;sequence=0#compose">"##
    ));

    let nb = get("/?lang=nb").await;
    let html = nb.text();
    assert!(html.contains("<code>1000 &lt;&lt; 22 = 4\u{a0}194\u{a0}304\u{a0}000</code>"));
    assert!(html.contains("= 4\u{a0}194\u{a0}439\u{a0}168"));
    // A language chosen by the query stays chosen through the link.
    assert!(html.contains(r##"&amp;sequence=0&amp;lang=nb#compose">Åpne eksempelet"##));
}
