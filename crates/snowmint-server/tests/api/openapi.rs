//! `GET /api/v1/openapi.json`: the document against what the API answers.

use crate::support::*;

/// The OpenAPI schemas of the ID object and its segments name exactly the
/// keys the API serializes (the documentation types are written by hand
/// beside the core's types, so this is what keeps them in step), and mark
/// every one of them required.
#[tokio::test]
async fn the_openapi_breakdown_schema_has_the_serialized_keys() {
    let h = harness();
    let (status, doc) = json(&h.state, "GET", "/api/v1/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let breakdown = serde_json::to_value(
        snowmint::compose(1288834975657, 1, 1, 0)
            .unwrap()
            .breakdown(),
    )
    .unwrap();
    let keys = |v: &Value| -> std::collections::BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    };
    let listed = |v: &Value| -> std::collections::BTreeSet<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("not a list: {v}"))
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .collect()
    };
    let schemas = &doc["components"]["schemas"];
    let segment_schema = &schemas["SegmentDoc"];
    let lab =
        serde_json::to_value(snowmint::LayoutReport::new(&snowmint::Layout::TWITTER, 0)).unwrap();
    let detection = serde_json::to_value(snowmint::detect(
        &[snowmint::SnowflakeId::new(4194439168).unwrap()],
        &[],
        REFERENCE_MS,
    ))
    .unwrap();
    let span = serde_json::to_value(
        snowmint::Layout::TWITTER
            .span(1704067200000, 1706745600000)
            .unwrap(),
    )
    .unwrap();
    for (schema, serialized) in [
        (&schemas["Breakdown"], &breakdown),
        (segment_schema, &breakdown["segments"][0]),
        (&schemas["Range"], &span),
        (&schemas["LayoutLab"], &lab),
        (&schemas["FieldDoc"], &lab["fields"][0]),
        (&schemas["Detection"], &detection),
        (&schemas["CandidateDoc"], &detection["candidates"][0]),
    ] {
        assert_eq!(keys(&schema["properties"]), keys(serialized), "{schema}");
        assert_eq!(listed(&schema["required"]), keys(serialized), "{schema}");
    }
    // The parameters a user picks a layout and a span by are documented.
    let params = |path: &str| -> Vec<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(params("/api/v1/decode/{id}"), ["id", "from", "layout"]);
    assert_eq!(params("/api/v1/range"), ["from", "to", "layout"]);
    // And the compose route answers that very object.
    let (_, composed) = get(&h.state, REFERENCE_COMPOSE).await;
    assert_eq!(composed, breakdown);
}

/// The parameters are as strict as the handlers, with numbers and names
/// from the core: required where a missing value is an error, optional where
/// it has a default; ranges, enums, readable tags, and `Retry-After` where
/// the server sends it.
#[tokio::test]
async fn the_openapi_parameters_are_as_strict_as_the_handlers() {
    use snowmint::{Encoding, Field, Layout};
    let h = harness();
    let (_, doc) = json(&h.state, "GET", "/api/v1/openapi.json").await;
    let param = |method: &str, path: &str, name: &str| -> Value {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{method} {path}: no parameter {name}"))
            .clone()
    };
    let range = |field: Field| {
        let (min, max) = Layout::TWITTER.range(field);
        (json!(min), json!(max))
    };
    let bounds = |schema: &Value| (schema["minimum"].clone(), schema["maximum"].clone());
    // Integers: required as the handlers require them, in the core's ranges.
    for (method, path, name, field, required) in [
        (
            "get",
            "/api/v1/compose",
            "datacenter",
            Field::Datacenter,
            true,
        ),
        ("get", "/api/v1/compose", "worker", Field::Worker, true),
        ("get", "/api/v1/compose", "sequence", Field::Sequence, true),
        ("post", "/api/v1/ids", "count", Field::Count, false),
    ] {
        let p = param(method, path, name);
        assert_eq!(p["required"], json!(required), "{p}");
        assert_eq!(p["schema"]["type"], "integer", "{p}");
        assert_eq!(bounds(&p["schema"]), range(field), "{p}");
    }
    assert_eq!(
        bounds(&param("post", "/api/v1/ids", "count")["schema"]),
        (json!(1), json!(snowmint::MAX_BATCH))
    );
    // Times: optional (missing is now, or `from`), Unix ms in the format's
    // range, `now` or ISO-8601.
    for (path, name) in [
        ("/api/v1/compose", "timestamp"),
        ("/api/v1/range", "from"),
        ("/api/v1/range", "to"),
    ] {
        let p = param("get", path, name);
        assert_eq!(p["required"], json!(false), "{p}");
        assert_eq!(p["allowEmptyValue"], json!(true), "{p}");
        let forms = p["schema"]["oneOf"].as_array().unwrap();
        assert_eq!(forms[0]["type"], "integer");
        assert_eq!(bounds(&forms[0]), range(Field::Timestamp));
        assert_eq!(forms[1]["enum"], json!(["now"]));
        assert_eq!(forms[2]["type"], "string");
        assert!(forms[2]["pattern"].is_string());
    }
    // Names: the core's lists, optional with the default named.
    let encodings: Vec<&str> = Encoding::ALL.iter().map(|e| e.name()).collect();
    let from = param("get", "/api/v1/decode/{id}", "from");
    assert_eq!(from["schema"]["enum"], json!(encodings));
    assert_eq!(from["schema"]["default"], "decimal");
    assert_eq!(from["required"], json!(false));
    assert_eq!(from["allowEmptyValue"], json!(true));
    for path in [
        "/api/v1/decode/{id}",
        "/api/v1/range",
        "/api/v1/layout",
        "/api/v1/detect",
    ] {
        let layout = param("get", path, "layout");
        assert_eq!(
            layout["schema"]["anyOf"][0]["enum"],
            json!(Layout::PRESET_NAMES)
        );
        // Its example specs are valid ones.
        for spec in layout["schema"]["anyOf"][1]["examples"].as_array().unwrap() {
            Layout::parse(spec.as_str().unwrap()).unwrap();
        }
        assert_eq!(layout["schema"]["default"], "twitter");
        assert_eq!(layout["required"], json!(false));
        // Each layout's span of times, for a range read in it.
        for l in Layout::PRESETS {
            let (min, max) = l.range(Field::Timestamp);
            assert_eq!(
                layout["schema"]["x-time-span-ms"][l.name()],
                json!([min, max])
            );
        }
    }
    // What `allowEmptyValue` promises: an empty optional value is read as
    // a missing one.
    for uri in [
        "/api/v1/compose?timestamp=&datacenter=1&worker=1&sequence=0",
        "/api/v1/decode/4194439168?from=&layout=",
        "/api/v1/range?from=&to=&layout=",
    ] {
        assert_eq!(json(&h.state, "GET", uri).await.0, StatusCode::OK, "{uri}");
    }
    assert_eq!(
        json(&h.state, "POST", "/api/v1/ids?count=").await.0,
        StatusCode::OK
    );
    // The ID: required, one form per `from` value.
    let id = param("get", "/api/v1/decode/{id}", "id");
    assert_eq!(id["required"], json!(true));
    let titles: Vec<&str> = id["schema"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, encodings);
    // Readable tags, declared with a description.
    let declared: Vec<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let tags = operation["tags"].as_array().unwrap();
            assert_eq!(tags.len(), 1, "{method} {path}");
            assert!(
                declared.contains(&tags[0].as_str().unwrap()),
                "{method} {path}"
            );
        }
    }
    // Every error answer is the one shape; 429 and 503 of a mint say when
    // to come back.
    let mint = &doc["paths"]["/api/v1/ids"]["post"]["responses"];
    for status in ["400", "401", "403", "413", "429", "503"] {
        assert_eq!(
            mint[status]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/ErrorBody",
            "{status}"
        );
    }
    for status in ["429", "503"] {
        assert!(
            mint[status]["headers"]["Retry-After"].is_object(),
            "{status}"
        );
    }
    // The two routes a token guards say so, with the challenge header.
    let metrics = &doc["paths"]["/metrics"]["get"]["responses"];
    for responses in [mint, metrics] {
        assert!(
            responses["401"]["headers"]["WWW-Authenticate"].is_object(),
            "{responses}"
        );
    }
}
