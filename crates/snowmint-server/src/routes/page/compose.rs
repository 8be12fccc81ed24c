//! The compose panel: a time and the chosen layout's fields in, one ID
//! out. The form's inputs are the layout's own fields (Twitter's
//! datacenter, worker and sequence; Discord's worker, process and
//! increment; a custom layout's names), rendered for the `layout` of the
//! query, so it works without JavaScript; the script swaps them in when
//! the layout select changes.

use maud::{Markup, html};
use snowmint::{Field, Layout};

use super::form::{TextField, lang_hidden, layout_select, local, picker};
use super::{Mode, Outcome, Page, PageQuery, RESERVED};
use crate::routes::page::i18n::Lang;
use crate::routes::params;

/// Composes the query's values in its layout. `at` (the date picker)
/// counts only when no timestamp is typed; a field left out is 0, so a
/// first visit (no query) shows fields 0 now, and choosing another layout
/// without JavaScript and submitting shows that layout's fields.
pub(super) fn outcome(q: &PageQuery, layout: Layout, lang: Lang, now_ms: u64) -> Outcome {
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
    let (ts_input, ts_field) = if blank(&q.timestamp) && !blank(&q.at) {
        (q.at.as_deref(), "at")
    } else {
        (q.timestamp.as_deref(), "timestamp")
    };
    if layout == Layout::TWITTER {
        return twitter(q, lang, now_ms, ts_input, ts_field);
    }
    let t = lang.text();
    if let Some(f) = layout.node_fields().find(|f| RESERVED.contains(&f.name())) {
        return Outcome::Invalid("layout".into(), (t.compose_reserved)(f.name()));
    }
    let mut values = Vec::with_capacity(layout.node_fields().len());
    for f in layout.node_fields() {
        match q.field_value(f.name()) {
            Ok(v) => values.push((f.name(), v.unwrap_or("0"))),
            Err(()) => return Outcome::Invalid(f.name().to_owned().into(), (t.repeated)(f.name())),
        }
    }
    // The API's reading (as for Twitter's layout).
    let time = match layout.parse_timestamp(params::or_now(ts_input), now_ms) {
        Ok(ms) => ms,
        Err(e) => {
            let msg = lang.field_error_in(layout, &e, ts_input.unwrap_or(""));
            return Outcome::Invalid(ts_field.into(), msg);
        }
    };
    match layout.parse_fields(time, &values) {
        Ok(id) => Outcome::Id(layout.breakdown(id), layout),
        Err(e) => {
            let name = e.field_name().to_owned();
            let typed = values
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, v)| *v);
            let msg = lang.layout_field_error(layout, &e, typed);
            Outcome::Invalid(name.into(), msg)
        }
    }
}

/// Twitter's layout: the contract's datacenter, worker and sequence.
fn twitter(
    q: &PageQuery,
    lang: Lang,
    now_ms: u64,
    ts_input: Option<&str>,
    ts_field: &'static str,
) -> Outcome {
    let dc = q.datacenter.as_deref().unwrap_or("0");
    let w = q.worker.as_deref().unwrap_or("0");
    let seq = q.sequence.as_deref().unwrap_or("0");
    match params::compose_typed(ts_input, dc, w, seq, now_ms) {
        Ok(id) => Outcome::Id(id.breakdown(), Layout::TWITTER),
        Err(e) => {
            // Point at the field the core refused, with what was typed there.
            let (name, typed) = match e.field() {
                Field::Datacenter => ("datacenter", dc),
                Field::Worker => ("worker", w),
                Field::Sequence => ("sequence", seq),
                _ => (ts_field, ts_input.unwrap_or("")),
            };
            Outcome::Invalid(name.into(), lang.field_error(&e, typed))
        }
    }
}

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    let q = page.q;
    let f = page.facts;
    let layout = page.layout;
    let mine = page.mode == Mode::Compose;
    // What was typed, while this form produced the page; else the defaults.
    let val = |v: Option<&str>, default: &'static str| -> String {
        match (mine, v) {
            (true, Some(v)) => v.to_owned(),
            _ => default.to_owned(),
        }
    };
    let example = f.example().parts.timestamp_ms;
    let example_ms = if layout.contains(Field::Timestamp, example) {
        example
    } else {
        layout.min_timestamp_ms()
    }
    .to_string();
    // The timestamp and the picker show the same time: the one typed in
    // either fills the other (a blank timestamp stays blank: it means now).
    let typed = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
    let (timestamp, at) = match (&page.outcome, page.mode) {
        (Outcome::Id(b, _), Mode::Compose) if typed(&q.timestamp) || typed(&q.at) => (
            q.timestamp
                .clone()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| b.timestamp_ms.to_string()),
            local(b.timestamp_ms),
        ),
        _ => (val(q.timestamp.as_deref(), ""), val(q.at.as_deref(), "")),
    };
    // The layout's fields below the time, each with its label and range.
    let fields: Vec<(String, String, String)> = if layout == Layout::TWITTER {
        [
            ("datacenter", t.datacenter_label, Field::Datacenter),
            ("worker", t.worker_label, Field::Worker),
            ("sequence", t.sequence_label, Field::Sequence),
        ]
        .into_iter()
        .map(|(name, label, field)| {
            let value = val(q.field_value(name).ok().flatten(), "0");
            (
                name.to_owned(),
                format!("{label} ({})", page.range(field)),
                value,
            )
        })
        .collect()
    } else {
        layout
            .node_fields()
            .map(|field| {
                let name = field.name();
                let label = format!("{} (0–{})", (t.seg_label)(name), field.max());
                let value = val(q.field_value(name).ok().flatten(), "0");
                (name.to_owned(), label, value)
            })
            .collect()
    };
    html! {
        section #compose .card aria-labelledby="compose-h" {
            h2 #compose-h { (t.compose_heading) }
            // The answer lands where the reader looks: on the result.
            form #compose-form method="get" action="/#result" novalidate {
                (lang_hidden(page))
                (layout_select(page, "compose-layout"))
                noscript { p.hint { (t.compose_noscript) } }
                div.ts-row {
                    (TextField {
                        name: "timestamp",
                        label: t.timestamp_label,
                        value: &timestamp,
                        hint: Some(&(t.timestamp_hint)(f)),
                        placeholder: Some(&example_ms),
                        numeric: true,
                    }.render(page))
                    button #now .secondary type="button" hidden { (t.now_button) }
                }
                (picker(page, "at", t.picker_label, &at, Some(layout.range(Field::Timestamp))))
                // The script replaces these when the layout changes.
                div.trio #compose-fields data-layout=(layout.to_param()) {
                    @for (name, label, value) in &fields {
                        (TextField {
                            name,
                            label,
                            value,
                            hint: None,
                            placeholder: None,
                            numeric: true,
                        }.render(page))
                    }
                    // Which layout these fields are, so that a submit after
                    // the select changed (without JavaScript) is understood.
                    input type="hidden" name="fields_of" value=(layout.to_param());
                }
                button type="submit" { (t.compose_submit) }
            }
        }
    }
}
