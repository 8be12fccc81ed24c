//! `snowmint range`: the smallest and the largest ID of a time span.

use std::fmt::Write as _;

use clap::Args;
use snowmint::time::Iso8601;
use snowmint::{IdSpan, Layout};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render;

/// The IDs minted in a time span, for `WHERE id BETWEEN min AND max`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint range --from 2024-01-01T00:00:00Z --to 2024-02-01T00:00:00Z
  snowmint range --from 1704067200000 --json
  snowmint range --from 2024-01-01T00:00:00Z --to now --layout discord

Both times are inclusive; --to defaults to --from (one millisecond).")]
pub struct RangeArgs {
    /// The first millisecond: `now`, Unix milliseconds, or ISO-8601 UTC
    #[arg(long, value_name = "now|MS|ISO-8601", allow_negative_numbers = true)]
    pub from: String,
    /// The last millisecond, inclusive [default: the same as --from]
    #[arg(long, value_name = "now|MS|ISO-8601", allow_negative_numbers = true)]
    pub to: Option<String>,
    /// The bit layout of the IDs: a preset or a spec `epoch=...;unit=...;fields=NAME:BITS,...`
    #[arg(long, value_name = "NAME|SPEC", default_value = "twitter", value_parser = render::parse_layout)]
    pub layout: Layout,
    /// Print `{"from_ms", "to_ms", "min", "max"}` instead of the human view
    #[arg(long)]
    pub json: bool,
}

/// Runs `snowmint range`.
pub fn run(args: RangeArgs, _global: &GlobalArgs) -> Result<(), CliError> {
    let span = args
        .layout
        .parse_span(&args.from, args.to.as_deref(), snowmint::unix_now_ms())?;
    let text = if args.json {
        let mut s = serde_json::to_string(&span).map_err(|e| CliError::Runtime(e.into()))?;
        s.push('\n');
        s
    } else {
        human(&span, args.layout)
    };
    render::print(&text)
}

/// The human view: both times, both IDs, the SQL and how many IDs fit.
///
/// ```text
/// from        2024-01-01T00:00:00.000Z (1704067200000)
/// to          2024-02-01T00:00:00.000Z (1706745600000)
/// min         1741575014394675200
/// max         1752803656826683391
/// ID slots    11228642432008192 (2678400001 ms x 4194304 per ms)
///
/// WHERE id BETWEEN 1741575014394675200 AND 1752803656826683391
/// ```
fn human(span: &IdSpan, layout: Layout) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{label:<12}{value}");
    };
    line(
        "from",
        format!("{} ({})", Iso8601(span.from_ms as i64), span.from_ms),
    );
    line(
        "to",
        format!("{} ({})", Iso8601(span.to_ms as i64), span.to_ms),
    );
    line("min", span.min.to_string());
    line("max", span.max.to_string());
    line("ID slots", slots(span, layout));
    if layout != Layout::TWITTER {
        line("layout", layout.to_param());
    }
    let _ = writeln!(out, "\nWHERE id BETWEEN {} AND {}", span.min, span.max);
    out
}

/// `11228642432008192 (2678400001 ms x 4194304 per ms)`: the count, and
/// where it comes from.
fn slots(span: &IdSpan, layout: Layout) -> String {
    let unit = layout.unit_ms();
    let epoch = layout.epoch_ms();
    let units = (span.to_ms - epoch) / unit - (span.from_ms - epoch) / unit + 1;
    let per_unit = span.slots() / units;
    if unit == 1 {
        format!("{} ({units} ms x {per_unit} per ms)", span.slots())
    } else {
        format!(
            "{} ({units} units of {unit} ms x {per_unit} per unit)",
            span.slots()
        )
    }
}
