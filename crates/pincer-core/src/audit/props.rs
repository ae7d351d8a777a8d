#![allow(clippy::expect_used, clippy::unwrap_used)] // tests: failing loudly is right

//! Properties of the trail. Every append fsyncs for real, so each case
//! writes only a few entries and the case counts stay modest.

use super::tests::{open, read_lines, write_lines};
use super::*;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::Index;

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

#[derive(Debug, Clone)]
enum Tamper {
    /// Replace the byte at a position with a different byte.
    Byte(Index, u8),
    DeleteLine(Index),
    /// Swap line i and i + 1.
    SwapAdjacent(Index),
    /// Cut the file anywhere inside the last line or earlier (the final
    /// `\n` at least is gone).
    Truncate(Index),
}

fn tamper() -> impl Strategy<Value = Tamper> {
    prop_oneof![
        3 => (any::<Index>(), 1..=255u8).prop_map(|(i, d)| Tamper::Byte(i, d)),
        1 => any::<Index>().prop_map(Tamper::DeleteLine),
        1 => any::<Index>().prop_map(Tamper::SwapAdjacent),
        1 => any::<Index>().prop_map(Tamper::Truncate),
    ]
}

fn apply(audit: &Audit, t: &Tamper) {
    let path = audit.trail_path();
    match t {
        Tamper::Byte(i, delta) => {
            let mut bytes = fs::read(&path).unwrap();
            let at = i.index(bytes.len());
            bytes[at] = bytes[at].wrapping_add(*delta);
            fs::write(&path, bytes).unwrap();
        }
        Tamper::DeleteLine(i) => {
            let mut lines = read_lines(audit);
            lines.remove(i.index(lines.len()));
            write_lines(audit, &lines);
        }
        Tamper::SwapAdjacent(i) => {
            let mut lines = read_lines(audit);
            let at = i.index(lines.len() - 1);
            lines.swap(at, at + 1);
            write_lines(audit, &lines);
        }
        Tamper::Truncate(i) => {
            let bytes = fs::read(&path).unwrap();
            let cut = i.index(bytes.len());
            fs::write(&path, &bytes[..cut]).unwrap();
        }
    }
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

    #[test]
    fn any_tamper_is_detected_and_refused(
        specs in vec(append_spec(), 2..5),
        t in tamper(),
    ) {
        let (_d, audit) = open();
        for (a, k, d) in &specs {
            audit.append(ACTORS[*a], KINDS[*k], d.clone()).unwrap();
        }
        apply(&audit, &t);
        let r = audit.verify().unwrap();
        prop_assert!(r.defect.is_some(), "undetected {:?}: {:?}", t, r);
        let fresh = Audit::open(audit.dir()).unwrap();
        prop_assert!(refused(fresh.append("human:cli", KIND_NOTE, serde_json::json!({}))), "fresh handle appended after {:?}", t);
        prop_assert!(refused(audit.append("human:cli", KIND_NOTE, serde_json::json!({}))), "writer appended after {:?}", t);
        // Still detected: the refusals wrote nothing.
        prop_assert!(audit.verify().unwrap().defect.is_some());
    }
}
