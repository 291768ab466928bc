//! The `remember` tool: the model proposes a memory (content, scope, why). The content is
//! redacted first and bounded; a `thread` memory is kept at once; a `repo` or `user` one
//! follows `[memory] consent` (ask: an approval request through the one client-request
//! path, so every front end shows it as an approval). The proposal and its answer are
//! events of the thread's rollout, and the answer, yes or no, is the call's output: a
//! refused memory is never dropped without the model hearing of it.

use futures::future::BoxFuture;
use rein_protocol::{
    ApprovalDecision, ClientRequest, Decliner, EventMsg, MemoryConsent, MemoryDecider, MemoryId,
    MemoryRecord, MemoryScope, MemoryState, ToolOutcome, MAX_MEMORY_BYTES,
};
use serde::Deserialize;

use super::redact::redact;
use super::{Memory, MemoryUpdate};
use crate::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

/// The tool's name.
pub const REMEMBER: &str = "remember";

/// What a `remember` call records about its memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryFact {
    Proposed(Box<MemoryRecord>),
    Accepted {
        id: MemoryId,
        by: MemoryDecider,
    },
    Rejected {
        id: MemoryId,
        by: MemoryDecider,
        reason: String,
    },
}

impl MemoryFact {
    pub fn into_event(self, call_id: &str) -> EventMsg {
        let call_id = call_id.to_owned();
        match self {
            MemoryFact::Proposed(memory) => EventMsg::MemoryProposed { call_id, memory },
            MemoryFact::Accepted { id, by } => EventMsg::MemoryAccepted { call_id, id, by },
            MemoryFact::Rejected { id, by, reason } => EventMsg::MemoryRejected {
                call_id,
                id,
                by,
                reason,
            },
        }
    }
}

#[derive(Deserialize)]
struct Args {
    content: String,
    #[serde(default = "default_scope")]
    scope: MemoryScope,
    #[serde(default)]
    why: String,
    #[serde(default)]
    keywords: Vec<String>,
}

fn default_scope() -> MemoryScope {
    MemoryScope::Repo
}

/// `remember`, for threads of a kernel with memory on.
pub struct RememberTool {
    memory: Memory,
}

impl RememberTool {
    pub fn new(memory: Memory) -> Self {
        Self { memory }
    }

    /// The record a call proposes, redacted and bounded.
    async fn propose(&self, args: Args, ctx: &ToolContext) -> Result<MemoryRecord, String> {
        let (content, redactions) = redact(args.content.trim());
        if content.is_empty() {
            return Err("nothing to remember: `content` is empty".into());
        }
        if content.len() > MAX_MEMORY_BYTES {
            return Err(format!(
                "a memory holds at most {MAX_MEMORY_BYTES} bytes; this one has {}: say it shorter",
                content.len()
            ));
        }
        let repo = match args.scope {
            MemoryScope::Repo => Some(self.memory.store.repo_of(&ctx.settings.cwd).await),
            MemoryScope::User | MemoryScope::Thread => None,
        };
        let (why, _) = redact(args.why.trim());
        Ok(MemoryRecord {
            id: MemoryId::new(),
            scope: args.scope,
            repo,
            thread_id: Some(ctx.thread_id),
            turn_id: Some(ctx.turn_id),
            content,
            keywords: args.keywords.iter().map(|k| redact(k).0).collect(),
            why,
            state: MemoryState::Proposed,
            created_ms: (self.memory.clock)(),
            last_used_ms: None,
            use_count: 0,
            redactions,
        })
    }

    /// Who decides on `record`, and what: `None` means ask the user.
    fn decide_without_asking(&self, record: &MemoryRecord) -> Option<bool> {
        match (record.scope, self.memory.policy.consent) {
            (MemoryScope::Thread, _) | (_, MemoryConsent::Auto) => Some(true),
            (_, MemoryConsent::Never) => Some(false),
            (_, MemoryConsent::Ask) => None,
        }
    }

    /// Ask the user about `record`; the decider and whether it is kept.
    async fn ask(&self, record: &MemoryRecord, ctx: &ToolContext) -> (MemoryDecider, bool) {
        let request = ClientRequest::Memory {
            id: record.id,
            scope: record.scope,
            content: record.content.clone(),
            why: record.why.clone(),
            redactions: record.redactions.clone(),
        };
        match ctx.request_approval(request, None).await {
            Ok(ApprovalDecision::Approve | ApprovalDecision::ApproveForSession) => {
                (MemoryDecider::User, true)
            }
            Ok(_) => (MemoryDecider::User, false),
            Err(_) => (MemoryDecider::Unanswered, false),
        }
    }

    async fn call(&self, call: ToolCall, ctx: ToolContext) -> ToolResult {
        let args: Args = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(e) => return ToolResult::err(format!("invalid arguments: {e}")),
        };
        let record = match self.propose(args, &ctx).await {
            Ok(record) => record,
            Err(message) => return ToolResult::err(message),
        };
        let (id, scope) = (record.id, record.scope);
        let said = redaction_note(&record);
        if let Err(e) = self.memory.store.insert(record.clone()).await {
            return ToolResult::err(format!("the memory could not be stored: {e}"));
        }
        if !ctx
            .record_memory(MemoryFact::Proposed(Box::new(record.clone())))
            .await
        {
            return ToolResult::err("the turn ended before the memory was proposed");
        }
        let (by, keep) = match self.decide_without_asking(&record) {
            Some(keep) => (MemoryDecider::Config, keep),
            None => self.ask(&record, &ctx).await,
        };
        let state = if keep {
            MemoryState::Accepted
        } else {
            MemoryState::Rejected
        };
        let update = MemoryUpdate {
            state: Some(state),
            ..MemoryUpdate::default()
        };
        if let Err(e) = self.memory.store.update(id, update).await {
            return ToolResult::err(format!("the memory's answer could not be stored: {e}"));
        }
        if keep {
            ctx.record_memory(MemoryFact::Accepted { id, by }).await;
            let text = format!(
                "Remembered as memory {id} ({} scope).{said}",
                scope.as_str()
            );
            return ToolResult::new(
                text.clone(),
                true,
                ToolOutcome::Returned {
                    text,
                    structured: None,
                    content: Vec::new(),
                },
            );
        }
        let reason = match by {
            MemoryDecider::User => "the user declined to keep it",
            MemoryDecider::Config => {
                "memories at this scope are off ([memory] consent = \"never\")"
            }
            MemoryDecider::Unanswered => "nobody could be asked to approve it",
        };
        ctx.record_memory(MemoryFact::Rejected {
            id,
            by,
            reason: reason.to_owned(),
        })
        .await;
        let decliner = if by == MemoryDecider::User {
            Decliner::User
        } else {
            Decliner::Policy
        };
        ToolResult::declined(
            decliner,
            format!("Not remembered ({} scope): {reason}.{said}", scope.as_str()),
        )
    }
}

/// What the model is told about redactions, with a leading space; empty when none.
fn redaction_note(record: &MemoryRecord) -> String {
    if record.redactions.is_empty() {
        return String::new();
    }
    let labels: Vec<&str> = record.redactions.iter().map(|r| r.label.as_str()).collect();
    format!(
        " {} secret(s) were redacted before storing ({}).",
        labels.len(),
        labels.join(", ")
    )
}

impl Tool for RememberTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: REMEMBER.into(),
            description: "Keep a short fact for later threads (a convention, a command that \
                works, a preference the user stated). `thread` scope lasts for this thread; \
                `repo` applies to threads in this repository; `user` to every thread. Repo \
                and user memories may need the user's approval; the answer is this call's \
                output. Never store secrets: they are redacted."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "The fact, at most 2 KB."},
                    "scope": {"type": "string", "enum": ["thread", "repo", "user"]},
                    "why": {"type": "string", "description": "Why it is worth keeping."},
                    "keywords": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["content", "scope"],
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.call(call, ctx))
    }
}
