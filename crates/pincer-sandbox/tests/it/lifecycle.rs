//! The sandbox's life: pincer killed with -9, a timeout, cleanup, fail
//! closed, bad specs, the helper started by hand, HOME over a directory.

use crate::support::{self, fake_pincer, opts, scratch, sh};
use libtest_mimic::{Failed, Trial};
use pincer_sandbox::corpus::{self, Action, Case, Check, Fixture, Observation};
use pincer_sandbox::{Exit, Layer, SandboxError, State};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "lifecycle::dies_when_pincer_is_killed",
            dies_when_pincer_is_killed,
        ),
        Trial::test(
            "lifecycle::pincers_environment_never_reaches_the_command",
            environment_of_pincer,
        ),
        Trial::test(
            "lifecycle::timeout_kills_the_whole_sandbox",
            timeout_kills_everything,
        ),
        Trial::test(
            "lifecycle::fail_closed_names_the_layer",
            fail_closed_names_the_layer,
        ),
        Trial::test(
            "lifecycle::degraded_layers_are_reported",
            degraded_is_reported,
        ),
        Trial::test("lifecycle::bad_specs_name_the_field", bad_specs),
        Trial::test(
            "lifecycle::helper_refuses_without_a_control_socket",
            helper_by_hand,
        ),
        Trial::test(
            "lifecycle::home_over_a_directory_keeps_the_workspace",
            home_over_directory,
        ),
        Trial::test(
            "lifecycle::output_and_exit_are_the_commands",
            output_and_exit,
        ),
        Trial::test(
            "lifecycle::a_piped_stdin_reaches_the_command_and_no_socket_does",
            piped_stdin,
        ),
    ]
}

fn case(id: &str) -> Case {
    corpus::cases().into_iter().find(|c| c.id == id).unwrap()
}

fn watch_case(command: &str) -> Case {
    Case {
        id: "watch".into(),
        proves: vec![Layer::PidNamespace],
        network: false,
        action: Action::KillParent,
        timeout: Duration::from_secs(30),
        needs: vec![],
        checks: vec![Check::Dies],
        command: command.into(),
    }
}

fn cgroup_dir(detail: &str) -> Option<PathBuf> {
    let start = detail.rfind('(')? + 1;
    let end = detail.rfind(')')?;
    Some(PathBuf::from(&detail[start..end]))
}

/// `kill -9` of the process that started the sandbox (a fake pincer) takes
/// the sandbox and everything the command started with it; the next run
/// sweeps the dead pincer's empty cgroups.
fn dies_when_pincer_is_killed() -> Result<(), Failed> {
    let dir = scratch();
    let mut fx = Fixture::create(dir.path(), vec![])?;
    let case = case("parent-killed");
    fx.arm(&case)?;
    let spec = fx.spec(&case);
    let mut pincer = fake_pincer(dir.path(), &spec, 120).spawn()?;
    if !fx.wait_alive(Duration::from_secs(20)) {
        let _ = pincer.kill();
        return Err("the sandboxed command never started".into());
    }
    pincer.kill()?;
    pincer.wait()?;
    let v = fx.judge(
        &case,
        &[Observation {
            text: String::new(),
        }],
    );
    if !v.refused {
        return Err(format!("{:?}", v.failures).into());
    }
    // A run of ours sweeps the killed pincer's empty cgroup directories.
    let stale: Vec<PathBuf> = {
        let probe = support::sandbox().probe();
        [&probe.cgroup.memory, &probe.cgroup.pids]
            .into_iter()
            .filter_map(|c| match c {
                pincer_sandbox::Controller::Available(h) => Some(h.parent.clone()),
                _ => None,
            })
            .flat_map(|p| {
                std::fs::read_dir(p)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with(&format!("pincer-{}-", pincer.id()))
                    })
                    .map(|e| e.path())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    // The killed pincer's helper may still be on its way out: wait (with a
    // deadline) until its cgroups are empty, as the sweep requires.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while stale.iter().any(|d| {
        std::fs::read_to_string(d.join("cgroup.procs")).is_ok_and(|s| !s.trim().is_empty())
    }) {
        if std::time::Instant::now() > deadline {
            return Err("the killed pincer's cgroups never emptied".into());
        }
        std::thread::yield_now();
    }
    support::sandbox().run(&sh(&fx.ws, "true"), &opts(10))?;
    for d in stale {
        if d.exists() {
            return Err(format!("{} was not swept", d.display()).into());
        }
    }
    Ok(())
}

/// A secret in pincer's own environment (as an API key would be) is in
/// neither the command's environment nor any `/proc/*/environ` it can read.
fn environment_of_pincer() -> Result<(), Failed> {
    let dir = scratch();
    let secret = format!("sk-test-{}-do-not-leak", std::process::id());
    let mut fx = Fixture::create(dir.path(), vec![secret.clone()])?;
    let case = case("environment-and-proc-environ");
    fx.arm(&case)?;
    let spec = fx.spec(&case);
    let out = fake_pincer(dir.path(), &spec, 30)
        .env("OPENAI_API_KEY", &secret)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = fx.judge(&case, &[Observation { text: text.clone() }]);
    if !v.refused {
        return Err(format!("{:?}\n{text}", v.failures).into());
    }
    Ok(())
}

fn timeout_kills_everything() -> Result<(), Failed> {
    let dir = scratch();
    let mut fx = Fixture::create(dir.path(), vec![])?;
    let case = watch_case("setsid sh -c 'echo alive; exec sleep 1000' > {fifo} & sleep 1000");
    fx.arm(&case)?;
    let spec = fx.spec(&case);
    let c = support::sandbox().run(&spec, &opts(2))?;
    if !c.timed_out || !c.finished.killed || c.finished.exit != Exit::Signal(9) {
        return Err(format!("not reported as killed: {:?}", c.finished).into());
    }
    let v = fx.judge(
        &case,
        &[Observation {
            text: String::new(),
        }],
    );
    if !v.refused {
        return Err(format!("{:?}", v.failures).into());
    }
    // Its cgroups are gone (the paths are in the caller-side statuses).
    for l in c.finished.layers() {
        if matches!(l.layer, Layer::CgroupMemory | Layer::CgroupPids)
            && let Some(d) = cgroup_dir(&l.detail)
            && d.exists()
        {
            return Err(format!("{} left behind", d.display()).into());
        }
    }
    Ok(())
}

fn fail_closed_names_the_layer() -> Result<(), Failed> {
    let dir = scratch();
    let made = dir.path().join("made");
    for layer in [
        Layer::LandlockFs,
        Layer::Capabilities,
        Layer::PidNamespace,
        Layer::CgroupPids,
        Layer::Proc,
        Layer::HiddenState,
    ] {
        let mut spec = sh(dir.path(), "echo ran > made");
        spec.inject_failure = Some(layer);
        match support::sandbox().run(&spec, &opts(10)) {
            Err(SandboxError::Setup { layer: l, message }) if l == layer => {
                let text = SandboxError::Setup { layer: l, message }.to_string();
                if !text.contains(layer.as_str()) || !text.contains("did not run") {
                    return Err(format!("unclear error: {text}").into());
                }
            }
            other => return Err(format!("{layer}: {other:?}").into()),
        }
        if made.exists() {
            return Err(format!("{layer}: the command ran").into());
        }
    }
    Ok(())
}

fn degraded_is_reported() -> Result<(), Failed> {
    let dir = scratch();
    let mut spec = sh(dir.path(), "echo ran > made");
    spec.inject_failure = Some(Layer::CgroupMemory);
    spec.degrade.insert(Layer::CgroupMemory);
    let c = support::sandbox().run(&spec, &opts(10))?;
    let notes = c.finished.notes().join("\n");
    let state = c
        .finished
        .layers()
        .iter()
        .find(|l| l.layer == Layer::CgroupMemory)
        .map(|l| l.state);
    if state != Some(State::Degraded) || !notes.contains("`cgroup-memory` is DEGRADED") {
        return Err(format!("{state:?} {notes}").into());
    }
    // The stand-in for the missing memory cgroup is there and said.
    let rl = c
        .finished
        .layers()
        .iter()
        .find(|l| l.layer == Layer::Rlimits)
        .unwrap();
    if !rl.detail.contains("stand-in") || !dir.path().join("made").exists() {
        return Err(format!("{rl:?}").into());
    }
    Ok(())
}

fn bad_specs() -> Result<(), Failed> {
    let dir = scratch();
    let mut spec = sh(dir.path(), "true");
    spec.cwd = "/etc".into();
    match support::sandbox().prepare(&spec) {
        Err(SandboxError::Spec(e)) if e.field == "cwd" => {}
        other => return Err(format!("{other:?}").into()),
    }
    let mut spec = sh(dir.path(), "true");
    spec.argv.push("x".repeat(200_000));
    match support::sandbox().prepare(&spec) {
        Err(SandboxError::Spec(e)) if e.field == "argv" => Ok(()),
        other => Err(format!("{other:?}").into()),
    }
}

fn helper_by_hand() -> Result<(), Failed> {
    let out = Command::new(support::exe())
        .arg(pincer_sandbox::HELPER_ARG)
        .stdin(Stdio::null())
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2) || !err.contains("internal") {
        return Err(format!("{:?} {err}", out.status).into());
    }
    Ok(())
}

/// HOME on an existing directory that holds the workspace: HOME is a fresh
/// tmpfs, the workspace is still there (and writable), its siblings not.
fn home_over_directory() -> Result<(), Failed> {
    let dir = scratch();
    let base = std::fs::canonicalize(dir.path())?;
    let ws = base.join("projects/ws");
    std::fs::create_dir_all(&ws)?;
    std::fs::write(base.join("dotfile"), "REAL-HOME-FILE")?;
    let mut spec = sh(
        &ws,
        "ls -A \"$HOME\"; cat \"$HOME/dotfile\"; echo ok > made; echo end",
    );
    spec.home = base.clone();
    let c = support::sandbox().run(&spec, &opts(10))?;
    let text = c.text();
    if text.contains("REAL-HOME-FILE")
        || !text.starts_with("projects\n")
        || !ws.join("made").exists()
    {
        return Err(text.into());
    }
    Ok(())
}

fn output_and_exit() -> Result<(), Failed> {
    let dir = scratch();
    let c = support::sandbox().run(&sh(dir.path(), "echo out; echo err >&2; exit 3"), &opts(10))?;
    if c.text() != "out\nerr\n" || c.finished.exit != Exit::Code(3) {
        return Err(format!("{:?} {}", c.text(), c.finished.exit).into());
    }
    let c = support::sandbox().run(&sh(dir.path(), "kill -TERM $$"), &opts(10))?;
    if c.finished.exit != Exit::Signal(15) {
        return Err(format!("{}", c.finished.exit).into());
    }
    match support::sandbox().run(
        &sh(dir.path(), "x").clone_with_argv(vec!["/nonexistent/prog".into()]),
        &opts(10),
    ) {
        Err(SandboxError::Spawn { program, .. }) if program == "/nonexistent/prog" => {}
        other => return Err(format!("{other:?}").into()),
    }
    Ok(())
}

trait WithArgv {
    fn clone_with_argv(&self, argv: Vec<String>) -> Self;
}

impl WithArgv for pincer_sandbox::Spec {
    fn clone_with_argv(&self, argv: Vec<String>) -> Self {
        let mut s = self.clone();
        s.argv = argv;
        s
    }
}

/// A spec with `pipe_stdin`: pincer writes the command's stdin and reads
/// its stdout while it runs (a long-lived server's conversation), closing
/// stdin ends it; the command holds a pipe as fd 0 and no socket (the
/// control socket never reaches it).
fn piped_stdin() -> Result<(), Failed> {
    use std::io::{BufRead, BufReader, Write};
    let dir = scratch();
    let mut spec = sh(
        dir.path(),
        "for f in /proc/self/fd/*; do echo \"fd ${f##*/} $(readlink $f)\"; done; \
         while read -r line; do echo \"got $line\"; done; echo eof",
    );
    spec.pipe_stdin = true;
    let pincer_sandbox::Prepared {
        mut command,
        mut pending,
    } = support::sandbox().prepare(&spec)?;
    let mut stdin = pending.take_stdin().ok_or("no stdin pipe")?;
    if pending.take_stdin().is_some() {
        return Err("the stdin pipe was handed out twice".into());
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    drop(command);
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut fds = Vec::new();
    let mut line = String::new();
    // The descriptor listing comes first (ending with fd 3, the glob's
    // directory handle, in sort order); then one answer per line sent.
    loop {
        line.clear();
        if out.read_line(&mut line)? == 0 {
            return Err(format!("stdout ended early after {fds:?}").into());
        }
        if !line.starts_with("fd ") {
            return Err(format!("unexpected line {line:?} after {fds:?}").into());
        }
        fds.push(line.trim_end().to_string());
        if line.starts_with("fd 3 ") {
            break;
        }
    }
    for text in ["hello", "world"] {
        writeln!(stdin, "{text}")?;
        stdin.flush()?;
        line.clear();
        out.read_line(&mut line)?;
        if line != format!("got {text}\n") {
            return Err(format!("answer to {text:?}: {line:?}").into());
        }
    }
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest)?;
    let status = child.wait()?;
    let finished = pending.finish(status, false)?;
    if rest != "eof\n" || finished.exit != Exit::Code(0) {
        return Err(format!("after closing stdin: {rest:?}, {}", finished.exit).into());
    }
    // fd 0 is a pipe, and no descriptor is a socket: the control socket
    // stays with the helper. (Descriptors pincer itself inherited without
    // close-on-exec would show here too; the test's own are left alone.)
    let pipe0 = fds.first().is_some_and(|l| l.starts_with("fd 0 pipe:"));
    let sockets = fds.iter().any(|l| l.contains("socket:"));
    if !pipe0 || sockets {
        return Err(format!("the command's descriptors: {fds:?}").into());
    }
    Ok(())
}
