//! `rein schema --out DIR`: writes the JSON Schema generated from `rein-protocol`.

use std::path::Path;

use anyhow::Context;

pub fn write_all(out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, text) in rein_protocol::schema::rendered() {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}
