//! Hooks on tool calls (HK1).
//!
//! Three kinds, each with a time budget ([`HookKind::budget`]):
//!
//! - **Observer** (500 ms): told about a call after it finished
//!   ([`CallReport`]). What it says is ignored; it can never block.
//! - **Interceptor** (5 s): asked before the gate decides; may allow, block
//!   with a reason, or rewrite the arguments ([`InterceptVerdict`]).
//! - **Approval** (60 s): asked for a yes or no, like a person; an
//!   [`Approver`].
//!
//! Each is either in-process (the [`Interceptor`] / [`Observer`] /
//! [`Approver`] traits) or an external command ([`ExternalHook`]), which
//! implements all three. A hook only reports; degrading to the safe side is
//! the gate's job (interceptor failure → block, approval failure → deny,
//! observer failure → ignored), except that [`ExternalHook`] as an
//! [`Approver`] already denies on any failure, saying which.
//!
//! # External hooks
//!
//! The protocol is specified in `docs/hooks.md`; in short: `argv` is run
//! directly (no shell), stdin gets one JSON object and then EOF, stdout must
//! be one JSON object (observers: ignored). The process:
//!
//! - runs with cwd `/` (a hook never writes into the agent's workspace by
//!   accident, principle 4) and so `argv[0]` is absolute or a bare
//!   name looked up in `PATH`;
//! - has its environment cleared except `PATH`, `HOME`, `LANG` (values from
//!   [`HookEnv`], which the binary builds once from its own environment;
//!   this crate never reads environment variables) plus
//!   `PINCER_HOOK=<name>`;
//! - is the leader of its own process group; when the timeout fires, the
//!   stdout cap is exceeded, or the call is dropped, the whole group gets
//!   `SIGKILL`, so grandchildren die too. Anything it leaves running in its
//!   group after it exits is killed as well;
//! - has its stdout capped at 64 KiB (more is a [`HookFailure::BadReply`])
//!   and the first 2 KiB of its stderr kept for [`HookFailure::Crashed`].
//!
//! A hook that exits without reading its stdin (EPIPE) is fine.

#[cfg(test)]
mod tests;

use crate::approvals::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::glob::glob_match;
use crate::policy::Risk;
use crate::provider::BoxFuture;
use crate::text::cut;
use rustix::process::{Pid, Signal};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Version of the JSON protocol spoken on stdin (`"version"`).
pub const PROTOCOL_VERSION: u32 = 1;
/// Largest reply read from a hook's stdout.
pub const STDOUT_CAP: usize = 64 * 1024;
/// How much of a hook's stderr is kept for the error.
pub const STDERR_KEEP: usize = 2 * 1024;
/// `PATH` when the binary passes none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const MAX_NAME_LEN: usize = 64;

/// The three kinds of hook (HK1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookKind {
    Observer,
    Interceptor,
    Approval,
}

impl HookKind {
    /// The longest a hook of this kind may take; a configured timeout may
    /// only be shorter.
    pub fn budget(self) -> Duration {
        match self {
            HookKind::Observer => Duration::from_millis(500),
            HookKind::Interceptor => Duration::from_secs(5),
            HookKind::Approval => Duration::from_secs(60),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::Observer => "observer",
            HookKind::Interceptor => "interceptor",
            HookKind::Approval => "approval",
        }
    }
}

/// One configured external hook (`[[hooks]]` in config.toml). It is
/// validated in one place, [`HookSpec::validate`], whether it comes from the
/// config file or from code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookSpec {
    pub name: String,
    pub kind: HookKind,
    /// argv, run directly: no shell.
    pub command: Vec<String>,
    /// Tool-name globs ([`glob_match`]); empty means every tool.
    pub tools: Vec<String>,
    /// At most [`HookKind::budget`]; longer is refused by
    /// [`HookSpec::validate`] and clamped at run time. Recorded (in the
    /// policy fingerprint of `config.load` entries) as `timeout_ms`.
    #[serde(rename = "timeout_ms", serialize_with = "as_millis")]
    pub timeout: Duration,
}

/// A hook spec that cannot be used; `field` names what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hook `{hook}`: field `{field}`: {reason}")]
pub struct HookSpecError {
    pub hook: String,
    pub field: String,
    pub reason: String,
}

impl HookSpec {
    /// A spec with the kind's full budget as its timeout, for every tool.
    pub fn new(name: impl Into<String>, kind: HookKind, command: Vec<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            command,
            tools: Vec::new(),
            timeout: kind.budget(),
        }
    }

    /// Whether this hook applies to `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|p| glob_match(p, tool))
    }

    /// Checks what config parsing cannot: a usable name, argv and timeout.
    pub fn validate(&self) -> Result<(), HookSpecError> {
        let err = |field: &str, reason: String| {
            Err(HookSpecError {
                hook: self.name.clone(),
                field: field.to_string(),
                reason,
            })
        };
        if self.name.is_empty()
            || self.name.len() > MAX_NAME_LEN
            || !self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return err(
                "name",
                format!(
                    "is `{}`; use 1 to {MAX_NAME_LEN} characters of a-z, A-Z, 0-9, `-`, `_`, `.`",
                    self.name.escape_debug()
                ),
            );
        }
        let Some(program) = self.command.first() else {
            return err("command", "is empty; give an argv list".into());
        };
        if program.is_empty() {
            return err("command[0]", "is empty".into());
        }
        if program.contains('/') && !program.starts_with('/') {
            return err(
                "command[0]",
                format!(
                    "`{program}` is a relative path; hooks run in `/`, so give an absolute path or a bare name found in PATH"
                ),
            );
        }
        if let Some(i) = self.command.iter().position(|a| a.contains('\0')) {
            return err(&format!("command[{i}]"), "contains a NUL byte".into());
        }
        if let Some((i, bad)) = self
            .tools
            .iter()
            .enumerate()
            .find(|(_, p)| crate::glob::check_pattern(p).is_err())
        {
            let why = crate::glob::check_pattern(bad).err().unwrap_or_default();
            return err(&format!("tools[{i}]"), why);
        }
        if self.timeout.is_zero() {
            return err("timeout", "must be more than zero".into());
        }
        if self.timeout > self.kind.budget() {
            return err(
                "timeout",
                format!(
                    "{} is over the {} budget of {}",
                    humantime::format_duration(self.timeout),
                    self.kind.as_str(),
                    humantime::format_duration(self.kind.budget())
                ),
            );
        }
        Ok(())
    }
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A tool call as hooks see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookCall {
    pub session: String,
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub risk: Risk,
    pub why: String,
}

impl HookCall {
    fn fields(&self) -> Map<String, Value> {
        let v = json!({
            "session": self.session,
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "risk": self.risk,
            "why": self.why,
        });
        match v {
            Value::Object(m) => m,
            // `json!({..})` is always an object.
            _ => Map::new(),
        }
    }
}

impl From<&ApprovalRequest> for HookCall {
    fn from(req: &ApprovalRequest) -> Self {
        Self {
            session: req.session.clone(),
            call_id: req.call_id.clone(),
            tool: req.tool.clone(),
            arguments: req.arguments.clone(),
            risk: req.risk,
            why: req.why.clone(),
        }
    }
}

/// What an interceptor decided.
#[derive(Debug, Clone, PartialEq)]
pub enum InterceptVerdict {
    Allow,
    Block {
        reason: String,
    },
    /// Run the call with these arguments (always a JSON object) instead.
    Rewrite {
        arguments: Value,
    },
}

/// What observers are told once a call finished.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallReport {
    pub call: HookCall,
    /// How the gate decided, e.g. `allowed`, `approved by ana`, `blocked`.
    pub decision: String,
    /// How the call ended, e.g. `ok`, `error`, `not run`.
    pub status: String,
    /// The start of the result.
    pub preview: String,
}

/// Why a hook gave no usable answer. The caller decides the safe side.
#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    #[error("could not start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "no reply within {}; its process group was killed",
        humantime::format_duration(*after)
    )]
    Timeout { after: Duration },
    #[error("{status}; stderr: {}", if stderr.is_empty() { "(empty)" } else { stderr })]
    Crashed { status: String, stderr: String },
    #[error("bad reply: {detail}")]
    BadReply { detail: String },
    #[error("talking to the hook failed: {detail}")]
    Io { detail: String },
}

fn bad(detail: impl Into<String>) -> HookFailure {
    HookFailure::BadReply {
        detail: detail.into(),
    }
}

/// An in-process interceptor. Implementations should answer well within
/// [`HookKind::Interceptor`]'s budget; the gate enforces it.
pub trait Interceptor: Send + Sync {
    fn name(&self) -> &str;
    fn matches(&self, tool: &str) -> bool;
    fn intercept<'a>(
        &'a self,
        call: &'a HookCall,
    ) -> BoxFuture<'a, Result<InterceptVerdict, HookFailure>>;
}

/// An in-process observer. Its result is only ever logged.
pub trait Observer: Send + Sync {
    fn name(&self) -> &str;
    fn matches(&self, tool: &str) -> bool;
    fn observe<'a>(&'a self, report: &'a CallReport) -> BoxFuture<'a, Result<(), HookFailure>>;
}

/// The variables passed through to external hooks. The binary builds it
/// once, at start ([`HookEnv::from_vars`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEnv {
    pub path: OsString,
    pub home: Option<OsString>,
    pub lang: Option<OsString>,
}

impl Default for HookEnv {
    fn default() -> Self {
        Self {
            path: DEFAULT_PATH.into(),
            home: None,
            lang: None,
        }
    }
}

impl HookEnv {
    /// Picks `PATH`, `HOME` and `LANG` out of `vars` (e.g. `std::env::vars_os()`
    /// in the binary); a missing `PATH` becomes [`DEFAULT_PATH`].
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Self {
        let mut env = Self::default();
        for (k, v) in vars {
            match k.to_str() {
                Some("PATH") => env.path = v,
                Some("HOME") => env.home = Some(v),
                Some("LANG") => env.lang = Some(v),
                _ => {}
            }
        }
        env
    }
}

/// A hook that is an external command; see the module doc and
/// `docs/hooks.md`. It can act as any kind: the trait called decides the
/// message sent and the budget (the spec's timeout, at most that budget).
#[derive(Debug, Clone)]
pub struct ExternalHook {
    spec: HookSpec,
    env: HookEnv,
}

impl ExternalHook {
    /// A hook run with [`HookEnv::default`]; see [`ExternalHook::with_env`].
    pub fn new(spec: HookSpec) -> Self {
        Self {
            spec,
            env: HookEnv::default(),
        }
    }

    pub fn with_env(mut self, env: HookEnv) -> Self {
        self.env = env;
        self
    }

    pub fn spec(&self) -> &HookSpec {
        &self.spec
    }

    async fn run(&self, kind: HookKind, input: &Value) -> Result<Vec<u8>, HookFailure> {
        let run = Run {
            argv: &self.spec.command,
            env: &self.env,
            name: Some(&self.spec.name),
            timeout: self.spec.timeout.min(kind.budget()),
            keep_stdout: kind != HookKind::Observer,
        };
        run.go(input).await
    }

    fn by(&self) -> String {
        format!("hook:{}", self.spec.name)
    }
}

fn message(kind: HookKind, mut fields: Map<String, Value>) -> Value {
    fields.insert("hook".into(), kind.as_str().into());
    fields.insert("version".into(), PROTOCOL_VERSION.into());
    Value::Object(fields)
}

impl Interceptor for ExternalHook {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn matches(&self, tool: &str) -> bool {
        self.spec.matches(tool)
    }

    fn intercept<'a>(
        &'a self,
        call: &'a HookCall,
    ) -> BoxFuture<'a, Result<InterceptVerdict, HookFailure>> {
        Box::pin(async move {
            let input = message(HookKind::Interceptor, call.fields());
            let out = self.run(HookKind::Interceptor, &input).await?;
            parse_intercept(&out)
        })
    }
}

impl Observer for ExternalHook {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn matches(&self, tool: &str) -> bool {
        self.spec.matches(tool)
    }

    fn observe<'a>(&'a self, report: &'a CallReport) -> BoxFuture<'a, Result<(), HookFailure>> {
        Box::pin(async move {
            let mut fields = Map::new();
            fields.insert("call".into(), Value::Object(report.call.fields()));
            fields.insert("decision".into(), report.decision.clone().into());
            fields.insert("status".into(), report.status.clone().into());
            fields.insert("preview".into(), report.preview.clone().into());
            self.run(HookKind::Observer, &message(HookKind::Observer, fields))
                .await
                .map(drop)
        })
    }
}

impl Approver for ExternalHook {
    /// Denies on any failure; an approval carries `req.call_hash`.
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            let mut fields = HookCall::from(req).fields();
            fields.insert("call_hash".into(), req.call_hash.clone().into());
            let input = message(HookKind::Approval, fields);
            let verdict = match self.run(HookKind::Approval, &input).await {
                Ok(out) => parse_approval(&out),
                Err(e) => Err(e),
            };
            match verdict {
                Ok(None) => ApprovalAnswer::Approved {
                    call_hash: req.call_hash.clone(),
                    by: self.by(),
                },
                Ok(Some(reason)) => ApprovalAnswer::Denied {
                    by: self.by(),
                    reason,
                },
                Err(e) => ApprovalAnswer::Denied {
                    by: self.by(),
                    reason: format!(
                        "approval hook `{}` failed, so the call is denied: {e}",
                        self.spec.name
                    ),
                },
            }
        })
    }
}

/// Runs `argv` as an external hook would be run (with [`HookEnv::default`]
/// and no `PINCER_HOOK`): `input` on stdin, one JSON object expected on
/// stdout within `timeout`. For `pincer hooks test`-style tools.
pub async fn run_command(
    argv: &[String],
    input: &Value,
    timeout: Duration,
) -> Result<Value, HookFailure> {
    let run = Run {
        argv,
        env: &HookEnv::default(),
        name: None,
        timeout,
        keep_stdout: true,
    };
    reply_object(&run.go(input).await?).map(Value::Object)
}

/// One run of an external command.
struct Run<'a> {
    argv: &'a [String],
    env: &'a HookEnv,
    name: Option<&'a str>,
    timeout: Duration,
    /// Observers' stdout is read (so they never block on a full pipe) and
    /// thrown away, without a cap.
    keep_stdout: bool,
}

impl Run<'_> {
    /// The hook's stdout, if it exited 0 within the timeout.
    async fn go(&self, input: &Value) -> Result<Vec<u8>, HookFailure> {
        let Some(program) = self.argv.first().filter(|p| !p.is_empty()) else {
            return Err(HookFailure::Spawn {
                program: String::new(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"),
            });
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&self.argv[1..])
            .env_clear()
            .env("PATH", &self.env.path)
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(home) = &self.env.home {
            cmd.env("HOME", home);
        }
        if let Some(lang) = &self.env.lang {
            cmd.env("LANG", lang);
        }
        if let Some(name) = self.name {
            cmd.env("PINCER_HOOK", name);
        }
        let mut child = cmd.spawn().map_err(|source| HookFailure::Spawn {
            program: program.clone(),
            source,
        })?;
        // The child leads its own group: its pid is the group id.
        let mut group = GroupGuard(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw),
        );
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let mut bytes = serde_json::to_vec(input).unwrap_or_default();
        bytes.push(b'\n');
        let cap = self.keep_stdout.then_some(STDOUT_CAP);

        let talk = async {
            let (_, out, err) = tokio::try_join!(
                write_input(stdin, &bytes),
                read_capped(stdout, cap),
                async { Ok(read_head(stderr, STDERR_KEEP).await) },
            )?;
            let status = child.wait().await.map_err(|e| HookFailure::Io {
                detail: format!("waiting for the hook: {e}"),
            })?;
            Ok::<_, HookFailure>((status, out, err))
        };
        // On an error or a timeout, `group` drops and SIGKILLs the group.
        let (status, out, err) = match tokio::time::timeout(self.timeout, talk).await {
            Ok(r) => r?,
            Err(_) => {
                group.kill();
                // Reap the leader now that it is dead, so it is gone, not a
                // zombie, when we return. SIGKILL makes this quick.
                let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
                group.disarm();
                return Err(HookFailure::Timeout {
                    after: self.timeout,
                });
            }
        };
        // The leader exited: whatever it left in its group dies with it.
        group.kill();
        group.disarm();
        if !status.success() {
            return Err(HookFailure::Crashed {
                status: describe_status(status),
                stderr: String::from_utf8_lossy(&err).trim_end().to_string(),
            });
        }
        Ok(out)
    }
}

async fn write_input(
    stdin: Option<tokio::process::ChildStdin>,
    bytes: &[u8],
) -> Result<(), HookFailure> {
    let Some(mut stdin) = stdin else {
        return Ok(());
    };
    match stdin.write_all(bytes).await {
        // A hook need not read its input.
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(HookFailure::Io {
            detail: format!("writing the hook's stdin: {e}"),
        }),
    }
    // `stdin` drops here: the hook sees EOF.
}

/// Reads to EOF; more than `cap` bytes is a bad reply (returned at once, so
/// a hook that writes forever is stopped, not waited for).
async fn read_capped(
    r: Option<impl AsyncRead + Unpin>,
    cap: Option<usize>,
) -> Result<Vec<u8>, HookFailure> {
    let Some(mut r) = r else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = r.read(&mut buf).await.map_err(|e| HookFailure::Io {
            detail: format!("reading the hook's stdout: {e}"),
        })?;
        if n == 0 {
            return Ok(out);
        }
        if let Some(cap) = cap {
            if out.len() + n > cap {
                return Err(bad(format!(
                    "stdout is larger than {} KiB; a reply is one small JSON object",
                    cap / 1024
                )));
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
}

/// Reads to EOF (or a read error), keeping the first `keep` bytes.
async fn read_head(r: Option<impl AsyncRead + Unpin>, keep: usize) -> Vec<u8> {
    let Some(mut r) = r else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 4 * 1024];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = keep.saturating_sub(out.len());
        out.extend_from_slice(&buf[..n.min(room)]);
    }
    out
}

/// Kills the hook's process group on drop, unless disarmed once the leader
/// was reaped (while it is unreaped, its pid — the group id — cannot be
/// reused).
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn kill(&self) {
        if let Some(pg) = self.0 {
            // ESRCH (nobody left) is the usual, fine outcome.
            let _ = rustix::process::kill_process_group(pg, Signal::KILL);
        }
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

fn describe_status(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => format!("ended with {s}"),
    }
}

/// The stdout of an interceptor or approval hook: exactly one JSON object.
fn reply_object(stdout: &[u8]) -> Result<Map<String, Value>, HookFailure> {
    let text = std::str::from_utf8(stdout).map_err(|_| bad("stdout is not UTF-8"))?;
    if text.trim().is_empty() {
        return Err(bad("nothing on stdout; expected one JSON object"));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(bad(format!(
            "stdout is JSON but not an object: `{}`",
            cut(&other.to_string(), 80)
        ))),
        Err(e) => Err(bad(format!(
            "stdout is not one JSON object ({e}): `{}`",
            cut(text.trim(), 80)
        ))),
    }
}

/// The `verdict` of `reply`, checked against `verdicts`, with every other
/// field checked against the ones that verdict allows.
fn verdict<'a>(
    reply: &'a Map<String, Value>,
    verdicts: &[(&'a str, &[&str])],
) -> Result<&'a str, HookFailure> {
    let names = || {
        verdicts
            .iter()
            .map(|(v, _)| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let v = match reply.get("verdict") {
        Some(Value::String(v)) => v.as_str(),
        Some(other) => {
            return Err(bad(format!(
                "field `verdict`: `{}` is not a string; expected one of {}",
                cut(&other.to_string(), 40),
                names()
            )));
        }
        None => {
            return Err(bad(format!(
                "field `verdict` is missing; expected one of {}",
                names()
            )));
        }
    };
    let Some((v, fields)) = verdicts.iter().find(|(name, _)| *name == v) else {
        return Err(bad(format!(
            "field `verdict`: unknown verdict `{}`; expected one of {}",
            cut(v, 40),
            names()
        )));
    };
    if let Some(extra) = reply
        .keys()
        .find(|k| k.as_str() != "verdict" && !fields.contains(&k.as_str()))
    {
        return Err(bad(format!(
            "field `{}` is not part of a `{v}` reply",
            cut(extra, 40)
        )));
    }
    Ok(v)
}

fn reason(reply: &Map<String, Value>) -> Result<String, HookFailure> {
    match reply.get("reason") {
        Some(Value::String(r)) if !r.trim().is_empty() => Ok(r.clone()),
        Some(Value::String(_)) => Err(bad("field `reason` is empty; say why")),
        Some(_) => Err(bad("field `reason` must be a string")),
        None => Err(bad("field `reason` is missing; say why")),
    }
}

fn parse_intercept(stdout: &[u8]) -> Result<InterceptVerdict, HookFailure> {
    let reply = reply_object(stdout)?;
    match verdict(
        &reply,
        &[
            ("allow", &[]),
            ("block", &["reason"]),
            ("rewrite", &["arguments"]),
        ],
    )? {
        "allow" => Ok(InterceptVerdict::Allow),
        "block" => Ok(InterceptVerdict::Block {
            reason: reason(&reply)?,
        }),
        _ => match reply.get("arguments") {
            Some(args @ Value::Object(_)) => Ok(InterceptVerdict::Rewrite {
                arguments: args.clone(),
            }),
            Some(_) => Err(bad("field `arguments` must be a JSON object")),
            None => Err(bad("field `arguments` is missing from a `rewrite` reply")),
        },
    }
}

/// `None` for approve, `Some(reason)` for deny.
fn parse_approval(stdout: &[u8]) -> Result<Option<String>, HookFailure> {
    let reply = reply_object(stdout)?;
    match verdict(&reply, &[("approve", &[]), ("deny", &["reason"])])? {
        "approve" => Ok(None),
        _ => reason(&reply).map(Some),
    }
}
