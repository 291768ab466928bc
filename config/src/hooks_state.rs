//! Trusting project hooks: `[hooks.state."KEY"] trusted_hash = "sha256:…"` in config.toml,
//! as Codex records it. The file is the user's, so it is edited as text: a hash trusted
//! before is replaced where it stands, a new key is appended as its own table, and only if
//! that would not parse (a `state` written as an inline table) is the file rewritten whole.

use std::path::Path;

use crate::ConfigError;

/// Record `hash` as the trusted hash of each hook `key` in the config file at `path`
/// (created when missing).
pub fn trust(path: &Path, entries: &[(String, String)]) -> Result<(), ConfigError> {
    let read_error = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    let mut text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(read_error(e)),
    };
    let parse = |text: &str| -> Result<toml::Table, ConfigError> {
        toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source,
        })
    };
    let before = parse(&text)?;
    for (key, hash) in entries {
        let quoted_hash = toml::Value::String(hash.clone()).to_string();
        match trusted_hash(&before, key) {
            Some(old) if old == *hash => {}
            Some(old) => {
                let quoted_old = toml::Value::String(old).to_string();
                text = text.replacen(&quoted_old, &quoted_hash, 1);
            }
            None => {
                let quoted_key = toml::Value::String(key.clone()).to_string();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "\n[hooks.state.{quoted_key}]\ntrusted_hash = {quoted_hash}\n"
                ));
            }
        }
    }
    let edited_ok = parse(&text)
        .map(|after| {
            entries
                .iter()
                .all(|(k, h)| trusted_hash(&after, k).as_ref() == Some(h))
        })
        .unwrap_or(false);
    if !edited_ok {
        text = rewritten(before, entries);
    }
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).map_err(read_error)?;
    std::fs::rename(&tmp, path).map_err(read_error)
}

fn trusted_hash(table: &toml::Table, key: &str) -> Option<String> {
    table
        .get("hooks")?
        .get("state")?
        .get(key)?
        .get("trusted_hash")?
        .as_str()
        .map(str::to_owned)
}

/// The whole file again, with the entries set (comments and layout are lost).
fn rewritten(mut table: toml::Table, entries: &[(String, String)]) -> String {
    let hooks = table
        .entry("hooks")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(hooks) = hooks {
        let state = hooks
            .entry("state")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(state) = state {
            for (key, hash) in entries {
                let mut entry = toml::Table::new();
                entry.insert("trusted_hash".into(), toml::Value::String(hash.clone()));
                state.insert(key.clone(), toml::Value::Table(entry));
            }
        }
    }
    toml::to_string(&table).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_appended_then_replaced_keeping_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# my model\nmodel = \"x\"\n").unwrap();
        let key = "project:/p/.rein/hooks.json:PreToolUse:0:0".to_owned();
        trust(&path, &[(key.clone(), "sha256:aa".into())]).unwrap();
        trust(&path, &[(key.clone(), "sha256:bb".into())]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# my model\nmodel = \"x\"\n"), "{text}");
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(trusted_hash(&table, &key).as_deref(), Some("sha256:bb"));
        assert!(!text.contains("sha256:aa"), "{text}");
    }
}
