//! The HTTP server around the router: a connection limit that sheds idle
//! connections first, header and idle timeouts, and a shutdown with a
//! deadline.
//!
//! `axum::serve` keeps every connection as long as its client likes and
//! retries `accept` once a second when the process runs out of file
//! descriptors, so 500 clients trickling header bytes, or 2,000 idle sockets,
//! starve everyone else. This accept loop:
//!
//! - **limits connections** to [`Limits::max_connections`] (by default the
//!   open-file limit, raised to its hard limit at start, less headroom for
//!   state files, etcd and logs). A connection accepted over the limit takes
//!   the place of the connection idle the longest (no request in progress);
//!   when every connection is busy, it is closed at once. `accept` failures
//!   (`EMFILE`) shed an idle connection too and back off briefly: never a
//!   busy loop.
//! - **times out** a request head that does not arrive in full within
//!   [`Limits::header_timeout`] (counted from the accept, or from the first
//!   byte after a response), and a keep-alive connection idle for
//!   [`Limits::idle_timeout`]. A request being answered is never cut by
//!   these (the router's request timeout bounds it).
//! - **shuts down** when asked: stops accepting, closes connections with no
//!   request in progress at once, lets requests in progress finish for at
//!   most [`Limits::shutdown_timeout`], then closes what is left.
//! - **lets a client that goes away mid-request** be found out when its
//!   answer is written (hyper's `half_close`), not while the request is
//!   being answered. To notice it then, hyper's default tries to read the
//!   connection while the request still holds its head's bytes, so the read
//!   buffer cannot be reused: a new one was allocated and the data copied
//!   on every request (about 0.4 µs of a request's 9-10 µs of CPU in the
//!   profile). Every request here is bounded (a mint's wait by the lane,
//!   anything by the request timeout), so a request whose client left runs
//!   to its end and its answer is dropped; a client that only shuts its
//!   sending side down still gets its answer.
//! - **serves HTTPS** when given a TLS configuration ([`crate::net::tls`]): the
//!   handshake runs in the connection's own task, never in the accept loop
//!   (a slow client holds up nobody else), and counts against the header
//!   timeout from the accept, so a client that never finishes it is closed
//!   then. HTTP/1.1 and HTTP/2 either way: by ALPN over TLS, by prior
//!   knowledge (h2c) over plain TCP.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::app::App;
use crate::routes::error::Throttle;
use crate::routes::metrics::{ConnEvent, Metrics};

/// Default [`Limits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`Limits::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`Limits::shutdown_timeout`]: below Kubernetes' default grace
/// period of 30 s.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// How the server treats connections: the connection limit, the header
/// and idle timeouts, the shutdown deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// A request head must arrive in full within this time.
    pub header_timeout: Duration,
    /// A keep-alive connection with no request for this long is closed.
    pub idle_timeout: Duration,
    /// On shutdown, requests in progress get this long to finish.
    pub shutdown_timeout: Duration,
    /// Most connections open at once; `None`: derived from the open-file
    /// limit ([`default_max_connections`]).
    pub max_connections: Option<usize>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            max_connections: None,
        }
    }
}

/// Raises the soft open-file limit to the hard limit (once per process)
/// and returns the connections that leave room for everything else the
/// process opens: `limit - max(64, limit / 10)`, at least 16.
pub fn default_max_connections() -> usize {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    let limit = *LIMIT.get_or_init(raise_open_file_limit);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    limit.saturating_sub((limit / 10).max(64)).max(16)
}

#[cfg(unix)]
fn raise_open_file_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let current = getrlimit(Resource::Nofile);
    let soft = current.current.unwrap_or(u64::MAX);
    match current.maximum {
        Some(hard) if hard > soft => {
            let raised = rustix::process::Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => hard,
                Err(e) => {
                    tracing::warn!(error = %e, soft, hard, "cannot raise the open-file limit");
                    soft
                }
            }
        }
        // Unlimited: a large but finite number of connections.
        None => 1 << 20,
        Some(_) => soft,
    }
}

#[cfg(not(unix))]
fn raise_open_file_limit() -> u64 {
    1024
}

/// Milliseconds on a monotonic clock (0 is never a time), for the header
/// and idle deadlines, which are seconds long: read twice a request, so on
/// Linux the coarse clock (the kernel's last tick, a few ms old, read
/// without asking the time source), elsewhere `Instant`.
fn now_ms() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
        let ms = u64::try_from(t.tv_sec).unwrap_or(0) * 1000
            + u64::try_from(t.tv_nsec).unwrap_or(0) / 1_000_000;
        ms + 1
    }
    #[cfg(not(target_os = "linux"))]
    {
        static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
        let origin = *ORIGIN.get_or_init(std::time::Instant::now);
        u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX) + 1
    }
}

/// Why a connection is asked to close.
const CLOSE_SHED: u8 = 1;
const CLOSE_SHUTDOWN: u8 = 2;

/// What the accept loop and the connection's task share.
#[derive(Debug)]
struct Conn {
    /// Requests in progress on this connection.
    in_flight: AtomicU32,
    /// When the current request head started to arrive (the accept, or
    /// the first byte after a response); 0 while none is arriving.
    head_since: AtomicU64,
    /// When the connection last went idle (no request in progress).
    idle_since: AtomicU64,
    /// 0, or why it must close (`CLOSE_*`).
    close: AtomicU8,
    wake: Notify,
}

impl Conn {
    fn new() -> Conn {
        let now = now_ms();
        Conn {
            in_flight: AtomicU32::new(0),
            head_since: AtomicU64::new(now),
            idle_since: AtomicU64::new(now),
            close: AtomicU8::new(0),
            wake: Notify::new(),
        }
    }

    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// Bytes arrived: a request head starts, unless one is in progress.
    fn on_bytes(&self) {
        if !self.busy() && self.head_since.load(Ordering::Relaxed) == 0 {
            self.head_since.store(now_ms(), Ordering::Relaxed);
        }
    }

    fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_since.store(0, Ordering::Relaxed);
    }

    fn request_ended(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.idle_since.store(now_ms(), Ordering::Relaxed);
        }
    }

    /// When a timeout would close the connection (ms, as `now_ms`), and
    /// which; `None` while a request is in progress.
    fn deadline(&self, limits: &Limits) -> Option<(u64, ConnEvent)> {
        if self.busy() {
            return None;
        }
        match self.head_since.load(Ordering::Relaxed) {
            0 => Some((
                self.idle_since.load(Ordering::Relaxed) + millis(limits.idle_timeout),
                ConnEvent::IdleTimeout,
            )),
            since => Some((
                since + millis(limits.header_timeout),
                ConnEvent::HeaderTimeout,
            )),
        }
    }

    /// Since when the connection has had no request in progress (for
    /// choosing whom to shed); `None` if busy.
    fn quiet_since(&self) -> Option<u64> {
        if self.busy() {
            return None;
        }
        let head = self.head_since.load(Ordering::Relaxed);
        let idle = self.idle_since.load(Ordering::Relaxed);
        Some(if head == 0 { idle } else { head.min(idle) })
    }

    fn ask_to_close(&self, why: u8) {
        self.close.store(why, Ordering::Release);
        self.wake.notify_one();
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 2)
}

/// Marks a request in progress until dropped (also when the client goes
/// away mid-request and hyper drops the future).
struct InFlight(Arc<Conn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// The open connections, for shedding and shutdown.
#[derive(Debug, Default)]
struct Open {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
}

impl Open {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, conn: Arc<Conn>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, conn);
        id
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    /// Asks the connection that has had no request in progress for the
    /// longest to close; false if every connection is busy (or already
    /// asked).
    fn shed_one(&self) -> bool {
        let conns = self.lock();
        let victim = conns
            .values()
            .filter(|c| c.close.load(Ordering::Acquire) == 0)
            .filter_map(|c| c.quiet_since().map(|since| (since, c)))
            .min_by_key(|(since, _)| *since);
        match victim {
            Some((_, conn)) => {
                conn.ask_to_close(CLOSE_SHED);
                true
            }
            None => false,
        }
    }

    fn close_all(&self) {
        for conn in self.lock().values() {
            conn.ask_to_close(CLOSE_SHUTDOWN);
        }
    }
}

/// A socket that tells its [`Conn`] when bytes arrive.
struct Tracked {
    stream: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.conn.on_bytes();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Serves `router` on `listener` (over TLS when `tls` is given) until
/// `shutdown` resolves; see the [module docs](self). Returns once every
/// connection is closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: App,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let max = limits
        .max_connections
        .unwrap_or_else(default_max_connections);
    let open = Arc::new(Open::default());
    let mut tasks = JoinSet::new();
    let builder = Arc::new(http_builder());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors (or a connection reset before it
                // was accepted): make room and back off, never spin.
                metrics.connection_event(ConnEvent::AcceptError);
                static THROTTLE: Throttle = Throttle::new();
                if let Some(left_out) = THROTTLE.admit() {
                    tracing::warn!(error = %e, open = open.len(), not_logged_since = left_out, "accept failed; shedding an idle connection");
                }
                open.shed_one();
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if open.len() >= max && !open.shed_one() {
            // Every connection is answering a request: refuse this one.
            metrics.connection_event(ConnEvent::Refused);
            static THROTTLE: Throttle = Throttle::new();
            if let Some(left_out) = THROTTLE.admit() {
                tracing::warn!(%peer, max, not_logged_since = left_out, "at the connection limit with every connection busy: refused");
            }
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        metrics.connection_event(ConnEvent::Accepted);
        let conn = Arc::new(Conn::new());
        let id = open.add(Arc::clone(&conn));
        let task = serve_connection(
            stream,
            peer,
            Arc::clone(&conn),
            router.for_connection(),
            Arc::clone(&builder),
            limits,
            tls.clone(),
            Arc::clone(&metrics),
        );
        let open = Arc::clone(&open);
        let metrics_for_task = Arc::clone(&metrics);
        metrics_for_task.connection_opened();
        tasks.spawn(async move {
            task.await;
            open.remove(id);
            metrics_for_task.connection_closed();
        });
    }
    drop(listener);
    tracing::info!(
        connections = open.len(),
        deadline_s = limits.shutdown_timeout.as_secs_f64(),
        "stopped accepting; closing idle connections, finishing requests in progress"
    );
    open.close_all();
    let all_closed = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.shutdown_timeout, all_closed)
        .await
        .is_err()
    {
        let left = tasks.len();
        tracing::warn!(
            connections = left,
            "shutdown deadline passed; closing connections with requests still in progress"
        );
        for _ in 0..left {
            metrics.connection_event(ConnEvent::ClosedAtDeadline);
        }
        tasks.shutdown().await;
    }
}

/// How hyper serves each connection (HTTP/1.1, and HTTP/2 by prior
/// knowledge or ALPN):
///
/// - no look for a closed connection while a request is being answered:
///   see the module docs ("a client that goes away mid-request");
/// - an answer's head and body are copied into one buffer and written with
///   one write (a `sendto` on TCP), not handed to `writev` as two slices
///   (hyper's choice for a socket that takes vectored writes). The API's answers are small (a
///   batch of 4,096 IDs is about 90 KB, copied once), and the one flat
///   write costs less on both sides of the socket: on 2026-12-06, 13
///   alternated rounds of `wrk -t1 -c32` against the build that wrote
///   vectored gave 4 % more requests a second on `GET /healthz` and 7 % more
///   on a single mint, at 5 % and 7 % less of the server's CPU a request
///   (docs/operations.md).
fn http_builder() -> hyper_util::server::conn::auto::Builder<TokioExecutor> {
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder.http1().half_close(true).writev(false);
    builder
}

/// One connection: the TLS handshake if serving HTTPS, then HTTP.
#[allow(clippy::too_many_arguments)]
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    conn: Arc<Conn>,
    router: App,
    builder: Arc<hyper_util::server::conn::auto::Builder<TokioExecutor>>,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    metrics: Arc<Metrics>,
) {
    let io = Tracked {
        stream,
        conn: Arc::clone(&conn),
    };
    match tls {
        None => serve_http(io, peer, conn, router, builder, limits, metrics).await,
        Some(acceptor) => {
            if let Some(io) = handshake(&acceptor, io, peer, &conn, &limits, &metrics).await {
                serve_http(io, peer, conn, router, builder, limits, metrics).await;
            }
        }
    }
}

/// The TLS handshake, bounded by the header deadline (the accept plus
/// [`Limits::header_timeout`]: the handshake and the first request head
/// share it) and given up when the connection is asked to close. `None`
/// when it failed or was cut.
async fn handshake(
    acceptor: &TlsAcceptor,
    io: Tracked,
    peer: SocketAddr,
    conn: &Conn,
    limits: &Limits,
    metrics: &Metrics,
) -> Option<tokio_rustls::server::TlsStream<Tracked>> {
    // No request is in progress before the handshake ends, so the deadline
    // is the header deadline counted from the accept, and stays put.
    let (at, event) = conn.deadline(limits)?;
    let expired = tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms())));
    let mut expired = std::pin::pin!(expired);
    let accept = acceptor.accept(io);
    let mut accept = std::pin::pin!(accept);
    loop {
        tokio::select! {
            done = accept.as_mut() => {
                return match done {
                    Ok(stream) => Some(stream),
                    Err(e) => {
                        metrics.connection_event(ConnEvent::TlsHandshakeFailed);
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        None
                    }
                };
            }
            () = expired.as_mut() => {
                timed_out(peer, event, metrics);
                return None;
            }
            () = conn.wake.notified() => {
                let why = conn.close.load(Ordering::Acquire);
                if why != 0 {
                    closed(peer, why, metrics);
                    return None;
                }
            }
        }
    }
}

/// Counts and logs (throttled) a connection closed by a timeout.
fn timed_out(peer: SocketAddr, event: ConnEvent, metrics: &Metrics) {
    metrics.connection_event(event);
    static THROTTLE: Throttle = Throttle::new();
    if let Some(left_out) = THROTTLE.admit() {
        tracing::info!(%peer, event = event.label(), not_logged_since = left_out, "connection timed out; closed");
    }
}

/// Counts and logs a connection with nothing in progress closed because it
/// was asked to (`why`, a `CLOSE_*`).
fn closed(peer: SocketAddr, why: u8, metrics: &Metrics) {
    if why == CLOSE_SHED {
        metrics.connection_event(ConnEvent::Shed);
        static THROTTLE: Throttle = Throttle::new();
        if let Some(left_out) = THROTTLE.admit() {
            tracing::info!(%peer, not_logged_since = left_out, "at the connection limit: closed an idle connection");
        }
    } else {
        metrics.connection_event(ConnEvent::ClosedAtShutdown);
    }
}

/// HTTP on one connection: hyper serves it while a watchdog enforces the
/// timeouts and acts on requests to close.
async fn serve_http<I>(
    io: I,
    peer: SocketAddr,
    conn: Arc<Conn>,
    router: App,
    builder: Arc<hyper_util::server::conn::auto::Builder<TokioExecutor>>,
    limits: Limits,
    metrics: Arc<Metrics>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // hyper's own answers (a head it cannot read) in the error shape too.
    let io = TokioIo::new(super::head_errors::JsonHeadErrors::new(io));
    // This connection's own router (a clone per connection, not per
    // request), called under a lock no one else takes: hyper calls the
    // service of one connection from that connection's task, one call at a
    // time (HTTP/2's streams too; their futures then run apart).
    let router = Mutex::new(router);
    let service = {
        let conn = Arc::clone(&conn);
        hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            conn.request_started();
            let in_flight = InFlight(Arc::clone(&conn));
            let mut router = router.lock().unwrap_or_else(PoisonError::into_inner);
            if router.needs_peer() {
                request.extensions_mut().insert(ConnectInfo(peer));
            }
            let answer = router.answer(request.map(axum::body::Body::new));
            async move {
                let response = answer
                    .await
                    .unwrap_or_else(|never: Infallible| match never {});
                drop(in_flight);
                Ok::<_, Infallible>(response)
            }
        })
    };
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    // A deadline that arises later (a request ends, a new head starts to
    // arrive) is at least this far from when it arises: waking at least
    // this often never misses one.
    let horizon = limits.header_timeout.min(limits.idle_timeout);
    let next_look = |conn: &Conn| {
        conn.deadline(&limits)
            .map_or(horizon, |(at, _)| {
                Duration::from_millis(at.saturating_sub(now_ms()))
            })
            .min(horizon)
    };
    // The watchdog is one timer for the connection, set again for the next
    // deadline whenever it fires, and the accept loop's close requests. It
    // is looked at when the task wakes, after the connection: a request
    // costs it one poll of the timer. A close request sets `conn.close` and
    // then notifies `asked`, which holds this task's waker from its first
    // poll (a task's waker stays the same), so `asked` (a lock in `Notify`)
    // is polled again only once the flag is set.
    let timer = tokio::time::sleep(next_look(&conn));
    let mut timer = std::pin::pin!(timer);
    let asked = conn.wake.notified();
    let mut asked = std::pin::pin!(asked);
    let mut listening = false;
    let mut graceful = false;
    std::future::poll_fn(|cx| {
        loop {
            if let Poll::Ready(served) = connection.as_mut().poll(cx) {
                if let Err(e) = served {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return Poll::Ready(());
            }
            if timer.as_mut().poll(cx).is_ready() {
                // Activity may have moved the deadline: look again.
                if let Some((at, event)) = conn.deadline(&limits)
                    && now_ms() >= at
                {
                    timed_out(peer, event, &metrics);
                    return Poll::Ready(());
                }
                let at = tokio::time::Instant::now() + next_look(&conn);
                timer.as_mut().reset(at);
                // Poll it again: that arms it.
                continue;
            }
            let why = conn.close.load(Ordering::Acquire);
            if !listening || why != 0 {
                // Take a notification already given, and listen for the next.
                while asked.as_mut().poll(cx).is_ready() {
                    asked.set(conn.wake.notified());
                }
                listening = true;
            }
            match why {
                0 => return Poll::Pending,
                why if !conn.busy() => {
                    // Nothing in progress: close now.
                    closed(peer, why, &metrics);
                    return Poll::Ready(());
                }
                _ if !graceful => {
                    // Finish the request in progress, then close.
                    graceful = true;
                    connection.as_mut().graceful_shutdown();
                }
                _ => return Poll::Pending,
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    /// One end of a pipe that says it takes vectored writes (as a TCP
    /// socket does) and records each write hyper makes: `Some(bytes)` for a
    /// flat one, `None` for a vectored one.
    struct Recording {
        inner: DuplexStream,
        writes: Arc<Mutex<Vec<Option<Vec<u8>>>>>,
    }

    impl AsyncRead for Recording {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Recording {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let written = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
            self.writes
                .lock()
                .unwrap()
                .push(Some(buf[..written].to_vec()));
            Poll::Ready(Ok(written))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            self.writes.lock().unwrap().push(None);
            Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    #[tokio::test]
    async fn an_answer_goes_out_in_one_flat_write() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let writes = Arc::new(Mutex::new(Vec::new()));
        let io = Recording {
            inner: server,
            writes: Arc::clone(&writes),
        };
        let body = "{\"ids\":[\"4194439168\"]}";
        let service = hyper::service::service_fn(move |_: hyper::Request<Incoming>| async move {
            Ok::<_, Infallible>(hyper::Response::new(axum::body::Body::from(body)))
        });
        let served = tokio::spawn(async move {
            http_builder()
                .serve_connection(TokioIo::new(io), service)
                .await
                .map_err(|e| e.to_string())
        });
        let mut client = client;
        for _ in 0..2 {
            client
                .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
                .await
                .unwrap();
            let mut answer = Vec::new();
            while !answer.ends_with(body.as_bytes()) {
                let mut chunk = [0; 1024];
                let n = client.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&answer));
                answer.extend_from_slice(&chunk[..n]);
            }
            assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"));
        }
        drop(client);
        served.await.unwrap().unwrap();
        let writes = writes.lock().unwrap();
        assert_eq!(writes.len(), 2, "one write an answer");
        for write in writes.iter() {
            let write = write.as_deref().expect("a flat write, not a vectored one");
            let text = String::from_utf8_lossy(write);
            assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
            assert!(text.ends_with(&format!("\r\n\r\n{body}")), "{text}");
        }
    }
}
