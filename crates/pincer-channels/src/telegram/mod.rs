//! Telegram over the Bot API's long polling (`getUpdates`).
//!
//! # Updates are answered once, and none is lost
//!
//! Telegram keeps an update until a `getUpdates` call passes an `offset`
//! above its id. pincer asks from the lowest update it has not yet
//! *settled* — stored in its chat's session (the agent's
//! [`AgentEvent::UserMessageStored`](pincer_core::agent::AgentEvent)), or
//! finished with for good (refused, a button press handled) — so Telegram
//! forgets an update only after pincer has it on disk; updates it sees
//! again meanwhile are skipped by id. The offset is also written to
//! `PINCER_HOME/channels/telegram.json` (atomically, fsynced) each time
//! it moves, and read back at start, so a restart — a crash mid-poll
//! included — starts where the last run settled. The one window left: a
//! crash between a message reaching its session and that file's write
//! (one fsync) shows that message again after the restart.
//!
//! A message waiting behind its chat's running turn holds the offset back
//! until its own turn starts; Telegram keeps it meanwhile.

mod api;

pub use api::{ApiError, BotApi, Update};

use crate::chat::{Accepted, ApprovalPrompt, Chat, ChatOptions, Inbound, Outbound, Press};
use crate::config::TelegramConfig;
use crate::http::Token;
use crate::text::{markdown_v2, split, utf16_len};
use base64::Engine as _;
use pincer_core::approvals::Approver;
use pincer_core::fsutil::{create_private_dir, write_atomic};
use pincer_core::message::{Image, MAX_IMAGE_BYTES};
use pincer_core::provider::BoxFuture;
use pincer_serve::{Deliver, Service, ServiceCtx, ServiceError};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Telegram's limit on one message's text.
pub const MESSAGE_LIMIT: usize = 4096;
/// A poll answered sooner than this with nothing (a server that ignores
/// `timeout`) is followed by a pause of this long.
const MIN_POLL: Duration = Duration::from_millis(300);
/// Transport failures in a row before the service gives up to the
/// supervisor's backoff.
const TRANSPORT_TRIES: u32 = 3;

/// `[channels.telegram]` plus the token, as the binary read it.
#[derive(Debug, Clone)]
pub struct TelegramService {
    pub config: TelegramConfig,
    /// `None`: the variable `token_env` names is not set (the service
    /// fails, saying so, and is retried).
    pub token: Option<Token>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct OffsetFile {
    bot: i64,
    offset: i64,
}

/// The update ids in flight and the offset that is safe to confirm.
#[derive(Debug)]
struct Ledger {
    path: PathBuf,
    bot: i64,
    /// Persisted: every update below it is settled.
    base: i64,
    max_seen: Option<i64>,
    inflight: BTreeSet<i64>,
    write_error: Option<String>,
}

impl Ledger {
    fn load(path: &Path, bot: i64) -> Result<Ledger, String> {
        let saved: OffsetFile = match std::fs::read(path) {
            Ok(b) => serde_json::from_slice(&b)
                .map_err(|e| format!("{}: not an offset file pincer wrote: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => OffsetFile::default(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        Ok(Ledger {
            path: path.to_path_buf(),
            bot,
            // Another bot's offsets mean nothing to this one.
            base: if saved.bot == bot { saved.offset } else { 0 },
            max_seen: None,
            inflight: BTreeSet::new(),
            write_error: None,
        })
    }

    /// The offset to poll from: the lowest update not yet settled.
    fn offset(&self) -> i64 {
        match (self.inflight.first(), self.max_seen) {
            (Some(first), _) => *first,
            (None, Some(max)) => max + 1,
            (None, None) => self.base,
        }
    }

    /// True the first time `id` is seen.
    fn see(&mut self, id: i64) -> bool {
        if id < self.base || self.max_seen.is_some_and(|m| id <= m) {
            return false;
        }
        self.max_seen = Some(id);
        self.inflight.insert(id);
        true
    }

    fn settle(&mut self, id: i64) {
        self.inflight.remove(&id);
        self.persist();
    }

    fn persist(&mut self) {
        let offset = self.offset();
        if offset == self.base {
            return;
        }
        let text = serde_json::to_vec(&OffsetFile {
            bot: self.bot,
            offset,
        })
        .unwrap_or_default();
        match write_atomic(&self.path, &text) {
            Ok(()) => {
                self.base = offset;
                self.write_error = None;
            }
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "telegram: cannot write the offset");
                self.write_error = Some(e.to_string());
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The sending side over the Bot API.
struct TgOut {
    api: BotApi,
}

impl TgOut {
    async fn send_text(&self, chat: &str, text: &str) -> Result<(), String> {
        for part in split(text, MESSAGE_LIMIT, utf16_len) {
            if part.is_empty() {
                continue;
            }
            let escaped = markdown_v2(&part);
            match self.api.send_message(chat, &escaped, true, None).await {
                Ok(_) => {}
                // Should the escaping ever be refused, the text goes plain
                // rather than not at all.
                Err(ApiError::Rejected {
                    code: 400,
                    description,
                    ..
                }) if description.contains("parse entities") => {
                    tracing::warn!(
                        "telegram refused the MarkdownV2 text ({description}); sent as plain text"
                    );
                    self.api
                        .send_message(chat, &part, false, None)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Err(ApiError::RateLimited { retry_after, .. }) => {
                    tokio::time::sleep(retry_after).await;
                    self.api
                        .send_message(chat, &escaped, true, None)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }
}

impl Outbound for TgOut {
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.send_text(chat, text))
    }

    fn ask<'a>(
        &'a self,
        chat: &'a str,
        prompt: &'a ApprovalPrompt,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let text = split(&prompt.text, MESSAGE_LIMIT - 64, utf16_len)
                .into_iter()
                .next()
                .unwrap_or_default();
            let buttons = json!([[
                {"text": "Approve", "callback_data": format!("pa:{}:y", prompt.id)},
                {"text": "Deny", "callback_data": format!("pa:{}:n", prompt.id)},
            ]]);
            self.api
                .send_message(chat, &text, false, Some(buttons))
                .await
                .map(|id| id.to_string())
                .map_err(|e| e.to_string())
        })
    }

    fn settle<'a>(&'a self, chat: &'a str, message: &'a str, text: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = self.api.edit_text(chat, message, text).await {
                tracing::warn!(error = %e, "telegram: cannot update the approval message");
            }
        })
    }

    fn fetch_image<'a>(&'a self, file: &'a str) -> BoxFuture<'a, Result<Image, String>> {
        Box::pin(async move {
            let bytes = self
                .api
                .download(file, MAX_IMAGE_BYTES)
                .await
                .map_err(|e| e.to_string())?;
            // Telegram re-encodes every photo as JPEG.
            Ok(Image {
                media_type: "image/jpeg".into(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            })
        })
    }
}

/// The hub's view of a running Telegram channel.
struct TgDeliver {
    chat: Arc<Chat>,
    out: Arc<TgOut>,
}

impl Deliver for TgDeliver {
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.out.send_text(chat, text))
    }

    fn approver(&self, chat: &str) -> Arc<dyn Approver> {
        self.chat.approver(chat)
    }
}

fn ids(v: &[i64]) -> BTreeSet<String> {
    v.iter().map(i64::to_string).collect()
}

/// The largest photo size within the image limit.
fn pick_photo(sizes: &[api::PhotoSize]) -> Option<&api::PhotoSize> {
    sizes
        .iter()
        .filter(|p| p.file_size.is_none_or(|n| n <= MAX_IMAGE_BYTES as u64))
        .max_by_key(|p| p.width)
}

impl Service for TelegramService {
    fn name(&self) -> &str {
        "telegram"
    }

    fn run(&self, ctx: ServiceCtx) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(self.serve(ctx))
    }
}

impl TelegramService {
    async fn serve(&self, ctx: ServiceCtx) -> Result<(), ServiceError> {
        let cfg = &self.config;
        let token = self.token.clone().ok_or_else(|| {
            ServiceError::new(format!(
                "${} is not set: it must hold the bot token",
                cfg.token_env
            ))
        })?;
        let poll = Duration::from_secs(cfg.poll_timeout_secs);
        let api = BotApi::new(&cfg.api_base, token, poll)
            .map_err(|e| ServiceError::new(e.to_string()))?;
        let me = api
            .get_me()
            .await
            .map_err(|e| ServiceError::new(e.to_string()))?;
        let dir = ctx.runtime.home().channels_dir();
        create_private_dir(&dir)
            .map_err(|e| ServiceError::new(format!("cannot create {}: {e}", dir.display())))?;
        let ledger = Arc::new(Mutex::new(
            Ledger::load(&dir.join("telegram.json"), me.id).map_err(ServiceError::new)?,
        ));
        let out = Arc::new(TgOut { api: api.clone() });
        let settle = {
            let ledger = ledger.clone();
            Arc::new(move |id: i64| lock(&ledger).settle(id))
        };
        let chat = Arc::new(Chat::new(
            ChatOptions {
                channel: "telegram",
                allow_users: ids(&cfg.allow_users),
                approvers: ids(&cfg.approvers),
                on_settled: settle,
            },
            ctx.runtime.clone(),
            out.clone(),
            ctx.turns.clone(),
            ctx.shutdown.clone(),
        ));
        ctx.hub.register(
            "telegram",
            Arc::new(TgDeliver {
                chat: chat.clone(),
                out: out.clone(),
            }),
        );
        let who = me
            .username
            .map_or_else(|| format!("bot {}", me.id), |u| format!("@{u}"));
        let mut detail = format!("polling as {who}");
        if cfg.allow_users.is_empty() {
            detail.push_str("; allow_users is empty, so nobody can chat");
        }
        ctx.status.running(detail.clone());
        let result = self.poll(&ctx, &api, &chat, &ledger, &out).await;
        ctx.hub.unregister("telegram");
        chat.drain().await;
        lock(&ledger).persist();
        result
    }

    async fn poll(
        &self,
        ctx: &ServiceCtx,
        api: &BotApi,
        chat: &Arc<Chat>,
        ledger: &Arc<Mutex<Ledger>>,
        out: &Arc<TgOut>,
    ) -> Result<(), ServiceError> {
        let mut shutdown = ctx.shutdown.clone();
        let mut failures = 0u32;
        loop {
            let offset = lock(ledger).offset();
            let began = Instant::now();
            let got = tokio::select! {
                r = api.get_updates(offset) => r,
                _ = shutdown.wait() => return Ok(()),
            };
            let updates = match got {
                Ok(u) => {
                    failures = 0;
                    u
                }
                Err(ApiError::RateLimited { retry_after, .. }) => {
                    ctx.status.detail(format!(
                        "rate limited by Telegram; waiting {} s",
                        retry_after.as_secs()
                    ));
                    tokio::select! {
                        _ = tokio::time::sleep(retry_after) => continue,
                        _ = shutdown.wait() => return Ok(()),
                    }
                }
                Err(ApiError::Transport(e)) if failures + 1 < TRANSPORT_TRIES => {
                    failures += 1;
                    tracing::info!(error = %e, "telegram: poll failed; trying again");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(500) * failures) => continue,
                        _ = shutdown.wait() => return Ok(()),
                    }
                }
                Err(e) => return Err(ServiceError::new(e.to_string())),
            };
            let empty = updates.is_empty();
            for u in updates {
                if !lock(ledger).see(u.update_id) {
                    continue;
                }
                self.dispatch(u, chat, ledger, out).await;
            }
            lock(ledger).persist();
            if empty && began.elapsed() < MIN_POLL {
                tokio::select! {
                    _ = tokio::time::sleep(MIN_POLL) => {}
                    _ = shutdown.wait() => return Ok(()),
                }
            }
        }
    }

    async fn dispatch(
        &self,
        u: Update,
        chat: &Arc<Chat>,
        ledger: &Arc<Mutex<Ledger>>,
        out: &Arc<TgOut>,
    ) {
        let id = u.update_id;
        if let Some(q) = u.callback_query {
            let user = q.from.id.to_string();
            let where_ = q.message.as_ref().map(|m| m.chat.id.to_string());
            let answer = match (q.data.as_deref().and_then(parse_button), where_) {
                (Some((approval, yes)), Some(c)) => match chat.press(&c, &user, approval, yes) {
                    Press::Answered { approved: true } => "Approved",
                    Press::Answered { approved: false } => "Denied",
                    Press::NotApprover => "Only an approver can answer this",
                    Press::Unknown => "This approval is no longer open",
                },
                _ => "Unknown button",
            };
            if let Err(e) = out.api.answer_callback(&q.id, answer).await {
                tracing::info!(error = %e, "telegram: answerCallbackQuery failed");
            }
            lock(ledger).settle(id);
            return;
        }
        let Some(m) = u.message else {
            lock(ledger).settle(id);
            return;
        };
        let Some(from) = m.from else {
            lock(ledger).settle(id);
            return;
        };
        let photo = pick_photo(&m.photo).map(|p| p.file_id.clone());
        let text = m.text.or(m.caption).unwrap_or_default();
        if text.is_empty() && photo.is_none() {
            // A sticker, a voice note…: nothing pincer reads.
            if chat.allowed(&from.id.to_string()) {
                let _ = out
                    .send_text(&m.chat.id.to_string(), "pincer reads text and photos only.")
                    .await;
            }
            lock(ledger).settle(id);
            return;
        }
        let accepted = chat.accept(Inbound {
            chat: m.chat.id.to_string(),
            user: from.id.to_string(),
            text,
            photo,
            images: Vec::new(),
            token: Some(id),
        });
        if accepted == Accepted::Closed {
            // Left unsettled: seen again after the restart.
            tracing::debug!(
                update = id,
                "telegram: stopping; update left for the next run"
            );
        }
    }
}

/// `pa:<id>:y` → (`id`, true).
fn parse_button(data: &str) -> Option<(&str, bool)> {
    let rest = data.strip_prefix("pa:")?;
    let (id, answer) = rest.rsplit_once(':')?;
    pincer_core::approvals::validate_id(id).ok()?;
    match answer {
        "y" => Some((id, true)),
        "n" => Some((id, false)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_confirms_only_what_is_settled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("telegram.json");
        let mut l = Ledger::load(&path, 7).expect("fresh");
        assert_eq!(l.offset(), 0);
        assert!(l.see(10) && l.see(11) && l.see(12));
        assert!(!l.see(11), "seen twice is skipped");
        l.settle(11);
        assert_eq!(l.offset(), 10, "10 is not settled: Telegram must keep it");
        l.settle(10);
        assert_eq!(l.offset(), 12);
        l.settle(12);
        assert_eq!(l.offset(), 13);
        let again = Ledger::load(&path, 7).expect("reload");
        assert_eq!(again.offset(), 13, "the offset survives a restart");
        assert_eq!(Ledger::load(&path, 8).expect("other bot").offset(), 0);
    }

    #[test]
    fn buttons_carry_a_valid_approval_id() {
        assert_eq!(parse_button("pa:0123456789:y"), Some(("0123456789", true)));
        assert_eq!(parse_button("pa:0123456789:n"), Some(("0123456789", false)));
        assert_eq!(parse_button("pa:../etc:y"), None);
        assert_eq!(parse_button("pa:0123456789:maybe"), None);
        assert_eq!(parse_button("other"), None);
    }
}
