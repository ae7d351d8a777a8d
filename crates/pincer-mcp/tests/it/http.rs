//! A streamable HTTP server written for the test (HTTP/1.1 by hand on a
//! loopback socket: JSON answers, an SSE answer, a session id, a bearer
//! token), through the client and the gate.

use crate::support::{TestResult, World, call, check, rt, server};
use libtest_mimic::{Failed, Trial};
use pincer_core::gate::CallOutcome;
use pincer_core::policy::Autonomy;
use pincer_mcp::{Server, tools_of};
use pincer_test_support::Answer;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "http::tools_over_streamable_http_json_and_sse",
            json_and_sse,
        ),
        Trial::test("http::a_bearer_token_comes_from_the_environment", bearer),
        Trial::test("http::a_server_that_goes_away_is_a_clear_error", goes_away),
    ]
}

/// What the server saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub rpc: String,
    pub headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct Fake {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Starts the fake on loopback; `token`: the bearer it requires.
pub fn start(token: Option<&'static str>) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (s, st) = (seen.clone(), stop.clone());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !st.load(std::sync::atomic::Ordering::SeqCst) {
            match listener.accept() {
                Ok((conn, _)) => {
                    let s = s.clone();
                    let st = st.clone();
                    std::thread::spawn(move || serve(conn, &s, token, &st));
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
    });
    Fake { url, seen, stop }
}

fn respond(conn: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body.as_bytes());
}

fn serve(
    mut conn: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    token: Option<&str>,
    stop: &std::sync::atomic::AtomicBool,
) {
    conn.set_nonblocking(false).ok();
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let method = line.split(' ').next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.trim_end().split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    let _ = r.read_exact(&mut body);
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rpc = msg["method"].as_str().unwrap_or("").to_string();
    let s = Seen {
        rpc: rpc.clone(),
        headers,
    };
    seen.lock().unwrap().push(s.clone());
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    if let Some(t) = token
        && s.header("authorization") != Some(&format!("Bearer {t}"))
    {
        respond(
            &mut conn,
            "401 Unauthorized",
            &[("Content-Type", "application/json")],
            r#"{"error":"no token"}"#,
        );
        return;
    }
    if method != "POST" {
        respond(&mut conn, "405 Method Not Allowed", &[], "");
        return;
    }
    let id = msg.get("id").cloned();
    let Some(id) = id else {
        respond(&mut conn, "202 Accepted", &[], "");
        return;
    };
    let json_ok = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    let session = [
        ("Content-Type", "application/json"),
        ("Mcp-Session-Id", "sess-1"),
    ];
    match rpc.as_str() {
        "initialize" => {
            let v = msg["params"]["protocolVersion"].clone();
            let body = json_ok(
                json!({"protocolVersion": v, "capabilities": {"tools": {}}, "serverInfo": {"name": "fake-http", "version": "2"}}),
            );
            respond(&mut conn, "200 OK", &session, &body);
        }
        "tools/list" => {
            let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
            let body = json_ok(json!({"tools": [
                {"name": "echo", "description": "Echo (JSON answer).", "inputSchema": schema},
                {"name": "stream", "description": "Echo (SSE answer).", "inputSchema": schema},
                {"name": "vanish", "description": "The server closes the connection.", "inputSchema": {"type": "object"}}
            ]}));
            respond(&mut conn, "200 OK", &session, &body);
        }
        "tools/call" => {
            let text = msg["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            match msg["params"]["name"].as_str() {
                Some("echo") => {
                    let body = json_ok(json!({"content": [{"type": "text", "text": text}]}));
                    respond(&mut conn, "200 OK", &session, &body);
                }
                Some("stream") => {
                    let event = json_ok(
                        json!({"content": [{"type": "text", "text": format!("streamed {text}")}]}),
                    );
                    let body = format!("event: message\nid: 1\ndata: {event}\n\n");
                    respond(
                        &mut conn,
                        "200 OK",
                        &[
                            ("Content-Type", "text/event-stream"),
                            ("Mcp-Session-Id", "sess-1"),
                        ],
                        &body,
                    );
                }
                _ => {
                    // Gone mid-call: no answer at all.
                    let _ = conn.shutdown(std::net::Shutdown::Both);
                }
            }
        }
        _ => {
            let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}).to_string();
            respond(&mut conn, "200 OK", &session, &body);
        }
    }
}

fn http_server(url: &str, extra: &str) -> pincer_mcp::ServerConfig {
    server(
        "web",
        &format!("url = {url:?}\ntools = [\"*\"]\ntimeout_secs = 10\n{extra}"),
    )
}

fn json_and_sse() -> TestResult {
    let w = World::new();
    let fake = start(None);
    rt().block_on(async {
        let server = Server::start(http_server(&fake.url, ""), w.launch(), None).await?;
        check(
            server.facts().transport == "http" && server.facts().server == "fake-http 2",
            format!("{:?}", server.facts()),
        )?;
        let tools = tools_of(&server);
        let gate = w.gate(Autonomy::Full, Answer::no());
        let o = call(&gate, &tools, "web__echo", json!({"text": "over http"})).await;
        check(
            matches!(&o, CallOutcome::Ran(Ok(t)) if t == "over http"),
            format!("{o:?}"),
        )?;
        let o = call(&gate, &tools, "web__stream", json!({"text": "sse"})).await;
        check(
            matches!(&o, CallOutcome::Ran(Ok(t)) if t == "streamed sse"),
            format!("{o:?}"),
        )?;
        server.shutdown().await;
        Ok::<_, Failed>(())
    })?;
    // After the handshake every request carries the session and the
    // protocol version.
    let seen = fake.seen.lock().unwrap().clone();
    let calls: Vec<&Seen> = seen.iter().filter(|s| s.rpc == "tools/call").collect();
    check(calls.len() == 2, format!("{seen:?}"))?;
    for c in calls {
        check(
            c.header("mcp-session-id") == Some("sess-1"),
            format!("{c:?}"),
        )?;
        check(c.header("mcp-protocol-version").is_some(), format!("{c:?}"))?;
    }
    Ok(())
}

fn bearer() -> TestResult {
    let fake = start(Some("s3cret-t0ken"));
    let mut w = World::new();
    rt().block_on(async {
        // Not set: it does not start, and says which variable.
        let e = Server::start(
            http_server(&fake.url, "bearer_token_env = \"WEB_TOKEN\""),
            w.launch(),
            None,
        )
        .await
        .expect_err("no token");
        check(e.to_string().contains("WEB_TOKEN"), &e)?;
        Ok::<_, Failed>(())
    })?;
    w.vars.insert("WEB_TOKEN".into(), "wrong".into());
    rt().block_on(async {
        let e = Server::start(
            http_server(&fake.url, "bearer_token_env = \"WEB_TOKEN\""),
            w.launch(),
            None,
        )
        .await
        .expect_err("wrong token");
        check(e.to_string().contains("did not start"), &e)?;
        check(
            !e.to_string().contains("wrong"),
            format!("the token must not be echoed: {e}"),
        )?;
        Ok::<_, Failed>(())
    })?;
    w.vars.insert("WEB_TOKEN".into(), "s3cret-t0ken".into());
    rt().block_on(async {
        let server = Server::start(
            http_server(&fake.url, "bearer_token_env = \"WEB_TOKEN\""),
            w.launch(),
            None,
        )
        .await?;
        let out = server.call("echo", json!({"text": "with a token"})).await?;
        check(out.text == "with a token", &out.text)?;
        Ok::<_, Failed>(())
    })
}

fn goes_away() -> TestResult {
    let w = World::new();
    let fake = start(None);
    rt().block_on(async {
        let server = Server::start(http_server(&fake.url, ""), w.launch(), None).await?;
        let e = server
            .call("vanish", json!({}))
            .await
            .expect_err("vanished");
        check(e.to_string().contains("`web`"), &e)?;
        drop(fake);
        let e = server
            .call("echo", json!({"text": "x"}))
            .await
            .expect_err("gone");
        check(e.to_string().contains("`web`"), &e)?;
        Ok::<_, Failed>(())
    })
}
