//! Writes a valid audit trail of N entries and its anchor, fast (sealed in
//! memory, one buffered write, one fsync at the end), for benchmarks of the
//! CLI: `cargo run --release -p pincer-core --example audit_fill -- DIR N`.
//! Refuses a directory that already holds a trail.
#![allow(clippy::expect_used, clippy::unwrap_used)] // example: failing loudly is right

use pincer_core::audit::{ANCHOR_FILE, Entry, GENESIS, TRAIL_FILE};
use pincer_core::message::Timestamp;
use serde_json::json;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(n), None) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: audit_fill DIR N");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    let n: u64 = n.parse().expect("N must be a whole number");
    std::fs::create_dir_all(&dir).expect("create DIR");
    let trail = dir.join(TRAIL_FILE);
    if std::fs::metadata(&trail).is_ok_and(|m| m.len() > 0) {
        eprintln!(
            "{} already holds a trail; use an empty directory",
            dir.display()
        );
        std::process::exit(1);
    }
    let start = std::time::Instant::now();
    let file = std::fs::File::create(&trail).expect("create trail");
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut top = GENESIS.to_string();
    for seq in 1..=n {
        let e = Entry::seal(
            seq,
            Timestamp::now(),
            actor(seq),
            kind(seq),
            data(seq),
            &top,
        );
        out.write_all(e.to_line().as_bytes()).expect("write");
        top = e.hash;
    }
    let file = out.into_inner().expect("flush");
    file.sync_all().expect("fsync");
    let anchor = format!("{{\"count\":{n},\"top\":\"{top}\"}}\n");
    pincer_core::fsutil::write_atomic(&dir.join(ANCHOR_FILE), anchor.as_bytes()).expect("anchor");
    eprintln!(
        "wrote {n} entries ({} bytes) to {} in {:.2?}",
        std::fs::metadata(&trail).expect("stat").len(),
        trail.display(),
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
