//! Discord over the gateway WebSocket ([`gateway`]) and the REST API
//! ([`rest`]), both thin clients over the project's own HTTP and TLS
//! stack (serenity would bring a second one: reqwest 0.12).
//!
//! One session per Discord channel (a DM or a guild channel), keyed by
//! the channel id: `discord-<channel id>`. A message reaches it only from
//! a user in `allow_users`; the bot's own messages, other bots' and
//! webhooks' are ignored. An approval is a message with two buttons whose
//! `custom_id` is `pa:<approval id>:y|n`; a press is answered through the
//! interaction callback (type 6, or an ephemeral message when it is
//! refused) and counts only from a user in `approvers`, in the channel the
//! approval was asked in — [`crate::chat`] decides all of that, this
//! module only translates.
//!
//! # What is not seen
//!
//! The gateway has no backlog across sessions: a message sent while
//! pincer is stopped, or after the gateway dropped a session it could not
//! resume, is never delivered to pincer, and pincer does not read channel
//! history to catch up. Within one session a resume replays what was
//! missed, and a dispatch or message id seen before is not answered twice.

pub mod gateway;
pub mod rest;

pub use gateway::{Event, Gateway, GatewayError};
pub use rest::{Rest, RestError};

use crate::chat::{ApprovalPrompt, Chat, ChatOptions, Inbound, Outbound, Press};
use crate::config::DiscordConfig;
use crate::http::Token;
use crate::text::{char_len, split};
use base64::Engine as _;
use pincer_core::approvals::Approver;
use pincer_core::message::{Image, MAX_IMAGE_BYTES};
use pincer_core::provider::BoxFuture;
use pincer_serve::{Deliver, Service, ServiceCtx, ServiceError};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// Discord's limit on one message's content, in characters.
pub const MESSAGE_LIMIT: usize = 2000;
/// Message ids remembered to answer none twice.
const SEEN: usize = 1024;
/// Where Discord serves attachments.
const CDN_HOSTS: &[&str] = &["cdn.discordapp.com", "media.discordapp.net"];

/// `[channels.discord]` plus the token, as the binary read it.
#[derive(Debug, Clone)]
pub struct DiscordService {
    pub config: DiscordConfig,
    /// `None`: the variable `token_env` names is not set (the service
    /// fails, saying so, and is retried).
    pub token: Option<Token>,
}

/// The sending side over REST.
struct DcOut {
    rest: Rest,
    api_base: String,
}

impl DcOut {
    async fn send_text(&self, channel: &str, text: &str) -> Result<(), String> {
        for part in split(text, MESSAGE_LIMIT, char_len) {
            if part.is_empty() {
                continue;
            }
            self.rest
                .create_message(channel, &part, None)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The first bytes of the image formats a vision API takes.
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether pincer fetches an attachment from `url`: Discord's CDN over
/// https, or the host of a non-default `api_base` (a local test server,
/// a proxy) over its scheme. Anything else a gateway event names is not
/// fetched.
pub fn attachment_allowed(url: &str, api_base: &str) -> bool {
    let (Ok(u), Ok(base)) = (reqwest::Url::parse(url), reqwest::Url::parse(api_base)) else {
        return false;
    };
    let host = u.host_str().unwrap_or("");
    (u.scheme() == "https" && CDN_HOSTS.contains(&host))
        || (api_base != crate::config::DISCORD_API
            && u.scheme() == base.scheme()
            && Some(host) == base.host_str()
            && u.port_or_known_default() == base.port_or_known_default())
}

impl Outbound for DcOut {
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.send_text(chat, text))
    }

    fn ask<'a>(
        &'a self,
        chat: &'a str,
        prompt: &'a ApprovalPrompt,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let text = split(&prompt.text, MESSAGE_LIMIT - 64, char_len)
                .into_iter()
                .next()
                .unwrap_or_default();
            let buttons = json!([{"type": 1, "components": [
                {"type": 2, "style": 3, "label": "Approve", "custom_id": format!("pa:{}:y", prompt.id)},
                {"type": 2, "style": 4, "label": "Deny", "custom_id": format!("pa:{}:n", prompt.id)},
            ]}]);
            self.rest
                .create_message(chat, &text, Some(buttons))
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn settle<'a>(&'a self, chat: &'a str, message: &'a str, text: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = self.rest.settle_message(chat, message, text).await {
                tracing::warn!(error = %e, "discord: cannot update the approval message");
            }
        })
    }

    fn fetch_image<'a>(&'a self, file: &'a str) -> BoxFuture<'a, Result<Image, String>> {
        Box::pin(async move {
            if !attachment_allowed(file, &self.api_base) {
                return Err("the attachment is not on Discord's CDN".into());
            }
            let bytes = self
                .rest
                .download(file, MAX_IMAGE_BYTES)
                .await
                .map_err(|e| e.to_string())?;
            let media_type = sniff_image(&bytes)
                .ok_or("the attachment is not a JPEG, PNG, GIF or WebP image")?;
            Ok(Image {
                media_type: media_type.into(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            })
        })
    }
}

/// The hub's view of a running Discord channel.
struct DcDeliver {
    chat: Arc<Chat>,
    out: Arc<DcOut>,
}

impl Deliver for DcDeliver {
    fn send<'a>(&'a self, chat: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.out.send_text(chat, text))
    }

    fn approver(&self, chat: &str) -> Arc<dyn Approver> {
        self.chat.approver(chat)
    }
}

#[derive(Debug, Deserialize)]
struct User {
    id: String,
    #[serde(default)]
    bot: bool,
}

#[derive(Debug, Deserialize)]
struct Attachment {
    url: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    content_type: Option<String>,
}

#[derive(Debug, Deserialize)]
struct MessageCreate {
    id: String,
    channel_id: String,
    author: User,
    #[serde(default)]
    content: String,
    #[serde(default)]
    attachments: Vec<Attachment>,
    #[serde(default)]
    webhook_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Member {
    user: User,
}

#[derive(Debug, Deserialize)]
struct ComponentData {
    #[serde(default)]
    custom_id: String,
}

#[derive(Debug, Deserialize)]
struct ChannelRef {
    id: String,
}

#[derive(Debug, Deserialize)]
struct Interaction {
    id: String,
    token: String,
    #[serde(rename = "type")]
    kind: u8,
    #[serde(default)]
    channel_id: Option<String>,
    /// The newer form of `channel_id`.
    #[serde(default)]
    channel: Option<ChannelRef>,
    /// In a guild.
    #[serde(default)]
    member: Option<Member>,
    /// In a DM.
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    data: Option<ComponentData>,
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

/// Message ids already taken, the oldest forgotten first.
#[derive(Debug, Default)]
struct Seen {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Seen {
    /// True the first time `id` is seen.
    fn first(&mut self, id: &str) -> bool {
        if self.set.contains(id) {
            return false;
        }
        if self.order.len() >= SEEN
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        self.set.insert(id.to_string());
        self.order.push_back(id.to_string());
        true
    }
}

impl Service for DiscordService {
    fn name(&self) -> &str {
        "discord"
    }

    fn run(&self, ctx: ServiceCtx) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(self.serve(ctx))
    }
}

/// What a running channel shares between its gateway and its handlers.
struct Running {
    chat: Arc<Chat>,
    out: Arc<DcOut>,
    me: Option<String>,
    seen: Seen,
}

impl DiscordService {
    async fn serve(&self, ctx: ServiceCtx) -> Result<(), ServiceError> {
        let cfg = &self.config;
        let token = self.token.clone().ok_or_else(|| {
            ServiceError::new(format!(
                "${} is not set: it must hold the bot token",
                cfg.token_env
            ))
        })?;
        let rest = Rest::new(&cfg.api_base, token.clone())
            .map_err(|e| ServiceError::new(e.to_string()))?;
        let url = match &cfg.gateway_url {
            Some(u) => u.clone(),
            None => {
                let u = rest
                    .gateway_url()
                    .await
                    .map_err(|e| ServiceError::new(e.to_string()))?;
                // The token goes in the Identify: never in the clear when
                // the API itself is reached over TLS.
                if cfg.api_base.starts_with("https://") && !u.starts_with("wss://") {
                    return Err(ServiceError::new(format!(
                        "GET /gateway/bot named `{}`, not a wss:// URL; refused",
                        pincer_core::text::cut(&u, 80)
                    )));
                }
                u
            }
        };
        let mut gateway = Gateway::new(&url, token).map_err(ServiceError::new)?;
        let out = Arc::new(DcOut {
            rest,
            api_base: cfg.api_base.clone(),
        });
        let chat = Arc::new(Chat::new(
            ChatOptions {
                channel: "discord",
                allow_users: cfg.allow_users.iter().cloned().collect(),
                approvers: cfg.approvers.iter().cloned().collect(),
                // The gateway keeps no backlog to confirm.
                on_settled: Arc::new(|_| {}),
            },
            ctx.runtime.clone(),
            out.clone(),
            ctx.turns.clone(),
            ctx.shutdown.clone(),
        ));
        ctx.hub.register(
            "discord",
            Arc::new(DcDeliver {
                chat: chat.clone(),
                out: out.clone(),
            }),
        );
        let mut run = Running {
            chat: chat.clone(),
            out,
            me: None,
            seen: Seen::default(),
        };
        let status = ctx.status.clone();
        let nobody = cfg.allow_users.is_empty();
        let mut on = |e: Event| match e {
            Event::Ready {
                user_id,
                name,
                resumed,
            } => {
                let mut detail = format!(
                    "{} as {name} ({user_id})",
                    if resumed { "resumed" } else { "connected" }
                );
                if nobody {
                    detail.push_str("; allow_users is empty, so nobody can chat");
                }
                status.running(detail);
                run.me = Some(user_id);
            }
            Event::Reconnecting { why, .. } => {
                status.detail(format!("reconnecting: {why}"));
            }
            Event::Dispatch { t, d } => run.dispatch(&t, d),
        };
        let mut shutdown = ctx.shutdown.clone();
        let result = gateway.run(&mut shutdown, &mut on).await;
        ctx.hub.unregister("discord");
        chat.drain().await;
        result.map_err(|e| ServiceError::new(e.to_string()))
    }
}

impl Running {
    fn dispatch(&mut self, t: &str, d: Value) {
        match t {
            "MESSAGE_CREATE" => match serde_json::from_value::<MessageCreate>(d) {
                Ok(m) => self.message(m),
                Err(e) => {
                    tracing::warn!(error = %e, "discord: a MESSAGE_CREATE pincer cannot read; skipped")
                }
            },
            "INTERACTION_CREATE" => match serde_json::from_value::<Interaction>(d) {
                Ok(i) => self.interaction(i),
                Err(e) => {
                    tracing::warn!(error = %e, "discord: an INTERACTION_CREATE pincer cannot read; skipped")
                }
            },
            _ => {}
        }
    }

    fn message(&mut self, m: MessageCreate) {
        if m.author.bot || m.webhook_id.is_some() || self.me.as_deref() == Some(&m.author.id) {
            return;
        }
        if !self.seen.first(&m.id) {
            tracing::debug!(message = %m.id, "discord: a message seen before; skipped");
            return;
        }
        let photo = m
            .attachments
            .iter()
            .find(|a| {
                a.content_type
                    .as_deref()
                    .is_some_and(|c| c.starts_with("image/"))
                    && a.size <= MAX_IMAGE_BYTES as u64
            })
            .map(|a| a.url.clone());
        if m.content.trim().is_empty() && photo.is_none() {
            if self.chat.allowed(&m.author.id) {
                let (out, channel) = (self.out.clone(), m.channel_id);
                tokio::spawn(async move {
                    let _ = out
                        .send_text(&channel, "pincer reads text and images (up to 5 MB) only.")
                        .await;
                });
            }
            return;
        }
        self.chat.accept(Inbound {
            chat: m.channel_id,
            user: m.author.id,
            text: m.content,
            photo,
            images: Vec::new(),
            token: None,
        });
    }

    fn interaction(&mut self, i: Interaction) {
        // 3: a message component (a button).
        if i.kind != 3 {
            return;
        }
        let Some(user) = i.member.map(|m| m.user).or(i.user) else {
            return;
        };
        let button = i.data.as_ref().and_then(|d| parse_button(&d.custom_id));
        let channel = i
            .channel_id
            .clone()
            .or(i.channel.as_ref().map(|c| c.id.clone()));
        let refusal = match (button, channel.as_deref()) {
            (Some((approval, yes)), Some(channel)) => {
                match self.chat.press(channel, &user.id, approval, yes) {
                    Press::Answered { .. } => None,
                    Press::NotApprover => Some("Only an approver can answer this."),
                    Press::Unknown => Some("This approval is no longer open."),
                }
            }
            _ => Some("Unknown button."),
        };
        // Acknowledged without a change (the approval's message is settled
        // by the chat), or answered with a message only the presser sees.
        let body = match refusal {
            None => json!({"type": 6}),
            Some(text) => json!({"type": 4, "data": {"content": text, "flags": 64}}),
        };
        let out = self.out.clone();
        tokio::spawn(async move {
            if let Err(e) = out.rest.interaction_callback(&i.id, &i.token, &body).await {
                tracing::info!(error = %e, "discord: the interaction callback failed");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buttons_carry_a_valid_approval_id() {
        assert_eq!(parse_button("pa:0123456789:y"), Some(("0123456789", true)));
        assert_eq!(parse_button("pa:0123456789:n"), Some(("0123456789", false)));
        assert_eq!(parse_button("pa:../etc:y"), None);
        assert_eq!(parse_button("pa:0123456789:maybe"), None);
    }

    #[test]
    fn attachments_come_from_the_cdn_only() {
        let api = crate::config::DISCORD_API;
        assert!(attachment_allowed(
            "https://cdn.discordapp.com/attachments/1/2/a.png?ex=1",
            api
        ));
        for bad in [
            "http://cdn.discordapp.com/a.png",
            "https://evil.example/a.png",
            "https://127.0.0.1/a.png",
            "file:///etc/passwd",
        ] {
            assert!(!attachment_allowed(bad, api), "{bad}");
        }
        let local = "http://127.0.0.1:4000/api/v10";
        assert!(attachment_allowed("http://127.0.0.1:4000/cdn/a.png", local));
        assert!(!attachment_allowed(
            "http://127.0.0.1:4001/cdn/a.png",
            local
        ));
    }

    #[test]
    fn images_are_known_by_their_bytes() {
        assert_eq!(sniff_image(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff_image(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"<html>"), None);
    }

    #[test]
    fn message_ids_are_taken_once_and_the_memory_is_bounded() {
        let mut s = Seen::default();
        assert!(s.first("1"));
        assert!(!s.first("1"));
        for i in 2..=(SEEN as u64 + 1) {
            assert!(s.first(&i.to_string()));
        }
        assert!(s.set.len() <= SEEN);
        assert!(s.first("1"), "the oldest is forgotten first");
    }
}
