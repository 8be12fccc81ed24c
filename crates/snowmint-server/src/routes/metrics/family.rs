//! The constant metric families both the generator's and the etcd lease
//! session's collectors write at scrape time.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;

/// Writes one unlabelled constant metric, a `ConstCounter` or a
/// `ConstGauge` (shared with the etcd session's metrics).
pub(crate) fn constant(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric: impl EncodeMetric,
) -> Result<(), std::fmt::Error> {
    let e = encoder.encode_descriptor(name, help, None, metric.metric_type())?;
    metric.encode(e)
}

/// A constant gauge of milliseconds, in seconds.
pub(crate) fn seconds(ms: u64) -> ConstGauge<f64> {
    ConstGauge::new(ms as f64 / 1000.0)
}
