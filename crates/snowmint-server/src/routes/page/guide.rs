//! The explanatory sections below the tools: what a Snowflake ID is, how
//! this tool works, why IDs sort by time, the worked example step by step,
//! where the format is used, calculator versus minter, and its history.
//! The prose is in [`crate::routes::page::i18n`]; the structure and every computed step
//! of the example are here.

use maud::{Markup, html};

use super::facts::Example;
use super::{Page, link};
use crate::routes::page::i18n::Prose;

pub(super) fn panel(page: &Page) -> Markup {
    let g = &page.t.guide;
    let f = page.facts;
    html! {
        section #guide .card.guide aria-labelledby="guide-h" {
            h2 #guide-h { (g.heading) }
            (topic("what", g.what_heading, (g.what)(f)))
            (topic("how", g.how_heading, (g.how)(f)))
            (topic("why", g.why_heading, (g.why)(f)))
            (topic("example", g.example_heading, example(page)))
            (topic("uses", g.uses_heading, (g.uses)(f, &discord_example(page))))
            (topic("minter", g.minter_heading, (g.minter)(f)))
            (topic("history", g.history_heading, (g.history)(f)))
        }
    }
}

/// Discord's example ID from its documentation ("Snowflakes" in the API
/// reference), in the decoder, read in Discord's layout.
const DISCORD_EXAMPLE: u64 = 175_928_847_299_117_063;

fn discord_example(page: &Page) -> String {
    let id = snowmint::SnowflakeId::new(DISCORD_EXAMPLE).expect("a valid ID");
    format!(
        "{}#result",
        link::decoded(page, id, snowmint::Layout::DISCORD)
    )
}

/// One subsection, `#guide-{key}`, headed `#guide-{key}-h`.
fn topic(key: &str, heading: &str, body: Markup) -> Markup {
    html! {
        section id={ "guide-" (key) } aria-labelledby={ "guide-" (key) "-h" } {
            h3 id={ "guide-" (key) "-h" } { (heading) }
            (body)
        }
    }
}

fn example(page: &Page) -> Markup {
    let g = &page.t.guide;
    let f = page.facts;
    let e = f.example();
    let calcs = steps(page, e);
    let sentences: &[Prose; 6] = &g.example_steps;
    html! {
        ((g.example_intro)(f))
        ol.steps {
            @for (sentence, calc) in sentences.iter().zip(calcs) {
                li { (sentence(f)) pre { code { (calc) } } }
            }
        }
        figure {
            figcaption #guide-terms { (g.example_bits) }
            // Wider than a phone: focusable, so it scrolls from the keyboard too.
            pre.terms role="region" tabindex="0" aria-labelledby="guide-terms" { code { (terms(page, e)) } }
        }
        ((g.example_or)(f))
        ((g.example_shifts)(f))
        p {
            a #example-link href={ (link::example(page, "/", page.lang_param())) "#compose" } {
                (g.example_link)
            }
        }
    }
}

/// The arithmetic of each step, with the numbers grouped for reading.
fn steps(page: &Page, e: &Example) -> [String; 6] {
    let l = page.facts.layout;
    let n = |v: u64| page.lang.number(v);
    let [ts, dc, w, s] = e.shifted;
    [
        format!("{} − {} = {}", e.parts.timestamp_ms, l.epoch_ms(), e.delta),
        format!("{} << {} = {}", e.delta, l.timestamp_shift(), n(ts)),
        format!(
            "{} << {} = {}",
            e.parts.datacenter,
            l.datacenter_shift(),
            n(dc)
        ),
        format!("{} << {} = {}", e.parts.worker, l.worker_shift(), n(w)),
        n(s),
        format!(
            "{a} | {b} | {c} | {d} = {id}\n{a} + {b} + {c} + {d} = {id}",
            a = n(ts),
            b = n(dc),
            c = n(w),
            d = n(s),
            id = n(e.id.get()),
        ),
    ]
}

/// The four shifted terms and their combination as 64 bits, split into
/// the layout's fields and aligned, so that no two 1s share a column.
fn terms(page: &Page, e: &Example) -> String {
    let l = page.facts.layout;
    let widths = [
        1,
        l.timestamp_bits(),
        l.datacenter_bits(),
        l.worker_bits(),
        l.sequence_bits(),
    ];
    let split = |v: u64| {
        let bits = format!("{v:064b}");
        let mut start = 0;
        let mut fields = Vec::with_capacity(widths.len());
        for w in widths {
            fields.push(&bits[start..start + w as usize]);
            start += w as usize;
        }
        fields.join(" | ")
    };
    let [ts, dc, w, s] = e.shifted;
    let rows = [
        (format!("{} << {}", e.delta, l.timestamp_shift()), ts),
        (
            format!("{} << {}", e.parts.datacenter, l.datacenter_shift()),
            dc,
        ),
        (format!("{} << {}", e.parts.worker, l.worker_shift()), w),
        (e.parts.sequence.to_string(), s),
        ("=".to_owned(), e.id.get()),
    ];
    let pad = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(label, v)| format!("{label:>pad$}  {}", split(*v)))
        .collect::<Vec<_>>()
        .join("\n")
}
