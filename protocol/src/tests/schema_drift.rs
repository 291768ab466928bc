//! The checked-in JSON Schema in `schema/` must be what the code generates. When this
//! fails after an intended change, regenerate with `cargo run -p rein-cli -- schema --out schema`.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

#[test]
fn checked_in_schema_matches_the_code() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema");
    for (name, generated) in crate::schema::rendered() {
        let path = dir.join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{} is missing ({e}); regenerate the schema", path.display())
        });
        assert!(
            on_disk == generated,
            "{} drifted from the code; run `cargo run -p rein-cli -- schema --out schema`",
            path.display()
        );
    }
}
