//! The `snowmint` command: compose and decode Snowflake IDs of any layout.
//!
//! # Layout
//!
//! `main` only parses the command line, dispatches, and turns the outcome
//! into an exit status. Each subcommand lives in its own module with an
//! `XxxArgs` struct (clap derive) and a `run(args, &GlobalArgs) ->
//! Result<(), CliError>`; adding one is a `mod` line, an enum variant and a
//! match arm. Errors become one line on stderr and exit status 2 (bad input)
//! or 1 (runtime failure); see [`error`].

mod compose;
mod decode;
mod detect;
mod error;
mod layout;
mod next;
mod range;
mod render;
mod serve;
mod sql;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::render::ColorChoice;

/// Snowflake IDs: build one from its four values, or take one apart.
#[derive(Debug, Parser)]
#[command(name = "snowmint", version, about, propagate_version = true)]
#[command(after_help = "\
Examples:
  snowmint compose --timestamp 1288834975657 --datacenter 1 --worker 1 --sequence 0
  snowmint decode 4194439168 --json
  snowmint range --from 2024-01-01T00:00:00Z --to 2024-02-01T00:00:00Z
  snowmint sql postgres | psql mydb
  snowmint layout discord
  snowmint detect 175928847299117063")]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Flags every subcommand accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// When to colour the output: auto (on a terminal, unless NO_COLOR is
    /// set), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto", global = true)]
    pub color: ColorChoice,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build an ID from a timestamp, datacenter, worker and sequence.
    Compose(compose::ComposeArgs),
    /// Take an existing ID apart.
    Decode(decode::DecodeArgs),
    /// The smallest and largest ID of a time span (for WHERE id BETWEEN ...).
    Range(range::RangeArgs),
    /// The layout lab: a layout's spec, fields and limits.
    Layout(layout::LayoutArgs),
    /// Which layout (which system) made these IDs: ranked candidates.
    Detect(detect::DetectArgs),
    /// Mint fresh IDs from a live generator, one a line.
    Next(next::NextArgs),
    /// SQL functions for a layout's IDs (PostgreSQL, MySQL/MariaDB; expressions for SQLite).
    Sql(sql::SqlArgs),
    /// Serve the explorer page and the JSON API (http://127.0.0.1:8080 by default).
    // Boxed: its flags make it much larger than the other variants.
    Serve(Box<serve::Serve>),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return error::clap_exit(e),
    };
    let outcome = match cli.command {
        Command::Compose(args) => compose::run(args, &cli.global),
        Command::Decode(args) => decode::run(args, &cli.global),
        Command::Range(args) => range::run(args, &cli.global),
        Command::Layout(args) => layout::run(args, &cli.global),
        Command::Detect(args) => detect::run(args, &cli.global),
        Command::Next(args) => next::run(args, &cli.global),
        Command::Sql(args) => sql::run(args, &cli.global),
        Command::Serve(args) => serve::run_cli(*args),
    };
    error::exit(outcome)
}
