//! Prometheus metrics: HTTP requests and latency by route, IDs issued, the
//! generator's own counters and the worker identity, in the text format.

#[cfg(feature = "etcd")]
pub(crate) mod etcd;
mod family;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use self::family::{counter, gauge};
use crate::mint::generator::Kind;
use crate::mint::minter::Minter;

/// Labels of one HTTP request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    /// The route pattern (`/api/v1/decode/{id}`), never the raw path, so a
    /// scanner cannot blow up the number of series.
    route: &'static str,
    method: &'static str,
    status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EventLabels {
    event: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// Something that happened to a connection, counted in
/// `snowmint_http_connection_events_total{event}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnEvent {
    /// A connection was accepted.
    Accepted,
    /// Accepted over the limit while every connection was busy, and closed.
    Refused,
    /// Closed to make room for a new one (it had no request in progress).
    Shed,
    /// Closed: a request head did not arrive in time.
    HeaderTimeout,
    /// Closed: no request for the idle timeout.
    IdleTimeout,
    /// `accept` failed (out of file descriptors, usually).
    AcceptError,
    /// Closed at shutdown with no request in progress.
    ClosedAtShutdown,
    /// Closed when the shutdown deadline passed, a request still in progress.
    ClosedAtDeadline,
    /// The TLS handshake failed (an untrusted certificate, a client that
    /// does not speak TLS, ...). One that does not finish in time is a
    /// `HeaderTimeout`.
    TlsHandshakeFailed,
}

impl ConnEvent {
    fn label(self) -> &'static str {
        match self {
            ConnEvent::Accepted => "accepted",
            ConnEvent::Refused => "refused",
            ConnEvent::Shed => "shed",
            ConnEvent::HeaderTimeout => "header_timeout",
            ConnEvent::IdleTimeout => "idle_timeout",
            ConnEvent::AcceptError => "accept_error",
            ConnEvent::ClosedAtShutdown => "closed_at_shutdown",
            ConnEvent::ClosedAtDeadline => "closed_at_deadline",
            ConnEvent::TlsHandshakeFailed => "tls_handshake_failed",
        }
    }
}

/// Why a mint was refused before it reached the generator, counted in
/// `snowmint_mints_rejected_total{reason}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejection {
    /// More IDs are already waiting than the generator can serve within
    /// its wait bound (503).
    Admission,
    /// The client's quota is used up (429).
    Quota,
}

impl Rejection {
    fn label(self) -> &'static str {
        match self {
            Rejection::Admission => "admission",
            Rejection::Quota => "quota",
        }
    }
}

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// The server's metrics; `Metrics::new` registers them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily,
    ids_issued: Counter,
    connections_open: Gauge,
    connection_events: Family<EventLabels, Counter>,
    mints_rejected: Family<ReasonLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 25 µs .. ~0.8 s.
    Histogram::new(exponential_buckets(0.000_025, 2.0, 16))
}

impl Metrics {
    /// Registers every metric; the generator's counters, the identity and
    /// (in etcd mode) the lease session's state are read from `minter` at
    /// each scrape.
    pub fn new(minter: Arc<Minter>) -> Metrics {
        let mut registry = Registry::with_prefix("snowmint");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route, method and status",
            requests.clone(),
        );
        let latency: HistogramFamily = Family::new_with_constructor(latency_histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route",
            latency.clone(),
        );
        let ids_issued = Counter::default();
        registry.register(
            "ids_issued",
            "IDs handed out by POST /api/v1/ids",
            ids_issued.clone(),
        );
        let connections_open = Gauge::default();
        registry.register(
            "http_connections_open",
            "HTTP connections open now",
            connections_open.clone(),
        );
        let connection_events = Family::<EventLabels, Counter>::default();
        registry.register(
            "http_connection_events",
            "HTTP connections accepted, refused, shed, timed out or closed at shutdown",
            connection_events.clone(),
        );
        let mints_rejected = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "mints_rejected",
            "Mint requests refused before minting: admission (503) or client quota (429)",
            mints_rejected.clone(),
        );
        registry.register_collector(Box::new(GeneratorCollector { minter }));
        Metrics {
            registry,
            requests,
            latency,
            ids_issued,
            connections_open,
            connection_events,
            mints_rejected,
        }
    }

    /// Counts one answered request.
    pub fn observe_request(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        elapsed: Duration,
    ) {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels { route })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts a connection event.
    pub fn connection_event(&self, event: ConnEvent) {
        self.connection_events
            .get_or_create(&EventLabels {
                event: event.label(),
            })
            .inc();
    }

    /// One more connection open.
    pub fn connection_opened(&self) {
        self.connections_open.inc();
    }

    /// One connection fewer open.
    pub fn connection_closed(&self) {
        self.connections_open.dec();
    }

    /// Counts a mint refused before minting.
    pub fn mint_rejected(&self, why: Rejection) {
        self.mints_rejected
            .get_or_create(&ReasonLabels {
                reason: why.label(),
            })
            .inc();
    }

    /// Counts IDs handed out.
    pub fn add_ids_issued(&self, n: u64) {
        self.ids_issued.inc_by(n);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Reads the installed generator's counters and the identity at scrape time.
#[derive(Debug)]
struct GeneratorCollector {
    minter: Arc<Minter>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct IdentityLabels {
    datacenter: u8,
    worker: u8,
}

impl Collector for GeneratorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        gauge(
            &mut encoder,
            "ready",
            "1 while a mint would succeed now (as /readyz answers)",
            i64::from(self.minter.ready().is_ok()),
        )?;
        if let Some(identity) = self.minter.identity() {
            let g = ConstGauge::new(1i64);
            let mut family = encoder.encode_descriptor(
                "identity",
                "The worker identity this instance issues as",
                None,
                g.metric_type(),
            )?;
            let labels = IdentityLabels {
                datacenter: identity.datacenter(),
                worker: identity.worker(),
            };
            g.encode(family.encode_family(&labels)?)?;
        }
        #[cfg(feature = "etcd")]
        if let Some(status) = self.minter.lease_metrics() {
            crate::routes::metrics::etcd::encode(&status, &mut encoder)?;
        }
        if let Some(generator) = self.minter.generator() {
            let m = generator.metrics();
            for (kind, name, help, value) in crate::mint::generator::metric_rows(&m) {
                match kind {
                    Kind::Counter => counter(&mut encoder, name, help, value)?,
                    Kind::Gauge => gauge(
                        &mut encoder,
                        name,
                        help,
                        i64::try_from(value).unwrap_or(i64::MAX),
                    )?,
                }
            }
        }
        Ok(())
    }
}
