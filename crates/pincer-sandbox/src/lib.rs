//! pincer-sandbox: the OS sandbox every shell command runs in.
//!
//! Owns the layers between a command and the rest of the machine, the
//! helper that applies them, and the proof that they hold (the escape
//! corpus and [`self_test`]). It knows nothing of pincer's agent, gate or
//! config: callers hand it a [`Spec`] (built from pincer's own config and
//! the tool call, never from the workspace) and get a [`Finished`] or a
//! [`SandboxError`] naming the layer that failed.
//!
//! # How a run goes
//!
//! pincer re-executes itself (`/proc/self/exe __sandbox`, see
//! [`run_helper_if_requested`], which `main` calls before anything else)
//! with a Unix socket as stdin that carries the spec as JSON. The helper is
//! synchronous and single-threaded; it runs as two processes:
//!
//! 1. **outer**: sets `no_new_privs`, joins the run's cgroups (created and
//!    limited by the caller), unshares a user namespace when pincer is not
//!    root, then mount, PID, network (unless the network is on for this
//!    run), IPC, UTS and cgroup namespaces; starts the init and, while it
//!    is being exec'd, builds the mount table: a fresh tmpfs `/tmp` and
//!    `HOME`, a `/dev` with only `null`, `zero`, `urandom` and `tty` (and a
//!    private `/dev/shm`), `/run`, `/sys`, the root-only files of `/etc` and
//!    pincer's state (`Spec::hide`) mounted over with empty read-only ones;
//!    leaves the run's cgroups, and hands the init the means to leave them
//!    once the command is started, so that the command's limits (and the
//!    OOM killer) hold the command alone; then waits for the init while
//!    watching pincer's end of the socket — if pincer dies (even by
//!    `SIGKILL`), it kills the init.
//! 2. **init**, PID 1 of the new PID namespace: sets a parent-death signal,
//!    mounts a read-only `/proc` that shows only the sandbox's processes, makes itself
//!    undumpable, sets the rlimits, applies Landlock (workspace read-write,
//!    system directories read-only, `/tmp` and `HOME` read-write, the four
//!    devices; everything else, `PINCER_HOME` included, denied; no TCP when
//!    the network is off; no abstract Unix sockets or signals outside),
//!    drops every capability (bounding set included, also as root), leaves
//!    pincer's terminal session, and starts the command with the
//!    environment cleared to the allowlist plus `HOME` and `PINCER_AGENT`,
//!    telling the outer helper just before (should the init die from then
//!    on, the result still says that the command was started, under which
//!    layers: [`Outcome::InitDied`]); then leaves the run's cgroups.
//!    It reaps orphans and exits when the command exits, and the kernel
//!    then kills whatever the command left behind (`&`, `setsid`, double
//!    forks: nothing leaves a PID namespace).
//!
//! # Fail closed
//!
//! Each [`Layer`] is applied and, where the kernel can tell, verified (the
//! capability sets are read back, the new `/proc` must show one process,
//! Landlock must report the ruleset fully enforced). A required layer that
//! cannot be applied stops the run before the command starts, and the
//! error names it. A layer may degrade only when the spec lists it in
//! `degrade`; the [`Finished`] then says so ([`Finished::notes`]), for the
//! result, the audit entry and `doctor`. Layers that are a second line of
//! defence (`landlock-net` under the network namespace, `cgroup-namespace`)
//! are reported as not applied when the machine lacks them.
//!
//! # What is not enforced
//!
//! See `docs/sandbox.md`: no seccomp filter yet (the kernel's attack surface
//! is the whole syscall table); as root, files in the read-only system
//! directories that root may read are readable (but for the hidden
//! `shadow`, `gshadow`, `sudoers` and SSH host keys); before Landlock ABI 9
//! a pathname Unix socket outside `/run`, `/tmp` and the hidden paths can
//! be connected to; CPU time is limited per process, not per sandbox (the
//! caller's wall-clock timeout bounds the rest).

mod cgroup;
pub mod corpus;
mod helper;
mod launch;
mod probe;
mod report;
mod run;
mod selftest;
mod spec;
mod wire;

pub use cgroup::{CgroupProbe, CgroupVersion, Controller, ControllerHome};
pub use helper::{HELPER_ARG, helper_main, run_helper_if_requested};
pub use launch::{Exit, Finished, Pending, Prepared, Sandbox, SandboxError};
pub use probe::{LayerProbe, Probe};
pub use report::{LayerStatus, Outcome, Report, State};
pub use run::{Captured, RunOptions};
pub use selftest::{LayerVerdict, RowResult, SelfTest, SelfTestRow, run_case, self_test};
pub use spec::{
    DEFAULT_HOME, Layer, Limits, MIN_MEMORY_BYTES, MIN_PIDS, SYSTEM_DIRS, Spec, SpecError,
    default_read_only,
};

impl Sandbox {
    /// What the machine offers, without running anything.
    pub fn probe(&self) -> Probe {
        probe::probe(self.cgroups())
    }

    /// Runs `true` in a sandbox over `workspace` and returns what was
    /// actually applied (exact Landlock ABI, every layer's status), or the
    /// layer that failed.
    pub fn check_live(&self, workspace: &std::path::Path) -> Result<Finished, SandboxError> {
        let spec = Spec::new(vec!["true".into()], workspace, "pincer-doctor");
        self.run(&spec, &RunOptions::default()).map(|c| c.finished)
    }
}
