//! The one table: its name, its layout in each dialect, and the marker that
//! says which layout a table has.

use std::fmt;

use snowmint::Identity;

/// The default table name.
pub const DEFAULT_TABLE: &str = "snowmint_identities";

/// The table comment that marks the layout this crate reads and writes. A
/// table with another comment (another program's, or a later layout) is
/// refused rather than misread.
pub const LAYOUT_MARKER: &str = "snowmint coordinator table, layout 2";

/// The marker of the layout before epochs (snowmint 0.4): a table with it is
/// brought to [`LAYOUT_MARKER`]'s in place by the first instance that connects.
pub const LAYOUT_1_MARKER: &str = "snowmint coordinator table, layout 1";

/// The longest lease TTL a new table declares (`longest_ttl_ms`, per row):
/// no holder may lease with a longer one, so that a claim after a failover
/// that lost the last commits knows how long a lost holder may still issue.
/// An operator raises it with an `UPDATE` (see `docs/distributed.md`).
pub const DEFAULT_LONGEST_TTL_MS: i64 = 60_000;

/// Which database speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL (directly, or through PgBouncer in transaction mode).
    Postgres,
    /// MySQL or MariaDB.
    Mysql,
}

impl Dialect {
    /// Its name in messages and metrics: `postgres`, `mysql`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Postgres => "postgres",
            Dialect::Mysql => "mysql",
        }
    }

    /// Its product name for operators: `PostgreSQL`, `MySQL`.
    pub fn product(self) -> &'static str {
        match self {
            Dialect::Postgres => "PostgreSQL",
            Dialect::Mysql => "MySQL",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A table name, checked: `name` or `schema.name`, each part an unquoted
/// identifier (`[A-Za-z_][A-Za-z0-9_]*`, at most 63 characters), so that it
/// can be written into statements without any way to change their meaning.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Table {
    schema: Option<String>,
    name: String,
}

impl Table {
    /// Checks `name`; the error says what is allowed.
    pub fn parse(name: &str) -> Result<Table, String> {
        let bad = || {
            format!(
                "table must be NAME or SCHEMA.NAME, each of letters, digits and _ (not first a \
                 digit), 1..=63 characters, got {name:?}"
            )
        };
        let ident = |part: &str| {
            let mut chars = part.chars();
            let first_ok = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            first_ok && part.len() <= 63 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let (schema, table) = match name.split_once('.') {
            Some((schema, table)) => (Some(schema), table),
            None => (None, name),
        };
        if !ident(table) || schema.is_some_and(|s| !ident(s)) {
            return Err(bad());
        }
        Ok(Table {
            schema: schema.map(str::to_owned),
            name: table.to_owned(),
        })
    }

    /// The table's own name (without the schema).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema, if one was named.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The name as written in `dialect`'s statements, quoted.
    pub fn quoted(&self, dialect: Dialect) -> String {
        let q = |part: &str| match dialect {
            Dialect::Postgres => format!("\"{part}\""),
            Dialect::Mysql => format!("`{part}`"),
        };
        match &self.schema {
            Some(schema) => format!("{}.{}", q(schema), q(&self.name)),
            None => q(&self.name),
        }
    }

    /// The name of the index on the lease column.
    fn index(&self) -> String {
        let mut name = format!("{}_lease", self.name);
        name.truncate(63);
        name
    }
}

impl Default for Table {
    fn default() -> Table {
        Table::parse(DEFAULT_TABLE).expect("the default table name is valid")
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The statements that create `table` in `dialect` with its 1024 rows, as a
/// script for a DBA (`snowmint sql coordinator postgres|mysql`); running it
/// twice changes nothing.
///
/// One row per identity (`identity` = `datacenter * 32 + worker`):
/// - `lease`: the lease token of its holder, or of its last holder;
/// - `holder`, `instance`, `ttl_ms`: who that was (for operators; the
///   instance token; the TTL its fence was bound by);
/// - `expires_ms`: when the lease ends, in Unix milliseconds *of the
///   database's clock*, set by the statement that claims or renews; `0`
///   once the holder revoked it;
/// - `released`: whether the last holder stopped issuing and let go (the
///   next holder may then issue at once);
/// - `mark`: "reserved until", Unix milliseconds: every ID issued under the
///   identity is below it. Only raised, only by the holder.
/// - `epoch`: the history of the server that last wrote the row (see
///   [`epoch_sql`]); a row of another epoch than the server's may have lost
///   its last writes in a failover, and is not trusted;
/// - `longest_ttl_ms`: the longest TTL a holder of the identity may lease
///   with ([`DEFAULT_LONGEST_TTL_MS`]): how long a holder whose claim a
///   failover lost may still issue.
pub fn ddl(dialect: Dialect, table: &Table) -> String {
    let t = table.quoted(dialect);
    let rows = row_values();
    let epoch = epoch_sql(dialect);
    let body = match dialect {
        Dialect::Postgres => format!(
            "-- snowmint: the identities leased from PostgreSQL ({LAYOUT_MARKER}).\n\
             CREATE TABLE IF NOT EXISTS {t} (\n    \
             identity   smallint PRIMARY KEY CHECK (identity BETWEEN 0 AND 1023),\n    \
             lease      bigint,\n    \
             holder     text,\n    \
             instance   bigint,\n    \
             ttl_ms     bigint,\n    \
             expires_ms bigint  NOT NULL DEFAULT 0,\n    \
             released   boolean NOT NULL DEFAULT true,\n    \
             mark       bigint,\n    \
             epoch      text,\n    \
             longest_ttl_ms bigint NOT NULL DEFAULT {DEFAULT_LONGEST_TTL_MS}\n\
             );\n\
             CREATE INDEX IF NOT EXISTS \"{index}\" ON {t} (lease);\n\
             COMMENT ON TABLE {t} IS '{LAYOUT_MARKER}';\n\
             INSERT INTO {t} (identity) VALUES\n{rows}\nON CONFLICT (identity) DO NOTHING;\n",
            index = table.index(),
        ),
        Dialect::Mysql => format!(
            "-- snowmint: the identities leased from MySQL ({LAYOUT_MARKER}).\n\
             CREATE TABLE IF NOT EXISTS {t} (\n    \
             identity   SMALLINT NOT NULL PRIMARY KEY,\n    \
             lease      BIGINT NULL,\n    \
             holder     VARCHAR(255) NULL,\n    \
             instance   BIGINT NULL,\n    \
             ttl_ms     BIGINT NULL,\n    \
             expires_ms BIGINT NOT NULL DEFAULT 0,\n    \
             released   BOOLEAN NOT NULL DEFAULT TRUE,\n    \
             mark       BIGINT NULL,\n    \
             epoch      VARCHAR(255) NULL,\n    \
             longest_ttl_ms BIGINT NOT NULL DEFAULT {DEFAULT_LONGEST_TTL_MS},\n    \
             KEY `{index}` (lease),\n    \
             CHECK (identity BETWEEN 0 AND 1023)\n\
             ) ENGINE=InnoDB COMMENT='{LAYOUT_MARKER}';\n\
             INSERT IGNORE INTO {t} (identity) VALUES\n{rows};\n",
            index = table.index(),
        ),
    };
    // The rows are stamped with the creating server's epoch: a row no one
    // has claimed yet is trusted only on the server (the history) that
    // created it.
    format!("{body}UPDATE {t} SET epoch = {epoch} WHERE epoch IS NULL;\n")
}

/// The server's epoch as an SQL expression: a text that names the history
/// of writes it carries, and changes when that history may have lost
/// commits. PostgreSQL: the cluster's `system_identifier` and the current
/// timeline (a promoted standby, a point-in-time recovery and a restored
/// base backup that ends recovery all start a new timeline). MySQL and
/// MariaDB: the server's `server_id` (a replica must have its own, so a
/// promoted replica is another epoch).
pub fn epoch_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "((SELECT system_identifier FROM pg_control_system())::text || '/' || \
             substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))"
        }
        Dialect::Mysql => "CONCAT('server_id:', @@GLOBAL.server_id)",
    }
}

/// What a claim records as `ttl_ms`, in SQL over the claim's `old` row:
/// the longest fence that may still be open on the identity, for whoever
/// takes it next (it waits that long after an unclean hand-over). That is
/// the claimant's TTL (`ttl`), or longer: the TTL the row recorded when its
/// last holder did not release it (that holder, or one before it whose wait
/// it had not finished, may still issue), or the table's longest TTL when
/// the row is of another epoch (a holder whose claim was lost).
#[cfg(any(feature = "postgres", feature = "mysql"))]
/// `row` prefixes the old row's columns (`old.`, or nothing where the
/// assignment reads the row before it is changed).
pub(crate) fn recorded_ttl(row: &str, ttl: &str, epoch: &str) -> String {
    format!(
        "CASE WHEN {row}epoch IS NULL OR {row}epoch <> {epoch} \
         THEN GREATEST({ttl}, {row}longest_ttl_ms) \
         WHEN {row}lease IS NOT NULL AND NOT {row}released \
         THEN GREATEST({ttl}, COALESCE({row}ttl_ms, {row}longest_ttl_ms)) ELSE {ttl} END"
    )
}

/// The statements that bring a table of [`LAYOUT_1_MARKER`] to this
/// layout: the two columns, the rows stamped with this server's epoch (the
/// upgrade trusts the history it runs on), the new marker.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn upgrade_statements(dialect: Dialect, table: &Table) -> Vec<String> {
    let t = table.quoted(dialect);
    let epoch = epoch_sql(dialect);
    match dialect {
        Dialect::Postgres => vec![
            format!(
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS epoch text, ADD COLUMN IF NOT EXISTS \
                 longest_ttl_ms bigint NOT NULL DEFAULT {DEFAULT_LONGEST_TTL_MS}"
            ),
            format!("UPDATE {t} SET epoch = {epoch} WHERE epoch IS NULL"),
            format!("COMMENT ON TABLE {t} IS '{LAYOUT_MARKER}'"),
        ],
        Dialect::Mysql => vec![
            format!(
                "ALTER TABLE {t} ADD COLUMN epoch VARCHAR(255) NULL, ADD COLUMN longest_ttl_ms \
                 BIGINT NOT NULL DEFAULT {DEFAULT_LONGEST_TTL_MS}"
            ),
            format!("UPDATE {t} SET epoch = {epoch} WHERE epoch IS NULL"),
            format!("ALTER TABLE {t} COMMENT = '{LAYOUT_MARKER}'"),
        ],
    }
}

/// `(0), (1), ... (1023)`, 32 to a line.
fn row_values() -> String {
    let lines: Vec<String> = (0..Identity::COUNT)
        .collect::<Vec<u16>>()
        .chunks(32)
        .map(|chunk| {
            let values: Vec<String> = chunk.iter().map(|n| format!("({n})")).collect();
            format!("    {}", values.join(", "))
        })
        .collect();
    lines.join(",\n")
}

/// The statements of [`ddl`], one by one (for a driver that runs one at a
/// time).
#[cfg(any(feature = "mysql", test))]
pub(crate) fn ddl_statements(dialect: Dialect, table: &Table) -> Vec<String> {
    ddl(dialect, table)
        .lines()
        .filter(|line| !line.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .split(";\n")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches(';').to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_identifiers_or_refused_by_name() {
        assert_eq!(Table::default().to_string(), "snowmint_identities");
        let t = Table::parse("ids.snowmint_ids").unwrap();
        assert_eq!(t.schema(), Some("ids"));
        assert_eq!(t.quoted(Dialect::Postgres), "\"ids\".\"snowmint_ids\"");
        assert_eq!(t.quoted(Dialect::Mysql), "`ids`.`snowmint_ids`");
        for bad in [
            "",
            "1abc",
            "a-b",
            "a.b.c",
            "x\"; DROP TABLE y; --",
            "a b",
            ".a",
            "a.",
            &"x".repeat(64),
        ] {
            let e = Table::parse(bad).unwrap_err();
            assert!(
                e.starts_with("table must be NAME or SCHEMA.NAME"),
                "{bad}: {e}"
            );
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        assert!(Table::parse(&"x".repeat(63)).is_ok());
    }

    #[test]
    fn the_script_creates_every_identity_and_its_marker() {
        for dialect in [Dialect::Postgres, Dialect::Mysql] {
            let script = ddl(dialect, &Table::default());
            assert!(script.contains(LAYOUT_MARKER));
            for n in [0, 31, 32, 1023] {
                assert!(script.contains(&format!("({n})")), "{n}");
            }
            assert!(!script.contains("(1024)"));
            let statements = ddl_statements(dialect, &Table::default());
            let expected = match dialect {
                Dialect::Postgres => 5,
                Dialect::Mysql => 3,
            };
            assert_eq!(statements.len(), expected, "{statements:#?}");
            assert!(statements.iter().all(|s| !s.ends_with(';')));
        }
    }
}
