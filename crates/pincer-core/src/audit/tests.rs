#![allow(clippy::expect_used, clippy::unwrap_used)] // tests: failing loudly is right

use super::*;
use serde_json::json;
use std::sync::Arc;

pub(super) fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).expect("ts")
}

pub(super) fn open() -> (tempfile::TempDir, Audit) {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = Audit::open(&dir.path().join("audit")).expect("open");
    (dir, audit)
}

/// A trail of `n` entries written through `append`.
pub(super) fn appended(n: u64) -> (tempfile::TempDir, Audit) {
    let (dir, audit) = open();
    for i in 0..n {
        audit
            .append("agent:main", "tool.call", json!({"i": i, "tool": "shell"}))
            .expect("append");
    }
    (dir, audit)
}

/// The entries [`fill`] writes.
pub(super) fn filler(n: u64) -> impl Iterator<Item = NewEntry> {
    let t = ts("2026-11-30T11:43:45.123Z");
    (1..=n).map(move |seq| NewEntry {
        ts: t,
        actor: "agent:main".into(),
        kind: "gate.decision".into(),
        data: json!({"tool": "shell", "decision": "allow", "n": seq}),
    })
}

/// Writes `n` entries and their anchor straight to disk (one fsync), for
/// trails too long to build through `append`. Returns the top hash.
pub(super) fn fill(dir: &Path, n: u64) -> String {
    write_new_trail(dir, AuditOptions::default(), filler(n))
        .unwrap()
        .top
}

/// A trail as a pincer from before segments left it: `trail.jsonl` and an
/// anchor `{count, top}`.
pub(super) fn fill_legacy(dir: &Path, n: u64) -> String {
    let top = fill(dir, n);
    fs::write(
        dir.join(ANCHOR_FILE),
        format!("{{\"count\":{n},\"top\":\"{top}\"}}\n"),
    )
    .unwrap();
    top
}

pub(super) fn read_lines(audit: &Audit) -> Vec<String> {
    let text = fs::read_to_string(audit.trail_path()).unwrap();
    text.lines().map(str::to_string).collect()
}

pub(super) fn write_lines(audit: &Audit, lines: &[String]) {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    fs::write(audit.trail_path(), text).unwrap();
}

/// The one place tests look at a defect: kind, line and seq.
#[track_caller]
fn check_defect(audit: &Audit, kind: DefectKind, line: u64) -> Defect {
    let report = audit.verify().expect("verify");
    let d = report
        .defect
        .unwrap_or_else(|| panic!("expected {kind} at line {line}, trail is clean"));
    assert_eq!((d.kind, d.line, d.seq), (kind, line, line), "{d}");
    d
}

#[track_caller]
fn check_clean(audit: &Audit, entries: u64) -> VerifyReport {
    let report = audit.verify().expect("verify");
    assert_eq!(report.defect, None, "{report:?}");
    assert_eq!(report.entries, entries);
    report
}

#[track_caller]
fn check_diverged(audit: &Audit) {
    let before = fs::read(audit.trail_path()).ok();
    match audit.append("human:cli", KIND_NOTE, json!({"text": "hi"})) {
        Err(e @ AuditError::Diverged { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("run `pincer audit verify` to see the defect")
                    && msg.contains("`pincer audit reanchor --reason \"…\"`")
                    && msg.contains("`pincer audit seal --reason \"…\"`"),
                "{msg}"
            );
        }
        other => panic!("expected Diverged, got {other:?}"),
    }
    assert_eq!(
        fs::read(audit.trail_path()).ok(),
        before,
        "a refused append wrote"
    );
}

/// The edit is inside the trail but outside what append checks: append
/// works, and verify still names the same defect afterwards.
#[track_caller]
fn check_unseen_by_append(audit: &Audit, kind: DefectKind, line: u64) {
    let fresh = Audit::open(audit.dir()).unwrap();
    fresh
        .append("human:cli", KIND_NOTE, json!({"text": "hi"}))
        .expect("append does not walk the chain");
    check_defect(audit, kind, line);
}

#[test]
fn audit_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Audit>();
}

#[test]
fn round_trip() {
    let e = Entry::seal(
        7,
        ts("2026-11-30T11:43:45.123Z"),
        "hook:pre-tool",
        "tool.call",
        json!({"b": [1, 2.5, null], "a": "é\n\u{1}"}),
        &"ab".repeat(32),
    );
    let line = e.to_line();
    let back: Entry = serde_json::from_str(&line).unwrap();
    assert_eq!(back, e);
    assert_eq!(back.compute_hash(), e.hash);
    let ok = check_line(
        line.trim_end_matches('\n').as_bytes(),
        &mut line::Scratch::default(),
    )
    .unwrap();
    assert!(ok.hash_ok);
    assert_eq!(ok.seq, 7);
}

#[test]
fn canonical_line_bytes() {
    let e = Entry::seal(
        1,
        ts("2026-11-30T11:43:45.123Z"),
        "agent:main",
        "gate.decision",
        json!({"tool": "shell", "decision": "allow"}),
        GENESIS,
    );
    let expected_hash = crate::canonical::sha256_hex(
        format!(
            r#"{{"actor":"agent:main","data":{{"decision":"allow","tool":"shell"}},"kind":"gate.decision","prev":"{GENESIS}","seq":1,"ts":"2026-11-30T11:43:45.123Z"}}"#
        )
        .as_bytes(),
    );
    assert_eq!(e.hash, expected_hash);
    assert_eq!(
        e.to_line(),
        format!(
            r#"{{"actor":"agent:main","data":{{"decision":"allow","tool":"shell"}},"hash":"{expected_hash}","kind":"gate.decision","prev":"{GENESIS}","seq":1,"ts":"2026-11-30T11:43:45.123Z"}}"#
        ) + "\n"
    );
    // The same bytes the general canonical writer gives.
    let mut v = serde_json::to_value(&e).unwrap();
    assert_eq!(
        crate::canonical::to_canonical_string(&v) + "\n",
        e.to_line()
    );
    v.as_object_mut().unwrap().remove("hash");
    assert_eq!(
        crate::canonical::sha256_hex(crate::canonical::to_canonical_string(&v).as_bytes()),
        e.hash
    );
}

#[test]
fn empty_trail_verifies_and_first_entry_starts_at_genesis() {
    let (_d, audit) = open();
    let r = check_clean(&audit, 0);
    assert_eq!(r.top, GENESIS);
    assert_eq!(r.anchor, None);
    assert_eq!(audit.log(None, None).unwrap(), vec![]);

    let receipt = audit
        .append("agent:main", "tool.call", json!({}))
        .expect("append");
    assert_eq!(receipt.seq, 1);
    let entries = audit.log(None, None).unwrap();
    assert_eq!(entries[0].prev, GENESIS);
    assert_eq!(entries[0].hash, receipt.hash);
    let r = check_clean(&audit, 1);
    let line_len = read_lines(&audit)[0].len() as u64 + 1;
    assert_eq!(
        r.anchor,
        Some(Anchor {
            segment: 1,
            count: 1,
            top: receipt.hash.clone(),
            len: Some(line_len),
        })
    );
    assert_eq!(r.top, receipt.hash);
}

#[test]
fn chain_links_and_seqs() {
    let (_d, audit) = appended(5);
    let entries = audit.log(None, None).unwrap();
    assert_eq!(entries.len(), 5);
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
        assert_eq!(e.hash, e.compute_hash());
        if i > 0 {
            assert_eq!(e.prev, entries[i - 1].hash);
        }
    }
    check_clean(&audit, 5);
}

#[test]
fn labels_are_validated_naming_the_field() {
    let (_d, audit) = open();
    let field_of = |r: Result<Receipt>| match r {
        Err(AuditError::Invalid { field, .. }) => field,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert_eq!(field_of(audit.append("", "k", json!({}))), "actor");
    assert_eq!(field_of(audit.append("a\nb", "k", json!({}))), "actor");
    assert_eq!(field_of(audit.append("a", "", json!({}))), "kind");
    assert_eq!(
        field_of(audit.append("a", &"k".repeat(129), json!({}))),
        "kind"
    );
    assert_eq!(field_of(audit.append("a", "k\u{7f}", json!({}))), "kind");
    assert_eq!(field_of(audit.append("a", "k", json!([1]))), "data");
    // 128 characters (not bytes) is fine.
    audit.append(&"é".repeat(128), "k", json!({})).unwrap();
    let msg = audit.append("", "k", json!({})).unwrap_err().to_string();
    assert!(msg.contains("`actor`"), "{msg}");
}

#[test]
fn bad_line_not_json() {
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    lines[2] = "not json".into();
    write_lines(&audit, &lines);
    let d = check_defect(&audit, DefectKind::BadLine, 3);
    assert!(d.detail.contains("not an audit entry"), "{d}");
    check_diverged(&audit);
}

#[test]
fn bad_line_same_value_different_bytes() {
    let (_d, audit) = appended(3);
    let mut lines = read_lines(&audit);
    // Parses to the same entry, hash still right: only canonical form catches it.
    lines[1] = lines[1].replacen("{\"actor\":", "{ \"actor\":", 1);
    write_lines(&audit, &lines);
    let d = check_defect(&audit, DefectKind::BadLine, 2);
    assert!(d.detail.contains("canonical"), "{d}");
    // An escaped character that decodes to the same string.
    let (_d, audit) = appended(3);
    let mut lines = read_lines(&audit);
    lines[0] = lines[0].replacen("agent:main", "agent\\u003amain", 1);
    write_lines(&audit, &lines);
    check_defect(&audit, DefectKind::BadLine, 1);
}

#[test]
fn bad_line_empty_and_unknown_field() {
    let (_d, audit) = appended(3);
    let mut lines = read_lines(&audit);
    lines.insert(1, String::new());
    write_lines(&audit, &lines);
    check_defect(&audit, DefectKind::BadLine, 2);

    let (_d, audit) = appended(2);
    let mut lines = read_lines(&audit);
    lines[1] = lines[1].replacen("{\"actor\"", "{\"a\":1,\"actor\"", 1);
    write_lines(&audit, &lines);
    check_defect(&audit, DefectKind::BadLine, 2);
}

#[test]
fn seq_gap_when_a_middle_line_is_deleted() {
    let (_d, audit) = appended(5);
    let mut lines = read_lines(&audit);
    lines.remove(2);
    write_lines(&audit, &lines);
    let d = check_defect(&audit, DefectKind::SeqGap, 3);
    assert!(d.detail.contains("seq is 4, expected 3"), "{d}");
    check_diverged(&audit);
}

#[test]
fn broken_link_when_prev_is_rewritten_and_resealed() {
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    let e: Entry = serde_json::from_str(&lines[2]).unwrap();
    // A correctly sealed entry that points at the wrong predecessor.
    let forged = Entry::seal(e.seq, e.ts, &e.actor, &e.kind, e.data, &"f".repeat(64));
    lines[2] = forged.to_line().trim_end().to_string();
    write_lines(&audit, &lines);
    check_defect(&audit, DefectKind::BrokenLink, 3);

    let (_d, audit) = appended(2);
    let mut lines = read_lines(&audit);
    let e: Entry = serde_json::from_str(&lines[0]).unwrap();
    let forged = Entry::seal(1, e.ts, &e.actor, &e.kind, e.data, &"1".repeat(64));
    lines[0] = forged.to_line().trim_end().to_string();
    write_lines(&audit, &lines);
    let d = check_defect(&audit, DefectKind::BrokenLink, 1);
    assert!(d.detail.contains("genesis"), "{d}");
}

#[test]
fn hash_mismatch_when_data_is_edited() {
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    lines[1] = lines[1].replacen("\"tool\":\"shell\"", "\"tool\":\"shelk\"", 1);
    write_lines(&audit, &lines);
    check_defect(&audit, DefectKind::HashMismatch, 2);
    // Same length, last line untouched: append does not see it (that is
    // verify's job), and the defect stays visible.
    check_unseen_by_append(&audit, DefectKind::HashMismatch, 2);

    // The same edit in the last line is refused at once.
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    lines[3] = lines[3].replacen("\"tool\":\"shell\"", "\"tool\":\"shelk\"", 1);
    write_lines(&audit, &lines);
    check_defect(&audit, DefectKind::HashMismatch, 4);
    check_diverged(&audit);
    check_diverged(&Audit::open(audit.dir()).unwrap());
}

#[test]
fn a_resealed_last_line_is_refused() {
    let (_d, audit) = appended(3);
    let mut lines = read_lines(&audit);
    let e: Entry = serde_json::from_str(&lines[2]).unwrap();
    // Resealed, so it is a valid entry, chained to seq 2: only the anchor's
    // top can tell.
    let forged = Entry::seal(e.seq, e.ts, &e.actor, &e.kind, json!({"i": 9}), &e.prev);
    lines[2] = forged.to_line().trim_end().to_string();
    write_lines(&audit, &lines);
    let d = check_defect(&audit, DefectKind::AnchorMismatch, 3);
    assert!(d.detail.contains("anchor says 3 entries"), "{d}");
    check_diverged(&Audit::open(audit.dir()).unwrap());
}

#[test]
fn a_same_length_edit_of_the_anchor_len_is_refused() {
    // A longer trail cut back to exactly the anchored length but with an
    // entry removed elsewhere can't keep the last line; anything that
    // moves the end is refused: here the anchor's `len` is off by one.
    let (_d, audit) = appended(2);
    let text = fs::read_to_string(audit.anchor_path()).unwrap();
    let a = audit.read_anchor().unwrap().anchor().unwrap();
    let len = a.len.unwrap();
    fs::write(
        audit.anchor_path(),
        text.replace(&format!("\"len\":{len}"), &format!("\"len\":{}", len - 1)),
    )
    .unwrap();
    check_defect(&audit, DefectKind::AnchorMismatch, 2);
    check_diverged(&audit);
}

#[test]
fn a_resealed_edit_breaks_the_next_link() {
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    let e: Entry = serde_json::from_str(&lines[1]).unwrap();
    let forged = Entry::seal(
        e.seq,
        e.ts,
        &e.actor,
        &e.kind,
        json!({"i": 99, "tool": "rm"}),
        &e.prev,
    );
    lines[1] = forged.to_line().trim_end().to_string();
    write_lines(&audit, &lines);
    check_defect(&audit, DefectKind::BrokenLink, 3);
}

#[test]
fn deleted_last_line_is_refused_and_reported() {
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    lines.pop();
    write_lines(&audit, &lines);
    let d = check_defect(&audit, DefectKind::AnchorMismatch, 3);
    assert!(d.detail.contains("anchor says 4 entries"), "{d}");
    // Through this handle and a fresh one: never healed.
    check_diverged(&audit);
    check_diverged(&Audit::open(audit.dir()).unwrap());
    check_defect(&audit, DefectKind::AnchorMismatch, 3);
}

#[test]
fn truncating_into_an_anchored_line_is_a_defect() {
    let (_d, audit) = appended(3);
    let bytes = fs::read(audit.trail_path()).unwrap();
    fs::write(audit.trail_path(), &bytes[..bytes.len() - 10]).unwrap();
    let r = audit.verify().unwrap();
    assert_eq!(r.torn_tail_bytes as usize, {
        let lines = read_lines(&audit);
        lines[2].len()
    });
    let d = r.defect.expect("defect");
    assert_eq!((d.kind, d.line), (DefectKind::AnchorMismatch, 2));
    assert!(d.detail.contains("incomplete line"), "{d}");
    check_diverged(&audit);
}

#[test]
fn anchor_deleted_or_edited() {
    let (_d, audit) = appended(3);
    fs::remove_file(audit.anchor_path()).unwrap();
    let d = check_defect(&audit, DefectKind::AnchorMismatch, 3);
    assert!(d.detail.contains("missing"), "{d}");
    check_diverged(&audit);

    fs::write(audit.anchor_path(), "{\"count\": 3}").unwrap();
    let d = check_defect(&audit, DefectKind::AnchorMismatch, 3);
    assert!(d.detail.contains("invalid"), "{d}");
    check_diverged(&audit);

    let top = audit.verify().unwrap().top;
    fs::write(
        audit.anchor_path(),
        format!("{{\"count\":2,\"top\":\"{top}\"}}"),
    )
    .unwrap();
    check_defect(&audit, DefectKind::AnchorMismatch, 3);
    check_diverged(&audit);

    let r = audit.reanchor("human:cli", "restored by hand").unwrap();
    assert_eq!(r.note.seq, 4);
    check_clean(&audit, 4);
}

#[test]
fn missing_anchor_with_one_entry_is_not_a_lag() {
    // The first append anchors genesis before writing, so this is a removal.
    let (_d, audit) = appended(1);
    fs::remove_file(audit.anchor_path()).unwrap();
    check_defect(&audit, DefectKind::AnchorMismatch, 1);
    check_diverged(&audit);
}

#[test]
fn crash_a_torn_tail_is_truncated_and_recorded() {
    let (_d, audit) = appended(3);
    let torn = br#"{"actor":"agent:main","data":{"i":3"#;
    let mut f = OpenOptions::new()
        .append(true)
        .open(audit.trail_path())
        .unwrap();
    f.write_all(torn).unwrap();
    drop(f);
    let r = check_clean(&audit, 3);
    assert_eq!(r.torn_tail_bytes, torn.len() as u64);

    let receipt = audit
        .append("agent:main", "tool.call", json!({"i": 4}))
        .unwrap();
    assert_eq!(receipt.seq, 5);
    let entries = audit.log(None, None).unwrap();
    let repair = &entries[3];
    assert_eq!(
        (repair.actor.as_str(), repair.kind.as_str()),
        ("system", KIND_REPAIR)
    );
    assert_eq!(repair.data["truncated_bytes"], json!(torn.len()));
    let r = check_clean(&audit, 5);
    assert_eq!(r.torn_tail_bytes, 0);
}

#[test]
fn crash_a_torn_first_line_on_fresh_handle() {
    let (_d, audit) = open();
    fs::write(audit.trail_path(), "{\"actor\":").unwrap();
    check_clean(&audit, 0);
    let fresh = Audit::open(audit.dir()).unwrap();
    assert_eq!(fresh.append("a", "k", json!({})).unwrap().seq, 2);
    assert_eq!(fresh.log(None, Some(KIND_REPAIR)).unwrap().len(), 1);
    check_clean(&audit, 2);
}

/// Appends one sealed entry after the anchor without moving it: a crash
/// between the entry's fsync and the anchor update.
fn lag_one(audit: &Audit) -> Entry {
    let r = audit.verify().unwrap();
    let e = Entry::seal(
        r.entries + 1,
        Timestamp::now(),
        "agent:main",
        "tool.call",
        json!({"lag": true}),
        &r.top,
    );
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .open(audit.trail_path())
        .unwrap();
    f.write_all(e.to_line().as_bytes()).unwrap();
    e
}

#[test]
fn crash_b_one_unanchored_entry_is_adopted() {
    let (_d, audit) = appended(3);
    let lagged = lag_one(&audit);
    let r = check_clean(&audit, 4);
    assert_eq!(r.unanchored, 1);
    assert_eq!(r.anchor.unwrap().count, 3);

    let receipt = audit.append("agent:main", "tool.call", json!({})).unwrap();
    assert_eq!(receipt.seq, 5);
    let entries = audit.log(None, None).unwrap();
    assert_eq!(entries[3], lagged);
    assert_eq!(entries[4].prev, lagged.hash);
    let r = check_clean(&audit, 5);
    assert_eq!(r.unanchored, 0);
}

#[test]
fn crash_b_at_the_first_entry() {
    let (_d, audit) = open();
    // The first append anchored genesis, then crashed after the line.
    audit.write_anchor(&Head::genesis()).unwrap();
    lag_one(&audit);
    assert_eq!(check_clean(&audit, 1).unanchored, 1);
    assert_eq!(
        Audit::open(audit.dir())
            .unwrap()
            .append("a", "k", json!({}))
            .unwrap()
            .seq,
        2
    );
    check_clean(&audit, 2);
}

#[test]
fn two_unanchored_entries_are_not_a_crash_state() {
    let (_d, audit) = appended(2);
    lag_one(&audit);
    lag_one(&audit);
    check_defect(&audit, DefectKind::AnchorMismatch, 4);
    check_diverged(&audit);
}

#[test]
fn reanchor_after_deleted_last_line_leaves_a_scar() {
    let (_d, audit) = appended(4);
    let anchor_before = audit.read_anchor().unwrap().anchor().unwrap();
    let mut lines = read_lines(&audit);
    lines.pop();
    write_lines(&audit, &lines);
    let real_top = audit.verify().unwrap().top;
    let real_len = fs::metadata(audit.trail_path()).unwrap().len();

    let r = audit
        .reanchor("human:cli", "  lost the last line  ")
        .unwrap();
    assert_eq!(r.note.seq, 4);
    assert_eq!(r.old_anchor.as_ref(), Some(&anchor_before));
    assert_eq!(
        r.real_top,
        Anchor {
            segment: 1,
            count: 3,
            top: real_top.clone(),
            len: Some(real_len),
        }
    );
    assert_eq!(
        r.resolved.as_ref().unwrap().kind,
        DefectKind::AnchorMismatch
    );

    let note = audit.log(Some(1), None).unwrap().remove(0);
    assert_eq!(
        (note.actor.as_str(), note.kind.as_str()),
        ("human:cli", KIND_NOTE)
    );
    assert_eq!(note.prev, real_top);
    assert_eq!(
        note.data,
        json!({
            "reanchor": true,
            "reason": "  lost the last line  ",
            "old_anchor": {"segment": 1, "count": 4, "top": anchor_before.top, "len": anchor_before.len},
            "real_top": {"segment": 1, "count": 3, "top": real_top, "len": real_len},
        })
    );
    check_clean(&audit, 4);
    assert_eq!(audit.append("a", "k", json!({})).unwrap().seq, 5);
    check_clean(&audit, 5);
}

#[test]
fn reanchor_on_a_clean_trail_records_a_note() {
    let (_d, audit) = appended(2);
    let r = audit.reanchor("human:cli", "routine").unwrap();
    assert_eq!(r.resolved, None);
    assert_eq!(r.note.seq, 3);
    check_clean(&audit, 3);
    // And on an empty one.
    let (_d, audit) = open();
    let r = audit.reanchor("human:cli", "first").unwrap();
    assert_eq!(r.old_anchor, None);
    assert_eq!(r.real_top.top, GENESIS);
    check_clean(&audit, 1);
}

#[test]
fn reanchor_with_a_torn_cut_last_line() {
    let (_d, audit) = appended(3);
    let bytes = fs::read(audit.trail_path()).unwrap();
    fs::write(audit.trail_path(), &bytes[..bytes.len() - 5]).unwrap();
    let r = audit.reanchor("human:cli", "disk trouble").unwrap();
    assert!(r.truncated_bytes > 0);
    assert_eq!(r.note.seq, 3);
    let note = audit.log(Some(1), None).unwrap().remove(0);
    assert_eq!(note.data["truncated_bytes"], json!(r.truncated_bytes));
    check_clean(&audit, 3);
}

#[test]
fn reanchor_refuses_a_middle_edit_and_needs_a_reason() {
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    lines[1] = lines[1].replacen("\"i\":1", "\"i\":7", 1);
    write_lines(&audit, &lines);
    let before = fs::read(audit.trail_path()).unwrap();
    match audit.reanchor("human:cli", "please") {
        Err(AuditError::Defect(d)) => assert_eq!((d.kind, d.line), (DefectKind::HashMismatch, 2)),
        other => panic!("expected Defect, got {other:?}"),
    }
    assert_eq!(fs::read(audit.trail_path()).unwrap(), before);

    for reason in ["", "   \n"] {
        match audit.reanchor("human:cli", reason) {
            Err(AuditError::Invalid { field, .. }) => assert_eq!(field, "reason"),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }
}

#[test]
fn log_filters_by_kind_prefix_and_limits_from_the_end() {
    let (_d, audit) = open();
    for (i, kind) in [
        "gate.decision",
        "tool.call",
        "gate",
        "gateway.open",
        "gate.decision",
        "gate.approval.asked",
    ]
    .iter()
    .enumerate()
    {
        audit.append("agent:main", kind, json!({"i": i})).unwrap();
    }
    let kinds = |v: Vec<Entry>| v.into_iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(kinds(audit.log(None, Some("gate")).unwrap()), [1, 3, 5, 6]);
    assert_eq!(kinds(audit.log(Some(2), Some("gate")).unwrap()), [5, 6]);
    assert_eq!(kinds(audit.log(Some(2), None).unwrap()), [5, 6]);
    assert_eq!(kinds(audit.log(Some(0), None).unwrap()), Vec::<u64>::new());
    assert_eq!(
        kinds(audit.log(None, Some("gate.decision")).unwrap()),
        [1, 5]
    );
    assert_eq!(
        kinds(audit.log(None, Some("gat")).unwrap()),
        Vec::<u64>::new()
    );
    assert_eq!(kinds(audit.log(Some(100), None).unwrap()).len(), 6);
}

#[test]
fn log_names_an_unreadable_line() {
    let (_d, audit) = appended(4);
    let mut lines = read_lines(&audit);
    lines[1] = "garbage".into();
    write_lines(&audit, &lines);
    assert_eq!(audit.log(Some(2), None).unwrap().len(), 2);
    match audit.log(None, None) {
        Err(AuditError::Unreadable(d)) => assert_eq!(d.line, 2),
        other => panic!("expected Unreadable, got {other:?}"),
    }
}

#[test]
fn log_reads_backwards_across_windows() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 3000);
    let audit = Audit::open(dir.path()).unwrap();
    let last = audit.log(Some(1500), None).unwrap();
    assert_eq!(last.len(), 1500);
    assert_eq!(last[0].seq, 1501);
    assert_eq!(last[1499].seq, 3000);
    assert_eq!(audit.log(None, None).unwrap().len(), 3000);
}

#[test]
fn concurrent_appends_from_threads_and_two_handles() {
    let (_d, audit) = open();
    let audit = Arc::new(audit);
    let other = Arc::new(Audit::open(audit.dir()).unwrap());
    let per_thread = 15;
    let mut handles = Vec::new();
    for t in 0..5 {
        let a = if t == 4 {
            Arc::clone(&other)
        } else {
            Arc::clone(&audit)
        };
        handles.push(std::thread::spawn(move || {
            (0..per_thread)
                .map(|i| {
                    a.append(&format!("agent:{t}"), "tool.call", json!({"i": i}))
                        .unwrap()
                        .seq
                })
                .collect::<Vec<_>>()
        }));
    }
    let mut seqs: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    seqs.sort_unstable();
    let n = 5 * per_thread;
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>());
    check_clean(&audit, n);
    // No entry lost: every (thread, i) pair is there once.
    let mut seen: Vec<(String, u64)> = audit
        .log(None, None)
        .unwrap()
        .into_iter()
        .map(|e| (e.actor, e.data["i"].as_u64().unwrap()))
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len() as u64, n);
}

#[test]
fn verify_walks_many_chunks_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2_000;
    let top = fill(dir.path(), n);
    let audit = Audit::open(dir.path()).unwrap();
    let r = check_clean(&audit, n);
    assert_eq!(r.top, top);
    assert!(fs::metadata(audit.trail_path()).unwrap().len() > 2 * CHUNK_BYTES as u64);

    // A defect deep in a late chunk, in the second thread's share.
    let mut lines = read_lines(&audit);
    for (i, kind) in [(1_777, DefectKind::HashMismatch), (17, DefectKind::BadLine)] {
        let line = &mut lines[i - 1];
        *line = if kind == DefectKind::BadLine {
            line.replacen("\"seq\":", "\"seq\": ", 1)
        } else {
            line.replacen("\"decision\":\"allow\"", "\"decision\":\"deny!\"", 1)
        };
        write_lines(&audit, &lines);
        check_defect(&audit, kind, i as u64);
    }
    // An append on top of the big clean trail works and stays clean.
    let dir2 = tempfile::tempdir().unwrap();
    fill(dir2.path(), n);
    let audit = Audit::open(dir2.path()).unwrap();
    assert_eq!(audit.append("a", "k", json!({})).unwrap().seq, n + 1);
    check_clean(&audit, n + 1);
}

#[test]
fn a_line_longer_than_a_chunk() {
    let (_d, audit) = appended(2);
    let big = "x".repeat(3 * CHUNK_BYTES);
    audit.append("a", "k", json!({"big": big})).unwrap();
    audit.append("a", "k", json!({})).unwrap();
    check_clean(&audit, 4);
    assert_eq!(audit.log(Some(2), None).unwrap()[0].data["big"], json!(big));
    let fresh = Audit::open(audit.dir()).unwrap();
    assert_eq!(fresh.append("a", "k", json!({})).unwrap().seq, 5);
}

#[test]
fn split_lines_keeps_whole_lines() {
    let text = b"aa\nbbbb\nc\ndddddd\ne\n";
    for n in 1..6 {
        let parts = split_lines(text, n);
        assert!(parts.len() <= n);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.ends_with(b"\n")));
    }
}

#[test]
fn steady_state_append_notices_another_writer() {
    let (_d, audit) = appended(2);
    let other = Audit::open(audit.dir()).unwrap();
    other.append("human:cli", KIND_NOTE, json!({})).unwrap();
    assert_eq!(audit.append("a", "k", json!({})).unwrap().seq, 4);
    assert_eq!(other.append("a", "k", json!({})).unwrap().seq, 5);
    check_clean(&audit, 5);
}

#[test]
fn floats_survive_the_round_trip_through_the_file() {
    // Found by proptest: without serde_json's `float_roundtrip`, these parse
    // back to a neighbouring f64, so the re-read line was not canonical.
    let (_d, audit) = open();
    for f in [
        -9.448683749006705e298,
        3.4985605676357397e182,
        0.1,
        -0.0,
        1e-300,
    ] {
        audit.append("a", "k", json!({"f": f, "a": [f]})).unwrap();
    }
    check_clean(&audit, 5);
    let fresh = Audit::open(audit.dir()).unwrap();
    assert_eq!(fresh.append("a", "k", json!({})).unwrap().seq, 6);
}

#[test]
fn data_too_deep_is_refused() {
    let (_d, audit) = open();
    let mut v = json!({});
    for _ in 0..line::MAX_DEPTH {
        v = json!({ "d": v });
    }
    match audit.append("a", "k", v) {
        Err(AuditError::Invalid { field, .. }) => assert_eq!(field, "data"),
        other => panic!("expected Invalid, got {other:?}"),
    }
    let mut v = json!({});
    for _ in 1..line::MAX_DEPTH {
        v = json!({ "d": v });
    }
    audit.append("a", "k", v).unwrap();
    check_clean(&audit, 1);
}
