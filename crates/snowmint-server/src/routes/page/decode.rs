//! The decode panel: one ID in (decimal, hex or base32), or a pasted list
//! of them, read in a layout; its values out.

use maud::{Markup, html};
use snowmint::{Encoding, Layout};

use super::form::{TextField, lang_hidden, layout_select};
use super::{Mode, Outcome, Page, PageQuery, list};
use crate::routes::page::i18n::Lang;
use crate::routes::params;

/// The form chosen in the decode form's `from`, read as the API reads it
/// (decimal when missing or empty; a bad one is refused before the page
/// gets here, see `PageQuery::refusal`).
fn encoding_of(q: &PageQuery) -> Encoding {
    params::encoding(q.from.as_deref()).unwrap_or_default()
}

/// Decodes the query's `ids` (when it holds any) as a list, else its `id`,
/// read in the chosen form and layout.
pub(super) fn outcome(q: &PageQuery, layout: Layout, lang: Lang) -> Outcome {
    let encoding = encoding_of(q);
    if let Some(ids) = q.ids.as_deref().filter(|s| !s.trim().is_empty()) {
        return match list::List::parse(ids, encoding, layout, q.sort.as_deref(), lang) {
            Ok(list) => Outcome::List(list),
            Err(msg) => Outcome::Invalid("ids".into(), msg),
        };
    }
    let typed = q.id.as_deref().unwrap_or("");
    match params::decode_id(encoding, &layout, typed) {
        Ok(id) => Outcome::Id(layout.breakdown(id), layout),
        Err(e) => Outcome::Invalid("id".into(), lang.field_error(&e, typed)),
    }
}

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    let typed = |v: &Option<String>| match page.mode {
        Mode::Decode => v.clone().unwrap_or_default(),
        _ => String::new(),
    };
    let example_id = page.facts.example().id.to_string();
    let from = encoding_of(page.q);
    let ids_error = page.error_for("ids");
    html! {
        section #decode .card aria-labelledby="decode-h" {
            h2 #decode-h { (t.decode_heading) }
            // The answer lands where the reader looks: on the result.
            form #decode-form method="get" action="/#result" novalidate {
                (lang_hidden(page))
                (TextField {
                    name: "id",
                    label: t.id_label,
                    value: &typed(&page.q.id),
                    hint: Some(&(t.id_hint)(page.facts)),
                    placeholder: Some(&example_id),
                    numeric: false,
                }.render(page))
                div.field {
                    label for="ids" { (t.ids_label) }
                    textarea #ids name="ids" rows="3" autocomplete="off" spellcheck="false"
                        aria-describedby="ids-hint ids-error"
                        aria-invalid=[ids_error.map(|_| "true")] { (typed(&page.q.ids)) }
                    p.hint #ids-hint { ((t.ids_hint)(list::MAX_LINES)) }
                    p.error #ids-error hidden[ids_error.is_none()] { (ids_error.unwrap_or("")) }
                }
                div.field {
                    label for="from" { (t.from_label) }
                    select #from name="from" {
                        @for (enc, label) in [
                            (Encoding::Decimal, t.decimal),
                            (Encoding::Hex, t.hex),
                            (Encoding::Base32, t.base32),
                        ] {
                            option value=(enc.name()) selected[enc == from] { (label) }
                        }
                    }
                }
                (layout_select(page, "layout"))
                button type="submit" { (t.decode_submit) }
            }
        }
    }
}
