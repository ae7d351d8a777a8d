//! `pincer agent`: one turn (`-m`) or a REPL, streamed to the terminal.

use crate::Ctx;
use crate::wiring::{self, Env};
use anyhow::{Context, Result};
use pincer_core::agent::{
    Agent, AgentEvent, AgentSettings, ApprovalAnswer, ApprovalRequest, Approver, Conversation,
    DenyAll, ToolStatus,
};
use pincer_core::provider::BoxFuture;
use pincer_core::session::SessionStore;
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

/// Asks at the terminal; the line typed is the answer (PO4).
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        let prompt = format!(
            "\n[approval] {} wants to run `{}` ({} risk) with {}\n           approve? [y/N] ",
            "the agent",
            req.tool,
            req.risk.as_str(),
            req.arguments
        );
        Box::pin(async move {
            let answer = tokio::task::spawn_blocking(move || {
                eprint!("{prompt}");
                let _ = std::io::stderr().flush();
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await;
            match answer {
                Ok(Ok(line)) if matches!(line.trim(), "y" | "Y" | "yes") => {
                    ApprovalAnswer::Approved
                }
                Ok(Ok(_)) => ApprovalAnswer::Denied("the person at the terminal said no".into()),
                _ => ApprovalAnswer::Denied("could not read an answer from the terminal".into()),
            }
        })
    }
}

/// Renders events as text (tool activity on stderr, the reply on stdout)
/// or as JSON lines on stdout.
fn renderer(json: bool) -> impl Fn(AgentEvent) + Send + Sync {
    move |e: AgentEvent| {
        if json {
            if let Ok(line) = serde_json::to_string(&e) {
                println!("{line}");
            }
            return;
        }
        match e {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::ToolCallStarted {
                name,
                arguments,
                risk,
                ..
            } => {
                eprintln!("\n  ⚙ {name} {arguments} ({} risk)", risk.as_str());
            }
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
                eprintln!("  {mark} {name}: {first}");
            }
            AgentEvent::Repaired { closed_calls } => {
                eprintln!(
                    "  (closed {} tool call(s) an earlier crash left open)",
                    closed_calls.len()
                );
            }
            AgentEvent::Trimmed {
                dropped_turns,
                tokens_before,
                tokens_after,
            } => {
                eprintln!(
                    "  (trimmed {dropped_turns} old turn(s): {tokens_before} -> {tokens_after} tokens)"
                );
            }
            AgentEvent::TurnDone { .. } => println!(),
            _ => {}
        }
    }
}

pub fn run(ctx: &Ctx, args: AgentArgs) -> Result<ExitCode> {
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
    let ws_dir = wiring::workspace_dir(ctx, &env, args.workspace.clone())?;
    let ws = wiring::open_workspace(ctx, &ws_dir)?;
    let (skills, problems) = pincer_core::skills::load(&ctx.home.root().join("skills"))?;
    for p in &problems {
        eprintln!(
            "warning: skill {} not loaded: {}",
            p.path.display(),
            p.reason
        );
    }
    let interactive = std::io::stdin().is_terminal();
    let approver: Arc<dyn Approver> = if interactive {
        Arc::new(TerminalApprover)
    } else {
        Arc::new(DenyAll(
            "nobody can be asked: stdin is not a terminal (run `pincer agent` interactively, or set [policy] autonomy)".into(),
        ))
    };
    let cfg = &ctx.config;
    let context_window = choice
        .chain
        .iter()
        .map(|p| p.context_window)
        .min()
        .unwrap_or(cfg.context.context_window);
    let settings = AgentSettings {
        system_prompt: pincer_core::skills::system_prompt(&cfg.agent.system_prompt, &skills),
        max_tool_iterations: cfg.agent.max_tool_iterations,
        context_window,
        output_reserve: cfg.context.output_reserve,
        summary_max_chars: cfg.context.summary_max_chars,
        chars_per_token: cfg.context.chars_per_token,
        autonomy: cfg.policy.autonomy,
        approval_timeout: Duration::from_secs(cfg.policy.approval_timeout_secs),
    };
    let mut agent = Agent::new(
        provider,
        wiring::tools(ws, &env, &cfg.agent.agent_id),
        approver,
        settings,
    );
    let store = SessionStore::open(ctx.home.sessions_dir(), cfg.session.fsync)?;
    let render = renderer(args.json);

    if let Some(message) = args.message {
        let mut conv = Conversation::open(&store, &args.session)?;
        return rt.block_on(async {
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
    }
    repl(&rt, &store, &mut agent, args.session, &render)
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
                key = format!("cli-{}", pincer_core::message::Timestamp::now().as_millis());
                drop(conv);
                conv = Conversation::open(store, &key)?;
                eprintln!("new session `{key}`");
                continue;
            }
            ("/session", "") => {
                eprintln!("session `{key}`: {} live messages", conv.messages().len());
                continue;
            }
            ("/session", next) => {
                drop(conv);
                conv = Conversation::open(store, next)?;
                key = next.to_string();
                eprintln!("session `{key}`: {} live messages", conv.messages().len());
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
