//! The explorer page and its assets through the router.

use crate::support::*;

#[tokio::test]
async fn the_page_renders_without_javascript() {
    let h = harness();
    let s = &h.state;
    let reference = "/?timestamp=1288834975657&datacenter=1&worker=1&sequence=0";
    let (status, html) = send(s, "GET", reference, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(r#"<output id="id-value" class="id">4194439168</output>"#));
    assert!(html.contains("= (1000 &lt;&lt; 22) | (1 &lt;&lt; 17) | (1 &lt;&lt; 12) | 0"));
    assert!(html.contains("= 4194304000 | 131072 | 4096 | 0"));
    assert!(html.contains(r#"aria-label="Timestamp: 00000000000000000000000000000001111101000""#));
    assert!(html.contains(r#"<html lang="en">"#));
    assert!(
        !html.contains("style=\"") && !html.contains("<script>"),
        "no inline style or script (CSP)"
    );
    let (_, decoded) = send(s, "GET", "/?id=fa021000&from=hex", &[]).await;
    assert!(decoded.contains(">4194439168</output>"));

    // Inline error naming the range; the rest of the page still renders.
    let out_of_range = "/?timestamp=1288834975657&datacenter=32&worker=1&sequence=0";
    let (status, html) = send(s, "GET", out_of_range, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains(
            r#"<p class="error" id="datacenter-error">datacenter must be 0..=31, got 32</p>"#
        ),
        "{html}"
    );
    assert!(html.contains(r#"id="datacenter" name="datacenter" value="32""#));
    assert!(html.contains(r#"aria-invalid="true""#));
    assert!(html.contains("Limits of the format"));

    // User input is escaped everywhere.
    let script = "/?timestamp=%3Cscript%3Ealert(1)%3C/script%3E&datacenter=%22%3E";
    let (_, html) = send(s, "GET", script, &[]).await;
    assert!(!html.contains("<script>alert"), "unescaped input");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[tokio::test]
async fn the_page_speaks_bokmal() {
    let h = harness();
    let s = &h.state;
    for (uri, headers) in [
        ("/?lang=nb", vec![]),
        ("/", vec![("accept-language", "nb-NO,nb;q=0.9,en;q=0.8")]),
        ("/", vec![("accept-language", "no")]),
    ] {
        let (_, html) = send(s, "GET", uri, &headers).await;
        assert!(html.contains(r#"<html lang="nb">"#), "{uri} {headers:?}");
        assert!(html.contains("Formatets grenser"));
        assert!(html.contains(">English</a>"));
    }
    let (_, html) = send(s, "GET", "/?lang=en", &[("accept-language", "nb")]).await;
    assert!(html.contains(r#"<html lang="en">"#));
    let (_, html) = send(s, "GET", "/?lang=nb&datacenter=32", &[]).await;
    assert!(
        html.contains("Datasenter-ID-en må være et heltall i 0..=31, fikk «32»"),
        "{html}"
    );
    assert!(html.contains(r#"<input type="hidden" name="lang" value="nb">"#));
    assert!(html.contains(r#"href="/?lang=en&amp;datacenter=32""#));
    // A language the page does not have: refused, named, in the language
    // Accept-Language chose; not silently English.
    for (accept, said) in [("", "lang"), ("nb", "lang")] {
        let (status, _, html) = send_full(
            s,
            "GET",
            "/?lang=xx&datacenter=1",
            &[("accept-language", accept)],
        )
        .await;
        assert_eq!(status, 400, "{html}");
        assert!(
            html.contains("xx") && html.contains(said) && html.contains("en, nb"),
            "{html}"
        );
    }
    let (status, _, _) = send_full(s, "GET", "/?lang=", &[]).await;
    assert_eq!(status, 200, "an empty lang is no choice");
}

#[tokio::test]
async fn assets_are_embedded() {
    let h = harness();
    let (status, css) = send(&h.state, "GET", "/assets/app.css", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(css.contains("prefers-color-scheme: dark"));
    let response = app(h.state.clone())
        .oneshot(Request::get("/assets/app.js").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
}
