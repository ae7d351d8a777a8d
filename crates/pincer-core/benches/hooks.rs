//! External hook round trip (HK1): spawn the argv, write the call as JSON,
//! read the verdict. The hook is `/bin/sh` reading its input and answering
//! `allow`, so this is process start + two pipes + JSON both ways — the
//! floor any real hook pays.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use pincer_core::hooks::{ExternalHook, HookCall, HookKind, HookSpec, Interceptor};
use pincer_core::policy::Risk;
use serde_json::json;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut spec = HookSpec::new(
        "bench",
        HookKind::Interceptor,
        vec![
            "/bin/sh".into(),
            "-c".into(),
            r#"cat >/dev/null; echo '{"verdict":"allow"}'"#.into(),
        ],
    );
    spec.timeout = Duration::from_secs(5);
    let hook = ExternalHook::new(spec);
    let call = HookCall {
        session: "s".into(),
        call_id: "c1".into(),
        tool: "shell".into(),
        arguments: json!({"command": "ls -la"}),
        risk: Risk::Low,
        why: "`ls` only reads".into(),
    };
    c.bench_function("hooks/external_interceptor_round_trip_sh", |b| {
        b.iter(|| rt.block_on(hook.intercept(&call)).expect("verdict"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
