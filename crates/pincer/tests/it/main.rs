//! End-to-end tests of the `pincer` binary: real process, real files.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a failed fixture should panic

mod agent;
mod audit;
#[cfg(feature = "serve")]
mod botapi;
#[cfg(feature = "serve")]
mod camera;
#[cfg(feature = "claude-code")]
mod claude_code;
mod cli;
#[cfg(feature = "discord")]
mod discord;
#[cfg(feature = "discord")]
mod discordapi;
mod escape;
#[cfg(feature = "gateway")]
mod gateway;
mod hw;
#[cfg(feature = "mcp")]
mod mcp;
mod membench;
mod memory;
mod policy;
mod sandbox;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "gateway")]
mod serve_gateway;
#[cfg(feature = "serve")]
mod service;
mod session;
mod tidy;
mod tty;
mod unattended;
#[cfg(feature = "web")]
mod web;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A home for a `pincer serve` test in a temporary directory: the scripted
/// model `s` reading `script` (with `provider_extra` lines in its table),
/// supervised with a 30 s approval timeout, a 5 s drain, and the services'
/// `tables` after `[serve]`.
#[cfg(feature = "serve")]
#[derive(Debug)]
pub struct ServeHome {
    _tmp: tempfile::TempDir,
    pub home: std::path::PathBuf,
}

#[cfg(feature = "serve")]
pub fn serve_home(script: &str, provider_extra: &str, tables: &str) -> ServeHome {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(home.join("script.json"), script).expect("script");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[policy]\nautonomy = \"supervised\"\napproval_timeout_secs = 30\n\n\
             [providers.s]\nkind = \"scripted\"\nscript = \"script.json\"\n{provider_extra}\n\
             [serve]\ndrain_secs = 5\n\n{tables}"
        ),
    )
    .expect("config");
    ServeHome { _tmp: tmp, home }
}

/// A home with the scripted model reading `script` (its `script.json`),
/// autonomy `autonomy`, approvals timing out after `approval_timeout_secs`,
/// and `extra` appended to its config.
pub fn scripted_home(
    home: &Path,
    script: &str,
    autonomy: &str,
    approval_timeout_secs: u64,
    extra: &str,
) {
    std::fs::create_dir_all(home).expect("home");
    std::fs::write(home.join("script.json"), script).expect("script");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[policy]\nautonomy = \"{autonomy}\"\napproval_timeout_secs = {approval_timeout_secs}\n\n\
             [providers.s]\nkind = \"scripted\"\nscript = \"script.json\"\n{extra}"
        ),
    )
    .expect("config");
}

/// Runs `pincer ARGS` with `PINCER_HOME=home`, feeding `stdin`.
pub fn pincer(home: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(args)
        .env("PINCER_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pincer");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Runs pincer with a clean provider environment (no keys, no model, no
/// workspace override from the test's own environment) plus `envs`.
pub fn pincer_env(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pincer"));
    cmd.args(args)
        .env("PINCER_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "PINCER_MODEL",
        "PINCER_WORKSPACE",
        "PINCER_BOARD",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run pincer")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(o: Output) -> String {
    assert!(o.status.success(), "failed: {}\n{}", stderr(&o), stdout(&o));
    stdout(&o)
}

/// Asserts failure and returns stderr.
pub fn fails(o: Output) -> String {
    assert!(!o.status.success(), "should fail: {}", stdout(&o));
    stderr(&o)
}

pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}
