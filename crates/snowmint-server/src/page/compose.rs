//! The compose panel: four values in, one ID out.

use maud::{Markup, html};
use snowmint::Field;

use super::form::{TextField, lang_hidden};
use super::{Mode, Outcome, Page, PageQuery};
use crate::api;
use crate::i18n::Lang;

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
        Ok(id) => Outcome::Id(id.breakdown()),
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

/// A `datetime-local` value: ISO-8601 without the zone (the picker is
/// labelled UTC).
fn local(ms: u64) -> String {
    let iso = snowmint::time::Iso8601(ms as i64).to_string();
    iso.trim_end_matches('Z').to_owned()
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
    let (min_ms, max_ms) = f.range(Field::Timestamp);
    let at_error = page.error_for("at");
    html! {
        section #compose .card aria-labelledby="compose-h" {
            h2 #compose-h { (t.compose_heading) }
            form #compose-form method="get" action="/" novalidate {
                (lang_hidden(page))
                div.ts-row {
                    (TextField {
                        name: "timestamp",
                        label: t.timestamp_label,
                        value: &val(&q.timestamp, ""),
                        hint: Some(&(t.timestamp_hint)(f)),
                        placeholder: Some(&example_ms),
                        numeric: true,
                    }.render(page))
                    button #now .secondary type="button" hidden { (t.now_button) }
                }
                div.field {
                    label for="at" { (t.picker_label) }
                    input #at type="datetime-local" step="0.001" name="at" value=(val(&q.at, ""))
                        min=(local(min_ms)) max=(local(max_ms)) aria-describedby="at-error"
                        aria-invalid=[at_error.map(|_| "true")];
                    p.error #at-error hidden[at_error.is_none()] { (at_error.unwrap_or("")) }
                }
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
