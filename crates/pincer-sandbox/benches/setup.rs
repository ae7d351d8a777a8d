//! Sandbox set-up cost per command: `true` bare, `true` in pincer's sandbox
//! (this binary is its own helper, as pincer is), and `true` under
//! bubblewrap (`bwrap --unshare-all --die-with-parent --ro-bind / / true`),
//! measured in the same run. Skips bwrap when it is not installed.
//!
//! `cargo bench -p pincer-sandbox --bench setup`; with
//! `PINCER_SANDBOX_HELPER=target/release/pincer` the same run also times
//! pincer's own binary as the helper (its size changes the cost of the
//! helper's two execs).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use criterion::Criterion;
use pincer_sandbox::{RunOptions, Sandbox, Spec};
use std::process::{Command, Stdio};
use std::time::Duration;

fn run_quiet(cmd: &mut Command) {
    let st = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(st.success(), "{cmd:?}: {st}");
}

fn benches(c: &mut Criterion) {
    let ws = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(std::env::current_exe().unwrap());
    let pincer = std::env::var_os("PINCER_SANDBOX_HELPER").map(Sandbox::new);
    let mut spec = Spec::new(vec!["/bin/true".into()], ws.path(), "bench");
    spec.env.insert("PATH".into(), "/usr/bin:/bin".into());
    let opts = RunOptions {
        timeout: Duration::from_secs(30),
        output_cap: 4096,
    };
    // Fail loudly if the sandbox does not work here, rather than timing errors.
    let first = sandbox.run(&spec, &opts).expect("the sandbox runs `true`");
    assert!(first.finished.degraded().is_empty(), "{:?}", first.finished);

    let mut g = c.benchmark_group("setup");
    g.sample_size(50);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("bare true", |b| {
        b.iter(|| run_quiet(&mut Command::new("/bin/true")))
    });
    g.bench_function("pincer sandbox true", |b| {
        b.iter(|| {
            let c = sandbox.run(&spec, &opts).unwrap();
            assert_eq!(c.finished.exit, pincer_sandbox::Exit::Code(0));
        })
    });
    if let Some(pincer) = &pincer {
        pincer
            .run(&spec, &opts)
            .expect("pincer as the helper runs `true`");
        g.bench_function("pincer sandbox true (helper: pincer)", |b| {
            b.iter(|| pincer.run(&spec, &opts).unwrap())
        });
    }
    let mut net_on = spec.clone();
    net_on.network = true;
    g.bench_function("pincer sandbox true (network on)", |b| {
        b.iter(|| sandbox.run(&net_on, &opts).unwrap())
    });
    if std::path::Path::new("/usr/bin/bwrap").exists() {
        g.bench_function("bwrap --unshare-all true", |b| {
            b.iter(|| {
                run_quiet(Command::new("/usr/bin/bwrap").args([
                    "--unshare-all",
                    "--die-with-parent",
                    "--ro-bind",
                    "/",
                    "/",
                    "/bin/true",
                ]))
            })
        });
    } else {
        eprintln!("bwrap not installed (apt-get install bubblewrap): skipping it");
    }
    g.finish();
}

fn main() {
    // This binary is also the sandbox's helper: dispatch before anything.
    pincer_sandbox::run_helper_if_requested();
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
