//! Glob matching for tool-name patterns (`[policy] deny_tools`, hook tool
//! filters): `*` is any run of characters (none included), `?` exactly one
//! character, everything else literal.

/// Matches `name` against a glob where `*` is any run of characters
/// (including none) and `?` is exactly one; everything else is literal.
/// Used for hook tool filters and deny lists.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Greedy with backtracking to the last `*`: linear in practice.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Longest pattern accepted, in characters.
pub const MAX_PATTERN_CHARS: usize = 128;

/// Whether `p` is a usable pattern: 1 to [`MAX_PATTERN_CHARS`] characters,
/// no whitespace or control characters (a tool or program name has none,
/// so such a pattern could only be a typo). The reason says what is wrong.
pub fn check_pattern(p: &str) -> Result<(), String> {
    if p.is_empty()
        || p.chars().count() > MAX_PATTERN_CHARS
        || p.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "holds `{}`; a pattern is 1 to {MAX_PATTERN_CHARS} characters without spaces or control characters",
            p.escape_debug()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn glob_table() {
        for (p, n, want) in [
            ("shell", "shell", true),
            ("shell", "shells", false),
            ("file_*", "file_write", true),
            ("file_*", "file_", true),
            ("file_*", "fil", false),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("i2c_?ead", "i2c_read", true),
            ("*_write", "gpio_write", true),
            ("*_write", "gpio_writer", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("mkfs*", "mkfs.ext4", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} vs {n}");
        }
    }
}
