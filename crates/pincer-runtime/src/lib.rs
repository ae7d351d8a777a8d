//! pincer-runtime: a running agent, assembled once from a validated config
//! and the environment the binary read, for every front-end — the CLI, the
//! demo, and the gateway, chat channels, cron and hook adapters that build
//! on it. None of them assembles its own providers, tools, gate, workspace
//! or prompt.
//!
//! [`Runtime::start`] chooses and builds the providers (with fallback),
//! opens the workspace, the tools, the audit trail and the session store,
//! and records what it started with (`config.load`, `policy.change`).
//! [`Runtime::open_session`] gives one session its own gate (with the
//! front-end's approver), system prompt (skills, pinned facts, the handoff
//! for a new session) and agent; [`AgentSession::run_turn`] runs a turn and
//! reports [`pincer_core::agent::AgentEvent`]s to the front-end's sink. Many
//! sessions may run at once in one process: each holds its session's one
//! writer, and the audit trail serialises its appends.
//!
//! It never reads the environment and never prints: [`Env`] comes from the
//! binary, and warnings come back as data for the front-end to show.

mod env;
pub mod gate;
pub mod inbox;
pub mod mcp;
pub mod person;
pub mod prompt;
pub mod providers;
pub mod settings;
pub mod status;
pub mod tools;

pub use env::Env;
pub use prompt::Prompt;
pub use providers::ProviderChoice;
pub use settings::{FrontEndSection, Settings, default_config_toml, default_config_toml_with};

use pincer_core::agent::{Agent, AgentError, AgentEvent, AgentSettings, Conversation, TurnOutcome};
use pincer_core::approvals::{ApprovalQueue, Approver, Pending, QueueApprover};
use pincer_core::audit::Audit;
use pincer_core::home::Home;
use pincer_core::provider::Provider;
use pincer_core::session::SessionStore;
use pincer_core::tool::Tool;
use pincer_hw::Hardware;
use pincer_tools::Workspace;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Why a runtime (or a session of it) could not be built. Each message is
/// meant for the person who configured pincer.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("{}", providers::HOW_TO)]
    NoProvider,
    #[error("--provider {name}: no [providers.{name}] in the config (configured: {configured})")]
    UnknownProvider { name: String, configured: String },
    #[error(
        "several providers are configured but [agent] fallback_chain is empty: list them there in the order to try, or pass --provider NAME"
    )]
    AmbiguousProviders,
    #[error("provider `{provider}` reads its API key from ${var}, which is not set")]
    MissingKey { provider: String, var: String },
    #[error(transparent)]
    Provider(#[from] pincer_core::provider::ProviderError),
    #[error(
        "{key}: hook `{name}` runs `{program}`, which is not an executable file (nor in the hooks' PATH)"
    )]
    HookProgram {
        key: String,
        name: String,
        program: String,
    },
    #[error("{var} {reason}")]
    BadEnv { var: &'static str, reason: String },
    #[error(
        "OPENAI_BASE_URL names {url}, whose /models lists no model: set PINCER_MODEL to the model to use"
    )]
    NoModel { url: String },
    #[error("{from} names {}, which is not an existing directory", dir.display())]
    NoWorkspace { from: &'static str, dir: PathBuf },
    #[error(
        "cannot create the default workspace {} (beside PINCER_HOME): {source}; name the directory to use with --workspace, PINCER_WORKSPACE or [agent] workspace",
        dir.display()
    )]
    DefaultWorkspace {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "shell.program: {} does not exist on this machine (install it, or choose the other shell)", path.display()
    )]
    ShellProgram { path: PathBuf },
    #[error("pincer exec: {0}")]
    Exec(String),
    #[error(transparent)]
    Workspace(#[from] pincer_tools::WorkspaceError),
    #[error(transparent)]
    Hardware(#[from] pincer_hw::HwError),
    #[error("cannot open the audit trail in {}: {source}", dir.display())]
    Audit {
        dir: PathBuf,
        source: pincer_core::audit::AuditError,
    },
    #[error(transparent)]
    AuditEntry(#[from] pincer_core::audit::AuditError),
    #[error(transparent)]
    Session(#[from] pincer_core::session::SessionError),
    #[error(transparent)]
    Queue(#[from] pincer_core::approvals::QueueError),
    /// An MCP server named by a person could not be used.
    #[error("{0}")]
    Mcp(String),
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What a front-end may choose when it starts a runtime.
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// Use only this configured provider (`--provider`).
    pub provider: Option<String>,
    /// The workspace (`--workspace`), before `PINCER_WORKSPACE` and the
    /// config.
    pub workspace: Option<PathBuf>,
}

/// Opens the audit trail of `home`.
pub fn open_audit(home: &Home) -> Result<Arc<Audit>, RuntimeError> {
    let dir = home.audit_dir();
    Audit::open(&dir)
        .map(Arc::new)
        .map_err(|source| RuntimeError::Audit { dir, source })
}

/// One running agent: everything its sessions share.
pub struct Runtime {
    home: Home,
    settings: Arc<Settings>,
    env: Env,
    choice: ProviderChoice,
    provider: Arc<dyn Provider>,
    workspace: Arc<Workspace>,
    hardware: Arc<Hardware>,
    tools: Vec<Arc<dyn Tool>>,
    audit: Arc<Audit>,
    store: SessionStore,
    actor: String,
    warnings: Vec<String>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("home", &self.home)
            .field("provider", &self.choice.how)
            .field("workspace", &self.workspace.root())
            .field("actor", &self.actor)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Builds the runtime and records the config it starts with. Nothing
    /// here asks a model anything; zero-config may probe local ports.
    pub async fn start(
        home: Home,
        settings: Settings,
        env: Env,
        opts: RuntimeOptions,
    ) -> Result<Runtime, RuntimeError> {
        gate::check_hooks(&settings, &env)?;
        let choice = providers::choose(&settings, &env, opts.provider.as_deref()).await?;
        let provider = providers::build(&choice, &env)?;
        let dir = tools::workspace_dir(&home, &settings, &env, opts.workspace.as_deref())?;
        let workspace = tools::open_workspace(&home, &dir)?;
        let hardware = tools::hardware(&settings, &env)?;
        let offered = tools::offers_hardware(&hardware).then(|| hardware.clone());
        let tools::Tools {
            mut tools,
            mut warnings,
        } = tools::agent_tools(&home, &settings, &env, workspace.clone(), offered)?;
        warnings.extend(tools::old_workspace_warning(&home, workspace.root()));
        let audit = open_audit(&home)?;
        let mcp = mcp::start(&home, &settings, &env, &workspace, audit.clone()).await;
        tools.extend(mcp.tools);
        warnings.extend(mcp.warnings);
        gate::record_config_load(&settings, &audit, &warnings)?;
        let store = SessionStore::open(home.sessions_dir(), settings.core.session.fsync)?;
        let actor = pincer_core::actor::agent(&settings.core.agent.agent_id);
        tracing::info!(
            provider = %choice.how,
            workspace = %workspace.root().display(),
            tools = tools.len(),
            autonomy = settings.core.policy.autonomy.as_str(),
            "runtime started"
        );
        Ok(Runtime {
            home,
            settings: Arc::new(settings),
            env,
            choice,
            provider,
            workspace,
            hardware,
            tools,
            audit,
            store,
            actor,
            warnings,
        })
    }

    /// What a person must be told at every start: a shell not offered, or
    /// offered without the sandbox or with a layer degraded.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether the agent's model takes images (every provider of the chain
    /// has `vision = true`).
    pub fn vision(&self) -> bool {
        self.provider.caps().vision
    }

    /// The environment snapshot the runtime was started with (for
    /// [`status::report`]).
    pub fn env(&self) -> &Env {
        &self.env
    }

    pub fn provider_choice(&self) -> &ProviderChoice {
        &self.choice
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The board, whether or not the agent is offered its tools.
    pub fn hardware(&self) -> &Arc<Hardware> {
        &self.hardware
    }

    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    pub fn audit(&self) -> &Arc<Audit> {
        &self.audit
    }

    pub fn store(&self) -> &SessionStore {
        &self.store
    }

    /// How long an approval waits for an answer.
    pub fn approval_timeout(&self) -> Duration {
        Duration::from_secs(self.settings.core.policy.approval_timeout_secs)
    }

    /// An approver that queues each request in `PINCER_HOME/approvals/` for
    /// a person in another process (`pincer approvals`, a gateway);
    /// `on_pending` is told the id to answer.
    pub fn queue_approver(
        &self,
        on_pending: impl Fn(&Pending) + Send + Sync + 'static,
    ) -> Result<QueueApprover, RuntimeError> {
        let queue = ApprovalQueue::open(&self.home.approvals_dir())?;
        Ok(QueueApprover::new(queue, self.approval_timeout()).on_pending(on_pending))
    }

    /// An approver inside this process whose requests only the front-end
    /// can answer, as the principal it authenticated (the gateway).
    pub fn inbox(&self) -> Arc<inbox::ApprovalInbox> {
        Arc::new(inbox::ApprovalInbox::new(self.approval_timeout()))
    }

    /// The loop settings for a session with `system_prompt`.
    fn agent_settings(&self, system_prompt: String) -> AgentSettings {
        let c = &self.settings.core;
        AgentSettings {
            system_prompt,
            max_tool_iterations: c.agent.max_tool_iterations,
            context_window: self.choice.context_window(c.context.context_window),
            output_reserve: c.context.output_reserve,
            summary_max_chars: c.context.summary_max_chars,
            chars_per_token: c.context.chars_per_token,
        }
    }

    /// Opens session `key` for one front-end: its writer (a session busy in
    /// another process or task is an error), its gate asking `approver`,
    /// its prompt. The prompt's warnings are in [`AgentSession::prompt`].
    pub fn open_session(
        &self,
        key: &str,
        approver: Arc<dyn Approver>,
    ) -> Result<AgentSession, RuntimeError> {
        let new_session = prompt::is_new(&self.store, key)?;
        let conv = Conversation::open(&self.store, key)?;
        let prompt = prompt::build(&self.home, &self.settings, key, new_session);
        let gate = gate::build(
            &self.settings,
            &self.env,
            self.audit.clone(),
            approver,
            &self.actor,
        );
        let agent = Agent::new(
            self.provider.clone(),
            self.tools.clone(),
            Arc::new(gate),
            self.agent_settings(prompt.text.clone()),
        );
        Ok(AgentSession {
            agent,
            conv,
            prompt,
        })
    }
}

/// One session of a [`Runtime`], owned by one front-end task.
#[derive(Debug)]
pub struct AgentSession {
    agent: Agent,
    conv: Conversation,
    prompt: Prompt,
}

impl AgentSession {
    pub fn key(&self) -> &str {
        self.conv.key()
    }

    /// The stored live messages.
    pub fn messages(&self) -> &[pincer_core::Message] {
        self.conv.messages()
    }

    /// The system prompt this session sends, and what it could not hold.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// Runs one user turn to its end, reporting events to `on_event`.
    /// Dropping the future cancels it; the session stays valid and the
    /// next turn repairs what was cut short.
    pub async fn run_turn(
        &mut self,
        text: &str,
        on_event: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> Result<TurnOutcome, AgentError> {
        self.agent.run_turn(&mut self.conv, text, on_event).await
    }

    /// [`AgentSession::run_turn`] for a user message a front-end built (a
    /// chat photo with its caption, a camera frame).
    pub async fn run_turn_message(
        &mut self,
        message: pincer_core::Message,
        on_event: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> Result<TurnOutcome, AgentError> {
        self.agent
            .run_turn_message(&mut self.conv, message, on_event)
            .await
    }
}

/// `config.toml` of `home`, loaded and validated.
pub fn load_settings(home: &Home) -> Result<Settings, pincer_core::config::ConfigError> {
    Settings::load(&home.config_path())
}
