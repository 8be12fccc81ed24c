//! Serving over a real socket: shutdown, half-closes, `Content-Length`, HTTP/2.

use crate::support::*;

#[tokio::test]
async fn serves_over_a_real_socket_and_persists_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let config = static_config(dir.path().join("state"));
    let served = Served::start(static_state(&config).unwrap()).await;
    let client = reqwest::Client::new();
    let base = served.base();
    let body: Value = fetch(&client, format!("{base}{REFERENCE_COMPOSE}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body, reference_object());
    let response = post(&client, format!("{base}/api/v1/ids?count=4096")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["ids"].as_array().unwrap().len(), 4096);
    let last: snowmint::SnowflakeId = body["ids"][4095].as_str().unwrap().parse().unwrap();
    let page = fetch(&client, format!("{base}/?id=4194439168")).await;
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("4194439168"));

    served.stop().await;
    // While serving, the mark is a window ahead; at shutdown it is lowered
    // to the millisecond of the last ID issued, and nothing (no renewal, no
    // probe) raises it again.
    let kept = std::fs::read_to_string(dir.path().join("state/snowmint-0-0.reservation")).unwrap();
    assert_eq!(kept, format!("reserved_until_ms={}\n", last.timestamp_ms()));
    assert!(
        client.get(format!("{base}/healthz")).send().await.is_err(),
        "stopped listening"
    );
}

/// A client that sends its request and then shuts its sending side down
/// (a half-close, as a shell's `printf ... | nc -N` does) still gets its
/// answer, even when the answer has to wait: the end of the request stream
/// is not taken for the client's leaving (hyper's `half_close`; without it
/// hyper looks at the connection while the request waits, finds the end
/// and drops the request unanswered). Here the mint waits for its first
/// reservation write, parked until the client has half-closed.
#[tokio::test]
async fn a_client_that_half_closes_after_its_request_gets_its_answer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let store = snowmint::FaultyStore::new();
    let writes = store.writes();
    writes.park();
    let served = Served::start(patient_state(store)).await;
    let mut stream = tokio::net::TcpStream::connect(served.addr).await.unwrap();
    let request = "POST /api/v1/ids?count=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    // The mint waits for its reservation write; the client half-closes.
    let parked = {
        let writes = writes.clone();
        tokio::task::spawn_blocking(move || writes.wait_for_parked(1, Duration::from_secs(60)))
    };
    assert!(
        parked.await.unwrap(),
        "the mint's reservation write never began"
    );
    stream.shutdown().await.unwrap();
    // Time for the server to see the end of the stream while it waits.
    tokio::time::sleep(Duration::from_millis(200)).await;
    writes.release();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_string(&mut answer))
        .await
        .expect("the server closes the connection after its answer")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let ids: Value = serde_json::from_str(body).unwrap();
    assert_eq!(ids["ids"].as_array().map(Vec::len), Some(2), "{body}");
    served.stop().await;
}

/// Every answer of a known length carries `Content-Length` on the wire,
/// over HTTP/1.1 and HTTP/2: a route whose handler is called directly
/// leaves the header to hyper, one routed through axum sets it itself.
#[tokio::test]
async fn answers_of_known_length_carry_content_length_over_http1_and_http2() {
    let served = Served::start_static().await;
    let requests = [
        ("GET", "/healthz"),
        ("GET", "/readyz"),
        ("POST", "/api/v1/ids?count=3"),
        ("GET", "/api/v1/openapi.json"),
        ("GET", REFERENCE_COMPOSE),
        ("GET", "/"),
        ("GET", "/api/v1/decode/4194439168"),
        ("GET", "/nope"),
        ("DELETE", "/healthz"),
    ];
    for http2 in [false, true] {
        let client = hyper_client::<Body>(http2);
        for (method, path) in requests {
            let request = served.request(method, path, Body::empty());
            let response = client.request(request).await.unwrap();
            let context = format!("{method} {path} (HTTP/2: {http2})");
            let length = response
                .headers()
                .get(header::CONTENT_LENGTH)
                .unwrap_or_else(|| panic!("{context}: no Content-Length"))
                .to_str()
                .unwrap()
                .parse::<usize>()
                .unwrap();
            assert!(
                !response.headers().contains_key(header::TRANSFER_ENCODING),
                "{context}"
            );
            let bytes = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX)
                .await
                .unwrap();
            assert!(!bytes.is_empty(), "{context}");
            assert_eq!(bytes.len(), length, "{context}");
        }
    }
    served.stop().await;
}

/// HTTP/2 with prior knowledge (h2c) over plain TCP, for internal callers.
#[tokio::test]
async fn serves_http2_with_prior_knowledge() {
    let served = Served::start_static().await;
    let client = hyper_client::<Body>(true);
    let request = served.request("POST", "/api/v1/ids?count=3", Body::empty());
    let response = client.request(request).await.unwrap();
    assert_eq!(response.version(), axum::http::Version::HTTP_2);
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["ids"].as_array().unwrap().len(), 3);
    drop(client);
    // A body without Content-Length (HTTP/2 frames) past the limit: 413.
    let client = hyper_client::<Undeclared>(true);
    for (len, expected) in [(5000, StatusCode::PAYLOAD_TOO_LARGE), (10, StatusCode::OK)] {
        let request = served.request("POST", "/api/v1/ids?count=1", Undeclared::of(len));
        let response = client.request(request).await.unwrap();
        assert_eq!(response.status(), expected, "{len} bytes");
    }
    drop(client);
    served.stop().await;
}
