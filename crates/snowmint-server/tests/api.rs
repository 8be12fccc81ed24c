//! The HTTP contract, through the router (no socket) and over a real socket.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use snowmint::Generator;
use snowmint_server::{AppState, Config, IdentitySource, Minter, app, static_state};
use tower::ServiceExt;

const REFERENCE_MS: u64 = 1288834975657;

struct Harness {
    state: AppState,
    _dir: tempfile::TempDir,
}

/// The configuration of `serve` with the default static identity and its
/// state in `state_dir`.
fn static_config(state_dir: std::path::PathBuf) -> Config {
    let mut config = Config::default();
    config.identity_source = IdentitySource::Static {
        identity: snowmint::Identity::default(),
        state_dir,
    };
    config
}

/// The static identity (datacenter 1, worker 2) with "now" fixed at the
/// reference time.
fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.identity_source = IdentitySource::Static {
        identity: snowmint::Identity::new(1, 2).unwrap(),
        state_dir: dir.path().to_owned(),
    };
    let state = static_state(&config)
        .unwrap()
        .with_now(Arc::new(|| REFERENCE_MS));
    Harness { state, _dir: dir }
}

async fn send(
    state: &AppState,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = app(state.clone())
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn json(state: &AppState, method: &str, uri: &str) -> (StatusCode, Value) {
    let (status, body) = send(state, method, uri, &[]).await;
    let value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("{method} {uri}: not JSON ({e}): {body}"));
    (status, value)
}

/// Asserts the contract's error shape and returns the message.
async fn error(
    state: &AppState,
    method: &str,
    uri: &str,
    status: StatusCode,
    field: Option<&str>,
) -> String {
    let (got, body) = json(state, method, uri).await;
    assert_eq!(got, status, "{method} {uri}: {body}");
    let obj = body.as_object().unwrap();
    assert_eq!(obj.len(), 2, "{body}");
    assert_eq!(body["field"], json!(field), "{method} {uri}: {body}");
    body["error"].as_str().unwrap().to_owned()
}

/// [`snowmint_server::run`] on a real socket, until [`Served::stop`].
struct Served {
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), snowmint_server::RunError>>,
}

impl Served {
    async fn start(state: AppState) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(snowmint_server::run(listener, state, async {
            let _ = stopped.await;
        }));
        Served { addr, stop, server }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Shuts down; the server must stop cleanly.
    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.server.await.unwrap().expect("clean shutdown");
    }
}

fn reference_object() -> Value {
    json!({"id": "4194439168", "timestamp_ms": 1288834975657u64, "delta_ms": 1000,
        "time": "2010-11-04T01:42:55.657Z", "datacenter": 1, "worker": 1, "sequence": 0,
        "binary": "0000000000000000000000000000000011111010000000100001000000000000",
        "segments": [
            {"name": "sign", "bits": 1, "value": 0, "binary": "0"},
            {"name": "timestamp", "bits": 41, "value": 1000, "binary": "00000000000000000000000000000001111101000"},
            {"name": "datacenter", "bits": 5, "value": 1, "binary": "00001"},
            {"name": "worker", "bits": 5, "value": 1, "binary": "00001"},
            {"name": "sequence", "bits": 12, "value": 0, "binary": "000000000000"}]})
}

#[tokio::test]
async fn compose_answers_the_contracts_object() {
    let h = harness();
    let (status, body) = json(
        &h.state,
        "GET",
        "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0",
    )
    .await;
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
        let (status, body) = json(&h.state, "GET", uri).await;
        assert_eq!(
            (status, body),
            (StatusCode::OK, reference_object()),
            "{uri}"
        );
    }
    let (_, last) = json(
        &h.state,
        "GET",
        "/api/v1/compose?timestamp=3487858230208&datacenter=31&worker=31&sequence=4095",
    )
    .await;
    assert_eq!(last["id"], "9223372036854775807");
}

#[tokio::test]
async fn compose_errors_name_the_field_and_range() {
    let h = harness();
    let s = &h.state;
    let base = "/api/v1/compose?timestamp=1288834975657";
    let bad = StatusCode::BAD_REQUEST;
    assert_eq!(
        error(
            s,
            "GET",
            &format!("{base}&datacenter=32&worker=1&sequence=0"),
            bad,
            Some("datacenter")
        )
        .await,
        "datacenter must be 0..=31, got 32"
    );
    assert_eq!(
        error(
            s,
            "GET",
            &format!("{base}&datacenter=1&worker=-1&sequence=0"),
            bad,
            Some("worker")
        )
        .await,
        "worker must be 0..=31, got -1"
    );
    assert_eq!(
        error(
            s,
            "GET",
            &format!("{base}&datacenter=1&worker=1&sequence=4096"),
            bad,
            Some("sequence")
        )
        .await,
        "sequence must be 0..=4095, got 4096"
    );
    assert_eq!(
        error(
            s,
            "GET",
            &format!("{base}&datacenter=x&worker=1&sequence=0"),
            bad,
            Some("datacenter")
        )
        .await,
        r#"datacenter must be a decimal integer 0..=31, got "x""#
    );
    let missing = error(
        s,
        "GET",
        &format!("{base}&worker=1&sequence=0"),
        bad,
        Some("datacenter"),
    )
    .await;
    assert!(missing.contains("0..=31"), "{missing}");
    let early = error(
        s,
        "GET",
        "/api/v1/compose?timestamp=1288834974656&datacenter=1&worker=1&sequence=0",
        bad,
        Some("timestamp"),
    )
    .await;
    assert!(
        early.contains("1288834974657..=3487858230208") && early.contains("before the epoch"),
        "{early}"
    );
    let late = error(
        s,
        "GET",
        "/api/v1/compose?timestamp=2080-07-10T17:30:30.209Z&datacenter=1&worker=1&sequence=0",
        bad,
        Some("timestamp"),
    )
    .await;
    assert!(late.contains("2080-07-10T17:30:30.208Z"), "{late}");
    let wide = error(
        s,
        "GET",
        &format!(
            "/api/v1/compose?timestamp={}&datacenter=1&worker=1&sequence=0",
            "9".repeat(80)
        ),
        bad,
        Some("timestamp"),
    )
    .await;
    assert!(wide.len() < 300, "long input is not echoed whole: {wide}");
    // A query string axum itself cannot read still answers in the contract's shape.
    let dup = error(
        s,
        "GET",
        "/api/v1/compose?datacenter=1&datacenter=2",
        bad,
        Some("datacenter"),
    )
    .await;
    assert!(dup.contains("more than once"), "{dup}");
}

/// A parameter given twice is refused naming it, on every route with a
/// query (as the page does), never silently read as the first or the last.
#[tokio::test]
async fn a_repeated_parameter_is_named() {
    let h = harness();
    for (uri, name) in [
        (
            "/api/v1/compose?datacenter=1&worker=1&sequence=0&datacenter=2",
            "datacenter",
        ),
        ("/api/v1/decode/4194439168?from=hex&from=decimal", "from"),
        ("/api/v1/range?from=now&to=now&to=now", "to"),
        ("/api/v1/compose?layout=discord&layout=twitter", "layout"),
        // With a layout named, the field repeated, not `layout` (which
        // Twitter's parameters once lacked), is named.
        (
            "/api/v1/compose?layout=twitter&datacenter=1&worker=1&sequence=0&sequence=1",
            "sequence",
        ),
        (
            "/api/v1/compose?timestamp=0&timestamp=1&layout=",
            "timestamp",
        ),
    ] {
        let message = error(&h.state, "GET", uri, StatusCode::BAD_REQUEST, Some(name)).await;
        assert_eq!(
            message,
            format!("{name} is given more than once in the query; give it once")
        );
    }
    // Another layout's field given twice is named by the core, not taken
    // for a parameter Twitter's layout lacks (`layout`, `process`).
    let message = error(
        &h.state,
        "GET",
        "/api/v1/compose?layout=discord&timestamp=1462015105796&worker=1&worker=2&process=0&increment=7",
        StatusCode::BAD_REQUEST,
        Some("worker"),
    )
    .await;
    assert_eq!(message, "worker is given more than once");
}

/// An unknown parameter (a typo) is refused naming it and what the route
/// takes, on every route, never dropped: `To` for `to` once answered a
/// one-millisecond range.
#[tokio::test]
async fn an_unknown_parameter_is_refused_naming_it() {
    let h = harness();
    let message = error(
        &h.state,
        "GET",
        "/api/v1/range?from=2024-01-01&To=2024-02-01",
        StatusCode::BAD_REQUEST,
        Some("To"),
    )
    .await;
    assert_eq!(
        message,
        r#"unknown parameter "To": this route takes only from, to, layout"#
    );
    for (method, uri, name) in [
        (
            "GET",
            "/api/v1/compose?datacenter=1&worker=1&sequence=0&sequense=1",
            "sequense",
        ),
        (
            "GET",
            "/api/v1/compose?layout=twitter&datacenter=1&worker=1&sequence=0&process=1",
            "process",
        ),
        ("GET", "/api/v1/decode/4194439168?form=hex", "form"),
        ("GET", "/api/v1/sql?dialect=postgres&prefx=a_", "prefx"),
        ("GET", "/api/v1/layout?layuot=discord", "layuot"),
        ("GET", "/api/v1/detect?ids=1&id=2", "id"),
        ("POST", "/api/v1/ids?cont=3", "cont"),
        ("GET", "/api/v1/openapi.json?v=1", "v"),
        ("GET", "/healthz?probe", "probe"),
        ("GET", "/readyz?probe=1", "probe"),
        ("GET", "/metrics?x=", "x"),
    ] {
        let message = error(&h.state, method, uri, StatusCode::BAD_REQUEST, Some(name)).await;
        assert!(
            message.starts_with(&format!("unknown parameter \"{name}\": this route takes ")),
            "{uri}: {message}"
        );
    }
    let message = error(
        &h.state,
        "GET",
        "/healthz?probe",
        StatusCode::BAD_REQUEST,
        Some("probe"),
    )
    .await;
    assert!(message.ends_with("takes no parameters"), "{message}");
    // The document says so.
    let (_, doc) = json(&h.state, "GET", "/api/v1/openapi.json").await;
    let description = doc["info"]["description"].as_str().unwrap();
    assert!(
        description.contains("a query parameter an operation does not list"),
        "{description}"
    );
    let range_400 = doc["paths"]["/api/v1/range"]["get"]["responses"]["400"]["description"]
        .as_str()
        .unwrap();
    assert!(
        range_400.contains("a parameter this route does not take"),
        "{range_400}"
    );
    // Another layout's parameters are its fields: the core names a stranger.
    let message = error(
        &h.state,
        "GET",
        "/api/v1/compose?layout=discord&timestamp=1462015105796&worker=1&process=0&increment=0&datacenter=1",
        StatusCode::BAD_REQUEST,
        Some("datacenter"),
    )
    .await;
    assert!(message.contains("datacenter"), "{message}");
}

#[tokio::test]
async fn decode_reads_decimal_hex_and_base32() {
    let h = harness();
    for uri in [
        "/api/v1/decode/4194439168",
        "/api/v1/decode/fa021000?from=hex",
        "/api/v1/decode/0xFA021000?from=HEX",
        "/api/v1/decode/0000003x04400?from=base32",
        "/api/v1/decode/4194439168?from=decimal",
    ] {
        let (status, body) = json(&h.state, "GET", uri).await;
        assert_eq!(
            (status, body),
            (StatusCode::OK, reference_object()),
            "{uri}"
        );
    }
    let (_, max) = json(&h.state, "GET", "/api/v1/decode/9223372036854775807").await;
    assert_eq!(max["timestamp_ms"], 3487858230208u64);
}

#[tokio::test]
async fn decode_errors() {
    let h = harness();
    let s = &h.state;
    let bad = StatusCode::BAD_REQUEST;
    assert_eq!(
        error(s, "GET", "/api/v1/decode/-1", bad, Some("id")).await,
        "id must be 0..=9223372036854775807, got -1"
    );
    assert_eq!(
        error(s, "GET", "/api/v1/decode/%FF%FE", bad, Some("id")).await,
        "id must be a decimal integer 0..=9223372036854775807, got \"\u{FFFD}\""
    );
    assert!(
        error(s, "GET", "/api/v1/decode/%FF?from=hex", bad, Some("id"))
            .await
            .starts_with("id must be hexadecimal")
    );
    assert!(
        error(
            s,
            "GET",
            "/api/v1/decode/9223372036854775808",
            bad,
            Some("id")
        )
        .await
        .ends_with("the sign bit is set")
    );
    assert!(
        error(
            s,
            "GET",
            "/api/v1/decode/18446744073709551616",
            bad,
            Some("id")
        )
        .await
        .ends_with("more than 64 bits")
    );
    assert_eq!(
        error(s, "GET", "/api/v1/decode/abc", bad, Some("id")).await,
        r#"id must be a decimal integer 0..=9223372036854775807, got "abc""#
    );
    assert!(
        error(s, "GET", "/api/v1/decode/xyz?from=hex", bad, Some("id"))
            .await
            .contains("hexadecimal")
    );
    assert_eq!(
        error(s, "GET", "/api/v1/decode/1?from=octal", bad, Some("from")).await,
        r#"from must be one of decimal, hex, base32, got "octal""#
    );
    // Whitespace is not "no form" (only a missing or empty one is
    // decimal); around a name it is forgiven.
    assert_eq!(
        error(s, "GET", "/api/v1/decode/1?from=%20", bad, Some("from")).await,
        r#"from must be one of decimal, hex, base32, got " ""#
    );
    assert_eq!(
        json(s, "GET", "/api/v1/decode/f?from=%20hex%20").await.0,
        StatusCode::OK
    );
    error(s, "GET", "/api/v1/decode/", StatusCode::NOT_FOUND, None).await;
}

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
    // The issue's evidence: 2024-01-01T00:00:00Z ..= 2024-02-01T00:00:00Z.
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
    let (_, discord) = json(
        &h.state,
        "GET",
        &format!("/api/v1/range?from={from}&layout=discord"),
    )
    .await;
    assert_eq!(discord["min"], ((from - 1420070400000) << 22).to_string());
}

#[tokio::test]
async fn range_errors_name_the_field() {
    let h = harness();
    let s = &h.state;
    let bad = StatusCode::BAD_REQUEST;
    let msg = error(
        s,
        "GET",
        "/api/v1/range?from=2024-02-01T00:00:00Z&to=2024-01-01T00:00:00Z",
        bad,
        Some("to"),
    )
    .await;
    assert!(
        msg.starts_with("to must be at or after from 1706745600000"),
        "{msg}"
    );
    let msg = error(s, "GET", "/api/v1/range?from=yesterday", bad, Some("from")).await;
    assert!(
        msg.starts_with("from must be Unix milliseconds or an ISO-8601 time in 1288834974657..="),
        "{msg}"
    );
    let msg = error(
        s,
        "GET",
        "/api/v1/range?from=now&to=2024-02-30T00:00:00Z",
        bad,
        Some("to"),
    )
    .await;
    assert!(msg.starts_with("to must be"), "{msg}");
    let msg = error(
        s,
        "GET",
        "/api/v1/range?from=1288834974656",
        bad,
        Some("from"),
    )
    .await;
    assert!(msg.ends_with("before the epoch"), "{msg}");
    let msg = error(
        s,
        "GET",
        "/api/v1/range?from=now&to=99999999999999999999999",
        bad,
        Some("to"),
    )
    .await;
    assert!(msg.starts_with("to must be"), "{msg}");
    // Whitespace is not "no time" (only a missing or empty one is the
    // default), as for `count`; in any layout, for compose as well.
    for (uri, field) in [
        ("/api/v1/range?to=%0D", "to"),
        ("/api/v1/range?from=%20&to=now", "from"),
        ("/api/v1/range?from=%09%0A&layout=sonyflake", "from"),
        (
            "/api/v1/compose?timestamp=%20&datacenter=1&worker=1&sequence=0",
            "timestamp",
        ),
        (
            "/api/v1/compose?layout=discord&timestamp=%0D&worker=1&process=0&increment=7",
            "timestamp",
        ),
    ] {
        let msg = error(s, "GET", uri, bad, Some(field)).await;
        assert!(
            msg.starts_with(&format!(
                "{field} must be Unix milliseconds or an ISO-8601 time"
            )),
            "{uri}: {msg}"
        );
    }
    let msg = error(
        s,
        "GET",
        "/api/v1/range?from=now&layout=flickr",
        bad,
        Some("layout"),
    )
    .await;
    assert_eq!(
        msg,
        "invalid layout: \"flickr\" is neither a preset (twitter, discord, instagram, sonyflake, \
         mastodon) nor a spec like \
         epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12"
    );
}

/// `GET /api/v1/sql`: the same script `snowmint sql` prints (the CLI's
/// tests load it into real databases), as text; bad input names its
/// parameter.
#[tokio::test]
async fn sql_answers_the_script_as_text() {
    let h = harness();
    let s = &h.state;
    for (query, dialect, layout, prefix) in [
        ("dialect=postgres", "postgres", "twitter", "snowflake_"),
        (
            "dialect=mysql&layout=instagram",
            "mysql",
            "instagram",
            "snowflake_",
        ),
        (
            "dialect=SQLite&layout=sonyflake&prefix=sf_",
            "sqlite",
            "sonyflake",
            "sf_",
        ),
        (
            "dialect=postgres&layout=&prefix=",
            "postgres",
            "twitter",
            "snowflake_",
        ),
    ] {
        let request = Request::get(format!("/api/v1/sql?{query}"))
            .body(Body::empty())
            .unwrap();
        let response = app(s.clone()).oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{query}");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = String::from_utf8(bytes.to_vec()).unwrap();
        let want = snowmint::sql::functions(
            dialect.parse().unwrap(),
            &snowmint::Layout::by_name(layout).unwrap(),
            &snowmint::sql::Options {
                prefix,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(body, want, "{query}");
    }
    let bad = StatusCode::BAD_REQUEST;
    let msg = error(s, "GET", "/api/v1/sql?dialect=oracle", bad, Some("dialect")).await;
    assert_eq!(
        msg,
        r#"dialect must be postgres, mysql or sqlite, got "oracle""#
    );
    let msg = error(s, "GET", "/api/v1/sql", bad, Some("dialect")).await;
    assert_eq!(msg, r#"dialect must be postgres, mysql or sqlite, got """#);
    let msg = error(
        s,
        "GET",
        "/api/v1/sql?dialect=mysql&prefix=x%27%3B%20DROP%20TABLE%20t%3B",
        bad,
        Some("prefix"),
    )
    .await;
    assert!(
        msg.starts_with("prefix must be a plain SQL identifier"),
        "{msg}"
    );
    error(
        s,
        "GET",
        "/api/v1/sql?dialect=mysql&layout=flickr",
        bad,
        Some("layout"),
    )
    .await;
    error(
        s,
        "GET",
        "/api/v1/sql?dialect=mysql&dialect=postgres",
        bad,
        Some("dialect"),
    )
    .await;
}

#[tokio::test]
async fn decode_in_other_layouts() {
    let h = harness();
    // Discord developer docs, Snowflakes: 175928847299117063 is
    // 2016-04-30T11:18:25.796Z, internal worker 1, process 0, increment 7.
    let (status, v) = json(
        &h.state,
        "GET",
        "/api/v1/decode/175928847299117063?layout=discord",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(
        (&v["datacenter"], &v["worker"], &v["sequence"]),
        (&json!(1), &json!(0), &json!(7))
    );
    // "Sharding & IDs at Instagram": 1387263000 ms since 1314220021721,
    // shard 1341, sequence 5001 % 1024, as `ms << 23 | shard << 10 | seq`.
    let instagram = (1387263000u64 << 23) | (1341 << 10) | (5001 % 1024);
    let (_, v) = json(
        &h.state,
        "GET",
        &format!("/api/v1/decode/{instagram}?layout=instagram"),
    )
    .await;
    assert_eq!(v["timestamp_ms"], 1314220021721u64 + 1387263000);
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(1341), &json!(905)));
    assert_eq!(
        v["segments"][0],
        json!({"name": "timestamp", "bits": 41, "value": 1387263000, "binary": format!("{:041b}", 1387263000u64)})
    );
    // sony/sonyflake: `elapsed << 24 | sequence << 16 | machine`, elapsed
    // in 10 ms units since 2014-09-01T00:00:00Z.
    let elapsed = (1704067200000u64 - 1409529600000) / 10;
    let sony = (elapsed << 24) | (3 << 16) | 0x7F7F;
    let (_, v) = json(
        &h.state,
        "GET",
        &format!("/api/v1/decode/{sony}?layout=sonyflake"),
    )
    .await;
    assert_eq!(v["time"], "2024-01-01T00:00:00.000Z");
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(0x7F7F), &json!(3)));
    let names: Vec<&str> = v["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sign", "timestamp", "sequence", "machine"]);
    // docs.joinmastodon.org, Status example: 103270115826048975 created
    // 2019-12-08T03:48:33.901Z (the ID is stamped apart, same second).
    let (_, v) = json(
        &h.state,
        "GET",
        "/api/v1/decode/103270115826048975?layout=MASTODON",
    )
    .await;
    assert!(
        v["time"]
            .as_str()
            .unwrap()
            .starts_with("2019-12-08T03:48:33."),
        "{v}"
    );
    // Every layout answers the same keys as the contract's object.
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&v), keys(&reference_object()));
    // Twitter by default and by name.
    let (_, v) = json(&h.state, "GET", "/api/v1/decode/4194439168?layout=twitter").await;
    assert_eq!(v, reference_object());
    let msg = error(
        &h.state,
        "GET",
        "/api/v1/decode/1?layout=flickr",
        StatusCode::BAD_REQUEST,
        Some("layout"),
    )
    .await;
    assert_eq!(
        msg,
        "invalid layout: \"flickr\" is neither a preset (twitter, discord, instagram, sonyflake, \
         mastodon) nor a spec like \
         epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12"
    );
}

const DISCORD_SPEC: &str =
    "epoch%3D1420070400000%3Bfields%3Dtimestamp%3A42%2Cworker%3A5%2Cprocess%3A5%2Cincrement%3A12";
const SONYFLAKE_SPEC: &str = "epoch%3D2014-09-01T00%3A00%3A00Z%3Bunit%3D10ms%3Bfields%3Dtimestamp%3A39%2Csequence%3A8%2Cmachine%3A16";

#[tokio::test]
async fn a_spec_answers_as_the_preset_it_spells_out() {
    let h = harness();
    for (spec, preset) in [(DISCORD_SPEC, "discord"), (SONYFLAKE_SPEC, "sonyflake")] {
        for uri in [
            "/api/v1/decode/175928847299117063?layout=",
            "/api/v1/range?from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:00Z&layout=",
            "/api/v1/layout?layout=",
        ] {
            let (s1, a) = json(&h.state, "GET", &format!("{uri}{spec}")).await;
            let (s2, b) = json(&h.state, "GET", &format!("{uri}{preset}")).await;
            assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK), "{uri}: {a} {b}");
            assert_eq!(a, b, "{uri}");
        }
    }
}

#[tokio::test]
async fn compose_in_another_layout_takes_its_field_names() {
    let h = harness();
    // Discord's documented example.
    let uri =
        "/api/v1/compose?layout=discord&timestamp=1462015105796&worker=1&process=0&increment=7";
    let (status, v) = json(&h.state, "GET", uri).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["id"], "175928847299117063");
    let names: Vec<&str> = v["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["timestamp", "worker", "process", "increment"]);
    let (_, decoded) = json(
        &h.state,
        "GET",
        "/api/v1/decode/175928847299117063?layout=discord",
    )
    .await;
    assert_eq!(v, decoded);
    let (_, spelled) = json(
        &h.state,
        "GET",
        &uri.replace("layout=discord", &format!("layout={DISCORD_SPEC}")),
    )
    .await;
    assert_eq!(v, spelled);
    // Errors name the parameter at fault.
    let base = "/api/v1/compose?layout=discord&timestamp=1462015105796";
    let msg = error(
        &h.state,
        "GET",
        &format!("{base}&worker=1&process=32&increment=7"),
        StatusCode::BAD_REQUEST,
        Some("process"),
    )
    .await;
    assert_eq!(msg, "process must be 0..=31, got 32");
    let msg = error(
        &h.state,
        "GET",
        &format!("{base}&worker=1&increment=7"),
        StatusCode::BAD_REQUEST,
        Some("process"),
    )
    .await;
    assert_eq!(
        msg,
        "process is missing: this layout needs worker, process and increment"
    );
    let msg = error(
        &h.state,
        "GET",
        &format!("{base}&datacenter=1&worker=1&process=0&increment=7"),
        StatusCode::BAD_REQUEST,
        Some("datacenter"),
    )
    .await;
    assert_eq!(
        msg,
        "datacenter is not a field of this layout; its fields are worker, process and increment"
    );
    let msg = error(
        &h.state,
        "GET",
        "/api/v1/compose?layout=sonyflake&timestamp=1409529599999&machine=1&sequence=0",
        StatusCode::BAD_REQUEST,
        Some("timestamp"),
    )
    .await;
    assert!(
        msg.starts_with("timestamp must be 1409529600000..="),
        "{msg}"
    );
    // A custom layout of one's own.
    let spec = "epoch%3D2020-01-01%3Bfields%3Dtimestamp%3A41%2Cmachine%3A10%2Cseq%3A12";
    let (status, v) = json(
        &h.state,
        "GET",
        &format!("/api/v1/compose?layout={spec}&timestamp=1577836801000&machine=1023&seq=1"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["id"], ((1000u64 << 22) | (1023 << 12) | 1).to_string());
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(1023), &json!(1)));
}

#[tokio::test]
async fn bad_specs_are_400_naming_layout() {
    let h = harness();
    let cases = [
        (
            "epoch%3D0%3Bfields%3Dtimestamp%3A41%2Cw%3A10%2Cs%3A14",
            "the widths add up to 65 bits, more than 64",
        ),
        ("epoch%3D0%3Bfields%3Dw%3A10", "no field is named timestamp"),
        (
            "epoch%3D0%3Bunit%3D0ms%3Bfields%3Dtimestamp%3A41",
            "the time unit must be at least 1 ms",
        ),
        ("fields%3Dtimestamp%3A41", "the epoch is missing"),
        (
            "epoch%3D0%3Bfields%3Dtimestamp%3A41%2CBad%3A3",
            "the field name \"Bad\" must be",
        ),
        ("flickr", "\"flickr\" is neither a preset"),
        // Whitespace is not "no layout" (only a missing or empty one is
        // the default), as for `count`.
        ("%20", "empty: give a preset"),
        ("%0A", "empty: give a preset"),
        ("%09%0D", "empty: give a preset"),
    ];
    for (spec, want) in cases {
        for uri in [
            format!("/api/v1/decode/5?layout={spec}"),
            format!("/api/v1/range?from=now&layout={spec}"),
            format!("/api/v1/compose?layout={spec}&worker=1"),
            format!("/api/v1/layout?layout={spec}"),
            format!("/api/v1/detect?ids=5&layout={spec}"),
            format!("/api/v1/sql?dialect=postgres&layout={spec}"),
        ] {
            let msg = error(
                &h.state,
                "GET",
                &uri,
                StatusCode::BAD_REQUEST,
                Some("layout"),
            )
            .await;
            assert!(
                msg.starts_with("invalid layout: ") && msg.contains(want),
                "{uri}: {msg}"
            );
        }
    }
    // A narrow layout refuses IDs with bits above its fields.
    let msg = error(
        &h.state,
        "GET",
        "/api/v1/decode/1099511627776?layout=epoch%3D0%3Bfields%3Dtimestamp%3A30%2Cnode%3A10",
        StatusCode::BAD_REQUEST,
        Some("id"),
    )
    .await;
    assert!(msg.ends_with("bits above the layout's 40 are set"), "{msg}");
}

#[tokio::test]
async fn the_layout_lab_and_detect() {
    let h = harness();
    let (status, v) = json(&h.state, "GET", "/api/v1/layout").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["layout"], "twitter");
    assert_eq!(v["end"], "2080-07-10T17:30:30.208Z");
    assert_eq!(v["js_safe_until"], "2010-11-28T22:14:18.304Z");
    assert_eq!(v["ids_per_unit"], 4194304);
    assert_eq!(v["now_ms"], REFERENCE_MS);
    // A 10 ms unit against the formula (see the core's lab tests).
    let (_, v) = json(&h.state, "GET", "/api/v1/layout?layout=epoch%3D2020-01-01%3Bunit%3D10ms%3Bfields%3Dtimestamp%3A40%2Cnode%3A8%2Cstep%3A15").await;
    let epoch = 1577836800000u64;
    assert_eq!(v["end_ms"], epoch + ((1u64 << 40) - 1) * 10 + 9);
    assert_eq!(v["js_safe_until_ms"], epoch + ((1u64 << 30) - 1) * 10 + 9);

    // "Now" is the reference time, 2010: one Twitter ID of that second.
    let (status, v) = json(&h.state, "GET", "/api/v1/detect?ids=4194439168,4194439169").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["candidates"][0]["layout"], "twitter", "{v}");
    let keys: Vec<&str> = v["candidates"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 5, "{keys:?}");
    // Discord's epoch is after "now": its times would be in the future.
    let discord = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["layout"] == "discord")
        .unwrap();
    assert!(
        discord["why"].as_str().unwrap().contains("in the future"),
        "{discord}"
    );
    let msg = error(
        &h.state,
        "GET",
        "/api/v1/detect",
        StatusCode::BAD_REQUEST,
        Some("ids"),
    )
    .await;
    assert!(msg.contains("got none"), "{msg}");
    let msg = error(
        &h.state,
        "GET",
        "/api/v1/detect?ids=5,x",
        StatusCode::BAD_REQUEST,
        Some("ids"),
    )
    .await;
    assert!(msg.starts_with("ids: item 2: id must be"), "{msg}");
    let many = vec!["1"; 1001].join(",");
    let msg = error(
        &h.state,
        "GET",
        &format!("/api/v1/detect?ids={many}"),
        StatusCode::BAD_REQUEST,
        Some("ids"),
    )
    .await;
    assert!(msg.ends_with("got 1001"), "{msg}");
}

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
    let bad = StatusCode::BAD_REQUEST;
    assert_eq!(
        error(&h.state, "POST", "/api/v1/ids?count=0", bad, Some("count")).await,
        "count must be 1..=4096, got 0"
    );
    assert_eq!(
        error(
            &h.state,
            "POST",
            "/api/v1/ids?count=4097",
            bad,
            Some("count")
        )
        .await,
        "count must be 1..=4096, got 4097"
    );
    assert_eq!(
        error(&h.state, "POST", "/api/v1/ids?count=-3", bad, Some("count")).await,
        "count must be 1..=4096, got -3"
    );
    assert_eq!(
        error(
            &h.state,
            "POST",
            "/api/v1/ids?count=lots",
            bad,
            Some("count")
        )
        .await,
        r#"count must be a decimal integer 1..=4096, got "lots""#
    );
    // Whitespace is not "no count": it is not an integer (only a missing
    // or empty count is the default).
    for (query, shown) in [
        ("%0D", r#""\r""#),
        ("%20", r#"" ""#),
        ("%09%0A", r#""\t\n""#),
    ] {
        assert_eq!(
            error(
                &h.state,
                "POST",
                &format!("/api/v1/ids?count={query}"),
                bad,
                Some("count")
            )
            .await,
            format!("count must be a decimal integer 1..=4096, got {shown}")
        );
    }
    let (status, one) = json(&h.state, "POST", "/api/v1/ids?count=").await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["ids"].as_array().unwrap().len(), 1, "{one}");
    let wrong = error(
        &h.state,
        "GET",
        "/api/v1/ids?count=1",
        StatusCode::METHOD_NOT_ALLOWED,
        None,
    )
    .await;
    assert!(wrong.contains("GET"), "{wrong}");

    // No identity installed: 503, and not ready.
    let empty = AppState::new(Minter::empty());
    let msg = error(
        &empty,
        "POST",
        "/api/v1/ids?count=1",
        StatusCode::SERVICE_UNAVAILABLE,
        None,
    )
    .await;
    assert!(msg.contains("no worker identity"), "{msg}");
    error(
        &empty,
        "GET",
        "/readyz",
        StatusCode::SERVICE_UNAVAILABLE,
        None,
    )
    .await;

    // A fenced lease (a lease that may have expired) answers 503 with a
    // message about the lease: tests/etcd.rs, against a frozen etcd.
}

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

/// The OpenAPI schemas of the ID object and its segments name exactly the
/// keys the API serializes (the documentation types are written by hand
/// beside the core's types, so this is what keeps them in step), and mark
/// every one of them required.
#[tokio::test]
async fn the_openapi_breakdown_schema_has_the_serialized_keys() {
    let h = harness();
    let (status, doc) = json(&h.state, "GET", "/api/v1/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let breakdown = serde_json::to_value(
        snowmint::compose(1288834975657, 1, 1, 0)
            .unwrap()
            .breakdown(),
    )
    .unwrap();
    let keys = |v: &Value| -> std::collections::BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    };
    let listed = |v: &Value| -> std::collections::BTreeSet<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("not a list: {v}"))
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .collect()
    };
    let schemas = &doc["components"]["schemas"];
    let segment_schema = &schemas["SegmentDoc"];
    let lab =
        serde_json::to_value(snowmint::LayoutReport::new(&snowmint::Layout::TWITTER, 0)).unwrap();
    let detection = serde_json::to_value(snowmint::detect(
        &[snowmint::SnowflakeId::new(4194439168).unwrap()],
        &[],
        REFERENCE_MS,
    ))
    .unwrap();
    let span = serde_json::to_value(
        snowmint::Layout::TWITTER
            .span(1704067200000, 1706745600000)
            .unwrap(),
    )
    .unwrap();
    for (schema, serialized) in [
        (&schemas["Breakdown"], &breakdown),
        (segment_schema, &breakdown["segments"][0]),
        (&schemas["Range"], &span),
        (&schemas["LayoutLab"], &lab),
        (&schemas["FieldDoc"], &lab["fields"][0]),
        (&schemas["Detection"], &detection),
        (&schemas["CandidateDoc"], &detection["candidates"][0]),
    ] {
        assert_eq!(keys(&schema["properties"]), keys(serialized), "{schema}");
        assert_eq!(listed(&schema["required"]), keys(serialized), "{schema}");
    }
    // The parameters a user picks a layout and a span by are documented.
    let params = |path: &str| -> Vec<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(params("/api/v1/decode/{id}"), ["id", "from", "layout"]);
    assert_eq!(params("/api/v1/range"), ["from", "to", "layout"]);
    // And the compose route answers that very object.
    let (_, composed) = json(
        &h.state,
        "GET",
        "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0",
    )
    .await;
    assert_eq!(composed, breakdown);
}

/// The parameters are as strict as the handlers, with numbers and names
/// from the core: required where a missing value is an error, optional where
/// it has a default; ranges, enums, readable tags, and `Retry-After` where
/// the server sends it.
#[tokio::test]
async fn the_openapi_parameters_are_as_strict_as_the_handlers() {
    use snowmint::{Encoding, Field, Layout};
    let h = harness();
    let (_, doc) = json(&h.state, "GET", "/api/v1/openapi.json").await;
    let param = |method: &str, path: &str, name: &str| -> Value {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{method} {path}: no parameter {name}"))
            .clone()
    };
    let range = |field: Field| {
        let (min, max) = Layout::TWITTER.range(field);
        (json!(min), json!(max))
    };
    let bounds = |schema: &Value| (schema["minimum"].clone(), schema["maximum"].clone());
    // Integers: required as the handlers require them, in the core's ranges.
    for (method, path, name, field, required) in [
        (
            "get",
            "/api/v1/compose",
            "datacenter",
            Field::Datacenter,
            true,
        ),
        ("get", "/api/v1/compose", "worker", Field::Worker, true),
        ("get", "/api/v1/compose", "sequence", Field::Sequence, true),
        ("post", "/api/v1/ids", "count", Field::Count, false),
    ] {
        let p = param(method, path, name);
        assert_eq!(p["required"], json!(required), "{p}");
        assert_eq!(p["schema"]["type"], "integer", "{p}");
        assert_eq!(bounds(&p["schema"]), range(field), "{p}");
    }
    assert_eq!(
        bounds(&param("post", "/api/v1/ids", "count")["schema"]),
        (json!(1), json!(snowmint::MAX_BATCH))
    );
    // Times: optional (missing is now, or `from`), Unix ms in the format's
    // range, `now` or ISO-8601.
    for (path, name) in [
        ("/api/v1/compose", "timestamp"),
        ("/api/v1/range", "from"),
        ("/api/v1/range", "to"),
    ] {
        let p = param("get", path, name);
        assert_eq!(p["required"], json!(false), "{p}");
        assert_eq!(p["allowEmptyValue"], json!(true), "{p}");
        let forms = p["schema"]["oneOf"].as_array().unwrap();
        assert_eq!(forms[0]["type"], "integer");
        assert_eq!(bounds(&forms[0]), range(Field::Timestamp));
        assert_eq!(forms[1]["enum"], json!(["now"]));
        assert_eq!(forms[2]["type"], "string");
        assert!(forms[2]["pattern"].is_string());
    }
    // Names: the core's lists, optional with the default named.
    let encodings: Vec<&str> = Encoding::ALL.iter().map(|e| e.name()).collect();
    let from = param("get", "/api/v1/decode/{id}", "from");
    assert_eq!(from["schema"]["enum"], json!(encodings));
    assert_eq!(from["schema"]["default"], "decimal");
    assert_eq!(from["required"], json!(false));
    assert_eq!(from["allowEmptyValue"], json!(true));
    for path in [
        "/api/v1/decode/{id}",
        "/api/v1/range",
        "/api/v1/layout",
        "/api/v1/detect",
    ] {
        let layout = param("get", path, "layout");
        assert_eq!(
            layout["schema"]["anyOf"][0]["enum"],
            json!(Layout::PRESET_NAMES)
        );
        // Its example specs are valid ones.
        for spec in layout["schema"]["anyOf"][1]["examples"].as_array().unwrap() {
            Layout::parse(spec.as_str().unwrap()).unwrap();
        }
        assert_eq!(layout["schema"]["default"], "twitter");
        assert_eq!(layout["required"], json!(false));
        // Each layout's span of times, for a range read in it.
        for l in Layout::PRESETS {
            let (min, max) = l.range(Field::Timestamp);
            assert_eq!(
                layout["schema"]["x-time-span-ms"][l.name()],
                json!([min, max])
            );
        }
    }
    // What `allowEmptyValue` promises: an empty optional value is read as
    // a missing one.
    for uri in [
        "/api/v1/compose?timestamp=&datacenter=1&worker=1&sequence=0",
        "/api/v1/decode/4194439168?from=&layout=",
        "/api/v1/range?from=&to=&layout=",
    ] {
        assert_eq!(json(&h.state, "GET", uri).await.0, StatusCode::OK, "{uri}");
    }
    assert_eq!(
        json(&h.state, "POST", "/api/v1/ids?count=").await.0,
        StatusCode::OK
    );
    // The ID: required, one form per `from` value.
    let id = param("get", "/api/v1/decode/{id}", "id");
    assert_eq!(id["required"], json!(true));
    let titles: Vec<&str> = id["schema"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, encodings);
    // Readable tags, declared with a description.
    let declared: Vec<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let tags = operation["tags"].as_array().unwrap();
            assert_eq!(tags.len(), 1, "{method} {path}");
            assert!(
                declared.contains(&tags[0].as_str().unwrap()),
                "{method} {path}"
            );
        }
    }
    // Every error answer is the one shape; 429 and 503 of a mint say when
    // to come back.
    let mint = &doc["paths"]["/api/v1/ids"]["post"]["responses"];
    for status in ["400", "401", "403", "413", "429", "503"] {
        assert_eq!(
            mint[status]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/ErrorBody",
            "{status}"
        );
    }
    for status in ["429", "503"] {
        assert!(
            mint[status]["headers"]["Retry-After"].is_object(),
            "{status}"
        );
    }
    // The two routes a token guards say so, with the challenge header.
    let metrics = &doc["paths"]["/metrics"]["get"]["responses"];
    for responses in [mint, metrics] {
        assert!(
            responses["401"]["headers"]["WWW-Authenticate"].is_object(),
            "{responses}"
        );
    }
}

/// Every text the document's patterns admit is one the server takes: the
/// ID in each form (read in that form), and ISO-8601 times (in range);
/// texts just past them are not admitted. proptest generates from the
/// patterns as schemathesis does.
mod openapi_patterns {
    use proptest::prelude::*;
    use proptest::string::string_regex;
    use regex::Regex;
    use snowmint::{Encoding, SnowflakeId};

    fn pattern(path: &str, name: &str, index: usize) -> String {
        static DOC: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        let doc = DOC.get_or_init(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let h = super::harness();
                super::json(&h.state, "GET", "/api/v1/openapi.json").await.1
            })
        });
        let schema = if name == "id" { "anyOf" } else { "oneOf" };
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["schema"][schema][index]["pattern"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    const DECODE: &str = "/api/v1/decode/{id}";
    const COMPOSE: &str = "/api/v1/compose";

    /// proptest's generator takes no anchors; every pattern is `^(...)$`.
    fn unanchored(pattern: &str) -> String {
        pattern
            .strip_prefix('^')
            .unwrap()
            .strip_suffix('$')
            .unwrap()
            .to_owned()
    }

    #[test]
    fn id_patterns_admit_exactly_the_ids() {
        for (i, encoding) in Encoding::ALL.into_iter().enumerate() {
            let re = Regex::new(&pattern(DECODE, "id", i)).unwrap();
            for id in [SnowflakeId::MIN, SnowflakeId::MAX] {
                let text = encoding.format(id).to_string();
                assert!(re.is_match(&text), "{encoding:?} {text}");
            }
            // 2^63 in the form.
            let past = match encoding {
                Encoding::Decimal => "9223372036854775808",
                Encoding::Hex => "8000000000000000",
                Encoding::Base32 => "8000000000000",
            };
            assert!(!re.is_match(past), "{encoding:?} {past}");
            assert!(encoding.parse(past).is_err());
        }
    }

    #[test]
    fn iso8601_pattern_admits_no_year_outside_the_range() {
        let re = Regex::new(&pattern(COMPOSE, "timestamp", 2)).unwrap();
        let (min, max) = snowmint::Layout::TWITTER.range(snowmint::Field::Timestamp);
        let (first, last) = (
            snowmint::time::Iso8601(min as i64).to_string(),
            snowmint::time::Iso8601(max as i64).to_string(),
        );
        assert!(!re.is_match(&first) && !re.is_match(&last));
        let year = |t: &str| t[..4].parse::<u32>().unwrap();
        for (y, admitted) in [
            (year(&first), false),
            (year(&first) + 1, true),
            (year(&last) - 1, true),
            (year(&last), false),
        ] {
            for t in [
                format!("{y}-01-01T00:00+23:59"),
                format!("{y}-12-31T23:59:59.999-23:59"),
            ] {
                assert_eq!(re.is_match(&t), admitted, "{t}");
                if admitted {
                    snowmint::parse_timestamp(&t, 0).unwrap();
                }
            }
        }
    }

    proptest! {
        #[test]
        fn generated_ids_are_read_in_their_form(
            (i, text) in (0..3usize).prop_flat_map(|i| {
                (Just(i), string_regex(&unanchored_id(i)).unwrap())
            })
        ) {
            let encoding = Encoding::ALL[i];
            prop_assert!(encoding.parse(&text).is_ok(), "{:?} {}", encoding, text);
        }

        /// What the `layout` pattern admits is read as a spec: taken, or
        /// refused naming what is wrong with it as a layout.
        #[test]
        fn generated_specs_are_taken_or_refused_as_layouts(
            text in string_regex(&unanchored(&layout_spec_pattern())).unwrap()
        ) {
            if let Err(e) = snowmint::Layout::parse(&text) {
                prop_assert!(e.layout_problem().is_some(), "{}: {}", text, e);
                prop_assert_eq!(e.field(), snowmint::Field::Layout);
            }
        }

        #[test]
        fn generated_times_are_in_range(
            text in string_regex(&unanchored(&pattern(COMPOSE, "timestamp", 2))).unwrap()
        ) {
            prop_assert!(snowmint::parse_timestamp(&text, 0).is_ok(), "{}", text);
        }
    }

    /// The document admits every spec the server takes, not only those of
    /// Twitter's epoch: Discord's documented spec, every preset written as
    /// a spec, and a spec written loosely.
    #[test]
    fn the_layout_pattern_admits_specs_of_any_epoch() {
        let re = Regex::new(&layout_spec_pattern()).unwrap();
        let mut specs: Vec<String> = snowmint::Layout::PRESETS
            .iter()
            .map(snowmint::Layout::spec)
            .collect();
        specs
            .push("epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12".into());
        specs.push(" fields = timestamp:32, node:10 ,step:12 ; epoch=2020-01-01 ;unit=1s;".into());
        for spec in specs {
            assert!(snowmint::Layout::parse(&spec).is_ok(), "{spec}");
            assert!(re.is_match(&spec), "{spec}");
        }
    }

    /// The pattern of `layout`'s spec form (the same on every route).
    fn layout_spec_pattern() -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let doc = rt.block_on(async {
            let h = super::harness();
            super::json(&h.state, "GET", "/api/v1/openapi.json").await.1
        });
        let mut patterns = std::collections::BTreeSet::new();
        for (_, item) in doc["paths"].as_object().unwrap() {
            for (_, operation) in item.as_object().unwrap() {
                for p in operation["parameters"].as_array().into_iter().flatten() {
                    if p["name"] == "layout" {
                        let spec = &p["schema"]["anyOf"][1];
                        assert_eq!(spec["title"], "spec");
                        patterns.insert(spec["pattern"].as_str().unwrap().to_owned());
                    }
                }
            }
        }
        assert_eq!(patterns.len(), 1, "{patterns:?}");
        patterns.pop_first().unwrap()
    }

    fn unanchored_id(i: usize) -> String {
        unanchored(&pattern(DECODE, "id", i))
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json() {
    let h = harness();
    error(&h.state, "GET", "/nope", StatusCode::NOT_FOUND, None).await;
    error(
        &h.state,
        "GET",
        "/api/v1/decode",
        StatusCode::NOT_FOUND,
        None,
    )
    .await;
    error(
        &h.state,
        "DELETE",
        "/api/v1/compose",
        StatusCode::METHOD_NOT_ALLOWED,
        None,
    )
    .await;
    error(
        &h.state,
        "POST",
        "/healthz",
        StatusCode::METHOD_NOT_ALLOWED,
        None,
    )
    .await;
    error(
        &h.state,
        "GET",
        "/assets/secret.txt",
        StatusCode::NOT_FOUND,
        None,
    )
    .await;
}

#[tokio::test]
async fn the_page_renders_without_javascript() {
    let h = harness();
    let s = &h.state;
    let (status, html) = send(
        s,
        "GET",
        "/?timestamp=1288834975657&datacenter=1&worker=1&sequence=0",
        &[],
    )
    .await;
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
    let (status, html) = send(
        s,
        "GET",
        "/?timestamp=1288834975657&datacenter=32&worker=1&sequence=0",
        &[],
    )
    .await;
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
    let (_, html) = send(
        s,
        "GET",
        "/?timestamp=%3Cscript%3Ealert(1)%3C/script%3E&datacenter=%22%3E",
        &[],
    )
    .await;
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
    let templates = [
        (
            "GET",
            "/api/v1/compose?timestamp={}&datacenter=1&worker=1&sequence=0",
        ),
        (
            "GET",
            "/api/v1/compose?timestamp=1288834975657&datacenter={}&worker={}&sequence={}",
        ),
        ("GET", "/api/v1/compose?{}"),
        ("GET", "/api/v1/decode/{}"),
        ("GET", "/api/v1/decode/1?from={}"),
        ("GET", "/api/v1/decode/{}?from=base32"),
        ("POST", "/api/v1/ids?count={}"),
        ("POST", "/api/v1/ids?{}"),
        (
            "GET",
            "/?timestamp={}&datacenter={}&worker=0&sequence={}&lang={}",
        ),
        ("GET", "/?id={}&from={}"),
        ("GET", "/?at={}"),
        ("GET", "/{}"),
        ("PUT", "/api/v1/ids?count={}"),
    ];
    let mut checked = 0;
    for (method, template) in templates {
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
async fn serves_over_a_real_socket_and_persists_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let config = static_config(dir.path().join("state"));
    let served = Served::start(static_state(&config).unwrap()).await;
    let client = reqwest::Client::new();
    let base = served.base();
    let body: Value = client
        .get(format!(
            "{base}/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body, reference_object());
    let response = client
        .post(format!("{base}/api/v1/ids?count=4096"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["ids"].as_array().unwrap().len(), 4096);
    let last: snowmint::SnowflakeId = body["ids"][4095].as_str().unwrap().parse().unwrap();
    let page = client
        .get(format!("{base}/?id=4194439168"))
        .send()
        .await
        .unwrap();
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

/// A reservation store whose disk is gone: it loads (no mark), and every
/// write fails with an error naming a path the API must not show.
fn broken_store() -> snowmint::FaultyStore {
    let store = snowmint::FaultyStore::new();
    store.writes().fail(
        snowmint::StoreErrorKind::Io,
        "cannot write /secret/path/snowmint-7-7.reservation: No space left on device",
    );
    store
}

#[tokio::test]
async fn a_failing_reservation_answers_503_without_internals() {
    let generator = Generator::builder(7, 7)
        .store(broken_store())
        .build()
        .unwrap();
    let state = AppState::new(Minter::from_generator(generator));
    // Not ready from the first probe on, before any mint has failed: no
    // write has succeeded, and the probe's own write fails.
    for _ in 0..3 {
        let msg = error(
            &state,
            "GET",
            "/readyz",
            StatusCode::SERVICE_UNAVAILABLE,
            None,
        )
        .await;
        assert!(msg.starts_with("not ready: "), "{msg}");
        assert!(!msg.contains("secret"), "leaks internals: {msg}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let msg = error(
        &state,
        "POST",
        "/api/v1/ids?count=10",
        StatusCode::SERVICE_UNAVAILABLE,
        None,
    )
    .await;
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
    error(
        &state,
        "POST",
        "/api/v1/ids",
        StatusCode::SERVICE_UNAVAILABLE,
        None,
    )
    .await;
    let msg = error(
        &state,
        "GET",
        "/readyz",
        StatusCode::SERVICE_UNAVAILABLE,
        None,
    )
    .await;
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
    let generator = Generator::builder(7, 7)
        .store(broken_store())
        .build()
        .unwrap();
    let served = Served::start(AppState::new(Minter::from_generator(generator))).await;
    let client = reqwest::Client::new();
    let base = served.base();
    // For a whole window (four periods of the renewals and probes of an
    // idle instance), never ready.
    let until = Instant::now() + Duration::from_millis(snowmint::DEFAULT_RESERVE_WINDOW_MS);
    while Instant::now() < until {
        let response = client.get(format!("{base}/readyz")).send().await.unwrap();
        assert_eq!(response.status(), 503);
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body["error"],
            "not ready: the reservation could not be saved, so no ID was issued; try again later"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let response = client
        .post(format!("{base}/api/v1/ids?count=1"))
        .send()
        .await
        .unwrap();
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
    let generator = Generator::builder(7, 7)
        .store(store)
        .store_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let minter = Minter::from_generator(generator);
    let served = Served::start(AppState::new(minter)).await;
    let base = served.base();
    let client = reqwest::Client::new();
    let mint = tokio::spawn({
        let (client, base) = (client.clone(), base.clone());
        async move {
            let started = Instant::now();
            let response = client
                .post(format!("{base}/api/v1/ids?count=10"))
                .send()
                .await
                .unwrap();
            (response.status(), started.elapsed())
        }
    });
    // The mint's first mark write is under way (and takes 3 s): health,
    // readiness and the page answer while it still waits.
    let began =
        tokio::task::spawn_blocking(move || writes.wait_for_calls(1, Duration::from_secs(60)));
    assert!(began.await.unwrap(), "no reservation write began");
    for path in ["/healthz", "/readyz", "/?id=4194439168"] {
        let response = client.get(format!("{base}{path}")).send().await.unwrap();
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

#[tokio::test]
async fn request_bodies_are_refused_with_413_in_the_error_shape() {
    let h = harness();
    let (status, body) = send(
        &h.state,
        "POST",
        "/api/v1/ids?count=1",
        &[("content-length", "2000")],
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({"error": "request bodies are limited to 1024 bytes (the API takes none), got 2000",
               "field": null})
    );
    // A small body is let through (and ignored).
    let (status, _) = send(
        &h.state,
        "POST",
        "/api/v1/ids?count=1",
        &[("content-length", "10")],
    )
    .await;
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

/// A request body without a declared length (as chunked HTTP/1.1 or
/// HTTP/2 without `Content-Length` arrive): its bytes in frames of 100.
struct Undeclared(Vec<axum::body::Bytes>);

impl Undeclared {
    fn of(len: usize) -> Undeclared {
        let bytes = vec![b'x'; len];
        Undeclared(
            bytes
                .chunks(100)
                .rev()
                .map(axum::body::Bytes::copy_from_slice)
                .collect(),
        )
    }
}

impl hyper::body::Body for Undeclared {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(self.0.pop().map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// `--client-quota Q`: a count more than Q can never pass, whatever the
/// wait, so it is a 400 naming `count` and the quota; a count the quota
/// will allow later is a 429 with `Retry-After`, as the contract says.
#[tokio::test]
async fn a_client_quota_answers_400_for_a_count_it_never_allows_and_429_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = static_config(dir.path().to_owned());
    config.client_quota = std::num::NonZeroU32::new(10);
    let served = Served::start(static_state(&config).unwrap()).await;
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
    let generator = Generator::builder(7, 7)
        .store(store)
        .store_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let served = Served::start(AppState::new(Minter::from_generator(generator))).await;
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
    let dir = tempfile::tempdir().unwrap();
    let config = static_config(dir.path().to_owned());
    let served = Served::start(static_state(&config).unwrap()).await;
    let requests = [
        ("GET", "/healthz"),
        ("GET", "/readyz"),
        ("POST", "/api/v1/ids?count=3"),
        ("GET", "/api/v1/openapi.json"),
        (
            "GET",
            "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0",
        ),
        ("GET", "/"),
        ("GET", "/api/v1/decode/4194439168"),
        ("GET", "/nope"),
        ("DELETE", "/healthz"),
    ];
    for http2 in [false, true] {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .http2_only(http2)
                .build_http::<Body>();
        for (method, path) in requests {
            let request = Request::builder()
                .method(method)
                .uri(format!("{}{path}", served.base()))
                .body(Body::empty())
                .unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let config = static_config(dir.path().to_owned());
    let served = Served::start(static_state(&config).unwrap()).await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<Body>();
    let request = Request::builder()
        .method("POST")
        .uri(format!("{}/api/v1/ids?count=3", served.base()))
        .body(Body::empty())
        .unwrap();
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
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<Undeclared>();
    for (len, expected) in [(5000, StatusCode::PAYLOAD_TOO_LARGE), (10, StatusCode::OK)] {
        let request = Request::builder()
            .method("POST")
            .uri(format!("{}/api/v1/ids?count=1", served.base()))
            .body(Undeclared::of(len))
            .unwrap();
        let response = client.request(request).await.unwrap();
        assert_eq!(response.status(), expected, "{len} bytes");
    }
    drop(client);
    served.stop().await;
}

// --- Access control, the admin listener, headers and error shapes ---

/// One request through the router: status, headers and body.
async fn send_full(
    state: &AppState,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, String) {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = app(state.clone())
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    // Lossy: the favicon is binary.
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// Asserts `body` is the error shape and returns the message.
fn error_shape(context: &str, body: &str) -> String {
    let v: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{context}: not JSON ({e}): {body:?}"));
    let obj = v.as_object().unwrap_or_else(|| panic!("{context}: {v}"));
    assert_eq!(obj.len(), 2, "{context}: {v}");
    assert!(
        obj["field"].is_null() || obj["field"].is_string(),
        "{context}: {v}"
    );
    obj["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{context}: {v}"))
        .to_owned()
}

fn token_file(dir: &std::path::Path, token: &str) -> std::path::PathBuf {
    let path = dir.join("api-token");
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path
}

#[tokio::test]
async fn a_token_guards_minting_and_metrics_and_nothing_else() {
    let h = harness();
    let path = token_file(h._dir.path(), "t0ken-for-tests");
    let state = h
        .state
        .clone()
        .with_token(snowmint_server::ApiToken::load(&path).unwrap());
    for uri in ["/api/v1/ids?count=2", "/metrics"] {
        let method = if uri == "/metrics" { "GET" } else { "POST" };
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Basic dDBrZW4tZm9yLXRlc3Rz"),
        ] {
            let headers: Vec<(&str, &str)> =
                auth.map(|a| ("authorization", a)).into_iter().collect();
            let (status, hs, body) = send_full(&state, method, uri, &headers).await;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {uri} {auth:?}: {body}"
            );
            let challenge = hs[header::WWW_AUTHENTICATE].to_str().unwrap();
            assert!(challenge.starts_with("Bearer"), "{challenge}");
            let message = error_shape(uri, &body);
            assert!(message.contains("Authorization: Bearer"), "{message}");
            assert!(!message.contains("t0ken"), "{message}");
        }
        let (status, _, body) = send_full(
            &state,
            method,
            uri,
            &[("authorization", "Bearer t0ken-for-tests")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{method} {uri}: {body}");
    }
    // Everything else stays public.
    for uri in [
        "/",
        "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0",
        "/api/v1/decode/4194439168",
        "/api/v1/range?from=2024-01-01T00:00:00Z",
        "/api/v1/openapi.json",
        "/healthz",
        "/readyz",
    ] {
        let (status, _, body) = send_full(&state, "GET", uri, &[]).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    }
}

#[tokio::test]
async fn the_live_panel_says_when_minting_needs_a_token() {
    let h = harness();
    let (_, _, page) = send_full(&h.state, "GET", "/", &[]).await;
    assert!(!page.contains("id=\"live-token\""), "no token, no note");
    let path = token_file(h._dir.path(), "abc");
    let state = h
        .state
        .clone()
        .with_token(snowmint_server::ApiToken::load(&path).unwrap());
    for (lang, words) in [
        ("en", "requires an API token"),
        ("nb", "krever et API-token"),
    ] {
        let (_, _, page) = send_full(&state, "GET", &format!("/?lang={lang}"), &[]).await;
        let note = page
            .split("id=\"live-token\"")
            .nth(1)
            .unwrap_or_else(|| panic!("{lang}: no token note"));
        assert!(
            note[..300.min(note.len())].contains(words),
            "{lang}: {note}"
        );
        assert!(!page.contains(">abc<"), "the token itself is never shown");
    }
}

#[tokio::test]
async fn cross_site_mints_are_refused_unless_the_origin_is_allowed() {
    let h = harness();
    let host = ("host", "snow.example:8080");
    let cross_site: &[&[(&str, &str)]] = &[
        &[
            host,
            ("sec-fetch-site", "cross-site"),
            ("origin", "https://evil.example"),
        ],
        &[
            host,
            ("sec-fetch-site", "same-site"),
            ("origin", "http://other.snow.example:8080"),
        ],
        // An older browser: no Sec-Fetch-Site, the Origin decides.
        &[host, ("origin", "https://evil.example")],
        &[host, ("origin", "http://snow.example:8081")],
        &[host, ("origin", "null")],
    ];
    for headers in cross_site {
        let (status, hs, body) = send_full(&h.state, "POST", "/api/v1/ids?count=1", headers).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{headers:?}: {body}");
        assert!(error_shape("403", &body).contains("cross-site"), "{body}");
        assert!(hs.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    }
    // The page's own live mint, and clients that are not browsers.
    let own: &[&[(&str, &str)]] = &[
        &[
            host,
            ("sec-fetch-site", "same-origin"),
            ("origin", "http://snow.example:8080"),
        ],
        &[host, ("origin", "http://snow.example:8080")],
        &[host],
        &[],
    ];
    for headers in own {
        let (status, _, body) = send_full(&h.state, "POST", "/api/v1/ids?count=1", headers).await;
        assert_eq!(status, StatusCode::OK, "{headers:?}: {body}");
    }
    // Reading stays open to everyone.
    let (status, _, _) =
        send_full(&h.state, "GET", "/api/v1/decode/4194439168", cross_site[0]).await;
    assert_eq!(status, StatusCode::OK);
    // No allowed origin: a preflight is just another method.
    let preflight = [
        ("origin", "https://app.example"),
        ("access-control-request-method", "POST"),
        ("access-control-request-headers", "authorization"),
    ];
    let (status, _, body) = send_full(&h.state, "OPTIONS", "/api/v1/ids", &preflight).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    error_shape("405", &body);

    // An allowed origin mints, and gets the CORS headers and the preflight.
    let state = h
        .state
        .clone()
        .with_origins(snowmint_server::Origins::new(["https://app.example"]).unwrap());
    let (status, hs, body) = send_full(&state, "OPTIONS", "/api/v1/ids", &preflight).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        hs[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://app.example"
    );
    let allowed_headers = hs[header::ACCESS_CONTROL_ALLOW_HEADERS].to_str().unwrap();
    assert!(
        allowed_headers.contains("authorization"),
        "{allowed_headers}"
    );
    assert!(
        hs[header::ACCESS_CONTROL_ALLOW_METHODS]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    let from_app = [
        host,
        ("sec-fetch-site", "cross-site"),
        ("origin", "https://app.example"),
    ];
    let (status, hs, body) = send_full(&state, "POST", "/api/v1/ids?count=1", &from_app).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        hs[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://app.example"
    );
    // Others are still refused.
    let (status, _, body) = send_full(&state, "POST", "/api/v1/ids?count=1", cross_site[0]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // A preflight from them gets no permission.
    let evil_preflight = [("origin", "https://evil.example"), preflight[1]];
    let (_, hs, _) = send_full(&state, "OPTIONS", "/api/v1/ids", &evil_preflight).await;
    assert!(
        hs.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
        "{hs:?}"
    );
}

/// Every route of the public router (and its errors), as (method, uri).
const PUBLIC_ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("GET", "/assets/app.css"),
    ("GET", "/assets/app.js"),
    ("GET", "/assets/favicon.svg"),
    ("GET", "/favicon.ico"),
    (
        "GET",
        "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0",
    ),
    ("GET", "/api/v1/decode/4194439168"),
    ("GET", "/api/v1/range?from=2024-01-01T00:00:00Z"),
    ("POST", "/api/v1/ids?count=1"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    // Errors.
    ("GET", "/api/v1/compose?datacenter=32"),
    ("GET", "/nope"),
    ("DELETE", "/api/v1/ids"),
    ("GET", "/assets/%FF"),
];

fn assert_security_headers(context: &str, headers: &axum::http::HeaderMap) {
    assert_eq!(
        headers
            .get(header::X_CONTENT_TYPE_OPTIONS)
            .map(|v| v.to_str().unwrap()),
        Some("nosniff"),
        "{context}: {headers:?}"
    );
    assert_eq!(
        headers
            .get(header::REFERRER_POLICY)
            .map(|v| v.to_str().unwrap()),
        Some("no-referrer"),
        "{context}: {headers:?}"
    );
    let csp = headers.get(header::CONTENT_SECURITY_POLICY).is_some();
    let html = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/html"));
    assert_eq!(csp, html, "{context}: CSP exactly on HTML: {headers:?}");
}

#[tokio::test]
async fn every_route_carries_nosniff_and_no_referrer() {
    let h = harness();
    for (method, uri) in PUBLIC_ROUTES {
        let (status, headers, body) = send_full(&h.state, method, uri, &[]).await;
        assert_security_headers(&format!("{method} {uri} ({status})"), &headers);
        if status.is_client_error() || status.is_server_error() {
            error_shape(&format!("{method} {uri}"), &body);
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

/// Raw HTTP/1.1 over a real socket (hyper's own limits apply): the status,
/// the head and the body.
async fn raw_request(addr: std::net::SocketAddr, request: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("the server answers and closes")
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head[9..12].parse().unwrap();
    (status, head.to_owned(), body.to_owned())
}

#[tokio::test]
async fn over_limit_heads_and_bodies_answer_414_431_413_in_the_error_shape() {
    let dir = tempfile::tempdir().unwrap();
    let config = static_config(dir.path().to_owned());
    let served = Served::start(static_state(&config).unwrap()).await;
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
        assert!(head.to_ascii_lowercase().contains("x-content-type-options: nosniff"), "{head}");
        assert!(head.to_ascii_lowercase().contains("referrer-policy: no-referrer"), "{head}");
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

#[tokio::test]
async fn an_admin_listener_takes_health_readiness_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let config = static_config(dir.path().to_owned());
    let public = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (public_addr, admin_addr) = (public.local_addr().unwrap(), admin.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(snowmint_server::run_with(
        snowmint_server::Listeners {
            public,
            admin: Some(admin),
        },
        static_state(&config).unwrap(),
        snowmint_server::Limits::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let get = |addr: std::net::SocketAddr, method: &'static str, path: &'static str| async move {
        raw_request(
            addr,
            &format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
        )
        .await
    };
    let (status, _, body) = get(public_addr, "GET", "/metrics").await;
    assert_eq!(status, 404, "{body}");
    error_shape("public /metrics", &body);
    let (status, _, body) = get(admin_addr, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("# TYPE snowmint_ready gauge"), "{body}");
    // The page no longer links to it.
    let (_, _, page) = get(public_addr, "GET", "/").await;
    assert!(!page.contains("href=\"/metrics\""), "{page}");
    // Health and readiness on both; the API only on the public one.
    for path in ["/healthz", "/readyz"] {
        for addr in [public_addr, admin_addr] {
            let (status, head, body) = get(addr, "GET", path).await;
            assert_eq!(status, 200, "{addr}{path}: {body}");
            let lower = head.to_ascii_lowercase();
            assert!(lower.contains("x-content-type-options: nosniff"), "{head}");
            assert!(lower.contains("referrer-policy: no-referrer"), "{head}");
        }
    }
    for (method, path) in [
        ("GET", "/"),
        ("POST", "/api/v1/ids"),
        ("GET", "/nope"),
        ("POST", "/metrics"),
    ] {
        let (status, head, body) = get(admin_addr, method, path).await;
        assert!(status == 404 || status == 405, "{method} {path}: {status}");
        let lower = head.to_ascii_lowercase();
        assert!(lower.contains("x-content-type-options: nosniff"), "{head}");
        assert!(lower.contains("referrer-policy: no-referrer"), "{head}");
        error_shape(path, &body);
    }
    // One shutdown stops both.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .expect("both listeners stop")
        .unwrap()
        .expect("clean shutdown");
    assert!(tokio::net::TcpStream::connect(admin_addr).await.is_err());
}

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
    let dir = tempfile::tempdir().unwrap();
    let mut config = static_config(dir.path().to_owned());
    config.client_quota = std::num::NonZeroU32::new(5);
    let state = static_state(&config).unwrap();
    let served = Served::start(state).await;
    let client = reqwest::Client::new();
    let base = format!("http://{}", served.addr);
    for uri in [
        "/api/v1/ids?count=3",
        "/api/v1/ids?count=5",
        "/api/v1/ids?count=x",
    ] {
        client.post(format!("{base}{uri}")).send().await.unwrap();
    }
    client
        .get(format!("{base}/api/v1/decode/1"))
        .send()
        .await
        .unwrap();
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
