//! A model endpoint on 127.0.0.1 that answers as a model provider's streaming API does,
//! with usage figures the test chooses: Anthropic's Messages API (`POST /v1/messages`,
//! which Claude Code asks at `ANTHROPIC_BASE_URL`) and OpenAI's Responses API
//! (`POST /v1/responses`, which Codex asks through a model provider's `base_url`).
//!
//! A request of the conversation itself — one that offers the model tools — is answered
//! as the latest [`Turn`] whose marker its text holds (a later turn's request carries the
//! earlier prompts too), with that turn's figures. Its reply is held until the test lets
//! the turn go ([`ModelEndpoint::release`]), so the test can look at the session between
//! the harness's request and its record. Every other request (a title for the
//! conversation, a token count) gets a short reply at once, one token each way. It never
//! reaches any network.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use crate::recorder::{read_request, respond};

/// One turn of the conversation: the text of the prompt that starts it, and the usage
/// its reply reports.
#[derive(Debug, Clone, Copy)]
pub struct Turn {
    pub marker: &'static str,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The reply to a request that is no turn of the conversation: valid as the JSON object
/// with a `title` the harnesses ask for when they name a conversation, short otherwise.
const SIDE_REPLY: &str = r#"{"title":"Budget check"}"#;

pub struct ModelEndpoint {
    pub url: String,
    address: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What every connection's thread reads.
struct Shared {
    turns: Vec<Turn>,
    /// Per turn: whether the test let its reply go.
    released: Mutex<Vec<bool>>,
    changed: Condvar,
    /// Told the index of each turn whose request arrives (a retried request again).
    requested: Box<dyn Fn(usize) + Send + Sync>,
    /// Numbers the replies, so each message and response has an id of its own.
    replies: AtomicU64,
    stop: AtomicBool,
}

impl ModelEndpoint {
    /// Serves `turns`, calling `requested` with a turn's index as its request arrives.
    pub fn start(turns: &[Turn], requested: impl Fn(usize) + Send + Sync + 'static) -> ModelEndpoint {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the model endpoint");
        let address = listener.local_addr().expect("address");
        let shared = Arc::new(Shared {
            turns: turns.to_vec(),
            released: Mutex::new(vec![false; turns.len()]),
            changed: Condvar::new(),
            requested: Box::new(requested),
            replies: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let shared = Arc::clone(&thread_shared);
                    std::thread::spawn(move || serve(stream, &shared));
                }
            }
        });
        ModelEndpoint { url: format!("http://{address}"), address, shared, thread: Some(thread) }
    }

    /// Lets turn `index`'s reply go, to the request waiting and to any later one.
    pub fn release(&self, index: usize) {
        self.shared.released.lock().expect("released")[index] = true;
        self.shared.changed.notify_all();
    }
}

impl Drop for ModelEndpoint {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.released.lock().expect("released").iter_mut().for_each(|released| *released = true);
        self.shared.changed.notify_all();
        let _ = TcpStream::connect(self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Shared {
    /// The text and usage of the reply to a request: a turn's, once the test lets it go,
    /// or a short one.
    fn reply_to(&self, text: &str, body: &Value) -> (String, u64, u64) {
        let offers_tools = body["tools"].as_array().is_some_and(|tools| !tools.is_empty());
        let turn = if offers_tools { self.turns.iter().rposition(|turn| text.contains(turn.marker)) } else { None };
        let Some(index) = turn else { return (SIDE_REPLY.to_owned(), 1, 1) };
        (self.requested)(index);
        let mut released = self.released.lock().expect("released");
        while !released[index] {
            released = self.changed.wait(released).expect("released");
        }
        let turn = self.turns[index];
        (format!("Turn {} noted.", index + 1), turn.input_tokens, turn.output_tokens)
    }

    fn id(&self) -> u64 {
        self.replies.fetch_add(1, Ordering::SeqCst) + 1
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let Some(request) = read_request(&stream) else { return };
    let path = request.path.split('?').next().unwrap_or_default();
    let body: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or("loopback-model").to_owned();
    let streamed = body["stream"] == true;
    match (request.method.as_str(), path) {
        ("POST", "/v1/messages/count_tokens") => {
            let _ = respond(stream, "200 OK", "application/json", json!({ "input_tokens": 1 }).to_string().as_bytes());
        }
        ("POST", "/v1/messages") => {
            let (text, input, output) = shared.reply_to(&request.body, &body);
            let message = Message { id: format!("msg_loopback_{}", shared.id()), model, text, input, output };
            let _ = if streamed {
                respond(stream, "200 OK", "text/event-stream", messages_events(&message).as_bytes())
            } else {
                respond(stream, "200 OK", "application/json", messages_whole(&message).to_string().as_bytes())
            };
        }
        ("POST", "/v1/responses") => {
            let (text, input, output) = shared.reply_to(&request.body, &body);
            let message = Message { id: format!("loopback_{}", shared.id()), model, text, input, output };
            let _ = if streamed {
                respond(stream, "200 OK", "text/event-stream", responses_events(&message).as_bytes())
            } else {
                respond(stream, "200 OK", "application/json", response_whole(&message).to_string().as_bytes())
            };
        }
        _ => {
            let error =
                json!({ "type": "error", "error": { "type": "not_found_error", "message": "not served here" } });
            let _ = respond(stream, "404 Not Found", "application/json", error.to_string().as_bytes());
        }
    }
}

/// One reply: its id, model, text and usage.
struct Message {
    id: String,
    model: String,
    text: String,
    input: u64,
    output: u64,
}

/// Server-sent events, `event: NAME` and `data: JSON` each.
fn events(events: &[(&str, Value)]) -> String {
    events.iter().map(|(name, data)| format!("event: {name}\ndata: {data}\n\n")).collect()
}

/// The Messages API's stream: the input tokens at `message_start`, the output tokens at
/// `message_delta`, as Anthropic sends them.
fn messages_events(message: &Message) -> String {
    let start = json!({
        "id": message.id, "type": "message", "role": "assistant", "model": message.model, "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": { "input_tokens": message.input, "output_tokens": 0 }
    });
    events(&[
        ("message_start", json!({ "type": "message_start", "message": start })),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": message.text } }),
        ),
        ("content_block_stop", json!({ "type": "content_block_stop", "index": 0 })),
        (
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": { "stop_reason": "end_turn", "stop_sequence": null },
                "usage": { "output_tokens": message.output }
            }),
        ),
        ("message_stop", json!({ "type": "message_stop" })),
    ])
}

/// The Messages API's whole reply, for a request that does not stream.
fn messages_whole(message: &Message) -> Value {
    json!({
        "id": message.id, "type": "message", "role": "assistant", "model": message.model,
        "content": [{ "type": "text", "text": message.text }],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": { "input_tokens": message.input, "output_tokens": message.output }
    })
}

/// The Responses API's output message item, done.
fn output_item(message: &Message) -> Value {
    json!({
        "type": "message", "id": format!("msg_{}", message.id), "role": "assistant", "status": "completed",
        "content": [{ "type": "output_text", "text": message.text, "annotations": [] }]
    })
}

/// The Responses API's finished response, with its `usage`.
fn response_whole(message: &Message) -> Value {
    json!({
        "id": format!("resp_{}", message.id), "object": "response", "status": "completed", "model": message.model,
        "output": [output_item(message)],
        "usage": {
            "input_tokens": message.input, "input_tokens_details": { "cached_tokens": 0 },
            "output_tokens": message.output, "output_tokens_details": { "reasoning_tokens": 0 },
            "total_tokens": message.input + message.output
        }
    })
}

/// The Responses API's stream: the response created, one message item with its text,
/// and `response.completed` carrying the usage.
fn responses_events(message: &Message) -> String {
    let created = json!({
        "id": format!("resp_{}", message.id), "object": "response", "status": "in_progress",
        "model": message.model, "output": []
    });
    let item_id = format!("msg_{}", message.id);
    let added =
        json!({ "type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": [] });
    events(&[
        ("response.created", json!({ "type": "response.created", "response": created })),
        (
            "response.output_item.added",
            json!({ "type": "response.output_item.added", "output_index": 0, "item": added }),
        ),
        (
            "response.output_text.delta",
            json!({
                "type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0,
                "delta": message.text
            }),
        ),
        (
            "response.output_item.done",
            json!({ "type": "response.output_item.done", "output_index": 0, "item": output_item(message) }),
        ),
        ("response.completed", json!({ "type": "response.completed", "response": response_whole(message) })),
    ])
}
