//! The page's own URLs: results, the language switch, the worked example.

use std::fmt::Write as _;

use snowmint::{Breakdown, IdSpan, Layout, SnowflakeId};

use super::{Mode, Page};

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char);
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// `path?k=v&...` from the pairs with a value; `path` alone when none has.
pub(super) fn to(path: &str, pairs: &[(&str, &str)]) -> String {
    let query: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// The current query with `lang` set to the other language.
pub(super) fn switch(page: &Page) -> String {
    let mut pairs = vec![("lang", page.lang.other().code())];
    pairs.extend(page.q.pairs());
    to("/", &pairs)
}

/// `layout` for a link: empty (left out) for Twitter's, the default; a
/// preset's name, or a custom layout's spec, so the link shares it.
fn layout_param(layout: Layout) -> String {
    if layout == Layout::TWITTER {
        String::new()
    } else {
        layout.to_param()
    }
}

/// The URL of a result: the values it was composed of (in its layout), or
/// the ID it decodes.
pub(super) fn share(page: &Page, b: &Breakdown, layout: Layout) -> String {
    match page.mode {
        Mode::Compose if layout != Layout::TWITTER => {
            let param = layout_param(layout);
            let timestamp = b.timestamp_ms.to_string();
            let values: Vec<(&str, String)> = layout
                .field_values(b.id)
                .into_iter()
                .map(|(name, v)| (name, v.to_string()))
                .collect();
            let mut pairs = vec![("layout", param.as_str()), ("timestamp", &timestamp)];
            pairs.extend(values.iter().map(|(name, v)| (*name, v.as_str())));
            pairs.push(("lang", page.lang_param()));
            to("/", &pairs)
        }
        Mode::Compose => to(
            "/",
            &[
                ("timestamp", &b.timestamp_ms.to_string()),
                ("datacenter", &b.datacenter.to_string()),
                ("worker", &b.worker.to_string()),
                ("sequence", &b.sequence.to_string()),
                ("lang", page.lang_param()),
            ],
        ),
        _ => decoded(page, b.id, layout),
    }
}

/// The page decoding `id` in `layout`.
pub(super) fn decoded(page: &Page, id: SnowflakeId, layout: Layout) -> String {
    to(
        "/",
        &[
            ("id", &id.to_string()),
            ("layout", &layout_param(layout)),
            ("lang", page.lang_param()),
        ],
    )
}

/// The URL of an ID range: its two times in Unix ms.
pub(super) fn span(page: &Page, span: &IdSpan, layout: Layout) -> String {
    to(
        "/",
        &[
            ("range_from", &span.from_ms.to_string()),
            ("range_to", &span.to_ms.to_string()),
            ("layout", &layout_param(layout)),
            ("dialect", dialect_param(page)),
            ("lang", page.lang_param()),
        ],
    )
}

/// `dialect` for a link: empty (left out) when it is the default.
fn dialect_param(page: &Page) -> &'static str {
    match page.dialect() {
        snowmint::sql::Dialect::Postgres => "",
        other => other.name(),
    }
}

/// `GET /api/v1/sql` for the page's dialect and `layout`.
pub(super) fn sql_api(page: &Page, layout: Layout) -> String {
    to(
        "/api/v1/sql",
        &[
            ("dialect", page.dialect().name()),
            ("layout", &layout_param(layout)),
        ],
    )
}

/// `path` with the worked example's four values (and `lang`, unless empty)
/// as the query.
pub(super) fn example(page: &Page, path: &str, lang: &str) -> String {
    let query = page.facts.example().query();
    let mut pairs: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    pairs.push(("lang", lang));
    to(path, &pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_every_byte_outside_the_unreserved_set() {
        assert_eq!(
            to("/", &[("id", "a b&c=d/é"), ("from", "")]),
            "/?id=a%20b%26c%3Dd%2F%C3%A9"
        );
        assert_eq!(to("/", &[("from", "")]), "/");
        assert_eq!(to("/x", &[("a", "1"), ("b", "2")]), "/x?a=1&b=2");
    }
}
