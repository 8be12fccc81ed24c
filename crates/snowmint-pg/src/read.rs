//! The reading functions, natively, in any layout (a preset name or a spec;
//! Twitter's by default): the same answers as the SQL functions of
//! `snowmint sql postgres`, from the core's own decoding.
//!
//! Where the generated SQL gives `NULL` for input out of range, these refuse
//! it with the core's error, which names the field, the value and the
//! allowed range.

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;
use snowmint::{Field, Layout, SnowflakeId};

use crate::error::{Refusal, or_raise};
use crate::layouts;

/// Unix ms of PostgreSQL's epoch, 2000-01-01T00:00:00Z.
const PG_EPOCH_UNIX_MS: i64 = 946_684_800_000;

/// `id` as an ID of `layout`: not negative, no bits above the layout's.
fn id_in(layout: &Layout, id: i64) -> Result<SnowflakeId, Refusal> {
    // The core's parser, for its message on a negative value.
    let id: SnowflakeId = match u64::try_from(id) {
        Ok(v) => SnowflakeId::new(v)?,
        Err(_) => id.to_string().parse()?,
    };
    Ok(layout.check_id(id)?)
}

/// The layout and the ID, or the refusal.
fn parse(id: i64, layout: &str) -> Result<(Layout, SnowflakeId), Refusal> {
    let layout = layouts::parse(layout)?;
    let id = id_in(&layout, id)?;
    Ok((layout, id))
}

/// Unix ms of a `timestamptz`, or the refusal for an infinite one.
fn unix_ms_of(ts: TimestampWithTimeZone) -> Result<i64, Refusal> {
    if ts.is_infinity() || ts.is_neg_infinity() {
        return Err(Refusal::Input(
            "ts must be a finite time, got infinity".to_owned(),
        ));
    }
    let us: i64 = ts.into();
    Ok(us.div_euclid(1000) + PG_EPOCH_UNIX_MS)
}

/// A Unix-ms time checked against `layout`'s range by the core's parser.
fn time_in(layout: &Layout, unix_ms: i64) -> Result<u64, Refusal> {
    Ok(layout.parse_timestamp(&unix_ms.to_string(), 0)?)
}

/// The time of an ID: the first millisecond of its time unit.
#[pg_extern(immutable, parallel_safe)]
fn time(id: i64, layout: default!(&str, "'twitter'")) -> TimestampWithTimeZone {
    or_raise(parse(id, layout).and_then(|(l, id)| {
        let ms = l.decode(id).timestamp_ms as i64;
        TimestampWithTimeZone::try_from((ms - PG_EPOCH_UNIX_MS) * 1000).map_err(|_| {
            Refusal::Input(format!(
                "id {id} has a time PostgreSQL cannot show ({ms} Unix ms)"
            ))
        })
    }))
}

/// The time of an ID in Unix milliseconds.
#[pg_extern(immutable, parallel_safe)]
fn unix_ms(id: i64, layout: default!(&str, "'twitter'")) -> i64 {
    or_raise(parse(id, layout).map(|(l, id)| l.decode(id).timestamp_ms as i64))
}

/// The value of one slot's field, refused when the layout has no such field.
fn slot_value(id: i64, layout: &str, slot: Field) -> Result<i32, Refusal> {
    let (l, id) = parse(id, layout)?;
    let Some(field) = l.fields().find(|f| f.slot() == Some(slot)) else {
        return Err(Refusal::Input(format!(
            "layout {} has no {} field; its fields are {}",
            l.name(),
            slot.name(),
            names(&l)
        )));
    };
    i32::try_from(field.value(id)).map_err(|_| {
        Refusal::Input(format!(
            "the {} field of layout {} is {} bits wide: read it with snowmint.field(id, '{}', layout), a bigint",
            field.name(),
            l.name(),
            field.bits(),
            field.name()
        ))
    })
}

fn names(layout: &Layout) -> String {
    layout
        .fields()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One SQL function per slot's field: `name(id, layout) -> integer`, the
/// value of the field in that slot ([`slot_value`]).
macro_rules! slot_functions {
    ($($(#[doc = $doc:literal])* $name:ident => $slot:expr;)*) => {$(
        $(#[doc = $doc])*
        #[pg_extern(immutable, parallel_safe)]
        fn $name(id: i64, layout: default!(&str, "'twitter'")) -> i32 {
            or_raise(slot_value(id, layout, $slot))
        }
    )*};
}

slot_functions! {
    /// The datacenter field of an ID (the field in the datacenter slot:
    /// Discord's `worker`).
    datacenter => Field::Datacenter;
    /// The worker field of an ID (the field in the worker slot: Discord's
    /// `process`, Instagram's `shard`, Sonyflake's `machine`).
    worker => Field::Worker;
    /// The sequence field of an ID (Discord's `increment`, Mastodon's
    /// `sequence_data`).
    sequence => Field::Sequence;
}

/// Any field of an ID below the time, by its name in the layout.
#[pg_extern(immutable, parallel_safe)]
fn field(id: i64, name: &str, layout: default!(&str, "'twitter'")) -> i64 {
    or_raise(parse(id, layout).and_then(|(l, id)| {
        let Some(f) = l.fields().find(|f| f.name() == name && !f.is_time()) else {
            return Err(Refusal::Input(format!(
                "layout {} has no field {name:?} below the time; its fields are {}",
                l.name(),
                names(&l)
            )));
        };
        Ok(f.value(id) as i64)
    }))
}

/// The smallest ID of the time unit of `ts`, for `WHERE id BETWEEN ...`.
#[pg_extern(immutable, parallel_safe)]
fn min_id(ts: TimestampWithTimeZone, layout: default!(&str, "'twitter'")) -> i64 {
    or_raise(bound(ts, layout, Layout::min_id_at))
}

/// The largest ID of the time unit of `ts`.
#[pg_extern(immutable, parallel_safe)]
fn max_id(ts: TimestampWithTimeZone, layout: default!(&str, "'twitter'")) -> i64 {
    or_raise(bound(ts, layout, Layout::max_id_at))
}

fn bound(
    ts: TimestampWithTimeZone,
    layout: &str,
    at: fn(&Layout, u64) -> Result<SnowflakeId, snowmint::Error>,
) -> Result<i64, Refusal> {
    let l = layouts::parse(layout)?;
    let ms = time_in(&l, unix_ms_of(ts)?)?;
    Ok(at(&l, ms)?.get() as i64)
}

/// A Twitter-layout ID from its time in Unix ms and its three fields.
#[pg_extern(immutable, parallel_safe, name = "compose")]
fn compose_twitter(unix_ms: i64, datacenter: i32, worker: i32, sequence: i32) -> i64 {
    or_raise((|| {
        let l = Layout::TWITTER;
        let ms = time_in(&l, unix_ms)?;
        let dc = l.parse_field(Field::Datacenter, &datacenter.to_string())?;
        let w = l.parse_field(Field::Worker, &worker.to_string())?;
        let seq = l.parse_field(Field::Sequence, &sequence.to_string())?;
        Ok(l.compose(ms, dc, w, seq)?.get() as i64)
    })())
}

/// An ID of `layout` from its time in Unix ms and the values of its fields
/// below the time, in the layout's order (Discord: worker, process,
/// increment). A NULL among them is refused (22004), naming its field; a
/// NULL argument gives NULL (the function is STRICT).
#[pg_extern(immutable, parallel_safe, name = "compose")]
fn compose_fields(unix_ms: i64, fields: Vec<Option<i64>>, layout: &str) -> i64 {
    or_raise((|| {
        let l = layouts::parse(layout)?;
        let ms = time_in(&l, unix_ms)?;
        let node: Vec<&str> = l.node_fields().map(|f| f.name()).collect();
        if fields.len() != node.len() {
            return Err(Refusal::Input(format!(
                "fields must have {} values ({}) for layout {}, got {}",
                node.len(),
                node.join(", "),
                l.name(),
                fields.len()
            )));
        }
        let texts = fields
            .iter()
            .zip(&node)
            .enumerate()
            .map(|(i, (value, name))| match value {
                Some(v) => Ok(v.to_string()),
                None => Err(Refusal::Null(format!(
                    "fields must not contain NULL: value {} of {} ({name}, for layout {}) is NULL",
                    i + 1,
                    node.len(),
                    l.name()
                ))),
            })
            .collect::<Result<Vec<String>, Refusal>>()?;
        let values: Vec<(&str, &str)> = node
            .iter()
            .copied()
            .zip(texts.iter().map(String::as_str))
            .collect();
        Ok(l.parse_fields(ms, &values)?.get() as i64)
    })())
}
