//! A real `redis-server` for one test: on 127.0.0.1, a free port, a
//! temporary directory of its own, no persistence unless asked (`--save ''`,
//! `--appendonly no`), killed when dropped. It can be paused (SIGSTOP),
//! resumed, and killed and started again on the same port (a restart that
//! lost everything). Driven through `redis-cli`.
//!
//! A test calls [`Redis::builder`]`.start()`; when `redis-server` is not
//! installed that is a [`crate::skip`] (a failure under
//! `SNOWMINT_REQUIRE_SERVICES=1`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::signal;

/// How long a server may take to start on a loaded machine.
const START_LIMIT: Duration = Duration::from_secs(30);

/// How a [`Redis`] is started.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RedisBuilder {
    password: Option<String>,
    settings: Vec<(String, String)>,
    tls: Option<Tls>,
}

/// A TLS-only server's files: its certificate and key, and the CA that
/// signed them (clients verify against it; client certificates are not
/// asked for).
#[derive(Debug, Clone)]
struct Tls {
    cert: PathBuf,
    key: PathBuf,
    ca: PathBuf,
}

impl RedisBuilder {
    /// Requires this password (`requirepass`).
    pub fn password(mut self, password: impl Into<String>) -> RedisBuilder {
        self.password = Some(password.into());
        self
    }

    /// Serves TLS only (`rediss://`), with this certificate and key (PEM)
    /// signed by `ca`; [`Redis::url`] is then `rediss://`.
    pub fn tls(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
        ca: impl Into<PathBuf>,
    ) -> RedisBuilder {
        self.tls = Some(Tls {
            cert: cert.into(),
            key: key.into(),
            ca: ca.into(),
        });
        self
    }

    /// A server setting, as `redis-server --NAME VALUE` takes it
    /// (`maxmemory-policy`, `allkeys-lru`).
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> RedisBuilder {
        self.settings.push((name.into(), value.into()));
        self
    }

    /// Starts it, or skips (`None`) when `redis-server` is not installed.
    ///
    /// # Panics
    ///
    /// When it is installed but does not start.
    pub fn start(self) -> Option<Redis> {
        if !runs("redis-server") || !runs("redis-cli") {
            return crate::skip(
                "redis-server or redis-cli is not installed (apt-get install redis-server)",
            );
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let port = free_port();
        let mut redis = Redis {
            dir,
            port,
            password: self.password,
            settings: self.settings,
            tls: self.tls,
            child: None,
        };
        redis.launch();
        Some(redis)
    }
}

/// A running `redis-server`.
#[derive(Debug)]
pub struct Redis {
    dir: TempDir,
    port: u16,
    password: Option<String>,
    settings: Vec<(String, String)>,
    tls: Option<Tls>,
    child: Option<Child>,
}

fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Redis {
    /// How to start one.
    pub fn builder() -> RedisBuilder {
        RedisBuilder::default()
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://[:password@]127.0.0.1:PORT/0` (`rediss://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        match &self.password {
            Some(p) => format!("{scheme}://:{p}@127.0.0.1:{}/0", self.port),
            None => format!("{scheme}://127.0.0.1:{}/0", self.port),
        }
    }

    /// The server's process ID.
    ///
    /// # Panics
    ///
    /// When it is not running.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("redis-server is running").id()
    }

    /// Its log file.
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    fn launch(&mut self) {
        let mut cmd = Command::new("redis-server");
        match &self.tls {
            None => cmd.args(["--port", &self.port.to_string()]),
            Some(tls) => cmd
                .args(["--port", "0", "--tls-port", &self.port.to_string()])
                .arg("--tls-cert-file")
                .arg(&tls.cert)
                .arg("--tls-key-file")
                .arg(&tls.key)
                .arg("--tls-ca-cert-file")
                .arg(&tls.ca)
                .args(["--tls-auth-clients", "no"]),
        };
        cmd.args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(self.log());
        if let Some(p) = &self.password {
            cmd.args(["--requirepass", p]);
        }
        for (name, value) in &self.settings {
            cmd.arg(format!("--{name}")).arg(value);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let start = Instant::now();
        loop {
            if self.try_cli(&["PING"]).is_ok_and(|o| o.trim() == "PONG") {
                return;
            }
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                let log = std::fs::read_to_string(self.log()).unwrap_or_default();
                panic!(
                    "redis-server exited ({status}) on port {}: {log}",
                    self.port
                );
            }
            assert!(
                start.elapsed() < START_LIMIT,
                "redis-server did not answer PING on port {} within {START_LIMIT:?}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `redis-cli` with `args` against it: its output, or its error.
    ///
    /// # Errors
    ///
    /// When `redis-cli` fails or says `ERR`/an error code.
    pub fn try_cli(&self, args: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some(tls) = &self.tls {
            cmd.arg("--tls").arg("--cacert").arg(&tls.ca);
        }
        if let Some(p) = &self.password {
            cmd.args(["--no-auth-warning", "-a", p]);
        }
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() || text.starts_with("ERR") {
            return Err(format!(
                "redis-cli {args:?}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(text)
    }

    /// Runs `redis-cli` with `args` against it.
    ///
    /// # Panics
    ///
    /// When it fails.
    pub fn cli(&self, args: &[&str]) -> String {
        self.try_cli(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Stops the server with SIGSTOP (every thread stopped on return).
    ///
    /// # Panics
    ///
    /// When it cannot.
    pub fn pause(&self) {
        signal::stop(self.pid(), Duration::from_secs(5)).expect("SIGSTOP redis-server");
    }

    /// Resumes a paused server.
    ///
    /// # Panics
    ///
    /// When it cannot.
    pub fn resume(&self) {
        signal::resume(self.pid(), Duration::from_secs(5)).expect("SIGCONT redis-server");
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills it and starts it again on the same port: without persistence,
    /// with nothing of what it held (a new `run_id` and replication ID).
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Kills it, deletes its data files (`dump.rdb`, `appendonlydir`) and
    /// starts it again on the same port: empty, whatever persistence it
    /// has (a new `run_id` and replication ID), as a Redis whose AOF was
    /// not fsync'd, or that never had one, comes back.
    pub fn restart_empty(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(self.dir.path().join("dump.rdb"));
        let _ = std::fs::remove_dir_all(self.dir.path().join("appendonlydir"));
        self.launch();
    }

    /// Starts a killed server again on its port, from whatever it
    /// persisted (nothing without persistence). Does nothing while it runs.
    ///
    /// # Panics
    ///
    /// When it does not start.
    pub fn start_again(&mut self) {
        if self.child.is_none() {
            self.launch();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `redis-sentinel` watching one master (quorum 1: it alone decides), on
/// 127.0.0.1 and a free port, that fails over one second after the master
/// stops answering; killed when dropped.
#[derive(Debug)]
pub struct Sentinel {
    dir: TempDir,
    port: u16,
    child: Option<Child>,
}

impl Sentinel {
    /// Starts one watching the master `name` on 127.0.0.1:`master_port`
    /// (`None`: a skip, `redis-sentinel` not installed).
    ///
    /// # Panics
    ///
    /// When it is installed but does not start.
    pub fn start(name: &str, master_port: u16) -> Option<Sentinel> {
        if !runs("redis-sentinel") {
            return crate::skip("redis-sentinel is not installed (apt-get install redis-sentinel)");
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let port = free_port();
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                 sentinel monitor {name} 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds {name} 1000\n\
                 sentinel failover-timeout {name} 10000\n\
                 sentinel parallel-syncs {name} 1\n",
                dir = dir.path().display()
            ),
        )
        .expect("write sentinel.conf");
        let child = Command::new("redis-sentinel")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-sentinel");
        let mut sentinel = Sentinel {
            dir,
            port,
            child: Some(child),
        };
        let start = Instant::now();
        while !sentinel
            .try_cli(&["PING"])
            .is_ok_and(|o| o.trim() == "PONG")
        {
            if let Some(child) = &mut sentinel.child
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("redis-sentinel exited ({status}): {}", sentinel.log());
            }
            assert!(
                start.elapsed() < START_LIMIT,
                "redis-sentinel did not answer PING within {START_LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(sentinel)
    }

    /// Its `HOST:PORT`, as `--redis-sentinel` takes it.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Its log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sentinel.log")).unwrap_or_default()
    }

    /// Runs `redis-cli` with `args` against it.
    ///
    /// # Errors
    ///
    /// When `redis-cli` fails.
    pub fn try_cli(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The port of the master it names now for `name`, if it names one.
    pub fn master_port(&self, name: &str) -> Option<u16> {
        let out = self
            .try_cli(&["SENTINEL", "get-master-addr-by-name", name])
            .ok()?;
        out.lines().nth(1)?.trim().parse().ok()
    }

    /// How many replicas of `name` it knows.
    pub fn replicas(&self, name: &str) -> usize {
        self.try_cli(&["SENTINEL", "replicas", name])
            .map(|o| o.lines().filter(|l| l.trim() == "name").count())
            .unwrap_or(0)
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
