//! The result panel: the ID, its time and encodings, its 64 bits coloured
//! by segment, and the formula with the numbers filled in.

use maud::{Markup, html};
use snowmint::{Breakdown, Segment};

use super::{Outcome, Page, link};

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    html! {
        section #result .card.result aria-labelledby="result-h" aria-live="polite" tabindex="-1" {
            h2 #result-h { (t.result_heading) }
            @match &page.outcome {
                Outcome::Invalid(..) => p.no-result { (t.no_result) },
                Outcome::Id(b) => (breakdown(page, b)),
            }
        }
    }
}

fn breakdown(page: &Page, b: &Breakdown) -> Markup {
    let t = page.t;
    let id = b.id;
    html! {
        div.id-row {
            span.label { (t.result_id) }
            output id="id-value" class="id" { (id) }
            button #copy .secondary type="button" data-id=(id) hidden { (t.copy) }
            span #copy-status role="status" {}
        }
        dl.facts {
            dt { (t.time_utc) } dd #time-value { (b.time) }
            dt { (t.unix_ms) } dd { (b.timestamp_ms) }
            dt { (t.hex) } dd { code { (id.hex()) } }
            dt { (t.base32) } dd { code { (id.base32()) } }
            dt { (t.share) } dd { a #share href=(link::share(page, b)) { (t.share_link) } }
        }
        h3 { (t.bits_heading) }
        p.hint { (t.bits_intro) }
        div.bits #bits {
            @for seg in &b.segments { (segment(page, seg)) }
        }
        h3 { (t.formula_heading) }
        pre.formula #formula { code { (formula(page, b)) } }
        p.hint { (t.formula_legend) }
    }
}

fn segment(page: &Page, seg: &Segment) -> Markup {
    let t = page.t;
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
    html! {
        div class={ "seg seg-" (seg.name) } {
            div.cells data-segment=(seg.name) role="img" aria-label={ (label) ": " (seg.binary) } {
                @for (i, bit) in seg.binary.chars().enumerate() {
                    span.bit title={ (t.bit) " " (seg.msb - i as u32) } aria-hidden="true" { (bit) }
                }
            }
            div.seg-label {
                strong { (label) }
                span { (range) }
                span { (t.value) " " b.seg-value { (seg.value) } }
            }
        }
    }
}

/// `id = (d << 22) | ...` with this ID's numbers, the shifts from the
/// layout.
fn formula(page: &Page, b: &Breakdown) -> String {
    let l = page.facts.layout;
    let (ts, dcs, ws) = (l.timestamp_shift(), l.datacenter_shift(), l.worker_shift());
    let epoch = l.epoch_ms();
    let d = b.delta_ms;
    let (c, m, s) = (b.datacenter, b.worker, b.sequence);
    [
        format!("d  = t − {epoch}"),
        format!("   = {} − {epoch} = {d}", b.timestamp_ms),
        format!("id = (d << {ts}) | (c << {dcs}) | (m << {ws}) | s"),
        format!("   = ({d} << {ts}) | ({c} << {dcs}) | ({m} << {ws}) | {s}"),
        format!("   = {} | {} | {} | {s}", d << ts, c << dcs, m << ws),
        format!("   = {}", b.id),
    ]
    .join("\n")
}
