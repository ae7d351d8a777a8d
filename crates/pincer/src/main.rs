//! The `pincer` binary: parses the command line, reads the environment once,
//! calls the runtime and renders what comes back. It decides nothing a
//! gateway or a chat channel would also have to decide: that is
//! `pincer-runtime`'s.

mod agent_cmd;
mod approvals_cmd;
mod audit_cmd;
#[cfg(feature = "serve")]
mod cron_cmd;
#[cfg(feature = "demo")]
mod demo;
mod diag;
mod doctor;
#[cfg(feature = "gateway")]
mod gateway_cmd;
#[cfg(feature = "claude-code")]
mod hook_cmd;
mod hw_cmd;
#[cfg(feature = "mcp")]
mod mcp_cmd;
#[cfg(feature = "membench")]
mod membench_cmd;
mod memory_cmd;
mod policy_cmd;
mod sandbox_cmd;
#[cfg(feature = "serve")]
mod serve_cmd;
#[cfg(feature = "serve")]
mod service_cmd;
mod session_cmd;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use pincer_core::home::Home;
use pincer_runtime::{Env, FrontEndSection, Settings, default_config_toml_with};
use std::path::PathBuf;
use std::process::ExitCode;

/// Every optional feature of this binary and whether it is built in, as
/// `--version` names them (crates/pincer/Cargo.toml says what each sheds).
/// A new feature gets a line here; the tests check the list against the
/// features cargo built.
const FEATURES: &[(&str, bool)] = &[
    ("anthropic", cfg!(feature = "anthropic")),
    ("camera", cfg!(feature = "camera")),
    ("claude-code", cfg!(feature = "claude-code")),
    ("completions", cfg!(feature = "completions")),
    ("demo", cfg!(feature = "demo")),
    ("discord", cfg!(feature = "discord")),
    ("fts5", cfg!(feature = "fts5")),
    ("gateway", cfg!(feature = "gateway")),
    ("html", cfg!(feature = "html")),
    ("membench", cfg!(feature = "membench")),
    ("mcp", cfg!(feature = "mcp")),
    ("repl", cfg!(feature = "repl")),
    ("serve", cfg!(feature = "serve")),
    ("telegram", cfg!(feature = "telegram")),
    ("tls", cfg!(feature = "tls")),
    ("web", cfg!(feature = "web")),
];

/// `0.1.0 (commit 0123abcd4567, features: fts5, membench)`.
fn long_version() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        let on: Vec<&str> = FEATURES
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        format!(
            "{} (commit {}, features: {})",
            env!("CARGO_PKG_VERSION"),
            env!("PINCER_COMMIT"),
            if on.is_empty() {
                "none".to_string()
            } else {
                on.join(", ")
            }
        )
    })
}

#[derive(Parser, Debug)]
#[command(
    name = "pincer",
    version = long_version(),
    about = "One small binary that runs a personal AI agent, safe by construction",
    propagate_version = true
)]
struct Cli {
    /// State directory (default: $PINCER_HOME, else ~/.pincer).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// More diagnostics on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
    /// No diagnostics on stderr: only errors, what a turn does, and the
    /// warnings every start gives (what is degraded or unsafe).
    #[arg(short, long, global = true)]
    quiet: bool,
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
        /// Print `{"wrote": PATH}`.
        #[arg(long)]
        json: bool,
    },
    /// The main job on embedded defaults, in a temporary state directory (no
    /// API key, no server): a prompt-injected agent reaching for the
    /// simulated board's sensors, as other runtimes let it and as pincer's
    /// gate stops it, with the audit trail; then an agent session, the
    /// crash-safe session store and turn-boundary trimming.
    #[cfg(feature = "demo")]
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
    /// Everything pincer would use, what is wrong and what is degraded;
    /// probes the configured providers. Exits 1 on an error.
    Doctor {
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// One screen: provider, autonomy, sessions, approvals, audit trail,
    /// memory, hardware (the same report as `doctor`, without probing
    /// providers). Exits 1 on an error.
    Status {
        /// One JSON object.
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
    /// Pin a fact: a memory page that is in every system prompt (the same
    /// fact twice is one page).
    Remember {
        /// The fact.
        fact: String,
        /// Print `{"id": …, "new": …}`.
        #[arg(long)]
        json: bool,
    },
    /// What the policy gate decides, and why.
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCmd),
    /// Run a command in exactly the sandbox the agent's shell gets: the
    /// agent's workspace writable, pincer's state hidden, no network
    /// (unless --network), stdin empty. Recorded in the audit trail.
    Exec(sandbox_cmd::ExecArgs),
    /// The OS sandbox the shell runs in: `check` proves every layer here.
    #[command(subcommand)]
    Sandbox(sandbox_cmd::SandboxCmd),
    /// The daemon: runs what config.toml enables (chat channels, cron jobs,
    /// the heartbeat, the gateway) over one runtime until SIGTERM; SIGHUP
    /// reloads the config. `pincer status` shows how each service is.
    #[cfg(feature = "serve")]
    Serve,
    /// The systemd unit for `pincer serve` (contrib/systemd/pincer.service
    /// made for this binary and PINCER_HOME): install, uninstall, status.
    #[cfg(feature = "serve")]
    #[command(subcommand)]
    Service(service_cmd::ServiceCmd),
    /// Jobs that run an agent prompt on a schedule (run by `pincer serve`):
    /// add, list, remove, run.
    #[cfg(feature = "serve")]
    #[command(subcommand)]
    Cron(cron_cmd::CronCmd),
    /// Shell completions, generated from this command line's definition.
    #[cfg(feature = "completions")]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// The man page (roff), generated from this command line's definition.
    #[cfg(feature = "completions")]
    Man,
    /// The board's I2C, SPI, GPIO and camera, for a person at the terminal
    /// (recorded in the audit trail as human:cli). `PINCER_BOARD=sim` is the
    /// simulated board.
    #[command(subcommand)]
    Hw(hw_cmd::HwCmd),
    /// Memory quality on LoCoMo (or a synthetic set): PicoClaw's baselines
    /// and pincer's strategies side by side, HitRate per category.
    #[cfg(feature = "membench")]
    Membench(membench_cmd::MembenchArgs),
    /// Hooks of other agents that pincer governs: `pincer hook claude-code
    /// EVENT` answers a Claude Code hook (JSON on stdin), `install` and
    /// `uninstall` edit .claude/settings.json.
    #[cfg(feature = "claude-code")]
    #[command(subcommand)]
    Hook(hook_cmd::HookCmd),
    /// MCP servers ([mcp.servers.NAME]): list them, their tools, or call
    /// one as you (recorded in the audit trail as human:cli).
    #[cfg(feature = "mcp")]
    #[command(subcommand)]
    Mcp(mcp_cmd::McpCmd),
    /// The web UI, the HTTP and WebSocket API and the signed agent
    /// manifest, on loopback by default; prints a pairing code.
    #[cfg(feature = "gateway")]
    Gateway(gateway_cmd::GatewayArgs),
    /// A new pairing code for the gateway (5 minutes, single use).
    #[cfg(feature = "gateway")]
    Pair {
        /// The device may answer approvals (default: chat only).
        #[arg(long)]
        approver: bool,
        #[arg(long)]
        json: bool,
    },
    /// The gateway's paired devices: list, revoke.
    #[cfg(feature = "gateway")]
    #[command(subcommand)]
    Tokens(gateway_cmd::TokensCmd),
    /// The agent's Ed25519 signing key (PINCER_HOME/keys, mode 0600).
    #[cfg(feature = "gateway")]
    #[command(subcommand)]
    Keys(gateway_cmd::KeysCmd),
}

/// Everything the commands need from the environment and the config file,
/// read once.
#[derive(Debug)]
pub struct Ctx {
    pub home: Home,
    pub settings: Settings,
    pub env: Env,
    #[cfg(feature = "claude-code")]
    pub claude: pincer_claude_code::ClaudeEnv,
}

/// The config sections of the front-ends built into this binary, each
/// validated by the crate that owns it.
pub fn front_end_sections() -> Vec<FrontEndSection> {
    [
        #[cfg(feature = "claude-code")]
        pincer_claude_code::SECTION,
        #[cfg(any(feature = "telegram", feature = "discord", feature = "camera"))]
        pincer_channels::SECTION,
        #[cfg(feature = "serve")]
        pincer_serve::config::SERVE_SECTION,
        #[cfg(feature = "serve")]
        pincer_serve::config::HEARTBEAT_SECTION,
        #[cfg(feature = "gateway")]
        pincer_gateway::config::SECTION,
    ]
    .into_iter()
    .collect()
}

pub fn default_home() -> Result<PathBuf> {
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

pub fn load_ctx(home: Option<PathBuf>) -> Result<Ctx> {
    let home = Home::new(match home {
        Some(h) => h,
        None => default_home()?,
    });
    home.ensure()
        .with_context(|| format!("cannot create {}", home.root().display()))?;
    let settings = Settings::load_with(&home.config_path(), &front_end_sections())?;
    let vars: Vec<_> = std::env::vars_os().collect();
    Ok(Ctx {
        home,
        settings,
        env: Env::from_vars(vars.iter().cloned()),
        #[cfg(feature = "claude-code")]
        claude: pincer_claude_code::ClaudeEnv::from_vars(vars),
    })
}

/// `-q` was given: no diagnostics, and not the lines that only inform
/// (which provider answers). Errors, what a turn does and the warnings
/// each start gives (what is degraded or unsafe) are still said.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// Diagnostics (`tracing` events of every crate) go to stderr at the level
/// `-v`/`-q` say; warnings by default.
fn init_logging(verbose: u8, quiet: bool) {
    use tracing::Level;
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
    let level = match (quiet, verbose) {
        (true, _) => Level::ERROR,
        (false, 0) => Level::WARN,
        (false, 1) => Level::INFO,
        (false, 2) => Level::DEBUG,
        (false, _) => Level::TRACE,
    };
    // Fails only if one is already installed, which main never does.
    let _ = tracing::subscriber::set_global_default(diag::Stderr::new(level));
}

fn run(cli: Cli) -> Result<ExitCode> {
    init_logging(cli.verbose, cli.quiet);
    match cli.command {
        #[cfg(feature = "completions")]
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "pincer", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "completions")]
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Init { force, json } => {
            let ctx_home = Home::new(match cli.home {
                Some(h) => h,
                None => default_home()?,
            });
            ctx_home
                .ensure()
                .with_context(|| format!("cannot create {}", ctx_home.root().display()))?;
            let path = ctx_home.config_path();
            if path.exists() && !force {
                anyhow::bail!(
                    "{} already exists; pass --force to overwrite it",
                    path.display()
                );
            }
            let text = default_config_toml_with(&front_end_sections());
            pincer_core::fsutil::write_atomic(&path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            if json {
                println!("{}", serde_json::json!({ "wrote": path }));
            } else {
                println!("wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "demo")]
        Command::Demo { json, keep } => demo::run(json, keep),
        Command::Agent(args) => agent_cmd::run(&load_ctx(cli.home)?, args),
        Command::Doctor { json } => doctor::doctor(&load_ctx(cli.home)?, json),
        Command::Status { json } => doctor::status(&load_ctx(cli.home)?, json),
        Command::Skills { json } => {
            let ctx = load_ctx(cli.home)?;
            let (skills, problems) = pincer_core::skills::load(&ctx.home.skills_dir())?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "skills": skills, "problems": problems })
                );
            } else {
                if skills.is_empty() && problems.is_empty() {
                    println!("no skills in {}", ctx.home.skills_dir().display());
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
        Command::Remember { fact, json } => memory_cmd::remember(&load_ctx(cli.home)?, &fact, json),
        Command::Handoff { session, json } => {
            let ctx = load_ctx(cli.home)?;
            if let Some(k) = &session {
                pincer_core::session::validate_key(k)?;
            }
            let store = pincer_memory::PageStore::open(ctx.home.memory_dir())?;
            let facts = pincer_memory::prompt::facts(&store)?;
            let h = pincer_memory::handoff::build(&ctx.home, session.as_deref(), None, facts)?;
            if json {
                println!("{}", serde_json::to_string(&h)?);
            } else {
                print!("{}", pincer_memory::handoff::render(&h));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Policy(cmd) => policy_cmd::run(&load_ctx(cli.home)?, cmd),
        Command::Exec(args) => sandbox_cmd::exec(&load_ctx(cli.home)?, args),
        Command::Sandbox(cmd) => sandbox_cmd::run(&load_ctx(cli.home)?, cmd),
        Command::Hw(cmd) => hw_cmd::run(&load_ctx(cli.home)?, cmd),
        #[cfg(feature = "serve")]
        Command::Serve => serve_cmd::run(&load_ctx(cli.home)?),
        #[cfg(feature = "serve")]
        Command::Cron(cmd) => cron_cmd::run(&load_ctx(cli.home)?, cmd),
        #[cfg(feature = "serve")]
        Command::Service(cmd) => service_cmd::run(
            Home::new(match cli.home {
                Some(h) => h,
                None => default_home()?,
            }),
            cmd,
        ),
        #[cfg(feature = "membench")]
        Command::Membench(args) => membench_cmd::run(args),
        #[cfg(feature = "claude-code")]
        Command::Hook(cmd) => hook_cmd::run(cli.home, cmd),
        #[cfg(feature = "mcp")]
        Command::Mcp(cmd) => mcp_cmd::run(&load_ctx(cli.home)?, cmd),
        #[cfg(feature = "gateway")]
        Command::Gateway(args) => gateway_cmd::gateway(&load_ctx(cli.home)?, args),
        #[cfg(feature = "gateway")]
        Command::Pair { approver, json } => gateway_cmd::pair(&load_ctx(cli.home)?, approver, json),
        #[cfg(feature = "gateway")]
        Command::Tokens(cmd) => gateway_cmd::tokens(&load_ctx(cli.home)?, cmd),
        #[cfg(feature = "gateway")]
        Command::Keys(cmd) => gateway_cmd::keys(&load_ctx(cli.home)?, cmd),
    }
}

/// A reader that went away (`pincer audit log | head`) ends pincer quietly,
/// as it ends any Unix tool: Rust ignores SIGPIPE, so a write to a closed
/// stdout panics inside `println!`; that one panic exits with SIGPIPE's
/// status (141) and no message. Every other panic is reported as usual.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if text.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    // `pincer __sandbox`: the shell tool's sandbox helper re-executes
    // pincer; it must run before clap, threads or the async runtime exist.
    pincer_sandbox::run_helper_if_requested();
    quiet_on_broken_pipe();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::from(141)
        }
        Err(e) => {
            // An error can quote a vendor's reply or a file: made safe.
            eprintln!(
                "error: {}",
                pincer_core::text::terminal_safe(&format!("{e:#}"))
            );
            ExitCode::FAILURE
        }
    }
}
