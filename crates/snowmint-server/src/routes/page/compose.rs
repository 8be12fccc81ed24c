//! The compose panel: four values in, one ID out.

use maud::{Markup, html};
use snowmint::{Field, Layout};

use super::form::{TextField, lang_hidden, local, picker};
use super::{Mode, Outcome, Page, PageQuery};
use crate::routes::api;
use crate::routes::page::i18n::Lang;

/// Composes the query's four values. `at` (the date picker) counts only
/// when no timestamp is typed; a first visit (no query) shows datacenter
/// 0, worker 0, sequence 0 now.
pub(super) fn outcome(q: &PageQuery, lang: Lang, now_ms: u64) -> Outcome {
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
    let (ts_input, ts_field) = if blank(&q.timestamp) && !blank(&q.at) {
        (q.at.as_deref(), "at")
    } else {
        (q.timestamp.as_deref(), "timestamp")
    };
    let dc = q.datacenter.as_deref().unwrap_or("0");
    let w = q.worker.as_deref().unwrap_or("0");
    let seq = q.sequence.as_deref().unwrap_or("0");
    match api::compose_typed(ts_input, dc, w, seq, now_ms) {
        Ok(id) => Outcome::Id(id.breakdown(), Layout::TWITTER),
        Err(e) => {
            // Point at the field the core refused, with what was typed there.
            let (name, typed) = match e.field() {
                Field::Datacenter => ("datacenter", dc),
                Field::Worker => ("worker", w),
                Field::Sequence => ("sequence", seq),
                _ => (ts_field, ts_input.unwrap_or("")),
            };
            Outcome::Invalid(name, lang.field_error(&e, typed))
        }
    }
}

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    let q = page.q;
    let f = page.facts;
    // What was typed, while this form produced the page; else the defaults.
    let val = |v: &Option<String>, default: &'static str| -> String {
        match (page.mode, v) {
            (Mode::Compose, Some(v)) => v.clone(),
            _ => default.to_owned(),
        }
    };
    let example_ms = f.example().parts.timestamp_ms.to_string();
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
        _ => (val(&q.timestamp, ""), val(&q.at, "")),
    };
    html! {
        section #compose .card aria-labelledby="compose-h" {
            h2 #compose-h { (t.compose_heading) }
            form #compose-form method="get" action="/" novalidate {
                (lang_hidden(page))
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
                (picker(page, "at", t.picker_label, &at, Some(f.range(Field::Timestamp))))
                div.trio {
                    @for (name, label, value, field) in [
                        ("datacenter", t.datacenter_label, &q.datacenter, Field::Datacenter),
                        ("worker", t.worker_label, &q.worker, Field::Worker),
                        ("sequence", t.sequence_label, &q.sequence, Field::Sequence),
                    ] {
                        (TextField {
                            name,
                            label: &format!("{label} ({})", page.range(field)),
                            value: &val(value, "0"),
                            hint: None,
                            placeholder: None,
                            numeric: true,
                        }.render(page))
                    }
                }
                button type="submit" { (t.compose_submit) }
            }
        }
    }
}
