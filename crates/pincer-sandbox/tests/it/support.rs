//! The sandbox over this test binary, scratch directories, and the fake
//! pincer: this binary run as `__fake-pincer <spec.json>`, which runs the
//! spec in the sandbox like pincer would and prints the output and the
//! result's notes — a separate process the tests can `kill -9`.

use pincer_sandbox::{RunOptions, Sandbox, Spec};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub const FAKE_PINCER: &str = "__fake-pincer";

pub fn exe() -> PathBuf {
    std::env::current_exe().unwrap()
}

pub fn sandbox() -> Sandbox {
    Sandbox::new(exe())
}

/// A scratch directory; under /tmp, so the sandbox's private /tmp has to
/// keep the workspace visible.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn opts(secs: u64) -> RunOptions {
    RunOptions {
        timeout: Duration::from_secs(secs),
        output_cap: 256 * 1024,
    }
}

/// A spec running `script` with sh over `ws`, with a usable PATH.
pub fn sh(ws: &Path, script: &str) -> Spec {
    let mut s = Spec::new(
        vec!["/bin/sh".into(), "-c".into(), script.into()],
        ws,
        "agent-test",
    );
    s.env
        .insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    s
}

pub fn fake_pincer_if_requested() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(FAKE_PINCER) {
        return;
    }
    let spec: Spec = serde_json::from_str(&std::fs::read_to_string(&args[2]).unwrap()).unwrap();
    let timeout: u64 = args[3].parse().unwrap();
    match sandbox().run(&spec, &opts(timeout)) {
        Ok(c) => {
            print!("{}", c.text());
            for n in c.finished.notes() {
                println!("{n}");
            }
            println!("exit: {}", c.finished.exit);
        }
        Err(e) => println!("refused: {e}"),
    }
    std::process::exit(0);
}

/// A command that runs this binary as the fake pincer for `spec`.
pub fn fake_pincer(dir: &Path, spec: &Spec, timeout_secs: u64) -> Command {
    let path = dir.join(format!(
        "spec-{}.json",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::write(&path, serde_json::to_vec(spec).unwrap()).unwrap();
    let mut c = Command::new(exe());
    c.arg(FAKE_PINCER)
        .arg(&path)
        .arg(timeout_secs.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    c
}
