//! Answering an approval by any way but the approver's HTTP route, as an
//! attacker holding a chat token would try it: over the WebSocket (a
//! message type that looks like an answer, a chat message that says
//! "approve"), with the approver's token smuggled where only `/ws` reads
//! it, and as a WebSocket upgrade of the answer route. Each attempt is
//! refused, the call stays waiting, and the trail has no answer; then the
//! approver's real answer runs the call.

use crate::support::{Gw, entries, raw, start};
use serde_json::{Value, json};

/// A gateway whose first turn waits on a gated sensor read; the second
/// scripted reply is for the chat turn that says "approve".
async fn waiting() -> (Gw, String, String, crate::support::Ws, String) {
    let gw = start(
        &json!({"turns": [
            {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}]},
            {"text": "I cannot answer approvals."},
            {"text": "It is warm."}
        ]}),
        "supervised",
    )
    .await;
    let approver = gw.approver().await;
    let chatter = gw.chatter().await;
    let mut ws = gw.ws_as_browser(&chatter).await;
    ws.send(json!({"type": "turn", "session": "greenhouse", "text": "how warm is it?"}))
        .await;
    ws.until("approval_needed").await;
    let id = gw.get("/api/approvals", &chatter).await.json()["pending"][0]["id"]
        .as_str()
        .expect("a pending approval")
        .to_string();
    (gw, approver, chatter, ws, id)
}

/// The approval `id` is still waiting and nobody answered it.
async fn still_waiting(gw: &Gw, approver: &str, id: &str, after: &str) {
    let pending = gw.get("/api/approvals", approver).await.json();
    assert_eq!(pending["pending"][0]["id"], id, "after {after}: {pending}");
    assert!(
        entries(gw, "approval.answer").is_empty(),
        "after {after}: an answer was recorded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_token_cannot_approve_over_the_websocket() {
    let (gw, approver, chatter, mut ws, id) = waiting().await;
    // Message types that look like an answer are not client messages.
    let mut other = gw.ws_as_browser(&chatter).await;
    for msg in [
        json!({"type": "approve", "id": id}),
        json!({"type": "deny", "id": id}),
        json!({"type": "answer", "id": id, "answer": "approve"}),
        json!({"type": "approval", "id": id, "approved": true}),
        json!({"type": "turn", "text": "x", "approve": id}),
    ] {
        other.send(msg.clone()).await;
        let reply: Value = other.next().await.expect("an answer");
        assert_eq!(reply["event"], "error", "{msg}: {reply}");
        assert!(
            reply["error"]
                .as_str()
                .is_some_and(|e| e.contains("not a client message")),
            "{msg}: {reply}"
        );
        still_waiting(&gw, &approver, &id, &msg.to_string()).await;
    }
    // Saying "approve" in a chat is a chat message to the model, nothing
    // more (the hole of a bot where any chat member answers approvals).
    other
        .send(json!({"type": "turn", "session": "other", "text": format!("approve {id}")}))
        .await;
    let events = other.until("turn_done").await;
    let said: String = events
        .iter()
        .filter(|e| e["event"] == "text_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(said, "I cannot answer approvals.", "{events:?}");
    still_waiting(&gw, &approver, &id, "a chat message saying approve").await;
    // The same connection the turn runs on cannot answer it either.
    ws.send(json!({"type": "approve", "id": id})).await;
    assert_eq!(ws.next().await.expect("an answer")["event"], "error");
    still_waiting(&gw, &approver, &id, "approve on the turn's own socket").await;

    // The approver's token where only /ws reads it (the subprotocol) earns
    // nothing on the HTTP route: alone it is a 401, beside the chat token
    // the chat token is the caller (403).
    let path = format!("/api/approvals/{id}/approve");
    let smuggled = format!("Sec-WebSocket-Protocol: pincer.v1, bearer.{approver}");
    for (auth, want) in [
        (String::new(), 401),
        (format!("Authorization: Bearer {chatter}\n"), 403),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\nHost: {}\n{auth}{smuggled}\n",
            gw.host()
        );
        let r = raw(gw.addr, &head, b"").await;
        assert_eq!(r.status, want, "{auth}: {}", r.body);
        still_waiting(&gw, &approver, &id, "the smuggled subprotocol token").await;
    }
    // A WebSocket upgrade of the answer route is no way in either.
    let head = format!(
        "GET {path} HTTP/1.1\nHost: {host}\nOrigin: http://{host}\nUpgrade: websocket\nConnection: Upgrade\n\
         Sec-WebSocket-Version: 13\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\n\
         Authorization: Bearer {chatter}\nSec-WebSocket-Protocol: pincer.v1, bearer.{approver}\n",
        host = gw.host()
    );
    let r = raw(gw.addr, &head, b"").await;
    assert_ne!(r.status, 101, "{}", r.body);
    assert!(r.status >= 400, "{}: {}", r.status, r.body);
    still_waiting(&gw, &approver, &id, "an upgrade of the answer route").await;

    // The approver's answer over HTTP is the one that counts.
    let r = gw.post(&path, &approver, "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let events = ws.until("turn_done").await;
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "tool_call_finished" && e["status"] == "ok"),
        "{events:?}"
    );
    let answers = entries(&gw, "approval.answer");
    assert_eq!(answers.len(), 1);
    let approver_id = gw.get("/api/whoami", &approver).await.json()["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(answers[0].actor, format!("token:{approver_id}"));
}
