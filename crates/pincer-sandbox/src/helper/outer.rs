//! The helper's first process: cgroups, namespaces, mounts; then the init.

use super::apart::Apart;
use super::{Fatal, INIT_ARG, LayerLog, errno, exit_code, mounts};
use crate::report::{Outcome, Report};
use crate::spec::Layer;
use crate::wire::{self, InitReady, InitReport, InitRequest, InitSaid, OuterRequest, PROTOCOL};
use nix::sched::CloneFlags;
use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, PidfdFlags, Signal};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

pub(super) fn main(ctl: UnixStream) -> ! {
    // The command's stdin pipe (when piped) comes first, then the request.
    let mut fds = match wire::recv_fds(&ctl) {
        Ok(fds) => fds,
        Err(e) => bail(&format!("bad request: {e}")),
    };
    let req: OuterRequest = match wire::recv(&ctl) {
        Ok(r) => r,
        Err(e) => bail(&format!("bad request: {e}")),
    };
    if req.version != PROTOCOL {
        bail(&format!(
            "protocol {} requested, this helper speaks {PROTOCOL}",
            req.version
        ));
    }
    if let Err(e) = req.spec.validate() {
        bail(&e.to_string());
    }
    // The command's stdin pipe, exactly when the spec asks for one.
    let stdin = match (req.spec.pipe_stdin, fds.pop(), fds.is_empty()) {
        (true, Some(fd), true) => Some(fd),
        (false, None, _) => None,
        _ => bail("the request's descriptors do not match spec.pipe_stdin"),
    };
    let root = has_sys_admin();
    let mut log = LayerLog::new(&req.spec, root);
    for s in &req.pre {
        log.push(s.clone());
    }
    let mut apart = Apart::default();
    let result = run(&req, root, &mut log, &ctl, &mut apart, stdin);
    let mut notes: Vec<String> = apart.note().into_iter().collect();
    let (outcome, abi, leftovers, init_layers) = match result {
        Ok(r) => {
            notes.extend(r.notes);
            (r.outcome, r.landlock_abi, r.leftovers, r.layers)
        }
        Err(Fatal { layer, message }) => (Outcome::SetupFailed { layer, message }, None, 0, vec![]),
    };
    let mut layers = log.out;
    layers.extend(init_layers);
    layers.sort_by_key(|l| l.layer);
    let code = exit_code(&outcome);
    let report = Report {
        layers,
        landlock_abi: abi,
        outcome,
        leftovers,
        notes,
    };
    // pincer may be gone (then nobody reads this); nothing else to do.
    let _ = wire::send(&ctl, &report);
    std::process::exit(code)
}

/// A request this helper cannot act on: said on stderr (which is the
/// command's output pipe, read by pincer), no report.
fn bail(msg: &str) -> ! {
    eprintln!("pincer sandbox helper: {msg}");
    std::process::exit(super::EXIT_SETUP)
}

/// Root for our purposes: able to create namespaces without a user
/// namespace (euid 0 without CAP_SYS_ADMIN, as in some containers, is not).
fn has_sys_admin() -> bool {
    rustix::thread::capabilities(None)
        .map(|c| {
            c.effective
                .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
        })
        .unwrap_or(false)
}

fn unshare(flags: CloneFlags) -> Result<(), String> {
    nix::sched::unshare(flags).map_err(|e| format!("unshare: {e}"))
}

fn run(
    req: &OuterRequest,
    root: bool,
    log: &mut LayerLog<'_>,
    ctl: &UnixStream,
    apart: &mut Apart,
    stdin: Option<OwnedFd>,
) -> Result<InitReport, Fatal> {
    let spec = &req.spec;
    log.apply(Layer::NoNewPrivs, || {
        rustix::thread::set_no_new_privs(true).map_err(errno)?;
        match rustix::thread::no_new_privs() {
            Ok(true) => Ok(((), "set; exec cannot grant privileges".into())),
            _ => Err("PR_SET_NO_NEW_PRIVS did not stick".into()),
        }
    })?;

    // Join the run's cgroups before anything else exists, so every process
    // of the sandbox is born inside them. On v1, "0" into `tasks` moves
    // just this (single) thread, which spares the kernel the global
    // threadgroup lock and its RCU wait (about 10 ms a run here); v2 has
    // only `cgroup.procs`.
    let me = std::process::id().to_string();
    for (dir, layers) in &req.cgroups {
        let tasks = dir.join("tasks");
        let joined = if tasks.exists() {
            std::fs::write(&tasks, "0")
        } else {
            std::fs::write(dir.join("cgroup.procs"), &me)
        };
        if let Err(e) = joined {
            for layer in layers {
                log.fail(*layer, format!("cannot join {}: {e}", dir.display()))?;
            }
        }
    }
    // Where the helpers go once the command runs (see `apart`), opened
    // before the namespaces and the mounts change what this process sees.
    *apart = Apart::open(&req.helper_cgroups);

    if root {
        log.skip(
            Layer::UserNamespace,
            "not needed: pincer has CAP_SYS_ADMIN (root)",
        );
    } else {
        log.apply(Layer::UserNamespace, user_namespace)?;
    }
    log.apply(Layer::MountNamespace, || {
        unshare(CloneFlags::CLONE_NEWNS)?;
        // Nothing mounted here may propagate back to the host.
        rustix::mount::mount_change(
            "/",
            rustix::mount::MountPropagationFlags::PRIVATE
                | rustix::mount::MountPropagationFlags::REC,
        )
        .map_err(|e| format!("making / private: {}", errno(e)))?;
        Ok(((), "private mount table (propagation: private)".into()))
    })?;
    log.apply(Layer::PidNamespace, || {
        unshare(CloneFlags::CLONE_NEWPID)?;
        Ok(((), "the command's tree runs under its own PID 1".into()))
    })?;
    if spec.network {
        log.skip(Layer::NetworkNamespace, "network on for this run");
    } else {
        log.apply(Layer::NetworkNamespace, || {
            unshare(CloneFlags::CLONE_NEWNET)?;
            Ok(((), "no interfaces but a loopback that is down".into()))
        })?;
    }
    log.apply(Layer::IpcNamespace, || {
        unshare(CloneFlags::CLONE_NEWIPC)?;
        Ok(((), "private System V IPC and message queues".into()))
    })?;
    log.apply(Layer::UtsNamespace, || {
        unshare(CloneFlags::CLONE_NEWUTS)?;
        rustix::system::sethostname(b"pincer-sandbox").map_err(errno)?;
        Ok(((), "host name pincer-sandbox".into()))
    })?;
    log.apply(Layer::CgroupNamespace, || {
        unshare(CloneFlags::CLONE_NEWCGROUP)?;
        Ok(((), "the run's cgroup is its root".into()))
    })?;

    start_init(req, root, log, ctl, apart, stdin)
}

/// A user namespace mapping pincer's uid and gid to themselves, so files
/// keep their owners and the other namespaces can be made.
fn user_namespace() -> Result<((), String), String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    unshare(CloneFlags::CLONE_NEWUSER)?;
    let w = |file: &str, text: String| {
        std::fs::write(file, &text).map_err(|e| format!("writing {file}: {e}"))
    };
    w("/proc/self/setgroups", "deny".into())?;
    w("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    w("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(((), format!("uid {uid} and gid {gid} mapped to themselves")))
}

/// In a user namespace pincer's uid is not root, so exec would drop the
/// capabilities the init needs to mount `/proc` and empty the bounding
/// set; they are carried over as ambient capabilities, which the init
/// clears with the rest before the command starts.
fn keep_caps_across_exec() -> Result<(), String> {
    use rustix::thread::CapabilitySet;
    let needed = CapabilitySet::SYS_ADMIN | CapabilitySet::SETPCAP;
    let mut sets = rustix::thread::capabilities(None).map_err(errno)?;
    sets.inheritable |= needed;
    rustix::thread::set_capabilities(None, sets)
        .map_err(|e| format!("capset in the user namespace: {}", errno(e)))?;
    for cap in [CapabilitySet::SYS_ADMIN, CapabilitySet::SETPCAP] {
        rustix::thread::configure_capability_in_ambient_set(cap, true)
            .map_err(|e| format!("raising an ambient capability: {}", errno(e)))?;
    }
    Ok(())
}

fn start_init(
    req: &OuterRequest,
    root: bool,
    log: &mut LayerLog<'_>,
    ctl: &UnixStream,
    apart: &mut Apart,
    stdin: Option<OwnedFd>,
) -> Result<InitReport, Fatal> {
    let fatal = |message: String| Fatal {
        layer: Layer::PidNamespace,
        message,
    };
    if log.enforced(Layer::UserNamespace) {
        keep_caps_across_exec().map_err(|e| Fatal {
            layer: Layer::UserNamespace,
            message: e,
        })?;
    }
    let (ours, theirs) =
        UnixStream::pair().map_err(|e| fatal(format!("cannot make the init's socket: {e}")))?;
    let mut child = {
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg(INIT_ARG)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(theirs)));
        cmd.spawn()
            .map_err(|e| fatal(format!("cannot start the sandbox's init: {e}")))?
        // `cmd` drops here with its copy of the init's socket end.
    };
    // The mount table is built while the init is being exec'd (it shares
    // this mount namespace and waits for its request, sent only after).
    if let Err(f) = mounts::setup(&req.spec, log) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(f);
    }
    // The init was born in the run's cgroups; this process may leave them
    // (see `apart`), before the command exists. The init gets the helpers'
    // cgroups to move itself once it has started the command.
    apart.move_self("the helper");
    let init_req = InitRequest {
        version: PROTOCOL,
        spec: req.spec.clone(),
        layers: log.out.clone(),
        root,
        apart: apart.paths(),
    };
    // The command's stdin pipe goes on to the init, after the cgroups, and
    // this process keeps no copy (it drops here).
    let mut fds = apart.fds();
    fds.extend(stdin.as_ref().map(AsFd::as_fd));
    if let Err(e) = wire::send_fds(&ours, &fds).and_then(|()| wire::send(&ours, &init_req)) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(fatal(e));
    }

    // Wait for the init, and for pincer: if pincer's end of the control
    // socket closes (pincer exited or was killed), kill the init, which
    // takes the whole PID namespace with it.
    let pid = Pid::from_child(&child);
    let watch = rustix::process::pidfd_open(pid, PidfdFlags::empty());
    let mut pincer_gone = false;
    match &watch {
        Ok(pidfd) => loop {
            let mut fds = [
                PollFd::new(pidfd, PollFlags::IN),
                PollFd::new(ctl, PollFlags::empty()),
            ];
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            }
            if fds[0].revents().contains(PollFlags::IN) {
                break;
            }
            if fds[1].revents().contains(PollFlags::HUP) {
                pincer_gone = true;
                let _ = rustix::process::pidfd_send_signal(pidfd, Signal::KILL);
                break;
            }
        },
        Err(e) => log.fail(
            Layer::ParentDeath,
            format!("pidfd_open: {}: cannot watch for pincer's death", errno(*e)),
        )?,
    }
    let status = child.wait();
    let InitSaid {
        ready,
        started,
        report,
    } = wire::parse_init(&wire::drain_now(&ours));
    match (report, ready) {
        (Ok(r), _) => Ok(r),
        (Err(_), _) if pincer_gone => Err(fatal("pincer is gone: the sandbox was killed".into())),
        (Err(e), None) => Err(fatal(format!(
            "the sandbox's init ended ({}) without a report: {e}",
            describe(&status)
        ))),
        // Every layer was in place and the command started: say so, with
        // the layers it ran under, rather than that it did not run.
        (
            Err(_),
            Some(InitReady {
                layers,
                landlock_abi,
            }),
        ) => Ok(InitReport {
            layers,
            landlock_abi,
            outcome: Outcome::InitDied {
                message: format!(
                    "the sandbox's init ended ({}) {}, without a report",
                    describe(&status),
                    if started {
                        "while the command ran"
                    } else {
                        "as it started the command"
                    }
                ),
            },
            leftovers: 0,
            notes: vec![],
        }),
    }
}

fn describe(status: &std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => e.to_string(),
    }
}
