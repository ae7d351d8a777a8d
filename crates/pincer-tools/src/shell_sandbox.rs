//! How the shell tool runs a command inside the OS sandbox
//! (`pincer-sandbox`): the settings ([`ShellSandbox`]), the spec built for
//! one call, and the blocking set-up and clean-up moved off the runtime.

use crate::args::respond;
use crate::shell::ShellEnv;
use crate::workspace::Workspace;
use pincer_core::tool::ToolError;
use pincer_sandbox::{Finished, Layer, Limits, Pending, Prepared, Sandbox, SandboxError, Spec};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitStatus;

/// The sandbox every shell command runs in. Built from pincer's own config
/// (never from the workspace); [`ShellSandbox::default`] is the strict
/// default: pincer's binary as the helper, default limits, nothing allowed
/// to degrade. The network is off unless one call asks for it and the
/// shell tool allows that (see [`crate::ShellTool::with_network`]).
#[derive(Debug, Clone)]
pub struct ShellSandbox {
    pub sandbox: Sandbox,
    pub limits: Limits,
    /// Layers that may degrade on this machine instead of refusing to run.
    pub degrade: BTreeSet<Layer>,
    /// Host directories commands may read and execute from.
    pub read_only: Vec<PathBuf>,
    /// Hidden besides the workspace's protected paths (e.g. all of
    /// `PINCER_HOME`).
    pub hide: Vec<PathBuf>,
    /// `HOME` inside the sandbox.
    pub home: PathBuf,
}

impl Default for ShellSandbox {
    fn default() -> ShellSandbox {
        ShellSandbox {
            sandbox: Sandbox::current_exe(),
            limits: Limits::default(),
            degrade: BTreeSet::new(),
            read_only: pincer_sandbox::default_read_only(),
            hide: Vec::new(),
            home: PathBuf::from(pincer_sandbox::DEFAULT_HOME),
        }
    }
}

impl ShellSandbox {
    /// The spec of one call: the workspace read-write and cwd, pincer's
    /// state (the workspace's protected paths and `hide`) hidden, the
    /// allowlisted environment with `TERM=dumb`; the network on only when
    /// `network` (this call asked for it, and may). `pincer exec` and
    /// `doctor` build their runs with it too, so they get exactly the
    /// agent's sandbox.
    pub fn spec(
        &self,
        ws: &Workspace,
        program: &str,
        args: &[&str],
        agent: &str,
        env: &ShellEnv,
        network: bool,
    ) -> Result<Spec, ToolError> {
        let mut argv = vec![program.to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut spec = Spec::new(argv, ws.root(), agent);
        spec.read_only = self.read_only.clone();
        spec.hide = ws
            .protected_paths()
            .into_iter()
            .map(PathBuf::from)
            .chain(self.hide.iter().cloned())
            .collect();
        spec.home = self.home.clone();
        spec.network = network;
        spec.limits = self.limits.clone();
        spec.degrade = self.degrade.clone();
        let text = |name: &str, v: &std::ffi::OsStr| {
            v.to_str().map(str::to_string).ok_or_else(|| {
                ToolError::Fatal(format!(
                    "shell: {name} from pincer's environment is not UTF-8, so it cannot be passed to the sandbox"
                ))
            })
        };
        spec.env.insert("PATH".into(), text("PATH", &env.path)?);
        spec.env.insert("TERM".into(), "dumb".into());
        if let Some(v) = &env.lang {
            spec.env.insert("LANG".into(), text("LANG", v)?);
        }
        if let Some(v) = &env.lc_all {
            spec.env.insert("LC_ALL".into(), text("LC_ALL", v)?);
        }
        Ok(spec)
    }

    /// Validates the spec and creates the run's cgroups (blocking: done on
    /// the blocking pool).
    pub(crate) async fn prepare(&self, spec: Spec) -> Result<Prepared, ToolError> {
        let sandbox = self.sandbox.clone();
        tokio::task::spawn_blocking(move || sandbox.prepare(&spec))
            .await
            .map_err(|e| ToolError::Fatal(format!("shell: sandbox set-up panicked: {e}")))?
            .map_err(|e| sandbox_error(&e))
    }
}

/// Reads the helper's report and removes the run's cgroups (blocking).
pub(crate) async fn finish(
    pending: Pending,
    status: ExitStatus,
    killed: bool,
) -> Result<Finished, ToolError> {
    tokio::task::spawn_blocking(move || pending.finish(status, killed))
        .await
        .map_err(|e| ToolError::Fatal(format!("shell: sandbox clean-up panicked: {e}")))?
        .map_err(|e| sandbox_error(&e))
}

/// A sandbox error as the model sees it: a layer that failed or a program
/// that could not start is an answer; a helper that does not speak the
/// protocol is a broken installation and stops the turn.
pub(crate) fn sandbox_error(e: &SandboxError) -> ToolError {
    match e {
        SandboxError::Spawn { program, message } => {
            respond(format!("shell: could not start `{program}`: {message}"))
        }
        SandboxError::Setup { .. } | SandboxError::Spec(_) => respond(format!("shell: {e}")),
        SandboxError::Helper { .. } | SandboxError::Io { .. } => {
            ToolError::Fatal(format!("shell: {e}"))
        }
    }
}
