//! A decoded time as people pass it on: Discord's timestamp markup, the
//! reader's own time zone beside UTC, and the Open Graph tags that make a
//! shared result link preview.
//!
//! `og:url` is left out on purpose: an absolute URL would have to be built
//! from the request's `Host`, which the client chooses, and a relative one
//! is invalid; the page does not otherwise know its public address.

use maud::{Markup, html};
use snowmint::Breakdown;

use super::form::display_name;
use super::{Mode, Outcome, Page};

/// Discord's markup for a Unix time in ms: `<t:SECONDS:STYLE>`, the
/// seconds rounded down (`F`: date and time, `R`: relative).
pub(super) fn discord(ms: u64, style: char) -> String {
    format!("<t:{}:{style}>", ms / 1000)
}

/// The result's rows after its UTC time: the reader's own zone (hidden
/// until `app.js` fills it in) and the two Discord markups to copy.
pub(super) fn time_rows(page: &Page, b: &Breakdown) -> Markup {
    let t = page.t;
    let full = discord(b.timestamp_ms, 'F');
    let relative = discord(b.timestamp_ms, 'R');
    html! {
        dt.js-only hidden { (t.time_local) }
        dd.js-only #time-local hidden data-ms=(b.timestamp_ms) {}
        dt { (t.discord_markup) }
        dd #discord {
            span.markup {
                code #discord-full { (full) }
                button #copy-discord-full .secondary type="button" data-copy=(full)
                    data-status="copy-discord-status" aria-label=(t.copy_discord_full) hidden { (t.copy) }
            }
            span.markup {
                code #discord-relative { (relative) }
                button #copy-discord-relative .secondary type="button" data-copy=(relative)
                    data-status="copy-discord-status" aria-label=(t.copy_discord_relative) hidden { (t.copy) }
            }
            span #copy-discord-status role="status" {}
            p.hint { (t.discord_markup_hint) }
        }
    }
}

/// The Open Graph tags of a result URL: one ID, decoded or composed from
/// the query. A first visit (no query) shows the ID of now, which is no
/// result to share, so it has none.
pub(super) fn og_tags(page: &Page) -> Markup {
    let Outcome::Id(b, layout) = &page.outcome else {
        return html! {};
    };
    if page.mode == Mode::Compose && page.q.pairs().is_empty() {
        return html! {};
    }
    let t = page.t;
    let locale = match page.lang {
        super::i18n::Lang::En => "en_US",
        super::i18n::Lang::Nb => "nb_NO",
    };
    html! {
        meta property="og:type" content="website";
        meta property="og:site_name" content="snowmint";
        meta property="og:locale" content=(locale);
        meta property="og:title" content=((t.og_title)(&b.id.to_string(), &b.time.to_string()));
        meta property="og:description" content=((t.og_description)(&display_name(*layout, t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discord_markup_rounds_the_seconds_down() {
        assert_eq!(discord(1_462_015_105_796, 'F'), "<t:1462015105:F>");
        assert_eq!(discord(1_462_015_105_000, 'R'), "<t:1462015105:R>");
        assert_eq!(discord(999, 'F'), "<t:0:F>");
    }
}
