//! Which environment variables a spawned command sees. Secrets in the parent's
//! environment (API keys, tokens, passwords, URLs with credentials) and the addresses of
//! local agents that act for the user (`SSH_AUTH_SOCK`, `DBUS_*`) stay out of model-run
//! commands unless set explicitly.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Variables a shell needs to behave normally; the `core` policy passes only these.
const CORE_VARIABLES: &[&str] = &[
    "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ",
    "USER",
];

/// Words that mark a variable as a secret anywhere in its (upper-cased) name.
const SECRET_WORDS: &[&str] = &[
    "KEY", "TOKEN", "SECRET", "PASS", "PWD", "AUTH", "CRED", "WEBHOOK",
];

/// Name components (between `_`) that mark a secret but are too short to match inside
/// other words (`PAT` is in `PATH`).
const SECRET_COMPONENTS: &[&str] = &["PAT", "PW"];

/// Names that contain a secret word but hold none.
const NOT_SECRETS: &[&str] = &["PWD", "OLDPWD"];

/// Variables that lead a command to an agent acting outside the sandbox.
const AGENT_VARIABLES: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "KRB5CCNAME",
];

/// How the inherited environment is filtered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvInheritance {
    /// The parent's environment minus secrets.
    #[default]
    Inherit,
    /// Only a fixed set of core variables (PATH, HOME, LANG, ...).
    Core,
    /// Nothing inherited: exactly the variables given.
    Explicit,
}

/// The environment policy of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvPolicy {
    pub inherit: EnvInheritance,
    /// Set on top of what is inherited; these are passed even if they look like secrets.
    pub set: BTreeMap<String, String>,
}

impl EnvPolicy {
    /// The full environment of the child, built from the parent's variables.
    pub fn build(
        &self,
        parent: impl IntoIterator<Item = (String, String)>,
    ) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = match self.inherit {
            EnvInheritance::Inherit => parent
                .into_iter()
                .filter(|(k, v)| !is_secret(k, v))
                .collect(),
            EnvInheritance::Core => parent
                .into_iter()
                .filter(|(k, _)| CORE_VARIABLES.contains(&k.as_str()))
                .collect(),
            EnvInheritance::Explicit => BTreeMap::new(),
        };
        env.extend(self.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        env
    }
}

/// Whether a variable is kept from commands: its name contains one of
/// `SECRET_WORDS` (or a component in `SECRET_COMPONENTS`), except `PWD`/`OLDPWD`; its
/// value is a URL with credentials (`scheme://user:password@host`); or it points at a
/// local agent (`SSH_AUTH_SOCK`, `DBUS_*`, ...).
pub fn is_secret(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if AGENT_VARIABLES.contains(&upper.as_str()) || upper.starts_with("DBUS_") {
        return true;
    }
    if url_with_credentials(value) {
        return true;
    }
    if NOT_SECRETS.contains(&upper.as_str()) {
        return false;
    }
    SECRET_WORDS.iter().any(|w| upper.contains(w))
        || upper.split('_').any(|c| SECRET_COMPONENTS.contains(&c))
}

/// `scheme://userinfo@host...`: credentials in a URL.
fn url_with_credentials(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once("://") else {
        return false;
    };
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return false;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| !userinfo.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk"),
            ("GITHUB_TOKEN", "gh"),
            ("MY_SECRET", "s"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("EDITOR", "vi"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
    }

    #[test]
    fn inherit_drops_secrets() {
        let env = EnvPolicy::default().build(parent());
        assert_eq!(env.keys().collect::<Vec<_>>(), ["EDITOR", "PATH"]);
    }

    #[test]
    fn every_kind_of_secret_is_dropped() {
        let secrets = [
            ("API_KEY", "k"),
            ("PGPASSWORD", "p"),
            ("DATABASE_URL", "postgres://app:hunter2@db:5432/app"),
            ("GH_PAT", "ghp_x"),
            ("NPM_CONFIG__AUTH", "a"),
            (
                "SLACK_WEBHOOK_URL",
                "https://hooks.slack.com/services/T/B/X",
            ),
            ("CREDENTIALS_JSON", "{}"),
            ("MY_PASSWD", "p"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("GITHUB_TOKEN", "t"),
            ("MIRROR", "https://token@example.com/repo.git"),
            ("SSH_AUTH_SOCK", "/run/ssh.sock"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/bus"),
        ];
        let kept = [
            ("PATH", "/bin"),
            ("PWD", "/w"),
            ("OLDPWD", "/"),
            ("HOME", "/root"),
            ("LANG", "C.UTF-8"),
            ("EDITOR", "vi"),
            ("HOMEPAGE", "https://example.com/a@b"),
            ("PROXY", "http://proxy:3128"),
        ];
        let parent = secrets
            .iter()
            .chain(&kept)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        let env = EnvPolicy::default().build(parent);
        let mut expected: Vec<&str> = kept.iter().map(|(k, _)| *k).collect();
        expected.sort_unstable();
        assert_eq!(env.keys().map(String::as_str).collect::<Vec<_>>(), expected);
    }

    #[test]
    fn core_keeps_only_core_variables() {
        let policy = EnvPolicy {
            inherit: EnvInheritance::Core,
            set: BTreeMap::new(),
        };
        assert_eq!(policy.build(parent()).keys().collect::<Vec<_>>(), ["PATH"]);
    }

    #[test]
    fn explicit_set_passes_exactly_what_was_given() {
        let policy = EnvPolicy {
            inherit: EnvInheritance::Explicit,
            set: BTreeMap::from([("FOO_TOKEN".to_owned(), "x".to_owned())]),
        };
        let env = policy.build(parent());
        assert_eq!(
            env,
            BTreeMap::from([("FOO_TOKEN".to_owned(), "x".to_owned())])
        );
    }
}
