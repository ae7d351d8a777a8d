use super::*;
use crate::canonical::to_canonical_string;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

/// Bound on waiting for something that should happen promptly.
const PROMPTLY: Duration = Duration::from_secs(10);
const MINUTE: Duration = Duration::from_secs(60);

fn request(tool: &str, arguments: serde_json::Value) -> ApprovalRequest {
    let call_hash = sha256_hex(
        to_canonical_string(&json!({
            "session": "s1", "call_id": "c1", "tool": tool, "arguments": arguments,
        }))
        .as_bytes(),
    );
    ApprovalRequest {
        call_id: "c1".into(),
        call_hash,
        session: "s1".into(),
        tool: tool.into(),
        arguments,
        risk: Risk::High,
        why: "`rm` deletes files".into(),
    }
}

fn setup() -> (tempfile::TempDir, ApprovalQueue) {
    let home = tempfile::tempdir().unwrap();
    let q = ApprovalQueue::open(&home.path().join("approvals")).unwrap();
    (home, q)
}

/// A second handle on the same directory, as another process would have.
fn other_handle(q: &ApprovalQueue) -> ApprovalQueue {
    ApprovalQueue::open(q.dir()).unwrap()
}

fn files(q: &ApprovalQueue) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(q.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn spawn_wait(q: &ApprovalQueue, p: &Pending) -> tokio::task::JoinHandle<ApprovalAnswer> {
    let (q, p) = (q.clone(), p.clone());
    tokio::spawn(async move { q.wait(&p).await })
}

async fn joined(h: tokio::task::JoinHandle<ApprovalAnswer>) -> ApprovalAnswer {
    tokio::time::timeout(PROMPTLY, h)
        .await
        .expect("wait did not finish promptly")
        .unwrap()
}

#[test]
fn submit_then_list_shows_it_durably_and_privately() {
    let (_home, q) = setup();
    let req = request("shell", json!({"command": "rm -rf build"}));
    let p = q.submit(&req, MINUTE).unwrap();
    validate_id(&p.id).unwrap();
    assert_eq!(p.timeout(), MINUTE);

    let listing = other_handle(&q).list().unwrap();
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    assert_eq!(listing.pending, vec![p.clone()]);
    let got = &listing.pending[0];
    assert_eq!(got.tool, "shell");
    assert_eq!(got.arguments, json!({"command": "rm -rf build"}));
    assert_eq!(got.risk, Risk::High);
    assert_eq!(got.why, "`rm` deletes files");
    assert_eq!(got.call_hash, req.call_hash);
    assert_eq!(q.get(&p.id).unwrap(), p);

    assert_eq!(files(&q), vec![format!("{}.pending.json", p.id)]);
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(q.dir()), 0o700);
    assert_eq!(mode(&q.pending_path(&p.id)), 0o600);
    // The on-disk format is plain JSON a person can read with jq.
    let on_disk: serde_json::Value =
        serde_json::from_slice(&fs::read(q.pending_path(&p.id)).unwrap()).unwrap();
    assert_eq!(on_disk["tool"], "shell");
    assert_eq!(on_disk["risk"], "high");
    assert!(on_disk["expires"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn list_is_oldest_first_and_ids_are_unique() {
    let (_home, q) = setup();
    for i in 0..20 {
        q.submit(&request("t", json!({"i": i})), MINUTE).unwrap();
    }
    let pending = q.list().unwrap().pending;
    assert_eq!(pending.len(), 20);
    // Oldest first; within one millisecond, by id.
    assert!(
        pending
            .windows(2)
            .all(|w| (w[0].created, &w[0].id) < (w[1].created, &w[1].id))
    );
    let mut ids: Vec<&str> = pending.iter().map(|p| p.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 20);
}

#[tokio::test]
async fn approve_from_another_handle_wakes_the_waiter() {
    let (_home, q) = setup();
    let req = request("shell", json!({"command": "make install"}));
    let p = q.submit(&req, MINUTE).unwrap();
    let waiting = spawn_wait(&q, &p);

    let answered = other_handle(&q)
        .answer(&p.id, Resolution::Approved { by: "ana".into() })
        .unwrap();
    assert_eq!(answered, p);
    // The answer says it is "ana"; what is recorded is what the queue can
    // prove: a person at pincer's command line.
    assert_eq!(
        joined(waiting).await,
        ApprovalAnswer::Approved {
            call_hash: req.call_hash,
            by: QUEUE_PRINCIPAL.into()
        }
    );
    assert!(files(&q).is_empty(), "{:?}", files(&q));
}

#[tokio::test]
async fn deny_with_reason_reaches_the_waiter() {
    let (_home, q) = setup();
    let p = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    let waiting = spawn_wait(&q, &p);
    other_handle(&q)
        .answer(
            &p.id,
            Resolution::Denied {
                by: "ana".into(),
                reason: "not on a Friday".into(),
            },
        )
        .unwrap();
    assert_eq!(
        joined(waiting).await,
        ApprovalAnswer::Denied {
            by: QUEUE_PRINCIPAL.into(),
            reason: "not on a Friday".into()
        }
    );
    assert!(files(&q).is_empty());
}

#[tokio::test]
async fn no_answer_in_time_is_a_denial_and_a_late_approve_is_refused() {
    let (_home, q) = setup();
    // The short timeout is the subject under test.
    let p = q
        .submit(&request("shell", json!({})), Duration::from_millis(300))
        .unwrap();
    let answer = joined(spawn_wait(&q, &p)).await;
    assert_eq!(
        answer,
        ApprovalAnswer::Denied {
            by: "system".into(),
            reason: "no answer within 0.3 s".into()
        }
    );
    assert!(files(&q).is_empty(), "{:?}", files(&q));
    let late = q
        .answer(&p.id, Resolution::Approved { by: "ana".into() })
        .unwrap_err();
    assert!(matches!(late, QueueError::Unknown { .. }), "{late:?}");
    let msg = late.to_string();
    assert!(msg.contains("already resolved"), "{msg}");
    assert!(msg.contains("pincer approvals list"), "{msg}");
    assert!(
        files(&q).is_empty(),
        "a refused answer leaves nothing behind"
    );
}

#[test]
fn whole_seconds_are_written_plainly() {
    assert_eq!(seconds(Duration::from_secs(60)), "60 s");
    assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
}

#[test]
fn an_approval_is_answered_once() {
    let (_home, q) = setup();
    let p = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    q.answer(&p.id, Resolution::Approved { by: "ana".into() })
        .unwrap();
    let again = other_handle(&q)
        .answer(
            &p.id,
            Resolution::Denied {
                by: "bo".into(),
                reason: "no".into(),
            },
        )
        .unwrap_err();
    assert!(
        matches!(again, QueueError::AlreadyAnswered { .. }),
        "{again:?}"
    );
    assert!(again.to_string().contains(&p.id));
    // The answered approval is no longer open.
    assert!(q.list().unwrap().pending.is_empty());
    assert!(matches!(
        q.get(&p.id),
        Err(QueueError::AlreadyAnswered { .. })
    ));
}

#[test]
fn of_eight_concurrent_answers_exactly_one_wins() {
    let (_home, q) = setup();
    let p = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    let barrier = std::sync::Barrier::new(8);
    let results: Vec<Result<Pending, QueueError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (q, id, barrier) = (other_handle(&q), p.id.clone(), &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let res = if i % 2 == 0 {
                        Resolution::Approved {
                            by: format!("user{i}"),
                        }
                    } else {
                        Resolution::Denied {
                            by: format!("user{i}"),
                            reason: "no".into(),
                        }
                    };
                    q.answer(&id, res)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    for r in &results {
        if let Err(e) = r {
            assert!(matches!(e, QueueError::AlreadyAnswered { .. }), "{e:?}");
        }
    }
    // Exactly one complete answer file, and no temp files left over.
    assert_eq!(
        files(&q),
        vec![
            format!("{}.answer.json", p.id),
            format!("{}.pending.json", p.id)
        ]
    );
}

#[tokio::test]
async fn an_answer_copied_from_another_approval_is_a_denial() {
    let (_home, q) = setup();
    let a = q
        .submit(&request("shell", json!({"command": "ls"})), MINUTE)
        .unwrap();
    let b = q
        .submit(&request("shell", json!({"command": "rm -rf /"})), MINUTE)
        .unwrap();
    assert_ne!(a.call_hash, b.call_hash);
    q.answer(&a.id, Resolution::Approved { by: "ana".into() })
        .unwrap();
    // Replay: A's approval file placed under B's id.
    fs::copy(q.answer_path(&a.id), q.answer_path(&b.id)).unwrap();

    match joined(spawn_wait(&q, &b)).await {
        ApprovalAnswer::Denied { by, reason } => {
            assert_eq!(by, "system");
            assert!(reason.contains("different call"), "{reason}");
            assert!(reason.contains(&b.id), "{reason}");
        }
        other => panic!("a replayed approval was accepted: {other:?}"),
    }
    // A itself is still answered correctly.
    assert!(matches!(
        joined(spawn_wait(&q, &a)).await,
        ApprovalAnswer::Approved { call_hash, .. } if call_hash == a.call_hash
    ));
    assert!(files(&q).is_empty(), "{:?}", files(&q));
}

/// An answer file under the right id, saying the right id, but carrying
/// another call's hash (what an approval of a harmless call, edited to
/// name a dangerous one, looks like) is a denial; so is one carrying the
/// right hash but another id. Each check is tested alone.
#[tokio::test]
async fn an_answer_with_the_right_id_but_another_call_hash_is_a_denial() {
    let (_home, q) = setup();
    let a = q
        .submit(&request("shell", json!({"command": "ls"})), MINUTE)
        .unwrap();
    q.answer(&a.id, Resolution::Approved { by: "ana".into() })
        .unwrap();
    let approved: serde_json::Value =
        serde_json::from_slice(&fs::read(q.answer_path(&a.id)).unwrap()).unwrap();
    assert_eq!(approved["answer"], "approved");
    for (id_in_file, hash_in_file) in [
        (None, Some(a.call_hash.clone())),
        (None, Some("0".repeat(64))),
        (Some(a.id.clone()), None),
    ] {
        let b = q
            .submit(&request("shell", json!({"command": "rm -rf /"})), MINUTE)
            .unwrap();
        let mut forged = approved.clone();
        forged["id"] = json!(id_in_file.unwrap_or_else(|| b.id.clone()));
        forged["call_hash"] = json!(hash_in_file.clone().unwrap_or_else(|| b.call_hash.clone()));
        let path = q.answer_path(&b.id);
        fs::write(&path, serde_json::to_vec(&forged).unwrap()).unwrap();
        match joined(spawn_wait(&q, &b)).await {
            ApprovalAnswer::Denied { by, reason } => {
                assert_eq!(by, "system");
                assert!(reason.contains("different call"), "{reason}");
            }
            other => panic!("a forged answer was accepted ({forged}): {other:?}"),
        }
    }
}

#[test]
fn bad_ids_are_refused_naming_the_id() {
    let (_home, q) = setup();
    for (id, why) in [
        ("", "wrong length"),
        ("abc", "wrong length"),
        ("0123456789abcdef", "wrong length"),
        ("ABCDEF0123", "0-9 and a-f"),
        ("../../etc/", "0-9 and a-f"),
        ("abcd/ef012", "0-9 and a-f"),
        ("..aaaaaaaa", "0-9 and a-f"),
        ("g123456789", "0-9 and a-f"),
        ("abcdef012 ", "0-9 and a-f"),
        ("abcdef01\n2", "0-9 and a-f"),
        ("abcdéf012", "0-9 and a-f"),
    ] {
        for err in [
            q.get(id).unwrap_err(),
            q.answer(id, Resolution::Approved { by: "ana".into() })
                .unwrap_err(),
        ] {
            assert!(matches!(err, QueueError::BadId { .. }), "{id:?}: {err:?}");
            let msg = err.to_string();
            assert!(msg.contains(&format!("`{}`", id.escape_debug())), "{msg}");
            assert!(msg.contains(why), "{id:?}: {msg}");
        }
    }
    let long = "a".repeat(5000);
    let msg = q.get(&long).unwrap_err().to_string();
    assert!(msg.len() < 300 && msg.contains("aaaa…"), "{msg}");
    assert!(
        !q.get("abcdef01\x1b2")
            .unwrap_err()
            .to_string()
            .contains('\x1b')
    );
    // A well-formed id nobody submitted is unknown, with the hint.
    let err = q.get("0123456789").unwrap_err();
    assert!(matches!(err, QueueError::Unknown { .. }), "{err:?}");
    assert!(err.to_string().contains("pincer approvals list"));
}

#[test]
fn an_answer_must_say_who_answers() {
    let (_home, q) = setup();
    let p = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    let err = q
        .answer(&p.id, Resolution::Approved { by: " ".into() })
        .unwrap_err();
    assert!(err.to_string().starts_with("field `by`"), "{err}");
}

#[test]
fn expired_approvals_are_hidden_and_refused() {
    let (_home, q) = setup();
    let p = q
        .submit(&request("shell", json!({})), Duration::ZERO)
        .unwrap();
    assert!(q.list().unwrap().pending.is_empty());
    let err = q
        .answer(&p.id, Resolution::Approved { by: "ana".into() })
        .unwrap_err();
    assert!(matches!(err, QueueError::Expired { .. }), "{err:?}");
    assert!(err.to_string().contains("expired"));
    assert!(!q.answer_path(&p.id).exists());
}

#[test]
fn a_corrupt_file_is_reported_and_does_not_hide_the_others() {
    let (_home, q) = setup();
    let good = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    let bad = q.pending_path("00000000aa");
    fs::write(&bad, b"{\"id\": \"00000000aa\", \"tool\": 3").unwrap();
    let wrong_type = q.pending_path("00000000bb");
    let mut v = serde_json::to_value(&good).unwrap();
    v["id"] = json!("00000000bb");
    v["risk"] = json!("extreme");
    fs::write(&wrong_type, v.to_string()).unwrap();
    // Not records: ignored.
    fs::write(q.dir().join("README"), b"hi").unwrap();
    fs::write(q.dir().join(".x.pending.json.1-1.tmp"), b"{").unwrap();

    let listing = q.list().unwrap();
    assert_eq!(listing.pending, vec![good]);
    let problems: Vec<String> = listing.problems.iter().map(|e| e.to_string()).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|m| m.contains("00000000aa.pending.json"))
    );
    assert!(
        problems
            .iter()
            .any(|m| m.contains("00000000bb.pending.json") && m.contains("field `risk`")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn dropping_the_wait_withdraws_the_approval() {
    use futures_util::FutureExt;
    let (_home, q) = setup();
    let p = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    // The first poll finds no answer and parks; then the future is dropped.
    assert!(q.wait(&p).now_or_never().is_none());
    assert!(files(&q).is_empty(), "{:?}", files(&q));
    let err = q
        .answer(&p.id, Resolution::Approved { by: "ana".into() })
        .unwrap_err();
    assert!(matches!(err, QueueError::Unknown { .. }), "{err:?}");
}

#[tokio::test]
async fn a_pending_removed_by_hand_ends_the_wait_as_a_denial() {
    let (_home, q) = setup();
    let p = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    fs::remove_file(q.pending_path(&p.id)).unwrap();
    match joined(spawn_wait(&q, &p)).await {
        ApprovalAnswer::Denied { by, reason } => {
            assert_eq!(by, "system");
            assert!(reason.contains("withdrawn"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn prune_removes_long_expired_leftovers_only() {
    let (_home, q) = setup();
    let fresh = q.submit(&request("shell", json!({})), MINUTE).unwrap();
    // What an agent killed an hour ago left behind.
    let mut stale = fresh.clone();
    stale.id = "00000000cc".into();
    stale.created = Timestamp::parse("2020-01-01T00:00:00Z").unwrap();
    stale.expires = Timestamp::parse("2020-01-01T00:01:00Z").unwrap();
    fs::write(q.pending_path(&stale.id), to_line(&stale)).unwrap();
    fs::write(q.answer_path(&stale.id), b"{}").unwrap();
    // An unreadable file is left for a person to look at.
    fs::write(q.pending_path("00000000dd"), b"junk").unwrap();

    assert_eq!(q.prune().unwrap(), 2);
    assert_eq!(
        files(&q),
        vec![
            "00000000dd.pending.json".to_string(),
            format!("{}.pending.json", fresh.id)
        ]
    );
}

#[tokio::test]
async fn queue_approver_reports_the_id_then_waits_for_the_answer() {
    let (_home, q) = setup();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let tx = std::sync::Mutex::new(tx);
    let approver = QueueApprover::new(q.clone(), MINUTE).on_pending(move |p| {
        let _ = tx.lock().unwrap().send(p.id.clone());
    });
    // "Another terminal": answers whatever id the front-end printed.
    let answerer = {
        let q = other_handle(&q);
        std::thread::spawn(move || {
            let id = rx.recv_timeout(PROMPTLY).unwrap();
            q.answer(&id, Resolution::Approved { by: "ana".into() })
                .unwrap();
        })
    };
    let req = request("shell", json!({"command": "reboot"}));
    let answer = tokio::time::timeout(PROMPTLY, approver.approve(&req))
        .await
        .unwrap();
    answerer.join().unwrap();
    assert_eq!(
        answer,
        ApprovalAnswer::Approved {
            call_hash: req.call_hash,
            by: QUEUE_PRINCIPAL.into()
        }
    );
    assert!(files(&q).is_empty());
}

#[test]
fn a_timeout_longer_than_a_week_is_refused() {
    let (_home, q) = setup();
    let err = q
        .submit(&request("shell", json!({})), MAX_TIMEOUT + MINUTE)
        .unwrap_err();
    assert!(err.to_string().starts_with("field `timeout`"), "{err}");
}

#[test]
fn answer_records_round_trip_with_the_documented_shape() {
    let rec = AnswerRecord {
        id: "0123456789".into(),
        call_hash: "ab".into(),
        resolution: Resolution::Denied {
            by: "ana".into(),
            reason: "no".into(),
        },
        answered: Timestamp::parse("2026-01-02T03:04:05.678Z").unwrap(),
    };
    let v: serde_json::Value = serde_json::from_slice(&to_line(&rec)).unwrap();
    assert_eq!(
        v,
        json!({"id": "0123456789", "call_hash": "ab", "answer": "denied", "by": "ana",
               "reason": "no", "answered": "2026-01-02T03:04:05.678Z"})
    );
    let back: AnswerRecord = serde_json::from_value(v).unwrap();
    assert_eq!(back, rec);
}

#[test]
fn a_pending_file_edited_after_submission_cannot_be_approved() {
    let (_home, q) = setup();
    let p = q
        .submit(
            &request("shell", json!({"command": "rm -rf build"})),
            MINUTE,
        )
        .unwrap();
    // Someone shows the person harmless arguments but keeps the real hash.
    let path = q.dir().join(format!("{}.pending.json", p.id));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("rm -rf build", "ls")).unwrap();
    let listing = q.list().unwrap();
    assert!(listing.pending.is_empty());
    assert!(
        listing.problems[0].to_string().contains("call_hash"),
        "{:?}",
        listing.problems
    );
    let err = q
        .answer(&p.id, Resolution::Approved { by: "ana".into() })
        .unwrap_err();
    assert!(err.to_string().contains("call_hash"), "{err}");
}

/// A hand-written answer file claiming to be the owner is an answer (the
/// directory is the channel), but its claim is not what is recorded.
#[tokio::test]
async fn a_claimed_principal_in_the_file_is_never_recorded() {
    let (_home, q) = setup();
    let req = request("shell", json!({"command": "reboot"}));
    let p = q.submit(&req, MINUTE).unwrap();
    let waiting = spawn_wait(&q, &p);
    let forged = json!({
        "id": p.id, "call_hash": p.call_hash, "answer": "approved",
        "by": "human:owner", "answered": "2026-12-01T00:00:00.000Z"
    });
    std::fs::write(
        q.dir().join(format!("{}.answer.json", p.id)),
        format!("{forged}\n"),
    )
    .unwrap();
    let got = joined(waiting).await;
    assert_eq!(
        got,
        ApprovalAnswer::Approved {
            call_hash: req.call_hash,
            by: QUEUE_PRINCIPAL.into()
        }
    );
}

#[test]
fn a_timeout_under_a_week_is_accepted() {
    let (_home, q) = setup();
    let six_days = Duration::from_secs(6 * 24 * 3600);
    let p = q.submit(&request("shell", json!({})), six_days).unwrap();
    assert_eq!(p.timeout(), six_days);
}

/// An answer file without its pending file is kept until it is older than
/// the grace period: it may be an answer racing a withdrawal, and the
/// waiter re-checks before it is gone.
#[test]
fn prune_keeps_a_fresh_orphan_answer_until_it_is_old() {
    let (_home, q) = setup();
    let path = q.answer_path("00000000ee");
    fs::write(&path, b"{}").unwrap();
    assert_eq!(q.prune().unwrap(), 0);
    assert!(path.exists());
    let old = std::time::SystemTime::now() - PRUNE_GRACE - MINUTE;
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(q.prune().unwrap(), 1);
    assert!(!path.exists());
}
