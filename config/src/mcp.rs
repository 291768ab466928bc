//! `[mcp_servers.NAME]` in config.toml, with Codex's keys and defaults, read here once into
//! typed [`McpServerConfig`]s that `rein-mcp` runs. The transport is chosen by the key
//! present (`command`: stdio, `url`: streamable HTTP); a key of the other transport, an
//! unknown key, an inline `bearer_token`, a header the transport sets itself or a bad server
//! name is an error naming the server and the key, found when the configuration is loaded,
//! never mid-turn. Servers made another way (an editor's, under `rein acp`) pass the same
//! [`check`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// Codex's default: covers `initialize` and the first `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Codex's default for one `tools/call`.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// The headers the MCP transport sets itself (`rein-mcp`'s streamable-HTTP client): a
/// configured one would be sent twice or override the transport's, so it is refused.
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "authorization",
    "content-type",
    "mcp-session-id",
    "last-event-id",
    "mcp-protocol-version",
];

/// The longest server name: `mcp__<server>__` then always fits before a hashed tool part
/// of a 64-byte tool name, so a name is never cut into its server's part.
pub const MAX_SERVER_NAME_LEN: usize = 40;

/// A configuration problem, naming the server and, where there is one, the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("[mcp_servers.{server}]{}: {message}", key.as_ref().map(|k| format!(" {k}")).unwrap_or_default())]
pub struct McpServerError {
    pub server: String,
    pub key: Option<String>,
    pub message: String,
}

impl McpServerError {
    fn new(server: &str, key: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            server: server.to_owned(),
            key: key.map(str::to_owned),
            message: message.into(),
        }
    }
}

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerConfig {
    pub name: String,
    pub transport: Transport,
    /// `false`: not started at all (still listed as disabled).
    pub enabled: bool,
    /// A thread cannot start (exec exits non-zero) when this server fails to start.
    pub required: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Raw tool names offered; `None` offers all.
    pub enabled_tools: Option<Vec<String>>,
    /// Raw tool names never offered (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    pub default_tools_approval_mode: ApprovalMode,
    /// Per raw tool name.
    pub tool_approval_modes: BTreeMap<String, ApprovalMode>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Literal values, on top of the minimal environment.
        env: BTreeMap<String, String>,
        /// Names copied from rein's own environment.
        env_vars: Vec<String>,
        /// Relative to the thread's working directory; unset: the thread's.
        cwd: Option<PathBuf>,
    },
    StreamableHttp {
        url: String,
        bearer_token_env_var: Option<String>,
        http_headers: BTreeMap<String, String>,
        /// Header name → environment variable holding its value.
        env_http_headers: BTreeMap<String, String>,
    },
}

/// When a call of the server's tool asks the user first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Ask only for tools whose annotations do not say they are read-only and harmless.
    #[default]
    Auto,
    /// Always ask.
    Prompt,
    /// Never ask.
    Approve,
}

impl McpServerConfig {
    /// A server with Codex's defaults for everything but its name and transport (as a
    /// `[mcp_servers.NAME]` entry with only `command` or `url` would give it).
    pub fn new(name: String, transport: Transport) -> Self {
        Self {
            name,
            transport,
            enabled: true,
            required: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            default_tools_approval_mode: ApprovalMode::Auto,
            tool_approval_modes: BTreeMap::new(),
        }
    }

    /// Whether a call of raw tool `tool` asks first, given the tool's annotations
    /// (`destructiveHint`, `readOnlyHint`, `openWorldHint`), as Codex decides it.
    pub fn asks_for(&self, tool: &str, annotations: Option<&Annotations>) -> bool {
        let mode = self
            .tool_approval_modes
            .get(tool)
            .copied()
            .unwrap_or(self.default_tools_approval_mode);
        match mode {
            ApprovalMode::Approve => false,
            ApprovalMode::Prompt => true,
            ApprovalMode::Auto => match annotations {
                None => false,
                Some(a) if a.destructive == Some(true) => true,
                Some(a) if a.read_only == Some(true) => false,
                Some(a) => a.destructive != Some(false) || a.open_world != Some(false),
            },
        }
    }

    /// The variable holding a streamable-HTTP server's bearer token, if it has one.
    pub fn bearer_token_env_var(&self) -> Option<&str> {
        match &self.transport {
            Transport::StreamableHttp {
                bearer_token_env_var,
                ..
            } => bearer_token_env_var.as_deref(),
            Transport::Stdio { .. } => None,
        }
    }

    /// Whether raw tool `tool` is offered.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// The hints of a tool's annotations that approvals use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub open_world: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    env_vars: Option<Vec<EnvVar>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    bearer_token: Option<toml::Value>,
    http_headers: Option<BTreeMap<String, String>>,
    env_http_headers: Option<BTreeMap<String, String>>,
    enabled: Option<bool>,
    required: Option<bool>,
    startup_timeout_sec: Option<f64>,
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    default_tools_approval_mode: Option<ApprovalMode>,
    tools: Option<BTreeMap<String, RawTool>>,
    // Accepted for compatibility with Codex's files; rein does nothing with them.
    supports_parallel_tool_calls: Option<bool>,
    name: Option<String>,
    scopes: Option<Vec<String>>,
    oauth: Option<toml::Value>,
    oauth_resource: Option<String>,
    experimental_environment: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    approval_mode: Option<ApprovalMode>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum EnvVar {
    Name(String),
    Sourced {
        name: String,
        source: Option<String>,
    },
}

/// `part` with every character outside `[A-Za-z0-9_]` replaced by `_` (empty: `_`): how
/// Codex reduces each part of an MCP tool's model-visible name (`rein-mcp`'s naming), and
/// so what two server names must not share.
pub fn sanitize(part: &str) -> String {
    if part.is_empty() {
        return "_".into();
    }
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A configured header must be a valid name the transport does not set itself.
fn check_header(server: &str, key: &str, header: &str) -> Result<(), McpServerError> {
    if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
        return Err(McpServerError::new(
            server,
            Some(key),
            format!("`{header}` is not a valid header name"),
        ));
    }
    if RESERVED_HEADERS
        .iter()
        .any(|r| r.eq_ignore_ascii_case(header))
    {
        return Err(McpServerError::new(
            server,
            Some(key),
            format!("`{header}` is set by the transport (use bearer_token_env_var for a token)"),
        ));
    }
    Ok(())
}

/// Read the `[mcp_servers]` table. Every server is checked, disabled ones too.
pub fn parse(table: &toml::Table) -> Result<Vec<McpServerConfig>, McpServerError> {
    let servers = table
        .iter()
        .map(|(name, value)| parse_server(name, value))
        .collect::<Result<Vec<_>, _>>()?;
    check(&servers)?;
    Ok(servers)
}

/// `[mcp_servers]` of a whole TOML document (tests and tools that hold the text).
pub fn parse_document(text: &str) -> Result<Vec<McpServerConfig>, McpDocumentError> {
    let document: toml::Table = toml::from_str(text)?;
    match document.get("mcp_servers") {
        None => Ok(Vec::new()),
        Some(toml::Value::Table(table)) => Ok(parse(table)?),
        Some(_) => Err(McpDocumentError::NotATable),
    }
}

/// Why [`parse_document`] failed.
#[derive(Debug, thiserror::Error)]
pub enum McpDocumentError {
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error("`mcp_servers` is not a table")]
    NotATable,
    #[error(transparent)]
    Server(#[from] McpServerError),
}

/// What holds for every set of servers, however it was made: names that say their server
/// (and never share a tool namespace), URLs and headers the transport can send.
pub fn check(servers: &[McpServerConfig]) -> Result<(), McpServerError> {
    let mut namespaces: BTreeMap<String, &str> = BTreeMap::new();
    for server in servers {
        let name = server.name.as_str();
        // Two servers whose tools would share `mcp__<server>__` could offer the same
        // model-visible name: refused, so that a name always says its server.
        let namespace = sanitize(name);
        if let Some(other) = namespaces.insert(namespace.clone(), name) {
            return Err(McpServerError::new(
                name,
                None,
                format!(
                    "server names '{other}' and '{name}' would both name their tools mcp__{namespace}__…: rename one"
                ),
            ));
        }
    }
    for server in servers {
        if let Some(problem) = name_problem(&server.name) {
            return Err(McpServerError::new(&server.name, None, problem));
        }
        if let Transport::StreamableHttp {
            url,
            http_headers,
            env_http_headers,
            ..
        } = &server.transport
        {
            check_http(&server.name, url, http_headers, env_http_headers)?;
        }
    }
    Ok(())
}

fn check_http(
    name: &str,
    url: &str,
    http_headers: &BTreeMap<String, String>,
    env_http_headers: &BTreeMap<String, String>,
) -> Result<(), McpServerError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(McpServerError::new(
            name,
            Some("url"),
            format!("`{url}` is not an http:// or https:// URL"),
        ));
    }
    for (key, names) in [
        ("http_headers", http_headers),
        ("env_http_headers", env_http_headers),
    ] {
        for header in names.keys() {
            check_header(name, key, header)?;
        }
    }
    for (header, value) in http_headers {
        if http::HeaderValue::from_str(value).is_err() {
            return Err(McpServerError::new(
                name,
                Some("http_headers"),
                format!("the value of `{header}` is not a valid header value"),
            ));
        }
    }
    Ok(())
}

/// Why `name` cannot name a server, if it cannot. Besides the characters Codex allows, the
/// name must not start or end with `_`/`-`, hold `__` (or `--`, `_-`: alike once '-' is
/// read as '_') nor pass [`MAX_SERVER_NAME_LEN`] bytes: then the first `__`
/// after `mcp__` in a tool's name always ends its server's name, and two servers' tools
/// can never share a name (`a` + `b__c` against `a__b` + `c`).
fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Some("invalid server name: use only letters, digits, '_' and '-'");
    }
    let sanitized = sanitize(name);
    if sanitized.starts_with('_') || sanitized.ends_with('_') || sanitized.contains("__") {
        return Some(
            "invalid server name: it may not start or end with '_' or '-', nor hold two of them in a row (tool names are mcp__<server>__<tool>)",
        );
    }
    if name.len() > MAX_SERVER_NAME_LEN {
        return Some("invalid server name: longer than 40 characters");
    }
    None
}

fn parse_server(name: &str, value: &toml::Value) -> Result<McpServerConfig, McpServerError> {
    let mut raw: RawServer = value
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| McpServerError::new(name, None, e.message().to_owned()))?;
    let _ = (
        &raw.supports_parallel_tool_calls,
        &raw.name,
        &raw.experimental_environment,
    );
    if raw.bearer_token.is_some() {
        return Err(McpServerError::new(
            name,
            Some("bearer_token"),
            "inline tokens are not accepted: put the token in an environment variable and name it with bearer_token_env_var",
        ));
    }
    let transport = transport(name, &mut raw)?;
    let seconds = |key: &str, secs: Option<f64>, default: Duration| match secs {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(McpServerError::new(
            name,
            Some(key),
            format!("{s} is not a positive number of seconds"),
        )),
    };
    let startup_timeout = match (raw.startup_timeout_sec, raw.startup_timeout_ms) {
        (None, Some(0)) => {
            return Err(McpServerError::new(
                name,
                Some("startup_timeout_ms"),
                "must be positive",
            ))
        }
        (None, Some(ms)) => Duration::from_millis(ms),
        (secs, _) => seconds("startup_timeout_sec", secs, DEFAULT_STARTUP_TIMEOUT)?,
    };
    Ok(McpServerConfig {
        name: name.to_owned(),
        transport,
        enabled: raw.enabled.unwrap_or(true),
        required: raw.required.unwrap_or(false),
        startup_timeout,
        tool_timeout: seconds(
            "tool_timeout_sec",
            raw.tool_timeout_sec,
            DEFAULT_TOOL_TIMEOUT,
        )?,
        enabled_tools: raw.enabled_tools,
        disabled_tools: raw.disabled_tools.unwrap_or_default(),
        default_tools_approval_mode: raw.default_tools_approval_mode.unwrap_or_default(),
        tool_approval_modes: raw
            .tools
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(tool, t)| t.approval_mode.map(|m| (tool, m)))
            .collect(),
    })
}

/// The server's transport: `command` (stdio) or `url` (streamable HTTP), each refusing the
/// other's keys.
fn transport(name: &str, raw: &mut RawServer) -> Result<Transport, McpServerError> {
    match (raw.command.take(), raw.url.take()) {
        (Some(_), Some(_)) => Err(McpServerError::new(
            name,
            Some("url"),
            "a server has either `command` (stdio) or `url` (streamable HTTP), not both",
        )),
        (Some(command), None) => stdio_transport(name, command, raw),
        (None, Some(url)) => http_transport(name, url, raw),
        (None, None) => Err(McpServerError::new(
            name,
            None,
            "invalid transport: set `command` (stdio) or `url` (streamable HTTP)",
        )),
    }
}

fn stdio_transport(
    name: &str,
    command: String,
    raw: &mut RawServer,
) -> Result<Transport, McpServerError> {
    let http_only = [
        ("bearer_token_env_var", raw.bearer_token_env_var.is_some()),
        ("http_headers", raw.http_headers.is_some()),
        ("env_http_headers", raw.env_http_headers.is_some()),
        ("scopes", raw.scopes.is_some()),
        ("oauth", raw.oauth.is_some()),
        ("oauth_resource", raw.oauth_resource.is_some()),
    ];
    if let Some((key, _)) = http_only.iter().find(|(_, set)| *set) {
        return Err(McpServerError::new(
            name,
            Some(key),
            "is not supported for stdio",
        ));
    }
    if command.trim().is_empty() {
        return Err(McpServerError::new(name, Some("command"), "is empty"));
    }
    let env_vars = raw
        .env_vars
        .take()
        .unwrap_or_default()
        .into_iter()
        .map(|v| match v {
            EnvVar::Name(n) => Ok(n),
            EnvVar::Sourced { name: n, source } => match source.as_deref() {
                None | Some("local") => Ok(n),
                Some(other) => Err(McpServerError::new(
                    name,
                    Some("env_vars"),
                    format!("unsupported env_vars source `{other}` (only `local`)"),
                )),
            },
        })
        .collect::<Result<_, _>>()?;
    Ok(Transport::Stdio {
        command,
        args: raw.args.take().unwrap_or_default(),
        env: raw.env.take().unwrap_or_default(),
        env_vars,
        cwd: raw.cwd.take(),
    })
}

fn http_transport(
    name: &str,
    url: String,
    raw: &mut RawServer,
) -> Result<Transport, McpServerError> {
    let stdio_only = [
        ("args", raw.args.is_some()),
        ("env", raw.env.is_some()),
        ("env_vars", raw.env_vars.is_some()),
        ("cwd", raw.cwd.is_some()),
    ];
    if let Some((key, _)) = stdio_only.iter().find(|(_, set)| *set) {
        return Err(McpServerError::new(
            name,
            Some(key),
            "is not supported for streamable_http",
        ));
    }
    let http_headers = raw.http_headers.take().unwrap_or_default();
    let env_http_headers = raw.env_http_headers.take().unwrap_or_default();
    Ok(Transport::StreamableHttp {
        url,
        bearer_token_env_var: raw.bearer_token_env_var.take(),
        http_headers,
        env_http_headers,
    })
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
