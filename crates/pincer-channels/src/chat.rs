//! What every chat channel shares, whatever the platform: who may chat
//! (`allow_users`; empty means nobody), one session and one worker per
//! chat (its messages are answered one at a time, in order), approvals as
//! buttons bound to an approval id and honoured only from an allowlisted
//! approver, and the audit entries for all of it. A platform module
//! (Telegram, Discord) only translates: it turns updates into
//! [`Inbound`]s and button presses into [`Chat::press`], and implements
//! [`Outbound`] to send.
//!
//! A stranger's message never reaches a session: it is refused before any
//! session is opened, and recorded as `channel.refused` (at most once per
//! sender every [`REFUSAL_EVERY`], so a flood cannot fill the disk).

use pincer_core::actor;
use pincer_core::agent::AgentEvent;
use pincer_core::approvals::{ApprovalAnswer, ApprovalRequest, Approver};
use pincer_core::audit::schema::{
    AnswerWord, ApprovalAnswered, CallRef, ChannelMessage, ChannelRefused,
};
use pincer_core::canonical::sha256_hex;
use pincer_core::message::{Image, Message, Role};
use pincer_core::provider::BoxFuture;
use pincer_runtime::Runtime;
use pincer_serve::Shutdown;
use pincer_serve::turn::Turns;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

/// How often one stranger's refusals are recorded.
pub const REFUSAL_EVERY: Duration = Duration::from_secs(600);
/// Messages waiting behind a chat's running turn; past this the sender is
/// told to wait.
pub const QUEUE: usize = 8;
/// How many distinct strangers are remembered for the refusal throttle.
const STRANGERS: usize = 4096;

/// A message from a chat, as the platform authenticated it.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub chat: String,
    /// The sender's platform id (never a display name).
    pub user: String,
    pub text: String,
    /// An image to fetch before the turn (a Telegram `file_id`).
    pub photo: Option<String>,
    /// Images already in hand.
    pub images: Vec<Image>,
    /// Reported to [`ChatOptions::on_settled`] once the message is in its
    /// session, or will never be (refused, failed): a channel's update
    /// offset.
    pub token: Option<i64>,
}

/// An approval as a channel shows it.
#[derive(Debug, Clone)]
pub struct ApprovalPrompt {
    /// Bound into the buttons: `pa:<id>:y` / `pa:<id>:n`.
    pub id: String,
    pub text: String,
}

/// The platform's sending side.
pub trait Outbound: Send + Sync {
    /// Sends `text` to `chat`, split and escaped as the platform needs.
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// Sends an approval with approve/deny buttons; returns a reference to
    /// the message (to settle it later).
    fn ask<'a>(
        &'a self,
        chat: &'a str,
        prompt: &'a ApprovalPrompt,
    ) -> BoxFuture<'a, Result<String, String>>;
    /// Replaces an approval message's text and removes its buttons.
    fn settle<'a>(&'a self, chat: &'a str, message: &'a str, text: &'a str) -> BoxFuture<'a, ()>;
    /// Downloads the image a platform file id names.
    fn fetch_image<'a>(&'a self, file: &'a str) -> BoxFuture<'a, Result<Image, String>>;
}

/// How a channel's chats behave.
pub struct ChatOptions {
    /// `telegram`, `discord`.
    pub channel: &'static str,
    pub allow_users: BTreeSet<String>,
    pub approvers: BTreeSet<String>,
    /// Told each settled [`Inbound::token`].
    pub on_settled: Arc<dyn Fn(i64) + Send + Sync>,
}

impl std::fmt::Debug for ChatOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatOptions")
            .field("channel", &self.channel)
            .field("allow_users", &self.allow_users)
            .field("approvers", &self.approvers)
            .finish_non_exhaustive()
    }
}

struct PendingApproval {
    chat: String,
    call_hash: String,
    call: CallRef,
    message: Option<String>,
    tx: oneshot::Sender<ApprovalAnswer>,
}

/// What [`Chat::accept`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    Queued,
    /// Not an allowed user: dropped (and recorded).
    Refused,
    /// The chat's queue is full; the sender was told.
    Busy,
    /// The channel is stopping.
    Closed,
}

/// What a button press did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Press {
    /// The answer went to the waiting call; its message is settled.
    Answered { approved: bool },
    /// The presser is not an approver: refused and recorded.
    NotApprover,
    /// No open approval has this id (answered, expired, or never was).
    Unknown,
}

struct Shared {
    opts: ChatOptions,
    runtime: Arc<Runtime>,
    out: Arc<dyn Outbound>,
    turns: Turns,
    shutdown: Shutdown,
    approvals: Mutex<HashMap<String, PendingApproval>>,
    strangers: Mutex<HashMap<String, Instant>>,
    next_id: AtomicU64,
}

/// The chats of one channel.
pub struct Chat {
    shared: Arc<Shared>,
    workers: Mutex<HashMap<String, mpsc::Sender<Inbound>>>,
    tasks: Mutex<JoinSet<()>>,
}

impl std::fmt::Debug for Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chat")
            .field("opts", &self.shared.opts)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The session of `chat` on `channel`: `telegram-123`, `telegram--1001`.
pub fn session_key(channel: &str, chat: &str) -> String {
    let safe: String = chat
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(96)
        .collect();
    format!("{channel}-{safe}")
}

impl Chat {
    pub fn new(
        opts: ChatOptions,
        runtime: Arc<Runtime>,
        out: Arc<dyn Outbound>,
        turns: Turns,
        shutdown: Shutdown,
    ) -> Chat {
        Chat {
            shared: Arc::new(Shared {
                opts,
                runtime,
                out,
                turns,
                shutdown,
                approvals: Mutex::new(HashMap::new()),
                strangers: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(0),
            }),
            workers: Mutex::new(HashMap::new()),
            tasks: Mutex::new(JoinSet::new()),
        }
    }

    pub fn allowed(&self, user: &str) -> bool {
        self.shared.opts.allow_users.contains(user)
    }

    /// Records a refusal that comes before any message (a connection
    /// without the secret), throttled like every refusal.
    pub fn refuse(&self, chat: &str, user: &str, what: &str, reason: &str) {
        self.shared.refuse(chat, user, what, reason);
    }

    /// Routes a message to its chat's worker, or refuses it.
    pub fn accept(&self, msg: Inbound) -> Accepted {
        let s = &self.shared;
        if !self.allowed(&msg.user) {
            s.refuse(&msg.chat, &msg.user, "message", "not in allow_users");
            s.settle(msg.token);
            return Accepted::Refused;
        }
        if s.shutdown.is_set() {
            return Accepted::Closed;
        }
        let mut workers = lock(&self.workers);
        let tx = workers.entry(msg.chat.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            lock(&self.tasks).spawn(worker(s.clone(), msg.chat.clone(), rx));
            tx
        });
        match tx.try_send(msg) {
            Ok(()) => Accepted::Queued,
            Err(mpsc::error::TrySendError::Full(msg)) => {
                let (out, chat) = (s.out.clone(), msg.chat.clone());
                s.settle(msg.token);
                tokio::spawn(async move {
                    let _ = out
                        .send(&chat, "I am still working on your earlier messages; send this one again in a moment.")
                        .await;
                });
                Accepted::Busy
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Accepted::Closed,
        }
    }

    /// A button press on approval `id` by `user` in `chat`.
    pub fn press(&self, chat: &str, user: &str, id: &str, approve: bool) -> Press {
        let s = &self.shared;
        if !s.opts.approvers.contains(user) {
            s.refuse(chat, user, "approval", "not in approvers");
            return Press::NotApprover;
        }
        let pending = {
            let mut map = lock(&s.approvals);
            match map.get(id) {
                // Bound to its chat too: a press from another chat (a
                // forwarded message) does not count.
                Some(p) if p.chat == chat => map.remove(id),
                _ => None,
            }
        };
        let Some(p) = pending else {
            return Press::Unknown;
        };
        let by = actor::channel(s.opts.channel, user);
        let answer = if approve {
            ApprovalAnswer::Approved {
                call_hash: p.call_hash.clone(),
                by: by.clone(),
            }
        } else {
            ApprovalAnswer::Denied {
                by: by.clone(),
                reason: format!("denied in the chat by {by}"),
            }
        };
        // The answer is in the trail before the waiting call acts on it.
        let recorded = s.runtime.audit().record(
            &by,
            &ApprovalAnswered {
                id: id.to_string(),
                call_hash: p.call_hash.clone(),
                call: p.call.clone(),
                answer: if approve {
                    AnswerWord::Approved
                } else {
                    AnswerWord::Denied
                },
                reason: None,
                error: None,
            },
        );
        let answer = match recorded {
            Ok(_) => answer,
            Err(e) => ApprovalAnswer::Denied {
                by: actor::SYSTEM.into(),
                reason: format!("the audit trail refused the answer, so it does not count: {e}"),
            },
        };
        let _ = p.tx.send(answer);
        if let Some(message) = p.message {
            let (out, chat) = (s.out.clone(), chat.to_string());
            let text = format!(
                "{} by {by}: {} ({})",
                if approve { "Approved" } else { "Denied" },
                p.call.tool,
                id
            );
            tokio::spawn(async move { out.settle(&chat, &message, &text).await });
        }
        Press::Answered { approved: approve }
    }

    /// An approver asking in `chat`.
    pub fn approver(&self, chat: &str) -> Arc<dyn Approver> {
        Arc::new(ChatApprover {
            shared: self.shared.clone(),
            chat: chat.to_string(),
        })
    }

    /// Stops taking messages and waits until every worker has finished the
    /// turn it is in (messages still queued stay unsettled: their channel
    /// sees them again at the next start).
    pub async fn drain(&self) {
        lock(&self.workers).clear();
        let mut tasks = std::mem::take(&mut *lock(&self.tasks));
        while tasks.join_next().await.is_some() {}
    }
}

impl Shared {
    fn settle(&self, token: Option<i64>) {
        if let Some(t) = token {
            (self.opts.on_settled)(t);
        }
    }

    /// Records a refusal, at most once per sender per [`REFUSAL_EVERY`].
    fn refuse(&self, chat: &str, user: &str, what: &str, reason: &str) {
        let key = format!("{what}:{user}");
        {
            let mut seen = lock(&self.strangers);
            let now = Instant::now();
            if seen
                .get(&key)
                .is_some_and(|t| now.duration_since(*t) < REFUSAL_EVERY)
            {
                return;
            }
            if seen.len() >= STRANGERS {
                seen.retain(|_, t| now.duration_since(*t) < REFUSAL_EVERY);
            }
            if seen.len() < STRANGERS {
                seen.insert(key, now);
            }
        }
        let from = actor::channel(self.opts.channel, user);
        tracing::info!(channel = self.opts.channel, %from, what, "refused: {reason}");
        if let Err(e) = self.runtime.audit().record(
            &from,
            &ChannelRefused {
                channel: self.opts.channel.to_string(),
                chat: chat.to_string(),
                from: from.clone(),
                what: what.to_string(),
                reason: reason.to_string(),
            },
        ) {
            tracing::warn!(error = %e, "the audit trail refused a channel.refused entry");
        }
    }

    fn new_id(&self, seed: &str) -> String {
        let n = self.next_id.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        sha256_hex(format!("{seed}:{n}:{nanos}:{}", std::process::id()).as_bytes())[..10]
            .to_string()
    }
}

/// Asks the channel's approvers in one chat.
struct ChatApprover {
    shared: Arc<Shared>,
    chat: String,
}

/// Removes an approval that is no longer waited for, and says so in its
/// message.
struct Withdraw {
    shared: Arc<Shared>,
    id: String,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let gone = lock(&self.shared.approvals).remove(&self.id);
        if let Some(p) = gone
            && let Some(message) = p.message
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let out = self.shared.out.clone();
            let text = format!(
                "No answer in time: {} was not run ({})",
                p.call.tool, self.id
            );
            handle.spawn(async move { out.settle(&p.chat, &message, &text).await });
        }
    }
}

fn render(req: &ApprovalRequest) -> String {
    let args = pincer_core::text::cut(&req.arguments.to_string(), 600);
    format!(
        "Approval needed: {} ({} risk)\n{}\narguments: {args}",
        req.tool,
        req.risk.as_str(),
        pincer_core::text::cut(&req.why, 300),
    )
}

impl Approver for ChatApprover {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            let s = &self.shared;
            if s.opts.approvers.is_empty() {
                return ApprovalAnswer::Denied {
                    by: actor::SYSTEM.into(),
                    reason: format!(
                        "nobody may approve from {}: [channels.{}] approvers is empty",
                        s.opts.channel, s.opts.channel
                    ),
                };
            }
            let id = s.new_id(&req.call_hash);
            let (tx, rx) = oneshot::channel();
            lock(&s.approvals).insert(
                id.clone(),
                PendingApproval {
                    chat: self.chat.clone(),
                    call_hash: req.call_hash.clone(),
                    call: CallRef {
                        session: req.session.clone(),
                        call_id: req.call_id.clone(),
                        tool: req.tool.clone(),
                    },
                    message: None,
                    tx,
                },
            );
            let _withdraw = Withdraw {
                shared: s.clone(),
                id: id.clone(),
            };
            let prompt = ApprovalPrompt {
                id: id.clone(),
                text: render(req),
            };
            match s.out.ask(&self.chat, &prompt).await {
                Ok(message) => {
                    if let Some(p) = lock(&s.approvals).get_mut(&id) {
                        p.message = Some(message);
                    }
                }
                Err(e) => {
                    return ApprovalAnswer::Denied {
                        by: actor::SYSTEM.into(),
                        reason: format!("the approval could not be sent to the chat: {e}"),
                    };
                }
            }
            rx.await.unwrap_or_else(|_| ApprovalAnswer::Denied {
                by: actor::SYSTEM.into(),
                reason: "the approval was withdrawn".into(),
            })
        })
    }
}

/// One chat: its session, opened on the first message and kept; its
/// messages one at a time.
async fn worker(s: Arc<Shared>, chat: String, mut rx: mpsc::Receiver<Inbound>) {
    let key = session_key(s.opts.channel, &chat);
    let approver: Arc<dyn Approver> = Arc::new(ChatApprover {
        shared: s.clone(),
        chat: chat.clone(),
    });
    let mut session = None;
    while let Some(msg) = rx.recv().await {
        if s.shutdown.is_set() {
            // Unsettled: the platform delivers it again after the restart.
            break;
        }
        if session.is_none() {
            match s.runtime.open_session(&key, approver.clone()) {
                Ok(open) => {
                    if open.messages().last().is_some_and(|m| m.role == Role::User) {
                        let _ = s
                            .out
                            .send(&chat, "(pincer stopped before it answered your last message; send it again if you still need an answer)")
                            .await;
                    }
                    session = Some(open);
                }
                Err(e) => {
                    s.settle(msg.token);
                    let _ = s
                        .out
                        .send(
                            &chat,
                            &format!("pincer cannot open this chat's session: {e}"),
                        )
                        .await;
                    continue;
                }
            }
        }
        let Some(open) = session.as_mut() else {
            continue;
        };
        handle(&s, &chat, &key, open, msg).await;
    }
}

async fn handle(
    s: &Shared,
    chat: &str,
    key: &str,
    session: &mut pincer_runtime::AgentSession,
    msg: Inbound,
) {
    let mut images = msg.images;
    if let Some(file) = &msg.photo {
        if !s.runtime.vision() {
            s.settle(msg.token);
            let _ = s
                .out
                .send(chat, "I cannot look at pictures: this pincer's model is not configured for images ([providers.NAME] vision = true).")
                .await;
            return;
        }
        match s.out.fetch_image(file).await {
            Ok(i) => images.push(i),
            Err(e) => {
                s.settle(msg.token);
                let _ = s
                    .out
                    .send(chat, &format!("pincer could not fetch the picture: {e}"))
                    .await;
                return;
            }
        }
    }
    let from = actor::channel(s.opts.channel, &msg.user);
    let recorded = s.runtime.audit().record(
        &from,
        &ChannelMessage {
            channel: s.opts.channel.to_string(),
            chat: chat.to_string(),
            session: key.to_string(),
            bytes: msg.text.len(),
            sha256: sha256_hex(msg.text.as_bytes()),
            images: images.len(),
        },
    );
    if let Err(e) = recorded {
        s.settle(msg.token);
        let _ = s
            .out
            .send(
                chat,
                &format!("pincer did not take the message: the audit trail refused it: {e}"),
            )
            .await;
        return;
    }
    let settled = std::sync::atomic::AtomicBool::new(false);
    let token = msg.token;
    let on_event = |e: AgentEvent| {
        if matches!(e, AgentEvent::UserMessageStored { .. })
            && !settled.swap(true, Ordering::SeqCst)
        {
            s.settle(token);
        }
    };
    let text = if msg.text.is_empty() && !images.is_empty() {
        "(a picture)".to_string()
    } else {
        msg.text
    };
    let result = {
        let _guard = s.turns.enter();
        session
            .run_turn_message(Message::user_with_images(text, images), &on_event)
            .await
    };
    if !settled.swap(true, Ordering::SeqCst) {
        // Failed before the message was stored: it will not be again.
        s.settle(token);
    }
    let reply = match result {
        Ok(outcome) if outcome.reply.trim().is_empty() => "(no reply)".to_string(),
        Ok(outcome) => outcome.reply,
        Err(e) => format!("pincer could not answer: {e}"),
    };
    if let Err(e) = s.out.send(chat, &reply).await {
        tracing::warn!(channel = s.opts.channel, chat, error = %e, "reply not delivered");
    }
}
