//! A Telegram Bot API server in the test process, speaking the real wire
//! format (JSON POSTs to `/bot<token>/<method>`, the `{ok, result}` and
//! `{ok: false, error_code, description, parameters}` envelopes) over
//! plain HTTP/1.1 on loopback, one connection per request. It keeps
//! updates until a `getUpdates` offset confirms them, as Telegram does,
//! honours the long-poll timeout, records every call, and can be told to
//! answer the next polls with a 429 (`retry_after`), a 409, or to drop the
//! connection mid-poll.

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "4242:test-token-SECRET";
pub const BOT_ID: i64 = 4242;

/// What the next `getUpdates` gets instead of updates.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `parameters.retry_after`.
    RateLimit(u64),
    /// 409: another poller.
    Conflict,
    /// The connection closes after the request is read, with no answer.
    Drop,
}

/// One recorded call.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub body: Value,
    pub at: Instant,
}

#[derive(Default)]
struct St {
    /// Updates not yet confirmed by an offset.
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    calls: Vec<Call>,
    faults: VecDeque<Fault>,
    /// Files by path, for getFile and the download.
    files: std::collections::HashMap<String, Vec<u8>>,
}

#[derive(Clone)]
pub struct FakeTg {
    pub base: String,
    st: Arc<(Mutex<St>, Condvar)>,
}

impl FakeTg {
    pub fn start() -> FakeTg {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let st: Arc<(Mutex<St>, Condvar)> = Arc::default();
        st.0.lock().unwrap().next_update = 1000;
        let s2 = st.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let st = s2.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &st);
                });
            }
        });
        FakeTg { base, st }
    }

    fn with<R>(&self, f: impl FnOnce(&mut St) -> R) -> R {
        let r = f(&mut self.st.0.lock().unwrap());
        self.st.1.notify_all();
        r
    }

    fn push(&self, mut update: Value) -> i64 {
        self.with(|s| {
            s.next_update += 1;
            update["update_id"] = json!(s.next_update);
            s.updates.push(update);
            s.next_update
        })
    }

    /// A text message from `user` in the private chat `user`.
    pub fn message(&self, user: i64, text: &str) -> i64 {
        self.push(json!({"message": {
            "message_id": 1, "date": 0,
            "chat": {"id": user, "type": "private"},
            "from": {"id": user, "is_bot": false, "first_name": "u"},
            "text": text,
        }}))
    }

    /// A photo from `user` with `caption`: the file is `bytes`, and the
    /// message declares `declared` as its size (a liar may declare less).
    pub fn photo(&self, user: i64, caption: &str, bytes: Vec<u8>, declared: usize) -> i64 {
        let id = self.with(|s| {
            let id = format!("ph{}", s.files.len());
            s.files.insert(format!("photos/{id}.jpg"), bytes);
            id
        });
        self.push(json!({"message": {
            "message_id": 2, "date": 0,
            "chat": {"id": user, "type": "private"},
            "from": {"id": user, "is_bot": false, "first_name": "u"},
            "caption": caption,
            "photo": [
                {"file_id": format!("{id}-thumb"), "file_unique_id": "t", "width": 90, "height": 90, "file_size": 900},
                {"file_id": id, "file_unique_id": "u", "width": 800, "height": 600, "file_size": declared},
            ],
        }}))
    }

    /// A button press by `user` under a message in chat `chat`.
    pub fn press(&self, chat: i64, user: i64, data: &str) -> i64 {
        self.push(json!({"callback_query": {
            "id": format!("cb{user}{}", data.len()),
            "from": {"id": user, "is_bot": false, "first_name": "u"},
            "message": {"message_id": 9, "date": 0, "chat": {"id": chat, "type": "private"}},
            "chat_instance": "x",
            "data": data,
        }}))
    }

    pub fn fault(&self, f: Fault) {
        self.with(|s| s.faults.push_back(f));
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.with(|s| {
            s.calls
                .iter()
                .filter(|c| c.method == method)
                .cloned()
                .collect()
        })
    }

    /// The texts sent to `chat`.
    pub fn sent_to(&self, chat: i64) -> Vec<String> {
        let id = chat.to_string();
        self.calls("sendMessage")
            .into_iter()
            .filter(|c| c.body["chat_id"].as_str() == Some(id.as_str()))
            .filter_map(|c| c.body["text"].as_str().map(str::to_string))
            .collect()
    }

    /// Updates still kept (not confirmed by an offset).
    pub fn pending(&self) -> usize {
        self.with(|s| s.updates.len())
    }

    /// Waits until `f` holds, failing with `what` after `secs`.
    pub fn wait(&self, secs: u64, what: &str, f: impl Fn(&FakeTg) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !f(self) {
            if Instant::now() >= deadline {
                let sent: Vec<String> = self
                    .calls("sendMessage")
                    .iter()
                    .map(|c| c.body.to_string())
                    .collect();
                panic!("timed out waiting for {what}; sent so far: {sent:#?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn respond(conn: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    write!(
        conn,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    conn.flush()
}

fn serve(mut conn: TcpStream, st: &Arc<(Mutex<St>, Condvar)>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        if h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(file) = path.strip_prefix(&format!("/file/bot{TOKEN}/")) {
        let bytes = st.0.lock().unwrap().files.get(file).cloned();
        return match bytes {
            Some(b) => {
                write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    b.len()
                )?;
                conn.write_all(&b)?;
                conn.flush()
            }
            None => respond(
                &mut conn,
                404,
                &json!({"ok": false, "error_code": 404, "description": "Not Found"}),
            ),
        };
    }
    let Some(method) = path
        .strip_prefix(&format!("/bot{TOKEN}/"))
        .map(str::to_string)
    else {
        return respond(
            &mut conn,
            401,
            &json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        );
    };
    let (lock, cv) = &**st;
    let mut s = lock.lock().unwrap();
    s.calls.push(Call {
        method: method.clone(),
        body: body.clone(),
        at: Instant::now(),
    });
    let result = match method.as_str() {
        "getMe" => {
            json!({"id": BOT_ID, "is_bot": true, "first_name": "pincer", "username": "pincer_test_bot"})
        }
        "getUpdates" => {
            match s.faults.pop_front() {
                Some(Fault::RateLimit(secs)) => {
                    drop(s);
                    return respond(
                        &mut conn,
                        429,
                        &json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {secs}"), "parameters": {"retry_after": secs}}),
                    );
                }
                Some(Fault::Conflict) => {
                    drop(s);
                    return respond(
                        &mut conn,
                        409,
                        &json!({"ok": false, "error_code": 409, "description": "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}),
                    );
                }
                Some(Fault::Drop) => {
                    drop(s);
                    return conn.shutdown(std::net::Shutdown::Both);
                }
                None => {}
            }
            let offset = body["offset"].as_i64().unwrap_or(0);
            s.updates
                .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(3));
            let deadline = Instant::now() + timeout;
            while s.updates.is_empty() && Instant::now() < deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                s = cv.wait_timeout(s, left).unwrap().0;
                s.updates
                    .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            }
            Value::Array(s.updates.clone())
        }
        "sendMessage" => {
            s.next_message += 1;
            json!({"message_id": s.next_message, "date": 0, "chat": {"id": body["chat_id"], "type": "private"}, "text": body["text"]})
        }
        "editMessageText" | "answerCallbackQuery" => json!(true),
        "getFile" => {
            let id = body["file_id"].as_str().unwrap_or("");
            let path = format!("photos/{id}.jpg");
            match s.files.get(&path) {
                Some(b) => {
                    json!({"file_id": id, "file_unique_id": "u", "file_size": b.len().min(1000), "file_path": path})
                }
                None => {
                    drop(s);
                    return respond(
                        &mut conn,
                        400,
                        &json!({"ok": false, "error_code": 400, "description": "Bad Request: invalid file_id"}),
                    );
                }
            }
        }
        other => {
            let d = format!("method {other} not found");
            drop(s);
            return respond(
                &mut conn,
                404,
                &json!({"ok": false, "error_code": 404, "description": d}),
            );
        }
    };
    drop(s);
    respond(&mut conn, 200, &json!({"ok": true, "result": result}))
}
