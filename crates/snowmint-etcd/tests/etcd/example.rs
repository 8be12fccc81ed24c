//! The `mint` example as real processes against one real etcd: two copies
//! run at once mint as distinct identities; a graceful stop frees its
//! identity at once (long before its lease could expire); after a SIGKILL
//! the identity is taken over only once the lease expired, and the new
//! holder issues only above everything the killed one printed (the merged
//! output checked by the chaos harness's checker). The copies
//! lease within datacenter 0, of which a filler holds every worker but two,
//! so that the identity a stop or a kill frees is the only one free.
//!
//! Skipped with a printed reason when `etcd` or `etcdctl` is missing,
//! unless SNOWMINT_REQUIRE_SERVICES=1.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use snowmint::SnowflakeId;
use snowmint_testkit::chaos::checker::{Recorder, Rules};
use snowmint_testkit::etcd::EtcdServer;

/// `target/<profile>/examples/mint`, which `cargo test -p snowmint-etcd`
/// builds (along with every example of the package) before it runs tests.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let path = profile.join("examples").join("mint");
    assert!(
        path.exists(),
        "{} is missing: `cargo test -p snowmint-etcd` builds it, `--test etcd` alone \
         does not (build it with `cargo build -p snowmint-etcd --example mint`)",
        path.display()
    );
    path
}

/// One running copy of the example.
struct Mint {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    identity: (u8, u8),
    ids: Vec<SnowflakeId>,
    /// Before it was started: it issued nothing earlier.
    spawned: Instant,
}

/// What one copy printed, from its start to its end.
struct Printed {
    spawned: Instant,
    /// Once it had exited and every line it printed was read.
    ended: Instant,
    ids: Vec<SnowflakeId>,
}

impl Mint {
    fn start(etcd: &str, prefix: &str, ttl: u64) -> Mint {
        let spawned = Instant::now();
        let mut child = Command::new(example())
            .args([etcd, prefix, &ttl.to_string(), "0"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("run {}: {e}", example().display()));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut mint = Mint {
            child,
            stdin,
            lines,
            identity: (99, 99),
            ids: Vec::new(),
            spawned,
        };
        let first = mint
            .line(Duration::from_secs(30))
            .expect("an identity line");
        let parts: Vec<&str> = first.split(' ').collect();
        assert_eq!(parts.len(), 3, "{first}");
        assert_eq!(parts[0], "identity", "{first}");
        mint.identity = (parts[1].parse().unwrap(), parts[2].parse().unwrap());
        mint
    }

    fn line(&self, limit: Duration) -> Option<String> {
        self.lines.recv_timeout(limit).ok()
    }

    /// Reads until `n` more IDs have been printed.
    fn read_ids(&mut self, n: usize) {
        let want = self.ids.len() + n;
        let start = Instant::now();
        while self.ids.len() < want {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{:?} printed {} IDs",
                self.identity,
                self.ids.len()
            );
            let line = self
                .line(Duration::from_secs(30))
                .expect("the example prints IDs");
            let id: SnowflakeId = line.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
            assert_eq!((id.datacenter(), id.worker()), self.identity, "{id}");
            self.ids.push(id);
        }
    }

    /// Graceful stop: `stop` on stdin; the IDs printed before `stopped`
    /// are kept.
    fn stop(mut self) -> Printed {
        writeln!(self.stdin.as_mut().unwrap(), "stop").unwrap();
        loop {
            let line = self
                .line(Duration::from_secs(20))
                .expect("the example says stopped");
            if line == "stopped" {
                break;
            }
            self.ids.push(line.parse().unwrap());
        }
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        self.printed()
    }

    fn printed(&mut self) -> Printed {
        Printed {
            spawned: self.spawned,
            ended: Instant::now(),
            ids: std::mem::take(&mut self.ids),
        }
    }

    /// SIGKILL: no revoke, the lease is left to expire.
    fn kill(mut self) -> Printed {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        // Whatever it printed before it died was issued too.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
            if let Ok(id) = line.parse() {
                self.ids.push(id);
            }
        }
        self.printed()
    }
}

impl Drop for Mint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn etcdctl_get(etcd: &str, key: &str) -> String {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", etcd, "get", key, "--print-value-only"])
        .output()
        .expect("etcdctl");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn two_copies_mint_as_two_identities_and_hand_over_on_stop_and_after_a_kill() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    if Command::new("etcdctl").arg("version").output().is_err() {
        snowmint_testkit::skip::<()>(
            "the `etcdctl` binary is not installed (apt-get install etcd-client)",
        );
        return;
    }
    let url = etcd.url();
    // Workers 2..=31 of datacenter 0 held by a filler, for the whole test.
    snowmint_testkit::etcd::hold_keys(
        &url,
        (2..32).map(|worker| format!("/example/identities/0/{worker}")),
        600,
    );
    // a's lease is long: if its identity is free soon, it was revoked.
    let mut a = Mint::start(&url, "/example", 30);
    let mut b = Mint::start(&url, "/example", 2);
    let mut two = [a.identity, b.identity];
    two.sort_unstable();
    assert_eq!(
        two,
        [(0, 0), (0, 1)],
        "distinct identities, the two free ones"
    );
    let (a_identity, b_identity) = (a.identity, b.identity);
    a.read_ids(300);
    b.read_ids(300);

    let a_out = a.stop();
    assert_eq!(
        etcdctl_get(&url, &format!("/example/identities/0/{}", a_identity.1)),
        "",
        "a's identity is free at once"
    );
    let mut c = Mint::start(&url, "/example", 30);
    assert_eq!(
        c.identity, a_identity,
        "a's identity, long before its lease could expire"
    );
    c.read_ids(300);

    b.read_ids(100);
    let b_out = b.kill();
    let b_max = *b_out.ids.iter().max().unwrap();
    let b_key = format!("/example/identities/0/{}", b_identity.1);
    assert_ne!(etcdctl_get(&url, &b_key), "", "b's lease outlives it");
    let mark: u64 = etcdctl_get(&url, &format!("/example/reserved/0/{}", b_identity.1))
        .parse()
        .unwrap();
    assert!(
        mark >= b_max.timestamp_ms(),
        "mark {mark} below b's last ID {b_max}"
    );
    let start = Instant::now();
    while !etcdctl_get(&url, &b_key).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "b's lease never expired"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut d = Mint::start(&url, "/example", 2);
    assert_eq!(
        d.identity, b_identity,
        "d takes over the killed copy's identity"
    );
    d.read_ids(300);

    let c_out = c.stop();
    let d_out = d.stop();
    // Each copy's output as one mint, from its start to its end: no
    // duplicate across copies; each copy's IDs strictly increase; c issued
    // only after a had stopped and above all of a's IDs, d only after b had
    // been killed and above all of b's; every copy printed IDs.
    let mut log = Recorder::since(a_out.spawned);
    for (name, out) in [("a", a_out), ("b", b_out), ("c", c_out), ("d", d_out)] {
        log.record(
            name,
            out.spawned,
            out.ended,
            out.ids.iter().map(|id| id.get()),
        );
    }
    let rules = Rules {
        every_instance_mints: 4,
        one_minter_each: true,
        one_tenure_each: true,
    };
    if let Err(why) = log.verdict(&rules) {
        panic!("the copies' output: {why}");
    }
}
