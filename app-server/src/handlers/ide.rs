//! What an IDE or the Codex TUI asks beside threads: the `@` file picker
//! (`fuzzyFileSearch`), settings edits (`config/value/write`, `config/batchWrite`) and
//! one-off commands (`command/exec`), all carried out by rein-bootstrap (the app-server reaches files and the configuration
//! only through it).

use std::path::PathBuf;
use std::time::Duration;

use rein_app_server_protocol::{
    CommandExecParams, CommandExecResponse, ConfigBatchWriteParams, ConfigValueWriteParams,
    ConfigWriteResponse, EmptyResponse, FuzzyFileSearchMatchType, FuzzyFileSearchParams,
    FuzzyFileSearchResponse, FuzzyFileSearchResult, MergeStrategy, SandboxPolicyWire,
    ThreadShellCommandParams, WriteStatus,
};
use rein_bootstrap::command_exec::{CommandExecError, OneOffCommand};
use rein_bootstrap::config_write::{ConfigEdit, ConfigWriteError};
use rein_bootstrap::file_search::fuzzy_file_search;
use rein_protocol::SandboxPolicy;

use crate::dispatch::{bounded, ServerState, MAX_PATH_BYTES};
use crate::error::RpcError;
use crate::pump::PumpCmd;

/// Longest query accepted (the picker sends what the user typed after `@`).
const MAX_QUERY_BYTES: usize = 1024;
/// Roots searched at most per request.
const MAX_ROOTS: usize = 16;
/// Edits applied at most per `config/batchWrite`.
const MAX_EDITS: usize = 256;

pub async fn fuzzy(
    _state: &ServerState,
    p: FuzzyFileSearchParams,
) -> Result<FuzzyFileSearchResponse, RpcError> {
    bounded("query", &p.query, MAX_QUERY_BYTES)?;
    if p.roots.len() > MAX_ROOTS {
        return Err(RpcError::invalid_params(
            format!("roots: {} roots, more than {MAX_ROOTS}", p.roots.len()),
            Some("roots".into()),
        ));
    }
    let mut roots = Vec::with_capacity(p.roots.len());
    for (i, root) in p.roots.iter().enumerate() {
        let field = format!("roots[{i}]");
        bounded(&field, root, MAX_PATH_BYTES)?;
        let path = PathBuf::from(root);
        if !path.is_absolute() {
            return Err(RpcError::invalid_params(
                format!("{field}: must be an absolute path"),
                Some(field),
            ));
        }
        roots.push(path);
    }
    let files = fuzzy_file_search(p.query, roots)
        .await
        .into_iter()
        .map(|m| FuzzyFileSearchResult {
            root: m.root.display().to_string(),
            file_name: m.path.rsplit('/').next().unwrap_or(&m.path).to_owned(),
            path: m.path,
            match_type: if m.is_dir {
                FuzzyFileSearchMatchType::Directory
            } else {
                FuzzyFileSearchMatchType::File
            },
            score: m.score,
            indices: Some(m.indices),
        })
        .collect();
    Ok(FuzzyFileSearchResponse { files })
}

pub async fn value_write(
    state: &ServerState,
    p: ConfigValueWriteParams,
) -> Result<ConfigWriteResponse, RpcError> {
    let edit = ConfigEdit {
        key_path: p.key_path,
        value: p.value,
        upsert: p.merge_strategy == MergeStrategy::Upsert,
    };
    write(state, p.file_path, vec![edit], p.expected_version, None).await
}

pub async fn batch_write(
    state: &ServerState,
    p: ConfigBatchWriteParams,
) -> Result<ConfigWriteResponse, RpcError> {
    if p.edits.len() > MAX_EDITS {
        return Err(RpcError::invalid_params(
            format!("edits: {} edits, more than {MAX_EDITS}", p.edits.len()),
            Some("edits".into()),
        ));
    }
    let edits = p
        .edits
        .into_iter()
        .map(|e| ConfigEdit {
            key_path: e.key_path,
            value: e.value,
            upsert: e.merge_strategy == MergeStrategy::Upsert,
        })
        .collect();
    write(state, p.file_path, edits, p.expected_version, Some("edits")).await
}

/// Write `edits` through the kernel; `edits_field` names where a bad key sits.
async fn write(
    state: &ServerState,
    file: Option<String>,
    edits: Vec<ConfigEdit>,
    expected_version: Option<String>,
    edits_field: Option<&str>,
) -> Result<ConfigWriteResponse, RpcError> {
    let written = state
        .kernel
        .write_config(file.map(PathBuf::from), edits, expected_version)
        .await
        .map_err(|e| write_error(e, edits_field))?;
    Ok(ConfigWriteResponse {
        file_path: written.path.display().to_string(),
        status: WriteStatus::Ok,
        version: written.version,
        overridden_metadata: None,
    })
}

fn write_error(e: ConfigWriteError, edits_field: Option<&str>) -> RpcError {
    let field = |name: &str| match edits_field {
        Some(edits) => format!("{edits}.{name}"),
        None => name.to_owned(),
    };
    match &e {
        ConfigWriteError::OtherFile(_) => RpcError::invalid_params(&e, Some("filePath".into())),
        ConfigWriteError::KeyPath { .. } => RpcError::invalid_params(&e, Some(field("keyPath"))),
        ConfigWriteError::Value { .. } | ConfigWriteError::Invalid(_) => {
            RpcError::invalid_params(&e, Some(field("value")))
        }
        ConfigWriteError::VersionConflict { .. } => {
            RpcError::invalid_request(format!("configVersionConflict: {e}"))
        }
        ConfigWriteError::NoFile | ConfigWriteError::Unparsable(..) => {
            RpcError::invalid_request(e.to_string())
        }
        ConfigWriteError::Io { .. } => RpcError::internal(e),
    }
}

/// Longest `command/exec` run allowed (also what `disableTimeout` gets).
const MAX_EXEC_TIMEOUT: Duration = Duration::from_secs(3600);
/// `command/exec`'s timeout when the client names none.
const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// Output kept when the client names no cap, and at most (with `disableOutputCap`): an
/// answer is one message, which stays bounded.
const DEFAULT_OUTPUT_CAP: usize = 1024 * 1024;
const MAX_OUTPUT_CAP: usize = 8 * 1024 * 1024;

/// `command/exec`: one buffered command under the server's approval and sandbox policy
/// (rein-bootstrap judges and confines it as a thread's `shell` call). Streaming, stdin
/// and PTY sessions are refused.
pub async fn command_exec(
    state: &ServerState,
    p: CommandExecParams,
) -> Result<CommandExecResponse, RpcError> {
    for (on, field) in [
        (p.tty, "tty"),
        (p.stream_stdin, "streamStdin"),
        (p.stream_stdout_stderr, "streamStdoutStderr"),
        (p.process_id.is_some(), "processId"),
        (p.size.is_some(), "size"),
    ] {
        if on {
            return Err(RpcError::invalid_params(
                format!("{field}: rein's command/exec runs buffered commands only"),
                Some(field.into()),
            ));
        }
    }
    let cwd = match &p.cwd {
        Some(cwd) => {
            bounded("cwd", cwd, MAX_PATH_BYTES)?;
            let cwd = PathBuf::from(cwd);
            if !cwd.is_absolute() {
                return Err(RpcError::invalid_params(
                    "cwd: must be an absolute path",
                    Some("cwd".into()),
                ));
            }
            cwd
        }
        None => std::env::current_dir().map_err(RpcError::internal)?,
    };
    let timeout = match (p.timeout_ms, p.disable_timeout) {
        (Some(_), true) => return Err(both("timeoutMs", "disableTimeout")),
        (Some(ms), false) => Duration::from_millis(u64::try_from(ms).map_err(|_| {
            RpcError::invalid_params("timeoutMs: must not be negative", Some("timeoutMs".into()))
        })?)
        .min(MAX_EXEC_TIMEOUT),
        (None, true) => MAX_EXEC_TIMEOUT,
        (None, false) => DEFAULT_EXEC_TIMEOUT,
    };
    let output_cap = match (p.output_bytes_cap, p.disable_output_cap) {
        (Some(_), true) => return Err(both("outputBytesCap", "disableOutputCap")),
        (Some(cap), false) => usize::try_from(cap)
            .unwrap_or(MAX_OUTPUT_CAP)
            .min(MAX_OUTPUT_CAP),
        (None, true) => MAX_OUTPUT_CAP,
        (None, false) => DEFAULT_OUTPUT_CAP,
    };
    let sandbox = p.sandbox_policy.as_ref().map(one_off_sandbox).transpose()?;
    let command = OneOffCommand {
        argv: p.command,
        cwd,
        env: p.env.unwrap_or_default().into_iter().collect(),
        timeout,
        output_cap,
        sandbox,
    };
    let ran = state
        .kernel
        .exec_command(command)
        .await
        .map_err(|e| match e {
            CommandExecError::Empty => RpcError::invalid_params(&e, Some("command".into())),
            CommandExecError::Wider { .. } => {
                RpcError::invalid_params(&e, Some("sandboxPolicy".into()))
            }
            CommandExecError::NeedsApproval(_) | CommandExecError::Denied(_) => {
                RpcError::invalid_request(e.to_string())
            }
            CommandExecError::Run(_) => RpcError::internal(e),
        })?;
    Ok(CommandExecResponse {
        exit_code: ran.exit_code,
        stdout: ran.output,
        stderr: String::new(),
    })
}

fn both(a: &str, b: &str) -> RpcError {
    RpcError::invalid_params(format!("{a}: cannot be combined with {b}"), Some(a.into()))
}

/// The sandbox a client asks `command/exec` to run in: a policy, without refinements (a
/// writable root or network access beyond the server's defaults would widen it).
fn one_off_sandbox(wire: &SandboxPolicyWire) -> Result<SandboxPolicy, RpcError> {
    let refused = |what: &str| {
        RpcError::invalid_params(
            format!("sandboxPolicy: {what} is not available to command/exec"),
            Some("sandboxPolicy".into()),
        )
    };
    match wire {
        SandboxPolicyWire::DangerFullAccess => Ok(SandboxPolicy::DangerFullAccess),
        SandboxPolicyWire::ReadOnly { network_access } => match network_access {
            false => Ok(SandboxPolicy::ReadOnly),
            true => Err(refused("network access")),
        },
        SandboxPolicyWire::WorkspaceWrite {
            writable_roots,
            network_access,
            ..
        } => match (writable_roots.is_empty(), network_access) {
            (true, false) => Ok(SandboxPolicy::WorkspaceWrite),
            (false, _) => Err(refused("an extra writable root")),
            (_, true) => Err(refused("network access")),
        },
        SandboxPolicyWire::ExternalSandbox { .. } => Err(refused("an external sandbox")),
    }
}

/// Longest `thread/shellCommand` script accepted.
const MAX_SHELL_COMMAND_BYTES: usize = 64 * 1024;

/// `thread/shellCommand`: the user's command, run in the thread by the kernel as one call
/// of its `shell` tool (its approval policy, grants, hooks and sandbox apply); answered at
/// once, the command shown as a `commandExecution` item with `source: userShell`.
pub async fn shell_command(
    state: &ServerState,
    p: ThreadShellCommandParams,
) -> Result<EmptyResponse, RpcError> {
    let thread = super::loaded(state, &p.thread_id)?;
    bounded("command", &p.command, MAX_SHELL_COMMAND_BYTES)?;
    if p.command.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "command: must not be empty",
            Some("command".into()),
        ));
    }
    let timeout_ms = p
        .timeout_ms
        .map(|ms| {
            u64::try_from(ms).map_err(|_| {
                RpcError::invalid_params(
                    "timeoutMs: must not be negative",
                    Some("timeoutMs".into()),
                )
            })
        })
        .transpose()?;
    super::turn::ask_pump(state, &thread, |reply| PumpCmd::Shell {
        reply,
        command: p.command,
        timeout_ms,
    })
    .await
}
