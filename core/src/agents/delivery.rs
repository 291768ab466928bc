//! Exactly once: a finished child's result reaches its parent once, either as mail (a
//! `<subagent_notification>` user message) or in a `wait_agent` answer, never both and
//! never neither. Whoever claims it first under the registry's lock wins:
//!
//! - when the child finishes while its parent waits on it, the result is *held* for that
//!   wait, which takes it into its answer; a wait that ends without an answer (interrupted)
//!   or a child that starts another turn first sends the held result as mail instead;
//! - otherwise the result is mailed at once; a later wait on that child claims the mail
//!   back while the model has not read it (still in the tree's queue or on its way:
//!   never handed over; in the parent's mailbox: taken out, `MailTaken` recorded) and
//!   answers with the result; only a result already read (history) is told without the
//!   message (`{"completed": null}`) and listed in `already_delivered`. (The ordering
//!   "finished just before the wait began" used to lose the answer into a later
//!   notification.)
//!
//! The wait reads its targets and stops waiting in one critical section, so a child that
//! finishes while the wait is returning (for another target, or at its timeout) is in the
//! answer rather than held by a wait that no longer listens. A child restored from its
//! rollout has no delivery record: a wait tells its result in full (after a crash, at
//! least once).

use std::collections::BTreeMap;

use rein_protocol::{InputPart, SubmissionId, ThreadId};
use serde::Serialize;

use super::registry::{FollowUp, Mail, Registry};
use super::state::{result_mail, AgentState};
use super::AgentsConfig;
use crate::tools::ToolContext;

/// Where a child's last result stands with its parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Delivery {
    /// Nothing to deliver (running, interrupted, closed), or unknown (restored).
    #[default]
    Nothing,
    /// The parent's wait was waiting on it when it came: the wait's answer takes it.
    Held,
    /// Sent as the mail `id`, which the model may not have read yet: a wait claims it
    /// back (see [`Sent`]).
    Mailed { id: SubmissionId, sent: Sent },
    /// The parent has it, as mail it may have read or in a wait's answer.
    Delivered,
}

/// How far result mail has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sent {
    /// Not handed to the parent's loop yet (in the tree's queue or about to be handed):
    /// a wait takes it, and it is never handed over.
    Queued,
    /// Being handed over: a wait waits until it is in the loop.
    Handing,
    /// In the loop: in its mailbox (a wait takes it out) or already history.
    InLoop,
}

/// Result mail a wait found in the parent's loop: taken back from its mailbox if it still
/// waits there, else the model has it.
#[derive(Debug, PartialEq)]
pub(super) struct Claim {
    target: String,
    mail: SubmissionId,
    state: AgentState,
}

/// What a wait returns once one of its targets is final (Codex's `wait_agent` answer).
#[derive(Debug, PartialEq, Serialize)]
pub(super) struct WaitAnswer {
    pub(super) status: BTreeMap<String, AgentState>,
    pub(super) timed_out: bool,
    /// Targets whose result the parent already has (their status carries no message).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) already_delivered: Vec<String>,
    /// Results mailed into the parent's loop, settled by [`WaitAnswer::settle`].
    #[serde(skip)]
    pub(super) claims: Vec<Claim>,
}

impl WaitAnswer {
    /// Take the claimed mail out of the parent's mailbox: a result still there goes into
    /// this answer (the mail is never read), one already taken is reported delivered.
    pub(super) async fn settle(mut self, ctx: &ToolContext) -> WaitAnswer {
        for claim in std::mem::take(&mut self.claims) {
            let shown = if ctx.claim_mail(claim.mail).await {
                claim.state
            } else {
                self.already_delivered.push(claim.target.clone());
                claim.state.without_message()
            };
            self.status.insert(claim.target, shown);
        }
        self
    }

    /// An answer that tells only these statuses (targets that are not agents).
    pub(super) fn of(status: BTreeMap<String, AgentState>) -> WaitAnswer {
        WaitAnswer {
            status,
            already_delivered: Vec::new(),
            claims: Vec::new(),
            timed_out: false,
        }
    }

    /// The answer of a wait whose time ran out before any target finished.
    pub(super) fn timed_out() -> WaitAnswer {
        WaitAnswer {
            timed_out: true,
            ..WaitAnswer::of(BTreeMap::new())
        }
    }
}

impl Registry {
    /// Send `child`'s result to `parent` as mail, remembering it so a wait can claim it.
    pub(super) fn mail_result(
        &mut self,
        child: ThreadId,
        parent: ThreadId,
        nickname: Option<&str>,
        state: &AgentState,
        f: &mut FollowUp,
    ) {
        let mail = Mail {
            id: SubmissionId::new(),
            from: child,
            to: parent,
            items: vec![InputPart::text(result_mail(child, nickname, state))],
        };
        if let Some(node) = self.nodes.get_mut(&child) {
            node.delivery = Delivery::Mailed {
                id: mail.id,
                sent: Sent::Queued,
            };
        }
        self.route_one(mail, f);
    }

    /// Send `id`'s held result as mail (it is no longer waited for).
    pub(super) fn flush_held(&mut self, id: ThreadId, f: &mut FollowUp) {
        let Some(node) = self.nodes.get(&id) else {
            return;
        };
        if node.delivery != Delivery::Held {
            return;
        }
        let (parent, nickname, state) = (node.parent, node.nickname.clone(), node.state.clone());
        match parent {
            Some(parent) => self.mail_result(id, parent, nickname.as_deref(), &state, f),
            None => {
                if let Some(node) = self.nodes.get_mut(&id) {
                    node.delivery = Delivery::Delivered;
                }
            }
        }
    }

    /// `mail` is about to be handed to its loop: `false` if a wait claimed it meanwhile
    /// (it must not be handed over).
    pub(super) fn handing(&mut self, mail: &Mail) -> bool {
        if self.claimed.remove(&mail.id) {
            return false;
        }
        self.advance(mail, Sent::Queued, Sent::Handing);
        true
    }

    /// `mail` is in its loop now.
    pub(super) fn landed(&mut self, mail: &Mail) {
        self.advance(mail, Sent::Handing, Sent::InLoop);
    }

    fn advance(&mut self, mail: &Mail, from: Sent, to: Sent) {
        if let Some(node) = self.nodes.get_mut(&mail.from) {
            if node.delivery
                == (Delivery::Mailed {
                    id: mail.id,
                    sent: from,
                })
            {
                node.delivery = Delivery::Mailed {
                    id: mail.id,
                    sent: to,
                };
            }
        }
    }

    /// Claim result mail `mail` that has not reached its loop: out of the tree's queue, or
    /// remembered so it is not handed over.
    fn claim_queued(&mut self, root: ThreadId, mail: SubmissionId, f: &mut FollowUp) {
        let queued = self.trees.get_mut(&root).and_then(|tree| {
            let at = tree.queue.iter().position(|m| m.id == mail)?;
            tree.queue.remove(at)
        });
        match queued {
            // Its hold may be recorded in the receiver's rollout.
            Some(m) => f.drop.push((m.to, m.id)),
            None => {
                self.claimed.insert(mail);
            }
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
        let mut claims = Vec::new();
        let mut unclaimed = Vec::new();
        for id in targets {
            let Some(node) = self.nodes.get_mut(id) else {
                status.insert(id.to_string(), AgentState::NotFound);
                continue;
            };
            if !node.state.is_final() {
                continue;
            }
            let shown = match node.delivery {
                Delivery::Held => {
                    node.delivery = Delivery::Delivered;
                    node.state.clone()
                }
                Delivery::Mailed { id: mail, sent } => match sent {
                    Sent::Queued => {
                        node.delivery = Delivery::Delivered;
                        unclaimed.push((node.root, mail));
                        node.state.clone()
                    }
                    // It is in the loop in a moment (which wakes the wait); at the end of
                    // the wait it is left to be read as mail.
                    Sent::Handing if !end => continue,
                    Sent::Handing => {
                        already_delivered.push(id.to_string());
                        node.state.without_message()
                    }
                    Sent::InLoop => {
                        node.delivery = Delivery::Delivered;
                        claims.push(Claim {
                            target: id.to_string(),
                            mail,
                            state: node.state.clone(),
                        });
                        continue;
                    }
                },
                Delivery::Delivered => {
                    already_delivered.push(id.to_string());
                    node.state.without_message()
                }
                Delivery::Nothing => node.state.clone(),
            };
            status.insert(id.to_string(), shown);
        }
        if status.is_empty() && claims.is_empty() && !end {
            return (None, FollowUp::default());
        }
        // Claimed before the wait ends, which may release queued mail.
        let mut dropped = FollowUp::default();
        for (root, mail) in unclaimed {
            self.claim_queued(root, mail, &mut dropped);
        }
        let mut follow = self.set_waiting(waiter, None, config);
        follow.drop.append(&mut dropped.drop);
        let answer = (!status.is_empty() || !claims.is_empty()).then_some(WaitAnswer {
            status,
            timed_out: false,
            already_delivered,
            claims,
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
                InputPart::Text { text } | InputPart::Skill { text, .. } => text.clone(),
                InputPart::Image { url } => url.clone(),
            })
            .collect()
    }

    fn answer_of(entries: &[(ThreadId, AgentState)], delivered: &[ThreadId]) -> WaitAnswer {
        WaitAnswer {
            already_delivered: delivered.iter().map(ThreadId::to_string).collect(),
            ..WaitAnswer::of(
                entries
                    .iter()
                    .map(|(id, v)| (id.to_string(), v.clone()))
                    .collect(),
            )
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
            Some(answer_of(
                &[(c, AgentState::Completed(Some("done".into())))],
                &[]
            ))
        );
        assert!(!t.waiting());
        // A second wait does not repeat it.
        t.wait_on(&[c]);
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(&[(c, AgentState::Completed(None))], &[c]))
        );
    }

    /// The mail a finished child sent, as the follow-up carries it.
    fn finish_mail(t: &mut Tree, child: ThreadId, answer: &str) -> Mail {
        let mut f = t.reg.observe(
            child,
            &EventMsg::TurnCompleted {
                last_agent_message: Some(answer.to_owned()),
            },
            &t.config,
        );
        assert_eq!(f.mail.len(), 1);
        f.mail.remove(0)
    }

    #[test]
    fn a_result_mailed_just_before_the_wait_is_claimed_before_it_reaches_the_loop() {
        // Issue 23 item 12: the child finishes just before the parent's wait starts; its
        // mail is on its way. The wait takes it and the mail is never handed over.
        let mut t = tree(1);
        let c = t.children[0];
        let mail = finish_mail(&mut t, c, "done");
        t.wait_on(&[c]);
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(
                &[(c, AgentState::Completed(Some("done".into())))],
                &[]
            ))
        );
        assert!(
            !t.reg.handing(&mail),
            "claimed mail is not handed to the loop"
        );
        assert!(t.reg.claimed.is_empty());
        // A second wait does not repeat it.
        t.wait_on(&[c]);
        assert_eq!(
            t.answer(&[c], false),
            Some(answer_of(&[(c, AgentState::Completed(None))], &[c]))
        );
    }

    #[test]
    fn a_result_mailed_into_the_loop_is_claimed_from_the_mailbox() {
        let mut t = tree(1);
        let c = t.children[0];
        let mail = finish_mail(&mut t, c, "done");
        assert!(t.reg.handing(&mail));
        // Being handed over: the wait waits for it to land rather than answer without it.
        t.wait_on(&[c]);
        assert_eq!(t.answer(&[c], false), None);
        assert!(t.waiting());
        t.reg.landed(&mail);
        let answer = t.answer(&[c], false).expect("an answer");
        assert_eq!(
            answer,
            WaitAnswer {
                status: BTreeMap::new(),
                timed_out: false,
                already_delivered: Vec::new(),
                claims: vec![Claim {
                    target: c.to_string(),
                    mail: mail.id,
                    state: AgentState::Completed(Some("done".into())),
                }],
            }
        );
        assert!(!t.waiting());
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
                &[(c, AgentState::Completed(Some("just in time".into())))],
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
                    (a, AgentState::Completed(Some("first".into()))),
                    (b, AgentState::Completed(Some("second".into()))),
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
        // The mail reaches the loop; a later wait claims it from the mailbox (if the model
        // read it meanwhile, the claim finds nothing and the wait says `already_delivered`).
        let mail = &f.mail[0];
        assert!(t.reg.handing(mail));
        t.reg.landed(mail);
        t.wait_on(&[c]);
        let answer = t.answer(&[c], false).expect("an answer");
        assert_eq!(answer.claims.len(), 1);
        assert_eq!(answer.claims[0].mail, mail.id);
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
            Some(answer_of(&[(c, AgentState::Shutdown)], &[]))
        );
    }
}
