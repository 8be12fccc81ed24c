//! `snowmint range`: the smallest and the largest ID of a time span.

use std::fmt::Write as _;

use clap::Args;
use snowmint::sql::{self as core_sql, Dialect, Period};
use snowmint::time::Iso8601;
use snowmint::{IdSpan, Layout};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render;
use crate::sql;

/// The IDs minted in a time span, for `WHERE id BETWEEN min AND max`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint range --from 2024-01-01T00:00:00Z --to 2024-02-01T00:00:00Z
  snowmint range --from 1704067200000 --json
  snowmint range --from 2024-01-01T00:00:00Z --to now --layout discord
  snowmint range --from 2024-01-01 --to 2024-04-01 --partition month --sql postgres --table events

Both times are inclusive; --to defaults to --from (one millisecond).
With --partition, the DDL of one partition per day, week or month (UTC) that
starts in [--from, --to) (--to exclusive), with contiguous ID bounds.")]
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
    /// Print partitions of this length instead (needs --sql, --table and --to)
    #[arg(long, value_name = "PERIOD", value_parser = sql::period_parser())]
    pub partition: Option<Period>,
    /// With --partition: the database, postgres or mysql
    #[arg(long = "sql", value_name = "DIALECT", value_parser = sql::dialect_parser("sql"))]
    pub dialect: Option<Dialect>,
    /// With --partition: the partitioned table
    #[arg(long, value_name = "TABLE", value_parser = sql::identifier("table"))]
    pub table: Option<String>,
    /// With --partition: the ID column the table is partitioned by
    #[arg(long, value_name = "COLUMN", default_value = "id", value_parser = sql::identifier("column"))]
    pub column: String,
}

/// Runs `snowmint range`.
pub fn run(args: RangeArgs, _global: &GlobalArgs) -> Result<(), CliError> {
    if let Some(period) = args.partition {
        return partitions(&args, period);
    }
    let stray = [
        ("sql", args.dialect.is_some()),
        ("table", args.table.is_some()),
    ];
    if let Some((flag, _)) = stray.into_iter().find(|(_, given)| *given) {
        return Err(CliError::Usage(format!(
            "{flag} needs --partition day, week or month (it says how to write partitions)"
        )));
    }
    let span = args
        .layout
        .parse_span(&args.from, args.to.as_deref(), snowmint::unix_now_ms())?;
    render::print(&render::json_or_human(
        args.json,
        || serde_json::to_string(&span),
        || human(&span, args.layout),
    )?)
}

/// `range --partition`: the partitions' DDL.
fn partitions(args: &RangeArgs, period: Period) -> Result<(), CliError> {
    let usage = |msg: &str| Err(CliError::Usage(msg.to_owned()));
    let Some(dialect) = args.dialect else {
        return usage("sql must be given with --partition: postgres or mysql");
    };
    let Some(table) = args.table.as_deref() else {
        return usage(
            "table must be given with --partition: the partitioned table, a plain SQL identifier",
        );
    };
    let Some(to) = args.to.as_deref() else {
        return usage("to must be given with --partition: the end of the span (exclusive), a time");
    };
    if args.json {
        return usage("json cannot be used with --partition: the partitions are SQL text");
    }
    let span = args
        .layout
        .parse_span(&args.from, Some(to), snowmint::unix_now_ms())?;
    let ddl = core_sql::partitions(
        dialect,
        &args.layout,
        table,
        &args.column,
        period,
        span.from_ms,
        span.to_ms,
    )?;
    render::print(&ddl)
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
