//! `rein replay ID|PATH` and `rein replay --all`: run recorded sessions again through a
//! fresh kernel (today's configuration, `-c` overrides as `rein exec` takes them) and say
//! whether every step would send the same request and make the same tool calls. The
//! engine is `rein_bootstrap::replay`; this module finds the sessions and prints.
//!
//! Exit codes: 0 identical, 1 a step differs, 2 not replayable (or nothing to replay).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use rein_bootstrap::replay::{
    LivePolicy, LiveWorkspace, Recording, ReplayOptions, Replayer, Report,
};
use rein_core::store::ListQuery;
use rein_core::store::{LoadedRollout, ThreadEntry};
use rein_protocol::ThreadId;
use rein_rollout::RolloutStore;
use rein_tools::BuiltinConfig;
use serde::Serialize;

use crate::exec::RunOptions;

#[derive(Args)]
pub struct ReplayArgs {
    /// The session: its id, or the path of a rollout file (rein's, or Codex's).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    session: Option<String>,
    /// Replay every recorded session (newest first) and print a summary table.
    #[arg(long)]
    all: bool,
    /// With --all: only sessions updated on or after this day (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "DATE", requires = "all")]
    since: Option<String>,
    /// Override a configuration value, as `rein exec -c` does (repeatable).
    #[arg(short = 'c', long = "config", value_name = "key=value")]
    overrides: Vec<String>,
    /// The configuration profile to replay with.
    #[arg(short = 'p', long)]
    profile: Option<String>,
    /// The model to replay with (as `-c model=...`).
    #[arg(short = 'm', long)]
    model: Option<String>,
    /// What the tools do: `recorded` returns each call's recorded result (nothing runs);
    /// `live` runs them for real and compares what each did with the recording. Live, they
    /// run in a scratch copy of the recorded workspace (removed afterwards, the original
    /// left untouched) unless --in-place is given. Commands run under today's policy, never
    /// a looser one read from the recording: the stricter of the recorded sandbox and
    /// `-c sandbox_mode=...` (workspace-write by default), approval policy `never`.
    #[arg(long, value_enum, default_value = "recorded", value_name = "MODE")]
    tools: ToolsMode,
    /// With --tools live: run in a scratch copy of the recorded workspace (the default).
    #[arg(long, conflicts_with = "in_place")]
    scratch: bool,
    /// With --tools live: run in the recorded workspace itself. Its files are changed by
    /// what the session's commands and patches do again.
    #[arg(long)]
    in_place: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ToolsMode {
    Recorded,
    Live,
}

/// One line of `--all`.
#[derive(Serialize)]
struct Row {
    session: String,
    #[serde(flatten)]
    result: RowResult,
}

#[derive(Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
enum RowResult {
    Identical { report: Report },
    Differs { report: Report },
    NotReplayable { reason: String },
}

/// Runs the command; returns the exit code. A setup failure is reported on stderr with its
/// causes and exits 2.
pub async fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    match run_replay(args).await {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(2)
        }
    }
}

async fn run_replay(args: ReplayArgs) -> anyhow::Result<i32> {
    let env = |k: &str| std::env::var(k).ok();
    let home =
        rein_config::rein_home(&env).context("cannot find rein's home: set REIN_HOME or HOME")?;
    let opts = RunOptions::from_overrides(&args.overrides, args.model.as_deref());
    for warning in &opts.warnings {
        eprintln!("warning: {warning}");
    }
    let live = match (args.tools, args.in_place || args.scratch) {
        (ToolsMode::Recorded, true) => bail!("--scratch and --in-place go with --tools live"),
        (ToolsMode::Recorded, false) => None,
        (ToolsMode::Live, _) if args.in_place => Some(LiveWorkspace::InPlace),
        (ToolsMode::Live, _) => Some(LiveWorkspace::Scratch),
    };
    let store = Arc::new(RolloutStore::new(home.clone()));
    let replayer = Replayer::new(
        ReplayOptions {
            home,
            profile: args.profile.clone(),
            overrides: opts.overrides.clone(),
            tools: BuiltinConfig {
                network_access: opts.network_access,
                ..BuiltinConfig::default()
            },
            live,
            live_policy: LivePolicy {
                // Today's configuration (file, profile, `-c sandbox_mode=...`) replaces
                // this default where it sets one (`Replayer::new`).
                sandbox: LivePolicy::default().sandbox,
                network_access: opts.network_access,
            },
        },
        &env,
    )
    .context("setting up the replay kernel")?;
    let code = if args.all {
        run_all(&args, &store, &replayer).await
    } else {
        run_one(&args, &store, &replayer).await
    };
    replayer.shutdown().await;
    code
}

async fn run_one(
    args: &ReplayArgs,
    store: &Arc<RolloutStore>,
    replayer: &Replayer,
) -> anyhow::Result<i32> {
    let Some(target) = args.session.clone() else {
        bail!("name a session (id or rollout path), or use --all");
    };
    let from = Arc::clone(store);
    let loaded = off_runtime(move || load(&from, &target)).await??;
    let recording = match Recording::from_events(&loaded.events) {
        Ok(r) => r,
        Err(why) => {
            if args.json {
                print_json(&RowResult::NotReplayable {
                    reason: why.to_string(),
                })?;
            } else {
                eprintln!("not replayable: {why}");
            }
            return Ok(2);
        }
    };
    let report = replayer.replay(&recording).await?;
    let differs = report.difference.is_some();
    if args.json {
        print_json(&report)?;
    } else {
        let mut out = std::io::stdout().lock();
        write_report(&mut out, &report)?;
        out.flush()?;
    }
    Ok(i32::from(differs))
}

async fn run_all(
    args: &ReplayArgs,
    store: &Arc<RolloutStore>,
    replayer: &Replayer,
) -> anyhow::Result<i32> {
    let since_ms = args.since.as_deref().map(parse_day).transpose()?;
    let from = Arc::clone(store);
    let mut entries = off_runtime(move || list_all(&from)).await??;
    entries.retain(|e| since_ms.is_none_or(|since| e.updated_ms >= since));
    let mut rows = Vec::new();
    for entry in &entries {
        let from = Arc::clone(store);
        let path = entry.path.clone();
        let read =
            off_runtime(move || load_path(&from, &path).map_err(|e| format!("{e:#}"))).await?;
        let result =
            match read.and_then(|l| Recording::from_events(&l.events).map_err(|e| e.to_string())) {
                Err(reason) => RowResult::NotReplayable { reason },
                Ok(recording) => match replayer.replay(&recording).await {
                    Err(e) => RowResult::NotReplayable {
                        reason: e.to_string(),
                    },
                    Ok(report) if report.difference.is_some() => RowResult::Differs { report },
                    Ok(report) => RowResult::Identical { report },
                },
            };
        rows.push(Row {
            session: entry.thread_id.to_string(),
            result,
        });
    }
    let differs = rows
        .iter()
        .filter(|r| matches!(r.result, RowResult::Differs { .. }))
        .count();
    if args.json {
        print_json(&rows)?;
    } else {
        let mut out = std::io::stdout().lock();
        write_table(&mut out, &rows)?;
        out.flush()?;
    }
    Ok(if differs > 0 {
        1
    } else if rows.is_empty() {
        2
    } else {
        0
    })
}

/// Run `f` on a thread of its own: the store reads files and its index, which must not
/// happen on an async executor thread (not even a blocking one, which still sees the
/// runtime).
async fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.await
        .context("the thread reading the session store died")
}

/// Every listed session, newest first.
fn list_all(store: &RolloutStore) -> anyhow::Result<Vec<ThreadEntry>> {
    let mut entries = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list(&ListQuery {
                limit: 500,
                cursor,
                ..ListQuery::default()
            })
            .context("listing sessions")?;
        entries.extend(page.threads);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(entries),
        }
    }
}

/// A session by id (from the store) or by path (rein's format, else Codex's).
fn load(store: &RolloutStore, target: &str) -> anyhow::Result<LoadedRollout> {
    if let Ok(id) = target.parse::<ThreadId>() {
        return store
            .load(id)
            .with_context(|| format!("loading session {target}"));
    }
    let path = PathBuf::from(target);
    if !path.is_file() {
        bail!("`{target}` is neither a session id nor a rollout file");
    }
    load_path(store, &path)
}

fn load_path(store: &RolloutStore, path: &Path) -> anyhow::Result<LoadedRollout> {
    match store.load_path(path) {
        Ok(loaded) if !loaded.events.is_empty() => Ok(loaded),
        rein => rein_rollout::codex::import_codex_rollout(path)
            .or_else(|_| rein.with_context(|| format!("reading {}", path.display()))),
    }
}

fn write_report(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    match &report.difference {
        None => {
            writeln!(
                out,
                "identical: {} turns, {} steps identical",
                report.turns, report.steps
            )?;
        }
        Some(d) => {
            writeln!(
                out,
                "differs at step {} (turn {}, step {} of the turn): {}",
                d.step, d.turn, d.step_in_turn, d.part
            )?;
            write!(out, "{}", d.diff)?;
        }
    }
    if !report.fingerprinted {
        writeln!(
            out,
            "note: the recording has no request fingerprints (written before rein recorded \
             them, or imported from Codex): only tool calls were compared"
        )?;
    }
    Ok(())
}

fn write_table(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    writeln!(out, "{:<36}  RESULT", "SESSION")?;
    for row in rows {
        let result = match &row.result {
            RowResult::Identical { report } => {
                let scope = if report.fingerprinted {
                    ""
                } else {
                    " (tool calls only: no request fingerprints)"
                };
                format!(
                    "identical: {} turns, {} steps{scope}",
                    report.turns, report.steps
                )
            }
            RowResult::Differs { report } => match &report.difference {
                Some(d) => format!("differs at step {}: {}", d.step, d.part),
                None => "differs".to_owned(),
            },
            RowResult::NotReplayable { reason } => format!("not replayable: {reason}"),
        };
        writeln!(out, "{:<36}  {result}", row.session)?;
    }
    Ok(())
}

fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Midnight UTC of `YYYY-MM-DD`, in Unix milliseconds.
fn parse_day(day: &str) -> anyhow::Result<u64> {
    let bad = || anyhow::anyhow!("--since {day}: expected a date as YYYY-MM-DD");
    let mut parts = day.splitn(3, '-').map(str::parse::<i64>);
    let (Some(Ok(y)), Some(Ok(m)), Some(Ok(d))) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
        return Err(bad());
    }
    // Days from 1970-01-01 to a civil date (proleptic Gregorian).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400_000).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_day_reads_utc_midnights() {
        assert_eq!(parse_day("1970-01-01").unwrap(), 0);
        assert_eq!(parse_day("2000-02-29").unwrap(), 951_782_400_000);
        assert!(parse_day("2000-13-01").is_err());
        assert!(parse_day("yesterday").is_err());
    }
}
