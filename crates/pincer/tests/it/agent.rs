use crate::{fails, json, ok, pincer_env, stderr};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};

/// A temp dir holding `home/` (not created) and `ws/` with `hello.txt`.
fn home_and_workspace() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("hello.txt"), "hi").expect("file");
    (tmp, home, ws)
}

fn write_scripted_config(home: &Path, script: &str, autonomy: &str) {
    write_scripted_config_with(home, script, autonomy, 1);
}

/// A scripted provider; approvals (nobody at the terminal: the queue) time
/// out after `approval_secs`.
fn write_scripted_config_with(home: &Path, script: &str, autonomy: &str, approval_secs: u64) {
    crate::scripted_home(home, script, autonomy, approval_secs, "");
}

const SCRIPT: &str = r#"{"turns": [
  {"tool_calls": [
     {"id": "r", "name": "file_read", "arguments": {"path": "hello.txt"}},
     {"id": "w", "name": "file_write", "arguments": {"path": "out.txt", "content": "x"}}],
   "expect": {"last_role": "user", "last_message_contains": "read it"}},
  {"text": "It says hi from the workspace.", "expect": {"last_role": "tool"}}
]}"#;

#[test]
fn one_turn_with_tools_streams_json_events_and_gates_writes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("hello.txt"), "hi from the workspace").expect("file");
    write_scripted_config(&home, SCRIPT, "supervised");
    let out = ok(pincer_env(
        &home,
        &[
            "agent",
            "-m",
            "read it please",
            "--json",
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
        &[],
    ));
    let events: Vec<serde_json::Value> = out.lines().map(json).collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"turn_started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"turn_done"), "{kinds:?}");
    let finished: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "tool_call_finished")
        .map(|e| {
            (
                e["name"].as_str().unwrap_or(""),
                e["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    // The read is low risk; the write needs an approval nobody gives (stdin
    // is not a terminal, the queue times out), so nothing is written.
    assert_eq!(finished, [("file_read", "ok"), ("file_write", "denied")]);
    assert!(!ws.join("out.txt").exists());
    // Every call is in the trail, which verifies.
    let log = crate::ok(crate::pincer(
        &home,
        &["audit", "log", "--json", "--limit", "100"],
        "",
    ));
    let entries: Vec<serde_json::Value> = log.lines().map(json).collect();
    let decisions: Vec<(String, String)> = entries
        .iter()
        .filter(|e| e["kind"] == "gate.decision")
        .map(|e| {
            (
                e["data"]["tool"].as_str().unwrap_or("").to_string(),
                e["data"]["decision"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("file_read".to_string(), "allowed".to_string()),
            ("file_write".to_string(), "denied".to_string())
        ]
    );
    assert!(entries.iter().any(|e| e["kind"] == "config.load"));
    assert!(
        entries
            .iter()
            .any(|e| e["kind"] == "tool.call" && e["data"]["tool"] == "file_read")
    );
    assert!(entries.iter().all(|e| e["actor"] != "human:cli"));
    crate::ok(crate::pincer(&home, &["audit", "verify"], ""));
    let text: String = events
        .iter()
        .filter(|e| e["event"] == "text_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(text, "It says hi from the workspace.");
    let session = std::fs::read_to_string(home.join("sessions/cli.jsonl")).expect("session");
    assert_eq!(session.lines().count(), 5, "{session}");
    assert!(session.contains("hi from the workspace"));
}

#[test]
fn full_autonomy_runs_the_write() {
    let (_tmp, home, ws) = home_and_workspace();
    write_scripted_config(&home, SCRIPT, "full");
    let out = pincer_env(
        &home,
        &[
            "agent",
            "-m",
            "read it",
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
        &[],
    );
    let text = ok(out);
    assert!(text.contains("It says hi from the workspace."), "{text}");
    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).expect("written"),
        "x"
    );
}

const HELLO_SSE: [&str; 4] = [
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":" from a real socket."}}]}"#,
    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    r#"{"choices":[],"usage":{"prompt_tokens":42,"completion_tokens":5}}"#,
];

fn sse_response() -> String {
    let sse = HELLO_SSE
        .iter()
        .map(|d| format!("data: {d}\n\n"))
        .collect::<String>()
        + "data: [DONE]\n\n";
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{sse}",
        sse.len()
    )
}

/// A real HTTP server on loopback speaking OpenAI's format: it answers one
/// connection per entry of `responses` (raw HTTP) and hands back the raw
/// requests it got.
fn openai_mock(responses: Vec<String>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let mut requests = Vec::new();
        for response in responses {
            let (stream, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("read");
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().expect("length");
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).expect("body");
            let mut stream = stream;
            stream.write_all(response.as_bytes()).expect("respond");
            requests.push(head + &String::from_utf8_lossy(&body));
        }
        requests
    });
    (url, handle)
}

#[test]
fn zero_config_uses_openai_env_against_a_real_server() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (url, server) = openai_mock(vec![sse_response()]);
    let out = pincer_env(
        tmp.path(),
        &["agent", "-m", "say hello"],
        &[
            ("OPENAI_API_KEY", "sk-test-123"),
            ("OPENAI_BASE_URL", &url),
            ("PINCER_MODEL", "tiny"),
        ],
    );
    let err = stderr(&out);
    let text = ok(out);
    assert!(text.contains("Hello from a real socket."), "{text}");
    assert!(
        err.contains("OPENAI_API_KEY is set") && err.contains(&url),
        "{err}"
    );
    assert!(
        !err.contains("sk-test-123") && !text.contains("sk-test-123"),
        "key leaked"
    );
    let request = server.join().expect("server").remove(0);
    assert!(
        request.starts_with("POST /v1/chat/completions"),
        "{request}"
    );
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer sk-test-123")
    );
    let body = json(request.split("\r\n\r\n").nth(1).expect("body"));
    assert_eq!(body["model"], "tiny");
    assert_eq!(body["stream"], true);
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["system", "user"]);
    // The key never reaches the disk.
    for entry in walk(tmp.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("sk-test-123"),
            "{}",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn no_provider_is_a_short_how_to_not_a_hang() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = pincer_env(tmp.path(), &["agent", "-m", "hi"], &[]);
    let err = fails(out);
    for hint in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "11434",
        "8080",
        "pincer demo",
    ] {
        assert!(err.contains(hint), "{hint}: {err}");
    }
    let err = fails(pincer_env(
        tmp.path(),
        &["agent", "-m", "hi", "--provider", "nope"],
        &[],
    ));
    assert!(
        err.contains("--provider nope") && err.contains("no [providers.nope]"),
        "{err}"
    );
}

#[test]
fn a_workspace_holding_pincer_state_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(&home, SCRIPT, "full");
    std::fs::create_dir_all(home.join("sessions")).expect("sessions");
    let err = fails(pincer_env(
        &home,
        &[
            "agent",
            "-m",
            "hi",
            "--workspace",
            tmp.path().to_str().expect("utf8"),
        ],
        &[],
    ));
    assert!(err.contains("protected path"), "{err}");
}

#[test]
fn doctor_reports_providers_and_degradations_as_json() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(&home, SCRIPT, "readonly");
    let doc = json(&ok(pincer_env(&home, &["doctor", "--json"], &[])));
    assert_eq!(doc["policy"]["autonomy"], "readonly");
    assert_eq!(doc["config"]["found"], true);
    assert_eq!(doc["providers"][0]["name"], "s");
    assert_eq!(doc["providers"][0]["kind"], "scripted");
    assert!(
        doc["agent_provider"]["how"]
            .as_str()
            .is_some_and(|s| s.contains("`s`")),
        "{doc}"
    );
    assert_eq!(doc["ok"], true, "{doc}");
    // The shell is offered, sandboxed, and a live run applied Landlock.
    let sb = &doc["sandbox"];
    assert_eq!(sb["mode"], "on", "{sb}");
    assert_eq!(sb["offered"], true, "{sb}");
    let live = sb["live"].as_array().expect("live layers");
    assert!(
        live.iter()
            .any(|l| l["layer"] == "landlock-fs" && l["state"] == "enforced"),
        "{sb}"
    );
    assert!(
        !doc["warnings"].to_string().contains("sandbox"),
        "{}",
        doc["warnings"]
    );
    // pincer's own shape, not a language's.
    let text = doc.to_string();
    assert!(
        !text.contains("\"Ok\"") && !text.contains("\"Err\""),
        "{text}"
    );
    let text = ok(pincer_env(&home, &["doctor"], &[]));
    assert!(text.contains("autonomy:  readonly"), "{text}");
    assert!(!text.contains("Scripted"), "no type names: {text}");
    assert!(text.contains("sandbox:   on"), "{text}");
    // The unsandboxed opt-in is a warning in doctor, not silence.
    let config = home.join("config.toml");
    let mut c = std::fs::read_to_string(&config).expect("config");
    c.push_str("\n[shell]\nsandbox = \"off\"\n");
    std::fs::write(&config, c).expect("write");
    let doc = json(&ok(pincer_env(&home, &["doctor", "--json"], &[])));
    assert_eq!(doc["sandbox"]["mode"], "off");
    assert!(
        doc["warnings"]
            .to_string()
            .contains("WITHOUT the OS sandbox"),
        "{}",
        doc["warnings"]
    );
}

#[test]
fn skills_reach_the_system_prompt_and_are_listed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(
        &home,
        r#"{"turns": [{"text": "Metric it is.", "expect": {"system_contains": "Always answer in metric units."}}]}"#,
        "supervised",
    );
    std::fs::create_dir_all(home.join("skills")).expect("skills");
    std::fs::write(
        home.join("skills/units.md"),
        "Always answer in metric units.",
    )
    .expect("skill");
    let listed = ok(pincer_env(&home, &["skills"], &[]));
    assert!(listed.contains("units"), "{listed}");
    // The scripted model rejects the request unless the skill is in it.
    let out = ok(pincer_env(&home, &["agent", "-m", "how warm is it?"], &[]));
    assert!(out.contains("Metric it is."), "{out}");
}

#[test]
fn the_repl_reads_lines_until_exit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(
        &home,
        r#"{"turns": [
            {"text": "First answer.", "expect": {"last_message_contains": "first"}},
            {"text": "Second answer.", "expect": {"last_message_contains": "second"}}
        ]}"#,
        "supervised",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["agent", "--session", "r"])
        .env("PINCER_HOME", &home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            b"the first question\n/session\n/frobnicate\nthe second question\n/exit\nnever sent\n",
        )
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let err = stderr(&out);
    let text = ok(out);
    assert!(
        text.contains("First answer.") && text.contains("Second answer."),
        "{text}"
    );
    assert!(err.contains("session `r`: 2 live messages"), "{err}");
    assert!(err.contains("unknown command /frobnicate"), "{err}");
    let session = std::fs::read_to_string(home.join("sessions/r.jsonl")).expect("session");
    assert_eq!(session.lines().count(), 4, "{session}");
    assert!(!session.contains("never sent"));
}

#[test]
fn a_single_provider_still_retries_a_429() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let busy = "{\"error\":{\"message\":\"slow down\"}}";
    let rate_limited = format!(
        "HTTP/1.1 429 Too Many Requests\r\nretry-after: 0\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{busy}",
        busy.len()
    );
    let (url, server) = openai_mock(vec![rate_limited, sse_response()]);
    let out = pincer_env(
        tmp.path(),
        &["agent", "-m", "say hello"],
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", &url),
            ("PINCER_MODEL", "m"),
        ],
    );
    let text = ok(out);
    assert!(text.contains("Hello from a real socket."), "{text}");
    assert_eq!(server.join().expect("server").len(), 2, "retried once");
}

#[test]
fn hitting_max_tool_iterations_says_so_in_text_mode() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(
        &home,
        r#"{"turns": [{"tool_calls": [{"id": "a", "name": "file_list", "arguments": {}}]}]}"#,
        "supervised",
    );
    let cfg = std::fs::read_to_string(home.join("config.toml")).expect("cfg");
    std::fs::write(
        home.join("config.toml"),
        format!("[agent]\nmax_tool_iterations = 1\n\n{cfg}"),
    )
    .expect("cfg");
    let out = pincer_env(&home, &["agent", "-m", "list"], &[]);
    let err = stderr(&out);
    ok(out);
    assert!(
        err.contains("stopped this turn after 1 tool iterations"),
        "{err}"
    );
}

#[test]
fn an_empty_message_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(&home, SCRIPT, "supervised");
    let err = fails(pincer_env(&home, &["agent", "-m", "  "], &[]));
    assert!(err.contains("-m/--message is empty"), "{err}");
    assert!(!home.join("sessions/cli.jsonl").exists());
}

#[test]
fn a_named_workspace_must_exist() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(&home, SCRIPT, "supervised");
    let missing = tmp.path().join("typo");
    let err = fails(pincer_env(
        &home,
        &[
            "agent",
            "-m",
            "hi",
            "--workspace",
            missing.to_str().expect("utf8"),
        ],
        &[],
    ));
    assert!(
        err.contains("--workspace") && err.contains("not an existing directory"),
        "{err}"
    );
    assert!(!missing.exists(), "a typo must not create a directory");
}

/// Starts `pincer agent -m` with nobody at its terminal; returns the child
/// and the approval id it announces on stderr (read line by line, so the
/// test waits on the event itself).
fn agent_waiting_for_approval(home: &Path, ws: &Path) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args([
            "agent",
            "-m",
            "read it",
            "--workspace",
            ws.to_str().expect("utf8"),
        ])
        .env("PINCER_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let id = loop {
        let line = lines
            .next()
            .expect("the agent ended without asking for an approval")
            .expect("read stderr");
        if let Some(rest) = line.strip_prefix("[approval ") {
            break rest.split(']').next().expect("id").to_string();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, id)
}

#[test]
fn an_approval_from_another_terminal_runs_exactly_that_call_once() {
    let (_tmp, home, ws) = home_and_workspace();
    write_scripted_config_with(&home, SCRIPT, "supervised", 120);
    let (child, id) = agent_waiting_for_approval(&home, &ws);

    let listed = json(crate::ok(crate::pincer(&home, &["approvals", "list", "--json"], "")).trim());
    let pending = &listed["pending"][0];
    assert_eq!(pending["id"], id.as_str());
    assert_eq!(pending["tool"], "file_write");
    assert_eq!(pending["risk"], "medium");
    assert_eq!(pending["arguments"]["path"], "out.txt");
    assert!(
        pending["why"].as_str().unwrap_or("").contains("write"),
        "{pending}"
    );

    let said = crate::ok(crate::pincer(&home, &["approvals", "approve", &id], ""));
    assert!(said.contains("approved"), "{said}");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).expect("written"),
        "x"
    );

    // Answered once: a second answer is refused.
    let err = fails(crate::pincer(&home, &["approvals", "approve", &id], ""));
    assert!(err.contains("unknown or already resolved"), "{err}");

    let log = crate::ok(crate::pincer(
        &home,
        &["audit", "log", "--json", "--limit", "100"],
        "",
    ));
    let entries: Vec<serde_json::Value> = log.lines().map(json).collect();
    let answer = entries
        .iter()
        .find(|e| e["kind"] == "approval.answer")
        .expect("answer entry");
    assert_eq!(answer["actor"], "human:cli");
    assert_eq!(answer["data"]["answer"], "approved");
    let decision = entries
        .iter()
        .find(|e| e["kind"] == "gate.decision" && e["data"]["tool"] == "file_write")
        .expect("decision");
    assert_eq!(decision["data"]["decision"], "approved");
    assert_eq!(decision["data"]["by"], "human:cli");
    assert_eq!(decision["data"]["call_hash"], answer["data"]["call_hash"]);
    crate::ok(crate::pincer(&home, &["audit", "verify"], ""));
}

#[test]
fn a_denial_from_another_terminal_reaches_the_model_and_bad_ids_are_refused() {
    let (_tmp, home, ws) = home_and_workspace();
    write_scripted_config_with(&home, SCRIPT, "supervised", 120);
    for (args, needle) in [
        (
            &["approvals", "approve", "../../x"][..],
            "invalid approval id",
        ),
        (
            &["approvals", "approve", "0123456789"][..],
            "unknown or already resolved",
        ),
        (
            &["approvals", "deny", "0123456789", "--reason", ""][..],
            "--reason",
        ),
    ] {
        let err = fails(crate::pincer(&home, args, ""));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let (child, id) = agent_waiting_for_approval(&home, &ws);
    crate::ok(crate::pincer(
        &home,
        &["approvals", "deny", &id, "--reason", "not into out.txt"],
        "",
    ));
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    assert!(!ws.join("out.txt").exists());
    let session = std::fs::read_to_string(home.join("sessions/cli.jsonl")).expect("session");
    assert!(session.contains("not into out.txt"), "{session}");
}

#[test]
fn a_configured_interceptor_hook_blocks_and_a_crashing_one_fails_closed() {
    for (script, want_verdict) in [
        (
            r#"cat >/dev/null; echo '{\"verdict\":\"block\",\"reason\":\"no writes today\"}'"#,
            "block",
        ),
        ("cat >/dev/null; echo oops >&2; exit 3", "failed"),
    ] {
        let (_tmp, home, ws) = home_and_workspace();
        write_scripted_config(&home, SCRIPT, "full");
        let mut cfg = std::fs::read_to_string(home.join("config.toml")).expect("cfg");
        cfg.push_str(&format!(
            "\n[[hooks]]\nname = \"guard\"\nkind = \"interceptor\"\ntools = [\"file_w*\"]\n\
             command = [\"/bin/sh\", \"-c\", \"{script}\"]\n"
        ));
        std::fs::write(home.join("config.toml"), cfg).expect("cfg");
        let out = pincer_env(
            &home,
            &[
                "agent",
                "-m",
                "read it",
                "--json",
                "--workspace",
                ws.to_str().expect("utf8"),
            ],
            &[],
        );
        let text = ok(out);
        // Full autonomy, but the hook said no (or failed): nothing written.
        assert!(!ws.join("out.txt").exists(), "{script}");
        assert!(text.contains("\"status\":\"blocked\""), "{text}");
        let log = crate::ok(crate::pincer(
            &home,
            &["audit", "log", "--kind", "hook", "--json"],
            "",
        ));
        let v = json(log.trim());
        assert_eq!(v["actor"], "hook:guard");
        assert_eq!(v["data"]["tool"], "file_write");
        assert_eq!(v["data"]["verdict"], want_verdict, "{v}");
        if want_verdict == "failed" {
            assert!(
                v["data"]["failure"].as_str().unwrap_or("").contains("oops"),
                "{v}"
            );
        }
    }
}

#[test]
fn a_new_session_starts_from_the_handoff_of_the_last_one() {
    let (_tmp, home, ws) = home_and_workspace();
    let script = r#"{"turns": [
      {"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "out.txt", "content": "x"}}]},
      {"text": "I could not write it."}
    ]}"#;
    write_scripted_config(&home, script, "supervised");
    let ws_arg = ws.to_str().expect("utf8");
    let one = [
        "agent",
        "-m",
        "write the tomato log",
        "--session",
        "one",
        "--workspace",
        ws_arg,
    ];
    ok(pincer_env(&home, &one, &[]));
    // A new session: its first request carries the handoff of `one`, read
    // back from disk (each pincer process replays the script from turn 0).
    let script = r#"{"turns": [
      {"text": "Resuming.", "expect": {"system_contains": "Last user message: write the tomato log"}}
    ]}"#;
    std::fs::write(home.join("script.json"), script).expect("script");
    let two = [
        "agent",
        "-m",
        "where were we?",
        "--session",
        "two",
        "--workspace",
        ws_arg,
    ];
    let out = ok(pincer_env(&home, &two, &[]));
    assert!(out.contains("Resuming."), "{out}");
    let h = json(
        crate::ok(crate::pincer(
            &home,
            &["handoff", "--session", "one", "--json"],
            "",
        ))
        .trim(),
    );
    assert_eq!(h["session"]["key"], "one");
    assert_eq!(h["session"]["last_user"], "write the tomato log");
    assert!(
        h["next_step"].as_str().unwrap_or("").contains("refused"),
        "{h}"
    );
    assert!(
        h["decisions"]
            .as_array()
            .expect("decisions")
            .iter()
            .any(|d| d["tool"] == "file_write" && d["outcome"] == "denied"),
        "{h}"
    );
    let err = fails(crate::pincer(&home, &["handoff", "--session", "../x"], ""));
    assert!(err.contains("session"), "{err}");
}

/// Fallback is never silent: a dead first provider shows on stderr in text
/// mode, as an event in JSON mode, and in the audit trail.
#[test]
fn a_dead_provider_and_the_fallback_are_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A port nothing listens on: bound, then closed.
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}/v1", l.local_addr().expect("addr"))
    };
    let (url, server) = openai_mock(vec![sse_response(), sse_response()]);
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[agent]\nfallback_chain = [\"dead\", \"live\"]\n\n\
             [providers.dead]\nkind = \"openai\"\nbase_url = \"{dead}\"\nmodel = \"m\"\nmax_retries = 0\n\n\
             [providers.live]\nkind = \"openai\"\nbase_url = \"{url}\"\nmodel = \"m\"\n"
        ),
    )
    .expect("config");
    let out = pincer_env(&home, &["agent", "-m", "say hello"], &[]);
    let err = stderr(&out);
    let text = ok(out);
    assert!(text.contains("Hello from a real socket."), "{text}");
    assert!(err.contains("provider dead failed on try 1"), "{err}");
    let out = ok(pincer_env(&home, &["agent", "-m", "again", "--json"], &[]));
    let failed: Vec<serde_json::Value> = out
        .lines()
        .map(json)
        .filter(|e| e["event"] == "provider_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{out}");
    assert_eq!(failed[0]["provider"], "dead");
    assert!(
        failed[0]["error"]
            .as_str()
            .expect("error")
            .contains("cannot reach"),
        "{out}"
    );
    let log = ok(pincer_env(
        &home,
        &["audit", "log", "--kind", "provider", "--json"],
        &[],
    ));
    let entries: Vec<serde_json::Value> = log.lines().map(json).collect();
    assert_eq!(entries.len(), 2, "{log}");
    assert_eq!(entries[0]["data"]["answered_by"], "live");
    assert_eq!(entries[0]["data"]["attempts"][0]["provider"], "dead");
    assert_eq!(server.join().expect("server").len(), 2);
}

/// A loopback server that answers by path: `/v1/models` lists `local-7b`,
/// `/v1/chat/completions` streams the hello reply, anything else is 404.
/// It serves `n` connections and hands back the request lines.
fn routed_mock(n: usize) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for _ in 0..n {
            let (stream, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut first = String::new();
            reader.read_line(&mut first).expect("read");
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("read");
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().expect("length");
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).expect("body");
            let models = r#"{"object":"list","data":[{"id":"local-7b","object":"model"}]}"#;
            let response = if first.contains("/v1/models") {
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{models}",
                    models.len()
                )
            } else if first.contains("/v1/chat/completions") {
                sse_response()
            } else {
                "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_string()
            };
            let mut stream = stream;
            stream.write_all(response.as_bytes()).expect("respond");
            seen.push(first.trim().to_string() + " " + &String::from_utf8_lossy(&body));
        }
        seen
    });
    (url, handle)
}

/// `OPENAI_BASE_URL` alone (a keyless local server on another port) is
/// used, and its model comes from its `/models`, not a vendor default.
#[test]
fn a_keyless_base_url_is_used_with_the_model_it_lists() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // /health, /models, then the chat.
    let (url, server) = routed_mock(3);
    let out = pincer_env(
        tmp.path(),
        &["agent", "-m", "say hello"],
        &[("OPENAI_BASE_URL", &url)],
    );
    let err = stderr(&out);
    let text = ok(out);
    assert!(text.contains("Hello from a real socket."), "{text}");
    assert!(err.contains("OPENAI_BASE_URL is set, with no key"), "{err}");
    assert!(err.contains("model local-7b"), "{err}");
    let seen = server.join().expect("server");
    let chat = seen
        .iter()
        .find(|r| r.contains("/chat/completions"))
        .expect("chat");
    assert!(chat.contains("\"model\":\"local-7b\""), "{chat}");
}

/// An error makes `doctor` and `status` exit 1, warnings do not, and both
/// read the same report.
#[test]
fn doctor_and_status_exit_1_on_an_error_and_agree() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    // No provider at all: the agent cannot start.
    let out = pincer_env(&home, &["doctor", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doctor = json(&crate::stdout(&out));
    assert_eq!(doctor["ok"], false);
    assert!(
        doctor["errors"][0]
            .as_str()
            .expect("e")
            .contains("the agent cannot start"),
        "{doctor}"
    );
    let out = pincer_env(&home, &["status", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let status = json(&crate::stdout(&out));
    for key in [
        "ok",
        "errors",
        "sessions",
        "approvals_waiting",
        "audit",
        "memory",
        "hardware",
        "workspace",
        "agent_provider",
    ] {
        assert_eq!(status[key], doctor[key], "{key} differs");
    }
    assert_eq!(status["policy"]["autonomy"], doctor["policy"]["autonomy"]);
    // The sandbox's state is the same report; only doctor runs it live.
    for key in ["mode", "offered", "layers", "landlock_abi"] {
        assert_eq!(
            status["sandbox"][key], doctor["sandbox"][key],
            "sandbox.{key}"
        );
    }
    assert_eq!(status["sandbox"]["mode"], "on");
    assert!(status["sandbox"].get("live").is_none());
    let text = crate::stdout(&pincer_env(&home, &["status"], &[]));
    assert!(
        text.contains("1 error(s)") && text.contains("provider:  ERROR"),
        "{text}"
    );
    // A configured provider: no error, exit 0, warnings still listed.
    write_scripted_config(&home, SCRIPT, "supervised");
    let out = pincer_env(&home, &["status"], &[]);
    assert!(out.status.success(), "{}", crate::stdout(&out));
    assert!(crate::stdout(&out).contains("warnings:"));
}

/// A hook whose program does not exist fails `doctor` and refuses to start
/// the agent, naming the hook, instead of failing at the first tool call.
#[test]
fn a_hook_whose_program_is_missing_fails_at_start() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(&home, SCRIPT, "supervised");
    let mut cfg = std::fs::read_to_string(home.join("config.toml")).expect("cfg");
    cfg.push_str("\n[[hooks]]\nname = \"guard\"\nkind = \"interceptor\"\ncommand = [\"/nonexistent/guard\"]\n");
    std::fs::write(home.join("config.toml"), cfg).expect("cfg");
    let out = pincer_env(&home, &["doctor"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = crate::stdout(&out);
    assert!(
        text.contains("hook `guard`") && text.contains("/nonexistent/guard"),
        "{text}"
    );
    let err = fails(pincer_env(&home, &["agent", "-m", "hi"], &[]));
    assert!(
        err.contains("hooks[0].command") && err.contains("guard"),
        "{err}"
    );
}

/// In JSON mode the REPL's stdout is the event stream and nothing else:
/// no `pincer> ` label between the lines. `/help` lists the commands.
#[test]
fn the_json_repl_prints_only_json_lines() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_scripted_config(&home, r#"{"turns": [{"text": "Hello."}]}"#, "supervised");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["agent", "--json"])
        .env("PINCER_HOME", &home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"hi\n/help\n")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let text = crate::stdout(&out);
    assert!(!text.is_empty());
    for line in text.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not a JSON line: {line:?}"
        );
    }
    assert!(stderr(&out).contains("/session KEY"), "{}", stderr(&out));
}
