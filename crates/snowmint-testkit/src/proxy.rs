//! A TCP proxy between one instance and etcd (or a database) whose line can be cut (a
//! network partition: bytes stop flowing, sockets stay open, nothing is
//! refused) and restored, and whose upstream can be changed while it runs
//! (to route an instance's traffic to one etcd member).

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The proxy; stops forwarding and closes everything when dropped.
pub struct Proxy {
    addr: SocketAddr,
    /// `true` while the line is cut. Connection tasks watch it.
    cut: watch::Sender<bool>,
    /// Where new connections go; a change closes the open ones.
    upstream: watch::Sender<SocketAddr>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Listens on `127.0.0.1:0` and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (cut, _) = watch::channel(false);
        let (upstream, _) = watch::channel(upstream);
        let cut_rx = cut.subscribe();
        let upstream_rx = upstream.subscribe();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(connection(client, upstream_rx.clone(), cut_rx.clone()));
            }
        });
        Proxy {
            addr,
            cut,
            upstream,
            accept,
        }
    }

    /// Sends new connections to `upstream` from now on, and closes the open
    /// ones (so that their clients reconnect, there).
    pub fn route(&self, upstream: SocketAddr) {
        self.upstream.send_replace(upstream);
    }

    /// Where new connections go now.
    pub fn upstream(&self) -> SocketAddr {
        *self.upstream.borrow()
    }

    /// Where it listens (`127.0.0.1:PORT`): the host and port a client
    /// names instead of the upstream's (a database URL's).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL an instance should use instead of etcd's.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Cuts the line: no byte passes in either direction; connections,
    /// old and new, hang as in a partition.
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    /// Restores the line. Connections that lived through the cut are
    /// closed (as their peers would have timed them out); new ones flow.
    pub fn restore(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Connection tasks see the sender gone and close their sockets.
    }
}

async fn connection(
    mut client: TcpStream,
    mut upstream: watch::Receiver<SocketAddr>,
    mut cut: watch::Receiver<bool>,
) {
    if *cut.borrow_and_update() {
        // Accepted during a cut: hold it silently until the cut ends, then close.
        let _ = cut.wait_for(|c| !*c).await;
        return;
    }
    let to = *upstream.borrow_and_update();
    let Ok(mut server) = TcpStream::connect(to).await else {
        return;
    };
    let partitioned = tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => false,
        changed = cut.wait_for(|c| *c) => changed.is_ok(),
        // Re-routed: close both, the client reconnects to the new upstream.
        _ = upstream.changed() => false,
    };
    if partitioned {
        // Keep both sockets open but move no bytes until the line is
        // restored; then close both.
        let _ = cut.wait_for(|c| !*c).await;
    }
}
