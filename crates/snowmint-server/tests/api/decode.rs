//! `GET /api/v1/decode/{id}` in Twitter's layout.

use crate::support::Says::*;
use crate::support::*;

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
        answers(&h.state, uri, &reference_object()).await;
    }
    let (_, max) = json(&h.state, "GET", "/api/v1/decode/9223372036854775807").await;
    assert_eq!(max["timestamp_ms"], 3487858230208u64);
}

#[tokio::test]
async fn decode_errors() {
    let h = harness();
    let s = &h.state;
    let from_is = r#"from must be one of decimal, hex, base32, got "#;
    let (octal, space) = (format!(r#"{from_is}"octal""#), format!(r#"{from_is}" ""#));
    let cases = [
        (
            "/api/v1/decode/-1",
            "id",
            Is("id must be 0..=9223372036854775807, got -1"),
        ),
        (
            "/api/v1/decode/%FF%FE",
            "id",
            Is("id must be a decimal integer 0..=9223372036854775807, got \"\u{FFFD}\""),
        ),
        (
            "/api/v1/decode/%FF?from=hex",
            "id",
            Starts("id must be hexadecimal"),
        ),
        (
            "/api/v1/decode/9223372036854775808",
            "id",
            Ends("the sign bit is set"),
        ),
        (
            "/api/v1/decode/18446744073709551616",
            "id",
            Ends("more than 64 bits"),
        ),
        (
            "/api/v1/decode/abc",
            "id",
            Is(r#"id must be a decimal integer 0..=9223372036854775807, got "abc""#),
        ),
        ("/api/v1/decode/xyz?from=hex", "id", Has(&["hexadecimal"])),
        ("/api/v1/decode/1?from=octal", "from", Is(&octal)),
        // Whitespace is not "no form" (only a missing or empty one is
        // decimal); around a name it is forgiven.
        ("/api/v1/decode/1?from=%20", "from", Is(&space)),
    ];
    refusals(s, "GET", &cases).await;
    assert_eq!(
        json(s, "GET", "/api/v1/decode/f?from=%20hex%20").await.0,
        StatusCode::OK
    );
    error(s, "GET", "/api/v1/decode/", StatusCode::NOT_FOUND, None).await;
}
