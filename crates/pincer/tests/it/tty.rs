//! The REPL on a real pseudo-terminal: what a person at a terminal sees
//! and types, approvals included.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Everything the terminal showed so far, and a way to wait for more.
#[derive(Clone, Default)]
pub(crate) struct Screen(pub(crate) Arc<(Mutex<String>, Condvar)>);

impl Screen {
    /// Waits (bounded) until the screen holds `needle` after `from`;
    /// returns the position just past it.
    pub(crate) fn wait_for(&self, needle: &str, from: usize) -> usize {
        let (text, changed) = &*self.0;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut t = text.lock().unwrap();
        loop {
            if let Some(i) = t.get(from..).and_then(|rest| rest.find(needle)) {
                return from + i + needle.len();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {needle:?} on the terminal:\n{t}");
            t = changed.wait_timeout(t, left).unwrap().0;
        }
    }
}

#[test]
fn an_unanswered_terminal_approval_does_not_swallow_the_next_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"id": "a", "name": "file_write",
                         "arguments": {"path": "first.txt", "content": "x"}}]},
        {"text": "first turn done"},
        {"tool_calls": [{"id": "b", "name": "file_write",
                         "arguments": {"path": "second.txt", "content": "y"}}],
         "expect": {"last_role": "user", "last_message_contains": "again please"}},
        {"text": "second turn done"}
    ]});
    crate::scripted_home(&home, &script.to_string(), "supervised", 2, "");

    let (child, screen, mut keys) =
        on_a_pty(&home, &["agent", "--workspace", ws.to_str().unwrap()]);

    let at = screen.wait_for("you> ", 0);
    keys.write_all(b"write it\r").unwrap();
    let asked = screen.wait_for("approve within 2 s?", at);
    // The reply's label comes with the reply, not before the question.
    {
        let t = screen.0.0.lock().unwrap();
        assert!(
            !t[at..asked].contains("pincer> "),
            "label before the prompt:\n{t}"
        );
    }
    let at = asked;
    // Nobody answers: denied at the deadline, the turn ends...
    let at = screen.wait_for("no answer within 2 s", at);
    let at = screen.wait_for("first turn done", at);
    let at = screen.wait_for("you> ", at);
    // ...and the next line typed goes to the REPL, not to a stale prompt.
    keys.write_all(b"again please\r").unwrap();
    let at = screen.wait_for("approve within 2 s?", at);
    keys.write_all(b"y\r").unwrap();
    let at = screen.wait_for("pincer> second turn done", at);
    let at = screen.wait_for("you> ", at);
    // Ctrl-C clears the line typed so far and stays; Ctrl-D leaves.
    keys.write_all(b"half a line").unwrap();
    if cfg!(feature = "repl") {
        // rustyline reads the key itself, in raw mode.
        keys.write_all(b"\x03").unwrap();
    } else {
        // The terminal's line discipline turns the key into SIGINT for its
        // foreground process group; this pty is not the child's
        // controlling terminal, so say it directly.
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        // What the line discipline does with the rest: it drops the line.
        keys.write_all(b"\x15").unwrap();
    }
    let at = screen.wait_for("you> ", at);
    keys.write_all(b"/session\r").unwrap();
    let at = screen.wait_for("live messages", at);
    screen.wait_for("you> ", at);
    leaves_on_ctrl_d(child, &mut keys);
    assert!(!ws.join("first.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.join("second.txt")).unwrap(), "y");
}

/// Ctrl-C while an approval waits cancels the turn, and the prompt that
/// asked stops reading: the next lines go to the REPL and to the next
/// approval, not to a prompt nobody waits for any more.
#[test]
fn a_cancelled_approval_prompt_takes_no_later_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"id": "a", "name": "file_write",
                         "arguments": {"path": "first.txt", "content": "x"}}]},
        {"tool_calls": [{"id": "b", "name": "file_write",
                         "arguments": {"path": "second.txt", "content": "y"}}]},
        {"text": "second turn done"}
    ]});
    crate::scripted_home(&home, &script.to_string(), "supervised", 120, "");
    let (child, screen, mut keys) =
        on_a_pty(&home, &["agent", "--workspace", ws.to_str().unwrap()]);
    let at = screen.wait_for("you> ", 0);
    keys.write_all(b"write it\r").unwrap();
    let at = screen.wait_for("approve within 120 s?", at);
    // Ctrl-C, as the terminal would send it (see the test below).
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let at = screen.wait_for("cancelled", at);
    let at = screen.wait_for("you> ", at);
    keys.write_all(b"/session\r").unwrap();
    let at = screen.wait_for("live messages", at);
    let at = screen.wait_for("you> ", at);
    keys.write_all(b"again please\r").unwrap();
    let at = screen.wait_for("approve within 120 s?", at);
    keys.write_all(b"y\r").unwrap();
    let at = screen.wait_for("second turn done", at);
    screen.wait_for("you> ", at);
    leaves_on_ctrl_d(child, &mut keys);
    assert!(!ws.join("first.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.join("second.txt")).unwrap(), "y");
}

/// `pincer ARGS` with a pseudo-terminal as its stdin, stdout and stderr:
/// the child, what its terminal shows, and the keyboard.
pub(crate) fn on_a_pty(
    home: &std::path::Path,
    args: &[&str],
) -> (std::process::Child, Screen, std::fs::File) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let slave_path = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(slave_path.to_str().unwrap())
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(args)
        .env("PINCER_HOME", home)
        .env("TERM", "xterm")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let screen = Screen::default();
    let mut reader = std::fs::File::from(master.try_clone().unwrap());
    let feed = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends with EIO when the child closes its side.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            let (text, changed) = &*feed.0;
            text.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
            changed.notify_all();
        }
    });
    (child, screen, std::fs::File::from(master))
}

/// Ctrl-D at the prompt: pincer exits 0, within a bound.
fn leaves_on_ctrl_d(mut child: std::process::Child, keys: &mut std::fs::File) {
    keys.write_all(b"\x04").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait()));
    let status = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("pincer did not exit after Ctrl-D")
        .unwrap();
    assert!(status.success());
}

/// Polls `cond` until it holds or 20 s pass.
fn eventually(cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// The pids of `parent`'s children, each with its state letter.
fn children(parent: u32) -> Vec<(u32, char)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let mut f = rest.split(' ');
        let state = f.next().and_then(|s| s.chars().next()).unwrap_or('?');
        if f.next().and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            out.push((pid, state));
        }
    }
    out
}

/// Ctrl-C during a turn whose shell command is still running cancels the
/// turn: the command and its sandbox are killed and reaped at once (no
/// zombie left until pincer exits), and the REPL goes on.
#[test]
fn ctrl_c_cancels_a_running_command_and_leaves_no_zombie() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let tag = 9_000_000 + std::process::id() % 1_000_000;
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"id": "a", "name": "shell",
            "arguments": {"command": format!("sleep {tag}"), "timeout_secs": 300}}]},
        {"text": "never"}
    ]});
    std::fs::write(home.join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[policy]\nautonomy = \"full\"\n\n[providers.s]\nkind = \"scripted\"\nscript = \"script.json\"\n",
    )
    .unwrap();
    let (child, screen, mut keys) = on_a_pty(&home, &["agent"]);
    let pid = child.id();
    let sleeping = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c == format!("sleep\0{tag}\0").as_bytes())
        })
    };
    let at = screen.wait_for("you> ", 0);
    keys.write_all(b"sleep please\r").unwrap();
    assert!(eventually(sleeping), "the command never started");
    assert!(!children(pid).is_empty(), "the sandbox is pincer's child");
    // What the terminal does on Ctrl-C for its foreground process group
    // (this pty is not the child's controlling terminal, so say it
    // directly; the sandbox has a process group of its own either way).
    let pincer = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    rustix::process::kill_process(pincer, rustix::process::Signal::INT).unwrap();
    let at = screen.wait_for("cancelled", at);
    let at = screen.wait_for("you> ", at);
    assert!(
        eventually(|| !sleeping()),
        "the command outlived the cancel"
    );
    assert!(
        eventually(|| children(pid).is_empty()),
        "left behind (pid, state): {:?}",
        children(pid)
    );
    // The next turn closes the call the cancel left open, and says it was
    // this cancel, not an earlier crash.
    keys.write_all(b"and now?\r").unwrap();
    let closed = screen.wait_for("tool call(s) the cancelled turn left open", at);
    let at = screen.wait_for("you> ", closed);
    assert!(
        !screen.0.0.lock().unwrap()[..at].contains("crash"),
        "{}",
        screen.0.0.lock().unwrap()
    );
    leaves_on_ctrl_d(child, &mut keys);
}
