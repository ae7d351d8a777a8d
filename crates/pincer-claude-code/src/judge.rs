//! PreToolUse: pincer's answer to one Claude Code tool call, decided the
//! way pincer's own gate decides for its agent, without running anything.
//!
//! Each Claude Code tool is judged as the pincer tool that does the same
//! thing (`Bash` as `shell`, `Write`/`NotebookEdit` as `file_write`, `Edit`
//! as `file_edit`, `Read` as `file_read`, `Glob`/`Grep` as `file_list`),
//! through [`pincer_core::gate::explain`]: the same risk classes, deny lists
//! (`[policy] deny_tools` and `deny_commands`, the classifier's own) and the
//! autonomy × risk table. On top of that, the paths:
//!
//! | call | answer |
//! | --- | --- |
//! | a write that leads outside the workspace | `deny` (boundary) |
//! | a write into `PINCER_HOME` or a read or search of a protected entry | `deny` (protected) |
//! | a `Grep` whose root holds a protected entry | `deny` (protected) |
//! | a `Bash` word that leads into a protected entry | `deny` (protected) |
//! | a write to Claude Code's own settings files (where the hooks are) | `deny` (hook_config) |
//! | a `Bash` word that names one of them, in a command otherwise allowed | `ask` (hook_config) |
//! | otherwise, by risk: low | `allow` at every level |
//! | medium or high | `deny` under readonly, `ask` under supervised, `allow` under full |
//! | denied by a deny list | `deny` at every level |
//! | a tool pincer does not know | `[claude_code] unknown_tools` (default `ask`) |
//!
//! Which Claude Code tool is which is `contract.json`'s tool table: low
//! (Claude Code's own bookkeeping: its todo list, plan mode, a subagent
//! whose calls come through the hooks again) and network (`WebFetch`,
//! `WebSearch`: high, as the shell classifier rates the network).

use crate::config::UnknownTools;
use crate::contract::{ToolClass, contract};
use crate::paths::{Boundary, Place, path_words};
use pincer_core::audit::schema::PermissionDecision;
use pincer_core::gate::{self, Explanation};
use pincer_core::policy::{Autonomy, Decision, Risk, decide_for};
use pincer_core::tool::Tool;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Bash words checked against the protected paths, at most.
const MAX_PATH_WORDS: usize = 64;

/// What pincer answers, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub decision: PermissionDecision,
    /// `policy`, `deny_list`, `boundary`, `protected`, `hook_config`,
    /// `unknown_tool`, `invalid` or `failure`.
    pub by: &'static str,
    pub reason: String,
    pub risk: Option<Risk>,
    /// What the call touches (a file tool's resolved path).
    pub subject: Option<Value>,
}

impl Verdict {
    fn new(decision: PermissionDecision, by: &'static str, reason: impl Into<String>) -> Verdict {
        Verdict {
            decision,
            by,
            reason: reason.into(),
            risk: None,
            subject: None,
        }
    }

    /// A failure inside pincer: `ask`, so a person decides.
    pub fn failure(reason: impl Into<String>) -> Verdict {
        Verdict::new(PermissionDecision::Ask, "failure", reason)
    }
}

/// The judge for one hook call.
pub struct Judge {
    autonomy: Autonomy,
    deny_tools: Vec<String>,
    unknown_tools: UnknownTools,
    /// pincer's own tools, for their assessments (never run).
    tools: Vec<Arc<dyn Tool>>,
    boundary: Boundary,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("autonomy", &self.autonomy)
            .field("boundary", &self.boundary)
            .finish_non_exhaustive()
    }
}

fn permission(decision: &str) -> PermissionDecision {
    match decision {
        "allow" => PermissionDecision::Allow,
        "ask" => PermissionDecision::Ask,
        _ => PermissionDecision::Deny,
    }
}

impl Judge {
    pub fn new(
        autonomy: Autonomy,
        deny_tools: Vec<String>,
        unknown_tools: UnknownTools,
        tools: Vec<Arc<dyn Tool>>,
        boundary: Boundary,
    ) -> Judge {
        Judge {
            autonomy,
            deny_tools,
            unknown_tools,
            tools,
            boundary,
        }
    }

    pub fn autonomy(&self) -> Autonomy {
        self.autonomy
    }

    pub fn boundary(&self) -> &Boundary {
        &self.boundary
    }

    /// The answer for Claude Code's `tool` called with `input`.
    pub fn judge(&self, tool: &str, input: &Map<String, Value>) -> Verdict {
        let Some(class) = contract().tool_class(tool) else {
            return Verdict::new(
                match self.unknown_tools {
                    UnknownTools::Allow => PermissionDecision::Allow,
                    UnknownTools::Ask => PermissionDecision::Ask,
                    UnknownTools::Deny => PermissionDecision::Deny,
                },
                "unknown_tool",
                format!(
                    "pincer does not know the tool `{tool}`; [claude_code] unknown_tools = \"{}\"",
                    self.unknown_tools.as_str()
                ),
            );
        };
        let text = |field: &str| match input.get(field) {
            Some(Value::String(s)) if s.is_empty() || s.contains('\0') => Err(Verdict::new(
                PermissionDecision::Deny,
                "invalid",
                format!("`{tool}`'s `{field}` is empty or holds a NUL byte"),
            )),
            Some(Value::String(s)) => Ok(s.as_str()),
            Some(_) => Err(Verdict::new(
                PermissionDecision::Deny,
                "invalid",
                format!("`{tool}`'s `{field}` is not a string"),
            )),
            None => Err(Verdict::new(
                PermissionDecision::Deny,
                "invalid",
                format!("`{tool}` has no `{field}`"),
            )),
        };
        let verdict = match class {
            ToolClass::Shell(field) => text(field).map(|c| self.bash(c)),
            ToolClass::Write(field) => text(field).map(|p| {
                let as_tool = if tool == "Edit" {
                    "file_edit"
                } else {
                    "file_write"
                };
                self.write(as_tool, p, input)
            }),
            ToolClass::Read(field) => text(field).map(|p| self.read(p, input)),
            ToolClass::Search(field) => match input.get(field) {
                None | Some(Value::Null) => Ok(self.search(tool, None, input)),
                Some(_) => text(field).map(|p| self.search(tool, Some(p), input)),
            },
            ToolClass::Low => Ok(self.table(
                Risk::Low,
                &format!("`{tool}` changes nothing outside Claude Code's own session"),
            )),
            ToolClass::Network => {
                Ok(self.table(Risk::High, &format!("`{tool}` reaches the network")))
            }
        };
        verdict.unwrap_or_else(|v| v)
    }

    /// The decision table alone, for a risk pincer assigns itself.
    fn table(&self, risk: Risk, why: &str) -> Verdict {
        let (decision, reason) = match decide_for(self.autonomy, risk, false) {
            Decision::Allow => (
                PermissionDecision::Allow,
                format!("{} risk is allowed", risk.as_str()),
            ),
            Decision::NeedsApproval => (
                PermissionDecision::Ask,
                format!("{} risk needs a person's approval", risk.as_str()),
            ),
            Decision::Block(r) => (PermissionDecision::Deny, r),
        };
        Verdict {
            decision,
            by: "policy",
            reason: format!(
                "{why} ({} risk); autonomy {}: {reason}",
                risk.as_str(),
                self.autonomy.as_str()
            ),
            risk: Some(risk),
            subject: None,
        }
    }

    /// pincer's gate on its own tool `name` with `args`, at the configured
    /// level.
    fn explained(&self, name: &str, args: &Value) -> Verdict {
        let Some(tool) = self.tools.iter().find(|t| t.name() == name) else {
            return Verdict::failure(format!(
                "pincer has no `{name}` tool to judge this call with"
            ));
        };
        level_verdict(
            &gate::explain(&self.deny_tools, tool.as_ref(), args),
            self.autonomy,
        )
    }

    /// The one place the shell classifier is reached: through pincer's
    /// shell tool, with the same deny lists and protected paths as pincer's
    /// own agent, built for bash (Claude Code runs the command with bash), so
    /// the classifier reads it as bash reads it.
    fn classify_bash(&self, command: &str) -> Verdict {
        self.explained("shell", &json!({ "command": command }))
    }

    fn bash(&self, command: &str) -> Verdict {
        let v = self.classify_bash(command);
        if v.decision == PermissionDecision::Deny {
            return v;
        }
        for word in path_words(command, self.boundary.cwd(), MAX_PATH_WORDS) {
            let Ok(l) = self.boundary.locate(&word) else {
                continue;
            };
            let state = match &l.place {
                Place::Protected(p) => p.clone(),
                Place::PincerHome => self.boundary.home().to_path_buf(),
                Place::HookConfig(p) => {
                    if v.decision == PermissionDecision::Allow {
                        return Verdict {
                            decision: PermissionDecision::Ask,
                            by: "hook_config",
                            reason: format!(
                                "the command names {}, Claude Code's settings where pincer's hooks are installed; {}",
                                leads(&word, &l.resolved),
                                v.reason
                            ),
                            risk: v.risk,
                            subject: Some(json!({"path": word, "resolved": p})),
                        };
                    }
                    continue;
                }
                Place::Outside | Place::Inside => continue,
            };
            {
                let p = &state;
                return Verdict {
                    decision: PermissionDecision::Deny,
                    by: "protected",
                    reason: format!(
                        "the command names {}, in {}: pincer's own state (configuration, audit trail, approvals, memory, sessions)",
                        leads(&word, &l.resolved),
                        p.display()
                    ),
                    risk: v.risk,
                    subject: Some(json!({"path": word, "resolved": l.resolved})),
                };
            }
        }
        v
    }

    fn write(&self, as_tool: &str, raw: &str, input: &Map<String, Value>) -> Verdict {
        let l = match self.boundary.locate(raw) {
            Ok(l) => l,
            Err(e) => return Verdict::failure(e),
        };
        let subject = json!({"path": raw, "resolved": l.resolved});
        let refuse = |by, reason: String| Verdict {
            decision: PermissionDecision::Deny,
            by,
            reason,
            risk: Some(Risk::Medium),
            subject: Some(subject.clone()),
        };
        match &l.place {
            Place::Protected(p) => refuse(
                "protected",
                format!(
                    "writes {}, in {}: pincer's own state, which no agent may change",
                    leads(raw, &l.resolved),
                    p.display()
                ),
            ),
            Place::HookConfig(p) => refuse(
                "hook_config",
                format!(
                    "writes {}: Claude Code's settings, where pincer's hooks are installed; an agent that could change them could turn pincer off ({})",
                    leads(raw, &l.resolved),
                    p.display()
                ),
            ),
            Place::PincerHome => refuse(
                "protected",
                format!(
                    "writes {}, inside pincer's home {}",
                    leads(raw, &l.resolved),
                    self.boundary.home().display()
                ),
            ),
            Place::Outside => refuse(
                "boundary",
                format!(
                    "writes {}, outside the project {}",
                    leads(raw, &l.resolved),
                    self.boundary.workspace().display()
                ),
            ),
            Place::Inside => {
                let mut v = self.explained(as_tool, &Value::Object(input.clone()));
                v.subject = Some(subject);
                v
            }
        }
    }

    fn read(&self, raw: &str, input: &Map<String, Value>) -> Verdict {
        let l = match self.boundary.locate(raw) {
            Ok(l) => l,
            Err(e) => return Verdict::failure(e),
        };
        let subject = json!({"path": raw, "resolved": l.resolved});
        if let Place::Protected(p) = &l.place {
            return Verdict {
                decision: PermissionDecision::Deny,
                by: "protected",
                reason: format!(
                    "reads {}, in {}: pincer's own state, which no agent may read",
                    leads(raw, &l.resolved),
                    p.display()
                ),
                risk: Some(Risk::Low),
                subject: Some(subject),
            };
        }
        let mut v = self.explained("file_read", &Value::Object(input.clone()));
        v.subject = Some(subject);
        v
    }

    fn search(&self, tool: &str, raw: Option<&str>, input: &Map<String, Value>) -> Verdict {
        let root = raw.unwrap_or(".");
        let l = match self.boundary.locate(root) {
            Ok(l) => l,
            Err(e) => return Verdict::failure(e),
        };
        let subject = json!({"path": root, "resolved": l.resolved});
        let refuse = |reason: String| Verdict {
            decision: PermissionDecision::Deny,
            by: "protected",
            reason,
            risk: Some(Risk::Low),
            subject: Some(subject.clone()),
        };
        if let Place::Protected(p) = &l.place {
            return refuse(format!(
                "searches {}, in {}: pincer's own state",
                leads(root, &l.resolved),
                p.display()
            ));
        }
        // Grep reads the files it searches; Glob only lists their names.
        if tool == "Grep"
            && let Some(p) = self.boundary.protected_beneath(&l.resolved)
        {
            return refuse(format!(
                "searches {}, which holds {}, pincer's own state; search a directory that does not",
                l.resolved.display(),
                p.display()
            ));
        }
        let mut v = self.explained("file_list", &Value::Object(input.clone()));
        v.subject = Some(subject);
        v
    }
}

/// `raw` as a tool named it, and where it leads when that differs.
fn leads(raw: &str, resolved: &std::path::Path) -> String {
    if std::path::Path::new(raw) == resolved {
        format!("`{raw}`")
    } else {
        format!("`{raw}` (which leads to {})", resolved.display())
    }
}

/// The explanation's decision at `autonomy`, as Claude Code's answer.
fn level_verdict(e: &Explanation, autonomy: Autonomy) -> Verdict {
    let level = e.decisions.iter().find(|d| d.autonomy == autonomy);
    let (decision, level_reason) = match level {
        Some(d) => (permission(d.decision), d.reason.clone()),
        None => (
            PermissionDecision::Ask,
            "no decision for this level".to_string(),
        ),
    };
    let by = if e.denied.is_some() {
        "deny_list"
    } else if decision == PermissionDecision::Deny && level_reason.starts_with("invalid arguments")
    {
        "invalid"
    } else {
        "policy"
    };
    Verdict {
        decision,
        by,
        reason: format!("{}; autonomy {}: {level_reason}", e.why, autonomy.as_str()),
        risk: Some(e.risk),
        subject: None,
    }
}
