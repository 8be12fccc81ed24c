//! `snowmint serve --tls-cert --tls-key`: HTTPS with HTTP/2 and HTTP/1.1
//! (ALPN) checked with curl against certificates made in the test; h2c
//! (HTTP/2 by prior knowledge) on a plain listener; a TLS handshake that
//! never completes is cut at the header timeout while others are served;
//! bad TLS flags exit 2 naming the flag and the file.
//!
//! Tests that need `curl` skip with a printed reason when it is missing,
//! unless SNOWMINT_REQUIRE_SERVICES=1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use snowmint_testkit::pki::Pki;

use crate::support::{Serve, bad, ids_in};

/// Whether Debian's `curl` (with HTTP/2) is there, or its absence is a
/// failure.
fn curl_available() -> bool {
    let has_http2 = Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("HTTP2"));
    has_http2
        || snowmint_testkit::skip::<()>(
            "`curl` with HTTP/2 is not installed (apt-get install curl)",
        )
        .is_some()
}

/// What one curl run printed: the `-w` output (the body goes to stdout
/// too unless `-o /dev/null`), and whether it succeeded.
struct Curl {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// `curl -sS --max-time 10 ARGS`.
fn curl(args: &[&str]) -> Curl {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run curl");
    Curl {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The HTTP version curl used for `GET url` (`2`, `1.1`), the body
/// discarded; `version_flag` is `--http2`, `--http1.1`, ...
fn http_version(ca: &Path, version_flag: &str, url: &str) -> String {
    let out = curl(&[
        "--cacert",
        path(ca),
        version_flag,
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{http_version}",
        url,
    ]);
    assert!(out.ok, "curl {version_flag} {url}: {}", out.stderr);
    let (code, version) = out.stdout.split_once(' ').expect("code and version");
    assert_eq!(code, "200", "curl {version_flag} {url}");
    version.to_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `snowmint serve ARGS` over HTTPS with a new PKI's server certificate
/// and a state directory of its own (kept while the directory is), when
/// curl is there to talk to it (else a printed skip).
fn serve_https(more: &[&str]) -> Option<(Pki, tempfile::TempDir, Serve)> {
    if !curl_available() {
        return None;
    }
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    let cert = pki.server_cert();
    let key = pki.server_key();
    let mut args = vec!["--tls-cert", path(&cert), "--tls-key", path(&key)];
    args.extend_from_slice(more);
    let server = Serve::start(&args, Some(dir.path()));
    Some((pki, dir, server))
}

#[test]
fn https_speaks_h2_and_http11_and_mints() {
    let Some((pki, _dir, server)) = serve_https(&[]) else {
        return;
    };
    assert!(server.https, "the announced URL is https://");
    let base = format!("https://127.0.0.1:{}", server.addr.port());
    let ca = pki.ca();

    assert_eq!(
        http_version(&ca, "--http2", &format!("{base}/healthz")),
        "2"
    );
    assert_eq!(
        http_version(&ca, "--http1.1", &format!("{base}/healthz")),
        "1.1"
    );
    assert_eq!(http_version(&ca, "--http2", &format!("{base}/")), "2");

    let minted = curl(&[
        "--cacert",
        path(&ca),
        "--http2",
        "-X",
        "POST",
        &format!("{base}/api/v1/ids?count=3"),
    ]);
    assert!(minted.ok, "{}", minted.stderr);
    assert_eq!(ids_in(&minted.stdout).count(), 3, "{}", minted.stdout);

    // A client that does not trust the CA gets no answer.
    let untrusted = curl(&["-o", "/dev/null", &format!("{base}/healthz")]);
    assert!(!untrusted.ok, "curl trusted a certificate of a test CA");
    // Nor does plain HTTP on the HTTPS port.
    let plain = curl(&[
        "-o",
        "/dev/null",
        &format!("http://127.0.0.1:{}/healthz", server.addr.port()),
    ]);
    assert!(!plain.ok, "plain HTTP was answered on the HTTPS port");
    // Both counted (the server may read curl's alert after curl exits).
    let counted = r#"snowmint_http_connection_events_total{event="tls_handshake_failed"} 2"#;
    let started = Instant::now();
    loop {
        let metrics = curl(&["--cacert", path(&ca), &format!("{base}/metrics")]);
        if metrics.stdout.contains(counted) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{}",
            metrics.stdout
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// With `--tls-cert`, the admin listener speaks HTTPS too (probes and
/// scrapes are not left in clear text beside an HTTPS service).
#[test]
fn the_admin_listener_speaks_https_too() {
    let Some((pki, _dir, server)) = serve_https(&["--admin-listen", "127.0.0.1:0"]) else {
        return;
    };
    let admin = server.admin.expect("the admin line was announced");
    let ca = pki.ca();
    let base = format!("https://127.0.0.1:{}", admin.port());
    assert_eq!(http_version(&ca, "--http2", &format!("{base}/readyz")), "2");
    assert_eq!(
        http_version(&ca, "--http1.1", &format!("{base}/metrics")),
        "1.1"
    );
    let plain = curl(&[
        "-o",
        "/dev/null",
        &format!("http://127.0.0.1:{}/healthz", admin.port()),
    ]);
    assert!(!plain.ok, "plain HTTP was answered on the admin port");
}

#[test]
fn plain_http_speaks_h2_by_prior_knowledge_and_http11() {
    if !curl_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(&[], Some(dir.path()));
    assert!(!server.https);
    let url = format!("http://{}/healthz", server.addr);
    let version = |flag: &str| {
        let out = curl(&[flag, "-o", "/dev/null", "-w", "%{http_version}", &url]);
        assert!(out.ok, "curl {flag}: {}", out.stderr);
        out.stdout
    };
    assert_eq!(version("--http2-prior-knowledge"), "2");
    assert_eq!(version("--http1.1"), "1.1");
}

#[test]
fn a_handshake_that_never_completes_is_cut_at_the_header_timeout_while_others_are_served() {
    let Some((pki, _dir, server)) = serve_https(&["--header-timeout", "3"]) else {
        return;
    };
    let addr: SocketAddr = server.addr;

    // 20 clients that start a handshake and never finish it: a TLS record
    // header announcing a ClientHello of 512 bytes, and 5 of them.
    let started = Instant::now();
    let mut stalled: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream
                .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03])
                .unwrap();
            stream
        })
        .collect();

    // Meanwhile others complete theirs and are answered, over both HTTP
    // versions: the stalled handshakes hold up neither the accept loop nor
    // anyone else.
    let base = format!("https://127.0.0.1:{}", addr.port());
    for flag in ["--http2", "--http1.1"] {
        http_version(&pki.ca(), flag, &format!("{base}/healthz"));
    }
    let served_after = started.elapsed();
    assert!(
        served_after < Duration::from_millis(2500),
        "the others took {served_after:?}: too slow to tell them from the stalled ones"
    );
    // The stalled ones are still open (the deadline is 3 s from the accept)...
    for stream in &stalled {
        stream.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        match (&*stream).read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("a stalled handshake ended early ({other:?}) after {served_after:?}"),
        }
        stream.set_nonblocking(false).unwrap();
    }
    // ...and each is closed at the header timeout.
    for stream in &mut stalled {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 64];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue, // an alert, if any
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    panic!(
                        "a stalled handshake was still open after {:?}",
                        started.elapsed()
                    )
                }
                Err(_) => break, // reset
            }
        }
        let closed = started.elapsed();
        assert!(
            closed >= Duration::from_millis(2900),
            "closed before the header timeout: {closed:?}"
        );
        assert!(closed < Duration::from_secs(6), "closed after {closed:?}");
    }
    let metrics = curl(&["--cacert", path(&pki.ca()), &format!("{base}/metrics")]);
    assert!(
        metrics
            .stdout
            .contains(r#"snowmint_http_connection_events_total{event="header_timeout"} 20"#),
        "{}",
        metrics.stdout
    );
}

#[test]
fn bad_tls_flags_exit_2_naming_the_flag_and_the_file() {
    let pki = Pki::new();
    let cert = pki.server_cert();
    let key = pki.server_key();
    let missing = pki.dir().join("missing.pem");
    let serve = |args: &[&str]| {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        bad(&all)
    };

    assert_eq!(
        serve(&["--tls-cert", path(&cert)]),
        "missing --tls-key <PATH>"
    );
    assert_eq!(
        serve(&["--tls-key", path(&key)]),
        "missing --tls-cert <PATH>"
    );
    assert!(
        serve(&["--tls-cert", path(&missing), "--tls-key", path(&key)])
            .starts_with(&format!("tls-cert: cannot read {}: ", missing.display()))
    );
    assert!(
        serve(&["--tls-cert", path(&cert), "--tls-key", path(&missing)])
            .starts_with(&format!("tls-key: cannot read {}: ", missing.display()))
    );
    assert_eq!(
        serve(&["--tls-cert", path(&key), "--tls-key", path(&key)]),
        format!(
            "tls-cert: {} holds no usable PEM certificate: no CERTIFICATE section found",
            key.display()
        )
    );
    assert_eq!(
        serve(&[
            "--tls-cert",
            path(&cert),
            "--tls-key",
            path(&pki.client_key())
        ]),
        format!(
            "tls-key: cannot use {} with the certificate in {}: it does not belong to the certificate",
            pki.client_key().display(),
            cert.display()
        )
    );

    // TLS to etcd: pairs, and only with --etcd.
    assert_eq!(
        serve(&["--etcd-ca", path(&pki.ca())]),
        format!(
            "etcd-ca needs --etcd (TLS to etcd), got --etcd-ca {} without it",
            pki.ca().display()
        )
    );
    // Either half of the client pair without the other.
    for (given, file, missing) in [
        ("--etcd-cert", pki.client_cert(), "--etcd-key"),
        ("--etcd-key", pki.client_key(), "--etcd-cert"),
    ] {
        assert_eq!(
            serve(&[
                "--etcd",
                "https://127.0.0.1:2379",
                "--etcd-ca",
                path(&pki.ca()),
                given,
                path(&file)
            ]),
            format!("missing {missing} <PATH>")
        );
    }
}
