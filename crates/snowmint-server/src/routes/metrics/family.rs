//! The constant metric families both the generator's and the etcd lease
//! session's collectors write at scrape time.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Writes one constant counter (shared with the etcd session's metrics).
pub(crate) fn counter(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    let c = ConstCounter::new(value);
    let e = encoder.encode_descriptor(name, help, None, c.metric_type())?;
    c.encode(e)
}

/// Writes one constant gauge (shared with the etcd session's metrics).
pub(crate) fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: i64,
) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(value);
    let e = encoder.encode_descriptor(name, help, None, g.metric_type())?;
    g.encode(e)
}

/// Writes one constant gauge of milliseconds, in seconds.
pub(crate) fn seconds_gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    ms: u64,
) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(ms as f64 / 1000.0);
    let e = encoder.encode_descriptor(name, help, None, g.metric_type())?;
    g.encode(e)
}
