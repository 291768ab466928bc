//! The Codex shapes the mapper fills: turn objects, turn errors, active statuses.

use rein_app_server_protocol::{
    ThreadActiveFlag, ThreadItem, ThreadStatus, Turn, TurnError, TurnItemsView, TurnStatus,
};
use rein_protocol::{ErrorCode, TurnId};

/// The running turn as the mapper follows it.
pub(super) struct TurnTrack {
    pub id: TurnId,
    pub started_at_ms: i64,
    pub last_agent: Option<ThreadItem>,
    pub error: Option<TurnError>,
    /// A review turn (its request and end are shown as review-mode items).
    pub review: bool,
}

pub(super) fn active(waiting_on_approval: bool) -> ThreadStatus {
    ThreadStatus::Active {
        active_flags: if waiting_on_approval {
            vec![ThreadActiveFlag::WaitingOnApproval]
        } else {
            Vec::new()
        },
    }
}

pub(super) fn turn_object(
    track: &TurnTrack,
    status: TurnStatus,
    completed_at_ms: Option<i64>,
) -> Turn {
    let (items, items_view) = match &track.last_agent {
        Some(item) if completed_at_ms.is_some() => (vec![item.clone()], TurnItemsView::Summary),
        _ => (Vec::new(), TurnItemsView::NotLoaded),
    };
    Turn {
        id: track.id.to_string(),
        root_turn_id: Some(track.id.to_string()),
        items,
        items_view,
        status,
        error: track.error.clone().filter(|_| status == TurnStatus::Failed),
        started_at: Some(track.started_at_ms / 1000),
        completed_at: completed_at_ms.map(|ms| ms / 1000),
        duration_ms: completed_at_ms.map(|ms| (ms - track.started_at_ms).max(0)),
    }
}

pub(crate) fn turn_error(code: ErrorCode, message: &str) -> TurnError {
    let info = match code {
        ErrorCode::ContextWindowExceeded => "contextWindowExceeded",
        ErrorCode::RateLimited => "rateLimitExceeded",
        ErrorCode::Unauthorized => "unauthorized",
        ErrorCode::ModelBadRequest => "badRequest",
        ErrorCode::ModelUnavailable => "serverOverloaded",
        ErrorCode::Internal => "internalServerError",
        ErrorCode::StreamInterrupted
        | ErrorCode::ToolFailed
        | ErrorCode::RolloutWrite
        | ErrorCode::OpRefused => "other",
    };
    TurnError {
        message: message.to_owned(),
        codex_error_info: Some(info.into()),
        additional_details: None,
    }
}

pub(super) fn plain_error(message: String) -> TurnError {
    TurnError {
        message,
        codex_error_info: None,
        additional_details: None,
    }
}
