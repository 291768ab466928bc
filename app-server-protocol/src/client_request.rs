//! The typed table of client → server requests: every method rein serves, with the type
//! its params decode into and the type it answers with (the shape of codex-rs's
//! `client_request_definitions!`: one line per method, everything else generated).
//!
//! Each line makes a marker type in [`method`] implementing [`ClientMethod`], which the
//! app-server registers on its jsonrpsee module (so a handler takes `M::Params` and returns
//! `M::Response`), and an entry of [`client_methods`], which the schema drift test walks to
//! compare every method with Codex's schema.

use schemars::{schema_for, JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::*;

/// One client method: its name on the wire, and what it takes and answers.
pub trait ClientMethod: 'static {
    const METHOD: &'static str;
    type Params: DeserializeOwned + JsonSchema + Send + 'static;
    type Response: Serialize + JsonSchema + Clone + Send + 'static;
}

/// Whose protocol a method belongs to, which says what the drift test compares it with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// In Codex's published schema (`ClientRequest.json`); `response` names Codex's
    /// definition of the answer (its name differs from rein's type at times).
    Codex { response: &'static str },
    /// Served by Codex (its TUI calls it) but absent from its published schema; rein's
    /// answer is compared with recorded Codex answers by the e2e tests instead.
    CodexUnpublished,
    /// Codex dropped it from its schema; rein keeps it (`thread/rollback`).
    CodexDropped,
    /// rein's own (`rein/…`), experimental or not.
    Rein,
}

/// An entry of the table, for tools and tests that walk every method.
pub struct MethodSpec {
    pub method: &'static str,
    pub origin: Origin,
    pub params_type: &'static str,
    pub response_type: &'static str,
    pub params_schema: fn() -> Schema,
    pub response_schema: fn() -> Schema,
}

macro_rules! client_requests {
    ($(
        $(#[$doc:meta])*
        $name:ident => $method:literal, $origin:expr,
            { params: $params:ty, response: $response:ty };
    )*) => {
        /// One marker type per client method (see [`ClientMethod`]).
        pub mod method {
            use super::*;
            $(
                $(#[$doc])*
                pub struct $name;
                impl ClientMethod for $name {
                    const METHOD: &'static str = $method;
                    type Params = $params;
                    type Response = $response;
                }
            )*
        }

        /// Every client method rein serves, in the table's order.
        pub fn client_methods() -> Vec<MethodSpec> {
            vec![$(MethodSpec {
                method: $method,
                origin: $origin,
                params_type: stringify!($params),
                response_type: stringify!($response),
                params_schema: || schema_for!($params),
                response_schema: || schema_for!($response),
            }),*]
        }
    };
}

const fn codex(response: &'static str) -> Origin {
    Origin::Codex { response }
}

use Origin::{CodexDropped, CodexUnpublished, Rein};

client_requests! {
    Initialize => "initialize", codex("InitializeResponse"),
        { params: InitializeParams, response: InitializeResponse };
    ModelList => "model/list", codex("ModelListResponse"),
        { params: ModelListParams, response: ModelListResponse };
    ConfigRead => "config/read", codex("ConfigReadResponse"),
        { params: ConfigReadParams, response: ConfigReadResponse };
    ConfigValueWrite => "config/value/write", codex("ConfigWriteResponse"),
        { params: ConfigValueWriteParams, response: ConfigWriteResponse };
    ConfigBatchWrite => "config/batchWrite", codex("ConfigWriteResponse"),
        { params: ConfigBatchWriteParams, response: ConfigWriteResponse };
    AccountRead => "account/read", codex("GetAccountResponse"),
        { params: GetAccountParams, response: GetAccountResponse };
    PermissionProfileList => "permissionProfile/list", codex("PermissionProfileListResponse"),
        { params: PermissionProfileListParams, response: PermissionProfileListResponse };
    SkillsList => "skills/list", codex("SkillsListResponse"),
        { params: SkillsListParams, response: SkillsListResponse };
    SkillsConfigWrite => "skills/config/write", codex("SkillsConfigWriteResponse"),
        { params: skills::SkillsConfigWriteParams, response: skills::SkillsConfigWriteResponse };
    SkillsExtraRootsSet => "skills/extraRoots/set", codex("SkillsExtraRootsSetResponse"),
        { params: skills::SkillsExtraRootsSetParams, response: skills::SkillsExtraRootsSetResponse };
    ConfigRequirementsRead => "configRequirements/read", codex("ConfigRequirementsReadResponse"),
        { params: AnyParams, response: ConfigRequirementsReadResponse };
    CollaborationModeList => "collaborationMode/list", CodexUnpublished,
        { params: CollaborationModeListParams, response: CollaborationModeListResponse };
    HooksList => "hooks/list", codex("HooksListResponse"),
        { params: HooksListParams, response: HooksListResponse };
    PluginInstalled => "plugin/installed", codex("PluginInstalledResponse"),
        { params: PluginInstalledParams, response: PluginInstalledResponse };
    PluginList => "plugin/list", codex("PluginListResponse"),
        { params: AnyParams, response: PluginListResponse };
    AppList => "app/list", codex("AppsListResponse"),
        { params: AnyParams, response: EmptyPage };
    ExperimentalFeatureList => "experimentalFeature/list", codex("ExperimentalFeatureListResponse"),
        { params: AnyParams, response: EmptyPage };
    ThreadSectionList => "threadSection/list", codex("ThreadSectionListResponse"),
        { params: AnyParams, response: EmptyPage };
    ThreadAttachmentList => "thread/attachment/list", codex("ThreadAttachmentListResponse"),
        { params: AnyParams, response: EmptyPage };
    GovCloudRequirements => "account/bedrock/checkGovCloudRequirements", CodexUnpublished,
        { params: GovCloudRequirementsParams, response: GovCloudRequirementsResponse };
    BackgroundTerminalsList => "thread/backgroundTerminals/list", CodexUnpublished,
        { params: BackgroundTerminalsListParams, response: EmptyPage };
    ThreadReadStateUpdate => "thread/readState/update", CodexUnpublished,
        { params: ThreadReadStateUpdateParams, response: ThreadReadStateUpdateResponse };
    ThreadItemsList => "thread/items/list", codex("ThreadItemsListResponse"),
        { params: ThreadItemsListParams, response: ThreadItemsListResponse };
    ThreadStart => "thread/start", codex("ThreadStartResponse"),
        { params: ThreadStartParams, response: ThreadStartResponse };
    ThreadLoadedList => "thread/loaded/list", codex("ThreadLoadedListResponse"),
        { params: ThreadLoadedListParams, response: ThreadLoadedListResponse };
    ThreadSetName => "thread/name/set", codex("ThreadSetNameResponse"),
        { params: ThreadSetNameParams, response: EmptyResponse };
    /// Experimental in Codex (its TUI does not call it; codex-rs serves it).
    ThreadMemoryModeSet => "thread/memoryMode/set", CodexUnpublished,
        { params: ThreadMemoryModeSetParams, response: EmptyResponse };
    ThreadUnsubscribe => "thread/unsubscribe", codex("ThreadUnsubscribeResponse"),
        { params: ThreadIdParams, response: ThreadUnsubscribeResponse };
    ThreadShellCommand => "thread/shellCommand", codex("ThreadShellCommandResponse"),
        { params: ThreadShellCommandParams, response: EmptyResponse };
    CommandExec => "command/exec", codex("CommandExecResponse"),
        { params: CommandExecParams, response: CommandExecResponse };
    FuzzyFileSearch => "fuzzyFileSearch", codex("FuzzyFileSearchResponse"),
        { params: FuzzyFileSearchParams, response: FuzzyFileSearchResponse };
    TurnStart => "turn/start", codex("TurnStartResponse"),
        { params: TurnStartParams, response: TurnStartResponse };
    TurnSteer => "turn/steer", codex("TurnSteerResponse"),
        { params: TurnSteerParams, response: TurnSteerResponse };
    TurnInterrupt => "turn/interrupt", codex("TurnInterruptResponse"),
        { params: TurnInterruptParams, response: EmptyResponse };
    ReviewStart => "review/start", codex("ReviewStartResponse"),
        { params: ReviewStartParams, response: ReviewStartResponse };
    ThreadCompactStart => "thread/compact/start", codex("ThreadCompactStartResponse"),
        { params: ThreadIdParams, response: EmptyResponse };
    ThreadGoalGet => "thread/goal/get", codex("ThreadGoalGetResponse"),
        { params: ThreadGoalGetParams, response: ThreadGoalGetResponse };
    ThreadGoalSet => "thread/goal/set", codex("ThreadGoalSetResponse"),
        { params: ThreadGoalSetParams, response: ThreadGoalSetResponse };
    ThreadGoalClear => "thread/goal/clear", codex("ThreadGoalClearResponse"),
        { params: ThreadGoalClearParams, response: ThreadGoalClearResponse };
    ThreadRollback => "thread/rollback", CodexDropped,
        { params: ThreadRollbackParams, response: ThreadResponse };
    ThreadResume => "thread/resume", codex("ThreadResumeResponse"),
        { params: ThreadResumeParams, response: ThreadStartResponse };
    ThreadFork => "thread/fork", codex("ThreadForkResponse"),
        { params: ThreadForkParams, response: ThreadStartResponse };
    ThreadList => "thread/list", codex("ThreadListResponse"),
        { params: ThreadListParams, response: ThreadListResponse };
    ThreadRead => "thread/read", codex("ThreadReadResponse"),
        { params: ThreadReadParams, response: ThreadResponse };
    ThreadTurnsList => "thread/turns/list", codex("ThreadTurnsListResponse"),
        { params: ThreadTurnsListParams, response: ThreadTurnsListResponse };
    ThreadArchive => "thread/archive", codex("ThreadArchiveResponse"),
        { params: ThreadIdParams, response: EmptyResponse };
    ThreadUnarchive => "thread/unarchive", codex("ThreadUnarchiveResponse"),
        { params: ThreadIdParams, response: ThreadResponse };
    McpServerStatusList => "mcpServerStatus/list", codex("ListMcpServerStatusResponse"),
        { params: ListMcpServerStatusParams, response: ListMcpServerStatusResponse };
    McpServerReload => "config/mcpServer/reload", codex("McpServerRefreshResponse"),
        { params: AnyParams, response: McpServerRefreshResponse };
    McpServerToolCall => "mcpServer/tool/call", codex("McpServerToolCallResponse"),
        { params: McpServerToolCallParams, response: McpServerToolCallResponse };
    /// Experimental: only for connections that opted in at `initialize`.
    ReinThreadTrajectory => "rein/thread/trajectory", Rein,
        { params: ThreadIdParams, response: TrajectoryResponse };
    ReinMemoryList => "rein/memory/list", Rein,
        { params: MemoryListParams, response: MemoryListResponse };
    ReinMemoryRead => "rein/memory/read", Rein,
        { params: MemoryIdParams, response: MemoryResponse };
    ReinMemoryUpdate => "rein/memory/update", Rein,
        { params: MemoryUpdateParams, response: MemoryResponse };
    ReinMemoryForget => "rein/memory/forget", Rein,
        { params: MemoryIdParams, response: MemoryResponse };
}

/// `rein/thread/trajectory`'s answer: the thread and its trajectory, as
/// `rein sessions trajectory --json` prints it (rein's kernel type, carried as JSON so
/// this crate stays independent of the kernel's).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryResponse {
    pub thread_id: String,
    pub turns: serde_json::Value,
}
