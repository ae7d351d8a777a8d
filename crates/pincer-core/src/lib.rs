//! pincer-core: the agent's core.
//!
//! Owns pincer's own [`message::Message`] type, the crash-safe append-only
//! session store ([`session`]), turn-boundary context trimming ([`trim`]),
//! the validated configuration ([`config`]), the agent loop ([`agent`]) and
//! the seams it drives: [`provider::Provider`], [`tool::Tool`], the policy
//! table ([`policy`]) and skills ([`skills`]). It never prints, never speaks
//! HTTP and never reads environment variables: the binary reads env once and
//! passes what it found down explicitly.

pub mod actor;
pub mod agent;
pub mod approvals;
pub mod audit;
pub mod canonical;
pub mod config;
pub mod fsutil;
pub mod gate;
pub mod glob;
pub mod home;
pub mod hooks;
pub mod message;
pub mod policy;
pub mod provider;
pub mod session;
pub mod skills;
pub mod text;
pub mod tool;
pub mod trim;

pub use message::{FieldError, Message, Role, ToolCall};
