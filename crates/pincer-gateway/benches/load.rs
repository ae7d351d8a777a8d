//! The gateway under load on loopback: `/health` requests per second and
//! latency quantiles, and 50 concurrent WebSocket chat sessions with the
//! scripted provider. Prints a report; asserts nothing about speed.
//!
//! In-process (a gateway over a temporary home):
//!     cargo bench -p pincer-gateway --bench load
//! Against a running `pincer gateway` (what `scripts/gateway-bench.sh` does
//! with the release binary):
//!     PINCER_BENCH_ADDR=127.0.0.1:PORT PINCER_BENCH_TOKEN=pincer_… \
//!         cargo bench -p pincer-gateway --bench load
//! Knobs: PINCER_BENCH_CLIENTS (16), PINCER_BENCH_REQUESTS per client (2000),
//! PINCER_BENCH_SESSIONS (50), PINCER_BENCH_TURNS per session (10).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a benchmark's fixture may panic

#[path = "../tests/it/loadgen.rs"]
mod loadgen;
#[path = "../tests/it/support.rs"]
#[allow(dead_code)]
mod support;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let clients = knob("PINCER_BENCH_CLIENTS", 16);
    let requests = knob("PINCER_BENCH_REQUESTS", 2000);
    let sessions = knob("PINCER_BENCH_SESSIONS", 50);
    let turns = knob("PINCER_BENCH_TURNS", 10);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let external = std::env::var("PINCER_BENCH_ADDR").ok();
        let (addr, token, _gw) = match external {
            Some(a) => (
                a.parse().expect("PINCER_BENCH_ADDR is ADDR:PORT"),
                std::env::var("PINCER_BENCH_TOKEN").expect("PINCER_BENCH_TOKEN"),
                None,
            ),
            None => {
                let gw = support::start_with(
                    &support::replies(sessions * turns + 10),
                    "supervised",
                    pincer_gateway::Limits {
                        api_per_minute: 1_000_000,
                        ..pincer_gateway::Limits::default()
                    },
                )
                .await;
                let token = gw.chatter().await;
                (gw.addr, token, Some(gw))
            }
        };
        println!("gateway at {addr}");
        // Warm up the connections' code paths.
        loadgen::http_load(addr, "/health", 2, 100).await;
        let run = loadgen::http_load(addr, "/health", clients, requests).await;
        println!(
            "{}",
            run.line(
                &format!("/health, {clients} keep-alive clients x {requests}"),
                "req"
            )
        );
        let (run, errors) = loadgen::ws_load(addr, &token, sessions, turns).await;
        println!(
            "{}",
            run.line(
                &format!("ws chat, {sessions} sessions x {turns} turns"),
                "turn"
            )
        );
        for e in errors.iter().take(5) {
            println!("  error: {e}");
        }
    });
}
