//! Fixtures: a temp directory holding a workspace root `ws/` and a sibling
//! `outside/` with a secret the tools must never reveal or touch.

use pincer_core::ToolCall;
use pincer_core::approvals::DenyAll;
use pincer_core::audit::Audit;
use pincer_core::gate::{CallOutcome, Gate, GatePolicy};
use pincer_core::policy::Autonomy;
use pincer_core::tool::{Tool, ToolError};
use pincer_tools::{ResolutionMode, ToolLimits, Workspace, kernel_tools};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// Text of `outside/secret.txt`: must never appear in a tool result.
pub const SECRET: &str = "TOP-SECRET-OUTSIDE";

pub const MODES: [ResolutionMode; 2] = [ResolutionMode::Openat2, ResolutionMode::ComponentWalk];

pub struct Fx {
    pub _tmp: tempfile::TempDir,
    /// The temp directory holding `ws/` and `outside/` (canonical).
    pub base: PathBuf,
    /// The workspace root (canonical).
    pub root: PathBuf,
    pub outside: PathBuf,
    pub ws: Arc<Workspace>,
    tools: Vec<Arc<dyn Tool>>,
    /// Autonomy `full`: the tools' own checks are under test, and every
    /// call still goes through the gate (a tool cannot run otherwise).
    pub gate: Arc<Gate>,
}

impl Fx {
    pub fn new(mode: ResolutionMode) -> Fx {
        Fx::with(mode, ToolLimits::default(), vec![], |_| {})
    }

    pub fn with_limits(limits: ToolLimits) -> Fx {
        Fx::with(ResolutionMode::Openat2, limits, vec![], |_| {})
    }

    /// `setup` runs on the base directory before the workspace is opened;
    /// `protected` are relative to the base.
    pub fn with(
        mode: ResolutionMode,
        limits: ToolLimits,
        protected: Vec<&str>,
        setup: impl FnOnce(&std::path::Path),
    ) -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        setup(&base);
        let protected = protected.into_iter().map(|p| base.join(p)).collect();
        let ws = Arc::new(Workspace::open_with_mode(&root, protected, mode).unwrap());
        assert_eq!(ws.resolution_mode(), mode);
        let tools = kernel_tools(ws.clone(), &limits, "agent-7");
        let audit = Arc::new(Audit::open(&base.join("audit")).unwrap());
        let policy = GatePolicy {
            autonomy: Autonomy::Full,
            approval_timeout: std::time::Duration::from_secs(1),
            deny_tools: vec![],
        };
        let gate = Gate::new(
            policy,
            "agent:test",
            audit,
            Arc::new(DenyAll("test".into())),
        );
        Fx {
            _tmp: tmp,
            base,
            root,
            outside,
            ws,
            tools,
            gate: Arc::new(gate),
        }
    }

    pub fn tool(&self, name: &str) -> &Arc<dyn Tool> {
        self.tools
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    pub async fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        call_through(&self.gate, self.tool(name).clone(), args).await
    }

    /// A call that must succeed; never shows the outside secret.
    pub async fn ok(&self, name: &str, args: Value) -> String {
        match self.call(name, args.clone()).await {
            Ok(out) => {
                assert!(!out.contains(SECRET), "{name} {args} leaked: {out}");
                out
            }
            Err(e) => panic!("{name} {args} failed: {e:?}"),
        }
    }

    /// A call that must be refused back to the model with `needle` in the
    /// message; never shows the outside secret.
    pub async fn refused(&self, name: &str, args: Value, needle: &str) -> String {
        match self.call(name, args.clone()).await {
            Err(ToolError::RespondToModel(m)) => {
                assert!(!m.contains(SECRET), "{name} {args} leaked: {m}");
                assert!(
                    m.contains(needle),
                    "{name} {args}: expected {needle:?} in {m:?}"
                );
                m
            }
            other => panic!("{name} {args}: expected a refusal, got {other:?}"),
        }
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    pub fn symlink(&self, target: impl AsRef<std::path::Path>, rel: &str) {
        std::os::unix::fs::symlink(target, self.root.join(rel)).unwrap();
    }

    /// The outside directory's files and their contents, to prove nothing
    /// outside was written.
    pub fn outside_snapshot(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read_to_string(e.path()).unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    }

    pub fn assert_outside_untouched(&self) {
        assert_eq!(
            self.outside_snapshot(),
            vec![("secret.txt".to_string(), SECRET.to_string())],
            "something outside the workspace changed"
        );
    }
}

/// Runs one call through `gate` (the only way a tool runs); a refusal comes
/// back as the text the model would see.
pub async fn call_through(
    gate: &Gate,
    tool: Arc<dyn Tool>,
    args: Value,
) -> Result<String, ToolError> {
    let call = ToolCall::new("call-1", tool.name(), &args);
    match gate.call("test", Some(tool), &call, &|_| {}).await {
        Ok(CallOutcome::Ran(result)) => result,
        Ok(CallOutcome::Refused { text, .. }) => Err(ToolError::RespondToModel(text)),
        Err(e) => panic!("the gate failed: {e}"),
    }
}
