//! `snowmint serve` exposed: the API token (and its rotation on SIGHUP),
//! cross-site refusal and `--cors-origin`, the admin listener, the security
//! headers, and the logs.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::support::{Response, Serve, Signal, bad, header, http, http_with};

fn write_token(path: &Path, token: &str) {
    std::fs::write(path, format!("{token}\n")).unwrap();
}

/// A fresh directory whose file `token` holds `token`; the directory and
/// the file.
fn token_dir(token: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    write_token(&file, token);
    (dir, file)
}

#[test]
fn bad_hardening_flags_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let message = bad(&["serve", "--api-token-file", missing]);
    assert!(
        message.starts_with(&format!("api-token-file {missing}: cannot read it: ")),
        "{message}"
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "  \n").unwrap();
    let empty = empty.to_str().unwrap();
    assert_eq!(
        bad(&["serve", "--api-token-file", empty]),
        format!("api-token-file {empty}: the file is empty; it must hold one token")
    );
    let message = bad(&["serve", "--cors-origin", "https://app.example/path"]);
    assert!(
        message.starts_with("cors-origin must be an origin")
            && message.ends_with(r#"got "https://app.example/path""#),
        "{message}"
    );
    let message = bad(&[
        "serve",
        "--listen",
        "127.0.0.1:18080",
        "--admin-listen",
        "127.0.0.1:18080",
    ]);
    assert!(
        message.starts_with("admin-listen must differ from listen"),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn the_token_guards_minting_and_metrics_and_sighup_rotates_it() {
    let (dir, token) = token_dir("first-token");
    let server = Serve::start(
        &["--api-token-file", token.to_str().unwrap()],
        Some(&dir.path().join("state")),
    );
    let mint = |auth: Option<&str>| {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        http_with(server.addr, "POST", "/api/v1/ids?count=2", &headers)
    };
    let (refused, head) = mint(None);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(header(&head, "www-authenticate").as_deref(), Some("Bearer"));
    assert!(refused.json()["error"].as_str().unwrap().contains("Bearer"));
    assert_eq!(mint(Some("Bearer first-token")).0.status, 200);
    assert_eq!(mint(Some("Bearer wrong-token")).0.status, 401);
    assert_eq!(server.http("GET", "/metrics").status, 401);
    let (metrics, _) = http_with(
        server.addr,
        "GET",
        "/metrics",
        &[("Authorization", "Bearer first-token")],
    );
    assert_eq!(metrics.status, 200);
    assert_eq!(
        server
            .http(
                "GET",
                "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0"
            )
            .status,
        200
    );
    assert_eq!(server.http("GET", "/").status, 200);

    // Rotation: the new token works once the signal is handled, and from
    // then on the old one is refused.
    write_token(&token, "second-token");
    server.signal(Signal::HUP);
    let start = std::time::Instant::now();
    while mint(Some("Bearer second-token")).0.status != 200 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "never took the new token"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(mint(Some("Bearer first-token")).0.status, 401);

    // A re-read that fails keeps the token in force, and says why.
    std::fs::write(&token, "").unwrap();
    server.signal(Signal::HUP);
    server.wait_said("the API token in force is kept");
    assert_eq!(mint(Some("Bearer second-token")).0.status, 200);
    let said = server.said().join("\n");
    assert!(said.contains("is empty"), "{said}");
    assert!(
        !said.contains("second-token") && !said.contains("first-token"),
        "{said}"
    );
}

#[test]
fn cross_site_posts_are_refused_but_the_page_and_allowed_origins_mint() {
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(&["--cors-origin", "https://app.example"], Some(dir.path()));
    let own = format!("http://{}", server.addr);
    let post =
        |headers: &[(&str, &str)]| http_with(server.addr, "POST", "/api/v1/ids?count=1", headers);

    let (refused, head) = post(&[
        ("Sec-Fetch-Site", "cross-site"),
        ("Origin", "https://evil.example"),
    ]);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.json()["error"]
            .as_str()
            .unwrap()
            .contains("cross-site")
    );
    assert_eq!(header(&head, "access-control-allow-origin"), None);
    assert_eq!(post(&[("Origin", "https://evil.example")]).0.status, 403);

    // The page's own live mint, and a client that is not a browser.
    let (same, _) = post(&[("Sec-Fetch-Site", "same-origin"), ("Origin", &own)]);
    assert_eq!(same.status, 200, "{}", same.body);
    assert_eq!(post(&[("Origin", &own)]).0.status, 200);
    assert_eq!(post(&[]).0.status, 200);

    // The allowed origin: its preflight, then its mint.
    let (preflight, head) = http_with(
        server.addr,
        "OPTIONS",
        "/api/v1/ids?count=1",
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization"),
        ],
    );
    assert_eq!(preflight.status, 200, "{head}");
    assert_eq!(
        header(&head, "access-control-allow-origin").as_deref(),
        Some("https://app.example")
    );
    let (allowed, head) = post(&[
        ("Sec-Fetch-Site", "cross-site"),
        ("Origin", "https://app.example"),
    ]);
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    assert_eq!(
        header(&head, "access-control-allow-origin").as_deref(),
        Some("https://app.example")
    );
}

/// Asserts the headers every response carries.
fn assert_hardened(context: &str, head: &str) {
    assert_eq!(
        header(head, "x-content-type-options").as_deref(),
        Some("nosniff"),
        "{context}: {head}"
    );
    assert_eq!(
        header(head, "referrer-policy").as_deref(),
        Some("no-referrer"),
        "{context}: {head}"
    );
}

#[test]
fn metrics_are_only_on_the_admin_port_and_both_carry_the_headers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(&["--admin-listen", "127.0.0.1:0"], Some(dir.path()));
    let admin = server.admin.expect("the admin address is announced");
    assert_ne!(admin, server.addr);

    let (metrics, head) = http_with(server.addr, "GET", "/metrics", &[]);
    assert_eq!(metrics.status, 404, "{}", metrics.body);
    assert_hardened("public /metrics", &head);
    let (metrics, head) = http_with(admin, "GET", "/metrics", &[]);
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    assert!(metrics.body.contains("snowmint_"), "{}", metrics.body);
    assert_hardened("admin /metrics", &head);

    for (method, path, status) in [
        ("GET", "/", 200),
        ("GET", "/assets/app.css", 200),
        ("GET", "/assets/app.js", 200),
        ("GET", "/assets/favicon.svg", 200),
        ("GET", "/favicon.ico", 200),
        (
            "GET",
            "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0",
            200,
        ),
        ("GET", "/api/v1/decode/4194439168", 200),
        ("GET", "/api/v1/range?from=2024-01-01T00:00:00Z", 200),
        ("POST", "/api/v1/ids?count=1", 200),
        ("GET", "/api/v1/openapi.json", 200),
        ("GET", "/healthz", 200),
        ("GET", "/readyz", 200),
        ("GET", "/nope", 404),
        ("PUT", "/api/v1/ids", 405),
        ("GET", "/assets/%FF", 400),
    ] {
        let response = hardened(server.addr, method, path, status, "");
        if status >= 400 {
            let error = response.json();
            assert!(
                error["error"].is_string() && error["field"].is_null(),
                "{error}"
            );
        }
    }
    for (method, path, status) in [
        ("GET", "/healthz", 200),
        ("GET", "/readyz", 200),
        ("GET", "/", 404),
        ("POST", "/api/v1/ids", 404),
        ("POST", "/metrics", 405),
    ] {
        hardened(admin, method, path, status, "admin ");
    }
}

/// `METHOD PATH` on `addr`, which must answer `status` with the security
/// headers; `listener` names the admin one in a failure.
fn hardened(addr: SocketAddr, method: &str, path: &str, status: u16, listener: &str) -> Response {
    let what = format!("{listener}{method} {path}");
    let (response, head) = http_with(addr, method, path, &[]);
    assert_eq!(response.status, status, "{what}: {}", response.body);
    assert_hardened(&what, &head);
    response
}

#[cfg(unix)]
#[test]
fn json_logs_parse_and_the_access_log_never_holds_the_token_or_query() {
    let (dir, token) = token_dir("log-secret-token");
    let mut server = Serve::spawn(
        Serve::builder()
            .args([
                "--log-format",
                "json",
                "--admin-listen",
                "127.0.0.1:0",
                "--api-token-file",
            ])
            .arg(&token)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .env("RUST_LOG", "info"),
    );
    let admin = server.admin.expect("the admin address, from its JSON line");
    let auth = [("Authorization", "Bearer log-secret-token")];
    assert_eq!(
        http_with(server.addr, "POST", "/api/v1/ids?count=3", &auth)
            .0
            .status,
        200
    );
    // A query string is never logged (an unknown parameter is refused, so
    // the secret rides in a value the route takes).
    assert_eq!(
        server
            .http("GET", "/api/v1/sql?dialect=sqlite&prefix=query_secret_")
            .status,
        200
    );
    assert_eq!(
        http_with(server.addr, "POST", "/api/v1/ids", &[]).0.status,
        401
    );
    assert_eq!(server.http("GET", "/api/v1/decode/4194439168").status, 200);
    assert_eq!(http(admin, "GET", "/readyz").status, 200);
    // A 70 KB target, refused by hyper before the router: JSON all the same.
    let long = format!("/{}", "a".repeat(70_000));
    assert_eq!(server.http("GET", &long).status, 414);
    let lines = server.stop_and_read_raw();

    // Every line is one JSON object: the start-up lines too, with the
    // address and the identity as fields; nothing in Rust's Debug form.
    let mut access = Vec::new();
    let mut banners = Vec::new();
    let mut listening = None;
    for line in &lines {
        for debug_form in ["Some(", "None", "Identity {", "Duration", "{ "] {
            assert!(!line.contains(debug_form), "{debug_form:?} in {line}");
        }
        assert!(!line.contains("log-secret-token"), "{line}");
        assert!(!line.contains("query_secret"), "{line}");
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            v["level"].is_string() && v["timestamp"].is_string(),
            "{line}"
        );
        assert!(v.is_object() && v["message"].is_string(), "{line}");
        if v["message"] == "listening" {
            listening = Some(v.clone());
        }
        if v["target"] == "snowmint::banner" {
            banners.push(v);
        } else if v["target"] == "snowmint::access" {
            access.push(v);
        }
    }
    assert_eq!(banners.len(), 2, "{banners:?}");
    assert_eq!(banners[0]["url"], format!("http://{admin}/"), "{banners:?}");
    let public = &banners[1];
    assert_eq!(
        public["url"],
        format!("http://{}/", server.addr),
        "{public}"
    );
    assert_eq!(
        (&public["datacenter"], &public["worker"]),
        (&0.into(), &0.into()),
        "{public}"
    );
    let listening = listening.expect("a listening line");
    assert_eq!(listening["datacenter"], 0, "{listening}");
    assert_eq!(listening["worker"], 0, "{listening}");
    let find = |method: &str, route: &str, status: u64| {
        access
            .iter()
            .find(|v| v["method"] == method && v["route"] == route && v["status"] == status)
            .unwrap_or_else(|| panic!("no access line {method} {route} {status}: {access:?}"))
    };
    let minted = find("POST", "/api/v1/ids", 200);
    assert_eq!(minted["level"], "INFO");
    assert!(minted["latency_us"].is_u64(), "{minted}");
    find("POST", "/api/v1/ids", 401);
    // The route pattern, not the ID in the path.
    find("GET", "/api/v1/decode/{id}", 200);
    assert!(!lines.iter().any(|l| l.contains("4194439168")), "{lines:?}");
}

#[cfg(unix)]
#[test]
fn text_logs_have_no_colour_codes_and_warn_keeps_the_access_log_quiet() {
    let dir = tempfile::tempdir().unwrap();
    // The last turns off the access log alone: the level lets info through,
    // the access line's own callsite interest must not.
    for (i, level) in ["info", "warn", "info,snowmint::access=warn"]
        .into_iter()
        .enumerate()
    {
        let mut server = Serve::spawn(
            Serve::builder()
                .arg("--state-dir")
                .arg(dir.path().join(i.to_string()))
                .env("RUST_LOG", level),
        );
        assert_eq!(server.http("GET", "/healthz").status, 200);
        let lines = server.stop_and_read();
        assert!(!lines.iter().any(|l| l.contains('\u{1b}')), "{lines:?}");
        let access = lines
            .iter()
            .filter(|l| l.contains("snowmint::access"))
            .count();
        match level {
            "info" => {
                let line = lines
                    .iter()
                    .find(|l| l.contains("snowmint::access"))
                    .unwrap_or_else(|| panic!("{lines:?}"));
                for field in ["method=GET", "route=/healthz", "status=200", "latency_us="] {
                    assert!(line.contains(field), "{field}: {line}");
                }
            }
            _ => assert_eq!(access, 0, "{lines:?}"),
        }
    }
}
