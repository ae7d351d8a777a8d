//! The `pincer` binary: parses the command line, reads the environment once,
//! wires the library crates together and renders their results. No logic of
//! its own beyond that.

mod agent_cmd;
mod approvals_cmd;
mod audit_cmd;
mod demo;
mod demo_hw;
mod doctor;
mod handoff;
mod hw_cmd;
mod memory_cmd;
mod policy_cmd;
mod session_cmd;
mod wiring;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use pincer_core::config::{Config, DEFAULT_CONFIG_TOML};
use pincer_core::home::Home;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "pincer",
    version,
    about = "One small binary that runs a personal AI agent, safe by construction",
    propagate_version = true
)]
struct Cli {
    /// State directory (default: $PINCER_HOME, else ~/.pincer).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write a commented default config.toml into the state directory.
    Init {
        /// Overwrite an existing config.toml.
        #[arg(long)]
        force: bool,
    },
    /// The main job on embedded defaults, in a temporary state directory (no
    /// API key, no server): a prompt-injected agent reaching for the
    /// simulated board's sensors, as other runtimes let it and as pincer's
    /// gate stops it, with the audit trail; then an agent session, the
    /// crash-safe session store and turn-boundary trimming.
    Demo {
        /// Print the walkthrough as one JSON document.
        #[arg(long)]
        json: bool,
        /// Keep the temporary state directory to look at its files.
        #[arg(long)]
        keep: bool,
    },
    /// Talk to the agent: one turn with -m, else an interactive REPL.
    Agent(agent_cmd::AgentArgs),
    /// What pincer would use (config, providers, workspace) and what is degraded.
    Doctor {
        #[arg(long)]
        json: bool,
    },
    /// List the skills (PINCER_HOME/skills/*.md) that extend the system prompt.
    Skills {
        #[arg(long)]
        json: bool,
    },
    /// Inspect and edit sessions (append-only JSONL under sessions/).
    #[command(subcommand)]
    Session(session_cmd::SessionCmd),
    /// Answer calls an agent is waiting on: list, approve, deny.
    #[command(subcommand)]
    Approvals(approvals_cmd::ApprovalsCmd),
    /// The tamper-evident audit trail: verify, log, note, reanchor, seal.
    #[command(subcommand)]
    Audit(audit_cmd::AuditCmd),
    /// The resume block a new session starts with: built from the session
    /// file, the audit trail, the approval queue and memory, never from a
    /// model.
    Handoff {
        /// The session to resume (default: the most recently changed).
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Long-term memory: markdown pages under memory/pages/, searched
    /// through a disposable SQLite FTS5 index.
    #[command(subcommand)]
    Memory(memory_cmd::MemoryCmd),
    /// Pin a fact: a memory page that is in every system prompt.
    Remember {
        /// The fact.
        fact: String,
    },
    /// What the policy gate decides, and why.
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCmd),
    /// The board's I2C, SPI, GPIO and camera, for a person at the terminal
    /// (recorded in the audit trail as human:cli). `PINCER_BOARD=sim` is the
    /// simulated board.
    #[command(subcommand)]
    Hw(hw_cmd::HwCmd),
}

/// Everything the commands need from the environment, read once.
#[derive(Debug)]
pub struct Ctx {
    pub home: Home,
    pub config: Config,
    /// False when there is no config.toml and the defaults apply.
    pub config_found: bool,
}

fn default_home() -> Result<PathBuf> {
    if let Some(h) = std::env::var_os("PINCER_HOME") {
        if h.is_empty() {
            anyhow::bail!("PINCER_HOME is set but empty; unset it or name a directory");
        }
        return Ok(PathBuf::from(h));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("neither PINCER_HOME nor HOME is set; pass --home DIR")?;
    Ok(PathBuf::from(home).join(".pincer"))
}

fn load_ctx(home: Option<PathBuf>) -> Result<Ctx> {
    let home = Home::new(match home {
        Some(h) => h,
        None => default_home()?,
    });
    home.ensure()
        .with_context(|| format!("cannot create {}", home.root().display()))?;
    let (config, config_found) = Config::load(&home.config_path())?;
    Ok(Ctx {
        home,
        config,
        config_found,
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Init { force } => {
            let ctx_home = Home::new(match cli.home {
                Some(h) => h,
                None => default_home()?,
            });
            ctx_home.ensure()?;
            let path = ctx_home.config_path();
            if path.exists() && !force {
                anyhow::bail!(
                    "{} already exists; pass --force to overwrite it",
                    path.display()
                );
            }
            pincer_core::fsutil::write_atomic(&path, DEFAULT_CONFIG_TOML.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("wrote {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { json, keep } => demo::run(json, keep),
        Command::Agent(args) => agent_cmd::run(&load_ctx(cli.home)?, args),
        Command::Doctor { json } => doctor::run(&load_ctx(cli.home)?, json),
        Command::Skills { json } => {
            let ctx = load_ctx(cli.home)?;
            let (skills, problems) = pincer_core::skills::load(&ctx.home.root().join("skills"))?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "skills": skills, "problems": problems })
                );
            } else {
                if skills.is_empty() && problems.is_empty() {
                    println!("no skills in {}", ctx.home.root().join("skills").display());
                }
                for s in &skills {
                    println!("{:<24} {:>6} bytes  {}", s.name, s.bytes, s.path.display());
                }
                for p in &problems {
                    println!("not loaded: {}: {}", p.path.display(), p.reason);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Session(cmd) => {
            let ctx = load_ctx(cli.home)?;
            session_cmd::run(&ctx, cmd)
        }
        Command::Approvals(cmd) => approvals_cmd::run(&load_ctx(cli.home)?, cmd),
        Command::Audit(cmd) => audit_cmd::run(&load_ctx(cli.home)?, cmd),
        Command::Memory(cmd) => memory_cmd::run(&load_ctx(cli.home)?, cmd),
        Command::Remember { fact } => memory_cmd::remember(&load_ctx(cli.home)?, &fact),
        Command::Handoff { session, json } => {
            let ctx = load_ctx(cli.home)?;
            if let Some(k) = &session {
                pincer_core::session::validate_key(k)?;
            }
            let h = handoff::build(
                &ctx.home,
                session.as_deref(),
                None,
                memory_cmd::facts(&ctx)?,
            )?;
            if json {
                println!("{}", serde_json::to_string(&h)?);
            } else {
                print!("{}", handoff::render(&h));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Policy(cmd) => policy_cmd::run(&load_ctx(cli.home)?, cmd),
        Command::Hw(cmd) => {
            let ctx = load_ctx(cli.home)?;
            let env = wiring::Env::read(&ctx);
            hw_cmd::run(&ctx, &env, cmd)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
