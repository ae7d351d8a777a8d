//! Canonical JSON and SHA-256, the two things every hash in pincer is made
//! of (audit entries AU1, approval call hashes PO4).
//!
//! Canonical form: objects with their keys sorted by their UTF-8 bytes, no
//! whitespace anywhere, strings and numbers written the way `serde_json`
//! writes them (the shortest escape for each character, integers as
//! integers). The same value always gives the same bytes, whatever order its
//! keys were inserted in and whatever features `serde_json` was built with.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Appends the canonical JSON of `v` to `out`.
pub fn write_canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out);
                out.push(b':');
                if let Some(v) = map.get(k) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::String(s) => write_string(s, out),
        // Null, bools and numbers have one serde_json spelling each.
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// The canonical JSON of `v` as a string.
pub fn to_canonical_string(v: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write_canonical(v, &mut out);
    // Only valid UTF-8 is ever written.
    String::from_utf8(out).unwrap_or_default()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest.iter() {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sorted_at_every_depth_and_no_whitespace() {
        let v: Value =
            serde_json::from_str(r#"{ "b": 1, "a": {"z": [true, null, "x\n"], "y": -2.5} }"#)
                .unwrap();
        assert_eq!(
            to_canonical_string(&v),
            r#"{"a":{"y":-2.5,"z":[true,null,"x\n"]},"b":1}"#
        );
    }

    #[test]
    fn insertion_order_does_not_matter() {
        let mut a = serde_json::Map::new();
        a.insert("x".into(), json!(1));
        a.insert("é".into(), json!("\u{1f}"));
        let mut b = serde_json::Map::new();
        b.insert("é".into(), json!("\u{1f}"));
        b.insert("x".into(), json!(1));
        assert_eq!(
            to_canonical_string(&Value::Object(a)),
            to_canonical_string(&Value::Object(b))
        );
    }

    #[test]
    fn sha256_of_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
