//! The seam between the agent and the things it can do (DESIGN TL, PO2).
//!
//! Implementations live in `pincer-tools`. A tool declares the risk class of
//! each call from its arguments; the policy gate (a later issue) decides on
//! it. Until the gate exists, the agent runs a call only if its risk is
//! allowed by [`crate::tool::Risk`] and the configured autonomy.

use crate::provider::{BoxFuture, ToolSpec};
use serde::{Deserialize, Serialize};

/// Risk class of one tool operation (PO2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
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
    /// The risk class of this particular call; malformed arguments are
    /// classified at the tool's highest risk.
    fn risk(&self, args: &serde_json::Value) -> Risk;
    /// Runs the call. The returned text is the tool result the model sees.
    fn execute<'a>(
        &'a self,
        args: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<String, ToolError>>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters_schema(),
        }
    }
}
