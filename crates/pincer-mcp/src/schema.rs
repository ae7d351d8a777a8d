//! Arguments checked against a tool's input schema before the gate: a call
//! that cannot be valid is refused as invalid (nobody is asked to approve
//! it, nothing reaches the server), naming what is wrong.
//!
//! The schema is the server's, so it is untrusted too: it must be a JSON
//! object of at most [`crate::untrusted::MAX_SCHEMA_BYTES`] describing an
//! object, it is compiled once when the server starts (one that does not
//! compile is not offered), and it can never make pincer fetch or read
//! anything: `jsonschema` is built without its HTTP and file resolvers, so
//! a `$ref` to anything outside the schema fails to compile.

use crate::untrusted::{MAX_SCHEMA_BYTES, excerpt};
use serde_json::Value;

/// The largest arguments object accepted (bytes of JSON).
pub const MAX_ARGS_BYTES: usize = 1 << 20;

/// A compiled input schema.
pub struct ArgSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ArgSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgSchema(..)")
    }
}

impl ArgSchema {
    /// Compiles a tool's `inputSchema`, or says why it cannot be used.
    pub fn compile(schema: &Value) -> Result<ArgSchema, String> {
        let size = schema.to_string().len();
        if size > MAX_SCHEMA_BYTES {
            return Err(format!(
                "its input schema is {size} bytes, over the {MAX_SCHEMA_BYTES}-byte limit"
            ));
        }
        let Some(obj) = schema.as_object() else {
            return Err("its input schema is not a JSON object".into());
        };
        match obj.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            None => {}
            Some(other) => {
                return Err(format!(
                    "its input schema describes {}, not an object of arguments",
                    excerpt(&other.to_string(), 40)
                ));
            }
        }
        let validator = jsonschema::options().build(schema).map_err(|e| {
            format!(
                "its input schema does not compile: {}",
                excerpt(&e.to_string(), 200)
            )
        })?;
        Ok(ArgSchema { validator })
    }

    /// `Ok` when `args` fits the schema; else the first few problems, each
    /// with where it is (`/path`), in one sentence.
    pub fn check(&self, args: &Value) -> Result<(), String> {
        if !args.is_object() {
            return Err("the arguments must be a JSON object".into());
        }
        let size = args.to_string().len();
        if size > MAX_ARGS_BYTES {
            return Err(format!(
                "the arguments are {size} bytes, over the {MAX_ARGS_BYTES}-byte limit"
            ));
        }
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!(
                    "at `{}`: {}",
                    excerpt(&at, 80),
                    excerpt(&e.to_string(), 200)
                )
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the arguments do not match the tool's input schema: {}",
                problems.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> ArgSchema {
        ArgSchema::compile(&json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "number"},
                "mode": {"enum": ["fast", "slow"]}
            },
            "required": ["a", "b"],
            "additionalProperties": false
        }))
        .expect("compiles")
    }

    #[test]
    fn valid_arguments_pass_and_invalid_ones_name_the_place() {
        let s = schema();
        s.check(&json!({"a": 1, "b": 2.5})).expect("valid");
        let e = s.check(&json!({"a": "one"})).expect_err("invalid");
        assert!(e.contains("at `/a`") && e.contains("number"), "{e}");
        assert!(
            e.contains("\"b\" is a required property") || e.contains("required"),
            "{e}"
        );
        let e = s
            .check(&json!({"a": 1, "b": 2, "mode": "warp"}))
            .expect_err("enum");
        assert!(e.contains("/mode"), "{e}");
        let e = s
            .check(&json!({"a": 1, "b": 2, "zz": 1}))
            .expect_err("extra");
        assert!(e.contains("zz"), "{e}");
        assert!(s.check(&json!([1, 2])).is_err());
        let big = json!({"a": 1, "b": 2, "pad": "x".repeat(MAX_ARGS_BYTES)});
        assert!(s.check(&big).expect_err("big").contains("limit"));
    }

    #[test]
    fn unusable_schemas_are_refused_with_the_reason() {
        for (bad, needle) in [
            (json!("object"), "not a JSON object"),
            (json!({"type": "string"}), "not an object of arguments"),
            (
                json!({"type": "object", "properties": {"a": {"type": "nonsense"}}}),
                "does not compile",
            ),
            (
                json!({"type": "object", "pad": "x".repeat(MAX_SCHEMA_BYTES)}),
                "limit",
            ),
        ] {
            let e = ArgSchema::compile(&bad).expect_err(needle);
            assert!(e.contains(needle), "{e}");
        }
        // A schema with no `type` is taken as it is (MCP servers send `{}`
        // for a tool without arguments).
        ArgSchema::compile(&json!({})).expect("empty schema");
    }

    /// A schema pointing outside itself never makes pincer fetch or read
    /// anything: a listener on loopback sees no connection, and a file
    /// `$ref` does not read the file.
    #[test]
    fn a_ref_outside_the_schema_is_never_fetched_or_read() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let remote = json!({"type": "object", "properties": {"a": {"$ref": format!("http://127.0.0.1:{port}/s.json")}}});
        let compiled = ArgSchema::compile(&remote);
        assert!(compiled.is_err(), "a remote $ref must not compile");
        assert!(listener.accept().is_err(), "nothing may have connected");
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("s.json");
        std::fs::write(&file, r#"{"type": "string"}"#).expect("write");
        let local = json!({"type": "object", "properties": {"a": {"$ref": format!("file://{}", file.display())}}});
        assert!(
            ArgSchema::compile(&local).is_err(),
            "a file $ref must not compile"
        );
    }
}
