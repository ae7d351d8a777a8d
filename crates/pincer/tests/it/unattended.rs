//! What running pincer with nobody watching relies on, pinned through the
//! binary: the log levels of `-v`/`-q`, errors that name the path, one
//! JSON object per command with `--json`, the demo's wording, `doctor`
//! probing an Anthropic provider, and pincer's own words (never a Rust
//! type name) in `doctor` and `status`.

use crate::{fails, json, ok, pincer, pincer_env, stderr, stdout};
use std::net::TcpListener;
use std::path::Path;

/// Lines of `text` that a `tracing` event at `level` printed.
fn events(text: &str, level: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(&format!("{level} ")))
        .map(str::to_string)
        .collect()
}

/// Diagnostics are `tracing` events on stderr at the level `-v`/`-q` ask
/// for: none by default below warnings, `-v` info (the runtime's start),
/// `-vv` debug (each audit entry, each provider answer), `-q` no
/// diagnostics and not the line naming the provider, only what the turn
/// did. `-q` with `-v` is a usage error, and an error still reaches
/// stderr under `-q`.
#[test]
fn log_levels_follow_v_and_q() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let script = r#"{"turns": [
      {"tool_calls": [{"id": "r", "name": "file_list", "arguments": {"path": "."}}]},
      {"text": "hello"}
    ]}"#;
    let run = |flags: &[&str]| {
        crate::scripted_home(&home, script, "supervised", 120, "");
        let mut args: Vec<&str> = flags.to_vec();
        args.extend(["agent", "-m", "hi"]);
        let out = pincer_env(&home, &args, &[]);
        assert!(out.status.success(), "{flags:?}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("hello"),
            "{flags:?}: {}",
            stdout(&out)
        );
        stderr(&out)
    };
    let quiet_default = run(&[]);
    assert!(events(&quiet_default, "INFO").is_empty(), "{quiet_default}");
    assert!(
        events(&quiet_default, "DEBUG").is_empty(),
        "{quiet_default}"
    );
    assert!(quiet_default.contains("provider: "), "{quiet_default}");

    let info = run(&["-v"]);
    let started = events(&info, "INFO");
    assert!(
        started.iter().any(|l| l.contains("runtime started")),
        "{info}"
    );
    assert!(events(&info, "DEBUG").is_empty(), "{info}");

    let debug = run(&["-vv"]);
    let lines = events(&debug, "DEBUG");
    assert!(lines.iter().any(|l| l.contains("audit entry")), "{debug}");
    assert!(
        lines.iter().any(|l| l.contains("provider answered")),
        "{debug}"
    );
    assert!(events(&debug, "TRACE").is_empty(), "{debug}");

    // -q: no diagnostics and no line that only informs; what the turn did
    // (its tool calls) is still shown, as it is the conversation.
    let quiet = run(&["-q"]);
    assert!(!quiet.contains("provider: "), "{quiet}");
    let shown: Vec<&str> = quiet.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        !shown.is_empty() && shown.iter().all(|l| l.contains("file_list")),
        "{quiet}"
    );

    let both = pincer_env(&home, &["-q", "-v", "agent", "-m", "hi"], &[]);
    assert_eq!(both.status.code(), Some(2));
    assert!(stderr(&both).contains("--quiet"), "{}", stderr(&both));
    let err = fails(pincer_env(
        &home,
        &["-q", "--home", "/proc/nope", "init"],
        &[],
    ));
    assert!(err.starts_with("error: "), "{err}");
}

/// `init` under a path that cannot be created says which path, in text
/// and with `--json`, and leaves nothing behind; `--json` on success is
/// one object naming the file written.
#[test]
fn init_names_the_path_it_cannot_create_and_json_is_one_object() {
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["--home", "/proc/nope", "init"];
        args.extend_from_slice(extra);
        let out = pincer_env(Path::new("/nonexistent-unused"), &args, &[]);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(stdout(&out), "", "{extra:?}");
        let err = stderr(&out);
        assert!(err.contains("cannot create /proc/nope"), "{err}");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("h");
    let out = ok(pincer_env(&home, &["init", "--json"], &[]));
    assert_eq!(out.lines().count(), 1, "{out}");
    let doc = json(&out);
    let wrote = home.join("config.toml");
    assert_eq!(doc, serde_json::json!({ "wrote": wrote }));
    assert!(wrote.is_file());
    // A second init refuses, and says how to overwrite.
    let err = fails(pincer_env(&home, &["init", "--json"], &[]));
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    let out = ok(pincer_env(&home, &["init", "--json", "--force"], &[]));
    assert_eq!(json(&out), serde_json::json!({ "wrote": wrote }));
}

/// The open approval of call `call_id`, polled from `approvals list --json`.
fn wait_pending(home: &Path, call_id: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = json(&ok(pincer(home, &["approvals", "list", "--json"], "")));
        if let Some(id) = listed["pending"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["call_id"] == call_id)
            .and_then(|p| p["id"].as_str())
        {
            return id.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no approval for {call_id}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `approvals approve --json` and `approvals deny --json` each print one
/// JSON object: the answer and the approval it answered.
#[test]
fn approvals_approve_and_deny_json_are_one_object_each() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let script = r#"{"turns": [
      {"tool_calls": [{"id": "w1", "name": "file_write", "arguments": {"path": "a.txt", "content": "a"}}]},
      {"tool_calls": [{"id": "w2", "name": "file_write", "arguments": {"path": "b.txt", "content": "b"}}]},
      {"text": "done"}
    ]}"#;
    crate::scripted_home(&home, script, "supervised", 120, "");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["agent", "-m", "go", "--workspace"])
        .arg(&ws)
        .env("PINCER_HOME", &home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let first = wait_pending(&home, "w1");
    let out = ok(pincer(
        &home,
        &["approvals", "approve", &first, "--json"],
        "",
    ));
    assert_eq!(out.lines().count(), 1, "{out}");
    let doc = json(&out);
    assert_eq!(doc["answer"], "approved", "{doc}");
    assert_eq!(doc["approval"]["id"], first.as_str(), "{doc}");
    assert_eq!(doc["approval"]["tool"], "file_write", "{doc}");
    assert_eq!(doc["approval"]["call_id"], "w1", "{doc}");

    let second = wait_pending(&home, "w2");
    let out = ok(pincer(
        &home,
        &["approvals", "deny", &second, "--reason", "not b", "--json"],
        "",
    ));
    assert_eq!(out.lines().count(), 1, "{out}");
    let doc = json(&out);
    assert_eq!(doc["answer"], "denied", "{doc}");
    assert_eq!(doc["approval"]["id"], second.as_str(), "{doc}");
    assert_eq!(doc["approval"]["call_id"], "w2", "{doc}");

    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(ws.join("a.txt").exists());
    assert!(!ws.join("b.txt").exists());
}

/// The demo reads as prose for a new user: a cut line ends at a word (the
/// denial's reason, shown whole in the approvals list, is cut at a space),
/// "1 entry" not "1 entries", no type names (`Ok`, `Denied`), Part 2's
/// trail counts its own entries and they add up, and it ends with the
/// next step.
#[cfg(feature = "demo")]
#[test]
fn the_demo_cuts_at_words_counts_in_english_and_ends_with_the_next_step() {
    let home = tempfile::tempdir().expect("tempdir");
    let out = ok(pincer(home.path(), &["demo"], ""));
    assert!(out.contains("ok: 1 entry in `greenhouse`"), "{out}");
    assert!(!out.contains("1 entries"), "{out}");
    for word in [" Ok:", " Denied:", " Error:", "Some(", "None"] {
        assert!(!out.contains(word), "{word}: {out}");
    }
    // The shell's denial is cut; its reason appears whole in the list.
    let cut = out
        .lines()
        .find(|l| l.contains("→ shell denied:"))
        .expect("the shell's result");
    let head = cut.strip_suffix('…').expect("the line is cut");
    let reason = out
        .lines()
        .find(|l| l.contains("shell (high risk)") && l.contains(": denied ("))
        .and_then(|l| l.split(": denied (").nth(1))
        .expect("the reason in the approvals list");
    let shown = head.rsplit_once('(').map(|(_, r)| r).expect("(");
    assert!(
        reason.starts_with(shown) && reason[shown.len()..].starts_with(' '),
        "cut mid-word: {shown:?} of {reason:?}"
    );
    // Part 2's trail: its own entries, and the kinds add up.
    let part1: u64 = out
        .split("`audit verify` over all ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("part 1's count");
    let line = out
        .lines()
        .find(|l| l.starts_with("the audit trail holds "))
        .expect("part 2's trail line");
    let total: u64 = line["the audit trail holds ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("total");
    let kinds = line
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(k, _)| k)
        .expect("kinds");
    let sum: u64 = kinds
        .split(", ")
        .map(|k| {
            k.split(' ')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .expect("count")
        })
        .sum();
    assert_eq!(sum, total, "{line}");
    assert!(total < part1, "part 2 counted part 1's entries: {line}");
    // It ends with what to do next.
    let tail: Vec<&str> = out.trim_end().lines().rev().take(4).collect();
    assert_eq!(tail[3], "Next: your own agent.", "{tail:?}");
    assert!(tail[2].trim_start().starts_with("pincer init"), "{tail:?}");
    assert!(tail[0].trim_start().starts_with("pincer agent"), "{tail:?}");
}

/// Shared with a mock server's thread.
#[cfg(feature = "anthropic")]
type Shared<T> = std::sync::Arc<std::sync::Mutex<T>>;

/// A loopback server speaking Anthropic's `GET /v1/models`: it answers
/// every connection with the reply `reply` holds at the time (`STATUS\nBODY`)
/// and keeps each request's head.
#[cfg(feature = "anthropic")]
fn anthropic_mock() -> (String, Shared<String>, Shared<Vec<String>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let reply: Shared<String> = Shared::default();
    let seen: Shared<Vec<String>> = Shared::default();
    let (r, s) = (reply.clone(), seen.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            s.lock().expect("seen").push(head);
            let body = r.lock().expect("reply").clone();
            let (status, body) = body.split_once('\n').expect("status and body");
            let mut stream = stream;
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (url, reply, seen)
}

/// `doctor` asks every Anthropic provider whose key is set
/// (`GET /v1/models` with `x-api-key` and `anthropic-version`): a server
/// that answers is ok, a 401 is an error naming the provider and the URL
/// (exit 1) with the key kept out of it, even where the vendor echoes it.
/// `status` probes nothing.
#[cfg(feature = "anthropic")]
#[test]
fn doctor_probes_an_anthropic_provider() {
    let (url, reply, seen) = anthropic_mock();
    let key = "sk-ant-doctor-test-5d1f3a9c7e";
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{url}\"\n\
             model = \"claude-test\"\napi_key_env = \"TEST_ANTHROPIC_KEY\"\n\n\
             [hardware]\nboard = \"sim\"\n"
        ),
    )
    .expect("config");
    let env = [("TEST_ANTHROPIC_KEY", key)];
    *reply.lock().expect("reply") = "200 OK\n{\"data\":[{\"type\":\"model\",\"id\":\"claude-test\",\"display_name\":\"Claude Test\",\"created_at\":\"2025-01-01T00:00:00Z\"}],\"has_more\":false,\"first_id\":\"claude-test\",\"last_id\":\"claude-test\"}".into();

    let out = pincer_env(&home, &["doctor", "--json"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let doc = json(&stdout(&out));
    let p = &doc["providers"][0];
    assert_eq!(p["kind"], "anthropic", "{p}");
    assert_eq!(p["reach"]["ok"], true, "{p}");
    assert_eq!(p["reach"]["url"], format!("{url}/v1/models"), "{p}");
    {
        let seen = seen.lock().expect("seen");
        assert_eq!(seen.len(), 1, "{seen:?}");
        let head = seen[0].to_ascii_lowercase();
        assert!(head.starts_with("get /v1/models "), "{head}");
        assert!(head.contains(&format!("x-api-key: {key}")), "{head}");
        assert!(head.contains("anthropic-version: "), "{head}");
    }
    let text = ok(pincer_env(&home, &["doctor"], &env));
    assert!(text.contains(&format!("GET {url}/v1/models: ok")), "{text}");

    // status reads the same report without probing.
    ok(pincer_env(&home, &["status", "--json"], &env));
    assert_eq!(seen.lock().expect("seen").len(), 2, "status probed");

    *reply.lock().expect("reply") = format!(
        "401 Unauthorized\n{{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key {key}\"}}}}"
    );
    let out = pincer_env(&home, &["doctor"], &env);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out) + &stderr(&out);
    assert!(
        text.contains(&format!(
            "provider `claude` does not answer at {url}/v1/models"
        )),
        "{text}"
    );
    assert!(!text.contains(key), "the key leaked: {text}");
}

/// `doctor` and `status` say `openai`, `anthropic`, `sim`: pincer's own
/// names, never the Rust type's (`Openai`, `Sim`) or an `Option`'s.
#[test]
fn doctor_and_status_name_kinds_and_boards_in_pincers_words() {
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    // The Anthropic provider only where the binary has it.
    let anthropic = cfg!(feature = "anthropic");
    let (chain, claude) = if anthropic {
        (
            "\"local\", \"claude\"",
            format!(
                "[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{dead}\"\nmodel = \"c\"\n\
                 api_key_env = \"TEST_ANTHROPIC_KEY\"\n\n"
            ),
        )
    } else {
        ("\"local\"", String::new())
    };
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[agent]\nfallback_chain = [{chain}]\n\n\
             [providers.local]\nkind = \"openai\"\nbase_url = \"{dead}/v1\"\nmodel = \"m\"\n\n\
             {claude}[hardware]\nboard = \"sim\"\n"
        ),
    )
    .expect("config");
    let env = [("TEST_ANTHROPIC_KEY", "sk-ant-unused-key-0000")];
    let doctor = stdout(&pincer_env(&home, &["doctor"], &env));
    let status = stdout(&pincer_env(&home, &["status"], &env));
    let hw = ok(pincer_env(&home, &["hw", "info"], &env));
    assert!(doctor.contains("  local (openai) "), "{doctor}");
    assert!(
        !anthropic || doctor.contains("  claude (anthropic) "),
        "{doctor}"
    );
    for text in [&doctor, &status] {
        assert!(text.contains("hardware:  sim (from config)"), "{text}");
    }
    assert!(hw.starts_with("board: sim\n"), "{hw}");
    for text in [&doctor, &status, &hw] {
        for name in [
            "Openai",
            "Anthropic",
            "Scripted",
            "Sim",
            "Some(",
            "None",
            "Ok(",
            "Err(",
        ] {
            assert!(!text.contains(name), "{name} in: {text}");
        }
    }
}

/// `memory write` with no `--body` reads the body from stdin; at a
/// terminal it says so first (else it would look hung), and the page is
/// what was typed up to Ctrl-D. With stdin a pipe it says nothing.
#[test]
fn memory_write_at_a_terminal_says_it_reads_stdin() {
    use std::io::Write as _;
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let (mut child, screen, mut keys) =
        crate::tty::on_a_pty(&home, &["memory", "write", "--title", "typed", "--json"]);
    let at = screen.wait_for("reading the page body from stdin; end it with Ctrl-D", 0);
    keys.write_all(b"typed at the terminal\n\x04")
        .expect("keys");
    let at = screen.wait_for("{\"id\":\"", at);
    let end = screen.wait_for("\"}", at);
    let id = screen.0.0.lock().expect("screen")[at..end - 2].to_string();
    assert!(child.wait().expect("wait").success());
    let page = ok(pincer(&home, &["memory", "show", &id], ""));
    assert!(page.contains("typed at the terminal"), "{page}");

    let out = pincer(
        &home,
        &["memory", "write", "--title", "piped"],
        "piped body\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("reading the page body"),
        "{}",
        stderr(&out)
    );
}

/// `--json` prints one JSON object per command — never a bare list, never
/// several documents — on a home with something in it; `audit log --json`
/// is the stream, one object per line.
#[test]
fn json_is_one_object_per_command_and_lines_only_for_streams() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    crate::scripted_home(
        &home,
        r#"{"turns": [{"text": "hello"}]}"#,
        "supervised",
        120,
        "",
    );
    ok(pincer_env(&home, &["agent", "-m", "hi"], &[]));
    ok(pincer(&home, &["remember", "the greenhouse is north"], ""));
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["session", "list"],
        vec!["session", "show", "cli"],
        vec!["approvals", "list"],
        vec!["memory", "list"],
        vec!["memory", "search", "greenhouse"],
        vec!["skills"],
        vec!["status"],
        vec!["audit", "verify"],
        vec!["audit", "note", "a note"],
        vec!["handoff"],
        vec!["hw", "info"],
        vec!["policy", "explain", "shell", r#"{"command": "ls"}"#],
    ];
    if cfg!(feature = "serve") {
        commands.push(vec!["cron", "list"]);
    }
    if cfg!(feature = "mcp") {
        commands.push(vec!["mcp", "list"]);
    }
    for mut args in commands {
        args.push("--json");
        let out = ok(pincer_env(&home, &args, &[]));
        let doc: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON document ({e}): {out}"));
        assert!(doc.is_object(), "{args:?}: not an object: {out}");
    }
    let log = ok(pincer(&home, &["audit", "log", "--json"], ""));
    assert!(log.lines().count() > 1, "{log}");
    for line in log.lines() {
        assert!(json(line).is_object(), "{line}");
    }
}
