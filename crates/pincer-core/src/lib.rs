//! pincer-core: the agent's core.
//!
//! Owns pincer's own [`message::Message`] type, the crash-safe append-only
//! session store ([`session`]), turn-boundary context trimming ([`trim`]) and
//! the validated configuration ([`config`]). It never prints, never speaks
//! HTTP and never reads environment variables: the binary reads env once and
//! passes what it found down explicitly.

pub mod config;
pub mod fsutil;
pub mod home;
pub mod message;
pub mod provider;
pub mod session;
pub mod tool;
pub mod trim;

pub use message::{FieldError, Message, Role, ToolCall};
