//! The agent loop (AG1–AG2): model → tool calls → results → model,
//! until a final reply or `max_tool_iterations`.
//!
//! Order of every step, and why:
//!
//! 1. A turn that was cancelled last time (its future dropped) left this
//!    in-memory view behind the file: reload it, and close any tool call left
//!    without a result on disk (CX7, AG2).
//! 2. The user message is appended and fsynced before anything else
//!    happens (ST6: durable before it is acknowledged).
//! 3. Each model request is trimmed first (CX); a trim that drops turns is
//!    persisted (skip + summary) before the request goes out.
//! 4. The model's reply is persisted before any tool it asks for runs, and
//!    the results are persisted before the model sees them. A crash anywhere
//!    leaves a session that loads into a valid request.
//! 5. Every tool call passes the [`Gate`] (hooks, risk, deny list, decision
//!    table, approval, audit entry) one at a time, in call order; then the
//!    admitted low-risk calls of one reply run in parallel, and calls that
//!    change something run alone, in order. A tool cannot run any other
//!    way: it needs a permit only the gate makes.
//!
//! The loop never prints: it reports [`AgentEvent`]s to a callback, and the
//! front-end (CLI, gateway) renders them.

use crate::approvals::ApprovalRequest;
use crate::gate::{Admission, Gate, GateError, Pass, Refusal};
use crate::message::{Message, Role, ToolCall};
use crate::policy::Risk;
use crate::provider::{
    BoxFuture, ChatRequest, FinishReason, Provider, ProviderError, ToolSpec, Usage,
};
use crate::session::{SessionError, SessionStore, SessionView, SessionWriter};
use crate::tool::{Tool, ToolError};
use crate::trim::{self, Budget, CharRatio, TokenCounter, TrimError, TrimInput};
use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;

/// Everything the loop needs that is not a collaborator.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// The system prompt, skills included; the running summary is added per
    /// request. Never stored in the session.
    pub system_prompt: String,
    pub max_tool_iterations: usize,
    pub context_window: usize,
    pub output_reserve: usize,
    pub summary_max_chars: usize,
    pub chars_per_token: f64,
}

/// What happened, for a front-end to render. Serialised as one JSON object
/// per event with an `event` field (`pincer agent --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    TurnStarted {
        session: String,
    },
    /// A crash or cancellation had left tool calls without results; they
    /// were given a synthetic "interrupted" result on disk.
    Repaired {
        closed_calls: Vec<String>,
        /// True when this process cancelled the turn that left them (else
        /// a crash, or a cancellation by an earlier run).
        cancelled: bool,
    },
    Trimmed {
        dropped_turns: usize,
        tokens_before: usize,
        tokens_after: usize,
    },
    /// The user's message is in the session (durable under the `turn` and
    /// `always` fsync policies): a front-end that must not lose a message
    /// it received (a chat channel's update offset) may let go of it now.
    UserMessageStored {
        session: String,
    },
    TextDelta {
        text: String,
    },
    /// A provider failed before one answered (or none did): the router
    /// retried it or moved on to the next.
    ProviderFailed {
        #[serde(flatten)]
        attempt: crate::provider::FailedAttempt,
    },
    ModelReplied {
        provider: String,
        model: String,
        usage: Option<Usage>,
        tool_calls: usize,
        /// `length` means the reply was cut off at the output reserve.
        finish: FinishReason,
    },
    ApprovalNeeded {
        id: String,
        name: String,
        risk: Risk,
        /// Why the gate assigned this risk.
        why: String,
        /// The hash an approval must carry (`pincer approvals list` shows it).
        call_hash: String,
    },
    ToolCallStarted {
        id: String,
        name: String,
        arguments: serde_json::Value,
        risk: Risk,
    },
    ToolCallFinished {
        id: String,
        name: String,
        status: ToolStatus,
        /// The first characters of the result the model sees.
        preview: String,
    },
    TurnDone {
        reply: String,
        iterations: usize,
        stop: StopReason,
    },
}

/// How one tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    /// The tool failed; its error went back to the model.
    Error,
    /// The policy refused it.
    Blocked,
    /// A person (or the approval timeout) said no.
    Denied,
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    FinalReply,
    MaxToolIterations,
}

/// A failed turn. The session stays valid in every case.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Trim(#[from] TrimError),
    #[error(transparent)]
    Gate(#[from] GateError),
    #[error("tool `{tool}` failed fatally: {message}")]
    ToolFatal { tool: String, message: String },
}

/// What a finished turn produced.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub reply: String,
    pub iterations: usize,
    pub stop: StopReason,
}

/// An open session owned by one agent: the single writer plus an in-memory
/// view kept current as messages are appended, so a turn never re-reads a
/// long file.
#[derive(Debug)]
pub struct Conversation {
    writer: SessionWriter,
    view: SessionView,
    /// True while a turn is in flight; still true at the next turn means the
    /// last one was cancelled and the view must be reloaded.
    in_flight: bool,
}

impl Conversation {
    pub fn open(store: &SessionStore, key: &str) -> Result<Self, SessionError> {
        let writer = store.writer(key)?;
        let view = writer.view()?;
        Ok(Self {
            writer,
            view,
            in_flight: false,
        })
    }

    pub fn key(&self) -> &str {
        self.writer.key()
    }

    /// The stored live messages.
    pub fn messages(&self) -> &[Message] {
        &self.view.messages
    }

    fn append(&mut self, batch: &[Message]) -> Result<(), SessionError> {
        let receipt = self.writer.append(batch)?;
        self.view.record_appended(batch, receipt.first_line);
        Ok(())
    }
}

/// Tool results longer than this are shown to the front-end cut (the model
/// gets the whole result).
const PREVIEW_CHARS: usize = 200;

/// The agent: a provider, tools, the gate they run through, and settings.
pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    tool_def_tokens: usize,
    gate: Arc<Gate>,
    settings: AgentSettings,
    counter: CharRatio,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.name())
            .field(
                "tools",
                &self.specs.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("gate", &self.gate)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Agent {
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Vec<Arc<dyn Tool>>,
        gate: Arc<Gate>,
        settings: AgentSettings,
    ) -> Self {
        let counter = CharRatio::new(settings.chars_per_token);
        let specs: Vec<ToolSpec> = tools.iter().map(|t| t.spec()).collect();
        let tool_def_tokens = specs
            .iter()
            .map(|s| {
                counter.text_tokens(&s.name)
                    + counter.text_tokens(&s.description)
                    + counter.text_tokens(&s.parameters.to_string())
            })
            .sum();
        Self {
            provider,
            tools,
            specs,
            tool_def_tokens,
            gate,
            settings,
            counter,
        }
    }

    /// Runs one user turn to its end. Dropping the future cancels it; the
    /// session stays valid and the next turn repairs what was cut short.
    pub async fn run_turn(
        &mut self,
        conv: &mut Conversation,
        user_text: &str,
        on_event: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> Result<TurnOutcome, AgentError> {
        self.run_turn_message(conv, Message::user(user_text), on_event)
            .await
    }

    /// [`Agent::run_turn`] for a user message built by the front-end (one
    /// with images). A message that is not a valid user message is an
    /// error before anything is stored.
    pub async fn run_turn_message(
        &mut self,
        conv: &mut Conversation,
        user: Message,
        on_event: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> Result<TurnOutcome, AgentError> {
        if user.role != Role::User {
            return Err(AgentError::Session(SessionError::InvalidMessage {
                index: 0,
                source: crate::message::FieldError::new(
                    "role",
                    "a turn starts with a user message",
                ),
            }));
        }
        let cancelled = conv.in_flight;
        if cancelled {
            conv.view = conv.writer.view()?;
        }
        conv.in_flight = true;
        on_event(AgentEvent::TurnStarted {
            session: conv.key().to_string(),
        });
        let closed = conv.writer.close_interrupted_calls(&mut conv.view)?;
        if !closed.is_empty() {
            on_event(AgentEvent::Repaired {
                closed_calls: closed,
                cancelled,
            });
        }
        // The fsync policy decides durability: under "turn" and "always" the
        // user message is on disk before the model is asked (ST6).
        conv.append(std::slice::from_ref(&user))?;
        on_event(AgentEvent::UserMessageStored {
            session: conv.key().to_string(),
        });

        for iteration in 1..=self.settings.max_tool_iterations {
            let (response, estimated_input, trimmed_now) = {
                let (context, _) = conv.view.context();
                let trimmed = self.trim(&context, &conv.view.meta.summary)?;
                let trimmed_now = trimmed.dropped_turns > 0;
                if trimmed_now {
                    // Persist the trim before the request goes out.
                    conv.writer.apply_trim(&conv.view, &context, &trimmed)?;
                    on_event(AgentEvent::Trimmed {
                        dropped_turns: trimmed.dropped_turns,
                        tokens_before: trimmed.tokens_before,
                        tokens_after: trimmed.tokens_after,
                    });
                }
                // What trimming counted, less the reply's reserve: the input
                // as we estimate it, to calibrate against the provider's count.
                let estimated_input = trimmed
                    .tokens_after
                    .saturating_sub(self.settings.output_reserve);
                let request = self.request(trimmed.messages, &trimmed.request_summary);
                let on_text = |t: &str| {
                    on_event(AgentEvent::TextDelta {
                        text: t.to_string(),
                    })
                };
                let response = match self.provider.chat(&request, &on_text).await {
                    Ok(r) => r,
                    Err(e) => {
                        self.report_attempts(conv.key(), e.attempts(), None, on_event)?;
                        return Err(e.into());
                    }
                };
                (response, estimated_input, trimmed_now)
            };
            self.report_attempts(
                conv.key(),
                &response.attempts,
                Some(&response.provider),
                on_event,
            )?;
            if trimmed_now {
                // Skip moved (and the file may have been compacted): re-read once.
                conv.view = conv.writer.view()?;
            }
            if let Some(u) = response.usage {
                // CX6: learn the real chars-per-token from what the provider counted.
                let chars = (estimated_input as f64 * self.counter.chars_per_token()) as usize;
                self.counter
                    .calibrate(chars, usize::try_from(u.input_tokens).unwrap_or(usize::MAX));
            }
            on_event(AgentEvent::ModelReplied {
                provider: response.provider.clone(),
                model: response.model.clone(),
                usage: response.usage,
                tool_calls: response.tool_calls.len(),
                finish: response.finish,
            });
            let mut reply = Message::assistant_calls(response.content, response.tool_calls);
            reply.provider = Some(response.provider);
            conv.append(std::slice::from_ref(&reply))?;
            if reply.tool_calls.is_empty() {
                conv.in_flight = false;
                let outcome = TurnOutcome {
                    reply: reply.content,
                    iterations: iteration,
                    stop: StopReason::FinalReply,
                };
                on_event(AgentEvent::TurnDone {
                    reply: outcome.reply.clone(),
                    iterations: iteration,
                    stop: outcome.stop,
                });
                return Ok(outcome);
            }
            let (results, fatal) = match self
                .run_calls(conv.key(), &reply.tool_calls, on_event)
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    // The trail refused an entry: nothing more runs. The
                    // calls left without results are closed next turn.
                    conv.writer.sync()?;
                    conv.in_flight = false;
                    return Err(e.into());
                }
            };
            conv.append(&results)?;
            if let Some((tool, message)) = fatal {
                conv.writer.sync()?;
                conv.in_flight = false;
                return Err(AgentError::ToolFatal { tool, message });
            }
        }
        let text = format!(
            "[pincer stopped this turn after {} tool iterations without a final answer; \
             raise [agent] max_tool_iterations or ask again]",
            self.settings.max_tool_iterations
        );
        conv.append(&[Message::assistant(text.clone())])?;
        conv.in_flight = false;
        on_event(AgentEvent::TurnDone {
            reply: text.clone(),
            iterations: self.settings.max_tool_iterations,
            stop: StopReason::MaxToolIterations,
        });
        Ok(TurnOutcome {
            reply: text,
            iterations: self.settings.max_tool_iterations,
            stop: StopReason::MaxToolIterations,
        })
    }

    /// Tells the front-end about every failed provider attempt and records
    /// them in the trail (one `provider.fallback` entry per model call).
    fn report_attempts(
        &self,
        session: &str,
        attempts: &[crate::provider::FailedAttempt],
        answered_by: Option<&str>,
        on_event: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> Result<(), AgentError> {
        if attempts.is_empty() {
            return Ok(());
        }
        for a in attempts {
            on_event(AgentEvent::ProviderFailed { attempt: a.clone() });
        }
        self.gate
            .audit()
            .record(
                self.gate.actor(),
                &crate::audit::schema::ProviderFallback {
                    session: session.to_string(),
                    answered_by: answered_by.map(str::to_string),
                    attempts: attempts.to_vec(),
                },
            )
            .map_err(|e| AgentError::Gate(GateError::Audit(e)))?;
        Ok(())
    }

    /// Trims the context to the budget (CX1–CX5).
    fn trim<'c>(
        &self,
        context: &'c [Message],
        summary: &'c str,
    ) -> Result<trim::Trimmed<'c>, TrimError> {
        let budget = Budget {
            context_window: self.settings.context_window,
            tool_def_tokens: self.tool_def_tokens,
            output_reserve: self.settings.output_reserve,
            pinned_tokens: self.counter.text_tokens(&self.settings.system_prompt)
                + SUMMARY_HEADER_TOKENS,
        };
        trim::trim(
            &TrimInput {
                messages: context,
                summary,
                summary_max_chars: self.settings.summary_max_chars,
                budget,
            },
            &self.counter,
        )
    }

    /// The request for trimmed `messages`: the system prompt with the running
    /// summary (CX4), the tools, the output reserve. Borrows what it can.
    fn request<'r>(&'r self, messages: Cow<'r, [Message]>, summary: &str) -> ChatRequest<'r> {
        let mut system = self.settings.system_prompt.clone();
        if !summary.is_empty() {
            system.push_str("\n\n# Earlier in this conversation (summary of dropped turns)\n");
            system.push_str(summary);
        }
        // A system notice stored in the session is history, not an
        // instruction; providers get the system prompt separately.
        let messages = if messages.iter().any(|m| m.role == Role::System) {
            Cow::Owned(
                messages
                    .iter()
                    .filter(|m| m.role != Role::System)
                    .cloned()
                    .collect(),
            )
        } else {
            messages
        };
        ChatRequest {
            system,
            messages,
            tools: Cow::Borrowed(&self.specs),
            max_tokens: u32::try_from(self.settings.output_reserve).unwrap_or(u32::MAX),
        }
    }

    /// Passes every call through the gate in call order (approvals are
    /// asked one at a time), runs the admitted ones, and returns their
    /// results in call order, plus the first fatal error a tool reported.
    async fn run_calls(
        &self,
        session: &str,
        calls: &[ToolCall],
        on_event: &(dyn Fn(AgentEvent) + Send + Sync),
    ) -> Result<(Vec<Message>, Option<(String, String)>), GateError> {
        enum Plan {
            Run(Option<Pass>),
            Done(ToolStatus, String),
        }
        let on_approval = |req: &ApprovalRequest| {
            on_event(AgentEvent::ApprovalNeeded {
                id: req.call_id.clone(),
                name: req.tool.clone(),
                risk: req.risk,
                why: req.why.clone(),
                call_hash: req.call_hash.clone(),
            })
        };
        let mut plans = Vec::with_capacity(calls.len());
        for call in calls {
            let tool = self.tools.iter().find(|t| t.name() == call.name).cloned();
            let plan = match self.gate.admit(session, tool, call, &on_approval).await? {
                Admission::Run(pass) => {
                    on_event(AgentEvent::ToolCallStarted {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: pass.args().clone(),
                        risk: pass.risk(),
                    });
                    Plan::Run(Some(pass))
                }
                Admission::Refused { refusal, text } => match refusal {
                    Refusal::Unknown => {
                        let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
                        Plan::Done(
                            ToolStatus::Error,
                            format!("{text}; the tools are: {}", names.join(", ")),
                        )
                    }
                    Refusal::Blocked => Plan::Done(ToolStatus::Blocked, text),
                    Refusal::Denied => Plan::Done(ToolStatus::Denied, text),
                    // Bad arguments are the model's to fix, like a tool error.
                    Refusal::Invalid => Plan::Done(ToolStatus::Error, text),
                },
            };
            plans.push(plan);
        }

        // Low-risk calls only read, so they are independent and run in
        // parallel; a call that changes something runs alone, in call order,
        // so two edits of one file never race and a read after a write in
        // the same reply sees the write.
        type Run<'p> = BoxFuture<'p, Result<Result<String, ToolError>, GateError>>;
        fn changes(p: &Plan) -> bool {
            matches!(p, Plan::Run(Some(pass)) if pass.risk() > Risk::Low)
        }
        fn start<'p>(gate: &'p Gate, p: &'p mut Plan) -> Option<Run<'p>> {
            match p {
                Plan::Run(pass) => Some(Box::pin(gate.execute(pass.take()?))),
                Plan::Done(..) => None,
            }
        }
        let gate = self.gate.as_ref();
        let mut outcomes = Vec::with_capacity(plans.len());
        let mut rest: &mut [Plan] = &mut plans;
        while let Some(first) = rest.first() {
            let n = if changes(first) {
                1
            } else {
                rest.iter().position(changes).unwrap_or(rest.len())
            };
            let (batch, tail) = rest.split_at_mut(n);
            let runs = batch.iter_mut().map(|p| async move {
                match start(gate, p) {
                    Some(f) => Some(f.await),
                    None => None,
                }
            });
            for outcome in futures_util::future::join_all(runs).await {
                outcomes.push(outcome.transpose()?);
            }
            rest = tail;
        }

        let mut results = Vec::with_capacity(calls.len());
        let mut fatal = None;
        for ((call, plan), outcome) in calls.iter().zip(plans).zip(outcomes) {
            let (status, text) = match (plan, outcome) {
                (Plan::Done(status, text), _) => (status, text),
                (Plan::Run(..), Some(Ok(text))) => (ToolStatus::Ok, text),
                (Plan::Run(..), Some(Err(ToolError::RespondToModel(m)))) => {
                    (ToolStatus::Error, format!("error: {m}"))
                }
                (Plan::Run(..), Some(Err(ToolError::Fatal(m)))) => {
                    fatal.get_or_insert((call.name.clone(), m.clone()));
                    (
                        ToolStatus::Error,
                        format!("error: the tool failed and the turn stopped: {m}"),
                    )
                }
                (Plan::Run(..), None) => (ToolStatus::Error, "error: the tool did not run".into()),
            };
            on_event(AgentEvent::ToolCallFinished {
                id: call.id.clone(),
                name: call.name.clone(),
                status,
                preview: crate::text::cut(&text, PREVIEW_CHARS),
            });
            results.push(Message::tool_result(
                call.id.clone(),
                call.name.clone(),
                text,
            ));
        }
        Ok((results, fatal))
    }
}

/// Allowance for the heading the running summary is sent under.
const SUMMARY_HEADER_TOKENS: usize = 16;
