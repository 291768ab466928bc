//! Models trained on Codex often call `apply_patch` through the shell: as an argv
//! (`["apply_patch", "<patch>"]`) or as a heredoc in a shell script
//! (`apply_patch <<'EOF' ... EOF`, optionally after `cd <dir> &&`). There is no such
//! program; the shell tool recognises these forms and applies the patch in process,
//! under the same policy as the `apply_patch` tool.

use std::path::PathBuf;

/// A patch found inside a shell command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellPatch {
    pub patch: String,
    /// A `cd` before the heredoc: patch paths are relative to it.
    pub cd: Option<PathBuf>,
}

const NAMES: &[&str] = &["apply_patch", "applypatch"];

pub fn find_in_command(argv: &[String]) -> Option<ShellPatch> {
    match argv {
        [program, patch] if NAMES.contains(&program.as_str()) => Some(ShellPatch {
            patch: patch.clone(),
            cd: None,
        }),
        [shell, flag, script] if is_shell(shell) && (flag == "-c" || flag == "-lc") => {
            from_heredoc(script)
        }
        _ => None,
    }
}

fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "bash" | "sh" | "zsh" | "dash")
}

fn from_heredoc(script: &str) -> Option<ShellPatch> {
    let mut rest = script.trim_start();
    let mut cd = None;
    if let Some(after_cd) = rest.strip_prefix("cd ") {
        let (dir, after) = after_cd.split_once("&&")?;
        let dir = dir.trim().trim_matches(|c| c == '\'' || c == '"');
        if dir.is_empty() {
            return None;
        }
        cd = Some(PathBuf::from(dir));
        rest = after.trim_start();
    }
    let rest = NAMES.iter().find_map(|n| rest.strip_prefix(n))?;
    let rest = rest.trim_start().strip_prefix("<<")?;
    let (header, body) = rest.split_once('\n')?;
    let delimiter = header.trim().trim_start_matches('-').trim();
    let delimiter = delimiter.trim_matches(|c| c == '\'' || c == '"');
    if delimiter.is_empty() || delimiter.contains(char::is_whitespace) {
        return None;
    }
    let mut patch = String::new();
    let mut lines = body.split('\n');
    for line in lines.by_ref() {
        if line == delimiter {
            // Only whitespace may follow the heredoc: anything else is a real script.
            let trailing: Vec<&str> = lines.collect();
            return trailing
                .iter()
                .all(|l| l.trim().is_empty())
                .then_some(ShellPatch { patch, cd });
        }
        patch.push_str(line);
        patch.push('\n');
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn recognises_argv_and_heredoc_forms() {
        let p = find_in_command(&argv(&["apply_patch", "*** Begin Patch"])).unwrap();
        assert_eq!(p.patch, "*** Begin Patch");
        let script = "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF\n";
        let p = find_in_command(&argv(&["bash", "-lc", script])).unwrap();
        assert_eq!(p.patch, "*** Begin Patch\n*** End Patch\n");
        assert_eq!(p.cd, Some(PathBuf::from("sub")));
    }

    #[test]
    fn ignores_other_scripts() {
        assert_eq!(find_in_command(&argv(&["ls", "x"])), None);
        assert_eq!(
            find_in_command(&argv(&["bash", "-c", "echo apply_patch"])),
            None
        );
        let trailing = "apply_patch <<EOF\nx\nEOF\nrm -rf /\n";
        assert_eq!(find_in_command(&argv(&["bash", "-c", trailing])), None);
        assert_eq!(
            find_in_command(&argv(&["bash", "-c", "apply_patch <<EOF\nnever closed"])),
            None
        );
    }
}
