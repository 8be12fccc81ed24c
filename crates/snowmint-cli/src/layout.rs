//! `snowmint layout`: the layout lab, what a layout holds and until when.

use std::fmt::Write as _;

use clap::Args;
use snowmint::{JsSafety, Layout, LayoutReport};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render;

/// Show a layout's spec, fields and limits: IDs per time unit, when its
/// time runs out, until when its IDs are exact JavaScript numbers.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint layout twitter
  snowmint layout sonyflake --json
  snowmint layout 'epoch=2020-01-01;unit=10ms;fields=timestamp:40,node:8,step:15'

The spec printed first can be copied, edited and given to any --layout.")]
pub struct LayoutArgs {
    /// A preset or a spec `epoch=...;unit=...;fields=NAME:BITS,...`
    #[arg(value_name = "NAME|SPEC", default_value = "twitter", value_parser = render::parse_layout)]
    pub layout: Layout,
    /// Print the JSON object instead of the human view
    #[arg(long)]
    pub json: bool,
}

/// Runs `snowmint layout`.
pub fn run(args: LayoutArgs, _global: &GlobalArgs) -> Result<(), CliError> {
    let report = LayoutReport::new(&args.layout, snowmint::unix_now_ms());
    render::print(&render::json_or_human(
        args.json,
        || serde_json::to_string(&report),
        || human(&report),
    )?)
}

/// The human view.
///
/// ```text
/// layout         twitter
/// spec           epoch=1288834974657;fields=timestamp:41,datacenter:5,worker:5,sequence:12
/// epoch          2010-11-04T01:42:54.657Z (1288834974657)
/// ...
/// ```
fn human(r: &LayoutReport) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{label:<15}{value}");
    };
    line("layout", r.layout.clone());
    line("spec", r.spec.clone());
    line("epoch", format!("{} ({})", r.epoch, r.epoch_ms));
    line("time unit", format!("{} ms", r.unit_ms));
    line(
        "bits",
        format!(
            "{} used, {} above them always 0",
            r.bits_used,
            64 - r.bits_used
        ),
    );
    for f in &r.fields {
        let top = f.shift + f.bits - 1;
        let place = if f.bits == 1 {
            format!("bit {top}")
        } else {
            format!("bits {top}..{}", f.shift)
        };
        line(
            &format!("  {}", f.name),
            format!("{} bits, {place}, 0..={}", f.bits, f.max),
        );
    }
    line(
        "IDs per unit",
        format!("{} (every node together)", r.ids_per_unit),
    );
    line(
        "end",
        format!(
            "{} ({}): {}",
            r.end,
            r.end_ms,
            if r.end_in_ms >= 0 {
                format!(
                    "the time field runs out in {}",
                    span(r.end_in_ms.unsigned_abs())
                )
            } else {
                format!(
                    "the time field ran out {} ago",
                    span(r.end_in_ms.unsigned_abs())
                )
            }
        ),
    );
    line("JS-safe until", js_safe(r));
    out
}

/// The JavaScript sentence: until when IDs were (or will be) exact numbers.
fn js_safe(r: &LayoutReport) -> String {
    // One sentence for a limit in the past or ahead, in its tense.
    let (until, stop, after_ms) = match r.js_safety() {
        JsSafety::Always { until } => {
            return format!(
                "{until}: every ID of this layout is an exact JavaScript number, to the end"
            );
        }
        JsSafety::Stopped { until, after_ms } => (until, "stopped", after_ms),
        JsSafety::Stops { until, after_ms } => (until, "stop", after_ms),
        _ => {
            return "never: even the epoch's IDs are above 2^53 - 1, so JavaScript numbers cannot \
                    hold them"
                .to_string();
        }
    };
    format!(
        "{until}: IDs of this layout {stop} being safe JavaScript numbers {} after its epoch",
        span(after_ms)
    )
}

/// A duration for people: `24 days`, `3 hours`, `53 years`.
fn span(ms: u64) -> String {
    const HOUR: u64 = 3_600_000;
    const DAY: u64 = 24 * HOUR;
    const YEAR: u64 = 365 * DAY + DAY / 4;
    let (n, unit) = if ms >= 2 * YEAR {
        (ms / YEAR, "year")
    } else if ms >= 2 * DAY {
        (ms / DAY, "day")
    } else if ms >= 2 * HOUR {
        (ms / HOUR, "hour")
    } else {
        (ms / 1000, "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}
