//! pincer-channels: the chat platforms `pincer serve` reaches people on,
//! each a [`pincer_serve::Service`]: Telegram (Bot API long polling),
//! Discord (the gateway WebSocket and the REST API) and a camera board's
//! TCP channel ([`camera`]).
//! [`chat`] holds what every platform shares — the allowlist (empty means nobody), one session per
//! chat, approvals as buttons bound to an approval id and honoured only
//! from an allowlisted approver — so a platform module only translates.
//!
//! Every turn runs through the one runtime (`pincer_runtime::Runtime`):
//! a channel never builds tools, a gate or a prompt, and cannot reach a
//! tool except through the gate. It speaks the platforms' HTTP with the
//! project's own reqwest on rustls (`ring`), and Discord's WebSocket with
//! tokio-tungstenite over the same rustls set-up; tokens come from the
//! environment (read by the binary) and never appear in an error.

pub mod camera;
pub mod chat;
pub mod config;
// A camera-only build uses the token type, not the HTTP client.
#[cfg_attr(not(any(feature = "telegram", feature = "discord")), allow(dead_code))]
mod http;
pub mod text;

#[cfg(feature = "discord")]
pub mod discord;
#[cfg(feature = "telegram")]
pub mod telegram;

pub use config::{CameraConfig, ChannelsConfig, DiscordConfig, SECTION, TelegramConfig};
pub use http::Token;
