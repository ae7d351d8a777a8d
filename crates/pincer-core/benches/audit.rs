//! Audit trail benchmarks against the target in docs/requirements.md "audit verify,
//! 1 000 000 entries < 2 s", plus the cost of one durable append (three
//! fsyncs: the line, the anchor's temp file, the directory).
#![allow(clippy::expect_used, clippy::unwrap_used)] // bench fixtures: failing loudly is right

use criterion::{Criterion, criterion_group, criterion_main};
use pincer_core::audit::{ANCHOR_FILE, Audit, Entry, GENESIS, TRAIL_FILE};
use pincer_core::message::Timestamp;
use serde_json::json;
use std::hint::black_box;
use std::io::{BufWriter, Write};
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

/// Writes a valid trail of `n` entries and its anchor, without per-entry
/// fsync (sealed in memory, buffered).
fn fill(dir: &Path, n: u64) {
    let file = std::fs::File::create(dir.join(TRAIL_FILE)).unwrap();
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut top = GENESIS.to_string();
    let ts = Timestamp::now();
    for seq in 1..=n {
        let e = Entry::seal(seq, ts, "agent:main", "gate.decision", data(seq), &top);
        out.write_all(e.to_line().as_bytes()).unwrap();
        top = e.hash;
    }
    out.into_inner().unwrap().sync_all().unwrap();
    std::fs::write(
        dir.join(ANCHOR_FILE),
        format!("{{\"count\":{n},\"top\":\"{top}\"}}\n"),
    )
    .unwrap();
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

criterion_group!(benches, bench_append, bench_verify);
criterion_main!(benches);
