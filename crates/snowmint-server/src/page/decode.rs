//! The decode panel: one ID in (decimal, hex or base32), its values out.

use maud::{Markup, html};
use snowmint::Encoding;

use super::form::{TextField, lang_hidden};
use super::{Mode, Outcome, Page, PageQuery};
use crate::i18n::Lang;

/// The form chosen in the decode form's `from` (decimal when missing or
/// unknown: the page offers only valid choices).
fn encoding_of(q: &PageQuery) -> Encoding {
    q.from
        .as_deref()
        .and_then(|f| f.parse().ok())
        .unwrap_or_default()
}

/// Decodes the query's `id`, read in the chosen form.
pub(super) fn outcome(q: &PageQuery, lang: Lang) -> Outcome {
    let typed = q.id.as_deref().unwrap_or("");
    match encoding_of(q).parse(typed) {
        Ok(id) => Outcome::Id(id.breakdown()),
        Err(e) => Outcome::Invalid("id", lang.field_error(&e, typed)),
    }
}

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    let id_value = match page.mode {
        Mode::Decode => page.q.id.clone().unwrap_or_default(),
        Mode::Compose => String::new(),
    };
    let example_id = page.facts.example().id.to_string();
    let from = encoding_of(page.q);
    html! {
        section .card aria-labelledby="decode-h" {
            h2 #decode-h { (t.decode_heading) }
            form #decode-form method="get" action="/" novalidate {
                (lang_hidden(page))
                (TextField {
                    name: "id",
                    label: t.id_label,
                    value: &id_value,
                    hint: Some(&(t.id_hint)(page.facts)),
                    placeholder: Some(&example_id),
                    numeric: false,
                }.render(page))
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
                button type="submit" { (t.decode_submit) }
            }
        }
    }
}
