//! `snowmint detect`: which layout (which system) made these IDs?

use std::io::{self, BufRead};

use clap::Args;
use snowmint::{Layout, SnowflakeId};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render;

/// Rank candidate layouts by how well a list of IDs fits each.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint detect 175928847299117063
  snowmint detect 1800000000000000000 1800000000004194304 --json
  snowmint detect - < ids.txt
  snowmint detect - --layout 'epoch=2020-01-01;fields=timestamp:41,machine:10,sequence:12' < ids.txt

The candidates are the presets and every --layout given. Each is ranked by
whether its decoded times lie between its epoch and now, whether its node
fields stay constant across the list, and whether its sequence stays small;
an ID given twice counts once, and one ID is ambiguous among every layout it
fits, which the answer says.")]
pub struct DetectArgs {
    /// The IDs (decimal); `-` reads them from standard input, one a line
    #[arg(value_name = "ID", allow_negative_numbers = true, required = true)]
    pub ids: Vec<String>,
    /// A further candidate layout, a preset or a spec (repeatable)
    #[arg(long, value_name = "NAME|SPEC", value_parser = render::parse_layout)]
    pub layout: Vec<Layout>,
    /// Print `{"candidates": [...]}` instead of the human view
    #[arg(long)]
    pub json: bool,
}

/// Runs `snowmint detect`.
pub fn run(args: DetectArgs, _global: &GlobalArgs) -> Result<(), CliError> {
    let ids = if args.ids == ["-"] {
        read_ids(io::stdin().lock())?
    } else {
        let mut ids = Vec::with_capacity(args.ids.len());
        for text in &args.ids {
            ids.push(text.parse::<SnowflakeId>()?);
        }
        ids
    };
    if ids.is_empty() {
        return Err(CliError::Usage(
            "id: standard input held no ID (one a line)".to_string(),
        ));
    }
    let mut layouts = Layout::PRESETS.to_vec();
    for l in args.layout {
        if !layouts.contains(&l) {
            layouts.push(l);
        }
    }
    let d = snowmint::detect(&ids, &layouts, snowmint::unix_now_ms());
    render::print(&render::json_or_human(
        args.json,
        || serde_json::to_string(&d),
        || human(&d),
    )?)
}

/// One ID a line, blank lines skipped; a bad line is `line N: ...`.
fn read_ids(input: impl BufRead) -> Result<Vec<SnowflakeId>, CliError> {
    let mut ids = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line
            .map_err(|e| CliError::Runtime(anyhow::Error::new(e).context("cannot read stdin")))?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        ids.push(
            line.parse::<SnowflakeId>()
                .map_err(|e| CliError::Usage(format!("line {}: {e}", i + 1)))?,
        );
    }
    Ok(ids)
}

/// The ranking as a table, the note first when the result is ambiguous.
fn human(d: &snowmint::Detection) -> String {
    let mut out = String::new();
    if let Some(note) = &d.note {
        out.push_str(note);
        out.push_str("\n\n");
    }
    let name = |c: &snowmint::Candidate| c.layout.name().to_string();
    let width = d
        .candidates
        .iter()
        .map(|c| name(c).len())
        .max()
        .unwrap_or(6)
        .max(6);
    out.push_str(&format!(
        "{:<4}  {:<width$}  {:<5}  {:<24}  {:<24}  why\n",
        "rank", "layout", "score", "from", "to"
    ));
    for (i, c) in d.candidates.iter().enumerate() {
        out.push_str(&format!(
            "{:<4}  {:<width$}  {:<5.3}  {:<24}  {:<24}  {}\n",
            i + 1,
            name(c),
            c.score,
            c.from.as_deref().unwrap_or("-"),
            c.to.as_deref().unwrap_or("-"),
            c.why
        ));
    }
    for c in d.candidates.iter().filter(|c| !c.layout.is_preset()) {
        out.push_str(&format!("\ncustom: {}\n", c.param));
    }
    out
}
