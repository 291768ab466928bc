//! `rein memory list|show|search|add|forget|purge|export|import|consolidate`: the memories of
//! `$REIN_HOME/memory.sqlite`, for people and scripts (docs/memory.md). Blocking: no
//! runtime runs here, so the store is used directly.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use rein_core::memory::redact::redact;
use rein_core::memory::{retire_cutoff, MemoryFilter, MemoryUpdate};
use rein_protocol::{MemoryId, MemoryRecord, MemoryScope, MemoryState, ThreadId, MAX_MEMORY_BYTES};
use rein_rollout::memory::SqliteMemoryStore;

#[derive(Args)]
pub struct MemoryArgs {
    #[command(subcommand)]
    command: MemoryCommand,
}

#[derive(Clone, Copy, ValueEnum)]
enum Scope {
    User,
    Repo,
    Thread,
}

impl From<Scope> for MemoryScope {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::User => MemoryScope::User,
            Scope::Repo => MemoryScope::Repo,
            Scope::Thread => MemoryScope::Thread,
        }
    }
}

#[derive(Args)]
struct Select {
    /// Only memories of this scope.
    #[arg(long, value_enum)]
    scope: Option<Scope>,
    /// Repository memories only of the repository this directory is in (default: all).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cd: Option<PathBuf>,
    /// Every state (forgotten, rejected, retired too), not only accepted and proposed.
    #[arg(long)]
    all: bool,
    /// One JSON record a line.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// List memories, newest first.
    List {
        #[command(flatten)]
        select: Select,
    },
    /// Print one memory as JSON.
    Show { id: String },
    /// Memories whose content or keywords match the words of TEXT.
    Search {
        text: String,
        #[command(flatten)]
        select: Select,
    },
    /// Keep a memory (accepted at once: you are the user). Secrets are redacted.
    Add {
        content: String,
        #[arg(long, value_enum, default_value = "repo")]
        scope: Scope,
        /// The repository of a repo memory: the one this directory is in (default: here).
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        cd: Option<PathBuf>,
        /// The thread of a thread memory.
        #[arg(long)]
        thread: Option<String>,
        #[arg(long = "keyword")]
        keywords: Vec<String>,
    },
    /// Never show this memory again (kept as a tombstone until `purge`).
    Forget { id: String },
    /// Delete forgotten, rejected and retired memories for good.
    Purge,
    /// Write memories as JSON lines to stdout.
    Export {
        #[arg(long, value_enum)]
        scope: Option<Scope>,
    },
    /// Read memories written by `export` (a file, or `-` for stdin); ones already kept
    /// (the same id) are skipped. Their content is redacted again.
    Import { file: PathBuf },
    /// Write the accepted memories of a scope into one MEMORY.md under
    /// $REIN_HOME/memories (a projection: the database stays the truth). Default: the
    /// user's, and those of the repository the directory is in.
    Consolidate {
        /// Only this scope (user or repo).
        #[arg(long, value_enum)]
        scope: Option<Scope>,
        /// The repository of the repo file: the one this directory is in (default: here).
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        cd: Option<PathBuf>,
    },
}

pub fn run(args: MemoryArgs) -> anyhow::Result<()> {
    let env = |k: &str| std::env::var(k).ok();
    let home =
        rein_config::rein_home(&env).context("cannot find rein's home: set REIN_HOME or HOME")?;
    let store = SqliteMemoryStore::in_home(&home);
    let settings = rein_config::memory::read_memory_settings(&home)?;
    // What reads the store retires first, as a turn's recall does, so a listing never
    // shows as kept a memory the next turn would not be given.
    if !matches!(
        args.command,
        MemoryCommand::Add { .. } | MemoryCommand::Import { .. }
    ) {
        retire(&store, settings.max_unused_days)?;
    }
    match args.command {
        MemoryCommand::List { select } => list(&store, select, None),
        MemoryCommand::Search { text, select } => list(&store, select, Some(text)),
        MemoryCommand::Show { id } => {
            let id = parse_id(&id)?;
            let record = store
                .with_db(|db| db.get(id))?
                .with_context(|| format!("no memory {id}"))?;
            println!("{}", serde_json::to_string_pretty(&record)?);
            Ok(())
        }
        MemoryCommand::Add {
            content,
            scope,
            cd,
            thread,
            keywords,
        } => add(&store, content, scope.into(), cd, thread, keywords),
        MemoryCommand::Forget { id } => {
            let id = parse_id(&id)?;
            let update = MemoryUpdate {
                state: Some(MemoryState::Forgotten),
                ..MemoryUpdate::default()
            };
            store.with_db(|db| db.update(id, &update))?;
            println!("forgot {id}");
            Ok(())
        }
        MemoryCommand::Purge => {
            let purged = store.with_db(|db| db.purge())?;
            println!("purged {purged} memories");
            Ok(())
        }
        MemoryCommand::Export { scope } => {
            let filter = MemoryFilter {
                scope: scope.map(Into::into),
                ..MemoryFilter::default()
            };
            let mut out = std::io::stdout().lock();
            for record in store.with_db(|db| db.list(&filter))? {
                writeln!(out, "{}", serde_json::to_string(&record)?)?;
            }
            Ok(())
        }
        MemoryCommand::Import { file } => import(&store, &file),
        MemoryCommand::Consolidate { scope, cd } => consolidate(&store, &home, scope, cd),
    }
}

fn consolidate(
    store: &SqliteMemoryStore,
    home: &std::path::Path,
    scope: Option<Scope>,
    cd: Option<PathBuf>,
) -> anyhow::Result<()> {
    use rein_rollout::memory::consolidate::{consolidate, Consolidation};
    let repo = || -> anyhow::Result<Consolidation> {
        let dir = match &cd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()?,
        };
        Ok(Consolidation::Repo(rein_rollout::memory::repo::repo_of(
            &dir,
        )))
    };
    let targets = match scope {
        None => vec![Consolidation::User, repo()?],
        Some(Scope::User) => vec![Consolidation::User],
        Some(Scope::Repo) => vec![repo()?],
        Some(Scope::Thread) => {
            bail!("thread memories are not consolidated (they end with their thread): give --scope user or repo")
        }
    };
    for target in &targets {
        let done = consolidate(store, home, target)?;
        let verb = if done.written { "wrote" } else { "unchanged" };
        println!(
            "{verb} {} ({} memories)",
            done.path.display(),
            done.memories
        );
    }
    Ok(())
}

/// Retire the accepted memories unused for `max_unused_days` (when set), by the memory
/// clock.
fn retire(store: &SqliteMemoryStore, max_unused_days: Option<u32>) -> anyhow::Result<()> {
    let Some(days) = max_unused_days else {
        return Ok(());
    };
    let cutoff = retire_cutoff(rein_bootstrap::memory::now_ms(), Some(days)).unwrap_or(0);
    let retired = store.with_db(|db| db.retire_unused(cutoff))?;
    if retired > 0 {
        eprintln!("retired {retired} memories nobody used for {days} days");
    }
    Ok(())
}

fn parse_id(text: &str) -> anyhow::Result<MemoryId> {
    text.parse()
        .with_context(|| format!("not a memory id: {text:?}"))
}

fn list(store: &SqliteMemoryStore, select: Select, text: Option<String>) -> anyhow::Result<()> {
    let repo = select
        .cd
        .as_deref()
        .map(rein_rollout::memory::repo::repo_of);
    let filter = MemoryFilter {
        scope: select.scope.map(Into::into),
        repo,
        states: if select.all {
            Vec::new()
        } else {
            vec![MemoryState::Accepted, MemoryState::Proposed]
        },
        text,
        limit: None,
    };
    let found = store.with_db(|db| db.list(&filter))?;
    let mut out = std::io::stdout().lock();
    for record in found {
        if select.json {
            writeln!(out, "{}", serde_json::to_string(&record)?)?;
        } else {
            writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}",
                record.id,
                record.scope.as_str(),
                record.state.as_str(),
                record.use_count,
                record.content.replace('\n', " ")
            )?;
        }
    }
    Ok(())
}

fn add(
    store: &SqliteMemoryStore,
    content: String,
    scope: MemoryScope,
    cd: Option<PathBuf>,
    thread: Option<String>,
    keywords: Vec<String>,
) -> anyhow::Result<()> {
    let (content, redactions) = redact(content.trim());
    if content.is_empty() || content.len() > MAX_MEMORY_BYTES {
        bail!(
            "a memory holds 1 to {MAX_MEMORY_BYTES} bytes; this one has {}",
            content.len()
        );
    }
    let thread_id: Option<ThreadId> = match (scope, thread) {
        (MemoryScope::Thread, None) => bail!("a thread memory needs --thread ID"),
        (_, Some(t)) => Some(
            t.parse()
                .with_context(|| format!("not a thread id: {t:?}"))?,
        ),
        (_, None) => None,
    };
    let repo = match scope {
        MemoryScope::Repo => {
            let dir = match cd {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            Some(rein_rollout::memory::repo::repo_of(&dir))
        }
        MemoryScope::User | MemoryScope::Thread => None,
    };
    let record = MemoryRecord {
        id: MemoryId::new(),
        scope,
        repo,
        thread_id,
        turn_id: None,
        content,
        keywords,
        why: "added with rein memory add".into(),
        state: MemoryState::Accepted,
        created_ms: rein_bootstrap::memory::now_ms(),
        last_used_ms: None,
        use_count: 0,
        redactions,
    };
    store.with_db(|db| db.insert(&record))?;
    println!("{}", record.id);
    for cut in &record.redactions {
        eprintln!("redacted: {} ({})", cut.label, cut.kind);
    }
    Ok(())
}

/// Records written per transaction by `import` (each commit is fsynced).
const IMPORT_BATCH: usize = 1000;

fn import(store: &SqliteMemoryStore, file: &PathBuf) -> anyhow::Result<()> {
    let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let opened =
            std::fs::File::open(file).with_context(|| format!("reading {}", file.display()))?;
        Box::new(std::io::BufReader::new(opened))
    };
    let (mut added, mut read) = (0, 0);
    let mut batch = Vec::with_capacity(IMPORT_BATCH);
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let mut record: MemoryRecord = serde_json::from_str(&line)
            .with_context(|| format!("{} line {}: not a memory", file.display(), n + 1))?;
        let (content, mut cuts) = redact(&record.content);
        if content.len() > MAX_MEMORY_BYTES {
            bail!(
                "{} line {}: longer than {MAX_MEMORY_BYTES} bytes",
                file.display(),
                n + 1
            );
        }
        record.content = content;
        record.redactions.append(&mut cuts);
        batch.push(record);
        read += 1;
        if batch.len() == IMPORT_BATCH {
            added += store.with_db(|db| db.insert_batch(&batch))?;
            batch.clear();
        }
    }
    added += store.with_db(|db| db.insert_batch(&batch))?;
    println!("imported {added} memories ({} already kept)", read - added);
    Ok(())
}
