//! The camera channel end to end: the real `pincer serve`, a scripted
//! vision model, real sockets on loopback. Strangers without the secret
//! (or with it but an unknown camera id) are refused and closed; a 10 MB
//! frame and a malformed one each get an error frame and the connection
//! goes on to have its next good frame answered; a client that trickles
//! its frame a byte at a time does not hold up another camera; a good
//! frame's image reaches the model as image content.

use crate::json;
use crate::serve::{Daemon, kinds, trail, wait_for};
use base64::Engine as _;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

const SECRET: &str = "camera-secret-0123456789";

struct Cam {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Cam {
    fn connect(port: u16) -> Cam {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        Cam {
            r: BufReader::new(s.try_clone().expect("clone")),
            w: s,
        }
    }

    fn send_raw(&mut self, line: &[u8]) {
        self.w.write_all(line).expect("write");
    }

    fn send(&mut self, v: &Value) {
        self.send_raw(format!("{v}\n").as_bytes());
    }

    /// The next frame, or `None` once pincer closed the connection.
    fn recv(&mut self) -> Option<Value> {
        let mut l = String::new();
        match self.r.read_line(&mut l) {
            Ok(0) => None,
            Ok(_) => Some(json(&l)),
            // Closed with our unread bytes in its buffer: a reset.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
            Err(e) => panic!("read: {e}"),
        }
    }

    fn hello(port: u16, camera: &str, token: &str) -> (Cam, Option<Value>) {
        let mut c = Cam::connect(port);
        c.send(&json!({"type": "hello", "camera": camera, "token": token}));
        let first = c.recv();
        (c, first)
    }
}

fn image_b64() -> String {
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0];
    jpeg.extend(std::iter::repeat_n(7u8, 300));
    base64::engine::general_purpose::STANDARD.encode(jpeg)
}

fn frame(id: &str, text: &str) -> Value {
    json!({"type": "frame", "id": id, "mime": "image/jpeg", "image": image_b64(),
           "text": text, "meta": {"lux": 120}})
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn session_text(home: &Path, prefix: &str) -> Option<String> {
    let path: PathBuf = std::fs::read_dir(home.join("sessions"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".jsonl"))
        })?;
    std::fs::read_to_string(path).ok()
}

fn error_of(v: Option<Value>) -> String {
    let v = v.expect("an error frame before the close");
    assert_eq!(v["type"], "error", "{v}");
    v["error"].as_str().expect("error text").to_string()
}

fn reply_of(v: Option<Value>) -> String {
    let v = v.expect("a reply frame");
    assert_eq!(v["type"], "reply", "{v}");
    v["text"].as_str().expect("reply text").to_string()
}

#[test]
fn camera_frames_through_pincer_serve_bounded_authenticated_and_seen_as_images() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("script.json"),
        r#"{"turns": [
          {"text": "A red door.", "expect": {"images": 1, "last_message_contains": "who is at the door"}},
          {"text": "Still a red door.", "expect": {"images": 1, "last_message_contains": "again"}},
          {"text": "A desk.", "expect": {"images": 1, "last_message_contains": "slow desk"}}
        ]}"#,
    )
    .expect("script");
    let port = free_port();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[policy]\nautonomy = \"supervised\"\n\n\
             [providers.s]\nkind = \"scripted\"\nscript = \"script.json\"\nvision = true\n\n\
             [channels.camera]\nbind = \"127.0.0.1:{port}\"\ntoken_env = \"CAM_TOKEN\"\n\
             cameras = [\"door\", \"desk\"]\nmax_frame_bytes = 1048576\n\n\
             [serve]\ndrain_secs = 5\n"
        ),
    )
    .expect("config");
    let mut c = crate::serve::cmd(&home, &["serve"]);
    c.env("CAM_TOKEN", SECRET);
    let d = Daemon::start_with(c);
    wait_for(30, "the camera listener", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });

    // Strangers: a wrong secret, no hello at all, the secret with an id
    // that is not configured. Each gets one error frame and is closed.
    let (mut s1, first) = Cam::hello(port, "door", "camera-secret-0123456788");
    assert!(error_of(first).contains("unauthorized"));
    assert!(s1.recv().is_none(), "closed after the refusal");
    let mut s2 = Cam::connect(port);
    s2.send(&frame("x", "who is at the door? (stranger)"));
    assert!(error_of(s2.recv()).contains("unauthorized"));
    assert!(s2.recv().is_none(), "closed after the refusal");
    let (mut s3, first) = Cam::hello(port, "garage", SECRET);
    assert!(error_of(first).contains("unknown camera"));
    assert!(s3.recv().is_none(), "closed after the refusal");

    // The door camera: 10 MB in one frame, then a malformed frame, each
    // answered with an error frame; then a good frame is answered.
    let (mut door, first) = Cam::hello(port, "door", SECRET);
    assert_eq!(first.expect("ready")["type"], "ready");
    let mut big = br#"{"type":"frame","mime":"image/jpeg","image":""#.to_vec();
    big.extend(std::iter::repeat_n(b'A', 10 * 1024 * 1024));
    big.extend_from_slice(b"\"}\n");
    door.send_raw(&big);
    let e = error_of(door.recv());
    assert!(
        e.contains("too large") && e.contains("max_frame_bytes"),
        "{e}"
    );
    door.send_raw(b"{\"type\":\"frame\", this is not json\n");
    assert!(error_of(door.recv()).contains("not a frame"));
    door.send(&json!({"type": "frame", "id": "7", "mime": "image/bmp", "image": "AAAA"}));
    let bad = door.recv().expect("error frame");
    assert_eq!(bad["id"], "7", "{bad}");
    assert!(
        bad["error"]
            .as_str()
            .is_some_and(|e| e.contains("image.media_type"))
    );
    door.send(&frame("1", "who is at the door?"));
    assert_eq!(reply_of(door.recv()), "A red door.");

    // A desk camera trickles its frame (leading blanks a byte at a time)
    // until the door's next frame has been answered.
    let (mut desk, first) = Cam::hello(port, "desk", SECRET);
    assert_eq!(first.expect("ready")["type"], "ready");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let trickler = {
        let (stop, sent) = (stop.clone(), sent.clone());
        let mut w = desk.w.try_clone().expect("clone");
        std::thread::spawn(move || {
            // Bounded well inside the channel's per-frame timeout.
            for _ in 0..2000 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                w.write_all(b" ").expect("trickle");
                sent.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
            let rest = format!("{}\n", frame("d", "a slow desk"));
            w.write_all(rest.as_bytes()).expect("rest");
        })
    };
    wait_for(30, "the trickle to begin", || {
        sent.load(Ordering::SeqCst) >= 3
    });
    door.send(&frame("2", "and again?"));
    assert_eq!(reply_of(door.recv()), "Still a red door.");
    assert!(
        !trickler.is_finished(),
        "the door is answered while the desk is still mid-frame"
    );
    stop.store(true, Ordering::SeqCst);
    trickler.join().expect("trickler");
    assert_eq!(reply_of(desk.recv()), "A desk.");

    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    let t = trail(&home);
    let msgs = kinds(&t, "channel.message");
    assert_eq!(msgs.len(), 3, "only the good frames are taken: {msgs:#?}");
    assert!(
        msgs.iter()
            .all(|m| m["data"]["images"] == 1 && m["data"]["channel"] == "camera")
    );
    let refused = kinds(&t, "channel.refused");
    assert!(
        refused.iter().any(|r| r["data"]["reason"]
            .as_str()
            .is_some_and(|s| s.contains("unauthorized"))),
        "{refused:#?}"
    );
    let door_session = session_text(&home, "camera-door").expect("the door's session");
    assert_eq!(door_session.matches("image/jpeg").count(), 2);
    assert!(
        door_session.contains("lux"),
        "the metadata reaches the model"
    );
    assert!(!door_session.contains("stranger"));
    assert!(session_text(&home, "camera-desk").is_some());
    assert!(session_text(&home, "camera-garage").is_none());
}
