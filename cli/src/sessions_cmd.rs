//! `rein sessions list|show`: the persisted sessions of `$REIN_HOME`, for people. `list`
//! prints a table (id, last update, cwd, first message), newest first; `show` prints one
//! session's conversation (or, with `--json`, its events as stored).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use rein_core::store::ListQuery;
use rein_core::trajectory;
use rein_protocol::trajectory::{StepStatus, TurnOutcome, TurnTrajectory};
use rein_protocol::{EventMsg, Item, ThreadId};
use rein_rollout::RolloutStore;

#[derive(Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// List sessions, most recently updated first.
    List {
        /// Only sessions whose working directory is this one.
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Only sessions whose first message contains this text.
        #[arg(long)]
        search: Option<String>,
        /// List archived sessions instead.
        #[arg(long)]
        archived: bool,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Print one session's conversation.
    Show {
        /// The session (thread) id.
        id: String,
        /// Print the stored events as JSON lines instead.
        #[arg(long)]
        json: bool,
    },
    /// Print one session's trajectory: per turn, the steps taken and how the turn ended.
    Trajectory {
        /// The session (thread) id.
        id: String,
        /// Print the trajectory as JSON (one array of turns).
        #[arg(long)]
        json: bool,
    },
    /// Rebuild the listing index from the rollout files (the files are the source of truth).
    Reindex,
    /// Move a session out of the listed set (it can still be shown, resumed and forked).
    Archive { id: String },
    /// Bring an archived session back into the listed set.
    Unarchive { id: String },
}

fn parse_id(id: &str) -> anyhow::Result<ThreadId> {
    id.parse()
        .with_context(|| format!("`{id}` is not a session id (see `rein sessions list`)"))
}

pub fn run(args: SessionsArgs) -> anyhow::Result<()> {
    let env = |k: &str| std::env::var(k).ok();
    let home =
        rein_config::rein_home(&env).context("cannot find rein's home: set REIN_HOME or HOME")?;
    let store = RolloutStore::new(home);
    let mut out = std::io::stdout().lock();
    match args.command {
        SessionsCommand::List {
            cwd,
            search,
            archived,
            limit,
        } => list(
            &store,
            &mut out,
            &ListQuery {
                limit,
                cwd,
                search,
                archived,
                ..ListQuery::default()
            },
        )?,
        SessionsCommand::Reindex => reindex(&store, &mut out)?,
        SessionsCommand::Archive { id } => {
            let path = store
                .archive(parse_id(&id)?)
                .with_context(|| format!("archiving {id}"))?;
            writeln!(out, "archived {id} ({})", path.display())?;
        }
        SessionsCommand::Unarchive { id } => {
            let path = store
                .unarchive(parse_id(&id)?)
                .with_context(|| format!("unarchiving {id}"))?;
            writeln!(out, "unarchived {id} ({})", path.display())?;
        }
        SessionsCommand::Trajectory { id, json } => {
            let thread = parse_id(&id)?;
            let loaded = store
                .load(thread)
                .with_context(|| format!("loading session {id}"))?;
            let turns = trajectory::project(&loaded.events);
            if json {
                serde_json::to_writer_pretty(&mut out, &turns)?;
                writeln!(out)?;
            } else {
                show_trajectory(&mut out, &turns)?;
            }
        }
        SessionsCommand::Show { id, json } => show(&store, &mut out, &id, json)?,
    }
    out.flush()?;
    Ok(())
}

/// `rein sessions list`: a line per session, newest first.
fn list(store: &RolloutStore, out: &mut impl Write, query: &ListQuery) -> anyhow::Result<()> {
    let page = store.list(query).context("listing sessions")?;
    writeln!(
        out,
        "{:<36}  {:<16}  {:<30}  {:<14}  NAME OR FIRST MESSAGE",
        "ID", "UPDATED", "CWD", "GOAL"
    )?;
    for t in page.threads {
        writeln!(
            out,
            "{:<36}  {:<16}  {:<30}  {:<14}  {}",
            t.thread_id,
            utc_minute(t.updated_ms),
            clip(&t.cwd.display().to_string(), 30),
            t.goal.map_or("-", rein_protocol::GoalStatus::as_str),
            clip(
                t.name
                    .as_deref()
                    .or(t.title.as_deref())
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or(""),
                60
            ),
        )?;
    }
    Ok(())
}

/// `rein sessions reindex`: the index rebuilt from the rollouts, and what was odd in them.
fn reindex(store: &RolloutStore, out: &mut impl Write) -> anyhow::Result<()> {
    let report = store.reindex().context("rebuilding the session index")?;
    writeln!(out, "indexed {} sessions", report.threads)?;
    for (thread, kept, others) in &report.duplicates {
        for other in others {
            writeln!(
                out,
                "duplicate: {thread} is also in {} (kept {})",
                other.display(),
                kept.display()
            )?;
        }
    }
    for (path, why) in &report.skipped {
        writeln!(out, "skipped {}: {why}", path.display())?;
    }
    Ok(())
}

/// `rein sessions show`: the session's events (as JSON lines with `--json`), its task graph
/// and its goal.
fn show(store: &RolloutStore, out: &mut impl Write, id: &str, json: bool) -> anyhow::Result<()> {
    let thread = parse_id(id)?;
    let loaded = store
        .load(thread)
        .with_context(|| format!("loading session {id}"))?;
    if json {
        for event in &loaded.events {
            serde_json::to_writer(&mut *out, event)?;
            writeln!(out)?;
        }
        return Ok(());
    }
    let meta = &loaded.meta;
    writeln!(out, "session {}", meta.thread_id)?;
    writeln!(
        out,
        "created {} · model {} · {}",
        meta.created_at,
        meta.model,
        meta.cwd.display()
    )?;
    if let Some(parent) = meta.forked_from {
        writeln!(out, "forked from {parent}")?;
    }
    for event in &loaded.events {
        show_event(&mut *out, &event.msg)?;
    }
    if let Some(graph) = crate::exec::graph_view::GraphView::last_of(&loaded.events) {
        writeln!(out, "\n{graph}")?;
    }
    let folded = rein_core::thread::state::ThreadState::from_events(&loaded.events);
    show_goal(&mut *out, &folded.goal)?;
    Ok(())
}

/// The session's goal as the rollout folds it, and its checkpoints.
fn show_goal(out: &mut impl Write, state: &rein_core::goal::GoalState) -> std::io::Result<()> {
    let Some(goal) = &state.goal else {
        return Ok(());
    };
    writeln!(out, "\ngoal: {}", goal.status.as_str())?;
    writeln!(out, "  objective: {}", clip(&goal.objective, 200))?;
    let u = &goal.usage;
    writeln!(
        out,
        "  used: {} tokens, {} ms, {} goal turns",
        u.tokens, u.time_ms, u.turns
    )?;
    if let Some(reason) = &goal.reason {
        writeln!(out, "  reason: {}", clip(reason, 300))?;
    }
    writeln!(out, "  last changed by: {}", goal.origin.as_str())?;
    for (n, c) in state.checkpoints.iter().enumerate() {
        let progress = if c.progress {
            "progress"
        } else {
            "no progress"
        };
        writeln!(
            out,
            "  checkpoint {} · turn {} · {progress} · met {}/{} · {}",
            n + 1,
            c.turn_id,
            c.criteria_met.len(),
            c.criteria_met.len() + c.remaining.len(),
            clip(&c.note, 100)
        )?;
    }
    Ok(())
}

fn show_event(out: &mut impl Write, msg: &EventMsg) -> std::io::Result<()> {
    match msg {
        EventMsg::ItemCompleted { item } => match item {
            Item::UserMessage { content, .. } => {
                writeln!(out, "\nuser: {}", item.message_text().unwrap_or_default())?;
                show_skills(out, content)
            }
            Item::AgentMessage { text, .. } => writeln!(out, "\nassistant: {text}"),
            Item::ToolCall {
                name, arguments, ..
            } => {
                writeln!(out, "  tool {name} {}", clip(arguments, 100))
            }
            Item::ToolOutput {
                success, output, ..
            } => writeln!(
                out,
                "  {} {}",
                if *success { "ok" } else { "failed" },
                clip(output.lines().next().unwrap_or(""), 100)
            ),
            Item::Interruption { .. } => writeln!(out, "  (interrupted)"),
            Item::Reasoning { .. } | Item::DeveloperMessage { .. } => Ok(()),
        },
        EventMsg::TurnFailed { message, .. } => writeln!(out, "  turn failed: {message}"),
        EventMsg::ThreadNamed { name } => writeln!(out, "  named: {name}"),
        EventMsg::MemoryModeSet { mode } => writeln!(out, "  memory: {}", mode.as_str()),
        EventMsg::SkillActivated { skill, .. } => {
            let short = skill.sha256.get(..12).unwrap_or(&skill.sha256);
            let how = if skill.implicit { ", implicit" } else { "" };
            writeln!(
                out,
                "  skill {} ({}, sha256 {short}{how})",
                skill.name,
                skill.path.display()
            )
        }
        _ => Ok(()),
    }
}

/// The skills a user message attached: which file, and which bytes of it.
fn show_skills(out: &mut impl Write, content: &[rein_protocol::InputPart]) -> std::io::Result<()> {
    for part in content {
        if let rein_protocol::InputPart::Skill {
            name, path, sha256, ..
        } = part
        {
            let short = sha256.get(..12).unwrap_or(sha256);
            writeln!(out, "  skill {name} ({}, sha256 {short})", path.display())?;
        }
    }
    Ok(())
}

fn show_trajectory(out: &mut impl Write, turns: &[TurnTrajectory]) -> std::io::Result<()> {
    for (n, turn) in turns.iter().enumerate() {
        let outcome = match &turn.outcome {
            TurnOutcome::Success => "success".to_owned(),
            TurnOutcome::Failed { message } => format!("failed: {}", clip(message, 80)),
            TurnOutcome::Cancelled { reason } => format!("cancelled ({reason})"),
            TurnOutcome::Unfinished => "unfinished".to_owned(),
        };
        let took = turn
            .duration_ms
            .map(|ms| format!(", {ms} ms"))
            .unwrap_or_default();
        writeln!(out, "turn {} · {} · {outcome}{took}", n + 1, turn.turn_id)?;
        if let Some(input) = &turn.input {
            writeln!(
                out,
                "  user: {}",
                clip(input.lines().next().unwrap_or(""), 100)
            )?;
        }
        for (i, step) in turn.steps.iter().enumerate() {
            let status = match step.status {
                StepStatus::Succeeded => "ok",
                StepStatus::Failed => "failed",
                StepStatus::Declined => "declined",
                StepStatus::Interrupted => "interrupted",
            };
            let input = clip(&step.action_input.to_string(), 80);
            writeln!(
                out,
                "  {}. {} {input} → {status} ({} ms)",
                i + 1,
                step.action,
                step.duration_ms
            )?;
            if let Some(obs) = step.observation.as_deref().filter(|o| !o.is_empty()) {
                writeln!(out, "     {}", clip(obs.lines().next().unwrap_or(""), 100))?;
            }
        }
        if let Some(last) = &turn.last_agent_message {
            writeln!(
                out,
                "  assistant: {}",
                clip(last.lines().next().unwrap_or(""), 100)
            )?;
        }
    }
    Ok(())
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// `YYYY-MM-DD HH:MM` (UTC) of a Unix time in milliseconds.
fn utc_minute(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{d:02} {h:02}:{m:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_minute_formats_known_instants() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00");
        assert_eq!(utc_minute(1_796_013_900_000), "2026-11-30 04:45");
    }
}
