//! A server's tool as one of the agent's tools: named `SERVER__TOOL`,
//! described as the server's (bounded, marked), its arguments checked
//! against the tool's input schema in `assess` (an invalid call is refused
//! by the gate before anyone is asked), its risk from the config alone,
//! and run only with the gate's permit.

use crate::schema::ArgSchema;
use crate::server::{ListedTool, Refusals, Server};
use pincer_core::gate::{Gated, Permit};
use pincer_core::policy::Risk;
use pincer_core::provider::BoxFuture;
use pincer_core::tool::{Assessment, Tool, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;

/// One offered tool of a started server.
pub struct McpTool {
    /// `SERVER__TOOL`.
    name: String,
    /// The server's name for it.
    tool: String,
    description: String,
    schema: Value,
    risk: Risk,
    server_name: String,
    transport: &'static str,
    /// The connection, reachable only through a permit.
    server: Gated<Arc<Server>>,
    /// What `assess` reads: the input schema compiled at start, and the
    /// server's refusals since (judging a call reaches no server).
    check: Option<Arc<ArgSchema>>,
    refusals: Refusals,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("risk", &self.risk)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    fn new(server: &Arc<Server>, t: &ListedTool, exposed: String) -> McpTool {
        McpTool {
            name: exposed,
            tool: t.name.clone(),
            description: t.description.clone(),
            schema: t.schema.clone(),
            risk: t.risk,
            server_name: server.name().to_string(),
            transport: server.facts().transport,
            server: Gated::new(server.clone()),
            check: server.schema(&t.name).cloned(),
            refusals: server.refusals(),
        }
    }

    fn subject(&self) -> Value {
        json!({"server": self.server_name, "tool": self.tool, "transport": self.transport})
    }
}

/// The agent's tools from `server`: the ones offered at start.
pub fn tools_of(server: &Arc<Server>) -> Vec<Arc<dyn Tool>> {
    server
        .listed()
        .iter()
        .filter(|t| t.offered)
        .filter_map(|t| {
            let exposed = t.exposed.clone()?;
            Some(Arc::new(McpTool::new(server, t, exposed)) as Arc<dyn Tool>)
        })
        .collect()
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        self.schema.clone()
    }

    fn assess(&self, args: &Value) -> Assessment {
        let why = format!(
            "tool `{}` of mcp server `{}` is {} risk ([mcp.servers.{}] risk / tool_risk)",
            self.tool,
            self.server_name,
            self.risk.as_str(),
            self.server_name
        );
        let mut a = Assessment::new(self.risk, why).with_subject(self.subject());
        if let Some(refused) = self.refusals.get(&self.tool) {
            a.denied = Some(refused);
            return a;
        }
        let checked = match &self.check {
            Some(schema) => schema.check(args),
            None => Err("the tool's input schema is unknown".to_string()),
        };
        match checked {
            Ok(()) => a,
            Err(e) => a.with_invalid(e),
        }
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let server = permit.open(&self.server);
            let out = server
                .call(&self.tool, permit.args().clone())
                .await
                .map_err(|e| ToolError::RespondToModel(e.to_string()))?;
            for n in &out.notes {
                permit.note(n.clone());
            }
            if out.is_error {
                return Err(ToolError::RespondToModel(format!(
                    "mcp server `{}` says the call failed: {}",
                    self.server_name, out.text
                )));
            }
            Ok(out.text)
        })
    }
}

/// A tool an allowlist names exactly, as the gate would judge it before
/// the server runs (`pincer policy explain`, `doctor`'s deny-pattern
/// check): the configured risk, no schema (the server has not said it).
/// It never reaches a server: running one is an error.
#[derive(Debug)]
pub struct PlannedTool {
    name: String,
    tool: String,
    server: String,
    risk: Risk,
    transport: &'static str,
}

/// One [`PlannedTool`] per exact (glob-free) allowlist entry of every
/// server that the model could carry.
pub fn planned_tools(cfg: &crate::McpConfig) -> Vec<Arc<dyn Tool>> {
    let mut out: Vec<Arc<dyn Tool>> = Vec::new();
    for s in &cfg.servers {
        for t in s.tools.iter().filter(|p| !p.contains(['*', '?', '['])) {
            if let Ok(name) = crate::untrusted::exposed_name(&s.name, t) {
                out.push(Arc::new(PlannedTool {
                    name,
                    tool: t.clone(),
                    server: s.name.clone(),
                    risk: s.risk_of(t),
                    transport: s.transport.as_str(),
                }));
            }
        }
    }
    out
}

impl Tool for PlannedTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "a tool of an MCP server, as configured (the server is not running)"
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object"})
    }

    fn assess(&self, _args: &Value) -> Assessment {
        Assessment::new(
            self.risk,
            format!(
                "tool `{}` of mcp server `{}` is {} risk ([mcp.servers.{}] risk / tool_risk); its arguments are checked against the server's input schema once it runs",
                self.tool,
                self.server,
                self.risk.as_str(),
                self.server
            ),
        )
        .with_subject(json!({"server": self.server, "tool": self.tool, "transport": self.transport}))
    }

    fn execute<'a>(&'a self, _permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            Err(ToolError::RespondToModel(format!(
                "mcp server `{}` is not running in this process",
                self.server
            )))
        })
    }
}
