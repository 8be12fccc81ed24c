//! `snowmint sql`: SQL functions (PostgreSQL, MySQL/MariaDB) or
//! expressions (SQLite) for a layout's IDs, as a script to pipe into the
//! database's client.

use clap::Args;
use snowmint::Layout;
use snowmint::sql::{self, DEFAULT_PREFIX, Dialect, Options, Period};

use crate::GlobalArgs;
use crate::error::{CliError, FlagError};
use crate::render::{self, NameParser};

/// The SQL functions of a layout's IDs: time, unix_ms, one per field,
/// min_id, max_id and compose.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  snowmint sql postgres | psql mydb
  snowmint sql mysql --layout discord | mariadb mydb
  snowmint sql sqlite --table events | sqlite3 app.db
  snowmint sql coordinator postgres | psql ids

Every function is IMMUTABLE (PostgreSQL) / DETERMINISTIC (MySQL) and gives
NULL for input out of range. SQLite has no CREATE FUNCTION: its script lists
the expressions, and with --table defines a view <table>_decoded over them.

`snowmint sql coordinator postgres|mysql` prints instead the table that
`snowmint serve --postgres|--mysql` leases identities from, for a DBA who
creates it (serve creates it itself when its user may).")]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SqlArgs {
    /// The database
    #[arg(value_name = "DIALECT", value_parser = dialect_parser("dialect"), required = true)]
    pub dialect: Option<Dialect>,
    /// The coordinator table instead of the functions.
    #[command(subcommand)]
    pub coordinator: Option<SqlCommand>,
    /// The bit layout of the IDs: a preset or a spec `epoch=...;unit=...;fields=NAME:BITS,...`
    #[arg(long, value_name = "NAME|SPEC", default_value = "twitter", value_parser = render::parse_layout)]
    pub layout: Layout,
    /// Put before every function's name
    #[arg(long, value_name = "PREFIX", default_value = DEFAULT_PREFIX, value_parser = identifier("prefix"))]
    pub prefix: String,
    /// SQLite: define a view <TABLE>_decoded over this table
    #[arg(long, value_name = "TABLE", value_parser = identifier("table"))]
    pub table: Option<String>,
    /// SQLite: the ID column of the table [default: id]
    #[arg(long, value_name = "COLUMN", value_parser = identifier("column"))]
    pub column: Option<String>,
}

/// `snowmint sql coordinator`.
#[derive(Debug, clap::Subcommand)]
pub enum SqlCommand {
    /// The table `snowmint serve --postgres|--mysql` leases identities from:
    /// its statements, safe to run twice.
    Coordinator(CoordinatorArgs),
}

/// `snowmint sql coordinator DATABASE [--table NAME]`.
#[derive(Debug, Args)]
pub struct CoordinatorArgs {
    /// The database: postgres or mysql (MySQL and MariaDB).
    #[arg(value_name = "DATABASE", value_parser = ["postgres", "mysql"])]
    pub database: String,
    /// The table (NAME or SCHEMA.NAME), as given to `serve --db-table`
    #[arg(long, value_name = "NAME", default_value = snowmint_server::DEFAULT_DB_TABLE)]
    pub table: String,
}

/// Runs `snowmint sql coordinator`.
#[cfg(feature = "db")]
fn coordinator(args: &CoordinatorArgs) -> Result<(), CliError> {
    let dialect = match args.database.as_str() {
        "postgres" => snowmint_db::Dialect::Postgres,
        _ => snowmint_db::Dialect::Mysql,
    };
    let table = snowmint_db::Table::parse(&args.table).map_err(CliError::Usage)?;
    render::print(&snowmint_db::ddl(dialect, &table))
}

#[cfg(not(feature = "db"))]
fn coordinator(_args: &CoordinatorArgs) -> Result<(), CliError> {
    Err(CliError::Usage(
        "sql coordinator needs a snowmint built with `--features db`".to_owned(),
    ))
}

/// Runs `snowmint sql`.
pub fn run(args: SqlArgs, _global: &GlobalArgs) -> Result<(), CliError> {
    let Some(dialect) = args.dialect else {
        let Some(SqlCommand::Coordinator(coordinator_args)) = &args.coordinator else {
            return Err(CliError::Usage("sql needs a DIALECT".to_owned()));
        };
        return coordinator(coordinator_args);
    };
    let options = Options {
        prefix: &args.prefix,
        table: args.table.as_deref(),
        column: args.column.as_deref(),
    };
    let script = sql::functions(dialect, &args.layout, &options)?;
    render::print(&script)
}

/// A dialect's name, refused naming `field` (`dialect`, or `sql` for `--sql`).
pub fn dialect_parser(field: &'static str) -> NameParser<Dialect> {
    NameParser::new(field, &Dialect::NAMES, |field, s| {
        Dialect::parse_for(field, s).map_err(|e| e.to_string())
    })
}

/// A partition period's name.
pub fn period_parser() -> NameParser<Period> {
    NameParser::new("partition", &Period::NAMES, |_, s| {
        s.parse().map_err(|e: sql::SqlError| e.to_string())
    })
}

/// A name that goes into SQL text: a plain identifier, or the core's
/// message naming `field`.
pub fn identifier(field: &'static str) -> impl Fn(&str) -> Result<String, FlagError> + Clone {
    move |s: &str| {
        sql::check_identifier(field, s)
            .map(|()| s.to_owned())
            .map_err(|e| FlagError(e.to_string()))
    }
}
