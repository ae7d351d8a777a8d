//! The sessions the gateway holds open, and a turn on one of them.
//!
//! A session has one writer (the session store's lock): the gateway opens
//! it once, through [`pincer_runtime::Runtime::open_session`] with the
//! gateway's approval inbox, and keeps it while it is used. A turn takes
//! the session's mutex without waiting: a second turn on a session that is
//! mid-turn — from another tab, another device, or HTTP and WebSocket at
//! once — is refused as busy, never queued behind it or interleaved with
//! it. At most `max_open_sessions` are held; when a new one is needed the
//! least recently used idle session is closed (its writer released).
//!
//! A turn whose client goes away is cancelled (its future is dropped): the
//! session stays valid, and the next turn repairs what the cut left open
//! (a tool call without a result gets a synthetic one), as after Ctrl-C in
//! `pincer agent`.

use crate::metrics::TurnEnd;
use crate::{Phase, State};
use pincer_core::agent::{AgentError, AgentEvent, TurnOutcome};
use pincer_core::approvals::Approver;
use pincer_runtime::{AgentSession, RuntimeError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Mutex as AsyncMutex;

/// The session a client gets when it names none.
pub const DEFAULT_SESSION: &str = "web";

/// Why a turn did not run (or did not finish).
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("field `session`: {0}")]
    BadKey(pincer_core::session::SessionError),
    #[error(
        "field `session`: `{key}` belongs to `{owner}` of this pincer serve, which writes it; the gateway chats in sessions of its own (like `web`), and may read this one"
    )]
    Reserved { key: String, owner: String },
    #[error("the gateway is stopping; no new turn starts")]
    Stopping,
    #[error("the gateway stopped before the turn finished; the session stays valid")]
    Cut,
    #[error("field `message`: empty; say something")]
    Empty,
    #[error("field `message`: {chars} characters, more than the {max} allowed")]
    TooLong { chars: usize, max: usize },
    #[error("session `{0}` is running a turn; wait for it to finish (or cancel it) and try again")]
    Busy(String),
    #[error("{0} sessions are open and all are running turns; try again when one finishes")]
    Full(usize),
    #[error("session `{key}` cannot be opened: {source}")]
    Open {
        key: String,
        #[source]
        source: RuntimeError,
    },
    #[error("the turn failed: {0}")]
    Turn(#[from] AgentError),
}

impl ChatError {
    /// The HTTP status that says this.
    pub fn status(&self) -> axum::http::StatusCode {
        use axum::http::StatusCode as S;
        match self {
            ChatError::BadKey(_) | ChatError::Empty => S::BAD_REQUEST,
            ChatError::Reserved { .. } => S::CONFLICT,
            ChatError::Stopping | ChatError::Cut => S::SERVICE_UNAVAILABLE,
            ChatError::TooLong { .. } => S::PAYLOAD_TOO_LARGE,
            ChatError::Busy(_) | ChatError::Full(_) => S::CONFLICT,
            ChatError::Open {
                source: RuntimeError::Session(_),
                ..
            } => S::CONFLICT,
            ChatError::Open { .. } | ChatError::Turn(_) => S::INTERNAL_SERVER_ERROR,
        }
    }
}

type Shared = Arc<AsyncMutex<AgentSession>>;

struct Entry {
    session: Shared,
    used: Instant,
}

/// The open sessions.
pub(crate) struct Sessions {
    open: Mutex<HashMap<String, Entry>>,
    max: usize,
}

impl Sessions {
    pub fn new(max: usize) -> Sessions {
        Sessions {
            open: Mutex::new(HashMap::new()),
            max: max.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Session `key`, opened if it is not open yet.
    fn get(&self, st: &State, key: &str) -> Result<Shared, ChatError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = open.get_mut(key) {
            e.used = Instant::now();
            return Ok(e.session.clone());
        }
        if open.len() >= self.max {
            // Close the least recently used session nobody is using: its
            // mutex is free and no one else holds its Arc.
            let idle = open
                .iter()
                .filter(|(_, e)| Arc::strong_count(&e.session) == 1 && e.session.try_lock().is_ok())
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            match idle {
                Some(k) => {
                    open.remove(&k);
                }
                None => return Err(ChatError::Full(self.max)),
            }
        }
        let approver: Arc<dyn Approver> = st.inbox.clone();
        let session = st
            .runtime
            .open_session(key, approver)
            .map_err(|source| ChatError::Open {
                key: key.to_string(),
                source,
            })?;
        for w in &session.prompt().warnings {
            tracing::warn!(session = key, "{w}");
        }
        let shared = Arc::new(AsyncMutex::new(session));
        open.insert(
            key.to_string(),
            Entry {
                session: shared.clone(),
                used: Instant::now(),
            },
        );
        Ok(shared)
    }
}

/// Counts a turn as cancelled unless it finished.
struct EndGuard<'a> {
    st: &'a State,
    ended: bool,
}

impl Drop for EndGuard<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.st.metrics.turn_ended(TurnEnd::Cancelled);
        }
    }
}

/// Checks a turn's input.
pub(crate) fn validate(st: &State, key: &str, text: &str) -> Result<(), ChatError> {
    pincer_core::session::validate_key(key).map_err(ChatError::BadKey)?;
    if let Some(owner) = reserved_by(&st.reserved_sessions, key) {
        return Err(ChatError::Reserved {
            key: key.to_string(),
            owner: owner.to_string(),
        });
    }
    if text.trim().is_empty() {
        return Err(ChatError::Empty);
    }
    let chars = text.chars().count();
    if chars > st.limits.max_message_chars {
        return Err(ChatError::TooLong {
            chars,
            max: st.limits.max_message_chars,
        });
    }
    Ok(())
}

/// The key space of `reserved` that `key` is in: `NAME` itself or
/// `NAME-…`.
fn reserved_by<'a>(reserved: &'a [String], key: &str) -> Option<&'a str> {
    reserved
        .iter()
        .find(|name| {
            key.strip_prefix(name.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
        .map(String::as_str)
}

/// Runs one turn of session `key`, reporting every event to `sink`.
/// Dropping the future cancels the turn (the session stays valid).
pub(crate) async fn run_turn(
    st: &State,
    key: &str,
    text: &str,
    sink: &(dyn Fn(AgentEvent) + Send + Sync),
) -> Result<TurnOutcome, ChatError> {
    validate(st, key, text)?;
    let mut phase = st.phase.subscribe();
    if *phase.borrow_and_update() != Phase::Serving {
        return Err(ChatError::Stopping);
    }
    let session = st.sessions.get(st, key)?;
    let mut session = session
        .try_lock_owned()
        .map_err(|_| ChatError::Busy(key.to_string()))?;
    let _held = st.on_turn.as_ref().map(|h| (h.0)());
    let watch = st.metrics.turn();
    let mut end = EndGuard { st, ended: false };
    let on_event = |e: AgentEvent| {
        watch.saw(&e);
        sink(e);
    };
    // A cut (the gateway's drain ran out) drops the turn's future: the
    // session stays valid, as when the client goes away.
    let result = tokio::select! {
        r = session.run_turn(text, &on_event) => r,
        () = async { drop(phase.wait_for(|p| *p == Phase::Cut).await) } => return Err(ChatError::Cut),
    };
    end.ended = true;
    st.metrics.turn_ended(if result.is_ok() {
        TurnEnd::Done
    } else {
        TurnEnd::Failed
    });
    Ok(result?)
}

#[cfg(test)]
mod tests {
    use super::reserved_by;

    #[test]
    fn a_reserved_name_covers_itself_and_its_dashed_keys_only() {
        let r = vec!["telegram".to_string(), "heartbeat".to_string()];
        assert_eq!(reserved_by(&r, "telegram-123"), Some("telegram"));
        assert_eq!(reserved_by(&r, "telegram--1001"), Some("telegram"));
        assert_eq!(reserved_by(&r, "heartbeat"), Some("heartbeat"));
        assert_eq!(reserved_by(&r, "telegrams"), None);
        assert_eq!(reserved_by(&r, "web"), None);
        assert_eq!(reserved_by(&[], "telegram-1"), None);
    }
}
