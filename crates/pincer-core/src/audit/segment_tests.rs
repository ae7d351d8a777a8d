#![allow(clippy::expect_used, clippy::unwrap_used)] // tests: failing loudly is right

//! Segments, the cheap open check, legacy anchors, seals, and reading
//! across segments.

use super::tests::{fill, fill_legacy, filler, ts};
use super::*;
use crate::audit::schema::Kind;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

/// A trail whose segments hold about three entries each.
const SMALL: AuditOptions = AuditOptions { segment_bytes: 700 };

fn small() -> (tempfile::TempDir, Audit) {
    let dir = tempfile::tempdir().unwrap();
    let audit = Audit::open_with(&dir.path().join("audit"), SMALL).unwrap();
    (dir, audit)
}

fn append_n(audit: &Audit, n: u64) -> Vec<Receipt> {
    (0..n)
        .map(|i| {
            audit
                .append("agent:main", "tool.call", json!({"i": i, "tool": "shell"}))
                .unwrap()
        })
        .collect()
}

fn segs(audit: &Audit) -> Vec<u64> {
    segments::list_segments(audit.dir()).unwrap()
}

fn lines_of(audit: &Audit, n: u64) -> Vec<String> {
    fs::read_to_string(audit.segment_path(n))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Writes a file even if it is read-only (tests may run unprivileged).
fn force_write(path: &Path, bytes: &[u8]) {
    if path.exists() {
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    }
    fs::write(path, bytes).unwrap();
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[track_caller]
fn clean(audit: &Audit) -> VerifyReport {
    let r = audit.verify().unwrap();
    assert_eq!(r.defect, None, "{r:#?}");
    r
}

#[track_caller]
fn defect(audit: &Audit) -> Defect {
    let r = audit.verify().unwrap();
    match r.defect {
        Some(d) => d,
        None => panic!("expected a defect: {r:#?}"),
    }
}

#[track_caller]
fn refused(audit: &Audit) -> String {
    let fresh = Audit::open_with(audit.dir(), audit.options()).unwrap();
    let before: Vec<_> = segs(audit)
        .iter()
        .map(|n| fs::read(audit.segment_path(*n)).unwrap())
        .collect();
    match fresh.append("human:cli", KIND_NOTE, json!({"note": "hi"})) {
        Err(AuditError::Diverged { detail }) => {
            let after: Vec<_> = segs(audit)
                .iter()
                .map(|n| fs::read(audit.segment_path(*n)).unwrap())
                .collect();
            assert_eq!(before, after, "a refused append wrote");
            detail
        }
        other => panic!("expected Diverged, got {other:?}"),
    }
}

#[test]
fn segments_rotate_and_the_chain_runs_through_them() {
    let (_d, audit) = small();
    let receipts = append_n(&audit, 12);
    let found = segs(&audit);
    assert!(found.len() >= 4, "{found:?}");
    assert_eq!(found, (1..=found.len() as u64).collect::<Vec<_>>());
    assert!(audit.trail_path().exists());
    assert!(audit.dir().join("trail.000002.jsonl").exists());
    for &n in &found {
        let len = fs::metadata(audit.segment_path(n)).unwrap().len();
        assert!(len <= SMALL.segment_bytes, "segment {n} is {len} bytes");
        let want = if n == *found.last().unwrap() {
            0o600
        } else {
            0o400
        };
        assert_eq!(mode(&audit.segment_path(n)), want, "segment {n}");
    }
    // The first entry of segment 2 links to the last of segment 1.
    let last_of_1: Entry = serde_json::from_str(lines_of(&audit, 1).last().unwrap()).unwrap();
    let first_of_2: Entry = serde_json::from_str(&lines_of(&audit, 2)[0]).unwrap();
    assert_eq!(first_of_2.prev, last_of_1.hash);
    assert_eq!(first_of_2.seq, last_of_1.seq + 1);

    let r = clean(&audit);
    assert_eq!((r.entries, r.last_seq, r.first_seq), (12, 12, 1));
    assert_eq!(r.segments, found.len() as u64);
    let a = r.anchor.unwrap();
    assert_eq!(a.segment, *found.last().unwrap());
    assert_eq!(a.top, receipts[11].hash);
    assert_eq!(
        a.len,
        Some(fs::metadata(audit.segment_path(a.segment)).unwrap().len())
    );
    // A fresh handle with other options continues the same chain.
    let other = Audit::open(audit.dir()).unwrap();
    assert_eq!(other.append("a", "k", json!({})).unwrap().seq, 13);
    assert_eq!(audit.log(None, None).unwrap().len(), 13);
    clean(&audit);
}

#[test]
fn an_entry_larger_than_a_segment_gets_one_to_itself() {
    let (_d, audit) = small();
    append_n(&audit, 1);
    audit
        .append("a", "k", json!({"big": "x".repeat(2000)}))
        .unwrap();
    append_n(&audit, 1);
    assert_eq!(segs(&audit), [1, 2, 3]);
    assert_eq!(lines_of(&audit, 2).len(), 1);
    clean(&audit);
}

#[test]
fn zero_segment_bytes_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    match Audit::open_with(dir.path(), AuditOptions { segment_bytes: 0 }) {
        Err(AuditError::Invalid { field, .. }) => assert_eq!(field, "segment_bytes"),
        other => panic!("{other:?}"),
    }
}

/// The anchor as written now, to put back after a simulated crash.
fn anchor_bytes(audit: &Audit) -> Vec<u8> {
    fs::read(audit.anchor_path()).unwrap()
}

#[test]
fn crash_an_entry_alone_in_a_new_segment_is_adopted() {
    let (_d, audit) = small();
    append_n(&audit, 3);
    // Append until one opens a new segment, then crash it after the
    // entry's fsync but before the anchor moved.
    let before = segs(&audit).len();
    loop {
        let saved = anchor_bytes(&audit);
        audit.append("a", "k", json!({})).unwrap();
        if segs(&audit).len() > before {
            fs::write(audit.anchor_path(), saved).unwrap();
            break;
        }
    }
    let r = clean(&audit);
    assert_eq!(r.unanchored, 1, "{r:#?}");
    let n = r.last_seq;
    let fresh = Audit::open_with(audit.dir(), SMALL).unwrap();
    assert_eq!(fresh.append("a", "k", json!({})).unwrap().seq, n + 1);
    let r = clean(&audit);
    assert_eq!(r.unanchored, 0);
}

#[test]
fn crash_a_torn_line_alone_in_a_new_segment_is_repaired() {
    let (_d, audit) = small();
    append_n(&audit, 3);
    let next = *segs(&audit).last().unwrap() + 1;
    fs::write(audit.segment_path(next), b"{\"actor\":\"agent").unwrap();
    let r = clean(&audit);
    assert_eq!(r.torn_tail_bytes, 15);
    let receipt = audit.append("a", "k", json!({})).unwrap();
    assert_eq!(receipt.seq, 5, "a repair entry comes first");
    let repair = &audit.log(Some(2), None).unwrap()[0];
    assert_eq!(repair.kind, KIND_REPAIR);
    assert_eq!(repair.data["truncated_bytes"], 15);
    let r = clean(&audit);
    assert_eq!(r.torn_tail_bytes, 0);
}

#[test]
fn crash_an_empty_new_segment_is_harmless() {
    let (_d, audit) = small();
    append_n(&audit, 3);
    let next = *segs(&audit).last().unwrap() + 1;
    fs::write(audit.segment_path(next), b"").unwrap();
    clean(&audit);
    let (_, mut follower) = audit.follow(Some(0), None, None).unwrap();
    // The next entry goes into it, whatever room the current one has left:
    // once a segment exists, nothing more is added to the one before.
    let r = audit.append("a", "k", json!({})).unwrap();
    assert_eq!(lines_of(&audit, next).len(), 1);
    assert_eq!(follower.poll().unwrap()[0].seq, r.seq);
    append_n(&audit, 6);
    clean(&audit);
}

#[test]
fn two_segments_past_the_anchor_are_refused() {
    let (_d, audit) = small();
    append_n(&audit, 3);
    let last = *segs(&audit).last().unwrap();
    fs::write(audit.segment_path(last + 2), b"").unwrap();
    let detail = refused(&audit);
    assert!(detail.contains("exists, but the anchor names"), "{detail}");
    let d = defect(&audit);
    assert_eq!(d.kind, DefectKind::MissingSegment, "{d}");
    assert_eq!(d.segment, last + 1);
}

#[test]
fn a_removed_last_line_of_a_later_segment_is_refused_not_healed() {
    let (_d, audit) = small();
    append_n(&audit, 8);
    let last = *segs(&audit).last().unwrap();
    let mut lines = lines_of(&audit, last);
    lines.pop();
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    force_write(&audit.segment_path(last), text.as_bytes());
    let detail = refused(&audit);
    assert!(detail.contains("was cut or lines were removed"), "{detail}");
    let d = defect(&audit);
    assert_eq!(d.kind, DefectKind::AnchorMismatch, "{d}");
    assert_eq!(d.segment, last);
    assert!(d.detail.contains("anchor says 8 entries"), "{d}");
    refused(&audit);
}

#[test]
fn an_extended_segment_is_refused() {
    let (_d, audit) = small();
    append_n(&audit, 2);
    let r = clean(&audit);
    // A valid entry that does not follow the anchor, added by hand.
    let e = Entry::seal(9, Timestamp::now(), "x", "k", json!({}), &r.top);
    let mut f = OpenOptions::new()
        .append(true)
        .open(audit.trail_path())
        .unwrap();
    f.write_all(e.to_line().as_bytes()).unwrap();
    let detail = refused(&audit);
    assert!(detail.contains("does not continue the chain"), "{detail}");
}

#[test]
fn an_edit_in_an_old_segment_is_verifys_to_find() {
    let (_d, audit) = small();
    append_n(&audit, 10);
    let mut lines = lines_of(&audit, 1);
    lines[1] = lines[1].replacen("\"i\":1", "\"i\":7", 1);
    force_write(&audit.trail_path(), (lines.join("\n") + "\n").as_bytes());
    let d = defect(&audit);
    assert_eq!(
        (d.kind, d.segment, d.line, d.seq),
        (DefectKind::HashMismatch, 1, 2, 2)
    );
    assert!(d.to_string().contains("trail.jsonl line 2"), "{d}");
    // Append does not walk the chain.
    assert!(audit.append("a", "k", json!({})).is_ok());
    // A walk from a later segment does not see it, and says where it began.
    let last = *segs(&audit).last().unwrap();
    let r = audit.verify_from(VerifyFrom::Segment(last)).unwrap();
    assert_eq!(r.defect, None, "{r:#?}");
    assert_eq!(r.from_segment, last);
    assert!(r.first_seq > 1);
    assert_eq!(r.last_seq, 11);
    // From a seq: the segment that holds it.
    let r = audit.verify_from(VerifyFrom::Seq(5)).unwrap();
    assert_eq!(r.defect, None, "{r:#?}");
    assert!(r.first_seq <= 5 && r.from_segment > 1, "{r:#?}");
    let r = audit.verify_from(VerifyFrom::Seq(1)).unwrap();
    assert_eq!(r.defect.unwrap().kind, DefectKind::HashMismatch);
    match audit.verify_from(VerifyFrom::Segment(last + 1)) {
        Err(AuditError::Invalid { field, .. }) => assert_eq!(field, "from_segment"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_removed_old_segment_is_named() {
    let (_d, audit) = small();
    append_n(&audit, 10);
    fs::remove_file(audit.segment_path(2)).unwrap();
    let d = defect(&audit);
    assert_eq!((d.kind, d.segment), (DefectKind::MissingSegment, 2));
    assert!(d.detail.contains("trail.000002.jsonl is missing"), "{d}");
    // --since past it still checks the link from the segment before.
    let r = audit.verify_from(VerifyFrom::Segment(3)).unwrap();
    assert_eq!(r.defect.unwrap().kind, DefectKind::MissingSegment);
    assert!(
        audit
            .verify_from(VerifyFrom::Segment(4))
            .unwrap()
            .is_clean()
    );
}

#[test]
fn a_torn_tail_in_an_old_segment_is_a_defect() {
    let (_d, audit) = small();
    append_n(&audit, 10);
    let mut bytes = fs::read(audit.trail_path()).unwrap();
    bytes.extend_from_slice(b"{\"actor\"");
    force_write(&audit.trail_path(), &bytes);
    let d = defect(&audit);
    assert_eq!((d.kind, d.segment), (DefectKind::BadLine, 1));
    assert!(d.detail.contains("only the last segment"), "{d}");
}

#[test]
fn a_trail_from_before_segments_is_upgraded_by_its_first_append() {
    let dir = tempfile::tempdir().unwrap();
    let top = fill_legacy(dir.path(), 50);
    let audit = Audit::open_with(dir.path(), SMALL).unwrap();
    let r = clean(&audit);
    assert_eq!(r.anchor.as_ref().unwrap().len, None);
    assert_eq!(r.top, top);
    let receipt = audit.append("a", "k", json!({})).unwrap();
    assert_eq!(receipt.seq, 51);
    let a = audit.read_anchor().unwrap().anchor().unwrap();
    // Segment 1 stays where it was, whatever its size; the new entry
    // starts segment 2.
    assert_eq!((a.segment, a.count), (2, 51));
    assert!(a.len.is_some());
    let r = clean(&audit);
    assert_eq!(r.entries, 51);
}

#[test]
fn a_legacy_trail_keeps_its_crash_states_and_refusals() {
    // A lag: adopted, and the anchor upgraded.
    let dir = tempfile::tempdir().unwrap();
    let top = fill_legacy(dir.path(), 3);
    let audit = Audit::open(dir.path()).unwrap();
    let e = Entry::seal(4, ts("2026-11-30T11:43:46.000Z"), "a", "k", json!({}), &top);
    let mut f = OpenOptions::new()
        .append(true)
        .open(audit.trail_path())
        .unwrap();
    f.write_all(e.to_line().as_bytes()).unwrap();
    assert_eq!(clean(&audit).unanchored, 1);
    assert_eq!(audit.append("a", "k", json!({})).unwrap().seq, 5);
    assert_eq!(clean(&audit).unanchored, 0);

    // A removed last line.
    let dir = tempfile::tempdir().unwrap();
    fill_legacy(dir.path(), 3);
    let audit = Audit::open(dir.path()).unwrap();
    let text = fs::read_to_string(audit.trail_path()).unwrap();
    let cut: Vec<&str> = text.lines().take(2).collect();
    fs::write(audit.trail_path(), cut.join("\n") + "\n").unwrap();
    refused(&audit);
    assert_eq!(defect(&audit).kind, DefectKind::AnchorMismatch);

    // A torn tail.
    let dir = tempfile::tempdir().unwrap();
    fill_legacy(dir.path(), 3);
    let audit = Audit::open(dir.path()).unwrap();
    let mut f = OpenOptions::new()
        .append(true)
        .open(audit.trail_path())
        .unwrap();
    f.write_all(b"{\"actor\":").unwrap();
    assert_eq!(audit.append("a", "k", json!({})).unwrap().seq, 5);
    clean(&audit);
}

/// Damages the last line of the current segment so append refuses, as in
/// the CLI story.
fn damage_last_line(audit: &Audit) -> u64 {
    let last = *segs(audit).last().unwrap();
    let path = audit.segment_path(last);
    let mut bytes = fs::read(&path).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 0x01;
    force_write(&path, &bytes);
    last
}

#[test]
fn seal_keeps_the_damaged_segment_and_the_trail_goes_on() {
    let (_d, audit) = small();
    append_n(&audit, 6);
    assert_eq!(lines_of(&audit, *segs(&audit).last().unwrap()).len(), 2);
    let damaged = damage_last_line(&audit);
    refused(&audit);
    let d = defect(&audit);
    assert_eq!(d.segment, damaged);
    let evidence = fs::read(audit.segment_path(damaged)).unwrap();

    // No reason, no seal.
    match audit.seal("human:cli", "  ") {
        Err(AuditError::Invalid { field, .. }) => assert_eq!(field, "reason"),
        other => panic!("{other:?}"),
    }
    let out = audit.seal("human:cli", "SD card bit flip").unwrap();
    assert_eq!(out.segment, damaged + 1);
    assert!(!out.finished_interrupted);
    assert_eq!(out.defect.as_ref(), Some(&d));
    assert_eq!(out.sealed.len(), 1);
    let s = &out.sealed[0];
    assert_eq!((s.segment, s.bytes), (damaged, evidence.len() as u64));
    assert_eq!(
        s.sha256.as_deref(),
        Some(crate::canonical::sha256_hex(&evidence).as_str())
    );
    // The evidence is where it was, unchanged and read-only.
    assert_eq!(fs::read(audit.segment_path(damaged)).unwrap(), evidence);
    assert_eq!(mode(&audit.segment_path(damaged)), 0o400);
    // The seal is the first entry of the new segment, bound to the file.
    let seal: Entry = serde_json::from_str(&lines_of(&audit, out.segment)[0]).unwrap();
    assert_eq!(
        (seal.kind.as_str(), seal.actor.as_str()),
        (KIND_SEAL, "human:cli")
    );
    assert_eq!(seal.prev, s.sha256.clone().unwrap());
    assert_eq!(seal.data["reason"], "SD card bit flip");
    assert_eq!(seal.data["defect"]["kind"], d.kind.as_str());
    assert!(seal.seq > 6);

    // Appends work again, and verify reports the seal from now on.
    let next = audit
        .append("human:cli", KIND_NOTE, json!({"note": "after"}))
        .unwrap();
    assert_eq!(next.seq, seal.seq + 1);
    let r = clean(&audit);
    assert_eq!(r.sealed.len(), 1, "{r:#?}");
    let sr = &r.sealed[0];
    assert!(sr.intact);
    assert_eq!((sr.seal_seq, sr.by.as_str()), (seal.seq, "human:cli"));
    assert_eq!(sr.reason, "SD card bit flip");
    assert_eq!(sr.defect["kind"], d.kind.as_str());
    // The log skips the sealed segment; the seal entry says what it was.
    let log = audit.log(None, None).unwrap();
    assert!(log.iter().any(|e| e.kind == KIND_SEAL));
    let sealed_seqs: Vec<u64> = lines_of(&audit, damaged)
        .iter()
        .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
        .map(|e| e.seq)
        .collect();
    assert!(!sealed_seqs.is_empty());
    assert!(
        log.iter().all(|e| !sealed_seqs.contains(&e.seq)),
        "the log shows entries of the sealed segment"
    );
    let since: Vec<u64> = audit
        .log_since(None, None, Some(Since::Seq(1)))
        .unwrap()
        .into_iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(since, log.iter().map(|e| e.seq).collect::<Vec<_>>());
    // Nothing left to seal.
    assert!(matches!(
        audit.seal("human:cli", "again"),
        Err(AuditError::NothingToSeal(_))
    ));
}

#[test]
fn a_sealed_file_that_changes_breaks_the_seal_and_can_be_sealed_again() {
    let (_d, audit) = small();
    append_n(&audit, 5);
    let damaged = damage_last_line(&audit);
    audit.seal("human:cli", "first").unwrap();
    append_n(&audit, 1);
    let path = audit.segment_path(damaged);
    let mut bytes = fs::read(&path).unwrap();
    bytes[5] ^= 0x01;
    force_write(&path, &bytes);
    let r = audit.verify().unwrap();
    let d = r.defect.clone().unwrap();
    assert_eq!((d.kind, d.segment), (DefectKind::SealBroken, damaged));
    assert!(!r.sealed[0].intact);
    // Append does not hash sealed files: it works; verify stays red.
    append_n(&audit, 1);
    let out = audit
        .seal("human:cli", "someone touched the evidence")
        .unwrap();
    assert_eq!(out.sealed.first().unwrap().segment, damaged);
    let r = clean(&audit);
    assert_eq!(r.sealed.len(), 1, "the wider seal takes the first in");
    assert_eq!(r.sealed[0].seal_seq, out.seal.seq);
}

#[test]
fn seal_of_an_old_segment_takes_every_later_one_with_it() {
    let (_d, audit) = small();
    append_n(&audit, 10);
    // Cut a line out of segment 2: length changes, but append only checks
    // the last segment.
    let mut lines = lines_of(&audit, 2);
    lines.remove(0);
    force_write(&audit.segment_path(2), (lines.join("\n") + "\n").as_bytes());
    assert!(audit.append("a", "k", json!({})).is_ok());
    let last = *segs(&audit).last().unwrap();
    assert_eq!(defect(&audit).segment, 2);
    let out = audit.seal("human:cli", "lost a line").unwrap();
    assert_eq!(
        out.sealed.iter().map(|s| s.segment).collect::<Vec<_>>(),
        (2..=last).collect::<Vec<_>>()
    );
    assert_eq!(out.segment, last + 1);
    let r = clean(&audit);
    assert_eq!(r.sealed.len(), 1);
    assert_eq!(r.entries, lines_of(&audit, 1).len() as u64 + 1);
    append_n(&audit, 5);
    clean(&audit);
}

#[test]
fn seal_of_a_missing_segment_records_it_missing() {
    let (_d, audit) = small();
    append_n(&audit, 10);
    fs::remove_file(audit.segment_path(2)).unwrap();
    let out = audit.seal("human:cli", "the file is gone").unwrap();
    assert_eq!(out.sealed[0].sha256, None);
    let r = clean(&audit);
    assert!(r.sealed[0].intact);
}

#[test]
fn an_interrupted_seal_is_finished_by_the_next_append_or_seal() {
    for finish_with_seal in [false, true] {
        let (_d, audit) = small();
        append_n(&audit, 5);
        damage_last_line(&audit);
        let before = anchor_bytes(&audit);
        let out = audit.seal("human:cli", "flip").unwrap();
        // The crash: the seal line is on disk, the anchor never moved.
        fs::write(audit.anchor_path(), &before).unwrap();
        let r = clean(&audit);
        assert_eq!(r.unanchored, 1, "{r:#?}");
        if finish_with_seal {
            let again = audit.seal("human:cli", "flip").unwrap();
            assert!(again.finished_interrupted);
            assert_eq!(again.seal, out.seal);
        }
        let next = audit.append("a", "k", json!({})).unwrap();
        assert_eq!(next.seq, out.seal.seq + 1);
        let r = clean(&audit);
        assert_eq!((r.unanchored, r.sealed.len()), (0, 1));
    }
}

#[test]
fn a_forged_seal_is_not_a_seal() {
    let (_d, audit) = small();
    append_n(&audit, 5);
    damage_last_line(&audit);
    let out = audit.seal("human:cli", "flip").unwrap();
    // Edit the seal's reason: its hash no longer matches, so it seals
    // nothing, and the damaged segment is walked again.
    let path = audit.segment_path(out.segment);
    let text = fs::read_to_string(&path).unwrap().replace("flip", "flop");
    force_write(&path, text.as_bytes());
    let d = defect(&audit);
    assert_ne!(d.segment, out.segment, "{d}");
    assert!(audit.verify().unwrap().sealed.is_empty());
}

#[test]
fn log_reads_backwards_across_segments_and_since_forwards() {
    let (_d, audit) = small();
    append_n(&audit, 20);
    assert!(segs(&audit).len() > 4);
    let seqs = |v: Vec<Entry>| v.into_iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(audit.log(Some(7), None).unwrap()),
        (14..=20).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(audit.log(None, None).unwrap()),
        (1..=20).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(audit.log_since(None, None, Some(Since::Seq(12))).unwrap()),
        (12..=20).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(
            audit
                .log_since(Some(2), None, Some(Since::Seq(12)))
                .unwrap()
        ),
        [19, 20]
    );
    assert_eq!(seqs(audit.entries_between(5, 9).unwrap()), [5, 6, 7, 8, 9]);
    let t = audit.log(Some(1), None).unwrap()[0].ts;
    let recent = audit.log_since(None, None, Some(Since::Time(t))).unwrap();
    assert!(recent.iter().all(|e| e.ts >= t) && !recent.is_empty());
    let future = Timestamp::parse("2999-01-01T00:00:00.000Z").unwrap();
    assert!(
        audit
            .log_since(None, None, Some(Since::Time(future)))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_follower_sees_new_entries_across_rotations_and_seals() {
    let (_d, audit) = small();
    append_n(&audit, 2);
    let (first, mut f) = audit.follow(Some(1), None, None).unwrap();
    assert_eq!(first.len(), 1);
    assert!(f.poll().unwrap().is_empty());
    append_n(&audit, 9);
    let got: Vec<u64> = f.poll().unwrap().into_iter().map(|e| e.seq).collect();
    assert_eq!(got, (3..=11).collect::<Vec<_>>());
    // A torn tail is not shown; what replaces it is.
    let last = *segs(&audit).last().unwrap();
    let mut w = OpenOptions::new()
        .append(true)
        .open(audit.segment_path(last))
        .unwrap();
    w.write_all(b"{\"actor\":\"torn").unwrap();
    assert!(f.poll().unwrap().is_empty());
    audit.append("a", "k", json!({})).unwrap();
    let got = f.poll().unwrap();
    assert_eq!(
        got.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        [KIND_REPAIR, "k"]
    );
    // A kind filter, and a seal.
    let (_, mut notes) = audit.follow(Some(0), Some("audit"), None).unwrap();
    damage_last_line(&audit);
    audit.seal("human:cli", "x").unwrap();
    audit.append("a", "tool.call", json!({})).unwrap();
    audit.append("human:cli", KIND_NOTE, json!({})).unwrap();
    let kinds: Vec<String> = notes.poll().unwrap().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [KIND_SEAL, KIND_NOTE]);
}

#[test]
fn every_kind_constant_is_in_the_table_and_families_match() {
    for k in [KIND_NOTE, KIND_REPAIR, KIND_SEAL] {
        assert!(Kind::parse(k).is_some(), "{k}");
    }
    for f in ["gate", "gate.decision", "approval", "audit", "hw", "memory"] {
        assert!(is_known_kind(f), "{f}");
    }
    for f in ["bogus", "gat", "", "gate.", "gate.decision.x"] {
        assert!(!is_known_kind(f), "{f}");
    }
    for k in Kind::ALL {
        validate_label("kind", k.as_str()).unwrap();
    }
}

#[test]
fn bulk_written_trails_verify_and_continue() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_new_trail(dir.path(), SMALL, filler(30)).unwrap();
    assert!(a.segment > 3);
    let audit = Audit::open_with(dir.path(), SMALL).unwrap();
    let r = clean(&audit);
    assert_eq!((r.entries, r.top.as_str()), (30, a.top.as_str()));
    assert_eq!(audit.append("a", "k", json!({})).unwrap().seq, 31);
    clean(&audit);
    // Never over an existing trail.
    assert!(matches!(
        write_new_trail(dir.path(), SMALL, filler(1)),
        Err(AuditError::Invalid { field: "dir", .. })
    ));
    let _ = fill;
}

#[test]
fn crash_after_the_genesis_anchor_before_the_first_line() {
    let (_d, audit) = small();
    audit.write_anchor(&Head::genesis()).unwrap();
    assert!(!audit.trail_path().exists());
    clean(&audit);
    assert_eq!(audit.append("a", "k", json!({})).unwrap().seq, 1);
    clean(&audit);
    assert_eq!(audit.options(), SMALL);
}

#[test]
fn a_tail_in_the_anchored_segment_with_a_next_one_is_refused_untouched() {
    let (_d, audit) = small();
    append_n(&audit, 3);
    let last = *segs(&audit).last().unwrap();
    let r = clean(&audit);
    // A torn tail in the anchored segment, and an entry in the next one:
    // no crash leaves both. Nothing may be truncated or adopted.
    let mut f = OpenOptions::new()
        .append(true)
        .open(audit.segment_path(last))
        .unwrap();
    f.write_all(b"{\"actor\":\"tor").unwrap();
    let e = Entry::seal(
        r.last_seq + 1,
        Timestamp::now(),
        "a",
        "k",
        json!({}),
        &r.top,
    );
    fs::write(audit.segment_path(last + 1), e.to_line()).unwrap();
    let anchor = anchor_bytes(&audit);
    let detail = refused(&audit);
    assert!(detail.contains("exists too"), "{detail}");
    assert_eq!(anchor_bytes(&audit), anchor, "the anchor moved");
}

#[test]
fn a_follower_can_start_on_a_trail_with_no_entries_yet() {
    let (_d, audit) = small();
    let (first, mut f) = audit.follow(None, None, None).unwrap();
    assert!(first.is_empty());
    assert!(f.poll().unwrap().is_empty());
    append_n(&audit, 2);
    assert_eq!(f.poll().unwrap().len(), 2);
}

#[test]
fn a_raw_delete_character_in_a_label_is_refused_by_both_line_checks() {
    // serde_json writes U+007F raw, so only the label check can refuse it.
    let e = Entry::seal(
        1,
        ts("2026-11-30T11:43:45.123Z"),
        "a\u{7f}b",
        "k",
        json!({}),
        GENESIS,
    );
    let line = e.to_line();
    let line = line.trim_end().as_bytes();
    assert!(line.contains(&0x7f));
    assert!(line::check_line_reference(line, &mut Vec::new()).is_err());
    assert_eq!(line::fast_check(line, &mut line::Scratch::default()), None);
    assert!(check_line(line, &mut line::Scratch::default()).is_err());
}

#[test]
fn escaped_keys_out_of_order_are_not_canonical_for_either_check() {
    let e = Entry::seal(
        1,
        ts("2026-11-30T11:43:45.123Z"),
        "a",
        "k",
        json!({"x\u{1}": 1, "x\u{2}": 2}),
        GENESIS,
    );
    let good = e.to_line();
    let good = good.trim_end();
    assert!(good.contains(r#""x\u0001":1,"x\u0002":2"#), "{good}");
    assert!(line::fast_check(good.as_bytes(), &mut line::Scratch::default()).is_some());
    let bad = good.replace(r#""x\u0001":1,"x\u0002":2"#, r#""x\u0002":2,"x\u0001":1"#);
    assert!(line::check_line_reference(bad.as_bytes(), &mut Vec::new()).is_err());
    assert_eq!(
        line::fast_check(bad.as_bytes(), &mut line::Scratch::default()),
        None
    );
}

#[test]
fn recent_reads_no_further_back_than_asked_across_segments() {
    let (_d, audit) = small();
    audit
        .append("agent:main", "gate.decision", json!({"n": 1}))
        .unwrap();
    append_n(&audit, 15);
    audit
        .append("human:owner", "approval.answer", json!({"n": 2}))
        .unwrap();
    append_n(&audit, 3);
    assert!(segs(&audit).len() > 4);
    let kinds = ["gate.decision", "approval.answer"];
    let seqs = |r: &Recent| r.entries.iter().map(|e| e.seq).collect::<Vec<_>>();
    // Within the newest 10 entries: the answer only, and older ones unread.
    let r = audit.recent(8, 10, &kinds).unwrap();
    assert_eq!(seqs(&r), [17]);
    assert!(!r.complete);
    // Far enough back: both, and the scan reached the start.
    let r = audit.recent(8, 1000, &kinds).unwrap();
    assert_eq!(seqs(&r), [1, 17]);
    assert!(r.complete);
    // The limit reached is complete, however short the scan.
    let r = audit.recent(1, 10, &kinds).unwrap();
    assert_eq!(seqs(&r), [17]);
    assert!(r.complete);
    assert!(audit.recent(0, 10, &kinds).unwrap().entries.is_empty());
}
