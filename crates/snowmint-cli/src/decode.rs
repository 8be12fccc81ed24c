//! `snowmint decode`: take an existing ID apart.

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use snowmint::Encoding;

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render::{self, NamedLayout, View};

/// Show the time, fields and bits of an existing ID.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint decode 4194439168
  snowmint decode 4194439168 --json
  snowmint decode 0xfa021000 --from hex
  snowmint decode 0000003x04400 --from base32
  snowmint decode 175928847299117063 --layout discord

IDs are 0..=9223372036854775807 (the sign bit is always 0).")]
pub struct DecodeArgs {
    /// The ID, in the form given by --from
    // Taken as text, negative numbers too, so `-5` reaches the core's check.
    #[arg(value_name = "ID", allow_negative_numbers = true)]
    pub id: String,
    /// The ID's textual form
    #[arg(
        long,
        value_name = "FORM",
        default_value = "decimal",
        value_parser = PossibleValuesParser::new(Encoding::ALL.map(Encoding::name))
            .try_map(|s| s.parse::<Encoding>()),
    )]
    pub from: Encoding,
    /// The bit layout to read it in (epoch and field widths)
    #[arg(
        long,
        value_name = "NAME",
        default_value = "twitter",
        value_parser = PossibleValuesParser::new(NamedLayout::PRESETS)
            .try_map(|s| NamedLayout::by_name(&s).ok_or("unknown layout")),
    )]
    pub layout: NamedLayout,
    /// Print the JSON object instead of the human view
    #[arg(long)]
    pub json: bool,
}

/// Runs `snowmint decode`.
pub fn run(args: DecodeArgs, global: &GlobalArgs) -> Result<(), CliError> {
    let id = args.from.parse(&args.id)?;
    let view = View {
        json: args.json,
        color: global.color.for_stdout(),
    };
    render::print(&render::render(
        &args.layout.layout.breakdown(id),
        args.layout,
        view,
    )?)
}
