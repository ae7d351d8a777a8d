//! The checks of one line that need no other line.
//!
//! Two implementations of one rule, "the line is the canonical JSON of an
//! entry whose hash is right":
//!
//! - [`check_line_reference`] is the definition: parse with serde_json,
//!   write the canonical form back, compare the bytes. It names what is
//!   wrong. About 5 µs a line.
//! - [`fast_check`] is a strict single-pass scanner of the canonical grammar
//!   (no allocation, no `Value`). It only ever says "yes, canonical" or "not
//!   sure"; every "not sure" goes to the reference, which decides. So it can
//!   never reject a good line, and a property test checks that it never
//!   accepts one the reference rejects. It exists for the 1 000 000-entry
//!   verify target.
//!
//! A line is accepted by the fast path only if it is
//! `{"actor":S,"data":O,"hash":"H","kind":S,"prev":"H","seq":N,"ts":"T"}`
//! with, in `O` and recursively below it: object keys strictly increasing
//! by bytes and free of escapes, strings escaped exactly as serde_json
//! writes them, integers with no sign on zero, no leading zeros and within
//! i64/u64, any other number only if serde_json gives back the same
//! text, and nesting at most [`MAX_DEPTH`].

use super::*;

/// What the independent per-line checks found in a valid line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LineOk {
    pub(super) seq: u64,
    pub(super) prev: [u8; 32],
    pub(super) hash: [u8; 32],
    /// The stored hash is the hash of the entry.
    pub(super) hash_ok: bool,
}

/// The fields of a stored line, borrowed from it where they can be.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEntry<'a> {
    #[serde(borrow)]
    actor: Cow<'a, str>,
    data: Value,
    hash: &'a str,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    prev: &'a str,
    seq: u64,
    ts: &'a str,
}

/// The checks of one line that need no other line: it is an entry, it is
/// in canonical form, its hash is right (reported in `hash_ok`, so the
/// caller can name a seq gap or broken link on the same line first).
/// `scratch` is reused between calls.
pub(super) fn check_line(line: &[u8], scratch: &mut Scratch) -> Result<LineOk, String> {
    match fast_check(line, scratch) {
        Some(ok) => Ok(ok),
        None => check_line_reference(line, &mut scratch.buf),
    }
}

/// Buffers one thread of line checks reuses.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    buf: Vec<u8>,
    /// `YYYY-MM-DDTHH:MM:SS` of the last timestamp found canonical: most
    /// lines share it with the line before, and the milliseconds cannot
    /// make a valid date-time invalid.
    ts_prefix: Option<[u8; 19]>,
}

/// The definition of a valid line (see the module doc).
pub(super) fn check_line_reference(line: &[u8], scratch: &mut Vec<u8>) -> Result<LineOk, String> {
    let raw: RawEntry = serde_json::from_slice(line).map_err(|e| {
        if line.is_empty() {
            "empty line".to_string()
        } else {
            format!("not an audit entry: {e}")
        }
    })?;
    for (field, value) in [("actor", &raw.actor), ("kind", &raw.kind)] {
        if let Err(AuditError::Invalid { message, .. }) = validate_label(field, value) {
            return Err(format!("`{field}` is invalid: {message}"));
        }
    }
    if !raw.data.is_object() {
        return Err("`data` is not a JSON object".to_string());
    }
    let hash = unhex(raw.hash).ok_or("`hash` is not 64 lowercase hex digits")?;
    let prev = unhex(raw.prev).ok_or("`prev` is not 64 lowercase hex digits")?;
    let ts = Timestamp::parse(raw.ts).map_err(|e| format!("`ts`: {}", e.reason))?;
    scratch.clear();
    let mut ts_text = String::with_capacity(24);
    let _ = write!(ts_text, "{ts}");
    let at = write_entry_bytes(
        scratch,
        &raw.actor,
        &raw.data,
        Some(raw.hash),
        &raw.kind,
        raw.prev,
        raw.seq,
        &ts_text,
    );
    if scratch.as_slice() != line {
        let pos = scratch
            .iter()
            .zip(line)
            .position(|(a, b)| a != b)
            .unwrap_or(scratch.len().min(line.len()));
        return Err(format!(
            "not in canonical form (first difference at byte {})",
            pos + 1
        ));
    }
    let computed = hash_without(line, at, at + HASH_MEMBER_LEN);
    Ok(LineOk {
        seq: raw.seq,
        prev,
        hash,
        hash_ok: computed == hash,
    })
}

/// Deepest nesting of `data` an append accepts (serde_json refuses to parse
/// beyond 128, so a deeper entry could be written but never verified).
pub(super) const MAX_DEPTH: usize = 64;

/// The fast path: Some only when the line is certainly canonical and an
/// entry; None means "ask the reference".
pub(super) fn fast_check(line: &[u8], scratch: &mut Scratch) -> Option<LineOk> {
    // Outside strings only ASCII is valid, inside them UTF-8: one check.
    if !line.is_ascii() {
        std::str::from_utf8(line).ok()?;
    }
    let mut c = Cursor { b: line, i: 0 };
    c.lit(b"{\"actor\":")?;
    let actor = c.label()?;
    c.lit(b",\"data\":")?;
    c.object(1)?;
    c.lit(b",")?;
    let at = c.i;
    c.lit(b"\"hash\":\"")?;
    let hash = c.hex()?;
    c.lit(b"\",\"kind\":")?;
    let kind = c.label()?;
    c.lit(b",\"prev\":\"")?;
    let prev = c.hex()?;
    c.lit(b"\",\"seq\":")?;
    let seq = c.uint()?;
    c.lit(b",\"ts\":\"")?;
    let ts_start = c.i;
    let ts_len = memchr::memchr(b'"', &line[ts_start..])?;
    c.i += ts_len;
    c.lit(b"\"}")?;
    if c.i != line.len() {
        return None;
    }
    label_ok(&line[actor.0..actor.1])?;
    label_ok(&line[kind.0..kind.1])?;
    ts_ok(&line[ts_start..ts_start + ts_len], scratch)?;
    let computed = hash_without(line, at, at + HASH_MEMBER_LEN);
    Some(LineOk {
        seq,
        prev,
        hash,
        hash_ok: computed == hash,
    })
}

/// [`validate_label`] for the raw bytes of an unescaped label.
fn label_ok(raw: &[u8]) -> Option<()> {
    if raw.is_ascii() {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_LABEL_CHARS
            && !raw.iter().any(|&b| b < 0x20 || b == 0x7f);
        return ok.then_some(());
    }
    validate_label("label", std::str::from_utf8(raw).ok()?).ok()
}

/// True when `raw` is a timestamp exactly as [`Timestamp`] writes it.
fn ts_ok(raw: &[u8], scratch: &mut Scratch) -> Option<()> {
    let millis_ok = |raw: &[u8]| {
        raw.len() == 24
            && raw[19] == b'.'
            && raw[20..23].iter().all(u8::is_ascii_digit)
            && raw[23] == b'Z'
    };
    if let Some(prefix) = &scratch.ts_prefix
        && millis_ok(raw)
        && raw[..19] == prefix[..]
    {
        return Some(());
    }
    let text = std::str::from_utf8(raw).ok()?;
    let ts = Timestamp::parse(text).ok()?;
    scratch.buf.clear();
    write!(WriteVec(&mut scratch.buf), "{ts}").ok()?;
    if scratch.buf.as_slice() != raw || !millis_ok(raw) {
        return None;
    }
    let mut prefix = [0u8; 19];
    prefix.copy_from_slice(&raw[..19]);
    scratch.ts_prefix = Some(prefix);
    Some(())
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn lit(&mut self, s: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(s) {
            self.i += s.len();
            Some(())
        } else {
            None
        }
    }

    /// A canonical string; returns its content range and whether it has
    /// escapes.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        self.lit(b"\"")?;
        let start = self.i;
        let mut escaped = false;
        loop {
            // Jump to the next quote or backslash; no raw control byte may
            // be skipped over.
            let run = memchr::memchr2(b'"', b'\\', &self.b[self.i..])?;
            if self.b[self.i..self.i + run].iter().any(|&c| c < 0x20) {
                return None;
            }
            self.i += run;
            let c = self.b[self.i];
            match c {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    let e = *self.b.get(self.i + 1)?;
                    match e {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                        b'u' => {
                            // serde_json writes \u00XX (lowercase) only for
                            // the controls without a short escape.
                            let h = self.b.get(self.i + 2..self.i + 6)?;
                            let digit = |d: u8| match d {
                                b'0'..=b'9' => Some(d - b'0'),
                                b'a'..=b'f' => Some(d - b'a' + 10),
                                _ => None,
                            };
                            if h[0] != b'0' || h[1] != b'0' {
                                return None;
                            }
                            let v = (digit(h[2])? << 4) | digit(h[3])?;
                            if v >= 0x20 || matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                                return None;
                            }
                            self.i += 6;
                        }
                        _ => return None,
                    }
                }
                0..0x20 => return None,
                _ => self.i += 1,
            }
        }
        let end = self.i;
        self.i += 1;
        Some((start, end, escaped))
    }

    /// A string without escapes (an actor or kind on the fast path).
    fn label(&mut self) -> Option<(usize, usize)> {
        match self.string()? {
            (s, e, false) => Some((s, e)),
            _ => None,
        }
    }

    /// 64 lowercase hex digits.
    fn hex(&mut self) -> Option<[u8; 32]> {
        let digits = self.b.get(self.i..self.i + 64)?;
        let mut out = [0u8; 32];
        let mut bad = 0u8;
        for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
            let (h, l) = (
                HEX_VALUE[usize::from(pair[0])],
                HEX_VALUE[usize::from(pair[1])],
            );
            bad |= (h | l) & 0xf0;
            *o = (h << 4) | (l & 0x0f);
        }
        if bad != 0 {
            return None;
        }
        self.i += 64;
        Some(out)
    }

    /// A canonical unsigned integer that fits in a u64.
    fn uint(&mut self) -> Option<u64> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let digits = &self.b[start..self.i];
        if digits.is_empty() || (digits[0] == b'0' && digits.len() > 1) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(|_| ()),
            b't' => self.lit(b"true"),
            b'f' => self.lit(b"false"),
            b'n' => self.lit(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.lit(b"{")?;
        if self.lit(b"}").is_some() {
            return Some(());
        }
        let mut prev: Option<&[u8]> = None;
        loop {
            let (s, e, _) = self.string()?;
            let key = &self.b[s..e];
            // Keys sort by their decoded bytes, strictly (no duplicates).
            if prev.is_some_and(|p| decoded(p).cmp(decoded(key)).is_ge()) {
                return None;
            }
            prev = Some(key);
            self.lit(b":")?;
            self.value(depth)?;
            if self.lit(b"}").is_some() {
                return Some(());
            }
            self.lit(b",")?;
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.lit(b"[")?;
        if self.lit(b"]").is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            if self.lit(b"]").is_some() {
                return Some(());
            }
            self.lit(b",")?;
        }
    }

    fn number(&mut self) -> Option<()> {
        let start = self.i;
        let neg = self.peek() == Some(b'-');
        if neg {
            self.i += 1;
        }
        let int_start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let int = &self.b[int_start..self.i];
        if int.is_empty() || (int[0] == b'0' && int.len() > 1) {
            return None;
        }
        let is_float = matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        if !is_float {
            // serde_json reads -0 as 0, and an integer that does not fit
            // an i64 (negative) or u64 as a float.
            if neg && int == b"0" {
                return None;
            }
            if int.len() <= 18 {
                return Some(());
            }
            let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
            let fits = if neg {
                text.parse::<i64>().is_ok()
            } else {
                text.parse::<u64>().is_ok()
            };
            return fits.then_some(());
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            self.i += 1;
        }
        // Floats are rare: let serde_json say whether this is its spelling.
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        let v: Value = serde_json::from_str(text).ok()?;
        (v.is_f64() && crate::canonical::to_canonical_string(&v) == text).then_some(())
    }
}

/// The bytes a string's content (already checked by [`Cursor::string`])
/// decodes to. Every escape serde_json writes stands for one ASCII byte.
fn decoded(raw: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let c = *raw.get(i)?;
        if c != b'\\' {
            i += 1;
            return Some(c);
        }
        let e = *raw.get(i + 1)?;
        i += 2;
        Some(match e {
            b'b' => 0x08,
            b't' => 0x09,
            b'n' => 0x0a,
            b'f' => 0x0c,
            b'r' => 0x0d,
            b'u' => {
                let h = raw.get(i + 2..i + 4)?;
                i += 4;
                let digit = |d: u8| {
                    if d.is_ascii_digit() {
                        d - b'0'
                    } else {
                        d - b'a' + 10
                    }
                };
                (digit(h[0]) << 4) | digit(h[1])
            }
            other => other, // `"` and `\\`
        })
    })
}

/// The value of a lowercase hex digit, 0xff for any other byte.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};
