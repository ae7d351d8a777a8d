//! `pincer gateway`, `pair`, `tokens`, `keys` as a person runs them: the
//! real binary, its real port, its printed pairing code.

use crate::{fails, json, ok, pincer, pincer_env};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

fn scripted_home(dir: &Path) -> std::path::PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("script.json"),
        r#"{"turns": [{"text": "hello from the gateway"}]}"#,
    )
    .expect("script");
    std::fs::write(
        home.join("config.toml"),
        "[providers.s]\nkind = \"scripted\"\nscript = \"script.json\"\n",
    )
    .expect("config");
    std::fs::create_dir_all(dir.join("ws")).expect("ws");
    home
}

struct Running {
    child: Child,
    addr: String,
    code: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `pincer gateway --bind 127.0.0.1:0` and reads the address and
/// the pairing code it prints.
fn start(home: &Path, ws: &Path) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["gateway", "--bind", "127.0.0.1:0", "--workspace"])
        .arg(ws)
        .env("PINCER_HOME", home)
        .env("PINCER_BOARD", "sim")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut addr = None;
    let code = loop {
        let line = lines
            .next()
            .expect("the gateway exited before printing a pairing code")
            .expect("read");
        if let Some(rest) = line.strip_prefix("pincer gateway on http://") {
            addr = rest.split(' ').next().map(str::to_string);
        }
        if let Some(code) = line.strip_prefix("pairing code: ") {
            break code.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Running {
        child,
        addr: addr.expect("address line"),
        code,
    }
}

pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn pair_with_the_printed_code_chat_and_revoke() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = scripted_home(tmp.path());
    let gw = start(&home, &tmp.path().join("ws"));
    assert_eq!(gw.code.len(), 6);
    assert!(gw.code.bytes().all(|b| b.is_ascii_digit()));
    let (status, _) = http(&gw.addr, "GET", "/api/status", None, "");
    assert_eq!(status, 401);
    let (status, body) = http(
        &gw.addr,
        "POST",
        "/pair",
        None,
        &format!("{{\"code\": \"{}\"}}", gw.code),
    );
    assert_eq!(status, 200, "{body}");
    let token = json(&body)["token"].as_str().expect("token").to_string();
    let (status, body) = http(
        &gw.addr,
        "POST",
        "/api/chat",
        Some(&token),
        r#"{"message": "hi"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["reply"], "hello from the gateway");
    // Beside the running gateway: list and revoke the token.
    let list = json(&ok(pincer(&home, &["tokens", "list", "--json"], "")));
    let id = list["tokens"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["tokens"][0]["role"], "approver");
    assert!(
        !list.to_string().contains(&token[20..]),
        "no secret is listed"
    );
    ok(pincer(&home, &["tokens", "revoke", &id], ""));
    let (status, _) = http(&gw.addr, "GET", "/api/whoami", Some(&token), "");
    assert_eq!(status, 401, "revoked while the gateway runs");
    // `pincer pair` issues a code the running gateway accepts, once.
    let out = ok(pincer(&home, &["pair"], ""));
    let code = out
        .trim()
        .strip_prefix("pairing code: ")
        .expect("code line")
        .to_string();
    let pair = format!("{{\"code\": \"{code}\"}}");
    let (status, body) = http(&gw.addr, "POST", "/pair", None, &pair);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["role"], "chat");
    assert_eq!(http(&gw.addr, "POST", "/pair", None, &pair).0, 401);
    let err = fails(pincer(&home, &["tokens", "revoke", "0123456789ab"], ""));
    assert!(err.contains("no token"), "{err}");
}

#[test]
fn a_public_bind_is_refused_without_the_flag() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = scripted_home(tmp.path());
    for bind in ["0.0.0.0:0", "[::]:0"] {
        let err = fails(pincer_env(&home, &["gateway", "--bind", bind], &[]));
        assert!(err.contains("--allow-public"), "{err}");
    }
    // Nothing was started or written: no key, no code.
    assert!(!home.join("keys").join("agent.ed25519").exists());
}

#[test]
fn the_gateway_refuses_a_key_others_can_read_and_says_how_to_fix_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = scripted_home(tmp.path());
    let out = json(&ok(pincer(&home, &["keys", "generate", "--json"], "")));
    let shown = json(&ok(pincer(&home, &["keys", "show", "--json"], "")));
    assert_eq!(out["public_key"], shown["public_key"]);
    let again = fails(pincer(&home, &["keys", "generate"], ""));
    assert!(again.contains("never overwrites"), "{again}");
    let key = home.join("keys").join("agent.ed25519");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let ws = tmp.path().join("ws");
    let err = fails(pincer_env(
        &home,
        &[
            "gateway",
            "--bind",
            "127.0.0.1:0",
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
        &[],
    ));
    assert!(err.contains("chmod 600"), "{err}");
    let err = fails(pincer(&home, &["keys", "show"], ""));
    assert!(err.contains("chmod 600"), "{err}");
}

#[test]
fn version_names_the_gateway_feature() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = ok(pincer(tmp.path(), &["--version"], ""));
    assert!(out.contains("gateway"), "{out}");
}
