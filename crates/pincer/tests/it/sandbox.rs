//! The `pincer` binary is its own sandbox helper: `pincer __sandbox` is
//! dispatched before anything else in `main`, and runs the sandbox's
//! escape corpus as the shell tool's commands would meet it.

use pincer_sandbox::{RowResult, Sandbox, Spec};

#[test]
fn pincer_is_its_own_sandbox_helper() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(env!("CARGO_BIN_EXE_pincer"));
    let mut spec = Spec::new(
        vec![
            "/bin/sh".into(),
            "-c".into(),
            "echo inside; cat /proc/1/cmdline".into(),
        ],
        dir.path(),
        "agent-e2e",
    );
    spec.env.insert("PATH".into(), "/usr/bin:/bin".into());
    let c = sandbox.run(&spec, &Default::default()).unwrap();
    let out = c.text();
    assert!(out.starts_with("inside\n"), "{out}");
    // PID 1 of the command's namespace is pincer's own init stage.
    assert!(out.contains("__sandbox-init"), "{out}");
    assert!(
        c.finished.degraded().is_empty(),
        "{:?}",
        c.finished.degraded()
    );
}

#[test]
fn the_escape_corpus_holds_with_pincer_as_the_helper() {
    let dir = tempfile::tempdir().unwrap();
    let report = pincer_sandbox::self_test(
        &Sandbox::new(env!("CARGO_BIN_EXE_pincer")),
        dir.path(),
        vec![],
    )
    .unwrap();
    let escaped: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.result == RowResult::Escaped)
        .collect();
    assert!(escaped.is_empty(), "{}", report.render());
}
