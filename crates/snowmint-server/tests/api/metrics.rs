//! `GET /metrics`: formats by `Accept`, checked by promtool.

use crate::support::*;

/// What Prometheus 2.x sends in `Accept`.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,\
    application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// `/metrics` speaks the format the client asks for: OpenMetrics to
/// Prometheus (counters named without `_total` in HELP and TYPE, `# EOF`
/// at the end), the text format to everyone else; and the text format
/// passes `promtool check metrics` (Debian's `prometheus` package) with no
/// finding, with every family that a busy instance shows (rejections,
/// latency, connections) present.
#[tokio::test]
async fn metrics_follow_accept_and_pass_promtool() {
    let served = Served::start_with_quota(5).await;
    let client = reqwest::Client::new();
    let base = format!("http://{}", served.addr);
    for uri in [
        "/api/v1/ids?count=3",
        "/api/v1/ids?count=5",
        "/api/v1/ids?count=x",
    ] {
        post(&client, format!("{base}{uri}")).await;
    }
    fetch(&client, format!("{base}/api/v1/decode/1")).await;
    let scrape = |accept: Option<&'static str>| {
        let mut request = client.get(format!("{base}/metrics"));
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 200);
            let content_type = response.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_owned();
            (content_type, response.text().await.unwrap())
        }
    };

    let (content_type, openmetrics) = scrape(Some(PROMETHEUS_ACCEPT)).await;
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");
    assert!(
        openmetrics.contains("# TYPE snowmint_ids_issued counter\n"),
        "{openmetrics}"
    );

    for accept in [
        None,
        Some("*/*"),
        Some("text/plain;version=0.0.4"),
        Some("application/json"),
    ] {
        let (content_type, text) = scrape(accept).await;
        assert_eq!(
            content_type, "text/plain; version=0.0.4; charset=utf-8",
            "{accept:?}"
        );
        assert!(!text.contains("# EOF"), "{text}");
        for needle in [
            "# TYPE snowmint_ids_issued_total counter\nsnowmint_ids_issued_total 3\n",
            "# TYPE snowmint_mints_rejected_total counter\n",
            r#"snowmint_mints_rejected_total{reason="quota"} 1"#,
            "# TYPE snowmint_http_request_duration_seconds histogram\n",
            "# TYPE snowmint_generator_borrowed_seconds gauge\n",
            "# TYPE snowmint_generator_last_issued_timestamp_seconds gauge\n",
            "snowmint_layout_end_timestamp_seconds 3487858230.208\n",
        ] {
            assert!(text.contains(needle), "missing {needle:?}:\n{text}");
        }
        assert!(!text.contains("_ms "), "{text}");
    }

    let (_, text) = scrape(None).await;
    if let Some(findings) = snowmint_testkit::prometheus::check_metrics(&text) {
        assert!(
            findings.is_empty(),
            "promtool check metrics: {findings}\n{text}"
        );
    }
    served.stop().await;
}
