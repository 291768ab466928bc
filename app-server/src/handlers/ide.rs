//! What an IDE or the Codex TUI asks beside threads: the `@` file picker
//! (`fuzzyFileSearch`) and settings edits (`config/value/write`, `config/batchWrite`),
//! both carried out by rein-bootstrap (the app-server reaches files and the configuration
//! only through it).

use std::path::PathBuf;

use rein_app_server_protocol::{
    ConfigBatchWriteParams, ConfigValueWriteParams, ConfigWriteResponse, FuzzyFileSearchMatchType,
    FuzzyFileSearchParams, FuzzyFileSearchResponse, FuzzyFileSearchResult, MergeStrategy,
    WriteStatus,
};
use rein_bootstrap::config_write::{ConfigEdit, ConfigWriteError};
use rein_bootstrap::file_search::fuzzy_file_search;

use crate::dispatch::{bounded, ServerState, MAX_PATH_BYTES};
use crate::error::RpcError;

/// Longest query accepted (the picker sends what the user typed after `@`).
const MAX_QUERY_BYTES: usize = 1024;
/// Roots searched at most per request.
const MAX_ROOTS: usize = 16;
/// Edits applied at most per `config/batchWrite`.
const MAX_EDITS: usize = 256;

pub async fn fuzzy(
    _state: &ServerState,
    p: FuzzyFileSearchParams,
) -> Result<FuzzyFileSearchResponse, RpcError> {
    bounded("query", &p.query, MAX_QUERY_BYTES)?;
    if p.roots.len() > MAX_ROOTS {
        return Err(RpcError::invalid_params(
            format!("roots: {} roots, more than {MAX_ROOTS}", p.roots.len()),
            Some("roots".into()),
        ));
    }
    let mut roots = Vec::with_capacity(p.roots.len());
    for (i, root) in p.roots.iter().enumerate() {
        let field = format!("roots[{i}]");
        bounded(&field, root, MAX_PATH_BYTES)?;
        let path = PathBuf::from(root);
        if !path.is_absolute() {
            return Err(RpcError::invalid_params(
                format!("{field}: must be an absolute path"),
                Some(field),
            ));
        }
        roots.push(path);
    }
    let files = fuzzy_file_search(p.query, roots)
        .await
        .into_iter()
        .map(|m| FuzzyFileSearchResult {
            root: m.root.display().to_string(),
            file_name: m.path.rsplit('/').next().unwrap_or(&m.path).to_owned(),
            path: m.path,
            match_type: if m.is_dir {
                FuzzyFileSearchMatchType::Directory
            } else {
                FuzzyFileSearchMatchType::File
            },
            score: m.score,
            indices: Some(m.indices),
        })
        .collect();
    Ok(FuzzyFileSearchResponse { files })
}

pub async fn value_write(
    state: &ServerState,
    p: ConfigValueWriteParams,
) -> Result<ConfigWriteResponse, RpcError> {
    let edit = ConfigEdit {
        key_path: p.key_path,
        value: p.value,
        upsert: p.merge_strategy == MergeStrategy::Upsert,
    };
    write(state, p.file_path, vec![edit], p.expected_version, None).await
}

pub async fn batch_write(
    state: &ServerState,
    p: ConfigBatchWriteParams,
) -> Result<ConfigWriteResponse, RpcError> {
    if p.edits.len() > MAX_EDITS {
        return Err(RpcError::invalid_params(
            format!("edits: {} edits, more than {MAX_EDITS}", p.edits.len()),
            Some("edits".into()),
        ));
    }
    let edits = p
        .edits
        .into_iter()
        .map(|e| ConfigEdit {
            key_path: e.key_path,
            value: e.value,
            upsert: e.merge_strategy == MergeStrategy::Upsert,
        })
        .collect();
    write(state, p.file_path, edits, p.expected_version, Some("edits")).await
}

/// Write `edits` through the kernel; `edits_field` names where a bad key sits.
async fn write(
    state: &ServerState,
    file: Option<String>,
    edits: Vec<ConfigEdit>,
    expected_version: Option<String>,
    edits_field: Option<&str>,
) -> Result<ConfigWriteResponse, RpcError> {
    let written = state
        .kernel
        .write_config(file.map(PathBuf::from), edits, expected_version)
        .await
        .map_err(|e| write_error(e, edits_field))?;
    Ok(ConfigWriteResponse {
        file_path: written.path.display().to_string(),
        status: WriteStatus::Ok,
        version: written.version,
        overridden_metadata: None,
    })
}

fn write_error(e: ConfigWriteError, edits_field: Option<&str>) -> RpcError {
    let field = |name: &str| match edits_field {
        Some(edits) => format!("{edits}.{name}"),
        None => name.to_owned(),
    };
    match &e {
        ConfigWriteError::OtherFile(_) => RpcError::invalid_params(&e, Some("filePath".into())),
        ConfigWriteError::KeyPath { .. } => RpcError::invalid_params(&e, Some(field("keyPath"))),
        ConfigWriteError::Value { .. } | ConfigWriteError::Invalid(_) => {
            RpcError::invalid_params(&e, Some(field("value")))
        }
        ConfigWriteError::VersionConflict { .. } => {
            RpcError::invalid_request(format!("configVersionConflict: {e}"))
        }
        ConfigWriteError::NoFile | ConfigWriteError::Unparsable(..) => {
            RpcError::invalid_request(e.to_string())
        }
        ConfigWriteError::Io { .. } => RpcError::internal(e),
    }
}
