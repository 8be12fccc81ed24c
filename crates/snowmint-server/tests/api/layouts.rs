//! Other layouts on every route (presets and specs), the layout lab (`GET /api/v1/layout`) and `GET /api/v1/detect`.

use crate::support::Says::*;
use crate::support::*;

#[tokio::test]
async fn decode_in_other_layouts() {
    let h = harness();
    // Discord developer docs, Snowflakes: 175928847299117063 is
    // 2016-04-30T11:18:25.796Z, internal worker 1, process 0, increment 7.
    let (status, v) = get(&h.state, "/api/v1/decode/175928847299117063?layout=discord").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(
        (&v["datacenter"], &v["worker"], &v["sequence"]),
        (&json!(1), &json!(0), &json!(7))
    );
    // "Sharding & IDs at Instagram": 1387263000 ms since 1314220021721,
    // shard 1341, sequence 5001 % 1024, as `ms << 23 | shard << 10 | seq`.
    let instagram = (1387263000u64 << 23) | (1341 << 10) | (5001 % 1024);
    let (_, v) = get(
        &h.state,
        &format!("/api/v1/decode/{instagram}?layout=instagram"),
    )
    .await;
    assert_eq!(v["timestamp_ms"], 1314220021721u64 + 1387263000);
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(1341), &json!(905)));
    assert_eq!(
        v["segments"][0],
        json!({"name": "timestamp", "bits": 41, "value": 1387263000, "binary": format!("{:041b}", 1387263000u64)})
    );
    // sony/sonyflake: `elapsed << 24 | sequence << 16 | machine`, elapsed
    // in 10 ms units since 2014-09-01T00:00:00Z.
    let elapsed = (1704067200000u64 - 1409529600000) / 10;
    let sony = (elapsed << 24) | (3 << 16) | 0x7F7F;
    let (_, v) = get(&h.state, &format!("/api/v1/decode/{sony}?layout=sonyflake")).await;
    assert_eq!(v["time"], "2024-01-01T00:00:00.000Z");
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(0x7F7F), &json!(3)));
    assert_eq!(
        segment_names(&v),
        ["sign", "timestamp", "sequence", "machine"]
    );
    // docs.joinmastodon.org, Status example: 103270115826048975 created
    // 2019-12-08T03:48:33.901Z (the ID is stamped apart, same second).
    let (_, v) = get(
        &h.state,
        "/api/v1/decode/103270115826048975?layout=MASTODON",
    )
    .await;
    assert!(
        v["time"]
            .as_str()
            .unwrap()
            .starts_with("2019-12-08T03:48:33."),
        "{v}"
    );
    // Every layout answers the same keys as the contract's object.
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&v), keys(&reference_object()));
    // Twitter by default and by name.
    let (_, v) = json(&h.state, "GET", "/api/v1/decode/4194439168?layout=twitter").await;
    assert_eq!(v, reference_object());
    let msg = refused(&h.state, "/api/v1/decode/1?layout=flickr", "layout").await;
    assert_eq!(msg, FLICKR);
}

const DISCORD_SPEC: &str =
    "epoch%3D1420070400000%3Bfields%3Dtimestamp%3A42%2Cworker%3A5%2Cprocess%3A5%2Cincrement%3A12";

const SONYFLAKE_SPEC: &str = "epoch%3D2014-09-01T00%3A00%3A00Z%3Bunit%3D10ms%3Bfields%3Dtimestamp%3A39%2Csequence%3A8%2Cmachine%3A16";

#[tokio::test]
async fn a_spec_answers_as_the_preset_it_spells_out() {
    let h = harness();
    for (spec, preset) in [(DISCORD_SPEC, "discord"), (SONYFLAKE_SPEC, "sonyflake")] {
        for uri in [
            "/api/v1/decode/175928847299117063?layout=",
            "/api/v1/range?from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:00Z&layout=",
            "/api/v1/layout?layout=",
        ] {
            let (s1, a) = json(&h.state, "GET", &format!("{uri}{spec}")).await;
            let (s2, b) = json(&h.state, "GET", &format!("{uri}{preset}")).await;
            assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK), "{uri}: {a} {b}");
            assert_eq!(a, b, "{uri}");
        }
    }
}

#[tokio::test]
async fn compose_in_another_layout_takes_its_field_names() {
    let h = harness();
    // Discord's documented example.
    let uri =
        "/api/v1/compose?layout=discord&timestamp=1462015105796&worker=1&process=0&increment=7";
    let (status, v) = json(&h.state, "GET", uri).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["id"], "175928847299117063");
    assert_eq!(
        segment_names(&v),
        ["timestamp", "worker", "process", "increment"]
    );
    let (_, decoded) = get(&h.state, "/api/v1/decode/175928847299117063?layout=discord").await;
    assert_eq!(v, decoded);
    let spelled_out = uri.replace("layout=discord", &format!("layout={DISCORD_SPEC}"));
    let (_, spelled) = get(&h.state, &spelled_out).await;
    assert_eq!(v, spelled);
    // Errors name the parameter at fault.
    let base = "/api/v1/compose?layout=discord&timestamp=1462015105796";
    let sonyflake = "/api/v1/compose?layout=sonyflake&timestamp=1409529599999&machine=1&sequence=0";
    let cases = [
        (
            format!("{base}&worker=1&process=32&increment=7"),
            "process",
            Is("process must be 0..=31, got 32"),
        ),
        (
            format!("{base}&worker=1&increment=7"),
            "process",
            Is("process is missing: this layout needs worker, process and increment"),
        ),
        (
            format!("{base}&datacenter=1&worker=1&process=0&increment=7"),
            "datacenter",
            Is(
                "datacenter is not a field of this layout; its fields are worker, process and increment",
            ),
        ),
        (
            sonyflake.to_owned(),
            "timestamp",
            Starts("timestamp must be 1409529600000..="),
        ),
    ];
    refusals(&h.state, "GET", &cases).await;
    // A custom layout of one's own.
    let spec = "epoch%3D2020-01-01%3Bfields%3Dtimestamp%3A41%2Cmachine%3A10%2Cseq%3A12";
    let own = format!("/api/v1/compose?layout={spec}&timestamp=1577836801000&machine=1023&seq=1");
    let (status, v) = get(&h.state, &own).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["id"], ((1000u64 << 22) | (1023 << 12) | 1).to_string());
    assert_eq!((&v["worker"], &v["sequence"]), (&json!(1023), &json!(1)));
}

#[tokio::test]
async fn bad_specs_are_400_naming_layout() {
    let h = harness();
    let cases = [
        (
            "epoch%3D0%3Bfields%3Dtimestamp%3A41%2Cw%3A10%2Cs%3A14",
            "the widths add up to 65 bits, more than 64",
        ),
        ("epoch%3D0%3Bfields%3Dw%3A10", "no field is named timestamp"),
        (
            "epoch%3D0%3Bunit%3D0ms%3Bfields%3Dtimestamp%3A41",
            "the time unit must be at least 1 ms",
        ),
        ("fields%3Dtimestamp%3A41", "the epoch is missing"),
        (
            "epoch%3D0%3Bfields%3Dtimestamp%3A41%2CBad%3A3",
            "the field name \"Bad\" must be",
        ),
        ("flickr", "\"flickr\" is neither a preset"),
        // Whitespace is not "no layout" (only a missing or empty one is
        // the default), as for `count`.
        ("%20", "empty: give a preset"),
        ("%0A", "empty: give a preset"),
        ("%09%0D", "empty: give a preset"),
    ];
    for (spec, want) in cases {
        for uri in [
            format!("/api/v1/decode/5?layout={spec}"),
            format!("/api/v1/range?from=now&layout={spec}"),
            format!("/api/v1/compose?layout={spec}&worker=1"),
            format!("/api/v1/layout?layout={spec}"),
            format!("/api/v1/detect?ids=5&layout={spec}"),
            format!("/api/v1/sql?dialect=postgres&layout={spec}"),
        ] {
            let msg = refused(&h.state, &uri, "layout").await;
            assert!(
                msg.starts_with("invalid layout: ") && msg.contains(want),
                "{uri}: {msg}"
            );
        }
    }
    // A narrow layout refuses IDs with bits above its fields.
    let narrow = "epoch%3D0%3Bfields%3Dtimestamp%3A30%2Cnode%3A10";
    let msg = refused(
        &h.state,
        &format!("/api/v1/decode/1099511627776?layout={narrow}"),
        "id",
    )
    .await;
    assert!(msg.ends_with("bits above the layout's 40 are set"), "{msg}");
}

#[tokio::test]
async fn the_layout_lab_and_detect() {
    let h = harness();
    let (status, v) = json(&h.state, "GET", "/api/v1/layout").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["layout"], "twitter");
    assert_eq!(v["end"], "2080-07-10T17:30:30.208Z");
    assert_eq!(v["js_safe_until"], "2010-11-28T22:14:18.304Z");
    assert_eq!(v["ids_per_unit"], 4194304);
    assert_eq!(v["now_ms"], REFERENCE_MS);
    // A 10 ms unit against the formula (see the core's lab tests).
    let (_, v) = json(&h.state, "GET", "/api/v1/layout?layout=epoch%3D2020-01-01%3Bunit%3D10ms%3Bfields%3Dtimestamp%3A40%2Cnode%3A8%2Cstep%3A15").await;
    let epoch = 1577836800000u64;
    assert_eq!(v["end_ms"], epoch + ((1u64 << 40) - 1) * 10 + 9);
    assert_eq!(v["js_safe_until_ms"], epoch + ((1u64 << 30) - 1) * 10 + 9);

    // "Now" is the reference time, 2010: one Twitter ID of that second.
    let (status, v) = json(&h.state, "GET", "/api/v1/detect?ids=4194439168,4194439169").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["candidates"][0]["layout"], "twitter", "{v}");
    let keys: Vec<&str> = v["candidates"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 5, "{keys:?}");
    // Discord's epoch is after "now": its times would be in the future.
    let discord = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["layout"] == "discord")
        .unwrap();
    assert!(
        discord["why"].as_str().unwrap().contains("in the future"),
        "{discord}"
    );
    let many = format!("/api/v1/detect?ids={}", vec!["1"; 1001].join(","));
    let cases = [
        ("/api/v1/detect", "ids", Has(&["got none"])),
        (
            "/api/v1/detect?ids=5,x",
            "ids",
            Starts("ids: item 2: id must be"),
        ),
        (many.as_str(), "ids", Ends("got 1001")),
    ];
    refusals(&h.state, "GET", &cases).await;
}
