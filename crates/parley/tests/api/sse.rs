//! A Server-Sent Events client for the tests, reading frames as a browser's
//! EventSource does: `id`, `event` and `data` fields, comments, and the
//! blank line that ends a frame.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::TestApp;

/// One frame of a stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Event { id: Option<String>, event: String, data: Value },
    Comment(String),
}

pub struct EventStream {
    response: reqwest::Response,
    /// Bytes as they came: a character may be split across chunks, so
    /// only whole frames are decoded.
    buffer: Vec<u8>,
    pub content_type: String,
    /// Whether a frame was read: the stream's opening comment (`: open`)
    /// is then behind.
    started: bool,
}

/// What opening a stream answered: the stream, or the status and JSON
/// error body of a refusal.
pub async fn open(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Result<EventStream, (StatusCode, Value)> {
    let mut request = app.client.get(app.url(path)).header("accept", "text/event-stream");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("stream request");
    let status = response.status();
    if status != StatusCode::OK {
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let mut body: Value = response.json().await.unwrap_or(Value::Null);
        if let Some(r) = retry_after {
            body["retry_after"] = r.into();
        }
        return Err((status, body));
    }
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    Ok(EventStream { response, buffer: Vec::new(), content_type, started: false })
}

/// Opens a stream that must be accepted.
pub async fn open_ok(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> EventStream {
    match open(app, path, headers).await {
        Ok(stream) => stream,
        Err((status, body)) => panic!("stream refused: {status} {body}"),
    }
}

impl EventStream {
    /// The next frame, or `None` when the server ended the stream, past
    /// the opening comment every stream starts with. Panics when nothing
    /// comes within 10 s.
    pub async fn frame(&mut self) -> Option<Frame> {
        self.frame_within(Duration::from_secs(10)).await.expect("a frame or the end within 10 s")
    }

    /// The next frame within `wait`, past the opening comment: `Err(())`
    /// when nothing came.
    pub async fn frame_within(&mut self, wait: Duration) -> Result<Option<Frame>, ()> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let frame = self.read_frame(deadline).await?;
            let opening = !std::mem::replace(&mut self.started, true) && frame == Some(Frame::Comment("open".into()));
            if !opening {
                return Ok(frame);
            }
        }
    }

    /// The next frame within `wait` as it came, the opening comment
    /// included: `Err(())` when nothing came.
    pub async fn raw_frame_within(&mut self, wait: Duration) -> Result<Option<Frame>, ()> {
        self.started = true;
        self.read_frame(tokio::time::Instant::now() + wait).await
    }

    async fn read_frame(&mut self, deadline: tokio::time::Instant) -> Result<Option<Frame>, ()> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.buffer.drain(..end + 2).collect();
                return Ok(Some(parse(std::str::from_utf8(&raw).expect("a UTF-8 frame"))));
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return Err(()),
                Ok(Ok(Some(bytes))) => self.buffer.extend_from_slice(&bytes),
                Ok(Ok(None)) => return Ok(None),
                Ok(Err(e)) => panic!("stream failed instead of ending: {e}"),
            }
        }
    }

    /// The next event, skipping comments; `None` when the stream ended.
    pub async fn event(&mut self) -> Option<(Option<String>, String, Value)> {
        loop {
            match self.frame().await? {
                Frame::Event { id, event, data } => return Some((id, event, data)),
                Frame::Comment(_) => {}
            }
        }
    }

    /// The next `n` events; panics if the stream ends first.
    pub async fn events(&mut self, n: usize) -> Vec<(Option<String>, String, Value)> {
        let mut out = Vec::new();
        while out.len() < n {
            out.push(self.event().await.unwrap_or_else(|| panic!("the stream ended after {} of {n} events: {out:?}", out.len())));
        }
        out
    }
}

fn parse(raw: &str) -> Frame {
    let (mut id, mut event, mut data, mut comment) = (None, String::from("message"), Vec::new(), None);
    for line in raw.lines().filter(|l| !l.is_empty()) {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "" => comment = Some(value.to_owned()),
            "id" => id = Some(value.to_owned()),
            "event" => event = value.to_owned(),
            "data" => data.push(value.to_owned()),
            _ => {}
        }
    }
    match (comment, data.is_empty()) {
        (Some(text), true) => Frame::Comment(text),
        _ => Frame::Event { id, event, data: serde_json::from_str(&data.join("\n")).expect("JSON data") },
    }
}
