//! The explorer page: server-rendered HTML that works without JavaScript
//! (the forms submit with GET, so every result has a URL), made live by
//! `assets/app.js`, which fetches the same page for new input and swaps the
//! result in. IDs are only ever strings (or `BigInt`) in the browser.
//!
//! # Layout
//!
//! - this file: the route, what the query asks for ([`Page`]) and the
//!   frame around the panels (head, header, footer);
//! - one file per panel, each a `panel(&Page) -> Markup`: [`compose`],
//!   [`decode`], [`range`], [`result`], [`live`], [`limits`] and the
//!   explanatory [`guide`]. A new panel is a new file and one line in
//!   [`frame`]; [`list`] is the decode panel's table of many IDs, and
//!   [`detect`] says which system made them;
//! - [`form`]: the labelled field with hint and inline error the forms
//!   share; [`link`]: the page's own URLs;
//! - [`facts`]: every number the page states about the format, derived
//!   from the core's layout; [`assets`]: the embedded CSS, JS and icons;
//!   [`social`]: Discord's markup, the local time and Open Graph tags.
//!
//! HTML is written with maud templates, which escape every value; nothing
//! here writes unescaped text.

mod assets;
mod compose;
mod decode;
mod detect;
pub(crate) mod facts;
mod form;
mod guide;
pub(crate) mod i18n;
mod lab;
mod limits;
mod link;
mod list;
mod live;
mod range;
mod result;
mod social;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use snowmint::{Breakdown, Encoding, Field, IdSpan, Layout};

pub(crate) use self::assets::{asset, favicon};
use self::facts::{FACTS, Facts};
use crate::routes::page::i18n::{Lang, Text};
use crate::routes::params;
use crate::routes::state::AppState;

/// The Content-Security-Policy of the page. Everything it needs comes from
/// this server; no inline script or style, so a reflected value could never
/// run.
const CSP: &str = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Query of the page: the compose fields; `id` or `ids` (+ `from`,
/// `layout`, `sort`) to decode; `range_from`, `range_to` (+ their pickers
/// and `layout`) for an ID range. Each value as typed.
#[derive(Debug, Default)]
pub(crate) struct PageQuery {
    timestamp: Option<String>,
    at: Option<String>,
    datacenter: Option<String>,
    worker: Option<String>,
    sequence: Option<String>,
    id: Option<String>,
    /// Many IDs, one a line (the decode panel's list).
    ids: Option<String>,
    from: Option<String>,
    layout: Option<String>,
    /// A custom layout's parts, read when `layout` is `custom`.
    layout_epoch: Option<String>,
    layout_unit: Option<String>,
    layout_fields: Option<String>,
    /// The list's order: a column key, `-` first for descending.
    sort: Option<String>,
    range_from: Option<String>,
    range_from_at: Option<String>,
    range_to: Option<String>,
    range_to_at: Option<String>,
    /// The range panel's SQL dialect.
    dialect: Option<String>,
    lang: Option<String>,
    /// The layout the compose form's fields were drawn for: after the
    /// layout select changed without JavaScript, the fields submitted are
    /// that layout's, known though the chosen layout has others.
    fields_of: Option<String>,
    /// Every other parameter whose name could be a layout's field (the
    /// compose form's fields beyond datacenter, worker and sequence), in
    /// query order, at most [`MAX_EXTRA`] of them.
    extra: Vec<(String, String)>,
    /// The first parameter that can be no field of any layout (or one past
    /// [`MAX_EXTRA`]): refused.
    unknown: Option<String>,
}

/// The most parameters kept beyond the page's own: room for every field of
/// a layout twice over, a bound on what one query makes the page hold.
const MAX_EXTRA: usize = 2 * snowmint::MAX_FIELDS;

/// The page's own parameters, which a layout's field may not be named for
/// the compose form to hold it (`datacenter`, `worker` and `sequence` are
/// Twitter's fields, `timestamp` the time of every layout).
pub(crate) const RESERVED: [&str; 16] = [
    "at",
    "id",
    "ids",
    "from",
    "layout",
    "layout_epoch",
    "layout_unit",
    "layout_fields",
    "sort",
    "range_from",
    "range_from_at",
    "range_to",
    "range_to_at",
    "dialect",
    "lang",
    "fields_of",
];

impl PageQuery {
    /// Reads the query's pairs. A parameter the page knows that is given
    /// more than once is not guessed at: it is returned (the first such
    /// in query order) and the page reports it, as the API refuses it.
    /// A parameter that can be no layout's field is kept in `unknown`, and
    /// [`refusal`](PageQuery::refusal) refuses it, as the API does.
    fn from_pairs(pairs: Vec<(String, String)>) -> (PageQuery, Option<&'static str>) {
        let mut q = PageQuery::default();
        let mut repeated = None;
        for (key, value) in pairs {
            let Some((name, slot)) = q.slot(&key) else {
                if q.extra.len() < MAX_EXTRA && snowmint::FieldName::new(&key).is_some() {
                    q.extra.push((key, value));
                } else if q.unknown.is_none() {
                    q.unknown = Some(key);
                }
                continue;
            };
            if slot.is_some() {
                repeated = repeated.or(Some(name));
            } else {
                *slot = Some(value);
            }
        }
        (q, repeated)
    }

    /// The field a query key fills, and the key's own static name.
    fn slot(&mut self, key: &str) -> Option<(&'static str, &mut Option<String>)> {
        Some(match key {
            "timestamp" => ("timestamp", &mut self.timestamp),
            "at" => ("at", &mut self.at),
            "datacenter" => ("datacenter", &mut self.datacenter),
            "worker" => ("worker", &mut self.worker),
            "sequence" => ("sequence", &mut self.sequence),
            "id" => ("id", &mut self.id),
            "ids" => ("ids", &mut self.ids),
            "from" => ("from", &mut self.from),
            "layout" => ("layout", &mut self.layout),
            "layout_epoch" => ("layout_epoch", &mut self.layout_epoch),
            "layout_unit" => ("layout_unit", &mut self.layout_unit),
            "layout_fields" => ("layout_fields", &mut self.layout_fields),
            "sort" => ("sort", &mut self.sort),
            "range_from" => ("range_from", &mut self.range_from),
            "range_from_at" => ("range_from_at", &mut self.range_from_at),
            "range_to" => ("range_to", &mut self.range_to),
            "range_to_at" => ("range_to_at", &mut self.range_to_at),
            "dialect" => ("dialect", &mut self.dialect),
            "lang" => ("lang", &mut self.lang),
            "fields_of" => ("fields_of", &mut self.fields_of),
            _ => return None,
        })
    }

    /// Every parameter that is set, in form order (for the language link).
    fn pairs(&self) -> Vec<(&str, &str)> {
        [
            ("timestamp", &self.timestamp),
            ("at", &self.at),
            ("datacenter", &self.datacenter),
            ("worker", &self.worker),
            ("sequence", &self.sequence),
            ("id", &self.id),
            ("ids", &self.ids),
            ("from", &self.from),
            ("layout", &self.layout),
            ("layout_epoch", &self.layout_epoch),
            ("layout_unit", &self.layout_unit),
            ("layout_fields", &self.layout_fields),
            ("sort", &self.sort),
            ("range_from", &self.range_from),
            ("range_from_at", &self.range_from_at),
            ("range_to", &self.range_to),
            ("range_to_at", &self.range_to_at),
            ("dialect", &self.dialect),
            ("fields_of", &self.fields_of),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .chain(self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .collect()
    }

    /// What was typed for the compose form's field `name`: `Err` when it
    /// is given more than once (the page's own parameters are checked for
    /// that as they are read).
    fn field_value(&self, name: &str) -> Result<Option<&str>, ()> {
        let own = match name {
            "datacenter" => &self.datacenter,
            "worker" => &self.worker,
            "sequence" => &self.sequence,
            _ => {
                let mut given = self.extra.iter().filter(|(k, _)| k == name);
                let first = given.next().map(|(_, v)| v.as_str());
                return match given.next() {
                    Some(_) => Err(()),
                    None => Ok(first),
                };
            }
        };
        Ok(own.as_deref())
    }

    /// The layout chosen: a preset or a spec in `layout`, read as the API
    /// reads it (missing or empty is Twitter's, whitespace alone refused),
    /// or with `layout` `custom` the spec its three parts spell (a blank
    /// unit is 1 ms).
    fn chosen_layout(&self) -> Result<Layout, snowmint::Error> {
        match self.layout.as_deref() {
            Some(text) if text.trim() == "custom" => {
                let part = |v: &Option<String>| v.as_deref().unwrap_or("").trim().to_owned();
                let unit = Some(part(&self.layout_unit))
                    .filter(|u| !u.is_empty())
                    .unwrap_or_else(|| "1ms".to_owned());
                Layout::parse(&format!(
                    "epoch={};unit={unit};fields={}",
                    part(&self.layout_epoch),
                    part(&self.layout_fields)
                ))
            }
            other => params::layout_param(other),
        }
    }

    /// A parameter the page refuses as such, read through the API's own
    /// parsers so that the page refuses what the API refuses: one that no
    /// form has (a field only when the chosen layout, or the one the
    /// compose fields were drawn for, has it), or a `from`, `dialect` or
    /// `sort` that is none of its choices. Its name and the message.
    fn refusal(&self, chosen: Option<Layout>, lang: Lang) -> Option<(Cow<'static, str>, String)> {
        let t = lang.text();
        let unknown = |name: &str| {
            Some((
                name.to_owned().into(),
                (t.unknown_param)(&params::echo(name)),
            ))
        };
        if let Some(name) = &self.unknown {
            return unknown(name);
        }
        // The form writes a layout here; anything else is refused.
        let drawn = match params::layout_param(self.fields_of.as_deref()) {
            Ok(drawn) => self.fields_of.as_ref().map(|_| drawn),
            Err(e) => return Some(("fields_of".into(), lang.layout_error(&e))),
        };
        // A bad layout is the outcome's to report; its fields are unknown.
        if let Some(chosen) = chosen {
            let known = |name: &str| {
                [Some(chosen), drawn]
                    .into_iter()
                    .flatten()
                    .any(|l| l.node_fields().any(|f| f.name() == name))
            };
            // Twitter's fields too: `datacenter` is no field of Discord's,
            // and is refused as the API refuses it, not dropped.
            let own = [
                ("datacenter", &self.datacenter),
                ("worker", &self.worker),
                ("sequence", &self.sequence),
            ]
            .into_iter()
            .filter(|(_, v)| v.is_some())
            .map(|(name, _)| name);
            let mut given = self.extra.iter().map(|(name, _)| name.as_str()).chain(own);
            if let Some(name) = given.find(|name| !known(name)) {
                return unknown(name);
            }
        }
        let choice = |name: &'static str, choices: &str, got: &str| {
            Some((
                name.into(),
                (t.bad_choice)(name, choices, &params::echo(got)),
            ))
        };
        if let Some(from) = self.from.as_deref()
            && params::encoding(Some(from)).is_err()
        {
            return choice("from", &Encoding::ALL.map(Encoding::name).join(", "), from);
        }
        if let Some(dialect) = self.dialect.as_deref().filter(|d| !d.is_empty())
            && snowmint::sql::Dialect::parse_for("dialect", dialect).is_err()
        {
            return choice(
                "dialect",
                &snowmint::sql::Dialect::NAMES.join(", "),
                dialect,
            );
        }
        if let Some(sort) = self.sort.as_deref()
            && list::Sort::parse(Some(sort)).is_err()
        {
            return choice("sort", list::SORT_CHOICES, sort);
        }
        // A language this page does not have is refused (in the language
        // the request's Accept-Language chose), never silently replaced.
        if let Some(tag) = self.lang.as_deref().filter(|l| !l.trim().is_empty())
            && Lang::from_tag(tag).is_none()
        {
            return choice("lang", "en, nb (also no, nn)", tag);
        }
        None
    }

    /// Which form the query came from.
    fn mode(&self) -> Mode {
        let filled = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
        if self.id.is_some() || filled(&self.ids) {
            Mode::Decode
        } else if self.range_from.is_some()
            || self.range_to.is_some()
            || self.range_from_at.is_some()
            || self.range_to_at.is_some()
        {
            Mode::Range
        } else {
            Mode::Compose
        }
    }
}

/// What the page shows.
enum Outcome {
    /// One ID, read in a layout.
    Id(Breakdown, Layout),
    /// Many IDs (the decode panel's list), in the order asked for.
    List(list::List),
    /// The IDs of a time span.
    Span(IdSpan, Layout),
    /// The first bad field (its form-field name) and the message.
    Invalid(Cow<'static, str>, String),
    /// A parameter refused as such (its name) and the message: given more
    /// than once, unknown, or none of its choices. The page answers 400.
    Refused(Cow<'static, str>, String),
}

/// Which form produced the result.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Mode {
    Compose,
    Decode,
    Range,
}

/// One rendering of the page: the request, its outcome, and what every
/// panel needs to draw itself.
struct Page<'a> {
    t: &'static Text,
    lang: Lang,
    /// Whether `?lang=` chose the language (links then keep it).
    explicit_lang: bool,
    q: &'a PageQuery,
    mode: Mode,
    /// The layout the query chose (decode and range), Twitter's when
    /// missing or not a valid layout (the outcome then says why).
    layout: Layout,
    outcome: Outcome,
    state: &'a AppState,
    facts: &'static Facts,
}

/// `GET /`: the explorer.
pub(crate) async fn index(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Response {
    // Pairs, not a struct, so a repeated parameter can be named (a struct
    // would refuse the whole query and show a blank page).
    let pairs = query.map(|Query(pairs)| pairs).unwrap_or_default();
    let (q, repeated) = PageQuery::from_pairs(pairs);
    let accept = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let lang = Lang::choose(q.lang.as_deref(), accept);
    // The same test `choose` applies, so `?lang=no` is kept in links too.
    let explicit_lang = q.lang.as_deref().and_then(Lang::from_tag).is_some();
    let mode = q.mode();
    // The layout is read once, for the refusal, the outcome and the panels.
    let chosen = q.chosen_layout();
    let refusal = match repeated {
        Some(name) => Some((name.into(), (lang.text().repeated)(name))),
        None => q.refusal(chosen.as_ref().ok().copied(), lang),
    };
    let outcome = match (refusal, &chosen) {
        (Some((name, msg)), _) => Outcome::Refused(name, msg),
        // A bad layout is what every form reports first.
        (None, Err(e)) => Outcome::Invalid("layout".into(), lang.layout_error(e)),
        (None, Ok(layout)) => match mode {
            Mode::Decode => decode::outcome(&q, *layout, lang),
            Mode::Compose => compose::outcome(&q, *layout, lang, state.now_ms()),
            Mode::Range => range::outcome(&q, *layout, lang, state.now_ms()),
        },
    };
    let status = match outcome {
        Outcome::Refused(..) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    let page = Page {
        t: lang.text(),
        lang,
        explicit_lang,
        q: &q,
        mode,
        layout: chosen.unwrap_or(Layout::TWITTER),
        outcome,
        state: &state,
        facts: &FACTS,
    };
    (
        status,
        [
            (header::VARY, HeaderValue::from_static("Accept-Language")),
            (
                header::CONTENT_LANGUAGE,
                HeaderValue::from_static(lang.code()),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        Html(frame(&page).into_string()),
    )
        .into_response()
}

impl Page<'_> {
    /// The inline error of the form field `name`, if the outcome is one.
    fn error_for(&self, name: &str) -> Option<&str> {
        match &self.outcome {
            Outcome::Invalid(field, msg) if *field == name => Some(msg),
            Outcome::Refused(field, msg) if *field == name => Some(msg),
            _ => None,
        }
    }

    /// The SQL dialect the range form chose, PostgreSQL's when missing or
    /// empty (a bad one is refused before: see `PageQuery::refusal`).
    fn dialect(&self) -> snowmint::sql::Dialect {
        self.q
            .dialect
            .as_deref()
            .and_then(|d| d.parse().ok())
            .unwrap_or(snowmint::sql::Dialect::Postgres)
    }

    /// `lang` for links: kept only when the query chose it.
    fn lang_param(&self) -> &'static str {
        if self.explicit_lang {
            self.lang.code()
        } else {
            ""
        }
    }

    /// A field's range as a label shows it: `0–31`.
    fn range(&self, field: Field) -> String {
        let (min, max) = self.facts.range(field);
        format!("{min}–{max}")
    }
}

/// The whole document: head, header, the panels in order, footer.
fn frame(page: &Page) -> Markup {
    let t = page.t;
    let f = page.facts;
    let l = f.layout;
    let example = f.example();
    let (_, max_count) = f.range(Field::Count);
    html! {
        (DOCTYPE)
        html lang=(page.lang.code()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (t.title) }
                meta name="description" content=(t.description);
                (social::og_tags(page))
                link rel="icon" href="/favicon.ico" sizes="32x32";
                link rel="icon" href="/assets/favicon.svg" type="image/svg+xml";
                link rel="stylesheet" href="/assets/app.css";
                // What the script would show or hide, for a browser without it.
                noscript { link rel="stylesheet" href="/assets/noscript.css"; }
                script src="/assets/app.js" defer {}
            }
            // What the script needs: messages in the page's language and
            // the layout's numbers, so that it never carries its own.
            body data-copied=(t.copied) data-live-failed=(t.live_failed)
                data-live-seq=(t.live_seq) data-count-error=((t.live_count_error)(f))
                data-epoch=(l.epoch_ms()) data-timestamp-shift=(l.timestamp_shift())
                data-max-sequence=(l.max_sequence()) data-max-count=(max_count) {
                a.skip href="#result" { (t.skip) }
                header.top {
                    div { h1 { "snowmint" } p.tagline { (t.tagline) } }
                    nav aria-label=(t.language) {
                        a #lang-switch href=(link::switch(page)) hreflang=(page.lang.other().code())
                            lang=(page.lang.other().code()) { (t.switch) }
                    }
                }
                main {
                    div.forms {
                        (compose::panel(page))
                        (decode::panel(page))
                        (range::panel(page))
                    }
                    (result::panel(page))
                    (lab::panel(page))
                    (live::panel(page))
                    (limits::panel(page))
                    (guide::panel(page))
                }
                footer {
                    h2 { (t.api_heading) }
                    p {
                        (t.api_text) " "
                        a href=(link::example(page, "/api/v1/compose", "")) {
                            code { "GET /api/v1/compose" }
                        }
                        ", "
                        a href={ "/api/v1/decode/" (example.id) } { code { "GET /api/v1/decode/{id}" } }
                        ", "
                        a href="/api/v1/range?from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:00Z" {
                            code { "GET /api/v1/range" }
                        }
                        ", " code { "POST /api/v1/ids?count=N" } ", "
                        a href="/api/v1/openapi.json" { code { "/api/v1/openapi.json" } }
                        @if page.state.metrics_on_public() {
                            ", "
                            a href="/metrics" { code { "/metrics" } }
                        }
                        "."
                    }
                }
            }
        }
    }
}
