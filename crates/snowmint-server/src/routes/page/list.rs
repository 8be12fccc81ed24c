//! The decode panel's list: many IDs, one a line, as a sortable table.
//! Without JavaScript the column headings are submit buttons of the decode
//! form that add `sort`, so the server sorts; the script sends the same
//! query and keeps the focus on the heading.

use maud::{Markup, html};
use snowmint::{Breakdown, Encoding, Layout};

use super::form::display_name;
use super::{Page, link};
use crate::routes::page::i18n::Lang;

/// The most IDs one list takes: enough for a page of a log, and a bound
/// on the work and the size of one answer.
pub(super) const MAX_LINES: usize = 1000;

/// A column the list sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// The order they were pasted in (the default).
    Line,
    Time,
    /// A field's slot: `datacenter`, `worker` or `sequence`.
    Slot(&'static str),
}

impl Key {
    fn name(self) -> &'static str {
        match self {
            Key::Line => "line",
            Key::Time => "time",
            Key::Slot(name) => name,
        }
    }
}

/// A column and its direction, as `sort` spells it: `time`, `-time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sort {
    key: Key,
    descending: bool,
}

/// What `sort` takes, as the refusal of another value lists it.
pub(super) const SORT_CHOICES: &str = "line, time, datacenter, worker or sequence, \
    each with - before it for descending";

impl Sort {
    /// Reads `sort`: missing or empty is the pasted order; anything else
    /// must be a column (`-` first for descending), or `Err`.
    pub(super) fn parse(input: Option<&str>) -> Result<Sort, ()> {
        let input = input.unwrap_or("");
        if input.is_empty() {
            return Ok(Sort::default());
        }
        // Whitespace alone is no column (as for the API's values).
        let input = input.trim();
        let (descending, name) = match input.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, input),
        };
        let key = match name {
            "line" => Key::Line,
            "time" => Key::Time,
            "datacenter" => Key::Slot("datacenter"),
            "worker" => Key::Slot("worker"),
            "sequence" => Key::Slot("sequence"),
            _ => return Err(()),
        };
        Ok(Sort { key, descending })
    }

    fn param(self) -> String {
        let sign = if self.descending { "-" } else { "" };
        format!("{sign}{}", self.key.name())
    }
}

impl Default for Sort {
    fn default() -> Self {
        Sort {
            key: Key::Line,
            descending: false,
        }
    }
}

/// One decoded line.
struct Row {
    /// The line's number in what was pasted, from 1 (blank lines count).
    line: usize,
    b: Breakdown,
}

/// The decoded IDs, sorted as asked.
pub(super) struct List {
    rows: Vec<Row>,
    sort: Sort,
    layout: Layout,
}

impl List {
    /// Reads one ID a line (blank lines skipped, as `snowmint decode -`
    /// does); the first bad line is an error naming its number, and more
    /// than [`MAX_LINES`] IDs an error naming the limit.
    pub(super) fn parse(
        text: &str,
        encoding: Encoding,
        layout: Layout,
        sort: Option<&str>,
        lang: Lang,
    ) -> Result<List, String> {
        let t = lang.text();
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, line)| (i + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty())
            .collect();
        if lines.len() > MAX_LINES {
            return Err((t.ids_too_many)(MAX_LINES, lines.len()));
        }
        let mut rows = Vec::with_capacity(lines.len());
        for (line, typed) in lines {
            // Read as a single ID is, bits above the layout's refused too.
            let id = crate::routes::params::decode_id(encoding, &layout, typed)
                .map_err(|e| (t.line_error)(line, &lang.field_error_in(layout, &e, typed)))?;
            rows.push(Row {
                line,
                b: layout.breakdown(id),
            });
        }
        // A bad `sort` is refused before the page gets here.
        let sort = Sort::parse(sort).unwrap_or_default();
        // Stable: rows that tie keep the pasted order.
        rows.sort_by_key(|row| match sort.key {
            Key::Line => (row.line as u64, 0),
            Key::Time => (row.b.timestamp_ms, row.b.id.get()),
            Key::Slot("datacenter") => (row.b.datacenter, 0),
            Key::Slot("worker") => (row.b.worker, 0),
            Key::Slot(_) => (row.b.sequence, 0),
        });
        if sort.descending {
            rows.reverse();
        }
        Ok(List { rows, sort, layout })
    }

    /// How many IDs.
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The IDs in the order they were pasted.
    fn pasted(&self) -> Vec<snowmint::SnowflakeId> {
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        rows.sort_by_key(|r| r.line);
        rows.into_iter().map(|r| r.b.id).collect()
    }
}

/// The table: line, ID, time and the layout's fields, headed by the
/// layout's own names.
pub(super) fn table(page: &Page, list: &List) -> Markup {
    let t = page.t;
    let layout = list.layout;
    // The layout's fields below the timestamp, most significant first, with
    // their place in the segments and the slot they sort by.
    let empty = layout.breakdown(snowmint::SnowflakeId::MIN);
    let fields: Vec<(usize, Option<Key>, &str)> = empty
        .segments
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_node())
        .map(|(i, s)| {
            let key = match s.slot {
                Some(snowmint::Field::Datacenter) => Some(Key::Slot("datacenter")),
                Some(snowmint::Field::Worker) => Some(Key::Slot("worker")),
                Some(snowmint::Field::Sequence) => Some(Key::Slot("sequence")),
                _ => None,
            };
            (i, key, (t.seg_label)(&s.label))
        })
        .collect();
    let mut columns = vec![(Key::Line, t.list_line), (Key::Time, t.time_utc)];
    columns.extend(
        fields
            .iter()
            .filter_map(|&(_, key, label)| key.map(|k| (k, label))),
    );
    html! {
        p.hint #list-hint { (t.list_sort_hint) }
        div.table-wrap role="region" tabindex="0" aria-labelledby="list-caption" {
            table.ids #list {
                caption #list-caption { ((t.list_caption)(list.len(), &display_name(layout, t))) }
                thead {
                    tr {
                        (heading(list, columns[0]))
                        th scope="col" { "ID" }
                        (heading(list, columns[1]))
                        @for &(_, key, label) in &fields {
                            @match key {
                                Some(key) => (heading(list, (key, label))),
                                None => th scope="col" { (label) },
                            }
                        }
                    }
                }
                tbody {
                    @for row in &list.rows {
                        tr {
                            td.num { (row.line) }
                            td { a href=(link::decoded(page, row.b.id, layout)) { code { (row.b.id) } } }
                            td { (row.b.time) }
                            @for &(i, _, _) in &fields {
                                td.num { (row.b.segments.get(i).map_or(0, |s| s.value)) }
                            }
                        }
                    }
                }
            }
        }
        (super::detect::section(page, &super::detect::detection(&list.pasted(), layout, page.state.now_ms())))
    }
}

/// A column heading: a button of the decode form that sorts by it
/// (ascending first, then the other way round).
fn heading(list: &List, (key, label): (Key, &str)) -> Markup {
    let current = (list.sort.key == key).then_some(list.sort.descending);
    let next = Sort {
        key,
        descending: current == Some(false),
    };
    let (aria, arrow) = match current {
        Some(false) => (Some("ascending"), "▲"),
        Some(true) => (Some("descending"), "▼"),
        None => (None, ""),
    };
    html! {
        th scope="col" aria-sort=[aria] {
            button.sort id={ "sort-" (key.name()) } type="submit" form="decode-form" name="sort"
                value=(next.param()) {
                (label)
                @if !arrow.is_empty() { " " span aria-hidden="true" { (arrow) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &List) -> Vec<u64> {
        list.rows.iter().map(|r| r.b.id.get()).collect()
    }

    #[test]
    fn sorts_by_a_column_either_way_and_keeps_ties_in_pasted_order() {
        // Worker 2, then worker 1, then worker 1 a second later.
        let a = snowmint::compose(1288834975657, 0, 2, 0).unwrap().get();
        let b = snowmint::compose(1288834975657, 0, 1, 0).unwrap().get();
        let c = snowmint::compose(1288834976657, 0, 1, 0).unwrap().get();
        let text = format!("{a}\n\n{b}\r\n {c} \n");
        let parse = |sort| List::parse(&text, Encoding::Decimal, Layout::TWITTER, sort, Lang::En);
        let pasted = parse(None).unwrap();
        assert_eq!(ids(&pasted), [a, b, c]);
        assert_eq!(
            pasted.rows.iter().map(|r| r.line).collect::<Vec<_>>(),
            [1, 3, 4]
        );
        assert_eq!(ids(&parse(Some("time")).unwrap()), [b, a, c]);
        assert_eq!(ids(&parse(Some("-time")).unwrap()), [c, a, b]);
        assert_eq!(ids(&parse(Some("worker")).unwrap()), [b, c, a]);
        assert_eq!(ids(&parse(Some("-line")).unwrap()), [c, b, a]);
        assert_eq!(Sort::parse(Some("-sequence")).unwrap().param(), "-sequence");
        assert_eq!(ids(&parse(Some(" time ")).unwrap()), [b, a, c]);
        for bad in ["bogus", " ", "--time", "-", "-line-"] {
            assert_eq!(Sort::parse(Some(bad)), Err(()), "{bad:?}");
        }
    }

    /// A list of decimal IDs in Twitter's layout, as pasted.
    fn pasted(text: &str, lang: Lang) -> Result<List, String> {
        List::parse(text, Encoding::Decimal, Layout::TWITTER, None, lang)
    }

    #[test]
    fn a_bad_line_is_named_by_its_number_and_the_length_is_bounded() {
        let err = pasted("1\n\nzz", Lang::En).err().unwrap();
        assert!(err.starts_with("line 3: id must be"), "{err}");
        let err = pasted("1\nzz", Lang::Nb).err().unwrap();
        assert!(err.starts_with("linje 2: ID-en må være"), "{err}");
        let many = "1\n".repeat(MAX_LINES);
        assert!(pasted(&many, Lang::En).is_ok());
        let err = pasted(&format!("{many}1"), Lang::En).err().unwrap();
        assert_eq!(err, "at most 1,000 IDs at once, one a line; got 1,001");
    }
}
