//! Verifies the audit trail in DIR and prints the report as JSON with the
//! time it took: `cargo run --release -p pincer-core --example audit_verify
//! -- DIR`. Exits 1 when the trail has a defect. For measuring verify's time
//! and peak memory (`/usr/bin/time -v`).
#![allow(clippy::expect_used, clippy::unwrap_used)] // example: failing loudly is right

use pincer_core::audit::Audit;
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: audit_verify DIR");
        std::process::exit(2);
    };
    let audit = Audit::open(&PathBuf::from(dir)).expect("open");
    let start = std::time::Instant::now();
    let report = audit.verify().expect("verify");
    let took = start.elapsed();
    println!("{}", serde_json::to_string_pretty(&report).expect("json"));
    eprintln!("verified {} entries in {took:.2?}", report.entries);
    if report.defect.is_some() {
        std::process::exit(1);
    }
}
