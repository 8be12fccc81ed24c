//! Norsk bokmål.

use maud::html;
use snowmint::{Field, JsSafety};

use super::{Guide, Lang, Text};

fn n(v: u64) -> String {
    Lang::Nb.number(v)
}

pub(super) static TEXT: Text = Text {
    title: "snowmint: utforsker for Snowflake-ID-er",
    description: "Bygg en Snowflake-ID av tidsstempel, datasenter, arbeider og sekvens (eller feltene i et hvilket som helst oppsett), se de 64 bitene, dekod en eksisterende ID, finn ut hvilket system som laget en liste med ID-er, og lær hvordan formatet virker.",
    tagline: "Bygg en Snowflake-ID, i Twitter-oppsettet eller et annet, og se hvordan verdiene fyller de 64 bitene, eller ta en eksisterende ID fra hverandre.",
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
    compose_noscript: "Når du har valgt et annet oppsett, vis ID-en: da har skjemaet feltene til det oppsettet.",
    compose_reserved: |name| {
        format!(
            "et felt som heter {name}, kan ikke settes sammen her, siden har en egen parameter med det navnet: gi feltet et annet navn, eller bruk GET /api/v1/compose"
        )
    },
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
    ids_label: "Eller lim inn flere ID-er, én per linje",
    ids_hint: |max| {
        format!(
            "Opptil {} linjer, vist som en tabell. Når denne boksen har ID-er, brukes ikke ID-feltet over.",
            Lang::Nb.number(max as u64)
        )
    },
    ids_too_many: |max, got| {
        format!(
            "høyst {} ID-er om gangen, én per linje; fikk {}",
            Lang::Nb.number(max as u64),
            Lang::Nb.number(got as u64)
        )
    },
    line_error: |n, e| format!("linje {n}: {e}"),
    layout_label: "Oppsett",
    layout_default: "standard",
    layout_hint: "Les eller lag ID-er slik et annet system legger ut bitene, eller ditt eget (Egendefinert …).",
    repeated: |name| format!("{name} står mer enn én gang i spørringen; oppgi den én gang"),
    unknown_param: |name| format!("ukjent parameter {name}: ingen skjema på siden har den"),
    bad_choice: |name, choices, got| format!("{name} må være én av {choices}, fikk {got}"),
    range_heading: "ID-ene i et tidsrom",
    range_from_label: "Fra",
    range_to_label: "Til (med)",
    range_hint: "Tomt betyr nå. Unix-millisekunder eller ISO-8601.",
    range_picker_label: "Eller velg (UTC)",
    range_submit: "Vis ID-området",
    range_min: "Minste ID",
    range_max: "Største ID",
    range_slots: "ID-plasser",
    range_slots_hint: "Alle ID-ene tidsrommet kan romme: hvert millisekund, på alle datasentre og arbeidere, med alle sekvensnumre.",
    range_sql: "SQL",
    dialect_label: "SQL-dialekt",
    dialect_hint: "Databasen SQL-funksjonene nedenfor er for.",
    sql_functions: "SQL-funksjoner",
    sql_functions_hint: "Last inn dette skriptet i databasen én gang; da kjører time(id), feltene, min_id(ts), max_id(ts) og compose(...) i den. Verdier utenfor gyldig område gir NULL.",
    sql_api_link: "Samme skript fra API-et",
    range_span: "Tidsrom",
    result_heading: "Resultat",
    result_id: "Snowflake-ID",
    copy: "Kopier",
    copied: "Kopiert",
    time_utc: "Tid (UTC)",
    unix_ms: "Unix-ms",
    time_local: "Tid (din tidssone)",
    discord_markup: "Discord-tidsstempel",
    discord_markup_hint: "Lim inn i en Discord-melding: <t:…:F> viser dato og klokkeslett, <t:…:R> hvor lenge siden, begge i leserens egen tidssone.",
    copy_discord_full: "Kopier markeringen for dato og klokkeslett",
    copy_discord_relative: "Kopier markeringen for relativ tid",
    og_title: |id, time| format!("Snowflake-ID {id}: {time}"),
    og_description: |layout| {
        format!(
            "Snowflake-ID-en lest i {layout}-oppsettet: tiden, de 64 bitene og formelen, i snowmint-utforskeren."
        )
    },
    language: "Språk",
    share: "Del",
    share_link: "lenke til dette resultatet",
    no_result: "Rett feltet som er merket for å se ID-en.",
    no_result_list: "Rett linjen som er merket for å se tabellen.",
    no_result_range: "Rett feltet som er merket for å se ID-området.",
    list_caption: |n, layout| {
        format!(
            "{} ID-er, lest i {layout}-oppsettet",
            Lang::Nb.number(n as u64)
        )
    },
    list_line: "Linje",
    list_sort_hint: "Velg en kolonneoverskrift for å sortere etter den; velg den igjen for å snu rekkefølgen.",
    detect_heading: "Hvilket system laget disse ID-ene?",
    detect_intro: "Hvert oppsett, rangert etter hvor godt disse ID-ene passer i det: tider mellom epoken og nå, nodefelter som er konstante eller har få verdier, sekvenser som er små for bredden sin, ID-er som øker med tiden.",
    detect_ambiguous: |n, names| {
        let which = if n == 1 {
            "denne ID-en"
        } else {
            "disse ID-ene"
        };
        format!(
            "Tvetydig: {which} kan like gjerne komme fra {names}; flere ID-er fra samme system skiller dem."
        )
    },
    detect_score: "poengsum",
    detect_none: "ingen ID passer i dette oppsettet",
    detect_reason: |r| {
        use snowmint::Reason;
        match r {
            Reason::TooWide { count, bits } => {
                format!("{count} med biter satt over oppsettets {bits}")
            }
            Reason::InRange => "alle tidene ligger mellom epoken og nå".to_owned(),
            Reason::Future { count, latest_ms } => format!(
                "{count} ville vært laget i fremtiden (opptil {})",
                snowmint::time::Iso8601(*latest_ms as i64)
            ),
            Reason::Constant { fields } => {
                format!("{} er konstant i hele listen", fields.join(", "))
            }
            Reason::Varies {
                field,
                distinct,
                of,
            } => {
                format!("{field} har {distinct} ulike verdier i {of} ID-er")
            }
            Reason::SmallSequence { field, max, bits } => {
                format!("{field} er lite for sine {bits} biter (høyst {max})")
            }
            Reason::LargeSequence { field, max, bits } => {
                format!("{field} er stort for en sekvens på {bits} biter (opptil {max})")
            }
            Reason::Increasing => "ID-ene øker med tiden".to_owned(),
            Reason::OneId => "én ID sier ingenting om nodefeltene".to_owned(),
            // A reason added later: the core's words.
            other => other.to_string(),
        }
    },
    layout_custom: "Egendefinert …",
    custom_legend: "Eget oppsett",
    custom_hint: "Brukes når oppsettet er Egendefinert …: epoke, tidsenhet og felter fra øverste bit og ned, det første kalt timestamp.",
    custom_epoch: "Epoke",
    custom_epoch_hint: "Unix-ms eller ISO-8601, f.eks. 2020-01-01",
    custom_unit: "Tidsenhet",
    custom_unit_hint: "1ms (tomt), 10ms, 1s",
    custom_fields: "Felter",
    custom_fields_hint: "NAVN:BITER fra øverste bit og ned, f.eks. timestamp:41,machine:10,sequence:12",
    lab_heading: "Oppsettlaben",
    lab: |r| {
        let span = |ms: u64| {
            let (n, unit) = super::duration(ms);
            let word = match (unit, n == 1) {
                (super::Unit::Year, _) => "år",
                (super::Unit::Day, true) => "dag",
                (super::Unit::Day, false) => "dager",
                (super::Unit::Hour, true) => "time",
                (super::Unit::Hour, false) => "timer",
                (super::Unit::Second, true) => "sekund",
                (super::Unit::Second, false) => "sekunder",
            };
            format!("{n} {word}")
        };
        let per = if r.unit_ms == 1 {
            "millisekund".to_owned()
        } else {
            format!("tidsenhet på {} ms", r.unit_ms)
        };
        let mut out = vec![
            format!(
                "{} ulike ID-er per {per}, alle maskiner til sammen.",
                r.ids_per_unit
            ),
            if r.end_in_ms >= 0 {
                format!(
                    "Tiden går ut {}, om {}.",
                    r.end,
                    span(r.end_in_ms.unsigned_abs())
                )
            } else {
                format!(
                    "Tiden gikk ut {}, for {} siden.",
                    r.end,
                    span(r.end_in_ms.unsigned_abs())
                )
            },
        ];
        out.push(match r.js_safety() {
            JsSafety::Always { .. } => "Hver ID i dette oppsettet er et trygt JavaScript-tall, helt til slutten.".to_owned(),
            JsSafety::Stopped { until, after_ms } => format!(
                "ID-er i dette oppsettet sluttet å være trygge JavaScript-tall {} etter epoken, {until}: send dem som tekst.",
                span(after_ms)
            ),
            JsSafety::Stops { until, after_ms } => format!(
                "ID-er i dette oppsettet slutter å være trygge JavaScript-tall {} etter epoken, {until}.",
                span(after_ms)
            ),
            _ => "Ingen ID i dette oppsettet er et trygt JavaScript-tall: selv epokens er over 2^53 − 1.".to_owned(),
        });
        out
    },
    layout_row: "Oppsett",
    bits_heading: "De 64 bitene",
    bits_intro: "Mest signifikante bit først. Hvert segment viser navn, bitområde og verdi.",
    bits_scroll_hint: "Rull sidelengs for å se alle 64 bitene →",
    seg_label: |label| match label {
        "sign" => "Fortegn",
        "timestamp" => "Tidsstempel",
        "datacenter" => "Datasenter",
        "worker" => "Arbeider",
        "sequence" => "Sekvens",
        "process" => "Prosess",
        "increment" => "Teller",
        "shard" => "Shard",
        "machine" => "Maskin",
        "sequence data" | "sequence_data" => "Sekvensdata",
        other => other,
    },
    bit: "bit",
    bits: "biter",
    value: "verdi",
    formula_heading: "Formelen",
    formula_legend: "t = tidsstempel (Unix-ms), c = datasenter, m = arbeider (maskin), s = sekvens.",
    formula_legend_for: |unit, fields| {
        let mut out = "t = tidsstempel (Unix-ms)".to_owned();
        if unit > 1 {
            out.push_str(&format!(", d teller enheter på {unit} ms"));
        }
        for (letter, label) in fields {
            out.push_str(&format!(", {letter} = {}", label.to_lowercase()));
        }
        out.push('.');
        out
    },
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
    live_token: "Denne serveren krever et API-token for å lage ID-er (Authorization: Bearer), og det sender ikke denne siden: bruk API-et i stedet.",
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
    guide: Guide {
        heading: "Snowflake-ID-er forklart",
        what_heading: "Hva en Snowflake-ID er",
        what: |_| {
            html! {
                p { "En Snowflake-ID er et 64-bits heltall satt sammen av tre ting: tidspunktet den ble laget, på millisekundet; identiteten til maskinen som laget den; og et sekvensnummer som teller ID-ene den maskinen laget i samme millisekund. Fordi hver maskin har sin egen identitet og holder sin egen telling, kan mange servere dele ut ID-er samtidig uten å spørre hverandre, eller en sentral database, om et nummer allerede er brukt." }
                p { "Tallet får plass i et 64-bits heltall med fortegn (" code { "BIGINT" } " i SQL, " code { "long" } " i Java), så det er billig å lagre og å indeksere, og det kan tas fra hverandre igjen: hver ID forteller når og hvor den ble laget." }
            }
        },
        how_heading: "Slik virker verktøyet",
        how: |f| {
            let l = f.layout;
            html! {
                p { "Skjemaet for å lage en ID setter sammen fire verdier nøyaktig slik en ID-generator gjør:" }
                ul {
                    li { strong { "Tidsstempel" } ": Unix-tid i millisekunder. La feltet stå tomt for å bruke tiden nå, skriv en ISO-8601-tid som " code { (f.example().time()) } ", eller velg en dato. Det må ligge mellom " (f.epoch()) " og " (f.end()) "." }
                    li { strong { "Datasenter-ID" } ": 0–" (l.max_datacenter()) ", " (l.datacenter_bits()) " biter." }
                    li { strong { "Arbeider-ID" } " («maskin-ID» i det opprinnelige verktøyet): 0–" (l.max_worker()) ", " (l.worker_bits()) " biter." }
                    li { strong { "Sekvens" } ": 0–" (l.max_sequence()) ", " (l.sequence_bits()) " biter: hvilken av arbeiderens ID-er i det millisekundet dette er." }
                }
                p { "Tidsstempelet telles fra en epoke som ligger fast på " (f.epoch()) " (" code { (f.epoch_ms()) } " i Unix-millisekunder), og den kan ikke endres her: med en annen epoke ville de samme fire verdiene gitt en annen ID. Skjemaet for å dekode går motsatt vei: lim inn en ID i desimal, heksadesimal eller base32 og se de fire verdiene. Hvert resultat har sin egen lenke, og siden virker uten JavaScript." }
            }
        },
        why_heading: "Hvorfor ID-ene sorteres etter tid",
        why: |f| {
            html! {
                p { "Den øverste biten, fortegnsbiten, er alltid 0, så hver ID er et positivt tall enten et program leser den med eller uten fortegn. Rett under den fyller tidsstempelet de neste " (f.layout.timestamp_bits()) " bitene, de mest signifikante. Når to tall sammenlignes, avgjør den høyeste biten der de er ulike, så en ID fra et senere millisekund er alltid det største tallet, uansett datasenter, arbeider og sekvens." }
                p { "Innenfor ett millisekund på én arbeider avgjør sekvensen: den teller 0, 1, 2 og så videre, så de ID-ene sorteres i den rekkefølgen de ble laget. ID-er fra samme millisekund på ulike maskiner sorteres etter datasenter og arbeider, som ikke sier noe om hvilken som kom først, og mellom maskiner er rekkefølgen bare så god som klokkene deres stemmer overens." }
                p { "Derfor er Snowflake-ID-er gode databasenøkler: nye rader havner på slutten av indeksen, og å sortere etter ID er å sortere etter tid." }
            }
        },
        example_heading: "Et regneeksempel, steg for steg",
        example_intro: |f| {
            let e = f.example();
            html! {
                p { "Ta tidsstempelet " code { (e.parts.timestamp_ms) } " (" (e.time()) "), datasenter " (e.parts.datacenter) ", arbeider " (e.parts.worker) " og sekvens " (e.parts.sequence) "." }
            }
        },
        example_steps: [
            |_| html! { "Trekk fra epoken for å få millisekundene siden den:" },
            |f| {
                let shift = f.layout.timestamp_shift();
                html! { "Skyv det " (shift) " biter til venstre, det vil si gang med 2^" (shift) " = " (n(1 << shift)) ":" }
            },
            |f| html! { "Skyv datasenteret " (f.layout.datacenter_shift()) " biter til venstre:" },
            |f| html! { "Skyv arbeideren " (f.layout.worker_shift()) " biter til venstre:" },
            |f| html! { "Sekvensen blir der den er, i de " (f.layout.sequence_bits()) " laveste bitene:" },
            |_| html! { "Sett de fire sammen:" },
        ],
        example_bits: "De fire leddene i totallssystemet, delt i fortegn, tidsstempel, datasenter, arbeider og sekvens.",
        example_or: |_| {
            html! {
                p { "Å legge sammen de fire tallene gir det samme som å OR-e dem (" code { "|" } "), fordi feltene ikke overlapper. Hver verdi er mindre enn 2 opphøyd i feltets bredde, så etter skyvingen ligger den helt i sine egne biter, og ingen to ledd har 1 på samme plass. Når ingenting skal i mente, gir " code { "+" } " og " code { "|" } " samme svar." }
            }
        },
        example_shifts: |f| {
            let l = f.layout;
            html! {
                p { "Skyvene er bredden av feltene under hvert felt. Sekvensen tar de " (l.sequence_bits()) " laveste bitene, så arbeideren begynner på bit " (l.worker_shift()) ". Arbeideren tar " (l.worker_bits()) " til, så datasenteret begynner på " (l.worker_shift()) " + " (l.worker_bits()) " = " (l.datacenter_shift()) ". Datasenteret tar " (l.datacenter_bits()) " til, så tidsstempelet begynner på " (l.datacenter_shift()) " + " (l.datacenter_bits()) " = " (l.timestamp_shift()) ", og de " (l.timestamp_bits()) " bitene når opp til bit " (l.timestamp_shift() + l.timestamp_bits() - 1) ", rett under fortegnsbiten." }
            }
        },
        example_link: "Åpne eksempelet i utforskeren",
        uses_heading: "Hvor Snowflake-ID-er brukes",
        uses: |_, discord| {
            html! {
                p { "Twitter laget formatet i 2010 for ID-ene til tweets: de ble skrevet til tusenvis av databasemaskiner, og ingen enkelt teller kunne holde følge med alle. Discord tok senere i bruk det samme 64-bits oppsettet for meldinger, brukere og servere, med en egen epoke (2015-01-01), og Instagram bygde en lignende ordning for innleggene sine inne i PostgreSQL, med et shard-nummer der Twitter har datasenter og arbeider." }
                p { "Den samme ideen passer for oppdelte (shardede) databaser, ordre- og fakturanumre og hendelseslogger: overalt der mange skrivere trenger unike nøkler som sorteres etter tid, uten en tur til en sentral teller. " }
                p { "Disse systemene legger ut bitene ulikt, så ett og samme tall betyr en annen tid i hvert av dem. Dekoderen over leser ID-ene deres også: velg oppsettet, som i " a #uses-discord href=(discord) { "Discords eget eksempel" } ", eller dekod ID-er fra Instagram, Sonyflake (tidsenheter på 10 ms, maskin-ID-en nederst) og Mastodon på samme måte. Kommandolinjen gjør det med " code { "snowmint decode --layout discord ID" } ". Skjemaet for å lage en ID tar de samme oppsettene: feltene er det valgte oppsettets." }
            }
        },
        minter_heading: "Kalkulatoren og en ekte ID-generator",
        minter: |f| {
            html! {
                p { "Skjemaet for å lage en ID er en kalkulator: den husker ingenting fra én utregning til den neste. Gi den de samme fire verdiene to ganger, og den viser den samme ID-en to ganger. Det er det du vil ha når du lærer formatet, og akkurat det en ID-generator aldri må gjøre." }
                p { "En ekte ID-generator holder rede på tilstand. Den leser en klokke som går, teller sekvensen opp for hver ID innenfor et millisekund, og når alle " (n(f.per_ms())) " ID-ene i et millisekund er brukt, venter den på det neste. Den utsteder aldri samme ID to ganger, heller ikke når klokka går tilbake, og ingen annen maskin lager ID-er med dens identitet." }
                p { code { "snowmint serve" } " kjører en slik generator: " a href="#live" { "de ferske ID-ene fra denne serveren" } " over kommer derfra (" code { "POST /api/v1/ids" } "), og " code { "Generator" } " i biblioteket " code { "snowmint" } " gjør det samme inne i et Rust-program." }
            }
        },
        history_heading: "Litt historie",
        history: |f| {
            html! {
                p { "Twitter kunngjorde Snowflake i 2010, mens de forberedte flyttingen av tweets fra én MySQL-database til mange servere. Autoinkrementerte ID-er kommer fra telleren i én database, og det skalerer ikke over mange uavhengige databaseservere: enten må hver innsetting vente på den ene telleren, eller så deler serverne ut de samme numrene. Med Snowflake kunne hver server lage ID-er på egen hånd som likevel er unike, omtrent ordnet etter tid og små nok for 64 biter. Epoken, " (f.epoch()) ", er fra ukene da ID-ene til tweets gikk over til den nye ordningen." }
                p { "Navnet spiller på at ingen snøfnugg er like. Twitter ga ut Snowflake som åpen kildekode, og andre store plattformer tilpasset utformingen, blant dem Discord og Instagram, i likhet med ID-biblioteker i de fleste programmeringsspråk, dette medregnet." }
            }
        },
    },
};
