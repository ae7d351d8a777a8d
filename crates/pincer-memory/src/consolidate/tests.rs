#![allow(clippy::expect_used, clippy::unwrap_used)] // tests: failing loudly is right

use super::*;
use pincer_core::audit::KIND_NOTE;
use pincer_core::fsutil::write_atomic;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

const ACTOR: &str = "agent:pincer";

/// A page store for tests: pages it holds, and how often it was asked to
/// write.
trait TestSink: PageSink {
    fn pages(&self) -> BTreeMap<String, SessionPage>;
    fn writes(&self) -> usize;
    /// Removes a page, as a person deleting its file would.
    fn delete(&self, id: &str);
    /// From now on, page writes fail (writing nothing) or work again.
    fn set_failing(&self, failing: bool);
}

/// In memory.
#[derive(Default)]
struct MemSink {
    pages: Mutex<BTreeMap<String, SessionPage>>,
    writes: Mutex<usize>,
    failing: Mutex<bool>,
}

impl PageSink for MemSink {
    fn write_page(&self, page: &SessionPage) -> Result<(), String> {
        if *self.failing.lock().unwrap() {
            return Err("no space left on device".into());
        }
        *self.writes.lock().unwrap() += 1;
        self.pages
            .lock()
            .unwrap()
            .insert(page.id.clone(), page.clone());
        Ok(())
    }
    fn page_exists(&self, id: &str) -> Result<bool, String> {
        Ok(self.pages.lock().unwrap().contains_key(id))
    }
}

impl TestSink for MemSink {
    fn pages(&self) -> BTreeMap<String, SessionPage> {
        self.pages.lock().unwrap().clone()
    }
    fn writes(&self) -> usize {
        *self.writes.lock().unwrap()
    }
    fn delete(&self, id: &str) {
        assert!(self.pages.lock().unwrap().remove(id).is_some(), "{id}");
    }
    fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap() = failing;
    }
}

/// `pages/<id>.md` written with `write_atomic`; with an audit trail, it
/// records a `memory.write` per page, as `pincer-memory` will.
struct FileSink {
    dir: PathBuf,
    audit: Option<Arc<Audit>>,
    writes: Mutex<usize>,
    failing: Mutex<bool>,
}

impl FileSink {
    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.md"))
    }
}

impl PageSink for FileSink {
    fn write_page(&self, page: &SessionPage) -> Result<(), String> {
        if *self.failing.lock().unwrap() {
            return Err("no space left on device".into());
        }
        *self.writes.lock().unwrap() += 1;
        fs::create_dir_all(&self.dir).map_err(|e| e.to_string())?;
        let text = format!(
            "---\nid: {}\ntitle: {}\ntags: {}\nsource: {}\n---\n{}",
            page.id,
            page.title,
            page.tags.join(", "),
            page.source,
            page.body
        );
        write_atomic(&self.path(&page.id), text.as_bytes()).map_err(|e| e.to_string())?;
        if let Some(audit) = &self.audit {
            audit
                .append(
                    "system",
                    KIND_MEMORY_WRITE,
                    json!({"id": page.id, "title": page.title, "source": page.source}),
                )
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
    fn page_exists(&self, id: &str) -> Result<bool, String> {
        Ok(self.path(id).exists())
    }
}

impl TestSink for FileSink {
    fn pages(&self) -> BTreeMap<String, SessionPage> {
        let mut out = BTreeMap::new();
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return out;
        };
        for f in dir {
            let path = f.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let Some(id) = name.strip_suffix(".md") else {
                panic!("stray file in pages/: {name}");
            };
            let text = fs::read_to_string(&path).unwrap();
            let (front, body) = text.split_once("\n---\n").unwrap();
            let field = |k: &str| {
                front
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{k}: ")))
                    .unwrap()
                    .to_string()
            };
            out.insert(
                id.to_string(),
                SessionPage {
                    id: field("id"),
                    title: field("title"),
                    tags: field("tags").split(", ").map(String::from).collect(),
                    source: field("source"),
                    body: body.to_string(),
                },
            );
        }
        out
    }
    fn writes(&self) -> usize {
        *self.writes.lock().unwrap()
    }
    fn delete(&self, id: &str) {
        fs::remove_file(self.path(id)).unwrap();
    }
    fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap() = failing;
    }
}

struct Fx {
    dir: tempfile::TempDir,
    audit: Arc<Audit>,
    sink: Box<dyn TestSink>,
    wm: PathBuf,
}

#[derive(Clone, Copy, Debug)]
enum SinkKind {
    Mem,
    /// Files, and a `memory.write` entry per page.
    FileAudited,
}

fn fx(kind: SinkKind) -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let audit = Arc::new(Audit::open(&dir.path().join("audit")).unwrap());
    let sink: Box<dyn TestSink> = match kind {
        SinkKind::Mem => Box::<MemSink>::default(),
        SinkKind::FileAudited => Box::new(FileSink {
            dir: dir.path().join("memory/pages"),
            audit: Some(audit.clone()),
            writes: Mutex::new(0),
            failing: Mutex::new(false),
        }),
    };
    let wm = dir.path().join("memory/consolidation.json");
    Fx {
        dir,
        audit,
        sink,
        wm,
    }
}

impl Fx {
    fn try_run(&self, crash: Option<CrashPoint>) -> Result<Consolidated> {
        consolidate_with_crash(&self.audit, &*self.sink, &self.wm, ACTOR, crash)
    }
    fn run(&self) -> Consolidated {
        consolidate(&self.audit, &*self.sink, &self.wm, ACTOR).expect("consolidate")
    }
    fn entries(&self) -> Vec<Entry> {
        self.audit.log(None, None).unwrap()
    }
    fn records(&self) -> Vec<Entry> {
        self.audit.log(None, Some(KIND_CONSOLIDATE)).unwrap()
    }
    fn watermark_bytes(&self) -> Option<Vec<u8>> {
        fs::read(&self.wm).ok()
    }
    fn watermark(&self) -> Watermark {
        read_watermark(&self.wm).unwrap()
    }
    fn last_seq(&self) -> u64 {
        self.audit.verify().unwrap().last_seq
    }
    /// One gate-admitted, successful tool call plus a hook verdict.
    fn activity(&self, call: &str) {
        let a = &self.audit;
        a.append(
            "hook:lint",
            "hook.verdict",
            json!({"hook": "lint", "kind": "interceptor", "session": "s", "call_id": call, "tool": "shell", "verdict": "allow"}),
        )
        .unwrap();
        a.append(
            ACTOR,
            "gate.decision",
            json!({"session": "s", "call_id": call, "tool": "shell", "arguments": {"command": "ls"},
                   "risk": "low", "why": "reads", "decision": "allowed", "by": "policy"}),
        )
        .unwrap();
        a.append(
            ACTOR,
            "tool.call",
            json!({"session": "s", "call_id": call, "tool": "shell", "status": "ok", "result_bytes": 3}),
        )
        .unwrap();
    }
}

/// The range a `session-<from>-<to>` page id names.
fn id_range(id: &str) -> (u64, u64) {
    let (a, b) = id
        .strip_prefix("session-")
        .unwrap()
        .split_once('-')
        .unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

/// The seqs a page's lines cite.
fn cited(page: &SessionPage) -> Vec<u64> {
    page.body
        .lines()
        .filter_map(|l| l.strip_prefix("- [seq "))
        .map(|l| l.split(']').next().unwrap().parse().unwrap())
        .collect()
}

/// Nothing lost, nothing duplicated: one record per page, the pages'
/// ranges are disjoint and cover every non-own entry up to the watermark,
/// no page cites an own entry, the watermark is at the last range's end
/// with that entry's hash, and one more run does nothing.
fn assert_consistent(fx: &Fx) {
    let entries = fx.entries();
    let pages = fx.sink.pages();
    let records = fx.records();
    let recorded: Vec<String> = records
        .iter()
        .map(|r| r.data["page"].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<&String> = recorded.iter().collect();
    assert_eq!(
        unique.len(),
        recorded.len(),
        "a page recorded twice: {recorded:?}"
    );
    assert_eq!(
        unique.into_iter().cloned().collect::<BTreeSet<_>>(),
        pages.keys().cloned().collect::<BTreeSet<_>>(),
        "pages and records differ"
    );
    for r in &records {
        assert_eq!(r.actor, ACTOR);
        assert_eq!(r.data["to_seq"], r.data["watermark_to"]);
        let (from, to) = id_range(r.data["page"].as_str().unwrap());
        assert_eq!(r.data["from_seq"], from);
        assert_eq!(r.data["to_seq"], to);
    }
    let mut covered: BTreeMap<u64, String> = BTreeMap::new();
    for (id, page) in &pages {
        let (from, to) = id_range(id);
        assert_eq!(page.source, format!("audit:{from}-{to}"));
        assert_eq!(page.tags, vec!["session", "audit"]);
        for seq in from..=to {
            let e = &entries[usize::try_from(seq - 1).unwrap()];
            if !is_own(e) {
                assert!(
                    covered.insert(seq, id.clone()).is_none(),
                    "seq {seq} is on two pages"
                );
            }
        }
        for seq in cited(page) {
            assert!((from..=to).contains(&seq), "{id} cites seq {seq}");
            assert!(
                !is_own(&entries[usize::try_from(seq - 1).unwrap()]),
                "{id} cites its own seq {seq}"
            );
        }
    }
    let w = fx.watermark();
    let expected_w = covered.keys().next_back().copied().unwrap_or(0);
    assert_eq!(w.seq, expected_w, "watermark");
    if w.seq > 0 {
        assert_eq!(w.hash, entries[usize::try_from(w.seq - 1).unwrap()].hash);
    }
    for e in entries.iter().filter(|e| e.seq <= w.seq && !is_own(e)) {
        assert!(covered.contains_key(&e.seq), "seq {} is on no page", e.seq);
    }
    let before = (fx.watermark_bytes(), fx.last_seq(), fx.sink.writes());
    let again = fx.run();
    assert_eq!(again.page, None, "a further run made a page");
    assert_eq!(
        before,
        (fx.watermark_bytes(), fx.last_seq(), fx.sink.writes())
    );
}

#[test]
fn empty_trail_writes_nothing() {
    let fx = fx(SinkKind::Mem);
    let r = fx.run();
    assert_eq!(r.page, None);
    assert_eq!(
        (r.from_seq, r.to_seq, r.summarised, r.skipped_own),
        (1, 0, 0, 0)
    );
    assert_eq!(r.watermark, Watermark::start());
    assert!(fx.sink.pages().is_empty());
    assert!(!fx.wm.exists());
    assert_eq!(fx.last_seq(), 0);
}

#[test]
fn three_runs_make_one_page() {
    for kind in [SinkKind::Mem, SinkKind::FileAudited] {
        let fx = fx(kind);
        fx.activity("c1");
        fx.activity("c2");
        let first = fx.run();
        assert_eq!(first.page.as_deref(), Some("session-1-6"), "{kind:?}");
        assert_eq!((first.from_seq, first.to_seq), (1, 6));
        assert_eq!(first.summarised, 4);
        assert_eq!(
            first.unsummarised,
            BTreeMap::from([("hook.verdict".to_string(), 2)])
        );
        assert_eq!(first.recovered, None);
        assert_eq!(first.watermark.seq, 6);
        assert_eq!(first.watermark.page.as_deref(), Some("session-1-6"));
        let wm = fx.watermark_bytes();
        for _ in 0..2 {
            let r = fx.run();
            assert_eq!(r.page, None);
            assert_eq!(r.watermark, first.watermark);
            assert!(r.skipped_own >= 1);
            assert_eq!(fx.watermark_bytes(), wm);
        }
        assert_eq!(fx.sink.pages().len(), 1);
        assert_eq!(fx.sink.writes(), 1);
        assert_eq!(fx.records().len(), 1);
        let page = &fx.sink.pages()["session-1-6"];
        assert_eq!(page.title, "Session activity, audit seq 1–6");
        assert_eq!(cited(page), vec![2, 3, 5, 6]);
        assert!(
            page.body.ends_with("\nnot summarised: 2 hook.verdict\n"),
            "{}",
            page.body
        );
        assert_consistent(&fx);
    }
}

#[test]
fn second_page_covers_only_new_entries_never_its_own() {
    for kind in [SinkKind::Mem, SinkKind::FileAudited] {
        let fx = fx(kind);
        fx.activity("c1");
        let first = fx.run();
        assert_eq!(first.page.as_deref(), Some("session-1-3"));
        let before_new = fx.last_seq(); // 3 + own entries (record, and memory.write)
        fx.activity("c2");
        let second = fx.run();
        let (from, to) = (before_new + 1, before_new + 3);
        assert_eq!(second.page, Some(page_id(from, to)), "{kind:?}");
        assert_eq!((second.from_seq, second.to_seq), (from, to));
        assert_eq!(second.summarised, 2);
        // Own entries before the range are not part of it.
        assert_eq!(second.skipped_own, 0);
        let page = &fx.sink.pages()[&page_id(from, to)];
        assert_eq!(cited(page), vec![from + 1, from + 2]);
        assert!(!page.body.contains("memory."), "{}", page.body);
        assert_eq!(fx.records().len(), 2);
        assert_consistent(&fx);
    }
}

#[test]
fn broken_chain_is_refused_naming_the_seq() {
    let fx = fx(SinkKind::Mem);
    fx.activity("c1");
    fx.run();
    fx.activity("c2");
    let wm = fx.watermark_bytes();
    let trail = fx.audit.trail_path();
    let text = fs::read_to_string(&trail).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    assert!(lines[2].contains("\"call_id\":\"c1\""));
    lines[2] = lines[2].replace("\"call_id\":\"c1\"", "\"call_id\":\"c9\"");
    fs::write(&trail, lines.join("\n") + "\n").unwrap();

    let err = fx.try_run(None).unwrap_err();
    assert!(
        matches!(err, ConsolidateError::BrokenChain { seq: 3, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("seq 3") && msg.contains("hash_mismatch"),
        "{msg}"
    );
    assert_eq!(fx.sink.pages().len(), 1);
    assert_eq!(fx.sink.writes(), 1);
    assert_eq!(fx.watermark_bytes(), wm);
    assert_eq!(fs::read_to_string(&trail).unwrap(), lines.join("\n") + "\n");
}

/// A damaged segment sealed under the watermark: consolidation refuses the
/// broken chain, then after `seal` goes on from the seal entry; the sealed
/// entries are evidence and are never consolidated.
#[test]
fn a_watermark_in_a_sealed_segment_goes_on_from_the_seal() {
    let fx = fx(SinkKind::Mem);
    fx.activity("c1");
    fx.run(); // watermark at 3, its record at 4
    fx.activity("c2");
    let trail = fx.audit.trail_path();
    let mut bytes = fs::read(&trail).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 0x01;
    fs::write(&trail, bytes).unwrap();
    assert!(
        matches!(
            fx.try_run(None),
            Err(ConsolidateError::BrokenChain { seq: 7, .. })
        ),
        "a broken chain is refused"
    );
    let sealed = fx.audit.seal("human:cli", "bit flip").unwrap();
    fx.activity("c3");
    let r = fx.run();
    assert_eq!(r.from_seq, sealed.seal.seq, "{r:?}");
    assert_eq!(
        r.unsummarised.get(Kind::AuditSeal.as_str()),
        Some(&1),
        "{r:?}"
    );
    let page = &fx.sink.pages()[r.page.as_deref().unwrap()];
    assert!(
        page.body.contains("c3") || cited(page).len() == 2,
        "{}",
        page.body
    );
    assert!(
        cited(page).iter().all(|s| *s > sealed.seal.seq),
        "{}",
        page.body
    );
    assert_eq!(fx.run().page, None);
}

#[test]
fn a_trail_rewritten_under_the_watermark_is_refused() {
    let fx = fx(SinkKind::Mem);
    fx.activity("c1");
    fx.activity("c2");
    fx.run();
    let wm = fx.watermark_bytes();
    // A whole new chain, longer than the old one.
    let audit_dir = fx.audit.dir().to_path_buf();
    fs::rename(&audit_dir, fx.dir.path().join("audit.old")).unwrap();
    let fresh = Fx {
        dir: tempfile::tempdir().unwrap(),
        audit: Arc::new(Audit::open(&audit_dir).unwrap()),
        sink: Box::<MemSink>::default(),
        wm: fx.wm.clone(),
    };
    for i in 0..4 {
        fresh.activity(&format!("n{i}"));
    }
    let err = fresh.try_run(None).unwrap_err();
    assert!(
        matches!(err, ConsolidateError::WatermarkMismatch { seq: 6, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("rewritten or reanchored"), "{err}");
    assert!(fresh.sink.pages().is_empty());
    assert!(fresh.records().is_empty());
    assert_eq!(fx.watermark_bytes(), wm);
}

#[test]
fn a_trail_cut_and_reanchored_under_the_watermark_is_refused() {
    let fx = fx(SinkKind::Mem);
    fx.activity("c1");
    fx.activity("c2");
    fx.run(); // watermark at 6, record at 7
    let wm = fx.watermark_bytes();
    let trail = fx.audit.trail_path();
    let text = fs::read_to_string(&trail).unwrap();
    let kept: String = text.lines().take(4).map(|l| format!("{l}\n")).collect();
    fs::write(&trail, kept).unwrap();
    let audit = Audit::open(fx.audit.dir()).unwrap();
    audit.reanchor("human:cli", "cut by the test").unwrap();

    // Shorter than the watermark: 4 entries and the reanchor note.
    let err = fx.try_run(None).unwrap_err();
    assert!(
        matches!(err, ConsolidateError::WatermarkMismatch { seq: 6, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("only 5 entries"), "{err}");

    // Longer again, but entry 6 is a different entry now.
    fx.activity("c3");
    let err = fx.try_run(None).unwrap_err();
    assert!(
        matches!(err, ConsolidateError::WatermarkMismatch { seq: 6, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("entry 6 has hash"), "{err}");
    assert_eq!(fx.sink.pages().len(), 1);
    assert_eq!(fx.records().len(), 0);
    assert_eq!(fx.watermark_bytes(), wm);
}

#[test]
fn every_crash_point_recovers_without_loss_or_duplicates() {
    for kind in [SinkKind::Mem, SinkKind::FileAudited] {
        for point in CrashPoint::ALL {
            for more_activity in [false, true] {
                let ctx = format!("{kind:?} {point:?} more_activity={more_activity}");
                let fx = fx(kind);
                fx.activity("c1");
                fx.activity("c2");
                let wm_before = fx.watermark_bytes();
                let err = fx.try_run(Some(point)).unwrap_err();
                assert!(
                    matches!(err, ConsolidateError::Crashed(p) if p == point),
                    "{ctx}: {err:?}"
                );
                let records = fx.records().len();
                match point {
                    CrashPoint::AfterPageWrite => {
                        assert_eq!(records, 0, "{ctx}");
                        assert_eq!(fx.watermark_bytes(), wm_before, "{ctx}");
                    }
                    CrashPoint::AfterAuditRecord | CrashPoint::AfterWatermarkTemp => {
                        assert_eq!(records, 1, "{ctx}");
                        assert_eq!(fx.watermark_bytes(), wm_before, "{ctx}");
                    }
                    CrashPoint::AfterWatermarkRename => {
                        assert_eq!(records, 1, "{ctx}");
                        assert_eq!(fx.watermark().seq, 6, "{ctx}");
                    }
                }
                assert_eq!(
                    fx.sink.pages().keys().collect::<Vec<_>>(),
                    ["session-1-6"],
                    "{ctx}"
                );
                if more_activity {
                    fx.activity("c3");
                }

                let r = fx.run();
                match point {
                    CrashPoint::AfterWatermarkRename => {
                        if more_activity {
                            assert_eq!(r.recovered, None, "{ctx}");
                            assert_ne!(r.page.as_deref(), Some("session-1-6"), "{ctx}");
                        } else {
                            assert_eq!(r.page, None, "{ctx}");
                        }
                    }
                    _ => {
                        let expect = match point {
                            CrashPoint::AfterPageWrite => CrashPoint::AfterPageWrite,
                            _ => CrashPoint::AfterAuditRecord,
                        };
                        assert_eq!(r.recovered, Some(expect), "{ctx}");
                        assert_eq!(r.page.as_deref(), Some("session-1-6"), "{ctx}");
                        assert_eq!((r.from_seq, r.to_seq, r.summarised), (1, 6, 4), "{ctx}");
                        assert_eq!(r.watermark.seq, 6, "{ctx}");
                        // The page was not written a second time.
                        assert_eq!(fx.sink.writes(), 1, "{ctx}");
                    }
                }
                // Whatever came after the recovered page goes on the next one.
                while fx.run().page.is_some() {}
                let pages = fx.sink.pages();
                assert_eq!(
                    pages.len(),
                    1 + usize::from(more_activity),
                    "{ctx}: {pages:?}"
                );
                // A stale watermark temp was replaced by the recovery's own.
                assert!(!tmp_path(&fx.wm).exists(), "{ctx}");
                assert_consistent(&fx);
            }
        }
    }
}

/// A page write that fails commits nothing: no record, no watermark, no
/// page; the next run starts from scratch and succeeds.
#[test]
fn a_failed_page_write_leaves_no_record_and_no_watermark() {
    for kind in [SinkKind::Mem, SinkKind::FileAudited] {
        let fx = fx(kind);
        fx.activity("c1");
        let entries = fx.entries().len();
        let wm = fx.watermark_bytes();
        fx.sink.set_failing(true);
        match fx.try_run(None) {
            Err(ConsolidateError::Sink {
                op: "write",
                message,
                ..
            }) => {
                assert!(message.contains("no space"), "{kind:?}: {message}");
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        assert!(fx.records().is_empty(), "{kind:?}");
        assert_eq!(fx.entries().len(), entries, "{kind:?}: the trail grew");
        assert_eq!(fx.watermark_bytes(), wm, "{kind:?}");
        assert!(fx.sink.pages().is_empty(), "{kind:?}");
        fx.sink.set_failing(false);
        let r = fx.run();
        assert_eq!(
            (r.page.as_deref(), r.recovered),
            (Some("session-1-3"), None)
        );
        assert_consistent(&fx);
    }
}

/// A crash after the record, then the page deleted by hand: the next run
/// writes the page again (from the same entries, so the same page) before
/// it moves the watermark, and never records it twice. With the page
/// write failing, the watermark does not move.
#[test]
fn a_recorded_page_deleted_after_a_crash_is_written_again_before_the_watermark_moves() {
    for kind in [SinkKind::Mem, SinkKind::FileAudited] {
        let fx = fx(kind);
        fx.activity("c1");
        fx.activity("c2");
        fx.try_run(Some(CrashPoint::AfterAuditRecord)).unwrap_err();
        let page = fx.sink.pages()["session-1-6"].clone();
        fx.sink.delete("session-1-6");
        let wm = fx.watermark_bytes();

        fx.sink.set_failing(true);
        assert!(
            matches!(
                fx.try_run(None),
                Err(ConsolidateError::Sink { op: "write", .. })
            ),
            "{kind:?}"
        );
        assert_eq!(
            fx.watermark_bytes(),
            wm,
            "{kind:?}: the watermark moved without its page"
        );
        assert_eq!(fx.records().len(), 1, "{kind:?}");

        fx.sink.set_failing(false);
        let r = fx.run();
        assert_eq!(r.recovered, Some(CrashPoint::AfterAuditRecord), "{kind:?}");
        assert_eq!(r.page.as_deref(), Some("session-1-6"));
        assert_eq!(
            fx.sink.pages()["session-1-6"],
            page,
            "{kind:?}: not the same page"
        );
        assert_eq!(fx.watermark().seq, 6);
        assert_eq!(fx.records().len(), 1, "{kind:?}: recorded twice");
        assert_consistent(&fx);
    }
}

#[test]
fn a_crash_inside_the_record_append_is_one_of_the_named_states() {
    // The record's line is durable but the anchor did not move (audit crash
    // state 3): `verify` accepts it and recovery treats it as a record.
    let fx = fx(SinkKind::Mem);
    fx.activity("c1");
    fx.try_run(Some(CrashPoint::AfterAuditRecord)).unwrap_err();
    let anchor = fx.audit.anchor_path();
    let entries = fx.entries();
    let before = &entries[entries.len() - 2];
    fs::write(
        &anchor,
        format!("{{\"count\":{},\"top\":\"{}\"}}\n", before.seq, before.hash),
    )
    .unwrap();
    assert_eq!(fx.audit.verify().unwrap().unanchored, 1);
    let r = fx.run();
    assert_eq!(r.recovered, Some(CrashPoint::AfterAuditRecord));
    assert_consistent(&fx);

    // A torn record (audit crash state 2) is the state after the page write.
    let fx = self::fx(SinkKind::Mem);
    fx.activity("c1");
    fx.try_run(Some(CrashPoint::AfterPageWrite)).unwrap_err();
    let mut f = OpenOptions::new()
        .append(true)
        .open(fx.audit.trail_path())
        .unwrap();
    f.write_all(b"{\"actor\":\"agent:pinc").unwrap();
    let r = fx.run();
    assert_eq!(r.recovered, Some(CrashPoint::AfterPageWrite));
    assert_eq!(
        fx.entries()
            .iter()
            .filter(|e| e.kind == "audit.repair")
            .count(),
        1
    );
    // The repair (seq 4) is real activity of the trail: the next page
    // counts it, and nothing else.
    let next = fx.run();
    assert_eq!(next.page.as_deref(), Some("session-4-4"));
    assert_eq!(
        next.unsummarised,
        BTreeMap::from([("audit.repair".to_string(), 1)])
    );
    assert_consistent(&fx);
}

#[test]
fn a_deleted_watermark_walks_forward_without_duplicating_pages() {
    let fx = fx(SinkKind::FileAudited);
    fx.activity("c1");
    fx.run();
    fx.activity("c2");
    fx.run();
    let pages = fx.sink.pages();
    fs::remove_file(&fx.wm).unwrap();
    let r1 = fx.run();
    let r2 = fx.run();
    assert_eq!(r1.recovered, Some(CrashPoint::AfterAuditRecord));
    assert_eq!(r2.recovered, Some(CrashPoint::AfterAuditRecord));
    assert_eq!(fx.sink.pages(), pages);
    assert_eq!(fx.sink.writes(), 2);
    assert_consistent(&fx);
}

#[test]
fn kinds_it_cannot_summarise_are_counted() {
    let fx = fx(SinkKind::Mem);
    let a = &fx.audit;
    for _ in 0..3 {
        a.append("hook:x", "hook.verdict", json!({"verdict": "allow"}))
            .unwrap();
    }
    a.append(ACTOR, "approval.request", json!({"tool": "shell"}))
        .unwrap();
    a.append("hw", "hw.read", json!({"bus": 1})).unwrap();
    a.append("hw", "hw.read", json!({"bus": 1})).unwrap();
    // A summarised kind without the fields a line needs is counted too.
    a.append(ACTOR, "gate.decision", json!({"decision": "allowed"}))
        .unwrap();
    // A memory.write that is not consolidation's is activity.
    a.append(
        "system",
        KIND_MEMORY_WRITE,
        json!({"id": "x", "source": "human"}),
    )
    .unwrap();
    let r = fx.run();
    assert_eq!(r.summarised, 0);
    let counts: Vec<(&str, usize)> = r
        .unsummarised
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        counts,
        [
            ("approval.request", 1),
            ("gate.decision", 1),
            ("hook.verdict", 3),
            ("hw.read", 2),
            ("memory.write", 1)
        ]
    );
    let page = &fx.sink.pages()["session-1-8"];
    assert!(
        page.body.ends_with(
            "\nnot summarised: 1 approval.request, 1 gate.decision, 3 hook.verdict, 2 hw.read, 1 memory.write\n"
        ),
        "{}",
        page.body
    );
    assert_consistent(&fx);
}

#[test]
fn data_never_breaks_a_line() {
    let fx = fx(SinkKind::Mem);
    let note = "first\nsecond\r\n\u{1b}[31mred\u{1b}[0m\ttab \\ back\u{2028}sep\u{202e}rtl\u{7}";
    fx.audit
        .append("human:cli", KIND_NOTE, json!({"note": note}))
        .unwrap();
    fx.audit
        .append(
            ACTOR,
            "gate.decision",
            json!({"tool": "sh\nell", "arguments": {"c": "a\nb\u{1b}\u{2029}"}, "decision": "denied",
                   "by": "human:cli", "reason": "no\n- [seq 99] forged"}),
        )
        .unwrap();
    fx.run();
    let page = &fx.sink.pages()["session-1-2"];
    assert!(
        !page
            .body
            .chars()
            .any(|c| c != '\n' && (c.is_control() || needs_escape(c))),
        "{:?}",
        page.body
    );
    let lines: Vec<&str> = page.body.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].ends_with(
            r" human:cli note: first\nsecond\r\n\u{1b}[31mred\u{1b}[0m\ttab \\ back\u{2028}sep\u{202e}rtl\u{7}"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with(
            r#" agent:pincer asked to run sh\nell {"c":"a\nb\u001b\u{2029}"}: denied by human:cli (no\n- [seq 99] forged)"#
        ),
        "{}",
        lines[1]
    );
    assert_eq!(cited(page), vec![1, 2]);
}

#[test]
fn long_values_are_cut_and_say_so() {
    assert_eq!(escape("abcdef", 3), "abc… (3 more characters)");
    assert_eq!(escape("abc", 3), "abc");
    assert_eq!(escape("", 3), "");
}

#[test]
fn an_invalid_actor_or_watermark_writes_nothing() {
    let fx = fx(SinkKind::Mem);
    fx.activity("c1");
    let err = consolidate(&fx.audit, &*fx.sink, &fx.wm, "bad\nactor").unwrap_err();
    assert!(matches!(err, ConsolidateError::Actor(_)), "{err:?}");
    assert!(fx.sink.pages().is_empty());

    fs::create_dir_all(fx.wm.parent().unwrap()).unwrap();
    fs::write(&fx.wm, b"{\"seq\": 3}").unwrap();
    let err = fx.try_run(None).unwrap_err();
    assert!(
        matches!(err, ConsolidateError::BadWatermark { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("consolidation.json"), "{err}");
    assert!(fx.sink.pages().is_empty());
    assert!(fx.records().is_empty());
    assert_eq!(fs::read(&fx.wm).unwrap(), b"{\"seq\": 3}");
}

/// One `check` per area: the entries (seq 1.., all at 2026-11-30 10:01 UTC)
/// and the page lines they make.
fn check(entries: &[(&str, &str, Value)], expected: &[&str]) {
    let ts = Timestamp::parse("2026-11-30T10:01:59.999Z").unwrap();
    let mut prev = GENESIS.to_string();
    let mut sealed = Vec::new();
    for (i, (actor, kind, data)) in entries.iter().enumerate() {
        let e = Entry::seal(i as u64 + 1, ts, actor, kind, data.clone(), &prev);
        prev = e.hash.clone();
        sealed.push(e);
    }
    let built = build_page(&sealed, 1, sealed.len() as u64, None);
    let lines: Vec<&str> = built
        .page
        .body
        .lines()
        .filter(|l| l.starts_with("- "))
        .collect();
    assert_eq!(lines, expected);
}

#[test]
fn lines_per_kind() {
    let call = |id: &str, status: &str| json!({"session": "s", "call_id": id, "tool": "shell", "call_hash": "h", "status": status});
    check(
        &[
            (
                ACTOR,
                "gate.decision",
                json!({"session": "s", "call_id": "1", "tool": "shell",
                "arguments": {"command": "ls"}, "decision": "allowed", "by": "policy"}),
            ),
            (ACTOR, "tool.call", call("1", "ok")),
            (
                ACTOR,
                "gate.decision",
                json!({"session": "s", "call_id": "2", "tool": "shell",
                "arguments": {"command": "rm -rf /"}, "decision": "blocked", "by": "deny_list",
                "reason": "blocked by the deny list"}),
            ),
            (
                ACTOR,
                "gate.decision",
                json!({"session": "s", "call_id": "3", "tool": "nope",
                "arguments": {}, "decision": "unknown_tool"}),
            ),
            (
                ACTOR,
                "tool.call",
                json!({"session": "s", "call_id": "4", "tool": "fetch", "call_hash": "h",
                "status": "error", "error": "timeout"}),
            ),
            (
                "human:cli",
                "approval.answer",
                json!({"id": "0123456789", "call_hash": "h", "session": "s", "call_id": "5",
                "tool": "shell", "answer": "approved", "reason": null}),
            ),
            ("human:cli", KIND_NOTE, json!({"note": "rebooted the pi"})),
            (
                "human:cli",
                KIND_NOTE,
                json!({"reanchor": true, "reason": "restored backup"}),
            ),
            (
                "system",
                "policy.change",
                json!({"before": {"autonomy": "supervised", "deny_tools": []},
                "after": {"autonomy": "full", "deny_tools": []}}),
            ),
            (
                "system",
                "config.load",
                json!({"path": "/h/config.toml", "found": true,
                "sha256": "0123456789abcdef0123", "policy": {}}),
            ),
            (
                "system",
                "config.load",
                json!({"path": "/h/config.toml", "found": false, "sha256": null, "policy": {}}),
            ),
        ],
        &[
            r#"- [seq 1] 2026-11-30 10:01 agent:pincer asked to run shell {"command":"ls"}: allowed by policy"#,
            r#"- [seq 2] 2026-11-30 10:01 agent:pincer ran shell {"command":"ls"}: ok"#,
            r#"- [seq 3] 2026-11-30 10:01 agent:pincer asked to run shell {"command":"rm -rf /"}: blocked by deny_list (blocked by the deny list)"#,
            "- [seq 4] 2026-11-30 10:01 agent:pincer asked to run nope {}: refused, there is no such tool",
            "- [seq 5] 2026-11-30 10:01 agent:pincer ran fetch: error (timeout)",
            "- [seq 6] 2026-11-30 10:01 human:cli answered the approval for shell: approved",
            "- [seq 7] 2026-11-30 10:01 human:cli note: rebooted the pi",
            "- [seq 8] 2026-11-30 10:01 human:cli reanchored the audit trail: restored backup",
            r#"- [seq 9] 2026-11-30 10:01 system changed the policy: autonomy "supervised" → "full""#,
            "- [seq 10] 2026-11-30 10:01 system loaded the configuration /h/config.toml (sha256 0123456789ab)",
            "- [seq 11] 2026-11-30 10:01 system loaded the configuration: /h/config.toml not found, defaults",
        ],
    );
}

/// A backlog too large for one page (months of activity before the first
/// consolidation) becomes several pages, each within the budget, whose
/// ranges follow each other; every run but the last says there is more,
/// and a crash in the middle of the series loses and duplicates nothing.
#[test]
fn a_backlog_larger_than_a_page_becomes_several_pages() {
    use pincer_core::audit::{AuditOptions, NewEntry, write_new_trail};
    let dir = tempfile::tempdir().unwrap();
    let audit_dir = dir.path().join("audit");
    // Long arguments make long lines: about 3 pages' worth.
    let calls = 3 * PAGE_BUDGET_BYTES / 500;
    let entries = (0..calls).flat_map(|i| {
        let call = format!("c{i}");
        let arg = "x".repeat(400);
        [
            NewEntry {
                ts: pincer_core::message::Timestamp::now(),
                actor: ACTOR.into(),
                kind: "gate.decision".into(),
                data: json!({"session": "s", "call_id": call, "tool": "shell",
                    "arguments": {"command": format!("echo {arg}")}, "risk": "low",
                    "why": "reads", "decision": "allowed", "by": "policy"}),
            },
            NewEntry {
                ts: pincer_core::message::Timestamp::now(),
                actor: ACTOR.into(),
                kind: "tool.call".into(),
                data: json!({"session": "s", "call_id": call, "tool": "shell", "status": "ok"}),
            },
        ]
    });
    write_new_trail(&audit_dir, AuditOptions::default(), entries).unwrap();
    let fx = Fx {
        audit: Arc::new(Audit::open(&audit_dir).unwrap()),
        sink: Box::<MemSink>::default(),
        wm: dir.path().join("memory/consolidation.json"),
        dir,
    };
    let mut runs = Vec::new();
    // A crash half-way through the series, once.
    let crashed = fx.try_run(None).unwrap();
    assert!(crashed.more, "one page cannot hold the backlog");
    runs.push(crashed);
    let err = fx.try_run(Some(CrashPoint::AfterAuditRecord)).unwrap_err();
    assert!(matches!(err, ConsolidateError::Crashed(_)), "{err:?}");
    loop {
        let r = fx.run();
        let Some(_) = &r.page else { break };
        let more = r.more;
        runs.push(r);
        if !more {
            break;
        }
    }
    assert!(runs.len() >= 3, "{} pages", runs.len());
    for pair in runs.windows(2) {
        assert!(pair[1].from_seq > pair[0].to_seq, "ranges overlap");
    }
    assert!(!runs.last().unwrap().more);
    for page in fx.sink.pages().values() {
        assert!(
            page.body.len() <= PAGE_BUDGET_BYTES,
            "{}: {}",
            page.id,
            page.body.len()
        );
    }
    assert_consistent(&fx);
}
