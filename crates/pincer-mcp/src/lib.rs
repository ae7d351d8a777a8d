//! pincer-mcp: the MCP client. Tools from MCP servers reach the agent
//! through the same gate and audit trail as pincer's own.
//!
//! It owns the `[mcp]` section of `config.toml` ([`config`]), the
//! connection to each configured server ([`Server`]: a stdio server runs
//! inside the OS sandbox of `pincer-sandbox`, like a shell command; an HTTP
//! server is reached over streamable HTTP), and the agent's view of their
//! tools ([`tools_of`], [`McpTool`]: named `SERVER__TOOL`, arguments
//! checked against the tool's input schema before the gate, risk from the
//! config). The wire protocol is the official Rust SDK's (`rmcp`).
//!
//! It must not know the agent loop, the gate's policy or the front-ends:
//! a tool here only declares its risk and runs with a permit. Everything a
//! server says — tool names, descriptions, schemas, results, a changed
//! tool list — is untrusted data ([`untrusted`]): bounded, made safe to
//! print, and unable to change what the agent may do. A server that stops,
//! stalls or sends garbage is a clear error for that call
//! ([`McpError`]); the session goes on.

pub mod config;
mod http;
pub mod schema;
mod server;
mod stdio;
mod tool;
pub mod untrusted;

pub use config::{McpConfig, ServerConfig, Transport, WorkspaceAccess};
pub use server::{CallOutput, ListedTool, MAX_RESTARTS, Refusals, Server, ServerFacts};
pub use stdio::{Launch, MAX_LINE};
pub use tool::{McpTool, PlannedTool, planned_tools, tools_of};

/// Why an MCP server or one of its calls failed. Every message names the
/// server (and the tool), and is meant for the model or the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server could not be started, or did not complete the handshake
    /// and its tool list in time.
    #[error("mcp server `{server}` did not start: {message}")]
    Start { server: String, message: String },
    /// The server answered the call with a protocol error.
    #[error("mcp server `{server}`: the call of `{tool}` failed: {message}")]
    Call {
        server: String,
        tool: String,
        message: String,
    },
    /// No answer in time; the server was told the call is cancelled (it
    /// may still have done part of it).
    #[error(
        "mcp server `{server}` did not answer the call of `{tool}` within {secs} s (timeout_secs); the call was cancelled, though the server may have done part of it"
    )]
    Timeout {
        server: String,
        tool: String,
        secs: u64,
    },
    /// The connection broke during the call (the process died, or sent
    /// something that is not the protocol).
    #[error("mcp server `{server}` stopped during the call of `{tool}`: {message}")]
    Died {
        server: String,
        tool: String,
        message: String,
    },
    /// The server is gone for this run.
    #[error("mcp server `{server}` is not available: {message}")]
    Gone { server: String, message: String },
}
