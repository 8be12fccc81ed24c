//! `snowmint serve --worker-from-hostname`: a StatefulSet pod `NAME-N`
//! serves as identity N; other hostnames are refused at start.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn serve(hostname: &str, state_dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snowmint"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--worker-from-hostname"])
        .arg("--state-dir")
        .arg(state_dir)
        .env("HOSTNAME", hostname)
        .env("RUST_LOG", "warn")
        .env_remove("SNOWMINT_DATACENTER")
        .env_remove("SNOWMINT_WORKER")
        .env_remove("SNOWMINT_ETCD");
    cmd
}

#[test]
fn a_statefulset_ordinal_becomes_the_identity() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = serve("snowmint-33", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("snowmint: serving the explorer on http://") {
                let _ = tx.send(
                    rest.split('/')
                        .next()
                        .unwrap()
                        .parse::<SocketAddr>()
                        .unwrap(),
                );
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("serve printed its address");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"POST /api/v1/ids?count=2 HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200"),
        "{response}"
    );
    let body: serde_json::Value =
        serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap();
    for id in body["ids"].as_array().unwrap() {
        let id: snowmint::SnowflakeId = id.as_str().unwrap().parse().unwrap();
        assert_eq!(
            (id.datacenter(), id.worker()),
            (1, 1),
            "ordinal 33 = datacenter 1, worker 1"
        );
    }
}

#[test]
fn hostnames_without_a_usable_ordinal_are_refused_with_exit_status_2() {
    let dir = tempfile::tempdir().unwrap();
    for (hostname, message) in [
        (
            "laptop",
            "error: worker-from-hostname needs a hostname ending in -N with N 0..=1023 \
             (a StatefulSet pod such as snowmint-3), got \"laptop\"",
        ),
        (
            "snowmint-1024",
            "error: worker-from-hostname ordinal must be 0..=1023, got 1024 \
             (from hostname \"snowmint-1024\")",
        ),
    ] {
        let out = serve(hostname, dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{hostname}");
        assert!(out.stdout.is_empty());
        assert_eq!(String::from_utf8(out.stderr).unwrap().trim_end(), message);
    }
}

#[test]
fn worker_from_hostname_conflicts_with_an_explicit_identity() {
    let dir = tempfile::tempdir().unwrap();
    let out = serve("snowmint-1", dir.path())
        .args(["--worker", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("--worker-from-hostname") && stderr.contains("--worker"),
        "{stderr}"
    );
}
