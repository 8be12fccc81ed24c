//! `snowmint next`: mint fresh IDs from a live generator, one a line.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use snowmint::{Field, FileStore, Generator, Identity, Layout};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render;

/// The most IDs one run prints (about four minutes at the format's limit).
const MAX_COUNT: u64 = 1_000_000_000;

/// Mint N fresh IDs from a live generator and print them, one a line, in
/// increasing order.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint next
  snowmint next --count 5 --datacenter 1 --worker 2
  snowmint next --count 1000 --state-dir /var/lib/snowmint

One generator mints at most 4096 IDs per millisecond. Without --state-dir, two
runs at once, or two runs on a machine whose clock was set back in between, can
repeat an ID; with it, the last reserved millisecond is kept in DIR and never
reused, and a second run as the same identity on the same DIR is refused while
the first one runs.")]
pub struct NextArgs {
    /// How many IDs to print, 1..=1000000000
    #[arg(
        long,
        value_name = "N",
        default_value = "1",
        allow_negative_numbers = true
    )]
    pub count: String,
    /// Datacenter ID, 0..=31
    #[arg(
        long,
        value_name = "N",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub datacenter: String,
    /// Worker ("machine") ID, 0..=31
    #[arg(
        long,
        value_name = "N",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub worker: String,
    /// Keep the crash-safe reservation of this identity in DIR (created if
    /// missing), so no later run can repeat an ID even if the clock goes back
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// Runs `snowmint next`.
pub fn run(args: NextArgs, _global: &GlobalArgs) -> Result<(), CliError> {
    let count = parse_count(&args.count)?;
    let layout = Layout::TWITTER;
    let datacenter = layout.parse_field(Field::Datacenter, &args.datacenter)?;
    let worker = layout.parse_field(Field::Worker, &args.worker)?;
    let identity = Identity::new(datacenter, worker)?;

    let mut builder = Generator::builder_for(identity);
    if let Some(dir) = &args.state_dir {
        // The store holds the identity's lock until this process ends: a
        // second `next` or `serve` as the same identity on the same
        // directory is refused.
        builder = builder.store(FileStore::open(dir, identity)?);
    }
    let generator = builder.build().context("cannot start the generator")?;

    let minted = print_ids(&generator, count);
    // Lower the mark to what was issued, so the next run can start at once.
    let persisted = generator
        .persist_last_issued()
        .context("cannot record the last issued ID");
    minted?;
    persisted?;
    Ok(())
}

/// Mints `count` IDs in batches and streams them to stdout. A closed pipe
/// (`snowmint next --count 1000 | head`) ends the run without an error.
fn print_ids(generator: &Generator, count: u64) -> Result<(), CliError> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut left = count;
    let mut line = String::with_capacity(24);
    while left > 0 {
        // At most one millisecond's IDs per call: that fits a usize.
        let want = left.min(snowmint::MAX_BATCH as u64) as usize;
        let range = generator.next_ids(want).context("cannot mint an ID")?;
        for id in range {
            line.clear();
            use std::fmt::Write as _;
            let _ = writeln!(line, "{id}");
            if !render::written(out.write_all(line.as_bytes()))? {
                return Ok(());
            }
        }
        left -= range.len() as u64;
    }
    render::written(out.flush()).map(drop)
}

/// `count` as typed: a decimal integer 1..=MAX_COUNT.
fn parse_count(input: &str) -> Result<u64, CliError> {
    Ok(snowmint::parse_in_range(Field::Count, input, 1, MAX_COUNT)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(input: &str) -> String {
        match parse_count(input) {
            Err(CliError::Usage(m)) => m,
            other => panic!("{input:?}: {other:?}"),
        }
    }

    #[test]
    fn counts_are_checked() {
        assert_eq!(parse_count("1").unwrap(), 1);
        assert_eq!(parse_count(" 4096 ").unwrap(), 4096);
        assert_eq!(parse_count("1000000000").unwrap(), MAX_COUNT);
        assert_eq!(msg("0"), "count must be 1..=1000000000, got 0");
        assert_eq!(msg("-3"), "count must be 1..=1000000000, got -3");
        assert_eq!(
            msg("1000000001"),
            "count must be 1..=1000000000, got 1000000001"
        );
        assert_eq!(
            msg("99999999999999999999999"),
            "count must be 1..=1000000000, got 99999999999999999999999"
        );
        assert_eq!(
            msg("ten"),
            r#"count must be a decimal integer 1..=1000000000, got "ten""#
        );
        assert_eq!(
            msg(""),
            r#"count must be a decimal integer 1..=1000000000, got """#
        );
    }
}
