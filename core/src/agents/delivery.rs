//! Exactly once: a finished child's result reaches its parent once, either as mail (a
//! `<subagent_notification>` user message) or in a `wait_agent` answer, never both and
//! never neither. Whoever claims it first under the registry's lock wins:
//!
//! - when the child finishes while its parent waits on it, the result is *held* for that
//!   wait, which takes it into its answer; a wait that ends without an answer (interrupted)
//!   or a child that starts another turn first sends the held result as mail instead;
//! - otherwise the result is mailed at once, and a later wait on that child tells its
//!   status without the message (`{"completed": null}`) and lists it in
//!   `already_delivered`.
//!
//! The wait reads its targets and stops waiting in one critical section, so a child that
//! finishes while the wait is returning (for another target, or at its timeout) is in the
//! answer rather than held by a wait that no longer listens. A child restored from its
//! rollout has no delivery record: a wait tells its result in full (after a crash, at
//! least once).

use std::collections::BTreeMap;

use rein_protocol::{InputPart, SubmissionId, ThreadId};
use serde_json::{json, Value};

use super::registry::{FollowUp, Mail, Registry};
use super::state::{result_mail, AgentState};
use super::AgentsConfig;

/// Where a child's last result stands with its parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Delivery {
    /// Nothing to deliver (running, interrupted, closed), or unknown (restored).
    #[default]
    Nothing,
    /// The parent's wait was waiting on it when it came: the wait's answer takes it.
    Held,
    /// The parent has it, as mail or in a wait's answer.
    Delivered,
}

/// What a wait returns once one of its targets is final.
#[derive(Debug, PartialEq)]
pub(super) struct WaitAnswer {
    pub(super) status: BTreeMap<String, Value>,
    /// Targets whose result the parent already has (their status carries no message).
    pub(super) already_delivered: Vec<String>,
}

impl WaitAnswer {
    pub(super) fn to_json(&self) -> Value {
        let mut answer = json!({ "status": self.status, "timed_out": false });
        if !self.already_delivered.is_empty() {
            answer["already_delivered"] = json!(self.already_delivered);
        }
        answer
    }
}

impl Registry {
    /// Send `id`'s held result as mail (it is no longer waited for).
    pub(super) fn flush_held(&mut self, id: ThreadId, f: &mut FollowUp) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.delivery != Delivery::Held {
            return;
        }
        node.delivery = Delivery::Delivered;
        let Some(parent) = node.parent else {
            return;
        };
        let mail = Mail {
            id: SubmissionId::new(),
            from: id,
            to: parent,
            items: vec![InputPart::text(result_mail(
                id,
                node.nickname.as_deref(),
                &node.state,
            ))],
        };
        if let Some(now) = self.route_one(mail) {
            f.mail.push(now);
        }
    }

    /// `waiter`'s wait on `targets`: its answer when one of them is final (claiming each
    /// result not yet delivered), and then the wait is over. With `end` (the timeout) the
    /// wait is over even without an answer.
    pub(super) fn finish_wait(
        &mut self,
        waiter: ThreadId,
        targets: &[ThreadId],
        end: bool,
        config: &AgentsConfig,
    ) -> (Option<WaitAnswer>, FollowUp) {
        let mut status = BTreeMap::new();
        let mut already_delivered = Vec::new();
        for id in targets {
            let Some(node) = self.nodes.get_mut(id) else {
                status.insert(id.to_string(), AgentState::NotFound.to_json());
                continue;
            };
            if !node.state.is_final() {
                continue;
            }
            let shown = match node.delivery {
                Delivery::Held => {
                    node.delivery = Delivery::Delivered;
                    node.state.to_json()
                }
                Delivery::Delivered => {
                    already_delivered.push(id.to_string());
                    node.state.without_message().to_json()
                }
                Delivery::Nothing => node.state.to_json(),
            };
            status.insert(id.to_string(), shown);
        }
        if status.is_empty() && !end {
            return (None, FollowUp::default());
        }
        let follow = self.set_waiting(waiter, None, config);
        let answer = (!status.is_empty()).then_some(WaitAnswer {
            status,
            already_delivered,
        });
        (answer, follow)
    }

    /// A wait that ends without an answer (interrupted, dropped): what it held is mailed.
    pub(super) fn abandon_wait(&mut self, waiter: ThreadId, config: &AgentsConfig) -> FollowUp {
        let held: Vec<ThreadId> = self
            .nodes
            .get(&waiter)
            .and_then(|n| n.waiting_on.clone())
            .into_iter()
            .flatten()
            .collect();
        let mut f = self.set_waiting(waiter, None, config);
        for id in held {
            self.flush_held(id, &mut f);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    //! The races, forced by ordering the registry's steps by hand: each result must come
    //! out exactly once, as mail or in a wait's answer.
    use std::collections::HashSet;

    use pretty_assertions::assert_eq;
    use rein_protocol::EventMsg;

    use super::*;
    use crate::agents::registry::Node;

    struct Tree {
        reg: Registry,
        config: AgentsConfig,
        parent: ThreadId,
        children: Vec<ThreadId>,
    }

    fn tree(children: usize) -> Tree {
        let mut reg = Registry::default();
        let parent = ThreadId::new();
        let mut root = Node::new(parent, None, 0);
        root.state = AgentState::Running;
        reg.nodes.insert(parent, root);
        reg.trees.entry(parent).or_default();
        let children: Vec<ThreadId> = (0..children)
            .map(|n| {
                let id = ThreadId::new();
                let mut node = Node::new(parent, Some(parent), 1);
                node.nickname = Some(format!("child {n}"));
                node.state = AgentState::Running;
                reg.nodes.insert(id, node);
                id
            })
            .collect();
        Tree {
            reg,
            config: AgentsConfig::default(),
            parent,
            children,
        }
    }

    impl Tree {
        fn wait_on(&mut self, targets: &[ThreadId]) {
            let set: HashSet<ThreadId> = targets.iter().copied().collect();
            let f = self.reg.set_waiting(self.parent, Some(set), &self.config);
            assert!(f.mail.is_empty());
        }

        /// The child finishes; the texts of the mail that goes to the parent.
        fn finish(&mut self, child: ThreadId, answer: &str) -> Vec<String> {
            let f = self.reg.observe(
                child,
                &EventMsg::TurnCompleted {
                    last_agent_message: Some(answer.to_owned()),
                },
                &self.config,
            );
            mail_texts(&f, self.parent)
        }

        fn answer(&mut self, targets: &[ThreadId], end: bool) -> Option<WaitAnswer> {
            let (answer, f) = self
                .reg
                .finish_wait(self.parent, targets, end, &self.config);
            assert!(f.mail.is_empty(), "a wait's answer sends no mail");
            answer
        }

        fn waiting(&self) -> bool {
            self.reg.nodes[&self.parent].waiting_on.is_some()
        }
    }

    fn mail_texts(f: &FollowUp, to: ThreadId) -> Vec<String> {
        f.mail
            .iter()
            .inspect(|m| assert_eq!(m.to, to))
            .flat_map(|m| &m.items)
            .map(|part| match part {
                InputPart::Text { text } => text.clone(),
                InputPart::Image { url } => url.clone(),
            })
            .collect()
    }

    fn answer_of(entries: &[(ThreadId, Value)], delivered: &[ThreadId]) -> WaitAnswer {
        WaitAnswer {
            status: entries
                .iter()
                .map(|(id, v)| (id.to_string(), v.clone()))
                .collect(),
            already_delivered: delivered.iter().map(ThreadId::to_string).collect(),
        }
    }

    #[test]
    fn a_result_that_comes_during_the_wait_is_answered_not_mailed() {
        let mut t = tree(1);
        let c = t.children[0];
        t.wait_on(&[c]);
        assert_eq!(t.finish(c, "done"), Vec::<String>::new());
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(&[(c, json!({ "completed": "done" }))], &[]))
        );
        assert!(!t.waiting());
        // A second wait does not repeat it.
        t.wait_on(&[c]);
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(&[(c, json!({ "completed": null }))], &[c]))
        );
    }

    #[test]
    fn a_result_mailed_before_the_wait_is_not_repeated_by_it() {
        let mut t = tree(1);
        let c = t.children[0];
        let mail = t.finish(c, "done");
        assert_eq!(mail.len(), 1);
        assert!(mail[0].contains(r#""completed":"done""#), "{mail:?}");
        t.wait_on(&[c]);
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(&[(c, json!({ "completed": null }))], &[c]))
        );
    }

    #[test]
    fn a_result_that_comes_at_the_timeout_is_in_the_answer() {
        let mut t = tree(1);
        let c = t.children[0];
        t.wait_on(&[c]);
        // The wait's timer fired; before its last look the child finishes.
        assert_eq!(t.finish(c, "just in time"), Vec::<String>::new());
        assert_eq!(
            t.answer(&[c], true),
            Some(answer_of(
                &[(c, json!({ "completed": "just in time" }))],
                &[]
            ))
        );
        assert!(!t.waiting());
        // Nothing finished: a plain timeout, and the wait is over.
        let mut t = tree(1);
        let c = t.children[0];
        t.wait_on(&[c]);
        assert_eq!(t.answer(&[c], true), None);
        assert!(!t.waiting());
        assert_eq!(
            t.finish(c, "later"),
            vec![result_mail(
                c,
                Some("child 0"),
                &AgentState::Completed(Some("later".into()))
            )]
        );
    }

    #[test]
    fn results_that_come_while_the_wait_returns_are_all_in_its_answer() {
        let mut t = tree(2);
        let (a, b) = (t.children[0], t.children[1]);
        t.wait_on(&[a, b]);
        // The wait is woken by the first; the second finishes before it looks.
        assert_eq!(t.finish(a, "first"), Vec::<String>::new());
        assert_eq!(t.finish(b, "second"), Vec::<String>::new());
        assert_eq!(
            t.answer(&[a, b], false),
            Some(answer_of(
                &[
                    (a, json!({ "completed": "first" })),
                    (b, json!({ "completed": "second" })),
                ],
                &[]
            ))
        );
    }

    #[test]
    fn an_interrupted_wait_mails_what_it_held() {
        let mut t = tree(1);
        let c = t.children[0];
        t.wait_on(&[c]);
        assert_eq!(t.finish(c, "done"), Vec::<String>::new());
        let f = t.reg.abandon_wait(t.parent, &t.config);
        assert_eq!(
            mail_texts(&f, t.parent),
            vec![result_mail(
                c,
                Some("child 0"),
                &AgentState::Completed(Some("done".into()))
            )]
        );
        assert!(!t.waiting());
        t.wait_on(&[c]);
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(&[(c, json!({ "completed": null }))], &[c]))
        );
    }

    #[test]
    fn a_held_result_is_mailed_when_the_child_moves_on_first() {
        let mut t = tree(1);
        let c = t.children[0];
        t.wait_on(&[c]);
        assert_eq!(t.finish(c, "done"), Vec::<String>::new());
        // The child ends (or starts another turn) before the wait looked.
        let f = t.reg.observe(c, &EventMsg::ShutdownComplete, &t.config);
        assert_eq!(
            mail_texts(&f, t.parent),
            vec![result_mail(
                c,
                Some("child 0"),
                &AgentState::Completed(Some("done".into()))
            )]
        );
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(&[(c, json!("shutdown"))], &[]))
        );
    }
}
