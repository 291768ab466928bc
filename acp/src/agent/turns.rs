//! What the agent does with a session's turns: prompts (queued behind a running turn),
//! steering, cancel, and rein's slash commands.

use super::*;

impl Agent {
    /// Where a prompt for session `id` arriving now joins its line (see [`Session::ticket`]).
    pub fn ticket(&self, id: &SessionId) -> Option<Ticket> {
        self.session(id).ok().map(|s| s.ticket())
    }

    /// The first half of `session/cancel`, run by the dispatch loop as the notification
    /// arrives (before any later prompt is read): the prompts waiting in line are cancelled.
    pub fn cancel_waiting(&self, id: &SessionId) {
        if let Ok(session) = self.session(id) {
            session.cancel_waiting();
        }
    }

    /// `session/cancel`: interrupt the session's turn; its prompt answers `cancelled` when
    /// the turn has stopped, and its open permission requests are withdrawn.
    pub async fn cancel(&self, id: &SessionId) {
        match self.session(id) {
            Ok(session) => {
                if let Err(e) = session.handle.submit(Op::Interrupt).await {
                    tracing::debug!("cancel: {e}");
                }
            }
            Err(e) => tracing::debug!("session/cancel for an unknown session: {e:?}"),
        }
    }

    /// `session/prompt`: once the turns ahead of it have ended, start a turn with it; the
    /// pump answers when that turn ends.
    pub async fn prompt(
        &self,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        ticket: Option<Ticket>,
    ) {
        let session = match self.session(&request.session_id) {
            Ok(s) => s,
            Err(e) => return reply(responder, Err(e)),
        };
        if let Some(command) = prompt::command_of(&request.prompt) {
            return self.command(&session, command, responder, ticket).await;
        }
        let items = match self.input_with_skills(&session, &request.prompt).await {
            Ok(items) => items,
            Err(e) => return reply(responder, Err(e)),
        };
        let Some(place) = session.wait_in_line(ticket).await else {
            return answer(responder, &Ending::Stopped(StopReason::Cancelled));
        };
        let settings = match self.change_for(&session).await {
            Ok(change) => change,
            Err(e) => return reply(responder, Err(e)),
        };
        let submission = SubmissionId::new();
        let turn = TurnId::from(submission);
        session.send(PumpCmd::Await {
            turn,
            responder,
            place: Some(place),
        });
        let op = Op::UserInput {
            items,
            mode: InputMode::StartOrSteer,
            settings,
            output_schema: None,
        };
        match session.handle.submit_with_id(submission, op).await {
            Ok(OpResult::Input(InputOutcome::Started { .. } | InputOutcome::Queued { .. })) => {}
            // A turn the line does not know of (one a steering request started).
            Ok(OpResult::Input(InputOutcome::Steered { turn_id })) => {
                session.send(PumpCmd::Moved {
                    from: turn,
                    to: turn_id,
                });
            }
            Ok(OpResult::Input(InputOutcome::Rejected { reason })) => {
                session.send(PumpCmd::Refused {
                    turn,
                    error: invalid_request(&reason.to_string()),
                })
            }
            Ok(other) => session.send(PumpCmd::Refused {
                turn,
                error: internal(format!("unexpected answer from the thread: {other:?}")),
            }),
            Err(e) => session.send(PumpCmd::Refused {
                turn,
                error: invalid_request(&e.to_string()),
            }),
        }
    }

    /// `_session/steering`: the input joins the running turn, or starts one.
    pub async fn steer(&self, request: SteeringRequest) -> Result<SteeringResponse, Error> {
        let session = self.session(&request.session_id)?;
        if prompt::command_of(&request.prompt).is_some() {
            return Err(invalid_params(
                "a slash command is a prompt of its own, it cannot steer a turn",
            ));
        }
        let items = self.input_with_skills(&session, &request.prompt).await?;
        let settings = self.change_for(&session).await?;
        let op = Op::UserInput {
            items,
            mode: InputMode::StartOrSteer,
            settings,
            output_schema: None,
        };
        let outcome = match session.handle.submit(op).await {
            Ok(OpResult::Input(InputOutcome::Steered { .. })) => SteeringOutcome::Injected,
            Ok(OpResult::Input(InputOutcome::Started { .. } | InputOutcome::Queued { .. })) => {
                SteeringOutcome::StartedNewTurn
            }
            Ok(OpResult::Input(InputOutcome::Rejected { reason })) => {
                return Err(invalid_request(&reason.to_string()))
            }
            Ok(other) => {
                return Err(internal(format!(
                    "unexpected answer from the thread: {other:?}"
                )))
            }
            Err(e) => return Err(invalid_request(&e.to_string())),
        };
        Ok(SteeringResponse { outcome })
    }

    /// The input of `blocks`, with the skills of the session's directory it names attached:
    /// a leading `/name` (the skill's slash command) and every `$name` mention.
    async fn input_with_skills(
        &self,
        session: &Session,
        blocks: &[ContentBlock],
    ) -> Result<Vec<rein_protocol::InputPart>, Error> {
        let Some(cwd) = session
            .handle
            .state()
            .await
            .ok()
            .and_then(|s| s.settings)
            .map(|s| s.cwd)
        else {
            return prompt::input_of(blocks).map_err(|m| invalid_params(&m));
        };
        let slash = matches!(blocks.first(), Some(ContentBlock::Text(t)) if t.text.trim_start().starts_with('/'));
        let invoked = if slash {
            let skills = self.kernel.skills(cwd.clone()).await;
            prompt::skill_invocation(blocks, &skills.skills)
        } else {
            None
        };
        let (named, items) = match invoked {
            Some((named, rest)) => (vec![named], prompt::input_of(&rest)),
            None => (Vec::new(), prompt::input_of(blocks)),
        };
        let mut items = items.map_err(|m| invalid_params(&m))?;
        self.kernel
            .attach_skills(cwd, &mut items, named)
            .await
            .map_err(|e| invalid_params(&e.to_string()))?;
        Ok(items)
    }

    /// What the client chose since the thread last ran, to send with the next input.
    async fn change_for(&self, session: &Session) -> Result<rein_protocol::SettingsChange, Error> {
        let state = session.handle.state().await.map_err(internal)?;
        Ok(state
            .settings
            .map(|s| lock(&session.choices).change_from(&s))
            .unwrap_or_default())
    }

    /// A slash command: a compaction or review is a turn the prompt waits for; the others
    /// answer at once.
    async fn command(
        &self,
        session: &Session,
        command: Command,
        responder: Responder<PromptResponse>,
        ticket: Option<Ticket>,
    ) {
        let say = |text: String| {
            session.send(PumpCmd::Update(Box::new(SessionUpdate::AgentMessageChunk(
                ContentChunk::new(ContentBlock::from(text)),
            ))));
        };
        let op = match command {
            Command::Compact => Op::Compact,
            Command::Review(target) => Op::Review { target },
            Command::Model(None) => {
                say(format!("Models: {}", self.models().join(", ")));
                return said(session, responder);
            }
            Command::Model(Some(model)) => {
                let models = self.models();
                let set = lock(&session.choices).set(MODEL, &model, &models);
                say(match set {
                    Ok(()) => format!("The next prompt runs on {model}."),
                    Err(e) => e,
                });
                return said(session, responder);
            }
            Command::Goal(goal) => {
                say(self.goal_command(session, goal).await);
                return said(session, responder);
            }
            Command::Fork => {
                let text = match self.kernel.fork_thread(session.thread, None).await {
                    Ok(new) => {
                        let id = new.handle.id();
                        let _ = new.handle.shutdown().await;
                        format!("Forked into session {id}; load it to continue there.")
                    }
                    Err(e) => format!("Cannot fork: {e}"),
                };
                say(text);
                return said(session, responder);
            }
        };
        let Some(place) = session.wait_in_line(ticket).await else {
            return answer(responder, &Ending::Stopped(StopReason::Cancelled));
        };
        let submission = SubmissionId::new();
        let turn = TurnId::from(submission);
        session.send(PumpCmd::Await {
            turn,
            responder,
            place: Some(place),
        });
        match session.handle.submit_with_id(submission, op).await {
            Ok(OpResult::Accepted) => {}
            Ok(OpResult::Refused { message }) => session.send(PumpCmd::Refused {
                turn,
                error: invalid_request(&message),
            }),
            other => session.send(PumpCmd::Refused {
                turn,
                error: internal(format!("unexpected answer from the thread: {other:?}")),
            }),
        }
    }
}

/// Answer a command's prompt once its message is sent (in order, through the pump).
fn said(session: &Session, responder: Responder<PromptResponse>) {
    session.send(PumpCmd::Answer {
        responder,
        ending: Ending::Stopped(StopReason::EndTurn),
    });
}
