//! One turn run by a service (a cron job, the heartbeat, a chat message),
//! counted so a drain can say how many it cancelled.

use pincer_core::agent::{AgentError, AgentEvent, TurnOutcome};
use pincer_core::approvals::Approver;
use pincer_core::message::Message;
use pincer_runtime::{Runtime, RuntimeError};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The turns in flight in one generation.
#[derive(Debug, Clone, Default)]
pub struct Turns(Arc<AtomicUsize>);

/// Held while a turn runs.
#[derive(Debug)]
pub struct TurnGuard(Arc<AtomicUsize>);

impl Turns {
    pub fn running(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    pub fn enter(&self) -> TurnGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        TurnGuard(self.0.clone())
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why a service's turn did not finish.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Opens session `key` with `approver`, runs one turn of `message` and
/// closes the session again (so a person may open it between runs).
pub async fn run_once(
    runtime: &Runtime,
    key: &str,
    approver: Arc<dyn Approver>,
    message: Message,
    turns: &Turns,
    on_event: &(dyn Fn(AgentEvent) + Send + Sync),
) -> Result<TurnOutcome, TurnError> {
    let mut session = runtime.open_session(key, approver)?;
    let _guard = turns.enter();
    Ok(session.run_turn_message(message, on_event).await?)
}
