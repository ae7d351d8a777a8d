use crate::{fails, json, ok, pincer};
use std::io::Write;

fn line(role: &str, content: &str) -> String {
    format!("{{\"role\":\"{role}\",\"content\":\"{content}\"}}\n")
}

/// A turn with a tool call, as JSON lines.
fn turn(i: usize) -> String {
    format!(
        "{}{{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{{\"id\":\"c{i}\",\"name\":\"file_read\",\"arguments\":{{\"path\":\"f{i}\"}}}}]}}\n\
         {{\"role\":\"tool\",\"content\":\"contents of file {i} {pad}\",\"tool_call_id\":\"c{i}\",\"name\":\"file_read\"}}\n{}",
        line("user", &format!("question {i}")),
        line("assistant", &format!("answer {i}")),
        pad = "x".repeat(200),
    )
}

#[test]
fn append_show_list_round_trip() {
    let home = tempfile::tempdir().expect("tempdir");
    let input: String = (0..3).map(turn).collect();
    let out = ok(pincer(home.path(), &["session", "append", "chat"], &input));
    assert_eq!(out.trim(), "appended 12 message(s) to session chat");
    let doc = json(&ok(pincer(
        home.path(),
        &["session", "show", "chat", "--json"],
        "",
    )));
    assert_eq!(doc["messages"].as_array().expect("msgs").len(), 12);
    assert_eq!(doc["stats"]["lines_on_disk"], 12);
    assert_eq!(doc["stats"]["unreadable"].as_array().expect("u").len(), 0);
    assert_eq!(doc["messages"][1]["tool_calls"][0]["name"], "file_read");
    let text = ok(pincer(home.path(), &["session", "show", "chat"], ""));
    assert!(text.contains("unreadable lines: 0"), "{text}");
    assert!(text.contains("torn tail: none"), "{text}");
    assert!(text.contains("assistant → file_read[c1]"), "{text}");
    let list = json(&ok(pincer(home.path(), &["session", "list", "--json"], "")));
    assert_eq!(list["sessions"][0]["key"], "chat");
    assert_eq!(list["sessions"][0]["lines_on_disk"], 12);
}

#[test]
fn a_bad_line_is_reported_by_number_and_field_and_nothing_is_written() {
    let home = tempfile::tempdir().expect("tempdir");
    let input = format!(
        "{}{}{}",
        line("user", "fine"),
        "{\"role\":\"user\",\"content\":42}\n",
        "{\"role\":\"tool\",\"content\":\"r\",\"name\":\"t\"}\n"
    );
    let err = fails(pincer(home.path(), &["session", "append", "b"], &input));
    assert!(err.contains("stdin line 2: field `content`"), "{err}");
    assert!(err.contains("stdin line 3: field `tool_call_id`"), "{err}");
    assert!(err.contains("nothing from this batch was written"), "{err}");
    let err = fails(pincer(home.path(), &["session", "show", "b"], ""));
    assert!(err.contains("does not exist"), "{err}");
    let err = fails(pincer(home.path(), &["session", "append", "b"], ""));
    assert!(err.contains("no messages"), "{err}");
}

#[test]
fn keys_never_escape_the_sessions_directory() {
    let home = tempfile::tempdir().expect("tempdir");
    for key in ["../evil", "a/b", "..", "x.y"] {
        let err = fails(pincer(
            home.path(),
            &["session", "append", key],
            &line("user", "x"),
        ));
        assert!(err.contains("invalid session key"), "{key}: {err}");
    }
    let err = fails(pincer(
        home.path(),
        &["session", "append", ""],
        &line("user", "x"),
    ));
    assert!(err.contains("empty"), "{err}");
    assert!(!home.path().join("evil.jsonl").exists());
}

#[test]
fn torn_tail_is_shown_then_repaired_by_the_next_append() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(pincer(home.path(), &["session", "append", "t"], &turn(0)));
    let file = home.path().join("sessions/t.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .expect("open")
        .write_all(b"{\"role\":\"user\",\"cont")
        .expect("write");
    let doc = json(&ok(pincer(
        home.path(),
        &["session", "show", "t", "--json"],
        "",
    )));
    assert_eq!(doc["stats"]["torn_tail_bytes"], 20);
    assert_eq!(doc["messages"].as_array().expect("m").len(), 4);
    ok(pincer(
        home.path(),
        &["session", "append", "t"],
        &line("user", "next"),
    ));
    let doc = json(&ok(pincer(
        home.path(),
        &["session", "show", "t", "--json"],
        "",
    )));
    assert_eq!(doc["stats"]["torn_tail_bytes"], 0);
    assert_eq!(doc["stats"]["torn_tail_repairs"], 1);
    assert_eq!(doc["messages"][4]["content"], "next");
}

#[test]
fn a_second_writer_gets_a_clear_error() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(pincer(
        home.path(),
        &["session", "append", "w"],
        &line("user", "x"),
    ));
    let store = pincer_core::session::SessionStore::open(
        home.path().join("sessions"),
        pincer_core::config::FsyncPolicy::Turn,
    )
    .expect("store");
    let held = store.writer("w").expect("hold the lock");
    let err = fails(pincer(
        home.path(),
        &["session", "append", "w"],
        &line("user", "y"),
    ));
    assert!(err.contains("open for writing by another process"), "{err}");
    drop(held);
    ok(pincer(
        home.path(),
        &["session", "append", "w"],
        &line("user", "y"),
    ));
}

#[test]
fn trim_then_compact() {
    let home = tempfile::tempdir().expect("tempdir");
    let input: String = (0..20).map(turn).collect();
    ok(pincer(home.path(), &["session", "append", "long"], &input));
    let r = json(&ok(pincer(
        home.path(),
        &[
            "session",
            "trim",
            "long",
            "--budget",
            "1200",
            "--output-reserve",
            "200",
            "--tool-def-tokens",
            "100",
            "--json",
        ],
        "",
    )));
    let dropped = r["dropped_turns"].as_u64().expect("dropped");
    assert!(dropped > 0 && dropped < 20, "{r}");
    assert!(r["tokens_after"].as_u64() <= Some(1200), "{r}");
    assert!(
        r["tokens_before"].as_u64() > r["tokens_after"].as_u64(),
        "{r}"
    );
    let doc = json(&ok(pincer(
        home.path(),
        &["session", "show", "long", "--json"],
        "",
    )));
    let msgs = doc["messages"].as_array().expect("m");
    assert_eq!(msgs[0]["role"], "user", "kept part starts at a turn");
    assert_eq!(msgs.len() as u64, (20 - dropped) * 4);
    assert!(!doc["summary"].as_str().expect("s").is_empty());
    // Trimming again with the same budget drops nothing more.
    let r2 = json(&ok(pincer(
        home.path(),
        &[
            "session",
            "trim",
            "long",
            "--budget",
            "1200",
            "--output-reserve",
            "200",
            "--tool-def-tokens",
            "100",
            "--json",
        ],
        "",
    )));
    assert_eq!(r2["dropped_turns"], 0, "{r2}");
    // Trim compacts by itself exactly when over half the lines are skipped.
    assert_eq!(!r["compacted"].is_null(), dropped * 2 > 20, "{r}");
    let c = json(&ok(pincer(
        home.path(),
        &["session", "compact", "long", "--json"],
        "",
    )));
    assert!(c["compacted"].is_null(), "nothing left to compact: {c}");
    let after = json(&ok(pincer(
        home.path(),
        &["session", "show", "long", "--json"],
        "",
    )));
    assert_eq!(after["messages"], doc["messages"]);
    assert_eq!(after["stats"]["skip"], 0);
}

#[test]
fn overflowing_current_turn_is_a_clear_error() {
    let home = tempfile::tempdir().expect("tempdir");
    let big = "word ".repeat(2000);
    ok(pincer(
        home.path(),
        &["session", "append", "o"],
        &line("user", &big),
    ));
    let err = fails(pincer(
        home.path(),
        &[
            "session",
            "trim",
            "o",
            "--budget",
            "600",
            "--output-reserve",
            "100",
        ],
        "",
    ));
    assert!(err.contains("over by"), "{err}");
}

/// Real `kill -9` of a real `pincer session append` at different moments:
/// every batch whose command exited 0 is still there, in order, and the
/// session stays appendable with no unreadable line.
#[test]
fn kill_9_never_loses_an_acknowledged_batch() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let home = tempfile::tempdir().expect("tempdir");
    let file = home.path().join("sessions/k.jsonl");
    let mut acked: Vec<String> = Vec::new();
    let big_batch = |round: usize| -> (String, Vec<String>) {
        let contents: Vec<String> = (0..20_000).map(|i| format!("r{round} m{i}")).collect();
        let text = contents.iter().map(|c| line("user", c)).collect();
        (text, contents)
    };
    for round in 0..9 {
        // An acknowledged batch before each crash.
        let small = format!("acked {round}");
        ok(pincer(
            home.path(),
            &["session", "append", "k"],
            &line("user", &small),
        ));
        acked.push(small);

        let (text, _) = big_batch(round);
        let size_before = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
            .args(["session", "append", "k"])
            .env("PINCER_HOME", home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let feeder = std::thread::spawn(move || {
            // The child may die first; a broken pipe is expected then.
            let _ = stdin.write_all(text.as_bytes());
        });
        // Round 0, 3, 6: kill before it has read anything. 1, 4, 7: once its
        // stdin is fully written (it is validating). 2, 5, 8: the moment the
        // file starts to grow (mid-write). Each wait is bounded.
        let deadline = Instant::now() + Duration::from_secs(20);
        while round % 3 != 0 && Instant::now() < deadline {
            let reached = if round % 3 == 1 {
                feeder.is_finished()
            } else {
                std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) > size_before
            };
            if reached || child.try_wait().expect("try_wait").is_some() {
                break;
            }
            std::thread::yield_now();
        }
        let _ = child.kill(); // SIGKILL
        let status = child.wait().expect("wait");
        let _ = feeder.join();
        if status.success() {
            // It finished before the kill: the whole batch is acknowledged.
            let (_, contents) = big_batch(round);
            acked.extend(contents);
        }
        let doc = json(&ok(pincer(
            home.path(),
            &["session", "show", "k", "--json"],
            "",
        )));
        eprintln!(
            "round {round}: exit {status}, torn tail {} bytes, {} messages",
            doc["stats"]["torn_tail_bytes"],
            doc["messages"].as_array().map_or(0, Vec::len)
        );
        let got: Vec<&str> = doc["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect();
        // Every acknowledged message is there, in order; only whole lines of
        // the killed, unacknowledged batch may follow them.
        let mut it = got.iter();
        for a in &acked {
            assert!(it.any(|g| g == a), "round {round}: lost acknowledged `{a}`");
        }
        assert_eq!(doc["stats"]["unreadable"].as_array().expect("u").len(), 0);
        acked = got.iter().map(|s| s.to_string()).collect();
    }
}

#[test]
fn show_reports_unreadable_lines_and_never_prints_control_characters() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(pincer(
        home.path(),
        &["session", "append", "s"],
        &line("user", "before"),
    ));
    let file = home.path().join("sessions/s.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .expect("open")
        .write_all(b"not json at all\n")
        .expect("write");
    ok(pincer(
        home.path(),
        &["session", "append", "s"],
        "{\"role\":\"user\",\"content\":\"red \\u001b[31malert \\u202egnp.exe\"}\n",
    ));
    let text = ok(pincer(home.path(), &["session", "show", "s"], ""));
    assert!(text.contains("unreadable lines: 1"), "{text}");
    assert!(text.contains("line 2:"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "raw ESC reached the terminal: {text:?}"
    );
    assert!(text.contains("\\u{1b}[31malert"), "{text}");
    // A bidi override would reorder what follows it on the screen.
    assert!(
        !text.contains('\u{202e}'),
        "raw U+202E reached the terminal: {text:?}"
    );
    assert!(text.contains("\\u{202e}gnp.exe"), "{text}");
    let doc = json(&ok(pincer(
        home.path(),
        &["session", "show", "s", "--json"],
        "",
    )));
    assert_eq!(doc["stats"]["unreadable"][0]["line"], 2);
    assert_eq!(doc["messages"].as_array().expect("m").len(), 2);
}

#[test]
fn huge_token_flags_are_errors_naming_the_flag() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(pincer(
        home.path(),
        &["session", "append", "h"],
        &line("user", "x"),
    ));
    let max = usize::MAX.to_string();
    for flag in ["--output-reserve", "--tool-def-tokens", "--budget"] {
        let mut args = vec!["session", "trim", "h", "--budget", "5000"];
        if flag == "--budget" {
            args[4] = &max;
        } else {
            args.extend([flag, max.as_str()]);
        }
        let err = fails(pincer(home.path(), &args, ""));
        assert!(
            err.contains(flag) && err.contains("more than"),
            "{flag}: {err}"
        );
    }
}

#[test]
fn non_utf8_input_names_its_line() {
    use std::process::{Command, Stdio};
    let home = tempfile::tempdir().expect("tempdir");
    let mut bytes = line("user", "ok").into_bytes();
    bytes.extend_from_slice(b"{\"role\":\"user\",\"content\":\"\xff\"}\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["session", "append", "n"])
        .env("PINCER_HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&bytes)
        .expect("write");
    let err = fails(child.wait_with_output().expect("wait"));
    assert!(err.contains("stdin line 2: not UTF-8"), "{err}");
}

/// A long session on an edge model's small window keeps trimming: the
/// running summary yields its room to the conversation instead of growing
/// until nothing fits.
#[test]
fn a_long_session_keeps_fitting_a_small_window() {
    let home = tempfile::tempdir().expect("tempdir");
    for i in 0..30 {
        let text = format!(
            "{}{}",
            line(
                "user",
                &format!(
                    "day {i}: what does the greenhouse log say about the vents and the pumps?"
                )
            ),
            line(
                "assistant",
                &format!(
                    "day {i}: {}",
                    "the vent opened at noon and the pump ran twice. ".repeat(3)
                )
            ),
        );
        ok(pincer(home.path(), &["session", "append", "g"], &text));
        let out = pincer(
            home.path(),
            &[
                "session",
                "trim",
                "g",
                "--budget",
                "800",
                "--tool-def-tokens",
                "50",
                "--output-reserve",
                "50",
                "--json",
            ],
            "",
        );
        assert!(out.status.success(), "turn {i}: {}", crate::stderr(&out));
    }
    let doc = json(&ok(pincer(
        home.path(),
        &["session", "show", "g", "--json"],
        "",
    )));
    assert!(doc["summary"].as_str().expect("summary").len() > 1000);
}
