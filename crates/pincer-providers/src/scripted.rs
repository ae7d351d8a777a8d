//! A provider that replays a JSON script of model turns (`pincer demo`,
//! tests, reproducing a bug without a model).
//!
//! # Script format (stable, user-facing)
//!
//! ```json
//! {"turns": [
//!   {"text": "Let me look.",
//!    "tool_calls": [{"id": "c1", "name": "file_read", "arguments": {"path": "notes.txt"}}],
//!    "expect": {"last_message_contains": "notes", "last_role": "user", "tools_offered": ["file_read"]}},
//!   {"text": "It says: buy milk."}
//! ]}
//! ```
//!
//! | field | type | meaning |
//! | --- | --- | --- |
//! | `turns` | array, required | one entry per model call, used in order |
//! | `turns[].text` | string, default `""` | the reply text, streamed in word-sized chunks |
//! | `turns[].tool_calls` | array, default `[]` | `{id, name, arguments}`; `arguments` must be a JSON object, ids unique in a turn |
//! | `turns[].expect` | object, optional | checks on the request this turn answers, all optional: |
//! | `expect.last_message_contains` | string | the last message's content contains it |
//! | `expect.last_role` | `"user" \| "assistant" \| "tool"` | the last message has this role |
//! | `expect.tools_offered` | array of strings | each named tool is offered (others may be too) |
//! | `expect.system_contains` | string | the system prompt contains it |
//! | `expect.images` | number | the last message carries this many images |
//!
//! Each `chat` call consumes the next turn. A turn with tool calls finishes
//! with `ToolCalls`, otherwise `Stop`. An `expect` that does not hold, or a
//! call after the last turn, is a `Rejected` error (status 400) naming the
//! turn (counted from 0) and what differed; the turn is still consumed.
//! Unknown fields anywhere are errors naming the field, so a typo never
//! silently stops checking something.
//!
//! Usage is an estimate, not a count: characters / 4, rounded up, of
//! everything sent (system prompt, messages, tool specs) and of the reply.
//! The reported model is `scripted`.

use pincer_core::message::{Role, ToolCall};
use pincer_core::provider::{
    BoxFuture, ChatRequest, ChatResponse, FinishReason, Provider, ProviderCaps, ProviderError,
    Usage,
};
use serde::Deserialize;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A whole script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
}

/// One scripted model turn.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// Checks on the request a turn answers; `None` fields are not checked.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub last_message_contains: Option<String>,
    #[serde(default)]
    pub last_role: Option<Role>,
    #[serde(default)]
    pub tools_offered: Option<Vec<String>>,
    #[serde(default)]
    pub system_contains: Option<String>,
    #[serde(default)]
    pub images: Option<usize>,
}

/// Replays a [`Script`]; see the module doc for the format.
#[derive(Debug)]
pub struct ScriptedProvider {
    name: String,
    turns: Vec<ScriptTurn>,
    next: AtomicUsize,
}

impl ScriptedProvider {
    /// Parses a script. Errors name the offending field (`turns[1].expect.colour`).
    pub fn from_json(name: impl Into<String>, json: &str) -> Result<Self, ProviderError> {
        let name = name.into();
        let de = &mut serde_json::Deserializer::from_str(json);
        let script: Script = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            ProviderError::Config {
                provider: name.clone(),
                message: format!("script: {path}: {}", e.inner()),
            }
        })?;
        Self::from_turns(name, script.turns)
    }

    /// Reads and parses a script file.
    pub fn from_file(name: impl Into<String>, path: &Path) -> Result<Self, ProviderError> {
        let name = name.into();
        let text = std::fs::read_to_string(path).map_err(|e| ProviderError::Config {
            provider: name.clone(),
            message: format!("cannot read the script {}: {e}", path.display()),
        })?;
        Self::from_json(name, &text).map_err(|e| match e {
            ProviderError::Config { provider, message } => ProviderError::Config {
                provider,
                message: format!("{}: {message}", path.display()),
            },
            other => other,
        })
    }

    /// A provider over turns built in code; they are checked like a file.
    pub fn from_turns(
        name: impl Into<String>,
        turns: Vec<ScriptTurn>,
    ) -> Result<Self, ProviderError> {
        let name = name.into();
        for (t, turn) in turns.iter().enumerate() {
            for (c, call) in turn.tool_calls.iter().enumerate() {
                let bad = |field: &str, why: &str| ProviderError::Config {
                    provider: name.clone(),
                    message: format!("script: turns[{t}].tool_calls[{c}].{field}: {why}"),
                };
                if call.id.is_empty() {
                    return Err(bad("id", "must not be empty"));
                }
                if call.name.is_empty() {
                    return Err(bad("name", "must not be empty"));
                }
                if !call.arguments.is_object() {
                    return Err(bad("arguments", "must be a JSON object"));
                }
                if turn.tool_calls[..c].iter().any(|o| o.id == call.id) {
                    return Err(bad("id", "is used twice in one turn"));
                }
            }
        }
        Ok(Self {
            name,
            turns,
            next: AtomicUsize::new(0),
        })
    }

    /// How many turns have been consumed (a test can check the script ran
    /// to its end).
    pub fn turns_used(&self) -> usize {
        self.next.load(Ordering::SeqCst).min(self.turns.len())
    }

    /// How many turns the script has.
    pub fn turns_total(&self) -> usize {
        self.turns.len()
    }

    fn reject(&self, message: String) -> ProviderError {
        ProviderError::Rejected {
            provider: self.name.clone(),
            status: 400,
            message,
        }
    }

    fn answer(
        &self,
        req: &ChatRequest<'_>,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<ChatResponse, ProviderError> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(turn) = self.turns.get(index) else {
            return Err(self.reject(format!(
                "script exhausted: it has {} turn(s), and turn {index} was asked for",
                self.turns.len()
            )));
        };
        if let Some(expect) = &turn.expect {
            check(expect, req).map_err(|why| self.reject(format!("turn {index}: {why}")))?;
        }
        // Streamed word by word, keeping the whitespace, so the chunks
        // concatenate to the text exactly.
        for piece in turn.text.split_inclusive(char::is_whitespace) {
            on_text(piece);
        }
        let tool_calls: Vec<ToolCall> = turn
            .tool_calls
            .iter()
            .map(|c| ToolCall::new(c.id.clone(), c.name.clone(), &c.arguments))
            .collect();
        let sent = req.system.chars().count()
            + req
                .messages
                .iter()
                .map(|m| {
                    m.content.chars().count()
                        + m.tool_calls
                            .iter()
                            .map(|c| c.name.len() + c.arguments.get().chars().count())
                            .sum::<usize>()
                })
                .sum::<usize>()
            + req
                .tools
                .iter()
                .map(|t| {
                    t.name.len() + t.description.chars().count() + t.parameters.to_string().len()
                })
                .sum::<usize>();
        let received = turn.text.chars().count()
            + tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.get().chars().count())
                .sum::<usize>();
        Ok(ChatResponse {
            content: turn.text.clone(),
            finish: if tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            },
            tool_calls,
            usage: Some(Usage {
                input_tokens: estimate(sent),
                output_tokens: estimate(received),
            }),
            provider: self.name.clone(),
            model: "scripted".into(),
            attempts: Vec::new(),
        })
    }
}

fn estimate(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

/// Why `req` does not meet `expect`, if it does not.
fn check(expect: &Expect, req: &ChatRequest<'_>) -> Result<(), String> {
    let last = req.messages.last();
    if let Some(needle) = &expect.last_message_contains {
        let content = last.map(|m| m.content.as_str()).unwrap_or_default();
        if !content.contains(needle.as_str()) {
            return Err(format!(
                "expected the last message to contain {needle:?}, but it is {content:?}"
            ));
        }
    }
    if let Some(role) = expect.last_role {
        match last {
            Some(m) if m.role == role => {}
            Some(m) => {
                return Err(format!(
                    "expected the last message's role to be {}, but it is {}",
                    role.as_str(),
                    m.role.as_str()
                ));
            }
            None => {
                return Err(format!(
                    "expected the last message's role to be {}, but there are no messages",
                    role.as_str()
                ));
            }
        }
    }
    if let Some(wanted) = &expect.tools_offered {
        let offered: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
        let missing: Vec<&str> = wanted
            .iter()
            .map(String::as_str)
            .filter(|w| !offered.contains(w))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "expected tools {missing:?} to be offered, but the tools offered are {offered:?}"
            ));
        }
    }
    if let Some(n) = expect.images {
        let got = last.map_or(0, |m| m.images.len());
        if got != n {
            return Err(format!(
                "expected the last message to carry {n} image(s), but it carries {got}"
            ));
        }
    }
    if let Some(needle) = &expect.system_contains
        && !req.system.contains(needle.as_str())
    {
        return Err(format!(
            "expected the system prompt to contain {needle:?}, but it does not"
        ));
    }
    Ok(())
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn caps(&self) -> ProviderCaps {
        ProviderCaps {
            tools: true,
            streaming: true,
            // A script "sees" whatever it is sent; `expect.images` checks it.
            vision: true,
        }
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest<'a>,
        on_text: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move { self.answer(req, on_text) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pincer_core::Message;
    use pincer_core::provider::ToolSpec;
    use serde_json::json;
    use std::sync::Mutex;

    const DOC_SCRIPT: &str = r#"{"turns": [
        {"text": "Let me look.", "tool_calls": [{"id": "c1", "name": "file_read", "arguments": {"path": "notes.txt"}}],
         "expect": {"last_message_contains": "notes", "last_role": "user", "tools_offered": ["file_read"]}},
        {"text": "It says: buy milk."}
    ]}"#;

    fn req(messages: Vec<Message>, tools: &[&str]) -> ChatRequest<'static> {
        ChatRequest {
            system: "You are pincer.".into(),
            messages: messages.into(),
            tools: tools
                .iter()
                .map(|n| ToolSpec {
                    name: (*n).into(),
                    description: "d".into(),
                    parameters: json!({"type": "object"}),
                })
                .collect(),
            max_tokens: 100,
        }
    }

    /// Runs one call, returning the streamed chunks and the result.
    fn call(
        p: &ScriptedProvider,
        r: &ChatRequest<'_>,
    ) -> (Vec<String>, Result<ChatResponse, ProviderError>) {
        let seen = Mutex::new(Vec::new());
        let on_text = |t: &str| seen.lock().unwrap().push(t.to_string());
        let result = p.answer(r, &on_text);
        (seen.into_inner().unwrap(), result)
    }

    fn err_text(r: Result<ChatResponse, ProviderError>) -> String {
        r.expect_err("should fail").to_string()
    }

    #[test]
    fn documented_script_plays_through() {
        let p = ScriptedProvider::from_json("demo", DOC_SCRIPT).unwrap();
        let r1 = req(
            vec![Message::user("what is in notes.txt?")],
            &["file_read", "shell"],
        );
        let (chunks, out) = call(&p, &r1);
        let out = out.unwrap();
        assert_eq!(chunks, vec!["Let ", "me ", "look."]);
        assert_eq!(out.content, "Let me look.");
        assert_eq!(out.finish, FinishReason::ToolCalls);
        assert_eq!(
            out.tool_calls,
            vec![ToolCall::new(
                "c1",
                "file_read",
                &json!({"path": "notes.txt"})
            )]
        );
        assert_eq!(out.provider, "demo");
        assert_eq!(out.model, "scripted");
        let usage = out.usage.unwrap();
        assert!(
            usage.input_tokens > 0 && usage.output_tokens > 0,
            "{usage:?}"
        );

        let (chunks, out) = call(&p, &r1);
        let out = out.unwrap();
        assert_eq!(chunks.concat(), "It says: buy milk.");
        assert_eq!(chunks.len(), 4);
        assert_eq!(out.finish, FinishReason::Stop);
        assert!(out.tool_calls.is_empty());
        assert_eq!(p.turns_used(), 2);
    }

    #[test]
    fn expect_mismatches_name_the_turn_and_the_difference() {
        let script = |expect: serde_json::Value| {
            ScriptedProvider::from_json(
                "s",
                &json!({"turns": [{"text": "ok"}, {"expect": expect}]}).to_string(),
            )
            .unwrap()
        };
        let r = req(vec![Message::user("hello there")], &["file_read"]);
        let second = |expect| {
            let p = script(expect);
            call(&p, &r).1.unwrap();
            call(&p, &r).1
        };
        let e = err_text(second(json!({"last_message_contains": "goodbye"})));
        assert!(
            e.contains("turn 1") && e.contains("goodbye") && e.contains("hello there"),
            "{e}"
        );
        let e = err_text(second(json!({"last_role": "tool"})));
        assert!(
            e.contains("turn 1") && e.contains("tool") && e.contains("user"),
            "{e}"
        );
        let e = err_text(second(json!({"tools_offered": ["file_read", "shell"]})));
        assert!(e.contains("turn 1") && e.contains("[\"shell\"]"), "{e}");
        let e = err_text(second(json!({"system_contains": "pirate"})));
        assert!(e.contains("turn 1") && e.contains("pirate"), "{e}");
        assert!(second(json!({"last_message_contains": "hello", "last_role": "user", "tools_offered": ["file_read"], "system_contains": "pincer"})).is_ok());
        let p = script(json!({"last_role": "user"}));
        call(&p, &r).1.unwrap();
        assert!(matches!(
            call(&p, &req(vec![], &[])).1,
            Err(ProviderError::Rejected { status: 400, .. })
        ));
    }

    #[test]
    fn running_past_the_end_is_a_clear_error() {
        let p = ScriptedProvider::from_turns(
            "s",
            vec![ScriptTurn {
                text: "only".into(),
                ..Default::default()
            }],
        )
        .unwrap();
        let r = req(vec![Message::user("x")], &[]);
        call(&p, &r).1.unwrap();
        let e = call(&p, &r).1.expect_err("exhausted");
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(
            text.contains("exhausted") && text.contains("1 turn") && text.contains("turn 1"),
            "{text}"
        );
        assert_eq!(p.turns_used(), 1);
    }

    #[test]
    fn unknown_fields_and_bad_calls_are_named() {
        let e = |json: &str| {
            ScriptedProvider::from_json("s", json)
                .expect_err("invalid script")
                .to_string()
        };
        let msg = e(r#"{"turns": [{"text": "a"}, {"txt": "b"}]}"#);
        assert!(msg.contains("turns[1]") && msg.contains("`txt`"), "{msg}");
        let msg = e(r#"{"turns": [{"expect": {"colour": "red"}}]}"#);
        assert!(
            msg.contains("turns[0].expect") && msg.contains("`colour`"),
            "{msg}"
        );
        let msg = e(r#"{"turns": [], "version": 2}"#);
        assert!(msg.contains("`version`"), "{msg}");
        let msg = e(r#"{"turns": [{"tool_calls": [{"id": "a", "name": "t", "arguments": "x"}]}]}"#);
        assert!(
            msg.contains("turns[0].tool_calls[0].arguments") && msg.contains("object"),
            "{msg}"
        );
        let msg = e(
            r#"{"turns": [{"tool_calls": [{"id": "a", "name": "t", "arguments": {}}, {"id": "a", "name": "u", "arguments": {}}]}]}"#,
        );
        assert!(msg.contains("turns[0].tool_calls[1].id"), "{msg}");
        let msg = e(r#"{"turns": [{"expect": {"last_role": "robot"}}]}"#);
        assert!(msg.contains("turns[0].expect.last_role"), "{msg}");
        let msg = e("{\"turns\": [");
        assert!(msg.contains("script"), "{msg}");
    }

    #[test]
    fn from_file_names_the_file() {
        let e = ScriptedProvider::from_file("s", Path::new("/nonexistent/script.json"))
            .expect_err("missing");
        assert!(e.to_string().contains("/nonexistent/script.json"), "{e}");
    }
}
