//! `/healthz` and `/readyz`, and readiness while the reservation store fails.

use crate::support::*;

#[tokio::test]
async fn health_readiness_metrics_openapi() {
    let h = harness();
    let s = &h.state;
    assert_eq!(
        json(s, "GET", "/healthz").await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
    assert_eq!(
        json(s, "GET", "/readyz").await,
        (
            StatusCode::OK,
            json!({"status": "ready", "datacenter": 1, "worker": 2})
        )
    );
    json(s, "POST", "/api/v1/ids?count=7").await;
    json(s, "GET", "/api/v1/decode/nope").await;
    let (status, metrics) = send(s, "GET", "/metrics", &[]).await;
    assert_eq!(status, StatusCode::OK);
    for needle in [
        r#"snowmint_http_requests_total{route="/api/v1/ids",method="POST",status="200"} 1"#,
        r#"snowmint_http_requests_total{route="/api/v1/decode/{id}",method="GET",status="400"} 1"#,
        r#"snowmint_http_request_duration_seconds_count{route="/healthz"} 1"#,
        "snowmint_ids_issued_total 7",
        r#"snowmint_identity{datacenter="1",worker="2"} 1"#,
        "snowmint_ready 1",
        "snowmint_generator_",
        "snowmint_log_lines_dropped_total 0",
    ] {
        assert!(metrics.contains(needle), "missing {needle}:\n{metrics}");
    }
    // No Accept: the Prometheus text format, which has no `# EOF`.
    assert!(!metrics.contains("# EOF"), "{metrics}");
    let (status, doc) = json(s, "GET", "/api/v1/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/api/v1/compose",
        "/api/v1/decode/{id}",
        "/api/v1/range",
        "/api/v1/ids",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} missing from the OpenAPI document"
        );
    }
    assert!(doc["paths"]["/api/v1/ids"]["post"]["responses"]["503"].is_object());
    assert!(doc["components"]["schemas"]["Breakdown"].is_object());
}

/// A reservation store whose disk is gone: it loads (no mark), and every
/// write fails with an error naming a path the API must not show.
fn broken_state() -> AppState {
    let store = snowmint::FaultyStore::new();
    store.writes().fail(
        snowmint::StoreErrorKind::Io,
        "cannot write /secret/path/snowmint-7-7.reservation: No space left on device",
    );
    let generator = Generator::builder(7, 7).store(store).build().unwrap();
    AppState::new(Minter::from_generator(generator))
}

#[tokio::test]
async fn a_failing_reservation_answers_503_without_internals() {
    let state = broken_state();
    // Not ready from the first probe on, before any mint has failed: no
    // write has succeeded, and the probe's own write fails.
    for _ in 0..3 {
        let msg = unavailable(&state, "GET", "/readyz").await;
        assert!(msg.starts_with("not ready: "), "{msg}");
        assert!(!msg.contains("secret"), "leaks internals: {msg}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let msg = unavailable(&state, "POST", "/api/v1/ids?count=10").await;
    assert!(msg.contains("reservation could not be saved"), "{msg}");
    assert!(
        !msg.contains("secret") && !msg.contains("No space"),
        "leaks internals: {msg}"
    );
    let (_, metrics) = send(&state, "GET", "/metrics", &[]).await;
    assert!(metrics.contains("snowmint_ids_issued_total 0"), "{metrics}");
    assert!(
        !metrics.contains("snowmint_generator_reservation_failures_total 0\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn readiness_fails_while_the_store_fails_and_comes_back_by_itself() {
    let clock = snowmint::ManualClock::new(1_700_000_000_000);
    let store = snowmint::MemoryStore::new();
    let generator = Generator::builder(7, 7)
        .clock(clock.clone())
        .store(store.clone())
        .build()
        .unwrap();
    let minter = Minter::from_generator(generator);
    let state = AppState::new(minter);
    assert_eq!(
        json(&state, "POST", "/api/v1/ids?count=3").await.0,
        StatusCode::OK
    );
    assert_eq!(json(&state, "GET", "/readyz").await.0, StatusCode::OK);

    // The disk goes away; the next ID needs a new mark.
    store.fail(true);
    clock.advance(10_000);
    unavailable(&state, "POST", "/api/v1/ids").await;
    let msg = unavailable(&state, "GET", "/readyz").await;
    assert_eq!(
        msg,
        "not ready: the reservation could not be saved, so no ID was issued; try again later"
    );
    // Still failing: still not ready, however often it is asked.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            json(&state, "GET", "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    // The disk is back: with no mint at all, readiness returns (the probe
    // itself has a write retried in the background).
    store.fail(false);
    let deadline = Instant::now() + Duration::from_secs(10);
    while json(&state, "GET", "/readyz").await.0 != StatusCode::OK {
        assert!(Instant::now() < deadline, "readiness never came back");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        json(&state, "POST", "/api/v1/ids?count=3").await.0,
        StatusCode::OK
    );
}

/// A store that loads but never takes a write: served over a real socket,
/// `/readyz` answers 503 from the start, without a mint having failed.
#[tokio::test]
async fn a_store_that_refuses_writes_from_the_start_is_never_ready() {
    let served = Served::start(broken_state()).await;
    let client = reqwest::Client::new();
    let base = served.base();
    // For a whole window (four periods of the renewals and probes of an
    // idle instance), never ready.
    let until = Instant::now() + Duration::from_millis(snowmint::DEFAULT_RESERVE_WINDOW_MS);
    while Instant::now() < until {
        let response = fetch(&client, format!("{base}/readyz")).await;
        assert_eq!(response.status(), 503);
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body["error"],
            "not ready: the reservation could not be saved, so no ID was issued; try again later"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let response = post(&client, format!("{base}/api/v1/ids?count=1")).await;
    assert_eq!(response.status(), 503);
    // At shutdown the mark cannot be lowered either: said, not hidden.
    served.stop.send(()).unwrap();
    let err = served.server.await.unwrap().unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot persist the reservation at shutdown: "),
        "{err}"
    );
}

/// One async worker thread: a mint that waits for a slow reservation write
/// must not hold it, or health would wait as long.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_mint_waiting_for_its_reservation_does_not_hold_up_health() {
    let store = snowmint::FaultyStore::new();
    let writes = store.writes();
    writes.delay(Duration::from_secs(3));
    let served = Served::start(patient_state(store)).await;
    let base = served.base();
    let client = reqwest::Client::new();
    let mint = tokio::spawn({
        let (client, base) = (client.clone(), base.clone());
        async move {
            let started = Instant::now();
            let response = post(&client, format!("{base}/api/v1/ids?count=10")).await;
            (response.status(), started.elapsed())
        }
    });
    // The mint's first mark write is under way (and takes 3 s): health,
    // readiness and the page answer while it still waits.
    let began =
        tokio::task::spawn_blocking(move || writes.wait_for_calls(1, Duration::from_secs(60)));
    assert!(began.await.unwrap(), "no reservation write began");
    for path in ["/healthz", "/readyz", "/?id=4194439168"] {
        let response = fetch(&client, format!("{base}{path}")).await;
        // No write has succeeded yet, so readiness says 503; it answers.
        let want = if path == "/readyz" { 503 } else { 200 };
        assert_eq!(response.status(), want, "{path}");
        assert!(
            !mint.is_finished(),
            "{path} was answered only after the mint's write"
        );
    }
    let (status, _took) = mint.await.unwrap();
    assert_eq!(status, 200);
    served.stop().await;
}
