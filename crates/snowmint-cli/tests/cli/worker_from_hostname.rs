//! `snowmint serve --worker-from-hostname`: a StatefulSet pod `NAME-N`
//! serves as identity N; other hostnames are refused at start.

use snowmint_testkit::serve::Builder;

use crate::support::Serve;

/// `serve --worker-from-hostname` as `hostname`: started with
/// [`Serve::spawn`], or run to its refusal with `command().output()`.
fn serve(hostname: &str, state_dir: &std::path::Path) -> Builder {
    Serve::builder()
        .arg("--worker-from-hostname")
        .arg("--state-dir")
        .arg(state_dir)
        .env("HOSTNAME", hostname)
}

#[test]
fn a_statefulset_ordinal_becomes_the_identity() {
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::spawn(serve("snowmint-33", dir.path()));
    for id in server.mint(2) {
        let id = snowmint::SnowflakeId::new(id).unwrap();
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
        let out = serve(hostname, dir.path()).command().output().unwrap();
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
        .command()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "error: worker cannot be set with --worker-from-hostname, got --worker 3: \
         the identity is the hostname's ordinal (datacenter N / 32, worker N % 32)\n"
    );
}

/// `SNOWMINT_WORKER_FROM_HOSTNAME=false` (a template's "off") is not the
/// hostname mode: `--datacenter` is the static identity's.
#[test]
fn worker_from_hostname_false_in_the_environment_leaves_the_static_identity() {
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::spawn(
        Serve::builder()
            .args(["--datacenter", "3"])
            .arg("--state-dir")
            .arg(dir.path())
            .env("SNOWMINT_WORKER_FROM_HOSTNAME", "false")
            .env("HOSTNAME", "snowmint-33"),
    );
    assert_eq!(server.wait_ready(), (3, 0));
}
