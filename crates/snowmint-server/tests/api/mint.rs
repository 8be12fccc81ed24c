//! `POST /api/v1/ids`: minting, its errors and the client quota.

use crate::support::Says::*;
use crate::support::*;

#[tokio::test]
async fn mint_issues_fresh_increasing_ids() {
    let h = harness();
    let s = &h.state;
    let (status, one) = json(s, "POST", "/api/v1/ids").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["ids"].as_array().unwrap().len(), 1);
    // An empty count means the default, as an empty timestamp does.
    let (status, one) = json(s, "POST", "/api/v1/ids?count=").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["ids"].as_array().unwrap().len(), 1);
    let mut all: Vec<u64> = Vec::new();
    for count in [3, 4096, 1, 4096] {
        let (status, body) = json(s, "POST", &format!("/api/v1/ids?count={count}")).await;
        assert_eq!(status, StatusCode::OK);
        let ids: Vec<u64> = body["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().expect("IDs are strings").parse().unwrap())
            .collect();
        assert_eq!(ids.len(), count);
        all.extend(ids);
    }
    assert!(
        all.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing, hence distinct"
    );
    for id in &all {
        let id = snowmint::SnowflakeId::new(*id).unwrap();
        assert_eq!((id.datacenter(), id.worker()), (1, 2));
    }
    let (_, metrics) = send(s, "GET", "/metrics", &[]).await;
    assert!(
        metrics.contains(&format!("snowmint_ids_issued_total {}", all.len() + 2)),
        "{metrics}"
    );
}

#[tokio::test]
async fn mint_errors() {
    let h = harness();
    let integer = |got: &str| format!("count must be a decimal integer 1..=4096, got {got}");
    let lots = integer(r#""lots""#);
    // Whitespace is not "no count": it is not an integer (only a missing
    // or empty count is the default).
    let (cr, space, tab_lf) = (integer(r#""\r""#), integer(r#"" ""#), integer(r#""\t\n""#));
    let counts = [
        ("0", Is("count must be 1..=4096, got 0")),
        ("4097", Is("count must be 1..=4096, got 4097")),
        ("-3", Is("count must be 1..=4096, got -3")),
        ("lots", Is(&lots)),
        ("%0D", Is(&cr)),
        ("%20", Is(&space)),
        ("%09%0A", Is(&tab_lf)),
    ];
    let cases = counts.map(|(count, says)| (format!("/api/v1/ids?count={count}"), "count", says));
    refusals(&h.state, "POST", &cases).await;
    let (status, one) = json(&h.state, "POST", "/api/v1/ids?count=").await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["ids"].as_array().unwrap().len(), 1, "{one}");
    let not_allowed = StatusCode::METHOD_NOT_ALLOWED;
    let wrong = error(&h.state, "GET", "/api/v1/ids?count=1", not_allowed, None).await;
    assert!(wrong.contains("GET"), "{wrong}");

    // No identity installed: 503, and not ready.
    let empty = AppState::new(Minter::empty());
    let msg = unavailable(&empty, "POST", "/api/v1/ids?count=1").await;
    assert!(msg.contains("no worker identity"), "{msg}");
    unavailable(&empty, "GET", "/readyz").await;

    // A fenced lease (a lease that may have expired) answers 503 with a
    // message about the lease: tests/etcd.rs, against a frozen etcd.
}

/// `--client-quota Q`: a count more than Q can never pass, whatever the
/// wait, so it is a 400 naming `count` and the quota; a count the quota
/// will allow later is a 429 with `Retry-After`, as the contract says.
#[tokio::test]
async fn a_client_quota_answers_400_for_a_count_it_never_allows_and_429_with_retry_after() {
    let served = Served::start_with_quota(10).await;
    let client = reqwest::Client::new();
    let mint = |count: u32| {
        client
            .post(format!("{}/api/v1/ids?count={count}", served.base()))
            .send()
    };
    let response = mint(11).await.unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("retry-after").is_none());
    let body = response.text().await.unwrap();
    let message = error_shape("count=11", &body);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["field"],
        "count"
    );
    assert_eq!(
        message,
        "count must be at most this client's quota of 10 IDs a second (--client-quota), got 11"
    );
    assert_eq!(mint(10).await.unwrap().status(), 200);
    let response = mint(1).await.unwrap();
    assert_eq!(response.status(), 429);
    // One ID comes back within 100 ms: a second, rounded up.
    assert_eq!(response.headers()["retry-after"], "1");
    drop(client);
    served.stop().await;
}
