//! A session's trajectory: per turn, the ordered steps the agent took (each tool call and
//! each runtime action: an advisor review, a compaction, a model reroute) with what went
//! in, what came back (previewed) and how long it took, and how the turn ended. A
//! projection of the rollout's events (`rein_core::rollout::trajectory`), never stored.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::TaskKind;
use crate::ids::TurnId;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnTrajectory {
    pub turn_id: TurnId,
    pub kind: TaskKind,
    /// The first user message of the turn, previewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    pub steps: Vec<TrajectoryStep>,
    pub outcome: TurnOutcome,
    /// The turn's last agent message, previewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_agent_message: Option<String>,
    pub duration_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrajectoryStep {
    /// The tool's name, or the runtime action (`advisor_review`, `compaction`,
    /// `model_rerouted`).
    pub action: String,
    /// What the step was given: the call's action as its tool described it (else its raw
    /// arguments), or the runtime action's parameters.
    pub action_input: serde_json::Value,
    /// What came back: the output, the error or the verdict, previewed.
    pub observation: Option<String>,
    pub duration_ms: u64,
    /// Always null until a tool produces screenshots.
    pub screenshot_id: Option<String>,
    pub status: StepStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Succeeded,
    Failed,
    /// The user, the policy or the advisor said no.
    Declined,
    /// It never reported how it ended (an interrupt, a crash).
    Interrupted,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TurnOutcome {
    Success,
    Failed {
        message: String,
    },
    Cancelled {
        reason: String,
    },
    /// The rollout ends inside the turn (it is running, or the process stopped).
    Unfinished,
}
