//! What the log modules' tests share: a writer that keeps what it is
//! given, and a timer that always writes the same instant.

use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

use super::text::stamp;

/// Keeps every byte written, for the test to read back.
#[derive(Clone, Default)]
pub(super) struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    /// What was written, as text.
    pub(super) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

/// The instant [`Fixed`] writes: `2026-12-02T02:16:09.007440Z`.
pub(super) const SECS: u64 = 1_796_177_769;
pub(super) const MICROS: u32 = 7_440;

/// A timer that writes the same instant every time.
#[derive(Clone, Copy)]
pub(super) struct Fixed;

impl FormatTime for Fixed {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        w.write_str(std::str::from_utf8(&stamp(SECS, MICROS).unwrap()).unwrap())
    }
}
