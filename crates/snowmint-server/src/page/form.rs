//! What the forms share: a labelled text field with its hint and inline
//! error, and the hidden `lang` that keeps a chosen language.

use maud::{Markup, html};

use super::Page;

/// A labelled text input.
pub(super) struct TextField<'a> {
    /// The input's `id` and `name` (and the prefix of its hint and error).
    pub name: &'static str,
    pub label: &'a str,
    pub value: &'a str,
    pub hint: Option<&'a str>,
    pub placeholder: Option<&'a str>,
    /// Phones show a number pad.
    pub numeric: bool,
}

impl TextField<'_> {
    /// The field, marked invalid with its message when the page's outcome
    /// is an error about it. The error paragraph is always there (hidden
    /// when empty) so the script can fill it in.
    pub(super) fn render(&self, page: &Page) -> Markup {
        let name = self.name;
        let error = page.error_for(name);
        let hint_id = format!("{name}-hint");
        let error_id = format!("{name}-error");
        let described = match self.hint {
            Some(_) => format!("{hint_id} {error_id}"),
            None => error_id.clone(),
        };
        html! {
            div.field {
                label for=(name) { (self.label) }
                input id=(name) name=(name) value=(self.value) autocomplete="off"
                    spellcheck="false" aria-describedby=(described)
                    aria-invalid=[error.map(|_| "true")]
                    inputmode=[self.numeric.then_some("numeric")]
                    placeholder=[self.placeholder];
                @if let Some(hint) = self.hint {
                    p.hint id=(hint_id) { (hint) }
                }
                p.error id=(error_id) hidden[error.is_none()] { (error.unwrap_or("")) }
            }
        }
    }
}

/// `<input type=hidden name=lang>` when the query chose the language, so
/// a submitted form stays in it.
pub(super) fn lang_hidden(page: &Page) -> Markup {
    html! {
        @if page.explicit_lang {
            input type="hidden" name="lang" value=(page.lang.code());
        }
    }
}
