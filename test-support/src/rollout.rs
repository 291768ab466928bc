//! Builders of realistic event streams shared by the rollout tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use rein_protocol::{
    ApprovalOutcome, ApprovalPolicy, ClientRequest, ErrorCode, Event, EventMsg, InputPart, Item,
    ItemId, ItemKind, PlanStep, PlanStepStatus, SandboxPolicy, SubmissionId, TaskKind, ThreadId,
    ThreadSettings, TokenUsage, TurnAbortReason, TurnId,
};

pub fn settings() -> ThreadSettings {
    ThreadSettings {
        model: "gpt-test".into(),
        cwd: PathBuf::from("/work/project"),
        approval_policy: ApprovalPolicy::OnRequest,
        sandbox_policy: SandboxPolicy::WorkspaceWrite,
        sandbox_options: None,
        reasoning_effort: None,
        budget: Default::default(),
        instructions: "be brief".into(),
    }
}

/// Appends events to a thread with correct seqs.
pub struct ThreadScript {
    pub thread: ThreadId,
    pub turn: Option<TurnId>,
    pub events: Vec<Event>,
    pub clock: u64,
}

impl ThreadScript {
    pub fn new(thread: ThreadId) -> Self {
        let mut script = ThreadScript {
            thread,
            turn: None,
            events: Vec::new(),
            clock: 1_796_000_000_000,
        };
        script.push(EventMsg::ThreadConfigured {
            session_id: thread.into(),
            settings: settings(),
            forked_from: None,
            strategy: None,
        });
        script
    }

    pub fn push(&mut self, msg: EventMsg) {
        self.clock += 7;
        self.events.push(Event {
            thread_id: self.thread,
            turn_id: self.turn,
            seq: self.events.len() as u64,
            timestamp_ms: self.clock,
            msg,
        });
    }

    pub fn start_turn(&mut self, text: &str) -> TurnId {
        let turn = TurnId::new();
        self.turn = Some(turn);
        self.push(EventMsg::TurnStarted {
            kind: TaskKind::Regular,
            settings: settings(),
            recovered: false,
            output_schema: None,
        });
        self.push(EventMsg::ItemCompleted {
            item: Item::UserMessage {
                id: ItemId::new(),
                content: vec![InputPart::text(text)],
            },
        });
        turn
    }

    pub fn tool_call(&mut self, call_id: &str, output: Option<String>) {
        let arguments = format!("{{\"cmd\":\"echo {call_id}\"}}");
        self.push(EventMsg::ItemCompleted {
            item: Item::ToolCall {
                id: ItemId::new(),
                call_id: call_id.into(),
                name: "shell".into(),
                arguments: arguments.clone(),
            },
        });
        let action = rein_protocol::ToolAction::Exec {
            argv: vec!["ls".into()],
            command: "ls".into(),
            cwd: PathBuf::from("/work/project"),
            background: false,
            commands: vec![rein_protocol::CommandAction::ListFiles {
                command: "ls".into(),
                path: None,
            }],
        };
        self.push(EventMsg::ToolCallBegin {
            call_id: call_id.into(),
            name: "shell".into(),
            arguments,
            action: action.clone(),
        });
        if let Some(output) = output {
            let outcome = rein_protocol::ToolOutcome::Exited {
                exit: rein_protocol::ExitStatus::Code { code: 0 },
                output: output.clone(),
            };
            self.push(EventMsg::ToolCallEnd {
                call_id: call_id.into(),
                success: true,
                duration_ms: 12,
                outcome: outcome.clone(),
            });
            self.push(EventMsg::ItemCompleted {
                item: Item::ToolOutput {
                    id: ItemId::new(),
                    call_id: call_id.into(),
                    output,
                    success: true,
                    facts: Some(Box::new(rein_protocol::ToolFacts {
                        action,
                        outcome,
                        duration_ms: 12,
                    })),
                },
            });
        }
    }

    pub fn agent_message(&mut self, text: &str) {
        self.push(EventMsg::ItemCompleted {
            item: Item::AgentMessage {
                id: ItemId::new(),
                text: text.into(),
                partial: false,
            },
        });
    }

    pub fn complete_turn(&mut self, text: &str) {
        self.agent_message(text);
        self.push(EventMsg::TokenCount {
            last: usage(10),
            total: usage(10 * self.events.len() as u64),
            context_window: Some(200_000),
        });
        self.push(EventMsg::TurnCompleted {
            last_agent_message: Some(text.into()),
        });
        self.turn = None;
    }

    /// A simple completed turn: user message, one tool call, answer.
    pub fn simple_turn(&mut self, n: usize, output: String) {
        self.start_turn(&format!("question {n}"));
        self.tool_call(&format!("call-{n}"), Some(output));
        self.complete_turn(&format!("answer {n}"));
    }
}

pub fn usage(n: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: n,
        cached_input_tokens: n / 2,
        output_tokens: n / 3,
        reasoning_output_tokens: 1,
        total_tokens: n + n / 3,
    }
}

/// A thread that uses every `EventMsg` variant except the streaming deltas (which are
/// never persisted) and has several turns, an abort, a failure and a rollback.
pub fn every_variant_thread() -> ThreadScript {
    let mut s = ThreadScript::new(ThreadId::new());
    s.push(EventMsg::SettingsChanged {
        settings: ThreadSettings {
            model: "gpt-other".into(),
            ..settings()
        },
    });
    s.push(EventMsg::ThreadNamed {
        name: "Fix the parser".into(),
    });
    s.push(EventMsg::MemoryModeSet {
        mode: rein_protocol::ThreadMemoryMode::Disabled,
    });
    s.push(EventMsg::ContextLoaded {
        context: rein_protocol::ThreadContext {
            messages: vec![rein_protocol::ContextMessage {
                role: rein_protocol::ContextRole::User,
                kind: rein_protocol::ContextKind::ProjectDoc,
                text: "# AGENTS.md instructions for /work/project\n\n<INSTRUCTIONS>\nBe brief.\n</INSTRUCTIONS>".into(),
            }],
            sources: Vec::new(),
            skills: vec![rein_protocol::SkillFile {
                name: "pdf".into(),
                path: PathBuf::from("/work/project/.agents/skills/pdf/SKILL.md"),
                sha256: "ab".repeat(32),
                mcp_servers: Vec::new(),
            }],
        },
    });
    s.push(EventMsg::AgentOrigin {
        origin: rein_protocol::AgentOrigin {
            parent_thread_id: ThreadId::new(),
            depth: 1,
            nickname: Some("Ada".into()),
            role: Some("explorer".into()),
        },
    });
    let child = ThreadId::new();
    s.push(EventMsg::AgentSpawned {
        thread_id: child,
        nickname: Some("Babbage".into()),
        role: None,
        task: "look around".into(),
    });
    s.push(EventMsg::AgentTasked {
        thread_id: child,
        task: "look again".into(),
    });
    s.push(EventMsg::AgentClosed { thread_id: child });
    let mail = SubmissionId::new();
    s.push(EventMsg::MailQueued {
        submission_id: mail,
        from: child,
        items: vec![InputPart::text("a result")],
    });
    s.push(EventMsg::MailTaken {
        submission_ids: vec![mail],
    });
    s.push(EventMsg::TaskGraphChanged {
        change: rein_protocol::TaskGraphChange::Planned {
            policy: rein_protocol::FailurePolicy::BlockDependents,
            max_review_rounds: 2,
            max_retries: 2,
            upsert: vec![rein_protocol::TaskNodeSpec {
                id: "parse".into(),
                title: "Fix the parser".into(),
                role: "worker".into(),
                instructions: "Make the tests pass.".into(),
                acceptance: vec!["cargo test passes".into()],
                deps: Vec::new(),
                reviews: None,
            }],
            remove: Vec::new(),
        },
    });
    s.start_turn("first: with an image");
    s.push(EventMsg::ItemCompleted {
        item: Item::UserMessage {
            id: ItemId::new(),
            content: vec![
                InputPart::text("look"),
                InputPart::Image {
                    url: format!("data:image/png;base64,{}", "iVBORw0KGgo".repeat(4000)),
                },
            ],
        },
    });
    let item = ItemId::new();
    s.push(EventMsg::ItemStarted {
        item_id: item.clone(),
        kind: ItemKind::Reasoning,
    });
    s.push(EventMsg::ItemCompleted {
        item: Item::Reasoning {
            id: item,
            text: "thinking".into(),
            encrypted_content: Some("gAAAA".into()),
        },
    });
    s.push(EventMsg::PlanUpdated {
        plan: vec![PlanStep {
            step: "read".into(),
            status: PlanStepStatus::InProgress,
        }],
    });
    s.tool_call("c-big", Some("line of output\n".repeat(10_000)));
    s.push(EventMsg::SkillActivated {
        call_id: "c-big".into(),
        skill: rein_protocol::SkillActivation {
            name: "pdf".into(),
            path: PathBuf::from("/work/project/.agents/skills/pdf/SKILL.md"),
            sha256: "ab".repeat(32),
            implicit: true,
        },
    });
    s.push(EventMsg::ClientRequested {
        request_id: "a1".into(),
        call_id: "c-big".into(),
        request: ClientRequest::Command {
            command: vec!["rm".into(), "-rf".into(), "target".into()],
            cwd: PathBuf::from("/work/project"),
            reason: "clean".into(),
        },
    });
    s.push(EventMsg::ClientRequestResolved {
        request_id: "a1".into(),
        outcome: ApprovalOutcome::ApprovedForSession,
        grant: Some(rein_protocol::SessionGrant::CommandPrefix {
            argv: vec!["rm".into(), "-rf".into(), "target".into()],
        }),
    });
    s.push(EventMsg::ClientRequested {
        request_id: "a2".into(),
        call_id: "c-big".into(),
        request: ClientRequest::Patch {
            files: vec![PathBuf::from("src/lib.rs")],
            reason: "edit".into(),
        },
    });
    s.push(EventMsg::ClientRequestResolved {
        request_id: "a2".into(),
        outcome: ApprovalOutcome::Denied,
        grant: None,
    });
    s.push(EventMsg::StreamRetry {
        attempt: 1,
        max_attempts: 5,
        message: "reset by peer".into(),
    });
    s.push(EventMsg::PatchApplied {
        call_id: "c9".into(),
        changes: vec![rein_protocol::FileDiff {
            path: "src/a.rs".into(),
            kind: rein_protocol::FileChangeKind::Update,
            move_to: Some("src/b.rs".into()),
            unified_diff: "--- a/src/a.rs\n+++ b/src/b.rs\n@@ -1 +1 @@\n-a\n+b\n".into(),
        }],
    });
    s.push(EventMsg::StepRequested {
        fingerprint: rein_protocol::RequestFingerprint {
            model: "gpt-test".into(),
            instructions: "sha256:instructions".into(),
            tools: vec![rein_protocol::ToolFingerprint {
                name: "shell".into(),
                hash: "sha256:shell".into(),
            }],
            input_reused: 1,
            input: vec!["sha256:item".into()],
            reasoning_effort: None,
        },
    });
    s.push(EventMsg::TurnDiff {
        unified_diff: "--- a/src/a.rs\n+++ b/src/b.rs\n@@ -1 +1 @@\n-a\n+b\n".into(),
    });
    s.push(EventMsg::StepRequested {
        fingerprint: rein_protocol::RequestFingerprint {
            model: "gpt-test".into(),
            instructions: "0123456789abcdef".into(),
            tools: vec![rein_protocol::ToolFingerprint {
                name: "shell".into(),
                hash: "fedcba9876543210".into(),
            }],
            input_reused: 2,
            input: vec!["00112233aabbccdd".into()],
            reasoning_effort: None,
        },
    });
    s.push(EventMsg::ModelRerouted {
        from: "gpt-test".into(),
        to: "gpt-backup".into(),
        reason: "503 after 5 retries".into(),
    });
    s.push(EventMsg::AdvisorReviewStarted {
        review_id: "review-1".into(),
        cwd: "/work/project".into(),
        risk: rein_protocol::AdvisorRisk::High,
        calls: vec![rein_protocol::ReviewedCall {
            call_id: "c-advised".into(),
            tool: "shell".into(),
            action: rein_protocol::ToolAction::other("shell", r#"{"command":["rm","x"]}"#),
            risk: Some("destructive command: rm".into()),
        }],
    });
    s.push(EventMsg::AdvisorReviewCompleted {
        review_id: "review-1".into(),
        verdict: rein_protocol::AdvisorVerdict::Reject {
            reason: "no".into(),
        },
        duration_ms: 7,
    });
    s.push(EventMsg::HookStarted {
        run_id: "run-1".into(),
        event_name: rein_protocol::HookEventName::PreToolUse,
        key: "project:/work/project/.rein/hooks.json:PreToolUse:0:0".into(),
        command: "./guard.sh".into(),
        source: rein_protocol::HookSource::Project,
        call_id: Some("call-1".into()),
    });
    s.push(EventMsg::HookCompleted {
        run_id: "run-1".into(),
        status: rein_protocol::HookRunStatus::Blocked,
        exit_code: Some(2),
        message: Some("no rm -rf".into()),
        duration_ms: 3,
    });
    s.push(EventMsg::Warning {
        message: "unicode ✓ \u{0}\u{1} \"quotes\"\n".into(),
    });
    s.push(EventMsg::ItemCompleted {
        item: Item::DeveloperMessage {
            id: ItemId::new(),
            text: "keep going".into(),
        },
    });
    s.complete_turn("first done");

    s.start_turn("second: interrupted");
    s.push(EventMsg::ItemCompleted {
        item: Item::AgentMessage {
            id: ItemId::new(),
            text: "half".into(),
            partial: true,
        },
    });
    s.push(EventMsg::ItemCompleted {
        item: Item::Interruption {
            id: ItemId::new(),
            text: rein_protocol::INTERRUPTION_MARKER.into(),
        },
    });
    s.push(EventMsg::TurnAborted {
        reason: TurnAbortReason::Interrupted,
    });
    s.turn = None;

    s.start_turn("third: fails");
    s.push(EventMsg::Error {
        code: ErrorCode::ModelUnavailable,
        message: "503".into(),
    });
    s.push(EventMsg::TurnFailed {
        code: ErrorCode::ModelUnavailable,
        message: "503".into(),
    });
    s.turn = None;

    s.simple_turn(4, "small".into());

    s.push(EventMsg::RolledBack { turns: 1 });
    s.push(EventMsg::CompactionStarted {
        trigger: rein_protocol::CompactionTrigger::Manual,
        tokens_before: 1234,
    });
    s.push(EventMsg::Compacted {
        summary: Item::user_text("<summary of the earlier conversation>\nwhat happened"),
        kept: vec![0],
        summary_at: 1,
        tokens_before: 1234,
        tokens_after: 56,
    });
    s.push(EventMsg::ModelSwitched {
        from: "gpt-test".into(),
        to: "gpt-small".into(),
    });
    s.simple_turn(5, "after rollback".into());
    memory_events(&mut s);
    let goal = rein_protocol::ThreadGoal {
        goal_id: "goal-1".into(),
        objective: "make the tests pass".into(),
        status: rein_protocol::GoalStatus::Active,
        budget: rein_protocol::GoalBudget {
            tokens: Some(1000),
            wall_time_ms: None,
            turns: Some(3),
        },
        usage: rein_protocol::GoalUsage::default(),
        carved: rein_protocol::GoalBudget::default(),
        criteria: vec![rein_protocol::Criterion {
            description: "tests pass".into(),
            verify: Some(rein_protocol::Verifier::Shell {
                command: "cargo test".into(),
            }),
        }],
        idle_turns: 0,
        reason: None,
        origin: rein_protocol::GoalOrigin::User,
        retry_at_ms: None,
        auto_resume: None,
        created_ms: 1,
        updated_ms: 2,
    };
    s.push(EventMsg::GoalUpdated { goal });
    s.push(EventMsg::GoalTurnStarted {
        remaining: rein_protocol::GoalBudget::default(),
    });
    s.push(EventMsg::GoalCheckpointed {
        checkpoint: rein_protocol::GoalCheckpoint {
            waited: false,
            turn_id: TurnId::new(),
            progress: false,
            criteria_met: Vec::new(),
            remaining: vec!["tests pass".into()],
            verifier_outcomes: vec![rein_protocol::VerifierOutcome {
                criterion: "tests pass".into(),
                passed: false,
                exit_code: Some(101),
                output: "1 failed".into(),
            }],
            note: "tried".into(),
        },
    });
    s.push(EventMsg::GoalCleared);
    s.push(EventMsg::ShutdownComplete);
    s
}

/// A proposal, its acceptance and a rejection, as a `remember` call records them.
fn memory_events(s: &mut ThreadScript) {
    let id = rein_protocol::MemoryId::new();
    s.push(EventMsg::MemoryProposed {
        call_id: "c-mem".into(),
        memory: Box::new(rein_protocol::MemoryRecord {
            id,
            scope: rein_protocol::MemoryScope::Repo,
            repo: Some(rein_protocol::RepoKey {
                root: PathBuf::from("/work/project"),
                remote: Some("git@example.com:p.git".into()),
            }),
            thread_id: None,
            turn_id: None,
            content: "key=[REDACTED] runs the tests".into(),
            keywords: vec!["tests".into()],
            why: "said twice".into(),
            state: rein_protocol::MemoryState::Proposed,
            created_ms: 1,
            last_used_ms: None,
            use_count: 0,
            redactions: vec![rein_protocol::Redaction {
                kind: "secret_assignment".into(),
                label: "key".into(),
            }],
        }),
    });
    s.push(EventMsg::MemoryAccepted {
        call_id: "c-mem".into(),
        id,
        by: rein_protocol::MemoryDecider::User,
    });
    s.push(EventMsg::MemoryRejected {
        call_id: "c-mem2".into(),
        id: rein_protocol::MemoryId::new(),
        by: rein_protocol::MemoryDecider::Config,
        reason: "consent is never".into(),
    });
}
