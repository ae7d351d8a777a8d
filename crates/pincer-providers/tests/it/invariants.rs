//! Protocol invariants checked on whole captured request bodies: no tool
//! call without its result right after it, no result without its call.

use serde_json::Value;
use std::collections::BTreeSet;

/// OpenAI chat completions: an assistant message with `tool_calls` is
/// followed at once by exactly one `tool` message per call id, and every
/// `tool` message belongs to such a run.
pub fn assert_openai_paired(body: &Value) {
    let msgs = body["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages array: {body}"));
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        match m["role"].as_str() {
            Some("assistant") if m.get("tool_calls").is_some() => {
                let calls = m["tool_calls"].as_array().expect("tool_calls is an array");
                assert!(
                    !calls.is_empty(),
                    "empty tool_calls at messages[{i}]: {body}"
                );
                assert!(
                    m["content"].is_null() || m["content"].as_str().is_some_and(|c| !c.is_empty()),
                    "assistant content with tool calls must be null or text: {m}"
                );
                let mut wanted = BTreeSet::new();
                for c in calls {
                    assert_eq!(c["type"], "function", "{c}");
                    let args = c["function"]["arguments"]
                        .as_str()
                        .unwrap_or_else(|| panic!("arguments must be a JSON string: {c}"));
                    let parsed: Value = serde_json::from_str(args)
                        .unwrap_or_else(|e| panic!("arguments are not JSON ({e}): {c}"));
                    assert!(parsed.is_object(), "arguments must be an object: {c}");
                    let id = c["id"].as_str().expect("call id").to_string();
                    assert!(wanted.insert(id.clone()), "call id {id} twice: {m}");
                }
                let mut j = i + 1;
                let mut answered = BTreeSet::new();
                while j < msgs.len() && msgs[j]["role"] == "tool" {
                    let id = msgs[j]["tool_call_id"]
                        .as_str()
                        .expect("tool_call_id")
                        .to_string();
                    assert!(
                        wanted.contains(&id),
                        "orphan tool result {id} at messages[{j}]: {body}"
                    );
                    assert!(answered.insert(id.clone()), "result for {id} twice: {body}");
                    j += 1;
                }
                assert_eq!(
                    answered, wanted,
                    "tool calls without results after messages[{i}]: {body}"
                );
                i = j;
            }
            Some("tool") => panic!("orphan tool result at messages[{i}]: {body}"),
            Some("system") => {
                assert_eq!(i, 0, "system message not first: {body}");
                i += 1;
            }
            Some("user" | "assistant") => i += 1,
            other => panic!("unexpected role {other:?} at messages[{i}]: {body}"),
        }
    }
}

fn block_ids(blocks: &[Value], kind: &str, key: &str) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b["type"] == kind)
        .map(|b| b[key].as_str().expect("block id").to_string())
        .collect()
}

/// Anthropic Messages: roles alternate starting with user; every
/// assistant `tool_use` is answered by a `tool_result` in the very next
/// (user) message, results first; no result lacks its call; no text block
/// is empty.
pub fn assert_anthropic_paired(body: &Value) {
    let msgs = body["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages array: {body}"));
    let mut prev_uses: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().expect("role");
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(
            role, want,
            "roles must alternate from user; messages[{i}]: {body}"
        );
        let blocks = m["content"]
            .as_array()
            .unwrap_or_else(|| panic!("content must be blocks at messages[{i}]: {body}"));
        assert!(!blocks.is_empty(), "empty content at messages[{i}]: {body}");
        for b in blocks {
            if b["type"] == "text" {
                assert!(
                    b["text"].as_str().is_some_and(|t| !t.is_empty()),
                    "empty text block: {body}"
                );
            }
        }
        let results = block_ids(blocks, "tool_result", "tool_use_id");
        if role == "user" {
            let mut sorted_results = results.clone();
            sorted_results.sort();
            let mut sorted_uses = prev_uses.clone();
            sorted_uses.sort();
            assert_eq!(
                sorted_results, sorted_uses,
                "tool_use/tool_result mismatch at messages[{i}] (orphan call or orphan result): {body}"
            );
            let first_other = blocks.iter().position(|b| b["type"] != "tool_result");
            if let Some(p) = first_other {
                assert!(
                    blocks[p..].iter().all(|b| b["type"] != "tool_result"),
                    "tool_result blocks must come first at messages[{i}]: {body}"
                );
            }
            prev_uses.clear();
        } else {
            assert!(
                results.is_empty(),
                "tool_result in an assistant message: {body}"
            );
            prev_uses = block_ids(blocks, "tool_use", "id");
            for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
                assert!(
                    b["input"].is_object(),
                    "tool_use input must be an object: {b}"
                );
            }
        }
    }
    assert!(
        prev_uses.is_empty(),
        "the request ends with unanswered tool calls: {body}"
    );
}

/// The helpers must themselves catch orphans, or every test using them
/// proves nothing.
#[test]
fn helpers_catch_orphans() {
    use serde_json::json;
    let caught = |f: fn(&Value), body: Value| std::panic::catch_unwind(|| f(&body)).is_err();
    let call =
        json!({"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}});
    let good = json!({"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"}]});
    assert!(!caught(assert_openai_paired, good));
    let orphan_call = json!({"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "user", "content": "y"}]});
    assert!(caught(assert_openai_paired, orphan_call));
    let orphan_result = json!({"messages": [
        {"role": "user", "content": "x"},
        {"role": "tool", "tool_call_id": "c1", "content": "r"}]});
    assert!(caught(assert_openai_paired, orphan_result));

    let use_block = json!({"type": "tool_use", "id": "t1", "name": "t", "input": {}});
    let result = json!({"type": "tool_result", "tool_use_id": "t1", "content": "r"});
    let text = json!({"type": "text", "text": "x"});
    let good = json!({"messages": [
        {"role": "user", "content": [text]},
        {"role": "assistant", "content": [use_block]},
        {"role": "user", "content": [result, text]}]});
    assert!(!caught(assert_anthropic_paired, good));
    let orphan_call = json!({"messages": [
        {"role": "user", "content": [text]},
        {"role": "assistant", "content": [use_block]},
        {"role": "user", "content": [text]}]});
    assert!(caught(assert_anthropic_paired, orphan_call));
    let orphan_result = json!({"messages": [
        {"role": "user", "content": [result]}]});
    assert!(caught(assert_anthropic_paired, orphan_result));
    let split = json!({"messages": [
        {"role": "user", "content": [text]},
        {"role": "assistant", "content": [use_block]},
        {"role": "user", "content": [result]},
        {"role": "user", "content": [text]}]});
    assert!(caught(assert_anthropic_paired, split));
    let text_first = json!({"messages": [
        {"role": "user", "content": [text]},
        {"role": "assistant", "content": [use_block]},
        {"role": "user", "content": [text, result]}]});
    assert!(caught(assert_anthropic_paired, text_first));
}
