//! The page's two languages: English (default) and Norwegian Bokmål, the
//! language of the original Snowflake tool. Every string of the page is here.

use snowmint::{Field, Layout};

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
            Lang::En => &EN,
            Lang::Nb => &NB,
        }
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
                         {min}..={max} (2010-11-04T01:42:54.657Z ..= 2080-07-10T17:30:30.208Z), \
                         fikk {got}"
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

/// Every string of the page in one language.
pub(crate) struct Text {
    pub title: &'static str,
    pub tagline: &'static str,
    pub switch: &'static str,
    pub skip: &'static str,
    pub compose_heading: &'static str,
    pub timestamp_label: &'static str,
    pub timestamp_hint: &'static str,
    pub now_button: &'static str,
    pub picker_label: &'static str,
    pub datacenter_label: &'static str,
    pub worker_label: &'static str,
    pub sequence_label: &'static str,
    pub compose_submit: &'static str,
    pub decode_heading: &'static str,
    pub id_label: &'static str,
    pub id_hint: &'static str,
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
    pub limits: [&'static str; 5],
    pub live_heading: &'static str,
    pub live_intro: &'static str,
    pub live_identity: &'static str,
    pub live_not_ready: &'static str,
    pub live_count: &'static str,
    pub live_submit: &'static str,
    pub live_auto: &'static str,
    pub live_noscript: &'static str,
    pub live_failed: &'static str,
    pub live_empty: &'static str,
    pub live_seq: &'static str,
    pub live_count_error: &'static str,
    pub api_heading: &'static str,
    pub api_text: &'static str,
}

pub(crate) static EN: Text = Text {
    title: "snowmint: Snowflake ID explorer",
    tagline: "Build a Twitter-layout Snowflake ID from its four values and see how they fill the 64 bits, or take an existing ID apart.",
    switch: "Norsk (bokmål)",
    skip: "Skip to the result",
    compose_heading: "Compose an ID",
    timestamp_label: "Timestamp (Unix milliseconds)",
    timestamp_hint: "Blank means now. ISO-8601 works too, e.g. 2010-11-04T01:42:55.657Z.",
    now_button: "Now",
    picker_label: "Or pick a date and time (UTC)",
    datacenter_label: "Datacenter ID (0–31)",
    worker_label: "Worker ID (0–31)",
    sequence_label: "Sequence (0–4095)",
    compose_submit: "Show the ID",
    decode_heading: "Decode an ID",
    id_label: "ID",
    id_hint: "An integer 0–9223372036854775807.",
    from_label: "Written in",
    decimal: "decimal",
    hex: "hexadecimal",
    base32: "Crockford base32",
    decode_submit: "Decode",
    result_heading: "Result",
    result_id: "Snowflake ID",
    copy: "Copy",
    copied: "Copied",
    time_utc: "Time (UTC)",
    unix_ms: "Unix ms",
    language: "Language",
    share: "Share",
    share_link: "link to this result",
    no_result: "Fix the marked field to see the ID.",
    bits_heading: "The 64 bits",
    bits_intro: "Most significant bit first. Each segment shows its name, bit range and value.",
    seg_sign: "Sign",
    seg_timestamp: "Timestamp",
    seg_datacenter: "Datacenter",
    seg_worker: "Worker",
    seg_sequence: "Sequence",
    bit: "bit",
    bits: "bits",
    value: "value",
    formula_heading: "The formula",
    formula_legend: "t = timestamp (Unix ms), c = datacenter, m = worker (machine), s = sequence.",
    limits_heading: "Limits of the format",
    limits: [
        "At most 4096 IDs per worker per millisecond: 4,096,000 a second.",
        "1024 identities: 32 datacenters × 32 workers.",
        "Timestamps run out on 2080-07-10T17:30:30.208Z, 2^41 − 1 ms after the epoch 2010-11-04T01:42:54.657Z.",
        "IDs from different machines are ordered only as well as their clocks agree.",
        "The sign bit is always 0, so every ID is a positive signed 64-bit integer. JavaScript numbers lose precision above 2^53, so the API sends IDs as strings.",
    ],
    live_heading: "Live IDs from this server",
    live_intro: "Mint fresh IDs from this server's generator. They are unique and strictly increasing.",
    live_identity: "This server issues as",
    live_not_ready: "This server holds no worker identity right now, so it cannot mint.",
    live_count: "How many (1–4096)",
    live_submit: "Mint",
    live_auto: "Mint one every second",
    live_noscript: "Without JavaScript the button shows the API's JSON answer.",
    live_failed: "Minting failed",
    live_empty: "No IDs minted yet.",
    live_seq: "sequence",
    live_count_error: "count must be 1..=4096, got",
    api_heading: "API",
    api_text: "The same answers as JSON:",
};

pub(crate) static NB: Text = Text {
    title: "snowmint: utforsker for Snowflake-ID-er",
    tagline: "Bygg en Snowflake-ID i Twitter-formatet av de fire verdiene og se hvordan de fyller de 64 bitene, eller ta en eksisterende ID fra hverandre.",
    switch: "English",
    skip: "Hopp til resultatet",
    compose_heading: "Lag en ID",
    timestamp_label: "Tidsstempel (Unix-millisekunder)",
    timestamp_hint: "Tomt betyr nå. ISO-8601 går også, f.eks. 2010-11-04T01:42:55.657Z.",
    now_button: "Nå",
    picker_label: "Eller velg dato og klokkeslett (UTC)",
    datacenter_label: "Datasenter-ID (0–31)",
    worker_label: "Arbeider-ID (0–31)",
    sequence_label: "Sekvens (0–4095)",
    compose_submit: "Vis ID-en",
    decode_heading: "Dekod en ID",
    id_label: "ID",
    id_hint: "Et heltall 0–9223372036854775807.",
    from_label: "Skrevet i",
    decimal: "desimal",
    hex: "heksadesimal",
    base32: "Crockford base32",
    decode_submit: "Dekod",
    result_heading: "Resultat",
    result_id: "Snowflake-ID",
    copy: "Kopier",
    copied: "Kopiert",
    time_utc: "Tid (UTC)",
    unix_ms: "Unix-ms",
    language: "Språk",
    share: "Del",
    share_link: "lenke til dette resultatet",
    no_result: "Rett feltet som er merket for å se ID-en.",
    bits_heading: "De 64 bitene",
    bits_intro: "Mest signifikante bit først. Hvert segment viser navn, bitområde og verdi.",
    seg_sign: "Fortegn",
    seg_timestamp: "Tidsstempel",
    seg_datacenter: "Datasenter",
    seg_worker: "Arbeider",
    seg_sequence: "Sekvens",
    bit: "bit",
    bits: "biter",
    value: "verdi",
    formula_heading: "Formelen",
    formula_legend: "t = tidsstempel (Unix-ms), c = datasenter, m = arbeider (maskin), s = sekvens.",
    limits_heading: "Formatets grenser",
    limits: [
        "Høyst 4096 ID-er per arbeider per millisekund: 4 096 000 i sekundet.",
        "1024 identiteter: 32 datasentre × 32 arbeidere.",
        "Tidsstemplene tar slutt 2080-07-10T17:30:30.208Z, 2^41 − 1 ms etter epoken 2010-11-04T01:42:54.657Z.",
        "ID-er fra ulike maskiner er bare så godt ordnet som klokkene deres stemmer overens.",
        "Fortegnsbiten er alltid 0, så hver ID er et positivt 64-bits heltall med fortegn. JavaScript-tall mister presisjon over 2^53, så API-et sender ID-er som tekst.",
    ],
    live_heading: "Ferske ID-er fra denne serveren",
    live_intro: "Lag nye ID-er fra serverens generator. De er unike og strengt stigende.",
    live_identity: "Denne serveren utsteder som",
    live_not_ready: "Serveren har ingen arbeider-identitet akkurat nå, så den kan ikke lage ID-er.",
    live_count: "Hvor mange (1–4096)",
    live_submit: "Lag",
    live_auto: "Lag én hvert sekund",
    live_noscript: "Uten JavaScript viser knappen API-ets JSON-svar.",
    live_failed: "Kunne ikke lage ID-er",
    live_empty: "Ingen ID-er laget ennå.",
    live_seq: "sekvens",
    live_count_error: "Antallet må være et heltall i 1..=4096, fikk",
    api_heading: "API",
    api_text: "De samme svarene som JSON:",
};

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
}
