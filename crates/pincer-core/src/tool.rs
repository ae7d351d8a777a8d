//! The seam between the agent and the things it can do (TL1, PO2).
//!
//! Implementations live in `pincer-tools`. A tool *declares* the risk of
//! each call ([`Tool::assess`]); the gate ([`crate::gate`]) decides. A tool
//! can only run with a [`Permit`] for that exact call, and only the gate
//! makes permits, so nothing can run a tool around the gate.

use crate::gate::Permit;
use crate::policy::Risk;
use crate::provider::{BoxFuture, ToolSpec};
use serde::Serialize;

/// What a tool says about one call before it runs: its risk class, why,
/// and whether a deny rule matched (blocked at every autonomy level).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assessment {
    pub risk: Risk,
    /// One sentence a person can check, e.g. which part of a shell command
    /// decided the class.
    pub why: String,
    pub denied: Option<String>,
    /// Tool-specific detail for `pincer policy explain` (the shell tool puts
    /// every part of the command here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
    /// The arguments are malformed or out of range: the gate refuses the
    /// call at every autonomy level without asking anyone, and nothing runs
    /// (a person is never asked to approve a call that cannot work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// The call touches hardware: `readonly` blocks it whatever its risk
    /// (PO3).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hardware: bool,
    /// What the call touches, recorded in its audit entries
    /// (`gate.decision` and `tool.call`): for hardware, the operation, bus,
    /// address or pin and byte counts (HW4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<serde_json::Value>,
}

impl Assessment {
    pub fn new(risk: Risk, why: impl Into<String>) -> Self {
        Self {
            risk,
            why: why.into(),
            denied: None,
            detail: None,
            invalid: None,
            hardware: false,
            subject: None,
        }
    }

    /// A hardware operation (see [`Assessment::hardware`]).
    pub fn on_hardware(mut self) -> Self {
        self.hardware = true;
        self
    }

    pub fn with_subject(mut self, subject: serde_json::Value) -> Self {
        self.subject = Some(subject);
        self
    }

    /// Malformed arguments (see [`Assessment::invalid`]).
    pub fn with_invalid(mut self, why: impl Into<String>) -> Self {
        self.invalid = Some(why.into());
        self
    }
}

/// A failed tool call. `RespondToModel` goes back to the model as the tool
/// result (bad arguments, file not found, command failed); `Fatal` stops the
/// turn (the workspace vanished, an invariant broke).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    RespondToModel(String),
    #[error("fatal tool error: {0}")]
    Fatal(String),
}

/// Something the agent can do.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters_schema(&self) -> serde_json::Value;
    /// The risk class of this particular call and why; malformed
    /// arguments are classified at the tool's highest risk.
    fn assess(&self, args: &serde_json::Value) -> Assessment;
    /// Runs the call the gate admitted. The arguments are
    /// [`Permit::args`] (an interceptor may have rewritten them), and the
    /// tool's handles on the world are reached through [`Permit::open`].
    /// The returned text is the tool result the model sees.
    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters_schema(),
        }
    }
}
