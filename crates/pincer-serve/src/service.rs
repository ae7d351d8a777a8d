//! The seam of `pincer serve`: a [`Service`] is anything that runs until
//! told to stop — a chat channel's poller, the cron scheduler, the
//! heartbeat, the HTTP gateway. The [`crate::Supervisor`] runs each in its
//! own task with a [`ServiceCtx`].
//!
//! The contract:
//!
//! - `run` returns `Ok(())` only after [`ServiceCtx::shutdown`] fired and
//!   the service has let its in-flight work finish (a turn ends, a reply
//!   is sent). It accepts no new work once shutdown fired.
//! - Any other return, `Ok` or `Err`, is a failure: the supervisor records
//!   it in the status, waits (exponential backoff, reset after a healthy
//!   minute) and calls `run` again. A service keeps no state across runs
//!   that a fresh `run` could not rebuild from disk.
//! - The supervisor may drop the `run` future at any await point when the
//!   drain time is up: a turn in flight is then cancelled the way Ctrl-C
//!   cancels one (the session stays valid; the next turn repairs it).
//!
//! A service that is not in this crate plugs in by implementing the trait,
//! or with [`from_fn`] over any async function of a [`ServiceCtx`].

use pincer_runtime::Runtime;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::watch;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a service stopped without being asked to. The message is shown in
/// `pincer status` and the log; it must never hold a secret (a token in a
/// URL is the service's to scrub).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ServiceError(pub String);

impl ServiceError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// A long-running part of `pincer serve`.
pub trait Service: Send + Sync {
    /// Its name in the status, the log and the audit trail (`telegram`).
    fn name(&self) -> &str;
    /// Runs until `ctx.shutdown` fires; see the module doc.
    fn run(&self, ctx: ServiceCtx) -> BoxFuture<'_, Result<(), ServiceError>>;
}

/// What a service gets for one run.
#[derive(Clone)]
pub struct ServiceCtx {
    /// The one runtime every service of this generation shares.
    pub runtime: Arc<Runtime>,
    pub shutdown: Shutdown,
    /// Where services reach each other's chats.
    pub hub: Arc<crate::Hub>,
    /// This service's line in the status file.
    pub status: crate::state::StatusHandle,
    /// Counts the turns in flight (what a drain that runs out cancels).
    pub turns: crate::turn::Turns,
}

impl std::fmt::Debug for ServiceCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCtx")
            .field("shutdown", &self.shutdown.is_set())
            .finish_non_exhaustive()
    }
}

/// Fires once, for every clone: the daemon is stopping or reloading.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

/// The sending side of a [`Shutdown`].
#[derive(Debug)]
pub struct ShutdownTrigger(watch::Sender<bool>);

impl Shutdown {
    /// A new signal, not yet fired.
    pub fn new() -> (ShutdownTrigger, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (ShutdownTrigger(tx), Shutdown(rx))
    }

    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the signal fired (at once if it already has).
    pub async fn wait(&mut self) {
        // An error means the trigger is gone, which is a shutdown too.
        let _ = self.0.wait_for(|set| *set).await;
    }
}

impl ShutdownTrigger {
    pub fn fire(&self) {
        let _ = self.0.send(true);
    }
}

/// A service made of a name and an async function: how the binary plugs
/// in a service defined elsewhere (the gateway's `serve` function) without
/// that crate depending on this one.
pub fn from_fn<F, Fut>(name: impl Into<String>, f: F) -> Arc<dyn Service>
where
    F: Fn(ServiceCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ServiceError>> + Send + 'static,
{
    struct FnService<F> {
        name: String,
        f: F,
    }
    impl<F, Fut> Service for FnService<F>
    where
        F: Fn(ServiceCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ServiceError>> + Send + 'static,
    {
        fn name(&self) -> &str {
            &self.name
        }
        fn run(&self, ctx: ServiceCtx) -> BoxFuture<'_, Result<(), ServiceError>> {
            Box::pin((self.f)(ctx))
        }
    }
    Arc::new(FnService {
        name: name.into(),
        f,
    })
}
