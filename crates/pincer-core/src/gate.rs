//! The policy gate (PO1–PO5, HK1): the one place a tool call is
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
//! 4. The **decision table** ([`crate::policy::decide_for`], PO3) gives allow, block, or
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

use crate::actor;
use crate::approvals::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::audit::schema::{
    ApprovalRequested, CallRef, CallStatus, GateDecision, HookRole, HookSaid, HookVerdict,
    Judgement, Outcome, Payload, ToolCallDone,
};
use crate::audit::{Audit, AuditError};
use crate::canonical::{sha256_hex, to_canonical_string};
use crate::glob::glob_match;
use crate::hooks::{CallReport, HookCall, InterceptVerdict, Interceptor, Observer};
use crate::message::ToolCall;
use crate::policy::{Autonomy, Decision, Risk, decide_for};
use crate::tool::{Assessment, Tool, ToolError};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

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
///         risk: pincer_core::policy::Risk::Low,
///         call_hash: "",
///     }
/// }
/// ```
pub struct Permit<'a> {
    args: &'a Value,
    risk: Risk,
    call_hash: &'a str,
    notes: &'a Notes,
}

/// What a running call asked to have recorded in its `tool.call` entry.
type Notes = std::sync::Mutex<Vec<String>>;

fn take_notes(notes: &Notes) -> Vec<String> {
    std::mem::take(
        &mut *notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
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

    /// Records `text` in the call's `tool.call` audit entry (`notes`): what
    /// a person auditing the call must know about how it ran, e.g. a
    /// sandbox layer that degraded or the network being on.
    pub fn note(&self, text: impl Into<String>) {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(text.into());
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
///     pass.risk = pincer_core::policy::Risk::Low;
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

    fn record<P: Payload>(&self, actor: &str, payload: &P) -> Result<(), GateError> {
        let receipt = self.audit.record(actor, payload)?;
        tracing::debug!(
            seq = receipt.seq,
            kind = P::KIND.as_str(),
            actor,
            "audit entry"
        );
        Ok(())
    }

    /// Writes the `gate.decision` entry of a refused call and says so.
    fn refuse(
        &self,
        mut entry: GateDecision,
        decision: Outcome,
        by: &str,
        refusal: Refusal,
        text: String,
    ) -> Result<Admission, GateError> {
        entry.decision = decision;
        entry.by = Some(by.to_string());
        entry.reason = Some(text.clone());
        self.record(&self.actor, &entry)?;
        Ok(Admission::Refused { refusal, text })
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
        let call_ref = CallRef {
            session: session.to_string(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
        };
        let entry = |args: &Value| GateDecision {
            call: call_ref.clone(),
            arguments: recorded_args(args),
            judgement: None,
            decision: Outcome::UnknownTool,
            by: None,
            reason: None,
        };
        // The tool judged must be the tool the call names.
        let Some(tool) = tool.filter(|t| t.name() == call.name) else {
            self.record(&self.actor, &entry(&call.arguments_value()))?;
            return Ok(Admission::Refused {
                refusal: Refusal::Unknown,
                text: format!("error: there is no tool `{}`", call.name),
            });
        };
        // 1. Interceptors, in order; a rewrite feeds the next one.
        let args = match self
            .intercept(&call_ref, tool.as_ref(), call.arguments_value())
            .await?
        {
            Ok(args) => args,
            Err((hook_actor, text, args)) => {
                return self.refuse(
                    entry(&args),
                    Outcome::Blocked,
                    &hook_actor,
                    Refusal::Blocked,
                    text,
                );
            }
        };

        // 2–4. Assess, deny list, decision table.
        let a = tool.assess(&args);
        let hash = call_hash(session, &call.id, &call.name, &args);
        let mut judged = entry(&args);
        judged.judgement = Some(Judgement {
            call_hash: hash.clone(),
            risk: a.risk,
            why: a.why.clone(),
            autonomy: self.policy.autonomy,
            subject: a.subject.clone(),
            hardware: a.hardware,
        });
        if let Some(reason) = denial(&self.policy.deny_tools, &call.name, &a) {
            return self.refuse(
                judged,
                Outcome::Blocked,
                "deny_list",
                Refusal::Blocked,
                format!("blocked by the deny list (no autonomy level allows it): {reason}"),
            );
        }
        if let Some(reason) = &a.invalid {
            return self.refuse(
                judged,
                Outcome::Invalid,
                "tool",
                Refusal::Invalid,
                format!("error: invalid arguments, nothing was run: {reason}"),
            );
        }
        let (decision, by) = match decide_for(self.policy.autonomy, a.risk, a.hardware) {
            Decision::Allow => (Outcome::Allowed, "policy".to_string()),
            Decision::Block(reason) => {
                return self.refuse(
                    judged,
                    Outcome::Blocked,
                    "policy",
                    Refusal::Blocked,
                    format!("blocked by policy: {reason}"),
                );
            }
            Decision::NeedsApproval => {
                match self
                    .approval(&call_ref, &args, &a, &hash, judged.clone(), on_approval)
                    .await?
                {
                    Ok(by) => (Outcome::Approved, by),
                    Err(refused) => return Ok(refused),
                }
            }
        };
        // 6. Recorded before it runs.
        judged.decision = decision;
        judged.by = Some(by);
        self.record(&self.actor, &judged)?;
        Ok(Admission::Run(Pass {
            session: session.to_string(),
            call_id: call.id.clone(),
            tool,
            args,
            risk: a.risk,
            why: a.why,
            call_hash: hash,
            decision: decision.as_str(),
            subject: a.subject,
        }))
    }

    /// Step 5: asks for an approval bound to this call's hash, recording the
    /// request first. `Ok(by)`: approved by `by`; `Err(admission)`: refused
    /// (the refusal is recorded).
    async fn approval(
        &self,
        call_ref: &CallRef,
        args: &Value,
        a: &Assessment,
        hash: &str,
        judged: GateDecision,
        on_approval: &(dyn Fn(&ApprovalRequest) + Send + Sync),
    ) -> Result<Result<String, Admission>, GateError> {
        let req = ApprovalRequest {
            call_id: call_ref.call_id.clone(),
            call_hash: hash.to_string(),
            session: call_ref.session.clone(),
            tool: call_ref.tool.clone(),
            arguments: args.clone(),
            risk: a.risk,
            why: a.why.clone(),
        };
        self.record(
            &self.actor,
            &ApprovalRequested {
                call: call_ref.clone(),
                arguments: recorded_args(args),
                call_hash: hash.to_string(),
                risk: a.risk,
                why: a.why.clone(),
                subject: a.subject.clone(),
                hardware: a.hardware,
            },
        )?;
        on_approval(&req);
        let refused = match self.ask(call_ref, &req).await? {
            ApprovalAnswer::Approved { call_hash, by } if call_hash == hash => return Ok(Ok(by)),
            ApprovalAnswer::Approved { by, .. } => self.refuse(
                judged,
                Outcome::Denied,
                &by,
                Refusal::Denied,
                format!(
                    "denied: the approval from {by} was for a different call \
                     (tool or arguments changed), so it does not count"
                ),
            )?,
            ApprovalAnswer::Denied { by, reason } => self.refuse(
                judged,
                Outcome::Denied,
                &by,
                Refusal::Denied,
                format!(
                    "denied: {} risk `{}` needs approval and was not approved ({reason})",
                    a.risk.as_str(),
                    call_ref.tool
                ),
            )?,
        };
        Ok(Err(refused))
    }

    /// Step 1: the interceptors matching the call, in order, each recorded.
    /// `Ok(Ok(args))`: the (possibly rewritten) arguments to judge;
    /// `Ok(Err((hook actor, reason, args)))`: a hook blocked the call or
    /// failed (hooks fail closed).
    async fn intercept(
        &self,
        call: &CallRef,
        tool: &dyn Tool,
        mut args: Value,
    ) -> Result<Result<Value, (String, String, Value)>, GateError> {
        for hook in self.interceptors.iter().filter(|h| h.matches(&call.tool)) {
            let a = tool.assess(&args);
            let hc = HookCall {
                session: call.session.clone(),
                call_id: call.call_id.clone(),
                tool: call.tool.clone(),
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
            let hook_actor = actor::hook(hook.name());
            let mut v = HookVerdict {
                hook: Some(hook.name().to_string()),
                kind: HookRole::Interceptor,
                call: call.clone(),
                arguments: Some(recorded_args(&args)),
                verdict: HookSaid::Allow,
                reason: None,
                rewritten: None,
                failure: None,
            };
            let blocked = match verdict {
                Ok(InterceptVerdict::Allow) => None,
                Ok(InterceptVerdict::Block { reason }) => {
                    v.verdict = HookSaid::Block;
                    let text = format!("blocked by hook `{}`: {reason}", hook.name());
                    v.reason = Some(reason);
                    Some(text)
                }
                Ok(InterceptVerdict::Rewrite { arguments }) if arguments.is_object() => {
                    v.verdict = HookSaid::Rewrite;
                    v.rewritten = Some(recorded_args(&arguments));
                    args = arguments;
                    None
                }
                Ok(InterceptVerdict::Rewrite { .. }) => {
                    v.verdict = HookSaid::Failed;
                    v.failure = Some("rewrote the arguments to a non-object".into());
                    Some(format!(
                        "blocked: hook `{}` rewrote the arguments to a non-object (hooks fail closed)",
                        hook.name()
                    ))
                }
                Err(failure) => {
                    v.verdict = HookSaid::Failed;
                    let text = format!(
                        "blocked: hook `{}` failed ({failure}); hooks fail closed",
                        hook.name()
                    );
                    v.failure = Some(failure);
                    Some(text)
                }
            };
            self.record(&hook_actor, &v)?;
            if let Some(text) = blocked {
                return Ok(Err((hook_actor, text, args)));
            }
        }
        Ok(Ok(args))
    }

    /// Step 5: asks the approval hook matching the tool, else the approver,
    /// with the gate's own backstop on the timeout. An approval hook's
    /// answer is its own entry.
    async fn ask(
        &self,
        call: &CallRef,
        req: &ApprovalRequest,
    ) -> Result<ApprovalAnswer, GateError> {
        let hook = self
            .approval_hooks
            .iter()
            .find(|r| r.tools.is_empty() || r.tools.iter().any(|p| glob_match(p, &call.tool)));
        let approver = hook.map_or(&self.approver, |r| &r.approver);
        let timeout = self.policy.approval_timeout;
        let answer = tokio::time::timeout(timeout + APPROVAL_GRACE, approver.approve(req))
            .await
            .unwrap_or_else(|_| ApprovalAnswer::Denied {
                by: actor::SYSTEM.into(),
                reason: format!("no answer within {} s", timeout.as_secs()),
            });
        if hook.is_some() {
            let (verdict, by, reason) = match &answer {
                ApprovalAnswer::Approved { by, .. } => (HookSaid::Approve, by.clone(), None),
                ApprovalAnswer::Denied { by, reason } => {
                    (HookSaid::Deny, by.clone(), Some(reason.clone()))
                }
            };
            self.record(
                &by,
                &HookVerdict {
                    hook: None,
                    kind: HookRole::Approval,
                    call: call.clone(),
                    arguments: Some(recorded_args(&req.arguments)),
                    verdict,
                    reason,
                    rewritten: None,
                    failure: None,
                },
            )?;
        }
        Ok(answer)
    }

    /// Step 7: runs an admitted call (with the tool it was admitted for),
    /// records its outcome and tells the observers. The inner result is the
    /// tool's own. A call dropped mid-run (a cancelled turn) or a tool that
    /// panics still leaves a `tool.call` entry, with status `interrupted`.
    pub async fn execute(&self, pass: Pass) -> Result<Result<String, ToolError>, GateError> {
        let mut done = ToolCallDone {
            call: CallRef {
                session: pass.session.clone(),
                call_id: pass.call_id.clone(),
                tool: pass.tool.name().to_string(),
            },
            call_hash: pass.call_hash.clone(),
            subject: pass.subject.clone(),
            status: CallStatus::Interrupted,
            result_bytes: None,
            error: None,
            notes: Vec::new(),
        };
        let notes = Notes::default();
        let mut unfinished = Unfinished {
            gate: self,
            done: Some(done.clone()),
            notes: &notes,
        };
        let permit = Permit {
            args: &pass.args,
            risk: pass.risk,
            call_hash: &pass.call_hash,
            notes: &notes,
        };
        let result = pass.tool.execute(permit).await;
        unfinished.done = None;
        done.notes = take_notes(&notes);
        match &result {
            Ok(text) => {
                done.status = CallStatus::Ok;
                done.result_bytes = Some(text.len());
            }
            Err(ToolError::RespondToModel(m)) => {
                done.status = CallStatus::Error;
                done.error = Some(preview(m));
            }
            Err(ToolError::Fatal(m)) => {
                done.status = CallStatus::Fatal;
                done.error = Some(preview(m));
            }
        }
        self.record(&self.actor, &done)?;
        self.notify(&pass, done.status.as_str(), &result).await?;
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
                    &actor::hook(&name),
                    &HookVerdict {
                        hook: Some(name),
                        kind: HookRole::Observer,
                        call: CallRef {
                            session: pass.session.clone(),
                            call_id: pass.call_id.clone(),
                            tool: pass.tool.name().to_string(),
                        },
                        arguments: None,
                        verdict: HookSaid::Failed,
                        reason: None,
                        rewritten: None,
                        failure: Some(failure),
                    },
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
    done: Option<ToolCallDone>,
    notes: &'g Notes,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(mut done) = self.done.take() {
            done.notes = take_notes(self.notes);
            let _ = self.gate.audit.record(&self.gate.actor, &done);
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
    crate::text::cut(text, PREVIEW_CHARS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code
mod tests {
    use super::*;

    #[test]
    fn big_arguments_are_recorded_by_hash() {
        let small = json!({"path": "a"});
        assert_eq!(recorded_args(&small), small);
        let big = json!({"content": "é".repeat(5000)});
        let r = recorded_args(&big);
        assert_eq!(r["bytes"], to_canonical_string(&big).len());
        assert_eq!(
            r["sha256"],
            sha256_hex(to_canonical_string(&big).as_bytes())
        );
        assert!(r["prefix"].as_str().unwrap().len() <= 4096);
    }
}
