//! A bounded load test on loopback: every request of many clients at once
//! is answered correctly. The rates are printed (run with `--nocapture`);
//! speed is the benchmark's business (`benches/load.rs`), not an assert.

use crate::loadgen;
use crate::support::{replies, start_with};
use pincer_gateway::Limits;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_under_concurrent_keep_alive_clients() {
    let gw = start_with(&replies(1), "supervised", Limits::default()).await;
    let run = loadgen::http_load(gw.addr, "/health", 16, 200).await;
    eprintln!("{}", run.line("/health, 16 clients x 200", "req"));
    assert_eq!(run.failed, 0);
    assert_eq!(run.ok, 3200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_websocket_chat_sessions_at_once() {
    let gw = start_with(
        &replies(100),
        "supervised",
        Limits {
            // One token drives all fifty sessions here.
            api_per_minute: 10_000,
            ..Limits::default()
        },
    )
    .await;
    let token = gw.chatter().await;
    let (run, errors) = loadgen::ws_load(gw.addr, &token, 50, 2).await;
    eprintln!("{}", run.line("ws chat, 50 sessions x 2 turns", "turn"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(run.ok, 100);
    // Each turn got one scripted reply: 100 sessions' worth, none twice.
    let sessions = gw.get("/api/sessions", &token).await.json();
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(50));
}
