//! A thread's table of background terminals and the tasks that pump their output.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rein_protocol::ToolOutcome;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::tools::process::capture::HeadTailBuffer;
use crate::tools::process::exec::ExitKind;
use crate::tools::process::group::{kill_group, ProcessGroupGuard};
use crate::tools::ThreadToolState;

/// Unread output kept per terminal between reads (head + tail).
const UNREAD_CAP: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("no background terminal `{id}` in this thread")]
    NotFound { id: String },
    #[error("cannot start the background command: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("terminal `{id}` does not accept input: {source}")]
    Stdin {
        id: String,
        #[source]
        source: std::io::Error,
    },
}

/// What a read of a terminal returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalSnapshot {
    pub id: String,
    /// Output produced since the previous read.
    pub output: String,
    /// `None` while the command runs or output may still follow; once set, the terminal
    /// is finished and forgotten.
    pub exit: Option<ExitKind>,
}

impl TerminalSnapshot {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "terminal_id": self.id,
            "output": self.output,
            "running": self.exit.is_none(),
            "exit_code": self.exit.map(ExitKind::code),
        })
    }

    /// What a read of the terminal tells clients: it runs on, or it exited.
    pub fn outcome(&self) -> ToolOutcome {
        match self.exit {
            None => ToolOutcome::Running {
                terminal_id: self.id.clone(),
                pid: None,
                output: self.output.clone(),
            },
            Some(exit) => ToolOutcome::Exited {
                exit: exit.status(Duration::ZERO),
                output: self.output.clone(),
            },
        }
    }
}

struct Pumped {
    unread: HeadTailBuffer,
    exit: Option<ExitKind>,
    open_pipes: u8,
}

/// State shared with the pump tasks (they never own the terminal itself, so dropping
/// the terminal kills the group even while they run).
struct Shared {
    pumped: Mutex<Pumped>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pumped> {
        self.pumped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn has_unread(&self) -> bool {
        let p = self.lock();
        p.unread.omitted() > 0 || !p.unread.is_empty()
    }

    fn finished(&self) -> bool {
        let p = self.lock();
        p.exit.is_some() && p.open_pipes == 0
    }
}

struct Terminal {
    /// The command as the call showed it, and where it runs.
    command: String,
    cwd: Option<std::path::PathBuf>,
    shared: Arc<Shared>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    tasks: Vec<JoinHandle<()>>,
    /// Declared last: dropped after the tasks are aborted. Kills the whole group.
    _group: ProcessGroupGuard,
}

impl Drop for Terminal {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A terminal just started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    pub id: String,
    /// The OS process id of the command.
    pub pid: Option<u32>,
}

/// The background terminals of one thread (it owns the table; dropping it kills them all).
#[derive(Default)]
pub struct BackgroundTerminals {
    terminals: Mutex<HashMap<String, Arc<Terminal>>>,
    next_id: AtomicU64,
}

impl BackgroundTerminals {
    pub fn new() -> Self {
        Self::default()
    }

    fn table(&self) -> MutexGuard<'_, HashMap<String, Arc<Terminal>>> {
        self.terminals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Spawn `cmd` (shown as `command`) as a background terminal.
    pub fn start(&self, mut cmd: Command, command: String) -> Result<Started, TerminalError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let cwd = cmd
            .as_std()
            .get_current_dir()
            .map(std::path::Path::to_path_buf);
        let mut child = cmd.spawn().map_err(TerminalError::Spawn)?;
        let pid = child.id();
        let group = ProcessGroupGuard::new(pid.unwrap_or(0));
        let pgid = group.pgid();
        let shared = Arc::new(Shared {
            pumped: Mutex::new(Pumped {
                unread: HeadTailBuffer::new(UNREAD_CAP),
                exit: None,
                open_pipes: 2,
            }),
            changed: Notify::new(),
        });
        let mut tasks = Vec::new();
        if let Some(out) = child.stdout.take() {
            tasks.push(tokio::spawn(pump(out, Arc::clone(&shared))));
        }
        if let Some(err) = child.stderr.take() {
            tasks.push(tokio::spawn(pump(err, Arc::clone(&shared))));
        }
        let stdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take()));
        let waiter_shared = Arc::clone(&shared);
        tasks.push(tokio::spawn(async move {
            let exit = match child.wait().await {
                Ok(status) => {
                    use std::os::unix::process::ExitStatusExt;
                    match (status.code(), status.signal()) {
                        (Some(c), _) => ExitKind::Code(c),
                        (None, Some(s)) => ExitKind::Signal(s),
                        (None, None) => ExitKind::Code(-1),
                    }
                }
                Err(_) => ExitKind::Code(-1),
            };
            // What the command left behind in its group goes with it.
            if let Some(pgid) = pgid {
                kill_group(pgid);
            }
            waiter_shared.lock().exit = Some(exit);
            waiter_shared.changed.notify_waiters();
        }));
        let id = format!("bg-{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let terminal = Arc::new(Terminal {
            command,
            cwd,
            shared,
            stdin,
            tasks,
            _group: group,
        });
        self.table().insert(id.clone(), terminal);
        Ok(Started { id, pid })
    }

    fn get(&self, id: &str) -> Result<Arc<Terminal>, TerminalError> {
        self.table()
            .get(id)
            .cloned()
            .ok_or_else(|| TerminalError::NotFound { id: id.to_owned() })
    }

    /// The command terminal `id` runs and its directory, while the terminal is known.
    pub fn command_of(&self, id: &str) -> Option<(String, Option<std::path::PathBuf>)> {
        self.table()
            .get(id)
            .map(|t| (t.command.clone(), t.cwd.clone()))
    }

    /// Write `chars` to the terminal's stdin (nothing if empty).
    pub async fn write(&self, id: &str, chars: &str) -> Result<(), TerminalError> {
        if chars.is_empty() {
            return Ok(());
        }
        let terminal = self.get(id)?;
        let mut stdin = terminal.stdin.lock().await;
        let pipe = stdin.as_mut().ok_or_else(|| TerminalError::Stdin {
            id: id.to_owned(),
            source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        })?;
        let stdin_error = |source| TerminalError::Stdin {
            id: id.to_owned(),
            source,
        };
        pipe.write_all(chars.as_bytes())
            .await
            .map_err(stdin_error)?;
        pipe.flush().await.map_err(stdin_error)
    }

    /// Return the output produced since the last read, waiting up to `wait` for some to
    /// arrive (or for the command to finish, or `cancel`). A finished terminal is removed
    /// once read.
    pub async fn read(
        &self,
        id: &str,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<TerminalSnapshot, TerminalError> {
        let terminal = self.get(id)?;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let changed = terminal.shared.changed.notified();
            if terminal.shared.finished() || terminal.shared.has_unread() {
                break;
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(deadline) => break,
                () = cancel.cancelled() => break,
            }
        }
        // Taken under one lock: once finished, no output can follow what is taken here,
        // so "not running" is final and the terminal can go.
        let (output, exit) = {
            let mut pumped = terminal.shared.lock();
            let text = pumped.unread.render();
            pumped.unread = HeadTailBuffer::new(UNREAD_CAP);
            let finished = pumped.exit.is_some() && pumped.open_pipes == 0;
            (text, pumped.exit.filter(|_| finished))
        };
        if exit.is_some() {
            self.table().remove(id);
        }
        Ok(TerminalSnapshot {
            id: id.to_owned(),
            output,
            exit,
        })
    }

    /// Ids of the terminals.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.table().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Kill every background terminal.
    pub fn kill_all(&self) {
        let removed = std::mem::take(&mut *self.table());
        // Dropped outside the lock: each drop kills a process group.
        drop(removed);
    }
}

/// A thread's terminals are its background work: cleaned on request, killed at shutdown.
impl ThreadToolState for BackgroundTerminals {
    fn clean_background(&self) {
        self.kill_all();
    }
}

async fn pump<R: AsyncRead + Unpin>(mut pipe: R, shared: Arc<Shared>) {
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                shared.lock().unread.push(&buf[..n]);
                shared.changed.notify_waiters();
            }
        }
    }
    shared.lock().open_pipes -= 1;
    shared.changed.notify_waiters();
}
