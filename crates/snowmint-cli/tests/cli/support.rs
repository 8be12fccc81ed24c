//! What the tests share: running the binary as a user does, a `snowmint
//! serve` child process on a free loopback port (the testkit's harness,
//! [`snowmint_testkit::serve`], with panics for errors), and plain HTTP/1.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use snowmint_testkit::serve::{Builder, HTTP_TIMEOUT, Output, START_LIMIT, Served, banner};
pub use snowmint_testkit::serve::{Listen, Response, header};
pub use snowmint_testkit::signal::Signal;

/// The longest a mint may take by design, with the defaults `serve` uses:
/// waiting to enter the admission lane (`max_wait`), then for the clock
/// (`max_wait`), then for a reservation write in flight and one of its own
/// (a store timeout each). Tests assert this bound, not how fast this
/// machine is; latency figures belong to the benchmarks.
pub const MINT_BOUND: Duration = Duration::from_millis(
    2 * snowmint::DEFAULT_MAX_WAIT.as_millis() as u64
        + 2 * snowmint::DEFAULT_STORE_TIMEOUT.as_millis() as u64,
);

/// How long a request that does not mint (health, readiness, the page) may
/// take while mints wait: less than one mint wait (`max_wait`), which it
/// would take at least if it waited behind one.
pub const NOT_HELD_UP: Duration = snowmint::DEFAULT_MAX_WAIT;

/// The test build's `snowmint`, with the environment that could change its
/// defaults removed.
pub fn snowmint() -> Command {
    command(Path::new(env!("CARGO_BIN_EXE_snowmint")))
}

/// The binary the service tests run: `$SNOWMINT_BIN` when set
/// (`scripts/test` points it at the release build, as operators run it),
/// else the test build's.
pub fn served_binary() -> PathBuf {
    std::env::var_os("SNOWMINT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_snowmint")))
}

/// `binary` as a command, without the `SNOWMINT_*` environment (which
/// mirrors the flags) and the colour settings of the caller.
pub fn command(binary: &Path) -> Command {
    snowmint_testkit::serve::clean_command(binary)
}

/// What one run of the binary left behind.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit status and output of a finished run.
    fn of(out: std::process::Output) -> Run {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

/// Runs `snowmint ARGS` with extra environment variables.
pub fn run_with(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = snowmint();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::of(cmd.output().expect("run snowmint"))
}

/// Starts `snowmint ARGS` with its three streams piped.
pub fn spawn_piped(args: &[&str]) -> Child {
    snowmint()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn snowmint")
}

/// Runs `snowmint ARGS` with `input` on stdin.
pub fn run_stdin(args: &[&str], input: &str) -> Run {
    let mut child = spawn_piped(args);
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    // Written from a thread, so a child that stops reading early (a bad
    // line) cannot deadlock the test on a full pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("run snowmint");
    writer.join().unwrap();
    Run::of(out)
}

/// Runs `snowmint ARGS`.
pub fn run(args: &[&str]) -> Run {
    run_with(args, &[])
}

/// Runs a command that must succeed without a word on stderr; its stdout.
pub fn ok(args: &[&str]) -> String {
    let r = run(args);
    assert_eq!(r.code, Some(0), "{args:?} failed: {}", r.stderr);
    assert_eq!(r.stderr, "", "{args:?} wrote to stderr");
    r.stdout
}

/// Runs a command that must be refused with exit status `code`: nothing on
/// stdout, exactly one line `error: ...` on stderr. Returns the message
/// after `error: `.
pub fn refused(args: &[&str], code: i32) -> String {
    refusal(args, &run(args), code)
}

/// What [`refused`] checks of a run of `args`.
fn refusal(args: &[&str], r: &Run, code: i32) -> String {
    assert_eq!(r.code, Some(code), "{args:?}: stderr {:?}", r.stderr);
    assert_eq!(r.stdout, "", "{args:?} wrote to stdout");
    assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {:?}", r.stderr);
    assert!(r.stderr.ends_with('\n'), "{:?}", r.stderr);
    r.stderr
        .trim_end()
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("{args:?}: no `error: ` prefix in {:?}", r.stderr))
        .to_owned()
}

/// A bad-input refusal: exit status 2 (see [`refused`]).
pub fn bad(args: &[&str]) -> String {
    refused(args, 2)
}

/// `snowmint serve --listen 127.0.0.1:0 ARGS` with `env`, which must be
/// refused as bad input (see [`bad`]) before it serves: one that serves
/// instead fails the test at its start-up line rather than running on.
/// Returns the message after `error: `.
pub fn bad_serve(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut child = Serve::builder()
        .args(args)
        .envs(env.iter().copied())
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn snowmint serve");
    let mut stdout = child.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).expect("stdout is UTF-8");
        text
    });
    let (tx, rx) = mpsc::channel();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    // Lines as written, their newline kept, for `refusal` to check.
    std::thread::spawn(move || {
        let mut line = String::new();
        while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
            let _ = tx.send(std::mem::take(&mut line));
        }
    });
    let start = Instant::now();
    let mut said = String::new();
    loop {
        match rx.recv_timeout(START_LIMIT.saturating_sub(start.elapsed())) {
            Ok(line) if banner(&line).is_some() => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve {args:?} with {env:?} was not refused: {line}");
            }
            Ok(line) => said.push_str(&line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve {args:?} with {env:?} neither refused nor served; it said {said:?}");
            }
        }
    }
    let run = Run {
        code: child.wait().expect("wait for snowmint serve").code(),
        stdout: stdout.join().unwrap(),
        stderr: said,
    };
    refusal(args, &run, 2)
}

/// One request on a new blocking connection (`Connection: close`).
pub fn http(addr: SocketAddr, method: &str, path: &str) -> Response {
    http_with(addr, method, path, &[]).0
}

/// One request with extra headers on a new blocking connection
/// (`Connection: close`): the response and its head (for its headers).
pub fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (Response, String) {
    snowmint_testkit::serve::request(addr, method, path, headers, HTTP_TIMEOUT)
        .unwrap_or_else(|e| panic!("{method} {path} on {addr}: {e}"))
}

/// The IDs of a `{"ids":["1","2"]}` body (every run of digits between quotes).
pub fn ids_in(body: &str) -> impl Iterator<Item = u64> + '_ {
    body.split('"').filter_map(|s| s.parse().ok())
}

/// A running `snowmint serve`, killed when dropped: the testkit's
/// [`Served`] (its `addr`, `https`, `admin`, `said()`, `lines()`, `pid()`
/// through `Deref`), with the waits below failing the test instead of
/// returning an error.
pub struct Serve(Served);

impl Deref for Serve {
    type Target = Served;

    fn deref(&self) -> &Served {
        &self.0
    }
}

impl DerefMut for Serve {
    fn deref_mut(&mut self) -> &mut Served {
        &mut self.0
    }
}

impl Serve {
    /// `snowmint serve --listen 127.0.0.1:0` of `binary` as the tests start
    /// it: without the caller's `SNOWMINT_*` and colour settings, stderr
    /// read (and echoed into the test's output as `serve: ...`),
    /// `RUST_LOG=warn` unless the caller's environment or the builder sets
    /// it, 30 s to print its address.
    pub fn builder_of(binary: &Path) -> Builder {
        Builder::new(binary)
            .clean_env()
            .output(Output::Capture { echo: true })
            .env_if_unset("RUST_LOG", "warn")
            .start_limit(START_LIMIT)
    }

    /// [`Serve::builder_of`] the test build's binary.
    pub fn builder() -> Builder {
        Serve::builder_of(Path::new(env!("CARGO_BIN_EXE_snowmint")))
    }

    /// `snowmint serve --listen 127.0.0.1:0 ARGS` of the test build, with
    /// its state in `state_dir` if given.
    pub fn start(args: &[&str], state_dir: Option<&Path>) -> Serve {
        let mut builder = Serve::builder().args(args);
        if let Some(dir) = state_dir {
            builder = builder.arg("--state-dir").arg(dir);
        }
        Serve::spawn(builder)
    }

    /// Starts `builder` and waits for the address it prints; if it exits
    /// first, the test fails with what it said.
    pub fn spawn(builder: Builder) -> Serve {
        Serve(builder.start().unwrap_or_else(|e| panic!("{e:#}")))
    }

    /// One request on a new connection.
    pub fn http(&self, method: &str, path: &str) -> Response {
        http(self.addr, method, path)
    }

    /// Mints `count` IDs, which must succeed.
    pub fn mint(&self, count: usize) -> Vec<u64> {
        let response = self.http("POST", &format!("/api/v1/ids?count={count}"));
        assert_eq!(response.status, 200, "{}", response.body);
        let ids: Vec<u64> = ids_in(&response.body).collect();
        assert_eq!(ids.len(), count, "{}", response.body);
        ids
    }

    /// Waits (at most 30 s) until `/readyz` says 200; returns the
    /// (datacenter, worker) it names.
    pub fn wait_ready(&self) -> (u64, u64) {
        self.0
            .wait_ready(START_LIMIT)
            .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: Signal) {
        self.0
            .signal(signal)
            .unwrap_or_else(|e| panic!("{signal:?}: {e}"));
    }

    /// Waits (at most 30 s) until a stderr line contains `text`.
    pub fn wait_said(&self, text: &str) {
        self.0
            .wait_line(text, START_LIMIT)
            .unwrap_or_else(|e| panic!("{e:#}"));
    }

    /// Stops the process with SIGTERM and returns every line it wrote to
    /// stderr (but the address lines), complete.
    pub fn stop_and_read(&mut self) -> Vec<String> {
        self.stop_and_read_raw();
        self.said()
    }

    /// Stops the process with SIGTERM and returns every line it wrote to
    /// stderr, the address lines included, complete.
    pub fn stop_and_read_raw(&mut self) -> Vec<String> {
        self.signal(Signal::TERM);
        let status = self.wait_exit(START_LIMIT);
        assert!(status.success(), "{status:?}");
        self.lines()
    }

    /// Waits for the process to exit (and its stderr to end), at most `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        self.0.wait_exit(limit).unwrap_or_else(|e| panic!("{e:#}"))
    }
}
