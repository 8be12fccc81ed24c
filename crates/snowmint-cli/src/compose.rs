//! `snowmint compose`: build an ID from its four values.

use clap::Args;
use snowmint::{Field, Layout};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render::{self, View};

/// Build a Twitter-layout ID and show how its values fill the 64 bits.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint compose --timestamp 1288834975657 --datacenter 1 --worker 1 --sequence 0
  snowmint compose --timestamp 2010-11-04T01:42:55.657Z --datacenter 1 --worker 1 --sequence 0
  snowmint compose --datacenter 3 --worker 7 --sequence 0 --json    # now

Timestamps run from 1288834974657 (2010-11-04T01:42:54.657Z, the Twitter epoch)
to 3487858230208 (2080-07-10T17:30:30.208Z).")]
pub struct ComposeArgs {
    /// When: `now`, Unix milliseconds, or ISO-8601 UTC such as
    /// 2010-11-04T01:42:55.657Z [default: now]
    // Numbers are taken as text and checked by the core, so every bad value
    // (negative, too large, not a number) gets the same kind of message.
    #[arg(long, value_name = "now|MS|ISO-8601", allow_negative_numbers = true)]
    pub timestamp: Option<String>,
    /// Datacenter ID, 0..=31
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub datacenter: String,
    /// Worker ("machine") ID, 0..=31
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub worker: String,
    /// Sequence within the millisecond, 0..=4095
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub sequence: String,
    /// Print the JSON object instead of the human view
    #[arg(long)]
    pub json: bool,
}

/// Runs `snowmint compose`.
pub fn run(args: ComposeArgs, global: &GlobalArgs) -> Result<(), CliError> {
    let layout = Layout::TWITTER;
    let timestamp = snowmint::parse_timestamp(
        args.timestamp.as_deref().unwrap_or("now"),
        snowmint::unix_now_ms(),
    )?;
    let datacenter = layout.parse_field(Field::Datacenter, &args.datacenter)?;
    let worker = layout.parse_field(Field::Worker, &args.worker)?;
    let sequence = layout.parse_field(Field::Sequence, &args.sequence)?;
    let id = layout.compose(timestamp, datacenter, worker, sequence)?;
    let view = View {
        json: args.json,
        color: global.color.for_stdout(),
    };
    render::print(&render::render(&id.breakdown(), layout, view)?)
}
