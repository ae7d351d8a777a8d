use super::*;
use crate::message::ToolCall;
use crate::trim::{Budget, CharRatio, TokenCounter, TrimInput};
use proptest::prelude::*;
use serde_json::json;

fn store(dir: &Path) -> SessionStore {
    SessionStore::open(dir.join("sessions"), FsyncPolicy::Always).expect("open store")
}

/// A turn: user, an assistant tool call with its result, a final reply.
fn turn(i: usize) -> Vec<Message> {
    vec![
        Message::user(format!("question {i}")),
        Message::assistant_calls(
            "",
            vec![ToolCall::new(
                format!("c{i}"),
                "file_read",
                &json!({"path": format!("f{i}.txt")}),
            )],
        ),
        Message::tool_result(format!("c{i}"), "file_read", format!("contents {i}")),
        Message::assistant(format!("answer {i}")),
    ]
}

fn contents(msgs: &[Message]) -> Vec<String> {
    msgs.iter().map(|m| m.content.clone()).collect()
}

fn data_path(s: &SessionStore, key: &str) -> PathBuf {
    let meta = s
        .read_meta(key)
        .expect("meta")
        .unwrap_or_else(|| Meta::initial(key));
    s.dir().join(meta.file)
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open raw");
    f.write_all(bytes).expect("raw write");
}

#[test]
fn append_then_read_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("chat").expect("writer");
    let batch: Vec<_> = (0..3).flat_map(turn).collect();
    let r = w.append(&batch).expect("append");
    assert_eq!(
        r,
        AppendReceipt {
            appended: 12,
            first_line: 0,
            durable: true
        }
    );
    let v = s.read("chat").expect("read");
    assert_eq!(v.messages, batch);
    assert_eq!(v.lines, (0..12).collect::<Vec<u64>>());
    assert_eq!(v.stats.lines_on_disk, 12);
    assert!(v.stats.unreadable.is_empty());
    assert_eq!(v.stats.torn_tail_bytes, 0);
    let raw = fs::read_to_string(data_path(&s, "chat")).expect("raw");
    assert_eq!(raw.lines().count(), 12, "one message per line");
}

#[test]
fn missing_session_is_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    assert!(matches!(s.read("nope"), Err(SessionError::NotFound { .. })));
    assert!(!s.exists("nope").expect("exists"));
}

#[test]
fn torn_tail_is_ignored_then_repaired_before_next_append() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("t").expect("writer");
    w.append(&turn(0)).expect("append");
    drop(w);
    let path = data_path(&s, "t");
    append_raw(&path, br#"{"role":"user","content":"half a li"#);

    let v = s.read("t").expect("read");
    assert_eq!(v.messages.len(), 4);
    assert!(v.stats.torn_tail_bytes > 0);
    assert!(
        v.stats.unreadable.is_empty(),
        "a torn tail is not a bad line"
    );

    let mut w = s.writer("t").expect("writer repairs");
    w.append(&[Message::user("after the crash")])
        .expect("append");
    let v = s.read("t").expect("read");
    assert_eq!(v.messages.len(), 5);
    assert_eq!(v.messages[4].content, "after the crash");
    assert_eq!(v.stats.torn_tail_bytes, 0);
    assert_eq!(v.stats.torn_tail_repairs, 1);
    assert!(
        v.stats.unreadable.is_empty(),
        "new record must not fuse with the torn one"
    );
}

#[test]
fn garbage_in_the_middle_is_counted_not_dropped_silently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("g").expect("writer");
    w.append(&[Message::user("one")]).expect("append");
    drop(w);
    let path = data_path(&s, "g");
    append_raw(&path, b"this is not json\n");
    append_raw(
        &path,
        b"{\"role\":\"tool\",\"content\":\"x\",\"ts\":\"2026-01-01T00:00:00Z\"}\n",
    );
    let mut w = s.writer("g").expect("writer");
    w.append(&[Message::user("two")]).expect("append");
    let v = s.read("g").expect("read");
    assert_eq!(contents(&v.messages), ["one", "two"]);
    assert_eq!(v.lines, [0, 3]);
    assert_eq!(v.stats.lines_on_disk, 4);
    assert_eq!(v.stats.live_lines, 4);
    let bad: Vec<_> = v.stats.unreadable.iter().map(|u| u.line).collect();
    assert_eq!(bad, [2, 3]);
    assert!(v.stats.unreadable[1].error.contains("tool_call_id"));
}

#[test]
fn second_writer_gets_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let w = s.writer("one").expect("first writer");
    let err = s.writer("one").expect_err("second writer must fail");
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another process"), "{err}");
    // A different session is independent.
    s.writer("two").expect("other session");
    drop(w);
    s.writer("one").expect("lock released on drop");
}

#[test]
fn a_bad_batch_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("b").expect("writer");
    w.append(&[Message::user("kept")]).expect("append");
    let mut bad = Message::tool_result("x", "t", "r");
    bad.name = None;
    let err = w
        .append(&[Message::user("a"), Message::user("b"), bad])
        .expect_err("invalid");
    match &err {
        SessionError::InvalidMessage { index, source } => {
            assert_eq!(*index, 2);
            assert_eq!(source.field, "name");
        }
        other => panic!("{other}"),
    }
    assert_eq!(contents(&s.read("b").expect("read").messages), ["kept"]);
}

#[test]
fn invalid_keys_never_escape_the_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    for key in [
        "",
        "..",
        "../x",
        "a/b",
        "a\\b",
        "a.b",
        "x y",
        &"k".repeat(129),
    ] {
        let err = s.writer(key).expect_err(key);
        assert!(
            matches!(err, SessionError::InvalidKey { .. }),
            "{key}: {err}"
        );
        assert!(matches!(s.read(key), Err(SessionError::InvalidKey { .. })));
    }
    assert_eq!(fs::read_dir(s.dir()).expect("ls").count(), 0);
    validate_key("telegram-12345_ok").expect("ok key");
}

#[test]
fn skip_only_grows_and_stays_in_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("k").expect("writer");
    w.append(&(0..3).flat_map(turn).collect::<Vec<_>>())
        .expect("append");
    w.set_skip(4, "s".into()).expect("skip");
    let err = w.set_skip(3, "s".into()).expect_err("backwards");
    assert!(matches!(
        err,
        SessionError::SkipBackwards {
            current: 4,
            requested: 3
        }
    ));
    let err = w.set_skip(13, "s".into()).expect_err("past end");
    assert!(matches!(err, SessionError::SkipPastEnd { .. }));
    let v = s.read("k").expect("read");
    assert_eq!(v.messages.len(), 8);
    assert_eq!(v.stats.lines_on_disk, 12, "skipped lines stay on disk");
    assert_eq!(v.meta.summary, "s");
}

#[test]
fn corrupt_meta_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    s.writer("m")
        .expect("writer")
        .append(&turn(0))
        .expect("append");
    let meta = s.meta_path("m");
    fs::write(
        &meta,
        "{\"version\":1,\"file\":\"../../etc/passwd\",\"skip\":0}",
    )
    .expect("w");
    let err = s.read("m").expect_err("path in meta");
    assert!(err.to_string().contains("m.meta.json"), "{err}");
    assert!(err.to_string().contains("not a data file"), "{err}");
    fs::write(&meta, "").expect("w");
    assert!(matches!(s.read("m"), Err(SessionError::CorruptMeta { .. })));
    assert!(matches!(
        s.writer("m"),
        Err(SessionError::CorruptMeta { .. })
    ));
}

#[test]
fn fsync_policy_decides_which_appends_are_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let call = Message::assistant_calls("", vec![ToolCall::new("c", "t", &json!({}))]);
    let result = Message::tool_result("c", "t", "r");
    let cases = [
        (FsyncPolicy::Always, [true, true, true, true]),
        (FsyncPolicy::Turn, [true, false, false, true]),
        (FsyncPolicy::Never, [false, false, false, false]),
    ];
    for (policy, expected) in cases {
        let s = SessionStore::open(dir.path().join(policy.as_str()), policy).expect("store");
        let mut w = s.writer("f").expect("writer");
        let got: Vec<bool> = [
            Message::user("q"),
            call.clone(),
            result.clone(),
            Message::assistant("a"),
        ]
        .iter()
        .map(|m| w.append(std::slice::from_ref(m)).expect("append").durable)
        .collect();
        assert_eq!(got, expected, "{policy:?}");
    }
}

/// What the fsync seam saw: every append that says `durable: true` was
/// fdatasync'ed before it returned, and every one that was not says so
/// (`sync` then does it, exactly once).
#[test]
fn durable_means_fsynced_and_not_durable_means_not_yet() {
    use crate::fsutil::ledger::{self, Op};
    let dir = tempfile::tempdir().expect("tempdir");
    let call = Message::assistant_calls("", vec![ToolCall::new("c", "t", &json!({}))]);
    for policy in [FsyncPolicy::Always, FsyncPolicy::Turn, FsyncPolicy::Never] {
        let s = SessionStore::open(dir.path().join(policy.as_str()), policy).expect("store");
        let mut w = s.writer("f").expect("writer");
        let path = data_path(&s, "f");
        for m in [Message::user("q"), call.clone(), Message::assistant("a")] {
            ledger::take();
            let r = w.append(std::slice::from_ref(&m)).expect("append");
            let synced = ledger::take()
                .iter()
                .filter(|o| **o == Op::SyncData(path.clone()))
                .count();
            assert_eq!(
                synced,
                usize::from(r.durable),
                "{policy:?} {:?}: durable {} after {synced} fsyncs",
                m.role,
                r.durable
            );
            w.sync().expect("sync");
            let later = ledger::take()
                .iter()
                .filter(|o| **o == Op::SyncData(path.clone()))
                .count();
            assert_eq!(later, usize::from(!r.durable), "{policy:?}: sync after");
        }
    }
}

/// Compaction's commit point is the rename of the new meta: the new data
/// file, its directory entry and the meta temp must be fsynced before it,
/// and the rename made durable (directory fsync) before the old file goes.
#[test]
fn compaction_fsyncs_everything_its_commit_point_depends_on_first() {
    use crate::fsutil::ledger::{self, Op};
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = session_for_compaction(&s, 6, 4);
    let old = data_path(&s, "c");
    ledger::take();
    let report = w.compact().expect("compact");
    let ops = ledger::take();
    let new = s.dir().join(&report.new_file);
    let meta = s.meta_path("c");
    let sdir = Op::SyncDir(s.dir().to_path_buf());
    let at = |op: &Op| {
        ops.iter()
            .position(|o| o == op)
            .unwrap_or_else(|| panic!("{op:?} missing from {ops:#?}"))
    };
    let commit = ops
        .iter()
        .position(|o| matches!(o, Op::Rename { to, .. } if *to == meta))
        .unwrap_or_else(|| panic!("no rename of the meta in {ops:#?}"));
    let new_synced = at(&Op::SyncAll(new.clone()));
    assert!(
        new_synced < commit,
        "new file fsynced after the commit: {ops:#?}"
    );
    assert!(
        ops[new_synced..commit].contains(&sdir),
        "the new file's directory entry is not durable before the commit: {ops:#?}"
    );
    assert!(at(&Op::SyncAll(tmp_path(&meta))) < commit, "{ops:#?}");
    assert!(
        ops[commit..].contains(&sdir),
        "the commit is never made durable: {ops:#?}"
    );
    assert!(!old.exists());
}

/// A data file that exists but cannot be read is an I/O error naming it,
/// never "the session does not exist".
#[test]
fn an_unreadable_data_file_is_an_error_naming_it_not_a_missing_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    s.writer("u").expect("w").append(&turn(0)).expect("append");
    let path = data_path(&s, "u");
    fs::remove_file(&path).expect("rm");
    fs::create_dir(&path).expect("a directory where the data file was");
    match s.read("u") {
        Err(SessionError::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected an I/O error naming the file, got {other:?}"),
    }
}

#[test]
fn list_shows_every_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    s.writer("b").expect("w").append(&turn(0)).expect("a");
    s.writer("a").expect("w").append(&turn(1)).expect("a");
    let keys: Vec<_> = s.list().expect("list").into_iter().map(|i| i.key).collect();
    assert_eq!(keys, ["a", "b"]);
}

/// Builds a session of `n` turns with skip at turn `skip_turns`, plus an
/// unreadable line inside the live part, for the compaction tests.
fn session_for_compaction(s: &SessionStore, n: usize, skip_turns: usize) -> SessionWriter {
    let mut w = s.writer("c").expect("writer");
    w.append(&(0..n).flat_map(turn).collect::<Vec<_>>())
        .expect("append");
    w.sync().expect("sync");
    append_raw(&data_path(s, "c"), b"{broken\n");
    drop(w);
    let mut w = s.writer("c").expect("writer");
    w.append(&turn(n)).expect("append");
    w.set_skip(4 * skip_turns as u64, "old turns".into())
        .expect("skip");
    w
}

#[test]
fn compaction_keeps_live_lines_and_resets_skip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = session_for_compaction(&s, 6, 4);
    let before = s.read("c").expect("read");
    let report = w.compact().expect("compact");
    assert_eq!(report.lines_dropped, 16);
    assert_eq!(report.new_file, "c.1.jsonl");
    let after = s.read("c").expect("read");
    assert_eq!(after.messages, before.messages);
    assert_eq!(after.meta.skip, 0);
    assert_eq!(after.meta.summary, "old turns");
    assert_eq!(
        after.stats.unreadable.len(),
        1,
        "an unreadable live line is kept"
    );
    assert!(!s.dir().join("c.jsonl").exists(), "old file deleted");
    // A second compaction moves to the next generation.
    w.set_skip(4, "more".into()).expect("skip");
    assert_eq!(w.compact().expect("compact").new_file, "c.2.jsonl");
    w.append(&[Message::user("still appendable")])
        .expect("append");
    assert_eq!(
        s.read("c")
            .expect("read")
            .messages
            .last()
            .map(|m| m.content.as_str()),
        Some("still appendable")
    );
}

#[test]
fn a_crash_at_every_compaction_step_reads_back_the_same_messages() {
    for point in CrashPoint::ALL {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = store(dir.path());
        let mut w = session_for_compaction(&s, 6, 4);
        let before = s.read("c").expect("read").messages;
        w.crash_at = Some(point);
        let err = w.compact().expect_err("injected crash");
        assert!(matches!(err, SessionError::InjectedCrash(p) if p == point));
        drop(w); // the process is gone: the lock is released

        // A reader right after the crash, before any repair.
        let got = s.read("c").expect("read after crash").messages;
        assert_eq!(got, before, "reader after crash at {point:?}");

        // The next writer cleans up strays and carries on.
        let mut w = s.writer("c").expect("writer after crash");
        let got = w.view().expect("view").messages;
        assert_eq!(got, before, "writer after crash at {point:?}");
        let names: Vec<String> = fs::read_dir(s.dir())
            .expect("ls")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".jsonl") || n.ends_with(".tmp"))
            .collect();
        assert_eq!(
            names,
            [w.meta().file.clone()],
            "strays left after {point:?}"
        );
        w.append(&[Message::user("next")]).expect("append");
        w.compact().expect("compaction completes after recovery");
        let mut expected = before.clone();
        expected.push(Message {
            ts: Default::default(),
            ..Message::user("next")
        });
        let mut got = s.read("c").expect("read").messages;
        if let Some(last) = got.last_mut() {
            last.ts = Default::default();
        }
        assert_eq!(got, expected, "after recovery from {point:?}");
    }
}

#[test]
fn applying_a_trim_bumps_skip_to_a_user_line_and_compacts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("t").expect("writer");
    let all: Vec<_> = (0..10).flat_map(turn).collect();
    w.append(&all).expect("append");
    let view = w.view().expect("view");
    let (context, report) = view.context();
    assert!(report.is_clean());
    let counter = CharRatio::default();
    let per_turn: usize = turn(0).iter().map(|m| counter.message_tokens(m)).sum();
    let budget = Budget {
        context_window: 3 * per_turn + 100 + 15,
        tool_def_tokens: 0,
        output_reserve: 100,
        pinned_tokens: 0,
    };
    let trimmed = trim::trim(
        &TrimInput {
            messages: &context,
            summary: "",
            summary_max_chars: 40,
            budget,
        },
        &counter,
    )
    .expect("trim");
    assert!(trimmed.dropped_turns >= 6, "{trimmed:?}");
    let r = w.apply_trim(&view, &context, &trimmed).expect("apply");
    assert_eq!(r.skip_after, 0, "compaction reset skip");
    assert!(r.compacted.is_some(), "over half the file was skipped");
    let after = s.read("t").expect("read");
    assert_eq!(after.messages[0].role, Role::User);
    assert_eq!(after.messages.as_slice(), &*trimmed.messages);
    assert_eq!(after.meta.summary, trimmed.summary);
    assert!(!after.meta.summary.is_empty());
}

/// One random append history: batches of messages, each acknowledged.
fn batches() -> impl Strategy<Value = Vec<Vec<String>>> {
    prop::collection::vec(prop::collection::vec("[a-z \"\\\\é\n]{0,40}", 1..4), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A kill while writing (modelled as any prefix of the next batch's
    /// bytes reaching the disk) never loses an acknowledged record, and the
    /// session stays appendable with no unreadable line.
    #[test]
    fn a_crash_never_loses_an_acknowledged_record(
        acked in batches(),
        torn in prop::collection::vec("[a-z]{0,40}", 1..4),
        cut in 0usize..1000,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = store(dir.path());
        let mut w = s.writer("p").expect("writer");
        let mut expected = Vec::new();
        for batch in &acked {
            let msgs: Vec<_> = batch.iter().map(Message::user).collect();
            w.append(&msgs).expect("append");
            expected.extend(msgs);
        }
        drop(w);
        let mut torn_bytes = Vec::new();
        for c in &torn {
            serde_json::to_writer(&mut torn_bytes, &Message::user(c)).expect("ser");
            torn_bytes.push(b'\n');
        }
        let cut = cut % torn_bytes.len();
        append_raw(&data_path(&s, "p"), &torn_bytes[..cut]);

        let v = s.read("p").expect("read");
        prop_assert!(v.messages.len() >= expected.len());
        prop_assert_eq!(&v.messages[..expected.len()], &expected[..]);

        let mut w = s.writer("p").expect("writer after crash");
        let survivors = w.view().expect("view").messages;
        w.append(&[Message::user("after")]).expect("append");
        let v = s.read("p").expect("read");
        prop_assert_eq!(&v.messages[..expected.len()], &expected[..]);
        prop_assert_eq!(v.messages.len(), survivors.len() + 1);
        prop_assert!(v.stats.unreadable.is_empty());
        prop_assert_eq!(v.stats.torn_tail_bytes, 0);
    }
}

#[test]
fn an_interrupted_tool_call_is_closed_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("i").expect("writer");
    let mut msgs = turn(0);
    msgs.push(Message::user("again"));
    msgs.push(Message::assistant_calls(
        "",
        vec![
            ToolCall::new("a", "t", &json!({})),
            ToolCall::new("b", "t", &json!({})),
        ],
    ));
    msgs.push(Message::tool_result("a", "t", "done"));
    w.append(&msgs).expect("append");
    drop(w); // the crash

    let mut w = s.writer("i").expect("writer");
    let mut view = w.view().expect("view");
    assert!(!trim::is_repaired(&view.messages));
    let closed = w.close_interrupted_calls(&mut view).expect("close");
    assert_eq!(closed, ["b"]);
    let on_disk = s.read("i").expect("read").messages;
    assert!(
        trim::is_repaired(&on_disk),
        "the file itself is valid again"
    );
    assert_eq!(on_disk, view.messages, "the view was kept current");
    assert_eq!(
        on_disk.last().map(|m| m.content.as_str()),
        Some(trim::INTERRUPTED_RESULT)
    );
    assert!(
        w.close_interrupted_calls(&mut view)
            .expect("again")
            .is_empty()
    );
}

#[test]
fn a_stale_view_cannot_move_skip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("v").expect("writer");
    w.append(&(0..8).flat_map(turn).collect::<Vec<_>>())
        .expect("append");
    let old = w.view().expect("view");
    w.set_skip(24, String::new()).expect("skip");
    w.compact().expect("compact");
    let (context, _) = old.context();
    let counter = CharRatio::default();
    let trimmed = trim::trim(
        &TrimInput {
            messages: &context,
            summary: "",
            summary_max_chars: 100,
            budget: Budget {
                context_window: 400,
                tool_def_tokens: 0,
                output_reserve: 100,
                pinned_tokens: 0,
            },
        },
        &counter,
    )
    .expect("trim");
    let err = w.apply_trim(&old, &context, &trimmed).expect_err("stale");
    assert!(matches!(err, SessionError::StaleView { .. }), "{err}");
    assert_eq!(
        s.read("v").expect("read").messages.len(),
        8,
        "nothing was dropped"
    );
}

#[test]
fn skip_past_the_end_is_reported_then_repaired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("p").expect("writer");
    w.append(&turn(0)).expect("append");
    drop(w);
    // As after a power cut with fsync = "never": meta survived, lines did not.
    fs::write(
        s.meta_path("p"),
        r#"{"version":1,"file":"p.jsonl","skip":9,"summary":""}"#,
    )
    .expect("meta");
    let v = s.read("p").expect("read");
    assert!(v.stats.skip_past_end);
    let mut w = s.writer("p").expect("writer");
    w.append(&[Message::user("visible")]).expect("append");
    w.set_skip(4, String::new())
        .expect("skip is not stuck past the end");
    let v = s.read("p").expect("read");
    assert!(!v.stats.skip_past_end);
    assert_eq!(contents(&v.messages), ["visible"]);
    assert_eq!(v.meta.skip_repairs, 1);
    w.compact().expect("compaction does not underflow");
}

#[test]
fn a_missing_data_file_is_an_error_not_an_empty_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = session_for_compaction(&s, 4, 2);
    w.compact().expect("compact");
    drop(w);
    fs::remove_file(s.dir().join("c.1.jsonl")).expect("rm");
    let err = s.writer("c").expect_err("missing file");
    assert!(err.to_string().contains("c.1.jsonl"), "{err}");
    assert!(!s.dir().join("c.1.jsonl").exists(), "not recreated empty");
}

#[test]
fn compaction_carries_unreadable_skipped_lines_forward() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("u").expect("writer");
    w.append(&turn(0)).expect("append");
    drop(w);
    append_raw(&data_path(&s, "u"), b"{\"from\":\"a newer pincer\"}\n");
    let mut w = s.writer("u").expect("writer");
    w.append(&(1..4).flat_map(turn).collect::<Vec<_>>())
        .expect("append");
    w.set_skip(9, String::new())
        .expect("skip past the bad line");
    let before = s.read("u").expect("read").messages;
    let r = w.compact().expect("compact");
    assert_eq!(r.unreadable_kept, 1);
    let after = s.read("u").expect("read");
    assert_eq!(after.messages, before);
    assert_eq!(after.stats.unreadable.len(), 1);
    assert_eq!(after.stats.unreadable[0].line, 1);
    let raw = fs::read_to_string(data_path(&s, "u")).expect("raw");
    assert!(raw.starts_with("{\"from\":\"a newer pincer\"}\n"), "{raw}");
}

#[test]
fn readers_never_fail_while_a_writer_compacts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = store(dir.path());
    let mut w = s.writer("r").expect("writer");
    w.append(&turn(0)).expect("append");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let s = s.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let v = s.read("r").expect("a read during compaction");
                assert_eq!(v.messages.first().map(|m| m.role), Some(Role::User));
                reads += 1;
            }
            reads
        })
    };
    for i in 1..40 {
        w.append(&turn(i)).expect("append");
        let lines = w.view().expect("view").stats.lines_on_disk;
        w.set_skip(lines - 4, String::new()).expect("skip");
        w.compact().expect("compact");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("reader thread");
    assert!(reads > 0);
}
