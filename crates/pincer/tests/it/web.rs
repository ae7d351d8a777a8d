//! `web_fetch` end to end through `pincer agent` with a scripted model: a
//! page on an allowed host comes back as text, a call to the cloud
//! metadata address is a clear tool error, and both are in the audit trail.

use crate::{json, ok, pincer_env};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A loopback HTTP server answering every request with an HTML page; it
/// records the paths it was asked for.
fn page_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(Mutex::new(Vec::new()));
    let seen = hits.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut sock) = conn else { return };
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&head).into_owned();
            seen.lock()
                .expect("hits")
                .push(text.split(' ').nth(1).unwrap_or("").to_string());
            let body = "<html><body><h1>Pincer test page</h1><p>The answer is <b>42</b>.</p></body></html>";
            let _ = write!(
                sock,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

#[test]
fn an_allowed_fetch_works_and_a_refused_one_is_a_tool_error_in_the_audit_trail() {
    let (port, hits) = page_server();
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::create_dir_all(&home).expect("home");
    let page = format!("http://127.0.0.1:{port}/page");
    let script = serde_json::json!({"turns": [
        {"tool_calls": [
            {"id": "ok", "name": "web_fetch", "arguments": {"url": page}},
            {"id": "meta", "name": "web_fetch", "arguments": {"url": "http://169.254.169.254/latest/meta-data/"}}],
         "expect": {"last_role": "user", "tools_offered": ["web_fetch"]}},
        {"text": "Fetched.", "expect": {"last_role": "tool", "last_message_contains": "link-local"}}
    ]});
    std::fs::write(home.join("script.json"), script.to_string()).expect("script");
    // Loopback is refused unless allowed: the test lets its own server in.
    std::fs::write(
        home.join("config.toml"),
        "[policy]\nautonomy = \"full\"\n\n\
         [providers.s]\nkind = \"scripted\"\nscript = \"script.json\"\n\n\
         [web_fetch]\nallow_domains = [\"127.0.0.1\", \"169.254.169.254\"]\n\
         allow_addresses = [\"127.0.0.1\"]\n",
    )
    .expect("config");
    let out = ok(pincer_env(
        &home,
        &[
            "agent",
            "-m",
            "fetch it",
            "--json",
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
        &[],
    ));
    let events: Vec<serde_json::Value> = out.lines().map(json).collect();
    let finished: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "tool_call_finished")
        .map(|e| {
            (
                e["name"].as_str().unwrap_or(""),
                e["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        finished,
        [("web_fetch", "ok"), ("web_fetch", "error")],
        "{out}"
    );
    assert_eq!(*hits.lock().expect("hits"), ["/page"]);
    // The model saw the page as text, and the refusal with its reason.
    let session = std::fs::read_to_string(home.join("sessions/cli.jsonl")).expect("session");
    assert!(
        session.contains("Pincer test page") && session.contains("42"),
        "{session}"
    );
    // Without the html feature the page comes back as its markup.
    assert_eq!(
        session.contains("<h1>"),
        !cfg!(feature = "html"),
        "{session}"
    );
    assert!(
        session.contains("169.254.169.254, a link-local"),
        "{session}"
    );
    let log = ok(pincer_env(
        &home,
        &["audit", "log", "--json", "--limit", "100"],
        &[],
    ));
    let calls: Vec<serde_json::Value> = log
        .lines()
        .map(json)
        .filter(|e| e["kind"] == "tool.call" && e["data"]["tool"] == "web_fetch")
        .collect();
    assert_eq!(calls.len(), 2, "{log}");
    assert_eq!(calls[0]["data"]["status"], "ok", "{log}");
    // What each call reached for is in its entry.
    assert_eq!(calls[0]["data"]["subject"]["host"], "127.0.0.1", "{log}");
    assert_eq!(
        calls[1]["data"]["subject"]["host"], "169.254.169.254",
        "{log}"
    );
    assert_eq!(calls[1]["data"]["status"], "error", "{log}");
    assert!(
        calls[1]["data"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("link-local")),
        "{log}"
    );
    ok(pincer_env(&home, &["audit", "verify"], &[]));
    let doc = json(&ok(pincer_env(&home, &["doctor", "--json"], &[])));
    assert_eq!(doc["web_fetch"]["offered"], true, "{doc}");
}

/// With no `[web_fetch]` the tool is not offered, and doctor says so.
#[test]
fn without_allowed_domains_the_tool_is_off_and_doctor_says_so() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("config.toml"),
        "[providers.s]\nkind = \"scripted\"\nscript = \"script.json\"\n",
    )
    .expect("config");
    std::fs::write(home.join("script.json"), r#"{"turns": []}"#).expect("script");
    let out = pincer_env(&home, &["doctor"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("web fetch: off: [web_fetch] allow_domains is empty"),
        "{text}"
    );
    let doc = json(&String::from_utf8_lossy(
        &pincer_env(&home, &["doctor", "--json"], &[]).stdout,
    ));
    assert_eq!(doc["web_fetch"]["offered"], false, "{doc}");
}
