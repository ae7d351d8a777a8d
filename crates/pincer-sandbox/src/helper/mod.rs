//! The helper: pincer re-executed as a small synchronous program (no async
//! runtime, one thread) in two processes.
//!
//! - **outer** (`__sandbox`): joins the run's cgroups, unshares the
//!   namespaces, builds the mount table (private `/tmp` and `HOME`, a
//!   minimal `/dev`, pincer's state and `/run` hidden), then starts the init
//!   and waits for it, watching pincer's end of the control socket: when
//!   pincer is gone, it kills the init (and so the whole sandbox). Once the
//!   command runs, both processes are out of the run's cgroups (`apart`):
//!   each moves itself, the init with what the outer helper handed it.
//! - **init** (`__sandbox-init`): PID 1 of the new PID namespace. It mounts
//!   the new `/proc`, sets the rlimits, applies Landlock, drops every
//!   capability, leaves pincer's terminal session, starts the command with
//!   the allowlisted environment, reaps every orphan, and exits when the
//!   command does — which makes the kernel kill everything left in the
//!   namespace.
//!
//! Two processes because a PID namespace applies to a process's children,
//! and std's `Command` (fork + exec, no unsafe code) is how a child is made;
//! the init stays between the command and the outer helper so the command
//! is not PID 1 (which ignores default-action signals and must reap).

mod apart;
mod caps;
mod init;
mod landlock;
mod mounts;
mod outer;

use crate::report::{LayerStatus, State};
use crate::spec::{Layer, Spec};
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

pub(crate) use landlock::probe_abi;

/// argv\[1\] that makes pincer run as the sandbox helper.
pub const HELPER_ARG: &str = "__sandbox";
/// argv\[1\] of the helper's second process (PID 1 of the sandbox).
pub(crate) const INIT_ARG: &str = "__sandbox-init";

/// Exit status of the helper when a layer could not be set up.
pub(crate) const EXIT_SETUP: i32 = 125;
/// Exit status of the helper when the command could not be started.
pub(crate) const EXIT_SPAWN: i32 = 127;
/// Exit status when the helper was started by hand, without a control socket.
const EXIT_USAGE: i32 = 2;

/// Call this first thing in `main`, before any thread or async runtime
/// exists: when argv\[1\] is the helper marker, it runs the helper and never
/// returns; otherwise it returns at once.
pub fn run_helper_if_requested() {
    let mut args = std::env::args_os().skip(1);
    if let Some(first) = args.next()
        && (first == HELPER_ARG || first == INIT_ARG)
    {
        helper_main(std::iter::once(first).chain(args));
    }
}

/// Runs the helper stage named by the first argument (`__sandbox` or
/// `__sandbox-init`). The request comes only from the control socket on
/// stdin, never from argv or the environment.
pub fn helper_main(args: impl IntoIterator<Item = OsString>) -> ! {
    let mut args = args.into_iter();
    let stage = args.next();
    let Some(ctl) = control_socket() else {
        eprintln!(
            "pincer: `{HELPER_ARG}` is internal: pincer starts it with a control socket as stdin"
        );
        std::process::exit(EXIT_USAGE);
    };
    match stage {
        Some(s) if s == HELPER_ARG => outer::main(ctl),
        Some(s) if s == INIT_ARG => init::main(ctl),
        _ => {
            eprintln!("pincer: unknown helper stage");
            std::process::exit(EXIT_USAGE);
        }
    }
}

/// Stdin, if it is a socket (duplicated, so the original fd 0 is left as it is).
fn control_socket() -> Option<UnixStream> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let st = rustix::fs::fstat(fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Socket {
        return None;
    }
    let owned = fd.try_clone_to_owned().ok()?;
    Some(UnixStream::from(owned))
}

/// A required layer could not be applied.
#[derive(Debug)]
pub(crate) struct Fatal {
    pub layer: Layer,
    pub message: String,
}

/// The layer statuses of one helper process, with the fail-or-degrade rule.
pub(crate) struct LayerLog<'a> {
    spec: &'a Spec,
    root: bool,
    pub out: Vec<LayerStatus>,
}

impl<'a> LayerLog<'a> {
    pub(crate) fn new(spec: &'a Spec, root: bool) -> LayerLog<'a> {
        LayerLog {
            spec,
            root,
            out: Vec::new(),
        }
    }

    /// Runs `f` to apply `layer`. Success: enforced. Failure: not applied
    /// when the layer is not required for this run, degraded when the spec
    /// allows it, otherwise a [`Fatal`] that stops the run.
    pub(crate) fn apply<T>(
        &mut self,
        layer: Layer,
        f: impl FnOnce() -> Result<(T, String), String>,
    ) -> Result<Option<T>, Fatal> {
        let r = if self.spec.inject_failure == Some(layer) {
            Err("failure injected for this run (spec.inject_failure)".to_string())
        } else {
            f()
        };
        match r {
            Ok((v, detail)) => {
                self.set(layer, State::Enforced, detail);
                Ok(Some(v))
            }
            Err(why) => self.fail(layer, why).map(|()| None),
        }
    }

    /// Records that `layer` could not be applied (see [`LayerLog::apply`]).
    pub(crate) fn fail(&mut self, layer: Layer, why: String) -> Result<(), Fatal> {
        if !layer.required(self.spec, self.root) {
            self.set(layer, State::NotApplied, why);
            Ok(())
        } else if self.spec.degrade.contains(&layer) {
            self.set(layer, State::Degraded, why);
            Ok(())
        } else {
            Err(Fatal {
                layer,
                message: why,
            })
        }
    }

    /// A layer this run does not use.
    pub(crate) fn skip(&mut self, layer: Layer, why: &str) {
        self.set(layer, State::NotApplied, why.to_string());
    }

    pub(crate) fn enforced(&self, layer: Layer) -> bool {
        self.out
            .iter()
            .any(|l| l.layer == layer && l.state == State::Enforced)
    }

    fn set(&mut self, layer: Layer, state: State, detail: String) {
        self.out.retain(|l| l.layer != layer);
        self.out.push(LayerStatus {
            layer,
            state,
            detail,
        });
    }

    pub(crate) fn push(&mut self, status: LayerStatus) {
        self.out.retain(|l| l.layer != status.layer);
        self.out.push(status);
    }
}

/// An errno as text.
pub(crate) fn errno(e: rustix::io::Errno) -> String {
    std::io::Error::from_raw_os_error(e.raw_os_error()).to_string()
}

/// Reports, then exits with the status that mirrors the command's.
pub(crate) fn exit_code(outcome: &crate::report::Outcome) -> i32 {
    use crate::report::Outcome;
    match outcome {
        Outcome::Exited { code } => *code,
        Outcome::Signaled { signal } => 128 + signal,
        Outcome::SetupFailed { .. } => EXIT_SETUP,
        Outcome::SpawnFailed { .. } => EXIT_SPAWN,
        // The kernel SIGKILLs the command when the init dies.
        Outcome::InitDied { .. } => 128 + 9,
    }
}
