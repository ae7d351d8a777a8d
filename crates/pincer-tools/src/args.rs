//! Strict argument parsing shared by every tool.
//!
//! The model's arguments are checked before anything runs: an unknown key, a
//! wrong type or a missing required argument is a `RespondToModel` error that
//! names the tool and the argument (principle 6). An optional argument
//! given as JSON `null` counts as absent, because several vendors' strict
//! function-calling modes send `null` for every optional field.

use pincer_core::tool::ToolError;
use serde_json::{Map, Value};

/// The arguments object of one call, with its unknown keys already refused.
#[derive(Debug)]
pub(crate) struct Args<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

pub(crate) fn respond(msg: impl Into<String>) -> ToolError {
    ToolError::RespondToModel(msg.into())
}

/// The JSON type name of a value, for error messages.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Args<'a> {
    /// Checks that `v` is an object whose keys are all in `allowed`.
    pub(crate) fn parse(
        tool: &'static str,
        v: &'a Value,
        allowed: &[&str],
    ) -> Result<Args<'a>, ToolError> {
        let Value::Object(map) = v else {
            return Err(respond(format!(
                "{tool}: the arguments must be a JSON object, got {}",
                type_name(v)
            )));
        };
        let mut unknown: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| !allowed.contains(k))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            let list = unknown
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(respond(format!(
                "{tool}: unknown argument {list} (allowed: {})",
                allowed.join(", ")
            )));
        }
        Ok(Args { tool, map })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn wrong_type(&self, key: &str, want: &str, got: &Value) -> ToolError {
        respond(format!(
            "{}: argument `{key}` must be {want}, got {}",
            self.tool,
            type_name(got)
        ))
    }

    fn missing(&self, key: &str) -> ToolError {
        respond(format!("{}: missing required argument `{key}`", self.tool))
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub(crate) fn req_str(&self, key: &str) -> Result<&'a str, ToolError> {
        match self.map.get(key) {
            None => Err(self.missing(key)),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.wrong_type(key, "a string", other)),
        }
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(key, "a string", other)),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong_type(key, "a boolean", other)),
        }
    }

    /// A non-negative integer (a float like `3.0` is refused: say what you mean).
    pub(crate) fn opt_u64(&self, key: &str) -> Result<Option<u64>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong_type(key, "a non-negative integer", v)),
            Some(other) => Err(self.wrong_type(key, "a non-negative integer", other)),
        }
    }

    /// An array of strings.
    pub(crate) fn opt_str_array(&self, key: &str) -> Result<Option<Vec<&'a str>>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.as_str()),
                    other => Err(respond(format!(
                        "{}: argument `{key}` must be an array of strings, but item {i} is {}",
                        self.tool,
                        type_name(other)
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.wrong_type(key, "an array of strings", other)),
        }
    }

    /// Builds a `RespondToModel` error prefixed with the tool name.
    pub(crate) fn error(&self, msg: impl std::fmt::Display) -> ToolError {
        respond(format!("{}: {msg}", self.tool))
    }
}

/// A JSON Schema for an arguments object: `properties` in order, the
/// `required` ones, and no other keys.
pub(crate) fn object_schema(properties: &[(&str, Value)], required: &[&str]) -> Value {
    let props: Map<String, Value> = properties
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(e: ToolError) -> String {
        match e {
            ToolError::RespondToModel(m) => m,
            ToolError::Fatal(m) => panic!("unexpected fatal error: {m}"),
        }
    }

    #[test]
    fn unknown_keys_are_named() {
        let v = json!({"path": "a", "bogus": 1, "other": 2});
        let e = msg(Args::parse("t", &v, &["path"]).unwrap_err());
        assert!(e.contains("`bogus`") && e.contains("`other`"), "{e}");
        assert!(e.contains("allowed: path"), "{e}");
    }

    #[test]
    fn non_object_is_refused() {
        let v = json!(["a"]);
        let e = msg(Args::parse("t", &v, &["path"]).unwrap_err());
        assert!(e.contains("JSON object") && e.contains("an array"), "{e}");
    }

    #[test]
    fn types_are_checked_and_named() {
        let v = json!({"s": 1, "b": "yes", "n": -1, "f": 1.5, "a": ["x", 2]});
        let a = Args::parse("t", &v, &["s", "b", "n", "f", "a", "missing"]).unwrap();
        assert!(msg(a.req_str("s").unwrap_err()).contains("`s` must be a string, got a number"));
        assert!(msg(a.opt_bool("b").unwrap_err()).contains("`b` must be a boolean"));
        assert!(msg(a.opt_u64("n").unwrap_err()).contains("`n` must be a non-negative integer"));
        assert!(msg(a.opt_u64("f").unwrap_err()).contains("`f` must be a non-negative integer"));
        assert!(msg(a.opt_str_array("a").unwrap_err()).contains("item 1 is a number"));
        assert!(
            msg(a.req_str("missing").unwrap_err()).contains("missing required argument `missing`")
        );
    }

    #[test]
    fn null_optional_is_absent_but_null_required_is_wrong() {
        let v = json!({"s": null, "n": null});
        let a = Args::parse("t", &v, &["s", "n"]).unwrap();
        assert_eq!(a.opt_u64("n").unwrap(), None);
        assert!(!a.has("n"));
        assert!(msg(a.req_str("s").unwrap_err()).contains("got null"));
    }

    #[test]
    fn schema_shape() {
        let s = object_schema(&[("path", json!({"type": "string"}))], &["path"]);
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], json!(["path"]));
        assert_eq!(s["properties"]["path"]["type"], "string");
    }
}
