//! Globs, two ways.
//!
//! [`glob_match`] matches program names against the deny lists: `*` is
//! any run of characters (none included), `?` exactly one, everything
//! else literal. pincer's gate matches tool names with the same rule; this
//! leaf crate keeps its own copy rather than depend on the gate's crate.
//!
//! [`intersects`] answers whether two shell patterns (one path component
//! each, with `*`, `?`, `[…]` and `\` escapes) can match a common name:
//! the word `/dev/[s]da` names a block device because its last component
//! and the device pattern `sd*` share the name `sda`. It works on the
//! product of the two patterns, so it is O(|a|·|b|); callers keep one side
//! short (device patterns are a few characters, and a component is cut at
//! [`MAX_COMPONENT`]).

/// Longest path component [`intersects`] compares; a longer one is treated
/// as if it could match anything (`*`).
pub(crate) const MAX_COMPONENT: usize = 255;

pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    if pattern.is_ascii() && name.is_ascii() {
        return simple_match(pattern.as_bytes(), name.as_bytes(), b'*', b'?');
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    simple_match(&p, &n, '*', '?')
}

/// `*`/`?` matching, greedy with backtracking to the last `*`:
/// O(|p|·|n|) at worst, with no allocation.
fn simple_match<T: Copy + PartialEq>(p: &[T], n: &[T], star: T, any: T) -> bool {
    let (mut pi, mut ni) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while ni < n.len() {
        crate::work::tick(1);
        match p.get(pi) {
            Some(&c) if c == star => {
                back = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == any || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match back {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    back = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == star)
}

/// Whether the shell pattern `pattern` (`*`, `?`, `[…]`, `\x`) matches
/// the literal `name`. Allocation-free for ASCII, the common case; other
/// text goes through [`intersects`].
pub(crate) fn pattern_matches(pattern: &str, name: &str) -> bool {
    if !(pattern.is_ascii() && name.is_ascii()) {
        let mut escaped = String::with_capacity(name.len());
        for c in name.chars() {
            if matches!(c, '*' | '?' | '[' | '\\') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        return intersects(pattern, &escaped);
    }
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while ni < n.len() {
        crate::work::tick(1);
        if p.get(pi) == Some(&b'*') {
            back = Some((pi, ni));
            pi += 1;
            continue;
        }
        if let Some((ok, len)) = one_byte(p, pi, n[ni])
            && ok
        {
            pi += len;
            ni += 1;
            continue;
        }
        match back {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                back = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    while p.get(pi) == Some(&b'*') {
        pi += 1;
    }
    pi == p.len()
}

/// Whether the pattern element at `p[i]` takes byte `c`, and its length.
fn one_byte(p: &[u8], i: usize, c: u8) -> Option<(bool, usize)> {
    match *p.get(i)? {
        b'?' => Some((c != b'/', 1)),
        b'\\' => Some((p.get(i + 1) == Some(&c), 2)),
        b'[' => {
            let mut j = i + 1;
            let negated = matches!(p.get(j), Some(b'!' | b'^'));
            if negated {
                j += 1;
            }
            let mut hit = false;
            let mut first = true;
            loop {
                let x = *p.get(j)?;
                if x == b']' && !first {
                    return Some((hit != negated && c != b'/', j + 1 - i));
                }
                first = false;
                if p.get(j + 1) == Some(&b'-') && p.get(j + 2).is_some_and(|e| *e != b']') {
                    hit |= (x..=p[j + 2]).contains(&c);
                    j += 3;
                } else {
                    hit |= x == c;
                    j += 1;
                }
            }
        }
        x => Some((x == c, 1)),
    }
}

/// One element of a shell pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    /// `*`: any run of characters.
    Star,
    /// A set of characters: `?` is `Set { ranges: [], negated: true }`.
    Set {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
}

impl Atom {
    fn lit(c: char) -> Atom {
        Atom::Set {
            ranges: vec![(c, c)],
            negated: false,
        }
    }

    fn has(&self, c: char) -> bool {
        match self {
            Atom::Star => true,
            Atom::Set { ranges, negated } => {
                ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
            }
        }
    }

    /// Some character is in both sets. Each set is a finite union of
    /// ranges or the complement of one, so if they meet, they meet at a
    /// range's low end, just past a range's high end, or at a character
    /// far from every range.
    fn meets(&self, other: &Atom) -> bool {
        let mut probes = vec!['\u{1}', 'a', '\u{10fffd}'];
        for set in [self, other] {
            if let Atom::Set { ranges, .. } = set {
                for (lo, hi) in ranges {
                    probes.push(*lo);
                    if let Some(next) = char::from_u32(u32::from(*hi) + 1) {
                        probes.push(next);
                    }
                }
            }
        }
        probes
            .into_iter()
            .any(|c| c != '/' && self.has(c) && other.has(c))
    }
}

/// Parses a shell pattern: `*`, `?`, `[…]` (with `!`/`^` negation and
/// ranges), `\x` for a literal `x`. An unclosed `[` is a literal `[`, as
/// in the shell.
fn atoms(pattern: &str) -> Vec<Atom> {
    let cs: Vec<char> = pattern.chars().take(MAX_COMPONENT).collect();
    if pattern.chars().nth(MAX_COMPONENT).is_some() {
        return vec![Atom::Star];
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        crate::work::tick(1);
        match cs[i] {
            '*' => {
                if out.last() != Some(&Atom::Star) {
                    out.push(Atom::Star);
                }
                i += 1;
            }
            '?' => {
                out.push(Atom::Set {
                    ranges: Vec::new(),
                    negated: true,
                });
                i += 1;
            }
            '\\' if i + 1 < cs.len() => {
                out.push(Atom::lit(cs[i + 1]));
                i += 2;
            }
            '[' => match bracket(&cs, i) {
                Some((atom, next)) => {
                    out.push(atom);
                    i = next;
                }
                None => {
                    out.push(Atom::lit('['));
                    i += 1;
                }
            },
            c => {
                out.push(Atom::lit(c));
                i += 1;
            }
        }
    }
    out
}

/// A bracket expression starting at `cs[open] == '['`: the set and the
/// index after its `]`, or `None` when it does not close.
fn bracket(cs: &[char], open: usize) -> Option<(Atom, usize)> {
    let mut i = open + 1;
    let negated = matches!(cs.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = *cs.get(i)?;
        if c == ']' && !first {
            return Some((Atom::Set { ranges, negated }, i + 1));
        }
        first = false;
        if c == '[' && cs.get(i + 1) == Some(&':') {
            // A character class (`[:digit:]`): too many members to list;
            // treat it as any character, which can only widen the match.
            let close =
                (i + 2..cs.len().saturating_sub(1)).find(|&k| cs[k] == ':' && cs[k + 1] == ']')?;
            ranges.push(('\u{0}', char::MAX));
            i = close + 2;
            continue;
        }
        let c = if c == '\\' {
            i += 1;
            *cs.get(i)?
        } else {
            c
        };
        if cs.get(i + 1) == Some(&'-') && cs.get(i + 2).is_some_and(|e| *e != ']') {
            let hi = cs[i + 2];
            if c <= hi {
                ranges.push((c, hi));
            }
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
}

/// Whether some name matches both shell patterns (see the module doc).
pub(crate) fn intersects(a: &str, b: &str) -> bool {
    let (a, b) = (atoms(a), atoms(b));
    // reach[i][j]: a[..i] and b[..j] can match one common string.
    let w = b.len() + 1;
    let mut reach = vec![false; (a.len() + 1) * w];
    reach[0] = true;
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            crate::work::tick(1);
            if !reach[i * w + j] {
                continue;
            }
            let (x, y) = (a.get(i), b.get(j));
            // A star may match nothing.
            if x == Some(&Atom::Star) {
                reach[(i + 1) * w + j] = true;
            }
            if y == Some(&Atom::Star) {
                reach[i * w + j + 1] = true;
            }
            if let (Some(x), Some(y)) = (x, y)
                && x.meets(y)
            {
                // One character, taken by both; a star stays put.
                let ni = if *x == Atom::Star { i } else { i + 1 };
                let nj = if *y == Atom::Star { j } else { j + 1 };
                if (ni, nj) != (i, j) {
                    reach[ni * w + nj] = true;
                }
            }
        }
    }
    reach[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching() {
        assert!(glob_match("mkfs*", "mkfs.ext4"));
        assert!(glob_match("?url", "curl"));
        assert!(!glob_match("mkfs*", "mke2fs"));
    }

    #[test]
    fn pattern_matching() {
        for (p, n, m) in [
            ("sd*", "sda1", true),
            ("sd*", "sd", true),
            ("[0-9]*", "123", true),
            ("[0-9]*", "self", false),
            ("tty?*", "tty", false),
            ("tty?*", "ttyS0", true),
            ("i2c*", "i2c-1", true),
            ("[!a]x", "bx", true),
            ("[!a]x", "ax", false),
            ("\\*", "*", true),
            ("\\*", "a", false),
            ("dé*", "dév", true),
        ] {
            assert_eq!(pattern_matches(p, n), m, "{p} ~ {n}");
        }
    }

    #[test]
    fn intersection() {
        for (a, b) in [
            ("[s]da", "sd*"),
            ("sd?", "sd*"),
            ("*", "sd*"),
            ("s*a", "sd*"),
            ("[!x]da", "sd*"),
            ("i2c-[0-9]", "i2c-*"),
            ("i2c-1", "i2c-*"),
            ("[[:alpha:]]da", "sd*"),
            ("\\sda", "sd*"),
            ("d?v", "dev"),
        ] {
            assert!(intersects(a, b), "{a} ∩ {b}");
            assert!(intersects(b, a), "{b} ∩ {a}");
        }
        for (a, b) in [
            ("[t]da", "sd*"),
            ("null", "sd*"),
            ("x*", "sd*"),
            ("i2c", "i2c-*"),
            ("\\*", "sda"),
            ("[!s]da", "sd*"),
        ] {
            assert!(!intersects(a, b), "{a} ∩ {b}");
        }
    }
}
