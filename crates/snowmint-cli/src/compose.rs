//! `snowmint compose`: build an ID from its time and fields.

use clap::Args;
use snowmint::{Field, Layout};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render::{self, View};

/// Build an ID and show how its values fill the 64 bits.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint compose --timestamp 1288834975657 --datacenter 1 --worker 1 --sequence 0
  snowmint compose --timestamp 2010-11-04T01:42:55.657Z --datacenter 1 --worker 1 --sequence 0
  snowmint compose --datacenter 3 --worker 7 --sequence 0 --json    # now
  snowmint compose --layout discord --timestamp 1462015105796 \\
      --field worker=1 --field process=0 --field increment=7
  snowmint compose --layout 'epoch=2020-01-01;fields=timestamp:41,machine:10,sequence:12' \\
      --field machine=5 --field sequence=0

Twitter's timestamps run from 1288834974657 (2010-11-04T01:42:54.657Z, the
Twitter epoch) to 3487858230208 (2080-07-10T17:30:30.208Z). In any other
layout, give each of its fields with --field NAME=VALUE (`snowmint layout L`
lists them); --datacenter, --worker and --sequence are Twitter's.")]
pub struct ComposeArgs {
    /// When: `now`, Unix milliseconds, or ISO-8601 UTC such as
    /// 2010-11-04T01:42:55.657Z [default: now]
    // Numbers are taken as text and checked by the core, so every bad value
    // (negative, too large, not a number) gets the same kind of message.
    #[arg(long, value_name = "now|MS|ISO-8601", allow_negative_numbers = true)]
    pub timestamp: Option<String>,
    /// Datacenter ID, 0..=31 (Twitter's layout)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub datacenter: Option<String>,
    /// Worker ("machine") ID, 0..=31 (Twitter's layout)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub worker: Option<String>,
    /// Sequence within the millisecond, 0..=4095 (Twitter's layout)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub sequence: Option<String>,
    /// The bit layout: a preset or a spec `epoch=...;unit=...;fields=NAME:BITS,...`
    #[arg(long, value_name = "NAME|SPEC", default_value = "twitter", value_parser = render::parse_layout)]
    pub layout: Layout,
    /// A field of the layout by its name, NAME=VALUE (repeat for each field)
    #[arg(
        long = "field",
        value_name = "NAME=VALUE",
        allow_negative_numbers = true
    )]
    pub fields: Vec<String>,
    /// Print the JSON object instead of the human view
    #[arg(long)]
    pub json: bool,
}

/// Runs `snowmint compose`.
pub fn run(args: ComposeArgs, global: &GlobalArgs) -> Result<(), CliError> {
    let layout = args.layout;
    let timestamp = layout.parse_timestamp(
        args.timestamp.as_deref().unwrap_or("now"),
        snowmint::unix_now_ms(),
    )?;
    let twitter_flags: Vec<(&str, Field, &Option<String>)> = vec![
        ("--datacenter <N>", Field::Datacenter, &args.datacenter),
        ("--worker <N>", Field::Worker, &args.worker),
        ("--sequence <N>", Field::Sequence, &args.sequence),
    ];
    let given: Vec<&str> = twitter_flags
        .iter()
        .filter(|(_, _, v)| v.is_some())
        .map(|(flag, _, _)| flag.split(' ').next().unwrap_or(flag))
        .collect();
    let id = if !args.fields.is_empty() || layout != Layout::TWITTER {
        if !given.is_empty() {
            return Err(CliError::Usage(if layout == Layout::TWITTER {
                format!(
                    "{} cannot be combined with --field: give every field one way",
                    given.join(", ")
                )
            } else {
                format!(
                    "{} is for Twitter's layout; the {} layout's fields are {}: give each with --field NAME=VALUE",
                    given.join(", "),
                    layout.name(),
                    render::field_list(&layout)
                )
            }));
        }
        let mut pairs = Vec::with_capacity(args.fields.len());
        for text in &args.fields {
            let Some((name, value)) = text.split_once('=') else {
                return Err(CliError::Usage(format!(
                    "field must be NAME=VALUE (the layout's fields are {}), got {text:?}",
                    render::field_list(&layout)
                )));
            };
            pairs.push((name.trim(), value));
        }
        layout.parse_fields(timestamp, &pairs)?
    } else {
        let missing: Vec<String> = twitter_flags
            .iter()
            .filter(|(_, _, v)| v.is_none())
            .map(|(flag, field, _)| {
                let (min, max) = layout.range(*field);
                format!("{flag} ({min}..={max})")
            })
            .collect();
        if !missing.is_empty() {
            return Err(CliError::Usage(format!(
                "missing {} (or give each field with --field NAME=VALUE)",
                missing.join(", ")
            )));
        }
        let value = |field: Field, text: &Option<String>| {
            layout.parse_field(field, text.as_deref().unwrap_or_default())
        };
        layout.compose(
            timestamp,
            value(Field::Datacenter, &args.datacenter)?,
            value(Field::Worker, &args.worker)?,
            value(Field::Sequence, &args.sequence)?,
        )?
    };
    let view = View {
        json: args.json,
        color: global.color.for_stdout(),
    };
    render::print(&render::render(&layout.breakdown(id), layout, view)?)
}
