//! The escape corpus (`pincer-sandbox`'s `escapes.tsv`) through the shell
//! tool, as the agent would send it, against a fake PINCER_HOME; and the
//! shell tool's own fail-closed cases.

use crate::support::{call_through, full_gate, test_sandbox};
use pincer_core::tool::{Tool, ToolError};
use pincer_sandbox::corpus::{self, Action, Fixture, Observation};
use pincer_tools::{NetworkMode, ShellEnv, ShellSandbox, ShellTool, ToolLimits, Workspace};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn limits() -> ToolLimits {
    ToolLimits {
        shell_timeout_max: Duration::from_secs(60),
        ..ToolLimits::default()
    }
}

/// The shell tool for one case: the fixture's workspace, its fake
/// PINCER_HOME hidden, `{ro}` read-only, a call may ask for the network.
/// (The workspace gets no protected paths: the shell's textual check would
/// then refuse every command naming PINCER_HOME before the sandbox is
/// reached, and the sandbox is what is under test here.)
fn tool_for(fx: &Fixture) -> Arc<dyn Tool> {
    let ws = Arc::new(Workspace::open(&fx.ws, vec![]).unwrap());
    let mut read_only = pincer_sandbox::default_read_only();
    read_only.push(fx.ro.clone());
    let sb = ShellSandbox {
        limits: Fixture::limits(),
        read_only,
        hide: vec![fx.home.clone()],
        ..test_sandbox()
    };
    Arc::new(
        ShellTool::new(ws, &limits(), "corpus", ShellEnv::default())
            .with_sandbox(sb)
            .with_network(NetworkMode::Ask),
    )
}

fn text(r: Result<String, ToolError>) -> String {
    match r {
        Ok(t) => t,
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_escape_in_the_corpus_is_refused_through_the_shell_tool() {
    // A value of this process's environment, as pincer's API keys would be.
    let secret = format!(
        "CARGO_MANIFEST_DIR={}",
        std::env::var("CARGO_MANIFEST_DIR").unwrap()
    );
    let mut escaped = Vec::new();
    let mut gate_refused = Vec::new();
    let mut reached = 0;
    for case in corpus::cases() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Fixture::create(dir.path(), vec![secret.clone()]).unwrap();
        if !fx.missing_programs(&case).is_empty() {
            eprintln!(
                "{}: skipped, needs {:?}",
                case.id,
                fx.missing_programs(&case)
            );
            continue;
        }
        fx.arm(&case).unwrap();
        let gate = full_gate(&dir.path().join("audit"));
        let tool = tool_for(&fx);
        let args = json!({
            "command": fx.command(&case),
            "timeout_secs": case.timeout.as_secs(),
            "network": case.network,
        });
        let runs = match case.action {
            Action::Once => vec![text(call_through(&gate, tool, args).await)],
            Action::Twice => vec![
                text(call_through(&gate, tool.clone(), args.clone()).await),
                text(call_through(&gate, tool, args).await),
            ],
            Action::KillParent => {
                // pincer abandons the call (a cancelled turn): the helper is
                // killed, and the sandbox must die with it.
                let g = gate.clone();
                let task = tokio::spawn(async move { call_through(&g, tool, args).await });
                let alive = tokio::task::block_in_place(|| fx.wait_alive(Duration::from_secs(20)));
                task.abort();
                let _ = task.await;
                if !alive {
                    escaped.push(format!("{}: the command never started", case.id));
                    continue;
                }
                vec![String::new()]
            }
        };
        if runs.iter().any(|t| t.contains("deny list")) {
            gate_refused.push(case.id.clone());
            continue;
        }
        reached += 1;
        let obs: Vec<Observation> = runs.into_iter().map(|text| Observation { text }).collect();
        let v = tokio::task::block_in_place(|| fx.judge(&case, &obs));
        if !v.refused {
            escaped.push(format!("{}: {:?}", case.id, v.failures));
        }
    }
    eprintln!("refused by the gate before the sandbox: {gate_refused:?}");
    assert!(
        escaped.is_empty(),
        "escapes through the shell tool:\n{}",
        escaped.join("\n")
    );
    assert!(reached >= 25, "only {reached} cases reached the sandbox");
}

/// A layer that cannot be applied (here: a read-only directory that does
/// not exist, so Landlock cannot build its rule) stops the call; the
/// command does not run, and the model is told which layer failed.
#[tokio::test]
async fn a_layer_that_cannot_be_applied_stops_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = Arc::new(Workspace::open(&root, vec![]).unwrap());
    let mut read_only = pincer_sandbox::default_read_only();
    read_only.push(std::path::PathBuf::from("/nonexistent-pincer-dir"));
    let sb = ShellSandbox {
        read_only,
        ..test_sandbox()
    };
    let tool: Arc<dyn Tool> =
        Arc::new(ShellTool::new(ws, &limits(), "a", ShellEnv::default()).with_sandbox(sb));
    let gate = full_gate(&root.join("audit"));
    let r = call_through(&gate, tool, json!({"command": "echo ran > ran.txt"})).await;
    match r {
        Err(ToolError::RespondToModel(m)) => {
            assert!(
                m.contains("`landlock-fs`") && m.contains("did not run"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!root.join("ran.txt").exists(), "the command ran");
}

/// A helper that is not a sandbox helper never means running unsandboxed.
#[tokio::test]
async fn a_broken_helper_never_runs_the_command_unsandboxed() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = Arc::new(Workspace::open(&root, vec![]).unwrap());
    let sb = ShellSandbox {
        sandbox: pincer_sandbox::Sandbox::new("/bin/true"),
        ..ShellSandbox::default()
    };
    let tool: Arc<dyn Tool> =
        Arc::new(ShellTool::new(ws, &limits(), "a", ShellEnv::default()).with_sandbox(sb));
    let gate = full_gate(&root.join("audit"));
    let r = call_through(&gate, tool, json!({"command": "echo ran > ran.txt"})).await;
    match r {
        Err(ToolError::Fatal(m)) => assert!(m.contains("without a valid report"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(!root.join("ran.txt").exists(), "the command ran");
}

/// Allowed to degrade, a layer that is missing lets the command run, and the
/// result says so.
#[tokio::test]
async fn a_degraded_run_says_so_in_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = Arc::new(Workspace::open(&root, vec![]).unwrap());
    let mut read_only = pincer_sandbox::default_read_only();
    read_only.push(std::path::PathBuf::from("/nonexistent-pincer-dir"));
    let mut sb = ShellSandbox {
        read_only,
        ..test_sandbox()
    };
    sb.degrade.insert(pincer_sandbox::Layer::LandlockFs);
    let tool: Arc<dyn Tool> =
        Arc::new(ShellTool::new(ws, &limits(), "a", ShellEnv::default()).with_sandbox(sb));
    let gate = full_gate(&root.join("audit"));
    let out = call_through(&gate, tool, json!({"command": "echo ran > ran.txt"}))
        .await
        .unwrap();
    assert!(out.contains("`landlock-fs` is DEGRADED"), "{out}");
    assert!(root.join("ran.txt").exists());
}
