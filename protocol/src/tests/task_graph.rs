//! The task graph's fold: readiness from dependencies, the failure policies, and review
//! rejections as edges back to the reviewed node.

use pretty_assertions::assert_eq;

use crate::{
    FailurePolicy, FindingSeverity, GraphStatus, ReviewFinding, ReviewVerdict, TaskFailureKind,
    TaskGraph, TaskGraphChange, TaskNodeSpec, TaskOutcome, TaskState, ThreadId,
};

fn spec(id: &str, deps: &[&str]) -> TaskNodeSpec {
    TaskNodeSpec {
        id: id.into(),
        title: id.to_uppercase(),
        role: "worker".into(),
        instructions: String::new(),
        acceptance: Vec::new(),
        deps: deps.iter().map(|d| (*d).to_owned()).collect(),
        reviews: None,
    }
}

fn planned(policy: FailurePolicy, nodes: Vec<TaskNodeSpec>) -> TaskGraph {
    let mut g = TaskGraph::default();
    g.apply(
        &TaskGraphChange::Planned {
            policy,
            max_review_rounds: 1,
            max_retries: 0,
            upsert: nodes,
            remove: Vec::new(),
        },
        1,
    );
    g
}

fn run(g: &mut TaskGraph, id: &str, outcome: TaskOutcome) {
    g.apply(
        &TaskGraphChange::NodeStarted {
            node_id: id.into(),
            thread_id: ThreadId::new(),
        },
        2,
    );
    g.apply(
        &TaskGraphChange::NodeFinished {
            node_id: id.into(),
            outcome,
        },
        3,
    );
}

fn done() -> TaskOutcome {
    TaskOutcome::Completed {
        answer: Some("ok".into()),
        files_changed: Vec::new(),
    }
}

fn failed() -> TaskOutcome {
    TaskOutcome::Failed {
        kind: TaskFailureKind::TurnFailed,
        message: "boom".into(),
    }
}

fn states(g: &TaskGraph) -> Vec<(&str, TaskState)> {
    g.nodes
        .iter()
        .map(|n| (n.spec.id.as_str(), n.state))
        .collect()
}

fn diamond(policy: FailurePolicy) -> TaskGraph {
    planned(
        policy,
        vec![spec("a", &[]), spec("b", &[]), spec("c", &["a", "b"])],
    )
}

#[test]
fn a_node_is_ready_exactly_when_its_dependencies_completed() {
    let mut g = diamond(FailurePolicy::BlockDependents);
    assert_eq!(g.ready(), ["a", "b"]);
    run(&mut g, "a", done());
    assert_eq!(
        states(&g),
        [
            ("a", TaskState::Completed),
            ("b", TaskState::Ready),
            ("c", TaskState::Pending)
        ]
    );
    run(&mut g, "b", done());
    assert_eq!(g.ready(), ["c"]);
    run(&mut g, "c", done());
    assert_eq!(g.status(), GraphStatus::Completed);
    assert_eq!(g.nodes[2].attempts[0].started_ms, 2);
}

#[test]
fn failure_policies_decide_what_dependents_do() {
    let mut g = diamond(FailurePolicy::BlockDependents);
    run(&mut g, "a", failed());
    run(&mut g, "b", done());
    assert_eq!(g.node("c").map(|n| n.state), Some(TaskState::Blocked));
    assert_eq!(g.status(), GraphStatus::Failed);

    let mut g = diamond(FailurePolicy::AllowOrphans);
    run(&mut g, "a", failed());
    assert_eq!(g.node("c").map(|n| n.state), Some(TaskState::Pending));
    run(&mut g, "b", done());
    assert_eq!(g.ready(), ["c"]);

    let mut g = diamond(FailurePolicy::FailFast);
    run(&mut g, "a", failed());
    assert_eq!(
        states(&g),
        [
            ("a", TaskState::Failed),
            ("b", TaskState::Skipped),
            ("c", TaskState::Skipped)
        ]
    );
}

#[test]
fn a_rejection_requeues_the_reviewed_node_until_rounds_run_out() {
    let mut review = spec("r", &["w"]);
    review.role = "reviewer".into();
    review.reviews = Some("w".into());
    let mut g = planned(FailurePolicy::BlockDependents, vec![spec("w", &[]), review]);
    let finding = ReviewFinding {
        severity: FindingSeverity::Major,
        message: "no tests".into(),
    };
    let reject = TaskOutcome::Reviewed {
        verdict: ReviewVerdict {
            approved: false,
            findings: vec![finding.clone()],
        },
    };
    run(&mut g, "w", done());
    run(&mut g, "r", reject.clone());
    assert_eq!(
        states(&g),
        [("w", TaskState::Ready), ("r", TaskState::Pending)]
    );
    let w = g.node("w").cloned().unwrap();
    assert_eq!((w.review_rounds, w.findings), (1, vec![finding.clone()]));
    // Out of rounds (max 1): both fail, with the findings kept.
    run(&mut g, "w", done());
    run(&mut g, "r", reject);
    assert_eq!(
        states(&g),
        [("w", TaskState::Failed), ("r", TaskState::Failed)]
    );
    assert_eq!(g.node("w").unwrap().findings, vec![finding]);
    assert_eq!(g.node("w").unwrap().attempts.len(), 2);
}

#[test]
fn a_replan_is_a_diff() {
    let mut g = diamond(FailurePolicy::BlockDependents);
    run(&mut g, "a", done());
    g.apply(
        &TaskGraphChange::Planned {
            policy: FailurePolicy::BlockDependents,
            max_review_rounds: 1,
            max_retries: 0,
            upsert: vec![spec("c", &["a"])],
            remove: vec!["b".into()],
        },
        4,
    );
    assert_eq!(
        states(&g),
        [("a", TaskState::Completed), ("c", TaskState::Ready)]
    );
}

#[test]
fn an_aborted_root_turn_cancels_the_running_nodes() {
    let mut g = diamond(FailurePolicy::BlockDependents);
    for id in ["a", "b"] {
        g.apply(
            &TaskGraphChange::NodeStarted {
                node_id: id.into(),
                thread_id: ThreadId::new(),
            },
            2,
        );
    }
    g.cancel_running(5);
    assert_eq!(
        states(&g),
        [
            ("a", TaskState::Cancelled),
            ("b", TaskState::Cancelled),
            ("c", TaskState::Blocked)
        ]
    );
    assert_eq!(g.nodes[0].attempts[0].ended_ms, Some(5));
}

fn failed_as(kind: TaskFailureKind) -> TaskOutcome {
    TaskOutcome::Failed {
        kind,
        message: "no".into(),
    }
}

#[test]
fn a_transient_failure_requeues_the_node_until_its_retries_are_spent() {
    let mut g = TaskGraph::default();
    g.apply(
        &TaskGraphChange::Planned {
            policy: FailurePolicy::BlockDependents,
            max_review_rounds: 1,
            max_retries: 2,
            upsert: vec![spec("a", &[]), spec("b", &["a"])],
            remove: Vec::new(),
        },
        1,
    );
    run(&mut g, "a", failed_as(TaskFailureKind::TurnFailed));
    assert_eq!(g.node("a").unwrap().state, TaskState::Ready);
    // The attempt ended at 3: the first retry waits the base, the next twice that.
    assert_eq!(g.node("a").unwrap().retry_at(100), Some(103));
    run(&mut g, "a", failed_as(TaskFailureKind::ThreadDied));
    assert_eq!(g.node("a").unwrap().retry_at(100), Some(203));
    run(&mut g, "a", failed_as(TaskFailureKind::TurnFailed));
    assert_eq!(g.node("a").unwrap().state, TaskState::Failed);
    assert_eq!(g.node("b").unwrap().state, TaskState::Blocked);
    assert_eq!(g.node("a").unwrap().attempts.len(), 3);
}

#[test]
fn a_failure_that_would_repeat_is_not_retried() {
    for kind in [
        TaskFailureKind::Budget,
        TaskFailureKind::NoVerdict,
        TaskFailureKind::Rejected,
    ] {
        let mut g = TaskGraph::default();
        g.apply(
            &TaskGraphChange::Planned {
                policy: FailurePolicy::BlockDependents,
                max_review_rounds: 1,
                max_retries: 2,
                upsert: vec![spec("a", &[])],
                remove: Vec::new(),
            },
            1,
        );
        run(&mut g, "a", failed_as(kind));
        let a = g.node("a").unwrap();
        assert_eq!(
            (a.state, a.retry_at(100)),
            (TaskState::Failed, None),
            "{kind:?}"
        );
    }
}
