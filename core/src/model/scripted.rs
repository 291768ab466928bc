//! The in-process face of the scripted model: plays a [`Script`] of replies, one per
//! sampling request, with optional delays and injected faults. It backs `rein exec --demo`
//! and the kernel's tests. Tests can also hold a reply open at a gate to make a request
//! "in flight" for as long as they need, without sleeping.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::stream::{self, StreamExt};
use rein_protocol::script::{Fault, Script, ScriptedReply, WhenExhausted, ASIDE_INDEX_BASE};
use rein_protocol::TokenUsage;
use tokio::sync::{Notify, Semaphore};

use super::{ModelClient, ModelError, ModelEvent, ModelRequest, ModelStream, RetryPolicy};

/// Opens a held reply. Dropping it without opening keeps the reply held.
#[derive(Clone)]
pub struct Gate(Arc<Semaphore>);

impl Gate {
    pub fn open(&self) {
        self.0.add_permits(Semaphore::MAX_PERMITS / 2);
    }
}

#[derive(Default)]
struct Inner {
    script: Script,
    next: usize,
    /// How many asides were played (they number their own ids).
    asides: usize,
    requests: Vec<ModelRequest>,
    gates: Vec<(usize, Arc<Semaphore>)>,
}

pub struct ScriptedModel {
    inner: Mutex<Inner>,
    request_seen: Notify,
    retry: RetryPolicy,
}

/// One thing the reply stream does next.
enum Beat {
    Emit(Result<ModelEvent, ModelError>),
    Delay(Duration),
    Wait(Arc<Semaphore>),
    Hang,
}

impl ScriptedModel {
    pub fn new(script: Script) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                script,
                ..Inner::default()
            }),
            request_seen: Notify::new(),
            retry: RetryPolicy {
                max_retries: 3,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(20),
            },
        })
    }

    pub fn replies(replies: Vec<ScriptedReply>) -> Arc<Self> {
        Self::new(Script {
            replies,
            when_exhausted: WhenExhausted::RepeatLast,
            asides: Vec::new(),
        })
    }

    /// Answers every request with `"echo: <last user message>"`.
    pub fn echo() -> Arc<Self> {
        Self::new(Script {
            replies: Vec::new(),
            when_exhausted: WhenExhausted::Echo,
            asides: Vec::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock can only come from a bug in this file; the data
        // is still consistent, so keep serving rather than poisoning every later request.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hold the reply to the `index`-th request (0-based) after its text deltas, before
    /// its tool calls and completion, until the returned gate is opened.
    pub fn hold_reply(&self, index: usize) -> Gate {
        let sem = Arc::new(Semaphore::new(0));
        self.lock().gates.push((index, Arc::clone(&sem)));
        Gate(sem)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Wait until at least `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let notified = self.request_seen.notified();
            if self.request_count() >= n {
                return;
            }
            notified.await;
        }
    }

    fn next_reply(&self, request: &ModelRequest) -> (ScriptedReply, usize, Option<Arc<Semaphore>>) {
        let mut inner = self.lock();
        if let Some(reply) = inner.script.aside_for(request.last_user_text().as_deref()) {
            let reply = reply.clone();
            inner.requests.push(request.clone());
            let index = ASIDE_INDEX_BASE + inner.asides;
            inner.asides += 1;
            return (reply, index, None);
        }
        let index = inner.next;
        inner.next += 1;
        inner.requests.push(request.clone());
        let gate = inner
            .gates
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, g)| Arc::clone(g));
        let reply = match inner.script.replies.get(index) {
            Some(r) => r.clone(),
            None => exhausted_reply(&inner.script, request),
        };
        (reply, index, gate)
    }
}

fn exhausted_reply(script: &Script, request: &ModelRequest) -> ScriptedReply {
    match script.when_exhausted {
        WhenExhausted::RepeatLast => script
            .replies
            .last()
            .cloned()
            .unwrap_or_else(|| ScriptedReply::text("(the script has no replies)")),
        WhenExhausted::Error => ScriptedReply::default().with_fault(Fault::HttpError {
            status: 400,
            message: Some("the script is exhausted".into()),
        }),
        WhenExhausted::Echo => ScriptedReply::text(format!(
            "echo: {}",
            request.last_user_text().unwrap_or_default()
        )),
    }
}

/// Maps an injected HTTP status to the error a real provider would classify it as.
pub fn error_for_status(status: u16, message: String) -> ModelError {
    match status {
        429 => ModelError::RateLimited {
            retry_after: None,
            message,
        },
        401 | 403 => ModelError::Unauthorized { status, message },
        400..=499 => ModelError::BadRequest { status, message },
        _ => ModelError::Server { status, message },
    }
}

fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The usage of a reply that states none: estimated from the request's and the reply's
/// characters.
fn estimated_usage(reply: &ScriptedReply, request: &ModelRequest) -> TokenUsage {
    let input_chars: usize = request
        .input
        .iter()
        .filter_map(|i| serde_json::to_string(i.as_ref()).ok())
        .map(|s| s.len())
        .sum();
    let output_chars = reply.text.as_ref().map_or(0, String::len);
    let input = estimate_tokens(input_chars + request.instructions.len());
    let output = estimate_tokens(output_chars);
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..TokenUsage::default()
    }
}

/// The error a fault answers the request with instead of a stream; `None` for the faults
/// that act on the stream (a cut, a hang).
fn injected_error(fault: &Fault) -> Option<ModelError> {
    match fault {
        Fault::HttpError { status, message } => {
            let msg = message
                .clone()
                .unwrap_or_else(|| format!("injected HTTP {status}"));
            Some(error_for_status(*status, msg))
        }
        Fault::RateLimited { retry_after_ms } => Some(ModelError::RateLimited {
            retry_after: Some(Duration::from_millis(*retry_after_ms)),
            message: "injected 429".into(),
        }),
        Fault::ContextWindowExceeded => Some(ModelError::ContextWindowExceeded(
            "injected: input exceeds the context window".into(),
        )),
        _ => None,
    }
}

fn beats(
    reply: &ScriptedReply,
    index: usize,
    request: &ModelRequest,
    gate: Option<Arc<Semaphore>>,
) -> Vec<Beat> {
    let delay = Duration::from_millis(reply.delay_ms);
    let mut events: Vec<ModelEvent> = Vec::new();
    if let Some(r) = &reply.reasoning {
        events.push(ModelEvent::ReasoningDelta(r.clone()));
    }
    let deltas = reply.text_deltas();
    let text_events = deltas.len() + events.len();
    events.extend(deltas.into_iter().map(ModelEvent::TextDelta));
    for (n, call) in reply.tool_calls.iter().enumerate() {
        events.push(ModelEvent::ToolCall {
            call_id: call.id_for(index, n),
            name: call.name.clone(),
            arguments: call.arguments.to_string(),
        });
    }
    let usage = reply
        .usage
        .unwrap_or_else(|| estimated_usage(reply, request));
    events.push(ModelEvent::Completed { usage });

    if let Some(error) = reply.fault.as_ref().and_then(injected_error) {
        return vec![Beat::Emit(Err(error))];
    }
    let mut out = Vec::new();
    let cut_after = match reply.fault {
        Some(Fault::CutAfter { events }) => Some(events as usize),
        _ => None,
    };
    for (n, ev) in events.into_iter().enumerate() {
        if cut_after == Some(n) {
            out.push(Beat::Emit(Err(ModelError::StreamCut)));
            return out;
        }
        if n == text_events {
            if let Some(g) = &gate {
                out.push(Beat::Wait(Arc::clone(g)));
            }
            if reply.fault == Some(Fault::Hang) {
                out.push(Beat::Hang);
                return out;
            }
        }
        if !delay.is_zero() {
            out.push(Beat::Delay(delay));
        }
        out.push(Beat::Emit(Ok(ev)));
    }
    out
}

impl ModelClient for ScriptedModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let (reply, index, gate) = self.next_reply(&request);
        self.request_seen.notify_waiters();
        let plan = beats(&reply, index, &request, gate);
        stream::unfold(plan.into_iter(), |mut beats| async move {
            loop {
                match beats.next()? {
                    Beat::Emit(item) => return Some((item, beats)),
                    Beat::Delay(d) => tokio::time::sleep(d).await,
                    Beat::Wait(sem) => {
                        // The gate is never closed, so acquire only fails if it was dropped,
                        // which cannot happen while we hold an Arc to it.
                        let _ = sem.acquire().await;
                    }
                    Beat::Hang => futures::future::pending::<()>().await,
                }
            }
        })
        .boxed()
    }

    fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::Item;

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            model: "scripted".into(),
            instructions: String::new(),
            input: vec![Arc::new(Item::user_text(text))],
            tools: Arc::from(Vec::new()),
            parallel_tool_calls: true,
            reasoning_effort: None,
            prompt_cache_key: "t".into(),
            output_schema: None,
        }
    }

    async fn collect(model: &ScriptedModel, text: &str) -> Vec<Result<ModelEvent, ModelError>> {
        model.stream(request(text)).collect().await
    }

    #[tokio::test]
    async fn plays_replies_in_order_then_repeats_last() {
        let m = ScriptedModel::replies(vec![
            ScriptedReply::text("one"),
            ScriptedReply::tool_call("shell", serde_json::json!({"command": ["ls"]})),
        ]);
        let first = collect(&m, "hi").await;
        assert_eq!(first[0], Ok(ModelEvent::TextDelta("one".into())));
        let second = collect(&m, "hi").await;
        assert!(
            matches!(&second[0], Ok(ModelEvent::ToolCall { name, call_id, .. }) if name == "shell" && call_id == "call_1_0")
        );
        let third = collect(&m, "hi").await;
        assert!(
            matches!(&third[0], Ok(ModelEvent::ToolCall { call_id, .. }) if call_id == "call_2_0")
        );
        assert_eq!(m.request_count(), 3);
    }

    #[tokio::test]
    async fn echo_answers_with_last_user_text() {
        let m = ScriptedModel::echo();
        let ev = collect(&m, "ping").await;
        assert_eq!(ev[0], Ok(ModelEvent::TextDelta("echo: ping".into())));
        assert!(matches!(ev.last(), Some(Ok(ModelEvent::Completed { .. }))));
    }

    #[tokio::test]
    async fn cut_after_ends_with_stream_cut() {
        let m = ScriptedModel::replies(vec![ScriptedReply::text("abcdef")
            .with_deltas(3)
            .with_fault(Fault::CutAfter { events: 2 })]);
        let ev = collect(&m, "x").await;
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[2], Err(ModelError::StreamCut));
    }

    #[tokio::test]
    async fn injected_http_errors_are_classified() {
        let m = ScriptedModel::replies(vec![
            ScriptedReply::default().with_fault(Fault::HttpError {
                status: 500,
                message: None,
            }),
            ScriptedReply::default().with_fault(Fault::HttpError {
                status: 400,
                message: None,
            }),
        ]);
        assert!(matches!(
            collect(&m, "x").await[0],
            Err(ModelError::Server { status: 500, .. })
        ));
        assert!(matches!(
            collect(&m, "x").await[0],
            Err(ModelError::BadRequest { status: 400, .. })
        ));
    }
}
