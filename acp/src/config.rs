//! A session's settings as ACP config options: the mode (an approval and sandbox preset),
//! the model (from the catalog) and the reasoning effort. The legacy `modes` carry the
//! same mode, so a client reading either sees one state; every answer carries the whole
//! list (Zed replaces its state with it).
//!
//! A choice is kept by the session and applied with its next prompt, as a settings change
//! the prompt's input carries (all or nothing, like any input's settings).

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use rein_protocol::{
    ApprovalPolicy, ReasoningEffort, SandboxPolicy, SettingsChange, ThreadSettings,
};

pub const MODE: &str = "mode";
pub const MODEL: &str = "model";
pub const EFFORT: &str = "reasoning_effort";

/// The presets a client can switch between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Reads anything, writes nothing without asking.
    ReadOnly,
    /// Writes the workspace, asks before anything else.
    Agent,
    /// No sandbox, no questions.
    FullAccess,
}

impl Mode {
    const ALL: [Mode; 3] = [Mode::ReadOnly, Mode::Agent, Mode::FullAccess];

    pub fn of(settings: &ThreadSettings) -> Mode {
        match settings.sandbox_policy {
            SandboxPolicy::ReadOnly => Mode::ReadOnly,
            SandboxPolicy::WorkspaceWrite => Mode::Agent,
            SandboxPolicy::DangerFullAccess => Mode::FullAccess,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::Agent => "agent",
            Mode::FullAccess => "full-access",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Read only",
            Mode::Agent => "Agent",
            Mode::FullAccess => "Full access",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Reads files; asks before it writes or runs anything unsandboxed",
            Mode::Agent => "Works in the workspace; asks before it goes beyond it",
            Mode::FullAccess => "Runs anything anywhere without asking",
        }
    }

    fn from_id(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    fn policies(self) -> (ApprovalPolicy, SandboxPolicy) {
        match self {
            Mode::ReadOnly => (ApprovalPolicy::OnRequest, SandboxPolicy::ReadOnly),
            Mode::Agent => (ApprovalPolicy::OnRequest, SandboxPolicy::WorkspaceWrite),
            Mode::FullAccess => (ApprovalPolicy::Never, SandboxPolicy::DangerFullAccess),
        }
    }
}

/// What the client chose, over the thread's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choices {
    pub mode: Mode,
    pub model: String,
    pub effort: Option<ReasoningEffort>,
}

impl Choices {
    pub fn of(settings: &ThreadSettings) -> Self {
        Self {
            mode: Mode::of(settings),
            model: settings.model.clone(),
            effort: settings.reasoning_effort.clone(),
        }
    }

    /// Apply the client's choice of `value` for `config_id`; an unknown option or value
    /// is refused with what was expected.
    pub fn set(&mut self, config_id: &str, value: &str, models: &[String]) -> Result<(), String> {
        match config_id {
            MODE => self.set_mode(value),
            MODEL if models.iter().any(|m| m == value) => {
                self.model = value.to_owned();
                Ok(())
            }
            MODEL => Err(format!(
                "unknown model {value:?}; known: {}",
                models.join(", ")
            )),
            // Any effort the model may advertise; the kernel checks it against the
            // catalog when the change reaches the thread.
            EFFORT => {
                self.effort = Some(ReasoningEffort::new(value).map_err(|e| e.to_string())?);
                Ok(())
            }
            other => Err(format!(
                "unknown config option {other:?}; known: {MODE}, {MODEL}, {EFFORT}"
            )),
        }
    }

    pub fn set_mode(&mut self, value: &str) -> Result<(), String> {
        let known: Vec<&str> = Mode::ALL.iter().map(|m| m.id()).collect();
        self.mode = Mode::from_id(value)
            .ok_or_else(|| format!("unknown mode {value:?}; known: {}", known.join(", ")))?;
        Ok(())
    }

    /// The settings change that makes `settings` what was chosen (empty when they are).
    pub fn change_from(&self, settings: &ThreadSettings) -> SettingsChange {
        let (approval, sandbox) = self.mode.policies();
        let new_mode = Mode::of(settings) != self.mode;
        SettingsChange {
            model: (settings.model != self.model).then(|| self.model.clone()),
            approval_policy: new_mode.then_some(approval),
            sandbox_policy: new_mode.then_some(sandbox),
            reasoning_effort: self
                .effort
                .clone()
                .filter(|e| settings.reasoning_effort.as_ref() != Some(e)),
            ..SettingsChange::default()
        }
    }

    /// Every option, as `session/new` and `session/set_config_option` answer them.
    pub fn options(&self, models: &[String]) -> Vec<SessionConfigOption> {
        let mode = SessionConfigOption::select(
            MODE,
            "Mode",
            self.mode.id(),
            Mode::ALL
                .iter()
                .map(|m| {
                    SessionConfigSelectOption::new(m.id(), m.name()).description(m.description())
                })
                .collect::<Vec<_>>(),
        )
        .category(SessionConfigOptionCategory::Mode);
        let mut names: Vec<String> = models.to_vec();
        if !names.contains(&self.model) {
            names.insert(0, self.model.clone());
        }
        let model = SessionConfigOption::select(
            MODEL,
            "Model",
            self.model.clone(),
            names
                .iter()
                .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
                .collect::<Vec<_>>(),
        )
        .category(SessionConfigOptionCategory::Model);
        let mut efforts: Vec<SessionConfigSelectOption> = Vec::new();
        if self.effort.is_none() {
            efforts.push(
                SessionConfigSelectOption::new("default", "Default")
                    .description("What the model does unless asked"),
            );
        }
        let mut offered = ReasoningEffort::COMMON.to_vec();
        if let Some(current) = self.effort.as_ref().filter(|e| !offered.contains(e)) {
            offered.push(current.clone());
        }
        for effort in offered {
            let name = match effort.as_str() {
                "none" => "None (thinking off)".to_owned(),
                "xhigh" => "Extra high".to_owned(),
                other => capitalised(other),
            };
            efforts.push(SessionConfigSelectOption::new(effort.to_string(), name));
        }
        let effort = SessionConfigOption::select(
            EFFORT,
            "Reasoning effort",
            self.effort
                .as_ref()
                .map_or_else(|| "default".to_owned(), ToString::to_string),
            efforts,
        )
        .category(SessionConfigOptionCategory::ThoughtLevel);
        vec![mode, model, effort]
    }

    /// The same mode as the legacy `modes` field.
    pub fn modes(&self) -> SessionModeState {
        SessionModeState::new(
            self.mode.id(),
            Mode::ALL
                .iter()
                .map(|m| SessionMode::new(m.id(), m.name()).description(m.description()))
                .collect(),
        )
    }
}

fn capitalised(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rein_protocol::TurnBudget;

    fn settings() -> ThreadSettings {
        ThreadSettings {
            model: "m1".into(),
            cwd: "/w".into(),
            approval_policy: ApprovalPolicy::OnRequest,
            sandbox_policy: SandboxPolicy::WorkspaceWrite,
            sandbox_options: None,
            reasoning_effort: None,
            budget: TurnBudget::default(),
            instructions: String::new(),
        }
    }

    #[test]
    fn a_choice_becomes_the_settings_change_of_the_next_prompt() {
        let models = vec!["m1".to_owned(), "m2".to_owned()];
        let mut choices = Choices::of(&settings());
        assert_eq!(choices.change_from(&settings()), SettingsChange::default());
        choices.set(MODE, "full-access", &models).unwrap();
        choices.set(MODEL, "m2", &models).unwrap();
        choices.set(EFFORT, "high", &models).unwrap();
        assert_eq!(
            choices.change_from(&settings()),
            SettingsChange {
                model: Some("m2".into()),
                approval_policy: Some(ApprovalPolicy::Never),
                sandbox_policy: Some(SandboxPolicy::DangerFullAccess),
                reasoning_effort: Some(ReasoningEffort::HIGH),
                ..SettingsChange::default()
            }
        );
        assert!(choices.set(MODEL, "m3", &models).is_err());
        assert!(choices.set("speed", "fast", &models).is_err());
        assert_eq!(choices.options(&models).len(), 3);
    }
}
