//! One keep-alive HTTP/1.1 connection, driven with hyper directly: the
//! lightest client there is, so the client's own cost stays small beside
//! the server's and is the same for Parley and for the reference app.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// What one request came to.
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
    pub latency: Duration,
    /// The connection had been closed and was opened again for this call.
    pub reconnected: bool,
}

/// A request to send: method, path, optional JSON body and bearer token,
/// all prepared once so sending one is only cheap clones (the client must
/// cost little beside the server it measures).
#[derive(Clone)]
pub struct Call {
    pub method: Method,
    pub uri: Uri,
    pub body: Option<Bytes>,
    pub bearer: Option<HeaderValue>,
    /// The body's type when it is not JSON.
    pub content_type: Option<HeaderValue>,
}

impl Call {
    fn new(method: Method, path: &str) -> Self {
        let uri = path.parse().unwrap_or_else(|_| Uri::from_static("/"));
        Self { method, uri, body: None, bearer: None, content_type: None }
    }

    pub fn get(path: impl AsRef<str>) -> Self {
        Self::new(Method::GET, path.as_ref())
    }

    pub fn post(path: impl AsRef<str>, body: &serde_json::Value) -> Self {
        Self { body: Some(Bytes::from(body.to_string())), ..Self::new(Method::POST, path.as_ref()) }
    }

    /// A POST of `body` as it is, of type `content_type` (an upload).
    pub fn post_raw(path: impl AsRef<str>, content_type: &str, body: Bytes) -> Self {
        let content_type = HeaderValue::from_str(content_type).ok();
        Self { body: Some(body), content_type, ..Self::new(Method::POST, path.as_ref()) }
    }

    pub fn delete(path: impl AsRef<str>) -> Self {
        Self::new(Method::DELETE, path.as_ref())
    }

    pub fn bearer(mut self, token: &str) -> Self {
        self.bearer = HeaderValue::from_str(&format!("Bearer {token}")).ok();
        self
    }
}

pub struct Conn {
    addr: SocketAddr,
    host: HeaderValue,
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(std::io::Error::other)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let host = HeaderValue::from_str(&addr.to_string()).map_err(std::io::Error::other)?;
        Ok(Self { addr, host, sender })
    }

    /// Sends a call and reads the whole answer. A connection the server
    /// closed is opened again once, inside the measured time, and counted.
    pub async fn send(&mut self, call: &Call) -> std::io::Result<Answer> {
        let started = Instant::now();
        let reconnected = self.sender.is_closed();
        if reconnected {
            *self = Self::open(self.addr).await?;
        }
        let mut builder = Request::builder().method(call.method.clone()).uri(call.uri.clone()).header(HOST, self.host.clone());
        if call.body.is_some() {
            let content_type = call.content_type.clone().unwrap_or(HeaderValue::from_static("application/json"));
            builder = builder.header(CONTENT_TYPE, content_type);
        }
        if let Some(auth) = &call.bearer {
            builder = builder.header(AUTHORIZATION, auth.clone());
        }
        let request = builder.body(Full::new(call.body.clone().unwrap_or_default())).map_err(std::io::Error::other)?;
        self.sender.ready().await.map_err(std::io::Error::other)?;
        let response = self.sender.send_request(request).await.map_err(std::io::Error::other)?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.map_err(std::io::Error::other)?.to_bytes();
        Ok(Answer { status, body, latency: started.elapsed(), reconnected })
    }
}

/// Sends one call on a fresh connection (set-up work, not measured).
pub async fn once(addr: SocketAddr, call: Call) -> std::io::Result<(u16, serde_json::Value)> {
    let mut conn = Conn::open(addr).await?;
    let answer = conn.send(&call).await?;
    let value = serde_json::from_slice(&answer.body).unwrap_or(serde_json::Value::Null);
    Ok((answer.status, value))
}
