//! Query parameters on every route: repeated and unknown ones are refused, named.

use crate::support::*;

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
        let message = refused(&h.state, uri, name).await;
        assert_eq!(
            message,
            format!("{name} is given more than once in the query; give it once")
        );
    }
    // Another layout's field given twice is named by the core, not taken
    // for a parameter Twitter's layout lacks (`layout`, `process`).
    let uri = "/api/v1/compose?layout=discord&timestamp=1462015105796&worker=1&worker=2&process=0&increment=7";
    let message = refused(&h.state, uri, "worker").await;
    assert_eq!(message, "worker is given more than once");
}

/// An unknown parameter (a typo) is refused naming it and what the route
/// takes, on every route, never dropped: `To` for `to` once answered a
/// one-millisecond range.
#[tokio::test]
async fn an_unknown_parameter_is_refused_naming_it() {
    let h = harness();
    let message = refused(
        &h.state,
        "/api/v1/range?from=2024-01-01&To=2024-02-01",
        "To",
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
    let message = refused(&h.state, "/healthz?probe", "probe").await;
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
    let uri = "/api/v1/compose?layout=discord&timestamp=1462015105796&worker=1&process=0&increment=0&datacenter=1";
    let message = refused(&h.state, uri, "datacenter").await;
    assert!(message.contains("datacenter"), "{message}");
}
