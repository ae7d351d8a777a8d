//! The shell tool: forms, exit reporting, timeout and process-group kill,
//! output cap, cleared environment, cwd.

use crate::support::{FifoWatch, Fx, call_through};
use pincer_core::policy::Risk;
use pincer_core::tool::{Tool, ToolError};
use pincer_tools::{
    NetworkMode, ResolutionMode, ShellDialect, ShellEnv, ShellProgram, ShellTool, ToolLimits,
};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, PidfdFlags};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

fn fx() -> Fx {
    Fx::new(ResolutionMode::Openat2)
}

/// Waits (bounded, on an event — not a sleep) until process `pid` has
/// exited; true if it did. A pid that no longer exists has exited.
fn exits(pid: i32) -> bool {
    let pid = Pid::from_raw(pid).unwrap();
    let fd = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => return true,
        Err(e) => panic!("pidfd_open: {e}"),
    };
    // SIGCHLD from the runtime's own children can interrupt the poll.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap(),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(n) => return n == 1,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => panic!("poll: {e}"),
        }
    }
}

fn pid_in(fx: &Fx, file: &str) -> i32 {
    fx.read(file).trim().parse().unwrap()
}

#[tokio::test]
async fn argv_form_runs_without_a_shell() {
    let fx = fx();
    let out = fx
        .ok("shell", json!({"argv": ["echo", "hello", "$HOME", "a b"]}))
        .await;
    assert!(out.starts_with("exit status: 0\n"), "{out}");
    assert!(out.ends_with("\nhello $HOME a b\n"), "{out}");
}

#[tokio::test]
async fn command_form_uses_sh_and_a_nonzero_exit_is_a_result() {
    let fx = fx();
    let out = fx
        .ok(
            "shell",
            json!({"command": "echo out; echo err >&2; echo out2; exit 3"}),
        )
        .await;
    assert!(out.starts_with("exit status: 3\n"), "{out}");
    // stdout and stderr share one pipe: the order is the order written.
    assert!(out.ends_with("bytes):\nout\nerr\nout2\n"), "{out}");
    let out = fx.ok("shell", json!({"command": "kill -TERM $$"})).await;
    assert!(out.starts_with("killed by signal 15 (SIGTERM)"), "{out}");
    let out = fx.ok("shell", json!({"argv": ["true"]})).await;
    assert_eq!(out, "exit status: 0\n(no output)");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_refused_to_the_model() {
    let fx = fx();
    let m = fx
        .refused(
            "shell",
            json!({"argv": ["/nonexistent/prog", "x"]}),
            "could not start",
        )
        .await;
    assert!(m.contains("/nonexistent/prog"), "{m}");
}

#[tokio::test]
async fn timeout_kills_the_whole_sandbox() {
    let fx = fx();
    let watch = FifoWatch::new(&fx.root.join("w.fifo"));
    let out = fx
        .ok(
            "shell",
            json!({"command": "echo started; setsid sh -c 'echo alive; exec sleep 300' > w.fifo & wait", "timeout_secs": 2}),
        )
        .await;
    assert!(
        out.starts_with("timed out after 2s: the whole sandbox"),
        "{out}"
    );
    assert!(out.contains("started"), "{out}");
    assert!(watch.wait_dead(), "a process survived the timeout: {out}");
}

#[tokio::test]
async fn unsandboxed_timeout_kills_the_whole_process_group() {
    let fx = fx();
    let out = crate::support::call_through(
        &fx.gate,
        fx.unsandboxed_shell(),
        json!({"command": "echo started; sleep 300 & echo $! > gc.pid; wait", "timeout_secs": 2}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("timed out after 2s"), "{out}");
    assert!(out.contains("WITHOUT the OS sandbox"), "{out}");
    let grandchild = pid_in(&fx, "gc.pid");
    assert!(
        exits(grandchild),
        "grandchild {grandchild} survived the timeout"
    );
}

#[tokio::test]
async fn background_processes_left_behind_are_killed_when_the_command_exits() {
    let fx = fx();
    let watch = FifoWatch::new(&fx.root.join("w.fifo"));
    let out = fx
        .ok(
            "shell",
            json!({"command": "mkfifo ready; setsid sh -c 'echo alive; echo > ready; exec sleep 300' > w.fifo & read x < ready; echo done"}),
        )
        .await;
    assert!(out.starts_with("exit status: 0\n"), "{out}");
    assert!(out.contains("left processes running"), "{out}");
    assert!(out.ends_with("done\n"), "{out}");
    assert!(watch.wait_dead(), "the background process survived: {out}");
}

#[tokio::test]
async fn unsandboxed_background_processes_are_killed_with_the_process_group() {
    let fx = fx();
    let out = crate::support::call_through(
        &fx.gate,
        fx.unsandboxed_shell(),
        json!({"command": "sleep 300 & echo $! > bg.pid; echo done"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("exit status: 0\n"), "{out}");
    assert!(out.contains("left processes running"), "{out}");
    let bg = pid_in(&fx, "bg.pid");
    assert!(exits(bg), "background process {bg} survived");
}

#[tokio::test]
async fn dropping_the_call_kills_the_sandbox() {
    let fx = fx();
    let watch = FifoWatch::new(&fx.root.join("w.fifo"));
    let tool = fx.tool("shell").clone();
    let gate = fx.gate.clone();
    let task = tokio::spawn(async move {
        let args = json!({"command": "setsid sh -c 'echo alive; exec sleep 300' > w.fifo & wait"});
        crate::support::call_through(&gate, tool, args).await
    });
    let alive = tokio::task::spawn_blocking(move || (watch.wait_alive(), watch));
    let (is_alive, watch) = alive.await.unwrap();
    assert!(is_alive, "the command never started");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let dead = tokio::task::spawn_blocking(move || watch.wait_dead())
        .await
        .unwrap();
    assert!(dead, "a process survived the dropped call");
}

#[tokio::test]
async fn output_over_the_cap_is_truncated_with_the_original_size() {
    let fx = Fx::with_limits(ToolLimits {
        shell_output_cap: 1000,
        ..ToolLimits::default()
    });
    let out = fx
        .ok(
            "shell",
            json!({"command": "head -c 5000 /dev/zero | tr '\\0' a; echo; echo END"}),
        )
        .await;
    assert!(out.starts_with("exit status: 0\n"), "{out}");
    assert!(
        out.contains("output (stdout and stderr together, 5005 bytes)"),
        "{out}"
    );
    assert!(
        out.contains("[... output truncated: 5005 bytes in total, over the 1000-byte cap"),
        "{out}"
    );
    assert!(out.ends_with("END\n"), "the tail is kept: {out}");
    assert!(out.len() < 1400, "{}", out.len());
}

#[tokio::test]
async fn the_environment_is_cleared_to_the_allowlist() {
    let fx = fx();
    // Cargo sets this in the test process; it must not reach the command.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let out = fx.ok("shell", json!({"argv": ["env"]})).await;
    let body = out.split_once("bytes):\n").unwrap().1;
    let env: BTreeMap<&str, &str> = body.lines().filter_map(|l| l.split_once('=')).collect();
    let keys: Vec<&str> = env.keys().copied().collect();
    assert_eq!(
        keys,
        ["HOME", "LANG", "PATH", "PINCER_AGENT", "TERM"],
        "{out}"
    );
    assert_eq!(env["PINCER_AGENT"], "agent-7");
    // A private, empty HOME: not the workspace (a planted .gitconfig there
    // must not configure git).
    assert_eq!(env["HOME"], pincer_sandbox::DEFAULT_HOME);
    assert_eq!(env["TERM"], "dumb");
    assert_eq!(env["PATH"], pincer_tools::shell::DEFAULT_PATH);
}

#[tokio::test]
async fn the_command_runs_in_the_workspace_with_empty_stdin() {
    let fx = fx();
    let out = fx.ok("shell", json!({"argv": ["pwd"]})).await;
    assert!(
        out.ends_with(&format!("\n{}\n", fx.root.display())),
        "{out}"
    );
    fx.ok("shell", json!({"command": "echo made > made.txt"}))
        .await;
    assert_eq!(fx.read("made.txt"), "made\n");
    // Make this process's stdin a pipe that never ends: an inherited stdin
    // would leave `cat` waiting until the timeout.
    let (stdin_r, _stdin_w) = std::io::pipe().unwrap();
    rustix::stdio::dup2_stdin(&stdin_r).unwrap();
    let out = fx
        .ok("shell", json!({"argv": ["cat"], "timeout_secs": 5}))
        .await;
    assert_eq!(out, "exit status: 0\n(no output)");
}

#[tokio::test]
async fn malformed_shell_arguments_are_refused_naming_them() {
    let fx = fx();
    for (args, needle) in [
        (json!({}), "`argv`"),
        (json!({"argv": ["ls"], "command": "ls"}), "not both"),
        (json!({"argv": []}), "`argv` must start with a program"),
        (json!({"argv": "ls"}), "`argv` must be an array of strings"),
        (json!({"argv": ["ls", 3]}), "item 1"),
        (json!({"command": "  "}), "`command` must not be empty"),
        (
            json!({"command": "ls", "timeout_secs": 0}),
            "`timeout_secs` must be at least 1",
        ),
        (
            json!({"command": "ls", "timeout_secs": 301}),
            "`timeout_secs` must be at most 300",
        ),
        (
            json!({"command": "ls", "cwd": "/"}),
            "unknown argument `cwd`",
        ),
        (json!({"argv": ["ec\u{0}ho"]}), "NUL"),
    ] {
        match fx.call("shell", args.clone()).await {
            Err(ToolError::RespondToModel(m)) => {
                assert!(m.contains(needle) && m.starts_with("shell"), "{args}: {m}")
            }
            other => panic!("{args}: {other:?}"),
        }
    }
}

#[test]
fn the_description_says_how_commands_are_isolated() {
    let fx = fx();
    let d = fx.tool("shell").description().to_string();
    assert!(d.contains("It runs in an OS sandbox"), "{d}");
    assert!(d.contains("there is no network"), "{d}");
    assert!(d.contains("approval"), "{d}");
    let d = fx.unsandboxed_shell().description().to_string();
    assert!(d.contains("WITHOUT an OS sandbox"), "{d}");
}

/// The network interfaces a command sees, from its own `/proc/net/dev`:
/// the lines `NAME: <counters>`.
fn interfaces(out: &str) -> Vec<&str> {
    out.lines()
        .filter_map(|l| l.trim().split_once(':'))
        .filter(|(name, rest)| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                && rest.trim_start().starts_with(|c: char| c.is_ascii_digit())
        })
        .map(|(name, _)| name)
        .collect()
}

/// With `[shell] network = "off"` (the default) a call cannot ask for the
/// network: the schema does not offer it, and a call that asks anyway is
/// refused before anything runs.
#[tokio::test]
async fn a_call_cannot_ask_for_the_network_when_it_is_off() {
    let fx = fx();
    let shell = fx.tool("shell");
    assert!(
        shell.parameters_schema()["properties"]
            .get("network")
            .is_none()
    );
    let a = shell.assess(&json!({"command": "true", "network": true}));
    assert!(
        a.invalid.as_deref().is_some_and(|m| m.contains("network")),
        "{a:?}"
    );
    let m = fx
        .refused(
            "shell",
            json!({"command": "touch ran", "network": true}),
            "no network",
        )
        .await;
    assert!(!fx.root.join("ran").exists(), "{m}");
    let a = shell.assess(&json!({"command": "true", "network": "yes"}));
    assert!(a.invalid.is_some(), "{a:?}");
    // Without the argument there is only a loopback.
    let out = fx
        .ok("shell", json!({"command": "cat /proc/net/dev"}))
        .await;
    assert_eq!(interfaces(&out), ["lo"], "{out}");
}

/// With `network = "ask"`, a call that asks is high risk whatever the
/// command, runs with the host's network, and its result and its
/// `tool.call` entry say so.
#[tokio::test]
async fn a_call_that_asks_for_the_network_is_high_risk_and_recorded() {
    let fx = fx();
    let shell: Arc<dyn Tool> = Arc::new(
        ShellTool::new(
            fx.ws.clone(),
            &ToolLimits::default(),
            "agent-7",
            ShellEnv::default(),
        )
        .with_sandbox(crate::support::test_sandbox())
        .with_network(NetworkMode::Ask),
    );
    assert_eq!(
        shell.parameters_schema()["properties"]["network"]["type"],
        "boolean"
    );
    let a = shell.assess(&json!({"command": "cat /proc/net/dev", "network": true}));
    assert_eq!(a.risk, Risk::High, "{a:?}");
    assert_eq!(
        a.subject.as_ref().map(|s| &s["network"]),
        Some(&json!(true))
    );
    let low = shell.assess(&json!({"command": "cat /proc/net/dev", "network": false}));
    assert_eq!(low.risk, Risk::Low, "{low:?}");
    let out = call_through(
        &fx.gate,
        shell.clone(),
        json!({"command": "cat /proc/net/dev", "network": true}),
    )
    .await
    .unwrap();
    assert!(out.contains("the network was on"), "{out}");
    let host = std::fs::read_to_string("/proc/net/dev").unwrap();
    assert_eq!(interfaces(&out).len(), interfaces(&host).len(), "{out}");
    let audit = pincer_core::audit::Audit::open(&fx.base.join("audit")).unwrap();
    let call = audit
        .log(Some(1), Some("tool.call"))
        .unwrap()
        .pop()
        .unwrap();
    assert!(
        call.data["notes"]
            .to_string()
            .contains("the network was on"),
        "{}",
        call.data
    );
    let decision = audit
        .log(Some(1), Some("gate.decision"))
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(
        decision.data["subject"]["network"], true,
        "{}",
        decision.data
    );
}

#[tokio::test]
async fn a_command_naming_pincer_state_is_denied_at_every_level() {
    let fx = Fx::with(
        ResolutionMode::Openat2,
        ToolLimits::default(),
        vec!["state"],
        |base| std::fs::create_dir(base.join("state")).unwrap(),
    );
    let state = fx.base.join("state");
    let shell = fx.tool("shell");
    for command in [
        format!("echo yes > {}/approvals/x.answer.json", state.display()),
        format!("cat {}/keys/id", state.display()),
        format!("sh -c 'cp a {}'", state.display()),
    ] {
        let a = shell.assess(&json!({ "command": command }));
        assert!(
            a.denied
                .as_deref()
                .unwrap_or("")
                .contains("pincer's own state"),
            "{command}: {a:?}"
        );
        // Refused even under autonomy full, before anything runs.
        let err = fx
            .call("shell", json!({ "command": command }))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("deny list"), "{err}");
    }
    assert!(shell.assess(&json!({"command": "ls -la"})).denied.is_none());
}

/// The shell tool running `program`, called through the fixture's gate.
fn shell_with(fx: &Fx, program: ShellProgram) -> std::sync::Arc<dyn Tool> {
    std::sync::Arc::new(
        ShellTool::new(
            fx.ws.clone(),
            &ToolLimits::default(),
            "agent-7",
            ShellEnv::default(),
        )
        .with_shell(program)
        .with_sandbox(crate::support::test_sandbox()),
    )
}

#[tokio::test]
async fn commands_run_with_dash_by_default_or_the_chosen_shell() {
    let fx = fx();
    // `$'a'` is ANSI-C quoting to bash, a `$` and a quoted `a` to dash.
    let out = fx.ok("shell", json!({"command": "echo $'a'"})).await;
    assert!(out.ends_with("\n$a\n"), "{out}");
    let a = fx.tool("shell").assess(&json!({"command": "ls"}));
    assert_eq!(a.detail.unwrap()["shell"], "dash");

    let bash = shell_with(&fx, ShellProgram::bash());
    let out = call_through(&fx.gate, bash.clone(), json!({"command": "echo $'a'"}))
        .await
        .unwrap();
    assert!(out.ends_with("\na\n"), "{out}");
    assert_eq!(
        bash.assess(&json!({"command": "ls"})).detail.unwrap()["shell"],
        "bash"
    );
    // Bash reads no startup file: a `.bashrc` in the workspace (HOME) is
    // not run.
    fx.write(".bashrc", "echo FROM-BASHRC\n");
    let out = call_through(&fx.gate, bash, json!({"command": "echo ran"}))
        .await
        .unwrap();
    assert!(!out.contains("FROM-BASHRC"), "{out}");

    assert!(ShellProgram::new("bin/dash", ShellDialect::Dash).is_err());
}

/// Each command is classified for the shell that runs it, then run by it.
/// Whenever the real shell wrote the file, the classification was not low:
/// the classifier reads the command the way that shell does.
#[tokio::test]
async fn a_command_that_writes_is_never_low_for_the_shell_that_runs_it() {
    // (command, writes under dash, writes under bash)
    let cases = [
        // dash has no `$'…'`: the `touch` in the middle runs.
        (r"echo $'\'; touch pwned; echo '\'", true, false),
        // dash has no `[[`: `> pwned` is a redirection.
        ("[[ x > pwned ]]", true, false),
        // bash reads `((…))` and `$[…]` as arithmetic, so the next line
        // runs; dash reads `<<2` as a here-document that swallows it.
        ("((1<<2))\ntouch pwned", false, true),
        ("echo $[1<<2]\ntouch pwned", false, true),
        ("((1<<2 + ')' ))\ntouch pwned", false, true),
        // Both: `&>` is a redirection to bash, `&` then `>` to dash.
        ("echo hi &> pwned; wait", true, true),
    ];
    for (command, dash_writes, bash_writes) in cases {
        for (program, writes) in [
            (ShellProgram::dash(), dash_writes),
            (ShellProgram::bash(), bash_writes),
        ] {
            let fx = fx();
            let tool = shell_with(&fx, program.clone());
            let a = tool.assess(&json!({ "command": command }));
            call_through(&fx.gate, tool, json!({ "command": command }))
                .await
                .unwrap();
            let wrote = fx.root.join("pwned").exists();
            assert_eq!(wrote, writes, "{command:?} under {}", program.dialect());
            if wrote {
                assert!(
                    a.risk >= Risk::Medium,
                    "{command:?} wrote a file under {} but was classified {:?}: {}",
                    program.dialect(),
                    a.risk,
                    a.why
                );
            }
        }
    }
}

/// The interceptor example in `docs/hooks.md`, run as written: it must
/// read both forms of a shell call, or `argv` walks around it.
#[test]
fn the_hooks_doc_interceptor_checks_both_forms_of_a_shell_call() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/hooks.md"))
        .unwrap();
    let start = doc.find("```python\n").expect("a python example") + "```python\n".len();
    let code = &doc[start..start + doc[start..].find("```").unwrap()];
    let Ok(python) = which("python3") else {
        eprintln!("python3 is not installed: the hooks doc example was not run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("guard.py");
    std::fs::write(&script, code).unwrap();
    let verdict = |arguments: serde_json::Value| -> String {
        let input = json!({"hook": "interceptor", "version": 1, "session": "s", "call_id": "c",
            "tool": "shell", "arguments": arguments, "risk": "high", "why": "x"});
        let mut child = std::process::Command::new(&python)
            .arg(&script)
            .env_clear()
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["verdict"].as_str().unwrap().to_string()
    };
    for blocked in [
        json!({"command": "rm -rf /"}),
        json!({"argv": ["rm", "-rf", "/"]}),
        json!({"argv": ["rm", "-fr", "/etc"]}),
        json!({"argv": ["sh", "-c", "rm -rf /"]}),
        json!({"argv": ["sudo", "rm", "-rf", "/"]}),
        json!({"command": "ls; rm -rf /"}),
        json!({"command": "echo $(rm -rf /)"}),
        json!({"command": "sh -c 'rm -rf /'"}),
    ] {
        assert_eq!(verdict(blocked.clone()), "block", "{blocked}");
    }
    assert_eq!(
        verdict(json!({"argv": ["rm", "-rf", "build/out"]})),
        "allow"
    );
    assert_eq!(verdict(json!({"command": "ls -la"})), "allow");
    assert_eq!(verdict(json!({"argv": ["curl", "https://x"]})), "rewrite");
    assert_eq!(verdict(json!({"command": "curl https://x"})), "rewrite");
}

/// The first `name` in the usual system directories.
fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.exists())
        .ok_or(())
}
