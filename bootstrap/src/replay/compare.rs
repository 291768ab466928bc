//! Comparing one replayed step with its recording: the request fingerprint part by part
//! (model, instructions, tools, reasoning effort, input items), then the tool calls and,
//! when the tools ran live, what each call did. The first part that differs is reported
//! with a readable diff of it.

use rein_core::model::fingerprint::{item_hash, model_view, text_hash, tool_hash};
use rein_core::model::ModelRequest;
use rein_core::tools::ToolResult;
use rein_protocol::{ExitStatus, Item, RequestFingerprint, ToolOutcome};
use serde::Serialize;

use super::recording::{RecordedStep, Recording};
use super::tools::same_outcome;

/// Which part of a step differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "part", content = "index", rename_all = "snake_case")]
pub enum Part {
    Model,
    Instructions,
    Tools,
    ReasoningEffort,
    /// Input item `k` (0-based) differs, or is there on one side only.
    InputItem(usize),
    ToolCalls,
    /// What call `k` (0-based, in its step) did when run live: its exit code, output,
    /// changes.
    ToolOutcome(usize),
    /// The replay took a step the recording does not have, or stopped before one it has.
    Steps,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Model => f.write_str("model"),
            Part::Instructions => f.write_str("instructions"),
            Part::Tools => f.write_str("tools"),
            Part::ReasoningEffort => f.write_str("reasoning effort"),
            Part::InputItem(k) => write!(f, "input item {k}"),
            Part::ToolCalls => f.write_str("tool calls"),
            Part::ToolOutcome(k) => write!(f, "tool outcome of call {k}"),
            Part::Steps => f.write_str("steps"),
        }
    }
}

/// What the replay saw of one of its steps.
#[derive(Clone, Debug, Default)]
pub struct ObservedStep {
    pub fingerprint: Option<RequestFingerprint>,
    /// The request itself, for showing what differs.
    pub request: Option<ModelRequest>,
    pub calls: Vec<ObservedCall>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedCall {
    pub name: String,
    pub arguments: String,
    pub success: bool,
    /// What the call's output item says it did (absent until it ended).
    pub result: Option<ToolResult>,
}

/// Every input hash of a turn's last request, on both sides: a fingerprint names only
/// what its request adds to the turn's previous one.
#[derive(Default)]
pub struct TurnInputs {
    recorded: Vec<String>,
    replayed: Vec<String>,
}

/// The first difference of a step: which part and a diff of it (`-` recorded, `+` replay).
pub fn compare_step(
    recording: &Recording,
    instructions: &str,
    recorded: &RecordedStep,
    replayed: &ObservedStep,
    inputs: &mut TurnInputs,
    live: bool,
) -> Option<(Part, String)> {
    if let (Some(rec), Some(rep)) = (&recorded.fingerprint, &replayed.fingerprint) {
        // A recording that reuses more items than its previous step had is damaged:
        // none of its input can be trusted, so every item counts as different.
        inputs.recorded = rec.full_input(&inputs.recorded).unwrap_or_default();
        inputs.replayed = rep.full_input(&inputs.replayed).unwrap_or_default();
        let input = (inputs.recorded.as_slice(), inputs.replayed.as_slice());
        if let Some(found) = compare_fingerprints(
            recording,
            instructions,
            recorded,
            (rec, rep),
            input,
            replayed,
        ) {
            return Some(found);
        }
    }
    let recorded_calls: Vec<ObservedCall> = recorded
        .calls
        .iter()
        .map(|c| ObservedCall {
            name: c.name.clone(),
            arguments: c.arguments.clone(),
            success: c.result.as_ref().is_some_and(|r| r.success),
            result: c.result.clone(),
        })
        .collect();
    // Live, a call's success is part of what it did, compared (and shown) with the rest
    // of its outcome; replayed, it is the recorded one unless the call went astray.
    let same_call = |a: &ObservedCall, b: &ObservedCall| {
        a.name == b.name && a.arguments == b.arguments && (live || a.success == b.success)
    };
    let same_calls = recorded_calls.len() == replayed.calls.len()
        && recorded_calls
            .iter()
            .zip(&replayed.calls)
            .all(|(a, b)| same_call(a, b));
    if !same_calls {
        let show = |calls: &[ObservedCall]| -> String {
            calls
                .iter()
                .map(|c| {
                    if live {
                        return format!("{} {}\n", c.name, c.arguments);
                    }
                    let status = if c.success { "ok" } else { "failed" };
                    format!("{} {} → {status}\n", c.name, c.arguments)
                })
                .collect()
        };
        return Some((
            Part::ToolCalls,
            text_diff(&show(&recorded_calls), &show(&replayed.calls)),
        ));
    }
    if live {
        for (k, (rec, rep)) in recorded_calls.iter().zip(&replayed.calls).enumerate() {
            let (Some(old), Some(new)) = (&rec.result, &rep.result) else {
                continue;
            };
            if !same_outcome(old, new) {
                return Some((
                    Part::ToolOutcome(k),
                    text_diff(&show_outcome(old), &show_outcome(new)),
                ));
            }
        }
    }
    None
}

/// A call's outcome as lines to diff: a command's exit and output, a patch's files and
/// their diffs, a tool's text or why it failed.
fn show_outcome(result: &ToolResult) -> String {
    let lines = |text: &str| {
        let mut text = text.to_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    };
    match &result.outcome {
        ToolOutcome::Exited { exit, output } => {
            let exit = match exit {
                ExitStatus::Code { code } => format!("exit code {code}"),
                ExitStatus::Signal { signal } => format!("killed by signal {signal}"),
                ExitStatus::TimedOut { after_ms } => format!("timed out after {after_ms} ms"),
                ExitStatus::Cancelled => "cancelled".to_owned(),
            };
            format!("{exit}\n{}", lines(output))
        }
        ToolOutcome::Patched { changes } => changes
            .iter()
            .map(|c| {
                let kind = format!("{:?}", c.kind).to_lowercase();
                format!("{kind} {}\n{}", c.path.display(), lines(&c.unified_diff))
            })
            .collect(),
        ToolOutcome::Returned { text, .. } => format!("returned\n{}", lines(text)),
        ToolOutcome::Failed { message } => format!("failed\n{}", lines(message)),
        ToolOutcome::Declined { by, reason } => {
            let by = format!("{by:?}").to_lowercase();
            format!("declined by {by}\n{}", lines(reason))
        }
        other => lines(&serde_json::to_string_pretty(other).unwrap_or_default()),
    }
}

fn compare_fingerprints(
    recording: &Recording,
    instructions: &str,
    recorded: &RecordedStep,
    (rec, rep): (&RequestFingerprint, &RequestFingerprint),
    (rec_input, rep_input): (&[String], &[String]),
    replayed: &ObservedStep,
) -> Option<(Part, String)> {
    let request = replayed.request.as_ref();
    if rec.model != rep.model {
        return Some((Part::Model, format!("- {}\n+ {}\n", rec.model, rep.model)));
    }
    if rec.instructions != rep.instructions {
        let old = if text_hash(instructions) == rec.instructions {
            instructions.to_owned()
        } else {
            format!(
                "(recorded instructions with hash {}, text not kept)\n",
                rec.instructions
            )
        };
        let new = request.map_or_else(
            || format!("(hash {})\n", rep.instructions),
            |r| r.instructions.clone(),
        );
        return Some((Part::Instructions, text_diff(&old, &new)));
    }
    if rec.tools != rep.tools {
        return Some((Part::Tools, tools_diff(rec, rep, request)));
    }
    if rec.reasoning_effort != rep.reasoning_effort {
        let show = |e: &Option<rein_protocol::ReasoningEffort>| {
            e.as_ref()
                .map_or_else(|| "default".to_owned(), ToString::to_string)
        };
        return Some((
            Part::ReasoningEffort,
            format!(
                "- {}\n+ {}\n",
                show(&rec.reasoning_effort),
                show(&rep.reasoning_effort)
            ),
        ));
    }
    let longest = rec_input.len().max(rep_input.len());
    let k = (0..longest).find(|&k| rec_input.get(k) != rep_input.get(k))?;
    let old = recorded_item(recording, recorded, k, rec_input.get(k));
    let new = request
        .and_then(|r| r.input.get(k))
        .map(|item| pretty(item))
        .or_else(|| rep_input.get(k).map(|h| format!("(item with hash {h})\n")))
        .unwrap_or_else(|| "(no such item)\n".to_owned());
    Some((Part::InputItem(k), text_diff(&old, &new)))
}

/// The recorded input item `k`, when the rollout still has it as sent.
fn recorded_item(
    recording: &Recording,
    step: &RecordedStep,
    k: usize,
    hash: Option<&String>,
) -> String {
    let Some(hash) = hash else {
        return "(no such item)\n".to_owned();
    };
    match recording
        .history
        .get(..step.input_len)
        .and_then(|h| h.get(k))
    {
        Some(item) if &item_hash(item) == hash => pretty(item),
        _ => format!("(item with hash {hash})\n"),
    }
}

fn pretty(item: &Item) -> String {
    let mut text = serde_json::to_string_pretty(&model_view(item)).unwrap_or_default();
    text.push('\n');
    text
}

fn tools_diff(
    rec: &RequestFingerprint,
    rep: &RequestFingerprint,
    request: Option<&ModelRequest>,
) -> String {
    let mut out = String::new();
    for tool in &rec.tools {
        match rep.tools.iter().find(|t| t.name == tool.name) {
            None => out.push_str(&format!("- {} (only in the recording)\n", tool.name)),
            Some(now) if now.hash != tool.hash => {
                out.push_str(&format!("~ {}: its spec changed\n", tool.name));
                let spec = request.and_then(|r| r.tools.iter().find(|s| s.name == tool.name));
                if let Some(spec) = spec.filter(|s| tool_hash(s) == now.hash) {
                    let text = serde_json::to_string_pretty(spec).unwrap_or_default();
                    for line in text.lines() {
                        out.push_str(&format!("    {line}\n"));
                    }
                }
            }
            Some(_) => {}
        }
    }
    for tool in &rep.tools {
        if !rec.tools.iter().any(|t| t.name == tool.name) {
            out.push_str(&format!("+ {} (only in the replay)\n", tool.name));
        }
    }
    if out.is_empty() {
        let names = |f: &RequestFingerprint| {
            f.tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out = format!(
            "the same tools in another order\n- {}\n+ {}\n",
            names(rec),
            names(rep)
        );
    }
    out
}

/// A unified line diff, recording first.
pub fn text_diff(old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("recorded", "replay")
        .to_string()
}
