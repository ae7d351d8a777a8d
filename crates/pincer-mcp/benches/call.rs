//! What an MCP tool call costs: one `tools/call` round trip to a stdio
//! server in pincer's sandbox (the fake server of the integration tests,
//! which answers at once), the same call as an agent's tool through the
//! gate (schema check, `gate.decision` and `tool.call` entries fsynced),
//! and a server's whole start (sandbox, handshake, tool list) and stop.
//!
//! `cargo bench -p pincer-mcp --bench call`. This binary is its own
//! sandbox helper and its own fake server, like the tests.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "../tests/it/fake.rs"]
mod fake;
#[allow(dead_code)]
#[path = "../tests/it/support.rs"]
mod support;

use criterion::Criterion;
use pincer_core::gate::CallOutcome;
use pincer_core::policy::Autonomy;
use pincer_mcp::{Server, tools_of};
use pincer_test_support::Answer;
use serde_json::json;
use std::time::Duration;
use support::{World, call, fake, rt};

fn benches(c: &mut Criterion) {
    let w = World::new();
    let rt = rt();
    let server = rt
        .block_on(Server::start(
            fake("normal", r#"["echo"]"#, ""),
            w.launch(),
            Some(w.audit.clone()),
        ))
        .expect("the fake server starts");
    let tools = tools_of(&server);
    let gate = w.gate(Autonomy::Full, Answer::no());
    let mut g = c.benchmark_group("mcp");
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("tools/call round trip (stdio, sandboxed)", |b| {
        b.iter(|| {
            let out = rt
                .block_on(server.call("echo", json!({"text": "hi"})))
                .unwrap();
            assert!(!out.is_error);
        })
    });
    g.bench_function("agent tool call through the gate (audited)", |b| {
        b.iter(|| {
            let o = rt.block_on(call(&gate, &tools, "fake__echo", json!({"text": "hi"})));
            assert!(matches!(o, CallOutcome::Ran(Ok(_))), "{o:?}");
        })
    });
    g.sample_size(10);
    g.bench_function(
        "server start and stop (sandbox, handshake, tools/list)",
        |b| {
            b.iter(|| {
                rt.block_on(async {
                    let s = Server::start(fake("normal", r#"["echo"]"#, ""), w.launch(), None)
                        .await
                        .unwrap();
                    s.shutdown().await;
                })
            })
        },
    );
    g.finish();
    rt.block_on(server.shutdown());
}

fn main() {
    // This binary is also the sandbox's helper and the fake server.
    pincer_sandbox::run_helper_if_requested();
    fake::fake_server_if_requested();
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
