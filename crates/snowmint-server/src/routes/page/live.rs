//! The live panel: IDs minted by this server's generator (the script posts
//! to `/api/v1/ids`; without it the form shows the API's JSON). When the
//! server requires an API token, the panel says so (the page has none to
//! send, so a mint from it is answered 401).

use maud::{Markup, html};
use snowmint::Field;

use super::Page;

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    html! {
        section #live .card aria-labelledby="live-h" {
            h2 #live-h { (t.live_heading) }
            p {
                (t.live_intro) " "
                @match page.state.minter.ready_identity() {
                    Some(id) => {
                        (t.live_identity) " "
                        b { ((t.seg_label)("datacenter").to_lowercase()) " " (id.datacenter()) } ", "
                        b { ((t.seg_label)("worker").to_lowercase()) " " (id.worker()) } "."
                    }
                    None => (t.live_not_ready),
                }
            }
            @if page.state.requires_token() {
                p.hint #live-token { (t.live_token) }
            }
            form #live-form method="post" action="/api/v1/ids?count=5" {
                div.field.js-only hidden {
                    label for="count" { (t.live_count) " (" (page.range(Field::Count)) ")" }
                    input #count name="count" value="5" inputmode="numeric" aria-describedby="count-error";
                    p.error #count-error hidden {}
                }
                button type="submit" { (t.live_submit) }
                label.check #auto-label hidden { input #auto type="checkbox"; " " (t.live_auto) }
            }
            noscript { p.hint { (t.live_noscript) } }
            ol #live-list .live-list aria-live="polite" data-empty=(t.live_empty) {}
        }
    }
}
