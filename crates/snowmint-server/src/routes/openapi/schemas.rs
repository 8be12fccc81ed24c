//! The schemas of the API's inputs, built from the core's ranges and name
//! lists so that the document cannot drift from what the server checks.
//! The parameter structs of [`params`](crate::routes::params) give the
//! names, descriptions, examples and required flags; [`StrictParams`] then
//! puts these schemas in place of the free strings derived from their
//! `Option<String>` fields (utoipa's `minimum = ...` attributes take
//! literals only, and a field's `schema_with` drops its description and
//! required flag).
//!
//! A query string is text: a client sends the number 5 and the string "5"
//! as the same bytes. So the integer inputs are integers with their ranges,
//! which is what a generated client should send ("inputs accept a string
//! or a number" is the same text on the wire). The time inputs
//! (`timestamp`, `from`, `to`) take three forms and say so: `oneOf` Unix
//! milliseconds in the format's range, `now`, or an ISO-8601 time. An ISO
//! string's range cannot be written in JSON Schema, so its pattern admits
//! the whole years inside the format's range, a little less than the
//! server takes. The decode route's `id` is `anyOf` its three forms, each
//! titled by the `from` value that reads it. What OpenAPI cannot say is
//! left to the descriptions: that `id` is read in the form `from` names,
//! that a range's `to` is at or after its `from`, and that its times lie in
//! its layout's span (`x-time-span-ms` on `layout`). `layout`'s spec form
//! admits every spec the server takes ([`spec_pattern`]) and says in words
//! what else makes one valid.

use snowmint::time::Iso8601;
use snowmint::{Encoding, Field, Layout, MAX_ID};
use utoipa::Modify;
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::schema::{
    AnyOfBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::{RefOr, Required};

use crate::routes::params::MAX_DETECT_IDS;

/// Gives every parameter of the document its schema from [`schema`].
pub(crate) struct StrictParams;

impl Modify for StrictParams {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in &mut openapi.paths.paths {
            let operations = [&mut item.get, &mut item.post];
            for operation in operations.into_iter().flatten() {
                for parameter in operation.parameters.iter_mut().flatten() {
                    if let Some(schema) = schema(path, &parameter.name) {
                        parameter.schema = Some(schema);
                    }
                    // The handlers read an optional value left empty (a
                    // form's blank field) as a missing one: the default.
                    // utoipa has no field for `allowEmptyValue` (deprecated
                    // in OpenAPI 3.1, still what it means); its extensions
                    // are written into the parameter object as they are.
                    if parameter.parameter_in == ParameterIn::Query
                        && parameter.required == Required::False
                    {
                        parameter
                            .extensions
                            .get_or_insert_with(Default::default)
                            .insert("allowEmptyValue".to_owned(), true.into());
                    }
                }
            }
        }
    }
}

/// The schema of the parameter `name` of the route `path`.
fn schema(path: &str, name: &str) -> Option<RefOr<Schema>> {
    Some(match (path, name) {
        // A range's times in the default layout's span; `layout` lists
        // each layout's own.
        (_, "timestamp") | ("/api/v1/range", "from" | "to") => {
            time(Layout::TWITTER.range(Field::Timestamp))
        }
        ("/api/v1/decode/{id}", "id") => id(),
        ("/api/v1/decode/{id}", "from") => encoding(),
        (_, "layout") => layout(),
        ("/api/v1/sql", "dialect") => names(&snowmint::sql::Dialect::NAMES, None),
        ("/api/v1/sql", "prefix") => {
            identifier(snowmint::sql::MAX_PREFIX_LEN, snowmint::sql::DEFAULT_PREFIX)
        }
        ("/api/v1/detect", "ids") => ids(),
        (_, "datacenter") => integer(Field::Datacenter).into(),
        (_, "worker") => integer(Field::Worker).into(),
        (_, "sequence") => integer(Field::Sequence).into(),
        // One millisecond's IDs: 1..=4096.
        (_, "count") => integer(Field::Count).into(),
        _ => return None,
    })
}

/// An integer input: its range in the Twitter layout.
fn integer(field: Field) -> ObjectBuilder {
    integer_in(Layout::TWITTER.range(field))
}

/// An integer in `min..=max`.
fn integer_in((min, max): (u64, u64)) -> ObjectBuilder {
    let format = if i32::try_from(max).is_ok() {
        KnownFormat::Int32
    } else {
        KnownFormat::Int64
    };
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(format)))
        .minimum(Some(min))
        .maximum(Some(max))
}

/// A time input in `span` (Unix ms, inclusive): Unix milliseconds, `now`,
/// or ISO-8601.
fn time(span: (u64, u64)) -> RefOr<Schema> {
    let (min, max) = span;
    OneOfBuilder::new()
        .item(integer_in(span).title(Some("Unix milliseconds")))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .title(Some("now"))
                .enum_values(Some(["now"])),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .title(Some("ISO-8601"))
                .description(Some(format!(
                    "`YYYY-MM-DD`, optionally `THH:MM`, `:SS` and a fraction, then `Z` or an \
                     offset `+HH:MM` / `-HH:MM` (UTC when absent). The pattern admits the whole \
                     years inside {} ..= {}; the server takes all of it, February 29 included.",
                    Iso8601(ms(min)),
                    Iso8601(ms(max)),
                )))
                .pattern(Some(iso8601_pattern(span))),
        )
        .into()
}

/// Unix ms as [`Iso8601`] takes them (every span here is far below
/// `i64::MAX`).
fn ms(unix_ms: u64) -> i64 {
    i64::try_from(unix_ms).unwrap_or(i64::MAX)
}

/// The years whose every instant, in any UTC offset, lies in `span`: from
/// the year after its first millisecond's to the year before its last one's.
fn whole_years((min, max): (u64, u64)) -> (u16, u16) {
    let year = |unix_ms: u64| -> u16 {
        let text = Iso8601(ms(unix_ms)).to_string();
        text.get(..4).and_then(|y| y.parse().ok()).unwrap_or(0)
    };
    (year(min) + 1, year(max) - 1)
}

/// The ISO-8601 texts of [`whole_years`] of `span` that the core's parser
/// takes, without February 29 (a leap year is more than a pattern should
/// know).
fn iso8601_pattern(span: (u64, u64)) -> String {
    let (first, last) = whole_years(span);
    // One alternative per decade: 201[1-9]|202[0-9]|...|207[0-9].
    let years: Vec<String> = (first / 10..=last / 10)
        .map(|decade| {
            let lo = first.max(decade * 10) % 10;
            let hi = last.min(decade * 10 + 9) % 10;
            format!("{decade}[{lo}-{hi}]")
        })
        .collect();
    let date =
        "(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31";
    let hh_mm = "([01][0-9]|2[0-3]):[0-5][0-9]";
    format!(
        "^({})-({date})([Tt ]{hh_mm}(:[0-5][0-9]([.,][0-9]{{1,9}})?)?([Zz]|[+-]{hh_mm})?)?$",
        years.join("|")
    )
}

/// One of `names`.
fn names(names: &[&str], default: Option<&str>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(names.iter().copied()))
        .default(default.map(Into::into))
        .build()
        .into()
}

/// A plain SQL identifier of at most `max_len` characters (what
/// [`snowmint::sql::check_identifier`] takes).
fn identifier(max_len: usize, default: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(format!(
            "^[A-Za-z_][A-Za-z0-9_]{{0,{}}}$",
            max_len - 1
        )))
        .max_length(Some(max_len))
        .default(Some(default.into()))
        .build()
        .into()
}

/// `from` of decode: the names of [`Encoding::ALL`].
fn encoding() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(Encoding::ALL.map(Encoding::name)))
        .default(Some(Encoding::Decimal.name().into()))
        .build()
        .into()
}

/// A pattern of every spec the server reads (docs/layouts.md): the keys
/// `epoch` and `fields` once each, `unit` at most once, in any order, split
/// by `;` (empty parts and the whitespace around each key, value, name and
/// width forgiven, as [`Layout::parse`] forgives them); `unit` digits and
/// `ms` or `s`; `fields` entries `NAME:BITS`, names of `[a-z0-9_]`, widths
/// digits. What makes such a spec valid beyond that (the epoch a time, the
/// widths 1..=64 adding up to at most 64, the first field `timestamp`,
/// names distinct, ...) is more than a pattern can say: the description
/// says it in words, and the server refuses the rest naming `layout`. So a
/// client that validates against the document never refuses a spec the
/// server takes; the testing tool's narrower needs are its hooks'
/// (`scripts/schemathesis_hooks.py`).
pub(crate) fn spec_pattern() -> String {
    // `str::trim`'s whitespace: ECMA-262's `\s` lacks U+0085.
    let ws = r"[\s\u0085]*";
    let name = format!("[a-z0-9_]{{1,{}}}", snowmint::MAX_NAME_LEN);
    let entry = format!(r"{ws}{name}{ws}:{ws}\+?[0-9]+{ws}");
    let part = |key: &str, value: &str| format!("{ws}{key}{ws}={ws}{value}{ws}");
    let epoch = part("epoch", "[^;]*");
    let unit = part("unit", "[0-9]+m?s");
    let fields = part("fields", &format!("{entry}(,{entry})*"));
    let orders: [&[&str]; 8] = [
        &[&epoch, &fields],
        &[&fields, &epoch],
        &[&epoch, &unit, &fields],
        &[&epoch, &fields, &unit],
        &[&unit, &epoch, &fields],
        &[&unit, &fields, &epoch],
        &[&fields, &epoch, &unit],
        &[&fields, &unit, &epoch],
    ];
    // Parts are split by `;`, and any run of them may be empty.
    let between = format!(";({ws};)*");
    let alternatives: Vec<String> = orders
        .iter()
        .map(|parts| format!("({})", parts.join(&between)))
        .collect();
    format!("^({ws};)*({})(;{ws})*$", alternatives.join("|"))
}

/// Specs the document gives as examples of a `layout`: Discord's, as its
/// documents write it, and one of a layout of one's own.
pub(crate) const SPEC_EXAMPLES: [&str; 2] = [
    "epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12",
    "epoch=2020-01-01;unit=10ms;fields=timestamp:41,machine:10,sequence:12",
];

/// `layout`: `anyOf` a preset ([`Layout::PRESET_NAMES`]) or a spec of
/// [`spec_pattern`], with each preset's span of Unix ms in
/// `x-time-span-ms` (a range's `from` and `to` must lie in its layout's;
/// the documented ones are the default layout's).
fn layout() -> RefOr<Schema> {
    let spans: serde_json::Map<String, serde_json::Value> = Layout::PRESETS
        .iter()
        .map(|l| {
            let (min, max) = l.range(Field::Timestamp);
            (l.name().to_owned(), serde_json::json!([min, max]))
        })
        .collect();
    AnyOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .title(Some("preset"))
                .enum_values(Some(Layout::PRESET_NAMES)),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .title(Some("spec"))
                .description(Some(format!(
                    "`epoch=EPOCH;unit=UNIT;fields=NAME:BITS,...` (docs/layouts.md): EPOCH Unix \
                     ms or ISO-8601 (required), UNIT `<n>ms` or `<n>s` (default `1ms`), fields \
                     from the most significant bit down. The pattern admits every spec the \
                     server takes: the keys in any order, empty parts and whitespace forgiven. \
                     The server refuses, naming `layout` and saying what is wrong, a spec whose \
                     epoch is not a time from 1970 on, whose unit is 0, whose first field is \
                     not `timestamp` or whose other fields are, whose names are not 1 to {} \
                     of `[a-z0-9_]`, are given twice or are `sign` or `unused`, whose widths \
                     are not 1..=64 or add up to more than 64, that has more than {} fields, \
                     or whose time cannot end within 64 bits. Every time and ID in a request \
                     must also lie in the spec's own span and bits (see `/api/v1/layout`).",
                    snowmint::MAX_NAME_LEN,
                    snowmint::MAX_FIELDS,
                )))
                .pattern(Some(spec_pattern()))
                .examples(SPEC_EXAMPLES),
        )
        .default(Some(Layout::TWITTER.name().into()))
        .extensions(Some(
            [("x-time-span-ms", serde_json::Value::Object(spans))]
                .into_iter()
                .collect(),
        ))
        .into()
}

/// `ids` of detect: 1 to 1000 decimal IDs, each 0..=2^63-1, separated by
/// commas.
fn ids() -> RefOr<Schema> {
    let one = decimal_at_most(MAX_ID);
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(format!(
            "^({one})(,({one})){{0,{}}}$",
            MAX_DETECT_IDS - 1
        )))
        .build()
        .into()
}

/// The `id` of decode: `anyOf` its forms, each titled by the `from` value
/// that reads it and admitting exactly the values 0..=2^63-1.
fn id() -> RefOr<Schema> {
    let mut forms = AnyOfBuilder::new();
    for encoding in Encoding::ALL {
        forms = forms.item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .title(Some(encoding.name()))
                .pattern(Some(id_pattern(encoding))),
        );
    }
    forms.into()
}

/// A pattern of exactly the texts of 0..=[`MAX_ID`] in `encoding`, without
/// the surrounding whitespace, sign or extra leading zeros the parser also
/// forgives.
fn id_pattern(encoding: Encoding) -> String {
    // Digits of `bits` bits each: up to `full` of them, or a top digit
    // holding the bits left over and `full` more (63 bits: hex 3 + 15 x 4,
    // base32 3 + 12 x 5).
    let radix = |bits: u32, class: &str| {
        let width = u64::BITS - MAX_ID.leading_zeros();
        let full = width / bits;
        let top = 1u32 << (width % bits);
        (full, top, format!("{class}{{1,{full}}}"))
    };
    match encoding {
        Encoding::Decimal => format!("^({})$", decimal_at_most(MAX_ID)),
        Encoding::Hex => {
            let (full, top, short) = radix(4, "[0-9A-Fa-f]");
            format!("^(0[xX])?({short}|[0-{}][0-9A-Fa-f]{{{full}}})$", top - 1)
        }
        Encoding::Base32 => {
            // Crockford's alphabet with its aliases (i, l: 1; o: 0): every
            // letter but u. The top digit's aliases are 0 and 1.
            let class = "[0-9A-TV-Za-tv-z]";
            let (full, top, short) = radix(5, class);
            format!("^({short}|[0-{}IiLlOo]{class}{{{full}}})$", top - 1)
        }
    }
}

/// A regular expression of the decimal numbers 0..=`max`, with leading
/// zeros up to `max`'s width: any shorter run of digits, then for each
/// digit of `max`, its prefix, a smaller digit and any digits after.
fn decimal_at_most(max: u64) -> String {
    let digits = max.to_string();
    let n = digits.len();
    let mut alternatives = vec![format!("[0-9]{{1,{}}}", n - 1)];
    for (i, d) in digits.bytes().enumerate() {
        if d > b'0' {
            let rest = n - i - 1;
            let mut alternative = format!("{}[0-{}]", &digits[..i], char::from(d - 1));
            if rest > 0 {
                alternative.push_str(&format!("[0-9]{{{rest}}}"));
            }
            alternatives.push(alternative);
        }
    }
    alternatives.push(digits);
    alternatives.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every spec the server takes matches the pattern: the presets as
    /// specs, Discord's documented one, the examples, and specs written
    /// loosely (keys in another order, empty parts, whitespace).
    #[test]
    fn the_pattern_admits_every_spec_the_server_takes() {
        let re = regex::Regex::new(&spec_pattern()).unwrap();
        let mut specs: Vec<String> = Layout::PRESETS.iter().map(Layout::spec).collect();
        specs.extend(SPEC_EXAMPLES.map(str::to_owned));
        specs.extend(
            [
                "epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12",
                "epoch=2014-09-01T00:00:00Z;unit=10ms;fields=timestamp:39,sequence:8,machine:16",
                "epoch=2020-01-01; unit=1s; fields=timestamp:31,node:10,step:12",
                " ;fields = timestamp : +041 , sequence:022 ;; unit=1ms ; epoch = 0 ; ",
                "unit=10ms;epoch=2020-01-01T00:00:00.000+01:00;fields=timestamp:40",
                "fields=timestamp:41,a:1\u{85};\u{a0}epoch=0\t\n",
            ]
            .map(str::to_owned),
        );
        for spec in &specs {
            assert!(Layout::parse(spec).is_ok(), "{spec:?}");
            assert!(re.is_match(spec), "{spec:?}");
        }
        // Not specs at all: the pattern refuses them, and so does the server.
        for text in [
            "twitter",
            "epoch=0",
            "epoch=0;fields=timestamp:41;epoch=1",
            "epoch=0;fields=timestamp:41,Worker:10",
            "epoch=0;fields=timestamp:41;size=3",
            "epoch=0;unit=10;fields=timestamp:41",
        ] {
            assert!(!re.is_match(text), "{text:?}");
            assert!(
                text == "twitter" || Layout::parse(text).is_err(),
                "{text:?}"
            );
        }
    }

    /// Text put together from a spec's pieces, each picked from good and
    /// bad ones, in any order, with any whitespace and empty parts.
    fn spec_like() -> impl Strategy<Value = String> {
        let ws = prop::sample::select(vec!["", " ", "\t", "\n", "\u{85}", "\u{a0}", "  "]);
        // Mostly good pieces, so that many texts are specs; some bad ones.
        let pick = |good: Vec<&'static str>, bad: Vec<&'static str>| prop_oneof![6 => prop::sample::select(good), 1 => prop::sample::select(bad)];
        let epoch = pick(
            vec![
                "0",
                "+5",
                "1288834974657",
                "2020-01-01",
                "2020-01-01T00:00:00Z",
                "2010-11-04T01:42:54.657Z",
                "1999-12-31T23:59:59.999-05:00",
            ],
            vec!["-1", "x", "", "99999999999999999999999"],
        );
        let unit = pick(
            vec!["1ms", "10ms", "1s", "2s", "007ms"],
            vec!["0ms", "ms", "1 ms", "1MS", "10", ""],
        );
        let name = pick(
            vec!["worker", "sequence", "a", "node_1", "m"],
            vec!["sign", "Worker", "", "a-b", "timestamp"],
        );
        let width = pick(
            vec!["1", "5", "10", "12", "+7", "007"],
            vec!["0", "65", "-3", "", "x"],
        );
        let time = (
            pick(vec!["timestamp"], vec!["time", "worker"]),
            pick(vec!["41", "39", "+041", "32"], vec!["0", "70", ""]),
        );
        let entry = |name: BoxedStrategy<&'static str>, width: BoxedStrategy<&'static str>| {
            (
                ws.clone(),
                name,
                ws.clone(),
                width,
                ws.clone(),
                prop::bool::weighted(0.95),
            )
                .prop_map(|(a, n, b, w, c, colon)| {
                    let sep = if colon { ":" } else { "" };
                    format!("{a}{n}{b}{sep}{w}{c}")
                })
        };
        let fields = (
            entry(time.0.boxed(), time.1.boxed()),
            prop::collection::vec(entry(name.boxed(), width.boxed()), 0..4),
        )
            .prop_map(|(first, rest)| {
                std::iter::once(first)
                    .chain(rest)
                    .collect::<Vec<_>>()
                    .join(",")
            });
        let part = |key: &'static str, value: BoxedStrategy<String>| {
            (ws.clone(), ws.clone(), value, ws.clone())
                .prop_map(move |(a, b, v, c)| format!("{a}{key}{b}={v}{c}"))
                .boxed()
        };
        (
            part("epoch", epoch.prop_map(str::to_owned).boxed()),
            part("unit", unit.prop_map(str::to_owned).boxed()),
            part("fields", fields.boxed()),
            any::<bool>(),
            0..3usize,
        )
            .prop_map(|(epoch, unit, fields, with_unit, empties)| {
                let mut parts = vec![epoch, fields];
                if with_unit {
                    parts.push(unit);
                }
                parts.extend(std::iter::repeat_n(" ".to_owned(), empties));
                parts
            })
            // Any order, the empty parts anywhere.
            .prop_shuffle()
            .prop_map(|parts| parts.join(";"))
    }

    /// The texts put together are specs the server takes often enough for
    /// the property below to say something.
    #[test]
    fn many_put_together_texts_are_specs() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = spec_like();
        let valid = (0..2000)
            .filter(|_| {
                let text = strategy.new_tree(&mut runner).unwrap().current();
                Layout::parse(&text).is_ok()
            })
            .count();
        assert!(valid >= 100, "{valid} of 2000");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Whatever the server takes as a spec, the pattern admits.
        #[test]
        fn no_spec_the_server_takes_is_refused_by_the_pattern(text in spec_like()) {
            let re = pattern_regex();
            if Layout::parse(&text).is_ok() {
                proptest::prop_assert!(re.is_match(&text), "{:?}", text);
            }
        }
    }

    fn pattern_regex() -> &'static regex::Regex {
        static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
        RE.get_or_init(|| regex::Regex::new(&spec_pattern()).unwrap())
    }
}
