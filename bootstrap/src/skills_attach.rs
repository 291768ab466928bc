//! Attaching skills to a user's input (a `$name` mention, a client's `skill` item, an ACP
//! `/name` command), and what an attached skill needs: the MCP servers its
//! `agents/openai.yaml` names as dependencies (`dependencies.tools`, `type: mcp`, the
//! server's name in `value`) are started through the MCP supervisor when they do not run.
//! A dependency that cannot be had (not configured, switched off, failed to start) is not
//! dropped silently: a notice after the skill in the same user message tells the model, and
//! so the user (it is part of the message the client is shown and of the rollout).

use std::path::{Path, PathBuf};

use rein_protocol::InputPart;

use crate::{skills, Kernel};

/// An attached skill's MCP dependencies, by skill name.
type Dependencies = Vec<(String, Vec<String>)>;

impl Kernel {
    /// Attach to `parts` the skills `named` (a client's `skill` input items: each must be a
    /// skill of `cwd`) and those the text of `parts` mentions (`$name`), explicit-only ones
    /// included, each as an [`InputPart::Skill`] holding its `SKILL.md` as read now; then
    /// start the MCP servers they depend on (a notice part for each that is not available).
    /// Returns the names attached. Read on a blocking thread, when the input is submitted.
    pub async fn attach_skills(
        &self,
        cwd: PathBuf,
        parts: &mut Vec<InputPart>,
        named: Vec<skills::attach::NamedSkill>,
    ) -> Result<Vec<String>, skills::attach::AttachError> {
        let text: String = parts
            .iter()
            .filter_map(|p| match p {
                InputPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mentions: Vec<String> = skills::attach::mentions(&text)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if mentions.is_empty() && named.is_empty() {
            return Ok(Vec::new());
        }
        let config = self.context_config().skills;
        let dir = cwd.clone();
        let (found, dependencies) = tokio::task::spawn_blocking(move || {
            let outcome = skills::load(&config, &dir);
            let mentions: Vec<&str> = mentions.iter().map(String::as_str).collect();
            let found = skills::attach::resolve(&outcome, &dir, &named, &mentions)?;
            let dependencies = mcp_dependencies(&outcome, &found);
            Ok((found, dependencies))
        })
        .await
        .unwrap_or_else(|_| Ok((Vec::new(), Vec::new())))?;
        let names = found
            .iter()
            .filter_map(|p| match p {
                InputPart::Skill { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        parts.extend(found);
        let notices = self.start_skill_servers(&cwd, &dependencies).await;
        parts.extend(notices.into_iter().map(InputPart::text));
        Ok(names)
    }

    /// [`Self::attach_skills`] for text alone: the `$name` mentions of `parts`.
    pub async fn attach_mentioned_skills(
        &self,
        cwd: PathBuf,
        parts: &mut Vec<InputPart>,
    ) -> Vec<String> {
        // With nothing named, only an unreadable mention could fail, and mentions are best
        // effort.
        self.attach_skills(cwd, parts, Vec::new())
            .await
            .unwrap_or_default()
    }

    /// Make the MCP servers `dependencies` name run for threads in `cwd`; the notice for
    /// each that is not available, for the model and the user.
    async fn start_skill_servers(&self, cwd: &Path, dependencies: &Dependencies) -> Vec<String> {
        let mut notices = Vec::new();
        for (skill, servers) in dependencies {
            for server in servers {
                let outcome = match &self.mcp {
                    Some(mcp) => mcp.ensure_server(server, cwd).await,
                    None => Err(rein_mcp::dependency::DependencyError::NotConfigured(
                        server.clone(),
                    )),
                };
                if let Err(e) = outcome {
                    notices.push(format!(
                        "<skill_dependency_error>The skill `{skill}` depends on an MCP server \
                         that is not available: {e}. Its tools are not available in this \
                         session.</skill_dependency_error>"
                    ));
                }
            }
        }
        notices
    }
}

/// The MCP servers each attached skill of `found` declares (`type: mcp`), by the skill's
/// `SKILL.md` (the attached one, not another skill of the same name).
fn mcp_dependencies(outcome: &skills::SkillsOutcome, found: &[InputPart]) -> Dependencies {
    found
        .iter()
        .filter_map(|part| match part {
            InputPart::Skill { name, path, .. } => Some((name, path)),
            _ => None,
        })
        .filter_map(|(name, path)| {
            let skill = outcome.skills.iter().find(|s| &s.path == path)?;
            let servers = skill.mcp_servers();
            (!servers.is_empty()).then(|| (name.clone(), servers))
        })
        .collect()
}
