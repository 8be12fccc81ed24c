//! The numbers the page states about the format, derived from the core's
//! layout so that no label, limit, formula or explanation can drift from
//! what the code does.

use std::sync::LazyLock;

use snowmint::time::Iso8601;
use snowmint::{Field, Layout, Parts, SnowflakeId};

/// The contract's reference case and the page's worked example: one second
/// after the epoch, datacenter 1, worker 1, sequence 0.
pub(crate) const EXAMPLE: Parts = Parts {
    timestamp_ms: snowmint::TWITTER_EPOCH_MS + 1000,
    datacenter: 1,
    worker: 1,
    sequence: 0,
};

/// The layout the explorer composes in, with the derived figures people
/// ask about. Every method is arithmetic on the [`Layout`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub layout: Layout,
}

/// The page's facts: the Twitter layout, the only one it composes in.
pub(crate) static FACTS: Facts = Facts {
    layout: Layout::TWITTER,
};

impl Facts {
    /// The epoch, in Unix milliseconds.
    pub fn epoch_ms(&self) -> u64 {
        self.layout.epoch_ms()
    }

    /// The epoch as ISO-8601 UTC.
    pub fn epoch(&self) -> Iso8601 {
        Iso8601(self.epoch_ms() as i64)
    }

    /// The last encodable time as ISO-8601 UTC.
    pub fn end(&self) -> Iso8601 {
        Iso8601(self.layout.max_timestamp_ms() as i64)
    }

    /// IDs one worker can issue in one millisecond (4096).
    pub fn per_ms(&self) -> u64 {
        self.layout.max_sequence() + 1
    }

    /// IDs one worker can issue in one second (4,096,000).
    pub fn per_second(&self) -> u64 {
        self.per_ms() * 1000
    }

    /// How many datacenter IDs there are (32).
    pub fn datacenters(&self) -> u64 {
        self.layout.max_datacenter() + 1
    }

    /// How many worker IDs each datacenter has (32).
    pub fn workers(&self) -> u64 {
        self.layout.max_worker() + 1
    }

    /// Datacenter x worker identities that can mint at once (1024).
    pub fn identities(&self) -> u64 {
        self.datacenters() * self.workers()
    }

    /// Whole years the timestamp field lasts (69).
    pub fn years(&self) -> u64 {
        const MS_PER_YEAR: u64 = 365_2425 * 86_400_000 / 10_000;
        (self.layout.max_delta_ms() + 1) / MS_PER_YEAR
    }

    /// The inclusive range of a field.
    pub fn range(&self, field: Field) -> (u64, u64) {
        self.layout.range(field)
    }

    /// The worked example, step by step.
    pub fn example(&self) -> &'static Example {
        static EXAMPLE_STEPS: LazyLock<Example> = LazyLock::new(|| Example::of(FACTS.layout));
        &EXAMPLE_STEPS
    }
}

/// [`EXAMPLE`] composed one field at a time.
#[derive(Debug)]
pub(crate) struct Example {
    pub parts: Parts,
    /// Milliseconds since the epoch.
    pub delta: u64,
    /// Each field shifted into place, most significant first: timestamp,
    /// datacenter, worker, sequence (which is not shifted).
    pub shifted: [u64; 4],
    /// The ID, as the core composes it.
    pub id: SnowflakeId,
}

impl Example {
    fn of(layout: Layout) -> Example {
        let parts = EXAMPLE;
        let delta = parts.timestamp_ms - layout.epoch_ms();
        Example {
            parts,
            delta,
            shifted: [
                delta << layout.timestamp_shift(),
                parts.datacenter << layout.datacenter_shift(),
                parts.worker << layout.worker_shift(),
                parts.sequence,
            ],
            id: layout
                .compose_parts(parts)
                .expect("the reference case is a valid ID"),
        }
    }

    /// The example's time as ISO-8601 UTC.
    pub fn time(&self) -> Iso8601 {
        Iso8601(self.parts.timestamp_ms as i64)
    }

    /// The query that fills the compose form with the example.
    pub fn query(&self) -> [(&'static str, String); 4] {
        [
            ("timestamp", self.parts.timestamp_ms.to_string()),
            ("datacenter", self.parts.datacenter.to_string()),
            ("worker", self.parts.worker.to_string()),
            ("sequence", self.parts.sequence.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_are_the_contracts() {
        let f = FACTS;
        assert_eq!(f.epoch().to_string(), "2010-11-04T01:42:54.657Z");
        assert_eq!(f.end().to_string(), "2080-07-10T17:30:30.208Z");
        assert_eq!(f.per_ms(), 4096);
        assert_eq!(f.per_second(), 4_096_000);
        assert_eq!(
            (f.datacenters(), f.workers(), f.identities()),
            (32, 32, 1024)
        );
        assert_eq!(f.years(), 69);
    }

    #[test]
    fn the_worked_example_adds_up_to_the_composed_id() {
        let e = FACTS.example();
        assert_eq!(e.delta, 1000);
        assert_eq!(e.shifted, [4_194_304_000, 131_072, 4_096, 0]);
        assert_eq!(e.id.get(), 4_194_439_168);
        // The fields do not overlap, so adding them is OR-ing them.
        assert_eq!(e.shifted.iter().sum::<u64>(), e.id.get());
        assert_eq!(e.shifted.iter().fold(0, |a, b| a | b), e.id.get());
        for (i, a) in e.shifted.iter().enumerate() {
            for b in &e.shifted[i + 1..] {
                assert_eq!(a & b, 0);
            }
        }
    }
}
