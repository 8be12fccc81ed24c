//! The page's two languages: English (default) and Norwegian Bokmål, the
//! language of the original Snowflake tool. Every string of the page is in
//! [`en`] or [`nb`]; a string that states a number of the format is a
//! function of [`Facts`], so it is computed from the layout, never typed.

mod en;
mod nb;

use maud::Markup;
use snowmint::time::Iso8601;
use snowmint::{Field, Layout};

use crate::page::facts::Facts;

/// A language of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    En,
    Nb,
}

impl Lang {
    /// `?lang=` wins; else the most preferred of `Accept-Language` that we
    /// speak (`nb`, `no` and `nn` read as Bokmål); else English.
    pub(crate) fn choose(query: Option<&str>, accept_language: Option<&str>) -> Lang {
        if let Some(lang) = query.and_then(Lang::from_tag) {
            return lang;
        }
        let mut best: Option<(f32, Lang)> = None;
        for item in accept_language.unwrap_or("").split(',') {
            let mut parts = item.split(';');
            let tag = parts.next().unwrap_or("").trim();
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            if let Some(lang) = Lang::from_tag(tag)
                && q > 0.0
                && best.is_none_or(|(bq, _)| q > bq)
            {
                best = Some((q, lang));
            }
        }
        best.map_or(Lang::En, |(_, lang)| lang)
    }

    pub(crate) fn from_tag(tag: &str) -> Option<Lang> {
        let primary = tag.split(['-', '_']).next()?.trim();
        if primary.eq_ignore_ascii_case("en") {
            Some(Lang::En)
        } else if ["nb", "no", "nn"]
            .iter()
            .any(|t| primary.eq_ignore_ascii_case(t))
        {
            Some(Lang::Nb)
        } else {
            None
        }
    }

    pub(crate) fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Nb => "nb",
        }
    }

    pub(crate) fn other(self) -> Lang {
        match self {
            Lang::En => Lang::Nb,
            Lang::Nb => Lang::En,
        }
    }

    pub(crate) fn text(self) -> &'static Text {
        match self {
            Lang::En => &en::TEXT,
            Lang::Nb => &nb::TEXT,
        }
    }

    /// A number for reading, grouped by thousands as the language writes
    /// it: `4,096,000` in English, `4 096 000` (no-break spaces) in Bokmål.
    pub(crate) fn number(self, n: u64) -> String {
        let sep = match self {
            Lang::En => ',',
            Lang::Nb => '\u{a0}',
        };
        let digits = n.to_string();
        let mut out = String::with_capacity(digits.len() * 2);
        for (i, d) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(sep);
            }
            out.push(d);
        }
        out
    }

    /// A field error for people: the core's message in English; in Bokmål
    /// the same facts (field, allowed range, what was typed).
    pub(crate) fn field_error(self, err: &snowmint::Error, typed: &str) -> String {
        match self {
            Lang::En => err.to_string(),
            Lang::Nb => {
                let field = err.field();
                let (min, max) = Layout::TWITTER.range(field);
                let typed = typed.trim();
                let got = if typed.is_empty() {
                    "ingenting".to_owned()
                } else {
                    let short: String = typed.chars().take(40).collect();
                    format!("«{short}»")
                };
                match field {
                    Field::Timestamp => format!(
                        "Tidsstempelet må være Unix-millisekunder eller en ISO-8601-tid i \
                         {min}..={max} ({} ..= {}), fikk {got}",
                        Iso8601(min as i64),
                        Iso8601(max as i64),
                    ),
                    Field::Id => format!(
                        "ID-en må være et heltall i {min}..={max} (64 biter med fortegnsbiten 0), \
                         fikk {got}"
                    ),
                    Field::Datacenter => {
                        format!("Datasenter-ID-en må være et heltall i {min}..={max}, fikk {got}")
                    }
                    Field::Worker => {
                        format!("Arbeider-ID-en må være et heltall i {min}..={max}, fikk {got}")
                    }
                    _ => format!("Sekvensen må være et heltall i {min}..={max}, fikk {got}"),
                }
            }
        }
    }
}

/// A string that states figures of the format.
pub(crate) type Stated = fn(&Facts) -> String;
/// Paragraphs (or list items) of prose that state figures of the format.
/// Templates escape every value, so prose may hold links and code safely.
pub(crate) type Prose = fn(&Facts) -> Markup;

/// Every string of the page in one language.
pub(crate) struct Text {
    pub title: &'static str,
    /// The page's `<meta name="description">`.
    pub description: &'static str,
    pub tagline: &'static str,
    pub switch: &'static str,
    pub skip: &'static str,
    pub compose_heading: &'static str,
    pub timestamp_label: &'static str,
    pub timestamp_hint: Stated,
    pub now_button: &'static str,
    pub picker_label: &'static str,
    /// The three labels are followed by the field's range.
    pub datacenter_label: &'static str,
    pub worker_label: &'static str,
    pub sequence_label: &'static str,
    pub compose_submit: &'static str,
    pub decode_heading: &'static str,
    pub id_label: &'static str,
    pub id_hint: Stated,
    pub from_label: &'static str,
    pub decimal: &'static str,
    pub hex: &'static str,
    pub base32: &'static str,
    pub decode_submit: &'static str,
    pub result_heading: &'static str,
    pub result_id: &'static str,
    pub copy: &'static str,
    pub copied: &'static str,
    pub time_utc: &'static str,
    pub unix_ms: &'static str,
    pub language: &'static str,
    pub share: &'static str,
    pub share_link: &'static str,
    pub no_result: &'static str,
    pub bits_heading: &'static str,
    pub bits_intro: &'static str,
    pub seg_sign: &'static str,
    pub seg_timestamp: &'static str,
    pub seg_datacenter: &'static str,
    pub seg_worker: &'static str,
    pub seg_sequence: &'static str,
    pub bit: &'static str,
    pub bits: &'static str,
    pub value: &'static str,
    pub formula_heading: &'static str,
    pub formula_legend: &'static str,
    pub limits_heading: &'static str,
    pub limits: fn(&Facts) -> Vec<String>,
    pub live_heading: &'static str,
    pub live_intro: &'static str,
    pub live_identity: &'static str,
    pub live_not_ready: &'static str,
    /// Shown when the server requires an API token to mint.
    pub live_token: &'static str,
    /// Followed by the allowed range.
    pub live_count: &'static str,
    pub live_submit: &'static str,
    pub live_auto: &'static str,
    pub live_noscript: &'static str,
    pub live_failed: &'static str,
    pub live_empty: &'static str,
    pub live_seq: &'static str,
    /// The start of the message for a bad count; the script adds what was typed.
    pub live_count_error: Stated,
    pub api_heading: &'static str,
    pub api_text: &'static str,
    pub guide: Guide,
}

/// The explanatory sections below the tools.
pub(crate) struct Guide {
    pub heading: &'static str,
    pub what_heading: &'static str,
    pub what: Prose,
    pub how_heading: &'static str,
    pub how: Prose,
    pub why_heading: &'static str,
    pub why: Prose,
    pub example_heading: &'static str,
    pub example_intro: Prose,
    /// One sentence per step: the difference, the three shifts, the
    /// sequence, the combination. The page adds each step's arithmetic.
    pub example_steps: [Prose; 6],
    /// Caption of the four shifted terms written out in binary.
    pub example_bits: &'static str,
    pub example_or: Prose,
    pub example_shifts: Prose,
    pub example_link: &'static str,
    pub uses_heading: &'static str,
    pub uses: Prose,
    pub minter_heading: &'static str,
    pub minter: Prose,
    pub history_heading: &'static str,
    pub history: Prose,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_the_language() {
        assert_eq!(Lang::choose(None, None), Lang::En);
        assert_eq!(
            Lang::choose(None, Some("nb-NO,nb;q=0.9,en;q=0.8")),
            Lang::Nb
        );
        assert_eq!(Lang::choose(None, Some("no")), Lang::Nb);
        assert_eq!(Lang::choose(None, Some("nn;q=0.5, en;q=0.9")), Lang::En);
        assert_eq!(Lang::choose(None, Some("de, nb;q=0.3")), Lang::Nb);
        assert_eq!(Lang::choose(Some("en"), Some("nb")), Lang::En);
        assert_eq!(Lang::choose(Some("nb"), None), Lang::Nb);
        assert_eq!(
            Lang::choose(Some("xx"), Some("\u{0}garbage;q=abc")),
            Lang::En
        );
    }

    #[test]
    fn groups_numbers_by_thousands() {
        assert_eq!(Lang::En.number(0), "0");
        assert_eq!(Lang::En.number(999), "999");
        assert_eq!(Lang::En.number(4096), "4,096");
        assert_eq!(Lang::En.number(4_194_439_168), "4,194,439,168");
        assert_eq!(Lang::Nb.number(4_096_000), "4\u{a0}096\u{a0}000");
    }

    #[test]
    fn bokmal_errors_name_the_range_and_the_input() {
        let err = snowmint::compose(1, 0, 0, 0).unwrap_err();
        let msg = Lang::Nb.field_error(&err, "1");
        assert!(
            msg.contains("2010-11-04T01:42:54.657Z ..= 2080-07-10T17:30:30.208Z"),
            "{msg}"
        );
        assert!(msg.ends_with("fikk «1»"), "{msg}");
    }
}
