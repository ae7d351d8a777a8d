//! What the gate costs a hardware read (HW4): a TMP102 register read
//! on the simulated board, straight from `pincer-hw`, and as an agent tool
//! call through the real gate with its two audit entries (`fsync` per
//! entry, as the trail's contract says). The difference is the price of
//! "every read is checked and recorded".
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use pincer_core::ToolCall;
use pincer_core::approvals::DenyAll;
use pincer_core::audit::Audit;
use pincer_core::gate::{CallOutcome, Gate, GatePolicy};
use pincer_core::policy::Autonomy;
use pincer_hw::{Hardware, HardwareConfig, I2cAddr, ReadLen};
use pincer_tools::hw::hardware_tools;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let detection = pincer_hw::detect(Some("sim"), "auto", Path::new("/nonexistent")).unwrap();
    let hw = Arc::new(Hardware::open(&HardwareConfig::default(), detection).unwrap());
    let addr = I2cAddr::new(0x48).unwrap();
    let len = ReadLen::new(2).unwrap();
    c.bench_function("hw/sim_i2c_read_direct", |b| {
        b.iter(|| hw.i2c_read(None, addr, Some(0), len).unwrap())
    });

    let tools = hardware_tools(hw.clone(), tmp.path().join("camera"));
    let read = tools
        .iter()
        .find(|t| t.name() == "i2c_read")
        .unwrap()
        .clone();
    let audit = Arc::new(Audit::open(&tmp.path().join("audit")).unwrap());
    let policy = GatePolicy {
        autonomy: Autonomy::Full,
        approval_timeout: Duration::from_secs(1),
        deny_tools: vec![],
    };
    let gate = Gate::new(
        policy,
        "agent:bench",
        audit,
        Arc::new(DenyAll("bench".into())),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = ToolCall::new(
        "c1",
        "i2c_read",
        &json!({"address": "0x48", "register": "0x00", "length": 2}),
    );
    let mut g = c.benchmark_group("hw");
    g.sample_size(30);
    g.bench_function("gated_i2c_read_tool_call", |b| {
        b.iter(|| {
            let out = rt
                .block_on(gate.call("s", Some(read.clone()), &call, &|_| {}))
                .unwrap();
            assert!(matches!(out, CallOutcome::Ran(Ok(_))));
        })
    });
    g.bench_function("assess_i2c_read", |b| {
        b.iter(|| read.assess(&json!({"address": "0x48", "register": "0x00", "length": 2})))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
