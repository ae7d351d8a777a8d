//! A Discord server in the test process, speaking the real wire formats
//! on loopback: the REST routes pincer uses (plain HTTP/1.1, one
//! connection per request, `Authorization: Bot <token>` checked, 429 with
//! a JSON `retry_after` and a `Retry-After` header on demand, a CDN path
//! for attachments) and the gateway (a WebSocket carrying `{op, d, s, t}`
//! JSON: Hello, Identify → READY, Heartbeat → ACK, Dispatch, Resume →
//! replay and RESUMED, Reconnect, close codes). It records every call,
//! identify, resume and heartbeat.
//!
//! On a resume it replays every dispatch from the client's `seq` on —
//! the one at `seq` included, which Discord itself would not send again —
//! so a client that hands on a dispatch twice is caught.

use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tungstenite::Message as Ws;
use tungstenite::protocol::CloseFrame;
use tungstenite::protocol::frame::coding::CloseCode;

pub const TOKEN: &str = "MTIzNDU2.discord-test-token-SECRET";
pub const BOT_ID: &str = "4242424242424242";
/// The heartbeat interval the gateway asks for, in ms: short, so a dead
/// connection is found in seconds, and long enough that a loaded machine
/// does not miss an ACK of a live one.
pub const HEARTBEAT_MS: u64 = 1000;

/// What the next `POST /channels/{id}/messages` gets.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429, `retry_after` in the body (seconds, a float).
    RateLimit(f64),
}

#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub body: Value,
    pub auth: Option<String>,
    pub at: Instant,
    /// Answered with 429.
    pub limited: bool,
}

#[derive(Default)]
struct St {
    calls: Vec<Call>,
    faults: VecDeque<Fault>,
    files: HashMap<String, Vec<u8>>,
    next_id: u64,
    /// Dispatches waiting for a ready session.
    outbox: VecDeque<(String, Value)>,
    /// Frames sent as they are (malformed on purpose).
    raw: VecDeque<Ws>,
    /// Every dispatch sent in the session, with its sequence.
    log: Vec<(u64, String, Value)>,
    seq: u64,
    session: Option<String>,
    /// The connection allowed to send (the newest).
    live: u64,
    connections: u64,
    ready: bool,
    identifies: Vec<Value>,
    identify_at: Vec<Instant>,
    resumes: Vec<Value>,
    resume_at: Vec<Instant>,
    heartbeats: Vec<Value>,
    /// Send op 7 on the live connection.
    reconnect: bool,
    /// The live connection's heartbeats go unanswered.
    no_acks: bool,
    /// Identify is answered with close 4004.
    bad_auth: bool,
}

#[derive(Clone)]
pub struct FakeDiscord {
    /// `api_base` for pincer.
    pub api: String,
    st: Arc<Mutex<St>>,
}

impl FakeDiscord {
    pub fn start() -> FakeDiscord {
        let rest = TcpListener::bind("127.0.0.1:0").expect("bind");
        let gw = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", rest.local_addr().expect("addr"));
        let gw_url = format!("ws://{}", gw.local_addr().expect("addr"));
        let st: Arc<Mutex<St>> = Arc::default();
        let s2 = st.clone();
        std::thread::spawn(move || {
            for conn in rest.incoming() {
                let Ok(conn) = conn else { continue };
                let (st, gw_url) = (s2.clone(), gw_url.clone());
                std::thread::spawn(move || {
                    let _ = http(conn, &st, &gw_url);
                });
            }
        });
        let s3 = st.clone();
        std::thread::spawn(move || {
            for conn in gw.incoming() {
                let Ok(conn) = conn else { continue };
                let st = s3.clone();
                std::thread::spawn(move || gateway(conn, &st));
            }
        });
        FakeDiscord {
            api: format!("{base}/api/v10"),
            st,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut St) -> R) -> R {
        f(&mut self.st.lock().unwrap())
    }

    fn next_id(&self) -> String {
        self.with(|s| {
            s.next_id += 1;
            format!("{}", 700_000_000_000_000_000u64 + s.next_id)
        })
    }

    pub fn dispatch(&self, t: &str, d: Value) {
        self.with(|s| s.outbox.push_back((t.to_string(), d)));
    }

    /// A message from `user` in the channel `channel`; returns its id.
    pub fn message(&self, channel: &str, user: &str, text: &str) -> String {
        self.message_full(channel, user, false, text, json!([]))
    }

    pub fn message_full(
        &self,
        channel: &str,
        user: &str,
        bot: bool,
        text: &str,
        attachments: Value,
    ) -> String {
        let id = self.next_id();
        self.dispatch(
            "MESSAGE_CREATE",
            json!({
                "id": id, "channel_id": channel, "type": 0,
                "author": {"id": user, "username": format!("u{user}"), "bot": bot},
                "content": text, "attachments": attachments,
                "timestamp": "2026-12-02T00:00:00+00:00", "mentions": [],
            }),
        );
        id
    }

    /// An image attachment served at the CDN path: `bytes` are what is
    /// served, `declared` the size the message claims.
    pub fn attachment(&self, bytes: Vec<u8>, declared: usize, content_type: &str) -> Value {
        let name = format!("a{}.png", self.next_id());
        let url = format!("{}/cdn/{name}", self.api.trim_end_matches("/api/v10"));
        self.with(|s| s.files.insert(name.clone(), bytes));
        json!({"id": "1", "filename": name, "size": declared, "url": url, "proxy_url": url, "content_type": content_type})
    }

    /// A press of the button `custom_id` by `user` under a message in
    /// `channel`, as a guild member.
    pub fn press(&self, channel: &str, user: &str, custom_id: &str) {
        let n = self.next_id();
        self.dispatch(
            "INTERACTION_CREATE",
            json!({
                "id": n, "application_id": BOT_ID, "type": 3,
                "token": format!("aW50ZXJhY3Rpb24.{n}"), "version": 1,
                "channel_id": channel, "guild_id": "55",
                "member": {"user": {"id": user, "username": "x"}, "roles": []},
                "data": {"custom_id": custom_id, "component_type": 2},
                "message": {"id": "9", "channel_id": channel},
            }),
        );
    }

    pub fn raw(&self, frame: Ws) {
        self.with(|s| s.raw.push_back(frame));
    }

    pub fn fault(&self, f: Fault) {
        self.with(|s| s.faults.push_back(f));
    }

    pub fn reconnect(&self) {
        self.with(|s| s.reconnect = true);
    }

    /// Forgets the session: the next resume gets Invalid Session (op 9,
    /// not resumable).
    pub fn expire_session(&self) {
        self.with(|s| s.session = None);
    }

    pub fn stop_acks(&self) {
        self.with(|s| s.no_acks = true);
    }

    pub fn bad_auth(&self) {
        self.with(|s| s.bad_auth = true);
    }

    pub fn calls(&self, method: &str, path_part: &str) -> Vec<Call> {
        self.with(|s| {
            s.calls
                .iter()
                .filter(|c| c.method == method && c.path.contains(path_part))
                .cloned()
                .collect()
        })
    }

    /// The contents posted to `channel` (a post answered with 429 was
    /// not sent).
    pub fn sent_to(&self, channel: &str) -> Vec<String> {
        self.calls("POST", &format!("/channels/{channel}/messages"))
            .into_iter()
            .filter(|c| !c.limited)
            .filter_map(|c| c.body["content"].as_str().map(str::to_string))
            .collect()
    }

    pub fn identifies(&self) -> Vec<Value> {
        self.with(|s| s.identifies.clone())
    }

    pub fn identify_times(&self) -> Vec<Instant> {
        self.with(|s| s.identify_at.clone())
    }

    pub fn resume_times(&self) -> Vec<Instant> {
        self.with(|s| s.resume_at.clone())
    }

    pub fn resumes(&self) -> Vec<Value> {
        self.with(|s| s.resumes.clone())
    }

    pub fn heartbeats(&self) -> Vec<Value> {
        self.with(|s| s.heartbeats.clone())
    }

    pub fn connections(&self) -> u64 {
        self.with(|s| s.connections)
    }

    /// True when a session is ready and nothing waits to be sent.
    pub fn idle(&self) -> bool {
        self.with(|s| s.ready && s.outbox.is_empty() && s.raw.is_empty() && !s.reconnect)
    }

    /// Waits until `f` holds, failing with `what` after `secs`.
    pub fn wait(&self, secs: u64, what: &str, f: impl Fn(&FakeDiscord) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !f(self) {
            if Instant::now() >= deadline {
                let calls: Vec<String> = self
                    .with(|s| s.calls.clone())
                    .iter()
                    .map(|c| format!("{} {} {}", c.method, c.path, c.body))
                    .collect();
                panic!("timed out waiting for {what}; calls so far: {calls:#?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn respond(conn: &mut TcpStream, status: u16, headers: &str, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    write!(
        conn,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    conn.flush()
}

fn http(mut conn: TcpStream, st: &Arc<Mutex<St>>, gw_url: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let path = words.next().unwrap_or("").to_string();
    let (mut len, mut auth) = (0usize, None);
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        if h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
            if k.eq_ignore_ascii_case("authorization") {
                auth = Some(v.trim().to_string());
            }
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut s = st.lock().unwrap();
    s.calls.push(Call {
        method: method.clone(),
        path: path.clone(),
        body: body.clone(),
        auth: auth.clone(),
        at: Instant::now(),
        limited: false,
    });
    if let Some(file) = path.strip_prefix("/cdn/") {
        let bytes = s.files.get(file).cloned();
        drop(s);
        return match bytes {
            Some(b) => {
                write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n"
                )?;
                conn.write_all(&b)?;
                conn.flush()
            }
            None => respond(&mut conn, 404, "", &json!({"message": "Not Found"})),
        };
    }
    if auth.as_deref() != Some(&format!("Bot {TOKEN}")) {
        drop(s);
        return respond(
            &mut conn,
            401,
            "",
            &json!({"message": "401: Unauthorized", "code": 0}),
        );
    }
    let Some(route) = path.strip_prefix("/api/v10") else {
        drop(s);
        return respond(&mut conn, 404, "", &json!({"message": "404: Not Found"}));
    };
    let parts: Vec<&str> = route.trim_start_matches('/').split('/').collect();
    match (method.as_str(), parts.as_slice()) {
        ("GET", ["gateway", "bot"]) => {
            drop(s);
            respond(
                &mut conn,
                200,
                "",
                &json!({"url": gw_url, "shards": 1, "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}}),
            )
        }
        ("POST", ["channels", channel, "messages"]) => {
            if let Some(Fault::RateLimit(secs)) = s.faults.pop_front() {
                if let Some(c) = s.calls.last_mut() {
                    c.limited = true;
                }
                drop(s);
                return respond(
                    &mut conn,
                    429,
                    &format!(
                        "Retry-After: {}\r\nX-RateLimit-Scope: user\r\n",
                        secs.ceil()
                    ),
                    &json!({"message": "You are being rate limited.", "retry_after": secs, "global": false}),
                );
            }
            s.next_id += 1;
            let id = format!("{}", 800_000_000_000_000_000u64 + s.next_id);
            let channel = channel.to_string();
            drop(s);
            respond(
                &mut conn,
                200,
                "",
                &json!({"id": id, "channel_id": channel, "content": body["content"], "author": {"id": BOT_ID, "bot": true}}),
            )
        }
        ("PATCH", ["channels", channel, "messages", id]) => {
            let (channel, id) = (channel.to_string(), id.to_string());
            drop(s);
            respond(
                &mut conn,
                200,
                "",
                &json!({"id": id, "channel_id": channel, "content": body["content"]}),
            )
        }
        ("POST", ["interactions", _, _, "callback"]) => {
            drop(s);
            write!(conn, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")?;
            conn.flush()
        }
        _ => {
            drop(s);
            respond(&mut conn, 404, "", &json!({"message": "404: Not Found"}))
        }
    }
}

fn frame(op: u8, d: Value) -> Ws {
    Ws::text(json!({"op": op, "d": d, "s": null, "t": null}).to_string())
}

fn dispatch(s: u64, t: &str, d: &Value) -> Ws {
    Ws::text(json!({"op": 0, "d": d, "s": s, "t": t}).to_string())
}

/// One gateway connection, until the socket fails.
fn gateway(conn: TcpStream, st: &Arc<Mutex<St>>) {
    conn.set_read_timeout(Some(Duration::from_millis(10)))
        .expect("timeout");
    let Ok(mut ws) = tungstenite::accept(conn) else {
        return;
    };
    let me = {
        let mut s = st.lock().unwrap();
        s.connections += 1;
        s.live = s.connections;
        s.ready = false;
        // A new connection answers heartbeats again.
        s.no_acks = false;
        s.connections
    };
    if ws
        .send(frame(10, json!({"heartbeat_interval": HEARTBEAT_MS})))
        .is_err()
    {
        return;
    }
    loop {
        // What the test asked to send.
        let out: Vec<Ws> = {
            let mut s = st.lock().unwrap();
            let mut out = Vec::new();
            if s.live == me && s.ready {
                while let Some(f) = s.raw.pop_front() {
                    out.push(f);
                }
                while let Some((t, d)) = s.outbox.pop_front() {
                    s.seq += 1;
                    let n = s.seq;
                    out.push(dispatch(n, &t, &d));
                    s.log.push((n, t, d));
                }
                if s.reconnect {
                    s.reconnect = false;
                    s.ready = false;
                    out.push(frame(7, Value::Null));
                }
            }
            out
        };
        for f in out {
            if ws.send(f).is_err() {
                return;
            }
        }
        let msg = match ws.read() {
            Ok(m) => m,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => return,
        };
        let Ws::Text(text) = msg else { continue };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            let _ = ws.close(Some(CloseFrame {
                code: CloseCode::from(4002),
                reason: "decode error".into(),
            }));
            continue;
        };
        let mut s = st.lock().unwrap();
        let reply: Vec<Ws> = match v["op"].as_u64() {
            Some(1) => {
                s.heartbeats.push(v["d"].clone());
                if s.no_acks && s.live == me {
                    vec![]
                } else {
                    vec![frame(11, Value::Null)]
                }
            }
            Some(2) => {
                s.identifies.push(v["d"].clone());
                s.identify_at.push(Instant::now());
                if s.bad_auth || v["d"]["token"] != TOKEN {
                    drop(s);
                    let _ = ws.close(Some(CloseFrame {
                        code: CloseCode::from(4004),
                        reason: "Authentication failed.".into(),
                    }));
                    let _ = ws.flush();
                    continue;
                }
                let n = s.identifies.len();
                s.session = Some(format!("sess-{n}"));
                s.log.clear();
                s.seq = 1;
                s.ready = true;
                let resume_url = format!("ws://{}", ws.get_ref().local_addr().expect("addr"));
                vec![dispatch(
                    1,
                    "READY",
                    &json!({
                        "v": 10, "session_id": format!("sess-{n}"),
                        "resume_gateway_url": resume_url,
                        "user": {"id": BOT_ID, "username": "pincer-test", "bot": true},
                        "guilds": [], "application": {"id": BOT_ID, "flags": 0},
                    }),
                )]
            }
            Some(6) => {
                s.resumes.push(v["d"].clone());
                s.resume_at.push(Instant::now());
                let good = v["d"]["token"] == TOKEN
                    && s.session.is_some()
                    && v["d"]["session_id"].as_str() == s.session.as_deref();
                if good {
                    let from = v["d"]["seq"].as_u64().unwrap_or(0);
                    let mut out: Vec<Ws> = s
                        .log
                        .iter()
                        .filter(|(n, _, _)| *n >= from)
                        .map(|(n, t, d)| dispatch(*n, t, d))
                        .collect();
                    s.seq += 1;
                    out.push(dispatch(s.seq, "RESUMED", &json!({})));
                    s.ready = true;
                    out
                } else {
                    vec![frame(9, json!(false))]
                }
            }
            _ => vec![],
        };
        drop(s);
        for f in reply {
            if ws.send(f).is_err() {
                return;
            }
        }
    }
}
