//! The HTTP model clients against the real mock model server on 127.0.0.1: whole turns on
//! both wire APIs, every scripted fault, cancellation observed at the server, and the API
//! key on the wire but nowhere else.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use rein_core::model::{ModelClient, ModelError, ModelEvent, ModelRequest};
use rein_core::tools::ToolSpec;
use rein_mock_model::{serve, MockServer};
use rein_protocol::script::{Fault, Script, ScriptedReply, WhenExhausted};
use rein_protocol::{Item, TokenUsage};
use rein_providers::http::{http_client, ApiKey, ChatClient, Endpoint, ResponsesClient};

#[derive(Clone, Copy, Debug)]
enum Api {
    Responses,
    Chat,
}

const BOTH: [Api; 2] = [Api::Responses, Api::Chat];

async fn server(replies: Vec<ScriptedReply>) -> MockServer {
    serve(
        Script {
            replies,
            when_exhausted: WhenExhausted::Error,
            asides: Vec::new(),
        },
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .await
    .unwrap()
}

fn client(api: Api, endpoint: Endpoint) -> Arc<dyn ModelClient> {
    let http = http_client().unwrap();
    match api {
        Api::Responses => Arc::new(ResponsesClient::new(http, endpoint)),
        Api::Chat => Arc::new(ChatClient::new(http, endpoint)),
    }
}

fn request(text: &str) -> ModelRequest {
    ModelRequest {
        model: "mock-model".into(),
        instructions: "You are a test.".into(),
        input: vec![Arc::new(Item::user_text(text))],
        tools: Arc::from(vec![ToolSpec {
            name: "shell".into(),
            description: "Run a command".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"command": {"type": "array"}}}),
        }]),
        parallel_tool_calls: true,
        reasoning_effort: None,
        prompt_cache_key: "thread-1".into(),
        output_schema: None,
    }
}

async fn turn(client: &dyn ModelClient, text: &str) -> Vec<Result<ModelEvent, ModelError>> {
    // A guard against a hung test, not a synchronisation point.
    tokio::time::timeout(
        Duration::from_secs(20),
        client.stream(request(text)).collect(),
    )
    .await
    .unwrap()
}

fn usage() -> TokenUsage {
    TokenUsage {
        input_tokens: 100,
        cached_input_tokens: 40,
        output_tokens: 20,
        reasoning_output_tokens: 5,
        total_tokens: 120,
    }
}

#[tokio::test]
async fn text_turn_streams_deltas_then_completes_with_usage() {
    for api in BOTH {
        let mut reply = ScriptedReply::text("Hello, world").with_deltas(3);
        reply.reasoning = Some("thinking".into());
        reply.usage = Some(usage());
        let mock = server(vec![reply]).await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let events = turn(c.as_ref(), "hi").await;
        assert_eq!(
            events,
            vec![
                Ok(ModelEvent::ReasoningDelta("thinking".into())),
                Ok(ModelEvent::TextDelta("Hell".into())),
                Ok(ModelEvent::TextDelta("o, w".into())),
                Ok(ModelEvent::TextDelta("orld".into())),
                Ok(ModelEvent::Completed { usage: usage() }),
            ],
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn tool_call_turn_yields_complete_calls_in_order() {
    for api in BOTH {
        let reply = ScriptedReply::text("Let me look.")
            .with_tool_call("shell", serde_json::json!({"command": ["ls", "-la"]}))
            .with_tool_call("shell", serde_json::json!({"command": ["pwd"]}));
        let mock = server(vec![reply]).await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let events = turn(c.as_ref(), "list").await;
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Ok(ModelEvent::ToolCall {
                    call_id,
                    name,
                    arguments,
                }) => Some((call_id.clone(), name.clone(), arguments.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                (
                    "call_0_0".to_string(),
                    "shell".to_string(),
                    r#"{"command":["ls","-la"]}"#.to_string()
                ),
                (
                    "call_0_1".to_string(),
                    "shell".to_string(),
                    r#"{"command":["pwd"]}"#.to_string()
                ),
            ],
            "{api:?}"
        );
        assert_eq!(events[0], Ok(ModelEvent::TextDelta("Let me look.".into())));
        assert!(matches!(
            events.last(),
            Some(Ok(ModelEvent::Completed { .. }))
        ));
    }
}

#[tokio::test]
async fn server_error_maps_to_retryable_server_error() {
    for api in BOTH {
        let mock = server(vec![ScriptedReply::default().with_fault(
            Fault::HttpError {
                status: 500,
                message: Some("boom".into()),
            },
        )])
        .await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let events = turn(c.as_ref(), "x").await;
        assert_eq!(
            events,
            vec![Err(ModelError::Server {
                status: 500,
                message: "boom".into()
            })]
        );
        assert!(events[0].as_ref().unwrap_err().is_retryable());
    }
}

#[tokio::test]
async fn bad_request_and_unauthorized_are_not_retryable() {
    for (status, api) in [
        (400, Api::Responses),
        (401, Api::Chat),
        (403, Api::Responses),
    ] {
        let mock = server(vec![ScriptedReply::default().with_fault(
            Fault::HttpError {
                status,
                message: None,
            },
        )])
        .await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let err = turn(c.as_ref(), "x").await.remove(0).unwrap_err();
        assert!(!err.is_retryable(), "{status}: {err:?}");
    }
}

#[tokio::test]
async fn rate_limit_carries_the_retry_after_hint() {
    for api in BOTH {
        let mock = server(vec![ScriptedReply::default().with_fault(
            Fault::RateLimited {
                retry_after_ms: 1500,
            },
        )])
        .await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let err = turn(c.as_ref(), "x").await.remove(0).unwrap_err();
        assert!(matches!(err, ModelError::RateLimited { .. }), "{err:?}");
        assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
    }
}

#[tokio::test]
async fn cut_stream_ends_with_stream_cut_after_the_events_sent() {
    for api in BOTH {
        let mock = server(vec![ScriptedReply::text("abcdef")
            .with_deltas(3)
            .with_fault(Fault::CutAfter { events: 2 })])
        .await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let events = turn(c.as_ref(), "x").await;
        assert_eq!(
            events,
            vec![
                Ok(ModelEvent::TextDelta("ab".into())),
                Ok(ModelEvent::TextDelta("cd".into())),
                Err(ModelError::StreamCut),
            ],
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn silent_stream_hits_the_idle_timeout() {
    for api in BOTH {
        let mock = server(vec![ScriptedReply::text("partial").with_fault(Fault::Hang)]).await;
        let idle = Duration::from_millis(200);
        let c = client(api, Endpoint::new(mock.base_url()).with_idle_timeout(idle));
        let events = turn(c.as_ref(), "x").await;
        assert_eq!(
            events,
            vec![
                Ok(ModelEvent::TextDelta("partial".into())),
                Err(ModelError::IdleTimeout(idle)),
            ],
            "{api:?}"
        );
        assert!(events[1].as_ref().unwrap_err().is_retryable());
    }
}

#[tokio::test]
async fn context_window_exceeded_is_recognised_on_both_apis() {
    for api in BOTH {
        let mock = server(vec![
            ScriptedReply::default().with_fault(Fault::ContextWindowExceeded)
        ])
        .await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let err = turn(c.as_ref(), "x").await.remove(0).unwrap_err();
        assert!(
            matches!(err, ModelError::ContextWindowExceeded(_)),
            "{api:?}: {err:?}"
        );
        assert!(!err.is_retryable());
    }
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    for api in BOTH {
        let mock = server(vec![ScriptedReply::text("working").with_fault(Fault::Hang)]).await;
        let c = client(api, Endpoint::new(mock.base_url()));
        let mut stream = c.stream(request("x"));
        let first = stream.next().await;
        assert_eq!(first, Some(Ok(ModelEvent::TextDelta("working".into()))));
        assert_eq!(mock.abandoned_streams(), 0);
        drop(stream);
        tokio::time::timeout(Duration::from_secs(10), mock.wait_for_abandoned(1))
            .await
            .unwrap_or_else(|_| panic!("{api:?}: the server never saw the client go away"));
        assert_eq!(mock.abandoned_streams(), 1);
    }
}

#[tokio::test]
async fn api_key_is_sent_as_bearer_and_never_shown() {
    for api in BOTH {
        let mock = server(vec![ScriptedReply::text("ok")]).await;
        let mut endpoint =
            Endpoint::new(mock.base_url()).with_api_key(ApiKey::new("sk-test-secret-42"));
        endpoint.headers.push(("x-extra".into(), "1".into()));
        endpoint
            .query_params
            .push(("api-version".into(), "2025".into()));
        let http = http_client().unwrap();
        let shown = match api {
            Api::Responses => format!("{:?}", ResponsesClient::new(http, endpoint.clone())),
            Api::Chat => format!("{:?}", ChatClient::new(http, endpoint.clone())),
        };
        assert!(!shown.contains("sk-test-secret-42"), "{shown}");
        let c = client(api, endpoint);
        let events = turn(c.as_ref(), "x").await;
        assert!(matches!(
            events.last(),
            Some(Ok(ModelEvent::Completed { .. }))
        ));
        let seen = mock.requests().remove(0);
        assert_eq!(
            seen.header("authorization"),
            Some("Bearer sk-test-secret-42")
        );
        assert_eq!(seen.header("x-extra"), Some("1"));
        assert!(seen.path.ends_with(match api {
            Api::Responses => "/v1/responses",
            Api::Chat => "/v1/chat/completions",
        }));
    }
}

#[tokio::test]
async fn request_log_holds_exactly_the_bodies_sent() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let mock = serve(
        Script {
            replies: vec![ScriptedReply::text("one"), ScriptedReply::text("two")],
            when_exhausted: WhenExhausted::Error,
            asides: Vec::new(),
        },
        "127.0.0.1:0".parse().unwrap(),
        Some(log.clone()),
    )
    .await
    .unwrap();
    let responses = client(Api::Responses, Endpoint::new(mock.base_url()));
    let chat = client(Api::Chat, Endpoint::new(mock.base_url()));
    turn(responses.as_ref(), "first").await;
    turn(chat.as_ref(), "second").await;
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let sent_responses: serde_json::Value = serde_json::from_slice(
        &rein_providers::http::responses::request_body(&request("first")).unwrap(),
    )
    .unwrap();
    let sent_chat: serde_json::Value = serde_json::from_slice(
        &rein_providers::http::chat::request_body(
            &request("second"),
            rein_config::ThinkingOff::Both,
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(lines[0]["body"], sent_responses);
    assert_eq!(lines[1]["body"], sent_chat);
    assert_eq!(lines[1]["path"], "/v1/chat/completions");
    assert_eq!(sent_responses["store"], false);
    assert_eq!(sent_responses["prompt_cache_key"], "thread-1");
}

#[tokio::test]
async fn unreachable_server_is_a_connect_error() {
    // Bind then drop a listener to get a port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = client(
        Api::Responses,
        Endpoint::new(format!("http://127.0.0.1:{port}/v1")),
    );
    let err = turn(c.as_ref(), "x").await.remove(0).unwrap_err();
    assert!(matches!(err, ModelError::Connect(_)), "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn connection_reset_mid_body_is_a_stream_cut() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A server that dies mid-chunk: headers, one whole event, half of the next, then close.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        // Read until the end of the request headers; the body is small and follows them.
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0);
            seen.extend_from_slice(&buf[..n]);
        }
        let event = "data: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(chunk.as_bytes()).await.unwrap();
        socket
            .write_all(b"40\r\ndata: {\"type\":\"resp")
            .await
            .unwrap();
        socket.flush().await.unwrap();
        drop(socket);
    });
    let c = client(Api::Responses, Endpoint::new(format!("http://{addr}/v1")));
    let events = turn(c.as_ref(), "x").await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::TextDelta("hi".into())),
            Err(ModelError::StreamCut)
        ]
    );
    server.await.unwrap();
}

#[tokio::test]
async fn sequential_turns_reuse_one_connection() {
    for api in BOTH {
        let mock = server(vec![
            ScriptedReply::text("one").with_deltas(2),
            ScriptedReply::tool_call("shell", serde_json::json!({})),
            ScriptedReply::text("three"),
        ])
        .await;
        let c = client(api, Endpoint::new(mock.base_url()));
        for _ in 0..3 {
            let events = turn(c.as_ref(), "x").await;
            assert!(matches!(
                events.last(),
                Some(Ok(ModelEvent::Completed { .. }))
            ));
        }
        assert_eq!(mock.requests().len(), 3);
        assert_eq!(mock.connections_accepted(), 1, "{api:?}");
    }
}
