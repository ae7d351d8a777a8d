//! Text that came from a model, a tool or a file, made safe to show. One
//! policy for every front-end: anything that reaches a terminal (or a
//! one-line log, or a web page as text) goes through here.
//!
//! What is unsafe: control characters (escape sequences can hide or rewrite
//! what is around an approval prompt, set the clipboard, retitle the
//! window…) and the Unicode bidirectional controls (U+202E and friends
//! reorder the characters after them, so `exe.txt` can be shown for
//! `txt.exe`). They are shown escaped (`\u{1b}`), never dropped, so what a
//! person reads is still what is there.

/// Bidirectional formatting characters: embeddings, overrides, isolates and
/// marks. Shown escaped.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

fn unsafe_char(c: char, keep_newlines: bool) -> bool {
    (c.is_control() && !(keep_newlines && (c == '\n' || c == '\t'))) || is_bidi_control(c)
}

/// `s` with every control character but newline and tab, and every bidi
/// control, escaped: for multi-line text shown as it is (a reply, a page).
pub fn terminal_safe(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, keep_newlines: bool) -> String {
    if !s.chars().any(|c| unsafe_char(c, keep_newlines)) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c, keep_newlines) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` as one line of at most `max` characters: a newline shows as `⏎`,
/// every other control character (tab included) and bidi control is
/// escaped, and it is cut with `…` when longer.
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4) + 8);
    for (n, c) in s.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push('⏎'),
            c if unsafe_char(c, false) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// `s` with its whitespace runs folded into single spaces (a summary of a
/// multi-line text on one line), terminal-safe, at most `max` characters.
pub fn squeeze(s: &str, max: usize) -> String {
    let folded = s.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line(&folded, max)
}

/// The first `max` characters of `s`, with `…` when something was cut. It
/// does not escape anything: use it on text already made safe, or on text
/// that is data (an audit field).
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((i, _)) => {
            let mut out = s[..i].to_string();
            out.push('…');
            out
        }
    }
}

/// At most `max` characters of `s`, cut at the last space before the limit
/// (a word is never split; a single over-long word is cut), with `…` when
/// something was cut.
pub fn cut_words(s: &str, max: usize) -> String {
    let Some((end, _)) = s.char_indices().nth(max) else {
        return s.to_string();
    };
    let head = &s[..end];
    let at = head.rfind(' ').filter(|i| *i > 0).unwrap_or(end);
    format!("{}…", head[..at].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn terminal_output_cannot_carry_escape_sequences() {
        assert_eq!(terminal_safe("ok\nnext\tcol"), "ok\nnext\tcol");
        let shown = terminal_safe("\u{1b}[8mhidden\u{1b}]52;c;Zm9v\u{7}\u{202e}txt\u{2067}");
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}') && !shown.contains('\u{202e}')
        );
        assert!(
            shown.contains("\\u{1b}[8mhidden") && shown.contains("\\u{202e}"),
            "{shown}"
        );
    }

    #[test]
    fn one_line_escapes_newlines_and_cuts() {
        assert_eq!(one_line("a\nb\tc", 10), "a⏎b\\u{9}c");
        assert_eq!(one_line("\u{202e}x", 10), "\\u{202e}x");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("abc", 3), "abc");
        assert_eq!(squeeze("  a \n\n b  ", 10), "a b");
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(
            cut_words("the demo approves medium", 19),
            "the demo approves…"
        );
        assert_eq!(cut_words("short", 19), "short");
        assert_eq!(cut_words("averyveryverylongword", 5), "avery…");
    }

    proptest! {
        /// Whatever comes in, nothing that can steer a terminal comes out,
        /// and a one-line rendering is one line of bounded length.
        #[test]
        fn nothing_unsafe_survives(s in any::<String>(), max in 1usize..50) {
            let t = terminal_safe(&s);
            prop_assert!(!t.chars().any(|c| unsafe_char(c, true)));
            let l = one_line(&s, max);
            prop_assert!(!l.chars().any(|c| unsafe_char(c, false)));
            prop_assert!(l.chars().count() <= max + 1);
            prop_assert!(!l.contains('\n'));
        }
    }
}
