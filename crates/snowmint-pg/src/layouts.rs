//! A backend's cache of parsed layouts: a column default calls with the same
//! text for every row, so it is parsed once (by the core's one parser).

use std::cell::RefCell;

use snowmint::Layout;

use crate::error::Refusal;

thread_local! {
    /// The texts last parsed and their layouts, newest last.
    static CACHE: RefCell<Vec<(String, Layout)>> = const { RefCell::new(Vec::new()) };
}

/// How many layouts a backend remembers.
const KEEP: usize = 8;

/// The layout a preset name or spec names (`twitter`, `discord`, ...,
/// `epoch=...;fields=...`), or the core's error naming what is wrong.
pub fn parse(text: &str) -> Result<Layout, Refusal> {
    CACHE.with_borrow_mut(|cache| {
        if let Some((_, layout)) = cache.iter().rev().find(|(t, _)| t == text) {
            return Ok(*layout);
        }
        let layout = Layout::parse(text)?;
        if cache.len() == KEEP {
            cache.remove(0);
        }
        cache.push((text.to_owned(), layout));
        Ok(layout)
    })
}
