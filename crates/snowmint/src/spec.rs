//! Layout specs, `epoch=EPOCH;unit=UNIT;fields=NAME:BITS,...`: parsed into a
//! [`Layout`] and printed from one.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write;
use core::str::FromStr;

use crate::error::{Error, echo};
use crate::layout::{Layout, field_name};
use crate::name::{FieldName, MAX_FIELDS};
use crate::parse::{ParsedInt, parse_int};
use crate::problem::LayoutProblem;

impl Layout {
    /// A preset by name (see [`by_name`](Layout::by_name)) or a layout
    /// written as a spec: `epoch=EPOCH;unit=UNIT;fields=NAME:BITS,...`.
    ///
    /// - `epoch`: Unix milliseconds or an ISO-8601 time (required).
    /// - `unit`: the time field's unit, `<n>ms` or `<n>s`; `1ms` if left out.
    /// - `fields`: names and widths from the most significant bit down; the
    ///   first is `timestamp`, names are `[a-z0-9_]` (at most
    ///   [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) bytes, no two alike), widths are 1 to 64 and add
    ///   up to at most 64, at most [`MAX_FIELDS`] fields. The bits above
    ///   them are 0.
    ///
    /// A spec that spells out a preset exactly is that preset (its
    /// [`name`](Layout::name) is the preset's). The error says what is
    /// wrong, and its field is [`Field::Layout`](crate::Field::Layout).
    ///
    /// ```
    /// use snowmint::Layout;
    /// let discord = Layout::parse("epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12")?;
    /// assert_eq!(discord, Layout::DISCORD);
    /// let sony = Layout::parse("epoch=2014-09-01T00:00:00Z;unit=10ms;fields=timestamp:39,sequence:8,machine:16")?;
    /// assert_eq!(sony, Layout::SONYFLAKE);
    /// let mine = Layout::parse("epoch=2020-01-01; unit=1s; fields=timestamp:31,node:10,step:12")?;
    /// assert_eq!((mine.name(), mine.unit_ms(), mine.max_id()), ("custom", 1000, (1 << 53) - 1));
    /// assert_eq!(
    ///     Layout::parse("epoch=0;fields=timestamp:41,worker:10,sequence:14").unwrap_err().to_string(),
    ///     "invalid layout: the widths add up to 65 bits, more than 64"
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn parse(input: &str) -> Result<Layout, Error> {
        let text = input.trim();
        if let Some(preset) = Layout::by_name(text) {
            return Ok(preset);
        }
        if text.is_empty() {
            return Err(bad(LayoutProblem::Empty));
        }
        if !text.contains('=') {
            return Err(bad(LayoutProblem::NotASpec { input: echo(text) }));
        }
        let (mut epoch, mut unit, mut fields) = (None, None, None);
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(bad(LayoutProblem::NotKeyValue { part: echo(part) }));
            };
            let slot = match key.trim() {
                "epoch" => &mut epoch,
                "unit" => &mut unit,
                "fields" => &mut fields,
                other => {
                    return Err(bad(LayoutProblem::UnknownKey { key: echo(other) }));
                }
            };
            if slot.replace(value.trim()).is_some() {
                return Err(bad(LayoutProblem::RepeatedKey {
                    key: key.trim().to_string(),
                }));
            }
        }
        let Some(epoch) = epoch else {
            return Err(bad(LayoutProblem::MissingEpoch));
        };
        let epoch_ms = parse_epoch(epoch)?;
        let unit_ms = match unit {
            Some(u) => parse_unit(u)?,
            None => 1,
        };
        let Some(fields) = fields else {
            return Err(bad(LayoutProblem::MissingFields));
        };
        let fields = parse_fields(fields)?;
        let layout = Layout::from_fields(epoch_ms, unit_ms, &fields)?;
        Ok(Layout::PRESETS
            .into_iter()
            .find(|p| p.same_fields(&layout))
            .unwrap_or(layout))
    }

    /// The layout written as a spec, which [`parse`](Layout::parse) reads
    /// back: the epoch in Unix ms, the unit only when it is not 1 ms (in
    /// seconds when it is whole seconds).
    ///
    /// ```
    /// use snowmint::Layout;
    /// assert_eq!(
    ///     Layout::TWITTER.spec(),
    ///     "epoch=1288834974657;fields=timestamp:41,datacenter:5,worker:5,sequence:12"
    /// );
    /// assert_eq!(
    ///     Layout::SONYFLAKE.spec(),
    ///     "epoch=1409529600000;unit=10ms;fields=timestamp:39,sequence:8,machine:16"
    /// );
    /// ```
    pub fn spec(&self) -> String {
        let mut out = format!("epoch={}", self.epoch_ms());
        let unit = self.unit_ms();
        if unit.is_multiple_of(1000) {
            let _ = write!(out, ";unit={}s", unit / 1000);
        } else if unit != 1 {
            let _ = write!(out, ";unit={unit}ms");
        }
        out.push_str(";fields=");
        for (i, f) in self.fields().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}:{}", f.name(), f.bits());
        }
        out
    }

    /// A layout of the given fields, checked as [`parse`](Layout::parse)
    /// checks a spec's: the first must be `timestamp`, names valid and
    /// distinct, widths 1 to 64 adding up to at most 64. Its slots follow
    /// the rule of [`Layout`].
    ///
    /// ```
    /// use snowmint::Layout;
    /// let l = Layout::from_fields(1577836800000, 1, &[("timestamp", 41), ("machine", 10), ("sequence", 12)])?;
    /// assert_eq!(l.spec(), "epoch=1577836800000;fields=timestamp:41,machine:10,sequence:12");
    /// assert_eq!(
    ///     Layout::from_fields(0, 1, &[("machine", 10), ("timestamp", 41)]).unwrap_err().to_string(),
    ///     "invalid layout: timestamp must be the first field (the most significant), \
    ///      so that IDs order by time; it comes after machine"
    /// );
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub fn from_fields(
        epoch_ms: u64,
        unit_ms: u64,
        fields: &[(&str, u32)],
    ) -> Result<Layout, Error> {
        if fields.len() > MAX_FIELDS {
            return Err(bad(LayoutProblem::TooManyFields {
                count: fields.len(),
            }));
        }
        let mut names = Vec::with_capacity(fields.len());
        for &(name, bits) in fields {
            let n = field_name(name)?;
            if name == "sign" || name == "unused" {
                return Err(bad(LayoutProblem::ReservedName {
                    name: name.to_string(),
                }));
            }
            if !(1..=64).contains(&bits) {
                return Err(bad(LayoutProblem::BadWidth {
                    name: name.to_string(),
                    width: bits.to_string(),
                }));
            }
            if names.iter().any(|(m, _): &(FieldName, u8)| *m == n) {
                return Err(bad(LayoutProblem::NamedTwice {
                    name: name.to_string(),
                }));
            }
            names.push((n, bits as u8));
        }
        match names.iter().position(|(n, _)| n.is("timestamp")) {
            None => {
                return Err(bad(LayoutProblem::NoTimestamp));
            }
            Some(0) => {}
            Some(i) => {
                return Err(bad(LayoutProblem::TimestampNotFirst {
                    after: names[i - 1].0.to_string(),
                }));
            }
        }
        let total: u32 = names.iter().map(|&(_, b)| u32::from(b)).sum();
        if total > 64 {
            return Err(bad(LayoutProblem::TooWide { bits: total }));
        }
        if unit_ms == 0 {
            return Err(bad(LayoutProblem::ZeroUnit { input: None }));
        }
        Layout::build("custom", epoch_ms, unit_ms, &names).validated()
    }
}

impl FromStr for Layout {
    type Err = Error;

    /// [`Layout::parse`].
    fn from_str(s: &str) -> Result<Layout, Error> {
        Layout::parse(s)
    }
}

fn bad(problem: LayoutProblem) -> Error {
    Error::layout(problem)
}

fn parse_epoch(text: &str) -> Result<u64, Error> {
    let wrong = || bad(LayoutProblem::BadEpoch { input: echo(text) });
    match parse_int(text) {
        ParsedInt::Int(v) if (0..=i128::from(u64::MAX)).contains(&v) => Ok(v as u64),
        ParsedInt::Int(_) | ParsedInt::TooWide => Err(wrong()),
        ParsedInt::NotANumber => match crate::time::parse_iso8601(text) {
            Some(ms) if ms >= 0 => Ok(ms as u64),
            _ => Err(wrong()),
        },
    }
}

fn parse_unit(text: &str) -> Result<u64, Error> {
    let wrong = || bad(LayoutProblem::BadUnit { input: echo(text) });
    let (digits, scale) = if let Some(d) = text.strip_suffix("ms") {
        (d, 1)
    } else if let Some(d) = text.strip_suffix('s') {
        (d, 1000)
    } else {
        return Err(wrong());
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(wrong());
    }
    match parse_int(digits) {
        ParsedInt::Int(0) => Err(bad(LayoutProblem::ZeroUnit {
            input: Some(echo(text)),
        })),
        ParsedInt::Int(n) => u64::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(wrong),
        _ => Err(wrong()),
    }
}

/// `NAME:BITS,...` into names and widths (checked by `from_fields`).
fn parse_fields(text: &str) -> Result<Vec<(&str, u32)>, Error> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad(LayoutProblem::EmptyEntry));
        }
        let Some((name, bits)) = item.split_once(':') else {
            return Err(bad(LayoutProblem::NoWidth { entry: echo(item) }));
        };
        let name = name.trim();
        field_name(name)?;
        let bits = match parse_int(bits) {
            ParsedInt::Int(b) if (1..=64).contains(&b) => b as u32,
            _ => {
                return Err(bad(LayoutProblem::BadWidth {
                    name: name.to_string(),
                    width: echo(bits.trim()),
                }));
            }
        };
        out.push((name, bits));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(spec: &str) -> String {
        Layout::parse(spec).unwrap_err().to_string()
    }

    #[test]
    fn every_preset_spells_itself() {
        for preset in Layout::PRESETS {
            assert_eq!(
                Layout::parse(&preset.spec()),
                Ok(preset),
                "{}",
                preset.spec()
            );
        }
        assert_eq!(
            Layout::DISCORD.spec(),
            "epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12"
        );
        assert_eq!(
            Layout::MASTODON.spec(),
            "epoch=0;fields=timestamp:48,sequence_data:16"
        );
        assert_eq!(
            Layout::INSTAGRAM.spec(),
            "epoch=1314220021721;fields=timestamp:41,shard:13,sequence:10"
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let cases = [
            (
                "epoch=0;fields=timestamp:65",
                "timestamp must be 1..=64 bits wide, got \"65\"",
            ),
            (
                "epoch=0;fields=timestamp:41,worker:10,sequence:14",
                "the widths add up to 65 bits, more than 64",
            ),
            (
                "epoch=0;fields=worker:10,sequence:12",
                "no field is named timestamp",
            ),
            (
                "epoch=0;unit=0ms;fields=timestamp:41",
                "the time unit must be at least 1 ms, got \"0ms\"",
            ),
            ("epoch=0;unit=0s;fields=timestamp:41", "at least 1 ms"),
            (
                "epoch=0;unit=10m;fields=timestamp:41",
                "the unit must be <n>ms or <n>s",
            ),
            ("fields=timestamp:41", "the epoch is missing"),
            ("epoch=0", "the fields are missing"),
            (
                "epoch=0;fields=timestamp:41,Worker:5",
                "the field name \"Worker\" must be",
            ),
            (
                "epoch=0;fields=timestamp:41,a-b:5",
                "the field name \"a-b\"",
            ),
            ("epoch=0;fields=timestamp:41,w:5,w:5", "w is named twice"),
            (
                "epoch=0;fields=timestamp:41,sign:1",
                "sign names the bits above",
            ),
            (
                "epoch=0;fields=timestamp:41,w",
                "the field \"w\" has no width",
            ),
            (
                "epoch=0;fields=timestamp:41,w:0",
                "w must be 1..=64 bits wide, got \"0\"",
            ),
            ("epoch=0;fields=timestamp:41,,w:3", "empty entry"),
            ("epoch=0;fields=w:3,timestamp:41", "it comes after w"),
            (
                "epoch=-1;fields=timestamp:41",
                "at or after 1970-01-01, got \"-1\"",
            ),
            (
                "epoch=1969-12-31;fields=timestamp:41",
                "at or after 1970-01-01",
            ),
            ("epoch=soon;fields=timestamp:41", "got \"soon\""),
            (
                "epoch=0;epoch=1;fields=timestamp:41",
                "epoch is given more than once",
            ),
            (
                "epoch=0;colour=red;fields=timestamp:41",
                "unknown key \"colour\"",
            ),
            ("epoch=0;fields", "\"fields\" is not KEY=VALUE"),
            ("flickr", "\"flickr\" is neither a preset"),
            ("", "empty"),
            (
                "epoch=18446744073709551615;fields=timestamp:41",
                "runs past 9999-12-31T23:59:59.999Z",
            ),
            (
                "epoch=0;unit=2ms;fields=timestamp:63",
                "runs past 9999-12-31T23:59:59.999Z",
            ),
        ];
        for (spec, want) in cases {
            let got = err(spec);
            assert!(got.starts_with("invalid layout: "), "{spec}: {got}");
            assert!(got.contains(want), "{spec}: {got}");
        }
        let many: Vec<String> = (0..16).map(|i| format!("f{i}:1")).collect();
        assert!(
            err(&format!("epoch=0;fields=timestamp:1,{}", many.join(","))).contains("17 fields"),
        );
    }

    #[test]
    fn units_and_epochs() {
        let l =
            Layout::parse("epoch=2020-01-01T00:00:00+01:00;unit=2s;fields=timestamp:30").unwrap();
        assert_eq!((l.epoch_ms(), l.unit_ms()), (1577833200000, 2000));
        assert_eq!(l.spec(), "epoch=1577833200000;unit=2s;fields=timestamp:30");
        assert_eq!(l.max_id(), (1 << 30) - 1);
        let l = Layout::parse(" epoch = 5 ; unit = 1500ms ; fields = timestamp : 36 ").unwrap();
        assert_eq!(l.spec(), "epoch=5;unit=1500ms;fields=timestamp:36");
        assert_eq!(Layout::parse("TWITTER"), Ok(Layout::TWITTER));
        assert_eq!("discord".parse::<Layout>(), Ok(Layout::DISCORD));
    }
}
