//! The caller's side: [`Sandbox::prepare`] turns a [`Spec`] into the
//! `std::process::Command` that runs the helper (the caller adds stdout and
//! stderr, spawns it with std or tokio) and a [`Pending`] that must be kept
//! until the run ends: it owns the control socket (closing it kills the
//! sandbox) and the run's cgroups (removed when it finishes or is dropped).

use crate::cgroup::{self, CgroupProbe, RunCgroups};
use crate::helper::HELPER_ARG;
use crate::report::{LayerStatus, Outcome, Report, State, describe_signal};
use crate::spec::{Layer, Spec, SpecError};
use crate::wire::{self, MAX_REQUEST, OuterRequest, PROTOCOL};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};

/// Why a sandboxed run did not happen (the command did not run).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A required layer could not be applied.
    #[error("sandbox layer `{layer}` could not be applied, so the command did not run: {message}")]
    Setup { layer: Layer, message: String },
    /// Every layer was in place, but the program could not be started.
    #[error("could not start `{program}`: {message}")]
    Spawn { program: String, message: String },
    /// The helper did not answer as it should (it crashed, or the helper
    /// binary is not a pincer that dispatches `__sandbox`).
    #[error("the sandbox helper {helper} {message}")]
    Helper { helper: String, message: String },
    #[error("sandbox: {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

/// Runs commands in the sandbox through a helper binary: a pincer (or any
/// program that calls [`crate::run_helper_if_requested`] first in `main`).
#[derive(Debug, Clone)]
pub struct Sandbox {
    helper: PathBuf,
    cgroups: Arc<OnceLock<CgroupProbe>>,
}

impl Sandbox {
    pub fn new(helper: impl Into<PathBuf>) -> Sandbox {
        Sandbox {
            helper: helper.into(),
            cgroups: Arc::new(OnceLock::new()),
        }
    }

    /// The running binary as its own helper, through `/proc/self/exe`: the
    /// same file even if it was replaced or deleted on disk since it
    /// started, and nothing on `PATH` or in the workspace can stand in.
    pub fn current_exe() -> Sandbox {
        Sandbox::new("/proc/self/exe")
    }

    pub fn helper(&self) -> &Path {
        &self.helper
    }

    /// The cgroup hierarchies, detected once per `Sandbox`.
    pub fn cgroups(&self) -> &CgroupProbe {
        self.cgroups.get_or_init(cgroup::detect)
    }

    /// Validates `spec`, creates the run's cgroups with their limits, and
    /// builds the helper's command with the request already written to its
    /// control socket. A cgroup layer that cannot be set up fails here
    /// unless the spec lets it degrade.
    pub fn prepare(&self, spec: &Spec) -> Result<Prepared, SandboxError> {
        spec.validate()?;
        let (cgroups, results) = RunCgroups::create(self.cgroups(), &spec.limits);
        let mut pre = Vec::new();
        for (layer, r) in cgroup::statuses(results) {
            let r = if spec.inject_failure == Some(layer) {
                Err("failure injected for this run (spec.inject_failure)".to_string())
            } else {
                r
            };
            match r {
                Ok(s) => pre.push(s),
                Err(message) if spec.degrade.contains(&layer) => pre.push(degraded(layer, message)),
                Err(message) => return Err(SandboxError::Setup { layer, message }),
            }
        }
        let joins = cgroups
            .joins()
            .into_iter()
            .map(|(dir, layers)| {
                let kept: Vec<Layer> = layers
                    .into_iter()
                    .filter(|l| {
                        pre.iter()
                            .any(|s| s.layer == *l && s.state == State::Enforced)
                    })
                    .collect();
                (dir, kept)
            })
            .filter(|(_, l)| !l.is_empty())
            .collect();
        let request = OuterRequest {
            version: PROTOCOL,
            spec: spec.clone(),
            cgroups: joins,
            pre: pre.clone(),
            helper_cgroups: cgroups.helpers.clone(),
        };
        let bytes = serde_json::to_vec(&request).map_err(|e| SandboxError::Io {
            what: "encoding the request".into(),
            source: std::io::Error::other(e),
        })?;
        if bytes.len() > MAX_REQUEST {
            return Err(SandboxError::Spec(SpecError {
                field: "argv".into(),
                message: format!(
                    "makes the request {} bytes, over the {MAX_REQUEST}-byte limit",
                    bytes.len()
                ),
            }));
        }
        let io = |what: &str| {
            let what = what.to_string();
            move |source| SandboxError::Io { what, source }
        };
        let (ours, theirs) = UnixStream::pair().map_err(io("creating the control socket"))?;
        // The request fits in the socket's buffer, so this does not wait for
        // the helper; non-blocking so a smaller buffer is an error, not a hang.
        ours.set_nonblocking(true).map_err(io("control socket"))?;
        // One byte with the descriptors goes first (see `wire`): the read
        // end of the command's stdin pipe when piped (closed here once
        // sent; pincer keeps the write end), else none.
        let (read, stdin) = if spec.pipe_stdin {
            let (read, write) = std::io::pipe().map_err(io("creating the stdin pipe"))?;
            (Some(read), Some(write))
        } else {
            (None, None)
        };
        let fds: Vec<_> = read.iter().map(AsFd::as_fd).collect();
        wire::send_fds(&ours, &fds).map_err(|e| SandboxError::Io {
            what: "writing the request".into(),
            source: std::io::Error::other(e),
        })?;
        drop(read);
        (&ours)
            .write_all(&bytes)
            .map_err(io("writing the request"))?;
        ours.shutdown(std::net::Shutdown::Write)
            .map_err(io("control socket"))?;
        let mut command = Command::new(&self.helper);
        command
            .arg(HELPER_ARG)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(theirs)));
        Ok(Prepared {
            command,
            pending: Pending {
                helper: self.helper.display().to_string(),
                program: spec.argv.first().cloned().unwrap_or_default(),
                control: ours,
                cgroups,
                pre,
                stdin,
            },
        })
    }
}

fn degraded(layer: Layer, detail: String) -> LayerStatus {
    LayerStatus {
        layer,
        state: State::Degraded,
        detail,
    }
}

/// A run ready to spawn: set `command`'s stdout and stderr (and a process
/// group if wanted), spawn it, drop the command, and keep `pending` until
/// the child is reaped. Do not change its stdin: that is the control socket
/// (the command's own stdin, when piped, is [`Pending::take_stdin`]).
#[derive(Debug)]
pub struct Prepared {
    pub command: Command,
    pub pending: Pending,
}

/// A spawned (or about to be spawned) run.
#[derive(Debug)]
pub struct Pending {
    helper: String,
    program: String,
    control: UnixStream,
    cgroups: RunCgroups,
    pre: Vec<LayerStatus>,
    stdin: Option<std::io::PipeWriter>,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit status: {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}{}", describe_signal(*s)),
        }
    }
}

/// A run that happened: the command started inside the sandbox.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The command's exit, or `Signal(9)` when the caller killed the run.
    pub exit: Exit,
    /// The helper's report; `None` only when the caller killed the run
    /// before it could report.
    pub report: Option<Report>,
    /// The caller killed the run (timeout, cancelled call).
    pub killed: bool,
    /// Processes the OOM killer killed because the memory limit was reached.
    pub oom_kills: u64,
    /// Forks refused because the pids limit was reached.
    pub pids_refused: u64,
    /// Cleanup that did not complete (cgroup directories left behind).
    pub cleanup_error: Option<String>,
    /// The cgroup statuses decided on the caller's side.
    pre: Vec<LayerStatus>,
}

impl Finished {
    /// Every layer's status (from the report, or the caller's side only).
    pub fn layers(&self) -> &[LayerStatus] {
        match &self.report {
            Some(r) => &r.layers,
            None => &self.pre,
        }
    }

    /// Layers that were required but degraded in this run.
    pub fn degraded(&self) -> Vec<&LayerStatus> {
        self.layers()
            .iter()
            .filter(|l| l.state == State::Degraded)
            .collect()
    }

    /// Lines a result should show besides the exit and the output: degraded
    /// layers, limits that were hit, processes killed with the sandbox.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.oom_kills > 0 {
            notes.push(format!(
                "note: the sandbox's memory limit was reached: the kernel's OOM killer killed {} process(es)",
                self.oom_kills
            ));
        }
        if self.pids_refused > 0 {
            notes.push(format!(
                "note: the sandbox's process limit was reached: {} fork(s) refused",
                self.pids_refused
            ));
        }
        if let Some(Report {
            outcome: Outcome::InitDied { message },
            ..
        }) = &self.report
        {
            notes.push(format!(
                "note: {message}; the kernel killed the command and everything it started with it"
            ));
        }
        if let Some(r) = &self.report {
            notes.extend(r.notes.iter().cloned());
        }
        if let Some(r) = &self.report
            && r.leftovers > 0
        {
            notes.push(format!(
                "note: the command left processes running ({}); they were killed with the sandbox when it exited",
                r.leftovers
            ));
        }
        for l in self.degraded() {
            notes.push(format!(
                "note: sandbox layer `{}` is DEGRADED on this machine (allowed by configuration): {}",
                l.layer, l.detail
            ));
        }
        if let Some(e) = &self.cleanup_error {
            notes.push(format!("note: sandbox cleanup: {e}"));
        }
        notes
    }
}

impl Pending {
    /// The write end of the command's stdin, when the spec asked for
    /// [`Spec::pipe_stdin`] (once; later calls give `None`). Closing it is
    /// the command's end of input.
    pub fn take_stdin(&mut self) -> Option<std::io::PipeWriter> {
        self.stdin.take()
    }

    /// SIGKILLs every process of the command through the run's cgroups
    /// (for a timeout; the caller also kills the helper it spawned, whose
    /// death takes the PID namespace down: the helpers leave the run's
    /// cgroups once the command runs). True if any process was there.
    pub fn kill(&self) -> bool {
        self.cgroups.kill_all()
    }

    /// After the helper was reaped with `status`: reads its report, the
    /// cgroups' counters, and removes the cgroups. `killed`: the caller
    /// killed the run, so a missing report is expected.
    ///
    /// Errors: the run did not happen (a layer failed, the program could
    /// not start, or the helper failed).
    pub fn finish(mut self, status: ExitStatus, killed: bool) -> Result<Finished, SandboxError> {
        let got = wire::drain_now(&self.control);
        let oom_kills = self.cgroups.oom_kills();
        let pids_refused = self.cgroups.pids_refused();
        self.cgroups.kill_all();
        let cleanup_error = self.cgroups.remove().err();
        let report = match wire::parse::<Report>(&got) {
            Ok(r) => Some(r),
            Err(_) if killed => None,
            Err(_) if status.signal() == Some(9) && oom_kills > 0 => {
                return Err(SandboxError::Helper {
                    helper: self.helper,
                    message: format!(
                        "was killed by the kernel's OOM killer before it could report: the sandbox's memory limit was reached ({oom_kills} process(es) killed) while the helper was still in the run's cgroups"
                    ),
                });
            }
            Err(e) => {
                return Err(SandboxError::Helper {
                    helper: self.helper,
                    message: format!(
                        "ended ({}) without a valid report ({e}); the helper must be a pincer whose main calls pincer_sandbox::run_helper_if_requested() first",
                        describe(status)
                    ),
                });
            }
        };
        let exit = match &report {
            Some(r) => match &r.outcome {
                Outcome::Exited { code } => Exit::Code(*code),
                Outcome::Signaled { signal } => Exit::Signal(*signal),
                // The kernel SIGKILLs every process of a PID namespace
                // whose init has died.
                Outcome::InitDied { .. } => Exit::Signal(9),
                Outcome::SetupFailed { layer, message } => {
                    return Err(SandboxError::Setup {
                        layer: *layer,
                        message: message.clone(),
                    });
                }
                Outcome::SpawnFailed { message } => {
                    return Err(SandboxError::Spawn {
                        program: self.program,
                        message: message.clone(),
                    });
                }
            },
            None => Exit::Signal(9),
        };
        Ok(Finished {
            exit,
            report,
            killed,
            oom_kills,
            pids_refused,
            cleanup_error,
            pre: std::mem::take(&mut self.pre),
        })
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (_, Some(s)) => format!("signal {s}{}", describe_signal(s)),
        _ => status.to_string(),
    }
}
