//! JSON Schema of the wire types, generated from the code. `schema/` in the repository
//! holds the output; a test fails when the two drift apart.

use schemars::{schema_for, Schema};

use crate::{Event, Op, OpResult, Submission};

/// Every root type with the file name its schema is written to.
pub fn all() -> Vec<(&'static str, Schema)> {
    vec![
        ("Submission.json", schema_for!(Submission)),
        ("Op.json", schema_for!(Op)),
        ("OpResult.json", schema_for!(OpResult)),
        ("Event.json", schema_for!(Event)),
        ("Script.json", schema_for!(crate::script::Script)),
    ]
}

/// The schema files as pretty JSON text, ending with a newline.
pub fn rendered() -> Vec<(&'static str, String)> {
    all()
        .into_iter()
        .map(|(name, schema)| (name, render(schema)))
        .collect()
}

/// A schema as pretty JSON text ending with a newline, the same whether or not another
/// crate in the build turned on serde_json's `preserve_order` (the ACP SDK does): every
/// map is sorted, as it is without that feature; schemars orders the keywords itself.
pub fn render(schema: Schema) -> String {
    let mut value = schema.to_value();
    value.sort_all_objects();
    let schema = Schema::try_from(value).unwrap_or_else(|e| {
        let mut s = Schema::default();
        s.insert("error".into(), e.to_string().into());
        s
    });
    let mut text =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    text.push('\n');
    text
}
