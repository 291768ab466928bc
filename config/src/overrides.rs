//! `-c key=value` overrides: a dotted key (segments may be quoted, `a."b.c".d`) and a TOML
//! value, or — when the value is not valid TOML — the text itself as a string, so
//! `-c model=gpt-5` works without shell-quoting the string.

use super::error::{ConfigError, OverrideProblem};

/// One parsed override.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub path: Vec<String>,
    pub value: toml::Value,
}

impl Override {
    pub fn parse(arg: &str) -> Result<Self, ConfigError> {
        let fail = |problem| ConfigError::Override {
            arg: arg.to_owned(),
            problem,
        };
        let (key, raw) = arg
            .split_once('=')
            .ok_or_else(|| fail(OverrideProblem::MissingEquals))?;
        let path = split_key(key.trim()).ok_or_else(|| fail(OverrideProblem::BadKey))?;
        Ok(Self {
            path,
            value: parse_value(raw.trim()),
        })
    }

    /// Set the value in `table`, creating tables along the way.
    pub fn apply(&self, table: &mut toml::Table, arg: &str) -> Result<(), ConfigError> {
        let Some((last, parents)) = self.path.split_last() else {
            return Err(ConfigError::Override {
                arg: arg.to_owned(),
                problem: OverrideProblem::BadKey,
            });
        };
        let mut current = table;
        for (depth, segment) in parents.iter().enumerate() {
            let entry = current
                .entry(segment.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            current = match entry {
                toml::Value::Table(t) => t,
                _ => {
                    return Err(ConfigError::Override {
                        arg: arg.to_owned(),
                        problem: OverrideProblem::NotATable {
                            key: self.path[..=depth].join("."),
                        },
                    })
                }
            };
        }
        current.insert(last.clone(), self.value.clone());
        Ok(())
    }
}

/// `text` as a TOML string literal (quoted and escaped), for building an override such as
/// `model="..."` from a flag.
pub fn quote(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn parse_value(raw: &str) -> toml::Value {
    let doc = format!("v = {raw}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_owned()),
    }
}

/// Splits `a.b."c.d"` into its segments; `None` for an empty segment or open quote.
fn split_key(key: &str) -> Option<Vec<String>> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    for c in key.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            '.' if !quoted => {
                if current.is_empty() && !was_quoted {
                    return None;
                }
                segments.push(std::mem::take(&mut current));
                was_quoted = false;
            }
            c => current.push(c),
        }
    }
    if quoted || (current.is_empty() && !was_quoted) {
        return None;
    }
    segments.push(current);
    Some(segments)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values_are_toml_or_else_strings() {
        assert_eq!(
            Override::parse("model=gpt-5").unwrap().value,
            toml::Value::String("gpt-5".into())
        );
        assert_eq!(
            Override::parse("a.b = 42").unwrap().value,
            toml::Value::Integer(42)
        );
        assert_eq!(
            Override::parse(r#"x="quoted""#).unwrap().value,
            toml::Value::String("quoted".into())
        );
        assert!(Override::parse("x=[1, 2]").unwrap().value.is_array());
    }

    #[test]
    fn keys_split_on_dots_outside_quotes() {
        assert_eq!(
            Override::parse(r#"model_providers."my.host".base_url=http://x"#)
                .unwrap()
                .path,
            vec!["model_providers", "my.host", "base_url"]
        );
        assert!(matches!(
            Override::parse("a..b=1"),
            Err(ConfigError::Override {
                problem: OverrideProblem::BadKey,
                ..
            })
        ));
        assert!(matches!(
            Override::parse("novalue"),
            Err(ConfigError::Override {
                problem: OverrideProblem::MissingEquals,
                ..
            })
        ));
    }

    #[test]
    fn apply_creates_tables_and_refuses_to_descend_into_values() {
        let mut t = toml::Table::new();
        Override::parse("profiles.fast.model=m")
            .unwrap()
            .apply(&mut t, "")
            .unwrap();
        assert_eq!(t["profiles"]["fast"]["model"].as_str(), Some("m"));
        let err = Override::parse("profiles.fast.model.x=1")
            .unwrap()
            .apply(&mut t, "arg")
            .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Override { problem: OverrideProblem::NotATable { ref key }, .. } if key == "profiles.fast.model"
        ));
    }
}
