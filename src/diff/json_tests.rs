use serde_json::Value as Json;

use super::*;
use crate::diff::fail_on::{Condition, MissingStatistics, evaluate};
use crate::diff::fixture;

fn schema() -> Json {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/diff-report.schema.json");
    let text = std::fs::read_to_string(path).expect("docs/diff-report.schema.json");
    serde_json::from_str(&text).expect("the schema is JSON")
}

/// The published schema made strict: every object it describes allows only the properties it
/// lists. The published one allows more (later versions may add fields); ours must not emit
/// a field the schema does not describe.
fn strict(mut schema: Json) -> Json {
    fn tighten(v: &mut Json) {
        match v {
            Json::Object(o) => {
                if o.contains_key("properties") {
                    o.insert("additionalProperties".to_string(), Json::Bool(false));
                }
                o.values_mut().for_each(tighten);
            }
            Json::Array(a) => a.iter_mut().for_each(tighten),
            _ => {}
        }
    }
    tighten(&mut schema);
    schema
}

/// `doc`'s complaints under `schema`, from an independent implementation (the `jsonschema`
/// crate, draft 2020-12).
fn complaints(schema: &Json, doc: &Json) -> Vec<String> {
    jsonschema::meta::validate(schema).expect("the schema is a valid draft 2020-12 schema");
    let validator = jsonschema::draft202012::new(schema).expect("compile the schema");
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The strict schema's complaints about `doc`.
fn errors(doc: &Json) -> Vec<String> {
    complaints(&strict(schema()), doc)
}

fn document(stats: bool, conditions: &[&str], missing: MissingStatistics) -> Json {
    let r = fixture::report(stats);
    let conditions: Vec<Condition> = conditions
        .iter()
        .map(|c| Condition::parse(c).expect("parse"))
        .collect();
    let e = evaluate(&r, &conditions, missing).expect("evaluate");
    let text = render(&r, "process_cpu {} around \"v2\"", 3, &e);
    serde_json::from_str(&text).expect("the output is JSON")
}

#[test]
fn documents_follow_the_schema() {
    let cases = [
        (
            true,
            vec!["total>5%", "function=~beta>10%", "cum=~alpha>0%"],
            MissingStatistics::Error,
        ),
        (true, vec![], MissingStatistics::Error),
        (false, vec!["total>5%"], MissingStatistics::Estimates),
        (false, vec!["total>5%"], MissingStatistics::Skip),
        (false, vec![], MissingStatistics::Error),
    ];
    for (stats, conditions, missing) in cases {
        let doc = document(stats, &conditions, missing);
        assert_eq!(errors(&doc), Vec::<String>::new(), "{doc:#}");
    }
}

#[test]
fn the_schema_rejects_what_it_should() {
    // The validation can fail: each of these breaks one promise of the schema.
    let doc = document(true, &["total>5%"], MissingStatistics::Error);
    type Breakage = (&'static str, fn(&mut Json));
    let breakages: [Breakage; 6] = [
        ("unknown version", |d| d["schema_version"] = 2.into()),
        ("verdict spelling", |d| {
            d["rows"][0]["flat"]["stats"]["verdict"] = "Increase".into()
        }),
        ("interval of three", |d| {
            d["total"]["stats"]["interval"] = serde_json::json!([1, 2, 3])
        }),
        ("missing field", |d| {
            d["before"].as_object_mut().map(|o| o.remove("instances"));
        }),
        ("extra field", |d| d["after"]["extra"] = true.into()),
        ("exit code", |d| d["exit_code"] = 1.into()),
    ];
    for (what, break_it) in breakages {
        let mut broken = doc.clone();
        break_it(&mut broken);
        assert!(!errors(&broken).is_empty(), "{what}: accepted");
    }
}

#[test]
fn the_published_schema_lets_later_versions_add_fields() {
    // The promise "new fields do not bump schema_version" holds only if a consumer validating
    // with the published schema accepts them; the strict copy (the tests') does not.
    let mut doc = document(true, &["total>5%"], MissingStatistics::Error);
    doc["added_later"] = true.into();
    doc["rows"][0]["flat"]["added_later"] = 1.into();
    doc["fail_on"]["conditions"][0]["triggers"][0]["added_later"] = "x".into();
    assert_eq!(complaints(&schema(), &doc), Vec::<String>::new());
    assert_eq!(errors(&doc).len(), 3, "{:?}", errors(&doc));
}

#[test]
fn the_document_carries_the_report_and_the_verdict() {
    let doc = document(
        true,
        &["total>5%", "function=~alpha>0%"],
        MissingStatistics::Error,
    );
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["measure"], "per_second");
    assert_eq!(doc["functions"], 5);
    assert_eq!(doc["rows"].as_array().map(Vec::len), Some(3), "--top 3");
    assert_eq!(doc["rows"][1]["function"], "main.beta");
    assert_eq!(doc["rows"][1]["flat"]["change_pct"], Json::Null, "new");
    assert_eq!(doc["rows"][1]["flat"]["stats"]["verdict"], "increase");
    assert_eq!(doc["total"]["change_pct"], 20.0);
    assert_eq!(
        doc["total"]["stats"]["pct_interval"],
        serde_json::json!([18.0, 22.0])
    );
    assert_eq!(doc["statistics"]["method"], "welch");
    assert_eq!(doc["fail_on"]["basis"], "statistics");
    assert_eq!(doc["fail_on"]["held"], true);
    assert_eq!(doc["exit_code"], 3);
    let conditions = &doc["fail_on"]["conditions"];
    assert_eq!(conditions[0]["held"], true);
    assert_eq!(conditions[0]["triggers"][0]["value"], "total");
    assert_eq!(conditions[0]["triggers"][0]["function"], Json::Null);
    assert_eq!(conditions[1]["held"], false);
    assert_eq!(conditions[1]["triggers"], serde_json::json!([]));

    let plain = document(false, &[], MissingStatistics::Error);
    assert_eq!(plain["statistics"], Json::Null);
    assert_eq!(plain["rows"][0]["flat"]["stats"], Json::Null);
    assert_eq!(plain["fail_on"]["basis"], "not_evaluated");
    assert_eq!(plain["exit_code"], 0);
}

#[test]
fn numbers_that_are_not_finite_are_null() {
    let mut r = fixture::report(true);
    r.rows[0].flat_after = f64::NAN;
    if let Some(s) = r.total_stats.as_mut() {
        s.interval = (f64::NEG_INFINITY, 3.0);
    }
    let e = evaluate(&r, &[], MissingStatistics::Error).expect("evaluate");
    let doc: Json = serde_json::from_str(&render(&r, "t", 0, &e)).expect("JSON");
    assert_eq!(doc["rows"][0]["flat"]["after"], Json::Null);
    assert_eq!(
        doc["total"]["stats"]["interval"],
        serde_json::json!([null, 3.0])
    );
    assert_eq!(errors(&doc), Vec::<String>::new());
}
