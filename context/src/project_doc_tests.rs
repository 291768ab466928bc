use std::fs;

use pretty_assertions::assert_eq;

use super::*;

fn config() -> ProjectDocConfig {
    ProjectDocConfig::default()
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

#[test]
fn root_then_override_in_the_subdirectory_in_one_block() {
    let repo = repo();
    let sub = repo.path().join("crates/a");
    fs::create_dir_all(&sub).unwrap();
    fs::write(repo.path().join("AGENTS.md"), "root rules\n").unwrap();
    fs::write(repo.path().join("crates/AGENTS.md"), "   \n").unwrap();
    fs::write(sub.join("AGENTS.md"), "not this one").unwrap();
    fs::write(sub.join("AGENTS.override.md"), "sub rules").unwrap();
    let doc = assemble(&config(), &sub);
    assert_eq!(
        doc.message.as_deref(),
        Some(
            format!(
                "# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\nroot rules\n\n\nsub rules\n</INSTRUCTIONS>",
                sub.display()
            )
            .as_str()
        )
    );
    let paths: Vec<_> = doc.sources.iter().map(|s| s.path.clone()).collect();
    let canon = fs::canonicalize(repo.path()).unwrap();
    assert_eq!(
        paths,
        [
            canon.join("AGENTS.md"),
            canon.join("crates/a/AGENTS.override.md")
        ]
    );
    assert_eq!(doc.warnings, Vec::<String>::new());
}

#[test]
fn the_global_file_comes_first_then_the_separator() {
    let home = tempfile::tempdir().unwrap();
    fs::write(home.path().join("AGENTS.md"), "  global  \n").unwrap();
    // An empty override does not hide the AGENTS.md beside it.
    fs::write(home.path().join("AGENTS.override.md"), "\n").unwrap();
    let repo = repo();
    fs::write(repo.path().join("AGENTS.md"), "project").unwrap();
    let mut config = config();
    config.global_dirs = vec![home.path().to_owned()];
    let doc = assemble(&config, repo.path());
    let text = doc.message.unwrap();
    assert!(
        text.ends_with("<INSTRUCTIONS>\nglobal\n\n--- project-doc ---\n\nproject\n</INSTRUCTIONS>"),
        "{text}"
    );
    assert_eq!(doc.sources[0].kind, ContextSourceKind::GlobalDoc);
    assert_eq!(doc.sources[0].bytes, 6);
}

#[test]
fn without_a_marker_only_the_cwd_is_searched() {
    let top = tempfile::tempdir().unwrap();
    let sub = top.path().join("sub");
    fs::create_dir(&sub).unwrap();
    fs::write(top.path().join("AGENTS.md"), "above").unwrap();
    fs::write(sub.join("CLAUDE.md"), "claude").unwrap();
    assert_eq!(assemble(&config(), &sub).message, None);
    let mut config = config();
    config.fallback_filenames = vec!["CLAUDE.md".into()];
    let doc = assemble(&config, &sub);
    assert!(doc.message.unwrap().contains("<INSTRUCTIONS>\nclaude\n"));
    // A custom marker makes `top` the root.
    fs::write(top.path().join(".hg"), "").unwrap();
    config.root_markers = vec![".hg".into()];
    let text = assemble(&config, &sub).message.unwrap();
    assert!(text.contains("<INSTRUCTIONS>\nabove\n\nclaude\n"), "{text}");
}

#[test]
fn the_cap_cuts_in_bytes_and_says_so() {
    let repo = repo();
    let sub = repo.path().join("sub");
    fs::create_dir(&sub).unwrap();
    fs::write(repo.path().join("AGENTS.md"), "a".repeat(10)).unwrap();
    fs::write(sub.join("AGENTS.md"), "b".repeat(10)).unwrap();
    fs::create_dir(repo.path().join("sub/deeper")).unwrap();
    fs::write(repo.path().join("sub/deeper/AGENTS.md"), "c").unwrap();
    let mut config = config();
    config.max_bytes = 14;
    let doc = assemble(&config, &repo.path().join("sub/deeper"));
    assert!(doc.message.unwrap().contains(&format!(
        "<INSTRUCTIONS>\n{}\n\nbbbb\n</INSTRUCTIONS>",
        "a".repeat(10)
    )));
    assert_eq!(doc.sources[1].bytes, 4);
    assert_eq!(doc.sources[1].truncated_from, Some(10));
    assert_eq!(doc.warnings.len(), 2, "{:?}", doc.warnings);
    assert!(doc.warnings[0].contains("is 10 bytes; only its first 4 are sent"));
    assert!(doc.warnings[1].contains("deeper/AGENTS.md is not sent"));
}

#[test]
fn zero_bytes_or_off_sends_no_project_file() {
    let repo = repo();
    fs::write(repo.path().join("AGENTS.md"), "project").unwrap();
    let mut config = config();
    config.max_bytes = 0;
    assert_eq!(assemble(&config, repo.path()).message, None);
    config.max_bytes = DEFAULT_MAX_BYTES;
    config.enabled = false;
    assert_eq!(assemble(&config, repo.path()), ProjectDoc::default());
}

#[test]
fn a_directory_named_agents_md_is_skipped_for_the_next_name() {
    let repo = repo();
    fs::create_dir(repo.path().join("AGENTS.override.md")).unwrap();
    fs::write(repo.path().join("AGENTS.md"), "file").unwrap();
    let doc = assemble(&config(), repo.path());
    assert!(doc.message.unwrap().contains("<INSTRUCTIONS>\nfile\n"));
}
