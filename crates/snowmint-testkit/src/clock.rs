//! A process's wall clock under libfaketime, stepped while it runs.
//!
//! The process is started with `LD_PRELOAD` set to libfaketime and
//! `FAKETIME_TIMESTAMP_FILE` pointing at a file that holds its offset from
//! the real time (`+1.500`, `-3.000`: seconds, signed, no unit: libfaketime
//! 0.9.10 reads `ms` as minutes). `FAKETIME_NO_CACHE=1` makes it read the file
//! on every clock call, so a new offset applies at once;
//! `FAKETIME_DONT_FAKE_MONOTONIC=1` leaves the monotonic clock alone, as a
//! real wall-clock step (NTP, an operator) would.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's `libfaketime` package puts the preload library.
pub const DEBIAN_LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// The preload library: `$SNOWMINT_LIBFAKETIME`, or Debian's path if it exists.
pub fn libfaketime() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("SNOWMINT_LIBFAKETIME") {
        return Some(PathBuf::from(path));
    }
    Path::new(DEBIAN_LIBFAKETIME)
        .exists()
        .then(|| PathBuf::from(DEBIAN_LIBFAKETIME))
}

/// One process's fake wall clock: an offset from the real time, in a file.
#[derive(Debug)]
pub struct FakeClock {
    library: PathBuf,
    file: PathBuf,
    offset_ms: i64,
}

impl FakeClock {
    /// A clock at offset 0 kept in `file` (created or overwritten).
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn new(library: PathBuf, file: PathBuf) -> io::Result<FakeClock> {
        let mut clock = FakeClock {
            library,
            file,
            offset_ms: 0,
        };
        clock.set_offset_ms(0)?;
        Ok(clock)
    }

    /// Adds the environment that puts a process started by `command` under
    /// this clock.
    pub fn apply(&self, command: &mut Command) {
        for (key, value) in self.env() {
            command.env(key, value);
        }
    }

    /// The environment that puts a process under this clock.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("LD_PRELOAD", self.library.display().to_string()),
            ("FAKETIME_TIMESTAMP_FILE", self.file.display().to_string()),
            ("FAKETIME_NO_CACHE", "1".to_owned()),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
        ]
    }

    /// The current offset from the real time, in milliseconds.
    pub fn offset_ms(&self) -> i64 {
        self.offset_ms
    }

    /// Sets the offset; processes under this clock see it on their next
    /// clock call. Written to a temporary file and renamed, so a reader
    /// never sees half a value.
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn set_offset_ms(&mut self, offset_ms: i64) -> io::Result<()> {
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, format!("{}\n", format_offset(offset_ms)))?;
        std::fs::rename(&tmp, &self.file)?;
        self.offset_ms = offset_ms;
        Ok(())
    }
}

/// The offset as libfaketime reads it: `+1.500` or `-0.250` seconds.
pub fn format_offset(offset_ms: i64) -> String {
    let sign = if offset_ms < 0 { '-' } else { '+' };
    let abs = offset_ms.unsigned_abs();
    format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_signed_seconds_with_milliseconds() {
        assert_eq!(format_offset(0), "+0.000");
        assert_eq!(format_offset(1500), "+1.500");
        assert_eq!(format_offset(-250), "-0.250");
        assert_eq!(format_offset(-5000), "-5.000");
    }

    #[test]
    fn a_process_under_the_clock_sees_the_offset() {
        let Some(library) = libfaketime() else {
            crate::skip::<()>("libfaketime is not installed (apt-get install faketime)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut clock = FakeClock::new(library, dir.path().join("clock")).unwrap();
        let seconds = |clock: &FakeClock| -> i64 {
            let mut command = Command::new("date");
            command.arg("+%s");
            clock.apply(&mut command);
            let out = command.output().expect("run date");
            String::from_utf8(out.stdout)
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let real = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64
        };
        clock.set_offset_ms(-100_000).unwrap();
        let shifted = seconds(&clock) - real();
        assert!((-101..=-99).contains(&shifted), "offset seen: {shifted}");
        clock.set_offset_ms(50_000).unwrap();
        let shifted = seconds(&clock) - real();
        assert!((49..=51).contains(&shifted), "offset seen: {shifted}");
    }
}
