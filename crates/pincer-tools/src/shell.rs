//! The `shell` tool (TL2, SB3).
//!
//! **Risk comes from the shell classifier** (the `pincer-shell` crate),
//! for the one shell this tool runs ([`ShellProgram`]: `/bin/dash` unless
//! the caller chooses bash with [`ShellTool::with_shell`]): the command is
//! parsed part by part the way that shell reads it (wrappers, `sh -c`,
//! pipes, substitutions, redirections, options that run programs). Only a
//! command in the classifier's documented safe subset is low; writes are
//! medium; destructive/network/privilege, unknown programs and anything not
//! understood high; a deny list blocks at every autonomy level (PO2). The
//! assessment's detail names the shell the classification was made for.
//!
//! A `command` runs as `/bin/dash -c COMMAND`, or `/bin/bash --noprofile
//! --norc -c COMMAND` (no startup files, which the classifier does not
//! read); an `argv` runs directly, with no shell.
//!
//! **Every command runs in the OS sandbox** (`pincer-sandbox`, configured
//! by [`ShellSandbox`]): its own user (when pincer is not root), mount,
//! PID, network, IPC and UTS namespaces; Landlock (the workspace
//! read-write, system directories read-only, a private `/tmp` and an empty
//! private `HOME`, pincer's state hidden and denied); memory and pids
//! limits through cgroups, rlimits; no capabilities, no terminal. When a
//! required layer cannot be applied, the command does not run and the
//! model is told which layer failed; a layer degrades only when the
//! configuration allows it, and every result of such a run says so. Only a
//! tool built with [`ShellTool::unsandboxed`] runs commands directly, and
//! its results say that too.
//!
//! What it does besides:
//!
//! - cwd = the workspace root, stdin = `/dev/null`;
//! - the environment cleared except `PATH`, `LANG`, `LC_ALL` (values from
//!   [`ShellEnv`], which the binary builds once from its own environment),
//!   `TERM=dumb`, `HOME` (the sandbox's private one; the workspace when
//!   unsandboxed) and `PINCER_AGENT=<agent id>` so attribution survives (SB3);
//! - when the timeout fires, the whole sandbox is killed (the helper's
//!   process group, the run's cgroups, and with the helper the PID
//!   namespace); when the command exits, whatever it left running dies with
//!   its PID namespace (and the result says so). Dropping the call (a
//!   cancelled turn) kills the sandbox as well. Unsandboxed, the command's
//!   process group stands in for the namespace;
//! - stdout and stderr share one pipe, so the output is in the order the
//!   command wrote it; it is capped (head and tail kept, with a marker that
//!   states the original size).
//!
//! A non-zero exit is a normal result the model sees, not an error; failing
//! to start the program is a `RespondToModel` error. The async runtime must
//! have IO and time enabled (tokio's process and pipe support need them).

use crate::ToolLimits;
use crate::args::{Args, object_schema, respond};
use crate::child::Watched;
use crate::config::NetworkMode;
use crate::shell_sandbox::{self, ShellSandbox};
use crate::workspace::Workspace;
use pincer_core::gate::{Gated, Permit};
use pincer_core::policy::Risk;
use pincer_core::provider::BoxFuture;
use pincer_core::tool::{Assessment, Tool, ToolError};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// `PATH` when the binary passes none: the usual system directories.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How long to keep draining output after the group was killed: only a
/// process that left the group (setsid) can hold the pipe open past that.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The allowlisted variables passed through to commands. The binary builds
/// it once, at start, from its own environment ([`ShellEnv::from_vars`]);
/// this crate never reads environment variables itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellEnv {
    pub path: OsString,
    pub lang: Option<OsString>,
    pub lc_all: Option<OsString>,
}

impl Default for ShellEnv {
    fn default() -> ShellEnv {
        ShellEnv {
            path: OsString::from(DEFAULT_PATH),
            lang: Some(OsString::from("C.UTF-8")),
            lc_all: None,
        }
    }
}

impl ShellEnv {
    /// Picks `PATH`, `LANG` and `LC_ALL` out of an environment snapshot
    /// (e.g. `std::env::vars_os()`); a missing `PATH` gets [`DEFAULT_PATH`].
    pub fn from_vars<I, K, V>(vars: I) -> ShellEnv
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let mut env = ShellEnv {
            path: OsString::from(DEFAULT_PATH),
            lang: None,
            lc_all: None,
        };
        for (k, v) in vars {
            let v = v.as_ref().to_os_string();
            match k.as_ref().to_str() {
                Some("PATH") => env.path = absolute_entries(&v),
                Some("LANG") => env.lang = Some(v),
                Some("LC_ALL") => env.lc_all = Some(v),
                _ => {}
            }
        }
        env
    }
}

/// `path` with only its absolute entries: an empty or relative entry (`::`,
/// `.`, `node_modules/.bin`) would let a file in the workspace shadow `ls`
/// in a command the classifier called read-only. Nothing left: the default.
fn absolute_entries(path: &OsStr) -> OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let kept: Vec<&[u8]> = path
        .as_bytes()
        .split(|b| *b == b':')
        .filter(|e| e.first() == Some(&b'/'))
        .collect();
    if kept.is_empty() {
        return OsString::from(DEFAULT_PATH);
    }
    OsString::from_vec(kept.join(&b':'))
}

const PARAMS: &[&str] = &["argv", "command", "timeout_secs", "network"];

/// The shell that runs a `command`: an absolute path and the dialect the
/// classifier models for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellProgram {
    path: std::path::PathBuf,
    dialect: pincer_shell::Shell,
}

/// A shell program that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellProgramError {
    #[error("the shell program `{0}` is not an absolute path")]
    NotAbsolute(String),
}

impl ShellProgram {
    /// `/bin/dash`: Debian's, Ubuntu's and Raspberry Pi OS's `/bin/sh`.
    pub fn dash() -> ShellProgram {
        ShellProgram {
            path: "/bin/dash".into(),
            dialect: pincer_shell::Shell::Dash,
        }
    }

    /// `/bin/bash`, run with `--noprofile --norc`.
    pub fn bash() -> ShellProgram {
        ShellProgram {
            path: "/bin/bash".into(),
            dialect: pincer_shell::Shell::Bash,
        }
    }

    /// Another path to a shell of `dialect` (which must be what it is: the
    /// classification holds only for the dialect it models).
    pub fn new(
        path: impl Into<std::path::PathBuf>,
        dialect: pincer_shell::Shell,
    ) -> Result<ShellProgram, ShellProgramError> {
        let path = path.into();
        if !path.is_absolute() {
            return Err(ShellProgramError::NotAbsolute(path.display().to_string()));
        }
        Ok(ShellProgram { path, dialect })
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    pub fn dialect(&self) -> pincer_shell::Shell {
        self.dialect
    }

    /// The arguments before the command string.
    fn flags(&self) -> &'static [&'static str] {
        match self.dialect {
            pincer_shell::Shell::Dash => &["-c"],
            pincer_shell::Shell::Bash => &["--noprofile", "--norc", "-c"],
        }
    }
}

impl Default for ShellProgram {
    fn default() -> ShellProgram {
        ShellProgram::dash()
    }
}

/// `shell {argv | command, timeout_secs?}`. See the module doc.
#[derive(Debug)]
pub struct ShellTool {
    ws: Gated<Arc<Workspace>>,
    shell: ShellProgram,
    deny_commands: Vec<String>,
    /// The workspace's protected paths (pincer's own state), as text.
    protected: Vec<String>,
    agent_id: String,
    env: ShellEnv,
    timeout_default: Duration,
    timeout_max: Duration,
    output_cap: usize,
    description: String,
    isolation: Isolation,
    network: NetworkMode,
}

/// How commands are isolated: in the OS sandbox, or (explicit opt-in only)
/// not at all.
#[derive(Debug, Clone)]
enum Isolation {
    Sandboxed(Box<ShellSandbox>),
    Unsandboxed,
}

/// The command a call runs, as one shell string: `command` itself, or
/// `argv` with every element single-quoted. `None` when the arguments are
/// not one of the two shapes.
fn command_text(args: &Value) -> Option<String> {
    match (args.get("command"), args.get("argv")) {
        (Some(Value::String(c)), None) => Some(c.clone()),
        (None, Some(Value::Array(items))) if !items.is_empty() => {
            let mut out = String::new();
            for item in items {
                let word = item.as_str()?;
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push('\'');
                out.push_str(&word.replace('\'', "'\\''"));
                out.push('\'');
            }
            Some(out)
        }
        _ => None,
    }
}

/// The tool's description for the model.
impl ShellTool {
    /// Program-name globs blocked at every autonomy level on top of the
    /// built-in deny list (`[policy] deny_commands`).
    pub fn with_deny_commands(mut self, patterns: Vec<String>) -> ShellTool {
        self.deny_commands = patterns;
        self
    }

    /// Runs `command`s with `shell` (default [`ShellProgram::dash`]), and
    /// classifies them for its dialect.
    pub fn with_shell(mut self, shell: ShellProgram) -> ShellTool {
        self.shell = shell;
        self.description = self.describe();
        self
    }

    /// The shell `command`s run with.
    pub fn shell(&self) -> &ShellProgram {
        &self.shell
    }

    /// A shell tool whose commands run in the OS sandbox with
    /// [`ShellSandbox::default`] (pincer's own binary as the helper: `main`
    /// must dispatch `pincer_sandbox::run_helper_if_requested` first).
    pub fn new(
        ws: Arc<Workspace>,
        limits: &ToolLimits,
        agent_id: &str,
        env: ShellEnv,
    ) -> ShellTool {
        let timeout_max = limits.shell_timeout_max.max(Duration::from_secs(1));
        let timeout_default = limits
            .shell_timeout_default
            .clamp(Duration::from_secs(1), timeout_max);
        let output_cap = limits.shell_output_cap.max(2);
        let shell = ShellProgram::default();
        let protected = ws
            .protected_paths()
            .iter()
            .map(|p| p.display().to_string())
            .filter(|p| p.len() > 1)
            .collect();
        let mut tool = ShellTool {
            protected,
            ws: Gated::new(ws),
            shell,
            deny_commands: Vec::new(),
            agent_id: agent_id.to_string(),
            env,
            timeout_default,
            timeout_max,
            output_cap,
            description: String::new(),
            isolation: Isolation::Sandboxed(Box::default()),
            network: NetworkMode::Off,
        };
        tool.description = tool.describe();
        tool
    }

    /// Runs commands in the sandbox configured by `sandbox`.
    pub fn with_sandbox(mut self, sandbox: ShellSandbox) -> ShellTool {
        self.isolation = Isolation::Sandboxed(Box::new(sandbox));
        self.description = self.describe();
        self
    }

    /// The explicit opt-in to run commands WITHOUT the OS sandbox, with
    /// pincer's own access to the machine. The description and every result
    /// say so.
    pub fn unsandboxed(mut self) -> ShellTool {
        self.isolation = Isolation::Unsandboxed;
        self.description = self.describe();
        self
    }

    /// Whether a call may ask for the network (`network: true`, then high
    /// risk): [`NetworkMode::Off`] by default. It only matters sandboxed.
    pub fn with_network(mut self, network: NetworkMode) -> ShellTool {
        self.network = network;
        self.description = self.describe();
        self
    }

    /// True when commands run in the OS sandbox.
    pub fn is_sandboxed(&self) -> bool {
        matches!(self.isolation, Isolation::Sandboxed(_))
    }

    fn describe(&self) -> String {
        let isolation = match &self.isolation {
            Isolation::Sandboxed(_) => format!(
                "It runs in an OS sandbox: only the workspace is writable; system directories are \
                 read-only; /tmp and HOME are private and empty at every call; {}; \
                 pincer's own state and other processes are out of reach; processes the command \
                 leaves running are killed when it exits. The environment is PATH, LANG, LC_ALL, \
                 TERM=dumb, HOME=<private>, PINCER_AGENT.",
                match self.network {
                    NetworkMode::Off => "there is no network",
                    NetworkMode::Ask =>
                        "there is no network unless the call sets `network: true` (such a call \
                         always needs approval unless autonomy is `full`)",
                }
            ),
            Isolation::Unsandboxed => "WARNING: it runs WITHOUT an OS sandbox (configured so), \
                 with the same access as pincer itself. The environment is reduced to PATH, LANG, \
                 LC_ALL, TERM=dumb, HOME=<workspace>, PINCER_AGENT."
                .to_string(),
        };
        format!(
            "Run a command in the workspace directory. Give exactly one of `argv` (a list: the program \
             and its arguments, run directly with no shell) or `command` (a string run with {} -c, a \
             {} shell, for pipes and redirections). {isolation} Read-only commands (ls, cat, grep, \
             git log...) run without approval; anything else needs approval unless autonomy is \
             `full`. Stdin is empty. `timeout_secs` defaults to {} (at most {}); on timeout \
             everything the command started is killed. Output (stdout and stderr together) is \
             capped at {} bytes. A non-zero exit status is reported, not an error.",
            self.shell.path.display(),
            self.shell.dialect,
            self.timeout_default.as_secs(),
            self.timeout_max.as_secs(),
            self.output_cap
        )
    }

    /// True when a call may ask for the network: sandboxed (unsandboxed,
    /// every command has pincer's network anyway) with [`NetworkMode::Ask`].
    fn network_askable(&self) -> bool {
        self.network == NetworkMode::Ask && self.is_sandboxed()
    }

    async fn run(
        &self,
        ws: &Workspace,
        call: &Call<'_>,
        permit: &Permit<'_>,
    ) -> Result<String, ToolError> {
        let (program, args, timeout) = (call.program, &call.args[..], call.timeout);
        let fatal = |what: &str, e: std::io::Error| ToolError::Fatal(format!("shell: {what}: {e}"));
        let (reader, writer) = std::io::pipe().map_err(|e| fatal("cannot create a pipe", e))?;
        let writer2 = writer
            .try_clone()
            .map_err(|e| fatal("cannot duplicate a pipe", e))?;
        // Sandboxed, the child is the sandbox's helper; `pending` owns the
        // run (its control socket and cgroups) until it is finished.
        let mut pending = None;
        let mut child = match &self.isolation {
            Isolation::Sandboxed(sb) => {
                let spec = sb.spec(ws, program, args, &self.agent_id, &self.env, call.network)?;
                let prepared = sb.prepare(spec).await?;
                let mut cmd = prepared.command;
                cmd.stdout(writer).stderr(writer2).process_group(0);
                let child = Watched::spawn(&mut cmd)
                    .map_err(|e| fatal("cannot start the sandbox helper", e))?;
                pending = Some(prepared.pending);
                child
            }
            Isolation::Unsandboxed => {
                let mut cmd = std::process::Command::new(program);
                cmd.args(args)
                    .env_clear()
                    .env("PATH", &self.env.path)
                    .env("TERM", "dumb")
                    .env("HOME", ws.root())
                    .env("PINCER_AGENT", &self.agent_id)
                    .current_dir(ws.root())
                    .stdin(Stdio::null())
                    .stdout(writer)
                    .stderr(writer2)
                    .process_group(0);
                if let Some(lang) = &self.env.lang {
                    cmd.env("LANG", lang);
                }
                if let Some(lc_all) = &self.env.lc_all {
                    cmd.env("LC_ALL", lc_all);
                }
                Watched::spawn(&mut cmd)
                    .map_err(|e| respond(format!("shell: could not start `{program}`: {e}")))?
            } // `cmd` drops here with its copies of the pipe's write end, so
              // the read side sees EOF once the command's processes are gone.
        };
        let mut rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
            .map_err(|e| fatal("cannot read the command's output", e))?;

        let mut out = CappedOutput::new(self.output_cap);
        let mut buf = vec![0u8; 16 * 1024];
        let mut status: Option<ExitStatus> = None;
        let mut eof = false;
        let mut timed_out = false;
        let mut leftovers_killed = false;
        let mut pipe_held = false;
        let mut read_error = None;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        while status.is_none() || !eof {
            tokio::select! {
                r = rx.read(&mut buf), if !eof => match r {
                    Ok(0) => eof = true,
                    Ok(n) => out.push(&buf[..n]),
                    Err(e) => {
                        read_error = Some(e);
                        eof = true;
                    }
                },
                s = child.wait(), if status.is_none() => {
                    status = Some(s.map_err(|e| fatal("waiting for the command failed", e))?);
                    // The leader is gone; whatever it left in its group would
                    // hold the pipe open and keep running unwatched.
                    leftovers_killed = child.kill_group();
                }
                () = &mut deadline => {
                    if status.is_none() {
                        timed_out = true;
                        child.kill_group();
                        if let Some(p) = &pending {
                            p.kill();
                        }
                        status = child.wait().await.ok();
                    } else {
                        pipe_held = true;
                    }
                    break;
                }
            }
        }
        if timed_out && !eof {
            // Collect what the killed group wrote before it died.
            let grace = tokio::time::sleep(DRAIN_GRACE);
            tokio::pin!(grace);
            loop {
                tokio::select! {
                    r = rx.read(&mut buf) => match r {
                        Ok(0) | Err(_) => break,
                        Ok(n) => out.push(&buf[..n]),
                    },
                    () = &mut grace => {
                        pipe_held = true;
                        break;
                    }
                }
            }
        }

        let finished = match (pending, status) {
            (Some(p), Some(st)) => Some(shell_sandbox::finish(p, st, timed_out).await?),
            (Some(_), None) => {
                return Err(ToolError::Fatal(
                    "shell: the sandbox helper's exit status was lost".into(),
                ));
            }
            (None, _) => None,
        };
        let mut text = if timed_out {
            match &finished {
                Some(_) => format!(
                    "timed out after {}s: the whole sandbox (every process the command started) was killed",
                    timeout.as_secs()
                ),
                None => format!(
                    "timed out after {}s: the command's whole process group was killed",
                    timeout.as_secs()
                ),
            }
        } else {
            match (&finished, status) {
                (Some(f), _) => f.exit.to_string(),
                (None, Some(s)) => describe_status(s),
                (None, None) => "exit status unknown".to_string(),
            }
        };
        let mut notes = Vec::new();
        if call.network {
            notes.push(
                "note: the network was on for this command (the call asked for it)".to_string(),
            );
        }
        match &finished {
            Some(f) => notes.extend(f.notes()),
            None => notes.push(
                "note: this command ran WITHOUT the OS sandbox (the shell tool was configured unsandboxed)"
                    .to_string(),
            ),
        }
        for note in notes {
            text.push('\n');
            text.push_str(&note);
            permit.note(note);
        }
        if finished.is_none() && leftovers_killed && !timed_out {
            text.push_str(
                "\nnote: the command left processes running in its process group; they were killed when it exited",
            );
        }
        if pipe_held {
            text.push_str(
                "\nnote: a process that left the command's process group still holds its output open; stopped reading",
            );
        }
        if let Some(e) = read_error {
            text.push_str(&format!("\nnote: reading the output failed: {e}"));
        }
        if out.total == 0 {
            text.push_str("\n(no output)");
        } else {
            text.push_str(&format!(
                "\noutput (stdout and stderr together, {} bytes):\n",
                out.total
            ));
            text.push_str(&out.render());
        }
        Ok(text)
    }
}

/// One call, as the tool runs it.
struct Call<'a> {
    program: &'a str,
    args: Vec<&'a str>,
    timeout: Duration,
    /// The network is on for this command.
    network: bool,
}

fn describe_status(s: ExitStatus) -> String {
    if let Some(code) = s.code() {
        return format!("exit status: {code}");
    }
    if let Some(sig) = s.signal() {
        let name = match sig {
            1 => " (SIGHUP)",
            2 => " (SIGINT)",
            6 => " (SIGABRT)",
            9 => " (SIGKILL)",
            11 => " (SIGSEGV)",
            13 => " (SIGPIPE)",
            15 => " (SIGTERM)",
            _ => "",
        };
        return format!("killed by signal {sig}{name}");
    }
    format!("{s}")
}

/// Output capped at `cap` bytes: the first half and the last half are kept,
/// the middle is counted and dropped.
#[derive(Debug)]
pub(crate) struct CappedOutput {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    pub(crate) total: u64,
}

impl CappedOutput {
    pub(crate) fn new(cap: usize) -> CappedOutput {
        let head_cap = cap / 2;
        CappedOutput {
            cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let take = (self.head_cap - self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        let rest = &bytes[take..];
        if rest.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.tail_cap..]);
        } else {
            self.tail.extend(rest);
            let excess = self.tail.len().saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
        }
    }

    pub(crate) fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let kept = (self.head.len() + tail.len()) as u64;
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        format!(
            "{}\n[... output truncated: {} bytes in total, over the {}-byte cap; showing the first {} and the last {} bytes ...]\n{}",
            String::from_utf8_lossy(&self.head),
            self.total,
            self.cap,
            self.head.len(),
            tail.len(),
            String::from_utf8_lossy(&tail)
        )
    }
}

impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        let network = (
            "network",
            json!({
                "type": "boolean",
                "description": "true: run with the network on (default false). Such a call needs approval unless autonomy is `full`."
            }),
        );
        object_schema(
            &[
                (
                    "argv",
                    json!({
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "description": "Program and arguments, run directly without a shell. Give this or `command`."
                    }),
                ),
                (
                    "command",
                    json!({
                        "type": "string",
                        "description": format!("A command line run with {} -c. Give this or `argv`.", self.shell.path.display())
                    }),
                ),
                (
                    "timeout_secs",
                    json!({
                        "type": "integer",
                        "minimum": 1,
                        "maximum": self.timeout_max.as_secs(),
                        "description": format!("Seconds before the command is killed (default {})", self.timeout_default.as_secs())
                    }),
                ),
            ]
            .into_iter()
            .chain(self.network_askable().then_some(network))
            .collect::<Vec<_>>(),
            &[],
        )
    }

    /// The gate's classifier decides (PO2): the `command` string, or `argv`
    /// quoted back into one, is parsed part by part; malformed arguments are
    /// high risk.
    fn assess(&self, args: &Value) -> Assessment {
        let Some(command) = command_text(args) else {
            return Assessment::new(
                Risk::High,
                "the arguments are malformed, so the call is classified at the highest risk",
            );
        };
        let c = pincer_shell::classify(&command, self.shell.dialect, &self.deny_commands);
        // The file tools refuse pincer's own state by identity; a shell
        // command can only be checked by its text, so this catches a
        // literal path only (`~/.pincer/...`, a relative path or a variable
        // is not seen). The OS sandbox is what will close it for good.
        let denied = c.denied.or_else(|| {
            self.protected.iter().find(|p| command.contains(p.as_str())).map(|p| {
                format!("the command names `{p}`, which is pincer's own state (sessions, audit trail, approvals, memory, keys, config)")
            })
        });
        let network = match args.get("network") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => {
                return Assessment::new(Risk::High, "the arguments are malformed")
                    .with_invalid("argument `network` must be true or false");
            }
        };
        if network && !self.network_askable() {
            return Assessment::new(Risk::High, NETWORK_REFUSED).with_invalid(NETWORK_REFUSED);
        }
        let mut a = if network {
            Assessment::new(
                Risk::High,
                format!(
                    "{}; and the call asks for the network, which is high risk",
                    c.why
                ),
            )
        } else {
            Assessment::new(policy_risk(c.risk), c.why)
        };
        a.denied = denied;
        let mut subject = serde_json::Map::new();
        if let Some(what) = &c.hardware {
            a = a.on_hardware();
            subject.insert("op".into(), json!("shell"));
            subject.insert("bus".into(), json!("shell"));
            subject.insert("touches".into(), json!(what));
        }
        if network {
            subject.insert("network".into(), json!(true));
        }
        if !subject.is_empty() {
            a = a.with_subject(Value::Object(subject));
        }
        a.detail = Some(json!({
            "command": command,
            "shell": c.shell,
            "parts": c.parts,
            "hardware": c.hardware,
        }));
        a
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args = permit.args();
            let a = Args::parse("shell", args, PARAMS)?;
            let argv = a.opt_str_array("argv")?;
            let command = a.opt_str("command")?;
            let shell_path = self.shell.path.to_string_lossy();
            let (program, rest): (&str, Vec<&str>) = match (argv, command) {
                (Some(_), Some(_)) => {
                    return Err(
                        a.error("give either argument `argv` or argument `command`, not both")
                    );
                }
                (None, None) => {
                    return Err(a.error(
                        "missing required argument: give `argv` (program and arguments) or `command` (a string run with the shell)",
                    ));
                }
                (Some(v), None) => match v.split_first() {
                    Some((p, rest)) if !p.is_empty() => (*p, rest.to_vec()),
                    _ => return Err(a.error("argument `argv` must start with a program name")),
                },
                (None, Some(c)) => {
                    if c.trim().is_empty() {
                        return Err(a.error("argument `command` must not be empty"));
                    }
                    let mut rest = self.shell.flags().to_vec();
                    rest.push(c);
                    (&*shell_path, rest)
                }
            };
            if program.contains('\0') || rest.iter().any(|s| s.contains('\0')) {
                let which = if a.has("argv") { "argv" } else { "command" };
                return Err(a.error(format!("argument `{which}` contains a NUL byte")));
            }
            let timeout = match a.opt_u64("timeout_secs")? {
                None => self.timeout_default,
                Some(0) => return Err(a.error("argument `timeout_secs` must be at least 1")),
                Some(s) if Duration::from_secs(s) > self.timeout_max => {
                    return Err(a.error(format!(
                        "argument `timeout_secs` must be at most {}",
                        self.timeout_max.as_secs()
                    )));
                }
                Some(s) => Duration::from_secs(s),
            };
            let network = match a.opt_bool("network")? {
                Some(true) if !self.network_askable() => {
                    return Err(a.error(NETWORK_REFUSED));
                }
                n => n.unwrap_or(false),
            };
            let call = Call {
                program,
                args: rest,
                timeout,
                network,
            };
            self.run(permit.open(&self.ws).as_ref(), &call, &permit)
                .await
        })
    }
}

/// Why `network: true` is refused when the configuration does not allow it.
const NETWORK_REFUSED: &str = "argument `network`: commands get no network here ([shell] network = \"off\" in pincer's config); do without it";

/// The classifier's class as the gate's (the same three, in the same order).
fn policy_risk(r: pincer_shell::Risk) -> Risk {
    match r {
        pincer_shell::Risk::Low => Risk::Low,
        pincer_shell::Risk::Medium => Risk::Medium,
        pincer_shell::Risk::High => Risk::High,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut o = CappedOutput::new(10);
        o.push(b"abc");
        o.push(b"def");
        assert_eq!(o.render(), "abcdef");
        assert_eq!(o.total, 6);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_states_the_size() {
        let mut o = CappedOutput::new(10);
        for chunk in [&b"0123"[..], b"456789", b"abcdefghij", b"KLMNO"] {
            o.push(chunk);
        }
        let r = o.render();
        assert!(r.starts_with("01234\n"), "{r}");
        assert!(r.ends_with("\nKLMNO"), "{r}");
        assert!(r.contains("25 bytes in total"), "{r}");
        assert!(r.contains("over the 10-byte cap"), "{r}");
    }

    #[test]
    fn env_snapshot_picks_only_the_allowlist() {
        let env = ShellEnv::from_vars([("PATH", "/p"), ("LANG", "de_DE.UTF-8"), ("SECRET", "x")]);
        assert_eq!(env.path, "/p");
        assert_eq!(env.lang.as_deref(), Some(OsStr::new("de_DE.UTF-8")));
        assert_eq!(env.lc_all, None);
        let empty = ShellEnv::from_vars(Vec::<(String, String)>::new());
        assert_eq!(empty.path, DEFAULT_PATH);
        let relative = ShellEnv::from_vars([("PATH", ".:/usr/bin::node_modules/.bin:/bin")]);
        assert_eq!(relative.path, "/usr/bin:/bin");
        let only_relative = ShellEnv::from_vars([("PATH", ".:bin")]);
        assert_eq!(only_relative.path, DEFAULT_PATH);
    }

    #[test]
    fn status_descriptions() {
        assert_eq!(
            describe_status(ExitStatus::from_raw(3 << 8)),
            "exit status: 3"
        );
        assert_eq!(
            describe_status(ExitStatus::from_raw(9)),
            "killed by signal 9 (SIGKILL)"
        );
    }
}
