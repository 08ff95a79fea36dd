//! A small mock of the Anthropic Messages API and the OpenAI Responses API on 127.0.0.1,
//! for running the real Claude Code and Codex offline (`ANTHROPIC_BASE_URL`, a Codex
//! `model_providers` entry). It answers as the vendors do — streamed server-sent events —
//! with turns scripted by a marker in the user's last prompt:
//!
//! - `[tool]`: the model asks to run a shell command (`TOOL_COMMAND`) — Claude's `Bash`
//!   tool, Codex's `exec_command` with escalated permissions — so the agent shows its real
//!   permission prompt; once the tool's result comes back, a short text answer;
//! - `[slow]`: the answer starts and then stalls (until the agent hangs up or the mock
//!   stops), so the agent stays at work until it is interrupted;
//! - `[long]`: a long text answer, 32 lines ending in `LONG_END`, streamed a line at a time
//!   for about eight seconds (an agent hides its status line while the text comes);
//! - `[auth-error]`: HTTP 401 with the vendor's authentication error;
//! - `[sleep]`: like `[tool]`, with a command that runs for a few seconds
//!   (`SLEEP_COMMAND`);
//! - anything else: a text answer, `TEXT_ANSWER`, streamed word by word over about a
//!   second (an agent's side request, such as a title for the session, at once).
//!
//! Requests the agents make beside their turns (a title, token counts, a probe of the
//! base URL) are answered minimally. Every request is recorded (`requests`). Connections
//! are kept alive, except that a streamed answer ends its own.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// What the scripted tool call runs (in the agent's working folder).
pub const TOOL_COMMAND: &str = "touch tool-ran";
/// The plain answer, and the one after a tool's result.
pub const TEXT_ANSWER: &str = "Hello from the mock.";
pub const TOOL_ANSWER: &str = "The tool ran.";
/// The last line of the `[long]` answer (short: it stays on one row in a narrow pane).
pub const LONG_END: &str = "Story over.";
/// What the `[sleep]` tool call runs.
pub const SLEEP_COMMAND: &str = "sleep 3";
/// Between the pieces of a text answer to the user: it streams for about a second, as
/// real answers do, so an agent is seen at work. The agents' own side requests (a title)
/// are answered at once.
const PACE: Duration = Duration::from_millis(250);
/// How long a `[slow]` answer stalls at most.
const STALL: Duration = Duration::from_secs(120);
/// A request's head and body are read up to this size (agents send their whole context:
/// a few hundred KiB).
const MAX_REQUEST: usize = 16 << 20;

/// One request as the mock received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
    /// The scripted turn it got (`text`, `tool`, `tool-result`, `slow`, `auth-error`);
    /// `side` for a request of the agent's own beside the user's turns (a title), `other`
    /// for one that is no model request at all.
    pub turn: &'static str,
}

pub struct MockApi {
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    streaming: Arc<AtomicUsize>,
}

struct Shared {
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    /// Streamed answers to turns (not side requests) being sent now.
    streaming: Arc<AtomicUsize>,
    /// Numbers the tool calls, so each one has its own id.
    calls: AtomicUsize,
}

impl MockApi {
    pub fn start() -> MockApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local address").port();
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let streaming: Arc<AtomicUsize> = Arc::default();
        let shared = Arc::new(Shared {
            requests: requests.clone(),
            stop: stop.clone(),
            streaming: streaming.clone(),
            calls: AtomicUsize::new(0),
        });
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if shared.stop.load(Ordering::Acquire) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, &shared));
            }
        });
        MockApi {
            port,
            requests,
            stop,
            streaming,
        }
    }

    /// How many answers to the user's turns are being streamed now: the agent is at work
    /// while one is.
    pub fn streaming(&self) -> usize {
        self.streaming.load(Ordering::Acquire)
    }

    /// The count behind [`MockApi::streaming`], for a thread of its own to read.
    pub fn streaming_counter(&self) -> Arc<AtomicUsize> {
        self.streaming.clone()
    }

    /// The base URL (Claude Code's `ANTHROPIC_BASE_URL`; Codex's is this plus `/v1`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The scripted turns served so far, in order.
    pub fn turns(&self) -> Vec<&'static str> {
        self.requests()
            .iter()
            .map(|r| r.turn)
            .filter(|t| !matches!(*t, "other" | "side"))
            .collect()
    }

    /// What the mock was asked, one line per request, for a failing test's message.
    pub fn summary(&self) -> String {
        self.requests()
            .iter()
            .map(|r| format!("{} {} -> {}", r.method, r.path, r.turn))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads one request: its method, path and body (by Content-Length, or chunked).
fn read_request(r: &mut BufReader<TcpStream>) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let path = words.next()?.to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if n == 0 {
                // The trailer, up to its empty line: read whole, so nothing is left unread
                // (closing with unread input resets the connection).
                let mut line = String::new();
                while r.read_line(&mut line).ok()? > 0 && !line.trim_end().is_empty() {
                    line.clear();
                }
                break;
            }
            if body.len() + n > MAX_REQUEST {
                return None;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk[..n]);
        }
    } else if length <= MAX_REQUEST {
        body.resize(length, 0);
        r.read_exact(&mut body).ok()?;
    }
    Some((method, path, body))
}

/// Serves one connection: requests answered with a length are followed by the next on
/// the same connection (clients keep connections alive, and may send a request on one
/// they opened earlier); a streamed answer ends it.
fn serve(mut conn: TcpStream, shared: &Shared) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(reading) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reading);
    while let Some((method, path, body)) = read_request(&mut reader) {
        if !answer(&mut conn, shared, &method, &path, &body).unwrap_or(false) {
            break;
        }
    }
    // Closing with input unread would reset the connection, and the client could see the
    // reset before the answer: the answer is ended first and what is left read away.
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
    let mut sink = [0u8; 4096];
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
}

/// Answers one request; whether the connection may carry another.
fn answer(
    conn: &mut TcpStream,
    shared: &Shared,
    method: &str,
    path: &str,
    body: &[u8],
) -> std::io::Result<bool> {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let route = path.split('?').next().unwrap_or("").to_string();
    let turn = match (method, route.as_str()) {
        ("POST", "/v1/messages") => claude_turn(&body),
        ("POST", "/v1/responses") => codex_turn(&body),
        _ => "other",
    };
    shared.requests.lock().unwrap().push(Request {
        method: method.to_string(),
        path: path.to_string(),
        body: body.clone(),
        turn,
    });
    let call = shared.calls.fetch_add(1, Ordering::SeqCst) + 1;
    match (route.as_str(), turn) {
        (_, "other") => other(conn, method, &route)?,
        ("/v1/messages", "auth-error") => reply(
            conn,
            "401 Unauthorized",
            &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        )?,
        ("/v1/responses", "auth-error") => reply(
            conn,
            "401 Unauthorized",
            &json!({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}}),
        )?,
        ("/v1/messages", _) => {
            let _busy = Streaming::new(shared, turn);
            claude_stream(conn, &body, turn, call, &shared.stop)?;
            return Ok(false);
        }
        _ => {
            let _busy = Streaming::new(shared, turn);
            codex_stream(conn, turn, call, &shared.stop)?;
            return Ok(false);
        }
    }
    Ok(true)
}

/// Counts a streamed answer to a turn while it is sent.
struct Streaming<'a>(Option<&'a AtomicUsize>);

impl<'a> Streaming<'a> {
    fn new(shared: &'a Shared, turn: &str) -> Streaming<'a> {
        let counted = (turn != "side").then_some(&*shared.streaming);
        if let Some(c) = counted {
            c.fetch_add(1, Ordering::AcqRel);
        }
        Streaming(counted)
    }
}

impl Drop for Streaming<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.0 {
            c.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Requests beside the turns: a probe of the base URL, token counts, anything else.
fn other(conn: &mut TcpStream, method: &str, route: &str) -> std::io::Result<()> {
    if route.ends_with("/count_tokens") {
        return reply(conn, "200 OK", &json!({"input_tokens": 100}));
    }
    if method == "HEAD" || route == "/" {
        return conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    }
    reply(
        conn,
        "404 Not Found",
        &json!({"error": {"message": "not part of the mock"}}),
    )
}

fn reply(conn: &mut TcpStream, status: &str, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())
}

/// The turn the prompt asks for.
fn scripted(prompt: &str) -> &'static str {
    if prompt.contains("[auth-error]") {
        "auth-error"
    } else if prompt.contains("[tool]") {
        "tool"
    } else if prompt.contains("[slow]") {
        "slow"
    } else if prompt.contains("[long]") {
        "long"
    } else if prompt.contains("[sleep]") {
        "sleep"
    } else {
        "text"
    }
}

/// Claude: the turn is decided by the last user message. A tool's result last in it asks
/// for the answer after the tool; otherwise its last text block is the prompt. Requests
/// without the agent's tools (a title for the session) are `side` requests, answered with
/// plain text whatever the prompt (but an authentication error stays one).
fn claude_turn(body: &Value) -> &'static str {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "user") else {
        return "text";
    };
    let blocks = match &last["content"] {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    };
    if blocks.last().is_some_and(|b| b["type"] == "tool_result") {
        return "tool-result";
    }
    let prompt = blocks
        .iter()
        .rev()
        .find(|b| b["type"] == "text")
        .and_then(|b| b["text"].as_str())
        .unwrap_or("");
    let has_tools = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
    match scripted(prompt) {
        "auth-error" => "auth-error",
        _ if !has_tools => "side",
        turn => turn,
    }
}

/// Codex: the last input item decides: a tool's output asks for the answer after it; a
/// user message is the prompt.
fn codex_turn(body: &Value) -> &'static str {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let Some(last) = input.last() else {
        return "text";
    };
    if last["type"] == "function_call_output" {
        return "tool-result";
    }
    let prompt: String = last["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let has_tools = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "exec_command"));
    match scripted(&prompt) {
        "auth-error" => "auth-error",
        _ if !has_tools => "side",
        turn => turn,
    }
}

fn sse_head(conn: &mut TcpStream) -> std::io::Result<()> {
    conn.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
    )
}

fn event(conn: &mut TcpStream, data: Value) -> std::io::Result<()> {
    let name = data["type"].as_str().unwrap_or("message").to_string();
    conn.write_all(format!("event: {name}\ndata: {data}\n\n").as_bytes())?;
    conn.flush()
}

/// Holds a `[slow]` answer open until the agent hangs up, the mock stops, or `STALL`.
fn stall(conn: &mut TcpStream, stop: &AtomicBool, ping: Value) -> std::io::Result<()> {
    let end = Instant::now() + STALL;
    while !stop.load(Ordering::Acquire) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(500));
        // A write to a connection the agent closed fails: that is the end.
        event(conn, ping.clone())?;
    }
    Ok(())
}

/// The command a tool call of `turn` runs.
fn command(turn: &str) -> &'static str {
    if turn == "sleep" {
        SLEEP_COMMAND
    } else {
        TOOL_COMMAND
    }
}

/// The `[long]` answer: 32 lines, streamed a line at a time.
fn long_answer() -> String {
    let mut text: String = (1..32)
        .map(|i| format!("Line {i} of a long answer, streamed slowly.\n"))
        .collect();
    text.push_str(LONG_END);
    text
}

/// What a text turn answers, in the pieces it streams.
fn answer_text(turn: &str) -> (String, Vec<String>) {
    match turn {
        "tool-result" => (TOOL_ANSWER.to_string(), pieces(TOOL_ANSWER)),
        "long" => {
            let text = long_answer();
            let lines = text.split_inclusive('\n').map(str::to_string).collect();
            (text, lines)
        }
        _ => (TEXT_ANSWER.to_string(), pieces(TEXT_ANSWER)),
    }
}

fn pieces(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_string).collect()
}

fn claude_stream(
    conn: &mut TcpStream,
    body: &Value,
    turn: &str,
    call: usize,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    sse_head(conn)?;
    let model = body["model"].as_str().unwrap_or("claude-mock");
    event(
        conn,
        json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{call}"), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    )?;
    if turn == "slow" {
        return stall(conn, stop, json!({"type": "ping"}));
    }
    let stop_reason = if turn == "tool" || turn == "sleep" {
        let input = json!({"command": command(turn), "description": "Create a file"});
        event(
            conn,
            json!({"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": format!("toolu_mock_{call}"), "name": "Bash", "input": {}}}),
        )?;
        event(
            conn,
            json!({"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": input.to_string()}}),
        )?;
        "tool_use"
    } else {
        let (_, pieces) = answer_text(turn);
        event(
            conn,
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )?;
        for piece in pieces {
            if turn != "side" {
                std::thread::sleep(PACE);
            }
            event(
                conn,
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
            )?;
        }
        "end_turn"
    };
    event(conn, json!({"type": "content_block_stop", "index": 0}))?;
    event(
        conn,
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 20}}),
    )?;
    event(conn, json!({"type": "message_stop"}))
}

fn codex_stream(
    conn: &mut TcpStream,
    turn: &str,
    call: usize,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    sse_head(conn)?;
    let id = format!("resp_mock_{call}");
    event(
        conn,
        json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress", "output": []}}),
    )?;
    if turn == "slow" {
        let item = json!({"id": format!("msg_mock_{call}"), "type": "message", "role": "assistant", "status": "in_progress", "content": []});
        event(
            conn,
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        )?;
        return stall(
            conn,
            stop,
            json!({"type": "response.in_progress", "response": {"id": id, "status": "in_progress"}}),
        );
    }
    let item = if turn == "tool" || turn == "sleep" {
        let arguments = json!({
            "cmd": command(turn),
            "sandbox_permissions": "require_escalated",
            "justification": "Create a file?",
        });
        json!({"id": format!("fc_mock_{call}"), "type": "function_call", "status": "completed",
               "call_id": format!("call_mock_{call}"), "name": "exec_command",
               "arguments": arguments.to_string()})
    } else {
        let (text, pieces) = answer_text(turn);
        let msg = format!("msg_mock_{call}");
        event(
            conn,
            json!({"type": "response.output_item.added", "output_index": 0, "item": {
                "id": msg, "type": "message", "role": "assistant", "status": "in_progress", "content": []}}),
        )?;
        for piece in pieces {
            if turn != "side" {
                std::thread::sleep(PACE);
            }
            event(
                conn,
                json!({"type": "response.output_text.delta", "item_id": msg, "output_index": 0,
                       "content_index": 0, "delta": piece}),
            )?;
        }
        json!({"id": msg, "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]})
    };
    event(
        conn,
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    )?;
    event(
        conn,
        json!({"type": "response.completed", "response": {
            "id": id, "object": "response", "status": "completed", "output": [item],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 120}}}),
    )
}
