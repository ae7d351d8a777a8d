//! `pincer serve` with Discord, end to end: the real binary, a Discord
//! server in the test (`discordapi`: REST routes and the gateway
//! WebSocket), the simulated board, a scripted model. A person chats and
//! approves a gated sensor read with a button (a non-approver's press and
//! a forged one do nothing), a stranger is refused and leaves no session,
//! bots are ignored; the gateway survives a Reconnect (op 7), a dead
//! connection (no heartbeat ACK) and malformed frames, resuming without
//! answering anything twice; a 429 is waited out; a refused token (close
//! 4004) is reported and retried with the supervisor's backoff.

use crate::discordapi::{BOT_ID, FakeDiscord, Fault, TOKEN};
use crate::json;
use crate::serve::{Daemon, cmd, kinds, trail, wait_for};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const OWNER: &str = "100000000000000111";
const FRIEND: &str = "100000000000000222";
const STRANGER: &str = "100000000000000333";
/// The owner's DM channel, and a guild channel.
const DM: &str = "900000000000000001";
const GUILD: &str = "900000000000000002";

fn fixture(dc: &FakeDiscord, script: &str, provider_extra: &str) -> crate::ServeHome {
    crate::serve_home(
        script,
        provider_extra,
        &format!(
            "[channels.discord]\ntoken_env = \"DC_TOKEN\"\napi_base = \"{}\"\n\
             allow_users = [\"{OWNER}\", \"{FRIEND}\"]\napprovers = [\"{OWNER}\"]\n",
            dc.api
        ),
    )
}

fn dc_cmd(home: &Path, args: &[&str]) -> Command {
    let mut c = cmd(home, args);
    c.env("DC_TOKEN", TOKEN);
    c
}

fn start(home: &Path) -> Daemon {
    Daemon::start_with(dc_cmd(home, &["serve"]))
}

fn status(home: &Path) -> Value {
    let o = dc_cmd(home, &["status", "--json"])
        .output()
        .expect("status");
    json(&String::from_utf8_lossy(&o.stdout))
}

fn summary(home: &Path) -> String {
    status(home)["front_ends"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["name"] == "serve").cloned())
        .and_then(|f| f["summary"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The first message posted to `channel` with buttons, and its approve
/// button's custom_id.
fn approve_button(dc: &FakeDiscord, channel: &str) -> Option<(String, String)> {
    let path = format!("/channels/{channel}/messages");
    dc.calls("POST", &path).into_iter().find_map(|c| {
        let id = c.body["components"][0]["components"][0]["custom_id"].as_str()?;
        Some((id.to_string(), c.body["content"].as_str()?.to_string()))
    })
}

/// The interaction callbacks' bodies, in order.
fn callbacks(dc: &FakeDiscord) -> Vec<Value> {
    dc.calls("POST", "/interactions/")
        .into_iter()
        .map(|c| c.body)
        .collect()
}

fn sessions(home: &Path) -> Vec<String> {
    std::fs::read_dir(home.join("sessions"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

const CHAT: &str = r#"{"turns": [
  {"text": "Hello from pincer.", "expect": {"last_role": "user", "last_message_contains": "hi pincer"}},
  {"tool_calls": [{"id": "t", "name": "i2c_read", "arguments": {"address": "0x48", "register": "0x00", "length": 2}}],
   "expect": {"last_role": "user", "last_message_contains": "temperature"}},
  {"text": "The sensor reads 20 degrees.", "expect": {"last_role": "tool"}},
  {"text": "Guild hello.", "expect": {"last_message_contains": "in the guild"}},
  {"text": "Time to water the plants.", "expect": {"last_message_contains": "water"}},
  {"text": "Time to water the plants."},
  {"text": "Time to water the plants."}
]}"#;

#[test]
fn discord_chat_and_approval_by_button_through_pincer_serve() {
    let dc = FakeDiscord::start();
    let fx = fixture(&dc, CHAT, "");
    let d = start(&fx.home);
    dc.wait(30, "the session ready", FakeDiscord::idle);
    let ids = dc.identifies();
    assert_eq!(ids.len(), 1, "{ids:#?}");
    // GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT.
    assert_eq!(ids[0]["intents"], 37376, "{ids:#?}");
    assert_eq!(ids[0]["token"], TOKEN);

    // A stranger is refused twice (recorded once); bots, the bot itself
    // and an empty message are not answered.
    dc.message(DM, STRANGER, "let me in");
    dc.message(DM, STRANGER, "please");
    dc.message_full(DM, BOT_ID, true, "hi pincer (from myself)", json!([]));
    dc.message_full(
        DM,
        "555555555555555555",
        true,
        "hi pincer, a bot",
        json!([]),
    );
    dc.message(DM, OWNER, "hi pincer");
    dc.wait(30, "the greeting", |d| {
        d.sent_to(DM)
            .iter()
            .any(|s| s.contains("Hello from pincer"))
    });
    let posted = dc.calls("POST", &format!("/channels/{DM}/messages"));
    assert_eq!(posted[0].auth.as_deref(), Some(&*format!("Bot {TOKEN}")));
    assert_eq!(
        posted[0].body["allowed_mentions"],
        json!({"parse": []}),
        "a reply must not ping anyone"
    );

    // A gated sensor read: the approval comes as two buttons.
    dc.message(DM, OWNER, "what is the temperature?");
    dc.wait(30, "the approval buttons", |d| {
        approve_button(d, DM).is_some()
    });
    let (custom, text) = approve_button(&dc, DM).expect("button");
    assert!(
        custom.starts_with("pa:") && custom.ends_with(":y"),
        "{custom}"
    );
    assert!(text.contains("i2c_read"), "{text}");
    let approval = custom.trim_start_matches("pa:").trim_end_matches(":y");
    // An allowlisted user who is not an approver presses it: refused, in
    // a message only they see; the approval stays open.
    dc.press(DM, FRIEND, &custom);
    // A button forged for another approval id, by the approver.
    dc.press(DM, OWNER, "pa:0123456789:y");
    // The approver's press in another channel does not count either.
    dc.press(GUILD, OWNER, &custom);
    dc.wait(30, "three refusals", |d| callbacks(d).len() >= 3);
    let cb = callbacks(&dc);
    for c in &cb[..3] {
        assert_eq!(c["type"], 4, "{cb:#?}");
        assert_eq!(c["data"]["flags"], 64, "ephemeral: {cb:#?}");
    }
    assert!(
        cb.iter().any(|c| c["data"]["content"]
            .as_str()
            .unwrap_or("")
            .contains("Only an approver")),
        "{cb:#?}"
    );
    assert!(
        !dc.sent_to(DM).iter().any(|s| s.contains("20 degrees")),
        "no press so far may run the tool"
    );
    assert!(dc.calls("PATCH", "/messages/").is_empty());
    // The approver's own press runs it; the message loses its buttons.
    dc.press(DM, OWNER, &custom);
    dc.wait(30, "the sensor reply", |d| {
        d.sent_to(DM).iter().any(|s| s.contains("20 degrees"))
    });
    dc.wait(30, "the approval settled", |d| {
        !d.calls("PATCH", "/messages/").is_empty()
    });
    dc.wait(30, "the press acknowledged", |d| callbacks(d).len() >= 4);
    assert_eq!(callbacks(&dc)[3]["type"], 6, "{:#?}", callbacks(&dc));
    let patch = &dc.calls("PATCH", "/messages/")[0];
    assert_eq!(patch.body["components"], json!([]), "{:?}", patch.body);
    assert!(
        patch.body["content"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("Approved by discord:{OWNER}")),
        "{:?}",
        patch.body
    );

    // A guild channel is a session of its own.
    dc.message(GUILD, FRIEND, "hello in the guild");
    dc.wait(30, "the guild reply", |d| {
        d.sent_to(GUILD).iter().any(|s| s.contains("Guild hello"))
    });
    assert!(
        summary(&fx.home).contains("discord running"),
        "{}",
        summary(&fx.home)
    );
    // Cron reports to a Discord channel: a job every second, removed once
    // it has run.
    let target = format!("discord:{DM}");
    crate::ok(
        dc_cmd(
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
                &target,
            ],
        )
        .output()
        .expect("cron add"),
    );
    dc.wait(30, "the cron reply in the channel", |d| {
        d.sent_to(DM).iter().any(|s| s.contains("water the plants"))
    });
    crate::ok(
        dc_cmd(&fx.home, &["cron", "remove", "water"])
            .output()
            .expect("cron remove"),
    );
    // Heartbeats carry the last sequence number.
    dc.wait(30, "a heartbeat with the sequence", |d| {
        d.heartbeats().iter().any(Value::is_u64)
    });
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    assert!(!err.contains(TOKEN), "the token leaked: {err}");

    let all_sent: Vec<String> = [DM, GUILD].iter().flat_map(|c| dc.sent_to(c)).collect();
    assert_eq!(
        all_sent
            .iter()
            .filter(|s| s.contains("Hello from pincer"))
            .count(),
        1,
        "{all_sent:#?}"
    );
    assert!(
        !all_sent
            .iter()
            .any(|s| s.contains("myself") || s.contains("a bot")),
        "{all_sent:#?}"
    );
    let t = trail(&fx.home);
    let refused = kinds(&t, "channel.refused");
    let stranger = format!("discord:{STRANGER}");
    assert_eq!(
        refused
            .iter()
            .filter(|e| e["data"]["from"] == *stranger)
            .count(),
        1,
        "throttled to one: {refused:#?}"
    );
    assert!(
        refused
            .iter()
            .any(|e| e["data"]["from"] == *format!("discord:{FRIEND}")
                && e["data"]["what"] == "approval"),
        "{refused:#?}"
    );
    let messages = kinds(&t, "channel.message");
    assert_eq!(
        messages.len(),
        3,
        "only the allowlisted messages: {messages:#?}"
    );
    let answered = kinds(&t, "approval.answer");
    assert_eq!(answered.len(), 1, "{answered:#?}");
    assert_eq!(answered[0]["actor"], *format!("discord:{OWNER}"));
    assert_eq!(answered[0]["data"]["id"], approval);
    assert!(
        kinds(&t, "tool.call")
            .iter()
            .any(|e| e["data"]["tool"] == "i2c_read"),
        "the sensor read ran through the gate"
    );
    let s = sessions(&fx.home);
    assert!(!s.iter().any(|n| n.contains("333")), "{s:?}");
    assert!(
        s.iter().any(|n| n.starts_with(&format!("discord-{DM}"))),
        "{s:?}"
    );
    assert!(
        s.iter().any(|n| n.starts_with(&format!("discord-{GUILD}"))),
        "{s:?}"
    );
    assert!(
        !s.iter().any(
            |n| std::fs::read_to_string(fx.home.join("sessions").join(n))
                .unwrap_or_default()
                .contains("let me in")
        ),
        "the stranger's words reached a session"
    );
}

const RESUME: &str = r#"{"turns": [
  {"text": "First answer.", "expect": {"last_message_contains": "one"}},
  {"text": "A green plant.", "expect": {"images": 1, "last_message_contains": "what is this"}},
  {"text": "Second answer.", "expect": {"last_message_contains": "two"}},
  {"text": "Third answer.", "expect": {"last_message_contains": "three"}},
  {"text": "Fourth answer.", "expect": {"last_message_contains": "four"}}
]}"#;

#[test]
fn discord_resumes_after_reconnect_and_a_dead_connection_and_waits_out_a_429() {
    let dc = FakeDiscord::start();
    let fx = fixture(&dc, RESUME, "vision = true\n");
    let d = start(&fx.home);
    dc.wait(30, "the session ready", FakeDiscord::idle);
    dc.message(DM, OWNER, "one");
    dc.wait(30, "the first answer", |d| {
        d.sent_to(DM).iter().any(|s| s.contains("First answer"))
    });

    // Frames that are not the gateway's JSON do not end anything.
    dc.raw(tungstenite::Message::text("{not json"));
    dc.raw(tungstenite::Message::text(
        r#"{"op": 0, "t": "MESSAGE_CREATE", "d": 5, "s": null}"#,
    ));
    dc.raw(tungstenite::Message::binary(vec![0u8, 159, 146, 150]));
    dc.raw(tungstenite::Message::text(r#"{"op": "x"}"#));

    // An image attachment reaches the vision model as image content; one
    // that declares a small size and streams 10 MB is cut off.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(std::iter::repeat_n(7u8, 300));
    let len = png.len();
    let good = dc.attachment(png, len, "image/png");
    dc.message_full(DM, OWNER, false, "what is this?", json!([good]));
    dc.wait(30, "the answer about the image", |d| {
        d.sent_to(DM).iter().any(|s| s.contains("A green plant"))
    });
    let liar = dc.attachment(vec![0x89; 10 * 1024 * 1024], 1000, "image/png");
    dc.message_full(DM, OWNER, false, "and this one?", json!([liar]));
    dc.wait(30, "the refusal of the oversized file", |d| {
        d.sent_to(DM)
            .iter()
            .any(|s| s.contains("could not fetch the picture"))
    });
    let cdn = dc.calls("GET", "/cdn/");
    assert_eq!(cdn.len(), 2, "{cdn:#?}");
    assert!(
        cdn.iter().all(|c| c.auth.is_none()),
        "the token went to the CDN"
    );

    // Reconnect (op 7): pincer connects again and resumes its session
    // with the last sequence; the server replays the last dispatch, which
    // must not be answered again.
    let seq_before = dc.heartbeats().iter().filter_map(Value::as_u64).max();
    dc.reconnect();
    dc.wait(30, "the resume", |d| d.resumes().len() == 1 && d.idle());
    let r = &dc.resumes()[0];
    assert_eq!(r["session_id"], "sess-1", "{r}");
    assert_eq!(r["token"], TOKEN);
    let seq = r["seq"].as_u64().expect("seq");
    assert!(
        seq_before.is_none_or(|b| seq >= b),
        "{seq} < {seq_before:?}"
    );
    dc.message(DM, OWNER, "two");
    dc.wait(30, "the second answer", |d| {
        d.sent_to(DM).iter().any(|s| s.contains("Second answer"))
    });

    // The server stops acknowledging heartbeats: pincer sees a zombie,
    // reconnects and resumes. The next reply meets a 429 first and is
    // sent after retry_after.
    dc.stop_acks();
    dc.wait(30, "the second resume", |d| {
        d.resumes().len() == 2 && d.idle()
    });
    assert_eq!(dc.resumes()[1]["session_id"], "sess-1");
    dc.fault(Fault::RateLimit(0.6));
    dc.message(DM, OWNER, "three");
    dc.wait(30, "the third answer", |d| {
        d.sent_to(DM).iter().any(|s| s.contains("Third answer"))
    });
    let posts = dc.calls("POST", &format!("/channels/{DM}/messages"));
    let last = posts.len() - 1;
    assert!(
        posts[last].at.duration_since(posts[last - 1].at) >= Duration::from_millis(600),
        "retry_after was not honoured"
    );
    assert!(posts[last - 1].limited && !posts[last].limited);
    assert_eq!(
        posts[last].body,
        posts[last - 1].body,
        "the same message again"
    );
    assert_eq!(dc.identifies().len(), 1, "resumed, never identified again");
    assert_eq!(dc.connections(), 3);

    // A session the server will not resume (op 9, false): pincer waits
    // the 1-5 s Discord asks and identifies afresh.
    dc.expire_session();
    dc.reconnect();
    dc.wait(30, "a fresh identify", |d| {
        d.identifies().len() == 2 && d.idle()
    });
    assert_eq!(dc.resumes().len(), 3, "{:#?}", dc.resumes());
    let refused = &dc.resumes()[2];
    let gap = dc.identify_times()[1].duration_since(dc.resume_times()[2]);
    assert!(
        gap >= Duration::from_millis(900),
        "identified again after {gap:?}"
    );
    assert_eq!(refused["session_id"], "sess-1");
    dc.message(DM, OWNER, "four");
    dc.wait(30, "the fourth answer", |d| {
        d.sent_to(DM).iter().any(|s| s.contains("Fourth answer"))
    });
    assert!(
        summary(&fx.home).contains("discord running"),
        "{}",
        summary(&fx.home)
    );
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");

    let sent = dc.sent_to(DM);
    for answer in [
        "First answer",
        "Second answer",
        "Third answer",
        "Fourth answer",
        "A green plant",
        "could not fetch the picture",
    ] {
        assert_eq!(
            sent.iter().filter(|s| s.contains(answer)).count(),
            1,
            "{answer}: {sent:#?}"
        );
    }
    let t = trail(&fx.home);
    let msgs = kinds(&t, "channel.message");
    assert_eq!(
        msgs.len(),
        5,
        "one, the good image, two, three, four: {msgs:#?}"
    );
}

#[test]
fn a_missing_or_refused_discord_token_is_reported_and_retried_with_backoff() {
    let dc = FakeDiscord::start();
    let fx = fixture(&dc, r#"{"turns": []}"#, "");
    // No token in the environment: the channel fails, saying so; cron runs.
    let d = Daemon::start_with(cmd(&fx.home, &["serve"]));
    wait_for(30, "discord reported failing", || {
        status(&fx.home)["errors"]
            .to_string()
            .contains("$DC_TOKEN is not set")
    });
    let s = summary(&fx.home);
    assert!(
        s.contains("discord RETRYING") && s.contains("cron running"),
        "{s}"
    );
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");

    // The gateway refuses the token (close 4004): reported, and tried
    // again only after the supervisor's backoff, never in a tight loop.
    dc.bad_auth();
    let d = start(&fx.home);
    wait_for(30, "the refused token in the status", || {
        status(&fx.home)["errors"]
            .to_string()
            .contains("Discord refused the bot token (gateway close 4004)")
    });
    dc.wait(30, "a second identify", |d| d.identifies().len() >= 2);
    let (code, err) = d.stop();
    assert!(code.success(), "{err}");
    assert!(!err.contains(TOKEN), "the token leaked: {err}");
    let status_file = std::fs::read_to_string(fx.home.join("serve/status.json")).expect("status");
    assert!(!status_file.contains(TOKEN), "the token leaked");
    let gw = dc.calls("GET", "/gateway/bot");
    assert!(gw.len() >= 2, "{gw:#?}");
    assert!(
        gw[1].at.duration_since(gw[0].at) >= Duration::from_millis(900),
        "retried without the backoff"
    );
    assert!(dc.identifies().len() <= 4, "{:?}", dc.identifies().len());
}
