//! `pincer agent`: one turn (`-m`) or a REPL, streamed to the terminal.

use crate::Ctx;
use anyhow::{Context, Result};
use pincer_core::actor;
use pincer_core::agent::{AgentEvent, StopReason, ToolStatus};
use pincer_core::approvals::{ApprovalAnswer, ApprovalRequest, Approver};
use pincer_core::provider::{BoxFuture, FinishReason};
use pincer_core::text::terminal_safe;
use pincer_runtime::{AgentSession, Runtime, RuntimeOptions};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

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

/// Waits up to `timeout` for a line on stdin. `Ok(None)`: no answer in
/// time, or `cancel` became readable or hung up (its other end is dropped
/// when the turn that asked is cancelled): then nothing is read, so a
/// prompt nobody waits for any more cannot take the next line typed.
fn read_line_within(
    timeout: Duration,
    cancel: &impl rustix::fd::AsFd,
) -> std::io::Result<Option<String>> {
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
        let mut fds = [
            PollFd::new(&stdin, PollFlags::IN),
            PollFd::new(cancel, PollFlags::IN),
        ];
        match poll(&mut fds, Some(&wait)) {
            Ok(0) => return Ok(None),
            Ok(_) if !fds[1].revents().is_empty() => return Ok(None),
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
            // Dropped with this future: a cancelled turn's prompt stops
            // waiting at once instead of at its deadline.
            let (cancel, _cancel_on_drop) = match rustix::pipe::pipe() {
                Ok(p) => p,
                Err(e) => {
                    return ApprovalAnswer::Denied {
                        by: actor::SYSTEM.into(),
                        reason: format!("could not ask at the terminal: {e}"),
                    };
                }
            };
            let answer = tokio::task::spawn_blocking(move || {
                eprint!("{prompt}");
                let _ = std::io::stderr().flush();
                read_line_within(timeout, &cancel)
            })
            .await;
            match answer {
                Ok(Ok(Some(line))) if matches!(line.trim(), "y" | "Y" | "yes") => {
                    ApprovalAnswer::Approved {
                        call_hash,
                        by: actor::HUMAN_TERMINAL.into(),
                    }
                }
                Ok(Ok(Some(_))) => ApprovalAnswer::Denied {
                    by: actor::HUMAN_TERMINAL.into(),
                    reason: "the person at the terminal said no".into(),
                },
                Ok(Ok(None)) => {
                    eprintln!("(no answer within {} s: denied)", timeout.as_secs());
                    ApprovalAnswer::Denied {
                        by: actor::SYSTEM.into(),
                        reason: format!("no answer within {} s", timeout.as_secs()),
                    }
                }
                _ => ApprovalAnswer::Denied {
                    by: actor::SYSTEM.into(),
                    reason: "could not read an answer from the terminal".into(),
                },
            }
        })
    }
}

/// Set before a REPL turn: the reply's `pincer> ` label is printed with
/// its first word, so it never stands in front of an approval prompt.
static LABEL_PENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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
                let label = if LABEL_PENDING.swap(false, std::sync::atomic::Ordering::Relaxed) {
                    "pincer> "
                } else {
                    ""
                };
                write!(out, "{label}{}", terminal_safe(&text)).and_then(|()| out.flush())
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
            AgentEvent::ProviderFailed { attempt } => writeln!(
                err,
                "  (provider {} failed on try {}: {})",
                terminal_safe(&attempt.provider),
                attempt.retry + 1,
                terminal_safe(&attempt.error)
            ),
            AgentEvent::Repaired {
                closed_calls,
                cancelled,
            } => writeln!(
                err,
                "  (closed {} tool call(s) {} left open)",
                closed_calls.len(),
                if cancelled {
                    "the cancelled turn"
                } else {
                    "an earlier crash or cancellation"
                }
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
    if args.message.as_deref().is_some_and(|m| m.trim().is_empty()) {
        anyhow::bail!("-m/--message is empty; say something, or leave it out for the REPL");
    }
    // Keep other processes of this user from reading our environment, API
    // keys included, through /proc/<pid>/environ or ptrace.
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        eprintln!(
            "warning: cannot make pincer non-dumpable ({e}); other processes of this user can read its environment, API keys included"
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let runtime = rt.block_on(Runtime::start(
        ctx.home.clone(),
        ctx.settings.clone(),
        ctx.env.clone(),
        RuntimeOptions {
            provider: args.provider.clone(),
            workspace: args.workspace.clone(),
        },
    ))?;
    if !args.json && !crate::quiet() {
        eprintln!("provider: {}", runtime.provider_choice().how);
    }
    for w in runtime.warnings() {
        eprintln!("warning: {}", terminal_safe(w));
    }
    let approver: Arc<dyn Approver> = if std::io::stdin().is_terminal() {
        Arc::new(TerminalApprover {
            timeout: runtime.approval_timeout(),
        })
    } else {
        // Nobody at this terminal: a person answers from another one (or
        // the gateway) through the approval queue; no answer is a denial.
        // Said on stderr in both modes: stdout may be the JSON stream.
        Arc::new(runtime.queue_approver(|p| {
            eprintln!(
                "[approval {}] `{}` ({} risk) is waiting: run `pincer approvals approve {}` or `pincer approvals deny {}` within {} s",
                p.id,
                terminal_safe(&p.tool),
                p.risk.as_str(),
                p.id,
                p.id,
                p.timeout().as_secs()
            );
        })?)
    };
    let render = renderer(args.json);
    let mut session = open(&runtime, &args.session, approver.clone())?;

    if let Some(message) = args.message {
        let result = rt.block_on(async {
            tokio::select! {
                r = session.run_turn(&message, &render) => {
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
    let result = repl(&rt, &runtime, session, approver, &render, args.json);
    rt.shutdown_background();
    result
}

/// Opens `key` and says what its prompt could not hold.
fn open(runtime: &Runtime, key: &str, approver: Arc<dyn Approver>) -> Result<AgentSession> {
    let session = runtime.open_session(key, approver)?;
    for w in &session.prompt().warnings {
        eprintln!("warning: {}", terminal_safe(w));
    }
    Ok(session)
}

const REPL_HELP: &str = "/exit (or Ctrl-D)  leave
/new              start a new session (it begins with the last one's handoff)
/session          show the current session
/session KEY      switch to session KEY
/help             this list
Ctrl-C            clear the line; during a turn, cancel it (the session stays valid)";

fn repl(
    rt: &tokio::runtime::Runtime,
    runtime: &Runtime,
    mut session: AgentSession,
    approver: Arc<dyn Approver>,
    render: &(dyn Fn(AgentEvent) + Send + Sync),
    json: bool,
) -> Result<ExitCode> {
    let mut editor = LineEditor::new(runtime)?;
    eprintln!(
        "pincer agent: session `{}`. /help for commands, Ctrl-D to leave.",
        session.key()
    );
    loop {
        let line = match editor.read(rt)? {
            Input::Line(l) => l,
            // Ctrl-C clears the line, as in a shell; Ctrl-D leaves.
            Input::Interrupted => continue,
            Input::Eof => break,
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        editor.remember(line);
        match line
            .split_once(' ')
            .map_or((line, ""), |(c, r)| (c, r.trim()))
        {
            ("/exit", _) => break,
            ("/new", _) => {
                let next = format!("cli-{}", pincer_core::message::Timestamp::now().as_millis());
                match open(runtime, &next, approver.clone()) {
                    Ok(s) => {
                        session = s;
                        eprintln!("new session `{next}`");
                    }
                    Err(e) => eprintln!("error: {e:#}"),
                }
                continue;
            }
            ("/session", "") => {
                eprintln!(
                    "session `{}`: {} live messages",
                    session.key(),
                    session.messages().len()
                );
                continue;
            }
            ("/session", next) => {
                // Open first: a bad key or a session busy elsewhere keeps
                // the current one.
                match open(runtime, next, approver.clone()) {
                    Ok(s) => {
                        session = s;
                        eprintln!(
                            "session `{next}`: {} live messages",
                            session.messages().len()
                        );
                    }
                    Err(e) => eprintln!("error: {e:#}"),
                }
                continue;
            }
            ("/help", _) => {
                eprintln!("{REPL_HELP}");
                continue;
            }
            (cmd, _) if cmd.starts_with('/') => {
                eprintln!("unknown command {cmd}; try /help");
                continue;
            }
            _ => {}
        }
        // JSON mode: stdout is the event stream, nothing else goes there.
        LABEL_PENDING.store(!json, std::sync::atomic::Ordering::Relaxed);
        let result = rt.block_on(async {
            tokio::select! {
                r = session.run_turn(line, render) => Some(r),
                _ = tokio::signal::ctrl_c() => None,
            }
        });
        match result {
            Some(Ok(_)) => {}
            Some(Err(e)) => eprintln!("\nerror: {e}"),
            None => eprintln!("\ncancelled; the session stays valid"),
        }
    }
    editor.save();
    Ok(ExitCode::SUCCESS)
}

/// What the REPL's prompt read.
enum Input {
    Line(String),
    /// Ctrl-C: the line typed so far is dropped.
    Interrupted,
    /// Ctrl-D (or the end of stdin).
    Eof,
}

const PROMPT: &str = "you> ";

/// The REPL's line editor: rustyline, with history in `PINCER_HOME`.
#[cfg(feature = "repl")]
struct LineEditor {
    editor: rustyline::DefaultEditor,
    history: std::path::PathBuf,
}

#[cfg(feature = "repl")]
impl LineEditor {
    fn new(runtime: &Runtime) -> Result<Self> {
        let mut editor = rustyline::DefaultEditor::new().context("cannot start the line editor")?;
        let history = runtime.home().history_path();
        // No history yet (or an unreadable one) is an empty one.
        let _ = editor.load_history(&history);
        Ok(Self { editor, history })
    }

    fn read(&mut self, _rt: &tokio::runtime::Runtime) -> Result<Input> {
        match self.editor.readline(PROMPT) {
            Ok(l) => Ok(Input::Line(l)),
            Err(rustyline::error::ReadlineError::Interrupted) => Ok(Input::Interrupted),
            Err(rustyline::error::ReadlineError::Eof) => Ok(Input::Eof),
            Err(e) => Err(e.into()),
        }
    }

    fn remember(&mut self, line: &str) {
        // History is a convenience: a full or failing one loses nothing.
        let _ = self.editor.add_history_entry(line);
    }

    fn save(&mut self) {
        let _ = self.editor.save_history(&self.history);
    }
}

/// Without the `repl` feature: lines as the terminal's own line discipline
/// edits them (backspace, Ctrl-U, Ctrl-W), no history, no arrow keys.
/// Ctrl-C at the prompt drops the line and asks again, as rustyline does.
#[cfg(not(feature = "repl"))]
struct LineEditor {
    /// A read still waiting for its line (Ctrl-C came first): the next
    /// prompt takes its line rather than starting a second reader.
    pending: Option<tokio::task::JoinHandle<std::io::Result<Option<String>>>>,
}

#[cfg(not(feature = "repl"))]
impl LineEditor {
    fn new(_runtime: &Runtime) -> Result<Self> {
        Ok(Self { pending: None })
    }

    fn read(&mut self, rt: &tokio::runtime::Runtime) -> Result<Input> {
        use std::io::{BufRead, Write};
        eprint!("{PROMPT}");
        let _ = std::io::stderr().flush();
        let mut read = self.pending.take().unwrap_or_else(|| {
            rt.spawn_blocking(|| {
                let mut line = String::new();
                let n = std::io::stdin().lock().read_line(&mut line)?;
                Ok((n > 0).then_some(line))
            })
        });
        let line = rt.block_on(async {
            tokio::select! {
                r = &mut read => Some(r),
                watched = tokio::signal::ctrl_c() => match watched {
                    Ok(()) => None,
                    // Ctrl-C cannot be watched here: wait for the line.
                    Err(_) => Some((&mut read).await),
                },
            }
        });
        match line {
            None => {
                eprintln!();
                self.pending = Some(read);
                Ok(Input::Interrupted)
            }
            Some(r) => match r.context("the line reader stopped")? {
                Ok(Some(line)) => Ok(Input::Line(line)),
                Ok(None) => Ok(Input::Eof),
                // A line that is not UTF-8 is dropped, not the REPL.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    eprintln!("error: that line was not UTF-8 text; it was dropped");
                    Ok(Input::Interrupted)
                }
                Err(e) => Err(e.into()),
            },
        }
    }

    fn remember(&mut self, _line: &str) {}

    fn save(&mut self) {}
}
