//! Unix milliseconds to and from ISO-8601 UTC text, without a date-time crate.
//!
//! The calendar arithmetic is Howard Hinnant's `days_from_civil` /
//! `civil_from_days` (proleptic Gregorian, exact for every `i64` day count we
//! can meet here).

use core::fmt;

/// The last millisecond a layout's time may reach, 9999-12-31T23:59:59.999Z
/// in Unix ms: where four-digit years end, and with them ISO-8601 text as
/// [`parse_iso8601`] reads it and the databases' date types (MySQL's
/// `DATETIME`). A layout whose time field runs past it is refused, so every
/// time of an accepted layout is a date this module can write and read.
///
/// ```
/// use snowmint::time::{Iso8601, MAX_UNIX_MS, parse_iso8601};
/// assert_eq!(Iso8601(MAX_UNIX_MS as i64).to_string(), "9999-12-31T23:59:59.999Z");
/// assert_eq!(parse_iso8601("9999-12-31T23:59:59.999Z"), Some(MAX_UNIX_MS as i64));
/// ```
pub const MAX_UNIX_MS: u64 = 253_402_300_799_999;

/// Formats Unix milliseconds as ISO-8601 UTC with millisecond precision,
/// e.g. `2010-11-04T01:42:55.657Z`.
///
/// ```
/// use snowmint::time::Iso8601;
/// assert_eq!(Iso8601(1288834975657).to_string(), "2010-11-04T01:42:55.657Z");
/// assert_eq!(Iso8601(0).to_string(), "1970-01-01T00:00:00.000Z");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iso8601(pub i64);

impl fmt::Display for Iso8601 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        let days = ms.div_euclid(86_400_000);
        let in_day = ms.rem_euclid(86_400_000);
        let (y, m, d) = civil_from_days(days);
        let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
        let (min, rest) = (rest / 60_000, rest % 60_000);
        let (s, milli) = (rest / 1000, rest % 1000);
        write!(f, "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
    }
}

/// Days since 1970-01-01 of the civil date `y-m-d`.
pub(crate) const fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
pub(crate) const fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

const fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Parses an ISO-8601 / RFC 3339 time into Unix milliseconds.
///
/// Accepts `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM`, `YYYY-MM-DDTHH:MM:SS` and
/// `YYYY-MM-DDTHH:MM:SS.fff…`, with `T` or a space between date and time, and
/// an optional `Z` or `±HH:MM` offset (UTC when absent). Fractions finer than
/// a millisecond are truncated. Returns `None` for anything else.
///
/// ```
/// use snowmint::time::parse_iso8601;
/// assert_eq!(parse_iso8601("2010-11-04T01:42:55.657Z"), Some(1288834975657));
/// assert_eq!(parse_iso8601("2010-11-04T02:42:55.657+01:00"), Some(1288834975657));
/// assert_eq!(parse_iso8601("2010-11-04"), Some(1288828800000));
/// assert_eq!(parse_iso8601("2010-02-30"), None);
/// ```
pub fn parse_iso8601(input: &str) -> Option<i64> {
    let b = input.trim().as_bytes();
    let mut p = Cursor { b, i: 0 };
    let y = p.digits(4)?;
    p.eat(b'-')?;
    let m = p.digits(2)?;
    p.eat(b'-')?;
    let d = p.digits(2)?;
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    let (mut h, mut min, mut s, mut milli) = (0, 0, 0, 0);
    let mut offset_min = 0;
    if p.i < b.len() {
        match b[p.i] {
            b'T' | b't' | b' ' => p.i += 1,
            _ => return None,
        }
        h = p.digits(2)?;
        p.eat(b':')?;
        min = p.digits(2)?;
        if p.peek() == Some(b':') {
            p.i += 1;
            s = p.digits(2)?;
            if p.peek() == Some(b'.') || p.peek() == Some(b',') {
                p.i += 1;
                let start = p.i;
                let mut scale = 100;
                while let Some(c @ b'0'..=b'9') = p.peek() {
                    milli += i64::from(c - b'0') * scale;
                    scale /= 10;
                    p.i += 1;
                }
                if p.i == start || p.i - start > 9 {
                    return None;
                }
            }
        }
        if h > 23 || min > 59 || s > 59 {
            return None;
        }
        match p.peek() {
            None => {}
            Some(b'Z' | b'z') => p.i += 1,
            Some(sign @ (b'+' | b'-')) => {
                p.i += 1;
                let oh = p.digits(2)?;
                p.eat(b':')?;
                let om = p.digits(2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                offset_min = (oh * 60 + om) * if sign == b'+' { 1 } else { -1 };
            }
            Some(_) => return None,
        }
    }
    if p.i != b.len() {
        return None;
    }
    let days = days_from_civil(y, m, d);
    Some(((days * 24 + h) * 60 + min - offset_min) * 60_000 + s * 1000 + milli)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn digits(&mut self, n: usize) -> Option<i64> {
        let s = self.b.get(self.i..self.i + n)?;
        let mut v = 0;
        for &c in s {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        self.i += n;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn bounds_of_the_format() {
        assert_eq!(
            Iso8601(1288834974657).to_string(),
            "2010-11-04T01:42:54.657Z"
        );
        assert_eq!(
            Iso8601(3487858230208).to_string(),
            "2080-07-10T17:30:30.208Z"
        );
        assert_eq!(Iso8601(-1).to_string(), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            parse_iso8601("2080-07-10T17:30:30.208Z"),
            Some(3487858230208)
        );
        assert_eq!(parse_iso8601("2024-02-29 00:00"), Some(1709164800000));
        assert_eq!(parse_iso8601("2023-02-29"), None);
        assert_eq!(
            parse_iso8601("2010-11-04T01:42:55.657123456Z"),
            Some(1288834975657)
        );
        assert_eq!(parse_iso8601("2010-11-04T01:42:55.Z"), None);
        assert_eq!(parse_iso8601("2010-11-04T24:00"), None);
        assert_eq!(parse_iso8601("2010-11-04Tx"), None);
        assert_eq!(parse_iso8601(""), None);
    }

    proptest::proptest! {
        #[test]
        fn format_then_parse_round_trips(ms in -62_135_596_800_000i64..253_402_300_799_999) {
            let text = Iso8601(ms).to_string();
            proptest::prop_assert_eq!(parse_iso8601(&text), Some(ms));
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = parse_iso8601(&s);
        }
    }
}
