//! One property across the four surfaces: random inputs, good and bad, sent
//! as they are through the library, `snowmint` (the CLI), the JSON API and
//! the explorer page of one `snowmint serve` on loopback, must come out as
//! the same value on every surface, or as an error naming the same field on
//! every surface.
//!
//! The inputs: compose (a time as Unix ms, ISO-8601 or `now`, and the
//! layout's fields, as Twitter's flags or by name; fields left out, given
//! twice or unknown) and decode (an ID in decimal, hex or base32, read in the
//! form named or another, out of range, too wide or not a number), each in
//! Twitter's layout, a preset by name or a spec (good and bad). The library
//! is the reference; what each surface answered is read the way a user reads
//! it:
//!
//! - library: the breakdown's JSON object, or the error's `field_name()`;
//! - CLI: stdout's JSON object (exit 0), or the field stderr's one line names
//!   (exit 2, nothing on stdout);
//! - API: the JSON object (200), or the error body's `field` (400);
//! - page: the ID, its time and each segment's name and value as the result
//!   panel shows them, or the field whose inline error is shown (a
//!   parameter refused as such: the one the alert names).
//!
//! Two spellings of "not given" are one input: an HTTP parameter left out
//! or sent empty (what a form submits for an empty input) is a flag left out
//! on the CLI. An empty flag (`--timestamp ''`, `--from ''`) is refused
//! instead, as a value typed empty: it is never sent.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher, RandomState};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Value, json};
use snowmint::{Encoding, Field, FieldName, Layout, SnowflakeId};

use crate::support::{Serve, run};

/// Cases per run: each is a process spawn and two requests, 10 to 20 ms.
const CASES: u32 = 128;

/// Fields of custom layouts. None is a parameter of the page's own
/// (`page::RESERVED`: `id`, `from`, `layout`, `lang`, ...): the page's
/// compose form cannot hold such a field, and says so naming `layout`
/// rather than the field, by design (the query is the form's).
const NAMES: [&str; 9] = [
    "worker",
    "datacenter",
    "sequence",
    "process",
    "increment",
    "machine",
    "shard",
    "node",
    "step_2",
];

/// Names that are no field of a layout they are sent to (or are, by
/// chance): other layouts' fields, a capital, a dash, one longer than the
/// 40 characters error messages repeat.
const STRANGERS: [&str; 8] = [
    "process",
    "datacenter",
    "worker",
    "machine",
    "Worker",
    "x-y",
    "node9",
    "a_name_longer_than_forty_characters_of_any_message",
];

/// What one surface made of a case.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// The ID's breakdown: the contract's JSON object (the page: its ID,
    /// time and each segment's name and value).
    Value(Value),
    /// Refused, naming this field.
    Refused(String),
}

/// One case, as every surface is given it.
#[derive(Debug, Clone)]
enum Case {
    Compose(Compose),
    Decode(Decode),
}

#[derive(Debug, Clone)]
struct Compose {
    /// `--layout` / `layout=`; `None`: not given.
    layout: Option<String>,
    /// `--timestamp` / `timestamp=`; `None`: not given (now).
    timestamp: Option<String>,
    /// The fields by name, in the order given.
    fields: Vec<(String, String)>,
    /// The CLI gives them as `--datacenter` etc. (Twitter's layout), else
    /// as `--field NAME=VALUE`.
    flags: bool,
    /// HTTP sends what is not given as an empty parameter.
    empty: bool,
    /// A field of the layout is left out. The page's form fills such a
    /// field with 0 (a first visit shows an ID of fields 0, now), so the
    /// page is not asked; every other surface refuses naming the field.
    left_out: bool,
}

#[derive(Debug, Clone)]
struct Decode {
    /// The ID's text. Never `-`, which is the CLI's "read standard input".
    id: String,
    /// `--from` / `from=`; `None`: not given (decimal).
    from: Option<String>,
    layout: Option<String>,
    empty: bool,
}

/// Records what the cases covered, for the summary and for the check that
/// the property saw both values and refusals.
#[derive(Default)]
struct Tally {
    values: BTreeMap<&'static str, u32>,
    refused: BTreeMap<String, u32>,
    /// Cases of several faults whose surfaces named different ones.
    orders: Vec<String>,
}

thread_local! {
    static TALLY: RefCell<Tally> = RefCell::default();
}

#[test]
fn every_surface_gives_the_same_value_or_names_the_same_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = Serve::start(&[], Some(dir.path()));
    let started = std::time::Instant::now();
    // A fresh seed each run, printed so that a failure can be replayed
    // (PROPTEST_RNG_SEED=N); PROPTEST_CASES runs more cases.
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| RandomState::new().build_hasher().finish());
    let cases = match std::env::var_os("PROPTEST_CASES") {
        Some(_) => Config::default().cases,
        None => CASES,
    };
    eprintln!("surfaces: seed {seed} (PROPTEST_RNG_SEED={seed} replays it)");
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        // A failing case is printed, shrunk, with the seed above.
        failure_persistence: None,
        max_shrink_iters: 256,
        ..Config::default()
    });
    let outcome = runner.run(&case(), |case| {
        let kind = match &case {
            Case::Compose(_) => "compose",
            Case::Decode(_) => "decode",
        };
        let seen = check(&server, &case)?;
        TALLY.with(|t| {
            let mut t = t.borrow_mut();
            match seen {
                Seen::Value(_) => *t.values.entry(kind).or_default() += 1,
                Seen::Refused(field) => {
                    *t.refused.entry(format!("{kind} {field}")).or_default() += 1
                }
            }
        });
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}\n(seed {seed}: PROPTEST_RNG_SEED={seed} replays it)");
    }
    TALLY.with(|t| {
        let t = t.borrow();
        eprintln!(
            "surfaces: {cases} cases in {:.1?}: values {:?}, refusals by field {:?}",
            started.elapsed(),
            t.values,
            t.refused
        );
        eprintln!(
            "surfaces: {} cases of several faults named different ones (each surface's own order), such as:",
            t.orders.len()
        );
        for answers in t.orders.iter().take(5) {
            eprintln!("surfaces:   {answers}");
        }
        // Both outcomes of both commands, or the property proved little.
        for kind in ["compose", "decode"] {
            assert!(
                t.values.get(kind).is_some_and(|&n| n > 0),
                "no {kind} value"
            );
            assert!(
                t.refused.keys().any(|k| k.starts_with(kind)),
                "no {kind} refusal"
            );
        }
    });
}

/// Sends `case` through every surface and checks what they answered
/// against the library's answer and the case's faults (see [`faults`]):
/// with none, the same value everywhere; with one, every surface refuses
/// naming it; with more, every surface refuses naming one of them (which
/// one comes first is each surface's own order, see [`faults`]). Returns
/// the library's answer.
fn check(server: &Serve, case: &Case) -> Result<Seen, TestCaseError> {
    let before = snowmint::unix_now_ms();
    let faults = faults(case, before);
    let (library, layout) = library(case, before);
    let cli = cli(case)?;
    let api = api(server, case)?;
    let page = match case {
        Case::Compose(c) if c.left_out => None,
        _ => Some(page(server, case)?),
    };
    let after = snowmint::unix_now_ms();
    let mut answers = vec![("library", library.clone()), ("CLI", cli)];
    answers.extend(api.map(|a| ("API", a)));
    answers.extend(page.map(|p| ("page", p)));
    if faults.len() > 1 {
        for (surface, seen) in &answers {
            let named = match seen {
                Seen::Refused(field) => Some(field),
                Seen::Value(_) => None,
            };
            prop_assert!(
                named.is_some_and(|f| faults.iter().any(|fault| *f == as_named(surface, fault))),
                "the {} answered {:?}, not a refusal naming one of the faults {:?} of {:?}",
                surface,
                seen,
                faults,
                case
            );
        }
        let named: BTreeSet<String> = answers
            .iter()
            .map(|(_, seen)| match seen {
                Seen::Refused(field) => as_named("CLI", field),
                Seen::Value(_) => String::new(),
            })
            .collect();
        if named.len() > 1 {
            TALLY.with(|t| t.borrow_mut().orders.push(format!("{answers:?}")));
        }
        return Ok(library);
    }
    if let Some(fault) = faults.first() {
        for (surface, seen) in &answers {
            let expected = Seen::Refused(as_named(surface, fault));
            prop_assert_eq!(seen, &expected, "the {} differs for {:?}", surface, case);
        }
        return Ok(library);
    }
    // `now` is each surface's own moment: a value is compared without its
    // time, which must lie between the library's and the end of the case,
    // and must be the breakdown of its own ID.
    let now = matches!(case, Case::Compose(c) if c.timestamp.as_deref()
        .is_none_or(|t| t.trim().eq_ignore_ascii_case("now")));
    let Seen::Value(reference) = &library else {
        return Err(TestCaseError::fail(format!(
            "the library refused {case:?}, which has no fault: {library:?}"
        )));
    };
    let first = reference["timestamp_ms"].as_u64().unwrap_or_default();
    for (surface, seen) in &answers {
        let Seen::Value(v) = seen else {
            return Err(TestCaseError::fail(format!(
                "the {surface} refused {case:?}, which has no fault: {seen:?}"
            )));
        };
        // The page shows the ID, its time and the segments' values.
        let shown: fn(&Value) -> Value = if *surface == "page" {
            as_page_shows
        } else {
            Value::clone
        };
        if !now {
            prop_assert_eq!(
                v,
                &shown(reference),
                "the {} differs for {:?}",
                surface,
                case
            );
            continue;
        }
        let layout = layout.expect("a value was read in a layout");
        let id: SnowflakeId = v["id"].as_str().unwrap_or("").parse().map_err(|e| {
            TestCaseError::fail(format!("{case:?}: the {surface}'s ID is none: {v} ({e})"))
        })?;
        let own = serde_json::to_value(layout.breakdown(id)).expect("a breakdown is JSON");
        prop_assert_eq!(
            v,
            &shown(&own),
            "the {}'s answer to {:?} is not its ID's",
            surface,
            case
        );
        let ms = own["timestamp_ms"].as_u64().unwrap_or_default();
        prop_assert!(
            first <= ms && ms <= after,
            "the {}'s now is {}, not in {}..={}: {:?}",
            surface,
            ms,
            first,
            after,
            case
        );
        prop_assert_eq!(
            without_time(v),
            without_time(&shown(reference)),
            "the {} differs for {:?}",
            surface,
            case
        );
    }
    Ok(library)
}

/// How `surface` names `field`: the CLI has only its message, which
/// shortens a name past 40 characters as every message shortens what it
/// repeats; the others give the name whole.
fn as_named(surface: &str, field: &str) -> String {
    if surface != "CLI" || field.chars().count() <= 40 {
        return field.to_owned();
    }
    field.chars().take(40).chain(['…']).collect()
}

/// What is wrong with `case`, each part judged by the library on its own:
/// the layout; a name given twice; for a layout that is one, the time, a
/// name it does not have, a value out of its field's range and a field left
/// out; for a decode, `from`, the layout and the ID (read in the form
/// `from` names, decimal if none). Every surface checks them in an order
/// of its own (the CLI's flags before the time, the API's unknown
/// parameters before the layout, the page's repeated parameters before
/// anything), so of several faults each may name another one.
fn faults(case: &Case, now_ms: u64) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let parse = |text: &Option<String>| match text {
        None => Ok(Layout::TWITTER),
        Some(text) => Layout::parse(text),
    };
    match case {
        Case::Compose(c) => {
            let given = |name: &str| c.fields.iter().filter(|(n, _)| n == name).count();
            for (name, _) in &c.fields {
                if given(name) > 1 {
                    out.insert(name.clone());
                }
            }
            let Ok(layout) = parse(&c.layout) else {
                out.insert("layout".to_owned());
                // Refused as no layout's field before a layout is read.
                for (name, _) in c.fields.iter().filter(|(n, _)| FieldName::new(n).is_none()) {
                    out.insert(name.clone());
                }
                return out;
            };
            let time = c.timestamp.as_deref().unwrap_or("now");
            if layout.parse_timestamp(time, now_ms).is_err() {
                out.insert("timestamp".to_owned());
            }
            for (name, value) in &c.fields {
                let fits = layout
                    .node_fields()
                    .find(|f| f.name() == name)
                    .is_some_and(|f| {
                        snowmint::parse_in_range(Field::Id, value, 0, f.max()).is_ok()
                    });
                if !fits {
                    out.insert(name.clone());
                }
            }
            for f in layout.node_fields() {
                if given(f.name()) == 0 {
                    out.insert(f.name().to_owned());
                }
            }
        }
        Case::Decode(d) => {
            let encoding = match d.from.as_deref().map(str::parse::<Encoding>) {
                None => Encoding::Decimal,
                Some(Ok(encoding)) => encoding,
                Some(Err(_)) => {
                    out.insert("from".to_owned());
                    Encoding::Decimal
                }
            };
            let layout = parse(&d.layout).unwrap_or_else(|_| {
                out.insert("layout".to_owned());
                Layout::TWITTER
            });
            if encoding
                .parse(&d.id)
                .and_then(|id| layout.check_id(id))
                .is_err()
            {
                out.insert("id".to_owned());
            }
        }
    }
    out
}

// ---------------------------------------------------------------- surfaces

/// The library: the reference. Also the layout the case reads in, when it
/// is one.
fn library(case: &Case, now_ms: u64) -> (Seen, Option<Layout>) {
    let layout = |text: &Option<String>| match text {
        None => Ok(Layout::TWITTER),
        Some(text) => Layout::parse(text),
    };
    let refused = |e: snowmint::Error| Seen::Refused(e.field_name().to_owned());
    match case {
        Case::Compose(c) => {
            let layout = match layout(&c.layout) {
                Ok(layout) => layout,
                Err(e) => return (refused(e), None),
            };
            let pairs: Vec<(&str, &str)> = c
                .fields
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            let id = layout
                .parse_timestamp(c.timestamp.as_deref().unwrap_or("now"), now_ms)
                .and_then(|t| layout.parse_fields(t, &pairs));
            (
                breakdown(id.map(|id| (layout, id))).unwrap_or_else(refused),
                Some(layout),
            )
        }
        Case::Decode(d) => {
            let Ok(encoding) = d.from.as_deref().unwrap_or("decimal").parse::<Encoding>() else {
                return (Seen::Refused("from".to_owned()), None);
            };
            let layout = match layout(&d.layout) {
                Ok(layout) => layout,
                Err(e) => return (refused(e), None),
            };
            let id = encoding.parse(&d.id).and_then(|id| layout.check_id(id));
            (
                breakdown(id.map(|id| (layout, id))).unwrap_or_else(refused),
                Some(layout),
            )
        }
    }
}

fn breakdown(
    read: Result<(Layout, SnowflakeId), snowmint::Error>,
) -> Result<Seen, snowmint::Error> {
    let (layout, id) = read?;
    Ok(Seen::Value(
        serde_json::to_value(layout.breakdown(id)).expect("a breakdown is JSON"),
    ))
}

/// `snowmint compose|decode ... --json`, every value as `--flag=VALUE` so
/// that one starting with `-` stays a value.
fn cli(case: &Case) -> Result<Seen, TestCaseError> {
    let mut args: Vec<String> = Vec::new();
    match case {
        Case::Compose(c) => {
            args.extend(["compose".into(), "--json".into()]);
            args.extend(c.layout.iter().map(|l| format!("--layout={l}")));
            args.extend(c.timestamp.iter().map(|t| format!("--timestamp={t}")));
            for (name, value) in &c.fields {
                args.push(if c.flags {
                    format!("--{name}={value}")
                } else {
                    format!("--field={name}={value}")
                });
            }
        }
        Case::Decode(d) => {
            args.extend(["decode".into(), "--json".into()]);
            args.extend(d.from.iter().map(|f| format!("--from={f}")));
            args.extend(d.layout.iter().map(|l| format!("--layout={l}")));
            args.extend(["--".into(), d.id.clone()]);
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&args);
    match r.code {
        Some(0) => {
            prop_assert_eq!(&r.stderr, "", "{:?} wrote to stderr", args);
            serde_json::from_str(&r.stdout)
                .map(Seen::Value)
                .map_err(|e| TestCaseError::fail(format!("{args:?}: not JSON ({e}): {}", r.stdout)))
        }
        Some(2) => {
            prop_assert_eq!(&r.stdout, "", "{:?} refused but wrote to stdout", args);
            prop_assert_eq!(r.stderr.lines().count(), 1, "{:?}: {:?}", args, r.stderr);
            let message = r.stderr.trim_end().strip_prefix("error: ").ok_or_else(|| {
                TestCaseError::fail(format!("{args:?}: no `error: ` in {:?}", r.stderr))
            })?;
            Ok(Seen::Refused(cli_field(message)))
        }
        code => Err(TestCaseError::fail(format!(
            "{args:?}: exit {code:?}, stderr {:?}",
            r.stderr
        ))),
    }
}

/// The field a CLI error line names: the flag clap names (`invalid value
/// 'x' for '--from <FORM>'`, `the argument '--worker <N>' cannot be used
/// multiple times`, `missing --worker <N> (0..=31)`), `layout` for an
/// invalid layout, else the word the core's message starts with
/// (`worker must be 0..=31, got 32`, `process is missing: ...`).
fn cli_field(message: &str) -> String {
    let name_at = |rest: &str| -> String {
        rest.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect()
    };
    if message.starts_with("invalid layout: ") {
        return "layout".to_owned();
    }
    if let Some(rest) = message.strip_prefix("missing --") {
        return name_at(rest);
    }
    if (message.starts_with("invalid value '") || message.starts_with("the argument '--"))
        && let Some(at) = message.rfind("'--")
    {
        return name_at(&message[at + 3..]);
    }
    message.split(' ').next().unwrap_or_default().to_owned()
}

/// The parameters of an HTTP request for `case`, in the order the CLI has
/// them; what is not given is left out, or sent empty.
fn params(case: &Case) -> Vec<(&str, &str)> {
    fn put<'a>(
        out: &mut Vec<(&'a str, &'a str)>,
        name: &'a str,
        v: &'a Option<String>,
        empty: bool,
    ) {
        match v {
            Some(v) => out.push((name, v)),
            None if empty => out.push((name, "")),
            None => {}
        }
    }
    let mut out = Vec::new();
    match case {
        Case::Compose(c) => {
            put(&mut out, "layout", &c.layout, c.empty);
            put(&mut out, "timestamp", &c.timestamp, c.empty);
            out.extend(c.fields.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        }
        Case::Decode(d) => {
            put(&mut out, "from", &d.from, d.empty);
            put(&mut out, "layout", &d.layout, d.empty);
        }
    }
    out
}

fn query(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes every byte but `[A-Za-z0-9_~-]` (so a `.` or `/` in a
/// path segment is the segment's own).
fn escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'~' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `GET /api/v1/compose?...` or `GET /api/v1/decode/{id}?...`; `None` for
/// an empty ID, which leaves the route without its path segment (a 404 by
/// the contract, `/api/v1/decode/`), so the API is not asked for it.
fn api(server: &Serve, case: &Case) -> Result<Option<Seen>, TestCaseError> {
    let q = query(&params(case));
    let path = match case {
        Case::Compose(_) => format!("/api/v1/compose?{q}"),
        Case::Decode(d) if d.id.is_empty() => {
            let r = server.http("GET", &format!("/api/v1/decode/?{q}"));
            prop_assert_eq!(r.status, 404, "{}", r.body);
            return Ok(None);
        }
        Case::Decode(d) => format!("/api/v1/decode/{}?{q}", escape(&d.id)),
    };
    let r = server.http("GET", &path);
    let body: Value = serde_json::from_str(&r.body).map_err(|e| {
        TestCaseError::fail(format!("{path}: {} not JSON ({e}): {}", r.status, r.body))
    })?;
    match r.status {
        200 => Ok(Some(Seen::Value(body))),
        400 => match body["field"].as_str() {
            Some(field) => Ok(Some(Seen::Refused(field.to_owned()))),
            None => Err(TestCaseError::fail(format!(
                "{path}: an error naming no field: {body}"
            ))),
        },
        status => Err(TestCaseError::fail(format!("{path}: {status} {body}"))),
    }
}

/// `GET /?...`: the result panel's ID, or the field whose error is shown.
fn page(server: &Serve, case: &Case) -> Result<Seen, TestCaseError> {
    let mut pairs = params(case);
    if let Case::Decode(d) = case {
        pairs.insert(0, ("id", d.id.as_str()));
    }
    let path = format!("/?{}", query(&pairs));
    let r = server.http("GET", &path);
    prop_assert!(
        r.status == 200 || r.status == 400,
        "{}: {} {}",
        path,
        r.status,
        r.body
    );
    page_seen(&r.body).map_err(|e| TestCaseError::fail(format!("{path}: {e}")))
}

/// What the page shows: the ID with its time and segments, or the fields
/// of its visible errors (which must be one field).
fn page_seen(html: &str) -> Result<Seen, String> {
    // The ID, its time and its segments are the result panel's.
    let result = between(html, r#"id="result""#, "</section>").unwrap_or_default();
    let id = between(&result, r#"<output id="id-value" class="id">"#, "</output>");
    let mut fields: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(r#"<p class="error" id=""#) {
        rest = &rest[at..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        rest = &rest[tag.len()..];
        if tag.contains(" hidden") {
            continue;
        }
        let id = between(tag, r#"id=""#, "\"").unwrap_or_default();
        let field = match id.strip_suffix("-error") {
            Some("query") => unescape(&between(tag, r#"data-param=""#, "\"").unwrap_or_default()),
            Some("layout" | "compose-layout" | "range-layout") => "layout".to_owned(),
            Some(name) => name.to_owned(),
            None => return Err(format!("an error paragraph {tag:?}")),
        };
        fields.push(field);
    }
    fields.dedup();
    match (id, fields.as_slice()) {
        (Some(id), []) => {
            let time = between(&result, r#"<dd id="time-value">"#, "</dd>").unwrap_or_default();
            let mut segments = Vec::new();
            let mut rest = result.as_str();
            while let Some(at) = rest.find(r#"data-segment=""#) {
                rest = &rest[at + r#"data-segment=""#.len()..];
                let name = rest[..rest.find('"').unwrap_or(0)].to_owned();
                let value = between(rest, r#"<b class="seg-value">"#, "</b>")
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| format!("segment {name} has no value"))?;
                segments.push(json!({"name": name, "value": value}));
            }
            Ok(Seen::Value(
                json!({"id": id, "time": time, "segments": segments}),
            ))
        }
        (None, [field]) => Ok(Seen::Refused(field.clone())),
        (id, fields) => Err(format!(
            "neither one ID nor one field's error: {id:?}, {fields:?}"
        )),
    }
}

fn between(text: &str, start: &str, end: &str) -> Option<String> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(text[from..from + len].to_owned())
}

/// The entities maud writes in an attribute.
fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The library's object as the page shows it.
fn as_page_shows(v: &Value) -> Value {
    let segments: Vec<Value> = v["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| json!({"name": s["name"], "value": s["value"]}))
        .collect();
    json!({"id": v["id"], "time": v["time"], "segments": segments})
}

/// An object without what depends on the moment it was made: for `now`.
fn without_time(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        for key in ["id", "timestamp_ms", "delta_ms", "time", "binary"] {
            o.remove(key);
        }
    }
    if let Some(segments) = v["segments"].as_array_mut() {
        for s in segments.iter_mut().filter(|s| s["name"] == "timestamp") {
            if let Some(o) = s.as_object_mut() {
                o.remove("value");
                o.remove("binary");
            }
        }
    }
    v
}

// -------------------------------------------------------------- generators

/// A layout as given: not at all, a preset's name, a preset's spec, a spec
/// of our own (mostly valid), or text that is no layout.
fn layout_text() -> impl Strategy<Value = Option<String>> {
    let preset = prop_oneof![
        Just("twitter"),
        Just("discord"),
        Just("instagram"),
        Just("sonyflake"),
        Just("mastodon"),
        Just("Discord"),
        Just(" twitter "),
    ]
    .prop_map(str::to_owned);
    let preset_spec = (0..Layout::PRESETS.len()).prop_map(|i| Layout::PRESETS[i].spec());
    let bad = prop_oneof![
        Just("flickr"),
        Just(" "),
        Just("custom"),
        Just("epoch=0"),
        Just("fields=timestamp:41"),
        Just("epoch=0;fields=timestamp:41,worker:10,sequence:14"),
        Just("epoch=0;unit=1s;fields=timestamp:50"),
        Just("epoch=0;fields=worker:5,timestamp:40"),
    ]
    .prop_map(str::to_owned);
    prop_oneof![
        4 => Just(None),
        3 => preset.prop_map(Some),
        1 => preset_spec.prop_map(Some),
        6 => spec().prop_map(Some),
        1 => bad.prop_map(Some),
    ]
}

/// `epoch=...;unit=...;fields=timestamp:N,...`, mostly valid: a bad epoch
/// or unit now and then, and names or widths that cannot be (two fields of
/// one name, widths past 64 bits, a time past 9999) by chance.
fn spec() -> impl Strategy<Value = String> {
    let epoch = prop_oneof![
        6 => (0u64..=1_700_000_000_000).prop_map(|v| v.to_string()),
        1 => Just("2020-01-01".to_owned()),
        1 => Just("2015-01-01T00:00:00Z".to_owned()),
        1 => Just("1288834974657".to_owned()),
        1 => Just("-5".to_owned()),
        1 => Just("soon".to_owned()),
    ];
    let unit = prop_oneof![
        6 => Just(None),
        2 => Just(Some("1ms")),
        2 => Just(Some("10ms")),
        2 => Just(Some("1s")),
        1 => Just(Some("3ms")),
        1 => Just(Some("0ms")),
        1 => Just(Some("ms")),
    ];
    let fields = proptest::collection::vec((0..NAMES.len(), 1u32..=12), 0..=3);
    (epoch, unit, 28u32..=44, fields).prop_map(|(epoch, unit, bits, fields)| {
        let mut spec = format!("epoch={epoch};");
        if let Some(unit) = unit {
            spec.push_str(&format!("unit={unit};"));
        }
        spec.push_str(&format!("fields=timestamp:{bits}"));
        for (name, bits) in fields {
            spec.push_str(&format!(",{}:{bits}", NAMES[name]));
        }
        spec
    })
}

/// A field's value as typed: in range (sometimes with spaces, a sign or
/// leading zeros), the largest, one past it, negative, too wide for any
/// integer, empty, or not a number.
#[derive(Debug, Clone)]
enum ValuePick {
    In(u64),
    Padded(u64, u8),
    Max,
    PastMax,
    Negative(u16),
    Huge,
    Empty,
    Junk(String),
}

fn value_pick() -> impl Strategy<Value = ValuePick> {
    prop_oneof![
        40 => any::<u64>().prop_map(ValuePick::In),
        2 => (any::<u64>(), 0u8..4).prop_map(|(v, s)| ValuePick::Padded(v, s)),
        2 => Just(ValuePick::Max),
        2 => Just(ValuePick::PastMax),
        1 => any::<u16>().prop_map(ValuePick::Negative),
        1 => Just(ValuePick::Huge),
        1 => Just(ValuePick::Empty),
        1 => junk().prop_map(ValuePick::Junk),
    ]
}

impl ValuePick {
    fn text(&self, max: u64) -> String {
        let within = |v: u64| if max == u64::MAX { v } else { v % (max + 1) };
        match self {
            ValuePick::In(v) => within(*v).to_string(),
            ValuePick::Padded(v, style) => {
                let v = within(*v);
                match style {
                    0 => format!(" {v} "),
                    1 => format!("+{v}"),
                    2 => format!("00{v}"),
                    _ => format!("{v}\t"),
                }
            }
            ValuePick::Max => max.to_string(),
            ValuePick::PastMax => (u128::from(max) + 1).to_string(),
            ValuePick::Negative(n) => format!("-{}", u32::from(*n) + 1),
            ValuePick::Huge => "1".to_owned() + &"0".repeat(40),
            ValuePick::Empty => String::new(),
            ValuePick::Junk(s) => s.clone(),
        }
    }
}

/// Text that is mostly not a number: letters, signs, dots, spaces, a
/// non-ASCII digit. Never a quote (the CLI's flag errors quote values).
fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 +.:_/#&%?-]{0,12}",
        Just("１".to_owned()),
        Just("1e3".to_owned()),
        Just("0x1f".to_owned()),
        Just("  ".to_owned()),
    ]
}

/// A time as typed, in the layout's range or just outside it.
#[derive(Debug, Clone)]
enum TimePick {
    Unix(u64),
    Iso(u64, u8),
    Min,
    Max,
    BeforeMin,
    PastMax,
    /// Not given.
    Unset,
    Now(u8),
    Huge,
    Junk(String),
}

fn time_pick() -> impl Strategy<Value = TimePick> {
    prop_oneof![
        20 => any::<u64>().prop_map(TimePick::Unix),
        10 => (any::<u64>(), 0u8..6).prop_map(|(v, s)| TimePick::Iso(v, s)),
        1 => Just(TimePick::Min),
        1 => Just(TimePick::Max),
        2 => Just(TimePick::BeforeMin),
        2 => Just(TimePick::PastMax),
        2 => Just(TimePick::Unset),
        1 => (0u8..3).prop_map(TimePick::Now),
        1 => Just(TimePick::Huge),
        2 => junk().prop_map(TimePick::Junk),
    ]
}

impl TimePick {
    fn text(&self, layout: &Layout) -> Option<String> {
        let (min, max) = layout.range(Field::Timestamp);
        let within = |v: u64| min + v % (max - min + 1);
        let iso = |ms: u64| snowmint::time::Iso8601(ms as i64).to_string();
        Some(match self {
            TimePick::Unix(v) => within(*v).to_string(),
            TimePick::Iso(v, style) => {
                let text = iso(within(*v));
                match style {
                    0 | 1 => text,
                    2 => text.to_lowercase(),
                    3 => text.replace('T', " "),
                    4 => text.replace('Z', "+00:00"),
                    _ => text[..10].to_owned(),
                }
            }
            TimePick::Min => min.to_string(),
            TimePick::Max => iso(max),
            TimePick::BeforeMin => match min.checked_sub(1) {
                Some(v) => v.to_string(),
                None => "-1".to_owned(),
            },
            TimePick::PastMax => (max + 1).to_string(),
            TimePick::Unset => return None,
            TimePick::Now(0) => "now".to_owned(),
            TimePick::Now(1) => "NOW".to_owned(),
            TimePick::Now(_) => " now ".to_owned(),
            TimePick::Huge => "9".repeat(30),
            TimePick::Junk(s) => s.clone(),
        })
    }
}

/// The fields a case gives for `layout` (Twitter's for a layout that
/// cannot be): name and largest value.
fn node_fields(layout: &Result<Layout, snowmint::Error>) -> Vec<(String, u64)> {
    let layout = layout.as_ref().unwrap_or(&Layout::TWITTER);
    layout
        .node_fields()
        .map(|f| (f.name().to_owned(), f.max()))
        .collect()
}

fn compose() -> impl Strategy<Value = Compose> {
    (
        layout_text(),
        time_pick(),
        proptest::collection::vec(value_pick(), 4),
        // Faults of the set of fields: one left out, one given twice, one
        // the layout does not have; each now and then.
        proptest::option::weighted(0.06, any::<Index>()),
        proptest::option::weighted(0.06, (any::<Index>(), value_pick())),
        proptest::option::weighted(0.1, (0..STRANGERS.len(), value_pick(), any::<Index>())),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(layout, time, values, left_out, twice, stranger, flags, empty)| {
                let parsed = match &layout {
                    None => Ok(Layout::TWITTER),
                    Some(text) => Layout::parse(text),
                };
                let timestamp = time
                    .text(parsed.as_ref().unwrap_or(&Layout::TWITTER))
                    .filter(|t| !t.is_empty());
                let mut fields: Vec<(String, String)> = node_fields(&parsed)
                    .into_iter()
                    .zip(values.iter().cycle())
                    .map(|((name, max), v)| (name, v.text(max)))
                    .collect();
                let mut is_left_out = false;
                if let Some(i) = left_out.filter(|_| !fields.is_empty()) {
                    fields.remove(i.index(fields.len()));
                    is_left_out = true;
                }
                if let Some((i, v)) = twice.filter(|_| !fields.is_empty()) {
                    let name = fields[i.index(fields.len())].0.clone();
                    fields.push((name, v.text(31)));
                }
                if let Some((name, v, at)) = stranger {
                    let at = at.index(fields.len() + 1);
                    fields.insert(at, (STRANGERS[name].to_owned(), v.text(31)));
                }
                // Twitter's flags hold only Twitter's fields, in Twitter's layout
                // (or with a layout that is refused before any field is read).
                let twitter_names = fields
                    .iter()
                    .all(|(n, _)| matches!(n.as_str(), "datacenter" | "worker" | "sequence"));
                let flags =
                    flags && twitter_names && !matches!(parsed, Ok(l) if l != Layout::TWITTER);
                Compose {
                    layout,
                    timestamp,
                    fields,
                    flags,
                    empty,
                    left_out: is_left_out,
                }
            },
        )
}

/// An ID: one of the layout's (most often), its largest, one past it, the
/// sign bit set, more than 64 bits, negative, empty or not a number.
#[derive(Debug, Clone)]
enum IdPick {
    In(u64),
    Max,
    PastMax,
    Sign(u64),
    Wide(u64),
    Negative(u16),
    Junk(String),
}

fn id_pick() -> impl Strategy<Value = IdPick> {
    prop_oneof![
        12 => any::<u64>().prop_map(IdPick::In),
        1 => Just(IdPick::Max),
        2 => Just(IdPick::PastMax),
        1 => any::<u64>().prop_map(IdPick::Sign),
        1 => any::<u64>().prop_map(IdPick::Wide),
        1 => any::<u16>().prop_map(IdPick::Negative),
        2 => junk().prop_map(IdPick::Junk),
    ]
}

/// How an ID's number is written: decimal (maybe padded), hex (either
/// case, maybe `0x`, maybe 16 digits), base32 (either case, maybe 13
/// characters, maybe with the `i`, `l`, `o` Crockford reads as 1, 1, 0).
#[derive(Debug, Clone, Copy)]
enum Written {
    Decimal(u8),
    Hex(u8),
    Base32(u8),
}

fn written() -> impl Strategy<Value = Written> {
    prop_oneof![
        (0u8..4).prop_map(Written::Decimal),
        (0u8..4).prop_map(Written::Hex),
        (0u8..4).prop_map(Written::Base32),
    ]
}

impl Written {
    fn text(self, v: u128) -> String {
        match self {
            Written::Decimal(0) => v.to_string(),
            Written::Decimal(1) => format!(" {v}"),
            Written::Decimal(2) => format!("+{v}"),
            Written::Decimal(_) => format!("000{v}"),
            Written::Hex(0) => format!("{v:x}"),
            Written::Hex(1) => format!("0x{v:X}"),
            Written::Hex(2) => format!("{v:016x}"),
            Written::Hex(_) => format!("0X{v:x}"),
            Written::Base32(style) => {
                const DIGITS: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
                let mut out = Vec::new();
                let mut n = v;
                while n > 0 || out.is_empty() {
                    out.push(DIGITS[(n % 32) as usize]);
                    n /= 32;
                }
                if style == 2 {
                    out.resize(out.len().max(13), b'0');
                }
                out.reverse();
                let text = String::from_utf8(out).unwrap();
                match style {
                    1 => text.to_lowercase(),
                    3 => text.replace('1', "l").replace('0', "o"),
                    _ => text,
                }
            }
        }
    }

    fn encoding(self) -> Encoding {
        match self {
            Written::Decimal(_) => Encoding::Decimal,
            Written::Hex(_) => Encoding::Hex,
            Written::Base32(_) => Encoding::Base32,
        }
    }
}

/// The `from` given: the form the ID is written in (mostly), another, a
/// name in capitals or with spaces, or no form at all.
#[derive(Debug, Clone)]
enum FromPick {
    Unset,
    Same(u8),
    Other(usize),
    Junk(String),
}

fn from_pick() -> impl Strategy<Value = FromPick> {
    prop_oneof![
        4 => Just(FromPick::Unset),
        8 => (0u8..4).prop_map(FromPick::Same),
        1 => (0..Encoding::ALL.len()).prop_map(FromPick::Other),
        1 => prop_oneof![Just("hexx".to_owned()), Just("octal".to_owned()), junk()].prop_map(FromPick::Junk),
    ]
}

fn decode() -> impl Strategy<Value = Decode> {
    (
        layout_text(),
        id_pick(),
        written(),
        from_pick(),
        any::<bool>(),
    )
        .prop_map(|(layout, id, written, from, empty)| {
            let max = match &layout {
                None => Ok(Layout::TWITTER),
                Some(text) => Layout::parse(text),
            }
            .map_or(snowmint::MAX_ID, |l| l.max_id());
            let number = |v: u128| written.text(v);
            let id = match id {
                IdPick::In(v) => {
                    number(u128::from(if max == u64::MAX { v } else { v % (max + 1) }))
                }
                IdPick::Max => number(max.into()),
                IdPick::PastMax => number(u128::from(max) + 1),
                IdPick::Sign(v) => number(u128::from(v | (1 << 63))),
                IdPick::Wide(v) => number((1u128 << 64) + u128::from(v)),
                IdPick::Negative(n) => format!("-{}", u32::from(n) + 1),
                IdPick::Junk(s) => s,
            };
            // `-` alone is the CLI's standard input: another case.
            let id = if id.trim() == "-" {
                "--".to_owned()
            } else {
                id
            };
            let from = match from {
                FromPick::Unset if written.encoding() == Encoding::Decimal => None,
                FromPick::Unset | FromPick::Same(0) => Some(written.encoding().name().to_owned()),
                FromPick::Same(1) => Some(written.encoding().name().to_uppercase()),
                FromPick::Same(2) => Some(format!(" {} ", written.encoding().name())),
                FromPick::Same(_) => Some(written.encoding().name().to_owned()),
                FromPick::Other(i) => Some(Encoding::ALL[i].name().to_owned()),
                FromPick::Junk(s) => Some(s).filter(|s| !s.is_empty()),
            };
            Decode {
                id,
                from,
                layout,
                empty,
            }
        })
}

fn case() -> impl Strategy<Value = Case> {
    prop_oneof![
        compose().prop_map(Case::Compose),
        decode().prop_map(Case::Decode),
    ]
}
