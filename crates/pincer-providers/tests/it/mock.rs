//! A vendor HTTP server in the test process: an axum app on 127.0.0.1:0
//! that answers each path from a queue of scripted replies and captures
//! every request (method, path, headers, body).

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use futures_util::StreamExt;
use pincer_providers::config::{ProviderConfig, ProviderKind};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// How an SSE body ends after its chunks.
#[derive(Clone, Debug)]
pub enum End {
    /// The body ends cleanly.
    Close,
    /// Once the client signals `Notify` (it got the text; waited for at
    /// most 5 s), the connection is cut: the chunked body never terminates.
    /// Cutting at once could discard chunks hyper has not flushed yet.
    DropAfter(Arc<Notify>),
}

#[derive(Clone, Debug)]
pub enum Reply {
    /// `200 text/event-stream` with these raw body chunks.
    Sse { chunks: Vec<Vec<u8>>, end: End },
    /// Any status, headers and body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Never answers (the client's timeout must fire).
    Hang,
}

impl Reply {
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Reply::Sse {
            chunks: vec![body.into()],
            end: End::Close,
        }
    }

    /// The body cut into `n`-byte chunks, to cross every kind of boundary.
    pub fn sse_chunked(body: impl Into<Vec<u8>>, n: usize, end: End) -> Self {
        Reply::Sse {
            chunks: body.into().chunks(n).map(<[u8]>::to_vec).collect(),
            end,
        }
    }

    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Reply::Status {
            status,
            headers: vec![],
            body: body.into(),
        }
    }

    pub fn json(status: u16, body: Value) -> Self {
        Reply::Status {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Status {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Status {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Captured {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct MockState {
    replies: Mutex<HashMap<String, VecDeque<Reply>>>,
    captured: Mutex<Vec<Captured>>,
}

pub struct Mock {
    pub url: String,
    state: Arc<MockState>,
}

impl Mock {
    pub async fn start() -> Mock {
        let state = Arc::new(MockState::default());
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Mock {
            url: format!("http://{addr}"),
            state,
        }
    }

    /// Queues `reply` for the next request to `path`.
    pub fn on(&self, path: &str, reply: Reply) -> &Self {
        self.state
            .replies
            .lock()
            .unwrap()
            .entry(path.to_string())
            .or_default()
            .push_back(reply);
        self
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.state.captured.lock().unwrap().clone()
    }

    pub fn requests_to(&self, path: &str) -> Vec<Captured> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// The one request made to `path`.
    pub fn only_request(&self, path: &str) -> Captured {
        let mut reqs = self.requests_to(path);
        assert_eq!(reqs.len(), 1, "requests to {path}: {reqs:#?}");
        reqs.remove(0)
    }

    /// Checks every chat request this server saw for protocol invariants
    /// (tool calls and results paired, roles alternating for Anthropic).
    pub fn assert_protocol_invariants(&self) {
        for r in self.requests() {
            if r.path.ends_with("/chat/completions") {
                crate::invariants::assert_openai_paired(&r.body);
            } else if r.path.ends_with("/v1/messages") {
                crate::invariants::assert_anthropic_paired(&r.body);
            }
        }
    }

    /// A provider configuration pointing at this server (`prefix` is
    /// appended to its URL, e.g. `/v1`).
    pub fn config(&self, kind: ProviderKind, name: &str, prefix: &str) -> ProviderConfig {
        ProviderConfig {
            name: name.into(),
            kind,
            base_url: format!("{}{prefix}", self.url),
            model: "test-model".into(),
            api_key_env: None,
            headers: BTreeMap::new(),
            context_window: 8192,
            timeout_secs: 10,
            max_retries: 0,
            script: None,
            vision: false,
        }
    }
}

async fn handle(
    State(state): State<Arc<MockState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let json = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    state.captured.lock().unwrap().push(Captured {
        method: method.to_string(),
        path: path.clone(),
        headers,
        body: json,
    });
    let reply = state
        .replies
        .lock()
        .unwrap()
        .get_mut(&path)
        .and_then(VecDeque::pop_front);
    match reply {
        None => Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::from(format!("no reply scripted for {path}")))
            .unwrap(),
        Some(Reply::Hang) => std::future::pending().await,
        Some(Reply::Status {
            status,
            headers,
            body,
        }) => {
            let mut b = Response::builder().status(status);
            for (k, v) in headers {
                b = b.header(k, v);
            }
            b.body(Body::from(body)).unwrap()
        }
        Some(Reply::Sse { chunks, end }) => {
            let data = futures_util::stream::iter(
                chunks
                    .into_iter()
                    .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
            );
            let tail = futures_util::stream::once(async move {
                match end {
                    End::Close => None,
                    End::DropAfter(signal) => {
                        let _ =
                            tokio::time::timeout(Duration::from_secs(5), signal.notified()).await;
                        Some(Err(std::io::Error::other("connection dropped by the test")))
                    }
                }
            })
            .filter_map(std::future::ready);
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(Body::from_stream(data.chain(tail)))
                .unwrap()
        }
    }
}

/// An SSE body of `data:` events (OpenAI style).
pub fn data_events(events: &[Value]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str("data: ");
        out.push_str(&e.to_string());
        out.push_str("\n\n");
    }
    out
}

/// An SSE body of named events (Anthropic style): `event: <type>` + data,
/// lines ending in `\r\n` to exercise that path over the wire.
// Anthropic's wire format only.
#[cfg_attr(not(feature = "anthropic"), allow(dead_code))]
pub fn named_events(events: &[Value]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str("event: ");
        out.push_str(e["type"].as_str().unwrap());
        out.push_str("\r\ndata: ");
        out.push_str(&e.to_string());
        out.push_str("\r\n\r\n");
    }
    out
}

/// A port nothing listens on (bound, then released).
pub async fn refused_url() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}
