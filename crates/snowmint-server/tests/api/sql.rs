//! `GET /api/v1/sql`.

use crate::support::Says::*;
use crate::support::*;

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
    let dialect = |got: &str| format!("dialect must be postgres, mysql or sqlite, got {got}");
    let (oracle, none) = (dialect(r#""oracle""#), dialect(r#""""#));
    let cases = [
        ("/api/v1/sql?dialect=oracle", "dialect", Is(&oracle)),
        ("/api/v1/sql", "dialect", Is(&none)),
        (
            "/api/v1/sql?dialect=mysql&prefix=x%27%3B%20DROP%20TABLE%20t%3B",
            "prefix",
            Starts("prefix must be a plain SQL identifier"),
        ),
        ("/api/v1/sql?dialect=mysql&layout=flickr", "layout", Any),
        ("/api/v1/sql?dialect=mysql&dialect=postgres", "dialect", Any),
    ];
    refusals(s, "GET", &cases).await;
}
