//! pincer-serve: `pincer serve`, one long-running process over one
//! runtime. It owns the parts of a daemon that are not a channel: the
//! [`Service`] seam every long-running part implements (a chat channel,
//! the cron scheduler, the heartbeat, and the HTTP gateway when it is
//! built), the [`Supervisor`] that runs them, retries one that fails with
//! backoff and never lets it take the others down, drains them on SIGTERM
//! and rebuilds them on a reload, the [`Hub`] through which one service
//! reaches another's chat (cron delivering its reply to Telegram), the
//! status file `pincer status` reads, and cron and the heartbeat.
//!
//! It must not know any chat platform or the gateway: the binary builds
//! the list of services from the config and the features it was built
//! with. It never reads the environment or handles signals: the binary
//! does, and tells the supervisor.

pub mod config;
pub mod cron;
pub mod heartbeat;
pub mod hub;
pub mod service;
pub mod state;
pub mod supervisor;
pub mod turn;

pub use config::{HeartbeatConfig, ServeConfig};
pub use hub::{Deliver, Hub};
pub use service::{BoxFuture, Service, ServiceCtx, ServiceError, Shutdown, ShutdownTrigger};
pub use state::{ServeState, ServiceState, ServiceStatus, StateFile, status_part};
pub use supervisor::{Generation, Supervisor};
