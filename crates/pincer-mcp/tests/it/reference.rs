//! The reference servers from the npm registry (`scripts/mcp-npm.sh`
//! installs them; `PINCER_MCP_NPM` names the directory): server-everything
//! and server-filesystem in pincer's sandbox, through the gate.
//!
//! Without node or the packages these tests are ignored, saying why; with
//! `PINCER_REQUIRE_MCP_SERVERS=1` (as `.ci/run` sets) they fail instead.

use crate::support::{TestResult, World, call, check, rt, server};
use libtest_mimic::{Failed, Trial};
use pincer_core::gate::CallOutcome;
use pincer_core::policy::Autonomy;
use pincer_mcp::{Server, ServerConfig, tools_of};
use pincer_test_support::Answer;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Where the packages are and which node runs them.
#[derive(Debug, Clone)]
pub struct Npm {
    pub dir: PathBuf,
    pub node: PathBuf,
}

impl Npm {
    pub fn package(&self, name: &str) -> PathBuf {
        self.dir.join("node_modules").join(name)
    }
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(program))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

/// The packages, or why they are not here.
pub fn npm() -> Result<Npm, String> {
    let dir = std::env::var_os("PINCER_MCP_NPM")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/pincer-mcp-npm")))
        .ok_or("neither PINCER_MCP_NPM nor HOME is set")?;
    let node = on_path("node").ok_or("node is not installed")?;
    let npm = Npm {
        dir: dir.canonicalize().unwrap_or(dir),
        node,
    };
    for p in [
        "@modelcontextprotocol/server-everything",
        "@modelcontextprotocol/server-filesystem",
    ] {
        if !npm.package(p).is_dir() {
            return Err(format!(
                "{p} is not installed in {} (run scripts/mcp-npm.sh)",
                npm.dir.display()
            ));
        }
    }
    Ok(npm)
}

/// A trial that needs the packages: ignored without them (or failed, when
/// CI requires them).
pub fn needs_npm(name: &'static str, f: fn(&Npm) -> TestResult) -> Trial {
    let required = std::env::var_os("PINCER_REQUIRE_MCP_SERVERS").is_some_and(|v| v == "1");
    match npm() {
        Ok(n) => Trial::test(name, move || f(&n)),
        Err(why) if required => Trial::test(name, move || {
            Err(format!("PINCER_REQUIRE_MCP_SERVERS=1 but {why}").into())
        }),
        Err(why) => {
            eprintln!("note: {name} is ignored: {why}");
            Trial::test(name, || Ok(())).with_ignored_flag(true)
        }
    }
}

pub fn trials() -> Vec<Trial> {
    vec![
        needs_npm("reference::server_everything_through_the_gate", everything),
        needs_npm("reference::server_filesystem_in_the_workspace", filesystem),
        needs_npm(
            "reference::a_server_told_to_serve_everything_still_cannot_read_pincers_state",
            filesystem_confined,
        ),
    ]
}

pub fn everything_config(n: &Npm, tools: &str) -> ServerConfig {
    let js = n
        .package("@modelcontextprotocol/server-everything")
        .join("dist/index.js");
    server(
        "everything",
        &format!(
            "command = [{:?}, {:?}, \"stdio\"]\nread_only = [{:?}]\ntools = {tools}\ntool_risk = {{ echo = \"low\", get-sum = \"low\" }}\n",
            n.node.display().to_string(),
            js.display().to_string(),
            n.dir.display().to_string()
        ),
    )
}

fn everything(n: &Npm) -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let cfg = everything_config(
            n,
            r#"["echo", "get-sum", "get-tiny-image", "get-env", "get-structured-content"]"#,
        );
        let server = Server::start(cfg, w.launch(), Some(w.audit.clone())).await?;
        let offered: Vec<String> = tools_of(&server)
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        check(
            offered.len() == 5 && offered.contains(&"everything__get-sum".to_string()),
            format!("{offered:?}"),
        )?;
        check(
            server
                .tool("gzip-file-as-resource")
                .is_some_and(|t| !t.offered),
            "listed, not offered",
        )?;
        let tools = tools_of(&server);
        let gate = w.gate(Autonomy::Supervised, Answer::no());
        let ran = |o: &CallOutcome| match o {
            CallOutcome::Ran(Ok(t)) => t.clone(),
            other => format!("{other:?}"),
        };
        // Low risk runs under supervised without asking.
        let o = call(
            &gate,
            &tools,
            "everything__echo",
            json!({"message": "hello from pincer"}),
        )
        .await;
        check(ran(&o).contains("hello from pincer"), ran(&o))?;
        let o = call(
            &gate,
            &tools,
            "everything__get-sum",
            json!({"a": 2, "b": 3}),
        )
        .await;
        check(ran(&o).contains('5'), ran(&o))?;
        // Bad arguments never reach it.
        let o = call(
            &gate,
            &tools,
            "everything__get-sum",
            json!({"a": "two", "b": 3}),
        )
        .await;
        check(
            matches!(
                o,
                CallOutcome::Refused {
                    refusal: pincer_core::gate::Refusal::Invalid,
                    ..
                }
            ),
            format!("{o:?}"),
        )?;
        let gate = w.gate(Autonomy::Full, Answer::no());
        let o = call(&gate, &tools, "everything__get-tiny-image", json!({})).await;
        check(
            ran(&o).contains("[image image/png,") && ran(&o).contains("not shown"),
            ran(&o),
        )?;
        let o = call(
            &gate,
            &tools,
            "everything__get-structured-content",
            json!({"location": "Chicago"}),
        )
        .await;
        check(ran(&o).to_lowercase().contains("temperature"), ran(&o))?;
        // Its environment is the sandbox's allowlist, nothing of pincer's.
        let env = ran(&call(&gate, &tools, "everything__get-env", json!({})).await);
        let v: Value = serde_json::from_str(&env).unwrap_or(Value::Null);
        let mut names: Vec<&str> = v
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        names.sort();
        check(
            names == ["HOME", "PATH", "PINCER_AGENT"],
            format!("{names:?} from {env}"),
        )?;
        let calls = w
            .entries()
            .iter()
            .filter(|e| e.kind == "tool.call" && e.data["status"] == "ok")
            .count();
        check(calls == 5, format!("{calls} tool.call entries"))?;
        server.shutdown().await;
        Ok::<_, Failed>(())
    })
}

fn filesystem_config(n: &Npm, root: &str) -> ServerConfig {
    let js = n
        .package("@modelcontextprotocol/server-filesystem")
        .join("dist/index.js");
    server(
        "files",
        &format!(
            "command = [{:?}, {:?}, {root:?}]\nread_only = [{:?}]\nworkspace = \"write\"\ntools = [\"*\"]\n",
            n.node.display().to_string(),
            js.display().to_string(),
            n.dir.display().to_string()
        ),
    )
}

fn filesystem(n: &Npm) -> TestResult {
    let w = World::new();
    std::fs::write(w.ws.join("notes.txt"), "tomatoes: water every 2 days")?;
    rt().block_on(async {
        let server = Server::start(filesystem_config(n, "."), w.launch(), None).await?;
        let out = server
            .call("read_text_file", json!({"path": w.ws.join("notes.txt")}))
            .await?;
        check(out.text.contains("tomatoes"), &out.text)?;
        let out = server
            .call(
                "write_file",
                json!({"path": w.ws.join("new.txt"), "content": "written by the server"}),
            )
            .await?;
        check(!out.is_error, &out.text)?;
        check(
            std::fs::read_to_string(w.ws.join("new.txt"))? == "written by the server",
            "the write landed in the workspace",
        )?;
        server.shutdown().await;
        Ok::<_, Failed>(())
    })
}

/// The server's own policy allows all of `/`; the sandbox still hides
/// pincer's state and keeps writes in the workspace.
fn filesystem_confined(n: &Npm) -> TestResult {
    let w = World::new();
    let outside = tempfile::tempdir()?;
    rt().block_on(async {
        let server = Server::start(filesystem_config(n, "/"), w.launch(), None).await?;
        let secret = w.state.join("secret");
        let out = server
            .call("read_text_file", json!({"path": secret}))
            .await?;
        check(
            out.is_error && !out.text.contains("pincer's own state"),
            format!("read pincer's state: {}", out.text),
        )?;
        let target = outside.path().join("escaped.txt");
        let _ = server
            .call("write_file", json!({"path": target, "content": "x"}))
            .await;
        check(!target.exists(), "wrote outside the workspace")?;
        let out = server
            .call("read_text_file", json!({"path": "/etc/hostname"}))
            .await?;
        check(
            !out.is_error,
            format!("the system stays readable: {}", out.text),
        )?;
        Ok::<_, Failed>(())
    })
}
