//! What the tests share: running the binary as a user does, a `snowmint
//! serve` child process on a free loopback port, and plain HTTP/1.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How long a server may take to print its address (a cold start on a
/// loaded machine, or an etcd claim).
const START_LIMIT: Duration = Duration::from_secs(30);

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
    let mut cmd = Command::new(binary);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SNOWMINT_") {
            cmd.env_remove(name);
        }
    }
    cmd.env_remove("NO_COLOR").env_remove("TERM");
    cmd
}

/// What one run of the binary left behind.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `snowmint ARGS` with extra environment variables.
pub fn run_with(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = snowmint();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run snowmint");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `snowmint ARGS` with `input` on stdin.
pub fn run_stdin(args: &[&str], input: &str) -> Run {
    let mut child = snowmint()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn snowmint");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    // Written from a thread, so a child that stops reading early (a bad
    // line) cannot deadlock the test on a full pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("run snowmint");
    writer.join().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
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
    let mut cmd = snowmint();
    cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
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
            Ok(line) if banner_text(&line).is_some() => {
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

/// One HTTP/1.1 response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: String,
    pub retry_after: Option<u64>,
}

impl Response {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// Parses a response read up to EOF (`Connection: close`).
    pub fn parse(raw: &[u8]) -> Response {
        let text = String::from_utf8_lossy(raw);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no response head in {text:?}"));
        Response {
            status: head
                .get(9..12)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no status in {head:?}")),
            retry_after: header(head, "retry-after").and_then(|v| v.parse().ok()),
            body: body.to_owned(),
        }
    }
}

/// The value of header `name` in a response head.
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

/// One request on a new blocking connection (`Connection: close`).
pub fn http(addr: SocketAddr, method: &str, path: &str) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    Response::parse(&raw)
}

/// One request with extra headers on a new blocking connection
/// (`Connection: close`): the response and its head (for its headers).
pub fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (Response, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Content-Length: 0\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    let head = String::from_utf8_lossy(&raw)
        .split_once("\r\n\r\n")
        .map(|(head, _)| head.to_owned())
        .unwrap_or_default();
    (Response::parse(&raw), head)
}

/// The IDs of a `{"ids":["1","2"]}` body (every run of digits between quotes).
pub fn ids_in(body: &str) -> impl Iterator<Item = u64> + '_ {
    body.split('"').filter_map(|s| s.parse().ok())
}

/// A running `snowmint serve`; killed when dropped.
pub struct Serve {
    pub child: Child,
    pub addr: SocketAddr,
    /// Whether it announced an `https://` URL (`--tls-cert`).
    pub https: bool,
    /// The admin listener's address, when it announced one.
    pub admin: Option<SocketAddr>,
    /// Every other line it wrote to stderr so far.
    pub said: Arc<Mutex<Vec<String>>>,
    /// Every line it wrote to stderr so far, the address lines included,
    /// as written.
    pub raw: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// A start-up line as `--log-format text` writes it (`snowmint: ...`),
/// also when it was written as a JSON log event (target `snowmint::banner`).
fn banner_text(line: &str) -> Option<String> {
    if line.starts_with("snowmint: ") {
        return Some(line.to_owned());
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    (v["target"] == "snowmint::banner")
        .then(|| format!("snowmint: {}", v["message"].as_str().unwrap_or("")))
}

impl Serve {
    /// `snowmint serve --listen 127.0.0.1:0 ARGS` of the test build, with
    /// its state in `state_dir` if given.
    pub fn start(args: &[&str], state_dir: Option<&Path>) -> Serve {
        let mut cmd = snowmint();
        cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args);
        if let Some(dir) = state_dir {
            cmd.arg("--state-dir").arg(dir);
        }
        Serve::spawn(cmd)
    }

    /// Spawns `command` (a `serve` on port 0) and waits for the address it
    /// prints. Its other stderr lines are echoed into the test's output;
    /// if it exits first, the test fails with what it said.
    pub fn spawn(mut command: Command) -> Serve {
        let set_by_caller = command.get_envs().any(|(name, _)| name == "RUST_LOG");
        if std::env::var_os("RUST_LOG").is_none() && !set_by_caller {
            command.env("RUST_LOG", "warn");
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn snowmint serve");
        let stderr = child.stderr.take().unwrap();
        let said = Arc::new(Mutex::new(Vec::new()));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let admin = Arc::new(Mutex::new(None));
        let reader = {
            let said = Arc::clone(&said);
            let raw = Arc::clone(&raw);
            let admin = Arc::clone(&admin);
            std::thread::spawn(move || {
                let mut tx = Some(tx);
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    raw.lock().unwrap().push(line.clone());
                    let banner = banner_text(&line);
                    // Printed before the public line, so known by then.
                    if let Some(addr) = banner
                        .as_deref()
                        .unwrap_or("")
                        .strip_prefix("snowmint: admin (health, readiness, metrics) on ")
                        .and_then(|url| {
                            url.strip_prefix("http://")
                                .or_else(|| url.strip_prefix("https://"))
                        })
                        .and_then(|rest| rest.split('/').next())
                        .and_then(|a| a.parse::<SocketAddr>().ok())
                    {
                        *admin.lock().unwrap() = Some(addr);
                        continue;
                    }
                    let url = banner
                        .as_deref()
                        .and_then(|b| b.strip_prefix("snowmint: serving the explorer on "));
                    let addr = url.and_then(|url| {
                        let https = url.starts_with("https://");
                        let rest = url
                            .strip_prefix("http://")
                            .or_else(|| url.strip_prefix("https://"))?;
                        Some((rest.split('/').next()?.parse::<SocketAddr>().ok()?, https))
                    });
                    match (addr, tx.take()) {
                        (Some(addr), Some(tx)) => {
                            let _ = tx.send(addr);
                        }
                        (_, tx_back) => {
                            tx = tx_back;
                            eprintln!("serve: {line}");
                            said.lock().unwrap().push(line);
                        }
                    }
                }
            })
        };
        match rx.recv_timeout(START_LIMIT) {
            Ok((addr, https)) => Serve {
                child,
                addr,
                https,
                admin: *admin.lock().unwrap(),
                said,
                raw,
                reader: Some(reader),
            },
            Err(e) => {
                let _ = child.kill();
                let status = child.wait();
                panic!(
                    "snowmint serve printed no address ({e:?}, {status:?}); it said {:?}",
                    said.lock().unwrap()
                );
            }
        }
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
        let start = Instant::now();
        loop {
            let response = self.http("GET", "/readyz");
            if response.status == 200 {
                let v = response.json();
                return (
                    v["datacenter"].as_u64().unwrap(),
                    v["worker"].as_u64().unwrap(),
                );
            }
            assert!(
                start.elapsed() < START_LIMIT,
                "not ready: {} {}",
                response.status,
                response.body
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` (`-TERM`, `-KILL`, ...) to the process.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal}");
    }

    /// Waits (at most 30 s) until a stderr line contains `text`.
    pub fn wait_said(&self, text: &str) {
        let start = Instant::now();
        while !self.said.lock().unwrap().iter().any(|l| l.contains(text)) {
            assert!(
                start.elapsed() < START_LIMIT,
                "never said {text:?}: {:?}",
                self.said.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the process with SIGTERM and returns every line it wrote to
    /// stderr (but the address line), complete.
    pub fn stop_and_read(&mut self) -> Vec<String> {
        self.stop_and_read_raw();
        self.said.lock().unwrap().clone()
    }

    /// Stops the process with SIGTERM and returns every line it wrote to
    /// stderr, the address lines included, complete.
    pub fn stop_and_read_raw(&mut self) -> Vec<String> {
        self.signal("-TERM");
        let status = self.wait_exit(START_LIMIT);
        assert!(status.success(), "{status:?}");
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        self.raw.lock().unwrap().clone()
    }

    /// Waits for the process to exit, at most `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < limit, "still running after {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
