//! Chat over HTTP and WebSocket: the events are the agent's own, one
//! writer per session, and a client that leaves mid-turn leaves a valid
//! session.

use crate::support::{eventually, replies, start};
use serde_json::json;

fn names(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_turn_answers_with_the_reply_and_the_agents_events() {
    let gw = start(&replies(2), "supervised").await;
    let token = gw.chatter().await;
    let r = gw
        .post(
            "/api/chat",
            &token,
            r#"{"session": "h", "message": "hello"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["reply"], "reply 0");
    assert_eq!(v["session"], "h");
    let events = v["events"].as_array().expect("events");
    let n = names(events);
    assert_eq!(n.first().map(String::as_str), Some("turn_started"));
    assert_eq!(n.last().map(String::as_str), Some("turn_done"));
    assert!(n.iter().any(|e| e == "text_delta"));
    // The session is stored like any other.
    let s = gw.get("/api/sessions/h", &token).await.json();
    assert_eq!(s["messages"].as_array().map(Vec::len), Some(2));
    let list = gw.get("/api/sessions", &token).await.json();
    assert!(
        list["sessions"]
            .as_array()
            .expect("list")
            .iter()
            .any(|s| s["key"] == "h")
    );
    assert_eq!(gw.get("/api/sessions/nope", &token).await.status, 404);
    assert_eq!(gw.get("/api/sessions/..%2Fx", &token).await.status, 400);
    let bad = gw
        .post(
            "/api/chat",
            &token,
            r#"{"session": "../../etc", "message": "x"}"#,
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("field `session`"), "{}", bad.body);
}

/// The WebSocket stream carries exactly what `pincer agent --json` prints:
/// the same event names and fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_events_are_agent_events() {
    let gw = start(
        &json!({"turns": [
            {"text": "Looking.", "tool_calls": [{"id": "s", "name": "i2c_scan", "arguments": {}}]},
            {"text": "Found the sensors."}
        ]}),
        "supervised",
    )
    .await;
    let token = gw.chatter().await;
    let mut ws = gw.ws_as_browser(&token).await;
    ws.send(json!({"type": "turn", "session": "w", "text": "what is on the bus?"}))
        .await;
    let events = ws.until("turn_done").await;
    let n = names(&events);
    for want in [
        "turn_started",
        "text_delta",
        "model_replied",
        "tool_call_started",
        "tool_call_finished",
        "turn_done",
    ] {
        assert!(n.iter().any(|e| e == want), "{want} in {n:?}");
    }
    let started = events
        .iter()
        .find(|e| e["event"] == "tool_call_started")
        .expect("started");
    assert_eq!(started["name"], "i2c_scan");
    assert_eq!(started["risk"], "low");
    let done = events.last().expect("done");
    assert_eq!(done["reply"], "Found the sensors.");
    assert_eq!(done["stop"], "final_reply");
    // Bad client messages are answered, and the connection lives on.
    ws.send(json!({"type": "bogus"})).await;
    assert_eq!(ws.next().await.expect("reply")["event"], "error");
    ws.send(json!({"type": "turn", "text": "   "})).await;
    let e = ws.next().await.expect("reply");
    assert_eq!(e["event"], "error");
    assert!(e["error"].as_str().unwrap_or("").contains("message"), "{e}");
    ws.send(json!({"type": "cancel"})).await;
    assert_eq!(ws.next().await.expect("reply")["event"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_runs_one_turn_at_a_time() {
    let gw = start(
        &json!({"turns": [
            {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}]},
            {"text": "done"},
            {"text": "next"}
        ]}),
        "supervised",
    )
    .await;
    let approver = gw.approver().await;
    let mut a = gw.ws_as_browser(&approver).await;
    a.send(json!({"type": "turn", "session": "one", "text": "read it"}))
        .await;
    a.until("approval_needed").await;
    // Another connection, and HTTP, on the same session: busy, not queued.
    let mut b = gw.ws_as_browser(&approver).await;
    b.send(json!({"type": "turn", "session": "one", "text": "me too"}))
        .await;
    let refused = b.until("turn_failed").await;
    let last = refused.last().expect("failed");
    assert!(
        last["error"]
            .as_str()
            .unwrap_or("")
            .contains("running a turn"),
        "{last}"
    );
    let r = gw
        .post(
            "/api/chat",
            &approver,
            r#"{"session": "one", "message": "me too"}"#,
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    // The same connection cannot start a second turn either.
    a.send(json!({"type": "turn", "session": "other", "text": "x"}))
        .await;
    assert_eq!(a.next().await.expect("reply")["event"], "error");
    let id = gw.get("/api/approvals", &approver).await.json()["pending"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    gw.post(&format!("/api/approvals/{id}/approve"), &approver, "")
        .await;
    a.until("turn_done").await;
    // Free again.
    b.send(json!({"type": "turn", "session": "one", "text": "now"}))
        .await;
    let done = b.until("turn_done").await;
    assert_eq!(done.last().expect("done")["reply"], "next");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_turn_leaves_a_valid_session() {
    let gw = start(
        &json!({"turns": [
            {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}]},
            {"text": "after the cut"}
        ]}),
        "supervised",
    )
    .await;
    let token = gw.approver().await;
    let mut ws = gw.ws_as_browser(&token).await;
    ws.send(json!({"type": "turn", "session": "cut", "text": "read it"}))
        .await;
    ws.until("approval_needed").await;
    ws.close().await;
    // The turn is cancelled: its approval is withdrawn.
    let gw = &gw;
    let t = token.clone();
    eventually(10, "the approval is withdrawn", || {
        let t = t.clone();
        async move {
            gw.get("/api/approvals", &t).await.json()["pending"]
                .as_array()
                .is_some_and(Vec::is_empty)
        }
    })
    .await;
    // The next turn repairs the cut call and goes on.
    let r = gw
        .post(
            "/api/chat",
            &token,
            r#"{"session": "cut", "message": "go on"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["reply"], "after the cut");
    let repaired = v["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["event"] == "repaired")
        .cloned()
        .expect("repaired");
    assert_eq!(repaired["closed_calls"], json!(["t"]));
    // On disk: every tool call has its result.
    let s = gw.get("/api/sessions/cut", &token).await.json();
    assert_eq!(s["repair_on_load"]["synthetic_results"], json!([]), "{s}");
    // The cut call's decision is in the trail, nothing ran.
    assert!(crate::support::entries(gw, "tool.call").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_clients_at_once() {
    let gw = std::sync::Arc::new(start(&replies(40), "supervised").await);
    let token = gw.chatter().await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let gw = gw.clone();
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            let mut ws = gw.ws_as_browser(&token).await;
            let mut replies = Vec::new();
            for _ in 0..2 {
                ws.send(json!({"type": "turn", "session": format!("c{i}"), "text": "hi"}))
                    .await;
                let done = ws.until("turn_done").await;
                replies.push(
                    done.last().expect("done")["reply"]
                        .as_str()
                        .expect("reply")
                        .to_string(),
                );
            }
            replies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("join"));
    }
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        40,
        "every scripted reply went to exactly one turn"
    );
    let m = gw.get("/metrics", &token).await.body;
    assert!(
        m.lines()
            .any(|l| l == "pincer_turns_total{outcome=\"done\"} 40"),
        "{m}"
    );
}
