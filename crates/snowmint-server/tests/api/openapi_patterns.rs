//! Every text the document's patterns admit is one the server takes: the
//! ID in each form (read in that form), and ISO-8601 times (in range);
//! texts just past them are not admitted. proptest generates from the
//! patterns as schemathesis does.

use proptest::prelude::*;
use proptest::string::string_regex;
use regex::Regex;
use snowmint::{Encoding, SnowflakeId};

use crate::support::{harness, json};

/// The OpenAPI document the server answers, fetched once.
fn document() -> &'static serde_json::Value {
    static DOC: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            json(&harness().state, "GET", "/api/v1/openapi.json")
                .await
                .1
        })
    })
}

fn pattern(path: &str, name: &str, index: usize) -> String {
    let doc = document();
    let schema = if name == "id" { "anyOf" } else { "oneOf" };
    doc["paths"][path]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap()["schema"][schema][index]["pattern"]
        .as_str()
        .unwrap()
        .to_owned()
}

const DECODE: &str = "/api/v1/decode/{id}";
const COMPOSE: &str = "/api/v1/compose";

/// proptest's generator takes no anchors; every pattern is `^(...)$`.
fn unanchored(pattern: &str) -> String {
    pattern
        .strip_prefix('^')
        .unwrap()
        .strip_suffix('$')
        .unwrap()
        .to_owned()
}

#[test]
fn id_patterns_admit_exactly_the_ids() {
    for (i, encoding) in Encoding::ALL.into_iter().enumerate() {
        let re = Regex::new(&pattern(DECODE, "id", i)).unwrap();
        for id in [SnowflakeId::MIN, SnowflakeId::MAX] {
            let text = encoding.format(id).to_string();
            assert!(re.is_match(&text), "{encoding:?} {text}");
        }
        // 2^63 in the form.
        let past = match encoding {
            Encoding::Decimal => "9223372036854775808",
            Encoding::Hex => "8000000000000000",
            Encoding::Base32 => "8000000000000",
        };
        assert!(!re.is_match(past), "{encoding:?} {past}");
        assert!(encoding.parse(past).is_err());
    }
}

#[test]
fn iso8601_pattern_admits_no_year_outside_the_range() {
    let re = Regex::new(&pattern(COMPOSE, "timestamp", 2)).unwrap();
    let (min, max) = snowmint::Layout::TWITTER.range(snowmint::Field::Timestamp);
    let (first, last) = (
        snowmint::time::Iso8601(min as i64).to_string(),
        snowmint::time::Iso8601(max as i64).to_string(),
    );
    assert!(!re.is_match(&first) && !re.is_match(&last));
    let year = |t: &str| t[..4].parse::<u32>().unwrap();
    for (y, admitted) in [
        (year(&first), false),
        (year(&first) + 1, true),
        (year(&last) - 1, true),
        (year(&last), false),
    ] {
        for t in [
            format!("{y}-01-01T00:00+23:59"),
            format!("{y}-12-31T23:59:59.999-23:59"),
        ] {
            assert_eq!(re.is_match(&t), admitted, "{t}");
            if admitted {
                snowmint::parse_timestamp(&t, 0).unwrap();
            }
        }
    }
}

proptest! {
    #[test]
    fn generated_ids_are_read_in_their_form(
        (i, text) in (0..3usize).prop_flat_map(|i| {
            (Just(i), string_regex(&unanchored_id(i)).unwrap())
        })
    ) {
        let encoding = Encoding::ALL[i];
        prop_assert!(encoding.parse(&text).is_ok(), "{:?} {}", encoding, text);
    }

    /// What the `layout` pattern admits is read as a spec: taken, or
    /// refused naming what is wrong with it as a layout.
    #[test]
    fn generated_specs_are_taken_or_refused_as_layouts(
        text in string_regex(&unanchored(&layout_spec_pattern())).unwrap()
    ) {
        if let Err(e) = snowmint::Layout::parse(&text) {
            prop_assert!(e.layout_problem().is_some(), "{}: {}", text, e);
            prop_assert_eq!(e.field(), snowmint::Field::Layout);
        }
    }

    #[test]
    fn generated_times_are_in_range(
        text in string_regex(&unanchored(&pattern(COMPOSE, "timestamp", 2))).unwrap()
    ) {
        prop_assert!(snowmint::parse_timestamp(&text, 0).is_ok(), "{}", text);
    }
}

/// The document admits every spec the server takes, not only those of
/// Twitter's epoch: Discord's documented spec, every preset written as
/// a spec, and a spec written loosely.
#[test]
fn the_layout_pattern_admits_specs_of_any_epoch() {
    let re = Regex::new(&layout_spec_pattern()).unwrap();
    let mut specs: Vec<String> = snowmint::Layout::PRESETS
        .iter()
        .map(snowmint::Layout::spec)
        .collect();
    specs.push("epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12".into());
    specs.push(" fields = timestamp:32, node:10 ,step:12 ; epoch=2020-01-01 ;unit=1s;".into());
    for spec in specs {
        assert!(snowmint::Layout::parse(&spec).is_ok(), "{spec}");
        assert!(re.is_match(&spec), "{spec}");
    }
}

/// The pattern of `layout`'s spec form (the same on every route).
fn layout_spec_pattern() -> String {
    let doc = document();
    let mut patterns = std::collections::BTreeSet::new();
    for (_, item) in doc["paths"].as_object().unwrap() {
        for (_, operation) in item.as_object().unwrap() {
            for p in operation["parameters"].as_array().into_iter().flatten() {
                if p["name"] == "layout" {
                    let spec = &p["schema"]["anyOf"][1];
                    assert_eq!(spec["title"], "spec");
                    patterns.insert(spec["pattern"].as_str().unwrap().to_owned());
                }
            }
        }
    }
    assert_eq!(patterns.len(), 1, "{patterns:?}");
    patterns.pop_first().unwrap()
}

fn unanchored_id(i: usize) -> String {
    unanchored(&pattern(DECODE, "id", i))
}
