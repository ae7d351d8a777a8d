//! Audit trail benchmarks: what a fresh process's first append costs at
//! 10, 10 000 and 1 000 000 entries (the goal: flat, because append checks
//! the anchor and the end of the trail, never the whole chain), the cost of
//! one durable append in steady state (three fsyncs: the line, the anchor's
//! temp file, the directory), and verify at 10 000 and 1 000 000 entries
//! against the target "audit verify, 1 000 000 entries < 2 s".
#![allow(clippy::expect_used, clippy::unwrap_used)] // bench fixtures: failing loudly is right

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use pincer_core::audit::{Audit, AuditOptions, NewEntry, write_new_trail};
use pincer_core::message::Timestamp;
use serde_json::json;
use std::hint::black_box;
use std::path::Path;

/// About what a gate decision records.
fn data(seq: u64) -> serde_json::Value {
    json!({
        "tool": "shell",
        "risk": "write",
        "autonomy": "supervised",
        "decision": if seq.is_multiple_of(7) { "deny" } else { "allow" },
        "args_sha256": format!("{:064x}", u128::from(seq) * 0x9e37_79b9_7f4a_7c15),
        "turn": seq / 4,
    })
}

/// A valid trail of `n` entries in 64 MiB segments and its anchor.
fn fill(dir: &Path, n: u64) {
    let ts = Timestamp::now();
    let entries = (1..=n).map(|seq| NewEntry {
        ts,
        actor: "agent:main".into(),
        kind: "gate.decision".into(),
        data: data(seq),
    });
    write_new_trail(dir, AuditOptions::default(), entries).unwrap();
}

fn bench_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let audit = Audit::open(dir.path()).unwrap();
    let mut seq = 0;
    c.bench_function("audit/append_1_fsync", |b| {
        b.iter(|| {
            seq += 1;
            black_box(
                audit
                    .append("agent:main", "gate.decision", data(seq))
                    .unwrap(),
            )
        })
    });
}

/// `Audit::open` and its first `append`, as in `pincer audit note`.
fn bench_first_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("audit");
    group.sample_size(30);
    for n in [10u64, 10_000, 1_000_000] {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path(), n);
        group.bench_function(format!("open_and_first_append_{n}"), |b| {
            b.iter_batched(
                || (),
                |()| {
                    let audit = Audit::open(dir.path()).unwrap();
                    black_box(audit.append("human:cli", "audit.note", data(0)).unwrap())
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn bench_verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("audit");
    group.sample_size(10);
    for n in [10_000u64, 1_000_000] {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path(), n);
        let audit = Audit::open(dir.path()).unwrap();
        let report = audit.verify().unwrap();
        assert!(report.defect.is_none(), "{report:?}");
        assert_eq!(report.entries, n);
        group.bench_function(format!("verify_{n}"), |b| {
            b.iter(|| black_box(audit.verify().unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_append, bench_first_append, bench_verify);
criterion_main!(benches);
