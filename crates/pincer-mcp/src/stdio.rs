//! A stdio server: its process inside the OS sandbox (`pincer-sandbox`,
//! the same helper and layers as the shell tool, with the command's own
//! stdin pipe), what it says on stderr (the last few KiB, for error
//! messages), how it ended, and the JSON-RPC line transport over its
//! stdin and stdout.
//!
//! The transport is strict: one JSON-RPC message per line, at most
//! [`MAX_LINE`] bytes. A line that is not a JSON-RPC message (a server
//! printing logs on stdout, a crash dump, binary noise) closes the
//! connection at once, and every call waiting on it fails with the reason
//! ([`Diag`]), instead of waiting for a timeout.

use crate::McpError;
use crate::config::{ServerConfig, StdioConfig, WorkspaceAccess};
use pincer_core::text::{cut, terminal_safe};
use pincer_sandbox::{Finished, Pending, Sandbox, Spec};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The longest line (one message) read from a server: a bigger one closes
/// the connection.
pub const MAX_LINE: usize = 8 << 20;
/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// What the runtime gives every stdio server: the sandbox helper, who acts,
/// the agent's workspace, pincer's state to hide, the environment it may
/// pass on, and where scratch directories go.
#[derive(Debug, Clone)]
pub struct Launch {
    pub sandbox: Sandbox,
    /// `PINCER_AGENT` inside the sandbox.
    pub agent: String,
    /// The agent's workspace (for `workspace = "read" | "write"`).
    pub workspace: PathBuf,
    /// Host paths hidden from the server: pincer's own state.
    pub hide: Vec<PathBuf>,
    /// Given to every server: `PATH`, `LANG`, `LC_ALL`.
    pub base_env: BTreeMap<String, String>,
    /// The values of the variables servers name in `env` and
    /// `bearer_token_env`, as pincer's environment had them at start (an
    /// unset one is absent).
    pub vars: BTreeMap<String, String>,
    /// Where a server without the workspace gets its scratch directory.
    pub scratch_root: PathBuf,
}

impl Launch {
    /// The sandbox spec of `server`, and the scratch directory it uses (to
    /// keep until the server stops).
    pub fn spec(
        &self,
        server: &ServerConfig,
        cfg: &StdioConfig,
    ) -> Result<(Spec, Option<tempfile::TempDir>), McpError> {
        let fail = |message: String| McpError::Start {
            server: server.name.clone(),
            message,
        };
        let (root, scratch) = match cfg.workspace {
            WorkspaceAccess::Write => (self.workspace.clone(), None),
            WorkspaceAccess::None | WorkspaceAccess::Read => {
                let dir = tempfile::Builder::new()
                    .prefix(&format!("pincer-mcp-{}-", server.name))
                    .tempdir_in(&self.scratch_root)
                    .map_err(|e| {
                        fail(format!(
                            "cannot make its scratch directory in {}: {e}",
                            self.scratch_root.display()
                        ))
                    })?;
                let path = dir
                    .path()
                    .canonicalize()
                    .map_err(|e| fail(format!("cannot resolve its scratch directory: {e}")))?;
                (path, Some(dir))
            }
        };
        let mut spec = Spec::new(cfg.command.clone(), root, &self.agent);
        spec.read_only.extend(cfg.read_only.iter().cloned());
        if cfg.workspace == WorkspaceAccess::Read {
            spec.read_only.push(self.workspace.clone());
        }
        spec.hide = self.hide.clone();
        spec.network = cfg.network;
        spec.limits = cfg.limits.clone();
        spec.degrade = cfg.degrade.clone();
        spec.pipe_stdin = true;
        spec.env = self.base_env.clone();
        for name in &cfg.env {
            let Some(v) = self.vars.get(name) else {
                return Err(fail(format!(
                    "its env allowlist names `{name}`, which is not set in pincer's environment"
                )));
            };
            spec.env.insert(name.clone(), v.clone());
        }
        spec.validate().map_err(|e| fail(e.to_string()))?;
        Ok((spec, scratch))
    }
}

/// What is known about a connection that went wrong: why the line
/// transport gave up, how the process ended, its last words on stderr.
#[derive(Debug, Default)]
pub struct Diag {
    state: Mutex<DiagState>,
    ended: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct DiagState {
    protocol: Option<String>,
    exit: Option<String>,
    stderr: VecDeque<u8>,
}

impl Diag {
    fn lock(&self) -> std::sync::MutexGuard<'_, DiagState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn protocol_error(&self, why: String) {
        let mut s = self.lock();
        if s.protocol.is_none() {
            s.protocol = Some(why);
        }
    }

    fn ended_with(&self, how: String) {
        self.lock().exit = Some(how);
        self.ended.notify_waiters();
    }

    fn stderr(&self, bytes: &[u8]) {
        let mut s = self.lock();
        s.stderr.extend(bytes);
        let over = s.stderr.len().saturating_sub(STDERR_TAIL);
        s.stderr.drain(..over);
    }

    /// How the process ended, once it has.
    pub fn exit(&self) -> Option<String> {
        self.lock().exit.clone()
    }

    /// Waits up to `limit` for the process to end (after the transport
    /// closed, the exit usually follows within milliseconds).
    pub async fn wait_exit(&self, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.ended.notified();
            if let Some(e) = self.exit() {
                return Some(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, notified).await.is_err() {
                return self.exit();
            }
        }
    }

    /// Why the connection is gone, in words (terminal-safe, bounded): the
    /// protocol violation, the exit, the last stderr lines.
    pub fn describe(&self) -> String {
        let s = self.lock();
        let mut parts = Vec::new();
        if let Some(p) = &s.protocol {
            parts.push(p.clone());
        }
        if let Some(e) = &s.exit {
            parts.push(e.clone());
        }
        let tail = String::from_utf8_lossy(&s.stderr.iter().copied().collect::<Vec<u8>>())
            .trim()
            .to_string();
        if !tail.is_empty() {
            let lines: Vec<&str> = tail.lines().collect();
            let last = lines[lines.len().saturating_sub(5)..].join(" | ");
            parts.push(format!(
                "its last words on stderr: {}",
                terminal_safe(&cut(&last, 600))
            ));
        }
        if parts.is_empty() {
            "the connection closed".to_string()
        } else {
            parts.join("; ")
        }
    }
}

/// A running stdio server's process.
#[derive(Debug)]
pub struct Child {
    /// Degraded sandbox layers and the network, for every call's audit
    /// entry.
    pub notes: Vec<String>,
    pub diag: Arc<Diag>,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    _scratch: Option<tempfile::TempDir>,
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(k) = self.kill.take() {
            let _ = k.send(());
        }
    }
}

/// Starts `server` in the sandbox: the child, and the transport over its
/// stdin and stdout.
pub async fn spawn(
    launch: &Launch,
    server: &ServerConfig,
    cfg: &StdioConfig,
) -> Result<(Child, LineTransport), McpError> {
    let fail = |message: String| McpError::Start {
        server: server.name.clone(),
        message,
    };
    let (spec, scratch) = launch.spec(server, cfg)?;
    let sandbox: Sandbox = launch.sandbox.clone();
    let network = spec.network;
    let prepared = tokio::task::spawn_blocking(move || sandbox.prepare(&spec))
        .await
        .map_err(|e| fail(format!("sandbox set-up panicked: {e}")))?
        .map_err(|e| fail(e.to_string()))?;
    let pincer_sandbox::Prepared {
        mut command,
        mut pending,
    } = prepared;
    let stdin = pending
        .take_stdin()
        .ok_or_else(|| fail("the sandbox gave no stdin pipe".into()))?;
    {
        use std::os::unix::process::CommandExt;
        command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            // Its own process group: a Ctrl-C at pincer's terminal is
            // pincer's to handle, not the server's.
            .process_group(0);
    }
    let mut child = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("could not start the sandbox helper: {e}")))?;
    let stdin = tokio::net::unix::pipe::Sender::from_owned_fd(std::os::fd::OwnedFd::from(stdin))
        .map_err(|e| fail(format!("stdin pipe: {e}")))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| fail("no stdout pipe".into()))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| fail("no stderr pipe".into()))?;
    let diag = Arc::new(Diag::default());
    tokio::spawn(read_stderr(stderr, diag.clone(), server.name.clone()));
    let (kill, killed) = tokio::sync::oneshot::channel();
    tokio::spawn(watch(child, pending, killed, diag.clone()));
    let mut notes = Vec::new();
    if network {
        notes.push(format!(
            "mcp server `{}` runs with the network on ([mcp.servers.{}] network = true)",
            server.name, server.name
        ));
    }
    for layer in &cfg.degrade {
        notes.push(format!(
            "mcp server `{}`: sandbox layer `{layer}` may be missing on this machine ([mcp.servers.{}] degrade)",
            server.name, server.name
        ));
    }
    let transport = LineTransport {
        read: BufReader::new(stdout),
        write: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
        diag: diag.clone(),
        line: Vec::new(),
        delivered: false,
    };
    Ok((
        Child {
            notes,
            diag,
            kill: Some(kill),
            _scratch: scratch,
        },
        transport,
    ))
}

/// Keeps the last [`STDERR_TAIL`] bytes of the server's stderr; each line
/// is also a debug event (`-vv`).
async fn read_stderr(stderr: tokio::process::ChildStderr, diag: Arc<Diag>, name: String) {
    let mut r = BufReader::new(stderr);
    let mut buf = vec![0u8; 4096];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                diag.stderr(&buf[..n]);
                tracing::debug!(
                    server = %name,
                    stderr = %terminal_safe(&String::from_utf8_lossy(&buf[..n])),
                    "mcp server stderr"
                );
            }
        }
    }
}

/// Waits for the helper to exit (or kills it when the [`Child`] is
/// dropped), then reads the sandbox's report and removes its cgroups.
async fn watch(
    mut child: tokio::process::Child,
    pending: Pending,
    killed: tokio::sync::oneshot::Receiver<()>,
    diag: Arc<Diag>,
) {
    let (status, was_killed) = tokio::select! {
        s = child.wait() => (s, false),
        _ = killed => {
            pending.kill();
            let _ = child.start_kill();
            (child.wait().await, true)
        }
    };
    let how = match status {
        Ok(status) => {
            match tokio::task::spawn_blocking(move || pending.finish(status, was_killed)).await {
                Ok(Ok(f)) => describe_exit(&f),
                Ok(Err(e)) => format!("it did not run: {e}"),
                Err(e) => format!("the sandbox clean-up panicked: {e}"),
            }
        }
        Err(e) => {
            drop(pending);
            format!("waiting for it failed: {e}")
        }
    };
    diag.ended_with(how);
}

fn describe_exit(f: &Finished) -> String {
    let mut s = if f.killed {
        "it was stopped by pincer".to_string()
    } else {
        format!("it exited ({})", f.exit)
    };
    for n in f.notes() {
        s.push_str("; ");
        s.push_str(n.trim_start_matches("note: "));
    }
    s
}

/// JSON-RPC over the server's stdin and stdout, one message per line.
pub struct LineTransport {
    read: BufReader<tokio::process::ChildStdout>,
    write: Arc<tokio::sync::Mutex<Option<tokio::net::unix::pipe::Sender>>>,
    diag: Arc<Diag>,
    /// The line being read: kept across a cancelled `receive` (rmcp polls
    /// it in a `select!`), so no byte of a message is lost.
    line: Vec<u8>,
    /// `line` holds a whole line already handed on.
    delivered: bool,
}

impl std::fmt::Debug for LineTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineTransport")
    }
}

/// What the line reader got.
enum Line {
    Ok,
    Eof,
    TooLong,
    Failed(std::io::Error),
}

impl LineTransport {
    /// One `\n`-terminated line into `self.line` (without the newline), at
    /// most [`MAX_LINE`] bytes. Cancel-safe: a partial line stays in
    /// `self.line` for the next call.
    async fn read_line(&mut self) -> Line {
        if self.delivered {
            self.line.clear();
            self.delivered = false;
        }
        loop {
            let buf = match self.read.fill_buf().await {
                Ok(b) => b,
                Err(e) => return Line::Failed(e),
            };
            if buf.is_empty() {
                return Line::Eof;
            }
            let (take, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if self.line.len() + take > MAX_LINE + 1 {
                return Line::TooLong;
            }
            self.line.extend_from_slice(&buf[..take]);
            self.read.consume(take);
            if done {
                self.line.pop();
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                self.delivered = true;
                return Line::Ok;
            }
        }
    }
}

/// The transport failed to write to the server.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WriteError(String);

impl rmcp::transport::Transport<RoleClient> for LineTransport {
    type Error = WriteError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut bytes =
                serde_json::to_vec(&item).map_err(|e| WriteError(format!("encoding: {e}")))?;
            bytes.push(b'\n');
            let mut guard = write.lock().await;
            let Some(w) = guard.as_mut() else {
                return Err(WriteError("the connection is closed".into()));
            };
            w.write_all(&bytes)
                .await
                .map_err(|e| WriteError(format!("writing to the server's stdin: {e}")))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.read_line().await {
                Line::Ok => {}
                Line::Eof => return None,
                Line::TooLong => {
                    self.diag.protocol_error(format!(
                        "it sent a message longer than {} MiB (closed)",
                        MAX_LINE >> 20
                    ));
                    return None;
                }
                Line::Failed(e) => {
                    self.diag
                        .protocol_error(format!("reading its stdout failed: {e}"));
                    return None;
                }
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(&self.line) {
                Ok(m) => return Some(m),
                Err(e) => {
                    let text = String::from_utf8_lossy(&self.line);
                    self.diag.protocol_error(format!(
                        "it broke the protocol: it sent `{}` on stdout, which is not a JSON-RPC message ({e}); the connection was closed",
                        terminal_safe(&cut(&text, 120))
                    ));
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin is the server's end of input.
        self.write.lock().await.take();
        Ok(())
    }
}
