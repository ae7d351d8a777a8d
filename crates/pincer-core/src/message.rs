//! pincer's own message type: what a session stores and what providers are fed.
//!
//! # Line format (stable)
//!
//! A session file holds one message per line, each a JSON object:
//!
//! ```json
//! {"role":"user","content":"what is in notes.txt?","ts":"2026-11-30T11:43:45.123Z"}
//! {"role":"assistant","content":"","ts":"2026-11-30T11:43:46.001Z","tool_calls":[{"id":"c1","name":"file_read","arguments":{"path":"notes.txt"}}],"provider":"local"}
//! {"role":"tool","content":"buy milk","ts":"2026-11-30T11:43:46.010Z","tool_call_id":"c1","name":"file_read"}
//! {"role":"assistant","content":"It says: buy milk.","ts":"2026-11-30T11:43:47.500Z"}
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
//!
//! Unknown fields are rejected, so a typo never silently becomes data. Fields are
//! only ever added in a backwards-compatible way, with a new session meta `version`.

use serde::{Deserialize, Serialize};
use std::time::SystemTime;

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// One line of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    pub role: Role,
    pub content: String,
    pub ts: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
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
        let field = named("missing field `")
            .map(|f| {
                if path == "." {
                    f
                } else {
                    format!("{path}.{f}")
                }
            })
            .unwrap_or_else(|| {
                if path == "." {
                    "(json)".to_string()
                } else {
                    path
                }
            });
        FieldError::new(field, msg)
    })
}

/// The current time as the RFC 3339 string the line format uses.
pub fn now_ts() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            ts: now_ts(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            provider: None,
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
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
        if humantime::parse_rfc3339_weak(&self.ts).is_err() {
            return Err(FieldError::new(
                "ts",
                format!("`{}` is not an RFC 3339 timestamp", self.ts),
            ));
        }
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
            if !call.arguments.is_object() {
                return Err(FieldError::new(
                    format!("tool_calls[{i}].arguments"),
                    "must be a JSON object",
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
    /// append`): like [`Message::from_line`], but a missing `ts` is now.
    pub fn from_input(line: &str) -> Result<Message, FieldError> {
        let mut v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| FieldError::new("(json)", e.to_string()))?;
        match v.as_object_mut() {
            Some(obj) => {
                obj.entry("ts")
                    .or_insert_with(|| serde_json::Value::String(now_ts()));
            }
            None => return Err(FieldError::new("(json)", "a message must be a JSON object")),
        }
        let m = field_error(serde_path_to_error::deserialize::<_, Message>(v))?;
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
        let parsed: Result<Message, _> = serde_json::from_value(line.clone());
        match (parsed, expected_field) {
            (Ok(m), None) => assert_eq!(m.validate(), Ok(()), "{line}"),
            (Ok(m), Some(field)) => {
                let err = m.validate().expect_err("should be invalid");
                assert_eq!(err.field, field, "{line}: {err}");
            }
            (Err(e), Some(field)) => {
                assert!(
                    e.to_string().contains(field),
                    "{line}: `{e}` should name `{field}`"
                )
            }
            (Err(e), None) => panic!("{line} should parse: {e}"),
        }
    }

    #[test]
    fn line_format_rules() {
        let ts = "2026-11-30T11:43:45.123Z";
        check(json!({"role":"user","content":"hi","ts":ts}), None);
        check(
            json!({"role":"assistant","content":"","ts":ts,"tool_calls":[{"id":"a","name":"t","arguments":{}}]}),
            None,
        );
        check(
            json!({"role":"tool","content":"r","ts":ts,"tool_call_id":"a","name":"t"}),
            None,
        );
        check(
            json!({"role":"robot","content":"hi","ts":ts}),
            Some("robot"),
        );
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
        assert_eq!(field(r#"{"role":"user","content":"x","ts":"soon"}"#), "ts");
        let m = Message::from_input(r#"{"role":"user","content":"x"}"#).expect("ts filled in");
        assert!(humantime::parse_rfc3339_weak(&m.ts).is_ok());
        assert_eq!(
            Message::from_line(br#"{"role":"user","content":1,"ts":"2026-01-01T00:00:00Z"}"#)
                .expect_err("bad")
                .field,
            "content"
        );
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
