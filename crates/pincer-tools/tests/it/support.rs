//! Fixtures: a temp directory holding a workspace root `ws/` and a sibling
//! `outside/` with a secret the tools must never reveal or touch.

use pincer_core::ToolCall;
use pincer_core::approvals::DenyAll;
use pincer_core::audit::Audit;
use pincer_core::gate::{CallOutcome, Gate, GatePolicy};
use pincer_core::policy::Autonomy;
use pincer_core::tool::{Tool, ToolError};
use pincer_tools::{
    ResolutionMode, ShellEnv, ShellSandbox, ShellTool, ToolLimits, Workspace, kernel_tools,
};
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
        let mut tools = kernel_tools(ws.clone(), &limits, "agent-7");
        // The shell runs in the sandbox, with this package's helper binary
        // standing in for pincer (which is its own helper).
        for t in &mut tools {
            if t.name() == "shell" {
                *t = Arc::new(
                    ShellTool::new(ws.clone(), &limits, "agent-7", ShellEnv::default())
                        .with_sandbox(test_sandbox()),
                );
            }
        }
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

    /// The shell tool with the explicit opt-out of the sandbox.
    pub fn unsandboxed_shell(&self) -> Arc<dyn Tool> {
        Arc::new(
            ShellTool::new(
                self.ws.clone(),
                &ToolLimits::default(),
                "agent-7",
                ShellEnv::default(),
            )
            .unsandboxed(),
        )
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

/// The sandbox settings of the tests: the default, with the helper binary
/// built for this package's tests.
pub fn test_sandbox() -> ShellSandbox {
    ShellSandbox {
        sandbox: pincer_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_pincer-tools-sandbox-helper")),
        ..ShellSandbox::default()
    }
}

/// A gate at autonomy `full` over a fresh audit trail in `dir`.
pub fn full_gate(dir: &std::path::Path) -> Arc<Gate> {
    let audit = Arc::new(Audit::open(dir).unwrap());
    let policy = GatePolicy {
        autonomy: Autonomy::Full,
        approval_timeout: std::time::Duration::from_secs(1),
        deny_tools: vec![],
    };
    Arc::new(Gate::new(
        policy,
        "agent:test",
        audit,
        Arc::new(DenyAll("test".into())),
    ))
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

/// A FIFO in the workspace that a command's background process holds open
/// for writing: the test learns from it that the process started (it
/// writes `alive`) and that it died (every writer gone), without pids —
/// a sandboxed command's pids are those of its own namespace.
pub struct FifoWatch {
    fd: std::os::fd::OwnedFd,
}

impl FifoWatch {
    pub fn new(path: &std::path::Path) -> FifoWatch {
        use rustix::fs::{CWD, FileType, Mode, OFlags};
        rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o666), 0).unwrap();
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        FifoWatch { fd }
    }

    /// Reads until `alive` was seen (true) or, with `until_eof`, until every
    /// writer is gone (true); false at the deadline.
    fn read(&self, until_eof: bool, within: std::time::Duration) -> bool {
        use rustix::event::{PollFd, PollFlags, Timespec};
        let deadline = std::time::Instant::now() + within;
        let mut got = Vec::new();
        loop {
            if !until_eof && String::from_utf8_lossy(&got).contains("alive") {
                return true;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            let ts = Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap(),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => {}
                Err(e) => panic!("poll: {e}"),
            }
            let mut buf = [0u8; 256];
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => return until_eof,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    pub fn wait_alive(&self) -> bool {
        self.read(false, std::time::Duration::from_secs(20))
    }

    /// True once every process holding the FIFO is dead (20 s at most).
    pub fn wait_dead(&self) -> bool {
        self.read(true, std::time::Duration::from_secs(20))
    }
}
