//! `SKILL.md` front matter and `agents/openai.yaml`, both dialects.

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

use super::{Dialect, Skill, SkillInterface, SkillRoot, ToolDependency};

pub const MAX_NAME_CHARS: usize = 64;
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

pub(super) fn parse_skill(
    root: &SkillRoot,
    skill_md: &Path,
    text: &str,
    openai_yaml: Option<&str>,
) -> Result<Skill, String> {
    let (front, body) = split_front_matter(text)?;
    let meta = yaml_map(front, "front matter")?;
    let folder = skill_md
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match (string(&meta["name"], "name")?, root.dialect) {
        (Some(name), _) => name,
        // Claude Code names a skill after its folder when the front matter does not.
        (None, Dialect::Claude) => folder,
        (None, Dialect::Codex) => return Err("missing field `name`".into()),
    };
    let description = match (string(&meta["description"], "description")?, root.dialect) {
        (Some(d), _) => d,
        (None, Dialect::Claude) => first_paragraph(body),
        (None, Dialect::Codex) => return Err("missing field `description`".into()),
    };
    let name = name.trim().to_owned();
    if name.is_empty() {
        return Err("`name` is empty".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("`name` is longer than {MAX_NAME_CHARS} characters"));
    }
    let description = one_line(&description);
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "`description` is longer than {MAX_DESCRIPTION_CHARS} characters"
        ));
    }
    let short_description = string(
        &meta["metadata"]["short-description"],
        "metadata.short-description",
    )?;
    let mut allow_implicit = !bool_field(
        &meta["disable-model-invocation"],
        "disable-model-invocation",
    )?;
    let allowed_tools = allowed_tools(&meta["allowed-tools"])?;
    let fork = match string(&meta["context"], "context")?.as_deref() {
        None | Some("inline") => false,
        Some("fork") => true,
        Some(other) => {
            return Err(format!(
                "`context` must be `fork` or `inline`, not `{other}`"
            ))
        }
    };
    let (mut interface, mut dependencies) = (None, None);
    if let Some(yaml) = openai_yaml {
        let openai = yaml_map(yaml, "agents/openai.yaml")?;
        let base = skill_md.parent().unwrap_or(Path::new("/"));
        interface = parse_interface(&openai["interface"], base)?;
        dependencies = parse_dependencies(&openai["dependencies"])?;
        if let Some(false) = openai["policy"]["allow_implicit_invocation"].as_bool() {
            allow_implicit = false;
        }
    }
    Ok(Skill {
        name,
        description,
        short_description,
        path: skill_md.to_owned(),
        scope: root.scope,
        dialect: root.dialect,
        root: root.path.clone(),
        interface,
        dependencies,
        allow_implicit,
        enabled: true,
        allowed_tools,
        fork,
        body: body.to_owned(),
        sha256: crate::sha256_hex(text.as_bytes()),
    })
}

/// The YAML between a leading `---` line and the next `---` line, and what follows.
fn split_front_matter(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not start with `---` front matter")?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err("the front matter has no closing `---`".into())
}

fn yaml_map(text: &str, what: &str) -> Result<Yaml, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("{what}: {e}"))?;
    match docs.into_iter().next() {
        Some(doc @ Yaml::Hash(_)) => Ok(doc),
        None | Some(Yaml::Null) => Ok(Yaml::Hash(Default::default())),
        Some(_) => Err(format!("{what} is not a mapping")),
    }
}

/// A string field; absent is `None`, another type an error.
fn string(value: &Yaml, field: &str) -> Result<Option<String>, String> {
    match value {
        Yaml::BadValue | Yaml::Null => Ok(None),
        Yaml::String(s) => Ok(Some(s.clone())),
        // A plain scalar YAML reads as a number or a boolean is still text to a skill.
        Yaml::Integer(i) => Ok(Some(i.to_string())),
        Yaml::Real(r) => Ok(Some(r.clone())),
        Yaml::Boolean(b) => Ok(Some(b.to_string())),
        _ => Err(format!("`{field}` must be a string")),
    }
}

fn bool_field(value: &Yaml, field: &str) -> Result<bool, String> {
    match value {
        Yaml::BadValue | Yaml::Null => Ok(false),
        Yaml::Boolean(b) => Ok(*b),
        _ => Err(format!("`{field}` must be true or false")),
    }
}

/// Claude's `allowed-tools`: a list, or one string of names separated by commas or spaces.
fn allowed_tools(value: &Yaml) -> Result<Vec<String>, String> {
    match value {
        Yaml::BadValue | Yaml::Null => Ok(Vec::new()),
        Yaml::String(s) => Ok(s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()),
        Yaml::Array(items) => items
            .iter()
            .map(|i| {
                string(i, "allowed-tools")?
                    .ok_or_else(|| "`allowed-tools` has an empty entry".to_owned())
            })
            .collect(),
        _ => Err("`allowed-tools` must be a list or a string".into()),
    }
}

fn parse_interface(value: &Yaml, base: &Path) -> Result<Option<SkillInterface>, String> {
    if matches!(value, Yaml::BadValue | Yaml::Null) {
        return Ok(None);
    }
    if value.as_hash().is_none() {
        return Err("agents/openai.yaml: `interface` is not a mapping".into());
    }
    let field = |key: &str| string(&value[key], &format!("interface.{key}"));
    let icon =
        |key: &str| -> Result<Option<PathBuf>, String> { Ok(field(key)?.map(|p| base.join(p))) };
    Ok(Some(SkillInterface {
        display_name: field("display_name")?,
        short_description: field("short_description")?,
        icon_small: icon("icon_small")?,
        icon_large: icon("icon_large")?,
        brand_color: field("brand_color")?,
        default_prompt: field("default_prompt")?,
    }))
}

fn parse_dependencies(value: &Yaml) -> Result<Option<Vec<ToolDependency>>, String> {
    if matches!(value, Yaml::BadValue | Yaml::Null) {
        return Ok(None);
    }
    let tools = match &value["tools"] {
        Yaml::BadValue | Yaml::Null => return Ok(Some(Vec::new())),
        Yaml::Array(tools) => tools,
        _ => return Err("agents/openai.yaml: `dependencies.tools` is not a list".into()),
    };
    let required = |tool: &Yaml, key: &str| -> Result<String, String> {
        string(&tool[key], key)?
            .ok_or_else(|| format!("agents/openai.yaml: a tool dependency has no `{key}`"))
    };
    tools
        .iter()
        .map(|tool| {
            Ok(ToolDependency {
                kind: required(tool, "type")?,
                value: required(tool, "value")?,
                description: string(&tool["description"], "description")?,
                transport: string(&tool["transport"], "transport")?,
                command: string(&tool["command"], "command")?,
                url: string(&tool["url"], "url")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn first_paragraph(body: &str) -> String {
    body.trim_start()
        .split("\n\n")
        .next()
        .map(|p| p.trim_start_matches('#').trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
