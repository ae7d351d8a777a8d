//! An incremental Server-Sent Events parser (the `text/event-stream` format
//! of the WHATWG HTML standard, "Parsing an event stream").
//!
//! Bytes go in as they arrive, in chunks cut anywhere: inside a line, between
//! the `\r` and `\n` of a line break, inside a multi-byte UTF-8 character.
//! Complete events come out. Lines end in `\r\n`, `\n` or `\r`; a line that
//! starts with `:` is a comment; `data:` lines of one event are joined with
//! `\n`; a blank line dispatches the event; one leading byte-order mark is
//! dropped. As the standard says, an event still open when the stream ends
//! is discarded: a connection that drops mid-event yields nothing half-read.
//!
//! Only complete lines are decoded, so a character split across chunks is
//! never mangled; invalid UTF-8 becomes U+FFFD, as the standard asks.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty when the event had none (the standard's
    /// default type is `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen on the stream so far, if any.
    pub id: Option<String>,
}

/// The parser state between chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read (no line break yet).
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next chunk
    /// belongs to that line break.
    after_cr: bool,
    /// At most the first three bytes are checked for a byte-order mark.
    bom_checked: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk and returns the events it completed, in order.
    pub fn push(&mut self, mut chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if chunk.is_empty() {
            // Nothing to do, and a pending `\r` must stay pending.
            return out;
        }
        if !self.bom_checked {
            // The mark may itself be split across chunks: hold bytes back
            // until three are there or they stop matching.
            self.line.extend_from_slice(chunk);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return out;
            }
            self.bom_checked = true;
            let held = std::mem::take(&mut self.line);
            let rest = held.strip_prefix(BOM).unwrap_or(&held);
            self.feed(rest, &mut out);
            return out;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        self.feed(chunk, &mut out);
        out
    }

    /// Bytes held for an unfinished line or event; callers cap it so a
    /// server that never ends a line cannot grow memory without bound.
    pub fn buffered(&self) -> usize {
        self.line.len() + self.data.len() + self.event.len()
    }

    fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        while let Some(pos) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (head, rest) = chunk.split_at(pos);
            let line = if self.line.is_empty() {
                String::from_utf8_lossy(head).into_owned()
            } else {
                self.line.extend_from_slice(head);
                let bytes = std::mem::take(&mut self.line);
                String::from_utf8_lossy(&bytes).into_owned()
            };
            chunk = match rest {
                [b'\r', b'\n', tail @ ..] => tail,
                [b'\r'] => {
                    self.after_cr = true;
                    &[]
                }
                [_, tail @ ..] => tail,
                [] => &[],
            };
            self.line_done(&line, out);
        }
        self.line.extend_from_slice(chunk);
    }

    fn line_done(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            let mut data = std::mem::take(&mut self.data);
            if std::mem::take(&mut self.has_data) {
                // Every data line appended a `\n`; the last one is dropped.
                data.pop();
                out.push(SseEvent {
                    event,
                    data,
                    id: self.last_id.clone(),
                });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            // `retry` and unknown fields are ignored, as the standard says.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: None,
        }
    }

    fn parse_in(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        chunks.iter().flat_map(|c| p.push(c)).collect()
    }

    /// A stream with every feature in it: a BOM, all three line endings,
    /// comments, multi-line data, event names, a field without a colon, a
    /// value without the optional space, multi-byte characters, an id, an
    /// unknown field, a blank event, and a trailing unfinished event.
    const SAMPLE: &str = "\u{FEFF}: hello comment\r\n\
        event: message_start\r\n\
        data: {\"a\":\"h\u{e9}llo \u{1F980}\"}\r\n\
        \r\n\
        data: line one\n\
        data:line two\n\
        data\n\
        \n\
        :only a comment\n\
        \n\
        event: ping\r\
        data: \u{4F60}\u{597D}\r\
        id: 7\r\
        retry: 100\r\
        \r\
        colour: blue\n\
        data: [DONE]\n\
        \n\
        data: never finished\n";

    fn sample_events() -> Vec<SseEvent> {
        vec![
            ev("message_start", "{\"a\":\"h\u{e9}llo \u{1F980}\"}"),
            ev("", "line one\nline two\n"),
            SseEvent {
                id: Some("7".into()),
                ..ev("ping", "\u{4F60}\u{597D}")
            },
            SseEvent {
                id: Some("7".into()),
                ..ev("", "[DONE]")
            },
        ]
    }

    #[test]
    fn whole_sample() {
        assert_eq!(parse_in(&[SAMPLE.as_bytes()]), sample_events());
    }

    #[test]
    fn split_at_every_byte_gives_the_same_events() {
        let bytes = SAMPLE.as_bytes();
        for i in 0..=bytes.len() {
            assert_eq!(
                parse_in(&[&bytes[..i], &bytes[i..]]),
                sample_events(),
                "split at {i}"
            );
            for j in i..=bytes.len() {
                assert_eq!(
                    parse_in(&[&bytes[..i], &bytes[i..j], &bytes[j..]]),
                    sample_events(),
                    "split at {i} and {j}"
                );
            }
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse_in(&singles), sample_events(), "one byte at a time");
    }

    #[test]
    fn cr_lf_split_across_chunks_is_one_line_break() {
        // Were the `\n` taken as a second (blank) line, the event would be
        // dispatched before its second data line.
        assert_eq!(
            parse_in(&[b"data: a\r", b"\ndata: b\r\n\r\n"]),
            vec![ev("", "a\nb")]
        );
        // A lone `\r` at a chunk end followed by text is a line break too.
        assert_eq!(
            parse_in(&[b"data: a\r", b"data: b\r", b"\r"]),
            vec![ev("", "a\nb")]
        );
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let text = "data: \u{1F980}\u{e9}\n\n".as_bytes();
        for i in 0..text.len() {
            assert_eq!(
                parse_in(&[&text[..i], &text[i..]]),
                vec![ev("", "\u{1F980}\u{e9}")],
                "split at {i}"
            );
        }
        // Invalid UTF-8 is replaced, not an error.
        assert_eq!(parse_in(&[b"data: \xFF\n\n"]), vec![ev("", "\u{FFFD}")]);
    }

    #[test]
    fn blank_events_and_empty_data() {
        // No data line: nothing is dispatched, and the event name is reset.
        assert_eq!(parse_in(&[b"event: x\n\ndata: y\n\n"]), vec![ev("", "y")]);
        // `data:` with an empty value is an event with empty data.
        assert_eq!(parse_in(&[b"data:\n\n"]), vec![ev("", "")]);
        // A BOM is only dropped at the very start.
        assert_eq!(
            parse_in(&["data: \u{FEFF}x\n\n".as_bytes()]),
            vec![ev("", "\u{FEFF}x")]
        );
        // A short stream that merely starts like a BOM is kept.
        assert_eq!(parse_in(&[b"\xEF", b"\n"]), vec![]);
        assert_eq!(parse_in(&[b"d", b"ata: z\n\n"]), vec![ev("", "z")]);
    }

    #[test]
    fn buffered_counts_unfinished_input() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: 12345").is_empty());
        assert!(p.buffered() >= 11);
        assert_eq!(p.push(b"\n\n"), vec![ev("", "12345")]);
        assert_eq!(p.buffered(), 0);
    }
}
