//! The schemas of the API's inputs, built from the core's ranges and name
//! lists so that the document cannot drift from what the server checks.
//! The handlers' parameter structs give the names, descriptions, examples
//! and required flags; [`StrictParams`] then puts these schemas in place
//! of the free strings derived from their `Option<String>` fields (utoipa's
//! `minimum = ...` attributes take literals only, and a field's
//! `schema_with` drops its description and required flag).
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
//! admits only specs valid with every time and ID the document admits
//! ([`SpecLanguage`]), so that no spec joins a third rule to these.

use snowmint::time::Iso8601;
use snowmint::{Encoding, Field, Layout, MAX_ID};
use utoipa::Modify;
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::schema::{
    AnyOfBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::{RefOr, Required};

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

/// The specs the document's pattern admits: Twitter's epoch (in Unix ms or
/// ISO-8601, the unit `1ms` left out or written), a time field of 41 bits
/// (or 42, whose top bit is then the sign bit: the same 41 usable bits),
/// and the 22 bits below it cut into `sequence`, `worker,sequence` or
/// `datacenter,worker,sequence` (those two of 1 to 5 bits). Every one is
/// valid, spans exactly the default layout's times and holds every 63-bit
/// ID, so any value the document admits for a range's times or a decode's
/// `id` is one the server takes in it. A pattern cannot say what makes the
/// whole grammar valid (widths adding up to at most 64, names distinct,
/// ...); the server takes all of it (docs/layouts.md).
pub(crate) struct SpecLanguage {
    /// `epoch=...`, each spelling of the same instant.
    epochs: [String; 2],
    /// What goes between the epoch and `;fields=`.
    units: [&'static str; 2],
    /// The time field.
    times: [String; 2],
    /// The fields below the time, after a comma.
    cuts: Vec<String>,
}

impl SpecLanguage {
    pub(crate) fn new() -> SpecLanguage {
        let twitter = Layout::TWITTER;
        let epoch = twitter.epoch_ms();
        let time = twitter.time_field();
        let (bits, below) = (time.bits(), time.shift());
        let mut cuts = vec![format!("sequence:{below}")];
        cuts.extend((1..below).map(|w| format!("worker:{w},sequence:{}", below - w)));
        for dc in 1..=5 {
            for w in 1..=5 {
                cuts.push(format!(
                    "datacenter:{dc},worker:{w},sequence:{}",
                    below - dc - w
                ));
            }
        }
        SpecLanguage {
            epochs: [
                format!("epoch={epoch}"),
                format!("epoch={}", Iso8601(ms(epoch))),
            ],
            units: ["", ";unit=1ms"],
            times: [
                format!("timestamp:{bits}"),
                format!("timestamp:{}", bits + 1),
            ],
            cuts,
        }
    }

    /// Every spec of the language, in pattern order.
    #[cfg(test)]
    fn specs(&self) -> impl Iterator<Item = String> + '_ {
        self.epochs.iter().flat_map(move |e| {
            self.units.iter().flat_map(move |u| {
                self.times.iter().flat_map(move |t| {
                    self.cuts
                        .iter()
                        .map(move |c| format!("{e}{u};fields={t},{c}"))
                })
            })
        })
    }

    /// A regular expression of exactly the language's specs: a
    /// sequence of alternations of literal texts.
    pub(crate) fn pattern(&self) -> String {
        let any = |items: &mut dyn Iterator<Item = &str>| {
            let items: Vec<String> = items.map(literal).collect();
            format!("({})", items.join("|"))
        };
        format!(
            "^{}{};fields={},{}$",
            any(&mut self.epochs.iter().map(String::as_str)),
            any(&mut self.units.iter().copied()),
            any(&mut self.times.iter().map(String::as_str)),
            any(&mut self.cuts.iter().map(String::as_str)),
        )
    }
}

/// `text` as a regular expression that matches only itself.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Specs the document gives as examples of a `layout`: two of
/// [`SpecLanguage`]'s.
pub(crate) const SPEC_EXAMPLES: [&str; 2] = [
    "epoch=2010-11-04T01:42:54.657Z;fields=timestamp:41,worker:10,sequence:12",
    "epoch=1288834974657;unit=1ms;fields=timestamp:42,datacenter:3,worker:5,sequence:14",
];

/// `layout`: `anyOf` a preset ([`Layout::PRESET_NAMES`]) or a spec of
/// [`SpecLanguage`], with each preset's span of Unix ms in
/// `x-time-span-ms` (a range's `from` and `to` must lie in its layout's;
/// the documented ones are the default layout's, which every spec the
/// pattern admits spans).
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
                .description(Some(
                    "`epoch=EPOCH;unit=UNIT;fields=NAME:BITS,...`: EPOCH Unix ms or ISO-8601 \
                     (required), UNIT `<n>ms` or `<n>s` (default `1ms`), fields from the most \
                     significant bit down, the first named `timestamp`, names `[a-z0-9_]`, \
                     widths 1..=64 adding up to at most 64. The server takes every spec of that \
                     grammar (docs/layouts.md); a pattern cannot say what makes one valid, so \
                     this one admits only specs valid with every time and ID this document \
                     admits: Twitter's epoch and 41-bit time (42 with the sign bit), the 22 \
                     bits below cut into `sequence`, `worker,sequence` or \
                     `datacenter,worker,sequence`. A bad spec is refused naming `layout`, \
                     with what is wrong.",
                ))
                .pattern(Some(SpecLanguage::new().pattern()))
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
            crate::routes::api::MAX_DETECT_IDS - 1
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

    /// Every spec the pattern admits is valid, spans exactly the default
    /// layout's times and holds every ID; the pattern admits exactly them.
    #[test]
    fn every_spec_the_pattern_admits_is_valid_for_every_admitted_input() {
        let language = SpecLanguage::new();
        let re = regex::Regex::new(&language.pattern()).unwrap();
        let span = Layout::TWITTER.range(Field::Timestamp);
        let mut count = 0;
        for spec in language.specs() {
            let layout = Layout::parse(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(layout.range(Field::Timestamp), span, "{spec}");
            let max = snowmint::SnowflakeId::new(MAX_ID).unwrap();
            assert!(layout.check_id(max).is_ok(), "{spec}");
            assert!(re.is_match(&spec), "{spec}");
            count += 1;
        }
        // 2 epochs x 2 units x 2 time widths x (1 + 21 + 25) cuts.
        assert_eq!(count, 2 * 2 * 2 * 47);
        for spec in SPEC_EXAMPLES {
            assert!(language.specs().any(|s| s == spec), "{spec}");
        }
        // Just past it: a bit too many, a wider time, another epoch.
        for spec in [
            "epoch=1288834974657;fields=timestamp:41,sequence:23",
            "epoch=1288834974657;fields=timestamp:43,sequence:22",
            "epoch=1288834974658;fields=timestamp:41,sequence:22",
            "epoch=1288834974657;fields=timestamp:41,datacenter:6,worker:5,sequence:11",
            "epoch=1288834974657;fields=timestamp:41,sequence:22\n",
        ] {
            assert!(!re.is_match(spec), "{spec:?}");
        }
    }

    #[test]
    fn literal_escapes_what_a_pattern_reads() {
        let re = regex::Regex::new(&format!("^{}$", literal("a.b(c)|[d]+"))).unwrap();
        assert!(re.is_match("a.b(c)|[d]+"));
        assert!(!re.is_match("axb(c)|[d]+"));
    }
}
