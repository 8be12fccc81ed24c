//! A backend's cache of parsed layouts: a column default calls with the same
//! text for every row, so it is parsed once (by the core's one parser).

use std::cell::RefCell;
use std::ffi::CString;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use snowmint::Layout;

use crate::error::Refusal;
use crate::shared::{Key, MAX_LAYOUTS};

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

/// `snowmint.layouts`: the layouts other than the presets that `nextval` may
/// mint in, specs separated by `|`.
static LISTED: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// Registers `snowmint.layouts` (superuser, reload).
pub(crate) fn define_setting() {
    GucRegistry::define_string_guc(
        c"snowmint.layouts",
        c"The layouts other than the presets that snowmint.nextval() may mint in: specs separated by |.",
        c"Each layout minted in takes one of the server's 32 state slots for as long as it runs; \
          the presets have theirs, and only the layouts listed here may take others, so no role \
          can use them up. Set it in postgresql.conf or with ALTER SYSTEM, then reload.",
        &LISTED,
        GucContext::Sighup,
        GucFlags::default(),
    );
}

/// Whether `layout` (named by `text`) may take a state slot of its own: a
/// preset, or a layout of the same IDs as one listed in `snowmint.layouts`.
pub fn may_take_slot(text: &str, layout: &Layout) -> Result<(), Refusal> {
    let key = Key::of(layout);
    if Layout::PRESETS.iter().any(|p| Key::of(p) == key) {
        return Ok(());
    }
    let listed = LISTED
        .get()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for entry in listed.split('|').map(str::trim).filter(|e| !e.is_empty()) {
        if Layout::parse(entry).is_ok_and(|l| Key::of(&l) == key) {
            return Ok(());
        }
    }
    Err(Refusal::Setup(format!(
        "snowmint.nextval() mints only in the presets and the layouts listed in the setting \
         snowmint.layouts (each takes one of the server's {MAX_LAYOUTS} state slots); layout \
         '{text}' is not listed: a superuser adds it (specs separated by |) in postgresql.conf \
         or with ALTER SYSTEM SET snowmint.layouts, then reloads"
    )))
}
