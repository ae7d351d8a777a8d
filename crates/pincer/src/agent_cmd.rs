//! `pincer agent`: one turn (`-m`) or a REPL, streamed to the terminal.

use crate::Ctx;
use crate::wiring::{self, Env};
use anyhow::{Context, Result};
use pincer_core::agent::{Agent, AgentEvent, AgentSettings, Conversation, StopReason, ToolStatus};
use pincer_core::approvals::{ApprovalQueue, QueueApprover};
use pincer_core::gate::{ApprovalAnswer, ApprovalRequest, Approver};
use pincer_core::provider::{BoxFuture, FinishReason};
use pincer_core::session::SessionStore;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The most characters of pinned facts put in a system prompt (CX4).
pub const PINNED_MAX_CHARS: usize = 4000;

#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// One message: run one turn and exit. Without it, an interactive REPL.
    #[arg(short, long, value_name = "TEXT")]
    message: Option<String>,
    /// The session to continue (default: `cli`).
    #[arg(long, value_name = "KEY", default_value = "cli")]
    session: String,
    /// Use only this configured provider.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// The directory the tools may touch.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print events as JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// Asks at the terminal; the line typed is the answer (PO4). It keeps the
/// deadline itself: it waits for input with `poll` and reads only a line
/// that is there, so when no one answers in time nothing is left blocked on
/// stdin to swallow the next line typed at the prompt.
struct TerminalApprover {
    timeout: Duration,
}

/// Waits up to `timeout` for a line on stdin. `Ok(None)`: no answer in time.
fn read_line_within(timeout: Duration) -> std::io::Result<Option<String>> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let deadline = std::time::Instant::now() + timeout;
    let stdin = std::io::stdin();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let wait = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&wait)) {
            Ok(0) => return Ok(None),
            // Readable: a terminal in line mode has a whole line (or EOF).
            Ok(_) => {
                let mut line = String::new();
                stdin.read_line(&mut line)?;
                return Ok(Some(line));
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        let prompt = format!(
            "\n[approval] the agent wants to run `{}` ({} risk: {}) with {}\n           approve within {} s? [y/N] ",
            terminal_safe(&req.tool),
            req.risk.as_str(),
            terminal_safe(&req.why),
            terminal_safe(&req.arguments.to_string()),
            self.timeout.as_secs()
        );
        let call_hash = req.call_hash.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let answer = tokio::task::spawn_blocking(move || {
                eprint!("{prompt}");
                let _ = std::io::stderr().flush();
                read_line_within(timeout)
            })
            .await;
            match answer {
                Ok(Ok(Some(line))) if matches!(line.trim(), "y" | "Y" | "yes") => {
                    ApprovalAnswer::Approved {
                        call_hash,
                        by: "human:terminal".into(),
                    }
                }
                Ok(Ok(Some(_))) => ApprovalAnswer::Denied {
                    by: "human:terminal".into(),
                    reason: "the person at the terminal said no".into(),
                },
                Ok(Ok(None)) => {
                    eprintln!("(no answer within {} s: denied)", timeout.as_secs());
                    ApprovalAnswer::Denied {
                        by: "system".into(),
                        reason: format!("no answer within {} s", timeout.as_secs()),
                    }
                }
                _ => ApprovalAnswer::Denied {
                    by: "system".into(),
                    reason: "could not read an answer from the terminal".into(),
                },
            }
        })
    }
}

/// Text from a model or a tool, made safe for a terminal: control
/// characters other than newline and tab (escape sequences that could hide
/// or rewrite what is around an approval prompt, set the clipboard…) and
/// bidirectional overrides are shown escaped. Tool output is data (PO5).
pub fn terminal_safe(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let unsafe_char = (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            if unsafe_char {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// Renders events as text (tool activity on stderr, the reply on stdout)
/// or as JSON lines on stdout. A closed stdout (`| head`) is not an error
/// worth dying for mid-turn: writes that fail are dropped.
fn renderer(json: bool) -> impl Fn(AgentEvent) + Send + Sync {
    move |e: AgentEvent| {
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        if json {
            if let Ok(line) = serde_json::to_string(&e) {
                let _ = writeln!(out, "{line}");
            }
            return;
        }
        let _ = match e {
            AgentEvent::TextDelta { text } => {
                write!(out, "{}", terminal_safe(&text)).and_then(|()| out.flush())
            }
            AgentEvent::ToolCallStarted {
                name,
                arguments,
                risk,
                ..
            } => writeln!(
                err,
                "\n  ⚙ {name} {} ({} risk)",
                terminal_safe(&arguments.to_string()),
                risk.as_str()
            ),
            AgentEvent::ToolCallFinished {
                name,
                status,
                preview,
                ..
            } => {
                let mark = match status {
                    ToolStatus::Ok => "✓",
                    ToolStatus::Error => "✗",
                    ToolStatus::Blocked => "⛔",
                    ToolStatus::Denied => "✋",
                };
                let first = preview.lines().next().unwrap_or("");
                writeln!(err, "  {mark} {name}: {}", terminal_safe(first))
            }
            AgentEvent::Repaired { closed_calls } => writeln!(
                err,
                "  (closed {} tool call(s) an earlier crash left open)",
                closed_calls.len()
            ),
            AgentEvent::Trimmed {
                dropped_turns,
                tokens_before,
                tokens_after,
            } => writeln!(
                err,
                "  (trimmed {dropped_turns} old turn(s): {tokens_before} -> {tokens_after} tokens)"
            ),
            AgentEvent::ModelReplied {
                finish: FinishReason::Length,
                ..
            } => writeln!(
                err,
                "\n  (the reply was cut off at the output limit, [context] output_reserve)"
            ),
            AgentEvent::TurnDone {
                stop: StopReason::MaxToolIterations,
                reply,
                ..
            } => writeln!(out).and_then(|()| writeln!(err, "{reply}")),
            AgentEvent::TurnDone { .. } => writeln!(out),
            _ => Ok(()),
        };
    }
}

pub fn run(ctx: &Ctx, args: AgentArgs) -> Result<ExitCode> {
    // The shell tool runs unsandboxed for now: keep other processes of this
    // user (the agent's own shell among them) from reading our environment,
    // API keys included, through /proc/<pid>/environ or ptrace.
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        eprintln!(
            "warning: cannot make pincer non-dumpable ({e}); its environment is readable by the shell tool"
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let env = Env::read(ctx);
    let choice = rt.block_on(wiring::choose_provider(ctx, &env, args.provider.as_deref()))?;
    if !args.json {
        eprintln!("provider: {}", choice.how);
    }
    let provider = wiring::build_provider(&choice, &env)?;
    let tools = wiring::tools_for(ctx, &env, args.workspace.clone())?;
    let (skills, problems) = pincer_core::skills::load(&ctx.home.root().join("skills"))?;
    for p in &problems {
        eprintln!(
            "warning: skill {} not loaded: {}",
            p.path.display(),
            p.reason
        );
    }
    let cfg = &ctx.config;
    let interactive = std::io::stdin().is_terminal();
    let approver: Arc<dyn Approver> = if interactive {
        Arc::new(TerminalApprover {
            timeout: Duration::from_secs(cfg.policy.approval_timeout_secs),
        })
    } else {
        // Nobody at this terminal: a person answers from another one (or
        // the gateway) through the approval queue; no answer is a denial.
        let queue = ApprovalQueue::open(&ctx.home.approvals_dir())?;
        // Said on stderr in both modes: stdout may be the JSON stream.
        Arc::new(
            QueueApprover::new(queue, Duration::from_secs(cfg.policy.approval_timeout_secs))
                .on_pending(|p| {
                    eprintln!(
                        "[approval {}] `{}` ({} risk) is waiting: run `pincer approvals approve {}` or `pincer approvals deny {}` within {} s",
                        p.id,
                        terminal_safe(&p.tool),
                        p.risk.as_str(),
                        p.id,
                        p.id,
                        p.timeout().as_secs()
                    );
                }),
        )
    };
    let context_window = choice
        .chain
        .iter()
        .map(|p| p.context_window)
        .min()
        .unwrap_or(cfg.context.context_window);
    let store = SessionStore::open(ctx.home.sessions_dir(), cfg.session.fsync)?;
    let mut system_prompt = pincer_core::skills::system_prompt(&cfg.agent.system_prompt, &skills);
    // CX4: pinned facts ride in the system prompt, which trimming never
    // drops; the section is capped and says so when a fact did not fit.
    match crate::memory_cmd::pinned_section(ctx, PINNED_MAX_CHARS) {
        Ok((pinned, left_out, problems)) => {
            if !pinned.is_empty() {
                system_prompt.push_str("\n\n");
                system_prompt.push_str(&pinned);
            }
            if left_out > 0 {
                eprintln!(
                    "warning: {left_out} pinned fact(s) left out of the prompt: the pinned section is capped at {PINNED_MAX_CHARS} characters"
                );
            }
            for p in problems {
                eprintln!("warning: memory page not read: {}", terminal_safe(&p));
            }
        }
        Err(e) => eprintln!("warning: pinned facts not loaded: {e:#}"),
    }
    // ME5: a new session starts from the last one's handoff, built from disk.
    if cfg.agent.handoff && !store.exists(&args.session)? {
        // Pinned facts are already in the prompt (capped); the handoff
        // adds only the recent pages.
        let memory = match crate::memory_cmd::facts(ctx) {
            Ok(f) => crate::handoff::MemoryFacts {
                pinned: Vec::new(),
                recent: f.recent,
            },
            Err(e) => {
                eprintln!("warning: memory not read for the handoff: {e:#}");
                crate::handoff::MemoryFacts::default()
            }
        };
        let h = crate::handoff::build(&ctx.home, None, Some(&args.session), memory)?;
        if h.session.is_some() {
            system_prompt.push_str("\n\n");
            system_prompt.push_str(&crate::handoff::render(&h));
        }
    }
    let settings = AgentSettings {
        system_prompt,
        max_tool_iterations: cfg.agent.max_tool_iterations,
        context_window,
        output_reserve: cfg.context.output_reserve,
        summary_max_chars: cfg.context.summary_max_chars,
        chars_per_token: cfg.context.chars_per_token,
    };
    let audit = wiring::open_audit(ctx)?;
    let actor = format!("agent:{}", cfg.agent.agent_id);
    let gate = wiring::gate(ctx, &env, audit, approver, &actor)?;
    let mut agent = Agent::new(provider, tools, Arc::new(gate), settings);
    let render = renderer(args.json);

    if let Some(message) = args.message {
        if message.trim().is_empty() {
            anyhow::bail!("-m/--message is empty; say something, or leave it out for the REPL");
        }
        let mut conv = Conversation::open(&store, &args.session)?;
        let result = rt.block_on(async {
            tokio::select! {
                r = agent.run_turn(&mut conv, &message, &render) => {
                    r?;
                    Ok(ExitCode::SUCCESS)
                }
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("\ncancelled; the session stays valid");
                    Ok(ExitCode::from(130))
                }
            }
        });
        // An approval prompt may still be blocked reading the terminal:
        // do not wait for it on the way out.
        rt.shutdown_background();
        return result;
    }
    let result = repl(&rt, &store, &mut agent, args.session, &render);
    rt.shutdown_background();
    result
}

fn repl(
    rt: &tokio::runtime::Runtime,
    store: &SessionStore,
    agent: &mut Agent,
    mut key: String,
    render: &(dyn Fn(AgentEvent) + Send + Sync),
) -> Result<ExitCode> {
    let mut editor = rustyline::DefaultEditor::new().context("cannot start the line editor")?;
    let history = store.dir().parent().map(|h| h.join("history.txt"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    eprintln!(
        "pincer agent: session `{key}`. /exit to leave, /new for a new session, /session [KEY] to show or switch."
    );
    let mut conv = Conversation::open(store, &key)?;
    loop {
        let line = match editor.readline("you> ") {
            Ok(l) => l,
            Err(
                rustyline::error::ReadlineError::Interrupted | rustyline::error::ReadlineError::Eof,
            ) => break,
            Err(e) => return Err(e.into()),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line);
        match line
            .split_once(' ')
            .map_or((line, ""), |(c, r)| (c, r.trim()))
        {
            ("/exit", _) => break,
            ("/new", _) => {
                let next = format!("cli-{}", pincer_core::message::Timestamp::now().as_millis());
                match Conversation::open(store, &next) {
                    Ok(c) => {
                        conv = c;
                        key = next;
                        eprintln!("new session `{key}`");
                    }
                    Err(e) => eprintln!("error: {e}"),
                }
                continue;
            }
            ("/session", "") => {
                eprintln!("session `{key}`: {} live messages", conv.messages().len());
                continue;
            }
            ("/session", next) => {
                // Open first: a bad key or a session busy elsewhere keeps
                // the current one.
                match Conversation::open(store, next) {
                    Ok(c) => {
                        conv = c;
                        key = next.to_string();
                        eprintln!("session `{key}`: {} live messages", conv.messages().len());
                    }
                    Err(e) => eprintln!("error: {e}"),
                }
                continue;
            }
            (cmd, _) if cmd.starts_with('/') => {
                eprintln!("unknown command {cmd}; try /exit, /new, /session [KEY]");
                continue;
            }
            _ => {}
        }
        print!("pincer> ");
        let _ = std::io::stdout().flush();
        let result = rt.block_on(async {
            tokio::select! {
                r = agent.run_turn(&mut conv, line, render) => Some(r),
                _ = tokio::signal::ctrl_c() => None,
            }
        });
        match result {
            Some(Ok(_)) => {}
            Some(Err(e)) => eprintln!("\nerror: {e}"),
            None => eprintln!("\ncancelled; the session stays valid"),
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn terminal_output_cannot_carry_escape_sequences() {
        assert_eq!(terminal_safe("ok\nnext\tcol"), "ok\nnext\tcol");
        let shown = terminal_safe("\u{1b}[8mhidden\u{1b}]52;c;Zm9v\u{7}\u{202e}txt");
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}') && !shown.contains('\u{202e}')
        );
        assert!(
            shown.contains("\\u{1b}[8mhidden") && shown.contains("\\u{202e}"),
            "{shown}"
        );
    }
}
