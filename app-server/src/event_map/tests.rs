//! The mapper alone: what clients are sent for short event sequences.

use super::*;
use rein_protocol::{ApprovalOutcome, ClientRequest, Item, ThreadId, TurnAbortReason};

fn event(turn_id: Option<TurnId>, msg: EventMsg) -> Event {
    Event {
        thread_id: ThreadId::new(),
        turn_id,
        seq: 0,
        timestamp_ms: 1_000,
        msg,
    }
}

fn methods(out: &[Outgoing]) -> Vec<&str> {
    out.iter()
        .map(|o| match o {
            Outgoing::Notify(n) => n.method(),
            Outgoing::Ask { request, .. } => request.method(),
            Outgoing::Withdrawn { .. } => "withdrawn",
            Outgoing::Closed => "closed",
        })
        .collect()
}

#[test]
fn an_interrupted_approval_is_withdrawn_before_the_turn_ends() {
    let mut m = EventMapper::new("t".into(), None);
    let turn = TurnId::new();
    m.map(&event(
        Some(turn),
        EventMsg::TurnStarted {
            kind: rein_protocol::TaskKind::Regular,
            settings: rein_protocol::ThreadSettings {
                model: "m".into(),
                cwd: "/".into(),
                approval_policy: rein_protocol::ApprovalPolicy::OnRequest,
                sandbox_policy: rein_protocol::SandboxPolicy::ReadOnly,
                sandbox_options: None,
                reasoning_effort: None,
                budget: Default::default(),
                instructions: String::new(),
            },
            recovered: false,
            output_schema: None,
        },
    ));
    let ask = m.map(&event(
        Some(turn),
        EventMsg::ClientRequested {
            request_id: "a1".into(),
            call_id: "c1".into(),
            request: ClientRequest::Command {
                command: vec!["rm".into(), "x".into()],
                cwd: "/".into(),
                reason: "why".into(),
            },
        },
    ));
    assert_eq!(
        methods(&ask),
        vec![
            "thread/status/changed",
            "item/commandExecution/requestApproval"
        ]
    );
    let resolved = m.map(&event(
        Some(turn),
        EventMsg::ClientRequestResolved {
            request_id: "a1".into(),
            outcome: ApprovalOutcome::Cancelled,
            grant: None,
        },
    ));
    assert_eq!(
        methods(&resolved),
        vec!["withdrawn", "thread/status/changed"]
    );
    let ended = m.map(&event(
        Some(turn),
        EventMsg::TurnAborted {
            reason: TurnAbortReason::Interrupted,
        },
    ));
    assert_eq!(
        methods(&ended),
        vec!["thread/status/changed", "turn/completed"]
    );
    assert_eq!(m.status(), &ThreadStatus::Idle);
}

#[test]
fn token_usage_waits_for_the_items_of_its_reply() {
    let mut m = EventMapper::new("t".into(), Some(100));
    let turn = TurnId::new();
    let usage = m.map(&event(
        Some(turn),
        EventMsg::TokenCount {
            last: Default::default(),
            total: Default::default(),
            context_window: None,
        },
    ));
    assert!(usage.is_empty());
    let item = m.map(&event(
        Some(turn),
        EventMsg::ItemCompleted {
            item: Item::AgentMessage {
                id: "i".into(),
                text: "hi".into(),
                partial: false,
            },
        },
    ));
    assert_eq!(methods(&item), vec!["item/completed"]);
    let next = m.map(&event(
        Some(turn),
        EventMsg::Warning {
            message: "w".into(),
        },
    ));
    assert_eq!(methods(&next), vec!["thread/tokenUsage/updated", "warning"]);
}
