//! The layout's invariants, by example.

use super::*;
use crate::error::Field;
use crate::id::SnowflakeId;
use crate::problem::LayoutProblem;
use crate::time::MAX_UNIX_MS;

#[test]
fn constants_match_the_contract() {
    assert_eq!(MAX_TIMESTAMP_MS, 3_487_858_230_208);
    assert_eq!(TIMESTAMP_SHIFT, 22);
    assert_eq!(DATACENTER_SHIFT, 17);
    assert_eq!(WORKER_SHIFT, 12);
    assert_eq!(Layout::TWITTER.max_timestamp_ms(), MAX_TIMESTAMP_MS);
}

#[test]
fn layouts_are_validated() {
    assert!(Layout::new(0, 41, 5, 5, 11).is_err());
    assert!(Layout::new(0, 0, 21, 30, 12).is_err());
    assert!(Layout::new(u64::MAX - 5, 41, 5, 5, 12).is_err());
    let l = Layout::new(0, 47, 0, 0, 16).unwrap();
    assert_eq!(l.max_worker(), 0);
    assert_eq!(l.compose(5, 0, 0, 0).unwrap().get(), 5 << 16);
    assert_eq!(l.decode(SnowflakeId::MAX).timestamp_ms, (1 << 47) - 1);
    // 64 bits: the timestamp's top bit is the sign bit.
    let l = Layout::new(0, 48, 0, 0, 16).unwrap();
    assert!(!l.has_sign_bit());
    assert_eq!(l.max_timestamp_ms(), (1 << 47) - 1);
    assert!(Layout::new(0, 41, 5, 5, 14).is_err());
    assert!(Layout::TWITTER.with_unit_ms(u64::MAX).is_err());
}

#[test]
fn a_layout_ends_where_dates_end() {
    // 2^47 ms from 1970 is the year 6429; 2^48 would be 10889.
    assert!(Layout::new(0, 47, 0, 0, 16).is_ok());
    let e = Layout::new(0, 49, 0, 0, 15).unwrap_err();
    assert_eq!(
        e.layout_problem(),
        Some(&LayoutProblem::PastTheEnd {
            last_ms: (1 << 48) - 1
        })
    );
    assert!(
        e.to_string().starts_with(
            "invalid layout: the time field runs past 9999-12-31T23:59:59.999Z \
             (253402300799999), where dates end: its last millisecond would be 281474976710655;"
        ),
        "{e}"
    );
    // At the bound: 2^41 units of 115 ms end in 9999, of 116 ms after.
    let l = Layout::new(0, 41, 11, 11, 0).unwrap();
    let last = l.with_unit_ms(115).unwrap().max_timestamp_ms();
    assert_eq!(last, (1 << 41) * 115 - 1);
    assert!(last <= MAX_UNIX_MS);
    assert!(l.with_unit_ms(116).is_err());
    let e = Layout::TWITTER.with_unit_ms(1000).unwrap_err();
    assert!(e.to_string().contains("runs past 9999-12-31"), "{e}");
    // The example wrapped to 1969; it is refused now.
    let e = Layout::parse("epoch=0;unit=2ms;fields=timestamp:63").unwrap_err();
    assert!(
        e.to_string()
            .contains("its last millisecond would be 18446744073709551615"),
        "{e}"
    );
}

#[test]
fn fields_named_like_a_slot_fill_that_slot() {
    // The segment named datacenter holds 2 (bits 16..=12), worker 1
    // (bits 21..=17): 1 << 17 | 2 << 12 = 139264.
    let l = Layout::parse("epoch=0;fields=timestamp:41,worker:5,datacenter:5,sequence:12").unwrap();
    let p = l.decode(SnowflakeId::new(139264).unwrap());
    assert_eq!((p.datacenter, p.worker, p.sequence), (2, 1, 0));
    assert_eq!(
        (l.label(Field::Datacenter), l.label(Field::Worker)),
        ("datacenter", "worker")
    );
    for f in l.node_fields() {
        assert_eq!(f.slot().map(Field::name), Some(f.name()), "{f:?}");
    }
    assert_eq!(l.compose(0, 2, 1, 0).unwrap().get(), 139264);
    // Only one field by its slot's name: the others fill the free slots
    // from the bottom up (here the lowest, `node`, is the sequence).
    let l = Layout::parse("epoch=0;fields=timestamp:41,worker:10,node:12").unwrap();
    assert_eq!(
        (l.label(Field::Worker), l.label(Field::Sequence)),
        ("worker", "node")
    );
    let l = Layout::parse("epoch=0;fields=timestamp:41,sequence:12,a:5,b:5").unwrap();
    assert_eq!(
        [Field::Datacenter, Field::Worker, Field::Sequence].map(|f| l.label(f)),
        ["a", "b", "sequence"]
    );
}

#[test]
fn presets_keep_their_slots() {
    let slots = |l: &Layout| {
        [Field::Datacenter, Field::Worker, Field::Sequence].map(|f| l.label(f).to_string())
    };
    assert_eq!(slots(&Layout::DISCORD), ["worker", "process", "increment"]);
    assert_eq!(
        slots(&Layout::TWITTER),
        ["datacenter", "worker", "sequence"]
    );
    // The spec of a preset is the preset, slots and all ...
    for preset in Layout::PRESETS {
        let parsed = Layout::parse(&preset.spec()).unwrap();
        assert_eq!(parsed, preset);
        assert_eq!(slots(&parsed), slots(&preset));
    }
    // ... while the same fields under another epoch follow the rule.
    let custom =
        Layout::parse("epoch=0;fields=timestamp:42,worker:5,process:5,increment:12").unwrap();
    assert_eq!(slots(&custom), ["process", "worker", "increment"]);
}

#[test]
fn span_errors_name_from_and_to() {
    let l = Layout::TWITTER;
    let e = l.span(0, TWITTER_EPOCH_MS).unwrap_err();
    assert_eq!(e.field(), Field::From);
    assert!(
        e.to_string().starts_with("from must be 1288834974657..="),
        "{e}"
    );
    let e = l.span(TWITTER_EPOCH_MS, MAX_TIMESTAMP_MS + 1).unwrap_err();
    assert_eq!(e.field(), Field::To);
    assert!(
        e.to_string()
            .ends_with("past the last millisecond the timestamp bits can hold"),
        "{e}"
    );
    let e = l.parse_span("yesterday", None, 0).unwrap_err();
    assert_eq!(e.field(), Field::From);
    assert!(
        e.to_string()
            .starts_with("from must be Unix milliseconds or an ISO-8601 time in "),
        "{e}"
    );
    let e = l
        .parse_span("2024-01-02T00:00:00Z", Some("2024-01-01T00:00:00Z"), 0)
        .unwrap_err();
    assert_eq!(e.field(), Field::To);
    // The message names both times, so a user sees which is which.
    assert!(
        e.to_string().contains("2024-01-02T00:00:00.000Z")
            && e.to_string().contains("2024-01-01T00:00:00.000Z"),
        "{e}"
    );
}

#[test]
fn reference_case() {
    let id = SnowflakeId::from_parts(1288834975657, 1, 1, 0).unwrap();
    assert_eq!(id.get(), 4194439168);
    assert_eq!(id.delta_ms(), 1000);
    let spec = "0 | 00000000000000000000000000000001111101000 | 00001 | 00001 | 000000000000";
    assert_eq!(id.binary().to_string(), spec.replace(" | ", ""));
}

/// A name the layout does not have is the error's field as typed, however
/// long; only the message shortens it (the API's `field` is the name sent).
#[test]
fn an_unknown_fields_name_is_kept_whole() {
    let long = "a_name_longer_than_forty_characters_of_any_message";
    let e = Layout::DISCORD
        .parse_fields(1462015105796, &[(long, "1")])
        .unwrap_err();
    assert_eq!(e.field_name(), long);
    assert_eq!(e.field(), Field::LayoutField);
    assert_eq!(
        e.to_string(),
        "a_name_longer_than_forty_characters_of_a… is not a field of this layout; \
         its fields are worker, process and increment"
    );
}
