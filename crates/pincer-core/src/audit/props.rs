#![allow(clippy::expect_used, clippy::unwrap_used)] // tests: failing loudly is right

//! Properties of the trail. Every append fsyncs for real, so each case
//! writes only a few entries and the case counts stay modest.

use super::tests::open;
use super::*;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

const ACTORS: &[&str] = &["agent:main", "human:cli", "hook:pre-tool", "system", "é✓🦀"];
const KINDS: &[&str] = &["gate.decision", "tool.call", "audit.note", "hw.i2c.read"];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z\"\\\\\n\u{1}\u{7f}é🦀 ]{0,8}".prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ]
}

fn data() -> impl Strategy<Value = Value> {
    let inner = leaf().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..3).prop_map(Value::from),
            btree_map("[a-zA-Z_é\"\n]{0,3}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    btree_map("[a-zA-Z_é]{1,4}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn sealed_line() -> impl Strategy<Value = Vec<u8>> {
    (
        append_spec(),
        1..1000u64,
        any::<[u8; 32]>(),
        0..4_000_000_000_000u64,
    )
        .prop_map(|((a, k, d), seq, prev, ms)| {
            let ts = Timestamp::parse(
                &humantime::format_rfc3339_millis(
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
                )
                .to_string(),
            )
            .unwrap();
            let mut line = Entry::seal(seq, ts, ACTORS[a], KINDS[k], d, &hex(&prev))
                .to_line()
                .into_bytes();
            line.pop();
            line
        })
}

fn append_spec() -> impl Strategy<Value = (usize, usize, Value)> {
    (0..ACTORS.len(), 0..KINDS.len(), data())
}

/// One deliberate break, in segment `.0` (an index into the segments).
#[derive(Debug, Clone)]
enum Tamper {
    /// Replace the byte at a position with a different byte.
    Byte(Index, Index, u8),
    DeleteLine(Index, Index),
    /// Swap line i and i + 1.
    SwapAdjacent(Index, Index),
    /// Cut the segment anywhere inside its last line or earlier (the final
    /// `\n` at least is gone).
    Truncate(Index, Index),
    /// Rewrite one entry's data and reseal its hash: the line is a valid
    /// entry, so only the next entry's link (or the anchor's top, for the
    /// last one) can tell.
    Reseal(Index, Index),
    /// Give one entry another actor without resealing: canonical form and
    /// links are kept, so only the hash check can tell.
    EditKeepLinks(Index, Index),
    /// Remove a whole segment file.
    DeleteSegment(Index),
}

fn tamper() -> impl Strategy<Value = Tamper> {
    let at = || (any::<Index>(), any::<Index>());
    prop_oneof![
        3 => (at(), 1..=255u8).prop_map(|((s, i), d)| Tamper::Byte(s, i, d)),
        1 => at().prop_map(|(s, i)| Tamper::DeleteLine(s, i)),
        1 => at().prop_map(|(s, i)| Tamper::SwapAdjacent(s, i)),
        1 => at().prop_map(|(s, i)| Tamper::Truncate(s, i)),
        2 => at().prop_map(|(s, i)| Tamper::Reseal(s, i)),
        2 => at().prop_map(|(s, i)| Tamper::EditKeepLinks(s, i)),
        1 => any::<Index>().prop_map(Tamper::DeleteSegment),
    ]
}

fn lines_of(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Applies `t` to one segment; returns that segment's number, or None when
/// the tamper does not apply (then the case is skipped).
fn apply(audit: &Audit, t: &Tamper) -> Option<u64> {
    let segs = segments::list_segments(audit.dir()).unwrap();
    let pick = |s: &Index| segs[s.index(segs.len())];
    let (n, path) = match t {
        Tamper::Byte(s, ..)
        | Tamper::DeleteLine(s, _)
        | Tamper::SwapAdjacent(s, _)
        | Tamper::Truncate(s, _)
        | Tamper::Reseal(s, _)
        | Tamper::EditKeepLinks(s, _)
        | Tamper::DeleteSegment(s) => (pick(s), audit.segment_path(pick(s))),
    };
    let bytes = fs::read(&path).unwrap();
    let mut lines = lines_of(&bytes);
    let out: Vec<u8> = match t {
        Tamper::Byte(_, i, delta) => {
            let mut b = bytes.clone();
            let at = i.index(b.len());
            b[at] = b[at].wrapping_add(*delta);
            b
        }
        Tamper::DeleteLine(_, i) => {
            lines.remove(i.index(lines.len()));
            lines.concat()
        }
        Tamper::SwapAdjacent(_, i) => {
            if lines.len() < 2 || lines[0] == lines[1] {
                return None;
            }
            let at = i.index(lines.len() - 1);
            lines.swap(at, at + 1);
            lines.concat()
        }
        Tamper::Truncate(_, i) => bytes[..i.index(bytes.len())].to_vec(),
        Tamper::Reseal(_, i) => {
            let at = i.index(lines.len());
            let e: Entry = serde_json::from_slice(&lines[at]).unwrap();
            let forged = Entry::seal(
                e.seq,
                e.ts,
                &e.actor,
                &e.kind,
                json!({"forged": true}),
                &e.prev,
            );
            if forged.hash == e.hash {
                return None;
            }
            lines[at] = forged.to_line().into_bytes();
            lines.concat()
        }
        Tamper::EditKeepLinks(_, i) => {
            let at = i.index(lines.len());
            let mut e: Entry = serde_json::from_slice(&lines[at]).unwrap();
            e.actor = if e.actor == "intruder" {
                "other".into()
            } else {
                "intruder".into()
            };
            lines[at] = e.to_line().into_bytes();
            lines.concat()
        }
        Tamper::DeleteSegment(_) => {
            if segs.len() == 1 {
                // Nothing left to seal: that is reanchor's case, tested apart.
                return None;
            }
            fs::remove_file(&path).unwrap();
            return Some(n);
        }
    };
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(&path, out).unwrap();
    Some(n)
}

/// True when the tamper changed what every append checks: the anchored
/// segment's length or its last line (or removed it).
fn append_must_see(before: &[u8], after: Option<&[u8]>) -> bool {
    let Some(after) = after else { return true };
    let body = &before[..before.len() - 1];
    let last_start = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
    after.len() != before.len() || after[last_start..] != before[last_start..]
}

fn refused(r: Result<Receipt>) -> bool {
    matches!(r, Err(AuditError::Diverged { .. }))
}

proptest! {
    // No file I/O here: these can afford many cases.
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The fast path accepts every line append writes, and agrees with the
    /// reference on it.
    #[test]
    fn fast_check_accepts_sealed_lines(line in sealed_line()) {
        let fast = line::fast_check(&line, &mut line::Scratch::default());
        prop_assert!(fast.is_some(), "fast path refused {}", String::from_utf8_lossy(&line));
        let reference = line::check_line_reference(&line, &mut Vec::new());
        prop_assert_eq!(fast, reference.ok());
        prop_assert!(fast.unwrap().hash_ok);
    }

    /// The fast path never accepts a line the reference rejects, nor
    /// disagrees about one it accepts: any byte changed, inserted or removed.
    #[test]
    fn fast_check_never_accepts_what_the_reference_rejects(
        line in sealed_line(),
        at in any::<Index>(),
        byte in any::<u8>(),
        op in 0..3u8,
    ) {
        let original = line.clone();
        let mut line = line;
        let i = at.index(line.len());
        match op {
            0 => line[i] = byte,
            1 => line.insert(i, byte),
            _ => { line.remove(i); }
        }
        // A warm timestamp cache, as in a real walk.
        let mut scratch = line::Scratch::default();
        let _ = line::fast_check(&original, &mut scratch);
        if let Some(fast) = line::fast_check(&line, &mut scratch) {
            let reference = line::check_line_reference(&line, &mut Vec::new());
            prop_assert_eq!(Some(fast), reference.ok(), "{}", String::from_utf8_lossy(&line));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn any_appends_verify(specs in vec(append_spec(), 0..5)) {
        let (_d, audit) = open();
        for (a, k, d) in &specs {
            audit.append(ACTORS[*a], KINDS[*k], d.clone()).unwrap();
        }
        let r = audit.verify().unwrap();
        prop_assert_eq!(&r.defect, &None);
        prop_assert_eq!(r.entries, specs.len() as u64);
        let logged = audit.log(None, None).unwrap();
        prop_assert_eq!(logged.len(), specs.len());
        for (e, (a, k, d)) in logged.iter().zip(&specs) {
            prop_assert_eq!(e.actor.as_str(), ACTORS[*a]);
            prop_assert_eq!(e.kind.as_str(), KINDS[*k]);
            prop_assert_eq!(&e.data, d);
            prop_assert_eq!(e.compute_hash(), e.hash.clone());
        }
        // A fresh handle agrees and can continue the chain.
        let fresh = Audit::open(audit.dir()).unwrap();
        let receipt = fresh.append("system", KIND_NOTE, Value::Object(Default::default())).unwrap();
        prop_assert_eq!(receipt.seq, specs.len() as u64 + 1);
        prop_assert_eq!(audit.verify().unwrap().defect, None);
    }

    /// Any tamper in any segment is found by verify; append refuses
    /// exactly the tampers that touch what it checks (the anchored
    /// segment's length and last line) and accepts the rest without hiding
    /// them; and `seal` always gets the trail going again, keeping the
    /// damaged files byte for byte.
    #[test]
    fn any_tamper_is_detected_refused_or_left_visible_and_sealable(
        specs in vec(append_spec(), 2..8),
        segment_bytes in 200..1500u64,
        t in tamper(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let options = AuditOptions { segment_bytes };
        let audit = Audit::open_with(&dir.path().join("audit"), options).unwrap();
        for (a, k, d) in &specs {
            audit.append(ACTORS[*a], KINDS[*k], d.clone()).unwrap();
        }
        let anchored = audit.read_anchor().unwrap().anchor().unwrap().segment;
        let before = fs::read(audit.segment_path(anchored)).unwrap();
        let Some(_n) = apply(&audit, &t) else {
            return Ok(());
        };
        let after = fs::read(audit.segment_path(anchored)).ok();
        let r = audit.verify().unwrap();
        prop_assert!(r.defect.is_some(), "undetected {:?}: {:?}", t, r);
        let fresh = Audit::open_with(audit.dir(), options).unwrap();
        let note = || serde_json::json!({});
        if append_must_see(&before, after.as_deref()) {
            prop_assert!(refused(fresh.append("human:cli", KIND_NOTE, note())), "fresh handle appended after {:?}", t);
            prop_assert!(refused(audit.append("human:cli", KIND_NOTE, note())), "writer appended after {:?}", t);
        } else {
            let got = fresh.append("human:cli", KIND_NOTE, note());
            prop_assert!(got.is_ok(), "append refused a tamper it does not check {:?}: {:?}", t, got);
        }
        // Still detected: the refusals wrote nothing, the append hid nothing.
        let d = audit.verify().unwrap().defect;
        prop_assert!(d.is_some());

        // The way back.
        let evidence: Vec<(u64, Vec<u8>)> = segments::list_segments(audit.dir())
            .unwrap()
            .into_iter()
            .map(|n| (n, fs::read(audit.segment_path(n)).unwrap()))
            .collect();
        let sealed = audit.seal("human:cli", "prop").unwrap();
        let r = audit.verify().unwrap();
        prop_assert_eq!(&r.defect, &None, "after sealing {:?}: {:#?}", t, r);
        prop_assert!(r.sealed.iter().all(|s| s.intact) && !r.sealed.is_empty());
        for (n, bytes) in evidence {
            prop_assert_eq!(fs::read(audit.segment_path(n)).unwrap(), bytes, "segment {} changed", n);
        }
        let next = fresh.append("human:cli", KIND_NOTE, note()).unwrap();
        prop_assert_eq!(next.seq, sealed.seal.seq + 1);
        prop_assert_eq!(audit.verify().unwrap().defect, None);
    }
}
