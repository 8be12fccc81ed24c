//! Prometheus metrics: HTTP requests and latency by route, IDs issued, the
//! generator's own counters, the worker identity and the log lines dropped.
//!
//! Names follow Prometheus' conventions, which `promtool check metrics`
//! checks: base units (`_seconds`, Unix times as `_timestamp_seconds`),
//! counters ending in `_total`, HELP on every family. `/metrics` answers in
//! the format the client asks for by `Accept` (`Format::negotiate`):
//! OpenMetrics for Prometheus, which asks for it first, and the Prometheus
//! text format (0.0.4) otherwise, which is what `curl`, `promtool` and most
//! other scrapers read. prometheus-client writes OpenMetrics only; the text
//! format is made from it by `openmetrics_to_text`.

mod family;
pub(crate) mod lease;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::exponential_buckets;
use prometheus_client::registry::Registry;

use self::family::{constant, seconds};
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
    pub(crate) fn label(self) -> &'static str {
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

/// The server's metrics; `Metrics::new` registers them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Arc<RequestTallies>,
    connections_open: Gauge,
    connection_events: Family<EventLabels, Counter>,
    mints_rejected: Family<ReasonLabels, Counter>,
}

/// The upper bounds of the request latency histogram's buckets, in
/// seconds: 25 µs to about 0.8 s, doubling (and `+Inf` after them).
fn latency_bounds() -> [f64; LATENCY_BOUNDS] {
    let mut bounds = [0.0; LATENCY_BOUNDS];
    for (bound, value) in
        bounds
            .iter_mut()
            .zip(exponential_buckets(0.000_025, 2.0, LATENCY_BOUNDS as u16))
    {
        *bound = value;
    }
    bounds
}

/// How many finite bounds the latency histogram has.
const LATENCY_BOUNDS: usize = 16;

/// How many shards [`RequestTallies`] has: more than the threads that
/// answer requests (a runtime's workers, one a core), so that no two of
/// them share one, on any machine this runs on.
const SHARDS: usize = 64;

/// What each request counts: the answered requests
/// (`http_requests_total` by route, method and status, and
/// `http_request_duration_seconds` by route) and the IDs a mint handed out
/// (`ids_issued_total`), counted apart for each thread that answers them
/// and added up when `/metrics` is asked.
///
/// A count that every worker writes (an atomic, a histogram under its
/// lock) moves between the cores whenever the other core wrote it last, as
/// it often has while both are busy: up to about 100 ns a move on a
/// two-core test machine, and a lock all the cores queue on with more. Here
/// each thread writes only its own shard, under a lock no other thread
/// takes but a scrape's, and finds its series there by the one it
/// counted last, else by a hash of the labels. A scrape locks each shard
/// in turn: every request answered before it began is counted.
#[derive(Debug)]
struct RequestTallies {
    bounds: [f64; LATENCY_BOUNDS],
    shards: Box<[Shard]>,
}

/// One thread's series (shared with another only past [`SHARDS`]
/// threads), on cache lines of its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(Mutex<ShardSeries>);

#[derive(Debug, Default)]
struct ShardSeries {
    tallies: Vec<Tally>,
    /// Where each series is in `tallies`.
    index: HashMap<RequestLabels, usize>,
    /// The series counted last.
    last: usize,
    /// IDs handed out by mints.
    ids_issued: u64,
}

/// One series' count and latencies, on one shard.
#[derive(Debug)]
struct Tally {
    labels: RequestLabels,
    count: u64,
    /// Seconds, added up.
    sum: f64,
    /// Answers in each bucket (not cumulative); the last is `+Inf`.
    buckets: [u64; LATENCY_BOUNDS + 1],
}

impl Tally {
    fn new(labels: RequestLabels) -> Tally {
        Tally {
            labels,
            count: 0,
            sum: 0.0,
            buckets: [0; LATENCY_BOUNDS + 1],
        }
    }

    fn add(&mut self, other: &Tally) {
        self.count += other.count;
        self.sum += other.sum;
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            *mine += theirs;
        }
    }
}

/// Whether two labels are the same, by where they are first (route and
/// method labels come from fixed tables, so the same one is at the same
/// address), else by their text.
fn same(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b) || a == b
}

impl RequestTallies {
    fn new() -> RequestTallies {
        RequestTallies {
            bounds: latency_bounds(),
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }

    /// The calling thread's shard.
    fn shard(&self) -> &Shard {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
        }
        let at = SHARD.with(|shard| {
            if shard.get() == usize::MAX {
                shard.set(NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS);
            }
            shard.get()
        });
        &self.shards[at]
    }

    /// Counts one answer of `labels` that took `elapsed`.
    fn observe(&self, labels: RequestLabels, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let bucket = self
            .bounds
            .iter()
            .position(|bound| *bound >= seconds)
            .unwrap_or(LATENCY_BOUNDS);
        // A panic under the lock leaves counts, fine to go on with.
        let mut shard = self
            .shard()
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ShardSeries {
            tallies,
            index,
            last,
            ..
        } = &mut *shard;
        let at = match tallies.get(*last) {
            Some(t)
                if t.labels.status == labels.status
                    && same(t.labels.route, labels.route)
                    && same(t.labels.method, labels.method) =>
            {
                *last
            }
            _ => *index.entry(labels.clone()).or_insert_with(|| {
                tallies.push(Tally::new(labels));
                tallies.len() - 1
            }),
        };
        *last = at;
        let tally = &mut tallies[at];
        tally.count += 1;
        tally.sum += seconds;
        tally.buckets[bucket] += 1;
    }

    /// Counts `n` IDs handed out.
    fn add_ids_issued(&self, n: u64) {
        let mut shard = self
            .shard()
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        shard.ids_issued += n;
    }

    /// Every series, added up over the shards, in label order, and the IDs
    /// handed out.
    fn totals(&self) -> (BTreeMap<(&'static str, &'static str, u16), Tally>, u64) {
        let mut totals = BTreeMap::new();
        let mut ids_issued = 0;
        for shard in &self.shards {
            let shard = shard.0.lock().unwrap_or_else(PoisonError::into_inner);
            ids_issued += shard.ids_issued;
            for tally in &shard.tallies {
                let l = &tally.labels;
                totals
                    .entry((l.route, l.method, l.status))
                    .or_insert_with(|| Tally::new(l.clone()))
                    .add(tally);
            }
        }
        (totals, ids_issued)
    }
}

/// Writes [`RequestTallies`] at scrape time.
#[derive(Debug)]
struct RequestCollector(Arc<RequestTallies>);

impl Collector for RequestCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (totals, ids_issued) = self.0.totals();
        let mut family = encoder.encode_descriptor(
            "http_requests",
            // `Registry::register` ends HELP with a full stop, as it did here.
            "HTTP requests answered, by route, method and status.",
            None,
            MetricType::Counter,
        )?;
        for tally in totals.values() {
            ConstCounter::new(tally.count).encode(family.encode_family(&tally.labels)?)?;
        }
        let mut by_route: BTreeMap<&'static str, Tally> = BTreeMap::new();
        for tally in totals.values() {
            by_route
                .entry(tally.labels.route)
                .or_insert_with(|| Tally::new(tally.labels.clone()))
                .add(tally);
        }
        let mut family = encoder.encode_descriptor(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route.",
            None,
            MetricType::Histogram,
        )?;
        for (route, tally) in by_route {
            let buckets: Vec<(f64, u64)> = self
                .0
                .bounds
                .iter()
                .copied()
                .chain(std::iter::once(f64::INFINITY))
                .zip(tally.buckets)
                .collect();
            family
                .encode_family(&RouteLabels { route })?
                .encode_histogram::<NoLabelSet>(tally.sum, tally.count, &buckets, None)?;
        }
        constant(
            &mut encoder,
            "ids_issued",
            "IDs handed out by POST /api/v1/ids.",
            ConstCounter::new(ids_issued),
        )
    }
}

/// Counts the answered requests of one connection (the edge makes one for
/// each, see `Edge::for_connection`) into [`Metrics`]' request series. A
/// request's future holds its connection's recorder, not the metrics
/// every connection shares, whose count would move between the cores at
/// each request as the recorder's does not.
#[derive(Debug)]
pub(crate) struct RequestRecorder {
    metrics: Arc<Metrics>,
}

impl RequestRecorder {
    /// A recorder into `metrics`.
    pub(crate) fn new(metrics: Arc<Metrics>) -> RequestRecorder {
        RequestRecorder { metrics }
    }

    /// The metrics it counts into.
    pub(crate) fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Counts one answered request and its time.
    pub(crate) fn observe(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        elapsed: Duration,
    ) {
        self.metrics.requests.observe(
            RequestLabels {
                route,
                method,
                status,
            },
            elapsed,
        );
    }
}

impl Metrics {
    /// Registers every metric; the generator's counters, the identity and
    /// (in etcd mode) the lease session's state are read from `minter` at
    /// each scrape.
    pub fn new(minter: Arc<Minter>) -> Metrics {
        let mut registry = Registry::with_prefix("snowmint");
        // Counted apart for each thread, added up at each scrape (see
        // `RequestTallies`).
        let requests = Arc::new(RequestTallies::new());
        registry.register_collector(Box::new(RequestCollector(Arc::clone(&requests))));
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
            connections_open,
            connection_events,
            mints_rejected,
        }
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
        self.requests.add_ids_issued(n);
    }

    /// Every metric in `format`.
    pub(crate) fn render(&self, format: Format) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        match format {
            Format::OpenMetrics => out,
            Format::Text => openmetrics_to_text(&out),
        }
    }
}

/// An exposition format `/metrics` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// OpenMetrics 1.0.0 (`application/openmetrics-text`), what Prometheus
    /// asks for first.
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (`text/plain`), for every other
    /// client (`curl`, `promtool check metrics`, older scrapers).
    Text,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it ranks
    /// `application/openmetrics-text` above `text/plain` (by `q`, wildcards
    /// included), else the text format, which is also the answer to no
    /// `Accept` at all and to `*/*`.
    pub(crate) fn negotiate(accept: Option<&str>) -> Format {
        let (mut openmetrics, mut text) = (0.0f32, 0.0f32);
        for range in accept.unwrap_or("").split(',') {
            let mut params = range.split(';');
            let media = params.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = params
                .filter_map(|p| p.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .map_or(Some(1.0), |(_, v)| v.trim().parse::<f32>().ok())
                .filter(|q| (0.0..=1.0).contains(q))
                .unwrap_or(0.0);
            let (om, tx) = match media.as_str() {
                "application/openmetrics-text" | "application/*" => (q, 0.0),
                "text/plain" | "text/*" => (0.0, q),
                "*/*" => (q, q),
                _ => (0.0, 0.0),
            };
            openmetrics = openmetrics.max(om);
            text = text.max(tx);
        }
        if openmetrics > text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// The `Content-Type` of a response in this format.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Rewrites OpenMetrics text (as prometheus-client writes it) into the
/// Prometheus text format 0.0.4:
///
/// - a counter family is named by its samples, `x_total`, in `# HELP` and
///   `# TYPE` (OpenMetrics names it `x`); its `x_created` samples, which
///   the text format has no place for, are left out;
/// - `info` becomes a `gauge` named `x_info`, `unknown` becomes `untyped`;
/// - `# UNIT` and `# EOF` lines, and exemplars (` # {...} v` after a
///   sample), are left out;
/// - `\"` in HELP text becomes `"` (the text format escapes only `\\` and
///   `\n` there); label values are escaped alike in both;
/// - a sample's timestamp, seconds in OpenMetrics, becomes milliseconds.
pub(crate) fn openmetrics_to_text(openmetrics: &str) -> String {
    // Family name -> its type, from the `# TYPE` lines (which follow the
    // `# HELP` line they must rename).
    let types: std::collections::HashMap<&str, &str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_once(' '))
        .collect();
    let family_name = |name: &str| -> String {
        match types.get(name).copied() {
            Some("counter") => format!("{name}_total"),
            Some("info") => format!("{name}_info"),
            _ => name.to_owned(),
        }
    };
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let help = help.replace("\\\"", "\"");
            out.push_str(&format!("# HELP {} {help}\n", family_name(name)));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let kind = match kind {
                "counter" | "gauge" | "histogram" | "summary" => kind,
                "info" | "stateset" => "gauge",
                _ => "untyped",
            };
            out.push_str(&format!("# TYPE {} {kind}\n", family_name(name)));
        } else if line.starts_with('#') {
            // `# UNIT`, `# EOF`: nothing in the text format.
        } else if let Some(sample) = text_sample(line, &types) {
            out.push_str(&sample);
            out.push('\n');
        }
    }
    out
}

/// One OpenMetrics sample line in the text format; `None` for a counter's
/// `_created` sample.
fn text_sample(line: &str, types: &std::collections::HashMap<&str, &str>) -> Option<String> {
    // The name and labels end at the first space outside the label set's
    // quoted values.
    let mut end = line.len();
    let (mut in_labels, mut in_quotes, mut escaped) = (false, false, false);
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' if in_labels => in_quotes = !in_quotes,
            '{' if !in_quotes => in_labels = true,
            '}' if !in_quotes => in_labels = false,
            ' ' if !in_labels => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let (series, rest) = line.split_at(end);
    let name = series.split('{').next().unwrap_or(series);
    if let Some(family) = name.strip_suffix("_created")
        && types.get(family) == Some(&"counter")
    {
        return None;
    }
    // Value, then an optional timestamp, then an optional exemplar.
    let rest = rest.split(" # ").next().unwrap_or("");
    let mut fields = rest.split_whitespace();
    let value = fields.next()?;
    Some(match fields.next().and_then(|t| t.parse::<f64>().ok()) {
        Some(seconds) => format!("{series} {value} {}", (seconds * 1000.0).round() as i64),
        None => format!("{series} {value}"),
    })
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
        constant(
            &mut encoder,
            "ready",
            "1 while a mint would succeed now (as /readyz answers)",
            ConstGauge::new(i64::from(self.minter.ready().is_ok())),
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
        if let Some((coordinator, status)) = self.minter.lease_metrics() {
            crate::routes::metrics::lease::encode(coordinator, &status, &mut encoder)?;
        }
        if let Some(m) = self.minter.generator_metrics() {
            for (kind, name, help, value) in crate::mint::generator::metric_rows(&m) {
                match kind {
                    Kind::Counter => constant(&mut encoder, name, help, ConstCounter::new(value))?,
                    Kind::GaugeMsAsSeconds => constant(&mut encoder, name, help, seconds(value))?,
                }
            }
        }
        constant(
            &mut encoder,
            "layout_end_timestamp_seconds",
            "Unix time of the last millisecond the ID layout's timestamp holds (July 2080)",
            seconds(snowmint::MAX_TIMESTAMP_MS),
        )?;
        constant(
            &mut encoder,
            "log_lines_dropped",
            "Log lines dropped because the log writer fell behind (the log is lossy, never the requests)",
            ConstCounter::new(crate::logs::dropped_lines()),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_picks_the_format() {
        // What Prometheus 2.x sends.
        let prometheus = "application/openmetrics-text;version=1.0.0,\
            application/openmetrics-text;version=0.0.1;q=0.75,\
            text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        for (accept, format) in [
            (Some(prometheus), Format::OpenMetrics),
            (Some("application/openmetrics-text"), Format::OpenMetrics),
            (Some("text/plain;q=0.2, application/*"), Format::OpenMetrics),
            (Some("text/plain;version=0.0.4"), Format::Text),
            (
                Some("application/openmetrics-text;q=0.5, text/plain"),
                Format::Text,
            ),
            (Some("application/openmetrics-text;q=0"), Format::Text),
            (
                Some("application/openmetrics-text;q=nonsense"),
                Format::Text,
            ),
            (Some("*/*"), Format::Text),
            (Some("application/json"), Format::Text),
            (Some(""), Format::Text),
            (None, Format::Text),
        ] {
            assert_eq!(Format::negotiate(accept), format, "{accept:?}");
        }
    }

    #[test]
    fn openmetrics_becomes_the_text_format() {
        let om = "# HELP ids IDs issued.\n# TYPE ids counter\n# UNIT ids ids\n\
                  ids_total{route=\"/a b\",x=\"q\\\" }\"} 3 # {trace=\"1\"} 1 1.5\n\
                  ids_created 1700000000.5\n\
                  # HELP up Say \\\"hi\\\".\n# TYPE up gauge\nup 1 1700000000.25\n\
                  # HELP build Build.\n# TYPE build info\nbuild_info{v=\"1\"} 1\n\
                  # HELP odd Odd.\n# TYPE odd unknown\nodd 2\n# EOF\n";
        assert_eq!(
            openmetrics_to_text(om),
            "# HELP ids_total IDs issued.\n# TYPE ids_total counter\n\
             ids_total{route=\"/a b\",x=\"q\\\" }\"} 3\n\
             # HELP up Say \"hi\".\n# TYPE up gauge\nup 1 1700000000250\n\
             # HELP build_info Build.\n# TYPE build_info gauge\nbuild_info{v=\"1\"} 1\n\
             # HELP odd Odd.\n# TYPE odd untyped\nodd 2\n"
        );
    }
}

#[cfg(test)]
mod recorder_tests {
    use super::*;
    use prometheus_client::metrics::histogram::Histogram;

    /// The value of the sample `name{labels}` in the text format.
    fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(name_and_labels)?.strip_prefix(' '))
            .and_then(|value| value.parse().ok())
    }

    /// Two connections' recorders count into the same series, each
    /// request once, also when many series alternate.
    #[test]
    fn recorders_count_every_request_into_the_families() {
        let metrics = Arc::new(Metrics::new(Minter::empty()));
        let (a, b) = (
            RequestRecorder::new(Arc::clone(&metrics)),
            RequestRecorder::new(Arc::clone(&metrics)),
        );
        let statuses: Vec<u16> = (0..16).map(|i| 400 + i).collect();
        for _ in 0..3 {
            for &status in &statuses {
                a.observe("/healthz", "GET", status, Duration::from_micros(30));
            }
            b.observe("/api/v1/ids", "POST", 200, Duration::from_millis(2));
            b.observe("/healthz", "GET", 400, Duration::from_micros(30));
        }
        let text = metrics.render(Format::Text);
        for &status in &statuses {
            let expected = if status == 400 { 6.0 } else { 3.0 };
            let series = format!(
                "snowmint_http_requests_total{{route=\"/healthz\",method=\"GET\",status=\"{status}\"}}"
            );
            assert_eq!(sample(&text, &series), Some(expected), "{series}\n{text}");
        }
        let mints =
            "snowmint_http_requests_total{route=\"/api/v1/ids\",method=\"POST\",status=\"200\"}";
        assert_eq!(sample(&text, mints), Some(3.0), "{text}");
        let count = |route: &str| {
            sample(
                &text,
                &format!("snowmint_http_request_duration_seconds_count{{route=\"{route}\"}}"),
            )
        };
        assert_eq!(count("/healthz"), Some(3.0 * statuses.len() as f64 + 3.0));
        assert_eq!(count("/api/v1/ids"), Some(3.0));
        // The 2 ms answers fall above the 1.6 ms bucket's bound, the 30 µs ones below it.
        let bucket =
            "snowmint_http_request_duration_seconds_bucket{le=\"0.0016\",route=\"/api/v1/ids\"}";
        assert_eq!(sample(&text, bucket), Some(0.0), "{text}");
    }

    /// Answers to count: (route, method, status, seconds as 512ths, which
    /// add up exactly in any order, so that sums compare as text).
    const ANSWERS: [(&str, &str, u16, u64); 12] = [
        ("/healthz", "GET", 200, 0),
        ("/healthz", "GET", 200, 1),
        ("/healthz", "HEAD", 200, 2),
        ("/healthz", "GET", 400, 0),
        ("/api/v1/ids", "POST", 200, 1),
        ("/api/v1/ids", "POST", 200, 3),
        ("/api/v1/ids", "POST", 429, 5),
        ("/api/v1/ids", "POST", 200, 256),
        ("/api/v1/ids", "GET", 405, 0),
        ("/api/v1/decode/{id}", "GET", 400, 512),
        ("/api/v1/decode/{id}", "GET", 200, 4),
        ("/metrics", "GET", 200, 9),
    ];

    fn elapsed(parts: u64) -> Duration {
        Duration::from_nanos(parts * 1_953_125)
    }

    /// The request series and the IDs issued write what prometheus-client's
    /// own families and counter (which they replaced) write for the same
    /// answers, line for line in both formats, though counted on several
    /// threads.
    #[test]
    fn the_tallies_write_what_the_families_wrote() {
        let mut families = Registry::with_prefix("snowmint");
        let requests = Family::<RequestLabels, Counter>::default();
        families.register(
            "http_requests",
            "HTTP requests answered, by route, method and status",
            requests.clone(),
        );
        let ids_issued: Counter = Counter::default();
        families.register(
            "ids_issued",
            "IDs handed out by POST /api/v1/ids",
            ids_issued.clone(),
        );
        let latency =
            Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_025, 2.0, 16))
            });
        families.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route",
            latency.clone(),
        );
        let metrics = Arc::new(Metrics::new(Minter::empty()));
        std::thread::scope(|s| {
            for chunk in ANSWERS.chunks(5) {
                let recorder = RequestRecorder::new(Arc::clone(&metrics));
                s.spawn(move || {
                    for _ in 0..3 {
                        for &(route, method, status, parts) in chunk {
                            recorder.observe(route, method, status, elapsed(parts));
                            if method == "POST" {
                                recorder.metrics().add_ids_issued(parts);
                            }
                        }
                    }
                });
            }
        });
        for _ in 0..3 {
            for (route, method, status, parts) in ANSWERS {
                requests
                    .get_or_create(&RequestLabels {
                        route,
                        method,
                        status,
                    })
                    .inc();
                latency
                    .get_or_create(&RouteLabels { route })
                    .observe(elapsed(parts).as_secs_f64());
                if method == "POST" {
                    ids_issued.inc_by(parts);
                }
            }
        }
        let mut expected = String::new();
        prometheus_client::encoding::text::encode(&mut expected, &families).unwrap();
        let ours = metrics.render(Format::OpenMetrics);
        let request_lines = |text: &str| {
            let mut lines: Vec<String> = text
                .lines()
                .filter(|l| {
                    l.contains("snowmint_http_request") || l.contains("snowmint_ids_issued")
                })
                .map(str::to_owned)
                .collect();
            lines.sort();
            lines
        };
        assert_eq!(request_lines(&ours), request_lines(&expected), "{ours}");
        let text = metrics.render(Format::Text);
        assert_eq!(
            request_lines(&text),
            request_lines(&openmetrics_to_text(&expected)),
            "{text}"
        );
    }
}
