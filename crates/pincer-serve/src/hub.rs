//! How one service reaches another's chats: a channel that is up
//! registers a [`Deliver`] under its name (`telegram`), and cron or the
//! heartbeat send their replies, and ask for approvals, through it by a
//! target such as `telegram:123456` (the chat id). A target whose channel
//! is not up is an error the caller records, never a silent drop.

use pincer_core::approvals::Approver;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

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

    pub fn register(&self, channel: &str, deliver: Arc<dyn Deliver>) {
        self.channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(channel.to_string(), deliver);
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
            .get(channel)
            .ok_or_else(|| format!("the {channel} channel is not running"))?;
        d.send(chat, text).await
    }

    /// The approver of `target`'s chat, if its channel is up.
    pub fn approver(&self, target: &str) -> Option<Arc<dyn Approver>> {
        let (channel, chat) = split_target(target)?;
        Some(self.get(channel)?.approver(chat))
    }
}
