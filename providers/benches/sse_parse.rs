//! SSE parsing plus event mapping throughput, in deltas per second, for both wire formats
//! (in-process, fed in socket-sized chunks), and one whole streamed turn over loopback
//! against the mock model server. Run briefly:
//! `cargo bench -p rein-core --bench sse_parse -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures::StreamExt;
use rein_core::model::{ModelClient, ModelEvent, ModelRequest};
use rein_protocol::script::{Script, ScriptedReply, WhenExhausted};
use rein_protocol::Item;
use rein_providers::http::chat::ChatDecoder;
use rein_providers::http::responses::ResponsesDecoder;
use rein_providers::http::sse::SseParser;
use rein_providers::http::stream::WireDecoder;
use rein_providers::http::{http_client, Endpoint, ResponsesClient};

const DELTAS: usize = 10_000;
const CHUNK: usize = 4096;

fn responses_stream() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..DELTAS {
        out.extend_from_slice(
            format!(
                "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{i},\"item_id\":\"msg_0\",\"output_index\":0,\"content_index\":0,\"delta\":\"word{i} \"}}\n\n"
            )
            .as_bytes(),
        );
    }
    out
}

fn chat_stream() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..DELTAS {
        out.extend_from_slice(
            format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word{i} \"}},\"finish_reason\":null}}]}}\n\n"
            )
            .as_bytes(),
        );
    }
    out
}

fn parse_all<D: WireDecoder>(bytes: &[u8], mut decoder: D) -> usize {
    let mut parser = SseParser::new();
    let mut out = VecDeque::new();
    let mut deltas = 0;
    for chunk in bytes.chunks(CHUNK) {
        parser
            .feed(chunk, &mut |event| {
                decoder.on_event(&event, &mut out).unwrap();
            })
            .unwrap();
        deltas += out
            .drain(..)
            .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
            .count();
    }
    deltas
}

fn in_process(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_parse_and_map");
    group.throughput(Throughput::Elements(DELTAS as u64));
    let responses = responses_stream();
    group.bench_function("responses", |b| {
        b.iter(|| assert_eq!(parse_all(&responses, ResponsesDecoder), DELTAS))
    });
    let chat = chat_stream();
    group.bench_function("chat", |b| {
        b.iter(|| assert_eq!(parse_all(&chat, ChatDecoder::default()), DELTAS))
    });
    group.finish();
}

fn loopback(c: &mut Criterion) {
    const TURN_DELTAS: u32 = 1000;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let text: String = (0..TURN_DELTAS).map(|i| format!("w{i:04} ")).collect();
    let mock = rt.block_on(async {
        rein_mock_model::serve(
            Script {
                replies: vec![ScriptedReply::text(text).with_deltas(TURN_DELTAS)],
                when_exhausted: WhenExhausted::RepeatLast,
                asides: Vec::new(),
            },
            "127.0.0.1:0".parse().unwrap(),
            None,
        )
        .await
        .unwrap()
    });
    let client = ResponsesClient::new(http_client().unwrap(), Endpoint::new(mock.base_url()));
    let request = ModelRequest {
        model: "mock-model".into(),
        instructions: String::new(),
        input: vec![Arc::new(Item::user_text("go"))],
        tools: Arc::from(Vec::new()),
        parallel_tool_calls: false,
        reasoning_effort: None,
        prompt_cache_key: "bench".into(),
        output_schema: None,
    };
    let mut group = c.benchmark_group("loopback_turn");
    group.throughput(Throughput::Elements(u64::from(TURN_DELTAS)));
    group.bench_function("responses_1000_deltas", |b| {
        b.iter(|| {
            rt.block_on(async {
                let events: Vec<_> = client.stream(request.clone()).collect().await;
                assert_eq!(events.len(), TURN_DELTAS as usize + 1);
            })
        })
    });
    group.finish();
}

/// Time from a delta's bytes being written to the socket to the client stream yielding
/// it: a raw server holds one response open and writes one event each time it is told.
fn first_byte_to_event(c: &mut Criterion) {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let rt = tokio::runtime::Runtime::new().unwrap();
    let (go_tx, mut go_rx) = tokio::sync::mpsc::unbounded_channel::<oneshot_instant::Sender>();
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                seen.extend_from_slice(&buf[..n]);
            }
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                .await
                .unwrap();
            let event = "data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n";
            let chunk = format!("{:x}\r\n{event}\r\n", event.len());
            while let Some(sent_at) = go_rx.recv().await {
                let _ = sent_at.send(Instant::now());
                socket.write_all(chunk.as_bytes()).await.unwrap();
            }
        });
        addr
    });
    let client = ResponsesClient::new(
        http_client().unwrap(),
        Endpoint::new(format!("http://{addr}/v1")),
    );
    let request = ModelRequest {
        model: "m".into(),
        instructions: String::new(),
        input: Vec::new(),
        tools: Arc::from(Vec::new()),
        parallel_tool_calls: false,
        reasoning_effort: None,
        prompt_cache_key: "bench".into(),
        output_schema: None,
    };
    let mut stream = client.stream(request);
    c.bench_function("first_byte_to_event", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    go_tx.send(tx).unwrap();
                    let event = stream.next().await;
                    let received = Instant::now();
                    assert!(matches!(event, Some(Ok(ModelEvent::TextDelta(_)))));
                    total += received - rx.await.unwrap();
                }
                total
            })
        })
    });
}

mod oneshot_instant {
    pub type Sender = tokio::sync::oneshot::Sender<std::time::Instant>;
}

criterion_group!(benches, in_process, loopback, first_byte_to_event);
criterion_main!(benches);
