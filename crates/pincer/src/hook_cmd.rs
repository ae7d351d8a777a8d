//! `pincer hook claude-code EVENT|install|uninstall`: the argv and the
//! rendering of the Claude Code adapter (`pincer-claude-code`, behind the
//! `claude-code` feature). Everything it decides is the adapter's.

use crate::Ctx;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use pincer_claude_code::hook::{ClaudeEnv, Setup};
use pincer_claude_code::install::{Change, Scope};
use pincer_core::home::Home;
use pincer_core::text::terminal_safe;
use pincer_runtime::{Env, Settings};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum HookCmd {
    /// Claude Code's hooks: pincer's gate, audit trail and memory governing
    /// a Claude Code session (docs/claude-code.md).
    #[command(
        name = "claude-code",
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true
    )]
    ClaudeCode(ClaudeCodeArgs),
}

#[derive(Args, Debug)]
pub struct ClaudeCodeArgs {
    #[command(subcommand)]
    cmd: Option<ClaudeCmd>,
    /// The hook event Claude Code runs pincer for (SessionStart,
    /// UserPromptSubmit, PreToolUse, PostToolUse, SessionEnd); its JSON is
    /// read from stdin and the answer written to stdout.
    #[arg(required = true, value_name = "EVENT")]
    event: Option<String>,
}

#[derive(Subcommand, Debug)]
enum ClaudeCmd {
    /// Register pincer's five hook points in .claude/settings.json (exec
    /// form), keeping every other hook; replaces earlier pincer entries.
    Install(Target),
    /// Remove every pincer entry from .claude/settings.json, keeping every
    /// other hook.
    Uninstall(Target),
}

#[derive(Args, Debug)]
struct Target {
    /// The project whose .claude/settings.json to edit (default: the
    /// current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    project: Option<PathBuf>,
    /// Edit the user's settings ($CLAUDE_CONFIG_DIR/settings.json, else
    /// ~/.claude/settings.json) instead.
    #[arg(long)]
    user: bool,
    /// Print what changed as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs `pincer hook ...`. `home` is `--home`; the rest of the environment
/// is read here, once, inside the hook's deadline.
pub fn run(home: Option<PathBuf>, cmd: HookCmd) -> Result<ExitCode> {
    let HookCmd::ClaudeCode(args) = cmd;
    match (args.cmd, args.event) {
        (Some(ClaudeCmd::Install(t)), _) => edit(home, t, true),
        (Some(ClaudeCmd::Uninstall(t)), _) => edit(home, t, false),
        (None, Some(event)) => Ok(event_hook(home, &event)),
        (None, None) => anyhow::bail!("name a hook event, or install / uninstall"),
    }
}

fn event_hook(home: Option<PathBuf>, event: &str) -> ExitCode {
    let vars: Vec<_> = std::env::vars_os().collect();
    let setup = move || -> Result<Setup, String> {
        let home = Home::new(match home {
            Some(h) => h,
            None => crate::default_home().map_err(|e| e.to_string())?,
        });
        home.ensure()
            .map_err(|e| format!("cannot create {}: {e}", home.root().display()))?;
        let settings = Settings::load_with(&home.config_path(), &crate::front_end_sections())
            .map_err(|e| e.to_string())?;
        Ok(Setup {
            home,
            settings,
            env: Env::from_vars(vars.iter().cloned()),
            claude: ClaudeEnv::from_vars(vars),
        })
    };
    // A panic aborts a release build before any catch_unwind: answer from
    // the panic hook instead (for PreToolUse `ask`), and exit 0 so that
    // Claude Code reads the answer rather than treating the hook as one
    // that failed (which lets the tool call run).
    let name = event.to_string();
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        let a = pincer_claude_code::hook::panic_answer(&name);
        use std::io::Write as _;
        let _ = std::io::stdout().write_all(a.stdout.as_bytes());
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().write_all(a.stderr.as_bytes());
        std::process::exit(i32::from(a.code));
    }));
    let answer = pincer_claude_code::respond(event, std::io::stdin(), setup);
    print!("{}", answer.stdout);
    eprint!("{}", answer.stderr);
    ExitCode::from(answer.code)
}

fn edit(home: Option<PathBuf>, t: Target, install: bool) -> Result<ExitCode> {
    let ctx = crate::load_ctx(home)?;
    let scope = if t.user {
        Scope::User
    } else {
        let dir = match t.project {
            Some(d) => d,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        if !dir.is_dir() {
            anyhow::bail!("--project {} is not a directory", dir.display());
        }
        Scope::Project(std::path::absolute(&dir)?)
    };
    let path = pincer_claude_code::settings_path(&scope, &ctx.claude)?;
    let change = if install {
        let exe = std::env::current_exe().context("cannot tell where the pincer binary is")?;
        let home = std::path::absolute(ctx.home.root())?;
        pincer_claude_code::install(&path, &exe, &home)?
    } else {
        pincer_claude_code::uninstall(&path)?
    };
    if t.json {
        println!("{}", serde_json::to_string(&change)?);
    } else {
        print!("{}", render(&change, install));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(c: &Change, install: bool) -> String {
    let path = terminal_safe(&c.path.display().to_string());
    let mut o = if install {
        format!(
            "installed pincer's {} hook points ({}) in {path}\n",
            c.installed.len(),
            c.installed.join(", ")
        )
    } else if c.wrote {
        format!("removed pincer's hooks from {path}\n")
    } else {
        format!("no pincer hooks in {path}; nothing changed\n")
    };
    if c.removed > 0 {
        o.push_str(&format!(
            "{} {}pincer entr{} removed, {} of them pointing at a missing binary\n",
            c.removed,
            if install { "earlier " } else { "" },
            if c.removed == 1 { "y" } else { "ies" },
            c.removed_missing_binary
        ));
    }
    if c.kept_third_party > 0 {
        o.push_str(&format!(
            "{} other hook{} on the same events kept as they were\n",
            c.kept_third_party,
            if c.kept_third_party == 1 { "" } else { "s" }
        ));
    }
    o
}

/// Adds the hook points Claude Code would run here to the status report.
pub fn add_status(ctx: &Ctx, report: &mut pincer_runtime::status::Report) {
    let cwd = std::env::current_dir().ok();
    let home = std::path::absolute(ctx.home.root()).unwrap_or_else(|_| ctx.home.root().into());
    let (part, errors, warnings) =
        pincer_claude_code::status::hook_points(cwd.as_deref(), &ctx.claude, &home);
    report.add_front_end(part, errors, warnings);
}
