//! The methods the Codex TUI calls around a session that rein answers with what it has:
//! config requirements, collaboration modes, hooks, plugins, the Bedrock GovCloud check,
//! background terminals, goals and read state. Shapes as in Codex's app-server v2 schema
//! (some of these methods are experimental and absent from the published schema; their
//! shapes follow what Codex 0.169 answers).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ThreadItem;

/// `configRequirements/read`: what an administrator's requirements file imposes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigRequirementsReadResponse {
    /// `null`: no requirements are configured (rein reads no requirements file).
    pub requirements: Option<serde_json::Value>,
    pub supports_independent_speed_modes: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollaborationModeListParams {}

/// A collaboration mode preset (Codex spells its fields in snake_case here).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollaborationModeMask {
    pub name: String,
    pub mode: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollaborationModeListResponse {
    pub data: Vec<CollaborationModeMask>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HooksListParams {
    #[serde(default)]
    pub cwds: Vec<String>,
    #[serde(default)]
    pub thread_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HooksListEntry {
    pub cwd: String,
    pub hooks: Vec<HookMetadata>,
    pub warnings: Vec<String>,
    pub errors: Vec<HookErrorInfo>,
}

/// One configured hook as `hooks/list` shows it (Codex's `HookMetadata`; rein's hooks are
/// all command hooks).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookMetadata {
    pub key: String,
    /// Codex's camelCase event name (`preToolUse`, `postToolUse`, `userPromptSubmit`, `stop`).
    pub event_name: String,
    pub matcher: Option<String>,
    /// `command` (the only kind rein runs).
    pub handler_type: String,
    pub command: String,
    #[serde(rename = "async")]
    pub is_async: bool,
    /// `user` or `project`.
    pub source: String,
    pub source_path: String,
    /// `sha256:HEX` of the definition trust is given to.
    pub current_hash: String,
    /// `trusted`, `untrusted` or `modified`.
    pub trust_status: String,
    /// Whether a thread runs it (trusted).
    pub enabled: bool,
    pub is_managed: bool,
    pub display_order: i64,
    pub timeout_sec: u64,
}

/// A hook file that could not be read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookErrorInfo {
    pub path: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HooksListResponse {
    pub data: Vec<HooksListEntry>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInstalledParams {
    #[serde(default)]
    pub cwds: Option<Vec<String>>,
    #[serde(default)]
    pub install_suggestion_plugin_names: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInstalledResponse {
    pub marketplaces: Vec<serde_json::Value>,
    pub marketplace_load_errors: Vec<serde_json::Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GovCloudRequirementsParams {}

/// `account/bedrock/checkGovCloudRequirements`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GovCloudRequirementsResponse {
    pub is_gov_cloud: bool,
    pub should_warn: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundTerminalsListParams {
    pub thread_id: String,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Where a thread's unread part starts (`null`: all read) and the revision that guards
/// edits of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadState {
    pub first_unread: Option<serde_json::Value>,
    pub revision: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadReadStateOperation {
    Read,
    Unread,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadStateUpdateParams {
    pub thread_id: String,
    pub operation: ThreadReadStateOperation,
    #[serde(default)]
    pub expected_revision: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadStateUpdateResponse {
    pub read_state: ThreadReadState,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadStateChangedNotification {
    pub thread_id: String,
    pub read_state: ThreadReadState,
}

/// Which end of the history a page starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortDirection {
    #[default]
    Asc,
    Desc,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemsListParams {
    pub thread_id: String,
    #[serde(default)]
    pub turn_id: Option<String>,
    /// rein's cursors are its own strings; Codex's item anchors are not supported.
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub sort_direction: Option<SortDirection>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemEntry {
    pub turn_id: String,
    pub item: ThreadItem,
    pub started_at_ms: Option<i64>,
    pub completed_at_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemsListResponse {
    pub data: Vec<ThreadItemEntry>,
    pub next_cursor: Option<String>,
    pub backwards_cursor: Option<String>,
}

/// Params rein reads nothing from (the method's answer does not depend on them); any
/// object is accepted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AnyParams {}

/// An empty page of a list rein has nothing in (apps, experimental features, thread
/// sections, attachments, background terminals).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmptyPage {
    pub data: Vec<serde_json::Value>,
    pub next_cursor: Option<String>,
}

/// `plugin/list`: rein has no plugin marketplaces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginListResponse {
    pub marketplaces: Vec<serde_json::Value>,
    pub marketplace_load_errors: Vec<serde_json::Value>,
    pub featured_plugin_ids: Vec<String>,
}
