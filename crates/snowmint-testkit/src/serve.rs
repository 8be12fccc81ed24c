//! `snowmint serve` as a child process: the one harness that the CLI's
//! tests, the chaos run and the scale run start their servers with.
//!
//! A [`Builder`] says how to start it: the binary (optionally through a
//! wrapper such as `sh -c 'ulimit -n 64 && exec "$0" "$@"'`, see
//! [`Builder::via`]), the flags after `serve --listen ADDR`, the
//! environment (with [`Builder::clean_env`] none of the caller's
//! `SNOWMINT_*`, which mirror the flags), where its output goes
//! ([`Output`]: read into memory line by line, handed to the caller, or
//! written to a file), which address it listens on ([`Listen`]: a port the
//! OS picks, or a fixed address it comes back to on every restart),
//! whether it leads a process group of its own and whether dropping it
//! kills it. [`Builder::start`] spawns it and returns once it has started:
//!
//! - with its output read (`Capture`, `Pipe`), once it announced its
//!   address (`snowmint: serving the explorer on URL`, or the same line as
//!   a JSON log event): that is how a port picked by the OS is learned,
//!   along with whether it serves HTTPS and its admin listener's address;
//! - else (a log file, or nothing), once the listening socket on its fixed
//!   address belongs to it ([`Served::wait_owns_socket`]): a port found
//!   free beforehand can be taken by another process meanwhile, and an
//!   answer from there must not pass for this one's.
//!
//! A process that exits first, or does not start within
//! [`Builder::start_limit`], is an error naming what it said (or the tail
//! of its log). [`start_all`] starts several at once.
//!
//! The [`Served`] process then answers the rest: [`Served::wait_ready`]
//! (`/readyz` says 200; its identity), [`Served::http`] and [`request`] (a
//! small HTTP/1.1 client over a real socket, one connection a request),
//! [`Served::signal`], [`Served::wait_line`] (a line of its captured
//! output), [`Served::wait_exit`] (bounded), [`Served::lines`] and
//! [`Served::said`] (what it wrote), [`Served::kill`].
//!
//! # Blocking, not async
//!
//! The harness blocks: a [`std::process::Child`], and waits that poll with
//! `std::thread::sleep`. Most of its callers are the CLI's tests, which
//! are synchronous, and a blocking core needs no runtime there; the tokio
//! callers (the chaos and scale runs) move the [`Builder`], or the
//! [`Served`] (it is `Send`), into `tokio::task::spawn_blocking` for the
//! waits, which run at start-up and take at most their limit. One core
//! serves both; an async one would need a runtime in every test, and a
//! second, async copy of each wait is what this module replaced.
//! [`Served::kill`] and dropping block only to reap a process that was
//! sent SIGKILL, which does not wait on it. Waits that only watch
//! ([`Served::wait_ready`], [`Served::wait_line`],
//! [`Served::wait_owns_socket`]) take `&self` and tell an exited process
//! from `/proc` (a zombie counts as exited), so that they never reap it.
//!
//! HTTPS (`--tls-cert`) is announced ([`Served::https`]) but not spoken:
//! [`Served::http`] and [`Served::wait_ready`] are plain HTTP.

use std::ffi::{OsStr, OsString};
use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::signal::{self, Signal};

/// How long a server may take to start by default (a cold start on a
/// loaded machine, or a lease claimed from the coordinator).
pub const START_LIMIT: Duration = Duration::from_secs(30);

/// How long [`Served::http`] waits for the connection, and for each read
/// of the answer.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one `/readyz` of [`Served::wait_ready`] may take before it
/// asks again.
const READY_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Which address the server listens on (`--listen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// `127.0.0.1:0`: a port the OS picks, learned from the line announcing
    /// it (so the output must be read: [`Output::Capture`] or [`Output::Pipe`]).
    Ephemeral,
    /// This address on every start, so a restarted process comes back where
    /// its clients look for it (one from [`crate::etcd::unused_addr`] is no
    /// other test's).
    Fixed(SocketAddr),
}

/// Where the server's output goes. Its stdin is always `/dev/null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Both streams to `/dev/null`.
    Null,
    /// stderr read line by line into memory ([`Served::lines`],
    /// [`Served::said`]) until it closes; stdout to `/dev/null`. With
    /// `echo`, each line but the address lines is also printed to this
    /// process's stderr as `NAME: LINE` (a test's output shows it).
    Capture {
        /// Whether to print the lines as they come.
        echo: bool,
    },
    /// stderr read only until the address line, then left to the caller
    /// ([`Served::take_stderr`]), who may also leave it unread; stdout to
    /// `/dev/null`.
    Pipe,
    /// stdout and stderr written to this file, created or truncated.
    File(PathBuf),
    /// stdout and stderr appended to this file (created if missing): one
    /// log across restarts.
    Append(PathBuf),
}

impl Output {
    fn reads_lines(&self) -> bool {
        matches!(self, Output::Capture { .. } | Output::Pipe)
    }

    fn log(&self) -> Option<&Path> {
        match self {
            Output::File(path) | Output::Append(path) => Some(path),
            _ => None,
        }
    }
}

/// How to start one `snowmint serve`: `BINARY serve --listen ADDR ARGS...`.
#[derive(Debug, Clone)]
pub struct Builder {
    binary: PathBuf,
    via: Option<(PathBuf, Vec<OsString>)>,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    env_if_unset: Vec<(OsString, OsString)>,
    clean_env: bool,
    name: String,
    listen: Listen,
    output: Output,
    start_limit: Duration,
    kill_on_drop: bool,
    process_group: bool,
}

impl Builder {
    /// `binary serve --listen 127.0.0.1:0`, named `serve` in messages, its
    /// output to `/dev/null`, started within [`START_LIMIT`], killed when
    /// dropped, in this process's group, with this process's environment.
    pub fn new(binary: impl Into<PathBuf>) -> Builder {
        Builder {
            binary: binary.into(),
            via: None,
            args: Vec::new(),
            env: Vec::new(),
            env_if_unset: Vec::new(),
            clean_env: false,
            name: "serve".to_owned(),
            listen: Listen::Ephemeral,
            output: Output::Null,
            start_limit: START_LIMIT,
            kill_on_drop: true,
            process_group: false,
        }
    }

    /// What messages (and echoed lines) call the process.
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = name.into();
        self
    }

    /// One flag (or value) after `serve --listen ADDR`.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Builder {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Flags after `serve --listen ADDR`.
    pub fn args<I, S>(mut self, args: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable of the process.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Builder {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Sets environment variables of the process (a
    /// [`FakeClock`](crate::clock::FakeClock)'s `env()`, say).
    pub fn envs<I, K, V>(mut self, vars: I) -> Builder
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (key, value) in vars {
            self = self.env(key, value);
        }
        self
    }

    /// Sets `key` when [`Builder::start`] spawns the process, unless this
    /// process's environment has it or [`Builder::env`] sets it (a default
    /// log level the person running the tests can override).
    pub fn env_if_unset(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Builder {
        self.env_if_unset
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Leaves out of the process's environment what [`clean_command`]
    /// leaves out (variables set with [`Builder::env`] still apply).
    pub fn clean_env(mut self) -> Builder {
        self.clean_env = true;
        self
    }

    /// Runs the binary through `program ARGS... BINARY serve ...`: a shell
    /// that sets a limit and `exec`s it (`sh -c 'ulimit -n 64 && exec "$0"
    /// "$@"'`), so that the process is still the server's.
    pub fn via<I, S>(mut self, program: impl Into<PathBuf>, args: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        self.via = Some((program.into(), args));
        self
    }

    /// The address it listens on.
    pub fn listen(mut self, listen: Listen) -> Builder {
        self.listen = listen;
        self
    }

    /// Where its output goes.
    pub fn output(mut self, output: Output) -> Builder {
        self.output = output;
        self
    }

    /// How long it may take to start.
    pub fn start_limit(mut self, limit: Duration) -> Builder {
        self.start_limit = limit;
        self
    }

    /// Whether dropping the [`Served`] kills it (with SIGKILL, and reaps
    /// it): yes unless told otherwise.
    pub fn kill_on_drop(mut self, kill: bool) -> Builder {
        self.kill_on_drop = kill;
        self
    }

    /// Starts it as the leader of a process group of its own: what it
    /// starts is killed with it, and [`Served::signal_group`] reaches all
    /// of it (a harness that kills its own group to clean up then no longer
    /// reaches it).
    pub fn process_group(mut self) -> Builder {
        self.process_group = true;
        self
    }

    /// The listen address as the flag's value.
    fn listen_arg(&self) -> String {
        match self.listen {
            Listen::Ephemeral => "127.0.0.1:0".to_owned(),
            Listen::Fixed(addr) => addr.to_string(),
        }
    }

    /// The command [`Builder::start`] runs, without what only `start` adds
    /// (the output's wiring, stdin, [`Builder::env_if_unset`], the process
    /// group): for a run that must be refused at start, run to its exit with
    /// `output()`.
    pub fn command(&self) -> Command {
        let mut cmd = match &self.via {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(&self.binary);
                cmd
            }
            None => Command::new(&self.binary),
        };
        if self.clean_env {
            clean(&mut cmd);
        }
        cmd.args(["serve", "--listen", &self.listen_arg()])
            .args(&self.args);
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        cmd
    }

    /// Spawns the process and waits until it has started (see the
    /// [module](self) docs).
    ///
    /// # Errors
    ///
    /// When it cannot be spawned, exits first, or has not started within
    /// the start limit (it is killed then); or when an ephemeral port is
    /// asked for with an output that is not read.
    pub fn start(self) -> anyhow::Result<Served> {
        self.launch()?.settle()
    }

    fn launch(self) -> anyhow::Result<Launched> {
        if self.listen == Listen::Ephemeral && !self.output.reads_lines() {
            bail!(
                "{}: an ephemeral port is learned from its output: capture or pipe it",
                self.name
            );
        }
        let mut cmd = self.command();
        for (key, value) in &self.env_if_unset {
            let set_here = self.env.iter().any(|(k, _)| k == key);
            if std::env::var_os(key).is_none() && !set_here {
                cmd.env(key, value);
            }
        }
        if self.process_group {
            cmd.process_group(0);
        }
        cmd.stdin(Stdio::null());
        match &self.output {
            Output::Null => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
            Output::Capture { .. } | Output::Pipe => {
                cmd.stdout(Stdio::null()).stderr(Stdio::piped());
            }
            Output::File(path) | Output::Append(path) => {
                let append = matches!(self.output, Output::Append(_));
                let log = OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(append)
                    .truncate(!append)
                    .open(path)
                    .with_context(|| format!("open {}", path.display()))?;
                cmd.stdout(log.try_clone()?).stderr(log);
            }
        }
        let program = self.via.as_ref().map_or(&self.binary, |(p, _)| p);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("spawn {}", program.display()))?;
        let started = Instant::now();
        let hand_off = self.output == Output::Pipe;
        let lines = Arc::new(Mutex::new(Lines::default()));
        let (announced, reader) = match child.stderr.take() {
            Some(stderr) => {
                let (tx, rx) = mpsc::channel();
                let echo = matches!(self.output, Output::Capture { echo: true })
                    .then(|| self.name.clone());
                let lines = Arc::clone(&lines);
                let reader =
                    std::thread::spawn(move || read_stderr(stderr, &lines, &tx, echo, hand_off));
                (Some(rx), Some(reader))
            }
            None => (None, None),
        };
        let served = Served {
            addr: match self.listen {
                Listen::Fixed(addr) => addr,
                Listen::Ephemeral => SocketAddr::from(([127, 0, 0, 1], 0)),
            },
            https: false,
            admin: None,
            name: self.name,
            child,
            exited: None,
            lines: self.output.reads_lines().then_some(lines),
            reader,
            stderr: None,
            log: self.output.log().map(Path::to_owned),
            kill_on_drop: self.kill_on_drop,
            group: self.process_group,
        };
        Ok(Launched {
            served,
            announced,
            hand_off,
            deadline: started + self.start_limit,
            limit: self.start_limit,
        })
    }
}

/// Starts every one of `builders` at once, then waits until each has
/// started (see [`Builder::start`]): many servers start in the time of one.
///
/// # Errors
///
/// As [`Builder::start`], for the first that fails; those already spawned
/// are then dropped (killed, unless told otherwise).
pub fn start_all(builders: impl IntoIterator<Item = Builder>) -> anyhow::Result<Vec<Served>> {
    let launched = builders
        .into_iter()
        .map(Builder::launch)
        .collect::<anyhow::Result<Vec<_>>>()?;
    launched.into_iter().map(Launched::settle).collect()
}

/// A process spawned and not yet known to have started.
struct Launched {
    served: Served,
    /// The address line, from the stderr reader.
    announced: Option<mpsc::Receiver<Announced>>,
    /// Whether the reader hands stderr over after the address line.
    hand_off: bool,
    deadline: Instant,
    limit: Duration,
}

impl Launched {
    fn settle(self) -> anyhow::Result<Served> {
        let Launched {
            mut served,
            announced,
            hand_off,
            deadline,
            limit,
        } = self;
        let Some(announced) = announced else {
            served.wait_started(deadline.saturating_duration_since(Instant::now()))?;
            return Ok(served);
        };
        match announced.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(start) => {
                served.addr = start.addr;
                served.https = start.https;
                served.admin = start.admin;
                if hand_off {
                    // The reader returns right after the address line.
                    if let Some(reader) = served.reader.take() {
                        served.stderr = reader.join().ok().flatten();
                    }
                }
                Ok(served)
            }
            Err(e) => {
                let status = match e {
                    mpsc::RecvTimeoutError::Timeout => {
                        let _ = served.kill();
                        format!("not within {limit:?}")
                    }
                    mpsc::RecvTimeoutError::Disconnected => {
                        match served.wait_exit(deadline.saturating_duration_since(Instant::now())) {
                            Ok(status) => format!("it exited with {status}"),
                            Err(e) => format!("its output ended: {e:#}"),
                        }
                    }
                };
                bail!(
                    "{} printed no address ({status}); it said {:?}",
                    served.name,
                    served.said()
                )
            }
        }
    }
}

/// What the process wrote to stderr, as the reader saw it.
#[derive(Debug, Default)]
struct Lines {
    /// Every line, the address lines included, as written.
    all: Vec<String>,
    /// Every line but the address lines.
    said: Vec<String>,
}

/// The addresses the process announced at start.
#[derive(Debug, Clone, Copy)]
struct Announced {
    addr: SocketAddr,
    https: bool,
    admin: Option<SocketAddr>,
}

/// Reads `stderr` line by line into `lines`, sending the public address
/// on `announced` when its line comes; with `hand_off`, returns the reader
/// right after that line (the rest is the caller's), else reads to the end.
fn read_stderr(
    stderr: ChildStderr,
    lines: &Mutex<Lines>,
    announced: &mpsc::Sender<Announced>,
    echo: Option<String>,
    hand_off: bool,
) -> Option<BufReader<ChildStderr>> {
    let mut reader = BufReader::new(stderr);
    let mut waiting = true;
    let mut admin = None;
    let mut buf = String::new();
    loop {
        buf.clear();
        if !reader.read_line(&mut buf).is_ok_and(|n| n > 0) {
            return None;
        }
        let line = buf.strip_suffix('\n').unwrap_or(&buf);
        let line = line.strip_suffix('\r').unwrap_or(line).to_owned();
        lines.lock().unwrap().all.push(line.clone());
        let banner = banner(&line);
        let banner = banner.as_deref().unwrap_or("");
        // Printed before the public line, so known by then.
        if let Some(addr) = banner
            .strip_prefix("snowmint: admin (health, readiness, metrics) on ")
            .and_then(url_addr)
        {
            admin = Some(addr.0);
            continue;
        }
        let public = banner
            .strip_prefix("snowmint: serving the explorer on ")
            .and_then(url_addr);
        match public {
            Some((addr, https)) if waiting => {
                waiting = false;
                let _ = announced.send(Announced { addr, https, admin });
                if hand_off {
                    return Some(reader);
                }
            }
            _ => {
                if let Some(name) = &echo {
                    eprintln!("{name}: {line}");
                }
                lines.lock().unwrap().said.push(line);
            }
        }
    }
}

/// The address of `http://ADDR/...` or `https://ADDR/...`, and whether it
/// is HTTPS.
fn url_addr(url: &str) -> Option<(SocketAddr, bool)> {
    let https = url.starts_with("https://");
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    Some((rest.split('/').next()?.parse().ok()?, https))
}

/// A start-up line as `--log-format text` writes it (`snowmint: ...`),
/// also when it was written as a JSON log event (target
/// `snowmint::banner`): what a server that started says first.
pub fn banner(line: &str) -> Option<String> {
    if line.starts_with("snowmint: ") {
        return Some(line.to_owned());
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    (v["target"] == "snowmint::banner")
        .then(|| format!("snowmint: {}", v["message"].as_str().unwrap_or("")))
}

/// Removes what the environment of a test run could change a `snowmint`
/// run's defaults with: the `SNOWMINT_*` variables (which mirror the
/// flags) and the colour settings (`NO_COLOR`, `TERM`).
fn clean(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SNOWMINT_") {
            cmd.env_remove(name);
        }
    }
    cmd.env_remove("NO_COLOR").env_remove("TERM");
}

/// `program` as a command, without the `SNOWMINT_*` environment of this
/// process (which mirrors the flags) and its colour settings (`NO_COLOR`,
/// `TERM`): a `snowmint` run as a user with no such settings runs it.
pub fn clean_command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    clean(&mut cmd);
    cmd
}

/// The last `lines` lines of the file at `path`, joined with ` | `, for
/// one-line messages (empty when it cannot be read).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// A running (or exited, not yet dropped) `snowmint serve`.
#[derive(Debug)]
pub struct Served {
    /// The public listener's address: announced, or the fixed one.
    pub addr: SocketAddr,
    /// Whether it announced an `https://` URL (`--tls-cert`); `false`
    /// when its output is not read.
    pub https: bool,
    /// The admin listener's address, when it announced one.
    pub admin: Option<SocketAddr>,
    name: String,
    child: Child,
    /// Its exit status, once reaped (after which its pid may be another's).
    exited: Option<ExitStatus>,
    lines: Option<Arc<Mutex<Lines>>>,
    reader: Option<JoinHandle<Option<BufReader<ChildStderr>>>>,
    /// With [`Output::Pipe`], its stderr after the address line.
    stderr: Option<BufReader<ChildStderr>>,
    log: Option<PathBuf>,
    kill_on_drop: bool,
    group: bool,
}

impl Served {
    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What messages call it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file its output goes to, if any.
    pub fn log(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    /// The last `lines` lines of its log file (see [`tail`]), or of its
    /// captured output; empty when neither.
    pub fn log_tail(&self, lines: usize) -> String {
        match &self.log {
            Some(log) => tail(log, lines),
            None => {
                let all = self.lines();
                all[all.len().saturating_sub(lines)..].join(" | ")
            }
        }
    }

    /// Its stderr after the address line, with [`Output::Pipe`] (once).
    pub fn take_stderr(&mut self) -> Option<BufReader<ChildStderr>> {
        self.stderr.take()
    }

    /// Every line it wrote to stderr so far, the address lines included,
    /// as written (with [`Output::Capture`]; up to the address line with
    /// [`Output::Pipe`]; else none).
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .as_ref()
            .map(|l| l.lock().unwrap().all.clone())
            .unwrap_or_default()
    }

    /// Every line it wrote to stderr so far but the address lines (see
    /// [`Served::lines`]).
    pub fn said(&self) -> Vec<String> {
        self.lines
            .as_ref()
            .map(|l| l.lock().unwrap().said.clone())
            .unwrap_or_default()
    }

    /// Whether it has exited (a zombie not yet reaped counts).
    pub fn exited(&self) -> bool {
        self.exited.is_some() || signal::exited(self.pid())
    }

    /// Its exit status if it has exited (reaping it), `None` while it runs.
    ///
    /// # Errors
    ///
    /// When waiting fails.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait()?;
        }
        Ok(self.exited)
    }

    /// Waits until it has exited (and, with its output captured, until that
    /// output has ended, so that [`Served::lines`] holds all of it), at
    /// most `limit`.
    ///
    /// # Errors
    ///
    /// When it still runs after `limit`, or its output is still open.
    pub fn wait_exit(&mut self, limit: Duration) -> anyhow::Result<ExitStatus> {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.try_wait()? {
                break status;
            }
            if start.elapsed() > limit {
                bail!("{} still running after {limit:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if let Some(reader) = self.reader.take() {
            while !reader.is_finished() {
                if start.elapsed() > limit {
                    self.reader = Some(reader);
                    bail!(
                        "{} exited ({status}) but its stderr is still open after {limit:?}",
                        self.name
                    );
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = reader.join();
        }
        Ok(status)
    }

    /// Sends `signal` to the process.
    ///
    /// # Errors
    ///
    /// When it has been reaped already, or the signal cannot be sent.
    pub fn signal(&self, signal: Signal) -> io::Result<()> {
        if self.exited.is_some() {
            return Err(io::Error::other(format!("{} has exited", self.name)));
        }
        signal::send(self.pid(), signal)
    }

    /// Sends `signal` to its whole process group (see
    /// [`Builder::process_group`]).
    ///
    /// # Errors
    ///
    /// When it does not lead a group of its own, has been reaped, or the
    /// signal cannot be sent.
    pub fn signal_group(&self, signal: Signal) -> io::Result<()> {
        if !self.group {
            return Err(io::Error::other(format!(
                "{} leads no process group of its own",
                self.name
            )));
        }
        if self.exited.is_some() {
            return Err(io::Error::other(format!("{} has exited", self.name)));
        }
        signal::send_group(self.pid(), signal)
    }

    /// Kills it with SIGKILL (its group too, if it leads one) and reaps it;
    /// `false` when it had exited already.
    ///
    /// # Errors
    ///
    /// When it cannot be killed or reaped.
    pub fn kill(&mut self) -> io::Result<bool> {
        if self.exited.is_some() {
            return Ok(false);
        }
        // Whether it ran is asked before any signal, without reaping it:
        // the group's SIGKILL can end the leader before a later look, which
        // would then report this kill as an exit of its own.
        let ran = !signal::exited(self.pid());
        if self.group {
            // Before reaping the leader, whose pid (a zombie until then)
            // names the group: what it started dies even when it has exited.
            let _ = signal::send_group(self.pid(), Signal::KILL);
        }
        if self.try_wait()?.is_none() {
            self.child.kill()?;
        }
        self.exited = Some(self.child.wait()?);
        Ok(ran)
    }

    /// Waits until the socket listening on its address belongs to it (see
    /// [`crate::etcd::listener_owned_by`]), at most `limit`.
    ///
    /// # Errors
    ///
    /// When it exits first (with the tail of its log), or the socket is not
    /// its own after `limit`.
    pub fn wait_owns_socket(&self, limit: Duration) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            if self.exited() {
                bail!(
                    "{} exited before it listened on {}: {}",
                    self.name,
                    self.addr,
                    self.log_tail(5)
                );
            }
            match crate::etcd::listener_owned_by(self.addr, self.pid()) {
                Ok(()) => return Ok(()),
                Err(e) if start.elapsed() > limit => {
                    bail!("{} did not listen within {limit:?}: {e}", self.name);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// [`Served::wait_owns_socket`] at start: an exit is one at start
    /// (with its status), and a process that does not listen is killed.
    fn wait_started(&mut self, limit: Duration) -> anyhow::Result<()> {
        let Err(e) = self.wait_owns_socket(limit) else {
            return Ok(());
        };
        if let Some(status) = self.try_wait()? {
            bail!(
                "{} exited at start with {status}: {}",
                self.name,
                self.log_tail(5)
            );
        }
        let _ = self.kill();
        Err(e)
    }

    /// Waits until `GET /readyz` on its address answers 200, at most
    /// `limit`; returns the (datacenter, worker) the answer names.
    ///
    /// # Errors
    ///
    /// When it exits first, is not ready after `limit` (with its last
    /// answer), or its 200 names no identity.
    pub fn wait_ready(&self, limit: Duration) -> anyhow::Result<(u64, u64)> {
        let start = Instant::now();
        let mut last = "no answer".to_owned();
        loop {
            if self.exited() {
                bail!(
                    "{} exited before it was ready ({last}): {}",
                    self.name,
                    self.log_tail(5)
                );
            }
            let left = limit.saturating_sub(start.elapsed());
            let timeout = left
                .min(READY_REQUEST_TIMEOUT)
                .max(Duration::from_millis(100));
            match request(self.addr, "GET", "/readyz", &[], timeout) {
                Ok((response, _)) if response.status == 200 => {
                    let v: serde_json::Value = serde_json::from_str(&response.body)
                        .with_context(|| format!("{}: /readyz {:?}", self.name, response.body))?;
                    let field = |name: &str| {
                        v[name].as_u64().with_context(|| {
                            format!("{}: no {name} in /readyz {:?}", self.name, response.body)
                        })
                    };
                    return Ok((field("datacenter")?, field("worker")?));
                }
                Ok((response, _)) => last = format!("{} {}", response.status, response.body),
                Err(e) => last = e.to_string(),
            }
            if start.elapsed() >= limit {
                bail!("{} not ready after {limit:?}: {last}", self.name);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until a line it wrote to stderr (but the address lines)
    /// contains `text`, at most `limit`; returns that line. Needs
    /// [`Output::Capture`].
    ///
    /// # Errors
    ///
    /// When no such line came within `limit`, or its output ended (or is
    /// not captured) without one.
    pub fn wait_line(&self, text: &str, limit: Duration) -> anyhow::Result<String> {
        let Some(lines) = &self.lines else {
            bail!("{}'s output is not captured", self.name);
        };
        let start = Instant::now();
        loop {
            // Whether the output had ended before this look at it.
            let ended = self.reader.as_ref().is_none_or(JoinHandle::is_finished);
            let said = lines.lock().unwrap().said.clone();
            if let Some(line) = said.iter().find(|l| l.contains(text)) {
                return Ok(line.clone());
            }
            if ended {
                bail!(
                    "{} never said {text:?} (its output ended): {said:?}",
                    self.name
                );
            }
            if start.elapsed() > limit {
                bail!(
                    "{} never said {text:?} within {limit:?}: {said:?}",
                    self.name
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One request on a new connection to its address (see [`request`],
    /// with [`HTTP_TIMEOUT`]).
    ///
    /// # Errors
    ///
    /// As [`request`].
    pub fn http(&self, method: &str, path: &str) -> io::Result<Response> {
        request(self.addr, method, path, &[], HTTP_TIMEOUT).map(|(response, _)| response)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.kill_on_drop {
            let _ = self.kill();
        }
    }
}

/// One HTTP/1.1 response.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body (not UTF-8 bytes replaced).
    pub body: String,
    /// `Retry-After`, in seconds.
    pub retry_after: Option<u64>,
}

impl Response {
    /// The body as JSON.
    ///
    /// # Panics
    ///
    /// When it is not JSON (a test helper).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// Parses a response read up to EOF (`Connection: close`): the
    /// response and its head (for its headers).
    ///
    /// # Errors
    ///
    /// When there is no head or no status in it.
    pub fn parse(raw: &[u8]) -> io::Result<(Response, String)> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let text = String::from_utf8_lossy(raw);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| bad(format!("no response head in {text:?}")))?;
        let response = Response {
            status: head
                .get(9..12)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(format!("no status in {head:?}")))?,
            retry_after: header(head, "retry-after").and_then(|v| v.parse().ok()),
            body: body.to_owned(),
        };
        Ok((response, head.to_owned()))
    }
}

/// The value of header `name` in a response head.
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

/// One request with `headers` on a new connection (`Connection: close`,
/// no body), `timeout` for the connection and for each read and write:
/// the response and its head.
///
/// # Errors
///
/// When it cannot connect, a read or write fails or times out, or the
/// answer is not an HTTP response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> io::Result<(Response, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Content-Length: 0\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Response::parse(&raw)
}

#[cfg(test)]
mod tests {
    //! The harness against stand-ins for `snowmint serve`: `sh` scripts
    //! that print its start-up lines, and a Python HTTP server on a fixed
    //! address (run through [`Builder::via`], which hands them the
    //! `serve --listen ADDR ...` arguments).

    use super::*;

    const ADMIN: &str = "snowmint: admin (health, readiness, metrics) on http://127.0.0.1:7/";
    const PUBLIC: &str = "snowmint: serving the explorer on https://127.0.0.1:9/ (test)";

    /// `sh -c SCRIPT` in place of the binary (`$0` is the binary, `$@` the
    /// `serve` arguments).
    fn sh(script: &str) -> Builder {
        Builder::new("snowmint-stand-in")
            .via("sh", ["-c", script])
            .start_limit(Duration::from_secs(10))
    }

    #[test]
    fn the_announced_addresses_are_learned_and_the_rest_is_captured() {
        let script =
            format!("echo '{ADMIN}' >&2; echo '{PUBLIC}' >&2; echo \"args $*\" >&2; exec sleep 30");
        let mut served = sh(&script)
            .arg("--flag")
            .output(Output::Capture { echo: false })
            .start()
            .unwrap();
        assert_eq!(served.addr, "127.0.0.1:9".parse().unwrap());
        assert!(served.https);
        assert_eq!(served.admin, Some("127.0.0.1:7".parse().unwrap()));
        let line = served.wait_line("args", Duration::from_secs(10)).unwrap();
        assert_eq!(line, "args serve --listen 127.0.0.1:0 --flag");
        assert_eq!(served.said(), [line.as_str()]);
        assert_eq!(served.lines(), [ADMIN, PUBLIC, &line]);
        served.signal(Signal::TERM).unwrap();
        let status = served.wait_exit(Duration::from_secs(10)).unwrap();
        assert!(!status.success(), "{status:?}");
        assert!(!served.kill().unwrap(), "already exited");
        assert!(served.signal(Signal::TERM).is_err(), "reaped");
    }

    #[test]
    fn a_json_banner_counts_and_env_defaults_give_way() {
        let line = r#"{"level":"INFO","target":"snowmint::banner","message":"serving the explorer on http://127.0.0.1:9/"}"#;
        let script = format!("echo '{line}' >&2; echo \"$A $B\" >&2; exec sleep 30");
        let served = sh(&script)
            .env("A", "set")
            .env_if_unset("A", "default")
            .env_if_unset("B", "default")
            .output(Output::Capture { echo: true })
            .start()
            .unwrap();
        assert!(!served.https);
        served
            .wait_line("set default", Duration::from_secs(10))
            .unwrap();
    }

    #[test]
    fn an_exit_before_the_address_is_an_error_with_what_it_said() {
        let e = sh("echo 'error: no' >&2; exit 2")
            .name("bad")
            .output(Output::Capture { echo: false })
            .start()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("bad printed no address (it exited with "),
            "{e}"
        );
        assert!(e.contains("\"error: no\""), "{e}");
        let e = sh("exec sleep 30")
            .output(Output::Capture { echo: false })
            .start_limit(Duration::from_millis(300))
            .start()
            .unwrap_err()
            .to_string();
        assert!(e.contains("not within 300ms"), "{e}");
    }

    #[test]
    fn a_piped_stderr_is_handed_over_after_the_address() {
        let script = format!("echo before >&2; echo '{PUBLIC}' >&2; echo after >&2; exec sleep 30");
        let mut served = sh(&script).output(Output::Pipe).start().unwrap();
        let mut stderr = served.take_stderr().unwrap();
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        assert_eq!(line, "after\n");
        assert_eq!(served.said(), ["before"]);
        assert!(served.kill().unwrap());
    }

    #[test]
    fn a_fixed_address_needs_a_log_or_a_socket_it_owns() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serve.log");
        std::fs::write(&log, "earlier run\n").unwrap();
        let addr = crate::etcd::unused_addr();
        let e = sh("echo \"said $3\"; exit 3")
            .name("i0")
            .listen(Listen::Fixed(addr))
            .output(Output::Append(log.clone()))
            .start()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!("i0 exited at start with exit status: 3: earlier run | said {addr}")
        );
        let e = sh("exec sleep 30")
            .listen(Listen::Fixed(addr))
            .output(Output::File(log.clone()))
            .start_limit(Duration::from_millis(300))
            .start()
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("serve did not listen within "), "{e}");
        let e = sh("exec sleep 30").start().unwrap_err().to_string();
        assert!(e.contains("capture or pipe it"), "{e}");
    }

    /// A stand-in that listens on its `--listen` address and answers
    /// `/readyz` as a ready server does.
    const READY_SERVER: &str = r#"
import http.server, sys
host, port = sys.argv[4].rsplit(":", 1)
class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"status":"ready","datacenter":1,"worker":2}'
        self.send_response(200 if self.path == "/readyz" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        sys.stderr.write("request\n")
http.server.HTTPServer((host, int(port)), Ready).serve_forever()
"#;

    #[test]
    fn servers_on_fixed_addresses_start_together_and_get_ready() {
        let python = Command::new("python3").arg("--version").output();
        if !python.is_ok_and(|o| o.status.success()) {
            crate::skip::<()>("python3 is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let builders = (0..2).map(|i| {
            Builder::new("snowmint-stand-in")
                .name(format!("py{i}"))
                .via("python3", ["-c", READY_SERVER])
                .listen(Listen::Fixed(crate::etcd::unused_addr()))
                .output(Output::File(dir.path().join(format!("py{i}.log"))))
        });
        let mut served = start_all(builders).unwrap();
        for s in &served {
            s.wait_owns_socket(Duration::from_secs(1)).unwrap();
            assert_eq!(s.wait_ready(Duration::from_secs(10)).unwrap(), (1, 2));
            let (response, head) = request(
                s.addr,
                "GET",
                "/metrics",
                &[("X-Test", "1")],
                Duration::from_secs(5),
            )
            .unwrap();
            assert_eq!(response.status, 404);
            assert_eq!(header(&head, "content-length").as_deref(), Some("44"));
            assert_eq!(s.http("GET", "/readyz").unwrap().json()["worker"], 2);
        }
        assert!(served[0].log_tail(1).contains("request"));
        still_up(&mut served);
        assert!(served[1].kill().unwrap());
        assert!(served[1].wait_ready(Duration::from_secs(1)).is_err());
    }

    fn still_up(served: &mut [Served]) {
        for s in served {
            assert_eq!(s.try_wait().unwrap(), None, "{}", s.name());
        }
    }

    #[test]
    fn a_process_group_is_killed_whole() {
        let script = format!("sleep 30 & echo \"child $!\" >&2; echo '{PUBLIC}' >&2; wait");
        let mut served = sh(&script)
            .process_group()
            .output(Output::Capture { echo: false })
            .start()
            .unwrap();
        let line = served.wait_line("child ", Duration::from_secs(10)).unwrap();
        let child: u32 = line.strip_prefix("child ").unwrap().parse().unwrap();
        served.signal_group(Signal::CONT).unwrap();
        assert!(served.kill().unwrap());
        let start = Instant::now();
        while !signal::exited(child) {
            assert!(start.elapsed() < Duration::from_secs(10), "{child} lives");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn responses_parse() {
        let (r, head) =
            Response::parse(b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\n\r\n{\"a\":1}").unwrap();
        assert_eq!((r.status, r.retry_after), (429, Some(3)));
        assert_eq!(r.json()["a"], 1);
        assert_eq!(head, "HTTP/1.1 429 Too Many\r\nRetry-After: 3");
        assert!(Response::parse(b"HTTP/1.1 200 OK").is_err());
        assert!(Response::parse(b"HTTP/1.1 ok\r\n\r\n").is_err());
        assert_eq!(banner("other"), None);
        assert_eq!(
            url_addr("http://[::1]:80/x"),
            Some(("[::1]:80".parse().unwrap(), false))
        );
    }
}
