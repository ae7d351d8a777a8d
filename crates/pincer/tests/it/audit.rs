//! The tampering story through the CLI (AU2–AU5) and strict flags.

use crate::{fails, json, ok, pincer, stdout};
use std::path::Path;

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
