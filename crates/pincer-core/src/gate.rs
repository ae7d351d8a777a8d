//! The policy gate (DESIGN PO1–PO5, HK1): the one place a tool call is
//! intercepted, assessed, decided, approved, run and audited.
//!
//! For every call, in this order:
//!
//! 1. **Interceptors** (HK1) matching the tool run in config order; each may
//!    allow, block, or rewrite the arguments. One that fails or times out
//!    blocks the call (hooks fail closed).
//! 2. The tool **assesses** the final arguments: risk class, why, and
//!    whether a deny rule matched ([`crate::tool::Assessment`]).
//! 3. The **deny list** (the tool's own rules plus `[policy] deny_tools`)
//!    blocks at every autonomy level.
//! 4. The **decision table** ([`decide`], PO3) gives allow, block, or
//!    needs-approval.
//! 5. An **approval** (PO4) is asked of the approval hook matching the tool,
//!    or else the configured [`Approver`]; the answer must carry the hash of
//!    this exact call, and no answer in time is a denial.
//! 6. The decision is an audit entry (`gate.decision`) *before* anything
//!    runs; if the trail refuses the entry, nothing runs.
//! 7. The tool runs with a [`Permit`], its outcome is an audit entry
//!    (`tool.call`), and observers are told (500 ms budget, never blocking).
//!
//! Why a tool cannot skip this: [`crate::tool::Tool::execute`] takes a
//! [`Permit`], whose fields are private to this module, so only
//! [`Gate::execute`] can make one, and only from a [`Pass`] that
//! [`Gate::admit`] returned after steps 1–6. A tool keeps its handles on the
//! world (workspace, buses) in [`Gated`] wrappers that only a permit opens.
//! The autonomy level is fixed when the gate is built; nothing a tool
//! returns reaches the gate (PO5: tool output is data).

use crate::audit::{Audit, AuditError};
use crate::canonical::{sha256_hex, to_canonical_string};
use crate::config::Autonomy;
use crate::hooks::{CallReport, HookCall, InterceptVerdict, Interceptor, Observer};
use crate::message::ToolCall;
use crate::provider::BoxFuture;
use crate::tool::{Assessment, Risk, Tool, ToolError};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// What the decision table says about one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// A person must approve this exact call first; no answer is a denial.
    NeedsApproval,
    /// Refused outright; the reason goes back to the model as the result.
    Block(String),
}

/// PO3: `readonly` blocks everything above low; `supervised` needs an
/// approval for medium and high; `full` allows all. (The deny list is
/// applied before this table, at every level.)
pub fn decide(autonomy: Autonomy, risk: Risk) -> Decision {
    decide_for(autonomy, risk, false)
}

/// [`decide`], and PO3's rule that `readonly` blocks *all* hardware, even a
/// low-risk bus scan.
pub fn decide_for(autonomy: Autonomy, risk: Risk, hardware: bool) -> Decision {
    if hardware && autonomy == Autonomy::Readonly {
        return Decision::Block(
            "autonomy is readonly, which blocks all hardware operations, reads and scans included"
                .into(),
        );
    }
    match (autonomy, risk) {
        (_, Risk::Low) | (Autonomy::Full, _) => Decision::Allow,
        (Autonomy::Supervised, _) => Decision::NeedsApproval,
        (Autonomy::Readonly, r) => Decision::Block(format!(
            "autonomy is readonly, which allows only low-risk operations; this one is {} risk",
            r.as_str()
        )),
    }
}

/// One call waiting for a person's yes or no (PO4). `call_hash` binds an
/// answer to this exact call: tool, arguments, call id and session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub call_hash: String,
    pub session: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub risk: Risk,
    /// Why the gate assigned this risk (e.g. the shell part that decided it).
    pub why: String,
}

/// A person's (or an approval hook's) answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Approves the call whose hash is `call_hash`; the gate refuses an
    /// approval whose hash is not the one it asked about.
    Approved {
        call_hash: String,
        by: String,
    },
    Denied {
        by: String,
        reason: String,
    },
}

/// Asks a person (terminal prompt, approval queue, chat button, hook).
pub trait Approver: Send + Sync {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer>;
}

/// An approver with nobody behind it: every request is denied, saying why.
#[derive(Debug, Clone)]
pub struct DenyAll(pub String);

impl Approver for DenyAll {
    fn approve<'a>(&'a self, _req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            ApprovalAnswer::Denied {
                by: "system".into(),
                reason: self.0.clone(),
            }
        })
    }
}

/// A tool's handle on the world (a workspace, a bus), reachable only
/// through a [`Permit`]. Anyone may wrap a value; only the gate can open one.
pub struct Gated<T>(T);

impl<T> Gated<T> {
    pub fn new(inner: T) -> Self {
        Self(inner)
    }
}

impl<T> std::fmt::Debug for Gated<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gated(..)")
    }
}

/// The gate's leave for one admitted call: its (possibly rewritten)
/// arguments and the key to the tool's [`Gated`] handles. It cannot be
/// built outside this module, cloned, or kept past the call:
///
/// ```compile_fail
/// // The only error here is privacy: the fields are the gate's.
/// fn forge(args: &serde_json::Value) -> pincer_core::gate::Permit<'_> {
///     pincer_core::gate::Permit {
///         args,
///         risk: pincer_core::tool::Risk::Low,
///         call_hash: "",
///     }
/// }
/// ```
pub struct Permit<'a> {
    args: &'a Value,
    risk: Risk,
    call_hash: &'a str,
}

impl<'a> Permit<'a> {
    /// The arguments the gate admitted.
    pub fn args(&self) -> &'a Value {
        self.args
    }

    pub fn risk(&self) -> Risk {
        self.risk
    }

    /// The hash binding this permit to one call (tool, arguments, call id,
    /// session).
    pub fn call_hash(&self) -> &'a str {
        self.call_hash
    }

    /// Opens a handle the tool keeps behind the gate.
    pub fn open<'g, T>(&self, gated: &'g Gated<T>) -> &'g T {
        &gated.0
    }
}

impl std::fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("risk", &self.risk)
            .field("call_hash", &self.call_hash)
            .finish_non_exhaustive()
    }
}

/// An admitted call, waiting to run: it holds the tool that was assessed,
/// so the tool that runs is the tool that was judged. Only [`Gate::admit`]
/// makes one, and [`Gate::execute`] consumes it: an approval runs its call
/// once. Nothing outside this module can make or change one:
///
/// ```compile_fail
/// // The only error here is privacy: a pass cannot be edited after the
/// // gate made it (say, to lower its risk).
/// fn lower(pass: &mut pincer_core::gate::Pass) {
///     pass.risk = pincer_core::tool::Risk::Low;
/// }
/// ```
pub struct Pass {
    session: String,
    call_id: String,
    tool: Arc<dyn Tool>,
    args: Value,
    risk: Risk,
    why: String,
    call_hash: String,
    decision: &'static str,
    subject: Option<Value>,
}

impl std::fmt::Debug for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pass")
            .field("tool", &self.tool.name())
            .field("call_id", &self.call_id)
            .field("risk", &self.risk)
            .field("decision", &self.decision)
            .finish_non_exhaustive()
    }
}

impl Pass {
    pub fn tool_name(&self) -> &str {
        self.tool.name()
    }

    pub fn args(&self) -> &Value {
        &self.args
    }

    pub fn risk(&self) -> Risk {
        self.risk
    }

    pub fn call_id(&self) -> &str {
        &self.call_id
    }
}

/// How the gate refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// There is no such tool.
    Unknown,
    /// Policy, the deny list or an interceptor said no.
    Blocked,
    /// A person, an approval hook or the approval timeout said no.
    Denied,
    /// The tool found the arguments malformed or out of range.
    Invalid,
}

/// What [`Gate::admit`] decided.
#[derive(Debug)]
pub enum Admission {
    Run(Pass),
    /// Not run; `text` goes back to the model as the tool result.
    Refused {
        refusal: Refusal,
        text: String,
    },
}

/// The gate could not record what it was about to do, so nothing ran.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("the audit trail refused an entry, so the call did not run: {0}")]
    Audit(#[from] AuditError),
}

/// Slack the gate gives an approver past `approval_timeout` before its own
/// backstop fires: an approver that enforces the deadline itself (the
/// queue) always answers first, so an answer acknowledged to a person at
/// the last moment is the one acted on.
const APPROVAL_GRACE: Duration = Duration::from_secs(2);

/// The gate's fixed policy.
#[derive(Debug, Clone, PartialEq)]
pub struct GatePolicy {
    pub autonomy: Autonomy,
    pub approval_timeout: Duration,
    /// Tool-name globs blocked at every level (`[policy] deny_tools`).
    pub deny_tools: Vec<String>,
}

/// What [`explain`] says about a call, without running anything.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub tool: String,
    pub arguments: Value,
    pub risk: Risk,
    pub why: String,
    pub denied: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
    /// The decision under each autonomy level: `allow`, `ask` or `block`.
    pub decisions: Vec<LevelDecision>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelDecision {
    pub autonomy: Autonomy,
    pub decision: &'static str,
    pub reason: String,
}

/// The deny-list verdict for `tool` with `assessment`.
fn denial(deny_tools: &[String], tool: &str, assessment: &Assessment) -> Option<String> {
    if let Some(reason) = &assessment.denied {
        return Some(reason.clone());
    }
    deny_tools
        .iter()
        .find(|p| glob_match(p, tool))
        .map(|p| format!("tool `{tool}` matches `{p}` in [policy] deny_tools"))
}

/// `pincer policy explain`: the risk the gate assigns to `args` for `tool`,
/// why, and the decision under each autonomy level. Runs nothing (no tool,
/// no hook).
pub fn explain(deny_tools: &[String], tool: &dyn Tool, args: &Value) -> Explanation {
    let a = tool.assess(args);
    let denied = denial(deny_tools, tool.name(), &a);
    let decisions = [Autonomy::Readonly, Autonomy::Supervised, Autonomy::Full]
        .into_iter()
        .map(|autonomy| {
            let (decision, reason) = match (&denied, decide_for(autonomy, a.risk, a.hardware)) {
                (Some(d), _) => ("block", format!("deny list: {d}")),
                (None, _) if a.invalid.is_some() => (
                    "block",
                    format!(
                        "invalid arguments: {}",
                        a.invalid.as_deref().unwrap_or_default()
                    ),
                ),
                (None, Decision::Allow) => {
                    ("allow", format!("{} risk is allowed", a.risk.as_str()))
                }
                (None, Decision::NeedsApproval) => (
                    "ask",
                    format!("{} risk needs a person's approval", a.risk.as_str()),
                ),
                (None, Decision::Block(r)) => ("block", r),
            };
            LevelDecision {
                autonomy,
                decision,
                reason,
            }
        })
        .collect();
    Explanation {
        tool: tool.name().to_string(),
        arguments: args.clone(),
        risk: a.risk,
        why: a.why,
        denied,
        detail: a.detail,
        decisions,
    }
}

/// The hash binding an approval (and a permit) to one call.
pub fn call_hash(session: &str, call_id: &str, tool: &str, args: &Value) -> String {
    let v = json!({"session": session, "call_id": call_id, "tool": tool, "arguments": args});
    sha256_hex(to_canonical_string(&v).as_bytes())
}

/// Arguments as recorded in the trail: whole when small, else a hash and a
/// prefix (a 1 MiB `file_write` must not bloat every audit verify).
fn recorded_args(args: &Value) -> Value {
    const MAX: usize = 4096;
    let text = to_canonical_string(args);
    if text.len() <= MAX {
        args.clone()
    } else {
        let cut = (0..=MAX)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        json!({"sha256": sha256_hex(text.as_bytes()), "bytes": text.len(), "prefix": &text[..cut]})
    }
}

/// An approval hook and the tools it answers for.
struct ApprovalRoute {
    tools: Vec<String>,
    approver: Arc<dyn Approver>,
}

/// The gate. Built once per agent; its policy never changes afterwards.
pub struct Gate {
    policy: GatePolicy,
    /// Who acts through this gate, e.g. `agent:main`.
    actor: String,
    audit: Arc<Audit>,
    approver: Arc<dyn Approver>,
    approval_hooks: Vec<ApprovalRoute>,
    interceptors: Vec<Arc<dyn Interceptor>>,
    observers: Vec<Arc<dyn Observer>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("policy", &self.policy)
            .field("actor", &self.actor)
            .field("interceptors", &self.interceptors.len())
            .field("observers", &self.observers.len())
            .field("approval_hooks", &self.approval_hooks.len())
            .finish_non_exhaustive()
    }
}

const PREVIEW_CHARS: usize = 200;

impl Gate {
    pub fn new(
        policy: GatePolicy,
        actor: impl Into<String>,
        audit: Arc<Audit>,
        approver: Arc<dyn Approver>,
    ) -> Self {
        Self {
            policy,
            actor: actor.into(),
            audit,
            approver,
            approval_hooks: Vec::new(),
            interceptors: Vec::new(),
            observers: Vec::new(),
        }
    }

    pub fn with_interceptor(mut self, hook: Arc<dyn Interceptor>) -> Self {
        self.interceptors.push(hook);
        self
    }

    pub fn with_observer(mut self, hook: Arc<dyn Observer>) -> Self {
        self.observers.push(hook);
        self
    }

    /// An approval hook answering instead of the default approver for the
    /// tools matching `tools` (globs; empty = every tool).
    pub fn with_approval_hook(mut self, tools: Vec<String>, approver: Arc<dyn Approver>) -> Self {
        self.approval_hooks.push(ApprovalRoute { tools, approver });
        self
    }

    pub fn policy(&self) -> &GatePolicy {
        &self.policy
    }

    pub fn actor(&self) -> &str {
        &self.actor
    }

    pub fn audit(&self) -> &Arc<Audit> {
        &self.audit
    }

    fn record(&self, actor: &str, kind: &str, data: Value) -> Result<(), GateError> {
        self.audit.append(actor, kind, data)?;
        Ok(())
    }

    /// Steps 1–6 of the module docs for one call. `on_approval` is told
    /// before an approval is awaited (so a front-end can say what to do).
    pub async fn admit(
        &self,
        session: &str,
        tool: Option<Arc<dyn Tool>>,
        call: &ToolCall,
        on_approval: &(dyn Fn(&ApprovalRequest) + Send + Sync),
    ) -> Result<Admission, GateError> {
        let mut args = call.arguments_value();
        // The tool judged must be the tool the call names.
        let tool = tool.filter(|t| t.name() == call.name);
        let base = |args: &Value| {
            json!({
                "session": session,
                "call_id": call.id,
                "tool": call.name,
                "arguments": recorded_args(args),
            })
        };
        let Some(tool) = tool else {
            let mut data = base(&args);
            data["decision"] = json!("unknown_tool");
            self.record(&self.actor, "gate.decision", data)?;
            return Ok(Admission::Refused {
                refusal: Refusal::Unknown,
                text: format!("error: there is no tool `{}`", call.name),
            });
        };

        // 1. Interceptors, in order; a rewrite feeds the next one.
        for hook in self.interceptors.iter().filter(|h| h.matches(&call.name)) {
            let a = tool.assess(&args);
            let hc = HookCall {
                session: session.to_string(),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: args.clone(),
                risk: a.risk,
                why: a.why,
            };
            let budget = crate::hooks::HookKind::Interceptor.budget();
            let verdict = match tokio::time::timeout(budget, hook.intercept(&hc)).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(failure)) => Err(failure.to_string()),
                Err(_) => Err(format!("timed out after {} ms", budget.as_millis())),
            };
            let hook_actor = format!("hook:{}", hook.name());
            let mut data = base(&args);
            data["hook"] = json!(hook.name());
            data["kind"] = json!("interceptor");
            let blocked = match verdict {
                Ok(InterceptVerdict::Allow) => {
                    data["verdict"] = json!("allow");
                    None
                }
                Ok(InterceptVerdict::Block { reason }) => {
                    data["verdict"] = json!("block");
                    data["reason"] = json!(reason);
                    Some(format!("blocked by hook `{}`: {reason}", hook.name()))
                }
                Ok(InterceptVerdict::Rewrite { arguments }) if arguments.is_object() => {
                    data["verdict"] = json!("rewrite");
                    data["rewritten"] = recorded_args(&arguments);
                    args = arguments;
                    None
                }
                Ok(InterceptVerdict::Rewrite { .. }) => {
                    data["verdict"] = json!("failed");
                    data["failure"] = json!("rewrote the arguments to a non-object");
                    Some(format!(
                        "blocked: hook `{}` rewrote the arguments to a non-object (hooks fail closed)",
                        hook.name()
                    ))
                }
                Err(failure) => {
                    data["verdict"] = json!("failed");
                    data["failure"] = json!(failure);
                    Some(format!(
                        "blocked: hook `{}` failed ({failure}); hooks fail closed",
                        hook.name()
                    ))
                }
            };
            self.record(&hook_actor, "hook.verdict", data)?;
            if let Some(text) = blocked {
                let mut data = base(&args);
                data["decision"] = json!("blocked");
                data["by"] = json!(hook_actor);
                data["reason"] = json!(text);
                self.record(&self.actor, "gate.decision", data)?;
                return Ok(Admission::Refused {
                    refusal: Refusal::Blocked,
                    text,
                });
            }
        }

        // 2–4. Assess, deny list, decision table.
        let a = tool.assess(&args);
        let hash = call_hash(session, &call.id, &call.name, &args);
        let mut data = base(&args);
        data["call_hash"] = json!(hash);
        data["risk"] = json!(a.risk);
        data["why"] = json!(a.why);
        data["autonomy"] = json!(self.policy.autonomy);
        if let Some(subject) = &a.subject {
            data["subject"] = subject.clone();
        }
        if a.hardware {
            data["hardware"] = json!(true);
        }
        let refuse = |mut data: Value,
                      decision: &str,
                      by: &str,
                      refusal: Refusal,
                      text: String|
         -> Result<Admission, GateError> {
            data["decision"] = json!(decision);
            data["by"] = json!(by);
            data["reason"] = json!(text);
            self.record(&self.actor, "gate.decision", data)?;
            Ok(Admission::Refused { refusal, text })
        };
        if let Some(reason) = denial(&self.policy.deny_tools, &call.name, &a) {
            return refuse(
                data,
                "blocked",
                "deny_list",
                Refusal::Blocked,
                format!("blocked by the deny list (no autonomy level allows it): {reason}"),
            );
        }
        if let Some(reason) = &a.invalid {
            return refuse(
                data,
                "invalid",
                "tool",
                Refusal::Invalid,
                format!("error: invalid arguments, nothing was run: {reason}"),
            );
        }
        let (decision, by) = match decide_for(self.policy.autonomy, a.risk, a.hardware) {
            Decision::Allow => ("allowed", "policy".to_string()),
            Decision::Block(reason) => {
                return refuse(
                    data,
                    "blocked",
                    "policy",
                    Refusal::Blocked,
                    format!("blocked by policy: {reason}"),
                );
            }
            Decision::NeedsApproval => {
                // 5. Ask, bound to this call's hash.
                let req = ApprovalRequest {
                    call_id: call.id.clone(),
                    call_hash: hash.clone(),
                    session: session.to_string(),
                    tool: call.name.clone(),
                    arguments: args.clone(),
                    risk: a.risk,
                    why: a.why.clone(),
                };
                let mut asked = base(&args);
                asked["call_hash"] = json!(hash);
                asked["risk"] = json!(a.risk);
                asked["why"] = json!(a.why);
                if let Some(subject) = &a.subject {
                    asked["subject"] = subject.clone();
                }
                if a.hardware {
                    asked["hardware"] = json!(true);
                }
                self.record(&self.actor, "approval.request", asked)?;
                on_approval(&req);
                let hook = self.approval_hooks.iter().find(|r| {
                    r.tools.is_empty() || r.tools.iter().any(|p| glob_match(p, &call.name))
                });
                let approver = hook.map_or(&self.approver, |r| &r.approver);
                let timeout = self.policy.approval_timeout;
                let answer = tokio::time::timeout(timeout + APPROVAL_GRACE, approver.approve(&req))
                    .await
                    .unwrap_or_else(|_| ApprovalAnswer::Denied {
                        by: "system".into(),
                        reason: format!("no answer within {} s", timeout.as_secs()),
                    });
                if hook.is_some() {
                    // An approval hook's verdict (or failure) is its own entry.
                    let (verdict, by, reason) = match &answer {
                        ApprovalAnswer::Approved { by, .. } => ("approve", by.clone(), None),
                        ApprovalAnswer::Denied { by, reason } => {
                            ("deny", by.clone(), Some(reason.clone()))
                        }
                    };
                    let mut v = base(&args);
                    v["kind"] = json!("approval");
                    v["verdict"] = json!(verdict);
                    v["reason"] = json!(reason);
                    self.record(&by, "hook.verdict", v)?;
                }
                match answer {
                    ApprovalAnswer::Approved { call_hash, by } if call_hash == hash => {
                        ("approved", by)
                    }
                    ApprovalAnswer::Approved { by, .. } => {
                        return refuse(
                            data,
                            "denied",
                            &by,
                            Refusal::Denied,
                            format!(
                                "denied: the approval from {by} was for a different call \
                                 (tool or arguments changed), so it does not count"
                            ),
                        );
                    }
                    ApprovalAnswer::Denied { by, reason } => {
                        return refuse(
                            data,
                            "denied",
                            &by,
                            Refusal::Denied,
                            format!(
                                "denied: {} risk `{}` needs approval and was not approved ({reason})",
                                a.risk.as_str(),
                                call.name
                            ),
                        );
                    }
                }
            }
        };
        // 6. Recorded before it runs.
        data["decision"] = json!(decision);
        data["by"] = json!(by);
        self.record(&self.actor, "gate.decision", data)?;
        Ok(Admission::Run(Pass {
            session: session.to_string(),
            call_id: call.id.clone(),
            tool,
            args,
            risk: a.risk,
            why: a.why,
            call_hash: hash,
            decision,
            subject: a.subject,
        }))
    }

    /// Step 7: runs an admitted call (with the tool it was admitted for),
    /// records its outcome and tells the observers. The inner result is the
    /// tool's own. A call dropped mid-run (a cancelled turn) or a tool that
    /// panics still leaves a `tool.call` entry, with status `interrupted`.
    pub async fn execute(&self, pass: Pass) -> Result<Result<String, ToolError>, GateError> {
        let mut data = json!({
            "session": pass.session,
            "call_id": pass.call_id,
            "tool": pass.tool.name(),
            "call_hash": pass.call_hash,
        });
        if let Some(subject) = &pass.subject {
            data["subject"] = subject.clone();
        }
        let mut unfinished = Unfinished {
            gate: self,
            data: Some(data.clone()),
        };
        let permit = Permit {
            args: &pass.args,
            risk: pass.risk,
            call_hash: &pass.call_hash,
        };
        let result = pass.tool.execute(permit).await;
        unfinished.data = None;
        let (status, detail) = match &result {
            Ok(text) => ("ok", json!({"result_bytes": text.len()})),
            Err(ToolError::RespondToModel(m)) => ("error", json!({"error": preview(m)})),
            Err(ToolError::Fatal(m)) => ("fatal", json!({"error": preview(m)})),
        };
        data["status"] = json!(status);
        if let (Some(d), Some(extra)) = (data.as_object_mut(), detail.as_object()) {
            d.extend(extra.clone());
        }
        self.record(&self.actor, "tool.call", data)?;
        self.notify(&pass, status, &result).await?;
        Ok(result)
    }

    /// Tells the observers; a failing or slow one is recorded, never waited
    /// on past its budget, and never changes the outcome.
    async fn notify(
        &self,
        pass: &Pass,
        status: &str,
        result: &Result<String, ToolError>,
    ) -> Result<(), GateError> {
        let matching: Vec<&Arc<dyn Observer>> = self
            .observers
            .iter()
            .filter(|o| o.matches(pass.tool.name()))
            .collect();
        if matching.is_empty() {
            return Ok(());
        }
        let report = CallReport {
            call: HookCall {
                session: pass.session.clone(),
                call_id: pass.call_id.clone(),
                tool: pass.tool.name().to_string(),
                arguments: pass.args.clone(),
                risk: pass.risk,
                why: pass.why.clone(),
            },
            decision: pass.decision.to_string(),
            status: status.to_string(),
            preview: match result {
                Ok(t) => preview(t),
                Err(e) => preview(&e.to_string()),
            },
        };
        let budget = crate::hooks::HookKind::Observer.budget();
        let runs = matching.iter().map(|o| async {
            let outcome = match tokio::time::timeout(budget, o.observe(&report)).await {
                Ok(Ok(())) => None,
                Ok(Err(f)) => Some(f.to_string()),
                Err(_) => Some(format!("timed out after {} ms", budget.as_millis())),
            };
            (o.name().to_string(), outcome)
        });
        for (name, failure) in futures_util::future::join_all(runs).await {
            if let Some(failure) = failure {
                self.record(
                    &format!("hook:{name}"),
                    "hook.verdict",
                    json!({
                        "hook": name,
                        "kind": "observer",
                        "session": pass.session,
                        "call_id": pass.call_id,
                        "tool": pass.tool.name(),
                        "verdict": "failed",
                        "failure": failure,
                    }),
                )?;
            }
        }
        Ok(())
    }

    /// Admits and runs one call: for callers with a single call (the CLI,
    /// tests). The agent loop uses [`Gate::admit`] and [`Gate::execute`] to
    /// run admitted low-risk calls in parallel.
    pub async fn call(
        &self,
        session: &str,
        tool: Option<Arc<dyn Tool>>,
        call: &ToolCall,
        on_approval: &(dyn Fn(&ApprovalRequest) + Send + Sync),
    ) -> Result<CallOutcome, GateError> {
        match self.admit(session, tool, call, on_approval).await? {
            Admission::Refused { refusal, text } => Ok(CallOutcome::Refused { refusal, text }),
            Admission::Run(pass) => Ok(CallOutcome::Ran(self.execute(pass).await?)),
        }
    }
}

/// Records `tool.call` with status `interrupted` unless disarmed: the
/// outcome of a call whose future was dropped mid-run or whose tool
/// panicked is still in the trail (appending is synchronous, so it can run
/// in `drop`; if the trail refuses, there is nobody left to tell).
struct Unfinished<'g> {
    gate: &'g Gate,
    data: Option<Value>,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(mut data) = self.data.take() {
            data["status"] = json!("interrupted");
            let _ = self.gate.audit.append(&self.gate.actor, "tool.call", data);
        }
    }
}

/// What [`Gate::call`] produced.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    Ran(Result<String, ToolError>),
    Refused { refusal: Refusal, text: String },
}

fn preview(text: &str) -> String {
    text.chars().take(PREVIEW_CHARS).collect()
}

/// Matches `name` against a glob where `*` is any run of characters
/// (including none) and `?` is exactly one; everything else is literal.
/// Used for hook tool filters and deny lists.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Greedy with backtracking to the last `*`: linear in practice.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod glob_tests {
    use super::glob_match;

    #[test]
    fn glob_table() {
        for (p, n, want) in [
            ("shell", "shell", true),
            ("shell", "shells", false),
            ("file_*", "file_write", true),
            ("file_*", "file_", true),
            ("file_*", "fil", false),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("i2c_?ead", "i2c_read", true),
            ("*_write", "gpio_write", true),
            ("*_write", "gpio_writer", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("mkfs*", "mkfs.ext4", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} vs {n}");
        }
    }
}
