//! No password of a coordinator URL in anything `snowmint serve` prints:
//! URLs that do not parse (a password holding `/`, `@`, `?`, `#`; a port
//! out of range; PostgreSQL's `key=value` strings and `?password=`) are
//! refused with exit code 2 and a message that names the flag and shows the
//! URL with `***` for its password; one that parses but leads nowhere is
//! named without it in the log, `/readyz` and `/metrics`.

use std::path::Path;
use std::time::Duration;

use snowmint_testkit::serve::{Builder, Listen, Output};

/// Every password here is made of markers that appear nowhere else, so
/// that no piece of one may be printed.
const MARKERS: [&str; 2] = ["Kx7", "Wq9"];

fn serve(flag: &str, url: &str) -> std::process::Output {
    snowmint_testkit::serve::clean_command(Path::new(env!("CARGO_BIN_EXE_snowmint")))
        .args(["serve", "--listen", "127.0.0.1:0", flag, url])
        .output()
        .expect("run snowmint serve")
}

#[test]
fn a_url_that_does_not_parse_is_refused_without_its_password() {
    // (flag, URL, what the message must say)
    let cases = [
        (
            "--mysql",
            "mysql://app:Kx7/Wq9@127.0.0.1:1/ids",
            "error: mysql is not a MySQL URL (URL parse error: invalid port number), got \
             mysql://app:***@127.0.0.1:1/ids; a user or password holding / ? # or @ must be \
             percent-encoded (%2F %3F %23 %40)",
        ),
        (
            "--mysql",
            "mysql://app:Kx7#Wq9@127.0.0.1:3306/ids",
            "got mysql://app:***@127.0.0.1:3306/ids; a user or password holding",
        ),
        (
            "--mysql",
            "mysql://app:Kx7@db/Wq9@127.0.0.1:3306/ids",
            "error: mysql has an @ after its user and password (in a host or database name)",
        ),
        (
            "--mysql",
            "mysql://app:Kx7Wq9@127.0.0.1:99999/ids",
            "got mysql://app:***@127.0.0.1:99999/ids",
        ),
        (
            "--postgres",
            "postgres://app:Kx7Wq9@127.0.0.1:99999/ids",
            "error: postgres is not a libpq URL (invalid connection string), got \
             postgres://app:***@127.0.0.1:99999/ids",
        ),
        (
            "--postgres",
            "postgres://app:Kx7/Wq9@127.0.0.1:99999/ids",
            "got postgres://app:***@127.0.0.1:99999/ids",
        ),
        (
            "--postgres",
            "postgres://app:Kx7@Wq9@127.0.0.1:5432/ids",
            "error: postgres has an @ after its user and password (in a host or database name)",
        ),
        (
            "--postgres",
            "postgres://app@127.0.0.1:99999/ids?password=Kx7&Wq9",
            "got postgres://app@127.0.0.1:99999/ids?password=***",
        ),
        (
            "--postgres",
            "host=127.0.0.1 port=99999 user=app password='Kx7 Wq9'",
            "got host=127.0.0.1 port=99999 user=app password=***",
        ),
    ];
    for (flag, url, says) in cases {
        let out = serve(flag, url);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {url}: {stderr}");
        assert!(stderr.contains(says), "{flag} {url}: {stderr}");
        for marker in MARKERS {
            assert!(
                !stdout.contains(marker) && !stderr.contains(marker),
                "{flag} {url} printed its password: {stdout}{stderr}"
            );
        }
    }
}

/// A URL that parses but leads nowhere (a closed port): `serve` runs, not
/// ready, retrying; neither its log, nor `/readyz`'s detail, nor
/// `/metrics` shows the password (percent-encoded here so that it parses:
/// `%2F` is `/`).
#[test]
fn an_unreachable_coordinator_is_named_without_its_password() {
    for (flag, url) in [
        ("--mysql", "mysql://app:Kx7%2FWq9@127.0.0.1:1/ids"),
        (
            "--postgres",
            "postgres://app:Kx7%2FWq9@127.0.0.1:1/ids?sslmode=disable",
        ),
        (
            "--postgres",
            "postgres://app@127.0.0.1:1/ids?sslmode=disable&password=Kx7Wq9",
        ),
    ] {
        let served = Builder::new(env!("CARGO_BIN_EXE_snowmint"))
            .name(flag.trim_start_matches('-'))
            .args([flag, url])
            .clean_env()
            .listen(Listen::Ephemeral)
            .output(Output::Capture { echo: true })
            .start()
            .expect("serve starts");
        served
            .wait_line("no identity yet", Duration::from_secs(30))
            .expect("the coordinator's failure logged");
        let ready = served.http("GET", "/readyz").expect("/readyz answers");
        assert_eq!(ready.status, 503, "{}", ready.body);
        let metrics = served.http("GET", "/metrics").expect("/metrics answers");
        let mut seen = served.lines().join("\n");
        seen.push_str(&ready.body);
        seen.push_str(&metrics.body);
        for marker in MARKERS {
            assert!(
                !seen.contains(marker),
                "{flag} {url} printed its password: {seen}"
            );
        }
    }
}
