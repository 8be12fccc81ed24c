//! The error shape: unknown routes and methods, awkward input, over-limit heads and bodies.

use crate::support::*;

#[tokio::test]
async fn unknown_routes_and_methods_answer_json() {
    let h = harness();
    for (method, uri, status) in [
        ("GET", "/nope", StatusCode::NOT_FOUND),
        ("GET", "/api/v1/decode", StatusCode::NOT_FOUND),
        ("DELETE", "/api/v1/compose", StatusCode::METHOD_NOT_ALLOWED),
        ("POST", "/healthz", StatusCode::METHOD_NOT_ALLOWED),
        ("GET", "/assets/secret.txt", StatusCode::NOT_FOUND),
    ] {
        error(&h.state, method, uri, status, None).await;
    }
}

/// A small deterministic generator of awkward inputs.
fn nasty_inputs() -> Vec<String> {
    let mut inputs: Vec<String> = [
        "",
        " ",
        "0",
        "-0",
        "+",
        "-",
        "1e3",
        "0x10",
        "١٢",
        "%",
        "%%",
        "%zz",
        "%00",
        "%FF",
        "%C3%28",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "340282366920938463463374607431768211456",
        "nan",
        "inf",
        "null",
        "true",
        "[]",
        "{}",
        "%3Cscript%3E",
        "'%22",
        "..%2F..%2Fetc%2Fpasswd",
        "now",
        "NOW",
        "2080-07-10T17:30:30.208Z",
        "2010-02-30",
        "9999-12-31T23:59:59.999+23:59",
        "T",
        "--",
        "::",
        "1%2C2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    inputs.push("9".repeat(5000));
    inputs.push("%41".repeat(3000));
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..40 {
        let mut s = String::new();
        for _ in 0..(x % 24) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = (x % 94 + 33) as u8;
            // Keep the URI parseable: escape what would end or break it.
            match b {
                b'#' | b'?' | b'/' | b'&' | b'=' | b'%' | b'+' | b'\\' | b'"' | b'<' | b'>'
                | b'^' | b'`' | b'{' | b'|' | b'}' => {
                    s.push_str(&format!("%{b:02X}"));
                }
                _ => s.push(b as char),
            }
        }
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        inputs.push(s);
    }
    inputs
}

#[tokio::test]
async fn no_input_yields_a_server_error() {
    let h = harness();
    // Request lines, `{}` where an input goes.
    let templates = [
        "GET /api/v1/compose?timestamp={}&datacenter=1&worker=1&sequence=0",
        "GET /api/v1/compose?timestamp=1288834975657&datacenter={}&worker={}&sequence={}",
        "GET /api/v1/compose?{}",
        "GET /api/v1/decode/{}",
        "GET /api/v1/decode/1?from={}",
        "GET /api/v1/decode/{}?from=base32",
        "POST /api/v1/ids?count={}",
        "POST /api/v1/ids?{}",
        "GET /?timestamp={}&datacenter={}&worker=0&sequence={}&lang={}",
        "GET /?id={}&from={}",
        "GET /?at={}",
        "GET /{}",
        "PUT /api/v1/ids?count={}",
    ];
    let mut checked = 0;
    for line in templates {
        let (method, template) = line.split_once(' ').unwrap();
        for input in nasty_inputs() {
            let uri = template.replace("{}", &input);
            if Request::builder().uri(&uri).body(()).is_err() {
                continue; // not a URI at all: never reaches the server
            }
            let (status, body) = send(&h.state, method, &uri, &[]).await;
            assert!(
                !status.is_server_error(),
                "{method} {uri} -> {status}: {body}"
            );
            if status.is_client_error() && body.starts_with("<!DOCTYPE html>") {
                // The page refuses a query with the error in place.
                assert!(body.contains(r#"id="query-error" role="alert""#), "{uri}");
            } else if status.is_client_error() {
                let v: Value = serde_json::from_str(&body)
                    .unwrap_or_else(|_| panic!("{method} {uri}: {body}"));
                assert!(
                    v["error"].is_string() && (v["field"].is_string() || v["field"].is_null()),
                    "{body}"
                );
                assert!(
                    !body.contains("rejection") && !body.contains("panicked"),
                    "{body}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 500, "only {checked} inputs were valid URIs");
}

#[tokio::test]
async fn request_bodies_are_refused_with_413_in_the_error_shape() {
    let h = harness();
    let declared = |length| [("content-length", length)];
    let (status, body) = send(&h.state, "POST", "/api/v1/ids?count=1", &declared("2000")).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({"error": "request bodies are limited to 1024 bytes (the API takes none), got 2000",
               "field": null})
    );
    // A small body is let through (and ignored).
    let (status, _) = send(&h.state, "POST", "/api/v1/ids?count=1", &declared("10")).await;
    assert_eq!(status, StatusCode::OK);
    // A body of undeclared length is measured as it arrives.
    for (len, expected) in [(2000, StatusCode::PAYLOAD_TOO_LARGE), (10, StatusCode::OK)] {
        let request = Request::builder()
            .method("POST")
            .uri("/api/v1/ids?count=1")
            .body(Body::new(Undeclared::of(len)))
            .unwrap();
        let response = app(h.state.clone()).oneshot(request).await.unwrap();
        assert_eq!(response.status(), expected, "{len} bytes");
        if expected == StatusCode::PAYLOAD_TOO_LARGE {
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            assert_eq!(
                serde_json::from_slice::<Value>(&bytes).unwrap(),
                json!({"error": "request bodies are limited to 1024 bytes (the API takes none), got more",
                       "field": null})
            );
        }
    }
}

#[tokio::test]
async fn a_bad_asset_path_answers_in_the_error_shape() {
    let h = harness();
    let (status, headers, body) = send_full(&h.state, "GET", "/assets/%FF", &[]).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    error_shape("/assets/%FF", &body);
}

#[tokio::test]
async fn over_limit_heads_and_bodies_answer_414_431_413_in_the_error_shape() {
    let served = Served::start_static().await;
    let long_path = format!(
        "/api/v1/decode/{}",
        "1".repeat(snowmint_server::MAX_URI_BYTES)
    );
    let big_header = "x".repeat(snowmint_server::MAX_HEADER_BYTES);
    let many_headers: String = (0..90)
        .map(|i| format!("x-filler-{i}: {}\r\n", "y".repeat(200)))
        .collect();
    for (expected, request) in [
        (414, format!("GET {long_path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")),
        (431, format!("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: {big_header}\r\nConnection: close\r\n\r\n")),
        (431, format!("GET /healthz HTTP/1.1\r\nHost: a\r\n{many_headers}Connection: close\r\n\r\n")),
        (413, "POST /api/v1/ids HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n".to_owned()),
        // Chunked, no Content-Length: five chunks of 256 bytes.
        (413, format!(
            "POST /api/v1/ids HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{}0\r\n\r\n",
            format!("100\r\n{}\r\n", "x".repeat(256)).repeat(5)
        )),
        (404, "GET /nope HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_owned()),
        (405, "PUT /api/v1/ids HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()),
        (400, "GET /assets/%FF HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_owned()),
        // Past hyper's own limits, which it answers itself before the
        // router sees the request: a 70 KB target (its limit is 65,534
        // bytes), more than 100 header fields, a head over its buffer, a
        // head that is not HTTP.
        (414, format!("GET /api/v1/decode/{} HTTP/1.1\r\nHost: a\r\n\r\n", "1".repeat(70_000))),
        (431, format!("GET /healthz HTTP/1.1\r\nHost: a\r\n{}\r\n", "x-f: 1\r\n".repeat(120))),
        (431, format!("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: {}\r\n\r\n", "x".repeat(500_000))),
        (400, "GET / HTTP/1.1\r\nHost: a\r\nbad header line\r\n\r\n".to_owned()),
    ] {
        let (status, head, body) = raw_request(served.addr, &request).await;
        assert_eq!(status, expected, "{head}\n{body}");
        assert!(
            head.to_ascii_lowercase().contains("content-type: application/json"),
            "{expected}: {head}"
        );
        assert_head_is_guarded(&head);
        let message = error_shape(&expected.to_string(), &body);
        if expected == 414 || expected == 431 {
            assert!(message.contains("at most"), "{message}");
        }
    }
    // Just under the limits is served.
    // (Padded with leading zeros: an unknown parameter would be refused.)
    let fits = format!(
        "/api/v1/decode/{}4194439168",
        "0".repeat(snowmint_server::MAX_URI_BYTES - 40)
    );
    let (status, head, _) = raw_request(
        served.addr,
        &format!("GET {fits} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status, 200, "{head}");
    served.stop().await;
}
