//! pincer-claude-code: pincer's gate, audit trail and memory governing
//! another agent, Claude Code, through Claude Code's hooks
//! (`pincer hook claude-code EVENT`, `docs/claude-code.md`).
//!
//! It owns the adapter: the names it uses of Claude Code's protocol
//! ([`contract`], one data file a CI check compares with the installed
//! client), the hook input ([`input`]), the answer to each of the five hook
//! points ([`hook`]: SessionStart, UserPromptSubmit, PreToolUse,
//! PostToolUse, SessionEnd), PreToolUse's judgement ([`judge`], over
//! pincer's own tool assessments and `gate::explain`, and [`paths`], the
//! workspace boundary and pincer's protected state), the `[claude_code]`
//! section of `config.toml` ([`config`]), editing Claude Code's
//! `settings.json` ([`mod@install`]) and the hook points `doctor` reports
//! ([`status`]).
//!
//! It builds nothing of an agent itself: the tools, the workspace rules,
//! the audit trail, the handoff and consolidation come from
//! `pincer-runtime` and `pincer-memory`. It never reads the environment
//! (the binary passes [`hook::ClaudeEnv`] and the runtime's `Env`) and
//! never prints: a hook call returns an [`hook::Answer`] the binary writes.

pub mod config;
pub mod contract;
pub mod hook;
pub mod input;
pub mod install;
pub mod json;
pub mod judge;
pub mod paths;
pub mod status;

pub use config::{ClaudeCodeConfig, SECTION, UnknownTools};
pub use hook::{Answer, ClaudeEnv, Event, Setup, respond};
pub use install::{Change, InstallError, Scope, install, settings_path, uninstall};
