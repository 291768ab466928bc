//! A plan as `plan_tasks` receives it, and the checks it must pass before it is recorded:
//! ids unique and non-blank, every dependency and reviewed node known, roles known, no
//! cycle, and nothing that runs or ran rewritten. Each refusal is a sentence the model
//! reads and can act on.

use std::collections::{HashMap, HashSet};

use rein_protocol::{FailurePolicy, TaskGraph, TaskNodeSpec, TaskState};
use serde::Deserialize;

/// `plan_tasks`' arguments.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanArgs {
    /// Nodes to add, or to replace by id.
    #[serde(default)]
    pub nodes: Vec<TaskNodeSpec>,
    /// Extra dependencies: `to` depends on `from`.
    #[serde(default)]
    pub edges: Vec<PlanEdge>,
    /// Ids of nodes to drop.
    #[serde(default)]
    pub remove: Vec<String>,
    #[serde(default)]
    pub failure_policy: Option<FailurePolicy>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanEdge {
    pub from: String,
    pub to: String,
}

/// Why a plan was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("there is no task graph yet: give `nodes`")]
    Empty,
    #[error("a node has a blank id: every node needs a stable, unique id")]
    BlankId,
    #[error("duplicate node id `{0}`: ids must be unique")]
    DuplicateId(String),
    #[error("node `{node}` depends on `{dep}`, which is not in the graph")]
    UnknownDependency { node: String, dep: String },
    #[error("an edge names `{0}`, which is not in the graph")]
    UnknownEdgeNode(String),
    #[error("node `{node}` reviews `{target}`, which is not in the graph")]
    UnknownReviewed { node: String, target: String },
    #[error("cannot remove `{0}`: there is no such node")]
    UnknownRemoved(String),
    #[error("node `{node}` is {state} and cannot be changed or removed")]
    NotEditable { node: String, state: String },
    #[error("node `{node}` has unknown role `{role}`; known roles: {known}")]
    UnknownRole {
        node: String,
        role: String,
        known: String,
    },
    #[error("the dependencies form a cycle: {}; remove one of these edges", .0.join(" -> "))]
    Cycle(Vec<String>),
}

/// The diff `args` make to `current`, checked: the nodes to upsert (edges and reviewed
/// nodes folded into their dependencies) and the ids to remove.
pub fn validate(
    current: &TaskGraph,
    args: PlanArgs,
    roles: &[&str],
) -> Result<(Vec<TaskNodeSpec>, Vec<String>), PlanError> {
    let PlanArgs {
        mut nodes,
        edges,
        remove,
        ..
    } = args;
    // An empty call on an existing graph runs it on (and waits for it).
    if nodes.is_empty() && remove.is_empty() && edges.is_empty() && current.is_empty() {
        return Err(PlanError::Empty);
    }
    check_specs(&nodes, roles)?;
    let editable = |id: &str| match current.node(id) {
        Some(n) if matches!(n.state, TaskState::Running | TaskState::Completed) => {
            Err(PlanError::NotEditable {
                node: id.to_owned(),
                state: format!("{:?}", n.state).to_lowercase(),
            })
        }
        _ => Ok(()),
    };
    for id in &remove {
        if current.node(id).is_none() {
            return Err(PlanError::UnknownRemoved(id.clone()));
        }
        editable(id)?;
    }
    for node in &nodes {
        editable(&node.id)?;
    }
    let mut next = current.clone();
    next.merge(&nodes, &remove);
    let known: HashSet<&str> = next.nodes.iter().map(|n| n.spec.id.as_str()).collect();
    for edge in &edges {
        for end in [&edge.from, &edge.to] {
            if !known.contains(end.as_str()) {
                return Err(PlanError::UnknownEdgeNode(end.clone()));
            }
        }
    }
    fold_edges(&mut nodes, &edges, &known)?;
    // Edges to nodes not re-sent are edits of those nodes.
    for edge in &edges {
        if !nodes.iter().any(|n| n.id == edge.to) {
            editable(&edge.to)?;
            if let Some(existing) = current.node(&edge.to) {
                let mut spec = existing.spec.clone();
                spec.deps.push(edge.from.clone());
                nodes.push(spec);
            }
        }
    }
    let mut next = current.clone();
    next.merge(&nodes, &remove);
    check_deps(&next, &known)?;
    if let Some(cycle) = find_cycle(&next) {
        return Err(PlanError::Cycle(cycle));
    }
    Ok((nodes, remove))
}

/// Each sent node takes the edges that end at it, and the node it reviews, as dependencies.
fn fold_edges(
    nodes: &mut [TaskNodeSpec],
    edges: &[PlanEdge],
    known: &HashSet<&str>,
) -> Result<(), PlanError> {
    for node in nodes {
        for edge in edges.iter().filter(|e| e.to == node.id) {
            if !node.deps.contains(&edge.from) {
                node.deps.push(edge.from.clone());
            }
        }
        if let Some(target) = &node.reviews {
            if !known.contains(target.as_str()) {
                return Err(PlanError::UnknownReviewed {
                    node: node.id.clone(),
                    target: target.clone(),
                });
            }
            if !node.deps.contains(target) {
                node.deps.push(target.clone());
            }
        }
    }
    Ok(())
}

/// Every dependency of the merged graph names one of its nodes.
fn check_deps(next: &TaskGraph, known: &HashSet<&str>) -> Result<(), PlanError> {
    for node in &next.nodes {
        for dep in &node.spec.deps {
            if !known.contains(dep.as_str()) {
                return Err(PlanError::UnknownDependency {
                    node: node.spec.id.clone(),
                    dep: dep.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Ids non-blank and unique, roles known.
fn check_specs(nodes: &[TaskNodeSpec], roles: &[&str]) -> Result<(), PlanError> {
    let mut seen = HashSet::new();
    for node in nodes {
        if node.id.trim().is_empty() {
            return Err(PlanError::BlankId);
        }
        if !seen.insert(node.id.clone()) {
            return Err(PlanError::DuplicateId(node.id.clone()));
        }
        if !roles.contains(&node.role.as_str()) {
            return Err(PlanError::UnknownRole {
                node: node.id.clone(),
                role: node.role.clone(),
                known: roles.join(", "),
            });
        }
    }
    Ok(())
}

/// A dependency cycle of `graph`, as the ids along it (the first repeated at the end).
fn find_cycle(graph: &TaskGraph) -> Option<Vec<String>> {
    let deps: HashMap<&str, Vec<&str>> = graph
        .nodes
        .iter()
        .map(|n| {
            (
                n.spec.id.as_str(),
                n.spec.deps.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit<'a>(
        id: &'a str,
        deps: &HashMap<&'a str, Vec<&'a str>>,
        marks: &mut HashMap<&'a str, Mark>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match marks.get(id) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<String> =
                    path[start..].iter().map(|s| (*s).to_owned()).collect();
                cycle.push(id.to_owned());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(id, Mark::Open);
        path.push(id);
        for dep in deps.get(id).into_iter().flatten() {
            if let Some(cycle) = visit(dep, deps, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(id, Mark::Done);
        None
    }
    let mut marks = HashMap::new();
    for node in &graph.nodes {
        let mut path = Vec::new();
        if let Some(cycle) = visit(&node.spec.id, &deps, &mut marks, &mut path) {
            return Some(cycle);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const ROLES: &[&str] = &["worker", "reviewer"];

    fn node(id: &str, deps: &[&str]) -> TaskNodeSpec {
        TaskNodeSpec {
            id: id.into(),
            title: id.into(),
            role: "worker".into(),
            instructions: String::new(),
            acceptance: Vec::new(),
            deps: deps.iter().map(|d| (*d).to_owned()).collect(),
            reviews: None,
        }
    }

    fn plan(nodes: Vec<TaskNodeSpec>) -> PlanArgs {
        PlanArgs {
            nodes,
            ..PlanArgs::default()
        }
    }

    fn check(args: PlanArgs) -> Result<(Vec<TaskNodeSpec>, Vec<String>), PlanError> {
        validate(&TaskGraph::default(), args, ROLES)
    }

    #[test]
    fn bad_plans_are_refused_with_what_to_fix() {
        assert_eq!(
            check(plan(vec![
                node("a", &["b"]),
                node("b", &["c"]),
                node("c", &["a"])
            ])),
            Err(PlanError::Cycle(vec![
                "a".into(),
                "b".into(),
                "c".into(),
                "a".into()
            ]))
        );
        assert_eq!(
            check(plan(vec![node("a", &["a"])])),
            Err(PlanError::Cycle(vec!["a".into(), "a".into()]))
        );
        assert_eq!(
            check(plan(vec![node("a", &[]), node("a", &[])])),
            Err(PlanError::DuplicateId("a".into()))
        );
        assert_eq!(
            check(plan(vec![node("a", &["ghost"])])),
            Err(PlanError::UnknownDependency {
                node: "a".into(),
                dep: "ghost".into()
            })
        );
        let mut odd = node("a", &[]);
        odd.role = "wizard".into();
        assert!(matches!(
            check(plan(vec![odd])),
            Err(PlanError::UnknownRole { .. })
        ));
        assert_eq!(check(PlanArgs::default()), Err(PlanError::Empty));
    }

    #[test]
    fn edges_and_reviews_become_dependencies() {
        let mut review = node("r", &[]);
        review.role = "reviewer".into();
        review.reviews = Some("a".into());
        let args = PlanArgs {
            nodes: vec![node("a", &[]), node("b", &[]), review],
            edges: vec![PlanEdge {
                from: "a".into(),
                to: "b".into(),
            }],
            ..PlanArgs::default()
        };
        let (upsert, remove) = check(args).unwrap();
        let deps: Vec<(&str, Vec<String>)> = upsert
            .iter()
            .map(|n| (n.id.as_str(), n.deps.clone()))
            .collect();
        assert_eq!(
            deps,
            [
                ("a", vec![]),
                ("b", vec!["a".to_owned()]),
                ("r", vec!["a".to_owned()])
            ]
        );
        assert!(remove.is_empty());
    }
}
