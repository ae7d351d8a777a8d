//! The tampering story through the CLI (AU2–AU5), sealing, the text and
//! JSON shapes, following the trail, and strict flags.

use crate::{fails, json, ok, pincer, stderr, stdout};
use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn note(home: &Path, text: &str) -> std::process::Output {
    pincer(home, &["audit", "note", text], "")
}

fn verify(home: &Path) -> (bool, serde_json::Value) {
    let out = pincer(home, &["audit", "verify", "--json"], "");
    (out.status.success(), json(stdout(&out).trim()))
}

fn trail(home: &Path) -> Vec<String> {
    std::fs::read_to_string(home.join("audit/trail.jsonl"))
        .expect("trail")
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_trail(home: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(home.join("audit/trail.jsonl"), text).expect("write trail");
}

#[test]
fn delete_refuse_verify_reanchor_then_a_middle_edit_cannot_be_reanchored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    for i in 0..4 {
        ok(note(&home, &format!("note {i}")));
    }
    let (good, report) = verify(&home);
    assert!(good, "{report}");
    assert_eq!(report["entries"], 4);
    assert!(report["defect"].is_null());
    let text = ok(pincer(&home, &["audit", "verify"], ""));
    assert!(text.contains("ok: 4 entries"), "{text}");

    // Delete the last line: the next action that appends is refused, and
    // the refusal names the way out.
    let mut lines = trail(&home);
    lines.pop();
    write_trail(&home, &lines);
    let err = fails(note(&home, "after the cut"));
    assert!(err.contains("pincer audit reanchor --reason"), "{err}");
    assert_eq!(trail(&home).len(), 3, "the refused append wrote nothing");
    let (good, report) = verify(&home);
    assert!(!good);
    assert_eq!(report["defect"]["kind"], "anchor_mismatch", "{report}");
    let text = stdout(&pincer(&home, &["audit", "verify"], ""));
    assert!(text.contains("anchor_mismatch"), "{text}");

    // Reanchor needs a reason; with one, it leaves a scar entry.
    assert!(fails(pincer(&home, &["audit", "reanchor"], "")).contains("--reason"));
    assert!(fails(pincer(&home, &["audit", "reanchor", "--reason", "  "], "")).contains("reason"));
    ok(pincer(
        &home,
        &[
            "audit",
            "reanchor",
            "--reason",
            "test removed the last line on purpose",
        ],
        "",
    ));
    let scar = ok(pincer(
        &home,
        &[
            "audit",
            "log",
            "--kind",
            "audit.note",
            "--limit",
            "1",
            "--json",
        ],
        "",
    ));
    let scar = json(scar.trim());
    assert_eq!(scar["actor"], "human:cli");
    assert_eq!(scar["data"]["reanchor"], true, "{scar}");
    assert_eq!(
        scar["data"]["reason"],
        "test removed the last line on purpose"
    );
    let (good, report) = verify(&home);
    assert!(good, "{report}");
    ok(note(&home, "appends work again"));

    // Edit a middle line: verify names its seq, reanchor refuses.
    let mut lines = trail(&home);
    lines[1] = lines[1].replacen("note 1", "note X", 1);
    write_trail(&home, &lines);
    let (good, report) = verify(&home);
    assert!(!good);
    assert_eq!(report["defect"]["seq"], 2, "{report}");
    assert_ne!(report["defect"]["kind"], "anchor_mismatch", "{report}");
    let err = fails(pincer(
        &home,
        &["audit", "reanchor", "--reason", "cover it up"],
        "",
    ));
    assert!(
        err.to_lowercase().contains("seq 2") || err.contains("line 2"),
        "{err}"
    );
    // Append checks only the end of the trail: a same-length edit in the
    // middle is verify's to find, and stays found.
    ok(note(&home, "more"));
    let (good, report) = verify(&home);
    assert!(!good);
    assert_eq!(report["defect"]["seq"], 2, "{report}");
}

#[test]
fn flags_are_strict() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    ok(note(&home, "one"));
    for (args, needle) in [
        (&["audit", "log", "--limit", "abc"][..], "--limit"),
        (&["audit", "log", "--limit", "-5"][..], "-5"),
        (&["audit", "log", "--limit", "0"][..], "--limit"),
        (&["audit", "log", "-n", "5"][..], "-n"),
        (&["audit", "verify", "--bogus"][..], "--bogus"),
        (&["audit", "note"][..], "TEXT"),
    ] {
        let err = fails(pincer(&home, args, ""));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let out = ok(pincer(&home, &["audit", "log", "--limit", "5"], ""));
    assert!(
        out.contains("audit.note") && out.contains("human:cli"),
        "{out}"
    );
}

#[test]
fn a_damaged_byte_is_refused_named_sealed_and_the_trail_goes_on() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    for i in 0..4 {
        ok(note(&home, &format!("note {i}")));
    }
    // One changed byte in the last entry: every audited command stops.
    let path = home.join("audit/trail.jsonl");
    let mut lines = trail(&home);
    lines[3] = lines[3].replacen("note 3", "note X", 1);
    write_trail(&home, &lines);
    let evidence = std::fs::read(&path).expect("read");
    let err = fails(note(&home, "after the flip"));
    assert!(err.contains("pincer audit seal --reason"), "{err}");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        evidence,
        "nothing written"
    );

    // verify names it, and says what to do.
    let out = pincer(&home, &["audit", "verify"], "");
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("DEFECT: hash_mismatch at seq 4 (trail.jsonl line 4)"),
        "{text}"
    );
    assert!(text.contains("pincer audit seal --reason"), "{text}");
    // reanchor still refuses: the defect is inside the file.
    let err = fails(pincer(
        &home,
        &["audit", "reanchor", "--reason", "hide it"],
        "",
    ));
    assert!(
        err.contains("reanchor refused") && err.contains("seal"),
        "{err}"
    );

    // seal needs a reason; with one, it keeps the file and goes on.
    assert!(fails(pincer(&home, &["audit", "seal"], "")).contains("--reason"));
    assert!(fails(pincer(&home, &["audit", "seal", "--reason", " "], "")).contains("reason"));
    let text = ok(pincer(
        &home,
        &["audit", "seal", "--reason", "bit flip on the SD card"],
        "",
    ));
    assert!(text.contains("sealed trail.jsonl"), "{text}");
    assert!(text.contains("kept read-only as evidence"), "{text}");
    assert!(text.contains("goes on in trail.000002.jsonl"), "{text}");
    assert!(
        !text.trim_start().starts_with('{'),
        "text, not JSON: {text}"
    );
    assert_eq!(
        std::fs::read(&path).expect("read"),
        evidence,
        "evidence kept as it was"
    );
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o400);
    let sha = pincer_core::canonical::sha256_hex(&evidence);
    assert!(text.contains(&sha), "{text}");

    // Audited commands work again.
    ok(note(&home, "back in business"));
    // verify reports the seal from now on, and passes.
    let out = pincer(&home, &["audit", "verify"], "");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("audit trail ok"), "{text}");
    assert!(text.contains("sealed: trail.jsonl"), "{text}");
    assert!(text.contains("by human:cli"), "{text}");
    assert!(text.contains("hash_mismatch at seq 4"), "{text}");
    assert!(text.contains("reason: bit flip on the SD card"), "{text}");
    let (good, report) = verify(&home);
    assert!(good, "{report}");
    assert!(report["defect"].is_null());
    let sealed = &report["sealed"][0];
    assert_eq!(sealed["intact"], true, "{report}");
    assert_eq!(sealed["by"], "human:cli");
    assert_eq!(sealed["segments"][0]["sha256"], sha.as_str());
    assert_eq!(sealed["defect"]["kind"], "hash_mismatch");
    // --strict treats a seal as a failure.
    assert!(
        !pincer(&home, &["audit", "verify", "--strict"], "")
            .status
            .success()
    );
    // From the seal's segment: the sealed one is checked with it (its
    // sha256 is the seal's link), so the walk starts there.
    let out = ok(pincer(
        &home,
        &["audit", "verify", "--from-segment", "2", "--json"],
        "",
    ));
    let v = json(out.trim());
    assert_eq!(v["from_segment"], 1, "{v}");
    assert_eq!(v["sealed"][0]["intact"], true, "{v}");
    let text = ok(pincer(&home, &["audit", "verify", "--since", "5"], ""));
    assert!(text.contains("audit trail ok"), "{text}");
    let err = fails(pincer(
        &home,
        &["audit", "verify", "--from-segment", "9"],
        "",
    ));
    assert!(
        err.contains("--from-segment") && err.contains("segment 9 does not exist"),
        "{err}"
    );
    // The log shows the seal, not the sealed entries.
    let log = ok(pincer(&home, &["audit", "log"], ""));
    assert!(
        log.contains("audit.seal") && log.contains("sealed trail.jsonl"),
        "{log}"
    );
    assert!(log.contains("back in business"), "{log}");
    assert!(!log.contains("note 0"), "{log}");
    // Nothing left to seal.
    let err = fails(pincer(&home, &["audit", "seal", "--reason", "again"], ""));
    assert!(err.contains("nothing to seal"), "{err}");
    // The sealed file changes: verify fails again, naming it.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(&path, b"gone\n").expect("write");
    let out = pincer(&home, &["audit", "verify"], "");
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("seal_broken") && text.contains("CHANGED"),
        "{text}"
    );
}

#[test]
fn verify_says_torn_tail_in_text_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    ok(note(&home, "one"));
    let torn = b"{\"actor\":\"human:cli\",\"data\"";
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(home.join("audit/trail.jsonl"))
        .expect("open");
    std::io::Write::write_all(&mut f, torn).expect("write");
    let (good, report) = verify(&home);
    assert!(good, "{report}");
    assert_eq!(report["torn_tail_bytes"], torn.len());
    let text = ok(pincer(&home, &["audit", "verify"], ""));
    assert!(text.contains("ok: 1 entry"), "{text}");
    assert!(
        text.contains(&format!("{} bytes of an interrupted append", torn.len())),
        "{text}"
    );
    ok(note(&home, "two"));
    let log = ok(pincer(&home, &["audit", "log"], ""));
    assert!(
        log.contains("audit.repair") && log.contains("removed"),
        "{log}"
    );
}

#[test]
fn reanchor_speaks_text_and_json_on_request() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    for i in 0..3 {
        ok(note(&home, &format!("n{i}")));
    }
    let mut lines = trail(&home);
    lines.pop();
    write_trail(&home, &lines);
    let text = ok(pincer(
        &home,
        &["audit", "reanchor", "--reason", "cut on purpose"],
        "",
    ));
    assert!(
        text.starts_with("re-anchored: the anchor said 3 entries"),
        "{text}"
    );
    assert!(text.contains("last entry is seq 2"), "{text}");
    assert!(text.contains("resolved: anchor_mismatch"), "{text}");
    assert!(text.contains("recorded as audit.note seq 3"), "{text}");
    let out = ok(pincer(
        &home,
        &["audit", "reanchor", "--reason", "routine", "--json"],
        "",
    ));
    let v = json(out.trim());
    assert_eq!(v["note"]["seq"], 4);
    assert!(v["resolved"].is_null());
    let out = ok(pincer(&home, &["audit", "note", "x", "--json"], ""));
    assert_eq!(json(out.trim())["seq"], 5);
}

#[test]
fn log_is_one_human_line_per_entry_with_since_and_known_kinds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    for i in 0..5 {
        ok(note(&home, &format!("note number {i}\nsecond line")));
    }
    let log = ok(pincer(&home, &["audit", "log"], ""));
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 5, "{log}");
    assert!(lines[0].trim_start().starts_with("1  "), "{log}");
    assert!(
        lines[0].contains("human:cli") && lines[0].contains("audit.note"),
        "{log}"
    );
    assert!(
        lines[0].contains("note number 0\\nsecond line"),
        "escaped: {log}"
    );
    assert!(!log.contains('{'), "no raw JSON: {log}");

    let seqs = |out: &str| -> Vec<u64> {
        out.lines()
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect()
    };
    let out = ok(pincer(&home, &["audit", "log", "--since", "3"], ""));
    assert_eq!(seqs(&out), [3, 4, 5]);
    let out = ok(pincer(
        &home,
        &["audit", "log", "--since", "3", "--limit", "1"],
        "",
    ));
    assert_eq!(seqs(&out), [5]);
    let out = ok(pincer(
        &home,
        &["audit", "log", "--since", "2000-01-01T00:00:00Z"],
        "",
    ));
    assert_eq!(seqs(&out).len(), 5);
    let out = pincer(
        &home,
        &["audit", "log", "--since", "2999-01-01T00:00:00Z"],
        "",
    );
    assert!(stdout(&out).is_empty() && stderr(&out).contains("no entries"));
    let err = fails(pincer(&home, &["audit", "log", "--since", "yesterday"], ""));
    assert!(err.contains("--since") && err.contains("RFC 3339"), "{err}");

    let err = fails(pincer(&home, &["audit", "log", "--kind", "bogus"], ""));
    assert!(err.contains("unknown kind `bogus`"), "{err}");
    assert!(
        err.contains("gate.decision") && err.contains("audit.seal"),
        "{err}"
    );
    assert!(err.contains("family"), "{err}");
    let out = ok(pincer(&home, &["audit", "log", "--kind", "audit"], ""));
    assert_eq!(out.lines().count(), 5);
    let out = ok(pincer(&home, &["audit", "log", "--kind", "gate"], ""));
    assert!(out.is_empty());
    let out = ok(pincer(
        &home,
        &["audit", "log", "--json", "--limit", "2"],
        "",
    ));
    let v: Vec<serde_json::Value> = out.lines().map(json).collect();
    assert_eq!(v.len(), 2);
    assert_eq!(v[1]["seq"], 5);
}

/// `pincer audit log --follow` with its stdout read line by line on a
/// thread; the thread ends (closing the pipe) after `take` lines.
fn follow(home: &Path, take: usize) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["audit", "log", "--follow", "--limit", "1"])
        .env("PINCER_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pincer");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let lines = std::io::BufReader::new(out).lines();
        for line in lines.take(take) {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

const DEADLINE: Duration = Duration::from_secs(30);

fn next_line(rx: &mpsc::Receiver<String>) -> String {
    rx.recv_timeout(DEADLINE)
        .expect("a line within the deadline")
}

/// Waits (polling, with a deadline) for the child to exit.
fn exits(child: &mut Child) -> std::process::ExitStatus {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("`audit log --follow` did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn follow_prints_new_entries_and_stops_when_the_reader_goes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    ok(note(&home, "before"));
    let (mut child, rx) = follow(&home, 2);
    assert!(next_line(&rx).contains("before"));
    // Appended by another process while it follows.
    ok(note(&home, "while following"));
    let line = next_line(&rx);
    assert!(line.trim_start().starts_with("2  "), "{line}");
    assert!(line.contains("while following"), "{line}");
    // The reader has gone (its thread took two lines and closed the pipe):
    // the follower notices without another entry, and exits cleanly.
    let status = exits(&mut child);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert!(status.success(), "{status:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn follow_stops_on_ctrl_c() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    ok(note(&home, "before"));
    let (mut child, rx) = follow(&home, usize::MAX);
    assert!(next_line(&rx).contains("before"));
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .expect("SIGINT");
    let status = exits(&mut child);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(2), "{status:?}");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert!(err.is_empty(), "{err}");
}
