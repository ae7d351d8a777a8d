//! `pincer demo`: a real agent session with a scripted model, then the
//! session store's crash safety and trimming, on real files in a throwaway
//! state directory. Every tool result, decision and number printed is what
//! the real components did; only the model's words are scripted.

use crate::session_cmd::trim_session;
use anyhow::{Context, Result, bail};
use pincer_core::config::FsyncPolicy;
use pincer_core::message::{Message, ToolCall};
use pincer_core::session::SessionStore;
use pincer_core::trim::{self, Budget, CharRatio, TokenCounter, TrimInput};
use serde::Serialize;
use serde_json::json;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pincer_core::agent::{Agent, AgentEvent, AgentSettings, Conversation};
use pincer_core::audit::Audit;
use pincer_core::config::{Autonomy, DEFAULT_SYSTEM_PROMPT};
use pincer_core::gate::{ApprovalAnswer, ApprovalRequest, Approver, Gate, GatePolicy};
use pincer_core::provider::BoxFuture;
use pincer_core::tool::Risk;
use pincer_providers::ScriptedProvider;
use pincer_tools::{ToolLimits, Workspace, kernel_tools};

#[derive(Serialize)]
struct Step {
    title: String,
    lines: Vec<String>,
    data: serde_json::Value,
}

#[derive(Serialize)]
struct Report {
    home: String,
    kept: bool,
    hardware: crate::demo_hw::HwStory,
    agent: AgentStory,
    steps: Vec<Step>,
}

#[derive(Serialize)]
struct AgentTurn {
    user: String,
    events: Vec<AgentEvent>,
    reply: String,
}

#[derive(Serialize)]
struct AgentStory {
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
}

/// The demo's stand-in for a person: approves medium-risk calls (file
/// edits), refuses anything riskier, and remembers what it was asked.
struct DemoApprover(Mutex<Vec<String>>);

impl Approver for DemoApprover {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        let answer = if req.risk <= Risk::Medium {
            ApprovalAnswer::Approved {
                call_hash: req.call_hash.clone(),
                by: "human:demo".into(),
            }
        } else {
            ApprovalAnswer::Denied {
                by: "human:demo".into(),
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

const DEMO_SCRIPT: &str = include_str!("demo_script.json");

/// The agent settings every demo run uses.
pub(crate) fn settings() -> AgentSettings {
    AgentSettings {
        system_prompt: DEFAULT_SYSTEM_PROMPT.to_string(),
        max_tool_iterations: 6,
        context_window: 8192,
        output_reserve: 1024,
        summary_max_chars: 2000,
        chars_per_token: 4.0,
    }
}

/// One user turn; returns the reply and the events worth showing (every
/// event but the streamed text).
pub(crate) fn run_turn(
    rt: &tokio::runtime::Runtime,
    agent: &mut Agent,
    conv: &mut Conversation,
    user: &str,
) -> Result<(String, Vec<AgentEvent>)> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |e: AgentEvent| {
            if !matches!(e, AgentEvent::TextDelta { .. })
                && let Ok(mut v) = events.lock()
            {
                v.push(e);
            }
        }
    };
    let outcome = rt.block_on(agent.run_turn(conv, user, &sink))?;
    let events = events.lock().map(|v| v.clone()).unwrap_or_default();
    Ok((outcome.reply, events))
}

const NOTES: &str =
    "# Greenhouse\nVent motor serviced 2026-11-02.\nTomatoes: water every 2 days.\n";

/// Three user turns against the scripted model, with the real file and
/// shell tools in a temporary workspace and the real session store.
fn agent_story(home: &Path) -> Result<AgentStory> {
    let ws_dir = home.join("workspace");
    std::fs::create_dir_all(ws_dir.join("greenhouse"))?;
    std::fs::write(ws_dir.join("greenhouse/notes.md"), NOTES)?;
    std::fs::write(ws_dir.join("selftest.sh"), "echo sensors ok\n")?;
    let ws = Arc::new(Workspace::open(
        &ws_dir,
        vec![
            home.join("sessions"),
            home.join("audit"),
            home.join("approvals"),
            home.join("config.toml"),
        ],
    )?);
    let provider = Arc::new(ScriptedProvider::from_json("scripted", DEMO_SCRIPT)?);
    let approver = Arc::new(DemoApprover(Mutex::new(Vec::new())));
    let autonomy = Autonomy::Supervised;
    let settings = settings();
    let audit = Arc::new(Audit::open(&home.join("audit"))?);
    let policy = GatePolicy {
        autonomy,
        approval_timeout: Duration::from_secs(5),
        deny_tools: vec![],
    };
    let gate = Gate::new(policy, "agent:demo", audit.clone(), approver.clone());
    let mut agent = Agent::new(
        provider,
        kernel_tools(ws, &ToolLimits::default(), "demo"),
        Arc::new(gate),
        settings,
    );
    let store = SessionStore::open(home.join("sessions"), FsyncPolicy::Turn)?;
    let mut conv = Conversation::open(&store, "demo-agent")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut turns = Vec::new();
    for user in [
        "What do my greenhouse notes say?",
        "Add a reminder to check the vent motor on Friday.",
        "Run the sensor self-test.",
    ] {
        let (reply, events) = run_turn(&rt, &mut agent, &mut conv, user)?;
        turns.push(AgentTurn {
            user: user.to_string(),
            events,
            reply,
        });
    }
    let approvals = approver.0.lock().map(|v| v.clone()).unwrap_or_default();
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
        session_messages: store.read("demo-agent")?.messages.len(),
    })
}

fn render_agent(a: &AgentStory, out: &mut String) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "Part 2: an agent session. The model is scripted; the file and shell tools, the\n\
         policy gate (autonomy = {}), the audit trail and the session store are real.\n",
        a.autonomy
    );
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
                    let first: String = preview.replace('\n', " ⏎ ").chars().take(100).collect();
                    let _ = writeln!(out, "   → {name} {status:?}: {first}");
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

/// A removable temp directory of our own (tempfile is a dev-only dependency).
struct TempHome(PathBuf);

impl TempHome {
    fn new() -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!("pincer-demo-{}-{nanos}", std::process::id()));
        // Exclusive: an existing directory (or a symlink planted in the
        // shared temp dir) is an error, never reused.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&p)
            .with_context(|| format!("cannot create {}", p.display()))?;
        Ok(Self(p))
    }
}

fn sensor_turn(i: usize) -> Vec<Message> {
    let id = format!("call_{i}");
    vec![
        Message::user(format!(
            "Day {i}: what does the greenhouse log say about the temperature?"
        )),
        Message::assistant_calls(
            "",
            vec![ToolCall::new(
                id.clone(),
                "file_read",
                &json!({ "path": format!("greenhouse/day-{i}.log") }),
            )],
        ),
        Message::tool_result(
            id,
            "file_read",
            format!(
                "06:00 18.{i} C\n12:00 2{}.5 C\n18:00 21.{i} C\nvent opened at 11:40, closed at 16:10",
                i % 10
            ),
        ),
        Message::assistant(format!(
            "On day {i} it peaked at 2{}.5 °C around noon; the vent ran from 11:40 to 16:10.",
            i % 10
        )),
    ]
}

pub fn run(json_out: bool, keep: bool) -> Result<ExitCode> {
    let home = TempHome::new()?;
    let result = crate::demo_hw::story(&home.0)
        .and_then(|hw| Ok((hw, agent_story(&home.0)?, story(&home.0)?)));
    let kept = keep || result.is_err();
    if !kept {
        // Best effort: a leftover temp dir is harmless and named in the output.
        let _ = std::fs::remove_dir_all(&home.0);
    }
    let (hardware, agent, steps) = result?;
    let report = Report {
        home: home.0.display().to_string(),
        kept,
        hardware,
        agent,
        steps,
    };
    if json_out {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pincer demo: on real files in a throwaway PINCER_HOME ({}{}).\n",
        r.home,
        if r.kept {
            ", kept"
        } else {
            ", removed afterwards"
        }
    );
    crate::demo_hw::render(&r.hardware, &mut out);
    render_agent(&r.agent, &mut out);
    let _ = writeln!(
        out,
        "Part 3: the session store under crashes, and turn-boundary trimming.\n"
    );
    for (i, s) in r.steps.iter().enumerate() {
        let _ = writeln!(out, "{}. {}", i + 1, s.title);
        for l in &s.lines {
            let _ = writeln!(out, "   {l}");
        }
        out.push('\n');
    }
    out
}

fn story(home: &Path) -> Result<Vec<Step>> {
    let store = SessionStore::open(home.join("sessions"), FsyncPolicy::Turn)?;
    let counter = CharRatio::default();
    let mut steps = Vec::new();
    let key = "greenhouse";

    // 1. A conversation with tool calls.
    let turns = 12;
    let mut w = store.writer(key)?;
    let mut appended = 0;
    for i in 1..=turns {
        appended += w.append(&sensor_turn(i))?.appended;
    }
    let file = store.dir().join(&w.meta().file);
    drop(w);
    steps.push(Step {
        title: format!("A conversation of {turns} turns, each with a tool call and its result"),
        lines: vec![
            format!("appended {appended} messages, one JSON line each, to sessions/{key}.jsonl"),
            "fsync = \"turn\": each user message is durable before the agent answers it".into(),
        ],
        data: json!({ "turns": turns, "messages": appended }),
    });

    // 2. kill -9 in the middle of a write.
    let torn = br#"{"role":"user","content":"Day 13: and the humid"#;
    OpenOptions::new()
        .append(true)
        .open(&file)?
        .write_all(torn)?;
    let before = store.read(key)?;
    let mut w = store.writer(key)?;
    w.append(&sensor_turn(13))?;
    drop(w);
    let after = store.read(key)?;
    if after.stats.torn_tail_bytes != 0 || !after.stats.unreadable.is_empty() {
        bail!("demo: torn tail was not repaired");
    }
    steps.push(Step {
        title: "kill -9 in the middle of a write leaves half a record at the end".into(),
        lines: vec![
            format!(
                "a reader sees {} messages and ignores the torn tail ({} bytes)",
                before.messages.len(),
                before.stats.torn_tail_bytes
            ),
            format!(
                "the next writer truncates it before appending: {} messages, {} unreadable lines, torn tails repaired: {}",
                after.messages.len(),
                after.stats.unreadable.len(),
                after.stats.torn_tail_repairs
            ),
        ],
        data: json!({
            "torn_tail_bytes": before.stats.torn_tail_bytes,
            "messages_after": after.messages.len(),
            "unreadable_after": after.stats.unreadable.len(),
        }),
    });

    // 3. A crash while a tool was running.
    let mut w = store.writer(key)?;
    w.append(&[
        Message::user("Day 14: is the vent motor still running?"),
        Message::assistant_calls(
            "",
            vec![ToolCall::new("call_14", "gpio_read", &json!({ "pin": 17 }))],
        ),
    ])?;
    drop(w);
    let view = store.read(key)?;
    let (_, repair) = view.context();
    let mut w = store.writer(key)?;
    let mut view = w.view()?;
    let closed = w.close_interrupted_calls(&mut view)?;
    drop(w);
    let last = view
        .messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    steps.push(Step {
        title: "A crash while a tool call was in flight leaves a call with no result".into(),
        lines: vec![
            format!(
                "a reader repairs it in memory: {} synthetic result(s) for {:?}, so a provider never sees an orphan call",
                repair.synthetic_results.len(),
                repair.synthetic_results
            ),
            format!(
                "the next writer closes it on disk too ({closed:?}); the result says: {last}"
            ),
        ],
        data: json!({ "synthetic_results": repair.synthetic_results, "closed_on_disk": closed }),
    });

    // 4. Trim to a small window.
    let budget = Budget {
        context_window: 900,
        tool_def_tokens: 120,
        output_reserve: 256,
        pinned_tokens: 0,
    };
    let live_before = view.messages.len();
    let report = trim_session(&store, key, budget, &counter, 600)?;
    let after = store.read(key)?;
    // Checked on the stored lines themselves, not on a repaired copy.
    let orphans = usize::from(!trim::is_repaired(&after.messages));
    let summary_lines: Vec<String> = after
        .meta
        .summary
        .lines()
        .take(3)
        .map(str::to_string)
        .collect();
    let mut lines = vec![
        format!(
            "window {} tokens = messages + tool definitions ({}) + output reserve ({})",
            budget.context_window, budget.tool_def_tokens, budget.output_reserve
        ),
        format!(
            "turns kept {}, dropped {} whole turns ({} messages); tokens {} -> {}",
            report.kept_turns,
            report.dropped_turns,
            report.dropped_messages,
            report.tokens_before,
            report.tokens_after
        ),
        format!("stored messages with a tool call split from its result: {orphans}"),
        "dropped turns are folded into the session's running summary:".into(),
    ];
    lines.extend(summary_lines.iter().map(|l| format!("  {l}")));
    if let Some(c) = &report.compacted {
        lines.push(format!(
            "over half the file was skipped, so it was compacted: {} -> {} ({} -> {} bytes); {} live messages remain",
            c.old_file,
            c.new_file,
            c.bytes_before,
            c.bytes_after,
            after.messages.len()
        ));
    }
    steps.push(Step {
        title: "Turn-boundary trimming to a small context window".into(),
        lines,
        data: json!({
            "live_messages_before": live_before,
            "report": report,
            "orphans_after": orphans,
        }),
    });

    // 5. The current turn alone is too big.
    let huge = "reading ".repeat(5000);
    let current = vec![
        Message::user("Day 15: dump the whole sensor history"),
        Message::assistant_calls(
            "",
            vec![ToolCall::new(
                "call_15",
                "file_read",
                &json!({ "path": "greenhouse/history.log" }),
            )],
        ),
        Message::tool_result("call_15", "file_read", huge.clone()),
    ];
    let input = TrimInput {
        messages: &current,
        summary: "",
        summary_max_chars: 600,
        budget,
    };
    let trimmed = trim::trim(&input, &counter)?;
    let shortened = trimmed
        .shortened
        .first()
        .map(|s| (s.from_chars, s.to_chars))
        .unwrap_or_default();
    let tiny = TrimInput {
        messages: &[Message::user("word ".repeat(800))],
        summary: "",
        summary_max_chars: 600,
        budget,
    };
    let overflow = match trim::trim(&tiny, &counter) {
        Err(e) => e.to_string(),
        Ok(_) => bail!("demo: an oversized user message should not fit"),
    };
    steps.push(Step {
        title: "The current turn is never dropped".into(),
        lines: vec![
            format!(
                "a {}-token tool result is shortened from {} to {} chars with a visible marker; tokens {} -> {}",
                counter.text_tokens(&huge),
                shortened.0,
                shortened.1,
                trimmed.tokens_before,
                trimmed.tokens_after
            ),
            format!("a user message that cannot fit is an error, not a silent cut: {overflow}"),
        ],
        data: json!({ "shortened": [shortened.0, shortened.1], "overflow_error": overflow }),
    });
    Ok(steps)
}
