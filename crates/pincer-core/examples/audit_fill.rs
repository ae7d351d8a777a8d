//! Writes a valid audit trail of N entries and its anchor, fast (sealed in
//! memory, buffered, cut into 64 MiB segments as appends would, one fsync
//! per segment), for benchmarks of the CLI:
//! `cargo run --release -p pincer-core --example audit_fill -- DIR N`.
//! With `--legacy`, one `trail.jsonl` and an anchor of the form from before
//! segments (`{count, top}`), as an older pincer left it. Refuses a
//! directory that already holds a trail.
#![allow(clippy::expect_used, clippy::unwrap_used)] // example: failing loudly is right

use pincer_core::audit::{ANCHOR_FILE, AuditOptions, NewEntry, write_new_trail};
use pincer_core::message::Timestamp;
use serde_json::json;
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let legacy = args.iter().any(|a| a == "--legacy");
    let rest: Vec<&String> = args.iter().filter(|a| *a != "--legacy").collect();
    let [dir, n] = rest.as_slice() else {
        eprintln!("usage: audit_fill [--legacy] DIR N");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    let n: u64 = n.parse().expect("N must be a whole number");
    let options = if legacy {
        AuditOptions {
            segment_bytes: u64::MAX,
        }
    } else {
        AuditOptions::default()
    };
    let start = std::time::Instant::now();
    let entries = (1..=n).map(|seq| NewEntry {
        ts: Timestamp::now(),
        actor: actor(seq).to_string(),
        kind: kind(seq).to_string(),
        data: data(seq),
    });
    let anchor = match write_new_trail(&dir, options, entries) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if legacy {
        let old = format!(
            "{{\"count\":{},\"top\":\"{}\"}}\n",
            anchor.count, anchor.top
        );
        pincer_core::fsutil::write_atomic(&dir.join(ANCHOR_FILE), old.as_bytes()).expect("anchor");
    }
    eprintln!(
        "wrote {n} entries in {} segment(s) to {} in {:.2?}",
        anchor.segment,
        dir.display(),
        start.elapsed()
    );
}

fn actor(seq: u64) -> &'static str {
    if seq.is_multiple_of(10) {
        "human:cli"
    } else {
        "agent:main"
    }
}

fn kind(seq: u64) -> &'static str {
    ["gate.decision", "tool.call", "tool.result"][(seq % 3) as usize]
}

/// About what a gate decision records: tool, risk, decision, an args hash.
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
