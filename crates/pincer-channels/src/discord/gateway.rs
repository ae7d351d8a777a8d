//! The Discord gateway: one WebSocket carrying JSON frames
//! `{"op", "d", "s", "t"}` (API v10, no compression), over the project's
//! own rustls set-up (`tokio-rustls` with the providers' `ClientConfig`).
//!
//! The life of a connection: the server says Hello (op 10) with a
//! `heartbeat_interval`; pincer heartbeats (op 1 with the last sequence
//! number, the first beat after a random part of the interval, as Discord
//! asks, so many clients restarting at once do not beat in step) and
//! Identifies (op 2, intents GUILD_MESSAGES, DIRECT_MESSAGES and
//! MESSAGE_CONTENT), or Resumes (op 6, the session id and the last
//! sequence) when it has a session. READY gives the session id and the
//! URL to resume at; every Dispatch (op 0) after it is handed on.
//!
//! What ends a connection, and what follows:
//!
//! - a heartbeat not acknowledged (op 11) before the next is due: the
//!   connection is a zombie; it is closed (with a code that keeps the
//!   session) and resumed;
//! - Reconnect (op 7), a dropped socket, a close with a code Discord
//!   allows to resume: resume at once;
//! - Invalid Session (op 9): resume when `d` is true, else a fresh
//!   Identify after 1–5 s (Discord's rule);
//! - close 4004 (authentication failed), 4010–4014 (shards, version,
//!   intents): fatal, returned to the supervisor, which retries with its
//!   backoff — never a tight loop;
//! - [`FLAPS`] connections in a row that end before READY or RESUMED:
//!   returned to the supervisor too;
//! - a connection that ends within [`STABLE`] of its start, ready or not,
//!   makes the next one wait longer (250 ms, doubling, at most
//!   [`MAX_PAUSE`]): a server that sends READY and closes at once, over and
//!   over, gets no hot loop of handshakes and Identifies (Discord resets a
//!   bot's token after 1 000 Identifies in a day).
//!
//! A frame that is not the gateway's JSON is logged and skipped; it never
//! ends the connection.

use crate::http::Token;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as Ws;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};

/// GUILD_MESSAGES (1 << 9) | DIRECT_MESSAGES (1 << 12) | MESSAGE_CONTENT
/// (1 << 15).
pub const INTENTS: u64 = (1 << 9) | (1 << 12) | (1 << 15);
/// Connections in a row that end before the session is ready, before the
/// gateway gives up to the supervisor's backoff.
pub const FLAPS: u32 = 3;
/// How long a connection must last before the next reconnect may be
/// immediate.
pub const STABLE: Duration = Duration::from_secs(30);
/// The longest pause between two short-lived connections.
pub const MAX_PAUSE: Duration = Duration::from_secs(60);
/// The largest frame or message accepted from the gateway.
pub const MAX_FRAME: usize = 4 << 20;
const CONNECT: Duration = Duration::from_secs(15);
/// How long the server may take to say Hello.
const HELLO: Duration = Duration::from_secs(20);

/// Why the gateway stopped for good (until the supervisor's next run).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatewayError {
    #[error(
        "Discord refused the bot token (gateway close 4004); check the variable token_env names"
    )]
    AuthenticationFailed,
    #[error("Discord closed the gateway with {code}: {why}")]
    Fatal { code: u16, why: &'static str },
    #[error("the Discord gateway keeps failing: {0}")]
    Unstable(String),
}

/// What the gateway tells its owner.
#[derive(Debug, Clone)]
pub enum Event {
    /// The session is ready (READY, or RESUMED after a resume).
    Ready {
        user_id: String,
        name: String,
        resumed: bool,
    },
    /// A dispatch other than READY and RESUMED.
    Dispatch { t: String, d: Value },
    /// The connection ended; the gateway connects again.
    Reconnecting { why: String, resume: bool },
}

#[derive(Deserialize)]
struct Frame {
    op: u8,
    #[serde(default)]
    d: Value,
    #[serde(default)]
    s: Option<u64>,
    #[serde(default)]
    t: Option<String>,
}

#[derive(Debug, Clone)]
struct Session {
    id: String,
    resume_url: String,
    user_id: String,
    name: String,
}

/// How one connection ended.
enum End {
    Shutdown,
    Again {
        why: String,
        resume: bool,
        wait: Duration,
    },
    Fatal(GatewayError),
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
type Socket = WebSocketStream<Box<dyn Io>>;

/// A gateway client; it keeps the session across reconnects.
pub struct Gateway {
    url: String,
    token: Token,
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    session: Option<Session>,
    seq: Option<u64>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("url", &self.url)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// A fraction in [0, 1) that differs between processes and calls (std's
/// hasher keys are random per process).
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// What a close code asks of the client.
fn on_close(code: u16) -> End {
    let again = |resume: bool| End::Again {
        why: format!("the gateway closed the connection ({code})"),
        resume,
        wait: Duration::ZERO,
    };
    let fatal = |why| End::Fatal(GatewayError::Fatal { code, why });
    match code {
        4004 => End::Fatal(GatewayError::AuthenticationFailed),
        4010 => fatal("invalid shard"),
        4011 => fatal("sharding required (the bot is in too many guilds for one connection)"),
        4012 => fatal("invalid API version"),
        4013 => fatal("invalid intents"),
        4014 => fatal(
            "disallowed intents: turn on the Message Content intent for the bot in the Discord developer portal",
        ),
        // Invalid sequence, session timed out: the session is gone.
        4007 | 4009 => again(false),
        // 1000/1001 from the server, 4000–4008: connect again and resume.
        _ => again(true),
    }
}

impl Gateway {
    /// `url` is the gateway's base URL (`wss://gateway.discord.gg`).
    pub fn new(url: &str, token: Token) -> Result<Gateway, String> {
        let tls = if url.starts_with("wss://") {
            let cfg = pincer_providers::tls_config("discord", "https://gateway.discord.gg")
                .map_err(|e| e.to_string())?;
            Some(Arc::new(cfg))
        } else {
            None
        };
        Ok(Gateway {
            url: url.trim_end_matches('/').to_string(),
            token,
            tls,
            session: None,
            seq: None,
        })
    }

    /// Runs connections until `shutdown` fires (`Ok`) or the gateway gives
    /// up (`Err`); `on` hears every event, in order.
    pub async fn run(
        &mut self,
        shutdown: &mut pincer_serve::Shutdown,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), GatewayError> {
        let mut flaps = 0u32;
        let mut quick = 0u32;
        loop {
            let mut ready = false;
            let started = Instant::now();
            let end = tokio::select! {
                e = self.connection(&mut ready, on) => e,
                _ = shutdown.wait() => End::Shutdown,
            };
            let (why, resume, wait) = match end {
                End::Shutdown => return Ok(()),
                End::Fatal(e) => return Err(e),
                End::Again { why, resume, wait } => (why, resume, wait),
            };
            flaps = if ready { 0 } else { flaps + 1 };
            quick = if ready && started.elapsed() >= STABLE {
                0
            } else {
                quick.saturating_add(1)
            };
            if flaps >= FLAPS {
                return Err(GatewayError::Unstable(why));
            }
            if !resume {
                self.session = None;
                self.seq = None;
            }
            tracing::info!(%why, resume, "discord: connecting again");
            on(Event::Reconnecting {
                why,
                resume: self.session.is_some(),
            });
            let pause = wait + backoff(quick);
            if !pause.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = shutdown.wait() => return Ok(()),
                }
            }
        }
    }

    async fn connect(&self, base: &str) -> Result<Socket, String> {
        let url = format!("{base}/?v=10&encoding=json");
        let parsed = reqwest::Url::parse(&url).map_err(|e| format!("`{base}`: {e}"))?;
        let host = parsed
            .host_str()
            .ok_or_else(|| format!("`{base}` names no host"))?
            .to_string();
        let tls = match parsed.scheme() {
            "wss" => true,
            "ws" => false,
            other => {
                return Err(format!(
                    "`{base}`: the gateway cannot be reached over {other}"
                ));
            }
        };
        let port = parsed.port().unwrap_or(if tls { 443 } else { 80 });
        let tcp = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port))
            .await
            .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn Io> = if tls {
            let config = match &self.tls {
                Some(c) => c.clone(),
                None => Arc::new(
                    pincer_providers::tls_config("discord", "https://gateway.discord.gg")
                        .map_err(|e| e.to_string())?,
                ),
            };
            let name = tokio_rustls::rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| format!("`{host}`: {e}"))?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS with {host}: {e}"))?;
            Box::new(stream)
        } else {
            Box::new(tcp)
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME))
            .max_frame_size(Some(MAX_FRAME));
        let (ws, _) = tokio_tungstenite::client_async_with_config(url, io, Some(config))
            .await
            .map_err(|e| format!("WebSocket handshake with {host}: {e}"))?;
        Ok(ws)
    }

    /// Closes with 4000, a code that keeps the session resumable (1000
    /// and 1001 would end it); a dead peer gets two seconds.
    async fn close(ws: &mut Socket, reason: &'static str) {
        let frame = CloseFrame {
            code: CloseCode::from(4000),
            reason: reason.into(),
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), ws.close(Some(frame))).await;
    }

    async fn send(ws: &mut Socket, v: Value) -> Result<(), String> {
        ws.send(Ws::text(v.to_string()))
            .await
            .map_err(|e| format!("cannot send to the gateway: {e}"))
    }

    /// One connection, from connect to its end.
    async fn connection(&mut self, ready: &mut bool, on: &mut (dyn FnMut(Event) + Send)) -> End {
        let lost = |why: String| End::Again {
            why,
            resume: true,
            wait: Duration::ZERO,
        };
        let base = self
            .session
            .as_ref()
            .map_or(self.url.clone(), |s| s.resume_url.clone());
        let mut ws = match tokio::time::timeout(CONNECT, self.connect(&base)).await {
            Ok(Ok(ws)) => ws,
            Ok(Err(e)) => return lost(e),
            Err(_) => return lost(format!("no connection to {base} within {CONNECT:?}")),
        };
        // Hello first.
        let interval = match tokio::time::timeout(HELLO, Self::hello(&mut ws)).await {
            Ok(Ok(i)) => i,
            Ok(Err(end)) => return end,
            Err(_) => return lost(format!("no Hello from the gateway within {HELLO:?}")),
        };
        let hello = match &self.session {
            Some(s) => json!({"op": 6, "d": {
                "token": self.token.expose(), "session_id": s.id, "seq": self.seq,
            }}),
            None => json!({"op": 2, "d": {
                "token": self.token.expose(),
                "intents": INTENTS,
                "properties": {"os": std::env::consts::OS, "browser": "pincer", "device": "pincer"},
            }}),
        };
        if let Err(e) = Self::send(&mut ws, hello).await {
            return lost(e);
        }
        let mut next_beat = Instant::now() + interval.mul_f64(jitter());
        let mut acked = true;
        loop {
            let msg = tokio::select! {
                m = ws.next() => m,
                _ = tokio::time::sleep_until(next_beat) => {
                    if !acked {
                        // A zombie: close without ending the session.
                        Self::close(&mut ws, "no heartbeat ACK").await;
                        return lost("no heartbeat ACK from the gateway: the connection is dead".into());
                    }
                    if let Err(e) = Self::send(&mut ws, json!({"op": 1, "d": self.seq})).await {
                        return lost(e);
                    }
                    acked = false;
                    // After a stall, the next beat is still at least half
                    // an interval away: beats never bunch up, which would
                    // call a live connection dead before its ACK came.
                    next_beat = (next_beat + interval).max(Instant::now() + interval / 2);
                    continue;
                }
            };
            let text = match msg {
                None => return lost("the gateway connection ended".into()),
                Some(Err(e)) => return lost(format!("the gateway connection failed: {e}")),
                Some(Ok(Ws::Text(t))) => t,
                Some(Ok(Ws::Close(frame))) => {
                    return match frame {
                        Some(f) => on_close(u16::from(f.code)),
                        None => lost("the gateway closed the connection".into()),
                    };
                }
                Some(Ok(Ws::Binary(_))) => {
                    tracing::warn!(
                        "discord: a binary gateway frame (pincer asks for JSON); skipped"
                    );
                    continue;
                }
                Some(Ok(_)) => continue,
            };
            let frame: Frame = match serde_json::from_str(&text) {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(error = %e, "discord: a gateway frame that is not the gateway's JSON; skipped");
                    continue;
                }
            };
            match frame.op {
                0 => {
                    if let Some(end) = self.dispatch(frame, ready, on) {
                        return end;
                    }
                }
                1 => {
                    if let Err(e) = Self::send(&mut ws, json!({"op": 1, "d": self.seq})).await {
                        return lost(e);
                    }
                }
                7 => {
                    Self::close(&mut ws, "reconnect").await;
                    return lost("the gateway asked for a reconnect (op 7)".into());
                }
                9 => {
                    let resume = frame.d.as_bool() == Some(true) && self.session.is_some();
                    Self::close(&mut ws, "invalid session").await;
                    return End::Again {
                        why: "the gateway invalidated the session (op 9)".into(),
                        resume,
                        wait: if resume {
                            Duration::ZERO
                        } else {
                            Duration::from_secs(1).mul_f64(1.0 + 4.0 * jitter())
                        },
                    };
                }
                11 => acked = true,
                10 => {}
                op => tracing::debug!(op, "discord: a gateway opcode pincer does not use"),
            }
        }
    }

    async fn hello(ws: &mut Socket) -> Result<Duration, End> {
        loop {
            match ws.next().await {
                Some(Ok(Ws::Text(t))) => {
                    let Ok(f) = serde_json::from_str::<Frame>(&t) else {
                        tracing::warn!("discord: a frame before Hello that is not JSON; skipped");
                        continue;
                    };
                    if f.op != 10 {
                        continue;
                    }
                    let ms = f.d["heartbeat_interval"].as_u64().unwrap_or(41_250);
                    return Ok(Duration::from_millis(ms.clamp(50, 120_000)));
                }
                Some(Ok(Ws::Close(Some(f)))) => return Err(on_close(u16::from(f.code))),
                Some(Ok(_)) => continue,
                None | Some(Err(_)) => {
                    return Err(End::Again {
                        why: "the gateway connection ended before Hello".into(),
                        resume: true,
                        wait: Duration::ZERO,
                    });
                }
            }
        }
    }

    /// A Dispatch: the sequence moves, READY and RESUMED make the session
    /// ready, the rest goes to `on`. A frame replayed at or below the
    /// sequence already seen is not handed on twice.
    fn dispatch(
        &mut self,
        frame: Frame,
        ready: &mut bool,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Option<End> {
        let t = frame.t.unwrap_or_default();
        if t == "READY" {
            #[derive(Deserialize)]
            struct User {
                id: String,
                #[serde(default)]
                username: String,
            }
            #[derive(Deserialize)]
            struct Ready {
                session_id: String,
                resume_gateway_url: String,
                user: User,
            }
            let r: Ready = match serde_json::from_value(frame.d) {
                Ok(r) => r,
                Err(e) => {
                    return Some(End::Again {
                        why: format!("a READY pincer cannot read: {e}"),
                        resume: false,
                        wait: Duration::from_secs(1),
                    });
                }
            };
            self.seq = frame.s;
            let mut resume_url = r.resume_gateway_url.trim_end_matches('/').to_string();
            if self.url.starts_with("wss://") && !resume_url.starts_with("wss://") {
                // No resume (token included) in the clear after a TLS start.
                tracing::warn!(%resume_url, "discord: a resume URL without TLS; resuming at the gateway URL instead");
                resume_url = self.url.clone();
            }
            self.session = Some(Session {
                id: r.session_id,
                resume_url,
                user_id: r.user.id,
                name: r.user.username,
            });
            *ready = true;
            if let Some(s) = &self.session {
                on(Event::Ready {
                    user_id: s.user_id.clone(),
                    name: s.name.clone(),
                    resumed: false,
                });
            }
            return None;
        }
        if let Some(s) = frame.s {
            if self.seq.is_some_and(|seen| s <= seen) {
                tracing::debug!(seq = s, "discord: a dispatch seen before; skipped");
                return None;
            }
            self.seq = Some(s);
        }
        if t == "RESUMED" {
            *ready = true;
            if let Some(s) = &self.session {
                on(Event::Ready {
                    user_id: s.user_id.clone(),
                    name: s.name.clone(),
                    resumed: true,
                });
            }
            return None;
        }
        on(Event::Dispatch { t, d: frame.d });
        None
    }
}

/// The pause before the next connection after `quick` short-lived ones in a
/// row: none after a stable one, then 250 ms doubling up to [`MAX_PAUSE`].
fn backoff(quick: u32) -> Duration {
    if quick == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(250)
        .saturating_mul(1u32 << (quick - 1).min(10))
        .min(MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lived_connections_back_off_and_a_stable_one_resets() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(9), MAX_PAUSE);
        assert_eq!(backoff(u32::MAX), MAX_PAUSE);
    }

    #[test]
    fn close_codes_decide_what_follows() {
        assert!(matches!(
            on_close(4004),
            End::Fatal(GatewayError::AuthenticationFailed)
        ));
        assert!(matches!(
            on_close(4014),
            End::Fatal(GatewayError::Fatal { code: 4014, .. })
        ));
        assert!(matches!(on_close(4009), End::Again { resume: false, .. }));
        assert!(matches!(on_close(4000), End::Again { resume: true, .. }));
        assert!(matches!(on_close(1001), End::Again { resume: true, .. }));
    }

    #[test]
    fn intents_are_messages_and_their_content() {
        assert_eq!(INTENTS, 37376);
        let j: Vec<f64> = (0..64).map(|_| jitter()).collect();
        assert!(j.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(j.windows(2).any(|w| w[0] != w[1]), "{j:?}");
    }
}
