//! "Which system made these IDs?" under a pasted list: the core's
//! [`detect`](snowmint::detect) on the IDs as pasted, the candidate
//! layouts ranked (the presets, and the chosen layout when it is a custom
//! one, as `GET /api/v1/detect` ranks them with its `layout`), each with
//! its decoded time range and why, and a note when the best tie.

use maud::{Markup, html};
use snowmint::{Detection, Layout, SnowflakeId};

use super::Page;
use super::form::display_name;

/// The candidates for `ids` (in pasted order: whether they increase with
/// time is evidence), read against the presets and `chosen`.
pub(super) fn detection(ids: &[SnowflakeId], chosen: Layout, now_ms: u64) -> Detection {
    let mut layouts = Layout::PRESETS.to_vec();
    if !layouts.contains(&chosen) {
        layouts.push(chosen);
    }
    snowmint::detect(ids, &layouts, now_ms)
}

pub(super) fn section(page: &Page, d: &Detection) -> Markup {
    let t = page.t;
    let tied: Vec<String> = d.candidates[..d.tied]
        .iter()
        .map(|c| display_name(c.layout, t))
        .collect();
    html! {
        h3 #detect-h { (t.detect_heading) }
        p.hint { (t.detect_intro) }
        @if d.ambiguous {
            p.note #detect-note { ((t.detect_ambiguous)(d.ids, &tied.join(", "))) }
        }
        ol.candidates #detect aria-labelledby="detect-h" {
            @for c in &d.candidates {
                li data-layout=(c.layout.to_param()) {
                    strong.candidate { (display_name(c.layout, t)) }
                    " "
                    span.score { "(" (t.detect_score) " " (page.lang.decimal(c.score)) ")" }
                    @match (&c.from, &c.to) {
                        (Some(from), Some(to)) => div.span { (from) " ..= " (to) },
                        _ => div.span { (t.detect_none) },
                    }
                    div.hint.why {
                        @for (i, r) in c.reasons.iter().enumerate() {
                            @if i > 0 { "; " }
                            ((t.detect_reason)(r))
                        }
                    }
                }
            }
        }
    }
}
