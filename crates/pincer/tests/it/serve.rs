//! `pincer serve` end to end: the real binary, a Bot API server in the test
//! (`botapi`), the simulated board, a scripted model. A person chats,
//! approves a gated sensor read with a button (and a non-approver's press
//! and a forged button do nothing), a stranger is refused and leaves no
//! session, cron runs a job and delivers its reply to the chat, and the
//! daemon survives restarts without losing an update or answering one
//! twice; runs missed while it was down are caught up or skipped as each
//! job says. The heartbeat checks in and tells the `notify` chat only what
//! is not `HEARTBEAT_OK`, and `pincer cron run` runs a job by hand.

use crate::botapi::{FakeTg, Fault, TOKEN};
use crate::{json, ok};
use pincer_core::message::Timestamp;
use pincer_serve::cron::{CronStore, Job, Missed};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const OWNER: i64 = 111;
const FRIEND: i64 = 222;
const STRANGER: i64 = 333;

fn fixture(tg: &FakeTg, script: &str, extra: &str) -> crate::ServeHome {
    crate::serve_home(
        script,
        "",
        &format!(
            "[channels.telegram]\ntoken_env = \"TG_TOKEN\"\napi_base = \"{}\"\n\
             allow_users = [{OWNER}, {FRIEND}]\napprovers = [{OWNER}]\npoll_timeout_secs = 2\n{extra}",
            tg.base
        ),
    )
}

pub(crate) fn cmd(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pincer"));
    c.args(args)
        .env("PINCER_HOME", home)
        .env("PINCER_BOARD", "sim")
        .env("TG_TOKEN", TOKEN);
    for k in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "PINCER_MODEL",
        "PINCER_WORKSPACE",
    ] {
        c.env_remove(k);
    }
    c
}

pub(crate) struct Daemon(Child);

impl Daemon {
    pub(crate) fn start(home: &Path) -> Daemon {
        Self::start_with(cmd(home, &["serve"]))
    }

    pub(crate) fn start_with(mut c: Command) -> Daemon {
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pincer serve");
        Daemon(child)
    }

    fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.0.id() as i32).expect("pid");
        rustix::process::kill_process(pid, sig).expect("kill");
    }

    /// SIGTERM, then the exit status and stderr.
    pub(crate) fn stop(mut self) -> (std::process::ExitStatus, String) {
        self.signal(rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.0.try_wait().expect("wait") {
                let mut err = String::new();
                if let Some(mut e) = self.0.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return (status, err);
            }
            assert!(Instant::now() < deadline, "pincer serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The trail's entries, read from its segment files (`pincer audit log`
/// would refuse to run while a test holds a broken config.toml).
pub(crate) fn trail(home: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("audit"))
        .expect("audit dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("trail") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .expect("segment")
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(json)
                .collect::<Vec<_>>()
        })
        .collect()
}

pub(crate) fn kinds<'a>(t: &'a [Value], kind: &str) -> Vec<&'a Value> {
    t.iter().filter(|e| e["kind"] == kind).collect()
}

pub(crate) fn wait_for(secs: u64, what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn status(home: &Path) -> (bool, Value) {
    let o = cmd(home, &["status", "--json"]).output().expect("status");
    (
        o.status.success(),
        json(&String::from_utf8_lossy(&o.stdout)),
    )
}

fn serve_part(v: &Value) -> Value {
    v["front_ends"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["name"] == "serve").cloned())
        .unwrap_or(Value::Null)
}

/// The first sent message carrying approval buttons, and its approve data.
fn approve_button(tg: &FakeTg, chat: i64) -> Option<String> {
    let id = chat.to_string();
    tg.calls("sendMessage")
        .into_iter()
        .filter(|c| c.body["chat_id"].as_str() == Some(id.as_str()))
        .find_map(|c| {
            c.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
                .as_str()
                .map(str::to_string)
        })
}

fn answers(tg: &FakeTg) -> Vec<String> {
    tg.calls("answerCallbackQuery")
        .into_iter()
        .filter_map(|c| c.body["text"].as_str().map(str::to_string))
        .collect()
}

const PHASE1: &str = r#"{"turns": [
  {"text": "Hello from pincer.", "expect": {"last_role": "user", "last_message_contains": "hi pincer"}},
  {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}],
   "expect": {"last_role": "user", "last_message_contains": "temperature"}},
  {"text": "The sensor reads 20 degrees.", "expect": {"last_role": "tool"}},
  {"text": "Time to water the plants.", "expect": {"last_message_contains": "water"}},
  {"text": "Time to water the plants."},
  {"text": "Time to water the plants."}
]}"#;

const PHASE2: &str = r#"{"turns": [
  {"text": "Back again.", "expect": {"last_role": "user", "last_message_contains": "are you back"}}
]}"#;

const PHASE3: &str = r#"{"turns": [
  {"text": "Caught up on the backup.", "expect": {"last_message_contains": "check the backup"}}
]}"#;

#[test]
fn chat_approve_by_button_cron_and_restarts_through_pincer_serve() {
    let tg = FakeTg::start();
    let fx = fixture(&tg, PHASE1, "");
    let d = Daemon::start(&fx.home);
    tg.wait(30, "the first poll", |t| !t.calls("getUpdates").is_empty());

    // A stranger is refused: no answer, no session, one trail entry.
    tg.message(STRANGER, "let me in");
    tg.message(STRANGER, "please");
    // The owner chats.
    tg.message(OWNER, "hi pincer");
    tg.wait(30, "the greeting", |t| {
        t.sent_to(OWNER)
            .iter()
            .any(|s| s.contains("Hello from pincer"))
    });

    // A gated sensor read: the approval comes as buttons.
    tg.message(OWNER, "what is the temperature?");
    tg.wait(30, "the approval buttons", |t| {
        approve_button(t, OWNER).is_some()
    });
    let data = approve_button(&tg, OWNER).expect("button");
    assert!(data.starts_with("pa:") && data.ends_with(":y"), "{data}");
    // An allowlisted user who is not an approver presses it: nothing.
    tg.press(OWNER, FRIEND, &data);
    tg.wait(30, "the refusal of the friend's press", |t| {
        answers(t).iter().any(|a| a.contains("Only an approver"))
    });
    // The approver presses a button forged for another approval id.
    tg.press(OWNER, OWNER, "pa:0123456789:y");
    tg.wait(30, "the forged press answered", |t| {
        answers(t).iter().any(|a| a.contains("no longer open"))
    });
    // The friend's press in another chat (its own) does not count either.
    tg.press(FRIEND, OWNER, &data);
    tg.wait(30, "the press from another chat", |t| answers(t).len() >= 3);
    assert!(
        !tg.sent_to(OWNER).iter().any(|s| s.contains("20 degrees")),
        "no press so far may run the tool"
    );
    // The approver's own press runs it.
    tg.press(OWNER, OWNER, &data);
    tg.wait(30, "the sensor reply", |t| {
        t.sent_to(OWNER).iter().any(|s| s.contains("20 degrees"))
    });
    assert!(
        tg.sent_to(STRANGER).is_empty(),
        "{:?}",
        tg.sent_to(STRANGER)
    );

    // `pincer status` sees the daemon and its services.
    let (good, st) = status(&fx.home);
    assert!(good, "{st}");
    let part = serve_part(&st);
    assert_eq!(part["detail"]["running"], true, "{part}");
    let summary = part["summary"].as_str().unwrap_or("");
    assert!(summary.contains("telegram running"), "{summary}");
    assert!(summary.contains("cron running"), "{summary}");

    // Cron: a job every second reporting to the owner's chat; removed once
    // it has run.
    ok(cmd(
        &fx.home,
        &[
            "cron",
            "add",
            "--name",
            "water",
            "--schedule",
            "* * * * * *",
            "--prompt",
            "remind me to water",
            "--notify",
            "telegram:111",
        ],
    )
    .output()
    .expect("cron add"));
    tg.wait(30, "the cron reply in the chat", |t| {
        t.sent_to(OWNER)
            .iter()
            .any(|s| s.contains("water the plants"))
    });
    ok(cmd(&fx.home, &["cron", "remove", "water"])
        .output()
        .expect("cron remove"));

    // Stop mid-poll; a message comes while pincer is down.
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    assert!(!err.contains(TOKEN), "the token leaked: {err}");
    tg.message(OWNER, "are you back?");
    std::fs::write(fx.home.join("script.json"), PHASE2).expect("script 2");
    let d = Daemon::start(&fx.home);
    tg.wait(30, "the answer after the restart", |t| {
        t.sent_to(OWNER).iter().any(|s| s.contains("Back again"))
    });
    tg.wait(30, "every update confirmed", |t| t.pending() == 0);
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");

    // Nothing answered twice across the restart.
    let sent = tg.sent_to(OWNER);
    let count = |needle: &str| sent.iter().filter(|s| s.contains(needle)).count();
    assert_eq!(count("Hello from pincer"), 1, "{sent:#?}");
    assert_eq!(count("20 degrees"), 1, "{sent:#?}");
    assert_eq!(count("Back again"), 1, "{sent:#?}");

    // Runs missed while pincer was down: jobs added three hours ago to an
    // hourly schedule. One catches up once, one skips; both are said.
    let store = CronStore::open(&fx.home.join("cron")).expect("cron store");
    let ago = Timestamp::from_millis(Timestamp::now().as_millis() - 3 * 3600 * 1000);
    for (name, missed, prompt) in [
        ("backup", Missed::RunOnce, "check the backup"),
        ("digest", Missed::Skip, "send the digest"),
    ] {
        store
            .add(Job {
                name: name.into(),
                schedule: "0 * * * *".into(),
                prompt: prompt.into(),
                missed,
                notify: Some("telegram:111".into()),
                created: ago,
            })
            .expect("add");
    }
    std::fs::write(fx.home.join("script.json"), PHASE3).expect("script 3");
    let d = Daemon::start(&fx.home);
    tg.wait(30, "the catch-up reply", |t| {
        t.sent_to(OWNER).iter().any(|s| s.contains("Caught up"))
    });
    wait_for(30, "the skip recorded", || {
        !kinds(&trail(&fx.home), "cron.skip").is_empty()
    });
    let list = json(&ok(cmd(&fx.home, &["cron", "list", "--json"])
        .output()
        .expect("cron list")));
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    let jobs = list["jobs"].as_array().expect("jobs");
    let by = |n: &str| jobs.iter().find(|j| j["name"] == n).expect("job").clone();
    assert_eq!(by("backup")["last"]["trigger"], "catch_up", "{list}");
    assert!(by("backup")["last"]["missed"].as_u64() >= Some(2), "{list}");
    assert_eq!(by("digest")["last"]["trigger"], "skipped", "{list}");

    // The trail says all of it, and it verifies.
    let t = trail(&fx.home);
    let refused = kinds(&t, "channel.refused");
    let strangers: Vec<&&Value> = refused
        .iter()
        .filter(|e| e["data"]["from"] == "telegram:333")
        .collect();
    assert_eq!(strangers.len(), 1, "throttled to one: {refused:#?}");
    assert!(
        refused
            .iter()
            .any(|e| e["data"]["from"] == "telegram:222" && e["data"]["what"] == "approval"),
        "{refused:#?}"
    );
    let sessions: Vec<String> = std::fs::read_dir(fx.home.join("sessions"))
        .expect("sessions")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert!(
        !sessions.iter().any(|s| s.contains("333")),
        "a stranger has a session: {sessions:?}"
    );
    assert!(
        sessions.iter().any(|s| s.contains("telegram-111")),
        "{sessions:?}"
    );
    let answered = kinds(&t, "approval.answer");
    assert_eq!(answered.len(), 1, "{answered:#?}");
    assert_eq!(answered[0]["actor"], "telegram:111");
    assert!(
        kinds(&t, "tool.call")
            .iter()
            .chain(kinds(&t, "gate.decision").iter())
            .any(|e| e["data"]["tool"] == "i2c_read"),
        "the sensor read went through the gate"
    );
    let runs = kinds(&t, "cron.run");
    assert!(
        runs.iter().any(|e| e["data"]["job"] == "water"),
        "{runs:#?}"
    );
    assert!(
        runs.iter()
            .any(|e| e["data"]["job"] == "backup" && e["data"]["trigger"] == "catch_up"),
        "{runs:#?}"
    );
    assert!(
        !runs.iter().any(|e| e["data"]["job"] == "digest"),
        "a skipping job must not run: {runs:#?}"
    );
    assert_eq!(kinds(&t, "serve.start").len(), 3);
    assert_eq!(kinds(&t, "serve.stop").len(), 3);
    let v = json(&ok(cmd(&fx.home, &["audit", "verify", "--json"])
        .output()
        .expect("verify")));
    assert!(v["defect"].is_null(), "{v}");
}

#[test]
fn a_failing_channel_is_retried_and_shown_while_the_rest_runs_and_sighup_reloads() {
    let tg = FakeTg::start();
    let fx = fixture(&tg, r#"{"turns": []}"#, "\n[heartbeat]\nevery_secs = 1\n");
    // The token variable is not set: telegram fails, cron and the
    // heartbeat run on (the heartbeat, with no HEARTBEAT.md, runs no turn
    // and says so).
    let d = Daemon::start_with({
        let mut c = cmd(&fx.home, &["serve"]);
        c.env_remove("TG_TOKEN");
        c
    });
    wait_for(30, "telegram reported failing", || {
        let (good, st) = status(&fx.home);
        !good
            && st["errors"].as_array().is_some_and(|e| {
                e.iter()
                    .any(|e| e.as_str().unwrap_or("").contains("telegram is failing"))
            })
    });
    let (_, st) = status(&fx.home);
    let summary = serve_part(&st)["summary"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(summary.contains("telegram RETRYING"), "{summary}");
    assert!(summary.contains("cron running"), "{summary}");
    wait_for(30, "the heartbeat's word", || {
        serve_part(&status(&fx.home).1)["summary"]
            .as_str()
            .is_some_and(|s| s.contains("nothing to check, so no turn runs"))
    });
    let errors = st["errors"].to_string();
    assert!(errors.contains("$TG_TOKEN is not set"), "{errors}");

    // SIGHUP with a broken file: refused, the old config keeps running.
    let config = std::fs::read_to_string(fx.home.join("config.toml")).expect("config");
    std::fs::write(
        fx.home.join("config.toml"),
        format!("{config}\n[serve]\ndrian = 1\n"),
    )
    .expect("broken");
    d.signal(rustix::process::Signal::HUP);
    wait_for(30, "the refused reload", || {
        kinds(&trail(&fx.home), "serve.reload")
            .iter()
            .any(|e| e["data"]["applied"] == false)
    });
    let t = trail(&fx.home);
    let refused = kinds(&t, "serve.reload");
    assert!(
        refused[0]["data"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("config.toml"),
        "{refused:#?}"
    );
    // SIGHUP with a changed policy: applied, and the change is audited.
    std::fs::write(
        fx.home.join("config.toml"),
        config.replace("autonomy = \"supervised\"", "autonomy = \"readonly\""),
    )
    .expect("changed");
    d.signal(rustix::process::Signal::HUP);
    wait_for(30, "the applied reload", || {
        kinds(&trail(&fx.home), "serve.reload")
            .iter()
            .any(|e| e["data"]["applied"] == true)
    });
    let t = trail(&fx.home);
    let change = kinds(&t, "policy.change");
    assert_eq!(change.len(), 1, "{change:#?}");
    assert!(
        change[0]["data"].to_string().contains("readonly"),
        "{change:#?}"
    );
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    let (_, st) = status(&fx.home);
    assert_eq!(serve_part(&st)["detail"]["running"], false, "{st}");
}

#[test]
fn rate_limits_conflicts_and_a_dropped_poll_are_survived() {
    let tg = FakeTg::start();
    let script = r#"{"turns": [
      {"text": "First answer.", "expect": {"last_message_contains": "one"}},
      {"text": "Second answer.", "expect": {"last_message_contains": "two"}}
    ]}"#;
    let fx = fixture(&tg, script, "");
    // The first poll is dropped mid-flight, the next is rate limited.
    tg.fault(Fault::Drop);
    tg.fault(Fault::RateLimit(2));
    let d = Daemon::start(&fx.home);
    tg.message(OWNER, "one");
    tg.wait(30, "the first answer", |t| {
        t.sent_to(OWNER).iter().any(|s| s.contains("First answer"))
    });
    let polls = tg.calls("getUpdates");
    assert!(polls.len() >= 3, "{}", polls.len());
    assert!(
        polls[2].at.duration_since(polls[1].at) >= Duration::from_secs(2),
        "retry_after was not honoured"
    );
    // Another poller takes the bot (409): telegram fails, is retried with
    // backoff, says why in the status, and comes back.
    tg.fault(Fault::Conflict);
    tg.fault(Fault::Conflict);
    wait_for(30, "the conflict in the status", || {
        status(&fx.home).1["errors"]
            .to_string()
            .contains("another program is polling")
    });
    tg.message(OWNER, "two");
    tg.wait(30, "the second answer", |t| {
        t.sent_to(OWNER).iter().any(|s| s.contains("Second answer"))
    });
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    let status_file = std::fs::read_to_string(fx.home.join("serve/status.json")).expect("status");
    assert!(
        !status_file.contains(TOKEN) && !err.contains(TOKEN),
        "the token leaked"
    );
    let sent = tg.sent_to(OWNER);
    assert_eq!(
        sent.iter().filter(|s| s.contains("First answer")).count(),
        1,
        "{sent:#?}"
    );
}

#[test]
fn a_second_daemon_on_one_home_is_refused() {
    let tg = FakeTg::start();
    let fx = fixture(&tg, r#"{"turns": []}"#, "");
    let d = Daemon::start(&fx.home);
    tg.wait(30, "the first poll", |t| !t.calls("getUpdates").is_empty());
    let o = cmd(&fx.home, &["serve"]).output().expect("second");
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("another `pincer serve`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
}

/// The unit in the repository passes `systemd-analyze verify` with no
/// warning at all (an unknown or misspelt key is only a warning there),
/// with its ExecStart pointed at the binary under test.
#[test]
fn the_systemd_unit_verifies() {
    let unit_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/systemd/pincer.service");
    let unit = std::fs::read_to_string(&unit_path).expect("the unit");
    assert!(
        unit.contains("ExecStart=/usr/local/bin/pincer serve\n"),
        "{unit}"
    );
    assert!(
        unit.contains("ExecReload=/bin/kill -HUP $MAINPID\n"),
        "{unit}"
    );
    assert!(unit.contains("KillSignal=SIGTERM\n"), "{unit}");
    let Ok(probe) = Command::new("systemd-analyze").arg("--version").output() else {
        println!("SKIPPED: systemd-analyze is not installed on this machine");
        return;
    };
    assert!(probe.status.success());
    let tmp = tempfile::tempdir().expect("tempdir");
    let here = tmp.path().join("pincer.service");
    std::fs::write(
        &here,
        unit.replace("/usr/local/bin/pincer", env!("CARGO_BIN_EXE_pincer")),
    )
    .expect("write");
    let o = Command::new("systemd-analyze")
        .args(["verify", here.to_str().expect("utf8")])
        .output()
        .expect("systemd-analyze");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("pincer.service"),
        "systemd-analyze warns about the unit: {err}"
    );
}

/// A photo reaches a vision model as image content; a file that declares
/// a small size and then streams 10 MB is cut off at the image limit, the
/// person is told, and nothing of it reaches the session.
#[test]
fn photos_reach_a_vision_model_and_a_lying_10_mb_file_is_cut_off() {
    let tg = FakeTg::start();
    let script = r#"{"turns": [
      {"text": "A green plant.", "expect": {"images": 1, "last_message_contains": "what is this"}}
    ]}"#;
    let fx = fixture(&tg, script, "");
    let config = std::fs::read_to_string(fx.home.join("config.toml")).expect("config");
    std::fs::write(
        fx.home.join("config.toml"),
        config.replace(
            "script = \"script.json\"\n",
            "script = \"script.json\"\nvision = true\n",
        ),
    )
    .expect("vision");
    let d = Daemon::start(&fx.home);
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0];
    jpeg.extend(std::iter::repeat_n(7u8, 300));
    let len = jpeg.len();
    tg.photo(OWNER, "what is this?", jpeg, len);
    tg.wait(30, "the answer about the photo", |t| {
        t.sent_to(OWNER).iter().any(|s| s.contains("A green plant"))
    });
    tg.photo(OWNER, "and this one?", vec![0xFF; 10 * 1024 * 1024], 1000);
    tg.wait(30, "the refusal of the oversized file", |t| {
        t.sent_to(OWNER)
            .iter()
            .any(|s| s.contains("could not fetch the picture"))
    });
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    let t = trail(&fx.home);
    let msgs = kinds(&t, "channel.message");
    assert_eq!(msgs.len(), 1, "only the good photo is taken: {msgs:#?}");
    assert_eq!(msgs[0]["data"]["images"], 1);
    let session = std::fs::read_dir(fx.home.join("sessions"))
        .expect("sessions")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("telegram-111") && n.ends_with(".jsonl"))
        })
        .expect("the chat's session");
    let text = std::fs::read_to_string(session).expect("session");
    assert!(
        !text.contains("and this one"),
        "the cut-off photo reached the session"
    );
    assert_eq!(text.matches("\"media_type\"").count(), 1, "{}", text.len());
}

/// SIGTERM while a turn waits on an approval: the drain gives it
/// `drain_secs`, then cancels it and says so in `serve.stop`; the session
/// stays valid, and after a restart the chat goes on.
#[test]
fn sigterm_mid_turn_cancels_it_after_the_drain_and_the_session_goes_on() {
    let tg = FakeTg::start();
    let script = r#"{"turns": [
      {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}],
       "expect": {"last_message_contains": "temperature"}}
    ]}"#;
    let fx = fixture(&tg, script, "");
    let config = std::fs::read_to_string(fx.home.join("config.toml")).expect("config");
    std::fs::write(
        fx.home.join("config.toml"),
        config.replace("drain_secs = 5", "drain_secs = 1"),
    )
    .expect("drain");
    let d = Daemon::start(&fx.home);
    tg.message(OWNER, "what is the temperature?");
    tg.wait(30, "the approval buttons", |t| {
        approve_button(t, OWNER).is_some()
    });
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    assert!(err.contains("1 turn(s) cancelled"), "{err}");
    let t = trail(&fx.home);
    let stop = kinds(&t, "serve.stop");
    assert_eq!(stop[0]["data"]["cancelled_turns"], 1, "{stop:#?}");
    assert!(
        !kinds(&t, "tool.call")
            .iter()
            .any(|e| e["data"]["tool"] == "i2c_read"),
        "the unapproved read ran"
    );
    std::fs::write(
        fx.home.join("script.json"),
        r#"{"turns": [{"text": "Here again.", "expect": {"last_message_contains": "still there"}}]}"#,
    )
    .expect("script 2");
    let d = Daemon::start(&fx.home);
    tg.message(OWNER, "still there?");
    tg.wait(30, "the answer after the cancelled turn", |t| {
        t.sent_to(OWNER).iter().any(|s| s.contains("Here again"))
    });
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    let v = json(&ok(cmd(&fx.home, &["audit", "verify", "--json"])
        .output()
        .expect("verify")));
    assert!(v["defect"].is_null(), "{v}");
}

/// The heartbeat through the real daemon, every second: HEARTBEAT.md with
/// a check in it runs a turn in the session `heartbeat`; a reply of
/// `HEARTBEAT_OK` is sent nowhere, any other reply goes to `notify`.
#[test]
fn the_heartbeat_checks_in_says_nothing_when_all_is_well_and_tells_notify_otherwise() {
    let tg = FakeTg::start();
    let quiet = r#"{"text": "HEARTBEAT_OK"}"#;
    let script = format!(
        r#"{{"turns": [
      {{"text": "HEARTBEAT_OK",
        "expect": {{"last_role": "user", "last_message_contains": "greenhouse above 30"}}}},
      {{"text": "The greenhouse is at 34 degrees: open the vent.",
        "expect": {{"last_role": "user", "last_message_contains": "reply with exactly HEARTBEAT_OK"}}}},
      {}
    ]}}"#,
        // Quiet runs for the seconds between the alert and the test
        // emptying HEARTBEAT.md.
        vec![quiet; 60].join(",\n      ")
    );
    let fx = fixture(
        &tg,
        &script,
        "\n[heartbeat]\nevery_secs = 1\nnotify = \"telegram:111\"\n",
    );
    let d = Daemon::start(&fx.home);
    // The checklist once Telegram polls, so the alert has a chat to go to.
    tg.wait(30, "the first poll", |t| !t.calls("getUpdates").is_empty());
    let checklist = fx.home.join("HEARTBEAT.md");
    std::fs::write(
        &checklist,
        "# Heartbeat\n- is the greenhouse above 30 degrees?\n",
    )
    .expect("HEARTBEAT.md");
    let done = |home: &Path| -> Vec<Value> {
        if !home.join("audit").exists() {
            return Vec::new();
        }
        kinds(&trail(home), "cron.done")
            .into_iter()
            .filter(|e| e["data"]["job"] == "heartbeat")
            .cloned()
            .collect()
    };
    wait_for(60, "two heartbeat turns", || done(&fx.home).len() >= 2);
    // Nothing more to check: the heartbeat goes quiet and says so.
    std::fs::write(&checklist, "# Heartbeat\n<!-- nothing for now -->\n").expect("empty it");
    wait_for(30, "the heartbeat's word on an empty list", || {
        serve_part(&status(&fx.home).1)["summary"]
            .as_str()
            .is_some_and(|s| s.contains("nothing to check, so no turn runs"))
    });
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");

    // Only the alert reached a chat, once, marked as the heartbeat's (in
    // MarkdownV2, as every message pincer sends to Telegram).
    let sent: Vec<String> = tg
        .calls("sendMessage")
        .into_iter()
        .filter_map(|c| c.body["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        sent,
        vec![r"\[heartbeat\] The greenhouse is at 34 degrees: open the vent\.".to_string()],
        "{sent:#?}"
    );
    assert_eq!(
        tg.sent_to(OWNER).len(),
        1,
        "the alert goes to the notify chat"
    );

    // The trail: every run is the heartbeat's, in its own session; the
    // first (quiet) went nowhere, the second to telegram:111, no other.
    let t = trail(&fx.home);
    let runs = kinds(&t, "cron.run");
    assert!(runs.len() >= 2, "{runs:#?}");
    for r in &runs {
        assert_eq!(r["data"]["job"], "heartbeat", "{r}");
        assert_eq!(r["data"]["trigger"], "heartbeat", "{r}");
        assert_eq!(r["data"]["session"], "heartbeat", "{r}");
    }
    let done = done(&fx.home);
    assert_eq!(done[0]["data"]["status"], "ok", "{:#?}", done[0]);
    assert!(done[0]["data"]["delivered_to"].is_null(), "{:#?}", done[0]);
    assert_eq!(
        done[1]["data"]["delivered_to"], "telegram:111",
        "{:#?}",
        done[1]
    );
    assert_eq!(
        done.iter()
            .filter(|e| !e["data"]["delivered_to"].is_null())
            .count(),
        1,
        "{done:#?}"
    );
    // The quiet reply is still in the session, with the checklist.
    let session =
        std::fs::read_to_string(fx.home.join("sessions/heartbeat.jsonl")).expect("session");
    assert!(session.contains("greenhouse above 30"), "{session}");
    assert!(session.contains("\"HEARTBEAT_OK\""), "{session}");
    assert!(session.contains("open the vent"), "{session}");
    let v = json(&ok(cmd(&fx.home, &["audit", "verify", "--json"])
        .output()
        .expect("verify")));
    assert!(v["defect"].is_null(), "{v}");
}

/// `pincer cron run NAME`: the job runs here and now, in its own session,
/// its reply printed (not sent: no channel runs in this process, and the
/// result says so), recorded as a manual run; a failed run exits 1.
#[test]
fn cron_run_runs_a_job_here_prints_its_reply_and_records_it() {
    // Each run is a process of its own, and the scripted model starts its
    // script from the top in each.
    let script = |text: &str, expected: &str| {
        format!(
            r#"{{"turns": [{{"text": "{text}", "expect": {{"last_role": "user", "last_message_contains": "{expected}"}}}}]}}"#
        )
    };
    let fx = crate::serve_home(
        &script("The greenhouse is fine.", "Check the greenhouse"),
        "",
        "",
    );
    let home = &fx.home;
    let set_script = |s: String| std::fs::write(home.join("script.json"), s).expect("script");
    ok(cmd(
        home,
        &[
            "cron",
            "add",
            "--name",
            "plants",
            "--schedule",
            "0 8 * * *",
            "--prompt",
            "Check the greenhouse",
            "--notify",
            "telegram:111",
        ],
    )
    .output()
    .expect("cron add"));

    let out = ok(cmd(home, &["cron", "run", "plants"])
        .output()
        .expect("cron run"));
    assert_eq!(out.trim(), "The greenhouse is fine.", "{out}");
    set_script(script("Still fine.", "Check the greenhouse"));
    let v = json(&ok(cmd(home, &["cron", "run", "plants", "--json"])
        .output()
        .expect("cron run --json")));
    assert_eq!(v["job"], "plants", "{v}");
    assert_eq!(v["reply"], "Still fine.", "{v}");
    assert!(v["error"].is_null(), "{v}");
    let why = v["delivery_error"].as_str().unwrap_or("");
    assert!(
        why.contains("not sent to telegram:111") && why.contains("prints its reply"),
        "{v}"
    );

    // The model refuses the request (the script expects another prompt):
    // the run fails, says so, exits 1.
    set_script(script("unreachable", "something else"));
    let o = cmd(home, &["cron", "run", "plants"])
        .output()
        .expect("cron run");
    let err = crate::fails(o);
    assert!(err.contains("the run failed"), "{err}");
    // A job that does not exist is named.
    let err = crate::fails(cmd(home, &["cron", "run", "nope"]).output().expect("run"));
    assert!(err.contains("no cron job `nope`"), "{err}");

    let list = json(&ok(cmd(home, &["cron", "list", "--json"])
        .output()
        .expect("cron list")));
    let last = &list["jobs"][0]["last"];
    assert_eq!(last["trigger"], "manual", "{list}");
    assert_eq!(last["status"], "error", "{list}");
    assert!(!last["finished"].is_null(), "{list}");

    let t = trail(home);
    let runs = kinds(&t, "cron.run");
    assert_eq!(runs.len(), 3, "{runs:#?}");
    for r in &runs {
        assert_eq!(r["actor"], "system", "{r}");
        assert_eq!(r["data"]["trigger"], "manual", "{r}");
        assert_eq!(r["data"]["session"], "cron-plants", "{r}");
    }
    let done = kinds(&t, "cron.done");
    let statuses: Vec<&Value> = done.iter().map(|e| &e["data"]["status"]).collect();
    assert_eq!(statuses, ["ok", "ok", "error"], "{done:#?}");
    assert!(done.iter().all(|e| e["data"]["delivered_to"].is_null()));
    let session =
        std::fs::read_to_string(home.join("sessions/cron-plants.jsonl")).expect("session");
    assert!(session.contains("The greenhouse is fine."), "{session}");
    assert!(session.contains("Still fine."), "{session}");
    let v = json(&ok(cmd(home, &["audit", "verify", "--json"])
        .output()
        .expect("verify")));
    assert!(v["defect"].is_null(), "{v}");
}
