//! The checked-in schema of the app-server messages in `schema/app-server/` must be what
//! the code generates (`rein app-server generate-json-schema` writes the same files).
//! After an intended change, regenerate with
//! `cargo run -p rein-cli -- app-server generate-json-schema --out schema/app-server`.

use std::path::PathBuf;

#[test]
fn checked_in_app_server_schema_matches_the_code() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema/app-server");
    let rendered = rein_app_server_protocol::schema::rendered();
    for (name, generated) in &rendered {
        let path = dir.join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{} is missing ({e}); regenerate the schema", path.display())
        });
        assert!(
            on_disk == *generated,
            "{} drifted from the code; run `cargo run -p rein-cli -- app-server generate-json-schema --out schema/app-server`",
            path.display()
        );
    }
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(
        files,
        rendered.len(),
        "schema/app-server holds files the code no longer generates"
    );
}
