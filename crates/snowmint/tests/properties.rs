//! Property tests of the format: compose/decode round trips over the whole
//! valid domain, and every parser either returns the value its formatter
//! printed or a one-line error naming the field; never a panic.

use proptest::prelude::*;
use snowmint::time::{Iso8601, MAX_UNIX_MS};
use snowmint::{
    Encoding, Field, FieldOrder, Layout, MAX_DATACENTER, MAX_ID, MAX_SEQUENCE, MAX_TIMESTAMP_MS,
    MAX_WORKER, MIN_TIMESTAMP_MS, Parts, SnowflakeId, parse_timestamp,
};

fn timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![
        MIN_TIMESTAMP_MS..=MAX_TIMESTAMP_MS,
        Just(MIN_TIMESTAMP_MS),
        Just(MAX_TIMESTAMP_MS),
    ]
}

fn parts() -> impl Strategy<Value = Parts> {
    (
        timestamp(),
        0..=MAX_DATACENTER,
        0..=MAX_WORKER,
        0..=MAX_SEQUENCE,
    )
        .prop_map(|(timestamp_ms, datacenter, worker, sequence)| Parts {
            timestamp_ms,
            datacenter,
            worker,
            sequence,
        })
}

fn id() -> impl Strategy<Value = SnowflakeId> {
    prop_oneof![
        (0..=MAX_ID).prop_map(|v| SnowflakeId::new(v).unwrap()),
        Just(SnowflakeId::MIN),
        Just(SnowflakeId::MAX),
    ]
}

/// Any integer a user might type, from far below zero to far past 64 bits.
fn any_int() -> impl Strategy<Value = i128> {
    prop_oneof![
        any::<i128>(),
        any::<i64>().prop_map(i128::from),
        any::<u64>().prop_map(i128::from),
        -5i128..=5000,
        Just(i128::from(MAX_ID)),
        Just(i128::from(MAX_ID) + 1),
    ]
}

/// Text that looks a bit like what parsers expect, and text that does not.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,40}",
        "[ +\\-0-9a-zA-Z:.TZ\n\t]{0,30}",
        "[0-9]{0,30}",
        "[0-9a-fA-FxX]{0,30}",
        "[0-9a-zA-Z]{0,30}",
        "[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,12})?)?(Z|[+-][0-9]{2}:[0-9]{2})?",
        any::<String>(),
    ]
}

/// The last millisecond of a layout's time field, computed without the
/// library and wide enough never to overflow: `epoch + units * unit + unit - 1`,
/// where the field holds `units` (its top bit is the sign bit at 64 bits).
fn last_ms(epoch: u64, unit: u64, time_bits: u32, total: u32) -> u128 {
    let usable = if total < 64 { time_bits } else { time_bits - 1 };
    let units = (1u128 << usable) - 1;
    u128::from(epoch) + units * u128::from(unit) + u128::from(unit) - 1
}

/// An error a user may see: one line, naming `field`.
fn check_error(e: &snowmint::Error, field: Field) -> Result<(), TestCaseError> {
    let msg = e.to_string();
    prop_assert_eq!(e.field(), field, "{}", msg);
    prop_assert!(
        msg.starts_with(field.name()),
        "{:?} does not name {}",
        msg,
        field
    );
    prop_assert!(!msg.contains(['\n', '\r']), "{:?} is not one line", msg);
    prop_assert!(msg.chars().count() < 250, "{:?} is too long", msg);
    Ok(())
}

proptest! {
    #[test]
    fn compose_then_decode_round_trips(p in parts()) {
        let id = snowmint::compose(p.timestamp_ms, p.datacenter, p.worker, p.sequence).unwrap();
        prop_assert_eq!(id.parts(), p);
        prop_assert_eq!(snowmint::decode(id.get()).unwrap(), p);
        prop_assert_eq!(id.timestamp_ms(), p.timestamp_ms);
        prop_assert_eq!(u64::from(id.datacenter()), p.datacenter);
        prop_assert_eq!(u64::from(id.worker()), p.worker);
        prop_assert_eq!(u64::from(id.sequence()), p.sequence);
        prop_assert_eq!(id.delta_ms(), p.timestamp_ms - MIN_TIMESTAMP_MS);
        prop_assert_eq!(Layout::TWITTER.compose_parts(p).unwrap(), id);
        prop_assert_eq!(SnowflakeId::from_parts(p.timestamp_ms, p.datacenter, p.worker, p.sequence).unwrap(), id);
        // Within the millisecond's range.
        prop_assert!(SnowflakeId::min_at(p.timestamp_ms).unwrap() <= id);
        prop_assert!(id <= SnowflakeId::max_at(p.timestamp_ms).unwrap());
    }

    #[test]
    fn decode_then_compose_round_trips(id in id()) {
        let p = id.parts();
        prop_assert_eq!(snowmint::compose(p.timestamp_ms, p.datacenter, p.worker, p.sequence).unwrap(), id);
        for layout in Layout::PRESETS {
            prop_assert_eq!(layout.compose_parts(layout.decode(id)).unwrap(), id);
        }
    }

    /// Every preset: valid values survive compose then decode (the time
    /// rounded down to the layout's unit), and the breakdown shows the
    /// same values in segments that tile the 64 bits.
    #[test]
    fn every_preset_round_trips(which in 0usize..5, t in any::<u64>(), d in any::<u64>(), w in any::<u64>(), s in any::<u64>()) {
        let layout = Layout::PRESETS[which];
        let (min, max) = layout.range(Field::Timestamp);
        let t = min + t % (max - min + 1);
        let d = d % (layout.max_datacenter() + 1);
        let w = w % (layout.max_worker() + 1);
        let s = s % (layout.max_sequence() + 1);
        let id = layout.compose(t, d, w, s).unwrap();
        let p = layout.decode(id);
        let unit = layout.unit_ms();
        prop_assert_eq!(p, Parts {
            timestamp_ms: t - (t - layout.epoch_ms()) % unit,
            datacenter: d,
            worker: w,
            sequence: s,
        });
        let b = layout.breakdown(id);
        prop_assert_eq!(b.segments.iter().map(|s| s.bits).sum::<u32>(), 64);
        prop_assert_eq!(b.segments.iter().map(|s| s.binary.as_str()).collect::<String>(), b.binary);
        prop_assert_eq!((b.datacenter, b.worker, b.sequence), (d, w, s));
        // Within the span of its own time, and IDs order by time first.
        let span = layout.span(t, t).unwrap();
        prop_assert!(span.min <= id && id <= span.max);
        if t - min >= unit {
            // `t - unit` is in the unit before `t`'s.
            prop_assert!(layout.max_id_at(t - unit).unwrap() < span.min);
        }
    }

    /// A span holds every ID of its times and nothing of the times around
    /// it: the millisecond before `from` ends below `min`, the one after
    /// `to` starts above `max`.
    #[test]
    fn spans_are_tight(a in timestamp(), b in timestamp()) {
        let (from, to) = (a.min(b), a.max(b));
        let span = Layout::TWITTER.span(from, to).unwrap();
        prop_assert_eq!(span.slots(), (to - from + 1) << 22);
        if from > MIN_TIMESTAMP_MS {
            prop_assert_eq!(SnowflakeId::max_at(from - 1).unwrap().get() + 1, span.min.get());
        }
        if to < MAX_TIMESTAMP_MS {
            prop_assert_eq!(SnowflakeId::min_at(to + 1).unwrap().get() - 1, span.max.get());
        }
        if from < to {
            let e = Layout::TWITTER.span(to, from).unwrap_err();
            prop_assert_eq!(e.field(), Field::To);
        }
    }

    #[test]
    fn id_order_is_field_order(a in parts(), b in parts()) {
        let key = |p: &Parts| (p.timestamp_ms, p.datacenter, p.worker, p.sequence);
        let ia = Layout::TWITTER.compose_parts(a).unwrap();
        let ib = Layout::TWITTER.compose_parts(b).unwrap();
        prop_assert_eq!(ia.cmp(&ib), key(&a).cmp(&key(&b)));
    }

    #[test]
    fn millisecond_ranges_tile(t in MIN_TIMESTAMP_MS..MAX_TIMESTAMP_MS) {
        let last = SnowflakeId::max_at(t).unwrap().get();
        prop_assert_eq!(last + 1, SnowflakeId::min_at(t + 1).unwrap().get());
    }

    #[test]
    fn compose_refuses_out_of_range(p in parts(), which in 0usize..4, v in any::<u64>()) {
        let mut q = p;
        let (field, slot) = match which {
            0 => (Field::Timestamp, &mut q.timestamp_ms),
            1 => (Field::Datacenter, &mut q.datacenter),
            2 => (Field::Worker, &mut q.worker),
            _ => (Field::Sequence, &mut q.sequence),
        };
        *slot = v;
        match Layout::TWITTER.compose_parts(q) {
            Ok(id) => {
                prop_assert!(Layout::TWITTER.contains(field, v));
                prop_assert_eq!(id.parts(), q);
            }
            Err(e) => {
                prop_assert!(!Layout::TWITTER.contains(field, v));
                check_error(&e, field)?;
                prop_assert!(e.to_string().contains(&format!("got {v}")), "{}", e);
            }
        }
    }

    #[test]
    fn custom_layouts_round_trip(
        epoch in 0u64..=2_000_000_000_000,
        dc in 0u8..=10, worker in 0u8..=10, seq in 0u8..=16,
        raw in 0..=MAX_ID,
    ) {
        for (total, unit, order) in [
            (63, 1, FieldOrder::IdentityThenSequence),
            (64, 7, FieldOrder::SequenceThenIdentity),
        ] {
            let timestamp_bits = total - dc - worker - seq;
            let past = last_ms(epoch, unit, u32::from(timestamp_bits), u32::from(total))
                > u128::from(MAX_UNIX_MS);
            let layout = match Layout::new(epoch, timestamp_bits, dc, worker, seq)
                .and_then(|l| l.with_unit_ms(unit))
            {
                Ok(layout) => {
                    prop_assert!(!past, "{} bits of {} ms from {} accepted", timestamp_bits, unit, epoch);
                    layout.with_order(order)
                }
                // A time field that runs past 9999: refused, and only then.
                Err(e) => {
                    prop_assert!(e.to_string().contains("runs past 9999-12-31"), "{}", e);
                    prop_assert!(past, "{} bits refused: {}", timestamp_bits, e);
                    continue;
                }
            };
            let id = SnowflakeId::new(raw).unwrap();
            let p = layout.decode(id);
            prop_assert_eq!(layout.compose_parts(p).unwrap(), id);
            let b = layout.breakdown(id);
            prop_assert_eq!(b.segments.iter().map(|s| s.bits).sum::<u32>(), 64);
            prop_assert_eq!((b.datacenter, b.worker, b.sequence), (p.datacenter, p.worker, p.sequence));
        }
    }

    /// A spec of random fields parses, prints back the same text, and the
    /// layout composes and decodes by field name.
    #[test]
    fn specs_round_trip(
        epoch in 0u64..=4_000_000_000_000,
        unit in prop_oneof![Just(1u64), Just(10), Just(1000), 1u64..=5000],
        widths in proptest::collection::vec(1u32..=20, 0..=6),
        time_bits in 1u32..=64,
        raw in any::<u64>(),
    ) {
        let mut fields = vec![("timestamp".to_string(), time_bits)];
        let mut total = time_bits;
        for (i, w) in widths.into_iter().enumerate() {
            if total + w > 64 {
                break;
            }
            total += w;
            fields.push((format!("f{i}_x"), w));
        }
        let unit_text = if unit % 1000 == 0 { format!("{}s", unit / 1000) } else { format!("{unit}ms") };
        let list: Vec<String> = fields.iter().map(|(n, b)| format!("{n}:{b}")).collect();
        let spec = format!("epoch={epoch};unit={unit_text};fields={}", list.join(","));
        let past = last_ms(epoch, unit, time_bits, total) > u128::from(MAX_UNIX_MS);
        let layout = match Layout::parse(&spec) {
            Ok(l) => {
                prop_assert!(!past, "{} accepted", spec);
                l
            }
            Err(e) => {
                // Only a time field that runs past 9999.
                prop_assert!(e.to_string().contains("runs past 9999-12-31"), "{}: {}", spec, e);
                prop_assert!(past, "{}: {}", spec, e);
                return Ok(());
            }
        };
        let printed = layout.spec();
        let expected = if unit == 1 { spec.replace(";unit=1ms", "") } else { spec.clone() };
        prop_assert_eq!(&printed, &expected);
        prop_assert_eq!(Layout::parse(&printed).unwrap(), layout);
        prop_assert_eq!(layout.total_bits(), total);
        // Any ID that fits the layout survives decode then compose by name.
        let id = SnowflakeId::new(raw & layout.max_id()).unwrap();
        let time = layout.decode(id).timestamp_ms;
        let values = layout.field_values(id);
        prop_assert_eq!(layout.compose_fields(time, &values).unwrap(), id);
        let b = layout.breakdown(id);
        prop_assert_eq!(b.segments.iter().map(|s| s.bits).sum::<u32>(), 64);
    }

    /// Every layout a spec can give either is refused naming the bound
    /// (its time runs past 9999-12-31T23:59:59.999Z) or computes its first
    /// and last IDs, times, spans, figures and partitions exactly: the
    /// values below are worked out here in `u128`, and the library's own
    /// arithmetic runs with overflow checks (a debug build), so a wrap
    /// anywhere fails the test.
    #[test]
    fn accepted_layouts_compute_without_overflow(
        epoch in prop_oneof![
            4 => 0u64..=4_000_000_000_000,
            2 => 0u64..=MAX_UNIX_MS,
            1 => MAX_UNIX_MS - 100_000..=MAX_UNIX_MS + 10,
            1 => any::<u64>(),
        ],
        unit in prop_oneof![
            4 => 1u64..=10,
            2 => 1u64..=100_000,
            1 => 1u64..=MAX_UNIX_MS + 1,
            1 => 1u64..=u64::MAX,
        ],
        time_bits in prop_oneof![3 => 1u32..=48, 1 => 1u32..=64],
        widths in proptest::collection::vec(1u32..=24, 0..=5),
        now in any::<u64>(),
    ) {
        let mut fields = vec![format!("timestamp:{time_bits}")];
        let mut total = time_bits;
        for (i, w) in widths.into_iter().enumerate() {
            if total + w > 64 {
                break;
            }
            total += w;
            fields.push(format!("f{i}:{w}"));
        }
        let spec = format!("epoch={epoch};unit={unit}ms;fields={}", fields.join(","));
        let last = last_ms(epoch, unit, time_bits, total);
        let l = match Layout::parse(&spec) {
            Err(e) => {
                prop_assert!(last > u128::from(MAX_UNIX_MS), "{}: {}", spec, e);
                prop_assert!(
                    e.to_string().contains("runs past 9999-12-31T23:59:59.999Z (253402300799999)"),
                    "{}: {}", spec, e
                );
                return Ok(());
            }
            Ok(l) => l,
        };
        prop_assert!(last <= u128::from(MAX_UNIX_MS), "{} accepted", spec);
        let (lo, hi) = (l.min_timestamp_ms(), l.max_timestamp_ms());
        prop_assert_eq!((u128::from(lo), u128::from(hi)), (u128::from(epoch), last));
        let shift = total - time_bits;
        let usable = if total < 64 { time_bits } else { time_bits - 1 };
        let units = (1u128 << usable) - 1;
        let max_id = (units << shift) | ((1u128 << shift) - 1);
        prop_assert_eq!(u128::from(l.max_id()), max_id);
        prop_assert_eq!(u128::from(l.ids_per_unit()), 1u128 << shift);
        prop_assert_eq!(l.min_id_at(lo).unwrap().get(), 0);
        prop_assert_eq!(u128::from(l.max_id_at(hi).unwrap().get()), max_id);
        let span = l.span(lo, hi).unwrap();
        prop_assert_eq!(u128::from(span.slots()), max_id + 1);
        // The last ID decodes to the start of the last unit, a date that
        // reads back as itself.
        let top = SnowflakeId::new(l.max_id()).unwrap();
        let t = l.decode(top).timestamp_ms;
        prop_assert_eq!(u128::from(t), u128::from(epoch) + units * u128::from(unit));
        let b = l.breakdown(top);
        prop_assert_eq!(snowmint::time::parse_iso8601(&b.time), Some(t as i64));
        prop_assert_eq!(l.parse_timestamp(&Iso8601(hi as i64).to_string(), 0), Ok(hi));
        let report = snowmint::LayoutReport::new(&l, now);
        prop_assert_eq!(snowmint::time::parse_iso8601(&report.end), Some(hi as i64));
        prop_assert_eq!(i128::from(report.end_in_ms), (i128::from(hi) - i128::from(now)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)));
        if let Some(safe) = l.js_safe_until_ms() {
            prop_assert!((lo..=hi).contains(&safe));
        }
        for field in [Field::Timestamp, Field::Datacenter, Field::Worker, Field::Sequence, Field::Id, Field::Count, Field::Ordinal, Field::From, Field::To] {
            let (min, max) = l.range(field);
            prop_assert!(min <= max, "{:?}", field);
        }
        // Monthly partitions at both ends of the layout's time.
        for (from, to) in [(lo, lo.saturating_add(62 * 86_400_000).min(hi)), (hi.saturating_sub(62 * 86_400_000).max(lo), hi)] {
            for dialect in [snowmint::sql::Dialect::Postgres, snowmint::sql::Dialect::Mysql] {
                match snowmint::sql::partitions(dialect, &l, "t", "id", snowmint::sql::Period::Month, from, to) {
                    Ok(ddl) => prop_assert!(!ddl.contains("1969-"), "{}", ddl),
                    // A span of less than a month may hold no start.
                    Err(e) => prop_assert!(e.to_string().starts_with("to "), "{}", e),
                }
            }
        }
    }

    /// A field named like a slot fills that slot, whatever its place; the
    /// slots are filled by distinct fields, as many as there are fields
    /// below the time (up to three); and a slot's value is its field's.
    #[test]
    fn fields_named_like_slots_fill_them(
        names in Just(vec!["datacenter", "worker", "sequence", "node", "shard"]).prop_shuffle(),
        count in 1usize..=5,
        widths in proptest::collection::vec(1u32..=6, 5),
        raw in any::<u64>(),
    ) {
        let fields: Vec<String> = names[..count]
            .iter()
            .zip(&widths)
            .map(|(n, w)| format!("{n}:{w}"))
            .collect();
        let spec = format!("epoch=0;fields=timestamp:30,{}", fields.join(","));
        let l = Layout::parse(&spec).unwrap();
        let slots = [Field::Datacenter, Field::Worker, Field::Sequence];
        let mut filled = Vec::new();
        for f in l.node_fields() {
            if let Some(slot) = slots.into_iter().find(|s| s.name() == f.name()) {
                prop_assert_eq!(f.slot(), Some(slot), "{}: {}", spec, f.name());
            }
            if let Some(slot) = f.slot() {
                prop_assert!(!filled.contains(&slot), "{}: {:?} twice", spec, slot);
                filled.push(slot);
            }
        }
        prop_assert_eq!(filled.len(), count.min(3), "{}", spec);
        let id = SnowflakeId::new(raw & l.max_id()).unwrap();
        let p = l.decode(id);
        for (slot, value) in [(Field::Datacenter, p.datacenter), (Field::Worker, p.worker), (Field::Sequence, p.sequence)] {
            let want = l.node_fields().find(|f| f.slot() == Some(slot)).map_or(0, |f| f.value(id));
            prop_assert_eq!(value, want, "{}: {:?}", spec, slot);
        }
    }

    #[test]
    fn layout_parse_never_panics(s in "[a-z0-9=;:,_ -]{0,60}") {
        match Layout::parse(&s) {
            Ok(l) => prop_assert_eq!(Layout::parse(&l.spec()).unwrap(), l),
            Err(e) => {
                prop_assert!(e.to_string().starts_with("invalid layout: "), "{}", e);
                prop_assert_eq!(e.field(), Field::Layout);
            }
        }
    }

    #[test]
    fn layout_new_never_panics(epoch in any::<u64>(), t in any::<u8>(), d in any::<u8>(), w in any::<u8>(), s in any::<u8>(), unit in any::<u64>()) {
        match Layout::new(epoch, t, d, w, s).and_then(|l| l.with_unit_ms(unit)) {
            Err(e) => prop_assert!(e.to_string().starts_with("invalid layout: ")),
            Ok(l) => {
                prop_assert!(l.max_timestamp_ms() >= l.min_timestamp_ms());
                let _ = l.breakdown(SnowflakeId::MAX);
            }
        }
    }

    // ---- textual forms of an ID ------------------------------------------

    #[test]
    fn every_encoding_parses_what_it_formats(id in id()) {
        for enc in Encoding::ALL {
            let text = enc.format(id).to_string();
            prop_assert_eq!(enc.parse(&text), Ok(id), "{} {}", enc, text);
            prop_assert_eq!(enc.parse(&text.to_uppercase()), Ok(id), "{} {}", enc, text);
            prop_assert_eq!(enc.parse(&format!("  {text}\n")), Ok(id), "{} {}", enc, text);
        }
        prop_assert_eq!(id.hex().to_string().len(), snowmint::HEX_LEN);
        prop_assert_eq!(id.base32().to_string().len(), snowmint::BASE32_LEN);
        prop_assert_eq!(Encoding::Hex.parse(&format!("0x{:x}", id.get())), Ok(id));
        prop_assert_eq!(SnowflakeId::parse_hex(&id.hex().to_string()), Ok(id));
        prop_assert_eq!(SnowflakeId::parse_base32(&id.base32().to_string()), Ok(id));
        prop_assert_eq!(SnowflakeId::parse_decimal(&id.to_string()), Ok(id));
        let bin = id.binary().to_string();
        prop_assert_eq!(bin.len(), 64);
        prop_assert_eq!(u64::from_str_radix(&bin, 2).unwrap(), id.get());
    }

    #[test]
    fn fixed_width_forms_sort_like_numbers(a in id(), b in id()) {
        prop_assert_eq!(a.hex().to_string().cmp(&b.hex().to_string()), a.cmp(&b));
        prop_assert_eq!(a.base32().to_string().cmp(&b.base32().to_string()), a.cmp(&b));
        prop_assert_eq!(a.binary().to_string().cmp(&b.binary().to_string()), a.cmp(&b));
    }

    #[test]
    fn decimal_accepts_exactly_the_ids(v in any_int()) {
        let text = v.to_string();
        let parsed = Encoding::Decimal.parse(&text);
        let from_str = text.parse::<SnowflakeId>();
        prop_assert_eq!(&parsed, &from_str);
        prop_assert_eq!(&parsed, &SnowflakeId::try_from(text.as_str()));
        match parsed {
            Ok(id) => {
                prop_assert!((0..=i128::from(MAX_ID)).contains(&v));
                prop_assert_eq!(i128::from(id.get()), v);
            }
            Err(e) => {
                prop_assert!(!(0..=i128::from(MAX_ID)).contains(&v));
                check_error(&e, Field::Id)?;
                prop_assert!(e.to_string().contains("0..=9223372036854775807"), "{}", e);
            }
        }
    }

    #[test]
    fn hex_and_base32_accept_exactly_the_ids(v in any::<u128>()) {
        let hex = format!("{v:x}");
        let b32 = crockford(v);
        for (enc, text) in [(Encoding::Hex, hex), (Encoding::Base32, b32)] {
            match enc.parse(&text) {
                Ok(id) => prop_assert_eq!(u128::from(id.get()), v),
                Err(e) => {
                    prop_assert!(v > u128::from(MAX_ID), "{} {} refused: {}", enc, text, e);
                    check_error(&e, Field::Id)?;
                }
            }
        }
    }

    #[test]
    fn integer_conversions(v in any::<i64>(), u in any::<u64>()) {
        match SnowflakeId::try_from(v) {
            Ok(id) => prop_assert_eq!(i64::from(id), v),
            Err(e) => { prop_assert!(v < 0); check_error(&e, Field::Id)?; }
        }
        match SnowflakeId::try_from(u) {
            Ok(id) => prop_assert_eq!(u64::from(id), u),
            Err(e) => { prop_assert!(u > MAX_ID); check_error(&e, Field::Id)?; }
        }
        prop_assert_eq!(SnowflakeId::new(u).ok(), SnowflakeId::try_from(u).ok());
    }

    #[test]
    fn id_parsers_never_panic(s in any_text()) {
        for enc in Encoding::ALL {
            match enc.parse(&s) {
                // Whatever was accepted prints back to a form that parses
                // to the same ID.
                Ok(id) => prop_assert_eq!(enc.parse(&enc.format(id).to_string()), Ok(id)),
                Err(e) => check_error(&e, Field::Id)?,
            }
        }
        prop_assert_eq!(s.parse::<SnowflakeId>(), Encoding::Decimal.parse(&s));
    }

    #[test]
    fn encoding_names(s in any_text()) {
        for enc in Encoding::ALL {
            prop_assert_eq!(enc.name().parse::<Encoding>(), Ok(enc));
            prop_assert_eq!(enc.to_string().to_uppercase().parse::<Encoding>(), Ok(enc));
        }
        match s.parse::<Encoding>() {
            Ok(enc) => prop_assert!(enc.name().eq_ignore_ascii_case(s.trim())),
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    // ---- fields and timestamps -------------------------------------------

    #[test]
    fn parse_field_accepts_exactly_the_range(which in 0usize..4, v in any_int()) {
        let field = [Field::Timestamp, Field::Datacenter, Field::Worker, Field::Sequence][which];
        let layout = Layout::TWITTER;
        let (min, max) = layout.range(field);
        match layout.parse_field(field, &v.to_string()) {
            Ok(got) => {
                prop_assert!((i128::from(min)..=i128::from(max)).contains(&v));
                prop_assert_eq!(i128::from(got), v);
            }
            Err(e) => {
                prop_assert!(!(i128::from(min)..=i128::from(max)).contains(&v));
                check_error(&e, field)?;
                prop_assert!(e.to_string().contains(&format!("{min}..={max}")), "{}", e);
            }
        }
    }

    #[test]
    fn parse_field_never_panics(which in 0usize..6, s in any_text()) {
        let field = [Field::Timestamp, Field::Datacenter, Field::Worker, Field::Sequence, Field::Id, Field::Layout][which];
        for layout in [Layout::TWITTER, Layout::DISCORD] {
            match layout.parse_field(field, &s) {
                Ok(v) => {
                    prop_assert!(layout.contains(field, v));
                    prop_assert_eq!(layout.parse_field(field, &v.to_string()), Ok(v));
                }
                Err(e) => check_error(&e, field)?,
            }
        }
    }

    #[test]
    fn parse_timestamp_reads_what_is_printed(t in timestamp(), now in any::<u64>()) {
        prop_assert_eq!(parse_timestamp(&t.to_string(), now), Ok(t));
        prop_assert_eq!(parse_timestamp(&Iso8601(t as i64).to_string(), now), Ok(t));
        prop_assert_eq!(parse_timestamp("now", t), Ok(t));
        prop_assert_eq!(parse_timestamp(" NOW ", t), Ok(t));
        match parse_timestamp("now", now) {
            Ok(v) => prop_assert_eq!(v, now),
            Err(e) => {
                prop_assert!(!(MIN_TIMESTAMP_MS..=MAX_TIMESTAMP_MS).contains(&now));
                check_error(&e, Field::Timestamp)?;
            }
        }
    }

    #[test]
    fn parse_timestamp_refuses_out_of_range(v in any_int(), ms in -62_135_596_800_000i64..253_402_300_799_999) {
        let in_range = |v: i128| (i128::from(MIN_TIMESTAMP_MS)..=i128::from(MAX_TIMESTAMP_MS)).contains(&v);
        match parse_timestamp(&v.to_string(), 0) {
            Ok(t) => prop_assert_eq!(i128::from(t), v),
            Err(e) => {
                prop_assert!(!in_range(v));
                check_error(&e, Field::Timestamp)?;
                prop_assert!(e.to_string().contains("2080-07-10T17:30:30.208Z"), "{}", e);
            }
        }
        match parse_timestamp(&Iso8601(ms).to_string(), 0) {
            Ok(t) => prop_assert_eq!(t as i64, ms),
            Err(e) => {
                prop_assert!(!in_range(i128::from(ms)));
                check_error(&e, Field::Timestamp)?;
            }
        }
    }

    #[test]
    fn parse_timestamp_never_panics(s in any_text(), now in any::<u64>()) {
        match parse_timestamp(&s, now) {
            Ok(t) => {
                prop_assert!((MIN_TIMESTAMP_MS..=MAX_TIMESTAMP_MS).contains(&t));
                prop_assert_eq!(parse_timestamp(&t.to_string(), now), Ok(t));
            }
            Err(e) => check_error(&e, Field::Timestamp)?,
        }
    }

    // ---- the breakdown ------------------------------------------------------

    #[test]
    fn breakdown_is_consistent(id in id()) {
        let b = id.breakdown();
        prop_assert_eq!(b.id, id);
        prop_assert_eq!(b.binary.len(), 64);
        prop_assert_eq!(b.binary.clone(), id.binary().to_string());
        let joined: String = b.segments.iter().map(|s| s.binary.as_str()).collect();
        prop_assert_eq!(&joined, &b.binary);
        let names: Vec<&str> = b.segments.iter().map(|s| s.name.as_str()).collect();
        prop_assert_eq!(names, ["sign", "timestamp", "datacenter", "worker", "sequence"]);
        let mut next_msb = 63;
        for s in &b.segments {
            prop_assert_eq!(s.msb, next_msb);
            prop_assert_eq!(s.msb - s.lsb + 1, s.bits);
            prop_assert_eq!(s.binary.len() as u32, s.bits);
            prop_assert_eq!(u64::from_str_radix(&s.binary, 2).unwrap(), s.value);
            next_msb = s.lsb.wrapping_sub(1);
        }
        prop_assert_eq!(b.segments[4].lsb, 0);
        prop_assert_eq!(b.segments[1].value, b.delta_ms);
        prop_assert_eq!(b.timestamp_ms, id.timestamp_ms());
        prop_assert_eq!(&b.time, &id.time().to_string());
        prop_assert_eq!(parse_timestamp(&b.time, 0), Ok(b.timestamp_ms));
    }
}

/// Crockford base32 of any `u128`, the digits the parser must read back.
fn crockford(mut v: u128) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(ALPHABET[(v & 31) as usize]);
        v >>= 5;
        if v == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

#[cfg(feature = "serde")]
mod serde_props {
    use super::*;
    use serde_json::Value;

    proptest! {
        #[test]
        fn ids_travel_as_decimal_strings(id in id()) {
            let text = serde_json::to_string(&id).unwrap();
            prop_assert_eq!(&text, &format!("\"{id}\""));
            prop_assert_eq!(serde_json::from_str::<SnowflakeId>(&text).unwrap(), id);
            prop_assert_eq!(serde_json::from_str::<SnowflakeId>(&id.to_string()).unwrap(), id);
        }

        #[test]
        fn deserialize_accepts_exactly_the_ids(v in any_int()) {
            let in_range = (0..=i128::from(MAX_ID)).contains(&v);
            for text in [v.to_string(), format!("\"{v}\"")] {
                match serde_json::from_str::<SnowflakeId>(&text) {
                    Ok(id) => prop_assert_eq!(i128::from(id.get()), v),
                    Err(e) => {
                        prop_assert!(!in_range, "{} refused: {}", text, e);
                        prop_assert!(!e.to_string().contains('\n'));
                    }
                }
            }
        }

        #[test]
        fn deserialize_never_panics(s in any_text()) {
            let _ = serde_json::from_str::<SnowflakeId>(&s);
            let quoted = serde_json::to_string(&s).unwrap();
            match serde_json::from_str::<SnowflakeId>(&quoted) {
                Ok(id) => prop_assert_eq!(Ok(id), s.parse::<SnowflakeId>()),
                Err(_) => prop_assert!(s.parse::<SnowflakeId>().is_err()),
            }
        }

        #[test]
        fn breakdown_json_is_the_contract_object(id in id()) {
            let b = id.breakdown();
            let v: Value = serde_json::to_value(&b).unwrap();
            let obj = v.as_object().unwrap();
            let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
            let mut expected = vec!["id", "timestamp_ms", "delta_ms", "time", "datacenter", "worker", "sequence", "binary", "segments"];
            expected.sort_unstable();
            prop_assert_eq!(keys, expected);
            prop_assert_eq!(&v["id"], &Value::String(id.to_string()));
            prop_assert_eq!(v["timestamp_ms"].as_u64(), Some(id.timestamp_ms()));
            prop_assert_eq!(v["delta_ms"].as_u64(), Some(id.delta_ms()));
            prop_assert_eq!(v["datacenter"].as_u64(), Some(u64::from(id.datacenter())));
            prop_assert_eq!(v["worker"].as_u64(), Some(u64::from(id.worker())));
            prop_assert_eq!(v["sequence"].as_u64(), Some(u64::from(id.sequence())));
            prop_assert_eq!(v["binary"].as_str().map(str::len), Some(64));
            for (seg, s) in v["segments"].as_array().unwrap().iter().zip(&b.segments) {
                let mut keys: Vec<&str> = seg.as_object().unwrap().keys().map(String::as_str).collect();
                keys.sort_unstable();
                prop_assert_eq!(keys, ["binary", "bits", "name", "value"]);
                prop_assert_eq!(seg["name"].as_str(), Some(s.name.as_str()));
                prop_assert_eq!(seg["value"].as_u64(), Some(s.value));
            }
        }
    }
}
