//! The JSON Canonicalization Scheme (RFC 8785, "JCS"): the bytes the
//! manifest's signature covers.
//!
//! JCS is JSON as ECMAScript's `JSON.stringify` writes it, with object
//! members sorted:
//!
//! - no whitespace;
//! - strings: `"` and `\` escaped, the control characters U+0000–U+001F as
//!   `\b \t \n \f \r` or `\u00xx` (lowercase hex), everything else —
//!   non-ASCII, U+007F, `/` — as itself in UTF-8;
//! - numbers: every number is an IEEE 754 double and is written the way
//!   ECMAScript's `Number.prototype.toString` writes it: the shortest
//!   digits that read back as the same double, in plain notation for
//!   magnitudes in [1e-6, 1e21) and as `d.ddde±x` outside it; `-0` is `0`.
//!   Integers beyond 2^53 are rounded to the nearest double first, as a
//!   JavaScript reader would;
//! - object members sorted by their names compared as UTF-16 code units
//!   (not UTF-8 bytes, not code points: the two orders differ once a name
//!   holds a character above U+FFFF).
//!
//! This is not `pincer_core::canonical`, the form pincer hashes its own
//! records in (keys by UTF-8 bytes, numbers as `serde_json` writes them):
//! that form never leaves pincer, JCS is for verifiers that are not pincer.
//! The tests run the RFC's examples and the published test data
//! (`tests/data/jcs/`), and the 100 000 first numbers of the published
//! ES6 number-serialisation sequence, checked by its SHA-256.

use serde_json::Value;
use std::fmt::Write as _;

/// The JCS bytes of `v`.
pub fn canonicalize(v: &Value) -> Vec<u8> {
    let mut out = String::with_capacity(256);
    write_value(v, &mut out);
    out.into_bytes()
}

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            // serde_json numbers are u64, i64 or finite f64; JCS reads all
            // of them as doubles (`as` rounds to the nearest, like JS).
            let f = if let Some(u) = n.as_u64() {
                u as f64
            } else if let Some(i) = n.as_i64() {
                i as f64
            } else {
                n.as_f64().unwrap_or(0.0)
            };
            write_number(f, out);
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_value(v, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{0c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The shortest digits `s` (no leading or trailing zeros) and the exponent
/// `n` with `x = 0.s × 10^n`, as ECMA-262 chooses them for `x > 0`: the
/// fewest digits that read back as `x`; of several, the closest to `x`;
/// of two equally close, the even one.
///
/// Rust's `{:e}` gives the fewest digits and the closest, but breaks an
/// exact tie upwards (`1424953923781206.25` → `…206.3`; ECMAScript says
/// `…206.2`). A tie means `x` is exactly the midpoint, so its exact decimal
/// expansion ends in a single `5` just after the last digit: only then is
/// the even neighbour taken instead.
fn shortest(x: f64) -> (String, i64) {
    let (digits, exp) = sci_parts(&format!("{x:e}"));
    let k = digits.len();
    // Cheap test first: k+1 significant digits ending in 5.
    let (near, near_exp) = sci_parts(&format!("{x:.k$e}"));
    if near_exp != exp || !near.ends_with('5') || near.len() != k + 1 {
        return (digits, exp + 1);
    }
    // A double's exact decimal expansion has at most 767 significant
    // digits: 800 after the point show all of it.
    let (exact, exact_exp) = sci_parts(&format!("{x:.800e}"));
    let tie = exact_exp == exp
        && exact.as_bytes().get(k) == Some(&b'5')
        && exact.bytes().skip(k + 1).all(|b| b == b'0');
    if !tie {
        return (digits, exp + 1);
    }
    let low = exact.get(..k).unwrap_or_default().to_string();
    let Some(high) = increment(&low) else {
        return (digits, exp + 1);
    };
    let even = if low
        .bytes()
        .last()
        .is_some_and(|b| (b - b'0').is_multiple_of(2))
    {
        low
    } else {
        high
    };
    // The even neighbour must still read back as `x` (it always does away
    // from a power of two; near one, keep the round-trip guarantee).
    let reads_back = format!("0.{even}e{}", exp + 1)
        .parse::<f64>()
        .is_ok_and(|y| y == x);
    if reads_back {
        (even.trim_end_matches('0').to_string(), exp + 1)
    } else {
        (digits, exp + 1)
    }
}

/// `d.ddd…eX` (Rust's `{:e}` output) → all the digits, and `X`.
fn sci_parts(sci: &str) -> (String, i64) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse::<i64>().unwrap_or(0))
}

/// A decimal digit string plus one in its last place, if that does not
/// carry out of its first digit.
fn increment(digits: &str) -> Option<String> {
    let mut b = digits.as_bytes().to_vec();
    for d in b.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return String::from_utf8(b).ok();
        }
    }
    None
}

/// Writes `f` as ECMAScript's `Number.prototype.toString(f)` does
/// (ECMA-262, Number::toString, radix 10). `f` must be finite: JSON has no
/// NaN or infinity, and serde_json never holds one.
pub fn write_number(f: f64, out: &mut String) {
    if f == 0.0 {
        // +0 and -0 alike.
        out.push('0');
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    let (digits, n) = shortest(f.abs());
    let k = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    if k <= n && n <= 21 {
        out.push_str(&digits);
        for _ in 0..(n - k) {
            out.push('0');
        }
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        for _ in 0..(-n) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(bits: u64) -> String {
        let mut s = String::new();
        write_number(f64::from_bits(bits), &mut s);
        s
    }

    /// RFC 8785, appendix B: number serialisation samples.
    #[test]
    fn the_rfc_number_samples() {
        for (bits, want) in [
            (0x0000000000000000u64, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ] {
            assert_eq!(num(bits), want, "{bits:016x}");
        }
    }

    /// RFC 8785, section 3.2.2: the example object.
    #[test]
    fn the_rfc_example() {
        let v: Value = serde_json::from_str(
            r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
                "literals": [null, true, false]}"#,
        )
        .expect("json");
        assert_eq!(
            String::from_utf8(canonicalize(&v)).expect("utf8"),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    #[test]
    fn members_sort_by_utf16_code_units() {
        // U+1F602 is D83D DE02 in UTF-16, below U+FB33; in UTF-8 it is above.
        let v = json!({"\u{fb33}": 1, "\u{1f602}": 2, "\u{20ac}": 3, "a": 4});
        assert_eq!(
            String::from_utf8(canonicalize(&v)).expect("utf8"),
            "{\"a\":4,\"\u{20ac}\":3,\"\u{1f602}\":2,\"\u{fb33}\":1}"
        );
    }

    #[test]
    fn big_integers_are_read_as_doubles() {
        let v = json!([9007199254740993u64, -9007199254740993i64, 10, 1e21]);
        assert_eq!(
            String::from_utf8(canonicalize(&v)).expect("utf8"),
            "[9007199254740992,-9007199254740992,10,1e+21]"
        );
    }
}
