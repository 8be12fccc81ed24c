//! Norsk bokmål.

use snowmint::Field;

use super::{Lang, Text};

fn n(v: u64) -> String {
    Lang::Nb.number(v)
}

pub(super) static TEXT: Text = Text {
    title: "snowmint: utforsker for Snowflake-ID-er",
    description: "Bygg en Snowflake-ID i Twitter-formatet av tidsstempel, datasenter, arbeider og sekvens, se de 64 bitene, dekod en eksisterende ID og lær hvordan formatet virker.",
    tagline: "Bygg en Snowflake-ID i Twitter-formatet av de fire verdiene og se hvordan de fyller de 64 bitene, eller ta en eksisterende ID fra hverandre.",
    switch: "English",
    skip: "Hopp til resultatet",
    compose_heading: "Lag en ID",
    timestamp_label: "Tidsstempel (Unix-millisekunder)",
    timestamp_hint: |f| {
        format!(
            "Tomt betyr nå. ISO-8601 går også, f.eks. {}.",
            f.example().time()
        )
    },
    now_button: "Nå",
    picker_label: "Eller velg dato og klokkeslett (UTC)",
    datacenter_label: "Datasenter-ID",
    worker_label: "Arbeider-ID",
    sequence_label: "Sekvens",
    compose_submit: "Vis ID-en",
    decode_heading: "Dekod en ID",
    id_label: "ID",
    id_hint: |f| {
        let (min, max) = f.range(Field::Id);
        format!("Et heltall {min}–{max}.")
    },
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
    limits: |f| {
        let l = f.layout;
        vec![
            format!(
                "Høyst {} ID-er per arbeider per millisekund: {} i sekundet.",
                f.per_ms(),
                n(f.per_second())
            ),
            format!(
                "{} identiteter: {} datasentre × {} arbeidere.",
                f.identities(),
                f.datacenters(),
                f.workers()
            ),
            format!(
                "Tidsstemplene tar slutt {}, 2^{} − 1 ms ({} år) etter epoken {}.",
                f.end(),
                l.timestamp_bits(),
                f.years(),
                f.epoch()
            ),
            "ID-er fra ulike maskiner er bare så godt ordnet som klokkene deres stemmer overens.".to_owned(),
            "Fortegnsbiten er alltid 0, så hver ID er et positivt 64-bits heltall med fortegn. JavaScript-tall mister presisjon over 2^53, så API-et sender ID-er som tekst.".to_owned(),
        ]
    },
    live_heading: "Ferske ID-er fra denne serveren",
    live_intro: "Lag nye ID-er fra serverens generator. De er unike og strengt stigende.",
    live_identity: "Denne serveren utsteder som",
    live_not_ready: "Serveren har ingen arbeider-identitet akkurat nå, så den kan ikke lage ID-er.",
    live_count: "Hvor mange",
    live_submit: "Lag",
    live_auto: "Lag én hvert sekund",
    live_noscript: "Uten JavaScript viser knappen API-ets JSON-svar.",
    live_failed: "Kunne ikke lage ID-er",
    live_empty: "Ingen ID-er laget ennå.",
    live_seq: "sekvens",
    live_count_error: |f| {
        let (min, max) = f.range(Field::Count);
        format!("Antallet må være et heltall i {min}..={max}, fikk")
    },
    api_heading: "API",
    api_text: "De samme svarene som JSON:",
};
