//! Which environment variables a spawned command sees. Secrets in the parent's
//! environment (API keys, tokens) stay out of model-run commands unless set explicitly.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Variables a shell needs to behave normally; the `core` policy passes only these.
const CORE_VARIABLES: &[&str] = &[
    "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ",
    "USER",
];

/// Name suffixes that mark a variable as a secret.
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
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
            EnvInheritance::Inherit => parent.into_iter().filter(|(k, _)| !is_secret(k)).collect(),
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

/// Whether a variable name looks like it holds a credential.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.contains("SECRET") || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
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
