//! The explorer page: server-rendered HTML that works without JavaScript
//! (the forms submit with GET, so every result has a URL), made live by
//! `assets/app.js`, which fetches the same page for new input and swaps the
//! result in. IDs are only ever strings (or `BigInt`) in the browser.

use std::fmt::Write as _;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use snowmint::{Breakdown, Encoding, Field, TWITTER_EPOCH_MS};

use crate::AppState;
use crate::api;
use crate::error::ApiError;
use crate::i18n::{Lang, Text};

const CSS: &str = include_str!("../assets/app.css");
const JS: &str = include_str!("../assets/app.js");

/// `GET /assets/{file}`: the embedded stylesheet and script.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "app.css" => (CSS, "text/css; charset=utf-8"),
        "app.js" => (JS, "text/javascript; charset=utf-8"),
        _ => {
            return ApiError::new(StatusCode::NOT_FOUND, None, "no such asset").into_response();
        }
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
        ],
        body,
    )
        .into_response()
}

/// Query of the page: the compose fields, or `id` (+ `from`) to decode.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PageQuery {
    timestamp: Option<String>,
    at: Option<String>,
    datacenter: Option<String>,
    worker: Option<String>,
    sequence: Option<String>,
    id: Option<String>,
    from: Option<String>,
    lang: Option<String>,
}

/// Escapes text for HTML content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a query value.
fn url(s: &str) -> String {
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

/// Builds `/?k=v&...` from the non-empty pairs.
fn href(pairs: &[(&str, &str)]) -> String {
    let query: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", url(v)))
        .collect();
    if query.is_empty() {
        "/".to_owned()
    } else {
        format!("/?{}", query.join("&"))
    }
}

/// What the page shows.
enum Outcome {
    Id(Breakdown),
    /// The first bad field (its form-field name) and the message.
    Invalid(&'static str, String),
}

/// Which form produced the result.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Mode {
    Compose,
    Decode,
}

struct Page<'a> {
    t: &'static Text,
    lang: Lang,
    explicit_lang: bool,
    q: &'a PageQuery,
    mode: Mode,
    outcome: Outcome,
    state: &'a AppState,
}

/// `GET /`: the explorer.
pub(crate) async fn index(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = query.map(|Query(q)| q).unwrap_or_default();
    let accept = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let lang = Lang::choose(q.lang.as_deref(), accept);
    // The same test `choose` applies, so `?lang=no` is kept in links too.
    let explicit_lang = q.lang.as_deref().and_then(Lang::from_tag).is_some();
    let mode = if q.id.is_some() {
        Mode::Decode
    } else {
        Mode::Compose
    };
    let outcome = match mode {
        Mode::Decode => decode(&q, lang),
        Mode::Compose => compose(&q, lang, state.now_ms()),
    };
    let page = Page {
        t: lang.text(),
        lang,
        explicit_lang,
        q: &q,
        mode,
        outcome,
        state: &state,
    };
    (
        [
            (header::VARY, HeaderValue::from_static("Accept-Language")),
            (
                header::CONTENT_LANGUAGE,
                HeaderValue::from_static(lang.code()),
            ),
            // Everything the page needs comes from this server; no inline
            // script or style, so a reflected value could never run.
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
                ),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        Html(page.render()),
    )
        .into_response()
}

/// The form chosen in the decode form's `from` (decimal when missing or
/// unknown: the page offers only valid choices).
fn encoding_of(q: &PageQuery) -> Encoding {
    q.from
        .as_deref()
        .and_then(|f| f.parse().ok())
        .unwrap_or_default()
}

fn decode(q: &PageQuery, lang: Lang) -> Outcome {
    let typed = q.id.as_deref().unwrap_or("");
    match encoding_of(q).parse(typed) {
        Ok(id) => Outcome::Id(id.breakdown()),
        Err(e) => Outcome::Invalid("id", lang.field_error(&e, typed)),
    }
}

fn compose(q: &PageQuery, lang: Lang, now_ms: u64) -> Outcome {
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
    let (ts_input, ts_field) = if blank(&q.timestamp) && !blank(&q.at) {
        (q.at.as_deref(), "at")
    } else {
        (q.timestamp.as_deref(), "timestamp")
    };
    // A first visit (no query) shows datacenter 0, worker 0, sequence 0 now.
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

impl Page<'_> {
    fn error_for(&self, name: &str) -> Option<&str> {
        match &self.outcome {
            Outcome::Invalid(field, msg) if *field == name => Some(msg),
            _ => None,
        }
    }

    /// A labelled text input with its hint and inline error.
    fn input(
        &self,
        out: &mut String,
        name: &str,
        label: &str,
        value: &str,
        hint: Option<&str>,
        extra: &str,
    ) {
        let error = self.error_for(name);
        let mut described = Vec::new();
        if hint.is_some() {
            described.push(format!("{name}-hint"));
        }
        described.push(format!("{name}-error"));
        let _ = write!(
            out,
            r#"<div class="field"><label for="{name}">{label}</label><input id="{name}" name="{name}" value="{value}" autocomplete="off" spellcheck="false" aria-describedby="{described}"{invalid}{extra}>"#,
            label = esc(label),
            value = esc(value),
            described = described.join(" "),
            invalid = if error.is_some() {
                r#" aria-invalid="true""#
            } else {
                ""
            },
        );
        if let Some(hint) = hint {
            let _ = write!(out, r#"<p class="hint" id="{name}-hint">{}</p>"#, esc(hint));
        }
        let _ = write!(
            out,
            r#"<p class="error" id="{name}-error"{}>{}</p></div>"#,
            if error.is_some() { "" } else { " hidden" },
            esc(error.unwrap_or("")),
        );
    }

    fn lang_hidden(&self) -> String {
        if self.explicit_lang {
            format!(
                r#"<input type="hidden" name="lang" value="{}">"#,
                self.lang.code()
            )
        } else {
            String::new()
        }
    }

    /// The current query with `lang` set to the other language.
    fn switch_href(&self) -> String {
        let q = self.q;
        let other = self.lang.other().code();
        let mut pairs = vec![("lang", other)];
        let fields: [(&str, &Option<String>); 7] = [
            ("timestamp", &q.timestamp),
            ("at", &q.at),
            ("datacenter", &q.datacenter),
            ("worker", &q.worker),
            ("sequence", &q.sequence),
            ("id", &q.id),
            ("from", &q.from),
        ];
        for (k, v) in fields {
            if let Some(v) = v {
                pairs.push((k, v));
            }
        }
        href(&pairs)
    }

    fn render(&self) -> String {
        let t = self.t;
        let mut o = String::with_capacity(24 * 1024);
        let _ = write!(
            o,
            r##"<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{title}</title>
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
</head>
<body data-copied="{copied}" data-live-failed="{failed}" data-live-seq="{seq}" data-count-error="{count_error}">
<a class="skip" href="#result">{skip}</a>
<header class="top">
<div><h1>snowmint</h1><p class="tagline">{tagline}</p></div>
<nav aria-label="{language}"><a id="lang-switch" href="{switch_href}" hreflang="{other}" lang="{other}">{switch}</a></nav>
</header>
<main>
<div class="forms">
"##,
            lang = self.lang.code(),
            title = esc(t.title),
            copied = esc(t.copied),
            failed = esc(t.live_failed),
            seq = esc(t.live_seq),
            count_error = esc(t.live_count_error),
            skip = esc(t.skip),
            tagline = esc(t.tagline),
            switch_href = esc(&self.switch_href()),
            other = self.lang.other().code(),
            switch = esc(t.switch),
            language = esc(t.language),
        );
        self.compose_form(&mut o);
        self.decode_form(&mut o);
        o.push_str("</div>\n");
        self.result(&mut o);
        self.live(&mut o);
        self.limits(&mut o);
        let _ = write!(
            o,
            r#"</main>
<footer><h2>{api}</h2><p>{api_text} <a href="/api/v1/compose?timestamp=1288834975657&amp;datacenter=1&amp;worker=1&amp;sequence=0"><code>GET /api/v1/compose</code></a>, <a href="/api/v1/decode/4194439168"><code>GET /api/v1/decode/{{id}}</code></a>, <code>POST /api/v1/ids?count=N</code>, <a href="/api/v1/openapi.json"><code>/api/v1/openapi.json</code></a>, <a href="/metrics"><code>/metrics</code></a>.</p></footer>
</body>
</html>
"#,
            api = esc(t.api_heading),
            api_text = esc(t.api_text),
        );
        o
    }

    fn compose_form(&self, o: &mut String) {
        let t = self.t;
        let q = self.q;
        let compose = self.mode == Mode::Compose;
        let val = |v: &Option<String>, default: &'static str| -> String {
            if compose {
                v.clone().unwrap_or_else(|| default.to_owned())
            } else {
                default.to_owned()
            }
        };
        let _ = write!(
            o,
            r#"<section class="card" aria-labelledby="compose-h"><h2 id="compose-h">{}</h2>
<form id="compose-form" method="get" action="/" novalidate>{}"#,
            esc(t.compose_heading),
            self.lang_hidden()
        );
        o.push_str(r#"<div class="ts-row">"#);
        self.input(
            o,
            "timestamp",
            t.timestamp_label,
            &val(&q.timestamp, ""),
            Some(t.timestamp_hint),
            r#" inputmode="numeric" placeholder="1288834975657""#,
        );
        let _ = write!(
            o,
            r#"<button type="button" id="now" class="secondary" hidden>{}</button></div>"#,
            esc(t.now_button)
        );
        let at_error = self.error_for("at");
        let _ = write!(
            o,
            r#"<div class="field"><label for="at">{label}</label><input type="datetime-local" step="0.001" id="at" name="at" value="{value}" min="2010-11-04T01:42:54.657" max="2080-07-10T17:30:30.208" aria-describedby="at-error"{invalid}><p class="error" id="at-error"{hidden}>{error}</p></div>"#,
            label = esc(t.picker_label),
            value = esc(&val(&q.at, "")),
            invalid = if at_error.is_some() {
                r#" aria-invalid="true""#
            } else {
                ""
            },
            hidden = if at_error.is_some() { "" } else { " hidden" },
            error = esc(at_error.unwrap_or("")),
        );
        o.push_str(r#"<div class="trio">"#);
        for (name, label) in [
            ("datacenter", t.datacenter_label),
            ("worker", t.worker_label),
            ("sequence", t.sequence_label),
        ] {
            let value = match name {
                "datacenter" => val(&q.datacenter, "0"),
                "worker" => val(&q.worker, "0"),
                _ => val(&q.sequence, "0"),
            };
            self.input(o, name, label, &value, None, r#" inputmode="numeric""#);
        }
        let _ = writeln!(
            o,
            r#"</div><button type="submit">{}</button></form></section>"#,
            esc(t.compose_submit)
        );
    }

    fn decode_form(&self, o: &mut String) {
        let t = self.t;
        let decode = self.mode == Mode::Decode;
        let _ = write!(
            o,
            r#"<section class="card" aria-labelledby="decode-h"><h2 id="decode-h">{}</h2>
<form id="decode-form" method="get" action="/" novalidate>{}"#,
            esc(t.decode_heading),
            self.lang_hidden()
        );
        let id_value = if decode {
            self.q.id.clone().unwrap_or_default()
        } else {
            String::new()
        };
        self.input(
            o,
            "id",
            t.id_label,
            &id_value,
            Some(t.id_hint),
            r#" placeholder="4194439168""#,
        );
        let from = encoding_of(self.q);
        let _ = write!(
            o,
            r#"<div class="field"><label for="from">{}</label><select id="from" name="from">"#,
            esc(t.from_label)
        );
        for (enc, label) in [
            (Encoding::Decimal, t.decimal),
            (Encoding::Hex, t.hex),
            (Encoding::Base32, t.base32),
        ] {
            let _ = write!(
                o,
                r#"<option value="{}"{}>{}</option>"#,
                enc.name(),
                if enc == from { " selected" } else { "" },
                esc(label)
            );
        }
        let _ = writeln!(
            o,
            r#"</select></div><button type="submit">{}</button></form></section>"#,
            esc(t.decode_submit)
        );
    }

    fn result(&self, o: &mut String) {
        let t = self.t;
        let _ = write!(
            o,
            r#"<section id="result" class="card result" aria-labelledby="result-h" aria-live="polite" tabindex="-1"><h2 id="result-h">{}</h2>"#,
            esc(t.result_heading)
        );
        match &self.outcome {
            Outcome::Invalid(..) => {
                let _ = write!(o, r#"<p class="no-result">{}</p>"#, esc(t.no_result));
            }
            Outcome::Id(b) => self.breakdown(o, b),
        }
        o.push_str("</section>\n");
    }

    fn breakdown(&self, o: &mut String, b: &Breakdown) {
        let t = self.t;
        let id = b.id;
        let id_s = id.to_string();
        let share = match self.mode {
            Mode::Decode => href(&[("id", &id_s), ("lang", self.lang_param())]),
            Mode::Compose => href(&[
                ("timestamp", &b.timestamp_ms.to_string()),
                ("datacenter", &b.datacenter.to_string()),
                ("worker", &b.worker.to_string()),
                ("sequence", &b.sequence.to_string()),
                ("lang", self.lang_param()),
            ]),
        };
        let _ = write!(
            o,
            r#"<div class="id-row"><span class="label">{result_id}</span><output id="id-value" class="id">{id_s}</output><button type="button" id="copy" class="secondary" data-id="{id_s}" hidden>{copy}</button><span id="copy-status" role="status"></span></div>
<dl class="facts"><dt>{time}</dt><dd id="time-value">{time_v}</dd><dt>{unix_ms}</dt><dd>{ts}</dd><dt>{hex}</dt><dd><code>{hex_v}</code></dd><dt>{base32}</dt><dd><code>{b32_v}</code></dd><dt>{share}</dt><dd><a id="share" href="{share_href}">{share_link}</a></dd></dl>
<h3>{bits_heading}</h3><p class="hint">{bits_intro}</p>
<div class="bits" id="bits">"#,
            result_id = esc(t.result_id),
            copy = esc(t.copy),
            time = esc(t.time_utc),
            time_v = esc(&b.time),
            unix_ms = esc(t.unix_ms),
            ts = b.timestamp_ms,
            hex = esc(t.hex),
            hex_v = id.hex(),
            base32 = esc(t.base32),
            b32_v = id.base32(),
            share = esc(t.share),
            share_href = esc(&share),
            share_link = esc(t.share_link),
            bits_heading = esc(t.bits_heading),
            bits_intro = esc(t.bits_intro),
        );
        for seg in &b.segments {
            let label = match seg.name {
                "sign" => t.seg_sign,
                "timestamp" => t.seg_timestamp,
                "datacenter" => t.seg_datacenter,
                "worker" => t.seg_worker,
                _ => t.seg_sequence,
            };
            let range = if seg.msb == seg.lsb {
                format!("{} {}", t.bit, seg.msb)
            } else {
                format!("{} {}–{}", t.bits, seg.msb, seg.lsb)
            };
            let _ = write!(
                o,
                r#"<div class="seg seg-{name}"><div class="cells" data-segment="{name}" role="img" aria-label="{label}: {binary}">"#,
                name = seg.name,
                label = esc(label),
                binary = seg.binary,
            );
            for (i, bit) in seg.binary.chars().enumerate() {
                let _ = write!(
                    o,
                    r#"<span class="bit" title="{} {}" aria-hidden="true">{bit}</span>"#,
                    t.bit,
                    seg.msb - i as u32
                );
            }
            let _ = write!(
                o,
                r#"</div><div class="seg-label"><strong>{label}</strong><span>{range}</span><span>{value_word} <b class="seg-value">{value}</b></span></div></div>"#,
                label = esc(label),
                range = esc(&range),
                value_word = esc(t.value),
                value = seg.value,
            );
        }
        let d = b.delta_ms;
        let (c, m, s) = (b.datacenter, b.worker, b.sequence);
        let _ = write!(
            o,
            r#"</div>
<h3>{heading}</h3>
<pre class="formula" id="formula"><code>d  = t − {epoch}
   = {t_ms} − {epoch} = {d}
id = (d &lt;&lt; 22) | (c &lt;&lt; 17) | (m &lt;&lt; 12) | s
   = ({d} &lt;&lt; 22) | ({c} &lt;&lt; 17) | ({m} &lt;&lt; 12) | {s}
   = {dv} | {cv} | {mv} | {s}
   = {id_s}</code></pre>
<p class="hint">{legend}</p>"#,
            heading = esc(t.formula_heading),
            epoch = TWITTER_EPOCH_MS,
            t_ms = b.timestamp_ms,
            dv = d << 22,
            cv = c << 17,
            mv = m << 12,
            legend = esc(t.formula_legend),
        );
    }

    fn lang_param(&self) -> &'static str {
        if self.explicit_lang {
            self.lang.code()
        } else {
            ""
        }
    }

    fn live(&self, o: &mut String) {
        let t = self.t;
        let status = match self.state.minter.ready_identity() {
            Some(id) => format!(
                "{} <b>{} {}</b>, <b>{} {}</b>.",
                esc(t.live_identity),
                esc(&t.seg_datacenter.to_lowercase()),
                id.datacenter(),
                esc(&t.seg_worker.to_lowercase()),
                id.worker()
            ),
            _ => esc(t.live_not_ready),
        };
        let _ = write!(
            o,
            r#"<section id="live" class="card" aria-labelledby="live-h"><h2 id="live-h">{heading}</h2><p>{intro} {status}</p>
<form id="live-form" method="post" action="/api/v1/ids?count=5"><div class="field js-only" hidden><label for="count">{count}</label><input id="count" name="count" value="5" inputmode="numeric" aria-describedby="count-error"><p class="error" id="count-error" hidden></p></div>
<button type="submit">{submit}</button>
<label class="check" hidden id="auto-label"><input type="checkbox" id="auto"> {auto}</label></form>
<noscript><p class="hint">{noscript}</p></noscript>
<ol id="live-list" class="live-list" aria-live="polite" data-empty="{empty}"></ol></section>
"#,
            heading = esc(t.live_heading),
            intro = esc(t.live_intro),
            count = esc(t.live_count),
            submit = esc(t.live_submit),
            auto = esc(t.live_auto),
            noscript = esc(t.live_noscript),
            empty = esc(t.live_empty),
        );
    }

    fn limits(&self, o: &mut String) {
        let t = self.t;
        let _ = write!(
            o,
            r#"<section class="card" aria-labelledby="limits-h"><h2 id="limits-h">{}</h2><ul>"#,
            esc(t.limits_heading)
        );
        for item in t.limits {
            let _ = write!(o, "<li>{}</li>", esc(item));
        }
        o.push_str("</ul></section>\n");
    }
}
