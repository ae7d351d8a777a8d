//! `pincer demo`, part 2: an agent session under `supervised` autonomy.
//! The model is scripted; the file and shell tools, the gate, the audit
//! trail and the session store are real. A file read runs, an edit asks
//! and is approved, a shell command asks and is refused (the demo's
//! approver stands in for you and approves only medium-risk edits).
//! Where the OS sandbox cannot be built (a kernel without Landlock, or
//! qemu-user), pincer offers no shell; the demo then says so and runs the
//! file turns only, as `pincer agent` would.

use anyhow::Result;
use pincer_core::agent::AgentEvent;
use pincer_core::approvals::{ApprovalAnswer, ApprovalRequest, Approver};
use pincer_core::policy::{Autonomy, Risk};
use pincer_core::provider::BoxFuture;
use serde::Serialize;
use std::path::Path;
use std::sync::{Arc, Mutex};

#[derive(Serialize)]
struct AgentTurn {
    user: String,
    events: Vec<AgentEvent>,
    reply: String,
}

#[derive(Serialize)]
pub struct AgentStory {
    workspace: String,
    autonomy: &'static str,
    turns: Vec<AgentTurn>,
    approvals: Vec<String>,
    notes_after: String,
    session_messages: usize,
    /// Entries in the audit trail, by kind, and whether it verifies.
    audit_entries: u64,
    audit_kinds: std::collections::BTreeMap<String, usize>,
    audit_verified: bool,
    /// Why the shell tool was not offered here (the runtime's warning), if
    /// it was not: the sandbox it needs cannot be built on this machine.
    shell_not_offered: Option<String>,
}

/// Who the demo's approvers answer as.
pub const DEMO_PERSON: &str = "human:demo";

/// The demo's stand-in for a person: approves medium-risk calls (file
/// edits), refuses anything riskier, and remembers what it was asked.
struct DemoApprover(Mutex<Vec<String>>);

impl Approver for DemoApprover {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        let answer = if req.risk <= Risk::Medium {
            ApprovalAnswer::Approved {
                call_hash: req.call_hash.clone(),
                by: DEMO_PERSON.into(),
            }
        } else {
            ApprovalAnswer::Denied {
                by: DEMO_PERSON.into(),
                reason: "the demo approves medium-risk file edits and nothing riskier".into(),
            }
        };
        let line = format!(
            "{} ({} risk) {}: {}",
            req.tool,
            req.risk.as_str(),
            req.arguments,
            match &answer {
                ApprovalAnswer::Approved { .. } => "approved".to_string(),
                ApprovalAnswer::Denied { reason, .. } => format!("denied ({reason})"),
            }
        );
        if let Ok(mut log) = self.0.lock() {
            log.push(line);
        }
        Box::pin(async move { answer })
    }
}

const SCRIPT: &str = include_str!("session_script.json");
/// The same session without the shell turn, for a machine that offers no shell.
const SCRIPT_NO_SHELL: &str = include_str!("session_script_no_shell.json");

const NOTES: &str =
    "# Greenhouse\nVent motor serviced 2026-11-02.\nTomatoes: water every 2 days.\n";

/// Three user turns against the scripted model, with the real tools in a
/// temporary workspace and the real session store.
pub fn story(rt: &tokio::runtime::Runtime, root: &Path) -> Result<AgentStory> {
    let home = super::part_home(root, "session")?;
    let ws_dir = home.default_workspace();
    std::fs::create_dir_all(ws_dir.join("greenhouse"))?;
    std::fs::write(ws_dir.join("greenhouse/notes.md"), NOTES)?;
    std::fs::write(ws_dir.join("selftest.sh"), "echo sensors ok\n")?;
    let autonomy = Autonomy::Supervised;
    let mut runtime = super::runtime(rt, &home, autonomy, SCRIPT)?;
    let mut users = vec![
        "What do my greenhouse notes say?",
        "Add a reminder to check the vent motor on Friday.",
        "Run the sensor self-test.",
    ];
    let mut shell_not_offered = None;
    if !runtime.tools().iter().any(|t| t.name() == "shell") {
        shell_not_offered = Some(
            runtime
                .warnings()
                .iter()
                .find(|w| w.starts_with("shell"))
                .cloned()
                .unwrap_or_else(|| "shell: not offered (no warning given)".to_string()),
        );
        drop(runtime);
        runtime = super::runtime(rt, &home, autonomy, SCRIPT_NO_SHELL)?;
        users.pop();
    }
    let approver = Arc::new(DemoApprover(Mutex::new(Vec::new())));
    let mut session = super::open(&runtime, "demo-agent", approver.clone())?;
    let mut turns = Vec::new();
    for user in users {
        let (reply, events) = super::run_turn(rt, &mut session, user)?;
        turns.push(AgentTurn {
            user: user.to_string(),
            events,
            reply,
        });
    }
    let approvals = approver.0.lock().map(|v| v.clone()).unwrap_or_default();
    let audit = runtime.audit();
    let report = audit.verify()?;
    let mut audit_kinds = std::collections::BTreeMap::new();
    for e in audit.log(None, None)? {
        *audit_kinds.entry(e.kind).or_insert(0) += 1;
    }
    Ok(AgentStory {
        audit_entries: report.entries,
        audit_kinds,
        audit_verified: report.defect.is_none(),
        workspace: ws_dir.display().to_string(),
        autonomy: autonomy.as_str(),
        turns,
        approvals,
        notes_after: std::fs::read_to_string(ws_dir.join("greenhouse/notes.md"))?,
        session_messages: session.messages().len(),
        shell_not_offered,
    })
}

pub fn render(a: &AgentStory, out: &mut String) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "Part 2: an agent session. The model is scripted; the file and shell tools, the\n\
         policy gate (autonomy = {}), the audit trail and the session store are real.\n",
        a.autonomy
    );
    if let Some(why) = &a.shell_not_offered {
        let _ = writeln!(
            out,
            "No shell on this machine, so no shell turn: {}\n",
            pincer_core::text::terminal_safe(why)
        );
    }
    for t in &a.turns {
        let _ = writeln!(out, "you> {}", t.user);
        for e in &t.events {
            match e {
                AgentEvent::ApprovalNeeded { name, risk, .. } => {
                    let _ = writeln!(
                        out,
                        "   ? {name} is {} risk: asking for approval",
                        risk.as_str()
                    );
                }
                AgentEvent::ToolCallStarted {
                    name,
                    arguments,
                    risk,
                    ..
                } => {
                    let _ = writeln!(out, "   ⚙ {name} {arguments} ({} risk)", risk.as_str());
                }
                AgentEvent::ToolCallFinished {
                    name,
                    status,
                    preview,
                    ..
                } => {
                    let first = pincer_core::text::cut_words(&preview.replace('\n', " ⏎ "), 100);
                    let status = serde_json::to_value(status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    let _ = writeln!(out, "   → {name} {status}: {first}");
                }
                _ => {}
            }
        }
        let _ = writeln!(out, "pincer> {}\n", t.reply);
    }
    let _ = writeln!(out, "approvals asked:");
    for line in &a.approvals {
        let _ = writeln!(out, "   {line}");
    }
    let _ = writeln!(out, "greenhouse/notes.md now reads:");
    for line in a.notes_after.lines() {
        let _ = writeln!(out, "   | {line}");
    }
    let _ = writeln!(
        out,
        "the session holds {} messages, one JSON line each.",
        a.session_messages
    );
    let kinds: Vec<String> = a
        .audit_kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let _ = writeln!(
        out,
        "the audit trail holds {} hash-chained entries ({}); `audit verify`: {}.\n",
        a.audit_entries,
        kinds.join(", "),
        if a.audit_verified { "ok" } else { "DEFECT" }
    );
}
