//! The limits of the format, stated from the layout.

use maud::{Markup, html};

use super::Page;

pub(super) fn panel(page: &Page) -> Markup {
    let t = page.t;
    html! {
        section .card aria-labelledby="limits-h" {
            h2 #limits-h { (t.limits_heading) }
            ul {
                @for item in (t.limits)(page.facts) { li { (item) } }
            }
        }
    }
}
