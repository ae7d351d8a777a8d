//! A real gateway on a loopback port over a temporary home with the
//! scripted provider and the simulated board, and raw clients that send
//! exactly the bytes an attacker would.

use futures_util::{SinkExt, StreamExt};
use pincer_gateway::{Gateway, Limits, Options};
use pincer_runtime::{Env, Runtime, RuntimeOptions, Settings};
use pincer_test_support::TempHome;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message};

pub struct Gw {
    pub addr: SocketAddr,
    pub t: TempHome,
    /// The startup code (approver role).
    pub code: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Gw {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// A script of `n` plain replies.
pub fn replies(n: usize) -> Value {
    serde_json::json!({"turns": (0..n).map(|i| serde_json::json!({"text": format!("reply {i}")})).collect::<Vec<_>>()})
}

pub async fn start(script: &Value, autonomy: &str) -> Gw {
    start_with(script, autonomy, Limits::default()).await
}

pub async fn start_with(script: &Value, autonomy: &str, limits: Limits) -> Gw {
    let t = TempHome::new();
    t.scripted(
        script,
        &format!("\n[policy]\nautonomy = \"{autonomy}\"\napproval_timeout_secs = 30\n"),
    );
    let ws = t.sibling("ws");
    let settings = Settings::load(&t.home.config_path()).expect("settings");
    let env = Env::from_vars([("PINCER_BOARD", "sim"), ("PATH", "/usr/bin:/bin")]);
    let runtime = Runtime::start(
        t.home.clone(),
        settings,
        env,
        RuntimeOptions {
            provider: None,
            workspace: Some(ws),
        },
    )
    .await
    .expect("runtime");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut opts = Options::new(addr);
    opts.limits = limits;
    let gw = Gateway::new(runtime, opts).expect("gateway");
    let code = gw.startup_code().expect("code").code;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = gw
            .serve(listener, async {
                let _ = stopped.await;
            })
            .await;
    });
    Gw {
        addr,
        t,
        code,
        stop: Some(stop),
        task: Some(task),
    }
}

/// A raw HTTP/1.1 response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// Sends `head` (request line and headers, without the final blank line)
/// and `body` on a fresh connection; reads the whole response.
pub async fn raw(addr: SocketAddr, head: &str, body: &[u8]) -> Resp {
    let s = TcpStream::connect(addr).await.expect("connect");
    exchange(s, head, body).await
}

/// [`raw`] from the loopback address `src` (127.0.0.0/8 is all loopback:
/// a test can be several peers).
pub async fn raw_from(src: std::net::Ipv4Addr, addr: SocketAddr, head: &str, body: &[u8]) -> Resp {
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.bind(SocketAddr::from((src, 0))).expect("bind");
    let s = sock.connect(addr).await.expect("connect");
    exchange(s, head, body).await
}

async fn exchange(mut s: TcpStream, head: &str, body: &[u8]) -> Resp {
    let mut req = head.replace('\n', "\r\n");
    if !req.ends_with("\r\n") {
        req.push_str("\r\n");
    }
    if !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    s.write_all(body).await.expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.expect("read");
    parse(&buf)
}

fn parse(buf: &[u8]) -> Resp {
    let text = String::from_utf8_lossy(buf);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect::<Vec<_>>();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest.get(n + 2..).unwrap_or("");
    }
    out
}

impl Gw {
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `METHOD path` with the gateway's own Host and, if given, a token.
    pub async fn req(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> Resp {
        let mut head = format!("{method} {path} HTTP/1.1\nHost: {}\n", self.host());
        if let Some(t) = token {
            head.push_str(&format!("Authorization: Bearer {t}\n"));
        }
        if !body.is_empty() {
            head.push_str("Content-Type: application/json\n");
        }
        raw(self.addr, &head, body.as_bytes()).await
    }

    pub async fn get(&self, path: &str, token: &str) -> Resp {
        self.req("GET", path, Some(token), "").await
    }

    pub async fn post(&self, path: &str, token: &str, body: &str) -> Resp {
        self.req("POST", path, Some(token), body).await
    }

    /// `POST /pair` with `code` from loopback address `src`.
    pub async fn pair_from(&self, src: std::net::Ipv4Addr, code: &str) -> Resp {
        let body = format!("{{\"code\": \"{code}\"}}");
        raw_from(
            src,
            self.addr,
            &format!(
                "POST /pair HTTP/1.1\nHost: {}\nContent-Type: application/json\n",
                self.host()
            ),
            body.as_bytes(),
        )
        .await
    }

    /// Pairs with `code`; the token.
    pub async fn pair(&self, code: &str) -> String {
        let r = self
            .req("POST", "/pair", None, &format!("{{\"code\": \"{code}\"}}"))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["token"].as_str().expect("token").to_string()
    }

    /// A token with the approver role (the startup code).
    pub async fn approver(&self) -> String {
        let code = self.code.clone();
        self.pair(&code).await
    }

    /// A token with the chat role.
    pub async fn chatter(&self) -> String {
        let code = pincer_gateway::issue_code(
            &self.t.home,
            pincer_gateway::Role::Chat,
            pincer_gateway::CODE_TTL,
            "test",
        )
        .expect("code")
        .code;
        self.pair(&code).await
    }

    /// Opens `/ws` with `headers` (name, value) added to the handshake.
    pub async fn ws(&self, headers: &[(&str, String)]) -> Result<Ws, tungstenite::Error> {
        let stream = TcpStream::connect(self.addr).await.expect("connect");
        let mut req = tungstenite::handshake::client::Request::builder()
            .uri(format!("ws://{}/ws", self.addr))
            .header("Host", self.host())
            .header("Connection", "Upgrade")
            .header("Upgrade", "websocket")
            .header("Sec-WebSocket-Version", "13")
            .header(
                "Sec-WebSocket-Key",
                tungstenite::handshake::client::generate_key(),
            );
        for (k, v) in headers {
            req = req.header(*k, v.as_str());
        }
        let req = req.body(()).expect("request");
        let (ws, _) = tokio_tungstenite::client_async(req, stream).await?;
        Ok(Ws { ws })
    }

    /// A WebSocket as the web UI opens it.
    pub async fn ws_as_browser(&self, token: &str) -> Ws {
        self.ws(&[
            ("Origin", format!("http://{}", self.host())),
            (
                "Sec-WebSocket-Protocol",
                format!("pincer.v1, bearer.{token}"),
            ),
        ])
        .await
        .expect("ws")
    }
}

pub struct Ws {
    ws: tokio_tungstenite::WebSocketStream<TcpStream>,
}

impl Ws {
    pub async fn send(&mut self, v: Value) {
        self.ws
            .send(Message::Text(v.to_string().into()))
            .await
            .expect("send");
    }

    /// The next JSON message; None when the connection closed.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            match tokio::time::timeout(Duration::from_secs(30), self.ws.next()).await {
                Err(_) => panic!("no message within 30 s"),
                Ok(None | Some(Err(_))) => return None,
                Ok(Some(Ok(Message::Text(t)))) => {
                    return Some(serde_json::from_str(&t).expect("json"));
                }
                Ok(Some(Ok(Message::Close(_)))) => return None,
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// Messages until one whose `event` is `name` (included).
    pub async fn until(&mut self, name: &str) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let m = self
                .next()
                .await
                .unwrap_or_else(|| panic!("closed before {name}: {out:?}"));
            let done = m["event"] == name;
            out.push(m);
            if done {
                return out;
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// Polls `f` until it is true, failing after `secs`.
pub async fn eventually<F: std::future::Future<Output = bool>>(
    secs: u64,
    what: &str,
    mut f: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The audit trail's entries of `kind`.
pub fn entries(gw: &Gw, kind: &str) -> Vec<pincer_core::audit::Entry> {
    pincer_runtime::open_audit(&gw.t.home)
        .expect("audit")
        .log(None, Some(kind))
        .expect("log")
}
