//! The page through the router, without a socket. The HTTP contract of the
//! page (CSP, escaping of input, forms without JavaScript) is pinned by
//! `tests/api/`; these pin what the page says and serves besides.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use tower::ServiceExt;

use crate::{AppState, Minter, app};

#[path = "../../../tests/fixtures/sonyflake.rs"]
mod fixtures;

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
}

async fn get(uri: &str) -> Answer {
    let state = AppState::new(Minter::empty());
    let response = app(state)
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

/// `GET uri`, which must answer 200 with this `Content-Type`.
async fn asset(uri: &str, content_type: &str) -> Answer {
    let answer = get(uri).await;
    assert_eq!(answer.status, StatusCode::OK, "{uri}");
    assert_eq!(answer.headers[header::CONTENT_TYPE], content_type, "{uri}");
    answer
}

#[tokio::test]
async fn serves_a_favicon_where_browsers_look_for_it() {
    let ico = asset("/favicon.ico", "image/x-icon").await;
    // An ICO directory of one image, the image a PNG.
    assert_eq!(&ico.body[..6], &[0, 0, 1, 0, 1, 0]);
    assert_eq!(&ico.body[22..30], b"\x89PNG\r\n\x1a\n");
    let svg = asset("/assets/favicon.svg", "image/svg+xml").await;
    assert!(
        svg.text()
            .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")
    );
}

#[tokio::test]
async fn the_head_describes_the_page_in_its_language() {
    let mut descriptions = Vec::new();
    for lang in ["en", "nb"] {
        let page = get(&format!("/?lang={lang}")).await;
        let html = page.text();
        let description = html
            .split_once(r#"<meta name="description" content=""#)
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(content, _)| content.to_owned())
            .unwrap_or_else(|| panic!("no meta description in {lang}"));
        assert!(description.len() > 50, "{lang}: {description}");
        descriptions.push(description);
        assert!(html.contains(r#"<link rel="icon" href="/favicon.ico" sizes="32x32">"#));
        assert!(
            html.contains(r#"<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">"#)
        );
    }
    assert_ne!(descriptions[0], descriptions[1]);
    assert!(descriptions[1].contains("Snowflake-ID"));
}

/// The ids of the guide's subsections, in order.
const TOPICS: [&str; 7] = ["what", "how", "why", "example", "uses", "minter", "history"];

/// The text of the element whose opening tag ends with `open`.
fn inner<'a>(html: &'a str, open: &str) -> &'a str {
    let (_, rest) = html.split_once(open).unwrap_or_else(|| panic!("no {open}"));
    let (_, rest) = rest.split_once('>').unwrap();
    rest.split_once('<').unwrap().0
}

#[tokio::test]
async fn the_guide_explains_the_format_in_both_languages() {
    let en = get("/?lang=en").await;
    let nb = get("/?lang=nb").await;
    let headings = |html: &str| -> Vec<String> {
        TOPICS
            .iter()
            .map(|key| inner(html, &format!(r#"<h3 id="guide-{key}-h""#)).to_owned())
            .collect()
    };
    let (en_h, nb_h) = (headings(en.text()), headings(nb.text()));
    assert_eq!(en_h[3], "A worked example, step by step");
    assert_eq!(nb_h[3], "Et regneeksempel, steg for steg");
    for (e, n) in en_h.iter().zip(&nb_h) {
        assert!(!e.is_empty() && !n.is_empty() && e != n, "{e} / {n}");
    }
    assert_eq!(
        inner(en.text(), r#"<h2 id="guide-h""#),
        "Snowflake IDs explained"
    );
    assert_eq!(
        inner(nb.text(), r#"<h2 id="guide-h""#),
        "Snowflake-ID-er forklart"
    );
}

#[tokio::test]
async fn the_worked_example_shows_each_step_with_grouped_numbers() {
    let en = get("/").await;
    let html = en.text();
    for step in [
        "<code>1288834975657 − 1288834974657 = 1000</code>",
        "<code>1000 &lt;&lt; 22 = 4,194,304,000</code>",
        "<code>1 &lt;&lt; 17 = 131,072</code>",
        "<code>1 &lt;&lt; 12 = 4,096</code>",
        "4,194,304,000 | 131,072 | 4,096 | 0 = 4,194,439,168",
        "4,194,304,000 + 131,072 + 4,096 + 0 = 4,194,439,168",
        "multiplies it by 2^22 = 4,194,304:",
        "so the timestamp starts at 17 + 5 = 22",
    ] {
        assert!(html.contains(step), "missing {step:?}");
    }
    // The combined row of the binary figure is the ID's own bit split.
    assert!(html.contains(
        "=  0 | 00000000000000000000000000000001111101000 | 00001 | 00001 | 000000000000"
    ));
    assert!(html.contains(
        r##"<a id="example-link" href="/?timestamp=1288834975657&amp;datacenter=1&amp;worker=1&amp;sequence=0#compose">"##
    ));

    let nb = get("/?lang=nb").await;
    let html = nb.text();
    assert!(html.contains("<code>1000 &lt;&lt; 22 = 4\u{a0}194\u{a0}304\u{a0}000</code>"));
    assert!(html.contains("= 4\u{a0}194\u{a0}439\u{a0}168"));
    // A language chosen by the query stays chosen through the link.
    assert!(html.contains(r##"&amp;sequence=0&amp;lang=nb#compose">Åpne eksempelet"##));
}

/// The text of the element with this id (its first text node).
fn by_id<'a>(html: &'a str, id: &str) -> &'a str {
    inner(html, &format!(r#" id="{id}""#))
}

#[tokio::test]
async fn the_range_of_january_2024_without_javascript() {
    let page = get("/?range_from=2024-01-01T00:00:00Z&range_to=2024-02-01T00:00:00Z").await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    let epoch = 1288834974657u64;
    let min = (1704067200000 - epoch) << 22;
    let max = ((1706745600000 - epoch) << 22) | 4194303;
    assert_eq!(by_id(html, "range-min"), min.to_string());
    assert_eq!(by_id(html, "range-max"), max.to_string());
    assert_eq!(
        by_id(html, "range-slots"),
        crate::routes::page::i18n::Lang::En.number(max - min + 1)
    );
    assert!(html.contains(&format!("<code>WHERE id BETWEEN {min} AND {max}</code>")));
    assert!(html.contains(&format!(r#"data-copy="WHERE id BETWEEN {min} AND {max}""#)));
    // The pickers show the two times; the fields keep what was typed.
    assert!(html.contains(r#"name="range_from_at" value="2024-01-01T00:00:00.000""#));
    assert!(html.contains(r#"name="range_to" value="2024-02-01T00:00:00Z""#));
    // The picker alone works too, and fills the text field.
    let picked = get("/?range_from_at=2024-01-01T00:00&range_to=1706745600000").await;
    assert_eq!(by_id(picked.text(), "range-min"), min.to_string());
    assert!(
        picked
            .text()
            .contains(r#"name="range_from" value="1704067200000""#)
    );
}

/// The range result shows the SQL functions of the chosen dialect and
/// layout (PostgreSQL's by default), the same text as `GET /api/v1/sql`,
/// escaped, with a copy button; the form's select keeps the choice.
#[tokio::test]
async fn the_range_shows_the_dialects_sql_functions() {
    use snowmint::sql::{Dialect, Options, functions};
    let script = |d, l| functions(d, &l, &Options::default()).unwrap();
    let escaped = |s: String| maud::html! { (s) }.into_string();
    let page = get("/?range_from=2024-01-01T00:00:00Z").await;
    let html = page.text();
    let pg = escaped(script(Dialect::Postgres, snowmint::Layout::TWITTER));
    assert!(html.contains(&format!("<code>{pg}</code>")), "{html}");
    assert!(html.contains(&format!(r#"data-copy="{pg}""#)));
    assert!(html.contains(r#"<option value="postgres" selected>PostgreSQL</option>"#));
    assert!(
        html.contains(r#"href="/api/v1/sql?dialect=postgres""#),
        "{html}"
    );
    let page =
        get("/?range_from=2024-01-01T00:00:00Z&dialect=mysql&layout=instagram&lang=nb").await;
    let html = page.text();
    let my = escaped(script(Dialect::Mysql, snowmint::Layout::INSTAGRAM));
    assert!(html.contains(&format!("<code>{my}</code>")));
    assert!(html.contains("SQL-funksjoner (MySQL / MariaDB)"), "{html}");
    assert!(html.contains(r#"<option value="mysql" selected>"#));
    assert!(
        html.contains(r#"href="/api/v1/sql?dialect=mysql&amp;layout=instagram""#),
        "{html}"
    );
    // The share link keeps the dialect.
    let share = html.split(r#"id="share" href=""#).nth(1).unwrap();
    let share = &share[..share.find('"').unwrap()];
    assert!(share.contains("&amp;dialect=mysql"), "{share}");
    // An unknown dialect (an edited URL) is refused, as the API refuses it.
    let page = get("/?range_from=2024-01-01T00:00:00Z&dialect=oracle").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(!page.text().contains("SQL functions ("));
}

#[tokio::test]
async fn range_errors_name_the_field_in_both_languages() {
    let backwards = "/?range_from=2024-02-01T00:00:00Z&range_to=2024-01-01T00:00:00Z";
    let en = get(backwards).await;
    assert!(
        by_id(en.text(), "range_to-error").starts_with("to must be at or after from 1706745600000"),
        "{}",
        en.text()
    );
    assert!(
        en.text()
            .contains("Fix the marked field to see the ID range.")
    );
    let nb = get(&format!("{backwards}&lang=nb")).await;
    assert!(
        by_id(nb.text(), "range_to-error")
            .starts_with("Til-tiden må være lik eller etter fra-tiden 1706745600000"),
        "{}",
        nb.text()
    );
    let msg = text_at("/?range_from=soon&lang=nb", "range_from-error").await;
    assert!(
        msg.starts_with("Fra-tiden må være") && msg.ends_with("fikk «soon»"),
        "{msg}"
    );
    let msg = text_at("/?range_from=1&range_to=", "range_from-error").await;
    assert!(msg.starts_with("from must be 1288834974657..="), "{msg}");
    // In another layout the bounds are that layout's.
    let msg = text_at("/?range_from=1&layout=discord", "range_from-error").await;
    assert!(msg.starts_with("from must be 1420070400000..="), "{msg}");
}

#[tokio::test]
async fn a_pasted_list_shows_a_row_per_id_and_names_a_bad_line() {
    let page = get("/?ids=4194439168%0D%0A%0D%0A175928847299117063%0D%0A&id=").await;
    let html = page.text();
    assert_eq!(
        html.matches("<tr>").count(),
        3,
        "a header and two rows: {html}"
    );
    assert!(
        html.contains("<caption id=\"list-caption\">2 IDs, read in the Twitter layout</caption>")
    );
    assert!(
        html.contains(r#"<td class="num">3</td>"#),
        "line numbers count blank lines"
    );
    assert!(html.contains("2010-11-04T01:42:55.657Z"));
    // Sorting is a button of the decode form, so it works without a script.
    assert!(html.contains(
        r#"<button class="sort" id="sort-time" type="submit" form="decode-form" name="sort" value="time">"#
    ));
    let sorted = get("/?ids=175928847299117063%0A4194439168&sort=time").await;
    let html = sorted.text();
    assert!(
        html.find(">4194439168<").unwrap() < html.find(">175928847299117063<").unwrap(),
        "sorted by time"
    );
    assert!(
        html.contains(
            r#"<th scope="col" aria-sort="ascending"><button class="sort" id="sort-time""#
        )
    );
    assert!(html.contains(r#"value="-time""#), "the next press reverses");

    let bad = get("/?ids=4194439168%0Azz").await;
    assert!(
        by_id(bad.text(), "ids-error").starts_with("line 2: id must be"),
        "{}",
        bad.text()
    );
    let bad = get("/?ids=4194439168%0Azz&lang=nb").await;
    assert!(by_id(bad.text(), "ids-error").starts_with("linje 2: ID-en må være"));
    let many = "1%0A".repeat(1001);
    let long = get(&format!("/?ids={many}")).await;
    assert_eq!(
        by_id(long.text(), "ids-error"),
        "at most 1,000 IDs at once, one a line; got 1,001"
    );
}

#[tokio::test]
async fn the_layout_select_reads_a_discord_id() {
    let page = get("/?id=175928847299117063&layout=discord").await;
    let html = page.text();
    assert_eq!(by_id(html, "time-value"), "2016-04-30T11:18:25.796Z");
    assert!(html.contains(r#"<option value="discord" selected>Discord</option>"#));
    assert_eq!(by_id(html, "layout-value"), "Discord");
    // The bit picture has Discord's names, in the slots' colours.
    assert!(html.contains(r#"<div class="seg seg-datacenter">"#));
    assert!(html.contains(r#"aria-label="Process: 00000""#), "{html}");
    assert!(
        html.contains(r#"aria-label="Increment: 000000000111""#),
        "{html}"
    );
    // Instagram has no sign segment and no datacenter; its worker is a shard.
    let ig = get("/?id=1&layout=instagram&lang=nb").await;
    let html = ig.text();
    assert!(!html.contains("seg-sign") && !html.contains("seg-datacenter"));
    assert!(
        html.contains(r#"aria-label="Shard: 0000000000000""#),
        "{html}"
    );
    // The share link keeps the layout.
    let html = page.text();
    assert!(html.contains(r#"href="/?id=175928847299117063&amp;layout=discord">"#));
}

/// The text of the element with this id on the page `uri` answers.
async fn text_at(uri: &str, id: &str) -> String {
    by_id(get(uri).await.text(), id).to_owned()
}

/// What follows `open` up to `close`.
fn between<'a>(html: &'a str, open: &str, close: &str) -> &'a str {
    let (_, rest) = html.split_once(open).unwrap_or_else(|| panic!("no {open}"));
    rest.split_once(close)
        .unwrap_or_else(|| panic!("no {close}"))
        .0
}

/// The `value` of the input `id`.
fn value<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!(r#"id="{id}" name="{id}" value=""#);
    let start = html.find(&open).unwrap_or_else(|| panic!("no #{id}")) + open.len();
    &html[start..start + html[start..].find('"').unwrap()]
}

#[tokio::test]
async fn composes_in_discords_layout_without_javascript() {
    // Discord's documented example, its fields by their own names.
    let page = get("/?layout=discord&worker=1&process=0&increment=7&timestamp=1462015105796").await;
    let html = page.text();
    assert_eq!(by_id(html, "id-value"), "175928847299117063");
    assert_eq!(by_id(html, "layout-value"), "Discord");
    assert!(
        html.contains(r#"aria-label="Increment: 000000000111""#),
        "{html}"
    );
    // The form is Discord's: its three fields, as typed, with their ranges.
    let fields = between(
        html,
        r#"<div class="trio" id="compose-fields" data-layout="discord">"#,
        "</form>",
    );
    for (name, typed) in [("worker", "1"), ("process", "0"), ("increment", "7")] {
        assert_eq!(value(fields, name), typed);
    }
    assert!(fields.contains(">Increment (0–4095)</label>"), "{fields}");
    assert!(!fields.contains("datacenter"), "{fields}");
    assert!(html.contains(
        r#"<select id="compose-layout" name="layout" aria-describedby="compose-layout-hint"><option value="twitter">"#
    ));
    // Its share link composes again, in Discord's layout.
    assert!(html.contains(
        r#"href="/?layout=discord&amp;timestamp=1462015105796&amp;worker=1&amp;process=0&amp;increment=7">"#
    ), "{html}");

    // Choosing Sonyflake without a script and submitting (the form says
    // its fields were Twitter's): the fields Sonyflake lacks are left out,
    // the ones missing are 0, and the form is its own.
    let sony = get(
        "/?layout=sonyflake&fields_of=twitter&timestamp=1700000000000&datacenter=3&worker=3&sequence=2",
    )
    .await;
    let html = sony.text();
    let fields = between(
        html,
        r#"<div class="trio" id="compose-fields" data-layout="sonyflake">"#,
        "</form>",
    );
    assert_eq!(value(fields, "sequence"), "2");
    assert_eq!(value(fields, "machine"), "0");
    let expected = snowmint::Layout::SONYFLAKE
        .compose_fields(1700000000000, &[("sequence", 2), ("machine", 0)])
        .unwrap();
    assert_eq!(by_id(html, "id-value"), expected.to_string());

    // A value out of range is named in place, with its range, in the
    // page's language.
    for (lang, start) in [
        ("en", "process must be 0..=31, got 32"),
        (
            "nb",
            "Feltet process må være et heltall i 0..=31, fikk «32»",
        ),
    ] {
        let bad = get(&format!(
            "/?layout=discord&worker=1&process=32&increment=7&timestamp=1462015105796&lang={lang}"
        ))
        .await;
        assert_eq!(by_id(bad.text(), "process-error"), start);
        assert!(bad.text().contains(r#"id="process" name="process" value="32" autocomplete="off" spellcheck="false" aria-describedby="process-error" aria-invalid="true""#));
    }
    // A custom layout's own names; a time before its epoch names the timestamp.
    let custom = "epoch%3D2020-01-01%3Bfields%3Dtimestamp%3A41%2Cnode%3A10%2Cstep%3A12";
    let page = get(&format!(
        "/?layout={custom}&timestamp=1577836800001&node=1023&step=5"
    ))
    .await;
    assert_eq!(
        by_id(page.text(), "id-value"),
        ((1u64 << 22) | (1023 << 12) | 5).to_string()
    );
    let early = get(&format!(
        "/?layout={custom}&timestamp=1&node=1&step=1&lang=nb"
    ))
    .await;
    assert!(
        by_id(early.text(), "timestamp-error").starts_with("Tidsstempelet må være"),
        "{}",
        early.text()
    );
    // A field named like a parameter of the page cannot be composed here.
    let clash = get("/?layout=epoch%3D0%3Bfields%3Dtimestamp%3A41%2Cid%3A10").await;
    assert!(
        by_id(clash.text(), "compose-layout-error")
            .starts_with("a field named id cannot be composed here")
    );
}

#[tokio::test]
async fn spec_errors_in_both_languages() {
    let cases = [
        (
            "epoch%3D0%3Bfields%3Dtimestamp%3A41%2Cworker%3A10%2Csequence%3A14",
            "invalid layout: the widths add up to 65 bits, more than 64",
            "ugyldig oppsett: breddene blir til sammen 65 biter, mer enn 64",
        ),
        (
            "epoch%3D0%3Bfields%3Dworker%3A10",
            "invalid layout: no field is named timestamp: one field must hold the time",
            "ugyldig oppsett: ingen felt heter timestamp: ett felt må holde tiden",
        ),
        (
            "epoch%3D0%3Bunit%3D0ms%3Bfields%3Dtimestamp%3A41",
            "invalid layout: the time unit must be at least 1 ms, got &quot;0ms&quot;",
            "ugyldig oppsett: tidsenheten må være minst 1 ms, fikk «0ms»",
        ),
        (
            "fields%3Dtimestamp%3A41",
            "invalid layout: the epoch is missing",
            "ugyldig oppsett: epoken mangler: legg til epoch=",
        ),
        (
            "epoch%3D0%3Bfields%3Dtimestamp%3A41%2CWorker%3A5",
            "invalid layout: the field name &quot;Worker&quot; must be",
            "ugyldig oppsett: feltnavnet «Worker» må være 1 til 24",
        ),
    ];
    for (spec, en, nb) in cases {
        // Each form's own select shows the error of the form submitted.
        for (query, id) in [
            (format!("/?layout={spec}"), "compose-layout-error"),
            (format!("/?layout={spec}&id=1"), "layout-error"),
            (
                format!("/?layout={spec}&range_from=now"),
                "range-layout-error",
            ),
        ] {
            let msg = text_at(&query, id).await;
            assert!(msg.starts_with(en), "{query}: {msg}");
            let msg = text_at(&format!("{query}&lang=nb"), id).await;
            assert!(msg.starts_with(nb), "{query}: {msg}");
        }
    }
    // The custom parts spell a spec too; its error is named in place.
    let msg = text_at(
        "/?layout=custom&layout_epoch=&layout_fields=timestamp%3A41&id=1&lang=nb",
        "layout-error",
    )
    .await;
    assert!(
        msg.starts_with("ugyldig oppsett: epoken må være Unix-millisekunder"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_pasted_list_says_which_system_made_it() {
    // Twenty Sonyflake IDs of one machine, seconds apart.
    let ids = fixtures::sonyflake_ids();
    let page = get(&format!("/?ids={}", ids.join("%0A"))).await;
    let html = page.text();
    let ranked = between(
        html,
        r#"<ol class="candidates" id="detect" aria-labelledby="detect-h">"#,
        "</ol>",
    );
    assert!(
        ranked.starts_with(
            r#"<li data-layout="sonyflake"><strong class="candidate">Sonyflake</strong>"#
        ),
        "{ranked}"
    );
    assert!(
        ranked.contains("machine constant across the list"),
        "{ranked}"
    );
    assert!(!html.contains(r#"id="detect-note""#));
    assert_eq!(by_id(html, "detect-h"), "Which system made these IDs?");
    let nb = get(&format!("/?ids={}&lang=nb", ids.join("%0A"))).await;
    let html = nb.text();
    assert_eq!(
        by_id(html, "detect-h"),
        "Hvilket system laget disse ID-ene?"
    );
    assert!(html.contains("machine er konstant i hele listen"), "{html}");
    // One ID in Twitter's and Discord's shape: ambiguous, said so.
    let note = text_at("/?ids=175928847299117063", "detect-note").await;
    assert!(
        note.starts_with("Ambiguous: this ID could come from"),
        "{note}"
    );
    let note = text_at("/?ids=175928847299117063&lang=nb", "detect-note").await;
    assert!(note.starts_with("Tvetydig: denne ID-en"), "{note}");
}

#[tokio::test]
async fn a_repeated_parameter_is_named_not_ignored() {
    // 400 with the page (the query itself is refused, as the API refuses
    // it): the error is shown where the value goes, and on top of the result.
    let page = get("/?datacenter=1&datacenter=2").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    let html = page.text();
    assert_eq!(
        by_id(html, "datacenter-error"),
        "datacenter is given more than once in the query; give it once"
    );
    assert!(html.contains(r#"id="datacenter" name="datacenter" value="1""#));
    assert!(
        html.contains(r#"<p class="error" id="query-error" role="alert" data-param="datacenter">"#)
    );
    // One without a field of its own is named above the result.
    let msg = text_at(
        "/?id=1&layout=discord&layout=twitter&lang=nb",
        "query-error",
    )
    .await;
    assert_eq!(
        msg,
        "layout står mer enn én gang i spørringen; oppgi den én gang"
    );
    let msg = text_at("/?range_from=1&range_from=2", "range_from-error").await;
    assert!(msg.starts_with("range_from is given more"), "{msg}");
}

#[tokio::test]
async fn the_picker_and_the_timestamp_fill_each_other() {
    let page = get("/?timestamp=1288834975657&datacenter=1&worker=1&sequence=0").await;
    assert!(
        page.text()
            .contains(r#"name="at" value="2010-11-04T01:42:55.657""#)
    );
    let page = get("/?at=2010-11-04T01:42:55.657&datacenter=1&worker=1&sequence=0").await;
    assert!(
        page.text()
            .contains(r#"name="timestamp" value="1288834975657""#)
    );
    assert_eq!(by_id(page.text(), "id-value"), "4194439168");
    // A blank timestamp means now and stays blank.
    let page = get("/?datacenter=1").await;
    assert!(page.text().contains(r#"name="timestamp" value="""#));
}

/// The `content` of the `<meta property="PROPERTY">` tags, in order.
fn og(html: &str, property: &str) -> Vec<String> {
    let open = format!(r#"<meta property="{property}" content=""#);
    html.split(&open)
        .skip(1)
        .map(|rest| rest.split_once('"').unwrap().0.to_owned())
        .collect()
}

#[tokio::test]
async fn a_result_url_carries_open_graph_tags_in_its_language() {
    let page = get("/?id=175928847299117063&layout=discord&lang=en").await;
    let html = page.text();
    assert_eq!(
        og(html, "og:title"),
        ["Snowflake ID 175928847299117063: 2016-04-30T11:18:25.796Z"]
    );
    let description = og(html, "og:description");
    assert_eq!(description.len(), 1);
    assert!(description[0].contains("Discord layout"), "{description:?}");
    assert_eq!(og(html, "og:type"), ["website"]);
    assert_eq!(og(html, "og:locale"), ["en_US"]);
    // The page cannot know its public address (Host is the client's to
    // choose) and a relative og:url is invalid: none is given.
    assert!(og(html, "og:url").is_empty());
    // The tags are in the head.
    let head = html.split_once("</head>").unwrap().0;
    assert!(head.contains(r#"<meta property="og:title""#));

    let page = get("/?id=175928847299117063&layout=discord&lang=nb").await;
    let html = page.text();
    assert_eq!(
        og(html, "og:title"),
        ["Snowflake-ID 175928847299117063: 2016-04-30T11:18:25.796Z"]
    );
    assert!(og(html, "og:description")[0].contains("Discord-oppsettet"));
    assert_eq!(og(html, "og:locale"), ["nb_NO"]);

    // A composed result is a result too; an attribute value is escaped.
    let page = get("/?timestamp=1288834975657&datacenter=1&worker=1&sequence=0").await;
    assert_eq!(
        og(page.text(), "og:title"),
        ["Snowflake ID 4194439168: 2010-11-04T01:42:55.657Z"]
    );
    // A first visit shows now's ID, no result to share; a bad ID and a
    // range have no ID to title.
    for uri in ["/", "/?lang=nb", "/?id=abc", "/?range_from=2024-01-01"] {
        let page = get(uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}");
        assert!(og(page.text(), "og:title").is_empty(), "{uri}");
    }
}

#[tokio::test]
async fn a_decoded_time_has_discord_markup_and_a_local_time_row() {
    let page = get("/?id=175928847299117063&layout=discord").await;
    let html = page.text();
    assert_eq!(by_id(html, "discord-full"), "&lt;t:1462015105:F&gt;");
    assert_eq!(by_id(html, "discord-relative"), "&lt;t:1462015105:R&gt;");
    assert!(html.contains(r#"data-copy="&lt;t:1462015105:R&gt;""#));
    // Hidden until the script fills it in: UTC alone without JavaScript.
    assert!(
        html.contains(r#"<dd class="js-only" id="time-local" hidden data-ms="1462015105796">"#)
    );
    let nb = get("/?id=175928847299117063&layout=discord&lang=nb").await;
    assert!(nb.text().contains("<dt>Discord-tidsstempel</dt>"));
    assert!(
        nb.text()
            .contains("<dt class=\"js-only\" hidden>Tid (din tidssone)</dt>")
    );
}

#[test]
fn a_layouts_field_may_not_take_a_parameter_of_the_pages_own() {
    // Every parameter the page reads is reserved, but the compose form's
    // time and Twitter's three fields.
    let composed = ["timestamp", "datacenter", "worker", "sequence"];
    let every: Vec<(String, String)> = composed
        .iter()
        .chain(super::RESERVED.iter())
        .map(|name| (name.to_string(), "1".to_owned()))
        .collect();
    let (q, repeated) = super::PageQuery::from_pairs(every);
    assert_eq!(repeated, None);
    assert!(q.extra.is_empty(), "{:?}", q.extra);
    for (name, _) in q.pairs() {
        assert!(
            composed.contains(&name) || super::RESERVED.contains(&name),
            "{name}"
        );
    }
    // And a name the page does not read is kept for the compose form.
    let (q, _) = super::PageQuery::from_pairs(vec![("process".into(), "3".into())]);
    assert_eq!(q.field_value("process"), Ok(Some("3")));
}

#[tokio::test]
async fn the_custom_inputs_are_hidden_unless_chosen_and_shown_without_javascript() {
    let page = get("/").await;
    let html = page.text();
    for id in [
        "compose-layout-custom",
        "layout-custom",
        "range-layout-custom",
    ] {
        assert!(
            html.contains(&format!(
                r#"<fieldset class="custom-layout" id="{id}" hidden>"#
            )),
            "{id}"
        );
    }
    assert!(
        html.contains(
            r#"<noscript><link rel="stylesheet" href="/assets/noscript.css"></noscript>"#
        )
    );
    let custom = get("/?layout=custom&layout_epoch=0&layout_fields=timestamp%3A41&id=1").await;
    assert!(
        custom
            .text()
            .contains(r#"<fieldset class="custom-layout" id="layout-custom">"#)
    );
    let css = asset("/assets/noscript.css", "text/css; charset=utf-8").await;
    assert!(
        css.text()
            .contains(".custom-layout[hidden] { display: block !important; }")
    );
}

/// The page refuses what the API refuses (400, the parameter named above
/// the result), never reading it as something else: an unknown parameter,
/// a `from`, `dialect` or `sort` that is none of its choices.
#[tokio::test]
async fn a_parameter_the_api_refuses_is_refused_not_ignored() {
    for (uri, name, message) in [
        (
            "/?range_from=2024-01-01&To=2024-02-01",
            "To",
            r#"unknown parameter "To": no form of this page has it"#,
        ),
        (
            "/?id=1&id%20=2",
            "id ",
            r#"unknown parameter "id ": no form of this page has it"#,
        ),
        (
            "/?layout=discord&timestamp=1462015105796&worker=1&process=0&increment=7&shard=1",
            "shard",
            r#"unknown parameter "shard": no form of this page has it"#,
        ),
        (
            "/?process=1",
            "process",
            r#"unknown parameter "process": no form of this page has it"#,
        ),
        // Twitter's fields are no fields of Sonyflake's unless the compose
        // form was drawn for Twitter's (`fields_of`): refused, not dropped.
        (
            "/?layout=sonyflake&timestamp=1700000000000&datacenter=3&machine=3&sequence=2",
            "datacenter",
            r#"unknown parameter "datacenter": no form of this page has it"#,
        ),
        (
            "/?layout=twitter&fields_of=epoch%3D0&timestamp=1&datacenter=1",
            "fields_of",
            "invalid layout: the fields are missing: add fields=NAME:BITS,..., as in epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12",
        ),
        (
            "/?id=10&from=hexx",
            "from",
            r#"from must be one of decimal, hex, base32, got "hexx""#,
        ),
        (
            "/?id=10&from=%20",
            "from",
            r#"from must be one of decimal, hex, base32, got " ""#,
        ),
        (
            "/?range_from=2024-01-01&dialect=oracle",
            "dialect",
            r#"dialect must be one of postgres, mysql, sqlite, got "oracle""#,
        ),
        (
            "/?ids=1%0A2&sort=bogus",
            "sort",
            r#"sort must be one of line, time, datacenter, worker or sequence, each with - before it for descending, got "bogus""#,
        ),
    ] {
        let page = get(uri).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{uri}");
        let html = page.text();
        assert!(
            html.contains(&format!(
                r#"<p class="error" id="query-error" role="alert" data-param="{name}">"#
            )),
            "{uri}: {html}"
        );
        assert_eq!(
            by_id(html, "query-error"),
            message.replace('"', "&quot;"),
            "{uri}"
        );
        assert!(!html.contains(r#"id="id-value""#), "{uri}: a result shown");
    }
    let page = get("/?id=10&from=hexx&lang=nb").await;
    assert_eq!(
        by_id(page.text(), "query-error"),
        "from må være én av decimal, hex, base32, fikk &quot;hexx&quot;"
    );
    // The page's own parameters, and the fields of the layout the compose
    // form was drawn for (its select changed without JavaScript), are not
    // unknown.
    for uri in [
        "/?id=4194439168&from=decimal&layout=twitter&sort=-time&lang=en",
        "/?range_from=2024-01-01&range_to=&range_from_at=&range_to_at=&dialect=mysql",
        "/?layout=twitter&fields_of=discord&timestamp=1462015105796&worker=1&process=0&increment=7",
        "/?ids=1%0A2&sort=-line",
    ] {
        let page = get(uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}: {}", page.text());
    }
    // Whitespace alone is no layout (the API refuses it too), not Twitter's.
    let page = get("/?id=1&layout=%20").await;
    assert!(
        by_id(page.text(), "layout-error").starts_with("invalid layout: "),
        "{}",
        page.text()
    );
    assert!(!page.text().contains(r#"id="id-value""#));
    // The compose form says which layout its fields are.
    let html = get("/?layout=discord&timestamp=1462015105796").await;
    assert!(
        html.text()
            .contains(r#"<input type="hidden" name="fields_of" value="discord">"#)
    );
}

/// Each line of a list is read as a single ID is: bits above a narrow
/// layout are refused, naming the line.
#[tokio::test]
async fn a_list_refuses_bits_above_the_layout_as_one_id_does() {
    let layout = "epoch%3D0%3Bfields%3Dtimestamp%3A40%2Cnode%3A8";
    let one = get(&format!("/?id=281474976710656&layout={layout}")).await;
    let single = by_id(one.text(), "id-error").to_owned();
    assert!(single.contains("48"), "{single}");
    let list = get(&format!("/?ids=1%0A281474976710656&layout={layout}")).await;
    assert_eq!(by_id(list.text(), "ids-error"), format!("line 2: {single}"));
    assert!(!list.text().contains(r#"id="list""#), "rows shown");
}
