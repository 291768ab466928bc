//! Every method of the typed table (`rein_app_server_protocol::client_methods`) against
//! Codex 0.169's schema (`tests/fixtures/codex-schema/`), both ways:
//!
//! - client → rein: what a Codex client sends decodes into rein's params type (every field
//!   rein requires is one Codex requires; every field rein reads is one Codex defines, of a
//!   JSON type rein accepts);
//! - rein → client: rein's answer is what a Codex client reads (every field Codex requires
//!   is one rein sends; every field rein sends is one Codex defines, of a type Codex allows).
//!
//! Methods Codex serves without publishing them, and rein's own, must indeed be absent from
//! Codex's schema. And the real server serves exactly the table: no table method answers
//! -32601.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use rein_app_server_protocol::{client_methods, MethodSpec, Origin};
use rein_test_support::app_server::{home_for, AppServer, MockModel};
use serde_json::{json, Value};

fn fixture(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/codex-schema")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Fields rein sends beyond Codex's, each an addition its doc explains: Codex clients
/// ignore fields they do not know.
const REIN_ADDITIONS: &[(&str, &str)] = &[
    ("initialize", "reinSandbox"),
    // The skills the model opened itself (docs/skills.md); `ThreadResponse` answers all three.
    ("thread/read", "reinSkillsUsed"),
    ("thread/unarchive", "reinSkillsUsed"),
    ("thread/rollback", "reinSkillsUsed"),
];

/// Params rein reads beyond Codex's, each an addition its doc explains: Codex clients
/// never send them, so they change nothing for them.
const REIN_PARAM_ADDITIONS: &[(&str, &str)] = &[
    ("thread/goal/set", "autoResume"),
    ("thread/goal/set", "criteria"),
];

/// Codex's params schema of each method in `ClientRequest.json` (`None`: no params).
fn codex_params(client_request: &Value) -> BTreeMap<String, Option<Value>> {
    let defs = &client_request["definitions"];
    let mut out = BTreeMap::new();
    for variant in client_request["oneOf"].as_array().unwrap() {
        let method = variant["properties"]["method"]["enum"][0]
            .as_str()
            .unwrap()
            .to_owned();
        let params = &variant["properties"]["params"];
        let schema = params
            .get("$ref")
            .and_then(Value::as_str)
            .map(|r| defs[r.trim_start_matches("#/definitions/")].clone());
        out.insert(method, schema);
    }
    out
}

/// Codex's answer schema, by its definition name (the file it is published in).
fn codex_response(name: &str) -> Value {
    match name {
        "InitializeResponse" => fixture("v1/InitializeResponse.json"),
        "FuzzyFileSearchResponse" => fixture("FuzzyFileSearchResponse.json"),
        _ => fixture(&format!("v2/{name}.json")),
    }
}

/// The object's properties and its required ones.
fn shape(schema: &Value) -> (BTreeMap<String, Value>, BTreeSet<String>) {
    let props = schema["properties"]
        .as_object()
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let required = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (props, required)
}

/// The JSON types a property schema names directly (`type`), if it names them only so;
/// `integer` counts as a `number`.
fn types(schema: &Value) -> Option<BTreeSet<String>> {
    let names: Vec<&str> = match schema.get("type")? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    Some(
        names
            .into_iter()
            .map(|t| if t == "integer" { "number" } else { t }.to_owned())
            .collect(),
    )
}

/// Differences between rein's params of `spec` and Codex's.
fn params_drift(spec: &MethodSpec, codex: Option<&Value>) -> Vec<String> {
    let rein = (spec.params_schema)().to_value();
    let (rein_props, rein_required) = shape(&rein);
    let empty = json!({});
    let (codex_props, codex_required) = shape(codex.unwrap_or(&empty));
    let mut drift = Vec::new();
    for field in rein_required.difference(&codex_required) {
        drift.push(format!(
            "rein requires `{field}`, Codex clients may omit it"
        ));
    }
    for (field, schema) in &rein_props {
        if REIN_PARAM_ADDITIONS.contains(&(spec.method, field.as_str())) {
            continue;
        }
        let Some(theirs) = codex_props.get(field) else {
            drift.push(format!("rein reads `{field}`, which Codex does not define"));
            continue;
        };
        if let (Some(ours), Some(theirs)) = (types(schema), types(theirs)) {
            if !theirs.is_subset(&ours) {
                drift.push(format!(
                    "`{field}`: Codex sends {theirs:?}, rein reads {ours:?}"
                ));
            }
        }
    }
    drift
}

/// Differences between rein's answer of `spec` and Codex's `codex`.
fn response_drift(spec: &MethodSpec, codex: &Value) -> Vec<String> {
    let rein = (spec.response_schema)().to_value();
    let (rein_props, _) = shape(&rein);
    let (codex_props, codex_required) = shape(codex);
    let mut drift = Vec::new();
    for field in &codex_required {
        if !rein_props.contains_key(field) {
            drift.push(format!("Codex requires `{field}`, rein never sends it"));
        }
    }
    for (field, schema) in &rein_props {
        if REIN_ADDITIONS.contains(&(spec.method, field.as_str())) {
            continue;
        }
        let Some(theirs) = codex_props.get(field) else {
            drift.push(format!("rein sends `{field}`, which Codex does not define"));
            continue;
        };
        if let (Some(ours), Some(theirs)) = (types(schema), types(theirs)) {
            if !ours.is_subset(&theirs) {
                drift.push(format!(
                    "`{field}`: rein sends {ours:?}, Codex allows {theirs:?}"
                ));
            }
        }
    }
    drift
}

#[test]
fn every_method_of_the_table_matches_codex_schema_both_ways() {
    let codex = codex_params(&fixture("ClientRequest.json"));
    let mut drift = Vec::new();
    let mut seen = BTreeSet::new();
    for spec in client_methods() {
        assert!(
            seen.insert(spec.method),
            "{} is twice in the table",
            spec.method
        );
        let published = codex.get(spec.method);
        match spec.origin {
            Origin::Codex { response } => {
                let Some(params) = published else {
                    drift.push(format!(
                        "{}: not in Codex's ClientRequest.json",
                        spec.method
                    ));
                    continue;
                };
                for d in params_drift(&spec, params.as_ref()) {
                    drift.push(format!(
                        "{} params ({}): {d}",
                        spec.method, spec.params_type
                    ));
                }
                for d in response_drift(&spec, &codex_response(response)) {
                    let ty = spec.response_type;
                    drift.push(format!("{} answer ({ty} vs {response}): {d}", spec.method));
                }
            }
            Origin::CodexUnpublished | Origin::CodexDropped => {
                if published.is_some() {
                    drift.push(format!("{}: Codex publishes it now", spec.method));
                }
            }
            Origin::Rein => {
                assert!(spec.method.starts_with("rein/"), "{}", spec.method);
                assert!(published.is_none(), "{}", spec.method);
            }
        }
    }
    assert!(
        drift.is_empty(),
        "drift from Codex's schema:\n{}",
        drift.join("\n")
    );
}

#[test]
fn the_server_serves_every_method_of_the_table() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let mut server = AppServer::start(home.path(), &[]);
    let init = server.call(
        "initialize",
        json!({"clientInfo": {"name": "drift", "version": "1"},
               "capabilities": {"experimentalApi": true}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    for spec in client_methods() {
        // Params of the wrong type: every method answers (an error naming the problem, or
        // an answer for those that read nothing), none is unknown.
        let answer = server.call(spec.method, json!({ "threadId": 5 }));
        let code = answer["error"]["code"].as_i64();
        assert_ne!(
            code,
            Some(-32601),
            "{} is not served: {answer}",
            spec.method
        );
    }
}
