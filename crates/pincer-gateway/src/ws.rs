//! `GET /ws`: chat over a WebSocket.
//!
//! Authenticated like every protected route (a browser offers the
//! subprotocols `pincer.v1` and `bearer.TOKEN`; the server selects
//! `pincer.v1`, so the token is never echoed back), after the `Origin`
//! check that stops cross-site WebSocket hijacking.
//!
//! The client sends JSON text messages:
//!
//! - `{"type": "turn", "session": "web", "text": "…"}` starts a turn
//!   (`session` may be left out: `web`); one turn at a time per connection;
//! - `{"type": "cancel"}` cancels the running turn.
//!
//! The server sends each of the turn's [`pincer_core::agent::AgentEvent`]s
//! as one JSON text message, exactly as `pincer agent --json` prints them
//! (`turn_started`, `text_delta`, `approval_needed`, `tool_call_started`,
//! `tool_call_finished`, `turn_done`…), plus three of its own:
//! `{"event": "turn_failed", "error"}`, `{"event": "turn_cancelled"}` and
//! `{"event": "error", "error"}` (a message it did not understand, or a
//! refusal such as a busy session or a rate limit).
//!
//! Closing the connection mid-turn cancels the turn; the session stays
//! valid. When the gateway stops, the connection is closed (1001, going
//! away) once its turn in flight, if any, has finished. A token revoked
//! while connected is noticed at the next message and the connection is
//! closed (code 1008).

use crate::chat;
use crate::http::Caller;
use crate::{Phase, State};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::mpsc;

pub(crate) async fn upgrade(
    axum::extract::State(st): axum::extract::State<Arc<State>>,
    caller: Caller,
    ws: WebSocketUpgrade,
) -> Response {
    let max = st.limits.max_ws_message_bytes;
    ws.protocols(["pincer.v1"])
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| connection(st, caller, socket))
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ClientMessage {
    Turn {
        #[serde(default)]
        session: Option<String>,
        text: String,
    },
    Cancel,
}

type Turn = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Keeps the open-WebSocket gauge right however the connection ends.
struct Open<'a>(&'a State);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.metrics.ws_open.fetch_sub(1, Ordering::Relaxed);
        self.0.ws_live.send_modify(|n| *n = n.saturating_sub(1));
    }
}

fn event(name: &str, error: Option<String>) -> String {
    match error {
        Some(e) => json!({"event": name, "error": e}).to_string(),
        None => json!({"event": name}).to_string(),
    }
}

async fn connection(st: Arc<State>, caller: Caller, mut socket: WebSocket) {
    st.metrics.ws_open.fetch_add(1, Ordering::Relaxed);
    st.ws_live.send_modify(|n| *n += 1);
    let _open = Open(&st);
    let mut phase = st.phase.subscribe();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let mut turn: Option<Turn> = None;
    loop {
        tokio::select! {
            msg = socket.recv() => {
                let text = match msg {
                    // Gone, or closing: dropping `turn` cancels it.
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                    Some(Ok(Message::Text(t))) => t.to_string(),
                    Some(Ok(Message::Binary(_))) => {
                        let e = event("error", Some("binary messages are not understood; send JSON text".into()));
                        if socket.send(Message::Text(e.into())).await.is_err() { break; }
                        continue;
                    }
                    Some(Ok(_)) => continue,
                };
                if !st.tokens.exists(&caller.record.id) {
                    let _ = socket
                        .send(Message::Close(Some(CloseFrame {
                            code: close_code::POLICY,
                            reason: "the token was revoked".into(),
                        })))
                        .await;
                    break;
                }
                if let Err(l) = st.api_limit.check(&caller.record.id) {
                    st.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
                    let e = event("error", Some(format!("rate limit for this token: try again in {} s", l.retry_after.as_secs().max(1))));
                    if socket.send(Message::Text(e.into())).await.is_err() { break; }
                    continue;
                }
                let reply = match serde_json::from_str::<ClientMessage>(&text) {
                    Err(e) => Some(event("error", Some(format!("not a client message: {e} (send {{\"type\": \"turn\", \"text\": \"…\"}} or {{\"type\": \"cancel\"}})")))),
                    Ok(ClientMessage::Cancel) => {
                        if turn.take().is_some() {
                            Some(event("turn_cancelled", None))
                        } else {
                            Some(event("error", Some("no turn is running".into())))
                        }
                    }
                    Ok(ClientMessage::Turn { .. }) if turn.is_some() => {
                        Some(event("error", Some("a turn is running on this connection; wait for turn_done or send cancel".into())))
                    }
                    Ok(ClientMessage::Turn { session, text }) => {
                        let key = session.unwrap_or_else(|| chat::DEFAULT_SESSION.to_string());
                        match chat::validate(&st, &key, &text) {
                            Err(e) => Some(event("error", Some(e.to_string()))),
                            Ok(()) => {
                                let st2 = st.clone();
                                let tx2 = tx.clone();
                                turn = Some(Box::pin(async move {
                                    let sink = move |e: pincer_core::agent::AgentEvent| {
                                        if let Ok(s) = serde_json::to_string(&e) {
                                            let _ = tx2.send(s);
                                        }
                                    };
                                    chat::run_turn(&st2, &key, &text, &sink)
                                        .await
                                        .map(|_| ())
                                        .map_err(|e| e.to_string())
                                }));
                                None
                            }
                        }
                    }
                };
                if let Some(r) = reply
                    && socket.send(Message::Text(r.into())).await.is_err()
                {
                    break;
                }
            }
            Some(line) = rx.recv() => {
                if socket.send(Message::Text(line.into())).await.is_err() {
                    break;
                }
            }
            // The gateway is stopping: once no turn runs here (a running
            // one finishes first, or is cut), say goodbye.
            // (The watch's guard is dropped inside: it must not be held.)
            () = async { drop(phase.wait_for(|p| *p != Phase::Serving).await) }, if turn.is_none() => {
                let _ = socket
                    .send(Message::Close(Some(CloseFrame {
                        code: close_code::AWAY,
                        reason: "the gateway is stopping".into(),
                    })))
                    .await;
                break;
            }
            done = finish(&mut turn), if turn.is_some() => {
                turn = None;
                let mut lines = Vec::new();
                while let Ok(line) = rx.try_recv() {
                    lines.push(line);
                }
                if let Err(e) = done {
                    lines.push(event("turn_failed", Some(e)));
                }
                let mut gone = false;
                for line in lines {
                    if socket.send(Message::Text(line.into())).await.is_err() {
                        gone = true;
                        break;
                    }
                }
                if gone {
                    break;
                }
            }
        }
    }
}

/// The running turn's end (never, when there is none: the branch that
/// awaits this is disabled then).
async fn finish(turn: &mut Option<Turn>) -> Result<(), String> {
    match turn {
        Some(t) => t.await,
        None => std::future::pending().await,
    }
}
