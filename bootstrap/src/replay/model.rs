//! The replay's model: it answers each request with the reply recorded for that step, in
//! order, and keeps the requests it was sent so a difference can be shown in full. Any
//! model name resolves to it, so `-c model=other` runs and is told apart by fingerprint.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream;
use rein_core::model::{
    ModelCatalog, ModelClient, ModelError, ModelEvent, ModelInfo, ModelRequest, ModelStream,
    RetryPolicy, UnknownModel,
};
use rein_protocol::Item;

use super::recording::Answer;

#[derive(Default)]
pub struct ReplayModel {
    answers: Mutex<VecDeque<Answer>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ReplayModel {
    /// The answers of the next turn's steps, in order.
    pub fn load(&self, answers: impl IntoIterator<Item = Answer>) {
        let mut queue = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        queue.clear();
        queue.extend(answers);
    }

    /// Every request sent since the last call.
    pub fn take_requests(&self) -> Vec<ModelRequest> {
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl ModelClient for ReplayModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        let answer = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let events: Vec<Result<ModelEvent, ModelError>> = match answer {
            None => vec![Err(ModelError::BadRequest {
                status: 400,
                message: "replay: the recording has no further step in this turn".into(),
            })],
            // Not retryable, so the replayed turn fails at once as the recorded one did.
            Some(Answer::Failed { message }) => vec![Err(ModelError::BadRequest {
                status: 400,
                message,
            })],
            Some(Answer::Reply { items, usage }) => {
                let mut events: Vec<Result<ModelEvent, ModelError>> = Vec::new();
                for item in items {
                    match item {
                        Item::Reasoning {
                            text,
                            encrypted_content,
                            ..
                        } => {
                            if !text.is_empty() {
                                events.push(Ok(ModelEvent::ReasoningDelta(text)));
                            }
                            if let Some(blob) = encrypted_content {
                                events.push(Ok(ModelEvent::ReasoningEncrypted(blob)));
                            }
                        }
                        Item::AgentMessage { text, .. } => {
                            events.push(Ok(ModelEvent::TextDelta(text)));
                        }
                        Item::ToolCall {
                            call_id,
                            name,
                            arguments,
                            ..
                        } => events.push(Ok(ModelEvent::ToolCall {
                            call_id,
                            name,
                            arguments,
                        })),
                        _ => {}
                    }
                }
                events.push(Ok(ModelEvent::Completed { usage }));
                events
            }
        };
        Box::pin(stream::iter(events))
    }

    fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy::NONE
    }
}

/// Every model is the replay model. It knows no context window, so a replay never
/// compacts on its own (a compacted session is not replayable).
pub struct ReplayCatalog(pub Arc<ReplayModel>);

impl ModelCatalog for ReplayCatalog {
    fn client(&self, _model: &str) -> Result<Arc<dyn ModelClient>, UnknownModel> {
        Ok(Arc::clone(&self.0) as Arc<dyn ModelClient>)
    }

    fn models(&self) -> Vec<ModelInfo> {
        Vec::new()
    }
}
