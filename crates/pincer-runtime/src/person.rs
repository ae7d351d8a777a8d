//! What a person does outside the gate — answering an approval, writing
//! memory, running a hardware operation or a command in the agent's
//! sandbox, consolidating the trail — each
//! recorded in the audit trail under the principal that did it. The CLI,
//! and later the gateway and chat channels, call these; none records on
//! its own.

use crate::{Env, RuntimeError, Settings};
use pincer_core::approvals::{ApprovalQueue, Pending, Resolution};
use pincer_core::audit::Audit;
use pincer_core::audit::schema::{
    AnswerWord, ApprovalAnswered, CallRef, CallStatus, ExecResult, ExecRun, HwOp, HwResult,
    MemoryForget, MemoryWrite, Outcome,
};
use pincer_core::home::Home;
use pincer_core::policy::Risk;
use pincer_hw::{Hardware, HwError};
use pincer_memory::{NewPage, Page, PageStore};
use pincer_sandbox::{Finished, SandboxError, Spec};
use pincer_tools::hw::{Caller, Facts, HwKind, parse_request};
use pincer_tools::{NetworkMode, SandboxMode, ShellSandbox};
use serde_json::Value;
use std::path::Path;

/// Why a person's operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PersonError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Audit(#[from] pincer_core::audit::AuditError),
    #[error(transparent)]
    Queue(#[from] pincer_core::approvals::QueueError),
    #[error(transparent)]
    Memory(#[from] pincer_memory::MemoryError),
    #[error("the audit trail refused the memory.write entry, so the page was removed: {0}")]
    MemoryUnrecorded(pincer_core::audit::AuditError),
    #[error("the source `{0}` uses a prefix reserved for pincer's own writes (`audit:`, `agent:`)")]
    ReservedSource(String),
    #[error(transparent)]
    Consolidate(#[from] pincer_memory::consolidate::ConsolidateError),
    #[error(transparent)]
    Inbox(#[from] crate::inbox::InboxError),
}

/// Answers approval `id` as `principal`. The answer is recorded before it is
/// given (the waiting agent may act on it at once, and the trail must show
/// the answer before the action); an answer that then cannot be delivered
/// is recorded too.
pub fn answer_approval(
    home: &Home,
    principal: &str,
    id: &str,
    resolution: Resolution,
) -> Result<Pending, PersonError> {
    let queue = ApprovalQueue::open(&home.approvals_dir())?;
    let p = queue.get(id)?;
    let audit = crate::open_audit(home)?;
    let (word, reason) = match &resolution {
        Resolution::Approved { .. } => (AnswerWord::Approved, None),
        Resolution::Denied { reason, .. } => (AnswerWord::Denied, Some(reason.clone())),
    };
    let mut entry = ApprovalAnswered {
        id: p.id.clone(),
        call_hash: p.call_hash.clone(),
        call: CallRef {
            session: p.session.clone(),
            call_id: p.call_id.clone(),
            tool: p.tool.clone(),
        },
        answer: word,
        reason,
        error: None,
    };
    audit.record(principal, &entry)?;
    if let Err(e) = queue.answer(id, resolution) {
        entry.answer = AnswerWord::NotDelivered;
        entry.error = Some(e.to_string());
        audit.record(principal, &entry)?;
        return Err(e.into());
    }
    Ok(p)
}

/// Answers approval `id` waiting in `inbox` as `principal`, which the
/// front-end authenticated and allowed to approve. As with
/// [`answer_approval`], the answer is recorded before it is given, and an
/// answer that then cannot be delivered is recorded too.
pub fn answer_inbox(
    audit: &Audit,
    inbox: &crate::inbox::ApprovalInbox,
    principal: &str,
    id: &str,
    answer: crate::inbox::InboxAnswer,
) -> Result<crate::inbox::Waiting, PersonError> {
    let w = inbox.get(id)?;
    let (word, reason) = match &answer {
        crate::inbox::InboxAnswer::Approve => (AnswerWord::Approved, None),
        crate::inbox::InboxAnswer::Deny { reason } => (AnswerWord::Denied, Some(reason.clone())),
    };
    let mut entry = ApprovalAnswered {
        id: w.id.clone(),
        call_hash: w.call_hash.clone(),
        call: CallRef {
            session: w.session.clone(),
            call_id: w.call_id.clone(),
            tool: w.tool.clone(),
        },
        answer: word,
        reason,
        error: None,
    };
    audit.record(principal, &entry)?;
    if let Err(e) = inbox.answer(id, principal, answer) {
        entry.answer = AnswerWord::NotDelivered;
        entry.error = Some(e.to_string());
        audit.record(principal, &entry)?;
        return Err(e.into());
    }
    Ok(w)
}

/// Writes memory page `new` and records it (`memory.write`) as
/// `principal`. The trail is opened first, and the page is removed again
/// if its entry fails: no page stays behind that no entry records.
pub fn write_memory(home: &Home, principal: &str, new: NewPage) -> Result<Page, PersonError> {
    if new.source.starts_with("audit:") || new.source.starts_with("agent:") {
        return Err(PersonError::ReservedSource(new.source));
    }
    let audit = crate::open_audit(home)?;
    let store = PageStore::open(home.memory_dir())?;
    let page = store.write(new)?;
    let recorded = audit.record(
        principal,
        &MemoryWrite {
            id: page.meta.id.clone(),
            title: page.meta.title.clone(),
            source: page.meta.source.clone(),
            pinned: page.meta.pinned,
        },
    );
    if let Err(e) = recorded {
        let _ = store.delete(&page.meta.id);
        return Err(PersonError::MemoryUnrecorded(e));
    }
    Ok(page)
}

/// What [`remember`] did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Remembered {
    pub id: String,
    /// False when the same fact was already pinned: no second page.
    pub new: bool,
}

/// Pins `fact` as a page of its own, unless a pinned page already says
/// exactly that (whitespace aside): `pincer remember` twice is one page.
pub fn remember(home: &Home, principal: &str, fact: &str) -> Result<Remembered, PersonError> {
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let store = PageStore::open(home.memory_dir())?;
    let (pinned, _) = store.pinned()?;
    if let Some(p) = pinned.iter().find(|p| norm(&p.body) == norm(fact)) {
        return Ok(Remembered {
            id: p.meta.id.clone(),
            new: false,
        });
    }
    let title: String = fact.lines().next().unwrap_or("").chars().take(80).collect();
    let page = write_memory(
        home,
        principal,
        NewPage {
            id: None,
            title,
            tags: vec!["fact".into()],
            source: principal.into(),
            pinned: true,
            body: fact.to_string(),
        },
    )?;
    Ok(Remembered {
        id: page.meta.id,
        new: true,
    })
}

/// Deletes page `id`, recorded as `memory.forget` first (so a page never
/// vanishes unrecorded; a failed delete after the entry is said).
pub fn forget(home: &Home, principal: &str, id: &str) -> Result<Page, PersonError> {
    let store = PageStore::open(home.memory_dir())?;
    let page = store.read(id)?;
    let audit = crate::open_audit(home)?;
    audit.record(
        principal,
        &MemoryForget {
            id: page.meta.id.clone(),
            title: page.meta.title.clone(),
        },
    )?;
    store.delete(id)?;
    Ok(page)
}

/// Pins or unpins page `id`, recorded as a `memory.write` of the page.
pub fn set_pinned(
    home: &Home,
    principal: &str,
    id: &str,
    pinned: bool,
) -> Result<Page, PersonError> {
    let store = PageStore::open(home.memory_dir())?;
    let page = store.read(id)?;
    let audit = crate::open_audit(home)?;
    let updated = store.update(NewPage {
        id: Some(page.meta.id.clone()),
        title: page.meta.title.clone(),
        tags: page.meta.tags.clone(),
        source: page.meta.source.clone(),
        pinned,
        body: page.body.clone(),
    })?;
    let recorded = audit.record(
        principal,
        &MemoryWrite {
            id: updated.meta.id.clone(),
            title: updated.meta.title.clone(),
            source: updated.meta.source.clone(),
            pinned,
        },
    );
    if let Err(e) = recorded {
        // Put it back: no change stays that no entry records.
        let _ = store.update(NewPage {
            id: Some(page.meta.id.clone()),
            title: page.meta.title,
            tags: page.meta.tags,
            source: page.meta.source,
            pinned: page.meta.pinned,
            body: page.body,
        });
        return Err(PersonError::MemoryUnrecorded(e));
    }
    Ok(updated)
}

/// What [`consolidate`] did: the pages it wrote (or finished committing),
/// in order, and whether entries are left for a later call.
#[derive(Debug, serde::Serialize)]
pub struct Consolidation {
    pub pages: Vec<pincer_memory::consolidate::Consolidated>,
    /// The backlog needed more than `max_pages` pages.
    pub more: bool,
}

/// Turns the audit trail since the last run into session pages, as
/// `principal`: one page per call of the consolidator, each within its
/// size budget, until the trail is caught up or `max_pages` were written
/// (a months-long backlog is several pages, never one that cannot be
/// written).
pub fn consolidate(
    home: &Home,
    principal: &str,
    max_pages: usize,
) -> Result<Consolidation, PersonError> {
    let store = PageStore::open(home.memory_dir())?;
    let audit = crate::open_audit(home)?;
    let sink = pincer_memory::consolidate::AuditedStore {
        store: &store,
        audit: &audit,
        actor: principal,
    };
    let watermark = home.memory_dir().join("consolidation.json");
    let mut pages = Vec::new();
    loop {
        let done = pincer_memory::consolidate::consolidate(&audit, &sink, &watermark, principal)?;
        if done.page.is_none() {
            return Ok(Consolidation { pages, more: false });
        }
        let more = done.more;
        pages.push(done);
        if !more {
            return Ok(Consolidation { pages, more: false });
        }
        if pages.len() >= max_pages {
            return Ok(Consolidation { pages, more: true });
        }
    }
}

/// What a person's hardware operation produced.
#[derive(Debug)]
pub struct HwDone {
    /// The operation's name (`i2c_read`…).
    pub op: &'static str,
    pub outcome: Result<pincer_tools::hw::Outcome, HwError>,
}

/// Runs hardware operation `kind` with `args` (every field a string, checked
/// by the same parser the agent's tools use) for a person: not gated, but
/// recorded — an `hw.op` entry before the bus is touched, an `hw.result`
/// entry with the outcome. Bad input is recorded as `invalid` and touches
/// no bus. The outer error is the trail's; the operation's own is in
/// [`HwDone::outcome`].
pub fn hw_op(
    home: &Home,
    audit: &Audit,
    hw: &Hardware,
    principal: &str,
    kind: HwKind,
    args: &Value,
) -> Result<HwDone, PersonError> {
    let facts = Facts::of(hw);
    let op = kind.name();
    let request = match parse_request(kind, args, &facts, Caller::Person) {
        Ok(r) => r,
        Err(e) => {
            record_invalid(audit, principal, kind, args, &e)?;
            return Ok(HwDone {
                op,
                outcome: Err(e),
            });
        }
    };
    let subject = request.subject(&facts);
    audit.record(
        principal,
        &HwOp {
            op: op.to_string(),
            arguments: Some(args.clone()),
            subject: Some(subject.clone()),
            risk: request.risk(),
            decision: Outcome::Allowed,
            by: Some("a person at the terminal (people are recorded, not gated)".into()),
            board: None,
            error: None,
        },
    )?;
    let outcome = request.run_blocking(hw, &facts, &home.camera_dir());
    let (status, result, error) = match &outcome {
        Ok(o) => (CallStatus::Ok, Some(o.json.clone()), None),
        Err(e) => (CallStatus::Error, None, Some(e.to_string())),
    };
    audit.record(
        principal,
        &HwResult {
            op: op.to_string(),
            subject: Some(subject),
            status,
            result,
            error,
        },
    )?;
    Ok(HwDone { op, outcome })
}

/// Bad input is an attempt too: recorded, and nothing touched a bus.
pub fn record_invalid(
    audit: &Audit,
    principal: &str,
    kind: HwKind,
    args: &Value,
    e: &HwError,
) -> Result<(), PersonError> {
    audit.record(
        principal,
        &HwOp {
            op: kind.name().to_string(),
            arguments: Some(args.clone()),
            subject: None,
            risk: kind.risk(),
            decision: Outcome::Invalid,
            by: None,
            board: None,
            error: Some(e.to_string()),
        },
    )?;
    Ok(())
}

/// Records a person's look at the board (`hw info`) before it opens the
/// default I2C bus to ask its functions.
pub fn record_hw_info(audit: &Audit, principal: &str, hw: &Hardware) -> Result<(), PersonError> {
    let bus = hw.default_i2c_bus().map(|n| format!("/dev/i2c-{n}"));
    let bus = bus.as_deref().unwrap_or(if hw.sim().is_some() {
        "sim-i2c"
    } else {
        "none"
    });
    audit.record(
        principal,
        &HwOp {
            op: "hw_info".into(),
            arguments: None,
            subject: Some(serde_json::json!({"op": "hw_info", "bus": bus})),
            risk: Risk::Low,
            decision: Outcome::Allowed,
            by: None,
            board: Some(hw.board().name.to_string()),
            error: None,
        },
    )?;
    Ok(())
}

/// A command a person runs in exactly the sandbox the agent's shell gets
/// (`pincer exec`): the agent's workspace, `[shell]`'s limits and
/// degradable layers, pincer's state hidden; stdin empty, stdout and
/// stderr the person's own.
#[derive(Debug)]
pub struct ExecPlan {
    sandbox: ShellSandbox,
    spec: Spec,
}

impl ExecPlan {
    /// Refused when `[shell] sandbox = "off"` (there is no sandbox to run
    /// in) and, for `network`, when `[shell] network = "off"` (no agent
    /// command can have it either).
    pub fn new(
        home: &Home,
        settings: &Settings,
        env: &Env,
        workspace: Option<&Path>,
        argv: Vec<String>,
        network: bool,
    ) -> Result<ExecPlan, RuntimeError> {
        if settings.shell.sandbox == SandboxMode::Off {
            return Err(RuntimeError::Exec(
                "[shell] sandbox = \"off\": the agent's commands run without a sandbox, so there is none to run this in".into(),
            ));
        }
        if network && settings.shell.network == NetworkMode::Off {
            return Err(RuntimeError::Exec(
                "--network: [shell] network = \"off\", so no agent command can have the network; set network = \"ask\" to allow calls that ask for it".into(),
            ));
        }
        let dir = crate::tools::workspace_dir(home, settings, env, workspace)?;
        let ws = crate::tools::open_workspace(home, &dir)?;
        let sandbox = crate::tools::shell_sandbox(home, settings, &ws);
        let (program, args) = match argv.split_first() {
            Some((p, rest)) => (
                p.as_str(),
                rest.iter().map(String::as_str).collect::<Vec<_>>(),
            ),
            None => {
                return Err(RuntimeError::Exec(
                    "give the command to run after --".into(),
                ));
            }
        };
        let spec = sandbox
            .spec(
                &ws,
                program,
                &args,
                pincer_core::actor::HUMAN_CLI,
                &env.shell,
                network,
            )
            .map_err(|e| RuntimeError::Exec(e.to_string()))?;
        Ok(ExecPlan { sandbox, spec })
    }

    pub fn workspace(&self) -> &Path {
        &self.spec.workspace
    }
}

/// Runs `plan` for `principal`, recorded: an `exec.run` entry before it
/// starts, an `exec.result` entry with how it ended. The outer error is
/// the trail's; the run's own (a layer that failed, a program that is
/// missing: nothing ran) is the inner one.
pub fn exec(
    audit: &Audit,
    principal: &str,
    plan: ExecPlan,
) -> Result<Result<Finished, SandboxError>, PersonError> {
    audit.record(
        principal,
        &ExecRun {
            argv: plan.spec.argv.clone(),
            workspace: plan.spec.workspace.display().to_string(),
            network: plan.spec.network,
        },
    )?;
    let outcome = run_inheriting(&plan);
    let result = match &outcome {
        Ok(f) => ExecResult {
            status: CallStatus::Ok,
            exit: Some(f.exit.to_string()),
            notes: f.notes(),
            error: None,
        },
        Err(e) => ExecResult {
            status: CallStatus::Error,
            exit: None,
            notes: Vec::new(),
            error: Some(e.to_string()),
        },
    };
    audit.record(principal, &result)?;
    Ok(outcome)
}

/// Prepares, starts and waits for the sandbox with the person's stdout and
/// stderr.
fn run_inheriting(plan: &ExecPlan) -> Result<Finished, SandboxError> {
    let prepared = plan.sandbox.sandbox.prepare(&plan.spec)?;
    let mut command = prepared.command;
    let io = |what: &str, source| SandboxError::Io {
        what: what.to_string(),
        source,
    };
    let mut child = command
        .spawn()
        .map_err(|e| io("cannot start the sandbox helper", e))?;
    let status = child
        .wait()
        .map_err(|e| io("waiting for the sandbox helper failed", e))?;
    prepared.pending.finish(status, false)
}

/// The level of every GPIO pin of the board, for a person: one `hw.op`
/// entry before any line is read, one `hw.result` with the levels (a pin
/// that cannot be read carries its error). Reads leave each line's
/// direction as it is.
pub fn gpio_snapshot(
    audit: &Audit,
    hw: &Hardware,
    principal: &str,
) -> Result<Vec<GpioLevel>, PersonError> {
    let pins: Vec<u32> = hw
        .board()
        .pins
        .iter()
        .filter(|p| matches!(p.function, pincer_hw::PinFunction::Gpio { .. }))
        .map(|p| p.pin)
        .collect();
    let subject = serde_json::json!({"op": "gpio_snapshot", "pins": pins});
    audit.record(
        principal,
        &HwOp {
            op: "gpio_snapshot".into(),
            arguments: None,
            subject: Some(subject.clone()),
            risk: Risk::Low,
            decision: Outcome::Allowed,
            by: None,
            board: Some(hw.board().name.to_string()),
            error: None,
        },
    )?;
    let levels: Vec<GpioLevel> = pins
        .iter()
        .map(|&pin| match hw.gpio_read(pin) {
            Ok((p, level)) => GpioLevel {
                pin,
                name: p.name().to_string(),
                level: Some(level.as_u8()),
                error: None,
            },
            Err(e) => GpioLevel {
                pin,
                name: match hw
                    .board()
                    .pins
                    .iter()
                    .find(|x| x.pin == pin)
                    .map(|x| &x.function)
                {
                    Some(pincer_hw::PinFunction::Gpio { name, .. }) => (*name).to_string(),
                    _ => String::new(),
                },
                level: None,
                error: Some(e.to_string()),
            },
        })
        .collect();
    audit.record(
        principal,
        &HwResult {
            op: "gpio_snapshot".into(),
            subject: Some(subject),
            status: CallStatus::Ok,
            result: Some(serde_json::to_value(&levels).unwrap_or_default()),
            error: None,
        },
    )?;
    Ok(levels)
}

/// One pin of a [`gpio_snapshot`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpioLevel {
    /// The header pin number.
    pub pin: u32,
    /// The line's name in the board table.
    pub name: String,
    /// 0 or 1; absent when the line could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
