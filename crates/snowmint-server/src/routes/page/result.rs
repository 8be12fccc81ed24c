//! The result panel: the ID, its time and encodings, its 64 bits coloured
//! by the layout's segments, and the formula with the numbers filled in;
//! or the table of a pasted list ([`list`](super::list)); or the IDs of a
//! time span ([`range`](super::range)).

use maud::{Markup, html};
use snowmint::{Breakdown, Field, Layout, Segment};

use super::form::display_name;
use super::{Mode, Outcome, Page, link, list, range};

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    html! {
        section #result .card.result aria-labelledby="result-h" aria-live="polite" tabindex="-1" {
            h2 #result-h { (t.result_heading) }
            @match &page.outcome {
                Outcome::Invalid(field, _) => p.no-result {
                    @if *field == "ids" { (t.no_result_list) }
                    @else if page.mode == Mode::Range { (t.no_result_range) }
                    @else { (t.no_result) }
                },
                // Also here: the parameter may have no field of its own.
                Outcome::Refused(name, msg) => p.error #query-error role="alert" data-param=(name) { (msg) },
                Outcome::Id(b, layout) => (breakdown(page, b, *layout)),
                Outcome::List(list) => (list::table(page, list)),
                Outcome::Span(span, layout) => (range::result(page, span, *layout)),
            }
        }
    }
}

fn breakdown(page: &Page, b: &Breakdown, layout: Layout) -> Markup {
    let t = page.t;
    let id = b.id;
    html! {
        div.id-row {
            span.label { (t.result_id) }
            output id="id-value" class="id" { (id) }
            button #copy .secondary type="button" data-copy=(id) data-status="copy-status" hidden {
                (t.copy)
            }
            span #copy-status role="status" {}
        }
        dl.facts {
            dt { (t.time_utc) } dd #time-value { (b.time) }
            (super::social::time_rows(page, b))
            dt { (t.unix_ms) } dd { (b.timestamp_ms) }
            dt { (t.hex) } dd { code { (id.hex()) } }
            dt { (t.base32) } dd { code { (id.base32()) } }
            @if layout != Layout::TWITTER {
                dt { (t.layout_row) } dd #layout-value { (display_name(layout, t)) }
            }
            dt { (t.share) } dd { a #share href=(link::share(page, b, layout)) { (t.share_link) } }
        }
        h3 #bits-h { (t.bits_heading) }
        p.hint { (t.bits_intro) }
        // Wider than a phone: a region that scrolls sideways, focusable so
        // the keyboard can scroll it too, with a hint where it overflows.
        div.bits #bits role="region" tabindex="0" aria-labelledby="bits-h" aria-describedby="bits-scroll" {
            @for seg in &b.segments { (segment(page, seg)) }
        }
        p.hint.scroll-hint #bits-scroll { (t.bits_scroll_hint) }
        h3 { (t.formula_heading) }
        pre.formula #formula { code { (formula(b, layout)) } }
        p.hint {
            @if layout == Layout::TWITTER { (t.formula_legend) }
            @else { ((t.formula_legend_for)(layout.unit_ms(), &legend(page, b))) }
        }
    }
}

fn segment(page: &Page, seg: &Segment) -> Markup {
    let t = page.t;
    let label = (t.seg_label)(&seg.label);
    let range = if seg.msb == seg.lsb {
        format!("{} {}", t.bit, seg.msb)
    } else {
        format!("{} {}–{}", t.bits, seg.msb, seg.lsb)
    };
    html! {
        div class={ "seg seg-" (slot_class(seg)) } {
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

/// The colour class of a segment: the slot its field fills, so a field
/// keeps its colour in every layout; the sign and unused bits are `sign`,
/// fields beyond the three slots `other`.
pub(super) fn slot_class(seg: &Segment) -> &'static str {
    match seg.slot {
        Some(Field::Timestamp) => "timestamp",
        Some(Field::Datacenter) => "datacenter",
        Some(Field::Worker) => "worker",
        Some(Field::Sequence) => "sequence",
        _ if seg.is_node() => "other",
        _ => "sign",
    }
}

/// The letter the formula uses for a field: its slot's, or the field's
/// own name for one beyond the slots.
fn letter(seg: &Segment) -> &str {
    match seg.slot {
        Some(Field::Datacenter) => "c",
        Some(Field::Worker) => "m",
        Some(Field::Sequence) => "s",
        _ => &seg.name,
    }
}

/// The fields below the timestamp, most significant first.
fn fields(b: &Breakdown) -> impl Iterator<Item = &Segment> {
    b.segments.iter().filter(|s| s.is_node())
}

/// The legend's letters and the layout's names for them.
fn legend<'a>(page: &Page, b: &'a Breakdown) -> Vec<(&'a str, &'a str)> {
    fields(b)
        .map(|s| (letter(s), (page.t.seg_label)(&s.label)))
        .collect()
}

/// `id = (d << 22) | ...` with this ID's numbers, the shifts from the
/// layout's segments (so a layout's own order and widths show).
fn formula(b: &Breakdown, layout: Layout) -> String {
    let epoch = layout.epoch_ms();
    let unit = layout.unit_ms();
    let d = b.delta_ms / unit;
    let ts = layout.timestamp_shift();
    let term = |name: &str, shift: u32| {
        if shift == 0 {
            name.to_owned()
        } else {
            format!("({name} << {shift})")
        }
    };
    let mut names = vec![term("d", ts)];
    let mut values = vec![term(&d.to_string(), ts)];
    let mut shifted = vec![(d << ts).to_string()];
    for s in fields(b) {
        names.push(term(letter(s), s.lsb));
        values.push(term(&s.value.to_string(), s.lsb));
        shifted.push((s.value << s.lsb).to_string());
    }
    let (head, tail) = if unit == 1 {
        (
            format!("d  = t − {epoch}"),
            format!("   = {} − {epoch} = {d}", b.timestamp_ms),
        )
    } else {
        (
            format!("d  = ⌊(t − {epoch}) / {unit}⌋"),
            format!("   = ⌊({} − {epoch}) / {unit}⌋ = {d}", b.timestamp_ms),
        )
    };
    [
        head,
        tail,
        format!("id = {}", names.join(" | ")),
        format!("   = {}", values.join(" | ")),
        format!("   = {}", shifted.join(" | ")),
        format!("   = {}", b.id),
    ]
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formula_follows_the_layout() {
        let id = snowmint::SnowflakeId::new(4194439168).unwrap();
        let twitter = formula(&Layout::TWITTER.breakdown(id), Layout::TWITTER);
        assert!(
            twitter.contains("id = (d << 22) | (c << 17) | (m << 12) | s\n"),
            "{twitter}"
        );
        assert!(
            twitter.contains("   = 4194304000 | 131072 | 4096 | 0\n"),
            "{twitter}"
        );
        let sony = Layout::SONYFLAKE;
        let id = sony.compose(1409529600000 + 1234, 0, 7, 3).unwrap();
        let text = formula(&sony.breakdown(id), sony);
        assert!(
            text.contains("= ⌊(1409529601230 − 1409529600000) / 10⌋ = 123"),
            "{text}"
        );
        assert!(text.contains("id = (d << 24) | (s << 16) | m\n"), "{text}");
        assert!(text.ends_with(&format!("= {id}")), "{text}");
        let mastodon = Layout::MASTODON;
        let id = mastodon.compose(1_700_000_000_000, 0, 0, 5).unwrap();
        let text = formula(&mastodon.breakdown(id), mastodon);
        assert!(text.contains("id = (d << 16) | s\n"), "{text}");
    }
}
