//! Methods an IDE or the Codex TUI uses beside turns: the user's own command in a thread
//! (`thread/shellCommand`, the TUI's `!cmd`), a one-off command (`command/exec`), the `@` file picker (`fuzzyFileSearch`) and settings edits
//! (`config/value/write`, `config/batchWrite`). Shapes as in Codex 0.169's schema.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::SandboxPolicyWire;

/// `thread/shellCommand`: run `command` (a shell script, pipes and quotes kept) in the
/// thread as the user's own command. Codex runs it unsandboxed; rein runs it through the
/// thread's tools, under its approval and sandbox policy (app-server/README.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadShellCommandParams {
    pub thread_id: String,
    pub command: String,
    #[serde(default)]
    pub timeout_ms: Option<i64>,
}

/// `command/exec`: one command (an argv) outside any thread, under the server's sandbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecParams {
    pub command: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, Option<String>>>,
    #[serde(default)]
    pub timeout_ms: Option<i64>,
    #[serde(default)]
    pub disable_timeout: bool,
    #[serde(default)]
    pub output_bytes_cap: Option<u64>,
    #[serde(default)]
    pub disable_output_cap: bool,
    #[serde(default)]
    pub sandbox_policy: Option<SandboxPolicyWire>,
    /// Only for streaming and PTY sessions, which rein refuses.
    #[serde(default)]
    pub process_id: Option<String>,
    #[serde(default)]
    pub tty: bool,
    #[serde(default)]
    pub stream_stdin: bool,
    #[serde(default)]
    pub stream_stdout_stderr: bool,
    #[serde(default)]
    pub size: Option<serde_json::Value>,
}

/// The buffered result of `command/exec`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecResponse {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `fuzzyFileSearch`: files under `roots` whose path matches `query`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchParams {
    pub query: String,
    pub roots: Vec<String>,
    #[serde(default)]
    pub cancellation_token: Option<String>,
}

/// One match. Field names are snake_case, as in Codex's schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FuzzyFileSearchResult {
    pub root: String,
    /// Relative to `root`.
    pub path: String,
    pub file_name: String,
    pub match_type: FuzzyFileSearchMatchType,
    pub score: u32,
    /// Positions (in characters of `path`) of the query's characters.
    pub indices: Option<Vec<u32>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FuzzyFileSearchMatchType {
    File,
    Directory,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FuzzyFileSearchResponse {
    pub files: Vec<FuzzyFileSearchResult>,
}

/// How a written value meets what is there: `replace` it, or `upsert` (merge a table into
/// the table there, key by key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MergeStrategy {
    Replace,
    Upsert,
}

/// `config/value/write`: set `keyPath` (dotted, `model` or `mcp_servers.docs.command`) in
/// the server's `config.toml`; a `null` value removes the key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigValueWriteParams {
    pub key_path: String,
    pub value: serde_json::Value,
    pub merge_strategy: MergeStrategy,
    #[serde(default)]
    pub file_path: Option<String>,
    #[serde(default)]
    pub expected_version: Option<String>,
}

/// One edit of `config/batchWrite`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigEdit {
    pub key_path: String,
    pub value: serde_json::Value,
    pub merge_strategy: MergeStrategy,
}

/// `config/batchWrite`: every edit, or none, in one write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigBatchWriteParams {
    pub edits: Vec<ConfigEdit>,
    #[serde(default)]
    pub file_path: Option<String>,
    #[serde(default)]
    pub expected_version: Option<String>,
    #[serde(default)]
    pub reload_user_config: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WriteStatus {
    Ok,
    OkOverridden,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigWriteResponse {
    /// The file written (absolute).
    pub file_path: String,
    pub status: WriteStatus,
    /// The file's version after the write (a hash of its text), for `expectedVersion`.
    pub version: String,
    pub overridden_metadata: Option<serde_json::Value>,
}
