//! Who acted, as recorded in the audit trail's `actor` field and in
//! approval answers. One place for the names, so a reader (consolidation,
//! handoff, the web audit viewer) and a writer never disagree.
//!
//! - `human:cli` — a person at pincer's command line, outside any sandbox;
//! - `human:terminal` — the person at the agent's own terminal prompt;
//! - `agent:ID` — an agent acting through the gate (`[agent] agent_id`);
//! - `agent:claude-code` — Claude Code, governed through its hooks
//!   (`pincer hook claude-code`);
//! - `hook:NAME` — a configured hook's verdict;
//! - `telegram:ID`, `discord:ID` — a chat user, by the id the platform
//!   authenticated (never a display name); `camera:ADDR` — a camera board
//!   by its peer address;
//! - `token:ID` — a person holding the gateway token `ID` (the gateway
//!   authenticated the token; `ID` is its public half, never the secret);
//! - `system` — pincer itself (config loads, timeouts, repairs).

/// A person at pincer's command line.
pub const HUMAN_CLI: &str = "human:cli";
/// The person answering at the agent's own terminal.
pub const HUMAN_TERMINAL: &str = "human:terminal";
/// pincer itself.
pub const SYSTEM: &str = "system";
/// The prefix of an agent's actor.
pub const AGENT_PREFIX: &str = "agent:";

/// Claude Code, as its hooks report it to pincer.
pub const CLAUDE_CODE: &str = "agent:claude-code";

/// The actor of the agent `id`.
pub fn agent(id: &str) -> String {
    format!("{AGENT_PREFIX}{id}")
}

/// The prefix of a gateway token's principal.
pub const TOKEN_PREFIX: &str = "token:";

/// The principal of the gateway token whose id is `id`.
pub fn token(id: &str) -> String {
    format!("{TOKEN_PREFIX}{id}")
}

/// The actor of the hook `name`.
pub fn hook(name: &str) -> String {
    format!("hook:{name}")
}

/// A chat user `id` of `channel` (`telegram:123456`), as the platform
/// authenticated them.
pub fn channel(channel: &str, id: &str) -> String {
    format!("{channel}:{id}")
}

/// True for an actor that is a person (at a terminal, or holding a
/// gateway token).
pub fn is_human(actor: &str) -> bool {
    actor.starts_with("human:") || actor.starts_with(TOKEN_PREFIX)
}
