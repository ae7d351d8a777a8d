//! The helper's second process, PID 1 of the sandbox: `/proc`, rlimits,
//! Landlock, capabilities, session; then the command, and the reaping.

use super::apart::Apart;
use super::{Fatal, LayerLog, caps, errno, landlock};
use crate::report::{Outcome, State};
use crate::spec::{Layer, Spec};
use crate::wire::{self, InitMessage, InitReady, InitReport, InitRequest, PROTOCOL};
use rustix::mount::MountFlags;
use rustix::process::{Resource, Rlimit, Signal, WaitOptions};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

pub(super) fn main(ctl: UnixStream) -> ! {
    // The helpers' cgroups (and the command's stdin pipe, last) come
    // first, then the request (see `apart`).
    let fds = wire::recv_fds(&ctl);
    let req = match wire::recv::<InitRequest>(&ctl) {
        Ok(r) if r.version == PROTOCOL => r,
        _ => std::process::exit(super::EXIT_SETUP),
    };
    // The command's stdin pipe, exactly when the spec asks for one: the
    // outer helper sends one descriptor more than it names cgroups.
    let (fds, stdin) = match (fds, req.spec.pipe_stdin) {
        (Ok(mut fds), true) if fds.len() == req.apart.len() + 1 => match fds.pop() {
            Some(fd) => (Ok(fds), Stdio::from(fd)),
            None => std::process::exit(super::EXIT_SETUP),
        },
        (_, true) => std::process::exit(super::EXIT_SETUP),
        (fds, false) => (fds, Stdio::null()),
    };
    let mut apart = match fds {
        Ok(fds) => Apart::received(fds, &req.apart),
        Err(e) => {
            let mut a = Apart::default();
            a.problem(e);
            a
        }
    };
    let mut log = LayerLog::new(&req.spec, req.root);
    let result = run(&req, &mut log, &ctl, &mut apart, stdin);
    let notes = apart.note().into_iter().collect();
    let report = match result {
        Ok((outcome, landlock_abi, leftovers)) => InitReport {
            layers: log.out,
            landlock_abi,
            outcome,
            leftovers,
            notes,
        },
        Err(Fatal { layer, message }) => InitReport {
            layers: log.out,
            landlock_abi: None,
            outcome: Outcome::SetupFailed { layer, message },
            leftovers: 0,
            notes: vec![],
        },
    };
    let _ = wire::send_line(&ctl, &InitMessage::Finished(report));
    // Exiting as PID 1 makes the kernel SIGKILL everything left inside.
    std::process::exit(0)
}

fn run(
    req: &InitRequest,
    log: &mut LayerLog<'_>,
    ctl: &UnixStream,
    apart: &mut Apart,
    stdin: Stdio,
) -> Result<(Outcome, Option<u32>, u32), Fatal> {
    let spec = &req.spec;
    let outer = |layer: Layer| {
        req.layers
            .iter()
            .any(|l| l.layer == layer && l.state == State::Enforced)
    };
    log.apply(Layer::ParentDeath, || {
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).map_err(errno)?;
        // The helper above may have died before the line above: then
        // nobody would send the signal. It holds the socket until it exits.
        if wire::peer_gone(ctl) {
            return Err("the helper above is already gone".into());
        }
        Ok((
            (),
            "SIGKILL when the helper above dies; the helper kills the sandbox when pincer's end of the control socket closes".into(),
        ))
    })?;
    log.apply(Layer::Proc, || {
        if !outer(Layer::PidNamespace) {
            return Err("needs the PID namespace, which is not in place".into());
        }
        if !outer(Layer::MountNamespace) {
            return Err("needs the mount namespace, which is not in place".into());
        }
        // Read-only: as root without capabilities a process may still write
        // root-owned files such as /proc/sysrq-trigger or /proc/sys/*;
        // Landlock denies that too, this holds even without it.
        let flags =
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC | MountFlags::RDONLY;
        rustix::mount::mount("proc", "/proc", "proc", flags, None)
            .map_err(|e| format!("mounting /proc: {}", errno(e)))?;
        let others = other_processes();
        if others != 0 {
            return Err(format!(
                "the new /proc shows {others} process(es) besides PID 1"
            ));
        }
        Ok((
            (),
            "a read-only /proc of the new PID namespace: PID 1 is the only process".into(),
        ))
    })?;
    // Not dumpable: the command cannot ptrace PID 1 or read its /proc files.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let memory_cgroup = outer(Layer::CgroupMemory);
    log.apply(Layer::Rlimits, || {
        rlimits(spec, memory_cgroup).map(|d| ((), d))
    })?;
    let have: Vec<Layer> = [Layer::PrivateTmp, Layer::Devices, Layer::Proc]
        .into_iter()
        .filter(|l| outer(*l) || log.enforced(*l))
        .collect();
    let abi = landlock::apply(spec, log, &have)?;
    log.apply(Layer::Capabilities, caps::drop_all)?;
    log.apply(Layer::NoTerminal, no_terminal)?;
    let env = spec.command_env();
    log.apply(Layer::Environment, || {
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        Ok(((), format!("cleared; set: {}", names.join(" "))))
    })?;

    // Every layer is in place: say so before the command exists, so that
    // the outer helper knows it, and under what, even if this process is
    // killed from here on (the command could fill its memory limit before
    // this process runs again).
    let _ = wire::send_line(
        ctl,
        &InitMessage::Ready(InitReady {
            layers: log.out.clone(),
            landlock_abi: abi,
        }),
    );
    let child = {
        let mut cmd = Command::new(&spec.argv[0]);
        cmd.args(&spec.argv[1..])
            .env_clear()
            .envs(env)
            .current_dir(&spec.cwd)
            .stdin(stdin);
        match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return Ok((
                    Outcome::SpawnFailed {
                        message: e.to_string(),
                    },
                    abi,
                    0,
                ));
            }
        }
    };
    // The command runs (it was born in the run's cgroups): now out of
    // them, out of reach of their OOM killer (see `apart`).
    apart.move_self("the init");
    let _ = wire::send_line(ctl, &InitMessage::Started);
    let outcome = reap(child.id());
    Ok((outcome, abi, other_processes()))
}

/// Whether this process has a controlling terminal: `/dev/tty` opens only
/// then (ENXIO otherwise). Opening it has no effect on the terminal.
fn has_terminal() -> Result<bool, String> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::open(
        "/dev/tty",
        OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::NXIO) => Ok(false),
        Err(e) => Err(format!(
            "cannot tell whether there is a controlling terminal: opening /dev/tty: {}",
            errno(e)
        )),
    }
}

/// No controlling terminal for the command: when pincer runs in one (the
/// REPL), a new session leaves it, so nothing can push keystrokes into it
/// (TIOCSTI) or write to it. Without one there is nothing to leave, and no
/// session is made: a new session is also a new scheduler autogroup, which
/// makes every command markedly slower on a loaded machine. Verified by
/// opening `/dev/tty` afterwards.
fn no_terminal() -> Result<((), String), String> {
    let detail = if has_terminal()? {
        rustix::process::setsid().map_err(|e| format!("setsid: {}", errno(e)))?;
        "new session: pincer's controlling terminal is out of reach"
    } else {
        "no controlling terminal (pincer has none)"
    };
    if has_terminal()? {
        return Err("a controlling terminal is still reachable through /dev/tty".into());
    }
    Ok(((), detail.into()))
}

/// Waits for the command, reaping every orphan that is handed to PID 1 on
/// the way.
fn reap(command: u32) -> Outcome {
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) => {
                if u32::try_from(pid.as_raw_nonzero().get()) != Ok(command) {
                    continue;
                }
                if let Some(code) = status.exit_status() {
                    return Outcome::Exited { code };
                }
                if let Some(signal) = status.terminating_signal() {
                    return Outcome::Signaled { signal };
                }
            }
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                return Outcome::SpawnFailed {
                    message: format!("lost track of the command: {}", errno(e)),
                };
            }
        }
    }
}

/// Processes in this PID namespace other than PID 1.
fn other_processes() -> u32 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let n = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|pid| *pid != 1)
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn set(resource: Resource, value: u64) -> Result<u64, String> {
    let hard = rustix::process::getrlimit(resource).maximum;
    let v = hard.map_or(value, |h| h.min(value));
    rustix::process::setrlimit(
        resource,
        Rlimit {
            current: Some(v),
            maximum: Some(v),
        },
    )
    .map_err(|e| format!("setrlimit {resource:?}: {}", errno(e)))?;
    Ok(v)
}

fn rlimits(spec: &Spec, memory_cgroup: bool) -> Result<String, String> {
    let l = &spec.limits;
    // The soft CPU limit sends SIGXCPU, the hard one a second later SIGKILL.
    let hard = rustix::process::getrlimit(Resource::Cpu).maximum;
    let soft = hard.map_or(l.cpu_secs, |h| h.min(l.cpu_secs));
    rustix::process::setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(soft),
            maximum: Some(hard.map_or(soft + 1, |h| h.min(soft + 1))),
        },
    )
    .map_err(|e| format!("setrlimit Cpu: {}", errno(e)))?;
    let files = set(Resource::Nofile, l.open_files)?;
    let fsize = set(Resource::Fsize, l.file_bytes)?;
    set(Resource::Core, 0)?;
    let mut detail = format!("cpu {soft}s, open files {files}, file size {fsize}, no core dumps");
    if !memory_cgroup {
        // Without the memory cgroup, cap each process's address space: a
        // per-process stand-in, weaker (it counts mappings, not memory).
        let a = set(Resource::As, l.memory_bytes)?;
        detail.push_str(&format!(
            ", address space {a} per process (stand-in for the missing memory cgroup)"
        ));
    }
    Ok(detail)
}
