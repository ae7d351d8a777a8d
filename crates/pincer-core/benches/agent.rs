//! Per-turn overhead of the agent loop, excluding the model (target
//! < 1 ms): a 1 000-turn session, a model that answers at once, and a turn
//! with one tool call. Measured with fsync off and the trail on tmpfs (the
//! loop's own work) and with the default `turn` policy and the trail on
//! disk (what a user gets on this disk).
#![allow(clippy::expect_used, clippy::unwrap_used)] // bench fixtures: failing loudly is right

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use pincer_core::agent::{Agent, AgentSettings, Conversation};
use pincer_core::approvals::DenyAll;
use pincer_core::audit::Audit;
use pincer_core::config::FsyncPolicy;
use pincer_core::gate::{Gate, GatePolicy, Permit};
use pincer_core::message::{Message, ToolCall};
use pincer_core::policy::Autonomy;
use pincer_core::policy::Risk;
use pincer_core::provider::{
    BoxFuture, ChatRequest, ChatResponse, FinishReason, Provider, ProviderCaps, ProviderError,
};
use pincer_core::session::SessionStore;
use pincer_core::tool::{Assessment, Tool, ToolError};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Answers instantly: every odd call asks for one tool, every even call
/// gives the final reply.
struct Instant(AtomicUsize);

impl Provider for Instant {
    fn name(&self) -> &str {
        "instant"
    }
    fn caps(&self) -> ProviderCaps {
        ProviderCaps::default()
    }
    fn chat<'a>(
        &'a self,
        _req: &'a ChatRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let n = self.0.fetch_add(1, Ordering::Relaxed);
            let calls = if n.is_multiple_of(2) {
                vec![ToolCall::new(
                    format!("c{n}"),
                    "echo",
                    &json!({"text": "x"}),
                )]
            } else {
                on_text("done");
                Vec::new()
            };
            Ok(ChatResponse {
                content: if calls.is_empty() {
                    "done".into()
                } else {
                    String::new()
                },
                finish: if calls.is_empty() {
                    FinishReason::Stop
                } else {
                    FinishReason::ToolCalls
                },
                tool_calls: calls,
                usage: None,
                provider: "instant".into(),
                model: "none".into(),
                attempts: Vec::new(),
            })
        })
    }
}

struct Echo;
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "echo"
    }
    fn parameters_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn assess(&self, _a: &serde_json::Value) -> Assessment {
        Assessment::new(Risk::Low, "bench")
    }
    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move { Ok(permit.args().to_string()) })
    }
}

fn bench_turn(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    for policy in [FsyncPolicy::Never, FsyncPolicy::Turn] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SessionStore::open(dir.path(), policy).expect("store");
        {
            let mut w = store.writer("s").expect("writer");
            let history: Vec<Message> = (0..1000)
                .flat_map(|i| {
                    [
                        Message::user(format!("question {i}")),
                        Message::assistant(format!("answer {i}")),
                    ]
                })
                .collect();
            w.append(&history).expect("append");
        }
        let settings = AgentSettings {
            system_prompt: "bench".into(),
            max_tool_iterations: 4,
            // Big enough that nothing is trimmed: the loop itself is measured,
            // trimming has its own bench.
            context_window: 1_000_000,
            output_reserve: 1024,
            summary_max_chars: 4000,
            chars_per_token: 4.0,
        };
        // The gate's audit trail is real: every call costs a decision and
        // an outcome entry, each fsynced. With the session's fsync off, the
        // trail goes to tmpfs where there is one (its fsyncs cost nothing
        // there), so that number is the loop's own work; with `turn` it
        // stays on the disk beside the session, as a user has it.
        let trail_dir = match policy {
            FsyncPolicy::Never if std::path::Path::new("/dev/shm").is_dir() => {
                tempfile::tempdir_in("/dev/shm").expect("tmpfs tempdir")
            }
            _ => tempfile::tempdir().expect("tempdir"),
        };
        let audit = Arc::new(Audit::open(&trail_dir.path().join("audit")).expect("audit"));
        let gate_policy = GatePolicy {
            autonomy: Autonomy::Full,
            approval_timeout: Duration::from_secs(1),
            deny_tools: vec![],
        };
        let gate = Gate::new(
            gate_policy,
            "agent:bench",
            audit,
            Arc::new(DenyAll("bench".into())),
        );
        let mut agent = Agent::new(
            Arc::new(Instant(AtomicUsize::new(0))),
            vec![Arc::new(Echo)],
            Arc::new(gate),
            settings,
        );
        // Each measured turn starts from the same 1 000-turn session (a fresh
        // copy made outside the timing), so the session does not grow.
        let template = dir.path().join("s.jsonl");
        let sink = |_e| {};
        c.bench_function(
            &format!(
                "agent/turn_with_tool_1000_turn_session_fsync_{}",
                policy.as_str()
            ),
            |b| {
                b.iter_batched(
                    || {
                        let copy = tempfile::tempdir().expect("tempdir");
                        std::fs::copy(&template, copy.path().join("s.jsonl")).expect("copy");
                        let store = SessionStore::open(copy.path(), policy).expect("store");
                        let conv = Conversation::open(&store, "s").expect("conv");
                        (copy, conv)
                    },
                    |(_copy, mut conv)| {
                        rt.block_on(agent.run_turn(&mut conv, "hello", &sink))
                            .expect("turn");
                        conv
                    },
                    BatchSize::PerIteration,
                )
            },
        );
    }
}

criterion_group!(benches, bench_turn);
criterion_main!(benches);
