//! Attacks on the gateway's authentication, as an attacker would send them:
//! raw requests on a socket, from loopback (which earns nothing).

use crate::support::{Gw, raw, replies, start, start_with};
use pincer_gateway::Limits;
use serde_json::json;

/// Every protected route, with a body where it takes one.
const PROTECTED: &[(&str, &str, &str)] = &[
    ("GET", "/api/whoami", ""),
    ("POST", "/api/chat", r#"{"message": "hello"}"#),
    ("GET", "/api/sessions", ""),
    ("GET", "/api/sessions/web", ""),
    ("GET", "/api/approvals", ""),
    ("POST", "/api/approvals/0123456789/approve", ""),
    (
        "POST",
        "/api/approvals/0123456789/deny",
        r#"{"reason": "no"}"#,
    ),
    ("GET", "/api/audit", ""),
    ("GET", "/api/audit?limit=5", ""),
    ("GET", "/api/audit/verify", ""),
    ("GET", "/api/memory/search?q=x", ""),
    ("GET", "/api/hardware", ""),
    ("GET", "/api/hardware/gpio", ""),
    ("GET", "/api/status", ""),
    ("GET", "/metrics", ""),
    ("GET", "/ws", ""),
    // Paths that do not exist learn nothing either.
    ("GET", "/api", ""),
    ("GET", "/api/", ""),
    ("GET", "/api/nonexistent", ""),
    ("DELETE", "/api/sessions/web", ""),
    ("GET", "/api/../api/status", ""),
    ("GET", "//api/status", ""),
    ("GET", "/API/status", ""),
    ("GET", "/%61pi/status", ""),
    ("GET", "/nope", ""),
    ("GET", "/index.html", ""),
];

/// What a wrong credential looks like on the wire.
fn wrong_credentials(revoked: &str) -> Vec<Option<String>> {
    vec![
        None,
        Some("Authorization: Bearer".into()),
        Some("Authorization: Bearer ".into()),
        Some("Authorization: Bearer garbage".into()),
        Some(format!(
            "Authorization: Bearer pincer_{}_{}",
            "0".repeat(12),
            "0".repeat(64)
        )),
        Some(format!("Authorization: Bearer {revoked}")),
        Some(format!("Authorization: Basic {revoked}")),
        Some(format!("Authorization: Bearer {revoked}x")),
        // A forwarded-for header claiming loopback: nothing trusts it.
        Some("X-Forwarded-For: 127.0.0.1\nX-Real-IP: 127.0.0.1".into()),
        // A token anywhere but the header.
        Some(format!("Cookie: token={revoked}")),
    ]
}

fn assert_unauthorized(r: &crate::support::Resp, what: &str) {
    assert_eq!(r.status, 401, "{what}: {}", r.body);
    assert_eq!(r.body, r#"{"error":"unauthorized"}"#, "{what}");
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"pincer\""),
        "{what}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_answers_anything_but_401_without_a_valid_token() {
    let gw = start(&replies(4), "supervised").await;
    // A real token, then revoked: it must be as dead as a made-up one.
    let revoked = gw.chatter().await;
    let id = revoked.split('_').nth(1).expect("id").to_string();
    pincer_gateway::revoke_token(&gw.t.home, "human:cli", &id).expect("revoke");
    let creds = wrong_credentials(&revoked);
    for (method, path, body) in PROTECTED {
        for cred in &creds {
            let mut head = format!("{method} {path} HTTP/1.1\nHost: {}\n", gw.host());
            if let Some(c) = cred {
                head.push_str(c);
                head.push('\n');
            }
            let r = raw(gw.addr, &head, body.as_bytes()).await;
            assert_unauthorized(&r, &format!("{method} {path} with {cred:?}"));
        }
        // The query string is not a credential either.
        let r = raw(
            gw.addr,
            &format!(
                "{method} {path}{}token={revoked} HTTP/1.1\nHost: {}\n",
                if path.contains('?') { "&" } else { "?" },
                gw.host()
            ),
            body.as_bytes(),
        )
        .await;
        assert_unauthorized(&r, &format!("{method} {path}?token="));
    }
    // Nothing the refused requests asked for happened.
    assert!(crate::support::entries(&gw, "hw").is_empty());
    assert!(
        !gw.t.home.sessions_dir().join("web.jsonl").exists(),
        "no turn ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_needs_a_token_and_this_gateways_origin() {
    let gw = start(&replies(2), "supervised").await;
    let token = gw.approver().await;
    let origin = format!("http://{}", gw.host());
    let err = |r: Result<crate::support::Ws, _>| match r {
        Ok(_) => panic!("the handshake succeeded"),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("{e}"),
    };
    // No token; a wrong one; a token offered as a plain protocol name.
    assert_eq!(err(gw.ws(&[("Origin", origin.clone())]).await), 401);
    assert_eq!(
        err(gw
            .ws(&[("Sec-WebSocket-Protocol", "pincer.v1, bearer.nope".into())])
            .await),
        401
    );
    assert_eq!(
        err(gw
            .ws(&[("Sec-WebSocket-Protocol", format!("pincer.v1, {token}"))])
            .await),
        401
    );
    // A valid token from a foreign page: cross-site WebSocket hijacking.
    for foreign in [
        "http://evil.example".to_string(),
        "null".to_string(),
        format!("https://{}", gw.host()),
        format!("http://{}.evil.example", gw.host()),
        "http://localhost".to_string(),
    ] {
        let r = gw
            .ws(&[
                ("Origin", foreign.clone()),
                (
                    "Sec-WebSocket-Protocol",
                    format!("pincer.v1, bearer.{token}"),
                ),
            ])
            .await;
        assert_eq!(err(r), 403, "Origin {foreign}");
    }
    // The page's own origin, with the token as subprotocol or header.
    let mut ws = gw.ws_as_browser(&token).await;
    ws.send(json!({"type": "turn", "text": "hi"})).await;
    let events = ws.until("turn_done").await;
    assert_eq!(events.last().expect("done")["reply"], "reply 0");
    ws.close().await;
    let mut ws = gw
        .ws(&[("Authorization", format!("Bearer {token}"))])
        .await
        .expect("a client without Origin, with the header");
    ws.send(json!({"type": "turn", "text": "hi"})).await;
    ws.until("turn_done").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_is_not_this_gateway_is_refused_everywhere() {
    let gw = start(&replies(1), "supervised").await;
    let port = gw.addr.port();
    // DNS rebinding: a page on evil.example whose name now points here.
    for host in [
        format!("evil.example:{port}"),
        "evil.example".into(),
        format!("127.0.0.1:{}", port + 1),
        String::new(),
    ] {
        for path in ["/health", "/", "/pair", "/.well-known/asap/manifest.json"] {
            let head = if host.is_empty() {
                format!("GET {path} HTTP/1.0\n")
            } else {
                format!("GET {path} HTTP/1.1\nHost: {host}\n")
            };
            let r = raw(gw.addr, &head, b"").await;
            assert_eq!(r.status, 403, "Host {host:?} {path}: {}", r.body);
        }
    }
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let r = raw(
            gw.addr,
            &format!("GET /health HTTP/1.1\nHost: {host}\n"),
            b"",
        )
        .await;
        assert_eq!(r.status, 200, "{host}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_origin_requests_are_refused_and_never_get_cors_headers() {
    let gw = start(&replies(1), "supervised").await;
    let token = gw.approver().await;
    for (method, path) in [
        ("GET", "/api/status"),
        ("OPTIONS", "/api/status"),
        ("POST", "/pair"),
    ] {
        let r = raw(
            gw.addr,
            &format!(
                "{method} {path} HTTP/1.1\nHost: {}\nOrigin: http://evil.example\nAuthorization: Bearer {token}\nAccess-Control-Request-Method: GET\n",
                gw.host()
            ),
            b"",
        )
        .await;
        assert_eq!(r.status, 403, "{method} {path}");
        assert!(r.header("access-control-allow-origin").is_none());
    }
    let same = raw(
        gw.addr,
        &format!(
            "GET /api/whoami HTTP/1.1\nHost: {}\nOrigin: http://{}\nAuthorization: Bearer {token}\n",
            gw.host(),
            gw.host()
        ),
        b"",
    )
    .await;
    assert_eq!(same.status, 200, "{}", same.body);
    assert!(same.header("access-control-allow-origin").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_the_security_headers() {
    let gw = start(&replies(1), "supervised").await;
    for path in ["/", "/app.js", "/health", "/api/status", "/nope"] {
        let r = gw.req("GET", path, None, "").await;
        for (h, want) in [
            ("x-content-type-options", "nosniff"),
            ("x-frame-options", "DENY"),
            ("referrer-policy", "no-referrer"),
            ("cache-control", "no-store"),
        ] {
            assert_eq!(r.header(h), Some(want), "{path} {h}");
        }
        let csp = r.header("content-security-policy").expect("csp");
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
        assert!(!csp.contains("unsafe-inline"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_answered_only_by_an_approver_token() {
    let gw = start(
        &json!({"turns": [
            {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}]},
            {"text": "It is warm."}
        ]}),
        "supervised",
    )
    .await;
    let approver = gw.approver().await;
    let chatter = gw.chatter().await;
    let mut ws = gw.ws_as_browser(&chatter).await;
    ws.send(json!({"type": "turn", "text": "how warm is it?"}))
        .await;
    ws.until("approval_needed").await;
    let pending = gw.get("/api/approvals", &chatter).await.json();
    let id = pending["pending"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    for path in [
        format!("/api/approvals/{id}/approve"),
        format!("/api/approvals/{id}/deny"),
    ] {
        let r = gw.post(&path, &chatter, "").await;
        assert_eq!(r.status, 403, "{}", r.body);
        assert!(r.body.contains("may not answer approvals"), "{}", r.body);
    }
    // Still waiting: the refusal changed nothing.
    let still = gw.get("/api/approvals", &approver).await.json();
    assert_eq!(still["pending"][0]["id"], id.as_str());
    assert!(crate::support::entries(&gw, "approval.answer").is_empty());
    // Bad ids are refused as input, before anything is looked up.
    for bad in ["..%2F..%2Fx", "ABCDEF0123", "123"] {
        let r = gw
            .post(&format!("/api/approvals/{bad}/approve"), &approver, "")
            .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    let r = gw
        .post(&format!("/api/approvals/{id}/approve"), &approver, "")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let approver_id = gw.get("/api/whoami", &approver).await.json()["id"]
        .as_str()
        .expect("id")
        .to_string();
    let principal = format!("token:{approver_id}");
    assert_eq!(r.json()["by"], principal.as_str());
    let events = ws.until("turn_done").await;
    let finished = events
        .iter()
        .find(|e| e["event"] == "tool_call_finished")
        .expect("ran");
    assert_eq!(finished["status"], "ok", "{finished}");
    // Answering again: the approval is gone.
    let again = gw
        .post(&format!("/api/approvals/{id}/approve"), &approver, "")
        .await;
    assert_eq!(again.status, 404, "{}", again.body);
    // The trail names the token that answered, in both entries.
    let answers = crate::support::entries(&gw, "approval.answer");
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].actor, principal);
    let decisions = crate::support::entries(&gw, "gate.decision");
    let d = decisions.last().expect("decision");
    assert_eq!(d.data["decision"], "approved");
    assert_eq!(d.data["by"], principal.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_over_its_rate_is_refused_with_retry_after() {
    let gw = start_with(
        &replies(1),
        "supervised",
        Limits {
            api_per_minute: 5,
            ..Limits::default()
        },
    )
    .await;
    let token = gw.approver().await;
    for _ in 0..5 {
        assert_eq!(gw.get("/api/whoami", &token).await.status, 200);
    }
    let r = gw.get("/api/whoami", &token).await;
    assert_eq!(r.status, 429, "{}", r.body);
    let secs: u64 = r
        .header("retry-after")
        .expect("retry-after")
        .parse()
        .expect("secs");
    assert!((1..=60).contains(&secs));
    // Another token has its own budget.
    let other = gw.chatter().await;
    assert_eq!(gw.get("/api/whoami", &other).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_are_refused() {
    let gw = start_with(
        &replies(1),
        "supervised",
        Limits {
            max_body_bytes: 1024,
            max_message_chars: 100,
            ..Limits::default()
        },
    )
    .await;
    let token = gw.approver().await;
    let big = format!("{{\"message\": \"{}\"}}", "x".repeat(4096));
    let r = gw.post("/api/chat", &token, &big).await;
    assert_eq!(r.status, 413, "{}", r.body);
    let long = format!("{{\"message\": \"{}\"}}", "x".repeat(200));
    let r = gw.post("/api/chat", &token, &long).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("field `message`"), "{}", r.body);
    let r = gw.post("/pair", &token, &big).await;
    assert!(matches!(r.status, 413 | 400), "{}", r.body);
    // Bad JSON names the field.
    let r = gw.post("/api/chat", &token, r#"{"mesage": "x"}"#).await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("mesage"), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_dead_at_once_even_on_an_open_websocket() {
    let gw = start(&replies(3), "supervised").await;
    let token = gw.approver().await;
    let id = gw.get("/api/whoami", &token).await.json()["id"]
        .as_str()
        .expect("id")
        .to_string();
    let mut ws = gw.ws_as_browser(&token).await;
    ws.send(json!({"type": "turn", "text": "one"})).await;
    ws.until("turn_done").await;
    pincer_gateway::revoke_token(&gw.t.home, "human:cli", &id).expect("revoke");
    assert_eq!(gw.get("/api/whoami", &token).await.status, 401);
    ws.send(json!({"type": "turn", "text": "two"})).await;
    assert!(ws.next().await.is_none(), "closed at the next message");
    let revokes = crate::support::entries(&gw, "gateway.revoke");
    assert_eq!(revokes.len(), 1);
    assert_eq!(revokes[0].data["token"], id.as_str());
}

/// Keys and the token store refuse loose permissions, and the gateway
/// will not start on them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loose_key_permissions_stop_the_gateway() {
    use std::os::unix::fs::PermissionsExt;
    let gw: Gw = start(&replies(1), "supervised").await;
    let key = gw.t.home.keys_dir().join(pincer_gateway::keys::KEY_FILE);
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let e = pincer_gateway::keys::load(&gw.t.home.keys_dir()).expect_err("refused");
    assert!(e.to_string().contains("chmod 600"), "{e}");
    let settings = pincer_runtime::Settings::load(&gw.t.home.config_path()).expect("settings");
    let runtime = pincer_runtime::Runtime::start(
        gw.t.home.clone(),
        settings,
        pincer_runtime::Env::default(),
        pincer_runtime::RuntimeOptions {
            provider: None,
            workspace: Some(gw.t.sibling("ws")),
        },
    )
    .await
    .expect("runtime");
    let e = pincer_gateway::Gateway::new(
        runtime,
        pincer_gateway::Options::new("127.0.0.1:0".parse().expect("addr")),
    )
    .expect_err("refused");
    assert!(e.to_string().contains("chmod 600"), "{e}");
}

#[test]
fn a_public_bind_needs_the_flag() {
    for addr in ["0.0.0.0:18789", "192.168.1.5:80", "[::]:18789"] {
        let a = addr.parse().expect("addr");
        let e = pincer_gateway::check_bind(a, false).expect_err("refused");
        assert!(e.to_string().contains("--allow-public"), "{e}");
        let w = pincer_gateway::check_bind(a, true)
            .expect("allowed")
            .expect("warning");
        assert!(w.contains("TLS"), "{w}");
    }
    for addr in ["127.0.0.1:18789", "[::1]:1", "127.8.9.10:5"] {
        assert!(
            pincer_gateway::check_bind(addr.parse().expect("addr"), false)
                .expect("loopback")
                .is_none()
        );
    }
}
