//! The page's two languages: English (default) and Norwegian Bokmål, the
//! language of the original Snowflake tool. Every string of the page is in
//! [`en`] or [`nb`]; a string that states a number of the format is a
//! function of [`Facts`], so it is computed from the layout, never typed.

mod en;
mod nb;

use maud::Markup;
use snowmint::time::Iso8601;
use snowmint::{Field, Layout, LayoutProblem};

use crate::routes::page::facts::Facts;

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

    /// A score 0 to 1 with two decimals, the language's decimal sign.
    pub(crate) fn decimal(self, v: f64) -> String {
        let text = format!("{v:.2}");
        match self {
            Lang::En => text,
            Lang::Nb => text.replace('.', ","),
        }
    }

    /// A field error for people: the core's message in English; in Bokmål
    /// the same facts (field, allowed range, what was typed). Ranges are
    /// the Twitter layout's; see [`field_error_in`](Lang::field_error_in).
    pub(crate) fn field_error(self, err: &snowmint::Error, typed: &str) -> String {
        self.field_error_in(Layout::TWITTER, err, typed)
    }

    /// [`field_error`](Lang::field_error) for a value read in `layout`
    /// (whose times have a range of their own).
    pub(crate) fn field_error_in(
        self,
        layout: Layout,
        err: &snowmint::Error,
        typed: &str,
    ) -> String {
        match self {
            Lang::En => err.to_string(),
            Lang::Nb => {
                let field = err.field();
                let (min, max) = layout.range(field);
                let got = got_nb(typed);
                let time = |what: &str| {
                    format!(
                        "{what} må være Unix-millisekunder eller en ISO-8601-tid i \
                         {min}..={max} ({} ..= {}), fikk {got}",
                        Iso8601(min as i64),
                        Iso8601(max as i64),
                    )
                };
                match field {
                    Field::Timestamp => time("Tidsstempelet"),
                    Field::From => time("Fra-tiden"),
                    Field::To => time("Til-tiden"),
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
                    // A spec in Bokmål; a layout's own field: see layout_field_error.
                    Field::Layout => Lang::Nb.layout_error(err),
                    Field::LayoutField => err.to_string(),
                    _ => format!("Sekvensen må være et heltall i {min}..={max}, fikk {got}"),
                }
            }
        }
    }

    /// An error about a field of `layout` composed from `typed`: the
    /// core's message in English; in Bokmål the same facts, the range the
    /// layout's own for the field the error names.
    pub(crate) fn layout_field_error(
        self,
        layout: Layout,
        err: &snowmint::Error,
        typed: &str,
    ) -> String {
        let field = layout
            .field(err.field_name())
            .filter(|f| !f.is_time() && self == Lang::Nb);
        match field {
            Some(f) => format!(
                "Feltet {} må være et heltall i 0..={}, fikk {}",
                f.name(),
                f.max(),
                got_nb(typed)
            ),
            None => self.field_error_in(layout, err, typed),
        }
    }

    /// A layout that cannot be (a bad spec): the core's message in
    /// English, the same facts in Bokmål.
    pub(crate) fn layout_error(self, err: &snowmint::Error) -> String {
        match (self, err.layout_problem()) {
            (Lang::Nb, Some(problem)) => format!("ugyldig oppsett: {}", layout_problem_nb(problem)),
            _ => err.to_string(),
        }
    }

    /// A time span that ends before it starts: the core's message in
    /// English (`err`), the same facts in Bokmål.
    pub(crate) fn order_error(self, err: &snowmint::Error, from_ms: u64, to_ms: u64) -> String {
        match self {
            Lang::En => err.to_string(),
            Lang::Nb => format!(
                "Til-tiden må være lik eller etter fra-tiden {from_ms} ({}), fikk {to_ms} ({})",
                Iso8601(from_ms as i64),
                Iso8601(to_ms as i64),
            ),
        }
    }
}

/// What is wrong with a layout, in Bokmål: the facts of the core's
/// English reason.
fn layout_problem_nb(problem: &LayoutProblem) -> String {
    use LayoutProblem as P;
    let example = Layout::DISCORD.spec();
    let presets = Layout::PRESET_NAMES.join(", ");
    match problem {
        P::Empty => format!(
            "tomt: oppgi et ferdig oppsett ({presets}) eller en spesifikasjon som {example}"
        ),
        P::NotASpec { input } => format!(
            "«{input}» er verken et ferdig oppsett ({presets}) eller en spesifikasjon som {example}"
        ),
        P::NotKeyValue { part } => {
            format!("«{part}» er ikke NØKKEL=VERDI (nøklene er epoch, unit og fields)")
        }
        P::UnknownKey { key } => {
            format!("ukjent nøkkel «{key}»: en spesifikasjon har epoch, unit og fields")
        }
        P::RepeatedKey { key } => format!("{key} står mer enn én gang"),
        P::MissingEpoch => {
            format!("epoken mangler: legg til epoch=, Unix-ms eller ISO-8601, som i {example}")
        }
        P::MissingFields => {
            format!("feltene mangler: legg til fields=NAVN:BITER,..., som i {example}")
        }
        P::BadEpoch { input } => format!(
            "epoken må være Unix-millisekunder eller en ISO-8601-tid fra og med 1970-01-01, fikk «{input}»"
        ),
        P::BadUnit { input } => {
            format!("tidsenheten må være <n>ms eller <n>s (1ms, 10ms, 1s), fikk «{input}»")
        }
        P::ZeroUnit { input } => format!(
            "tidsenheten må være minst 1 ms, fikk {}",
            input
                .as_deref()
                .map_or_else(|| "0".to_owned(), |i| format!("«{i}»"))
        ),
        P::EmptyEntry => {
            format!("fields= har en tom oppføring: skriv NAVN:BITER,NAVN:BITER, som i {example}")
        }
        P::NoWidth { entry } => format!("feltet «{entry}» har ingen bredde: skriv NAVN:BITER"),
        P::BadName { name } => format!(
            "feltnavnet «{name}» må være 1 til {} små bokstaver (a–z), sifre og _",
            snowmint::MAX_NAME_LEN
        ),
        P::BadWidth { name, width } => {
            format!("{name} må være 1..=64 biter bredt, fikk «{width}»")
        }
        P::TooManyFields { count } => format!(
            "{count} felter, flere enn de {} et oppsett kan ha",
            snowmint::MAX_FIELDS
        ),
        P::ReservedName { name } => {
            format!("{name} er navnet på bitene over feltene i et oppsett: kall feltet noe annet")
        }
        P::NamedTwice { name } => format!("{name} er brukt som navn to ganger"),
        P::NoTimestamp => "ingen felt heter timestamp: ett felt må holde tiden".to_owned(),
        P::TimestampNotFirst { after } => format!(
            "timestamp må være det første feltet (det mest signifikante), så ID-ene sorteres etter tid; det kommer etter {after}"
        ),
        P::TimestampTwice => "bare tidsfeltet kan hete timestamp".to_owned(),
        P::TooWide { bits } => format!("breddene blir til sammen {bits} biter, mer enn 64"),
        P::PastTheEnd { last_ms } => format!(
            "tidsfeltet går forbi 9999-12-31T23:59:59.999Z ({}), der datoene slutter: \
             det siste millisekundet ville vært {last_ms}; gi det færre biter, en kortere \
             enhet eller en tidligere epoke",
            snowmint::time::MAX_UNIX_MS
        ),
        P::FourWidths => "de fire breddene må bli 63 eller 64 biter til sammen".to_owned(),
        P::NoTimestampBits => "tidsstempelet trenger minst 1 bit".to_owned(),
        // A problem added later: the core's words.
        other => other.to_string(),
    }
}

/// What was typed, as a Bokmål message quotes it.
fn got_nb(typed: &str) -> String {
    let typed = typed.trim();
    if typed.is_empty() {
        "ingenting".to_owned()
    } else {
        let short: String = typed.chars().take(40).collect();
        format!("«{short}»")
    }
}

/// The unit a duration is said in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Year,
    Day,
    Hour,
    Second,
}

/// `ms` as a whole count of the largest unit of which it holds at least 2.
pub(crate) fn duration(ms: u64) -> (u64, Unit) {
    const HOUR: u64 = 3_600_000;
    const DAY: u64 = 24 * HOUR;
    const YEAR: u64 = 365 * DAY + DAY / 4;
    if ms >= 2 * YEAR {
        (ms / YEAR, Unit::Year)
    } else if ms >= 2 * DAY {
        (ms / DAY, Unit::Day)
    } else if ms >= 2 * HOUR {
        (ms / HOUR, Unit::Hour)
    } else {
        (ms / 1000, Unit::Second)
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
    /// Under the compose form's layout select, without JavaScript.
    pub compose_noscript: &'static str,
    /// A layout's field named like a parameter of the page: its name.
    pub compose_reserved: fn(&str) -> String,
    pub decode_heading: &'static str,
    pub id_label: &'static str,
    pub id_hint: Stated,
    pub from_label: &'static str,
    pub decimal: &'static str,
    pub hex: &'static str,
    pub base32: &'static str,
    pub decode_submit: &'static str,
    /// The textarea of many IDs; its hint states the most lines.
    pub ids_label: &'static str,
    pub ids_hint: fn(usize) -> String,
    /// More IDs than the list takes: (the limit, how many were given).
    pub ids_too_many: fn(usize, usize) -> String,
    /// A bad line of the list: (its number, the error).
    pub line_error: fn(usize, &str) -> String,
    pub layout_label: &'static str,
    /// Follows Twitter's name in the layout select.
    pub layout_default: &'static str,
    pub layout_hint: &'static str,
    /// The layout select's last choice, which the custom fields below spell out.
    pub layout_custom: &'static str,
    pub custom_legend: &'static str,
    pub custom_hint: &'static str,
    pub custom_epoch: &'static str,
    pub custom_epoch_hint: &'static str,
    pub custom_unit: &'static str,
    pub custom_unit_hint: &'static str,
    pub custom_fields: &'static str,
    pub custom_fields_hint: &'static str,
    pub lab_heading: &'static str,
    /// The lab's sentences about a layout.
    pub lab: fn(&snowmint::LayoutReport) -> Vec<String>,
    /// A parameter given more than once: its name.
    pub repeated: fn(&str) -> String,
    /// A parameter no form of the page has: its name (shortened, quoted).
    pub unknown_param: fn(&str) -> String,
    /// A value that is none of a parameter's choices: the parameter, the
    /// choices and what was given (shortened, quoted).
    pub bad_choice: fn(&str, &str, &str) -> String,
    pub range_heading: &'static str,
    pub range_from_label: &'static str,
    pub range_to_label: &'static str,
    pub range_hint: &'static str,
    pub range_picker_label: &'static str,
    pub range_submit: &'static str,
    pub range_min: &'static str,
    pub range_max: &'static str,
    pub range_slots: &'static str,
    /// What the count of slots means.
    pub range_slots_hint: &'static str,
    pub range_sql: &'static str,
    /// The dialect select of the range form.
    pub dialect_label: &'static str,
    pub dialect_hint: &'static str,
    /// Heading of the SQL functions (the dialect's name follows).
    pub sql_functions: &'static str,
    pub sql_functions_hint: &'static str,
    /// The link to the same script from the API.
    pub sql_api_link: &'static str,
    pub range_span: &'static str,
    pub result_heading: &'static str,
    pub result_id: &'static str,
    pub copy: &'static str,
    pub copied: &'static str,
    pub time_utc: &'static str,
    pub unix_ms: &'static str,
    /// The result's row of the time in the reader's own zone (filled in
    /// by the script; absent without it).
    pub time_local: &'static str,
    /// The result's row of Discord's timestamp markup.
    pub discord_markup: &'static str,
    /// What the two markups show in a Discord message.
    pub discord_markup_hint: &'static str,
    /// The copy buttons of the two markups (their accessible names).
    pub copy_discord_full: &'static str,
    pub copy_discord_relative: &'static str,
    /// Open Graph title of a decoded ID: (the ID, its time in UTC).
    pub og_title: fn(&str, &str) -> String,
    /// Open Graph description of a decoded ID: (the layout's name).
    pub og_description: fn(&str) -> String,
    pub language: &'static str,
    pub share: &'static str,
    pub share_link: &'static str,
    pub no_result: &'static str,
    pub no_result_list: &'static str,
    pub no_result_range: &'static str,
    /// The list's caption: (how many IDs, the layout's name).
    pub list_caption: fn(usize, &str) -> String,
    pub list_line: &'static str,
    pub list_sort_hint: &'static str,
    /// Under a list: which system made these IDs.
    pub detect_heading: &'static str,
    pub detect_intro: &'static str,
    /// The best candidates tie: (how many IDs, the tied layouts' names).
    pub detect_ambiguous: fn(usize, &str) -> String,
    pub detect_score: &'static str,
    /// A candidate no ID fits.
    pub detect_none: &'static str,
    /// Why a candidate ranks where it does.
    pub detect_reason: fn(&snowmint::Reason) -> String,
    /// The result's row naming the layout an ID was read in.
    pub layout_row: &'static str,
    pub bits_heading: &'static str,
    pub bits_intro: &'static str,
    /// Shown on narrow screens under the 64 bits, which scroll sideways.
    pub bits_scroll_hint: &'static str,
    /// A layout's name for a field ([`snowmint::Segment::label`], in
    /// English) in this language, capitalised.
    pub seg_label: fn(&str) -> &str,
    pub bit: &'static str,
    pub bits: &'static str,
    pub value: &'static str,
    pub formula_heading: &'static str,
    pub formula_legend: &'static str,
    /// The legend for another layout: its time unit in ms and the letters
    /// of its fields with their (translated) names.
    pub formula_legend_for: fn(u64, &[(&str, &str)]) -> String,
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
    /// With the decoder's URL for Discord's example ID.
    pub uses: fn(&Facts, &str) -> Markup,
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

    #[test]
    fn bokmal_errors_name_the_ends_of_a_span() {
        let l = Layout::DISCORD;
        let err = l.parse_span("soon", None, 0).unwrap_err();
        let msg = Lang::Nb.field_error_in(l, &err, "soon");
        assert!(msg.starts_with("Fra-tiden må være"), "{msg}");
        assert!(msg.contains("1420070400000..="), "{msg}");
        let err = l
            .parse_span("now", Some("1"), 1_500_000_000_000)
            .unwrap_err();
        let msg = Lang::Nb.field_error_in(l, &err, "1");
        assert!(
            msg.starts_with("Til-tiden må være") && msg.ends_with("fikk «1»"),
            "{msg}"
        );
        let err = l.span(2_000_000_000_000, 1_500_000_000_000).unwrap_err();
        let msg = Lang::Nb.order_error(&err, 2_000_000_000_000, 1_500_000_000_000);
        assert!(
            msg.starts_with("Til-tiden må være lik eller etter fra-tiden 2000000000000"),
            "{msg}"
        );
        assert_eq!(Lang::En.order_error(&err, 0, 0), err.to_string());
    }
}
