//! `GET /api/v1/compose` in Twitter's layout.

use crate::support::Says::*;
use crate::support::*;

#[tokio::test]
async fn compose_answers_the_contracts_object() {
    let h = harness();
    let (status, body) = get(&h.state, REFERENCE_COMPOSE).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, reference_object());
    // ISO-8601, whitespace, and a missing timestamp meaning now.
    for uri in [
        "/api/v1/compose?timestamp=2010-11-04T01:42:55.657Z&datacenter=1&worker=1&sequence=0",
        "/api/v1/compose?timestamp=%201288834975657%20&datacenter=%2B1&worker=01&sequence=0",
        "/api/v1/compose?datacenter=1&worker=1&sequence=0",
        "/api/v1/compose?timestamp=&datacenter=1&worker=1&sequence=0",
        "/api/v1/compose?timestamp=now&datacenter=1&worker=1&sequence=0",
    ] {
        answers(&h.state, uri, &reference_object()).await;
    }
    let last = "/api/v1/compose?timestamp=3487858230208&datacenter=31&worker=31&sequence=4095";
    let (_, last) = get(&h.state, last).await;
    assert_eq!(last["id"], "9223372036854775807");
}

#[tokio::test]
async fn compose_errors_name_the_field_and_range() {
    let h = harness();
    let base = "/api/v1/compose?timestamp=1288834975657";
    let at = |timestamp: &str| {
        format!("/api/v1/compose?timestamp={timestamp}&datacenter=1&worker=1&sequence=0")
    };
    let early = ["1288834974657..=3487858230208", "before the epoch"];
    let cases = [
        (
            format!("{base}&datacenter=32&worker=1&sequence=0"),
            "datacenter",
            Is("datacenter must be 0..=31, got 32"),
        ),
        (
            format!("{base}&datacenter=1&worker=-1&sequence=0"),
            "worker",
            Is("worker must be 0..=31, got -1"),
        ),
        (
            format!("{base}&datacenter=1&worker=1&sequence=4096"),
            "sequence",
            Is("sequence must be 0..=4095, got 4096"),
        ),
        (
            format!("{base}&datacenter=x&worker=1&sequence=0"),
            "datacenter",
            Is(r#"datacenter must be a decimal integer 0..=31, got "x""#),
        ),
        (
            format!("{base}&worker=1&sequence=0"),
            "datacenter",
            Has(&["0..=31"]),
        ),
        (at("1288834974656"), "timestamp", Has(&early)),
        (
            at("2080-07-10T17:30:30.209Z"),
            "timestamp",
            Has(&["2080-07-10T17:30:30.208Z"]),
        ),
        (at(&"9".repeat(80)), "timestamp", Shorter(300)),
        // A query string axum itself cannot read still answers in the
        // contract's shape.
        (
            "/api/v1/compose?datacenter=1&datacenter=2".to_owned(),
            "datacenter",
            Has(&["more than once"]),
        ),
    ];
    refusals(&h.state, "GET", &cases).await;
}
