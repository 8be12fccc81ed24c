//! `snowmint serve` on a state directory whose filesystem stops answering:
//! a loop-mounted ext4 frozen with `fsfreeze -f`, on which every write
//! blocks in the kernel until it is thawed (as on a hung disk or NFS mount).
//!
//! Needs root, `mkfs.ext4`, `mount` and `fsfreeze`; skips with a printed
//! reason without them (fails under `SNOWMINT_REQUIRE_SERVICES=1`). The
//! filesystem is thawed and unmounted whatever happens, panics included.
//!
//! The bounds asserted are the configured ones (the core's defaults and
//! `--shutdown-timeout`), with the bound itself again as the margin for a
//! loaded machine: on a build without deadlines the same checks took the
//! 30 s request timeout, or never ended.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use snowmint::{DEFAULT_MAX_WAIT, DEFAULT_RESERVE_WINDOW_MS, DEFAULT_STORE_TIMEOUT};

use crate::support::{Serve, Signal, ids_in};

/// `--shutdown-timeout` of the test.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

/// Runs `program args`, `Err` with what it said if it fails.
fn sh(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {args:?}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Why this machine cannot run the test, if it cannot.
fn missing() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("the frozen-filesystem test needs root (mount, fsfreeze)".to_owned());
    }
    for tool in ["mkfs.ext4", "mount", "umount", "fsfreeze"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "{tool} is not installed (e2fsprogs, mount, util-linux)"
            ));
        }
    }
    None
}

/// A loop-mounted ext4 image; unmounted (and its image removed with the
/// temporary directory) when dropped.
struct Mount {
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Mount {
    fn new() -> Result<Mount, String> {
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let image = tmp.path().join("img");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(32 << 20))
            .map_err(|e| e.to_string())?;
        let dir = tmp.path().join("mnt");
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        let image = image.to_str().unwrap();
        sh("mkfs.ext4", &["-q", "-F", image])?;
        sh("mount", &["-o", "loop", image, dir.to_str().unwrap()])?;
        Ok(Mount { dir, _tmp: tmp })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let dir = self.dir.to_str().unwrap();
        // Never leave it frozen: anything touching it would hang.
        let _ = sh("fsfreeze", &["-u", dir]);
        if sh("umount", &[dir]).is_err() {
            let _ = sh("umount", &["-l", dir]);
        }
    }
}

/// The filesystem at `dir` frozen; thawed when dropped (declared after the
/// server, so it thaws before the server's drop waits for the process).
struct Frozen<'a>(&'a Path);

impl<'a> Frozen<'a> {
    fn new(dir: &'a Path) -> Frozen<'a> {
        sh("fsfreeze", &["-f", dir.to_str().unwrap()]).expect("fsfreeze -f");
        Frozen(dir)
    }
}

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        let _ = sh("fsfreeze", &["-u", self.0.to_str().unwrap()]);
    }
}

/// The state letter of process `pid` in `/proc` (`Z`: it has exited and
/// not been reaped yet); `None` once it is gone.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

#[test]
fn a_frozen_state_directory_bounds_mints_readiness_and_shutdown() {
    if let Some(reason) = missing() {
        let _: Option<()> = snowmint_testkit::skip(&reason);
        return;
    }
    let mount = match Mount::new() {
        Ok(mount) => mount,
        Err(e) => {
            let _: Option<()> = snowmint_testkit::skip(&format!("cannot loop-mount ext4: {e}"));
            return;
        }
    };
    let state = mount.dir.join("state");
    let timeout = SHUTDOWN_TIMEOUT.as_secs().to_string();
    let mut serve = Serve::start(&["--shutdown-timeout", &timeout], Some(&state));
    serve.wait_ready();
    let before = serve.mint(10);

    let frozen = Frozen::new(&mount.dir);
    let frozen_at = Instant::now();
    let window = Duration::from_millis(DEFAULT_RESERVE_WINDOW_MS);
    // A mint waits at most: the lane (max_wait), the clock (max_wait), then
    // a write in flight and one of its own (a store timeout each).
    let mint_bound = DEFAULT_MAX_WAIT * 2 + DEFAULT_STORE_TIMEOUT * 2;

    // Readiness: 503 within one window (the newest successful write is
    // then older than the window, if no probe has found out first).
    loop {
        let response = serve.http("GET", "/readyz");
        if response.status == 503 {
            assert!(response.body.contains("not ready"), "{}", response.body);
            break;
        }
        assert_eq!(response.status, 200, "{}", response.body);
        assert!(
            frozen_at.elapsed() < window * 2,
            "/readyz still 200 {:?} after the freeze",
            frozen_at.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Mints: once the reserved window is used up, each needs a write; each
    // answers within its bound, with an error, not at the request timeout.
    let mut refused = 0;
    while refused < 3 {
        let asked = Instant::now();
        let response = serve.http("POST", "/api/v1/ids?count=4096");
        let took = asked.elapsed();
        assert!(
            took < mint_bound * 2,
            "a mint took {took:?} (bound {mint_bound:?}): {} {}",
            response.status,
            response.body
        );
        match response.status {
            200 => assert!(
                frozen_at.elapsed() < window + mint_bound * 2,
                "still minting {:?} after the freeze, beyond the reserved window",
                frozen_at.elapsed()
            ),
            503 => {
                assert!(response.body.contains("try again"), "{}", response.body);
                assert!(
                    !response.body.contains(&*state.to_string_lossy()),
                    "leaks the path"
                );
                refused += 1;
            }
            other => panic!("{other}: {}", response.body),
        }
    }
    assert_eq!(serve.http("GET", "/readyz").status, 503);
    assert_eq!(serve.http("GET", "/healthz").status, 200);

    // SIGTERM: the process exits within --shutdown-timeout plus a second,
    // saying why the mark was not saved. (The kernel keeps the one thread
    // stuck in the frozen filesystem, and so the exit status, until the
    // thaw: the process shows as exited, `Z`, meanwhile.)
    let pid = serve.pid();
    let stopped_at = Instant::now();
    serve.signal(Signal::TERM);
    let exit_bound = SHUTDOWN_TIMEOUT + Duration::from_secs(1);
    while proc_state(pid).is_some_and(|s| s != 'Z') {
        assert!(
            stopped_at.elapsed() < exit_bound * 2,
            "still running {:?} after SIGTERM (bound {exit_bound:?}); it said {:?}",
            stopped_at.elapsed(),
            serve.said()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    serve.wait_said("cannot persist the reservation at shutdown: ");
    let said = serve.said().join("\n");
    assert!(said.contains("did not answer within"), "{said}");
    drop(frozen);
    let status = serve.wait_exit(Duration::from_secs(30));
    assert!(!status.success(), "{status:?}");

    // The mark it left is valid and covers what was issued: a restart on
    // the thawed directory issues above every earlier ID.
    drop(serve);
    let serve = Serve::start(&[], Some(&state));
    serve.wait_ready();
    let response = serve.http("POST", "/api/v1/ids?count=1");
    assert_eq!(response.status, 200, "{}", response.body);
    let after: Vec<u64> = ids_in(&response.body).collect();
    assert!(after[0] > *before.iter().max().unwrap());
}
