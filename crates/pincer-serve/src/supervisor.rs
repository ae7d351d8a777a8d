//! Runs a generation of services over one runtime: each in its own task,
//! restarted with exponential backoff when it fails (1 s, 2 s, 4 s… up to
//! 5 min; back to 1 s after it ran for a healthy minute), so a channel
//! whose network is down or whose token is wrong is retried and reported
//! in the status, and never takes the others down. A drain fires the
//! shutdown, lets every service finish its in-flight work for up to the
//! drain time, then drops what is left (a turn cut there is cancelled as
//! Ctrl-C cancels one: its session stays valid).

use crate::Hub;
use crate::service::{Service, ServiceCtx, Shutdown, ShutdownTrigger};
use crate::state::{ServiceState, StateFile, StatusHandle};
use crate::turn::Turns;
use pincer_core::message::Timestamp;
use pincer_runtime::Runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// The first wait after a failure.
pub const BACKOFF_START: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// A run this long resets the backoff.
pub const HEALTHY: Duration = Duration::from_secs(60);

/// The wait before attempt `failures + 1`.
pub fn backoff(failures: u32) -> Duration {
    BACKOFF_START
        .saturating_mul(2u32.saturating_pow(failures.min(16)))
        .min(BACKOFF_MAX)
}

/// Starts generations of services and reports them in the status file.
#[derive(Debug, Clone)]
pub struct Supervisor {
    state: StateFile,
    backoff_start: Duration,
}

/// One running set of services over one runtime.
pub struct Generation {
    tasks: JoinSet<()>,
    trigger: ShutdownTrigger,
    statuses: Vec<StatusHandle>,
    turns: Turns,
    hub: Arc<Hub>,
    runtime: Arc<Runtime>,
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation")
            .field("services", &self.statuses.len())
            .finish_non_exhaustive()
    }
}

/// What a drain left behind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drained {
    /// Services that had not finished when the drain time ran out.
    pub cut: Vec<String>,
    /// Turns that were still running then, cancelled.
    pub cancelled_turns: usize,
}

impl Supervisor {
    pub fn new(state: StateFile) -> Self {
        Self {
            state,
            backoff_start: BACKOFF_START,
        }
    }

    /// Scales every backoff wait (tests use milliseconds).
    pub fn with_backoff_start(mut self, start: Duration) -> Self {
        self.backoff_start = start;
        self
    }

    pub fn state(&self) -> &StateFile {
        &self.state
    }

    /// Starts `services` over `runtime`, each supervised in its own task.
    pub fn start(&self, runtime: Arc<Runtime>, services: Vec<Arc<dyn Service>>) -> Generation {
        let names: Vec<String> = services.iter().map(|s| s.name().to_string()).collect();
        self.state.new_generation(&names);
        let (trigger, shutdown) = Shutdown::new();
        let hub = Arc::new(Hub::expecting(&names));
        let turns = Turns::default();
        let mut tasks = JoinSet::new();
        let mut statuses = Vec::new();
        for svc in services {
            let status = self.state.handle(svc.name());
            statuses.push(status.clone());
            let ctx = ServiceCtx {
                runtime: runtime.clone(),
                shutdown: shutdown.clone(),
                hub: hub.clone(),
                status,
                turns: turns.clone(),
            };
            tasks.spawn(supervise(svc, ctx, self.backoff_start));
        }
        Generation {
            tasks,
            trigger,
            statuses,
            turns,
            hub,
            runtime,
        }
    }
}

impl Generation {
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Turns running now, over every service.
    pub fn turns_running(&self) -> usize {
        self.turns.running()
    }

    /// Stops every service: no new work, in-flight work may finish within
    /// `drain`; what is still running then is dropped.
    pub async fn drain(mut self, drain: Duration) -> Drained {
        for s in &self.statuses {
            s.set_state(ServiceState::Stopping);
        }
        self.trigger.fire();
        let deadline = tokio::time::Instant::now() + drain;
        loop {
            match tokio::time::timeout_at(deadline, self.tasks.join_next()).await {
                Ok(Some(_)) => {}
                Ok(None) => return Drained::default(),
                Err(_) => break,
            }
        }
        let cancelled_turns = self.turns.running();
        let cut = self
            .statuses
            .iter()
            .filter(|s| s.state_now() != Some(ServiceState::Stopped))
            .map(|s| s.name().to_string())
            .collect();
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        for s in &self.statuses {
            s.set_state(ServiceState::Stopped);
        }
        Drained {
            cut,
            cancelled_turns,
        }
    }
}

/// One service's life: run, and on failure wait and run again, until the
/// shutdown.
async fn supervise(svc: Arc<dyn Service>, ctx: ServiceCtx, start: Duration) {
    let mut failures: u32 = 0;
    let mut shutdown = ctx.shutdown.clone();
    loop {
        if shutdown.is_set() {
            break;
        }
        ctx.status.set_state(ServiceState::Starting);
        let began = Instant::now();
        let result = svc.run(ctx.clone()).await;
        if shutdown.is_set() {
            if let Err(e) = result {
                tracing::warn!(service = svc.name(), error = %e, "service ended with an error while stopping");
            }
            break;
        }
        let error = match result {
            Ok(()) => "stopped by itself".to_string(),
            Err(e) => e.0,
        };
        if began.elapsed() >= HEALTHY {
            failures = 0;
        }
        let wait = start
            .saturating_mul(2u32.saturating_pow(failures.min(16)))
            .min(BACKOFF_MAX.max(start));
        failures = failures.saturating_add(1);
        let next = Timestamp::from_millis(
            Timestamp::now()
                .as_millis()
                .saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
        );
        ctx.status.failed(&error, next);
        tracing::warn!(service = svc.name(), error = %error, retry_in_ms = wait.as_millis() as u64, "service failed; retrying");
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait() => break,
        }
    }
    ctx.status.set_state(ServiceState::Stopped);
}
