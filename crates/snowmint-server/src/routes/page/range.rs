//! The range panel: two times in, the smallest and largest ID of the span
//! out (for `WHERE id BETWEEN min AND max`), with the count of ID slots.

use maud::{Markup, html};
use snowmint::time::Iso8601;
use snowmint::{Field, IdSpan, Layout};

use super::form::{
    TextField, dialect_name, dialect_select, lang_hidden, layout_select, local, picker,
};
use super::{Mode, Outcome, Page, PageQuery, link};
use crate::routes::page::i18n::Lang;
use crate::routes::params;

/// What was typed for one end of the span: the text field, or (when that
/// is blank) its picker; blank in both means now. Returns the input and
/// the name of the field it came from.
fn end<'a>(
    text: &'a Option<String>,
    at: &'a Option<String>,
    text_name: &'static str,
    at_name: &'static str,
) -> (&'a str, &'static str) {
    let filled = |v: &'a Option<String>| v.as_deref().filter(|s| !s.trim().is_empty());
    match (filled(text), filled(at)) {
        (Some(typed), _) => (typed, text_name),
        (None, Some(picked)) => (picked, at_name),
        (None, None) => ("now", text_name),
    }
}

/// The span of the query's two times, in its layout. Unlike the API
/// (where a missing `to` is `from`), a blank end here is now: "IDs since
/// Monday" is the page's common question.
pub(super) fn outcome(q: &PageQuery, layout: Layout, lang: Lang, now_ms: u64) -> Outcome {
    let (from, from_name) = end(
        &q.range_from,
        &q.range_from_at,
        "range_from",
        "range_from_at",
    );
    let (to, to_name) = end(&q.range_to, &q.range_to_at, "range_to", "range_to_at");
    match params::range_typed(Some(from), Some(to), layout, now_ms) {
        Ok(span) => Outcome::Span(span, layout),
        Err(e) if e.field() == Field::From => {
            Outcome::Invalid(from_name.into(), lang.field_error_in(layout, &e, from))
        }
        Err(e) => {
            // Both ends readable on their own: the span runs backwards.
            let alone = |input| layout.parse_span(input, None, now_ms).map(|s| s.from_ms);
            let msg = match (alone(from), alone(to)) {
                (Ok(from_ms), Ok(to_ms)) => lang.order_error(&e, from_ms, to_ms),
                _ => lang.field_error_in(layout, &e, to),
            };
            Outcome::Invalid(to_name.into(), msg)
        }
    }
}

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    let q = page.q;
    let mine = page.mode == Mode::Range;
    let typed = |v: &Option<String>| match mine {
        true => v.clone().unwrap_or_default(),
        false => String::new(),
    };
    // Each end's text and picker show the same time, as in the compose
    // form: what was typed in either fills the other; blank stays blank
    // (it means now).
    let filled = |v: &Option<String>| mine && v.as_deref().is_some_and(|s| !s.trim().is_empty());
    let span = match &page.outcome {
        Outcome::Span(span, _) => Some(span),
        _ => None,
    };
    let both = |text: &Option<String>, at: &Option<String>, ms: Option<u64>| match ms {
        Some(ms) if filled(text) || filled(at) => (
            text.clone()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| ms.to_string()),
            local(ms),
        ),
        _ => (typed(text), typed(at)),
    };
    let (from, from_at) = both(&q.range_from, &q.range_from_at, span.map(|s| s.from_ms));
    let (to, to_at) = both(&q.range_to, &q.range_to_at, span.map(|s| s.to_ms));
    html! {
        section #range .card aria-labelledby="range-h" {
            h2 #range-h { (t.range_heading) }
            // The answer lands where the reader looks: on the result.
            form #range-form method="get" action="/#result" novalidate {
                (lang_hidden(page))
                div.pair {
                    div {
                        (TextField {
                            name: "range_from",
                            label: t.range_from_label,
                            value: &from,
                            hint: Some(t.range_hint),
                            placeholder: Some("2024-01-01T00:00:00Z"),
                            numeric: false,
                        }.render(page))
                        (picker(page, "range_from_at", t.range_picker_label, &from_at, None))
                    }
                    div {
                        (TextField {
                            name: "range_to",
                            label: t.range_to_label,
                            value: &to,
                            hint: Some(t.range_hint),
                            placeholder: Some("2024-02-01T00:00:00Z"),
                            numeric: false,
                        }.render(page))
                        (picker(page, "range_to_at", t.range_picker_label, &to_at, None))
                    }
                }
                (layout_select(page, "range-layout"))
                (dialect_select(page))
                button type="submit" { (t.range_submit) }
            }
        }
    }
}

/// The result of a range: the span, the two IDs, the SQL and the slots.
pub(super) fn result(page: &Page, span: &IdSpan, layout: Layout) -> Markup {
    let t = page.t;
    let sql = format!("WHERE id BETWEEN {} AND {}", span.min, span.max);
    let time = |ms: u64| Iso8601(ms as i64).to_string();
    html! {
        dl.facts #span {
            dt { (t.range_span) }
            dd {
                (time(span.from_ms)) " ..= " (time(span.to_ms))
                " (" (span.from_ms) " ..= " (span.to_ms) ")"
            }
            dt { (t.range_min) } dd { output #range-min .id { (span.min) } }
            dt { (t.range_max) } dd { output #range-max .id { (span.max) } }
            dt { (t.range_slots) }
            dd {
                span #range-slots { (page.lang.number(span.slots())) }
                p.hint { (t.range_slots_hint) }
            }
            @if layout != Layout::TWITTER {
                dt { (t.layout_row) } dd { (super::form::display_name(layout, t)) }
            }
            dt { (t.share) } dd { a #share href=(link::span(page, span, layout)) { (t.share_link) } }
        }
        h3 #sql-h { (t.range_sql) }
        div.id-row {
            pre.formula #sql { code { (sql) } }
            button #copy-sql .secondary type="button" data-copy=(sql) data-status="copy-sql-status" hidden {
                (t.copy)
            }
            span #copy-sql-status role="status" {}
        }
        (functions(page, layout))
    }
}

/// The SQL functions of the layout in the form's dialect (what `GET
/// /api/v1/sql` answers), with a copy button.
fn functions(page: &Page, layout: Layout) -> Markup {
    let t = page.t;
    let dialect = page.dialect();
    // The presets' scripts always exist; nothing to show otherwise.
    let Ok(script) = params::sql_typed(Some(dialect.name()), layout, None) else {
        return html! {};
    };
    html! {
        h3 #sql-functions-h { (t.sql_functions) " (" (dialect_name(dialect)) ")" }
        p.hint { (t.sql_functions_hint) " " a #sql-api href=(link::sql_api(page, layout)) { (t.sql_api_link) } }
        div.id-row {
            pre.formula.script #sql-functions tabindex="0" { code { (script) } }
            button #copy-sql-functions .secondary type="button" data-copy=(script)
                data-status="copy-sql-functions-status" hidden {
                (t.copy)
            }
            span #copy-sql-functions-status role="status" {}
        }
    }
}
