//! What reading a thread's context costs: discovery of 2,000 skills (1,000 in a project's
//! `.agents/skills`, 1,000 in its `.claude/skills`), cold and cached, and the `AGENTS.md`
//! assembly (and the whole context, skills list included) that `thread/start` runs on a
//! blocking thread before it answers.
//!
//! `cargo bench -p rein-context --bench skills`. "Cold" evicts every `SKILL.md`'s pages
//! from the page cache first (`posix_fadvise(DONTNEED)`, this bench's files only: the
//! folders' dentries and inodes stay cached, and dropping every cache would slow the
//! machine's other work); "cached" is the same scan again. Medians are printed.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rein_context::skills::{load, SkillsConfig};
use rein_context::{assemble, ContextConfig, ProjectDocConfig};

const SKILLS: usize = 2000;

fn project() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    // A real-sized AGENTS.md at the root and an override in the thread's directory.
    std::fs::write(
        root.join("AGENTS.md"),
        "- Run `make check` before you stop.\n".repeat(200),
    )
    .unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(
        root.join("sub/AGENTS.override.md"),
        "In sub/, use tabs.\n".repeat(50),
    )
    .unwrap();
    let mut files = Vec::with_capacity(SKILLS);
    for i in 0..SKILLS {
        let root_dir = if i % 2 == 0 {
            ".agents/skills"
        } else {
            ".claude/skills"
        };
        let folder = root.join(root_dir).join(format!("skill-{i:04}"));
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("SKILL.md");
        std::fs::write(
            &file,
            format!(
                "---\nname: skill-{i:04}\ndescription: >\n  Handles job {i}: read the\n  inputs and write the report.\nallowed-tools: Read, Grep\n---\n\n# Skill {i}\n\n{}",
                "Step by step instructions for this job.\n".repeat(20)
            ),
        )
        .unwrap();
        files.push(file);
    }
    (dir, files)
}

fn evict(files: &[PathBuf]) {
    use std::os::fd::AsRawFd;
    for file in files {
        let f = std::fs::File::open(file).unwrap();
        // SAFETY: a valid open descriptor; the call only advises the kernel.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn time(runs: usize, mut before: impl FnMut(), mut f: impl FnMut()) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                before();
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let (dir, files) = project();
    let sub: &Path = &dir.path().join("sub");
    let config = SkillsConfig {
        admin_root: None,
        ..SkillsConfig::default()
    };
    let found = load(&config, sub).skills.len();
    assert_eq!(found, SKILLS);
    let cold = time(
        5,
        || evict(&files),
        || assert_eq!(load(&config, sub).skills.len(), SKILLS),
    );
    let cached = time(
        20,
        || {},
        || assert_eq!(load(&config, sub).skills.len(), SKILLS),
    );
    let docs = ProjectDocConfig::default();
    let agents = time(
        50,
        || {},
        || {
            assert!(rein_context::project_doc::assemble(&docs, sub)
                .message
                .is_some())
        },
    );
    let whole_config = ContextConfig {
        project_doc: docs.clone(),
        skills: config.clone(),
    };
    let whole = time(
        20,
        || {},
        || {
            assert!(!assemble(&whole_config, sub, Some(272_000))
                .context
                .is_empty());
        },
    );
    let no_skills = ContextConfig {
        project_doc: docs,
        skills: SkillsConfig {
            enabled: false,
            ..config
        },
    };
    let doc_only = time(
        50,
        || {},
        || {
            assert!(!assemble(&no_skills, sub, Some(272_000)).context.is_empty());
        },
    );
    println!("discovery of {SKILLS} skills, cold (SKILL.md pages evicted): {cold:?}");
    println!("discovery of {SKILLS} skills, cached: {cached:?}");
    println!("AGENTS.md assembly (root file + override, 8,150 bytes): {agents:?}");
    println!(
        "thread context, AGENTS.md only (what thread/start adds without skills): {doc_only:?}"
    );
    println!("thread context, AGENTS.md + {SKILLS} skills + list: {whole:?}");
}
