//! Session store and trimming benchmarks against the targets in docs/requirements.md:
//! open + read a 100 000-message session (< 100 ms), trim a 10 000-turn
//! session (< 5 ms), and the cost of one append with and without fsync.
#![allow(clippy::expect_used, clippy::unwrap_used)] // bench fixtures: failing loudly is right

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use pincer_core::config::FsyncPolicy;
use pincer_core::message::{Message, ToolCall};
use pincer_core::session::SessionStore;
use pincer_core::trim::{self, Budget, CharRatio, TrimInput};
use serde_json::json;
use std::hint::black_box;

/// A realistic turn: user, tool call, tool result, reply (4 messages).
fn turn(i: usize) -> Vec<Message> {
    let id = format!("call_{i}");
    vec![
        Message::user(format!("turn {i}: what does the log say about the pump?")),
        Message::assistant_calls(
            "",
            vec![ToolCall::new(
                id.clone(),
                "file_read",
                &json!({ "path": format!("logs/day-{i}.log") }),
            )],
        ),
        Message::tool_result(
            id,
            "file_read",
            format!("pump ran {i} minutes; pressure nominal"),
        ),
        Message::assistant(format!(
            "The pump ran {i} minutes and pressure was nominal."
        )),
    ]
}

fn bench_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::open(dir.path(), FsyncPolicy::Never).expect("store");
    let mut w = store.writer("big").expect("writer");
    for chunk in 0..25 {
        let batch: Vec<Message> = (chunk * 1000..(chunk + 1) * 1000).flat_map(turn).collect();
        w.append(&batch).expect("append");
    }
    w.sync().expect("sync");
    drop(w);
    assert_eq!(store.read("big").expect("read").messages.len(), 100_000);
    // Freeing 100 000 messages is the caller's cost, later; it is measured
    // apart so the open + read number is what the target names.
    c.bench_function("session/open_read_100k_messages", |b| {
        b.iter_with_large_drop(|| store.read("big").expect("read"))
    });
    c.bench_function("session/open_read_context_100k_messages", |b| {
        b.iter_with_large_drop(|| {
            let view = store.read("big").expect("read");
            black_box(view.context().0.len());
            view
        })
    });
    c.bench_function("session/drop_100k_messages", |b| {
        b.iter_batched(
            || store.read("big").expect("read"),
            drop,
            BatchSize::PerIteration,
        )
    });
}

fn bench_append(c: &mut Criterion) {
    for policy in [FsyncPolicy::Never, FsyncPolicy::Always] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SessionStore::open(dir.path(), policy).expect("store");
        let mut w = store.writer("a").expect("writer");
        let msg = Message::user("a short user message of about sixty characters in all");
        c.bench_function(
            &format!("session/append_1_fsync_{}", policy.as_str()),
            |b| b.iter(|| black_box(w.append(std::slice::from_ref(&msg)).expect("append"))),
        );
    }
}

fn bench_trim(c: &mut Criterion) {
    let msgs: Vec<Message> = (0..10_000).flat_map(turn).collect();
    let counter = CharRatio::default();
    let budget = Budget {
        context_window: 32_768,
        tool_def_tokens: 2_000,
        output_reserve: 4_096,
        pinned_tokens: 1_000,
    };
    let input = TrimInput {
        messages: &msgs,
        summary: "",
        summary_max_chars: 4_000,
        budget,
    };
    let t = trim::trim(&input, &counter).expect("trim");
    assert!(t.dropped_turns > 9_000, "the bench must really drop turns");
    c.bench_function("trim/10k_turns", |b| {
        b.iter(|| black_box(trim::trim(&input, &counter).expect("trim")))
    });
    c.bench_function("trim/repair_10k_turns", |b| {
        b.iter_batched(
            || msgs.clone(),
            |m| black_box(trim::repair_orphans(m)),
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench_read, bench_append, bench_trim);
criterion_main!(benches);
