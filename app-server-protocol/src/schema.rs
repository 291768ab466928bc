//! JSON Schema of rein's app-server wire types, one file per root type, as
//! `rein app-server generate-json-schema` writes them (and `schema/app-server/` holds).

use schemars::{schema_for, Schema};

use super::*;

/// Every root type, one line each: a list, long because the wire has that many roots.
pub fn all() -> Vec<(&'static str, Schema)> {
    vec![
        ("ServerNotification.json", schema_for!(ServerNotification)),
        ("JsonRpcErrorBody.json", schema_for!(JsonRpcErrorBody)),
        ("InitializeParams.json", schema_for!(InitializeParams)),
        ("InitializeResponse.json", schema_for!(InitializeResponse)),
        ("ThreadStartParams.json", schema_for!(ThreadStartParams)),
        ("ThreadStartResponse.json", schema_for!(ThreadStartResponse)),
        (
            "ThreadLoadedListParams.json",
            schema_for!(ThreadLoadedListParams),
        ),
        (
            "ThreadLoadedListResponse.json",
            schema_for!(ThreadLoadedListResponse),
        ),
        ("ThreadSetNameParams.json", schema_for!(ThreadSetNameParams)),
        ("ThreadIdParams.json", schema_for!(ThreadIdParams)),
        (
            "ThreadUnsubscribeResponse.json",
            schema_for!(ThreadUnsubscribeResponse),
        ),
        ("TurnStartParams.json", schema_for!(TurnStartParams)),
        ("TurnStartResponse.json", schema_for!(TurnStartResponse)),
        ("ReviewStartParams.json", schema_for!(ReviewStartParams)),
        ("ReviewStartResponse.json", schema_for!(ReviewStartResponse)),
        ("TurnSteerParams.json", schema_for!(TurnSteerParams)),
        ("TurnSteerResponse.json", schema_for!(TurnSteerResponse)),
        ("TurnInterruptParams.json", schema_for!(TurnInterruptParams)),
        ("ModelListParams.json", schema_for!(ModelListParams)),
        ("ModelListResponse.json", schema_for!(ModelListResponse)),
        ("ConfigReadParams.json", schema_for!(ConfigReadParams)),
        ("ConfigReadResponse.json", schema_for!(ConfigReadResponse)),
        ("GetAccountParams.json", schema_for!(GetAccountParams)),
        ("GetAccountResponse.json", schema_for!(GetAccountResponse)),
        (
            "PermissionProfileListParams.json",
            schema_for!(PermissionProfileListParams),
        ),
        (
            "PermissionProfileListResponse.json",
            schema_for!(PermissionProfileListResponse),
        ),
        ("SkillsListParams.json", schema_for!(SkillsListParams)),
        ("SkillsListResponse.json", schema_for!(SkillsListResponse)),
        (
            "SkillsConfigWriteParams.json",
            schema_for!(skills::SkillsConfigWriteParams),
        ),
        (
            "SkillsConfigWriteResponse.json",
            schema_for!(skills::SkillsConfigWriteResponse),
        ),
        (
            "SkillsExtraRootsSetParams.json",
            schema_for!(skills::SkillsExtraRootsSetParams),
        ),
        (
            "SkillsExtraRootsSetResponse.json",
            schema_for!(skills::SkillsExtraRootsSetResponse),
        ),
        (
            "ListMcpServerStatusResponse.json",
            schema_for!(ListMcpServerStatusResponse),
        ),
        (
            "McpServerToolCallParams.json",
            schema_for!(McpServerToolCallParams),
        ),
        (
            "McpServerToolCallResponse.json",
            schema_for!(McpServerToolCallResponse),
        ),
        (
            "McpServerRefreshResponse.json",
            schema_for!(McpServerRefreshResponse),
        ),
        (
            "CommandExecutionRequestApprovalParams.json",
            schema_for!(CommandExecutionRequestApprovalParams),
        ),
        (
            "FileChangeRequestApprovalParams.json",
            schema_for!(FileChangeRequestApprovalParams),
        ),
        ("ServerRequest.json", schema_for!(ServerRequest)),
        ("ThreadResumeParams.json", schema_for!(ThreadResumeParams)),
        ("ThreadForkParams.json", schema_for!(ThreadForkParams)),
        ("ThreadListParams.json", schema_for!(ThreadListParams)),
        ("ThreadListResponse.json", schema_for!(ThreadListResponse)),
        ("ThreadReadParams.json", schema_for!(ThreadReadParams)),
        ("ThreadResponse.json", schema_for!(ThreadResponse)),
        (
            "ThreadTurnsListParams.json",
            schema_for!(ThreadTurnsListParams),
        ),
        (
            "ThreadTurnsListResponse.json",
            schema_for!(ThreadTurnsListResponse),
        ),
        (
            "ConfigRequirementsReadResponse.json",
            schema_for!(ConfigRequirementsReadResponse),
        ),
        (
            "CollaborationModeListResponse.json",
            schema_for!(CollaborationModeListResponse),
        ),
        ("HooksListParams.json", schema_for!(HooksListParams)),
        ("HooksListResponse.json", schema_for!(HooksListResponse)),
        (
            "PluginInstalledParams.json",
            schema_for!(PluginInstalledParams),
        ),
        (
            "PluginInstalledResponse.json",
            schema_for!(PluginInstalledResponse),
        ),
        (
            "GovCloudRequirementsResponse.json",
            schema_for!(GovCloudRequirementsResponse),
        ),
        (
            "BackgroundTerminalsListParams.json",
            schema_for!(BackgroundTerminalsListParams),
        ),
        ("ThreadGoalGetParams.json", schema_for!(ThreadGoalGetParams)),
        (
            "ThreadGoalGetResponse.json",
            schema_for!(ThreadGoalGetResponse),
        ),
        ("ThreadGoalSetParams.json", schema_for!(ThreadGoalSetParams)),
        (
            "ThreadGoalSetResponse.json",
            schema_for!(ThreadGoalSetResponse),
        ),
        (
            "ThreadGoalClearParams.json",
            schema_for!(ThreadGoalClearParams),
        ),
        (
            "ThreadGoalClearResponse.json",
            schema_for!(ThreadGoalClearResponse),
        ),
        (
            "ThreadReadStateUpdateParams.json",
            schema_for!(ThreadReadStateUpdateParams),
        ),
        (
            "ThreadReadStateUpdateResponse.json",
            schema_for!(ThreadReadStateUpdateResponse),
        ),
        (
            "ThreadItemsListParams.json",
            schema_for!(ThreadItemsListParams),
        ),
        (
            "ThreadItemsListResponse.json",
            schema_for!(ThreadItemsListResponse),
        ),
        (
            "ThreadMemoryModeSetParams.json",
            schema_for!(ThreadMemoryModeSetParams),
        ),
        ("MemoryListParams.json", schema_for!(MemoryListParams)),
        ("MemoryListResponse.json", schema_for!(MemoryListResponse)),
        ("MemoryIdParams.json", schema_for!(MemoryIdParams)),
        ("MemoryUpdateParams.json", schema_for!(MemoryUpdateParams)),
        ("MemoryResponse.json", schema_for!(MemoryResponse)),
        (
            "MemoryRequestApprovalParams.json",
            schema_for!(MemoryRequestApprovalParams),
        ),
        (
            "ThreadShellCommandParams.json",
            schema_for!(ThreadShellCommandParams),
        ),
        ("CommandExecParams.json", schema_for!(CommandExecParams)),
        ("CommandExecResponse.json", schema_for!(CommandExecResponse)),
        (
            "FuzzyFileSearchParams.json",
            schema_for!(FuzzyFileSearchParams),
        ),
        (
            "FuzzyFileSearchResponse.json",
            schema_for!(FuzzyFileSearchResponse),
        ),
        (
            "ConfigValueWriteParams.json",
            schema_for!(ConfigValueWriteParams),
        ),
        (
            "ConfigBatchWriteParams.json",
            schema_for!(ConfigBatchWriteParams),
        ),
        ("ConfigWriteResponse.json", schema_for!(ConfigWriteResponse)),
        ("TrajectoryResponse.json", schema_for!(TrajectoryResponse)),
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
fn render(schema: Schema) -> String {
    let mut value = schema.to_value();
    value.sort_all_objects();
    let text = match Schema::try_from(value) {
        Ok(schema) => serde_json::to_string_pretty(&schema),
        Err(e) => Ok(format!("{{\"error\":\"{e}\"}}")),
    };
    let mut text = text.unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    text.push('\n');
    text
}
