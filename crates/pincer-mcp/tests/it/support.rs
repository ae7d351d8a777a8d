//! Temp directories, the launch context, configs for the fake server, a
//! real gate over a real audit trail.

use pincer_core::approvals::Approver;
use pincer_core::audit::{Audit, Entry};
use pincer_core::config::Source;
use pincer_core::gate::{CallOutcome, Gate, GatePolicy};
use pincer_core::message::ToolCall;
use pincer_core::policy::Autonomy;
use pincer_core::tool::Tool;
use pincer_mcp::{Launch, ServerConfig};
use pincer_sandbox::Sandbox;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn exe() -> PathBuf {
    std::env::current_exe().unwrap()
}

/// One test's world: a workspace, a directory standing for pincer's state
/// (hidden from servers, holding a secret), a scratch root, a trail.
pub struct World {
    pub _dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub state: PathBuf,
    pub scratch: PathBuf,
    pub audit: Arc<Audit>,
    pub vars: BTreeMap<String, String>,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let state = root.join("state");
        let scratch = root.join("scratch");
        for d in [&ws, &state, &scratch] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(state.join("secret"), "pincer's own state").unwrap();
        let audit = Arc::new(Audit::open(&state.join("audit")).unwrap());
        World {
            _dir: dir,
            ws,
            state,
            scratch,
            audit,
            vars: BTreeMap::new(),
        }
    }

    pub fn launch(&self) -> Arc<Launch> {
        Arc::new(Launch {
            sandbox: Sandbox::new(exe()),
            agent: "agent-test".into(),
            workspace: self.ws.clone(),
            hide: vec![self.state.clone()],
            base_env: BTreeMap::from([(
                "PATH".to_string(),
                "/usr/local/bin:/usr/bin:/bin".to_string(),
            )]),
            vars: self.vars.clone(),
            scratch_root: self.scratch.clone(),
        })
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.audit.log(None, None).unwrap()
    }

    pub fn gate(&self, autonomy: Autonomy, approver: Arc<dyn Approver>) -> Gate {
        Gate::new(
            GatePolicy {
                autonomy,
                approval_timeout: Duration::from_secs(5),
                deny_tools: Vec::new(),
            },
            "agent:test",
            self.audit.clone(),
            approver,
        )
    }
}

/// `[mcp.servers.NAME]` for a server config in TOML (`body`), parsed the
/// way config.toml is.
pub fn server(name: &str, body: &str) -> ServerConfig {
    let text = format!("[mcp.servers.{name}]\n{body}");
    let cfg = pincer_mcp::config::parse_section(&Source::new(&text, Path::new("test.toml")))
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    cfg.servers.into_iter().next().unwrap()
}

/// The fake server in `mode`, allowed `tools`, with more TOML lines.
pub fn fake(mode: &str, tools: &str, extra: &str) -> ServerConfig {
    let exe = exe();
    let dir = exe.parent().unwrap();
    server(
        "fake",
        &format!(
            "command = [{:?}, {:?}, {:?}]\nread_only = [{:?}]\ntools = {tools}\n{extra}",
            exe.display().to_string(),
            crate::fake::FAKE,
            mode,
            dir.display().to_string()
        ),
    )
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// One call through the gate.
pub async fn call(
    gate: &Gate,
    tools: &[Arc<dyn Tool>],
    name: &str,
    args: serde_json::Value,
) -> CallOutcome {
    let tool = tools.iter().find(|t| t.name() == name).cloned();
    let call = ToolCall::new(format!("c-{name}"), name, &args);
    gate.call("s", tool, &call, &|_| {}).await.unwrap()
}

/// Polls `f` until it is true or `limit` passes.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

pub type TestResult = Result<(), libtest_mimic::Failed>;

/// Fails with `msg` unless `cond`.
pub fn check(cond: bool, msg: impl std::fmt::Display) -> TestResult {
    if cond {
        Ok(())
    } else {
        Err(msg.to_string().into())
    }
}
