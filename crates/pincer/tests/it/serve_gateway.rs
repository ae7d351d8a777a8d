//! The HTTP gateway as a service of `pincer serve` (`[gateway]`): the real
//! binary and its real port. The daemon prints no pairing code (its stdout
//! is the journal, which others may read), and the test asserts that; a
//! person pairs with codes from `pincer pair` run beside it (an approver's
//! and a chat one), chats over HTTP, has a sensor read approved by the approver token (a
//! chat token's approval refused), is refused a session another service
//! writes, keeps a WebSocket open across SIGTERM (closed with 1001, the
//! daemon exits cleanly), and a reload gives gateway turns the new
//! policy. A port in use fails the gateway alone: `pincer status` says so
//! while cron goes on, and the gateway comes up once the port is free.

use crate::gateway::http;
use crate::serve::{cmd, kinds, trail, wait_for};
use crate::{json, ok};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn fixture(script: &str, gateway: &str) -> crate::ServeHome {
    crate::serve_home(script, "", &format!("[gateway]\n{gateway}"))
}

/// `pincer serve` with its stdout read line by line.
struct Serve {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    fn start(home: &Path) -> Serve {
        let mut child = cmd(home, &["serve"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pincer serve");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().expect("stdout");
        let sink = lines.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(l);
            }
        });
        Serve { child, lines }
    }

    /// The `n`th (from 0) gateway start's address. No pairing code is
    /// printed under `pincer serve` (its stdout is the journal).
    fn gateway(&self, n: usize) -> String {
        let found = std::cell::RefCell::new(None);
        wait_for(60, "the gateway's address", || {
            let lines = self.lines.lock().unwrap();
            assert!(
                !lines.iter().any(|l| l.starts_with("pairing code")),
                "a pairing code in the daemon's output: {lines:?}"
            );
            let addrs: Vec<&String> = lines
                .iter()
                .filter(|l| l.starts_with("pincer gateway on http://"))
                .collect();
            if let Some(a) = addrs.get(n) {
                let addr = a["pincer gateway on http://".len()..]
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_string();
                *found.borrow_mut() = Some(addr);
            }
            found.borrow().is_some()
        });
        found.into_inner().unwrap()
    }

    fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("pid");
        rustix::process::kill_process(pid, sig).expect("kill");
    }

    /// SIGTERM, then the exit status and stderr.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        self.signal(rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                return (status, err);
            }
            assert!(Instant::now() < deadline, "pincer serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn status(home: &Path) -> Value {
    let o = cmd(home, &["status", "--json"]).output().expect("status");
    json(&String::from_utf8_lossy(&o.stdout))
}

/// The service `name` in `pincer status --json`.
fn service(home: &Path, name: &str) -> Value {
    let st = status(home);
    st["front_ends"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["name"] == "serve"))
        .and_then(|s| s["detail"]["state"]["services"].as_array())
        .and_then(|l| l.iter().find(|s| s["name"] == name).cloned())
        .unwrap_or(Value::Null)
}

/// A code from `pincer pair` (`--approver` with `approver`) beside the daemon.
fn pair_code(home: &Path, approver: bool) -> String {
    let args: &[&str] = if approver {
        &["pair", "--approver"]
    } else {
        &["pair"]
    };
    let out = ok(cmd(home, args).output().expect("pair"));
    out.trim()
        .strip_prefix("pairing code: ")
        .expect("code line")
        .to_string()
}

fn pair(addr: &str, code: &str) -> String {
    let (status, body) = http(
        addr,
        "POST",
        "/pair",
        None,
        &format!("{{\"code\": \"{code}\"}}"),
    );
    assert_eq!(status, 200, "{body}");
    json(&body)["token"].as_str().expect("token").to_string()
}

/// A minimal WebSocket client: the opening handshake, then frames.
struct Ws(TcpStream);

impl Ws {
    fn connect(addr: &str, token: &str) -> Ws {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        write!(
            s,
            "GET /ws HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Protocol: pincer.v1, bearer.{token}\r\n\r\n"
        )
        .expect("handshake");
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).expect("handshake reply");
            head.push(b[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        Ws(s)
    }

    fn send(&mut self, text: &str) {
        let p = text.as_bytes();
        let mut f = vec![0x81];
        if p.len() < 126 {
            f.push(0x80 | p.len() as u8);
        } else {
            f.push(0x80 | 126);
            f.extend_from_slice(&(p.len() as u16).to_be_bytes());
        }
        // A zero mask: allowed, and the payload goes as it is.
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend_from_slice(p);
        self.0.write_all(&f).expect("send");
    }

    /// The next frame: (opcode, payload).
    fn recv(&mut self) -> (u8, Vec<u8>) {
        let mut h = [0u8; 2];
        self.0.read_exact(&mut h).expect("frame");
        let len = match h[1] & 0x7f {
            126 => {
                let mut l = [0u8; 2];
                self.0.read_exact(&mut l).expect("len");
                u16::from_be_bytes(l) as usize
            }
            127 => {
                let mut l = [0u8; 8];
                self.0.read_exact(&mut l).expect("len");
                u64::from_be_bytes(l) as usize
            }
            n => n as usize,
        };
        let mut p = vec![0u8; len];
        self.0.read_exact(&mut p).expect("payload");
        (h[0] & 0x0f, p)
    }

    /// Text messages up to the one `until` accepts.
    fn events_until(&mut self, until: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let (op, p) = self.recv();
            assert_eq!(op, 1, "a text frame, got opcode {op}: {p:?}");
            let v = json(&String::from_utf8_lossy(&p));
            let done = until(&v);
            seen.push(v);
            if done {
                return seen;
            }
        }
    }
}

const PHASE1: &str = r#"{"turns": [
  {"text": "hello from the gateway", "expect": {"last_role": "user", "last_message_contains": "hi"}},
  {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}],
   "expect": {"last_message_contains": "temperature"}},
  {"text": "The sensor reads 20 degrees.", "expect": {"last_role": "tool"}},
  {"text": "hello over the socket", "expect": {"last_message_contains": "socket"}}
]}"#;

const PHASE2: &str = r#"{"turns": [
  {"tool_calls": [{"id": "u", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}],
   "expect": {"last_message_contains": "again"}},
  {"text": "The policy refused the read.", "expect": {"last_role": "tool"}},
  {"text": "tick"}, {"text": "tick"}, {"text": "tick"}, {"text": "tick"}, {"text": "tick"}
]}"#;

const PHASE3: &str = r#"{"turns": [
  {"tool_calls": [{"id": "v", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}]}
]}"#;

const PHASE4: &str = r#"{"turns": [
  {"text": "still here", "expect": {"last_message_contains": "still there"}}
]}"#;

/// The whole life of a serve-hosted gateway beside cron.
#[test]
fn serve_hosts_the_gateway_beside_cron_and_drains_it() {
    let fx = fixture(PHASE1, "bind = \"127.0.0.1:0\"\n");
    let d = Serve::start(&fx.home);
    let addr = d.gateway(0);
    let code = pair_code(&fx.home, true);
    assert!(code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()));
    wait_for(30, "the gateway running in the status", || {
        service(&fx.home, "gateway")["state"] == "running"
            && service(&fx.home, "cron")["state"] == "running"
    });
    assert!(
        service(&fx.home, "gateway")["detail"]
            .as_str()
            .is_some_and(|s| s.contains(&addr)),
        "{}",
        service(&fx.home, "gateway")
    );
    assert_eq!(http(&addr, "GET", "/api/status", None, "").0, 401);
    let approver = pair(&addr, &code);
    // `pincer pair` beside the daemon: a chat-role code it accepts.
    let chatter = pair(&addr, &pair_code(&fx.home, false));

    // A chat over HTTP.
    let (st, body) = http(
        &addr,
        "POST",
        "/api/chat",
        Some(&chatter),
        r#"{"message": "hi"}"#,
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(json(&body)["reply"], "hello from the gateway");

    // A gated sensor read: the chat token cannot approve it, the approver
    // token can.
    let (a2, t2) = (addr.clone(), chatter.clone());
    let turn = std::thread::spawn(move || {
        http(
            &a2,
            "POST",
            "/api/chat",
            Some(&t2),
            r#"{"message": "what is the temperature?"}"#,
        )
    });
    let id = std::cell::RefCell::new(String::new());
    wait_for(30, "the approval waiting in the inbox", || {
        let (_, body) = http(&addr, "GET", "/api/approvals", Some(&approver), "");
        match json(&body)["pending"][0]["id"].as_str() {
            Some(i) => {
                *id.borrow_mut() = i.to_string();
                true
            }
            None => false,
        }
    });
    let path = format!("/api/approvals/{}/approve", id.borrow());
    assert_eq!(http(&addr, "POST", &path, Some(&chatter), "").0, 403);
    let (st, body) = http(&addr, "POST", &path, Some(&approver), "");
    assert_eq!(st, 200, "{body}");
    let (st, body) = turn.join().expect("turn");
    assert_eq!(st, 200, "{body}");
    assert_eq!(json(&body)["reply"], "The sensor reads 20 degrees.");

    // A session another service writes is not the gateway's to write.
    let (st, body) = http(
        &addr,
        "POST",
        "/api/chat",
        Some(&chatter),
        r#"{"session": "cron-water", "message": "hi"}"#,
    );
    assert_eq!(st, 409, "{body}");
    assert!(body.contains("belongs to `cron`"), "{body}");

    // A WebSocket turn, then the socket stays open across SIGHUP: the
    // reload closes it (1001) and the new gateway has the new policy.
    let mut ws = Ws::connect(&addr, &chatter);
    ws.send(r#"{"type": "turn", "session": "sock", "text": "hello socket"}"#);
    let events = ws.events_until(|v| v["event"] == "turn_done");
    assert!(
        events
            .iter()
            .any(|e| e.to_string().contains("hello over the socket")),
        "{events:?}"
    );
    std::fs::write(fx.home.join("script.json"), PHASE2).expect("script 2");
    let config = std::fs::read_to_string(fx.home.join("config.toml")).expect("config");
    std::fs::write(
        fx.home.join("config.toml"),
        config.replace("autonomy = \"supervised\"", "autonomy = \"readonly\""),
    )
    .expect("readonly");
    d.signal(rustix::process::Signal::HUP);
    let (op, p) = ws.recv();
    assert_eq!(op, 8, "a close frame");
    assert_eq!(u16::from_be_bytes([p[0], p[1]]), 1001, "going away");
    let addr = d.gateway(1);
    let (st, body) = http(
        &addr,
        "POST",
        "/api/chat",
        Some(&chatter),
        r#"{"message": "read it again"}"#,
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(json(&body)["reply"], "The policy refused the read.");
    let t = trail(&fx.home);
    assert_eq!(kinds(&t, "policy.change").len(), 1);
    let reads: Vec<&Value> = kinds(&t, "gate.decision")
        .into_iter()
        .filter(|e| e["data"]["tool"] == "i2c_read")
        .collect();
    assert_eq!(reads.len(), 2, "{reads:#?}");
    assert_eq!(reads[0]["data"]["decision"], "approved");
    assert_eq!(reads[1]["data"]["decision"], "blocked");

    // Cron runs in the same process, on the same runtime.
    ok(cmd(
        &fx.home,
        &[
            "cron",
            "add",
            "--name",
            "tick",
            "--schedule",
            "* * * * * *",
            "--prompt",
            "tick",
        ],
    )
    .output()
    .expect("cron add"));
    wait_for(30, "a cron run", || {
        kinds(&trail(&fx.home), "cron.done")
            .iter()
            .any(|e| e["data"]["job"] == "tick")
    });
    ok(cmd(&fx.home, &["cron", "remove", "tick"])
        .output()
        .expect("cron remove"));

    // SIGTERM with a turn in flight (a read waiting for an approval that
    // cannot come: the listener closes): the drain cancels it when its
    // time is up, counts it, the daemon exits 0 and the session is valid.
    let config = std::fs::read_to_string(fx.home.join("config.toml")).expect("config");
    std::fs::write(
        fx.home.join("config.toml"),
        config
            .replace("autonomy = \"readonly\"", "autonomy = \"supervised\"")
            .replace("drain_secs = 5", "drain_secs = 1"),
    )
    .expect("supervised");
    std::fs::write(fx.home.join("script.json"), PHASE3).expect("script 3");
    d.signal(rustix::process::Signal::HUP);
    let addr = d.gateway(2);
    let mut ws = Ws::connect(&addr, &chatter);
    ws.send(r#"{"type": "turn", "session": "cut", "text": "read the sensor"}"#);
    ws.events_until(|v| v["event"] == "approval_needed");
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    assert!(TcpStream::connect(&addr).is_err(), "the listener is closed");
    let t = trail(&fx.home);
    let stops = kinds(&t, "serve.stop");
    assert_eq!(stops.len(), 1, "{stops:#?}");
    assert_eq!(stops[0]["data"]["cancelled_turns"], 1, "{stops:#?}");
    for key in ["web", "cut"] {
        ok(cmd(&fx.home, &["session", "show", key, "--json"])
            .output()
            .expect("show"));
    }
    let shown = ok(cmd(&fx.home, &["session", "show", "web", "--json"])
        .output()
        .expect("show"));
    assert!(shown.contains("The sensor reads 20 degrees."), "{shown}");
    assert!(shown.contains("The policy refused the read."), "{shown}");
    // The session a cut turn left is whole: a new turn runs on it.
    std::fs::write(fx.home.join("script.json"), PHASE4).expect("script 4");
    let out = ok(cmd(
        &fx.home,
        &["agent", "--session", "cut", "-m", "still there?", "--json"],
    )
    .output()
    .expect("agent"));
    assert!(out.contains("still here"), "{out}");
}

/// A port in use fails the gateway alone: status says so while cron runs
/// its job, and the gateway comes up by itself once the port is free.
#[test]
fn a_port_in_use_fails_the_gateway_alone() {
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").expect("squat");
    let port = squatter.local_addr().expect("addr").port();
    let fx = fixture(
        r#"{"turns": [{"text": "tick"}, {"text": "tick"}, {"text": "tick"}, {"text": "tick"}]}"#,
        &format!("bind = \"127.0.0.1:{port}\"\n"),
    );
    ok(cmd(
        &fx.home,
        &[
            "cron",
            "add",
            "--name",
            "tick",
            "--schedule",
            "* * * * * *",
            "--prompt",
            "tick",
        ],
    )
    .output()
    .expect("cron add"));
    let d = Serve::start(&fx.home);
    wait_for(30, "the gateway reported failing", || {
        let gw = service(&fx.home, "gateway");
        gw["state"] == "retrying"
            && gw["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("cannot listen") && e.contains(&port.to_string()))
    });
    wait_for(30, "a cron run meanwhile", || {
        kinds(&trail(&fx.home), "cron.done")
            .iter()
            .any(|e| e["data"]["job"] == "tick")
    });
    assert_eq!(service(&fx.home, "cron")["state"], "running");
    let text = cmd(&fx.home, &["status"]).output().expect("status");
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("gateway RETRYING"), "{text}");
    assert!(text.contains("cron running"), "{text}");
    ok(cmd(&fx.home, &["cron", "remove", "tick"])
        .output()
        .expect("cron remove"));
    drop(squatter);
    let addr = d.gateway(0);
    assert!(addr.ends_with(&format!(":{port}")), "{addr}");
    pair(&addr, &pair_code(&fx.home, false));
    wait_for(30, "the gateway running", || {
        service(&fx.home, "gateway")["state"] == "running"
    });
    assert!(service(&fx.home, "gateway")["failures"].as_u64() >= Some(1));
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
}
