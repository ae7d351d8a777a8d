//! How one service reaches another's chats: a channel that is up
//! registers a [`Deliver`] under its name (`telegram`), and cron or the
//! heartbeat send their replies, and ask for approvals, through it by a
//! target such as `telegram:123456` (the chat id). A target whose channel
//! is not up is an error the caller records, never a silent drop; a
//! channel of this generation that is still starting (or retrying) is
//! waited for up to [`STARTING_WAIT`] first, so a catch-up cron run at
//! start does not lose its reply to the channel's first `getMe`.

use pincer_core::approvals::Approver;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;

/// How long a delivery waits for a channel of this generation to come up.
pub const STARTING_WAIT: Duration = Duration::from_secs(30);

pub use crate::service::BoxFuture;

/// A channel's side of the hub.
pub trait Deliver: Send + Sync {
    /// Sends `text` to `chat` (split and escaped as the platform needs).
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// An approver that asks the channel's approvers in `chat`.
    fn approver(&self, chat: &str) -> Arc<dyn Approver>;
}

/// The registry; one per generation of services.
#[derive(Default)]
pub struct Hub {
    channels: Mutex<BTreeMap<String, Arc<dyn Deliver>>>,
    /// The services of this generation: a delivery to one of them that
    /// is not registered yet waits for it.
    expected: Mutex<Vec<String>>,
    registered: Notify,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("channels", &self.names())
            .finish()
    }
}

/// `telegram:123` → (`telegram`, `123`).
pub fn split_target(target: &str) -> Option<(&str, &str)> {
    target
        .split_once(':')
        .filter(|(c, id)| !c.is_empty() && !id.is_empty())
}

impl Hub {
    pub fn new() -> Self {
        Self::default()
    }

    /// A hub whose deliveries wait for `services` while they start.
    pub fn expecting(services: &[String]) -> Self {
        let hub = Self::default();
        *hub.expected.lock().unwrap_or_else(PoisonError::into_inner) = services.to_vec();
        hub
    }

    pub fn register(&self, channel: &str, deliver: Arc<dyn Deliver>) {
        self.channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(channel.to_string(), deliver);
        self.registered.notify_waiters();
    }

    fn expects(&self, channel: &str) -> bool {
        self.expected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|n| n == channel)
    }

    /// The channel, waiting up to `wait` for one this generation runs.
    async fn get_waiting(&self, channel: &str, wait: Duration) -> Option<Arc<dyn Deliver>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.registered.notified();
            if let Some(d) = self.get(channel) {
                return Some(d);
            }
            if !self.expects(channel) || tokio::time::timeout_at(deadline, notified).await.is_err()
            {
                return None;
            }
        }
    }

    pub fn unregister(&self, channel: &str) {
        self.channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(channel);
    }

    pub fn names(&self) -> Vec<String> {
        self.channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    fn get(&self, channel: &str) -> Option<Arc<dyn Deliver>> {
        self.channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(channel)
            .cloned()
    }

    /// Sends `text` to `target` (`telegram:123`).
    pub async fn deliver(&self, target: &str, text: &str) -> Result<(), String> {
        let (channel, chat) = split_target(target)
            .ok_or_else(|| format!("`{target}` is not a target like telegram:CHAT_ID"))?;
        let d = self
            .get_waiting(channel, STARTING_WAIT)
            .await
            .ok_or_else(|| format!("the {channel} channel is not running"))?;
        d.send(chat, text).await
    }

    /// The approver of `target`'s chat, if its channel is up.
    pub fn approver(&self, target: &str) -> Option<Arc<dyn Approver>> {
        let (channel, chat) = split_target(target)?;
        Some(self.get(channel)?.approver(chat))
    }

    /// As [`Hub::approver`], waiting for a channel that is starting.
    pub async fn approver_waiting(&self, target: &str) -> Option<Arc<dyn Approver>> {
        let (channel, chat) = split_target(target)?;
        Some(
            self.get_waiting(channel, STARTING_WAIT)
                .await?
                .approver(chat),
        )
    }
}
