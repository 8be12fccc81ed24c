//! What the forms share: a labelled text field with its hint and inline
//! error, and the hidden `lang` that keeps a chosen language.

use maud::{Markup, html};
use snowmint::Layout;
use snowmint::sql::Dialect;

use super::Page;

/// A labelled text input.
pub(super) struct TextField<'a> {
    /// The input's `id` and `name` (and the prefix of its hint and error).
    pub name: &'a str,
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

/// A `datetime-local` value: ISO-8601 without the zone (the pickers are
/// labelled UTC).
pub(super) fn local(ms: u64) -> String {
    let iso = snowmint::time::Iso8601(ms as i64).to_string();
    iso.trim_end_matches('Z').to_owned()
}

/// A labelled date and time picker (UTC, to the millisecond) with its
/// inline error; `bounds` are Unix ms.
pub(super) fn picker(
    page: &Page,
    name: &'static str,
    label: &str,
    value: &str,
    bounds: Option<(u64, u64)>,
) -> Markup {
    let error = page.error_for(name);
    let error_id = format!("{name}-error");
    html! {
        div.field {
            label for=(name) { (label) }
            input id=(name) type="datetime-local" step="0.001" name=(name) value=(value)
                min=[bounds.map(|(min, _)| local(min))] max=[bounds.map(|(_, max)| local(max))]
                aria-describedby=(error_id) aria-invalid=[error.map(|_| "true")];
            p.error id=(error_id) hidden[error.is_none()] { (error.unwrap_or("")) }
        }
    }
}

/// The layout select: the core's presets, Twitter's (the default) first.
/// `id` tells the decode and range forms' selects apart; both are named
/// `layout`.
pub(super) fn layout_select(page: &Page, id: &str) -> Markup {
    let t = page.t;
    let q = page.q;
    let typed_custom = q.layout.as_deref().map(str::trim) == Some("custom");
    let chosen = page.layout;
    let custom = typed_custom || !chosen.is_preset();
    let hint_id = format!("{id}-hint");
    // The custom parts: as typed, or spelled from a shared spec.
    let (epoch, unit, fields) = if typed_custom {
        let v = |v: &Option<String>| v.clone().unwrap_or_default();
        (v(&q.layout_epoch), v(&q.layout_unit), v(&q.layout_fields))
    } else if custom {
        // The core's spec, in parts; the unit in ms as the page has always
        // shown it (the spec writes whole seconds as `Ns`), blank for 1 ms.
        let spec = chosen.spec();
        let part = |key: &str| {
            spec.split(';')
                .find_map(|part| part.strip_prefix(key))
                .unwrap_or_default()
                .to_owned()
        };
        let unit = match chosen.unit_ms() {
            1 => String::new(),
            unit => format!("{unit}ms"),
        };
        (part("epoch="), unit, part("fields="))
    } else {
        Default::default()
    };
    // Every form has a layout: the error goes to the one submitted.
    let form = match id {
        "compose-layout" => super::Mode::Compose,
        "range-layout" => super::Mode::Range,
        _ => super::Mode::Decode,
    };
    let error = page.error_for("layout").filter(|_| page.mode == form);
    let error_id = format!("{id}-error");
    let part = |suffix: &str,
                name: &'static str,
                label: &str,
                hint: &str,
                value: &str,
                placeholder: &str| {
        let input_id = format!("{id}-{suffix}");
        let hint_id = format!("{input_id}-hint");
        html! {
            div.field {
                label for=(input_id) { (label) }
                input id=(input_id) name=(name) value=(value) autocomplete="off" spellcheck="false"
                    placeholder=(placeholder) aria-describedby={ (hint_id) " " (error_id) }
                    aria-invalid=[error.map(|_| "true")];
                p.hint id=(hint_id) { (hint) }
            }
        }
    };
    html! {
        div.field {
            label for=(id) { (t.layout_label) }
            select id=(id) name="layout" aria-describedby=(hint_id) {
                @for layout in Layout::PRESETS {
                    option value=(layout.name()) selected[layout == chosen && !typed_custom] {
                        (display_name(layout, t))
                        @if layout == Layout::TWITTER { " (" (t.layout_default) ")" }
                    }
                }
                option value="custom" selected[custom] { (t.layout_custom) }
            }
            p.hint id=(hint_id) { (t.layout_hint) }
        }
        // Hidden unless Custom… is chosen; shown always without JavaScript
        // (assets/noscript.css), so the form still works.
        fieldset.custom-layout id={ (id) "-custom" } hidden[!custom] {
            legend { (t.custom_legend) }
            p.hint { (t.custom_hint) }
            (part("epoch", "layout_epoch", t.custom_epoch, t.custom_epoch_hint, &epoch, "2020-01-01"))
            (part("unit", "layout_unit", t.custom_unit, t.custom_unit_hint, &unit, "1ms"))
            (part("fields", "layout_fields", t.custom_fields, t.custom_fields_hint, &fields,
                "timestamp:41,machine:10,sequence:12"))
            p.error id=(error_id) role="alert" hidden[error.is_none()] { (error.unwrap_or("")) }
        }
    }
}

/// The SQL dialect select of the range form: PostgreSQL (the default),
/// MySQL / MariaDB, SQLite.
pub(super) fn dialect_select(page: &Page) -> Markup {
    let t = page.t;
    let chosen = page.dialect();
    html! {
        div.field {
            label for="range-dialect" { (t.dialect_label) }
            select id="range-dialect" name="dialect" aria-describedby="range-dialect-hint" {
                @for dialect in Dialect::ALL {
                    option value=(dialect.name()) selected[dialect == chosen] {
                        (dialect_name(dialect))
                    }
                }
            }
            p.hint id="range-dialect-hint" { (t.dialect_hint) }
        }
    }
}

/// A dialect's name as people write it.
pub(super) fn dialect_name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "PostgreSQL",
        Dialect::Mysql => "MySQL / MariaDB",
        Dialect::Sqlite => "SQLite",
    }
}

/// A layout's name as people write it: `Discord`, or the page's word for a
/// custom layout.
pub(super) fn display_name(layout: Layout, t: &crate::routes::page::i18n::Text) -> String {
    if !layout.is_preset() {
        return t.layout_custom.trim_end_matches(['…', ' ']).to_owned();
    }
    let name = layout.name();
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
