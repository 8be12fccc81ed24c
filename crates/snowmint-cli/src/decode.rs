//! `snowmint decode`: take an existing ID apart, or every ID on stdin.

use std::io::{self, BufRead, BufReader, BufWriter, Write};

use clap::Args;
use snowmint::{Encoding, Layout};

use crate::GlobalArgs;
use crate::error::CliError;
use crate::render::{self, NameParser, Table, View, written};

/// Show the time, fields and bits of an existing ID.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint decode 4194439168
  snowmint decode 4194439168 --json
  snowmint decode 0xfa021000 --from hex
  snowmint decode 0000003x04400 --from base32
  snowmint decode 175928847299117063 --layout discord
  snowmint decode 175928847299117063 \
      --layout 'epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12'
  printf '4194439168\\n175928847299117063\\n' | snowmint decode - --json

IDs are 0..=9223372036854775807 (the sign bit is always 0). With `-`, IDs
are read from standard input, one a line (blank lines skipped), and shown
as a table, or with --json as one JSON object a line (NDJSON); a bad line
stops with `error: line N: ...`.")]
pub struct DecodeArgs {
    /// The ID, in the form given by --from; `-` reads IDs from standard input
    // Taken as text, negative numbers too, so `-5` reaches the core's check.
    #[arg(value_name = "ID", allow_negative_numbers = true)]
    pub id: String,
    /// The ID's textual form
    #[arg(long, value_name = "FORM", default_value = "decimal", value_parser = encoding_parser())]
    pub from: Encoding,
    /// The bit layout to read it in: a preset or a spec `epoch=...;unit=...;fields=NAME:BITS,...`
    #[arg(long, value_name = "NAME|SPEC", default_value = "twitter", value_parser = render::parse_layout)]
    pub layout: Layout,
    /// Print the JSON object instead of the human view (with `-`, one a line)
    #[arg(long)]
    pub json: bool,
}

/// `--from`, read by the core's parser as the API and the page read `from`
/// (any case, surrounding whitespace ignored), and refused in the page's
/// words; `--help` lists the forms.
pub fn encoding_parser() -> NameParser<Encoding> {
    const NAMES: [&str; Encoding::ALL.len()] = {
        let mut names = [""; Encoding::ALL.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = Encoding::ALL[i].name();
            i += 1;
        }
        names
    };
    NameParser::new("from", &NAMES, |field, text| {
        text.parse().map_err(|_| {
            let names = NAMES.join(", ");
            format!("{field} must be one of {names}, got {}", echo(text))
        })
    })
}

/// `"text"`, shortened as the core's messages shorten what they repeat.
fn echo(text: &str) -> String {
    const MAX: usize = 40;
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().nth(MAX).is_some() {
        out.push('…');
    }
    format!("{out:?}")
}

/// Runs `snowmint decode`.
pub fn run(args: DecodeArgs, global: &GlobalArgs) -> Result<(), CliError> {
    if args.id == "-" {
        return run_lines(&args, BufReader::new(io::stdin().lock()));
    }
    let id = args.layout.check_id(args.from.parse(&args.id)?)?;
    let view = View {
        json: args.json,
        color: global.color.for_stdout(),
    };
    render::print(&render::render(
        &args.layout.breakdown(id),
        args.layout,
        view,
    )?)
}

/// `decode -`: one ID a line from `input`, each printed as soon as it is
/// read. A bad line stops the run (what was printed stays printed); a
/// reader that goes away (`| head`) ends it quietly.
fn run_lines<R: io::Read>(args: &DecodeArgs, mut input: BufReader<R>) -> Result<(), CliError> {
    let mut out = BufWriter::new(io::stdout().lock());
    let table = (!args.json).then(|| Table::new(args.layout));
    let mut header = table.as_ref().map(Table::header);
    let mut raw = Vec::new();
    let mut number = 0u64;
    loop {
        // Whenever the next read could wait, hand over what is done: the
        // output keeps pace with a slow producer (`tail -f | ...`), and a
        // fast one still gets large writes.
        if input.buffer().is_empty() && !written(out.flush())? {
            return Ok(());
        }
        raw.clear();
        let n = input
            .read_until(b'\n', &mut raw)
            .map_err(|e| CliError::Runtime(anyhow::Error::new(e).context("cannot read stdin")))?;
        if n == 0 {
            return written(out.flush()).map(drop);
        }
        number += 1;
        let line = String::from_utf8_lossy(&raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let id = match args
            .from
            .parse(line)
            .and_then(|id| args.layout.check_id(id))
        {
            Ok(id) => id,
            Err(e) => {
                // What was printed stays printed, before the error line.
                written(out.flush())?;
                return Err(CliError::Usage(format!("line {number}: {e}")));
            }
        };
        let b = args.layout.breakdown(id);
        let text = match &table {
            Some(table) => {
                let mut text = header.take().unwrap_or_default();
                text.push_str(&table.row(&b));
                text
            }
            None => render::render(
                &b,
                args.layout,
                View {
                    json: true,
                    color: false,
                },
            )?,
        };
        if !written(out.write_all(text.as_bytes()))? {
            return Ok(());
        }
    }
}
