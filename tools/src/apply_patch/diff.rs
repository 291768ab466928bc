//! Unified diffs of staged changes, as `git diff` would show them.

use std::path::Path;

/// The unified diff from `before` to `after`; `None` is an absent file.
pub fn unified_diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let name = path.display();
    let old_header = if before.is_some() {
        format!("a/{name}")
    } else {
        "/dev/null".to_owned()
    };
    let new_header = if after.is_some() {
        format!("b/{name}")
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old_header, &new_header)
        .to_string()
}
