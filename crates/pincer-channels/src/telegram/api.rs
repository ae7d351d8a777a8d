//! A thin Telegram Bot API client over the project's own reqwest: the
//! handful of methods pincer uses, each a JSON POST to
//! `{api_base}/bot{token}/{method}`, and the error shapes the API answers
//! with, mapped to what the poller must decide (`retry_after` for 429, a
//! conflict for 409, a bad token for 401).

use crate::http::{Token, chain, client};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::time::Duration;

/// What a call's failure means for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("Telegram asks to wait {retry_after:?} (429): {description}")]
    RateLimited {
        retry_after: Duration,
        description: String,
    },
    #[error(
        "Telegram answered 409 ({0}): another program is polling this bot's updates, or a webhook is set; stop it (or delete the webhook) and pincer takes over"
    )]
    Conflict(String),
    #[error("Telegram refused the bot token (401 {0}); check the variable token_env names")]
    Unauthorized(String),
    #[error("Telegram refused {method} ({code}): {description}")]
    Rejected {
        method: &'static str,
        code: u16,
        description: String,
    },
    #[error("cannot reach Telegram: {0}")]
    Transport(String),
    #[error("Telegram sent something that is not the Bot API's answer: {0}")]
    Protocol(String),
}

#[derive(Deserialize)]
struct Envelope {
    ok: bool,
    result: Option<Value>,
    error_code: Option<u16>,
    description: Option<String>,
    parameters: Option<Parameters>,
}

#[derive(Deserialize)]
struct Parameters {
    retry_after: Option<u64>,
}

/// `getMe`.
#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    pub id: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PhotoSize {
    pub file_id: String,
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub width: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TgMessage {
    pub message_id: i64,
    pub chat: Chat,
    #[serde(default)]
    pub from: Option<User>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub caption: Option<String>,
    #[serde(default)]
    pub photo: Vec<PhotoSize>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    #[serde(default)]
    pub message: Option<CallbackMessage>,
    #[serde(default)]
    pub data: Option<String>,
}

/// The message a button sat under (only its chat is needed).
#[derive(Debug, Clone, Deserialize)]
pub struct CallbackMessage {
    pub chat: Chat,
}

/// One update; kinds pincer does not handle are kept only for their id.
#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<TgMessage>,
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

#[derive(Debug, Clone, Deserialize)]
struct File {
    #[serde(default)]
    file_path: Option<String>,
    #[serde(default)]
    file_size: Option<u64>,
}

/// The client.
#[derive(Debug, Clone)]
pub struct BotApi {
    base: String,
    token: Token,
    http: reqwest::Client,
    poll: Duration,
}

impl BotApi {
    /// `poll` is the long-poll timeout getUpdates asks for; every other
    /// call is bounded by 30 s.
    pub fn new(base: &str, token: Token, poll: Duration) -> Result<BotApi, ApiError> {
        let http = client("telegram", base, poll + Duration::from_secs(15))
            .map_err(ApiError::Transport)?;
        Ok(BotApi {
            base: base.trim_end_matches('/').to_string(),
            token,
            http,
            poll,
        })
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: &'static str,
        body: &Value,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token.expose());
        let scrub = |s: String| self.token.scrub(&s);
        let resp = self
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| ApiError::Transport(scrub(chain(&e))))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| ApiError::Transport(scrub(chain(&e))))?;
        let env: Envelope = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::Protocol(format!(
                "{method}: status {status}, {e}: {}",
                scrub(String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned())
            ))
        })?;
        if env.ok {
            let result = env.result.unwrap_or(Value::Null);
            return serde_json::from_value(result)
                .map_err(|e| ApiError::Protocol(format!("{method}: {e}")));
        }
        let code = env.error_code.unwrap_or(status);
        let description = scrub(env.description.unwrap_or_default());
        Err(match code {
            429 => ApiError::RateLimited {
                retry_after: Duration::from_secs(
                    env.parameters
                        .and_then(|p| p.retry_after)
                        .unwrap_or(5)
                        .clamp(1, 3600),
                ),
                description,
            },
            409 => ApiError::Conflict(description),
            401 | 404 if method == "getMe" => ApiError::Unauthorized(description),
            401 => ApiError::Unauthorized(description),
            _ => ApiError::Rejected {
                method,
                code,
                description,
            },
        })
    }

    const CALL: Duration = Duration::from_secs(30);

    pub async fn get_me(&self) -> Result<User, ApiError> {
        self.call("getMe", &json!({}), Self::CALL).await
    }

    /// Long-polls for updates from `offset` (which confirms every earlier
    /// update to Telegram).
    pub async fn get_updates(&self, offset: i64) -> Result<Vec<Update>, ApiError> {
        self.call(
            "getUpdates",
            &json!({
                "offset": offset,
                "timeout": self.poll.as_secs(),
                "allowed_updates": ["message", "callback_query"],
            }),
            self.poll + Duration::from_secs(10),
        )
        .await
    }

    /// Sends `text` (MarkdownV2 when `markdown`); returns the message id.
    pub async fn send_message(
        &self,
        chat: &str,
        text: &str,
        markdown: bool,
        buttons: Option<Value>,
    ) -> Result<i64, ApiError> {
        let mut body = json!({"chat_id": chat, "text": text});
        if markdown {
            body["parse_mode"] = json!("MarkdownV2");
        }
        if let Some(b) = buttons {
            body["reply_markup"] = json!({"inline_keyboard": b});
        }
        #[derive(Deserialize)]
        struct Sent {
            message_id: i64,
        }
        let sent: Sent = self.call("sendMessage", &body, Self::CALL).await?;
        Ok(sent.message_id)
    }

    /// Replaces a message's text; its buttons go.
    pub async fn edit_text(&self, chat: &str, message: &str, text: &str) -> Result<(), ApiError> {
        let _: Value = self
            .call(
                "editMessageText",
                &json!({"chat_id": chat, "message_id": message, "text": text}),
                Self::CALL,
            )
            .await?;
        Ok(())
    }

    pub async fn answer_callback(&self, id: &str, text: &str) -> Result<(), ApiError> {
        let _: Value = self
            .call(
                "answerCallbackQuery",
                &json!({"callback_query_id": id, "text": text}),
                Self::CALL,
            )
            .await?;
        Ok(())
    }

    /// Downloads file `file_id`, refusing one over `max` bytes (by its
    /// declared size, and again while reading).
    pub async fn download(&self, file_id: &str, max: usize) -> Result<Vec<u8>, ApiError> {
        let f: File = self
            .call("getFile", &json!({"file_id": file_id}), Self::CALL)
            .await?;
        let too_big = |n: u64| ApiError::Rejected {
            method: "getFile",
            code: 413,
            description: format!("the file is {n} bytes, over the limit of {max}"),
        };
        if let Some(n) = f.file_size
            && n > max as u64
        {
            return Err(too_big(n));
        }
        let path = f
            .file_path
            .filter(|p| !p.is_empty() && !p.contains(".."))
            .ok_or_else(|| ApiError::Protocol("getFile: no usable file_path".into()))?;
        let url = format!("{}/file/bot{}/{path}", self.base, self.token.expose());
        let scrub = |s: String| self.token.scrub(&s);
        let mut resp = self
            .http
            .get(url)
            .timeout(Self::CALL)
            .send()
            .await
            .map_err(|e| ApiError::Transport(scrub(chain(&e))))?;
        if !resp.status().is_success() {
            return Err(ApiError::Rejected {
                method: "file download",
                code: resp.status().as_u16(),
                description: "the file could not be fetched".into(),
            });
        }
        let mut out = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| ApiError::Transport(scrub(chain(&e))))?
        {
            out.extend_from_slice(&chunk);
            if out.len() > max {
                return Err(too_big(out.len() as u64));
            }
        }
        Ok(out)
    }
}
