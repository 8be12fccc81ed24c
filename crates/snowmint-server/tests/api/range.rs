//! `GET /api/v1/range`.

use crate::support::Says::*;
use crate::support::*;

/// The contract's formula for the smallest and largest ID of a millisecond.
fn min_of(t: u64) -> u64 {
    (t - 1288834974657) << 22
}

fn max_of(t: u64) -> u64 {
    ((t - 1288834974657) << 22) | 4194303
}

#[tokio::test]
async fn range_answers_the_span_of_ids() {
    let h = harness();
    // The evidence: 2024-01-01T00:00:00Z ..= 2024-02-01T00:00:00Z.
    let (from, to) = (1704067200000u64, 1706745600000u64);
    for uri in [
        "/api/v1/range?from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:00Z".to_owned(),
        format!("/api/v1/range?from={from}&to={to}"),
        format!("/api/v1/range?from={from}&to=2024-02-01T00:00:00.000Z&layout=Twitter"),
    ] {
        let (status, body) = json(&h.state, "GET", &uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert_eq!(
            body,
            json!({
                "from_ms": from,
                "to_ms": to,
                "min": min_of(from).to_string(),
                "max": max_of(to).to_string(),
            }),
            "{uri}"
        );
    }
    // `to` missing is `from`; `from` missing is now.
    let (_, one) = json(&h.state, "GET", &format!("/api/v1/range?from={from}")).await;
    assert_eq!(
        (&one["to_ms"], &one["max"]),
        (&json!(from), &json!(max_of(from).to_string()))
    );
    let (_, now) = json(&h.state, "GET", "/api/v1/range").await;
    assert_eq!(now["from_ms"], REFERENCE_MS);
    assert_eq!(now["min"], min_of(REFERENCE_MS).to_string());
    let (_, now) = json(&h.state, "GET", "/api/v1/range?from=&to=now").await;
    assert_eq!(now["to_ms"], REFERENCE_MS);
    // Other layouts: Discord's epoch, Twitter's widths.
    let (_, discord) = get(
        &h.state,
        &format!("/api/v1/range?from={from}&layout=discord"),
    )
    .await;
    assert_eq!(discord["min"], ((from - 1420070400000) << 22).to_string());
}

#[tokio::test]
async fn range_errors_name_the_field() {
    let h = harness();
    let time = "must be Unix milliseconds or an ISO-8601 time";
    let from_in = format!("from {time} in 1288834974657..=");
    let (from_blank, to_blank, timestamp_blank) = (
        format!("from {time}"),
        format!("to {time}"),
        format!("timestamp {time}"),
    );
    let cases = [
        (
            "/api/v1/range?from=2024-02-01T00:00:00Z&to=2024-01-01T00:00:00Z",
            "to",
            Starts("to must be at or after from 1706745600000"),
        ),
        ("/api/v1/range?from=yesterday", "from", Starts(&from_in)),
        (
            "/api/v1/range?from=now&to=2024-02-30T00:00:00Z",
            "to",
            Starts("to must be"),
        ),
        (
            "/api/v1/range?from=1288834974656",
            "from",
            Ends("before the epoch"),
        ),
        (
            "/api/v1/range?from=now&to=99999999999999999999999",
            "to",
            Starts("to must be"),
        ),
        // Whitespace is not "no time" (only a missing or empty one is
        // the default), as for `count`; in any layout, for compose as
        // well.
        ("/api/v1/range?to=%0D", "to", Starts(&to_blank)),
        ("/api/v1/range?from=%20&to=now", "from", Starts(&from_blank)),
        (
            "/api/v1/range?from=%09%0A&layout=sonyflake",
            "from",
            Starts(&from_blank),
        ),
        (
            "/api/v1/compose?timestamp=%20&datacenter=1&worker=1&sequence=0",
            "timestamp",
            Starts(&timestamp_blank),
        ),
        (
            "/api/v1/compose?layout=discord&timestamp=%0D&worker=1&process=0&increment=7",
            "timestamp",
            Starts(&timestamp_blank),
        ),
        ("/api/v1/range?from=now&layout=flickr", "layout", Is(FLICKR)),
    ];
    refusals(&h.state, "GET", &cases).await;
}
