//! The `snowmint` command.
//!
//! NOTE (server branch): a minimal main with only `serve`; the CLI helper's
//! main.rs (compose, decode, next) replaces it and keeps `mod serve;`, the
//! `Serve` variant and its match arm.

use clap::{Parser, Subcommand};

mod serve;

/// Twitter-layout Snowflake IDs.
#[derive(Debug, Parser)]
#[command(name = "snowmint", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the explorer page and the JSON API.
    Serve(serve::ServeArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.is::<serve::UsageError>() {
                std::process::ExitCode::from(2)
            } else {
                std::process::ExitCode::FAILURE
            }
        }
    }
}
