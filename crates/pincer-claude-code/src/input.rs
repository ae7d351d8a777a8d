//! The JSON Claude Code writes on a hook's stdin, checked field by field:
//! a missing or mistyped field is an error that names it.
//!
//! Every event carries `session_id`, `transcript_path`, `cwd` and
//! `hook_event_name`; PreToolUse adds `tool_name`, `tool_input`,
//! `tool_use_id` (and `agent_id` inside a subagent); PostToolUse adds
//! `tool_response` and `duration_ms`; UserPromptSubmit `prompt` and
//! `prompt_id`; SessionStart `source`; SessionEnd `reason`. Fields pincer
//! does not read are ignored, so a newer client's additions do not break
//! an older pincer.

use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Largest hook input read (a `Write` of a big file carries the whole
/// content).
pub const MAX_INPUT_BYTES: usize = 32 << 20;
/// Longest `session_id`.
const MAX_ID_CHARS: usize = 256;

/// Bad hook input: the field (`(stdin)` for the whole document) and what
/// is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {problem}")]
pub struct InputError {
    pub field: String,
    pub problem: String,
}

fn bad(field: &str, problem: impl Into<String>) -> InputError {
    InputError {
        field: field.to_string(),
        problem: problem.into(),
    }
}

/// The fields every event carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Common {
    pub session_id: String,
    pub transcript_path: Option<String>,
    pub cwd: PathBuf,
    pub hook_event_name: String,
}

/// One hook input, its common part checked, the rest kept for the event.
#[derive(Debug, Clone)]
pub struct Input {
    pub common: Common,
    fields: Map<String, Value>,
    /// Every field name pincer asked for: the contract test compares them
    /// with `contract.json`.
    asked: RefCell<BTreeSet<String>>,
}

impl Input {
    /// Parses `bytes` as the input of `event` (the event pincer was
    /// installed for, which `hook_event_name` must name).
    pub fn parse(bytes: &[u8], event: &str) -> Result<Input, InputError> {
        if bytes.len() > MAX_INPUT_BYTES {
            return Err(bad(
                "(stdin)",
                format!(
                    "is {} bytes, over the {MAX_INPUT_BYTES}-byte limit",
                    bytes.len()
                ),
            ));
        }
        let text =
            std::str::from_utf8(bytes).map_err(|e| bad("(stdin)", format!("is not UTF-8: {e}")))?;
        if text.trim().is_empty() {
            return Err(bad(
                "(stdin)",
                "is empty; Claude Code writes the hook's JSON there",
            ));
        }
        let v: Value =
            serde_json::from_str(text).map_err(|e| bad("(stdin)", format!("is not JSON: {e}")))?;
        let Value::Object(fields) = v else {
            return Err(bad("(stdin)", "is not a JSON object"));
        };
        let mut input = Input {
            common: Common {
                session_id: String::new(),
                transcript_path: None,
                cwd: PathBuf::new(),
                hook_event_name: String::new(),
            },
            fields,
            asked: RefCell::default(),
        };
        let session_id = input.string("session_id")?;
        if session_id.is_empty() || session_id.chars().count() > MAX_ID_CHARS {
            return Err(bad(
                "session_id",
                format!("must be 1 to {MAX_ID_CHARS} characters"),
            ));
        }
        if session_id.chars().any(char::is_control) {
            return Err(bad("session_id", "contains a control character"));
        }
        let cwd = input.string("cwd")?;
        if !cwd.starts_with('/') {
            return Err(bad(
                "cwd",
                format!("is `{cwd}`; it must be an absolute path"),
            ));
        }
        let hook_event_name = input.string("hook_event_name")?;
        if hook_event_name != event {
            return Err(bad(
                "hook_event_name",
                format!("is `{hook_event_name}`, but this hook was installed for `{event}`"),
            ));
        }
        input.common = Common {
            transcript_path: input.opt_string("transcript_path")?,
            session_id,
            cwd: PathBuf::from(cwd),
            hook_event_name,
        };
        Ok(input)
    }

    fn get(&self, field: &str) -> Option<&Value> {
        self.asked.borrow_mut().insert(field.to_string());
        self.fields.get(field)
    }

    /// The names of the fields asked for so far.
    pub fn asked(&self) -> BTreeSet<String> {
        self.asked.borrow().clone()
    }

    /// A required string field.
    pub fn string(&self, field: &str) -> Result<String, InputError> {
        match self.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(bad(field, format!("must be a string, not {}", kind(other)))),
            None => Err(bad(field, "is missing")),
        }
    }

    /// An optional string field (absent or null is `None`).
    pub fn opt_string(&self, field: &str) -> Result<Option<String>, InputError> {
        match self.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad(field, format!("must be a string, not {}", kind(other)))),
        }
    }

    /// A required object field.
    pub fn object(&self, field: &str) -> Result<&Map<String, Value>, InputError> {
        match self.get(field) {
            Some(Value::Object(m)) => Ok(m),
            Some(other) => Err(bad(
                field,
                format!("must be an object, not {}", kind(other)),
            )),
            None => Err(bad(field, "is missing")),
        }
    }

    /// Any value (absent is `Null`).
    pub fn value(&self, field: &str) -> &Value {
        self.get(field).unwrap_or(&Value::Null)
    }

    /// An optional whole number, 0 or more.
    pub fn opt_u64(&self, field: &str) -> Result<Option<u64>, InputError> {
        match self.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                .map(Some)
                .ok_or_else(|| bad(field, "must be a whole number, 0 or more")),
            Some(other) => Err(bad(field, format!("must be a number, not {}", kind(other)))),
        }
    }
}

/// A JSON value's type, in words.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value, event: &str) -> Result<Input, InputError> {
        Input::parse(v.to_string().as_bytes(), event)
    }

    fn field_of(r: Result<Input, InputError>) -> String {
        r.expect_err("refused").field
    }

    #[test]
    fn documented_shape_parses() {
        let i = parse(
            json!({"session_id": "abc", "transcript_path": "/t.jsonl", "cwd": "/p",
                   "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1", "extra": 1}),
            "PreToolUse",
        )
        .expect("parses");
        assert_eq!(i.common.session_id, "abc");
        assert_eq!(i.string("tool_name").expect("tool"), "Bash");
        assert_eq!(i.object("tool_input").expect("input")["command"], "ls");
    }

    #[test]
    fn every_bad_field_is_named() {
        let base = json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PreToolUse"});
        let with = |k: &str, v: Value| {
            let mut b = base.clone();
            b[k] = v;
            b
        };
        let without = |k: &str| {
            let mut b = base.clone();
            b.as_object_mut().expect("object").remove(k);
            b
        };
        assert_eq!(
            field_of(parse(without("session_id"), "PreToolUse")),
            "session_id"
        );
        assert_eq!(
            field_of(parse(with("session_id", json!(3)), "PreToolUse")),
            "session_id"
        );
        assert_eq!(
            field_of(parse(with("session_id", json!("")), "PreToolUse")),
            "session_id"
        );
        assert_eq!(
            field_of(parse(with("session_id", json!("a\nb")), "PreToolUse")),
            "session_id"
        );
        assert_eq!(
            field_of(parse(with("cwd", json!("rel")), "PreToolUse")),
            "cwd"
        );
        assert_eq!(field_of(parse(without("cwd"), "PreToolUse")), "cwd");
        assert_eq!(
            field_of(parse(base.clone(), "PostToolUse")),
            "hook_event_name"
        );
        assert_eq!(
            field_of(parse(with("transcript_path", json!([])), "PreToolUse")),
            "transcript_path"
        );
        for bytes in [&b""[..], b"{", b"[1]", b"\xff"] {
            let e = Input::parse(bytes, "PreToolUse").expect_err("refused");
            assert_eq!(e.field, "(stdin)", "{e}");
        }
        let i = parse(with("tool_input", json!("ls")), "PreToolUse").expect("common part");
        let e = i.object("tool_input").expect_err("not an object");
        assert_eq!(
            e.to_string(),
            "`tool_input` must be an object, not a string"
        );
        assert_eq!(i.object("nope").expect_err("missing").problem, "is missing");
    }
}
