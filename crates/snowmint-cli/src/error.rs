//! How a run ends: one line on stderr and an exit status.
//!
//! Bad input (any flag or value a user can fix) exits with 2, a failure
//! while running with 1; either way stdout stays empty of partial output and
//! stderr gets exactly one line, `error: ...`.

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use snowmint::{Field, Layout};

/// A flag's value out of its range or not a number; the message names the
/// flag, the value and the range (`header-timeout must be 1..=3600
/// (seconds), got 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError(pub String);

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FlagError {}

/// Why a subcommand did not succeed.
#[derive(Debug)]
pub enum CliError {
    /// The user's input cannot be used (exit status 2). The message names the
    /// field, the value and the allowed range.
    Usage(String),
    /// Something failed while running (exit status 1).
    Runtime(anyhow::Error),
    /// Already said on stderr in the log's own format (`serve
    /// --log-format json`); exits with this status and prints nothing more.
    Reported(u8),
}

impl CliError {
    /// The exit status for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) => ExitCode::from(2),
            CliError::Runtime(_) => ExitCode::from(1),
            CliError::Reported(status) => ExitCode::from(*status),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(msg) => f.write_str(msg),
            // `{:#}` joins the chain of causes with ": ".
            CliError::Runtime(e) => write!(f, "{e:#}"),
            CliError::Reported(status) => write!(f, "reported (exit status {status})"),
        }
    }
}

impl From<snowmint::Error> for CliError {
    fn from(e: snowmint::Error) -> Self {
        CliError::Usage(e.to_string())
    }
}

impl From<snowmint::sql::SqlError> for CliError {
    fn from(e: snowmint::sql::SqlError) -> Self {
        CliError::Usage(e.to_string())
    }
}

/// A reservation store that cannot be opened (the identity is in use, the
/// directory cannot be made) is a failure while running, not bad input.
impl From<snowmint::StoreError> for CliError {
    fn from(e: snowmint::StoreError) -> Self {
        CliError::Runtime(anyhow::Error::new(e))
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::Runtime(e)
    }
}

/// Reports the outcome of a subcommand and returns its exit status.
pub fn exit(outcome: Result<(), CliError>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Reported(status)) => ExitCode::from(status),
        Err(e) => {
            eprint_line(&e.to_string());
            e.exit_code()
        }
    }
}

/// Handles a command line clap refused: `--help` and `--version` print as
/// usual; every real error becomes one line and exit status 2.
pub fn clap_exit(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // Help goes to stdout (stderr for the last kind); a closed pipe
            // while printing help is not worth reporting.
            let _ = e.print();
            if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            eprint_line(&clap_message(&e));
            ExitCode::from(2)
        }
    }
}

/// Prints `error: <message>` as one line, whatever the message holds.
fn eprint_line(message: &str) {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let _ = writeln!(io::stderr().lock(), "error: {line}");
}

/// Condenses clap's multi-paragraph error into one line: the message, the
/// allowed values, and clap's tip, without the usage block.
fn clap_message(e: &clap::Error) -> String {
    if e.kind() == ErrorKind::MissingRequiredArgument
        && let Some(ContextValue::Strings(args)) = e.get(ContextKind::InvalidArg)
    {
        let args: Vec<String> = args.iter().map(|a| with_range(a)).collect();
        return format!("missing {}", args.join(", "));
    }
    // A value the core refused: its message already names the field, the
    // value and the range.
    if let Some(core) =
        std::error::Error::source(e).and_then(|s| s.downcast_ref::<snowmint::Error>())
    {
        return core.to_string();
    }
    // Likewise a flag's own range check.
    if let Some(flag) = std::error::Error::source(e).and_then(|s| s.downcast_ref::<FlagError>()) {
        return flag.to_string();
    }
    let rendered = e.render().to_string();
    let mut paragraphs = rendered.split("\n\n");
    let mut msg = paragraphs
        .next()
        .unwrap_or_default()
        .trim_start_matches("error:")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for p in paragraphs {
        let p = p.trim();
        if let Some(tip) = p.strip_prefix("tip:") {
            msg.push_str(&format!(" (tip:{tip})"));
        }
    }
    // `a value is required for '--datacenter <N>'`: say which values.
    if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg)
        && let Some(range) = field_range(arg).filter(|r| !msg.contains(r.as_str()))
    {
        msg.push_str(&format!(" ({range})"));
    }
    msg
}

/// `--datacenter <N>` -> `--datacenter <N> (0..=31)` for the format's fields.
fn with_range(arg: &str) -> String {
    match field_range(arg) {
        Some(range) => format!("{arg} ({range})"),
        None => arg.to_string(),
    }
}

/// The allowed range of the format field an argument (`--datacenter <N>`,
/// `<ID>`) is for, as `0..=31`.
fn field_range(arg: &str) -> Option<String> {
    let name = arg
        .trim_start_matches('-')
        .split([' ', '=', '>'])
        .next()
        .unwrap_or_default()
        .trim_start_matches('<')
        .to_ascii_lowercase();
    let fields = [
        Field::Timestamp,
        Field::Datacenter,
        Field::Worker,
        Field::Sequence,
        Field::Id,
    ];
    let field = fields.into_iter().find(|f| f.name() == name)?;
    let (min, max) = Layout::TWITTER.range(field);
    Some(format!("{min}..={max}"))
}
