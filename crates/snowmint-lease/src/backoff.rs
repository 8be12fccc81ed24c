//! Exponential backoff with jitter, capped: how long to wait before the next
//! try of something that keeps failing (or keeps finding nothing free).

use std::time::Duration;

/// Exponential backoff with jitter, capped.
pub(crate) struct Backoff {
    next: Duration,
    min: Duration,
    max: Duration,
    seed: u64,
}

impl Backoff {
    /// Waits from `min` (the first), doubling up to `max`, each with +-25 %
    /// jitter drawn from `seed`.
    pub(crate) fn new(min: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff {
            next: min,
            min,
            max,
            seed: seed | 1,
        }
    }

    /// Back to the first wait.
    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }

    /// The next wait: the current step, +-25 % jitter, then doubles.
    pub(crate) fn step(&mut self) -> Duration {
        // xorshift64: cheap jitter so instances started together spread out.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let jitter = (self.seed % 500) as f64 / 1000.0 + 0.75;
        let wait = self.next.mul_f64(jitter);
        self.next = (self.next * 2).min(self.max);
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_its_cap_with_jitter() {
        let mut b = Backoff::new(Duration::from_millis(200), Duration::from_secs(10), 7);
        let waits: Vec<Duration> = (0..12).map(|_| b.step()).collect();
        assert!(waits[0] >= Duration::from_millis(150) && waits[0] <= Duration::from_millis(250));
        assert!(waits.iter().all(|w| *w <= Duration::from_millis(12_500)));
        assert!(waits[11] >= Duration::from_millis(7_500));
        b.reset();
        assert!(b.step() <= Duration::from_millis(250));
    }
}
