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

/// The prefix each layout's functions get: the default for Twitter's,
/// the layout's name for the others (so all can live in one database, and
/// `--prefix` is tested too).
fn prefix(layout: &Layout) -> String {
    match layout.name() {
        "twitter" => "snowflake_".into(),
        name => format!("{name}_"),
    }
}

/// `snowmint sql DIALECT --layout L [--prefix P] [extra]`'s script.
fn script(dialect: &str, layout: &Layout, extra: &[&str]) -> String {
    let p = prefix(layout);
    let mut args = vec!["sql", dialect, "--layout", layout.name()];
    if layout.name() != "twitter" {
        args.extend(["--prefix", &p]);
    }
    args.extend(extra);
    let run = run_with(&args, &[]);
    assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    run.stdout
}

/// The layout's fields below the time, as the functions name them, with
/// their values in `id` (from the core's breakdown).
fn fields(layout: &Layout, id: u64) -> Vec<(String, u64)> {
    layout
        .breakdown(SnowflakeId::new(id).unwrap())
        .segments
        .iter()
        .filter(|s| s.name != "sign" && s.name != "timestamp")
        .map(|s| (s.label.replace(' ', "_"), s.value))
        .collect()
}

/// IDs to check: the edges, then random ones over all 63 bits.
fn ids(layout: &Layout, rng: &mut Rng) -> Vec<u64> {
    let (lo, hi) = (layout.min_timestamp_ms(), layout.max_timestamp_ms());
    let mut out = vec![
        0,
        1,
        MAX_ID,
        MAX_ID - 1,
        layout.max_id_at(lo).unwrap().get(),
        layout.min_id_at(hi).unwrap().get(),
        layout.max_id_at(hi).unwrap().get(),
    ];
    for (_, bits, shift) in field_bits(layout) {
        out.push(((1 << bits) - 1) << shift);
    }
    out.extend((0..RANDOM).map(|_| rng.next() >> 1));
    out
}

/// (name, bits, shift) of each field, most significant first.
fn field_bits(layout: &Layout) -> Vec<(String, u32, u32)> {
    let mut v: Vec<_> = layout
        .breakdown(SnowflakeId::MAX)
        .segments
        .iter()
        .filter(|s| s.name != "sign" && s.name != "timestamp")
        .map(|s| (s.label.replace(' ', "_"), s.bits, s.lsb))
        .collect();
    v.sort_by_key(|f| std::cmp::Reverse(f.2));
    v
}

/// Times to check min_id and max_id at, in microseconds since 1970: the
/// edges of the layout's range (a microsecond inside and outside), then
/// random ones from a second before the epoch to a second after the end.
fn times_us(layout: &Layout, rng: &mut Rng, sub_ms: bool) -> Vec<i64> {
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
    for _ in 0..RANDOM {
        let ms = rng.range(lo - 1000, hi + 1000);
        let us = if sub_ms { rng.range(0, 999) } else { 0 };
        out.push(ms * 1000 + us);
    }
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
fn compositions(layout: &Layout, rng: &mut Rng) -> Vec<(i64, Vec<i64>)> {
    let (lo, hi) = (
        layout.min_timestamp_ms() as i64,
        layout.max_timestamp_ms() as i64,
    );
    let maxes: Vec<i64> = field_bits(layout)
        .iter()
        .map(|(_, bits, _)| (1 << bits) - 1)
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
    for _ in 0..RANDOM {
        let fields = maxes.iter().map(|&m| rng.range(0, m)).collect();
        out.push((rng.range(lo, hi), fields));
    }
    out
}

/// The core's composition, or `None` where it refuses.
fn composed(layout: &Layout, ms: i64, fields: &[i64]) -> Option<u64> {
    let ms = u64::try_from(ms).ok()?;
    let mut parts = [0u64; 3];
    let names = field_bits(layout);
    for ((name, _, _), &v) in names.iter().zip(fields) {
        let v = u64::try_from(v).ok()?;
        // The core's slots: Parts keeps datacenter, worker and sequence.
        let slot = slot_of(layout, name);
        parts[slot] = v;
    }
    layout
        .compose(ms, parts[0], parts[1], parts[2])
        .ok()
        .map(SnowflakeId::get)
}

/// Which of the core's three slots a labelled field fills.
fn slot_of(layout: &Layout, name: &str) -> usize {
    use snowmint::Field;
    [Field::Datacenter, Field::Worker, Field::Sequence]
        .iter()
        .position(|&f| layout.label(f).replace(' ', "_") == name)
        .expect("a field of the layout")
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

/// Checks every function of every preset in one dialect: `run` runs a
/// script and returns its rows.
fn check_functions(db: Db, run: &dyn Fn(&str) -> String) {
    let mut rng = Rng::new();
    let (sep, null) = match db {
        Db::Pg | Db::Lite => ('|', ""),
        Db::My => ('\t', "NULL"),
    };
    for layout in Layout::PRESETS {
        let p = prefix(&layout);
        let name = layout.name();
        let ids = ids(&layout, &mut rng);
        let times = times_us(&layout, &mut rng, db != Db::Lite);
        let parts = compositions(&layout, &mut rng);
        let fields_of = field_bits(&layout);
        let field_cols: Vec<String> = fields_of.iter().map(|(n, _, _)| n.clone()).collect();
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
        let cols: String = field_cols.iter().map(|c| format!(", {c} {int}")).collect();
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
            Db::Pg => script("postgres", &layout, &[]),
            Db::My => script("mysql", &layout, &[]),
            Db::Lite => script("sqlite", &layout, &["--table", &format!("{p}ids")]),
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
        let query = |select: &str, from: &str, function: &str| {
            let sql = match db {
                Db::Lite if from == "ids" => {
                    format!("SELECT n, {p}{function} FROM {p}ids_decoded ORDER BY n;")
                }
                Db::Lite => format!(
                    "SELECT n, {} FROM {p}{from} ORDER BY n;",
                    exprs
                        .get(&format!("{p}{function}"))
                        .unwrap_or_else(|| panic!("{name}: {p}{function} in {loaded}"))
                ),
                _ => format!("{zone}SELECT n, {select} FROM {p}{from} ORDER BY n;"),
            };
            rows(&run(&sql), sep, null)
        };
        let id_at = |n: usize| format!("{name} id {}", ids[n]);
        let time_at = |n: usize| format!("{name} time {}", iso_us(times[n]));
        let parts_at = |n: usize| format!("{name} compose {:?}", parts[n]);

        // time(id): the decoded millisecond, as each database writes it.
        let select = match db {
            Db::Pg => format!(
                "to_char({p}time(id) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
            ),
            _ => format!("{p}time(id)"),
        };
        let want: Vec<_> = ids
            .iter()
            .map(|&id| {
                let t = Iso8601(layout.decode(SnowflakeId::new(id).unwrap()).timestamp_ms as i64)
                    .to_string();
                Some(if db == Db::My {
                    t.replace('T', " ").replace('Z', "")
                } else {
                    t
                })
            })
            .collect();
        agree(
            &format!("{name} {p}time"),
            &query(&select, "ids", "time"),
            &want,
            &id_at,
        );

        let want: Vec<_> = ids
            .iter()
            .map(|&id| {
                Some(
                    layout
                        .decode(SnowflakeId::new(id).unwrap())
                        .timestamp_ms
                        .to_string(),
                )
            })
            .collect();
        let got = query(&format!("{p}unix_ms(id)"), "ids", "unix_ms");
        agree(&format!("{name} {p}unix_ms"), &got, &want, &id_at);

        for (i, field) in field_cols.iter().enumerate() {
            let want: Vec<_> = ids
                .iter()
                .map(|&id| Some(fields(&layout, id)[i].1.to_string()))
                .collect();
            let got = query(&format!("{p}{field}(id)"), "ids", field);
            agree(&format!("{name} {p}{field}"), &got, &want, &id_at);
        }

        for (max, function) in [(false, "min_id"), (true, "max_id")] {
            let want: Vec<_> = times
                .iter()
                .map(|&us| {
                    let (lo, hi) = bounds(&layout, us);
                    (if max { hi } else { lo }).map(|v| v.to_string())
                })
                .collect();
            let got = query(&format!("{p}{function}(ts)"), "times", function);
            agree(&format!("{name} {p}{function}"), &got, &want, &time_at);
        }

        let want: Vec<_> = parts
            .iter()
            .map(|(ms, f)| composed(&layout, *ms, f).map(|v| v.to_string()))
            .collect();
        let args = std::iter::once("unix_ms".to_owned())
            .chain(field_cols.iter().cloned())
            .collect::<Vec<_>>()
            .join(", ");
        let got = query(&format!("{p}compose({args})"), "parts", "compose");
        agree(&format!("{name} {p}compose"), &got, &want, &parts_at);
    }
}

#[test]
fn postgres_functions_agree_with_the_core() {
    let Some(pg) = Postgres::start() else { return };
    pg.create_database("t");
    check_functions(Db::Pg, &|sql| pg.psql("t", sql));
    // Immutable, so the planner folds a call on constants into the index
    // condition: the range scan uses the primary key.
    let volatility = pg.psql(
        "t",
        "SELECT DISTINCT provolatile FROM pg_proc WHERE proname LIKE 'snowflake\\_%';",
    );
    assert_eq!(volatility.trim(), "i");
    let plan = pg.psql(
        "t",
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
    // And it is the type the contract names.
    let types = pg.psql(
        "t",
        "SELECT pg_typeof(snowflake_time(0)), pg_typeof(snowflake_worker(0));",
    );
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
}

#[test]
fn sqlite_expressions_agree_with_the_core() {
    let Some(lite) = Sqlite::open() else { return };
    check_functions(Db::Lite, &|sql| lite.sql(sql));
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
        Expect {
            suffix: "2024_01",
            first: ms("2024-01-01"),
            last: ms("2024-02-01") - 1,
        },
        Expect {
            suffix: "2024_02",
            first: ms("2024-02-01"),
            last: ms("2024-03-01") - 1,
        },
        Expect {
            suffix: "2024_03",
            first: ms("2024-03-01"),
            last: ms("2024-04-01") - 1,
        },
    ];
    // ISO weeks of a 64-bit layout (Instagram's top bit is the sign).
    let weeks = vec![
        Expect {
            suffix: "2024_w52",
            first: ms("2024-12-23"),
            last: ms("2024-12-30") - 1,
        },
        Expect {
            suffix: "2025_w01",
            first: ms("2024-12-30"),
            last: ms("2025-01-06") - 1,
        },
    ];
    // Days of 10 ms units (Sonyflake): the last unit starts 10 ms early.
    let days = vec![
        Expect {
            suffix: "2024_02_28",
            first: ms("2024-02-28"),
            last: ms("2024-02-29") - 10,
        },
        Expect {
            suffix: "2024_02_29",
            first: ms("2024-02-29"),
            last: ms("2024-03-01") - 10,
        },
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

#[test]
fn postgres_partitions_route_boundary_ids() {
    let Some(pg) = Postgres::start() else { return };
    pg.create_database("t");
    for (i, (args, layout, parts)) in partition_cases().into_iter().enumerate() {
        let table = format!("events{i}");
        let mut args = args.clone();
        args.extend(["--sql", "postgres", "--table", &table]);
        let ddl = partition_ddl(&args);
        assert!(ddl.contains("PARTITION BY RANGE (id)"), "{ddl}");
        let rows = boundary_rows(&layout, &parts);
        let list: Vec<String> = rows.iter().map(|(id, _)| format!("({id})")).collect();
        let out = pg.psql(
            "t",
            &format!(
                "CREATE TABLE {table} (id bigint NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id);\n\
                 {ddl}\n\
                 INSERT INTO {table} VALUES {};\n\
                 SELECT count(*) FROM pg_inherits WHERE inhparent = '{table}'::regclass;\n\
                 SELECT tableoid::regclass, id FROM {table} ORDER BY id;",
                list.join(", ")
            ),
        );
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some(parts.len().to_string().as_str()),
            "{ddl}"
        );
        let got: Vec<(u64, String)> = lines
            .map(|l| {
                let (t, id) = l.split_once('|').unwrap();
                (id.parse().unwrap(), t.to_owned())
            })
            .collect();
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
            .try_psql("t", &format!("INSERT INTO {table} VALUES ({before});"))
            .unwrap_err();
        assert!(err.contains("no partition of relation"), "{err}");
        let last = parts.last().unwrap();
        if let Ok(next) = layout.max_id_at(last.last) {
            if next.get() < MAX_ID {
                let err = pg
                    .try_psql(
                        "t",
                        &format!("INSERT INTO {table} VALUES ({});", next.get() + 1),
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
    for (i, (args, layout, parts)) in partition_cases().into_iter().enumerate() {
        let table = format!("events{i}");
        let mut args = args.clone();
        args.extend(["--sql", "mysql", "--table", &table]);
        let ddl = partition_ddl(&args);
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
            .map(|p| format!("SELECT 'p{0}', id FROM {table} PARTITION (p{0})", p.suffix))
            .collect();
        if first > 0 {
            select.push(format!(
                "SELECT 'p_before', id FROM {table} PARTITION (p_before)"
            ));
        }
        let out = my.sql(
            "t",
            &format!(
                "CREATE TABLE {table} (id BIGINT NOT NULL, PRIMARY KEY (id));\n\
                 {ddl}\n\
                 INSERT INTO {table} VALUES {};\n\
                 SELECT * FROM ({}) AS p ORDER BY id;",
                list.join(", "),
                select.join(" UNION ALL ")
            ),
        );
        let got: Vec<(u64, String)> = out
            .lines()
            .map(|l| {
                let (p, id) = l.split_once('\t').unwrap();
                (id.parse().unwrap(), p.to_owned())
            })
            .collect();
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
                .try_sql("t", &format!("INSERT INTO {table} VALUES ({});", next + 1))
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
    let e = refused(&["sql", "oracle"]);
    assert_eq!(
        e,
        "error: dialect must be postgres, mysql or sqlite, got \"oracle\"\n"
    );
    let e = refused(&["sql", "postgres", "--prefix", "x'; DROP TABLE users; --"]);
    assert!(
        e.starts_with("error: prefix must be a plain SQL identifier"),
        "{e}"
    );
    let e = refused(&["sql", "postgres", "--table", "events"]);
    assert!(
        e.starts_with("error: table cannot be used with postgres"),
        "{e}"
    );
    let e = refused(&["sql", "sqlite", "--table", "events; DROP TABLE users"]);
    assert!(
        e.starts_with("error: table must be a plain SQL identifier of 1..=52 characters"),
        "{e}"
    );
    let span = ["range", "--from", "2024-01-01", "--to", "2024-04-01"];
    let with = |extra: &[&'static str]| {
        let mut a = span.to_vec();
        a.extend(extra);
        a
    };
    let e = refused(&with(&["--partition", "month", "--table", "events"]));
    assert_eq!(
        e,
        "error: sql must be given with --partition: postgres or mysql\n"
    );
    let e = refused(&with(&["--partition", "month", "--sql", "postgres"]));
    assert!(
        e.starts_with("error: table must be given with --partition"),
        "{e}"
    );
    let e = refused(&with(&[
        "--partition",
        "year",
        "--sql",
        "postgres",
        "--table",
        "t",
    ]));
    assert_eq!(
        e,
        "error: partition must be day, week or month, got \"year\"\n"
    );
    let e = refused(&with(&[
        "--partition",
        "month",
        "--sql",
        "sqlite",
        "--table",
        "t",
    ]));
    assert!(
        e.starts_with("error: sql must be postgres or mysql (SQLite has no partitions)"),
        "{e}"
    );
    let e = refused(&with(&[
        "--partition",
        "month",
        "--sql",
        "postgres",
        "--table",
        "t\"x",
    ]));
    assert!(
        e.starts_with("error: table must be a plain SQL identifier"),
        "{e}"
    );
    let e = refused(&with(&["--sql", "postgres"]));
    assert!(e.starts_with("error: sql needs --partition"), "{e}");
    let e = refused(&[
        "range",
        "--from",
        "2024-01-02",
        "--to",
        "2024-01-31",
        "--partition",
        "month",
        "--sql",
        "postgres",
        "--table",
        "t",
    ]);
    assert!(
        e.starts_with("error: to must be after the first month"),
        "{e}"
    );
    let e = refused(&[
        "range",
        "--from",
        "2024-01-01",
        "--partition",
        "month",
        "--sql",
        "postgres",
        "--table",
        "t",
    ]);
    assert!(
        e.starts_with("error: to must be given with --partition"),
        "{e}"
    );
}
