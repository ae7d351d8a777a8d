//! pincer's own message type: what a session stores and what providers are fed.
//!
//! # Line format (stable)
//!
//! A session file holds one message per line, each a JSON object:
//!
//! ```
//! # use pincer_core::Message;
//! let session = r#"
//! {"role":"user","content":"what is in notes.txt?","ts":"2026-11-30T11:43:45.123Z"}
//! {"role":"assistant","content":"","ts":"2026-11-30T11:43:46.001Z","tool_calls":[{"id":"c1","name":"file_read","arguments":{"path":"notes.txt"}}],"provider":"local"}
//! {"role":"tool","content":"buy milk","ts":"2026-11-30T11:43:46.010Z","tool_call_id":"c1","name":"file_read"}
//! {"role":"assistant","content":"It says: buy milk.","ts":"2026-11-30T11:43:47.500Z"}
//! "#;
//! for line in session.trim().lines() {
//!     let m = Message::from_line(line.as_bytes()).expect("every documented line is valid");
//!     // Writing a message back gives the same line, byte for byte.
//!     assert_eq!(serde_json::to_string(&m).unwrap(), line);
//! }
//! ```
//!
//! | field | type | when |
//! | --- | --- | --- |
//! | `role` | `"system" \| "user" \| "assistant" \| "tool"` | always |
//! | `content` | string | always (may be empty for an assistant that only calls tools) |
//! | `ts` | RFC 3339 UTC timestamp | always |
//! | `tool_calls` | array of `{id, name, arguments}`; `arguments` is a JSON object | assistant only, omitted when empty |
//! | `tool_call_id` | string, the `id` of the call this answers | tool only, required |
//! | `name` | string, the tool's name | tool only, required |
//! | `provider` | string, which provider produced the message | assistant only, optional |
//! | `images` | array of `{media_type, data}`: `image/jpeg`, `image/png`, `image/gif` or `image/webp`, the bytes in padded standard base64, at most [`MAX_IMAGE_BYTES`] each and [`MAX_IMAGES`] per message | user only, omitted when empty (a photo from a chat, a camera frame) |
//!
//! Unknown fields are rejected, so a typo never silently becomes data. Fields are
//! only ever added in a backwards-compatible way, with a new session meta `version`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::time::{SystemTime, UNIX_EPOCH};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool invocation requested by the model.
///
/// `arguments` is kept as the exact JSON text it arrived as: it is never
/// re-serialised differently, and loading a session does not build a tree
/// for every call.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Box<RawValue>,
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.arguments.get() == other.arguments.get()
    }
}

impl ToolCall {
    /// A call with `arguments` serialised as compact JSON.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &serde_json::Value,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: raw_json(arguments),
        }
    }

    /// A call whose arguments are JSON text as a model sent it. The text is
    /// kept verbatim except that line breaks, which valid JSON can only hold
    /// as insignificant whitespace, become spaces: one message stays one line.
    pub fn from_json_text(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &str,
    ) -> Result<Self, FieldError> {
        let text = arguments.replace(['\n', '\r'], " ");
        let raw = RawValue::from_string(text)
            .map_err(|e| FieldError::new("arguments", format!("not valid JSON: {e}")))?;
        Ok(Self {
            id: id.into(),
            name: name.into(),
            arguments: raw,
        })
    }

    /// The arguments as a JSON tree.
    pub fn arguments_value(&self) -> serde_json::Value {
        // A RawValue is valid JSON by construction, so this cannot fail; a
        // null stands in if it ever did.
        serde_json::from_str(self.arguments.get()).unwrap_or_default()
    }
}

/// `v` as a RawValue. Serialising a `Value` cannot fail (its map keys are
/// strings), and its compact text is valid JSON.
fn raw_json(v: &serde_json::Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).unwrap_or_else(|_| {
        // Unreachable, see above; `{}` keeps the "arguments is an object" rule.
        RawValue::from_string("{}".to_string()).unwrap_or_default()
    })
}

/// A point in time, stored to the millisecond, written as RFC 3339 UTC
/// (`2026-11-30T11:43:45.123Z`). Any RFC 3339 UTC text is accepted on input
/// and normalised to millisecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    pub fn now() -> Self {
        Self::from_system(SystemTime::now())
    }

    fn from_system(t: SystemTime) -> Self {
        Self(
            t.duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        )
    }

    /// Parses RFC 3339 UTC text.
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        humantime::parse_rfc3339(s)
            .map(Self::from_system)
            .map_err(|_| FieldError::new("ts", format!("`{s}` is not an RFC 3339 UTC timestamp")))
    }

    /// The time `ms` milliseconds after the Unix epoch, capped at the end
    /// of year 9999 (so it always formats).
    pub fn from_millis(ms: u64) -> Self {
        Self(ms.min(253_402_300_799_999))
    }

    /// Milliseconds since the Unix epoch.
    pub fn as_millis(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Only `parse` (years 1970..=9999) and `now` make one, so humantime
        // can always format it.
        let t = UNIX_EPOCH + std::time::Duration::from_millis(self.0);
        write!(f, "{}", humantime::format_rfc3339_millis(t))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Timestamp::parse(&s).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// The media types an [`Image`] may have: the ones every vision API takes.
pub const IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];
/// The largest image a message carries, in bytes (Anthropic's limit per
/// image; OpenAI's is larger).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// The most images one message carries.
pub const MAX_IMAGES: usize = 4;

/// An image a person sent with a message: a chat photo, a camera frame.
/// Stored inline in the session line, so the line stays the one commit
/// point (no second file to lose or orphan), and compaction reclaims it
/// with the rest of a dropped turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    /// One of [`IMAGE_TYPES`].
    pub media_type: String,
    /// The bytes, in padded standard base64.
    pub data: String,
}

impl Image {
    /// Decoded size in bytes, from the base64 length (exact for valid data).
    pub fn byte_len(&self) -> usize {
        let pad = self.data.bytes().rev().take_while(|b| *b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(pad)
    }

    /// The rules of the line format for one image; `field` is its path.
    pub fn validate(&self, field: &str) -> Result<(), FieldError> {
        if !IMAGE_TYPES.contains(&self.media_type.as_str()) {
            return Err(FieldError::new(
                format!("{field}.media_type"),
                format!(
                    "`{}` is not one of {}",
                    self.media_type.escape_debug(),
                    IMAGE_TYPES.join(", ")
                ),
            ));
        }
        let bad = |reason: &str| Err(FieldError::new(format!("{field}.data"), reason));
        if self.data.is_empty() {
            return bad("must not be empty");
        }
        if !self.data.len().is_multiple_of(4) {
            return bad("is not padded base64 (its length is not a multiple of 4)");
        }
        let body = self.data.trim_end_matches('=');
        if self.data.len() - body.len() > 2
            || !body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        {
            return bad("is not standard base64");
        }
        if self.byte_len() > MAX_IMAGE_BYTES {
            return Err(FieldError::new(
                format!("{field}.data"),
                format!(
                    "the image is {} bytes, over the limit of {MAX_IMAGE_BYTES}",
                    self.byte_len()
                ),
            ));
        }
        Ok(())
    }
}

/// One line of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    pub role: Role,
    pub content: String,
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// [`Message`] as a person may type it: the same fields, `ts` optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputMessage {
    role: Role,
    content: String,
    ts: Option<Timestamp>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    tool_call_id: Option<String>,
    name: Option<String>,
    provider: Option<String>,
    #[serde(default)]
    images: Vec<Image>,
}

/// A message that breaks the line format; `field` names the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason}")]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// serde would also read a struct from a JSON array; the format is objects.
fn require_object(line: &[u8]) -> Result<(), FieldError> {
    if line.trim_ascii_start().first() == Some(&b'{') {
        Ok(())
    } else {
        Err(FieldError::new("(json)", "a message must be a JSON object"))
    }
}

/// Names the field a serde error is about: its path, or `(json)` for a
/// syntax error, and for an unknown or missing field the field itself.
fn field_error<T, E: std::fmt::Display>(
    r: Result<T, serde_path_to_error::Error<E>>,
) -> Result<T, FieldError> {
    r.map_err(|e| {
        let msg = e.inner().to_string();
        let path = e.path().to_string();
        let named = |prefix: &str| {
            msg.strip_prefix(prefix)
                .and_then(|rest| rest.split('`').next())
                .map(str::to_string)
        };
        // An unknown field's path already ends with it; a missing one's
        // path is its parent.
        // `.` is the top level; `?` is where a syntax error left the parser.
        let top = path == "." || path == "?";
        let field = match named("missing field `").or_else(|| named("duplicate field `")) {
            Some(f) if top => f,
            Some(f) => format!("{path}.{f}"),
            None if top => "(json)".to_string(),
            None => path,
        };
        FieldError::new(field, msg)
    })
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            ts: Timestamp::now(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            provider: None,
            images: Vec::new(),
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }

    /// A user message with images (a chat photo, a camera frame).
    pub fn user_with_images(content: impl Into<String>, images: Vec<Image>) -> Self {
        Self {
            images,
            ..Self::plain(Role::User, content)
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }

    /// An assistant message that asks for tool calls.
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::plain(Role::Assistant, content)
        }
    }

    /// The result of the call `call_id` to tool `name`.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            name: Some(name.into()),
            ..Self::plain(Role::Tool, content)
        }
    }

    /// Checks the rules serde cannot express: which fields go with which role,
    /// non-empty ids, unique call ids, object arguments, a parsable timestamp.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.role != Role::Assistant {
            if !self.tool_calls.is_empty() {
                return Err(FieldError::new(
                    "tool_calls",
                    format!(
                        "only assistant messages carry tool calls, not {}",
                        self.role.as_str()
                    ),
                ));
            }
            if self.provider.is_some() {
                return Err(FieldError::new(
                    "provider",
                    format!(
                        "only assistant messages name a provider, not {}",
                        self.role.as_str()
                    ),
                ));
            }
        }
        if self.role == Role::Tool {
            match &self.tool_call_id {
                None => return Err(FieldError::new("tool_call_id", "a tool message needs it")),
                Some(id) if id.is_empty() => {
                    return Err(FieldError::new("tool_call_id", "must not be empty"));
                }
                Some(_) => {}
            }
            match &self.name {
                None => return Err(FieldError::new("name", "a tool message needs it")),
                Some(n) if n.is_empty() => {
                    return Err(FieldError::new("name", "must not be empty"));
                }
                Some(_) => {}
            }
        } else {
            if self.tool_call_id.is_some() {
                return Err(FieldError::new(
                    "tool_call_id",
                    format!("only tool messages carry it, not {}", self.role.as_str()),
                ));
            }
            if self.name.is_some() {
                return Err(FieldError::new(
                    "name",
                    format!("only tool messages carry it, not {}", self.role.as_str()),
                ));
            }
        }
        if !self.images.is_empty() && self.role != Role::User {
            return Err(FieldError::new(
                "images",
                format!(
                    "only user messages carry images, not {}",
                    self.role.as_str()
                ),
            ));
        }
        if self.images.len() > MAX_IMAGES {
            return Err(FieldError::new(
                "images",
                format!(
                    "{} images, over the limit of {MAX_IMAGES} per message",
                    self.images.len()
                ),
            ));
        }
        for (i, image) in self.images.iter().enumerate() {
            image.validate(&format!("images[{i}]"))?;
        }
        for (i, call) in self.tool_calls.iter().enumerate() {
            if call.id.is_empty() {
                return Err(FieldError::new(
                    format!("tool_calls[{i}].id"),
                    "must not be empty",
                ));
            }
            if call.name.is_empty() {
                return Err(FieldError::new(
                    format!("tool_calls[{i}].name"),
                    "must not be empty",
                ));
            }
            if !call.arguments.get().trim_start().starts_with('{') {
                return Err(FieldError::new(
                    format!("tool_calls[{i}].arguments"),
                    "must be a JSON object",
                ));
            }
            // A raw line break would split the record across lines.
            if call.arguments.get().contains(['\n', '\r']) {
                return Err(FieldError::new(
                    format!("tool_calls[{i}].arguments"),
                    "must not contain raw line breaks (build it with ToolCall::from_json_text)",
                ));
            }
            if self.tool_calls[..i].iter().any(|c| c.id == call.id) {
                return Err(FieldError::new(
                    format!("tool_calls[{i}].id"),
                    format!("`{}` is used twice in one message", call.id),
                ));
            }
        }
        Ok(())
    }

    /// Parses and validates one stored line. The fast path is plain serde;
    /// only a line that fails is parsed again to name the offending field.
    pub fn from_line(line: &[u8]) -> Result<Message, FieldError> {
        require_object(line)?;
        let m = match serde_json::from_slice::<Message>(line) {
            Ok(m) => m,
            Err(fast) => {
                let de = &mut serde_json::Deserializer::from_slice(line);
                return match field_error(serde_path_to_error::deserialize::<_, Message>(de)) {
                    Err(e) => Err(e),
                    Ok(_) => Err(FieldError::new("(json)", fast.to_string())),
                };
            }
        };
        m.validate()?;
        Ok(m)
    }

    /// Parses a message a person or script supplies (`pincer session
    /// append`): like [`Message::from_line`], but `ts` may be left out (it
    /// is then now). The text is parsed once, straight into the message, so
    /// arguments stay verbatim and a duplicate key is an error.
    pub fn from_input(line: &str) -> Result<Message, FieldError> {
        require_object(line.as_bytes())?;
        let de = &mut serde_json::Deserializer::from_str(line);
        let input: InputMessage = field_error(serde_path_to_error::deserialize(de))?;
        let m = Message {
            role: input.role,
            content: input.content,
            ts: input.ts.unwrap_or_else(Timestamp::now),
            tool_calls: input.tool_calls,
            tool_call_id: input.tool_call_id,
            name: input.name,
            provider: input.provider,
            images: input.images,
        };
        m.validate()?;
        Ok(m)
    }

    /// True for an assistant message that ends a turn (asks for no tool).
    pub fn is_final_reply(&self) -> bool {
        self.role == Role::Assistant && self.tool_calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(line: serde_json::Value, expected_field: Option<&str>) {
        match (Message::from_input(&line.to_string()), expected_field) {
            (Ok(_), None) => {}
            (Err(e), Some(field)) => assert_eq!(e.field, field, "{line}: {e}"),
            (got, want) => panic!("{line}: got {got:?}, want an error on {want:?}"),
        }
    }

    #[test]
    fn line_format_rules() {
        let ts = "2026-11-30T11:43:45.123Z";
        check(json!({"role":"user","content":"hi","ts":ts}), None);
        let img = |mt: &str, data: &str| json!({"media_type": mt, "data": data});
        check(
            json!({"role":"user","content":"look","ts":ts,"images":[img("image/png","iVBORw0KGgo=")]}),
            None,
        );
        check(
            json!({"role":"assistant","content":"x","ts":ts,"images":[img("image/png","AAAA")]}),
            Some("images"),
        );
        check(
            json!({"role":"user","content":"x","ts":ts,"images":[img("image/png","AAAA"),img("text/html","AAAA")]}),
            Some("images[1].media_type"),
        );
        check(
            json!({"role":"user","content":"x","ts":ts,"images":[img("image/jpeg","AAA")]}),
            Some("images[0].data"),
        );
        check(
            json!({"role":"user","content":"x","ts":ts,"images":[img("image/jpeg","AA\n=")]}),
            Some("images[0].data"),
        );
        check(
            json!({"role":"user","content":"x","ts":ts,"images":[img("image/jpeg","")]}),
            Some("images[0].data"),
        );
        let five: Vec<_> = (0..5).map(|_| img("image/png", "AAAA")).collect();
        check(
            json!({"role":"user","content":"x","ts":ts,"images":five}),
            Some("images"),
        );
        let big = "A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4);
        check(
            json!({"role":"user","content":"x","ts":ts,"images":[img("image/jpeg",&big)]}),
            Some("images[0].data"),
        );
        assert_eq!(
            Image {
                media_type: "image/png".into(),
                data: "AAA=".into()
            }
            .byte_len(),
            2
        );
        check(
            json!({"role":"assistant","content":"","ts":ts,"tool_calls":[{"id":"a","name":"t","arguments":{}}]}),
            None,
        );
        check(
            json!({"role":"tool","content":"r","ts":ts,"tool_call_id":"a","name":"t"}),
            None,
        );
        check(json!({"role":"robot","content":"hi","ts":ts}), Some("role"));
        check(json!({"role":"user","ts":ts}), Some("content"));
        check(
            json!({"role":"user","content":"x","ts":ts,"colour":1}),
            Some("colour"),
        );
        check(
            json!({"role":"user","content":"x","ts":"yesterday"}),
            Some("ts"),
        );
        check(
            json!({"role":"user","content":"x","ts":ts,"tool_calls":[{"id":"a","name":"t","arguments":{}}]}),
            Some("tool_calls"),
        );
        check(
            json!({"role":"tool","content":"r","ts":ts,"name":"t"}),
            Some("tool_call_id"),
        );
        check(
            json!({"role":"tool","content":"r","ts":ts,"tool_call_id":"a"}),
            Some("name"),
        );
        check(
            json!({"role":"user","content":"r","ts":ts,"tool_call_id":"a"}),
            Some("tool_call_id"),
        );
        check(
            json!({"role":"assistant","content":"","ts":ts,"tool_calls":[{"id":"a","name":"t","arguments":[]}]}),
            Some("tool_calls[0].arguments"),
        );
        check(
            json!({"role":"assistant","content":"","ts":ts,"tool_calls":[
                {"id":"a","name":"t","arguments":{}},{"id":"a","name":"u","arguments":{}}]}),
            Some("tool_calls[1].id"),
        );
        check(
            json!({"role":"assistant","content":"","ts":ts,"tool_calls":[{"id":"","name":"t","arguments":{}}]}),
            Some("tool_calls[0].id"),
        );
        check(
            json!({"role":"user","content":"x","ts":ts,"provider":"p"}),
            Some("provider"),
        );
    }

    #[test]
    fn input_errors_name_the_field() {
        let field = |line: &str| Message::from_input(line).expect_err(line).field;
        assert_eq!(field(r#"{"role":"user","content":5}"#), "content");
        assert_eq!(
            field(r#"{"role":"user","content":"x","colour":1}"#),
            "colour"
        );
        assert_eq!(field(r#"{"role":"user"}"#), "content");
        assert_eq!(field(r#"{"role":"robot","content":"x"}"#), "role");
        assert_eq!(
            field(r#"{"role":"assistant","content":"","tool_calls":[{"id":"a","name":"t"}]}"#),
            "tool_calls[0].arguments"
        );
        assert_eq!(
            field(
                r#"{"role":"assistant","content":"","tool_calls":[{"id":7,"name":"t","arguments":{}}]}"#
            ),
            "tool_calls[0].id"
        );
        assert_eq!(field(r#"{"role":"user","#), "(json)");
        assert_eq!(field(r#"[1,2]"#), "(json)");
        assert_eq!(
            field(r#"{"role":"user","content":"a","content":"b"}"#),
            "content"
        );
        assert_eq!(
            field(r#"{"role":"user","content":"x","ts":"2026-01-01 00:00:00"}"#),
            "ts"
        );
        assert_eq!(field(r#"{"role":"user","content":"x","ts":"soon"}"#), "ts");
        let m = Message::from_input(r#"{"role":"user","content":"x"}"#).expect("ts filled in");
        assert!(m.ts.as_millis() > 1_700_000_000_000, "{}", m.ts);
        assert_eq!(
            Message::from_line(br#"{"role":"user","content":1,"ts":"2026-01-01T00:00:00Z"}"#)
                .expect_err("bad")
                .field,
            "content"
        );
    }

    #[test]
    fn timestamps_are_rfc3339_millis_and_arguments_stay_verbatim() {
        let line = br#"{"role":"assistant","content":"","ts":"2026-11-30T11:43:45.123456Z","tool_calls":[{"id":"a","name":"t","arguments":{"b": 2, "a": [1]}}]}"#;
        let m = Message::from_line(line).expect("valid");
        assert_eq!(m.ts.to_string(), "2026-11-30T11:43:45.123Z");
        assert_eq!(m.tool_calls[0].arguments.get(), r#"{"b": 2, "a": [1]}"#);
        assert_eq!(m.tool_calls[0].arguments_value(), json!({"a": [1], "b": 2}));
        let out = serde_json::to_string(&m).expect("ser");
        assert!(out.contains(r#""ts":"2026-11-30T11:43:45.123Z""#), "{out}");
        assert!(out.contains(r#""arguments":{"b": 2, "a": [1]}"#), "{out}");
        assert_eq!(
            Timestamp::parse("1969-12-31T23:59:59Z").map_err(|e| e.field),
            Err("ts".into())
        );
    }

    #[test]
    fn input_keeps_arguments_verbatim_and_one_line() {
        let m = Message::from_input(
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"a","name":"t","arguments":{"z":1,"n":12345678901234567890123}}]}"#,
        )
        .expect("valid");
        assert_eq!(
            m.tool_calls[0].arguments.get(),
            r#"{"z":1,"n":12345678901234567890123}"#
        );
        let call = ToolCall::from_json_text("c", "t", "{\n  \"path\": \"x\"\n}").expect("valid");
        assert!(!call.arguments.get().contains('\n'));
        assert_eq!(call.arguments_value(), json!({"path": "x"}));
        assert!(ToolCall::from_json_text("c", "t", "{oops").is_err());
        let pretty = ToolCall {
            arguments: RawValue::from_string("{\n\"a\":1}".into()).expect("raw"),
            ..call
        };
        let err = Message::assistant_calls("", vec![pretty])
            .validate()
            .expect_err("newline");
        assert_eq!(err.field, "tool_calls[0].arguments");
    }

    #[test]
    fn round_trips_and_omits_empty_fields() {
        let m = Message::user("hello");
        let line = serde_json::to_string(&m).expect("serialise");
        assert!(!line.contains("tool_calls"), "{line}");
        assert!(!line.contains("provider"), "{line}");
        let back: Message = serde_json::from_str(&line).expect("parse");
        assert_eq!(back, m);
        assert_eq!(back.validate(), Ok(()));
    }
}
