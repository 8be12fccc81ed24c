//! The layout presets against each system's own documentation or source:
//! every expected value below is quoted from (or computed with the formula
//! of) the source named beside it, never from snowmint.

use snowmint::{Field, Layout, SnowflakeId};

fn id(v: u64) -> SnowflakeId {
    SnowflakeId::new(v).unwrap()
}

/// Unix ms of an ISO-8601 time, through the core's parser (itself tested
/// against the contract's reference times).
fn ms(iso: &str) -> u64 {
    snowmint::time::parse_iso8601(iso).unwrap() as u64
}

#[test]
fn discord_documented_example() {
    // Discord developer docs, Reference > Snowflakes: 175928847299117063 is
    // 2016-04-30 11:18:25.796 UTC, internal worker 1, internal process 0,
    // increment 7.
    let l = Layout::by_name("discord").unwrap();
    let p = l.decode(id(175928847299117063));
    assert_eq!(p.timestamp_ms, ms("2016-04-30T11:18:25.796Z"));
    assert_eq!((p.datacenter, p.worker, p.sequence), (1, 0, 7));
    let b = l.breakdown(id(175928847299117063));
    let labels: Vec<&str> = b.segments.iter().map(|s| s.label.as_str()).collect();
    // The docs draw the timestamp as 42 bits, 63 to 22: its top bit is the
    // sign bit.
    assert_eq!(labels, ["timestamp", "worker", "process", "increment"]);
    // Composed by field name, the documented values give the documented ID.
    let id = l
        .compose_fields(
            ms("2016-04-30T11:18:25.796Z"),
            &[("worker", 1), ("process", 0), ("increment", 7)],
        )
        .unwrap();
    assert_eq!(id.get(), 175928847299117063);
}

#[test]
fn specs_of_the_documented_layouts_are_the_presets() {
    // SPEC.md writes Discord out; the others follow their sources above.
    let cases = [
        (
            "epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12",
            Layout::DISCORD,
        ),
        (
            "epoch=2014-09-01T00:00:00Z;unit=10ms;fields=timestamp:39,sequence:8,machine:16",
            Layout::SONYFLAKE,
        ),
        (
            "epoch=2010-11-04T01:42:54.657Z;fields=timestamp:41,datacenter:5,worker:5,sequence:12",
            Layout::TWITTER,
        ),
    ];
    for (spec, preset) in cases {
        let parsed = Layout::parse(spec).unwrap();
        assert_eq!(parsed, preset, "{spec}");
        assert_eq!(parsed.name(), preset.name());
        assert_eq!(
            parsed.breakdown(id(175928847299117063)),
            preset.breakdown(id(175928847299117063))
        );
    }
}

#[test]
fn instagram_worked_example() {
    // "Sharding & IDs at Instagram" (Instagram Engineering, 2012): the
    // worked example has 1387263000 ms since the epoch, shard 31341 % 2000
    // = 1341 and sequence 5001 % 1024; its PL/pgSQL builds
    // `(now_millis - our_epoch) << 23 | shard_id << 10 | seq_id` with
    // `our_epoch bigint := 1314220021721`.
    let (delta, shard, seq) = (1387263000u64, 31341 % 2000, 5001 % 1024);
    let raw = (delta << 23) | (shard << 10) | seq;
    let l = Layout::by_name("instagram").unwrap();
    assert_eq!(l.epoch_ms(), 1314220021721);
    let p = l.decode(id(raw));
    assert_eq!(p.timestamp_ms, 1314220021721 + 1387263000);
    assert_eq!((p.worker, p.sequence), (1341, 905));
    assert_eq!(l.compose(p.timestamp_ms, 0, 1341, 905).unwrap().get(), raw);
    let b = l.breakdown(id(raw));
    let segs: Vec<(&str, &str, u32, u64)> = b
        .segments
        .iter()
        .map(|s| (s.name.as_str(), s.label.as_str(), s.bits, s.value))
        .collect();
    // 41 + 13 + 10 = 64: no separate sign bit.
    assert_eq!(
        segs,
        [
            ("timestamp", "timestamp", 41, 1387263000),
            ("shard", "shard", 13, 1341),
            ("sequence", "sequence", 10, 905),
        ]
    );
    assert_eq!((b.segments[0].msb, b.segments[0].lsb), (63, 23));
}

#[test]
fn instagram_media_ids_with_known_times() {
    // Stack Overflow question 63683015 ("Instagram media ID to timestamp
    // conversion"): media 2384288897814875714 was posted at
    // 2020-08-26T13:43:27Z and 2383568809444681765 at 2020-08-25T13:52:46Z
    // (to the second).
    for (media, posted) in [
        (2384288897814875714, "2020-08-26T13:43:27"),
        (2383568809444681765, "2020-08-25T13:52:46"),
    ] {
        let b = Layout::INSTAGRAM.breakdown(id(media));
        assert!(b.time.starts_with(posted), "{media}: {}", b.time);
    }
}

#[test]
fn the_sign_bit_of_64_bit_layouts() {
    // Instagram's 41 time bits reach bit 63, the sign of Postgres' bigint:
    // only 40 of them can be 1 in a non-negative ID.
    let l = Layout::INSTAGRAM;
    assert!(!l.has_sign_bit());
    assert_eq!(l.max_timestamp_ms(), 1314220021721 + (1 << 40) - 1);
    assert_eq!(
        l.decode(SnowflakeId::MAX).timestamp_ms,
        l.max_timestamp_ms()
    );
    let err = l.compose(l.max_timestamp_ms() + 1, 0, 0, 0).unwrap_err();
    assert_eq!(err.field(), Field::Timestamp);
    assert!(
        err.to_string().contains("2046-06-27T17:00:49.496Z"),
        "{err}"
    );
    // Mastodon: 48 bits of Unix ms, of which 47 fit.
    assert_eq!(Layout::MASTODON.max_timestamp_ms(), (1 << 47) - 1);
    // Layouts with their own sign bit show it as the first segment.
    assert_eq!(
        Layout::SONYFLAKE.breakdown(SnowflakeId::MAX).segments[0].name,
        "sign"
    );
}

#[test]
fn sonyflake_source_formula() {
    // sony/sonyflake v1, sonyflake.go: the start time defaults to
    // 2014-09-01 00:00:00 UTC, the time unit is 1e7 ns (10 ms), and
    // `Compose` returns
    // `elapsedTime<<(BitLenSequence+BitLenMachineID) | sequence<<BitLenMachineID | machineID`
    // with BitLenTime = 39, BitLenSequence = 8, BitLenMachineID = 16.
    let start = ms("2014-09-01T00:00:00Z") / 10;
    let t = ms("2024-01-01T00:00:00.015Z");
    let elapsed = t / 10 - start;
    let (sequence, machine) = (3u64, 0x7F7F_u64);
    let raw = (elapsed << (8 + 16)) | (sequence << 16) | machine;

    let l = Layout::by_name("sonyflake").unwrap();
    assert_eq!(l.epoch_ms(), ms("2014-09-01T00:00:00Z"));
    assert_eq!(l.compose(t, 0, machine, sequence).unwrap().get(), raw);
    let p = l.decode(id(raw));
    // Decompose gives the time in units; the unit's first millisecond.
    assert_eq!(p.timestamp_ms, ms("2024-01-01T00:00:00.010Z"));
    assert_eq!((p.worker, p.sequence), (machine, sequence));
    let b = l.breakdown(id(raw));
    let segs: Vec<(&str, u32, u64)> = b
        .segments
        .iter()
        .map(|s| (s.label.as_str(), s.bits, s.value))
        .collect();
    assert_eq!(
        segs,
        [
            ("sign", 1, 0),
            ("timestamp", 39, elapsed),
            ("sequence", 8, sequence),
            ("machine", 16, machine),
        ]
    );
    // `NextID` errors once `elapsedTime >= 1<<BitLenTime`; the README says
    // about 174 years.
    let last = l.max_timestamp_ms();
    assert_eq!(last, ms("2014-09-01T00:00:00Z") + ((1 << 39) - 1) * 10 + 9);
    assert_eq!((last - l.epoch_ms()) / (1000 * 3600 * 24 * 365), 174);
}

#[test]
fn mastodon_documented_status() {
    // docs.joinmastodon.org, Entities > Status, example: id
    // "103270115826048975", created_at "2019-12-08T03:48:33.901Z". The ID
    // is minted by the database (`timestamp_id`, lib/mastodon/snowflake.rb)
    // and created_at by the application, so they agree to the second, not
    // to the millisecond.
    let b = Layout::MASTODON.breakdown(id(103270115826048975));
    assert!(b.time.starts_with("2019-12-08T03:48:33."), "{}", b.time);
    let created = ms("2019-12-08T03:48:33.901Z");
    assert!(b.timestamp_ms <= created && created - b.timestamp_ms < 1000);
    assert_eq!((b.datacenter, b.worker), (0, 0));
    let segs: Vec<(&str, &str, u32)> = b
        .segments
        .iter()
        .map(|s| (s.name.as_str(), s.label.as_str(), s.bits))
        .collect();
    assert_eq!(
        segs,
        [
            ("timestamp", "timestamp", 48),
            ("sequence_data", "sequence data", 16)
        ]
    );
}

#[test]
fn mastodon_id_at_formula() {
    // lib/mastodon/snowflake.rb, `id_at(timestamp, with_random: false)`:
    // `id = timestamp.to_i * 1000; id = id << 16`.
    let t = ms("2024-01-01T00:00:00Z");
    let raw = (t / 1000 * 1000) << 16;
    let p = Layout::MASTODON.decode(id(raw));
    assert_eq!((p.timestamp_ms, p.sequence), (t, 0));
    assert_eq!(Layout::MASTODON.min_id_at(t).unwrap().get(), raw);
    // The "2 bytes (16 bits) of sequence data" are the low 16 bits.
    assert_eq!(Layout::MASTODON.decode(id(raw | 0xBEEF)).sequence, 0xBEEF);
}

#[test]
fn names_and_lookup() {
    assert_eq!(
        Layout::PRESET_NAMES,
        ["twitter", "discord", "instagram", "sonyflake", "mastodon"]
    );
    for (name, layout) in Layout::PRESET_NAMES.into_iter().zip(Layout::PRESETS) {
        assert_eq!(Layout::by_name(name), Some(layout));
        assert_eq!(Layout::by_name(&name.to_uppercase()), Some(layout));
        assert_eq!(layout.name(), name);
    }
    assert_eq!(Layout::by_name("flickr"), None);
    assert_eq!(Layout::default(), Layout::TWITTER);
}
