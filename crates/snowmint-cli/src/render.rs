//! The two views of an ID: for people (aligned, coloured on a terminal) and
//! for programs (the contract's JSON object).

use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write as _};

use snowmint::time::Iso8601;
use snowmint::{Breakdown, Field, Layout, Segment};

use crate::error::CliError;

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    // On a terminal, unless `NO_COLOR` is set to something or `TERM=dumb`.
    Auto,
    // Always, even into a pipe and despite `NO_COLOR` (an explicit flag
    // beats the environment, as no-color.org asks).
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour what goes to stdout.
    pub fn for_stdout(self) -> bool {
        self.decide(
            std::io::stdout().is_terminal(),
            std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            std::env::var_os("TERM").is_some_and(|t| t == "dumb"),
        )
    }

    fn decide(self, terminal: bool, no_color: bool, dumb: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color && !dumb,
        }
    }
}

/// The `--layout NAME|SPEC` value parser: a preset's name or a spec; the
/// core's error says what is wrong (and lists the presets).
pub fn parse_layout(text: &str) -> Result<Layout, snowmint::Error> {
    Layout::parse(text)
}

/// A value of a closed set (an encoding, a dialect, a partition period),
/// read by the core; a refusal is `parse`'s message naming `field`, and
/// `--help` lists the names.
#[derive(Clone)]
pub struct NameParser<T> {
    field: &'static str,
    names: &'static [&'static str],
    parse: fn(&'static str, &str) -> Result<T, String>,
}

impl<T> NameParser<T> {
    /// Reads `field`'s value with `parse`; `names` are the ones `--help` lists.
    pub fn new(
        field: &'static str,
        names: &'static [&'static str],
        parse: fn(&'static str, &str) -> Result<T, String>,
    ) -> NameParser<T> {
        NameParser {
            field,
            names,
            parse,
        }
    }
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for NameParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        (self.parse)(self.field, &text).map_err(|message| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, message).with_cmd(cmd)
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.names
                .iter()
                .map(|n| clap::builder::PossibleValue::new(*n)),
        ))
    }
}

/// `worker, process and increment`: the fields below a layout's time.
pub fn field_list(layout: &Layout) -> String {
    let names: Vec<&str> = layout.node_fields().map(|f| f.name()).collect();
    match names.split_last() {
        None => "none but the timestamp".to_string(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// How one ID is shown.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// The contract's JSON object instead of the human view.
    pub json: bool,
    /// ANSI colours in the human view.
    pub color: bool,
}

/// Renders `b` (an ID read in `layout`) the way `view` asks, ending with a
/// newline.
pub fn render(b: &Breakdown, layout: Layout, view: View) -> Result<String, CliError> {
    json_or_human(
        view.json,
        || serde_json::to_string(b),
        || human(b, layout, view.color),
    )
}

/// What a command prints, ending with a newline: the JSON line `json`
/// makes (with `--json`), or else the human view.
pub fn json_or_human(
    json: bool,
    to_json: impl FnOnce() -> serde_json::Result<String>,
    human: impl FnOnce() -> String,
) -> Result<String, CliError> {
    if json {
        let mut s = to_json().map_err(|e| CliError::Runtime(e.into()))?;
        s.push('\n');
        Ok(s)
    } else {
        Ok(human())
    }
}

/// Writes `text` to stdout. A closed pipe (`snowmint ... | head -1`) is not
/// an error: the reader has what it wanted.
pub fn print(text: &str) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    written(out.write_all(text.as_bytes()).and_then(|()| out.flush())).map(drop)
}

/// The outcome of a write to stdout: `Ok(false)` when the reader has gone
/// away (a closed pipe), a runtime error for any other failure.
pub fn written(result: io::Result<()>) -> Result<bool, CliError> {
    match result {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(CliError::Runtime(
            anyhow::Error::new(e).context("cannot write to stdout"),
        )),
    }
}

/// ANSI colour of each slot, in order sign .. sequence.
const COLORS: [&str; 5] = ["90", "36", "33", "35", "32"];

/// The colour of a segment, by the slot its field fills (so a layout's
/// field keeps its colour wherever the layout puts it); the sign, unused
/// bits and fields beyond the slots are grey.
fn slot(s: &Segment) -> usize {
    match s.slot {
        Some(Field::Timestamp) => 1,
        Some(Field::Datacenter) => 2,
        Some(Field::Worker) => 3,
        Some(Field::Sequence) => 4,
        _ => 0,
    }
}

/// Whether a segment is a field below the time (not the sign, unused bits
/// or the time).
fn is_node(s: &Segment) -> bool {
    // No field of a layout may be called `sign` or `unused`.
    s.slot != Some(Field::Timestamp) && s.name != "sign" && s.name != "unused"
}

/// `text` wrapped in the colour of slot `i`, or as is.
fn paint(text: &str, i: usize, color: bool) -> String {
    if color {
        format!("\x1b[{}m{text}\x1b[0m", COLORS[i])
    } else {
        text.to_string()
    }
}

/// `text` padded to `width` columns, then painted (so escapes never count
/// towards the width).
fn cell(text: &str, width: usize, i: usize, color: bool) -> String {
    let pad = width.saturating_sub(text.chars().count());
    format!("{}{}", paint(text, i, color), " ".repeat(pad))
}

fn bit_range(s: &Segment) -> String {
    if s.msb == s.lsb {
        s.msb.to_string()
    } else {
        format!("{}..{}", s.msb, s.lsb)
    }
}

/// The human view: the ID in each textual form, its time, its fields, and
/// the 64 bits split by segment with their positions.
///
/// ```text
/// id          4194439168
/// hex         00000000fa021000
/// ...
/// bits    field       width  value  binary
/// 63      sign        1      0      0
/// 62..22  timestamp   41     1000   00000000000000000000000000000001111101000
/// ...
/// 0 | 00000000000000000000000000000001111101000 | 00001 | 00001 | 000000000000
/// ```
pub fn human(b: &Breakdown, layout: Layout, color: bool) -> String {
    let mut out = String::new();
    let l = layout;
    let mut line = |label: &str, value: String| {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{label:<14}{value}");
    };
    line("id", b.id.to_string());
    line("hex", b.id.hex().to_string());
    line("base32", b.id.base32().to_string());
    line("time", b.time.clone());
    line("unix ms", b.timestamp_ms.to_string());
    line(
        "delta ms",
        format!(
            "{} since the {} epoch {} ({})",
            paint(&b.delta_ms.to_string(), 1, color),
            if l.is_preset() { l.name() } else { "layout's" },
            l.epoch_ms(),
            Iso8601(l.epoch_ms() as i64)
        ),
    );
    if l.unit_ms() > 1 {
        line("time unit", format!("{} ms", l.unit_ms()));
    }
    if !l.is_preset() {
        line("layout", l.spec());
    }
    // The layout's own fields, by its own names, in bit order.
    for s in b.segments.iter().filter(|s| is_node(s)) {
        line(&s.label, paint(&s.value.to_string(), slot(s), color));
    }
    out.push('\n');

    let head = ["bits", "field", "width", "value", "binary"];
    let rows: Vec<[String; 5]> = b
        .segments
        .iter()
        .map(|s| {
            [
                bit_range(s),
                s.label.to_string(),
                s.bits.to_string(),
                s.value.to_string(),
                s.binary.clone(),
            ]
        })
        .collect();
    let mut widths = head.map(str::len);
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let _ = writeln!(
        out,
        "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
        head[0],
        head[1],
        head[2],
        head[3],
        head[4],
        w0 = widths[0],
        w1 = widths[1],
        w2 = widths[2],
        w3 = widths[3],
    );
    for (row, seg) in rows.iter().zip(&b.segments) {
        let i = slot(seg);
        let _ = writeln!(
            out,
            "{:<w0$}  {}  {:<w2$}  {}  {}",
            row[0],
            cell(&row[1], widths[1], i, color),
            row[2],
            cell(&row[3], widths[3], i, color),
            paint(&row[4], i, color),
            w0 = widths[0],
            w2 = widths[2],
        );
    }
    out.push('\n');
    let split: Vec<String> = b
        .segments
        .iter()
        .map(|s| paint(&s.binary, slot(s), color))
        .collect();
    let _ = writeln!(out, "{}", split.join(" | "));
    out
}

/// The compact table of many IDs (`decode -`): a header, then one row per
/// ID. Columns have fixed widths, wide enough for any value of the layout,
/// so rows can be printed as they come.
#[derive(Debug, Clone)]
pub struct Table {
    /// Label and width of each field column, in bit order.
    fields: Vec<(String, usize)>,
}

/// Width of the `id` column: 9223372036854775807 has 19 digits.
const ID_WIDTH: usize = 19;
/// Width of the `time` column: `2010-11-04T01:42:55.657Z`.
const TIME_WIDTH: usize = 24;

impl Table {
    /// The table for IDs of `layout`.
    pub fn new(layout: Layout) -> Table {
        let fields = layout
            .breakdown(snowmint::SnowflakeId::MIN)
            .segments
            .iter()
            .filter(|s| is_node(s))
            .map(|s| {
                let widest = (u64::MAX >> (64 - s.bits)).to_string().len();
                (s.label.clone(), widest.max(s.label.len()))
            })
            .collect();
        Table { fields }
    }

    /// The header line, with its newline.
    pub fn header(&self) -> String {
        let mut out = format!("{:<ID_WIDTH$}  {:<TIME_WIDTH$}", "id", "time");
        for (label, width) in &self.fields {
            let _ = write!(out, "  {label:<width$}");
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    }

    /// One ID's row, with its newline.
    pub fn row(&self, b: &Breakdown) -> String {
        let mut out = format!("{:<ID_WIDTH$}  {:<TIME_WIDTH$}", b.id.to_string(), b.time);
        let values = b.segments.iter().filter(|s| is_node(s));
        for ((_, width), s) in self.fields.iter().zip(values) {
            let _ = write!(out, "  {:<width$}", s.value);
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_decision() {
        use ColorChoice::*;
        assert!(Always.decide(false, true, true));
        assert!(!Never.decide(true, false, false));
        assert!(Auto.decide(true, false, false));
        assert!(!Auto.decide(false, false, false));
        assert!(!Auto.decide(true, true, false));
        assert!(!Auto.decide(true, false, true));
    }
}
