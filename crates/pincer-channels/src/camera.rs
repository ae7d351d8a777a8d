//! The camera channel: a board (a MaixCAM-style camera running its own
//! small script) connects over TCP and sends newline-delimited JSON
//! frames, each a base64 image and a little metadata; the picture goes to
//! the model as image content and the reply comes back as a JSON frame.
//!
//! # The wire
//!
//! One JSON object per line, each way. The board speaks first:
//!
//! ```text
//! → {"type":"hello","camera":"door","token":"<the shared secret>"}
//! ← {"type":"ready","camera":"door"}
//! → {"type":"frame","id":"42","mime":"image/jpeg","image":"<base64>","text":"who is at the door?","meta":{"lux":120}}
//! ← {"type":"reply","camera":"door","text":"A courier with a parcel."}
//! ← {"type":"error","id":"42","error":"…"}         (a frame refused; the connection goes on)
//! ```
//!
//! # Who may talk to the agent
//!
//! - The connection must present the secret in its first line, within
//!   [`HELLO_TIMEOUT`]; the secret is read from the environment variable
//!   `token_env` names (never from `config.toml`) and must be at least
//!   [`MIN_SECRET`] bytes. It is compared in constant time (the SHA-256 of
//!   both sides, every byte). A wrong or missing secret gets one error
//!   frame, the connection is closed, and `channel.refused` is recorded
//!   (throttled per peer address). Nothing reaches a session before it.
//! - The hello declares a camera id, which must be one of `cameras`: one
//!   session per id (`camera-<id>`), so the number of sessions is bounded by
//!   the config. A second connection under the same id takes over its
//!   replies.
//! - `bind` is loopback unless `allow_remote = true`: the secret travels
//!   unencrypted (no TLS here), so beyond loopback it protects only on a
//!   network you trust, and the start says so.
//! - Approvals cannot be answered from a camera: a gated call from a
//!   camera's turn is denied.
//!
//! # Bounds
//!
//! A line is read with a bounded reader: past `max_frame_bytes` the rest of
//! the line is discarded as it arrives (never buffered) and an error frame
//! answers it; a line that is not a frame gets an error frame too; the
//! connection survives both. Each connection is its own task with its own
//! timeouts ([`IDLE_TIMEOUT`] between frames, [`FRAME_TIMEOUT`] for one
//! frame once begun, [`WRITE_TIMEOUT`] per reply), so a client that
//! trickles bytes or never reads stalls only itself. At most
//! [`MAX_CONNECTIONS`] connections are open at once.

use crate::chat::{Accepted, ApprovalPrompt, Chat, ChatOptions, Inbound, Outbound};
use crate::config::CameraConfig;
use crate::http::Token;
use pincer_core::approvals::Approver;
use pincer_core::canonical::sha256_hex;
use pincer_core::message::Image;
use pincer_core::provider::BoxFuture;
use pincer_serve::{Deliver, Service, ServiceCtx, ServiceError};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

/// The hello must arrive within this long of the connection.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no byte for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// One frame, once its first byte arrived, must end within this long.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(60);
/// One outgoing frame must be taken by the client within this long.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections open at once, authenticated or not.
pub const MAX_CONNECTIONS: usize = 16;
/// The shortest secret accepted.
pub const MIN_SECRET: usize = 16;
/// The bound on the hello line.
const HELLO_BYTES: usize = 4096;
/// Frames waiting to be written to one client.
const OUT_QUEUE: usize = 16;
/// The bound on a frame's `text`, in bytes.
const TEXT_BYTES: usize = 4000;
/// The bound on a frame's `meta`, as JSON.
const META_BYTES: usize = 2048;

/// `[channels.camera]` plus the secret, as the binary read it.
#[derive(Debug, Clone)]
pub struct CameraService {
    pub config: CameraConfig,
    /// `None`: the variable `token_env` names is not set (the service
    /// fails, saying so, and is retried).
    pub token: Option<Token>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The live connection of each camera: (its number, its writer's queue).
type Routes = Mutex<HashMap<String, (u64, mpsc::Sender<String>)>>;

struct CamOut {
    routes: Arc<Routes>,
}

impl Outbound for CamOut {
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let frame = json!({"type": "reply", "camera": chat, "text": text}).to_string();
            let routes = lock(&self.routes);
            let (_, tx) = routes
                .get(chat)
                .ok_or_else(|| format!("camera {chat} is not connected"))?;
            tx.try_send(frame)
                .map_err(|_| format!("camera {chat} is not reading its replies"))
        })
    }

    fn ask<'a>(
        &'a self,
        _chat: &'a str,
        _prompt: &'a ApprovalPrompt,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async { Err("a camera cannot answer approvals".to_string()) })
    }

    fn settle<'a>(
        &'a self,
        _chat: &'a str,
        _message: &'a str,
        _text: &'a str,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn fetch_image<'a>(&'a self, _file: &'a str) -> BoxFuture<'a, Result<Image, String>> {
        Box::pin(async { Err("a camera sends its images inline".to_string()) })
    }
}

struct CamDeliver {
    chat: Arc<Chat>,
    out: Arc<CamOut>,
}

impl Deliver for CamDeliver {
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>> {
        self.out.send(chat, text)
    }

    fn approver(&self, chat: &str) -> Arc<dyn Approver> {
        self.chat.approver(chat)
    }
}

/// What one connection needs.
struct Conns {
    cfg: CameraConfig,
    secret: String,
    chat: Arc<Chat>,
    routes: Arc<Routes>,
    vision: bool,
    next: AtomicU64,
}

impl Service for CameraService {
    fn name(&self) -> &str {
        "camera"
    }

    fn run(&self, ctx: ServiceCtx) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(self.serve(ctx))
    }
}

impl CameraService {
    async fn serve(&self, ctx: ServiceCtx) -> Result<(), ServiceError> {
        let cfg = &self.config;
        let secret = self.token.clone().ok_or_else(|| {
            ServiceError::new(format!(
                "${} is not set: it must hold the cameras' shared secret",
                cfg.token_env
            ))
        })?;
        if secret.expose().len() < MIN_SECRET {
            return Err(ServiceError::new(format!(
                "${} holds {} bytes; the cameras' shared secret must be at least {MIN_SECRET}",
                cfg.token_env,
                secret.expose().len()
            )));
        }
        let listener = TcpListener::bind(cfg.bind)
            .await
            .map_err(|e| ServiceError::new(format!("cannot listen on {}: {e}", cfg.bind)))?;
        let addr = listener.local_addr().unwrap_or(cfg.bind);
        let routes: Arc<Routes> = Arc::default();
        let out = Arc::new(CamOut {
            routes: routes.clone(),
        });
        let chat = Arc::new(Chat::new(
            ChatOptions {
                channel: "camera",
                allow_users: cfg.cameras.iter().cloned().collect(),
                approvers: Default::default(),
                on_settled: Arc::new(|_: i64| {}),
            },
            ctx.runtime.clone(),
            out.clone(),
            ctx.turns.clone(),
            ctx.shutdown.clone(),
        ));
        ctx.hub.register(
            "camera",
            Arc::new(CamDeliver {
                chat: chat.clone(),
                out,
            }),
        );
        let mut detail = format!("listening on {addr} for {}", cfg.cameras.join(", "));
        if !addr.ip().is_loopback() {
            tracing::warn!(%addr, "camera: listening beyond loopback; the secret travels unencrypted");
            detail.push_str("; beyond loopback: the secret travels unencrypted");
        }
        if !ctx.runtime.vision() {
            detail.push_str("; the model is not configured for images, so frames are refused");
        }
        ctx.status.running(detail);
        let conns = Arc::new(Conns {
            cfg: cfg.clone(),
            secret: secret.expose().to_string(),
            chat: chat.clone(),
            routes,
            vision: ctx.runtime.vision(),
            next: AtomicU64::new(0),
        });
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let mut tasks = JoinSet::new();
        let mut shutdown = ctx.shutdown.clone();
        loop {
            tokio::select! {
                got = listener.accept() => { match got {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        match slots.clone().try_acquire_owned() {
                            Ok(permit) => {
                                let conns = conns.clone();
                                tasks.spawn(async move {
                                    conns.connection(stream, peer).await;
                                    drop(permit);
                                });
                            }
                            Err(_) => {
                                tasks.spawn(refuse_busy(stream));
                            }
                        }
                    }
                    Err(e) => {
                        // Out of descriptors and the like: pause, go on.
                        tracing::warn!(error = %e, "camera: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                } }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = shutdown.wait() => break,
            }
        }
        drop(listener);
        // Turns in flight finish and their replies are queued; then the
        // connections go.
        chat.drain().await;
        let deadline = tokio::time::sleep(WRITE_TIMEOUT);
        tokio::pin!(deadline);
        lock(&conns.routes).clear();
        tasks.abort_all();
        loop {
            tokio::select! {
                n = tasks.join_next() => {
                    if n.is_none() {
                        break;
                    }
                }
                _ = &mut deadline => break,
            }
        }
        ctx.hub.unregister("camera");
        Ok(())
    }
}

async fn refuse_busy(stream: TcpStream) {
    let (_, mut wr) = stream.into_split();
    let line = error_frame(
        None,
        &format!("too many connections (at most {MAX_CONNECTIONS})"),
    );
    let _ = tokio::time::timeout(WRITE_TIMEOUT, wr.write_all(line.as_bytes())).await;
}

fn error_frame(id: Option<&str>, error: &str) -> String {
    let mut v = json!({"type": "error", "error": error});
    if let Some(id) = id {
        v["id"] = Value::String(id.to_string());
    }
    format!("{v}\n")
}

/// Writes the queued frames, each within [`WRITE_TIMEOUT`].
async fn write_loop(mut wr: OwnedWriteHalf, mut rx: mpsc::Receiver<String>) {
    while let Some(mut line) = rx.recv().await {
        if !line.ends_with('\n') {
            line.push('\n');
        }
        match tokio::time::timeout(WRITE_TIMEOUT, wr.write_all(line.as_bytes())).await {
            Ok(Ok(())) => {}
            _ => return,
        }
    }
    let _ = tokio::time::timeout(WRITE_TIMEOUT, wr.shutdown()).await;
}

/// One line, read without ever holding more than `max` bytes of it.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// The line, without its newline.
    Whole(Vec<u8>),
    /// Longer than `max`: this many bytes, discarded.
    TooLong(usize),
    /// The stream ended (a partial last line is dropped).
    End,
}

async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut seen = 0usize;
    let mut over = false;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(Line::End);
        }
        let newline = avail.iter().position(|b| *b == b'\n');
        let chunk = &avail[..newline.unwrap_or(avail.len())];
        seen += chunk.len();
        if !over && buf.len() + chunk.len() > max {
            over = true;
            buf = Vec::new();
        }
        if !over {
            buf.extend_from_slice(chunk);
        }
        let used = newline.map_or(avail.len(), |i| i + 1);
        r.consume(used);
        if newline.is_some() {
            return Ok(if over {
                Line::TooLong(seen)
            } else {
                Line::Whole(buf)
            });
        }
    }
}

/// Waits up to `idle` for a line to begin, then `frame` for all of it.
async fn next_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
    idle: Duration,
    frame: Duration,
) -> Result<Line, String> {
    match tokio::time::timeout(idle, r.fill_buf()).await {
        Err(_) => return Err(format!("no frame for {} s", idle.as_secs())),
        Ok(Err(e)) => return Err(e.to_string()),
        Ok(Ok([])) => return Ok(Line::End),
        Ok(Ok(_)) => {}
    }
    match tokio::time::timeout(frame, read_line(r, max)).await {
        Err(_) => Err(format!(
            "a frame took longer than {} s to arrive",
            frame.as_secs()
        )),
        Ok(r) => r.map_err(|e| e.to_string()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    #[serde(rename = "type")]
    kind: String,
    camera: String,
    token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Frame {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    mime: String,
    image: String,
    text: Option<String>,
    meta: Option<serde_json::Map<String, Value>>,
}

/// Equal in constant time, whatever the lengths.
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (sha256_hex(a.as_bytes()), sha256_hex(b.as_bytes()));
    a.bytes()
        .zip(b.bytes())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

impl Conns {
    async fn connection(&self, stream: TcpStream, peer: SocketAddr) {
        let (rd, wr) = stream.into_split();
        let (tx, rx) = mpsc::channel::<String>(OUT_QUEUE);
        let writer = tokio::spawn(write_loop(wr, rx));
        let mut r = BufReader::with_capacity(64 * 1024, rd);
        if let Some(camera) = self.hello(&mut r, &tx, peer).await {
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            lock(&self.routes).insert(camera.clone(), (n, tx.clone()));
            let _ = tx.try_send(json!({"type": "ready", "camera": camera}).to_string());
            tracing::info!(%peer, camera, "camera: connected");
            self.frames(&mut r, &tx, &camera).await;
            let mut routes = lock(&self.routes);
            if routes.get(&camera).is_some_and(|(m, _)| *m == n) {
                routes.remove(&camera);
            }
        }
        drop(tx);
        let _ = writer.await;
    }

    /// The camera id, once the hello presented the secret.
    async fn hello(
        &self,
        r: &mut BufReader<OwnedReadHalf>,
        tx: &mpsc::Sender<String>,
        peer: SocketAddr,
    ) -> Option<String> {
        let ip = peer.ip().to_string();
        let refuse = |reason: &str| {
            self.chat.refuse(&ip, &ip, "connection", reason);
            let _ = tx.try_send(error_frame(None, reason));
        };
        let line = match next_line(r, HELLO_BYTES, HELLO_TIMEOUT, HELLO_TIMEOUT).await {
            Ok(Line::Whole(l)) => l,
            Ok(Line::End) => return None,
            Ok(Line::TooLong(_)) => {
                refuse("unauthorized: the first line must be a hello with the secret");
                return None;
            }
            Err(e) => {
                refuse(&format!("unauthorized: no hello ({e})"));
                return None;
            }
        };
        let hello: Hello = match serde_json::from_slice(&line) {
            Ok(h) => h,
            Err(_) => {
                refuse("unauthorized: the first line must be a hello with the secret");
                return None;
            }
        };
        if hello.kind != "hello" || !same_secret(&hello.token, &self.secret) {
            refuse("unauthorized: wrong or missing secret");
            return None;
        }
        if !self.cfg.cameras.contains(&hello.camera) {
            let id: String = hello.camera.chars().take(32).collect();
            refuse(&format!(
                "unknown camera `{}`: not in [channels.camera] cameras",
                id.escape_debug()
            ));
            return None;
        }
        Some(hello.camera)
    }

    async fn frames(
        &self,
        r: &mut BufReader<OwnedReadHalf>,
        tx: &mpsc::Sender<String>,
        camera: &str,
    ) {
        let max = self.cfg.max_frame_bytes;
        loop {
            let line = match next_line(r, max, IDLE_TIMEOUT, FRAME_TIMEOUT).await {
                Ok(Line::Whole(l)) => l,
                Ok(Line::TooLong(n)) => {
                    let _ = tx.try_send(error_frame(
                        None,
                        &format!(
                            "frame too large: {n} bytes or more, over max_frame_bytes {max}; dropped"
                        ),
                    ));
                    continue;
                }
                Ok(Line::End) => return,
                Err(e) => {
                    let _ = tx.try_send(error_frame(None, &format!("{e}; closing")));
                    return;
                }
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let (id, msg) = match self.frame(&line, camera) {
                Ok(m) => m,
                Err((id, e)) => {
                    let _ = tx.try_send(error_frame(id.as_deref(), &e));
                    continue;
                }
            };
            let said = match self.chat.accept(msg) {
                Accepted::Queued | Accepted::Busy => None,
                Accepted::Refused => Some("this camera may not chat"),
                Accepted::Closed => Some("pincer is stopping; send it again later"),
            };
            if let Some(e) = said {
                let _ = tx.try_send(error_frame(id.as_deref(), e));
            }
        }
    }

    /// A frame line as a message, or (its id, why not).
    fn frame(
        &self,
        line: &[u8],
        camera: &str,
    ) -> Result<(Option<String>, Inbound), (Option<String>, String)> {
        let f: Frame = serde_json::from_slice(line)
            .map_err(|e| (None, format!("not a frame: {e}; dropped")))?;
        let id = f.id.filter(|i| i.len() <= 64);
        let bad = |e: String| (id.clone(), e);
        if f.kind != "frame" {
            return Err(bad(format!(
                "type is `{}`; expected `frame`",
                f.kind.chars().take(32).collect::<String>().escape_debug()
            )));
        }
        if !self.vision {
            return Err(bad("this pincer's model is not configured for images ([providers.NAME] vision = true); dropped".into()));
        }
        let image = Image {
            media_type: f.mime,
            data: f.image,
        };
        image
            .validate("image")
            .map_err(|e| bad(format!("{e}; dropped")))?;
        let text = f.text.unwrap_or_default();
        if text.len() > TEXT_BYTES {
            return Err(bad(format!("text is over {TEXT_BYTES} bytes; dropped")));
        }
        let mut body = if text.trim().is_empty() {
            format!("A frame from camera {camera}.")
        } else {
            text
        };
        if let Some(meta) = f.meta.filter(|m| !m.is_empty()) {
            let meta = Value::Object(meta).to_string();
            if meta.len() > META_BYTES {
                return Err(bad(format!("meta is over {META_BYTES} bytes; dropped")));
            }
            body.push_str(&format!("\n(camera {camera} metadata: {meta})"));
        }
        let msg = Inbound {
            chat: camera.to_string(),
            user: camera.to_string(),
            text: body,
            photo: None,
            images: vec![image],
            token: None,
        };
        Ok((id, msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize, cap: usize) -> Vec<Line> {
        let mut r = BufReader::with_capacity(cap, input);
        let mut out = Vec::new();
        loop {
            let l = read_line(&mut r, max).await.expect("read");
            let end = l == Line::End;
            out.push(l);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn a_long_line_is_counted_and_dropped_and_the_next_is_whole() {
        let mut input = vec![b'x'; 10_000];
        input.extend_from_slice(b"\nok\n\npartial");
        for cap in [1, 7, 64, 100_000] {
            assert_eq!(
                lines(&input, 100, cap).await,
                [
                    Line::TooLong(10_000),
                    Line::Whole(b"ok".to_vec()),
                    Line::Whole(Vec::new()),
                    Line::End
                ],
                "buffer {cap}"
            );
        }
        // Exactly at the bound is whole.
        assert_eq!(
            lines(b"abcd\n", 4, 2).await[0],
            Line::Whole(b"abcd".to_vec())
        );
        assert_eq!(lines(b"abcde\n", 4, 2).await[0], Line::TooLong(5));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("0123456789abcdef", "0123456789abcdef"));
        assert!(!same_secret("0123456789abcdef", "0123456789abcdeF"));
        assert!(!same_secret("0123456789abcdef", "0123456789abcde"));
        assert!(!same_secret("", "0123456789abcdef"));
    }
}
