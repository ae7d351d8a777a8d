//! The `pincer` binary is its own sandbox helper: `pincer __sandbox` is
//! dispatched before anything else in `main`, and runs the sandbox's
//! escape corpus as the shell tool's commands would meet it. Then the two
//! commands a person runs against the sandbox, through the binary:
//! `pincer exec` (a command in the agent's sandbox, recorded as
//! `human:cli`; its exit statuses and refusals) and `pincer sandbox check`.

use pincer_sandbox::{RowResult, Sandbox, Spec};

#[test]
fn pincer_is_its_own_sandbox_helper() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(env!("CARGO_BIN_EXE_pincer"));
    let mut spec = Spec::new(
        vec![
            "/bin/sh".into(),
            "-c".into(),
            "echo inside; cat /proc/1/cmdline".into(),
        ],
        dir.path(),
        "agent-e2e",
    );
    spec.env.insert("PATH".into(), "/usr/bin:/bin".into());
    let c = sandbox.run(&spec, &Default::default()).unwrap();
    let out = c.text();
    assert!(out.starts_with("inside\n"), "{out}");
    // PID 1 of the command's namespace is pincer's own init stage.
    assert!(out.contains("__sandbox-init"), "{out}");
    assert!(
        c.finished.degraded().is_empty(),
        "{:?}",
        c.finished.degraded()
    );
}

#[test]
fn the_escape_corpus_holds_with_pincer_as_the_helper() {
    let dir = tempfile::tempdir().unwrap();
    let report = pincer_sandbox::self_test(
        &Sandbox::new(env!("CARGO_BIN_EXE_pincer")),
        dir.path(),
        vec![],
    )
    .unwrap();
    let escaped: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.result == RowResult::Escaped)
        .collect();
    assert!(escaped.is_empty(), "{}", report.render());
}

/// A PINCER_HOME (`tmp/home`, its config marked) whose default workspace
/// is `tmp/home-workspace`, with `shell` appended to the config. Not under
/// /tmp, which the sandbox replaces with its own: the state must be hidden
/// where it is, as `~/.pincer` would be.
struct ExecHome {
    _tmp: tempfile::TempDir,
    home: std::path::PathBuf,
    ws: std::path::PathBuf,
}

const MARKER: &str = "marker-exec-config-41c7a";

impl ExecHome {
    fn new(shell: &str) -> ExecHome {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let home = base.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("config.toml"),
            format!("# {MARKER}\n[policy]\nautonomy = \"supervised\"\n{shell}"),
        )
        .unwrap();
        let ws = base.join("home-workspace");
        std::fs::create_dir_all(&ws).unwrap();
        ExecHome {
            _tmp: tmp,
            home,
            ws,
        }
    }

    fn exec(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["exec"];
        all.extend_from_slice(args);
        crate::pincer_env(&self.home, &all, &[])
    }

    /// The trail's `exec.run` and `exec.result` entries, in order.
    fn exec_entries(&self) -> Vec<serde_json::Value> {
        crate::ok(crate::pincer(
            &self.home,
            &["audit", "log", "--json", "--limit", "100000"],
            "",
        ))
        .lines()
        .map(crate::json)
        .filter(|e| e["kind"] == "exec.run" || e["kind"] == "exec.result")
        .collect()
    }
}

/// `pincer exec` runs a command in the agent's own sandbox: it cannot
/// read or change pincer's state (reached by `..` from the workspace, as
/// the agent would), it can write the workspace, its exit status is
/// passed on, and the trail records the run and how it ended as the
/// person at the command line (`human:cli`).
#[test]
fn exec_runs_in_the_agents_sandbox_and_is_recorded_as_human_cli() {
    let h = ExecHome::new("");
    let config = std::fs::read(h.home.join("config.toml")).unwrap();
    let attack = "echo out; cat ../home/config.toml; \
                  printf '[policy]\\nautonomy = \"full\"\\n' >> ../home/config.toml; \
                  echo '{\"id\":\"x\",\"answer\":\"approved\"}' > ../home/approvals/x.answer.json; \
                  echo ran > here.txt; exit 3";
    let out = h.exec(&["--", "/bin/sh", "-c", attack]);
    assert_eq!(out.status.code(), Some(3), "{}", crate::stderr(&out));
    let text = format!("{}{}", crate::stdout(&out), crate::stderr(&out));
    assert!(crate::stdout(&out).starts_with("out\n"), "{text}");
    assert!(!text.contains(MARKER), "{text}");
    assert_eq!(std::fs::read(h.home.join("config.toml")).unwrap(), config);
    assert!(!h.home.join("approvals/x.answer.json").exists());
    assert_eq!(
        std::fs::read_to_string(h.ws.join("here.txt")).unwrap(),
        "ran\n"
    );

    let e = h.exec_entries();
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0]["kind"], "exec.run");
    assert_eq!(e[0]["actor"], "human:cli");
    assert_eq!(
        e[0]["data"]["argv"],
        serde_json::json!(["/bin/sh", "-c", attack])
    );
    assert_eq!(e[0]["data"]["workspace"], h.ws.display().to_string());
    assert_eq!(e[0]["data"]["network"], false);
    assert_eq!(e[1]["kind"], "exec.result");
    assert_eq!(e[1]["actor"], "human:cli");
    assert_eq!(e[1]["data"]["status"], "ok");
    assert_eq!(e[1]["data"]["exit"], "exit status: 3");
    crate::ok(crate::pincer(&h.home, &["audit", "verify"], ""));
}

/// How a command ends is passed on as a shell reports it: `128 + N` for a
/// signal, 127 for a program that could not be started (nothing ran); the
/// trail says which.
#[test]
fn exec_passes_on_a_signal_as_128_plus_n_and_a_missing_program_as_127() {
    let h = ExecHome::new("");
    let out = h.exec(&["--", "/bin/sh", "-c", "kill -TERM $$"]);
    assert_eq!(out.status.code(), Some(143), "{}", crate::stderr(&out));
    let out = h.exec(&["--", "/bin/sh", "-c", "kill -KILL $$"]);
    assert_eq!(out.status.code(), Some(137), "{}", crate::stderr(&out));
    for missing in ["/nonexistent-pincer/prog", "no-such-program-pincer-3f1"] {
        let out = h.exec(&["--", missing, "arg"]);
        assert_eq!(out.status.code(), Some(127), "{}", crate::stderr(&out));
        let err = crate::stderr(&out);
        assert!(
            err.contains("could not start") && err.contains(missing),
            "{err}"
        );
    }
    let e = h.exec_entries();
    let results: Vec<&serde_json::Value> = e
        .iter()
        .filter(|e| e["kind"] == "exec.result")
        .map(|e| &e["data"])
        .collect();
    assert_eq!(results.len(), 4, "{e:?}");
    assert_eq!(results[0]["exit"], "killed by signal 15 (SIGTERM)");
    assert_eq!(results[1]["exit"], "killed by signal 9 (SIGKILL)");
    for r in &results[2..] {
        assert_eq!(r["status"], "error", "{r}");
        assert!(r.get("exit").is_none(), "{r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap_or("")
                .contains("could not start"),
            "{r}"
        );
    }
}

/// A layer that cannot be set up stops the command before it runs: exit
/// 125, the layer named, the trail records the failure. The layer made to
/// fail is the process-count cgroup, given a limit the kernel refuses
/// (`pids.max` takes at most 4 194 304); no root trick needed. With that
/// layer allowed to degrade, the command runs, and stderr and the
/// `exec.result` entry say the layer was DEGRADED.
#[test]
fn a_layer_that_cannot_be_set_up_stops_exec_with_125_unless_it_may_degrade() {
    let h = ExecHome::new("\n[shell]\npids = 100000000000\n");
    let out = h.exec(&["--", "/bin/sh", "-c", "echo ran > ran.txt"]);
    assert_eq!(out.status.code(), Some(125), "{}", crate::stderr(&out));
    let err = crate::stderr(&out);
    assert!(
        err.contains("`cgroup-pids` could not be applied") && err.contains("did not run"),
        "{err}"
    );
    assert!(!h.ws.join("ran.txt").exists(), "the command ran");
    let e = h.exec_entries();
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[1]["data"]["status"], "error");
    assert!(
        e[1]["data"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("`cgroup-pids` could not be applied"),
        "{}",
        e[1]
    );

    let h = ExecHome::new("\n[shell]\npids = 100000000000\ndegrade = [\"cgroup-pids\"]\n");
    let out = h.exec(&["--", "/bin/sh", "-c", "echo ran > ran.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::stderr(&out));
    assert!(h.ws.join("ran.txt").exists());
    let err = crate::stderr(&out);
    assert!(err.contains("`cgroup-pids` is DEGRADED"), "{err}");
    let e = h.exec_entries();
    assert!(
        e[1]["data"]["notes"]
            .to_string()
            .contains("`cgroup-pids` is DEGRADED"),
        "{}",
        e[1]
    );
}

/// `--network` is refused where no agent command may have the network
/// (`network = "off"`, the default), and every command is refused with
/// `sandbox = "off"` (there is no sandbox to run it in): nothing runs and
/// nothing is recorded as run. Without `--network` a command reaches no
/// listener on the host's loopback; with `network = "ask"` and
/// `--network` it does, so the listener can tell.
#[test]
fn exec_refuses_the_network_and_an_unsandboxed_config_and_reaches_no_listener() {
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connected = || match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    };
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' && echo ran > ran.txt"
    );

    let h = ExecHome::new("");
    let out = h.exec(&["--network", "--", "/bin/sh", "-c", &connect]);
    assert_eq!(out.status.code(), Some(1), "{}", crate::stderr(&out));
    let err = crate::stderr(&out);
    assert!(
        err.contains("--network") && err.contains("network = \"off\""),
        "{err}"
    );
    let out = h.exec(&["--", "/bin/sh", "-c", &connect]);
    assert_ne!(out.status.code(), Some(0), "{}", crate::stderr(&out));
    assert!(!h.ws.join("ran.txt").exists());
    assert!(!connected(), "a sandboxed command reached the listener");
    let runs: Vec<bool> = h
        .exec_entries()
        .iter()
        .filter(|e| e["kind"] == "exec.run")
        .map(|e| e["data"]["network"] == true)
        .collect();
    assert_eq!(runs, [false], "the refused run was recorded as run");

    let h = ExecHome::new("\n[shell]\nsandbox = \"off\"\n");
    let out = h.exec(&["--", "/bin/sh", "-c", "echo ran > ran.txt"]);
    assert_eq!(out.status.code(), Some(1), "{}", crate::stderr(&out));
    assert!(
        crate::stderr(&out).contains("sandbox = \"off\""),
        "{}",
        crate::stderr(&out)
    );
    assert!(!h.ws.join("ran.txt").exists(), "ran unsandboxed");
    assert!(h.exec_entries().is_empty());

    let h = ExecHome::new("\n[shell]\nnetwork = \"ask\"\n");
    let out = h.exec(&["--network", "--", "/bin/sh", "-c", &connect]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::stderr(&out));
    let mut seen = false;
    for _ in 0..200 {
        if connected() {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(seen, "with --network the command did not connect");
    let e = h.exec_entries();
    assert_eq!(e[0]["data"]["network"], true, "{}", e[0]);
}

/// `pincer sandbox check --json`: one JSON object — a verdict per layer
/// and a row per attack — exiting 0 when nothing escaped. A secret of
/// pincer's own environment is among what the attacks look for, and is
/// not found. The check looks for such a value in what the sandbox prints;
/// it cannot tell a leaked value from one the sandbox sets itself, so a
/// "secret" equal to `PINCER_AGENT=corpus` (which the sandbox puts in
/// the environment of every attack it runs) is reported as escaped: that is how the
/// exit status 1 is seen here without weakening the sandbox.
#[test]
fn sandbox_check_json_reports_each_layer_and_exits_1_when_something_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let secret = "token-sandbox-check-6d02e9";
    let out = crate::pincer_env(
        &home,
        &["sandbox", "check", "--json"],
        &[("MY_SERVICE_TOKEN", secret)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::stderr(&out));
    let text = crate::stdout(&out);
    assert!(!text.contains(secret), "{text}");
    let report = crate::json(&text);
    let obj = report.as_object().unwrap();
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    assert_eq!(keys, ["landlock_abi", "layers", "rows"], "{report}");
    let layers = report["layers"].as_array().unwrap();
    assert_eq!(layers.len(), pincer_sandbox::Layer::ALL.len(), "{report}");
    for l in layers {
        assert!(l["layer"].is_string(), "{l}");
        assert!(l["attacks"].is_u64(), "{l}");
        for k in ["enforced", "fails_closed"] {
            assert!(l[k].is_boolean() || l[k].is_null(), "{l}");
        }
        assert_ne!(l["enforced"], false, "{l}");
        assert_ne!(l["fails_closed"], false, "{l}");
    }
    let rows = report["rows"].as_array().unwrap();
    assert!(rows.len() > 20, "{report}");
    for r in rows {
        assert!(r["id"].is_string() && r["proves"].is_array(), "{r}");
        assert!(
            ["refused", "skipped"].contains(&r["result"].as_str().unwrap_or("")),
            "{r}"
        );
    }
    let env_row = rows
        .iter()
        .find(|r| r["id"] == "environment-and-proc-environ")
        .expect("the environment row");
    assert_eq!(env_row["result"], "refused", "{env_row}");

    let out = crate::pincer_env(
        &home,
        &["sandbox", "check", "--json"],
        &[("MY_SERVICE_TOKEN", "PINCER_AGENT=corpus")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", crate::stderr(&out));
    let report = crate::json(&crate::stdout(&out));
    let escaped: Vec<&str> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["result"] == "escaped")
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert!(
        escaped.contains(&"environment-and-proc-environ"),
        "{escaped:?}"
    );
    // The text form says so too, on the same exit status.
    let out = crate::pincer_env(
        &home,
        &["sandbox", "check"],
        &[("MY_SERVICE_TOKEN", "PINCER_AGENT=corpus")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        crate::stdout(&out).contains("ESCAPED: environment-and-proc-environ"),
        "{}",
        crate::stdout(&out)
    );
}
