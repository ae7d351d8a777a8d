//! Brace expansion, bash only: `{a,b}` becomes two words before anything
//! else happens (`{rm,-rf,x}` runs `rm -rf x`).

use crate::classify::display;
use crate::lex::Word;
use crate::work::tick;

/// Brace expansion, which bash does before anything else
/// (`{rm,-rf,x}` runs `rm -rf x`): unquoted, expansion-free words with a
/// `{a,b}` group become one word per alternative. The work is bounded by
/// the size of the result.
pub(crate) fn expand_braces(words: &[Word]) -> Result<Vec<Word>, String> {
    const MAX_WORDS: usize = 256;
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        if w.quoted || w.dynamic || !w.lit.contains('{') || !w.lit.contains(',') {
            out.push(w.clone());
            continue;
        }
        let mut alts = Vec::new();
        let mut budget = Budget {
            words: MAX_WORDS,
            chars: 4 * w.lit.len() + 4096,
        };
        if !brace_alternatives(&w.lit, &mut alts, &mut budget, 0) {
            return Err(format!(
                "brace expansion of `{}` makes more than {MAX_WORDS} words",
                display(&w.lit.chars().collect::<Vec<_>>())
            ));
        }
        out.extend(alts.into_iter().map(|lit| {
            let mut x = w.clone();
            x.globs = lit
                .char_indices()
                .filter(|(_, c)| matches!(c, '*' | '?' | '['))
                .map(|(i, _)| i)
                .collect();
            x.lit = lit;
            x
        }));
    }
    Ok(out)
}

struct Budget {
    words: usize,
    chars: usize,
}

/// Expands the first `{a,b,…}` group of `s` (recursively); false when the
/// result would pass the budget or nest too deep.
fn brace_alternatives(s: &str, out: &mut Vec<String>, budget: &mut Budget, depth: usize) -> bool {
    let Some(left) = budget.chars.checked_sub(s.len() + 1) else {
        return false;
    };
    budget.chars = left;
    tick(s.len() / 8 + 1);
    if depth > 32 {
        return false;
    }
    let chars: Vec<char> = s.chars().collect();
    // Matching braces and their top-level commas, in one pass.
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut group: Option<(usize, Vec<usize>, usize)> = None;
    for (j, c) in chars.iter().enumerate() {
        match c {
            '{' => stack.push((j, Vec::new())),
            ',' => {
                if let Some(top) = stack.last_mut() {
                    top.1.push(j);
                }
            }
            '}' => {
                if let Some((open, commas)) = stack.pop()
                    && !commas.is_empty()
                    && group.as_ref().is_none_or(|(o, _, _)| open < *o)
                {
                    group = Some((open, commas, j));
                }
            }
            _ => {}
        }
    }
    if let Some((open, commas, close)) = group {
        let prefix: String = chars[..open].iter().collect();
        let suffix: String = chars[close + 1..].iter().collect();
        let mut cuts = vec![open];
        cuts.extend(commas);
        cuts.push(close);
        for pair in cuts.windows(2) {
            let alt: String = chars[pair[0] + 1..pair[1]].iter().collect();
            if !brace_alternatives(&format!("{prefix}{alt}{suffix}"), out, budget, depth + 1) {
                return false;
            }
        }
        return true;
    }
    if budget.words == 0 {
        return false;
    }
    budget.words -= 1;
    out.push(s.to_string());
    true
}

/// A bash brace sequence in an unquoted word: `{1..9}`, `{a..z..2}`.
pub(crate) fn has_sequence(w: &Word) -> bool {
    if w.quoted || !w.lit.contains("..") {
        return false;
    }
    let mut rest = w.lit.as_str();
    while let Some(open) = rest.find('{') {
        tick(1);
        let after = &rest[open + 1..];
        let Some(close) = after.find(['}', '{']) else {
            return false;
        };
        let inner = &after[..close];
        let parts: Vec<&str> = inner.split("..").collect();
        let ok = |p: &str| {
            let d = p.strip_prefix('-').unwrap_or(p);
            (!d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
                || (p.chars().count() == 1 && p.chars().all(|c| c.is_ascii_alphabetic()))
        };
        if (parts.len() == 2 || parts.len() == 3) && parts.iter().all(|p| ok(p)) {
            return true;
        }
        rest = &after[close..];
    }
    false
}
