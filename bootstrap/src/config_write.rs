//! Edits of the server's `config.toml` (the app-server's `config/value/write` and
//! `config/batchWrite`): the file is edited in place with `toml_edit`, so its comments,
//! order and formatting survive, and the edited text is loaded with rein-config, under the
//! server's profile and `-c` overrides, before anything is written. An edit that makes the
//! configuration fail to load is refused and the file is left as it was.

use std::path::{Path, PathBuf};

use rein_config::{ConfigError, LoadOptions, ModelConfig};
use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, Table, Value as TomlValue};

use crate::Kernel;

/// One edit: set `key_path` (dotted: `model`, `mcp_servers.docs.command`) to `value`;
/// `null` removes the key. `upsert` merges a table into the table there, key by key.
#[derive(Clone, Debug)]
pub struct ConfigEdit {
    pub key_path: String,
    pub value: serde_json::Value,
    pub upsert: bool,
}

/// The file written and its version after the write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigWritten {
    pub path: PathBuf,
    pub version: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigWriteError {
    #[error("this server has no configuration file (demo mode)")]
    NoFile,
    #[error("filePath: rein writes only its own configuration, {0}")]
    OtherFile(String),
    #[error("keyPath {key:?}: {why}")]
    KeyPath { key: String, why: String },
    #[error("value of {key:?}: {why}")]
    Value { key: String, why: String },
    #[error("expectedVersion: the file changed since (now {current})")]
    VersionConflict { current: String },
    #[error("{0} does not parse: {1}")]
    Unparsable(String, toml_edit::TomlError),
    #[error("refused, nothing written: {0}")]
    Invalid(#[source] ConfigError),
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Kernel {
    /// Apply `edits` to the server's `config.toml` in one write, or none of them.
    /// `file` (`filePath`) must be that file if given; `expected_version` must be its
    /// current version if given. Blocking file I/O runs on a blocking thread.
    pub async fn write_config(
        &self,
        file: Option<PathBuf>,
        edits: Vec<ConfigEdit>,
        expected_version: Option<String>,
    ) -> Result<ConfigWritten, ConfigWriteError> {
        let options = self.load_options.clone().ok_or(ConfigWriteError::NoFile)?;
        let join = tokio::task::spawn_blocking(move || {
            write_blocking(
                &options,
                file.as_deref(),
                &edits,
                expected_version.as_deref(),
            )
        });
        let (written, loaded) = join.await.map_err(joined)??;
        // A `[[skills.config]]` edit takes effect for the next listing and thread.
        self.set_skill_toggles(&loaded);
        Ok(written)
    }
}

/// A blocking write that panicked, as the error it is.
pub(crate) fn joined(e: tokio::task::JoinError) -> ConfigWriteError {
    ConfigWriteError::Io {
        path: "config.toml".into(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// The version of a configuration text (what `expectedVersion` names).
pub fn config_version(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn write_blocking(
    options: &LoadOptions,
    file: Option<&Path>,
    edits: &[ConfigEdit],
    expected_version: Option<&str>,
) -> Result<(ConfigWritten, ModelConfig), ConfigWriteError> {
    edit_blocking(options, file, expected_version, &mut |doc| {
        edits.iter().try_for_each(|edit| apply(doc, edit))
    })
}

/// Edit the server's `config.toml` with `edit`, load the result (refusing an edit that
/// does not load), and write it whole. Blocking file I/O.
pub(crate) fn edit_blocking(
    options: &LoadOptions,
    file: Option<&Path>,
    expected_version: Option<&str>,
    edit: &mut dyn FnMut(&mut DocumentMut) -> Result<(), ConfigWriteError>,
) -> Result<(ConfigWritten, ModelConfig), ConfigWriteError> {
    let path = options.home.join("config.toml");
    if let Some(file) = file {
        if !same_file(file, &path) {
            return Err(ConfigWriteError::OtherFile(path.display().to_string()));
        }
    }
    let io = |source| ConfigWriteError::Io {
        path: path.display().to_string(),
        source,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    if let Some(expected) = expected_version {
        let current = config_version(&text);
        if expected != current {
            return Err(ConfigWriteError::VersionConflict { current });
        }
    }
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ConfigWriteError::Unparsable(path.display().to_string(), e))?;
    edit(&mut doc)?;
    let edited = doc.to_string();
    let env = |k: &str| std::env::var(k).ok();
    let loaded =
        rein_config::resolve(&edited, &path, options, &env).map_err(ConfigWriteError::Invalid)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    // A whole new file renamed over the old one: a reader never sees half an edit.
    let tmp = path.with_extension("toml.rein-write");
    std::fs::write(&tmp, &edited).map_err(io)?;
    if let Ok(meta) = std::fs::metadata(&path) {
        std::fs::set_permissions(&tmp, meta.permissions()).map_err(io)?;
    }
    std::fs::rename(&tmp, &path).map_err(io)?;
    let written = ConfigWritten {
        path,
        version: config_version(&edited),
    };
    Ok((written, loaded))
}

/// `a` and `b` name the same file (which need not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| match (p.parent(), p.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir).ok().map(|d| d.join(name)),
        _ => None,
    };
    a == b || (canonical(a).is_some() && canonical(a) == canonical(b))
}

fn apply(doc: &mut DocumentMut, edit: &ConfigEdit) -> Result<(), ConfigWriteError> {
    let key = &edit.key_path;
    let bad_key = |why: &str| ConfigWriteError::KeyPath {
        key: key.clone(),
        why: why.into(),
    };
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(bad_key("empty key"));
    }
    let Some((last, parents)) = parts.split_last() else {
        return Err(bad_key("empty key"));
    };
    let mut table: &mut Table = doc.as_table_mut();
    for part in parents {
        let entry = table.entry(part).or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        table = match entry {
            Item::Table(t) => t,
            _ => return Err(bad_key(&format!("`{part}` is not a table"))),
        };
    }
    if edit.value.is_null() {
        table.remove(last);
        return Ok(());
    }
    let item = to_item(&edit.value).map_err(|why| ConfigWriteError::Value {
        key: key.clone(),
        why,
    })?;
    match (table.get_mut(last), item, edit.upsert) {
        (Some(Item::Table(there)), Item::Table(new), true) => merge(there, new),
        (_, item, _) => {
            table.insert(last, item);
        }
    }
    Ok(())
}

/// Merge `new` into `there` key by key (tables recursively), keeping what `new` lacks.
fn merge(there: &mut Table, new: Table) {
    for (key, item) in new {
        match (there.get_mut(&key), item) {
            (Some(Item::Table(t)), Item::Table(n)) => merge(t, n),
            (_, item) => {
                there.insert(&key, item);
            }
        }
    }
}

/// A JSON value as TOML: objects become tables (inline inside arrays), `null` inside an
/// array or object has no TOML form and is refused.
fn to_item(value: &serde_json::Value) -> Result<Item, String> {
    match value {
        serde_json::Value::Object(map) => {
            let mut table = Table::new();
            for (k, v) in map {
                table.insert(k, to_item(v)?);
            }
            Ok(Item::Table(table))
        }
        other => Ok(Item::Value(to_value(other)?)),
    }
}

fn to_value(value: &serde_json::Value) -> Result<TomlValue, String> {
    Ok(match value {
        serde_json::Value::Null => return Err("null has no TOML form here".into()),
        serde_json::Value::Bool(b) => TomlValue::from(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => TomlValue::from(i),
            (None, Some(f)) => TomlValue::from(f),
            (None, None) => return Err(format!("{n} is out of TOML's range")),
        },
        serde_json::Value::String(s) => TomlValue::from(s.as_str()),
        serde_json::Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(to_value(item)?);
            }
            TomlValue::Array(array)
        }
        serde_json::Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (k, v) in map {
                table.insert(k, to_value(v)?);
            }
            TomlValue::InlineTable(table)
        }
    })
}
