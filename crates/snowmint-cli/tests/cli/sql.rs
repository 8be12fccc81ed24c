//! `snowmint sql` and `range --partition`: each printed script loaded
//! into a real PostgreSQL, MariaDB and SQLite (through their own clients,
//! as a user pipes it), and every function checked against the core on
//! thousands of random IDs over the whole range and on the edges (the
//! epoch, the last millisecond, every field's largest value, out of
//! range), one query per function.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use snowmint::time::Iso8601;
use snowmint::{Layout, MAX_ID, SnowflakeId};
use snowmint_testkit::db::{Mariadb, Postgres, Sqlite};

use crate::support::run_with;

/// Random IDs, times and compositions per layout.
const RANDOM: usize = 2000;

/// splitmix64: reproducible from the printed seed, no dependency.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        eprintln!("sql tests: random seed {seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo) as u64 + 1)) as i64
    }
}

/// Layouts whose field names are words some database reserves, so that
/// every one is a parameter, a function and (SQLite) a column name in every
/// dialect: MySQL's `partition` (the example), PostgreSQL's
/// `position`, `row`, `none`, `bit`, and words of the SQL standard, of
/// MySQL, MariaDB and SQLite. Two are narrower than 63 bits, so that IDs
/// with bits above them are out of range.
const AWKWARD: [&str; 6] = [
    "epoch=2020-01-01;fields=timestamp:41,partition:10,sequence:12",
    "epoch=0;fields=timestamp:39,position:6,row:6,none:6,bit:6",
    "epoch=2010-01-01;fields=timestamp:41,order:2,key:2,user:2,select:2,group:2,table:2,\
     limit:2,window:2,rank:2,range:2,values:2",
    "epoch=2015-01-01;fields=timestamp:40,all:2,when:2,end:2,interval:2,div:2,mod:2,xor:2,\
     true:2,null:2,between:2,check:2",
    "epoch=0;fields=timestamp:30,lateral:3,rows:3,natural:3,default:3,primary:3,returning:3,\
     in:3,is:3,on:3,over:3",
    "epoch=0;fields=timestamp:40,node:8",
];

/// One layout the scripts are loaded and checked for.
struct Case {
    layout: Layout,
    /// What `--layout` is given.
    arg: String,
    /// The prefix of its functions (so that all live in one database;
    /// `current_` makes `current_user`, a keyword of PostgreSQL and MySQL).
    prefix: String,
    /// Random IDs, times and compositions.
    random: usize,
}

/// Every preset (Twitter's with the default prefix, the others with their
/// name), then every [`AWKWARD`] layout.
fn cases() -> Vec<Case> {
    let presets = Layout::PRESETS.into_iter().map(|layout| Case {
        arg: layout.name().to_owned(),
        prefix: match layout.name() {
            "twitter" => "snowflake_".into(),
            name => format!("{name}_"),
        },
        layout,
        random: RANDOM,
    });
    let awkward = AWKWARD.iter().enumerate().map(|(i, spec)| Case {
        layout: spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}")),
        arg: (*spec).to_owned(),
        prefix: if spec.contains(",user:") {
            "current_".into()
        } else {
            format!("w{i}_")
        },
        random: RANDOM / 8,
    });
    presets.chain(awkward).collect()
}

/// `snowmint sql DIALECT --layout L [--prefix P] [extra]`'s script.
fn script(dialect: &str, case: &Case, extra: &[&str]) -> String {
    let mut args = vec!["sql", dialect, "--layout", &case.arg];
    if case.prefix != "snowflake_" {
        args.extend(["--prefix", &case.prefix]);
    }
    args.extend(extra);
    let run = run_with(&args, &[]);
    assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    run.stdout
}

/// A field's name as the functions name it (Mastodon's "sequence data"
/// is `sequence_data`).
fn sql_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The core's ID for a database's `bigint`: `None` where the core refuses
/// it (negative, or bits above the layout's set).
fn core_id(layout: &Layout, id: i64) -> Option<SnowflakeId> {
    let id = SnowflakeId::new(u64::try_from(id).ok()?).ok()?;
    layout.check_id(id).ok()
}

/// The layout's fields below the time, as the functions name them, with
/// their values in `id` (from the core).
fn fields(layout: &Layout, id: SnowflakeId) -> Vec<(String, u64)> {
    let mut v: Vec<_> = layout
        .node_fields()
        .filter(|f| f.bits() > 0)
        .map(|f| (sql_name(f.name()), f.shift(), f.value(id)))
        .collect();
    v.sort_by_key(|f| std::cmp::Reverse(f.1));
    v.into_iter().map(|(n, _, value)| (n, value)).collect()
}

/// IDs to check: the edges (negative, the layout's largest and one past
/// it, the range's ends, every field's largest value), then random ones
/// over all 64 bits and within the layout.
fn ids(layout: &Layout, rng: &mut Rng, random: usize) -> Vec<i64> {
    let (lo, hi) = (layout.min_timestamp_ms(), layout.max_timestamp_ms());
    let max = layout.max_id();
    let as_i64 = |id: u64| i64::try_from(id).unwrap();
    let mut out = vec![
        0,
        1,
        -1,
        i64::MIN,
        as_i64(MAX_ID),
        as_i64(MAX_ID - 1),
        as_i64(max),
        as_i64(layout.max_id_at(lo).unwrap().get()),
        as_i64(layout.min_id_at(hi).unwrap().get()),
        as_i64(layout.max_id_at(hi).unwrap().get()),
    ];
    if max < MAX_ID {
        out.extend([as_i64(max + 1), as_i64(max + 1) | 1, -as_i64(max)]);
    }
    for (_, _, bits, shift) in field_bits(layout) {
        out.push(((1 << bits) - 1) << shift);
    }
    out.extend((0..random).map(|_| rng.next() as i64));
    out.extend((0..random).map(|_| as_i64(rng.next() % (max + 1))));
    out
}

/// (layout's name, SQL name, bits, shift) of each field, most significant
/// first.
fn field_bits(layout: &Layout) -> Vec<(String, String, u32, u32)> {
    let mut v: Vec<_> = layout
        .node_fields()
        .filter(|f| f.bits() > 0)
        .map(|f| (f.name().to_owned(), sql_name(f.name()), f.bits(), f.shift()))
        .collect();
    v.sort_by_key(|f| std::cmp::Reverse(f.3));
    v
}

/// Times to check min_id and max_id at, in microseconds since 1970: the
/// edges of the layout's range (a microsecond inside and outside), random
/// ones from a second before the epoch to a second after the end, and
/// random whole milliseconds (where a time in a double, as PostgreSQL
/// before 14 extracts it, floors one early after 2038).
fn times_us(layout: &Layout, rng: &mut Rng, sub_ms: bool, random: usize) -> Vec<i64> {
    let (lo, hi) = (
        layout.min_timestamp_ms() as i64,
        layout.max_timestamp_ms() as i64,
    );
    let step = if sub_ms { 1 } else { 1000 };
    let mut out = vec![
        lo * 1000,
        lo * 1000 - step,
        hi * 1000,
        hi * 1000 + 1000 - step,
        hi * 1000 + 1000,
    ];
    for _ in 0..random {
        let ms = rng.range(lo - 1000, hi + 1000);
        let us = if sub_ms { rng.range(0, 999) } else { 0 };
        out.push(ms * 1000 + us);
    }
    out.extend((0..random / 4).map(|_| rng.range(lo, hi) * 1000));
    // MySQL's DATETIME and SQLite's dates start in year 1000 / 0.
    out.retain(|&us| us >= 0);
    out
}

/// The core's min_id and max_id of a time in microseconds (`None` out of
/// range), floored to its millisecond.
fn bounds(layout: &Layout, us: i64) -> (Option<u64>, Option<u64>) {
    let ms = us.div_euclid(1000);
    let Ok(ms) = u64::try_from(ms) else {
        return (None, None);
    };
    (
        layout.min_id_at(ms).ok().map(SnowflakeId::get),
        layout.max_id_at(ms).ok().map(SnowflakeId::get),
    )
}

/// `2024-01-01T00:00:00.123456Z` for a time in microseconds.
fn iso_us(us: i64) -> String {
    let ms = Iso8601(us.div_euclid(1000)).to_string();
    format!("{}{:03}Z", &ms[..ms.len() - 1], us.rem_euclid(1000))
}

/// Compositions to check: (unix_ms, field values), in range or not.
fn compositions(layout: &Layout, rng: &mut Rng, random: usize) -> Vec<(i64, Vec<i64>)> {
    let (lo, hi) = (
        layout.min_timestamp_ms() as i64,
        layout.max_timestamp_ms() as i64,
    );
    let maxes: Vec<i64> = field_bits(layout)
        .iter()
        .map(|(_, _, bits, _)| (1 << bits) - 1)
        .collect();
    let mut out = vec![
        (lo, vec![0; maxes.len()]),
        (hi, maxes.clone()),
        (lo - 1, vec![0; maxes.len()]),
        (hi + 1, vec![0; maxes.len()]),
    ];
    for i in 0..maxes.len() {
        let mut over = vec![0; maxes.len()];
        over[i] = maxes[i] + 1;
        out.push((lo, over.clone()));
        over[i] = -1;
        out.push((hi, over));
    }
    for _ in 0..random {
        let fields = maxes.iter().map(|&m| rng.range(0, m)).collect();
        out.push((rng.range(lo, hi), fields));
    }
    out
}

/// The core's composition, or `None` where it refuses.
fn composed(layout: &Layout, ms: i64, fields: &[i64]) -> Option<u64> {
    let ms = u64::try_from(ms).ok()?;
    let names = field_bits(layout);
    let mut values = Vec::new();
    for ((name, _, _, _), &v) in names.iter().zip(fields) {
        values.push((name.as_str(), u64::try_from(v).ok()?));
    }
    layout
        .compose_fields(ms, &values)
        .ok()
        .map(SnowflakeId::get)
}

/// Rows `n<sep>value` into a map; a missing value is `null`.
fn rows(out: &str, sep: char, null: &str) -> BTreeMap<usize, Option<String>> {
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once(sep).unwrap_or_else(|| panic!("a row: {l:?}"));
            let v = (v != null).then(|| v.to_owned());
            (n.parse().expect("a row number"), v)
        })
        .collect()
}

/// Compares a function's answers with the core's, reporting the first few
/// differences.
fn agree(
    what: &str,
    got: &BTreeMap<usize, Option<String>>,
    want: &[Option<String>],
    input: &dyn Fn(usize) -> String,
) {
    assert_eq!(got.len(), want.len(), "{what}: row count");
    let wrong: Vec<String> = want
        .iter()
        .enumerate()
        .filter(|(n, w)| got.get(n) != Some(w))
        .take(5)
        .map(|(n, w)| format!("{}: got {:?}, want {w:?}", input(n), got.get(&n)))
        .collect();
    assert!(
        wrong.is_empty(),
        "{what} disagrees with the core:\n{}",
        wrong.join("\n")
    );
}

/// `VALUES (0, a, b), (1, c, d), ...` rows of a table.
fn values<T>(items: &[T], row: impl Fn(&T) -> String) -> String {
    let mut s = String::new();
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            s.push_str(",\n");
        }
        let _ = write!(s, "({n}, {})", row(item));
    }
    s
}

/// The SQL dialects, as the tests drive them.
#[derive(Clone, Copy, PartialEq)]
enum Db {
    Pg,
    My,
    Lite,
}

impl Db {
    /// `name` quoted, as a test writes a name the database may reserve.
    fn quote(self, name: &str) -> String {
        match self {
            Db::Pg => format!("\"{name}\""),
            Db::My | Db::Lite => format!("`{name}`"),
        }
    }

    /// A call of the function `name` (quoted, and in MySQL qualified by
    /// the database `t`: a stored function of a native function's name,
    /// `current_user`, is called only so).
    fn call(self, name: &str, args: &str) -> String {
        match self {
            Db::My => format!("`t`.`{name}`({args})"),
            _ => format!("{}({args})", self.quote(name)),
        }
    }
}

/// Runs a script in a database and returns its rows.
type Script<'a> = &'a dyn Fn(&str) -> String;

/// Checks every function of every [`cases`] layout in one dialect: `run`
/// runs a script and returns its rows.
fn check_functions(db: Db, run: &dyn Fn(&str) -> String) {
    let mut rng = Rng::new();
    let (sep, null) = match db {
        Db::Pg | Db::Lite => ('|', ""),
        Db::My => ('\t', "NULL"),
    };
    for case in cases() {
        let layout = &case.layout;
        let p = &case.prefix;
        let name = case.arg.as_str();
        let ids = ids(layout, &mut rng, case.random);
        let times = times_us(layout, &mut rng, db != Db::Lite, case.random);
        let parts = compositions(layout, &mut rng, case.random);
        let fields_of = field_bits(layout);
        let field_cols: Vec<String> = fields_of.iter().map(|(_, n, _, _)| n.clone()).collect();
        let int = if db == Db::My { "INT" } else { "integer" };
        let big = if db == Db::Lite { "INTEGER" } else { "bigint" };
        let time_type = match db {
            Db::Pg => "timestamptz",
            Db::My => "DATETIME(6)",
            Db::Lite => "TEXT",
        };
        let time_text = |us: i64| match db {
            Db::Pg => iso_us(us),
            // 2024-01-01 00:00:00.123456 (MySQL), 2024-01-01 00:00:00.123 (SQLite)
            Db::My => iso_us(us).replace('T', " ").replace('Z', ""),
            Db::Lite => Iso8601(us.div_euclid(1000))
                .to_string()
                .replace('T', " ")
                .replace('Z', ""),
        };
        let mut setup = format!(
            "CREATE TABLE {p}ids (n {int}, id {big});\n\
             INSERT INTO {p}ids VALUES {};\n\
             CREATE TABLE {p}times (n {int}, ts {time_type});\n\
             INSERT INTO {p}times VALUES {};\n",
            values(&ids, |id| id.to_string()),
            values(&times, |&us| format!("'{}'", time_text(us))),
        );
        let cols: String = field_cols
            .iter()
            .map(|c| format!(", {} {int}", db.quote(c)))
            .collect();
        let _ = write!(
            setup,
            "CREATE TABLE {p}parts (n {int}, unix_ms {big}{cols});\n\
             INSERT INTO {p}parts VALUES {};\n",
            values(&parts, |(ms, f)| {
                let mut s = ms.to_string();
                for v in f {
                    let _ = write!(s, ", {v}");
                }
                s
            })
        );
        // The script itself (SQLite: with a view over the IDs' table).
        let loaded = match db {
            Db::Pg => script("postgres", &case, &[]),
            Db::My => script("mysql", &case, &[]),
            Db::Lite => script("sqlite", &case, &["--table", &format!("{p}ids")]),
        };
        run(&format!("{setup}\n{loaded}"));
        // The expressions SQLite's script lists: `-- name(args) = expr`.
        let exprs: BTreeMap<String, String> = loaded
            .lines()
            .filter_map(|l| l.strip_prefix("-- "))
            .filter_map(|l| l.split_once(") = "))
            .filter_map(|(call, expr)| Some((call.split_once('(')?.0.to_owned(), expr.to_owned())))
            .collect();
        // A session in another time zone: nothing may depend on it.
        let zone = match db {
            Db::Pg => "SET TimeZone = 'Pacific/Chatham';\n",
            Db::My => "SET time_zone = '+05:45';\n",
            Db::Lite => "",
        };
        let query = |args: &str, from: &str, function: &str| {
            let sql = match db {
                Db::Lite if from == "ids" => format!(
                    "SELECT n, {} FROM {p}ids_decoded ORDER BY n;",
                    db.quote(&format!("{p}{function}"))
                ),
                Db::Lite => format!(
                    "SELECT n, {} FROM {p}{from} ORDER BY n;",
                    exprs
                        .get(&format!("{p}{function}"))
                        .unwrap_or_else(|| panic!("{name}: {p}{function} in {loaded}"))
                ),
                _ => format!(
                    "{zone}SELECT n, {} FROM {p}{from} ORDER BY n;",
                    db.call(&format!("{p}{function}"), args)
                ),
            };
            rows(&run(&sql), sep, null)
        };
        let id_at = |n: usize| format!("{name} id {}", ids[n]);
        let time_at = |n: usize| format!("{name} time {}", iso_us(times[n]));
        let parts_at = |n: usize| format!("{name} compose {:?}", parts[n]);

        // time(id): the decoded millisecond, as each database writes it.
        let got = match db {
            Db::Pg => rows(
                &run(&format!(
                    "{zone}SELECT n, to_char({} AT TIME ZONE 'UTC', \
                     'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM {p}ids ORDER BY n;",
                    db.call(&format!("{p}time"), "id")
                )),
                sep,
                null,
            ),
            _ => query("id", "ids", "time"),
        };
        let want: Vec<_> = ids
            .iter()
            .map(|&id| {
                let id = core_id(layout, id)?;
                let t = Iso8601(layout.decode(id).timestamp_ms as i64).to_string();
                Some(if db == Db::My {
                    t.replace('T', " ").replace('Z', "")
                } else {
                    t
                })
            })
            .collect();
        agree(&format!("{name} {p}time"), &got, &want, &id_at);

        let want: Vec<_> = ids
            .iter()
            .map(|&id| Some(layout.decode(core_id(layout, id)?).timestamp_ms.to_string()))
            .collect();
        let got = query("id", "ids", "unix_ms");
        agree(&format!("{name} {p}unix_ms"), &got, &want, &id_at);

        for (i, field) in field_cols.iter().enumerate() {
            let want: Vec<_> = ids
                .iter()
                .map(|&id| Some(fields(layout, core_id(layout, id)?)[i].1.to_string()))
                .collect();
            let got = query("id", "ids", field);
            agree(&format!("{name} {p}{field}"), &got, &want, &id_at);
        }

        for (max, function) in [(false, "min_id"), (true, "max_id")] {
            let want: Vec<_> = times
                .iter()
                .map(|&us| {
                    let (lo, hi) = bounds(layout, us);
                    (if max { hi } else { lo }).map(|v| v.to_string())
                })
                .collect();
            let got = query("ts", "times", function);
            agree(&format!("{name} {p}{function}"), &got, &want, &time_at);
        }

        let want: Vec<_> = parts
            .iter()
            .map(|(ms, f)| composed(layout, *ms, f).map(|v| v.to_string()))
            .collect();
        let args = std::iter::once("unix_ms".to_owned())
            .chain(field_cols.iter().map(|c| db.quote(c)))
            .collect::<Vec<_>>()
            .join(", ");
        let got = query(&args, "parts", "compose");
        agree(&format!("{name} {p}compose"), &got, &want, &parts_at);
    }
}

#[test]
fn postgres_functions_agree_with_the_core() {
    let Some(pg) = Postgres::start() else { return };
    pg.create_database("t");
    let psql = |sql: &str| pg.psql("t", sql);
    check_functions(Db::Pg, &psql);
    // Immutable, so the planner folds a call on constants into the index
    // condition: the range scan uses the primary key.
    let volatility =
        psql("SELECT DISTINCT provolatile FROM pg_proc WHERE proname LIKE 'snowflake\\_%';");
    assert_eq!(volatility.trim(), "i");
    let plan = psql(
        "CREATE TABLE events (id bigint PRIMARY KEY);\n\
         SET enable_seqscan = off;\n\
         EXPLAIN (COSTS OFF) SELECT * FROM events\n\
         WHERE id BETWEEN snowflake_min_id('2024-01-01Z') AND snowflake_max_id('2024-01-31 23:59:59.999Z');",
    );
    let min = Layout::TWITTER.min_id_at(1704067200000).unwrap();
    let max = Layout::TWITTER.max_id_at(1706745599999).unwrap();
    assert!(
        plan.contains(&format!(
            "(id >= '{min}'::bigint) AND (id <= '{max}'::bigint)"
        )),
        "{plan}"
    );
    assert!(plan.contains("events_pkey"), "{plan}");
    // And inlined: a call per row costs a function call, an inlined one
    // only its expression (a STRICT function with a CASE is never inlined).
    let plan = psql(
        "EXPLAIN (VERBOSE, COSTS OFF) SELECT snowflake_time(id), snowflake_unix_ms(id), \
         snowflake_worker(id), snowflake_min_id(now()) FROM events;",
    );
    assert!(
        !plan.contains("snowflake_") && plan.contains("CASE WHEN"),
        "{plan}"
    );
    // An infinite time is out of range: NULL, as a constant (which the
    // planner folds) and from a row.
    let infinite = psql(
        "SELECT snowflake_min_id('infinity'), snowflake_max_id('-infinity');\n\
         SELECT snowflake_min_id(ts), snowflake_max_id(ts) FROM (VALUES ('infinity'::timestamptz), \
         ('-infinity')) AS v (ts);",
    );
    assert_eq!(infinite, "|\n|\n|\n", "{infinite:?}");
    // And it is the type the contract names.
    let types = psql("SELECT pg_typeof(snowflake_time(0)), pg_typeof(snowflake_worker(0));");
    assert_eq!(types.trim(), "timestamp with time zone|integer");
}

#[test]
fn mariadb_functions_agree_with_the_core() {
    let Some(my) = Mariadb::start() else { return };
    my.create_database("t");
    check_functions(Db::My, &|sql| my.sql("t", sql));
    let deterministic = my.sql(
        "t",
        "SELECT DISTINCT IS_DETERMINISTIC, SQL_DATA_ACCESS FROM information_schema.ROUTINES \
         WHERE ROUTINE_SCHEMA = 't';",
    );
    assert_eq!(deterministic.trim(), "YES\tNO SQL");
    let types = my.sql(
        "t",
        "SELECT DTD_IDENTIFIER FROM information_schema.ROUTINES \
         WHERE ROUTINE_SCHEMA = 't' AND ROUTINE_NAME = 'snowflake_time';",
    );
    assert_eq!(types.trim(), "datetime(3)");
    // Now, as the script says to write it, in a session whose time zone
    // is not UTC: of rows minted half an hour and two hours ago, the
    // script's "last hour" holds one. With NOW(), the session's time
    // (5 h 45 ahead), it would hold none.
    let script = run_with(&["sql", "mysql"], &[]).stdout;
    let example = script
        .lines()
        .filter_map(|l| l.strip_prefix("--   "))
        .find(|l| l.contains("UTC_TIMESTAMP(6)"))
        .unwrap_or_else(|| panic!("the script says how to ask for now:\n{script}"));
    let now = snowmint::unix_now_ms();
    let minted = |ago_ms: u64| Layout::TWITTER.min_id_at(now - ago_ms).unwrap();
    my.sql(
        "t",
        &format!(
            "CREATE TABLE events (id BIGINT PRIMARY KEY);\n\
             INSERT INTO events VALUES ({}), ({});",
            minted(1_800_000),
            minted(7_200_000)
        ),
    );
    let in_zone = |sql: &str| my.sql("t", &format!("SET time_zone = '+05:45';\n{sql}"));
    assert_eq!(in_zone(example).trim(), "1", "{example}");
    let with_now = example.replace("UTC_TIMESTAMP(6)", "NOW(6)");
    assert_eq!(in_zone(&with_now).trim(), "0", "{with_now}");
}

#[test]
fn sqlite_expressions_agree_with_the_core() {
    let Some(lite) = Sqlite::open() else { return };
    check_functions(Db::Lite, &|sql| lite.sql(sql));
}

/// SQLite's view over a table and an ID column whose names SQLite
/// reserves (`order`, `group`), or that are the expressions' other
/// parameters (`ts`, `unix_ms`): its columns are the table's and one per
/// function of the ID, and a value that is not an ID of the layout is NULL
/// in each.
#[test]
fn sqlite_views_over_reserved_and_parameter_names() {
    let Some(lite) = Sqlite::open() else { return };
    let id = 1541815603606036480_u64;
    let parts = Layout::TWITTER.decode(SnowflakeId::new(id).unwrap());
    for column in ["group", "ts", "unix_ms"] {
        let script = run_with(
            &["sql", "sqlite", "--table", "order", "--column", column],
            &[],
        );
        assert_eq!(script.code, Some(0), "{column}: {}", script.stderr);
        let out = lite.sql(&format!(
            "DROP TABLE IF EXISTS `order`;\n\
             CREATE TABLE `order` (`{column}` INTEGER, note TEXT);\n\
             INSERT INTO `order` VALUES ({id}, 'a'), (-1, 'b'), (9223372036854775807, 'c');\n\
             {}\n\
             SELECT name FROM pragma_table_info('order_decoded');\n\
             SELECT * FROM order_decoded ORDER BY note;",
            script.stdout
        ));
        let mut lines = out.lines();
        let names: Vec<&str> = lines.by_ref().take(7).collect();
        assert_eq!(
            names,
            [
                column,
                "note",
                "snowflake_time",
                "snowflake_unix_ms",
                "snowflake_datacenter",
                "snowflake_worker",
                "snowflake_sequence"
            ],
            "{column}: {out}"
        );
        let rows: Vec<&str> = lines.collect();
        let time = Iso8601(parts.timestamp_ms as i64);
        assert_eq!(
            rows,
            [
                format!(
                    "{id}|a|{time}|{}|{}|{}|{}",
                    parts.timestamp_ms, parts.datacenter, parts.worker, parts.sequence
                ),
                "-1|b|||||".to_owned(),
                format!(
                    "9223372036854775807|c|{}|{}|31|31|4095",
                    Iso8601(Layout::TWITTER.max_timestamp_ms() as i64),
                    Layout::TWITTER.max_timestamp_ms()
                ),
            ],
            "{column}: {out}"
        );
    }
}

/// Unix ms of an ISO-8601 time.
fn ms(iso: &str) -> u64 {
    snowmint::time::parse_iso8601(iso).unwrap() as u64
}

/// One expected partition: its suffix and the first and last millisecond
/// of its period.
struct Expect {
    suffix: &'static str,
    first: u64,
    last: u64,
}

impl Expect {
    /// The partition of the period from `start` up to `end` (ISO-8601),
    /// whose last time unit of `unit_ms` begins one unit before `end`.
    fn period(suffix: &'static str, start: &str, end: &str, unit_ms: u64) -> Expect {
        Expect {
            suffix,
            first: ms(start),
            last: ms(end) - unit_ms,
        }
    }
}

/// Rows at each partition's first and last millisecond (its smallest and
/// largest IDs there), with the partition each must land in.
fn boundary_rows(layout: &Layout, parts: &[Expect]) -> Vec<(u64, &'static str)> {
    let mut rows = Vec::new();
    for p in parts {
        for at in [p.first, p.last] {
            rows.push((layout.min_id_at(at).unwrap().get(), p.suffix));
            rows.push((layout.max_id_at(at).unwrap().get(), p.suffix));
        }
    }
    rows
}

/// `snowmint range ... --partition` with its arguments; the DDL.
fn partition_ddl(args: &[&str]) -> String {
    let mut all = vec!["range"];
    all.extend(args);
    let run = run_with(&all, &[]);
    assert_eq!(run.code, Some(0), "{all:?}: {}", run.stderr);
    run.stdout
}

/// The cases both databases run: (arguments, layout, partitions).
fn partition_cases() -> Vec<(Vec<&'static str>, Layout, Vec<Expect>)> {
    let months = vec![
        Expect::period("2024_01", "2024-01-01", "2024-02-01", 1),
        Expect::period("2024_02", "2024-02-01", "2024-03-01", 1),
        Expect::period("2024_03", "2024-03-01", "2024-04-01", 1),
    ];
    // ISO weeks of a 64-bit layout (Instagram's top bit is the sign).
    let weeks = vec![
        Expect::period("2024_w52", "2024-12-23", "2024-12-30", 1),
        Expect::period("2025_w01", "2024-12-30", "2025-01-06", 1),
    ];
    // Days of 10 ms units (Sonyflake): the last unit starts 10 ms early.
    let days = vec![
        Expect::period("2024_02_28", "2024-02-28", "2024-02-29", 10),
        Expect::period("2024_02_29", "2024-02-29", "2024-03-01", 10),
    ];
    // The end of the format: the last month's upper bound is MAXVALUE.
    let end = vec![Expect {
        suffix: "2080_07",
        first: ms("2080-07-01"),
        last: Layout::TWITTER.max_timestamp_ms(),
    }];
    vec![
        (
            vec![
                "--from",
                "2024-01-01T00:00:00Z",
                "--to",
                "2024-04-01T00:00:00Z",
                "--partition",
                "month",
            ],
            Layout::TWITTER,
            months,
        ),
        (
            vec![
                "--from",
                "2024-12-20",
                "--to",
                "2025-01-06",
                "--partition",
                "week",
                "--layout",
                "instagram",
            ],
            Layout::INSTAGRAM,
            weeks,
        ),
        (
            vec![
                "--from",
                "2024-02-28",
                "--to",
                "2024-02-29T12:00:00Z",
                "--partition",
                "day",
                "--layout",
                "sonyflake",
            ],
            Layout::SONYFLAKE,
            days,
        ),
        (
            vec![
                "--from",
                "2080-07-01",
                "--to",
                "2080-07-10T17:30:30.208Z",
                "--partition",
                "month",
            ],
            Layout::TWITTER,
            end,
        ),
    ]
}

/// The table and ID column of partition case `i`: the first case's are
/// words the databases reserve.
fn partition_names(i: usize) -> (String, &'static str) {
    if i == 0 {
        ("user".to_owned(), "order")
    } else {
        (format!("events{i}"), "id")
    }
}

/// [`partition_cases`] as `--sql dialect` DDL, each under its
/// [`partition_names`]: (table, column, DDL, layout, partitions).
fn partition_scripts(dialect: &str) -> Vec<(String, &'static str, String, Layout, Vec<Expect>)> {
    let mut scripts = Vec::new();
    for (i, (mut args, layout, parts)) in partition_cases().into_iter().enumerate() {
        let (table, column) = partition_names(i);
        args.extend(["--sql", dialect, "--table", &table, "--column", column]);
        let ddl = partition_ddl(&args);
        scripts.push((table, column, ddl, layout, parts));
    }
    scripts
}

/// Rows of `partition SEP id`, as (id, partition).
fn routed<'a>(lines: impl Iterator<Item = &'a str>, sep: char) -> Vec<(u64, String)> {
    lines
        .map(|l| {
            let (partition, id) = l.split_once(sep).unwrap();
            (id.parse().unwrap(), partition.to_owned())
        })
        .collect()
}

#[test]
fn postgres_partitions_route_boundary_ids() {
    let Some(pg) = Postgres::start() else { return };
    pg.create_database("t");
    for (table, column, ddl, layout, parts) in partition_scripts("postgres") {
        assert!(
            ddl.contains(&format!("PARTITION BY RANGE (\"{column}\")")),
            "{ddl}"
        );
        let rows = boundary_rows(&layout, &parts);
        let list: Vec<String> = rows.iter().map(|(id, _)| format!("({id})")).collect();
        let out = pg.psql(
            "t",
            &format!(
                "CREATE TABLE \"{table}\" (\"{column}\" bigint NOT NULL, PRIMARY KEY (\"{column}\")) \
                 PARTITION BY RANGE (\"{column}\");\n\
                 {ddl}\n\
                 INSERT INTO \"{table}\" VALUES {};\n\
                 SELECT count(*) FROM pg_inherits WHERE inhparent = '\"{table}\"'::regclass;\n\
                 SELECT tableoid::regclass, \"{column}\" FROM \"{table}\" ORDER BY 2;",
                list.join(", ")
            ),
        );
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some(parts.len().to_string().as_str()),
            "{ddl}"
        );
        let got = routed(lines, '|');
        let mut want: Vec<(u64, String)> = rows
            .iter()
            .map(|(id, s)| (*id, format!("{table}_{s}")))
            .collect();
        want.sort();
        assert_eq!(got, want, "{ddl}");
        // Contiguous and nothing more: an ID just before the first period
        // and (unless the last runs to MAXVALUE) the first of the next
        // period have no partition.
        let before = layout.min_id_at(parts[0].first).unwrap().get() - 1;
        let err = pg
            .try_psql("t", &format!("INSERT INTO \"{table}\" VALUES ({before});"))
            .unwrap_err();
        assert!(err.contains("no partition of relation"), "{err}");
        let last = parts.last().unwrap();
        if let Ok(next) = layout.max_id_at(last.last) {
            if next.get() < MAX_ID {
                let err = pg
                    .try_psql(
                        "t",
                        &format!("INSERT INTO \"{table}\" VALUES ({});", next.get() + 1),
                    )
                    .unwrap_err();
                assert!(err.contains("no partition of relation"), "{err}");
            } else {
                assert!(ddl.contains("TO (MAXVALUE)"), "{ddl}");
            }
        }
    }
}

#[test]
fn mariadb_partitions_route_boundary_ids() {
    let Some(my) = Mariadb::start() else { return };
    my.create_database("t");
    for (table, column, ddl, layout, parts) in partition_scripts("mysql") {
        let mut rows = boundary_rows(&layout, &parts);
        // MySQL's first partition takes what is older.
        let first = layout.min_id_at(parts[0].first).unwrap().get();
        if first > 0 {
            rows.push((first - 1, "before"));
            rows.push((0, "before"));
        }
        let list: Vec<String> = rows.iter().map(|(id, _)| format!("({id})")).collect();
        let mut select: Vec<String> = parts
            .iter()
            .map(|p| {
                format!(
                    "SELECT 'p{0}', `{column}` FROM `{table}` PARTITION (p{0})",
                    p.suffix
                )
            })
            .collect();
        if first > 0 {
            select.push(format!(
                "SELECT 'p_before', `{column}` FROM `{table}` PARTITION (p_before)"
            ));
        }
        let out = my.sql(
            "t",
            &format!(
                "CREATE TABLE `{table}` (`{column}` BIGINT NOT NULL, PRIMARY KEY (`{column}`));\n\
                 {ddl}\n\
                 INSERT INTO `{table}` VALUES {};\n\
                 SELECT * FROM ({}) AS p ORDER BY 2;",
                list.join(", "),
                select.join(" UNION ALL ")
            ),
        );
        let got = routed(out.lines(), '\t');
        let mut want: Vec<(u64, String)> = rows
            .iter()
            .map(|(id, s)| {
                (
                    *id,
                    if *s == "before" {
                        "p_before".into()
                    } else {
                        format!("p{s}")
                    },
                )
            })
            .collect();
        want.sort();
        assert_eq!(got, want, "{ddl}");
        let last = parts.last().unwrap();
        let next = layout.max_id_at(last.last).unwrap().get();
        if next < MAX_ID {
            let err = my
                .try_sql(
                    "t",
                    &format!("INSERT INTO `{table}` VALUES ({});", next + 1),
                )
                .unwrap_err();
            assert!(err.contains("no partition for value"), "{err}");
        } else {
            assert!(ddl.contains("VALUES LESS THAN MAXVALUE"), "{ddl}");
        }
    }
}

/// Runs `snowmint ARGS`, which must be refused with exit status 2, nothing
/// on stdout and one line on stderr.
fn refused(args: &[&str]) -> String {
    let run = run_with(args, &[]);
    assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
    assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
    run.stderr
}

#[test]
fn bad_input_is_refused_naming_the_field() {
    // Each command line (its words split at spaces; SPAN is a span of
    // `range`) with its one error line: all of it, ending in a newline, or
    // how it begins.
    let span = "range --from 2024-01-01 --to 2024-04-01";
    let lines = [
        (
            "sql oracle",
            "error: dialect must be postgres, mysql or sqlite, got \"oracle\"\n",
        ),
        (
            "sql postgres --table events",
            "error: table cannot be used with postgres",
        ),
        (
            "sql sqlite --table events --column snowflake_worker",
            "error: column must not be a column the view adds (snowflake_time, ",
        ),
        (
            "SPAN --partition month --table events",
            "error: sql must be given with --partition: postgres or mysql\n",
        ),
        (
            "SPAN --partition month --sql postgres",
            "error: table must be given with --partition",
        ),
        (
            "SPAN --partition year --sql postgres --table t",
            "error: partition must be day, week or month, got \"year\"\n",
        ),
        (
            "SPAN --partition month --sql sqlite --table t",
            "error: sql must be postgres or mysql (SQLite has no partitions)",
        ),
        (
            "SPAN --partition month --sql postgres --table t\"x",
            "error: table must be a plain SQL identifier",
        ),
        ("SPAN --sql postgres", "error: sql needs --partition"),
        (
            "range --from 2024-01-02 --to 2024-01-31 --partition month --sql postgres --table t",
            "error: to must be after the first month",
        ),
        (
            "range --from 2024-01-01 --partition month --sql postgres --table t",
            "error: to must be given with --partition",
        ),
    ];
    let check = |args: &[&str], want: &str| {
        let e = refused(args);
        if want.ends_with('\n') {
            assert_eq!(e, want);
        } else {
            assert!(e.starts_with(want), "{e}");
        }
    };
    for (line, want) in lines {
        let line = line.replace("SPAN", span);
        check(&line.split(' ').collect::<Vec<_>>(), want);
    }
    // Values with spaces in them.
    check(
        &["sql", "postgres", "--prefix", "x'; DROP TABLE users; --"],
        "error: prefix must be a plain SQL identifier",
    );
    check(
        &["sql", "sqlite", "--table", "events; DROP TABLE users"],
        "error: table must be a plain SQL identifier of 1..=52 characters",
    );
}

/// `snowmint sql coordinator` prints the table `serve --postgres|--mysql`
/// leases from; it loads (twice, changing nothing) in real PostgreSQL and
/// MariaDB, with its 1024 rows and its layout marker, under a name that
/// needs quoting (a reserved word).
#[test]
fn the_coordinator_table_loads_in_postgres_and_mariadb() {
    let (Some(pg), Some(my)) = (Postgres::start(), Mariadb::start()) else {
        return;
    };
    pg.create_database("t");
    my.create_database("t");
    let pg_sql = |sql: &str| pg.psql("t", sql);
    let my_sql = |sql: &str| my.sql("t", sql);
    for table in ["snowmint_identities", "select"] {
        // Each database: the script's dialect, how a script runs there,
        // what reads the rows and the table's comment, and what it reads.
        let databases: [(&str, Script, String, &str); 2] = [
            (
                "postgres",
                &pg_sql,
                format!(
                    "SELECT count(*), count(epoch), min(identity), max(identity), obj_description('\"{table}\"'::regclass, 'pg_class') FROM \"{table}\";"
                ),
                "1024|1024|0|1023|snowmint coordinator table, layout 2",
            ),
            (
                "mysql",
                &my_sql,
                format!(
                    "SELECT COUNT(*), COUNT(epoch), MIN(identity), MAX(identity), (SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 't' AND TABLE_NAME = '{table}') FROM `{table}`;"
                ),
                "1024\t1024\t0\t1023\tsnowmint coordinator table, layout 2",
            ),
        ];
        for (dialect, run, rows, want) in databases {
            let script = crate::support::ok(&["sql", "coordinator", dialect, "--table", table]);
            run(&format!("{script}{script}"));
            assert_eq!(run(&rows).trim(), want, "{table}");
        }
    }
    assert_eq!(
        crate::support::bad(&["sql", "coordinator", "mysql", "--table", "a;b"]),
        "table must be NAME or SCHEMA.NAME, each of letters, digits and _ (not first a \
         digit), 1..=63 characters, got \"a;b\""
    );
}
