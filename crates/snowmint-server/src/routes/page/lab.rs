//! The layout lab panel: what the chosen layout holds and until when,
//! stated plainly (the same figures as `snowmint layout` and
//! `GET /api/v1/layout`).

use maud::{Markup, html};
use snowmint::LayoutReport;

use super::Page;
use super::form::display_name;

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    let layout = page.layout;
    let report = LayoutReport::new(&layout, page.state.now_ms());
    html! {
        section #lab .card aria-labelledby="lab-h" {
            h2 #lab-h { (t.lab_heading) }
            p {
                strong #lab-layout { (display_name(layout, t)) } ": "
                code #lab-spec .spec { (report.spec) }
            }
            ul #lab-facts {
                @for line in (t.lab)(&report) { li { (line) } }
            }
        }
    }
}
