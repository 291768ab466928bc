//! A skill's MCP dependency (`agents/openai.yaml`'s `dependencies.tools` entry of type
//! `mcp`): when the skill is activated, the server it names must run for the thread's
//! working directory. A thread starts its servers when it is created, so most of the time
//! the server is there already; one that failed to start or stopped (its restarts spent)
//! is started again here, and the activation waits until it has settled (bounded by the
//! server's `startup_timeout`), so the step after it is offered the server's tools. A
//! server the configuration does not have, or has switched off, is an error the caller
//! shows the model and the user: nothing starts a server the configuration does not allow.

use std::path::Path;

use rein_core::tool_servers::ServerStatus;

use crate::manager::{Key, McpManager};
use crate::server::Server;

/// Why a skill's MCP dependency is not available.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DependencyError {
    #[error("the MCP server `{0}` is not configured ([mcp_servers.{0}] in config.toml)")]
    NotConfigured(String),
    #[error("the MCP server `{0}` is switched off (enabled = false in config.toml)")]
    Disabled(String),
    #[error("the MCP server `{server}` did not start: {why}")]
    Failed { server: String, why: String },
}

impl McpManager {
    /// Make the configured server `name` run for threads in `cwd`: start it if it never
    /// started there, start it again if it failed or stopped, then wait until it is ready
    /// or has failed.
    pub async fn ensure_server(&self, name: &str, cwd: &Path) -> Result<(), DependencyError> {
        let server = self.server_running(name, cwd)?;
        match server.wait_settled().await {
            ServerStatus::Ready => Ok(()),
            ServerStatus::Failed { error: why } | ServerStatus::Stopped { reason: why } => {
                Err(DependencyError::Failed {
                    server: name.to_owned(),
                    why,
                })
            }
            ServerStatus::Starting => Ok(()),
        }
    }

    /// The server `name` of `cwd`, started (again) unless it is starting or ready.
    fn server_running(&self, name: &str, cwd: &Path) -> Result<Server, DependencyError> {
        let mut inner = self.lock();
        let config = inner
            .configs
            .iter()
            .find(|c| c.name == name)
            .cloned()
            .ok_or_else(|| DependencyError::NotConfigured(name.to_owned()))?;
        if !config.enabled {
            return Err(DependencyError::Disabled(name.to_owned()));
        }
        let key = Key {
            name: name.to_owned(),
            cwd: cwd.to_owned(),
        };
        let alive = inner
            .servers
            .get(&key)
            .filter(|s| matches!(s.status(), ServerStatus::Starting | ServerStatus::Ready));
        if let Some(server) = alive {
            return Ok(server.clone());
        }
        let server = Server::start(
            config,
            cwd.to_owned(),
            std::sync::Arc::clone(&self.env),
            self.updates.clone(),
        );
        // A failed or stopped one is replaced. A supervisor that gave up waits to be told
        // to stop (and one in a restart's backoff would try again): tell it, so it ends.
        // Threads' sources see the new server from their next step (the generation changed).
        if let Some(old) = inner.servers.insert(key, server.clone()) {
            old.shared.stop.cancel();
        }
        inner.generation += 1;
        Ok(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_not_configured_or_switched_off_is_an_error_and_starts_nothing() {
        let configs = rein_config::mcp::parse_document(
            "[mcp_servers.off]\ncommand = \"/bin/true\"\nenabled = false\n",
        )
        .unwrap();
        let env: crate::Env = std::sync::Arc::new(|_: &str| None);
        let manager = McpManager::new(&configs, env);
        let cwd = Path::new("/");
        assert_eq!(
            manager.ensure_server("ghost", cwd).await,
            Err(DependencyError::NotConfigured("ghost".into()))
        );
        assert_eq!(
            manager.ensure_server("off", cwd).await,
            Err(DependencyError::Disabled("off".into()))
        );
        assert!(manager.running().is_empty());
    }
}
