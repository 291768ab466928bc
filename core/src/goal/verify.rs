//! Running a goal's verifiers, for `update_goal {status: complete}`. Each kind goes through
//! what the thread already has, so none routes around its policy: a shell command through
//! the thread's `shell` tool (its sandbox, cwd and approval policy), an MCP tool call
//! through the thread's own MCP tool of that server (the kernel's MCP port, with its
//! approval mode and the approval policy), an evaluator prompt through the goal's
//! evaluator model ([`super::evaluator`]).

use std::sync::Arc;

use rein_protocol::{Criterion, ExitStatus, ToolAction, ToolOutcome, Verifier, VerifierOutcome};
use serde_json::json;

use super::evaluator::{Evaluator, Evidence};
use crate::tools::{ToolCall, ToolContext};

/// The name of the tool shell verifiers run through.
const SHELL_TOOL: &str = "shell";

/// How much of a verifier's output is kept (its tail: where failures are).
const VERIFIER_OUTPUT_CHARS: usize = 4_000;

/// What the verifiers of one `update_goal` call need besides the call.
#[derive(Debug)]
pub struct VerifyPlan {
    pub criteria: Vec<Criterion>,
    /// The goal's evaluator, when a criterion asks one.
    pub evaluator: Option<Arc<Evaluator>>,
    pub evidence: Evidence,
}

/// Run criterion `n`'s verifier (the `update_goal` call is `call_id`).
pub async fn run(
    ctx: &ToolContext,
    call_id: &str,
    n: usize,
    criterion: &Criterion,
    plan: &VerifyPlan,
) -> VerifierOutcome {
    let description = criterion.description.as_str();
    let call_id = format!("{call_id}_verify_{n}");
    match &criterion.verify {
        None => failed(description, "no verifier".into()),
        Some(Verifier::Shell { command }) => shell(ctx, call_id, description, command).await,
        Some(Verifier::Mcp {
            server,
            tool,
            arguments,
        }) => {
            let arguments = arguments.clone().unwrap_or_else(|| json!({}));
            mcp(ctx, call_id, description, (server, tool), arguments).await
        }
        Some(Verifier::Evaluator { prompt }) => match &plan.evaluator {
            Some(evaluator) => evaluator.check(description, prompt, &plan.evidence).await,
            None => failed(description, "the goal has no evaluator model".into()),
        },
    }
}

fn failed(criterion: &str, output: String) -> VerifierOutcome {
    VerifierOutcome {
        criterion: criterion.to_owned(),
        passed: false,
        exit_code: None,
        output,
    }
}

async fn shell(
    ctx: &ToolContext,
    call_id: String,
    criterion: &str,
    command: &str,
) -> VerifierOutcome {
    let Some(shell) = ctx.thread.sources.freeze().get(SHELL_TOOL) else {
        return failed(
            criterion,
            "the thread has no shell tool to run the check with".into(),
        );
    };
    let call = ToolCall {
        call_id,
        name: SHELL_TOOL.into(),
        arguments: json!({"command": command}).to_string(),
    };
    let result = shell.run(call, ctx.clone()).await;
    match result.outcome {
        ToolOutcome::Exited { exit, output } => {
            let exit_code = match exit {
                ExitStatus::Code { code } => Some(code),
                _ => None,
            };
            VerifierOutcome {
                criterion: criterion.to_owned(),
                passed: exit_code == Some(0),
                exit_code,
                output: tail(&output, VERIFIER_OUTPUT_CHARS),
            }
        }
        _ => failed(criterion, tail(&result.output, VERIFIER_OUTPUT_CHARS)),
    }
}

/// Call `server`'s `tool` through the thread's own tool for it: the tool whose description
/// of a call is that server's tool (its model-visible name may be hashed, so it is found
/// by what it does, not by its name).
async fn mcp(
    ctx: &ToolContext,
    call_id: String,
    criterion: &str,
    (server, tool): (&str, &str),
    arguments: serde_json::Value,
) -> VerifierOutcome {
    if !arguments.is_object() {
        return failed(
            criterion,
            "the MCP verifier's arguments are not a JSON object".into(),
        );
    }
    // Every MCP tool the thread can run, also one behind `tool_search` not found yet.
    let tools = ctx.thread.sources.runnable();
    let found = tools.iter().find_map(|candidate| {
        let call = ToolCall {
            call_id: call_id.clone(),
            name: candidate.spec().name,
            arguments: arguments.to_string(),
        };
        let is_it = matches!(
            candidate.describe(&call, ctx),
            ToolAction::Mcp { server: s, tool: t, .. } if s == server && t == tool
        );
        is_it.then(|| (Arc::clone(candidate), call))
    });
    let Some((mcp_tool, call)) = found else {
        return failed(
            criterion,
            format!(
                "the thread has no MCP tool {tool} of server {server} (is the server \
                 configured and running?)"
            ),
        );
    };
    let result = mcp_tool.run(call, ctx.clone()).await;
    VerifierOutcome {
        criterion: criterion.to_owned(),
        passed: result.success,
        exit_code: None,
        output: tail(&result.output, VERIFIER_OUTPUT_CHARS),
    }
}

fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    text.chars().skip(count - max).collect()
}
