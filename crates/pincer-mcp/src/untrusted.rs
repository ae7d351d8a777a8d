//! What a server says is untrusted data: its tool names, descriptions,
//! schemas and results. Here each is bounded, made safe to print, and
//! checked before the model (or a person) sees it; nothing a server says
//! changes a risk, an allowlist or a decision.

use crate::config::SEPARATOR;
use pincer_core::text::{cut, one_line, squeeze};
use serde_json::Value;

/// The longest description the model is shown (characters).
pub const MAX_DESCRIPTION: usize = 1024;
/// The largest input schema accepted (bytes of JSON); a bigger one is not
/// offered.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The longest tool result the model is shown (bytes).
pub const MAX_RESULT: usize = 64 * 1024;
/// Tools read from one server at most (a bigger list is cut, and says so).
pub const MAX_TOOLS: usize = 512;
/// `tools/list` pages followed at most.
pub const MAX_PAGES: usize = 32;
/// The longest name the model is shown for a tool (providers' limit).
pub const MAX_NAME: usize = 64;

/// The name the model sees for `server`'s tool `tool`, or why it has none:
/// providers accept only `[A-Za-z0-9_-]` in a tool name, at most 64.
pub fn exposed_name(server: &str, tool: &str) -> Result<String, String> {
    let name = format!("{server}{SEPARATOR}{tool}");
    if tool.is_empty()
        || !tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "its name {} has characters a model's tool name cannot carry (only A-Z, a-z, 0-9, `_` and `-`)",
            one_line(tool, 80)
        ));
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "`{name}` is longer than the {MAX_NAME} characters a model's tool name may have"
        ));
    }
    Ok(name)
}

/// A server's description of a tool as the model and people see it: one
/// line, control characters shown escaped, at most [`MAX_DESCRIPTION`]
/// characters, marked with the server it came from.
pub fn description(server: &str, text: Option<&str>) -> String {
    let body = text
        .map(|t| squeeze(t, MAX_DESCRIPTION))
        .unwrap_or_default();
    if body.is_empty() {
        format!("[MCP server `{server}`] (no description)")
    } else {
        format!("[MCP server `{server}`] {body}")
    }
}

/// A `tools/call` result (the JSON the server sent) as the text the model
/// reads: text blocks as they are, structured content as JSON when there
/// is no text, other blocks described (an image is not pasted into the
/// conversation as base64), everything together at most [`MAX_RESULT`]
/// bytes with a visible marker when cut. The flag is the server's
/// `isError`.
pub fn result(v: &Value) -> (String, bool) {
    let is_error = v.get("isError").and_then(Value::as_bool) == Some(true);
    let mut parts: Vec<String> = Vec::new();
    let mut texts = 0;
    if let Some(content) = v.get("content").and_then(Value::as_array) {
        for block in content {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
            let bytes = |k: &str| block.get(k).and_then(Value::as_str).map_or(0, str::len);
            match kind {
                "text" => {
                    texts += 1;
                    parts.push(s("text").to_string());
                }
                "image" | "audio" => parts.push(format!(
                    "[{kind} {}, {} bytes of base64, not shown]",
                    one_line(s("mimeType"), 60),
                    bytes("data")
                )),
                "resource_link" => parts.push(format!(
                    "[resource link {} {}]",
                    one_line(s("uri"), 200),
                    one_line(s("name"), 80)
                )),
                "resource" => {
                    let r = block.get("resource").cloned().unwrap_or(Value::Null);
                    let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                    match r.get("text").and_then(Value::as_str) {
                        Some(t) => {
                            texts += 1;
                            parts.push(format!("[resource {}]\n{t}", one_line(uri, 200)));
                        }
                        None => parts.push(format!(
                            "[resource {} ({}), {} bytes of base64, not shown]",
                            one_line(uri, 200),
                            one_line(
                                r.get("mimeType")
                                    .and_then(Value::as_str)
                                    .unwrap_or("binary"),
                                60
                            ),
                            r.get("blob").and_then(Value::as_str).map_or(0, str::len)
                        )),
                    }
                }
                other => parts.push(format!(
                    "[a content block of type {} , not shown]",
                    one_line(other, 40)
                )),
            }
        }
    }
    if texts == 0
        && let Some(sc) = v.get("structuredContent")
        && !sc.is_null()
    {
        parts.push(sc.to_string());
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    (bound(&text, MAX_RESULT), is_error)
}

/// `text` cut to at most `max` bytes (at a character boundary), with the
/// total size said when something was cut.
pub fn bound(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let end = (0..=max)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    format!(
        "{}\n[... cut: the result was {} bytes, {max} shown]",
        &text[..end],
        text.len()
    )
}

/// A short excerpt of untrusted text for an error message or a log line.
pub fn excerpt(text: &str, max: usize) -> String {
    one_line(&cut(text, max), max + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_model_cannot_carry_are_refused_with_the_reason() {
        assert_eq!(exposed_name("srv", "echo").as_deref(), Ok("srv__echo"));
        assert_eq!(
            exposed_name("srv", "get-sum").as_deref(),
            Ok("srv__get-sum")
        );
        for bad in ["", "a.b", "a/b", "a b", "é", "x\u{1b}[2J"] {
            let e = exposed_name("srv", bad).expect_err(bad);
            assert!(!e.contains('\u{1b}'), "{e}");
        }
        assert!(exposed_name("srv", &"x".repeat(60)).is_err());
    }

    #[test]
    fn descriptions_are_one_safe_bounded_line_marked_with_their_server() {
        let d = description("srv", Some("Echo.\n\u{1b}]52;c;evil\u{7} \u{202e}txt"));
        assert!(d.starts_with("[MCP server `srv`] Echo."), "{d}");
        assert!(
            !d.contains('\n') && !d.contains('\u{1b}') && !d.contains('\u{202e}'),
            "{d}"
        );
        let long = description("srv", Some(&"a".repeat(10_000)));
        assert!(
            long.chars().count() < MAX_DESCRIPTION + 40,
            "{}",
            long.len()
        );
        assert_eq!(
            description("srv", None),
            "[MCP server `srv`] (no description)"
        );
    }

    #[test]
    fn results_keep_text_describe_the_rest_and_are_bounded() {
        let (t, err) = result(&json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///y", "blob": "AAAA", "mimeType": "image/png"}},
            {"type": "resource_link", "uri": "file:///z", "name": "z"},
            {"type": "future-kind"}
        ]}));
        assert!(!err);
        assert_eq!(
            t,
            "hi\n[image image/png, 4 bytes of base64, not shown]\n[resource file:///x]\nbody\n\
             [resource file:///y (image/png), 4 bytes of base64, not shown]\n\
             [resource link file:///z z]\n[a content block of type future-kind , not shown]"
        );
        let (t, err) =
            result(&json!({"content": [], "structuredContent": {"sum": 3}, "isError": true}));
        assert!(err);
        assert_eq!(t, "{\"sum\":3}");
        assert_eq!(result(&json!({})).0, "(the tool returned no content)");
        let (t, _) =
            result(&json!({"content": [{"type": "text", "text": "é".repeat(MAX_RESULT)}]}));
        assert!(t.len() < MAX_RESULT + 100, "{}", t.len());
        assert!(
            t.ends_with(&format!(
                "[... cut: the result was {} bytes, {MAX_RESULT} shown]",
                2 * MAX_RESULT
            )),
            "{}",
            &t[t.len() - 80..]
        );
    }
}
