//! Text for chat platforms: replies split under a platform's length limit
//! (at paragraph, line or word boundaries, code fences closed and
//! reopened across a split), and Telegram's MarkdownV2 escaping.

/// Splits `text` into parts of at most `limit` units as `measure` counts
/// them (Telegram counts UTF-16 code units, Discord characters). Never
/// returns an empty list for non-empty text; an empty text is one empty
/// part.
pub fn split(text: &str, limit: usize, measure: fn(&str) -> usize) -> Vec<String> {
    // Room for a fence closed at the end of a part and reopened at the
    // start of the next.
    const FENCE: &str = "\n```";
    let limit = limit.max(16);
    let body = limit - FENCE.len() * 2;
    let mut parts: Vec<String> = Vec::new();
    let mut rest = text;
    while measure(rest) > limit {
        let cut = cut_point(rest, body, measure);
        let (head, tail) = rest.split_at(cut);
        parts.push(head.trim_end().to_string());
        rest = tail.trim_start_matches([' ', '\n']);
    }
    parts.push(rest.to_string());
    // A fence left open by a split is closed there and reopened in the
    // next part.
    let mut open = false;
    for p in &mut parts {
        if open {
            p.insert_str(0, "```\n");
        }
        if p.matches("```").count() % 2 == 1 {
            p.push_str(FENCE);
            open = true;
        } else {
            open = false;
        }
    }
    if open && let Some(last) = parts.last_mut() {
        // The text itself left a fence open: leave it as written.
        last.truncate(last.len() - FENCE.len());
    }
    parts
}

/// The byte index to cut `s` at so the head measures at most `max`: the
/// last paragraph break, else line break, else space in the second half of
/// that room, else the last character boundary that fits.
fn cut_point(s: &str, max: usize, measure: fn(&str) -> usize) -> usize {
    let mut fit = 0;
    for (i, c) in s.char_indices() {
        let end = i + c.len_utf8();
        if measure(&s[..end]) > max {
            break;
        }
        fit = end;
    }
    if fit == 0 {
        // One character over the limit on its own: cut after it anyway.
        return s.chars().next().map_or(s.len(), char::len_utf8);
    }
    let head = &s[..fit];
    for sep in ["\n\n", "\n", " "] {
        if let Some(at) = head.rfind(sep)
            && at >= fit / 2
        {
            return at + sep.len();
        }
    }
    fit
}

/// UTF-16 code units, as Telegram counts a message's length.
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Characters, as Discord counts.
pub fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// The characters MarkdownV2 reserves outside code.
const RESERVED: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!', '\\',
];

fn escape_plain(out: &mut String, s: &str) {
    for c in s.chars() {
        if RESERVED.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
}

fn escape_code(out: &mut String, s: &str) {
    for c in s.chars() {
        if c == '`' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `text` as Telegram MarkdownV2 that shows exactly the text: every
/// reserved character escaped, except that a fenced code block (```…```)
/// or an inline code span (`…`) the model wrote is kept as code. Nothing
/// the model writes can become a link, a mention or hidden text.
pub fn markdown_v2(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("```")
            && let Some(end) = after.find("```")
        {
            let block = &after[..end];
            // A language tag on the fence line stays a language tag.
            let (lang, code) = match block.split_once('\n') {
                Some((l, c)) if !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric()) => {
                    (l, c)
                }
                _ => ("", block),
            };
            out.push_str("```");
            out.push_str(lang);
            if !lang.is_empty() {
                out.push('\n');
            }
            escape_code(&mut out, code);
            out.push_str("```");
            rest = &after[end + 3..];
            continue;
        }
        if let Some(after) = rest.strip_prefix('`')
            && !after.starts_with('`')
            && let Some(end) = after.find(['`', '\n'])
            && after[end..].starts_with('`')
            && end > 0
        {
            out.push('`');
            escape_code(&mut out, &after[..end]);
            out.push('`');
            rest = &after[end + 1..];
            continue;
        }
        let next = rest
            .char_indices()
            .skip(1)
            .find(|(_, c)| *c == '`')
            .map_or(rest.len(), |(i, _)| i);
        let (plain, tail) = rest.split_at(next);
        escape_plain(&mut out, plain);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_fit_and_join_back() {
        let para = "word ".repeat(300);
        let text = format!("{para}\n\n{para}\n\n{para}");
        let parts = split(&text, 4096, utf16_len);
        assert!(parts.len() >= 2);
        for p in &parts {
            assert!(utf16_len(p) <= 4096, "{}", utf16_len(p));
            assert!(!p.is_empty());
        }
        let joined: String = parts.join(" ");
        assert_eq!(
            joined.split_whitespace().count(),
            text.split_whitespace().count()
        );
        assert_eq!(split("short", 4096, utf16_len), ["short"]);
        assert_eq!(split("", 4096, utf16_len), [""]);
    }

    #[test]
    fn utf16_counts_astral_characters_twice() {
        let crabs = "🦀".repeat(3000);
        let parts = split(&crabs, 4096, utf16_len);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| utf16_len(p) <= 4096));
        assert_eq!(parts.concat(), crabs, "no character is cut in half");
    }

    #[test]
    fn a_fence_split_in_two_is_closed_and_reopened() {
        let code = "let x = 1;\n".repeat(600);
        let text = format!("Here:\n```\n{code}```\nDone.");
        let parts = split(&text, 4096, utf16_len);
        assert!(parts.len() >= 2);
        for p in &parts {
            assert_eq!(p.matches("```").count() % 2, 0, "{p}");
        }
    }

    #[test]
    fn markdown_v2_shows_the_text_and_keeps_code() {
        assert_eq!(markdown_v2("1.5 * 2 = 3!"), "1\\.5 \\* 2 \\= 3\\!");
        assert_eq!(
            markdown_v2("[click](http://evil) _x_"),
            "\\[click\\]\\(http://evil\\) \\_x\\_"
        );
        assert_eq!(markdown_v2("run `ls -a` now"), "run `ls -a` now");
        assert_eq!(markdown_v2("a ` b"), "a \\` b");
        assert_eq!(
            markdown_v2("```rust\nfn a() {}\n```"),
            "```rust\nfn a() {}\n```"
        );
        assert_eq!(markdown_v2("```\\`x```"), "```\\\\\\`x```");
        assert_eq!(markdown_v2("back\\slash"), "back\\\\slash");
    }
}
