//! The audit trail's schema: every entry kind in one place ([`Kind`]) and a
//! payload type per kind that writers (the gate, hardware, memory, the CLI)
//! and readers (consolidation, handoff, the audit viewers) share. A writer
//! calls [`Audit::record`] with a payload; a reader asks an entry for its
//! payload with [`Entry::payload`]. A field renamed on one side is renamed
//! on the other or does not compile.
//!
//! Payloads are plain data; optional fields are left out when empty. A
//! reader takes what it can: fields no reader needs to make sense of an
//! entry (a call's hash, its session) read back empty when an entry lacks
//! them, so a hand-written or older entry is still summarised.

use super::{Audit, Entry, Receipt, Result};
use crate::policy::{Autonomy, Risk};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every kind of entry pincer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    ConfigLoad,
    PolicyChange,
    GateDecision,
    ApprovalRequest,
    ApprovalAnswer,
    ToolCall,
    HookVerdict,
    AuditNote,
    AuditRepair,
    AuditSeal,
    HwOp,
    HwResult,
    ExecRun,
    ExecResult,
    MemoryWrite,
    MemoryConsolidate,
    MemoryForget,
    ProviderFallback,
    ClaudeSessionStart,
    ClaudePrompt,
    ClaudePreToolUse,
    ClaudePostToolUse,
    ClaudeSessionEnd,
    McpCall,
    McpResult,
    McpChange,
    ServeStart,
    ServeReload,
    ServeStop,
    ChannelMessage,
    ChannelRefused,
    CronChange,
    CronRun,
    CronDone,
    CronSkip,
    GatewayCode,
    GatewayPair,
    GatewayRevoke,
}

impl Kind {
    pub const ALL: &[Kind] = &[
        Kind::ConfigLoad,
        Kind::PolicyChange,
        Kind::GateDecision,
        Kind::ApprovalRequest,
        Kind::ApprovalAnswer,
        Kind::ToolCall,
        Kind::HookVerdict,
        Kind::AuditNote,
        Kind::AuditRepair,
        Kind::AuditSeal,
        Kind::HwOp,
        Kind::HwResult,
        Kind::ExecRun,
        Kind::ExecResult,
        Kind::MemoryWrite,
        Kind::MemoryConsolidate,
        Kind::MemoryForget,
        Kind::ProviderFallback,
        Kind::ClaudeSessionStart,
        Kind::ClaudePrompt,
        Kind::ClaudePreToolUse,
        Kind::ClaudePostToolUse,
        Kind::ClaudeSessionEnd,
        Kind::McpCall,
        Kind::McpResult,
        Kind::McpChange,
        Kind::ServeStart,
        Kind::ServeReload,
        Kind::ServeStop,
        Kind::ChannelMessage,
        Kind::ChannelRefused,
        Kind::CronChange,
        Kind::CronRun,
        Kind::CronDone,
        Kind::CronSkip,
        Kind::GatewayCode,
        Kind::GatewayPair,
        Kind::GatewayRevoke,
    ];

    /// The name stored in an entry's `kind` field.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::ConfigLoad => "config.load",
            Kind::PolicyChange => "policy.change",
            Kind::GateDecision => "gate.decision",
            Kind::ApprovalRequest => "approval.request",
            Kind::ApprovalAnswer => "approval.answer",
            Kind::ToolCall => "tool.call",
            Kind::HookVerdict => "hook.verdict",
            Kind::AuditNote => "audit.note",
            Kind::AuditRepair => "audit.repair",
            Kind::AuditSeal => "audit.seal",
            Kind::HwOp => "hw.op",
            Kind::HwResult => "hw.result",
            Kind::ExecRun => "exec.run",
            Kind::ExecResult => "exec.result",
            Kind::MemoryWrite => "memory.write",
            Kind::MemoryConsolidate => "memory.consolidate",
            Kind::MemoryForget => "memory.forget",
            Kind::ProviderFallback => "provider.fallback",
            Kind::ClaudeSessionStart => "claude.session_start",
            Kind::ClaudePrompt => "claude.prompt",
            Kind::ClaudePreToolUse => "claude.pre_tool_use",
            Kind::ClaudePostToolUse => "claude.post_tool_use",
            Kind::ClaudeSessionEnd => "claude.session_end",
            Kind::McpCall => "mcp.call",
            Kind::McpResult => "mcp.result",
            Kind::McpChange => "mcp.change",
            Kind::ServeStart => "serve.start",
            Kind::ServeReload => "serve.reload",
            Kind::ServeStop => "serve.stop",
            Kind::ChannelMessage => "channel.message",
            Kind::ChannelRefused => "channel.refused",
            Kind::CronChange => "cron.change",
            Kind::CronRun => "cron.run",
            Kind::CronDone => "cron.done",
            Kind::CronSkip => "cron.skip",
            Kind::GatewayCode => "gateway.code",
            Kind::GatewayPair => "gateway.pair",
            Kind::GatewayRevoke => "gateway.revoke",
        }
    }

    /// What an entry of this kind records, for `pincer audit log --kind`.
    pub const fn what(self) -> &'static str {
        match self {
            Kind::ConfigLoad => {
                "the config pincer started with, its hash, the policy in force, the warnings given"
            }
            Kind::PolicyChange => "the policy differs from the last load's",
            Kind::GateDecision => {
                "a tool call allowed, blocked, approved or denied, before it runs"
            }
            Kind::ApprovalRequest => "a call waits for a person's answer",
            Kind::ApprovalAnswer => "the answer (a person's, a hook's or the timeout's)",
            Kind::ToolCall => "the outcome of a call that ran, with the tool's notes",
            Kind::HookVerdict => "what an interceptor, observer or approval hook said",
            Kind::AuditNote => "an operator note, or a reanchor",
            Kind::AuditRepair => "a torn tail was removed after a crash",
            Kind::AuditSeal => "damaged segments were sealed as evidence; a new segment starts",
            Kind::HwOp => "a person's `pincer hw` command",
            Kind::HwResult => "the result of a `pincer hw` command",
            Kind::ExecRun => "a person's `pincer exec` command, before it starts in the sandbox",
            Kind::ExecResult => "how a `pincer exec` command ended, with the sandbox's notes",
            Kind::MemoryWrite => "a memory page was written",
            Kind::MemoryConsolidate => "a consolidation page was committed",
            Kind::MemoryForget => "a memory page was removed",
            Kind::ProviderFallback => "a provider failed and the next one was tried",
            Kind::ClaudeSessionStart => "a Claude Code session started under pincer's hooks",
            Kind::ClaudePrompt => "a prompt a person gave Claude Code",
            Kind::ClaudePreToolUse => "pincer's answer to a Claude Code tool call, before it runs",
            Kind::ClaudePostToolUse => "how a Claude Code tool call ended",
            Kind::ClaudeSessionEnd => "a Claude Code session ended",
            Kind::McpCall => "a person's `pincer mcp call`, before it is sent",
            Kind::McpResult => "the result of a `pincer mcp call`",
            Kind::McpChange => "an MCP server's tool list changed after pincer started",
            Kind::ServeStart => "`pincer serve` started, and the services it runs",
            Kind::ServeReload => {
                "`pincer serve` reloaded its config (SIGHUP), or kept the old one and why"
            }
            Kind::ServeStop => "`pincer serve` stopped: why, and the turns its drain cancelled",
            Kind::ChannelMessage => {
                "a message from an allowlisted chat user, before the agent sees it"
            }
            Kind::ChannelRefused => {
                "a chat message or approval button from someone not allowed, refused"
            }
            Kind::CronChange => "a cron job was added or removed",
            Kind::CronRun => {
                "a cron job (or the heartbeat) starts a turn: why now, and runs it missed"
            }
            Kind::CronDone => {
                "how a cron job's (or the heartbeat's) turn ended, and where its reply went"
            }
            Kind::CronSkip => {
                "runs of a cron job missed while pincer was down, skipped as the job says"
            }
            Kind::GatewayCode => "a gateway pairing code was issued (never the code itself)",
            Kind::GatewayPair => "a device paired with the gateway and got a token",
            Kind::GatewayRevoke => "a gateway token was revoked",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// What a filter names: a kind (`gate.decision`) or a family (`gate`
    /// matches `gate.decision`). `None` when it matches no kind pincer
    /// writes.
    pub fn matching(filter: &str) -> Option<Vec<Kind>> {
        let hits: Vec<Kind> = Kind::ALL
            .iter()
            .copied()
            .filter(|k| {
                let s = k.as_str();
                s == filter
                    || s.split_once('.')
                        .is_some_and(|(family, _)| family == filter)
            })
            .collect();
        (!hits.is_empty()).then_some(hits)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The data of one kind of entry.
pub trait Payload: Serialize + DeserializeOwned {
    const KIND: Kind;
}

impl Audit {
    /// Appends `payload` as an entry of its kind by `actor`.
    pub fn record<P: Payload>(&self, actor: &str, payload: &P) -> Result<Receipt> {
        // A payload is strings, numbers, booleans and JSON values: it
        // always serialises.
        let data = serde_json::to_value(payload).unwrap_or(Value::Null);
        self.append(actor, P::KIND.as_str(), data)
    }
}

impl Entry {
    /// The entry's kind, if pincer knows it.
    pub fn known_kind(&self) -> Option<Kind> {
        Kind::parse(&self.kind)
    }

    /// The entry's data as `P`: `None` when the entry is of another kind,
    /// `Some(Err)` when it is of `P`'s kind but its data does not fit (a
    /// hand-written or foreign entry).
    pub fn payload<P: Payload>(&self) -> Option<std::result::Result<P, serde_json::Error>> {
        (self.kind == P::KIND.as_str()).then(|| P::deserialize(&self.data))
    }
}

macro_rules! payload {
    ($ty:ident, $kind:ident) => {
        impl Payload for $ty {
            const KIND: Kind = Kind::$kind;
        }
    };
}

/// The configuration pincer started with (`config.load`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigLoad {
    pub path: String,
    /// False when there was no file and the defaults applied.
    pub found: bool,
    pub sha256: Option<String>,
    /// The part of the configuration that decides what the agent may do.
    #[serde(default)]
    pub policy: Value,
    /// What the person was warned of at this start (a shell that runs
    /// without the OS sandbox, or is not offered, a degraded layer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
payload!(ConfigLoad, ConfigLoad);

/// The policy differs from the last `config.load`'s (`policy.change`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyChange {
    pub before: Value,
    pub after: Value,
}
payload!(PolicyChange, PolicyChange);

/// Which call an entry is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRef {
    #[serde(default)]
    pub session: String,
    #[serde(default)]
    pub call_id: String,
    pub tool: String,
}

/// How the gate decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The policy allowed it without asking.
    Allowed,
    /// A person (or an approval hook) approved it.
    Approved,
    /// The policy, the deny list or an interceptor refused it.
    Blocked,
    /// A person, an approval hook or the timeout said no.
    Denied,
    /// The arguments were malformed; nobody was asked.
    Invalid,
    /// There is no such tool.
    UnknownTool,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Approved => "approved",
            Outcome::Blocked => "blocked",
            Outcome::Denied => "denied",
            Outcome::Invalid => "invalid",
            Outcome::UnknownTool => "unknown_tool",
        }
    }

    /// The call runs.
    pub fn ran(self) -> bool {
        matches!(self, Outcome::Allowed | Outcome::Approved)
    }
}

/// What the gate knew about a call when it judged it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub call_hash: String,
    pub risk: Risk,
    pub why: String,
    pub autonomy: Autonomy,
    /// What the call touches (hardware: operation, bus, address…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hardware: bool,
}

/// A gate decision, written before anything runs (`gate.decision`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateDecision {
    #[serde(flatten)]
    pub call: CallRef,
    /// Whole when small, else `{sha256, bytes, prefix}`.
    #[serde(default)]
    pub arguments: Value,
    /// Absent when the call never reached assessment (no such tool, an
    /// interceptor blocked it).
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
    pub decision: Outcome,
    /// Who decided: `policy`, `deny_list`, `tool`, an approver, a hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
payload!(GateDecision, GateDecision);

/// A call waits for a person (`approval.request`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequested {
    #[serde(flatten)]
    pub call: CallRef,
    pub arguments: Value,
    pub call_hash: String,
    pub risk: Risk,
    pub why: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hardware: bool,
}
payload!(ApprovalRequested, ApprovalRequest);

/// What a person answered, or that the answer could not be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerWord {
    Approved,
    Denied,
    NotDelivered,
}

impl AnswerWord {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerWord::Approved => "approved",
            AnswerWord::Denied => "denied",
            AnswerWord::NotDelivered => "not_delivered",
        }
    }
}

/// A person answered a queued approval (`approval.answer`); the entry's
/// actor is the principal pincer authenticated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAnswered {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub call_hash: String,
    #[serde(flatten)]
    pub call: CallRef,
    pub answer: AnswerWord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why the answer was not delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
payload!(ApprovalAnswered, ApprovalAnswer);

/// How a call that ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Ok,
    /// The tool failed; the error went back to the model.
    Error,
    /// The tool failed fatally; the turn stopped.
    Fatal,
    /// The call was dropped mid-run (a cancelled turn) or its tool panicked.
    Interrupted,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Error => "error",
            CallStatus::Fatal => "fatal",
            CallStatus::Interrupted => "interrupted",
        }
    }
}

/// A call the gate admitted, after it ran (`tool.call`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallDone {
    #[serde(flatten)]
    pub call: CallRef,
    #[serde(default)]
    pub call_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Value>,
    pub status: CallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the tool recorded about how the call ran (a sandbox layer that
    /// degraded, the network on for this call, no sandbox at all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
payload!(ToolCallDone, ToolCall);

/// Which kind of hook spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookRole {
    Interceptor,
    Approval,
    Observer,
}

/// What a hook said, or how it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookSaid {
    Allow,
    Block,
    Rewrite,
    Approve,
    Deny,
    Failed,
}

/// A hook's verdict, or its failure (`hook.verdict`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookVerdict {
    /// The hook's name (absent in entries of approval hooks, whose actor
    /// names them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    pub kind: HookRole,
    #[serde(flatten)]
    pub call: CallRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    pub verdict: HookSaid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments an interceptor rewrote the call to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}
payload!(HookVerdict, HookVerdict);

/// An operator's note, or the scar a reanchor leaves (`audit.note`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditNote {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// True on the note `reanchor` writes; the rest of its data says what
    /// moved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reanchor: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whatever else the writer recorded (the old and new anchor…).
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}
payload!(AuditNote, AuditNote);

/// A torn tail was cut off before this append (`audit.repair`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRepair {
    pub truncated_bytes: u64,
}
payload!(AuditRepair, AuditRepair);

/// A person's hardware operation, before the bus is touched (`hw.op`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HwOp {
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Value>,
    pub risk: Risk,
    /// `allowed` (a person is recorded, not gated) or `invalid`.
    pub decision: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
payload!(HwOp, HwOp);

/// How a person's hardware operation ended (`hw.result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HwResult {
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Value>,
    pub status: CallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
payload!(HwResult, HwResult);

/// A person runs a command in the agent's sandbox (`exec.run`, before it
/// starts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecRun {
    pub argv: Vec<String>,
    pub workspace: String,
    /// The network was on for it.
    #[serde(default)]
    pub network: bool,
}
payload!(ExecRun, ExecRun);

/// How a `pincer exec` command ended (`exec.result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecResult {
    pub status: CallStatus,
    /// `exit status: N` or `killed by signal N`, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
    /// Degraded layers, limits hit, processes left behind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Why it did not run (the sandbox layer that failed, a missing
    /// program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
payload!(ExecResult, ExecResult);

/// A memory page was written (`memory.write`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryWrite {
    pub id: String,
    pub title: String,
    pub source: String,
    /// Absent in the entries consolidation wrote before it was recorded.
    #[serde(default)]
    pub pinned: bool,
}
payload!(MemoryWrite, MemoryWrite);

/// Consolidation wrote a session page (`memory.consolidate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryConsolidate {
    pub page: String,
    pub from_seq: u64,
    pub to_seq: u64,
    pub watermark_to: u64,
}
payload!(MemoryConsolidate, MemoryConsolidate);

/// A memory page was deleted (`memory.forget`); what it said stays in the
/// `memory.write` entry that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryForget {
    pub id: String,
    pub title: String,
}
payload!(MemoryForget, MemoryForget);

/// A model call on which providers failed before one answered, or none
/// did (`provider.fallback`): fallback is never silent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderFallback {
    pub session: String,
    /// The provider that answered; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    pub attempts: Vec<crate::provider::FailedAttempt>,
}
payload!(ProviderFallback, ProviderFallback);

// Claude Code's hook points (`pincer hook claude-code EVENT`): one kind
// per hook event pincer handles, family `claude`, actor `agent:claude-code`.
// `session` is Claude Code's `session_id`, `tool_use_id` its id of the call.

/// What pincer answered Claude Code's PreToolUse hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    /// The call runs without Claude Code asking anyone.
    Allow,
    /// Refused; the reason goes back to the model.
    Deny,
    /// Claude Code asks its user, showing the reason.
    Ask,
}

impl PermissionDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionDecision::Allow => "allow",
            PermissionDecision::Deny => "deny",
            PermissionDecision::Ask => "ask",
        }
    }
}

/// A Claude Code session started (SessionStart) and was given pincer's
/// rules and handoff (`claude.session_start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaudeSessionStart {
    pub session: String,
    /// `startup`, `resume`, `clear`, `compact`…, as Claude Code says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default)]
    pub cwd: String,
    /// The directory pincer judges writes against.
    #[serde(default)]
    pub workspace: String,
    pub autonomy: Autonomy,
    /// Characters of context handed to the session.
    #[serde(default)]
    pub context_chars: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
payload!(ClaudeSessionStart, ClaudeSessionStart);

/// A prompt a person (or Claude Code) submitted (`claude.prompt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaudePrompt {
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The prompt, cut to its first characters when long.
    pub prompt: String,
    pub prompt_bytes: usize,
    /// SHA-256 of the whole prompt.
    pub prompt_sha256: String,
}
payload!(ClaudePrompt, ClaudePrompt);

/// pincer's answer to a tool call Claude Code was about to make
/// (`claude.pre_tool_use`), written before the answer is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaudePreToolUse {
    pub session: String,
    #[serde(default)]
    pub tool_use_id: String,
    pub tool: String,
    /// Whole when small, else `{sha256, bytes, prefix}`.
    #[serde(default)]
    pub arguments: Value,
    /// Absent when the call was never judged (an internal failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<Autonomy>,
    pub decision: PermissionDecision,
    /// What decided: `policy`, `deny_list`, `boundary`, `protected`,
    /// `hook_config`, `unknown_tool`, `invalid` or `failure`.
    pub by: String,
    pub reason: String,
    /// What the call touches (the resolved path of a file tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Value>,
    /// Set when the call comes from one of Claude Code's subagents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}
payload!(ClaudePreToolUse, ClaudePreToolUse);

/// How a tool call Claude Code made ended (`claude.post_tool_use`). The
/// response itself is not kept, only its size and hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaudePostToolUse {
    pub session: String,
    #[serde(default)]
    pub tool_use_id: String,
    pub tool: String,
    pub status: CallStatus,
    pub response_bytes: usize,
    pub response_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}
payload!(ClaudePostToolUse, ClaudePostToolUse);

/// A Claude Code session ended (`claude.session_end`); the consolidation
/// that follows records its own `memory.consolidate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaudeSessionEnd {
    pub session: String,
    /// `clear`, `logout`, `prompt_input_exit`, `other`…, as Claude Code says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
payload!(ClaudeSessionEnd, ClaudeSessionEnd);
/// A person's call of an MCP server's tool (`mcp.call`), recorded before
/// it is sent (people are recorded, not gated; the agent's calls are
/// `gate.decision` and `tool.call` entries like any tool's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpCall {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    /// The risk the config gives the tool.
    pub risk: Risk,
    /// Whether the agent is offered the tool (a person may call any tool
    /// the server lists).
    pub offered: bool,
    /// `allowed`, or `invalid` when the arguments do not match the tool's
    /// input schema (nothing is sent).
    pub decision: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
payload!(McpCall, McpCall);

/// How a person's MCP call ended (`mcp.result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpResult {
    pub server: String,
    pub tool: String,
    pub status: CallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
payload!(McpResult, McpResult);

/// An MCP server's tool list differs from the one pincer started with
/// (`mcp.change`): its new tools are not offered, changed and removed
/// ones are refused, until pincer starts again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpChange {
    pub server: String,
    /// When it was seen (`during the session`, `when it was started again`).
    pub when: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}
payload!(McpChange, McpChange);

// `pincer serve`, its chat channels and its scheduler. A channel's actor
// is the principal it authenticated (`telegram:<user id>`); the
// scheduler's is `system`.

/// `pincer serve` started (`serve.start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeStart {
    pub pid: u32,
    /// The services it supervises (`telegram`, `cron`, `heartbeat`…).
    pub services: Vec<String>,
}
payload!(ServeStart, ServeStart);

/// A SIGHUP (`serve.reload`): the new config was taken, or refused and
/// the old one kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeReload {
    pub applied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub services: Vec<String>,
}
payload!(ServeReload, ServeReload);

/// `pincer serve` stopped (`serve.stop`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeStop {
    /// `SIGTERM`, `SIGINT`…
    pub reason: String,
    /// Turns still running when the drain ran out of time, cancelled
    /// (their sessions stay valid).
    #[serde(default)]
    pub cancelled_turns: usize,
}
payload!(ServeStop, ServeStop);

/// A message from an allowlisted chat user (`channel.message`), recorded
/// before the agent sees it; the entry's actor is the sender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelMessage {
    /// `telegram`, `discord`, `camera`.
    pub channel: String,
    pub chat: String,
    pub session: String,
    pub bytes: usize,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub images: usize,
}
payload!(ChannelMessage, ChannelMessage);

/// Something a chat user may not do, refused (`channel.refused`): a
/// message from someone not in `allow_users`, an approval button pressed
/// by someone not in `approvers`. Nothing of it reaches a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelRefused {
    pub channel: String,
    pub chat: String,
    /// The sender as the platform authenticated it (`telegram:<user id>`).
    pub from: String,
    /// `message` or `approval`.
    pub what: String,
    pub reason: String,
}
payload!(ChannelRefused, ChannelRefused);

/// A cron job was added or removed (`cron.change`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronChange {
    /// `add` or `remove`.
    pub op: String,
    pub job: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
}
payload!(CronChange, CronChange);

/// A scheduled turn starts (`cron.run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronRun {
    pub job: String,
    /// `schedule`, `catch_up` (one run for runs missed while pincer was
    /// down), `manual` (`pincer cron run`) or `heartbeat`.
    pub trigger: String,
    /// The time the schedule named for this run, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<String>,
    /// Runs missed before this one (a catch-up run stands for them).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub missed: u64,
    pub session: String,
}
payload!(CronRun, CronRun);

/// How a scheduled turn ended (`cron.done`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronDone {
    pub job: String,
    pub status: CallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub reply_bytes: usize,
    /// Where the reply was sent (`telegram:<chat id>`); absent when it was
    /// kept in the session only (or the heartbeat had nothing to say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_error: Option<String>,
}
payload!(CronDone, CronDone);

/// Runs missed while pincer was down, skipped (`cron.skip`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronSkip {
    pub job: String,
    pub missed: u64,
    pub first: String,
    pub last: String,
}
payload!(CronSkip, CronSkip);

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// A pairing code was issued (`gateway.code`): when, for which role, until
/// when. The code itself is never recorded (the trail is not secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayCode {
    /// `approver` or `chat`.
    pub role: String,
    pub expires: crate::message::Timestamp,
    /// How it was issued: `gateway start` or `pincer pair`.
    pub via: String,
}
payload!(GatewayCode, GatewayCode);

/// A device redeemed a pairing code (`gateway.pair`); the entry's actor is
/// the new token's principal (`token:ID`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayPair {
    /// The token's id (its public half).
    pub token: String,
    pub role: String,
    /// The peer address the pairing request came from.
    pub from: String,
}
payload!(GatewayPair, GatewayPair);

/// A gateway token was revoked (`gateway.revoke`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayRevoke {
    pub token: String,
}
payload!(GatewayRevoke, GatewayRevoke);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_round_trip_and_families_match() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(*k));
        }
        assert_eq!(Kind::matching("gate"), Some(vec![Kind::GateDecision]));
        assert_eq!(
            Kind::matching("approval"),
            Some(vec![Kind::ApprovalRequest, Kind::ApprovalAnswer])
        );
        assert_eq!(Kind::matching("tool.call"), Some(vec![Kind::ToolCall]));
        assert_eq!(Kind::matching("claude").map(|k| k.len()), Some(5));
        assert_eq!(Kind::matching("cron").map(|k| k.len()), Some(4));
        assert_eq!(Kind::matching("serve").map(|k| k.len()), Some(3));
        assert_eq!(Kind::matching("bogus"), None);
        assert_eq!(Kind::matching("gate.decisio"), None);
    }

    /// The shape older entries were written in still reads back.
    #[test]
    fn older_entries_read_back() {
        let old = json!({
            "session": "s", "call_id": "c1", "tool": "shell",
            "arguments": {"command": "ls"}, "call_hash": "h", "risk": "low",
            "why": "read-only", "autonomy": "supervised",
            "decision": "allowed", "by": "policy"
        });
        let d: GateDecision = serde_json::from_value(old).expect("reads");
        assert_eq!(d.decision, Outcome::Allowed);
        assert_eq!(d.judgement.expect("judged").risk, Risk::Low);
        let unknown = json!({
            "session": "s", "call_id": "c1", "tool": "nope",
            "arguments": {}, "decision": "unknown_tool"
        });
        let d: GateDecision = serde_json::from_value(unknown).expect("reads");
        assert!(d.judgement.is_none());
        let answered = json!({
            "id": "0123456789", "call_hash": "h", "session": "s", "call_id": "c",
            "tool": "t", "answer": "denied", "reason": null
        });
        let a: ApprovalAnswered = serde_json::from_value(answered).expect("reads");
        assert_eq!(a.answer, AnswerWord::Denied);
        assert_eq!(a.reason, None);
    }
}
