//! Reading a program's options: small helpers for the rules that look for
//! one dangerous option, and [`parse`], which checks every option of a
//! command against an allowlist ([`Spec`]) the way GNU `getopt_long` reads
//! them: options may follow operands, `--` ends them, short options
//! cluster (`-rf`), a short option's value may be attached (`-n5`) or the
//! next word, and a long option takes its value as `--name=V` or the next
//! word. An abbreviated long option (`--colo`) is not known harmless (see
//! `find_long`); the helpers that look for one dangerous option do match
//! its abbreviations.

use crate::lex::Word;
use crate::vars::{Env, exp_values};
use crate::work::tick;

/// What a program does with its operands, for the path checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paths {
    /// Opens them (`cat`, `grep`): an operand whose value is unknown may
    /// name a device.
    Opened,
    /// Looks at them without opening (`ls`, `stat`): a literal device path
    /// still counts as touching hardware, an unknown one does not.
    Named,
    /// They are not paths (`echo`, `tr`, `seq`): never checked.
    Text,
}

/// The harmless options of one program.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    /// Short options without a value.
    pub flags: &'static str,
    /// Short options with a value (the rest of the word, or the next one).
    pub valued: &'static str,
    /// Long options, space-separated: `name` takes no value, `name=` a
    /// value (`=V` or the next word), `name[=]` an optional one (`=V`
    /// only), `name==` two words (`jq --arg NAME VALUE`).
    pub long: &'static str,
    /// `-NUM` is a count (`head -5`, `grep -3`), and a negative number is
    /// an operand (`seq -5 5`).
    pub numeric: bool,
    /// Short options whose optional value can only be attached
    /// (`od -w32`, `git log -M90%`).
    pub attached: &'static str,
    /// Every option the program has is listed and none writes, runs a
    /// program or connects: a word from an expansion or a glob, which may
    /// turn into any option, is harmless.
    pub total: bool,
    pub paths: Paths,
    /// The first operand is a pattern or program, not a path (`grep`,
    /// `jq`), unless an option gave one (`-e`, `-f`).
    pub pattern_first: bool,
    /// Options end at the first operand (a wrapper's command follows).
    pub stop_at_operand: bool,
}

impl Spec {
    pub const fn new(flags: &'static str, valued: &'static str, long: &'static str) -> Spec {
        Spec {
            flags,
            valued,
            long,
            numeric: false,
            attached: "",
            total: true,
            paths: Paths::Opened,
            pattern_first: false,
            stop_at_operand: false,
        }
    }

    pub const fn numeric(mut self) -> Spec {
        self.numeric = true;
        self
    }

    pub const fn attached(mut self, a: &'static str) -> Spec {
        self.attached = a;
        self
    }

    pub const fn partial(mut self) -> Spec {
        self.total = false;
        self
    }

    pub const fn paths(mut self, p: Paths) -> Spec {
        self.paths = p;
        self
    }

    pub const fn pattern_first(mut self) -> Spec {
        self.pattern_first = true;
        self
    }

    pub const fn wrapper(mut self) -> Spec {
        self.stop_at_operand = true;
        self.paths = Paths::Text;
        self
    }
}

/// What [`parse`] found.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// Indices into the arguments of the operands, in order; for a
    /// wrapper (options end at the first operand), only that first one,
    /// where its command starts.
    pub operands: Vec<usize>,
    /// The first option that is not in the allowlist.
    pub unknown: Option<String>,
    /// The first argument from an expansion or glob that may become an
    /// option (only for programs whose options are not all harmless).
    pub maybe_option: Option<String>,
    /// Long options and short letters seen (`"output"`, `"o"`), for rules
    /// that look at one.
    pub seen: Vec<String>,
}

impl Parsed {
    pub fn has(&self, opt: &str) -> bool {
        self.seen.iter().any(|s| s == opt)
    }

    /// The reason the options are not proven harmless, if any.
    pub fn problem(&self, name: &str) -> Option<String> {
        if let Some(u) = &self.unknown {
            return Some(format!(
                "`{u}` is not among the options of `{name}` known to be harmless"
            ));
        }
        self.maybe_option.as_ref().map(|m| {
            format!("argument `{m}` may expand to an option of `{name}` that is not known to be harmless")
        })
    }
}

/// A word that may reach the program as an option although its text
/// does not show one: it starts with a live glob character (a file may be
/// named `--output=x`) or an expansion whose value may start with `-`, or
/// an unquoted expansion in it may split into several words or glob.
pub(crate) fn may_be_option(w: &Word, env: &Env) -> bool {
    if w.globs.first() == Some(&0) {
        return true;
    }
    for e in w.exps.iter().filter(|e| !e.nested) {
        tick(1);
        let Some(vals) = exp_values(&e.kind, env) else {
            if e.at == 0 || !e.quoted {
                return true;
            }
            continue;
        };
        for v in &vals {
            if e.at == 0 && v.starts_with('-') {
                return true;
            }
            if !e.quoted
                && (v.contains([' ', '\t', '\n']) || (e.at == 0 && v.contains(['*', '?', '['])))
            {
                return true;
            }
        }
    }
    false
}

/// How a long option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    No,
    One,
    Optional,
    Two,
}

fn long_entries(spec: &'static str) -> impl Iterator<Item = (&'static str, Takes)> {
    spec.split_whitespace().map(|e| {
        if let Some(n) = e.strip_suffix("==") {
            (n, Takes::Two)
        } else if let Some(n) = e.strip_suffix("[=]") {
            (n, Takes::Optional)
        } else if let Some(n) = e.strip_suffix('=') {
            (n, Takes::One)
        } else {
            (e, Takes::No)
        }
    })
}

/// Finds a long option by its exact name. GNU programs accept a unique
/// prefix too, but an abbreviation is not taken here: the program may
/// have an option of exactly that name which the list leaves out (git's
/// `--output` against the listed `--output-indicator-new`), and getopt
/// prefers the exact match. Looks only where the name occurs.
fn find_long(spec: &'static str, name: &str) -> Option<(&'static str, Takes)> {
    if name.is_empty() {
        return None;
    }
    let bytes = spec.as_bytes();
    for (at, _) in spec.match_indices(name) {
        tick(1);
        if at > 0 && !bytes[at - 1].is_ascii_whitespace() {
            continue;
        }
        let len = spec[at..]
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(spec.len() - at);
        if let Some((n, t)) = long_entries(&spec[at..at + len]).next()
            && n == name
        {
            return Some((n, t));
        }
    }
    None
}

/// Checks every option in `args` against `spec`.
pub(crate) fn parse(spec: &Spec, args: &[Word], env: &Env) -> Parsed {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        tick(1);
        let w = &args[i];
        let lit = w.lit.as_str();
        if ended || lit == "-" || !lit.starts_with('-') || lit.len() < 2 {
            if !ended && !spec.total && may_be_option(w, env) && p.maybe_option.is_none() {
                p.maybe_option = Some(w.lit.clone());
            }
            if spec.stop_at_operand && !ended {
                p.operands.push(i);
                return p;
            }
            p.operands.push(i);
            i += 1;
            continue;
        }
        if lit == "--" {
            ended = true;
            i += 1;
            continue;
        }
        if let Some(long) = lit.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match find_long(spec.long, name) {
                None => {
                    p.unknown.get_or_insert_with(|| format!("--{name}"));
                }
                Some((full, takes)) => {
                    p.seen.push(full.to_string());
                    match (takes, value) {
                        (Takes::No, Some(_)) => {
                            p.unknown.get_or_insert_with(|| lit.to_string());
                        }
                        (Takes::One, None) => i += 1,
                        (Takes::Two, None) => i += 2,
                        (Takes::Two, Some(_)) => i += 1,
                        _ => {}
                    }
                }
            }
            i += 1;
            continue;
        }
        let cluster: Vec<char> = lit[1..].chars().collect();
        if spec.numeric && cluster.iter().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        for (k, &c) in cluster.iter().enumerate() {
            let rest = &cluster[k + 1..];
            if spec.attached.contains(c) {
                p.seen.push(c.to_string());
                break;
            }
            if spec.valued.contains(c) {
                p.seen.push(c.to_string());
                if rest.is_empty() {
                    i += 1;
                }
                break;
            }
            if spec.flags.contains(c) {
                p.seen.push(c.to_string());
                continue;
            }
            p.unknown.get_or_insert(format!("-{c}"));
            break;
        }
        i += 1;
    }
    p
}

// ---- helpers for rules that look for one option ----------------------

/// Arguments before a literal `--`: the ones that may be options.
pub(crate) fn opts(args: &[Word]) -> &[Word] {
    let end = args
        .iter()
        .position(|w| w.lit == "--")
        .unwrap_or(args.len());
    &args[..end]
}

/// `lit` is `--name[=v]` and `--name` abbreviates `--full`.
pub(crate) fn long_is(lit: &str, full: &str) -> bool {
    lit.strip_prefix("--")
        .map(|r| r.split('=').next().unwrap_or(""))
        .is_some_and(|n| !n.is_empty() && full.starts_with(n))
}

/// `lit` is a short cluster (`-xyz`) holding `c` before any option that
/// takes a value (`takes`), whose value would be the rest.
pub(crate) fn short_has(lit: &str, c: char, takes: &str) -> bool {
    let Some(rest) = lit.strip_prefix('-') else {
        return false;
    };
    if rest.is_empty() || rest.starts_with('-') {
        return false;
    }
    for ch in rest.chars() {
        if ch == c {
            return true;
        }
        if takes.contains(ch) {
            return false;
        }
    }
    false
}

pub(crate) fn any_short(args: &[Word], c: char, takes: &str) -> bool {
    opts(args).iter().any(|w| short_has(&w.lit, c, takes))
}

pub(crate) fn any_long(args: &[Word], full: &str) -> bool {
    opts(args).iter().any(|w| long_is(&w.lit, full))
}

/// Values given to `-c VALUE`/`-cVALUE` or `--long=VALUE`/`--long VALUE`.
/// `takes` lists the other short options that take a value.
pub(crate) fn opt_values(
    args: &[Word],
    short: Option<char>,
    long: Option<&str>,
    takes: &str,
) -> Vec<Word> {
    let o = opts(args);
    let mut out = Vec::new();
    let mut i = 0;
    while i < o.len() {
        tick(1);
        let w = &o[i];
        if let Some(rest) = w.lit.strip_prefix("--") {
            if let Some(full) = long {
                let (n, v) = match rest.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (rest, None),
                };
                if !n.is_empty() && full.starts_with(n) {
                    match v {
                        Some(_) => out.push(w.slice(w.lit.find('=').map_or(0, |e| e + 1))),
                        None => {
                            if let Some(next) = o.get(i + 1) {
                                out.push(next.clone());
                                i += 1;
                            }
                        }
                    }
                }
            }
        } else if let Some(rest) = w.lit.strip_prefix('-') {
            for (k, ch) in rest.char_indices() {
                let tail = &rest[k + ch.len_utf8()..];
                if Some(ch) == short {
                    if tail.is_empty() {
                        if let Some(next) = o.get(i + 1) {
                            out.push(next.clone());
                            i += 1;
                        }
                    } else {
                        out.push(w.slice(1 + k + ch.len_utf8()));
                    }
                    break;
                }
                if takes.contains(ch) {
                    if tail.is_empty() {
                        i += 1;
                    }
                    break;
                }
            }
        }
        i += 1;
    }
    out
}

/// How many words an option word uses: 2 when its value is the next word.
pub(crate) fn option_width(lit: &str, takes_short: &str, takes_long: &[&str]) -> usize {
    if let Some(rest) = lit.strip_prefix("--") {
        let needs = !rest.contains('=') && takes_long.iter().any(|l| long_is(lit, l));
        return if needs { 2 } else { 1 };
    }
    let rest = &lit[1..];
    for (k, ch) in rest.char_indices() {
        if takes_short.contains(ch) {
            return if rest[k + ch.len_utf8()..].is_empty() {
                2
            } else {
                1
            };
        }
    }
    1
}

pub(crate) fn is_option(w: &Word) -> bool {
    w.lit.len() > 1 && w.lit.starts_with('-')
}

/// Non-option arguments (options may follow operands, GNU style).
pub(crate) fn operands<'w>(
    args: &'w [Word],
    takes_short: &str,
    takes_long: &[&str],
) -> Vec<&'w Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        tick(1);
        let w = &args[i];
        if w.lit == "--" {
            out.extend(&args[i + 1..]);
            break;
        }
        if is_option(w) {
            i += option_width(&w.lit, takes_short, takes_long);
        } else {
            out.push(w);
            i += 1;
        }
    }
    out
}

/// A wrapper's own options: the words of `args` before `rest`, the
/// command it runs (as [`skip_opts`] found it).
pub(crate) fn wrapper_opts<'w>(args: &'w [Word], rest: &[Word]) -> &'w [Word] {
    &args[..args.len().saturating_sub(rest.len())]
}

/// The words after a wrapper's options (the command it runs).
pub(crate) fn skip_opts<'w>(
    args: &'w [Word],
    takes_short: &str,
    takes_long: &[&str],
) -> &'w [Word] {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        tick(1);
        if w.lit == "--" {
            return args.get(i + 1..).unwrap_or(&[]);
        }
        if !is_option(w) {
            return &args[i..];
        }
        i += option_width(&w.lit, takes_short, takes_long);
    }
    &[]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::plain).collect()
    }

    #[test]
    fn parse_reads_options_like_getopt() {
        let spec = Spec::new("alR", "Iw", "all color[=] width= ignore=");
        let env = Env::top();
        let p = parse(
            &spec,
            &words("-la src --color=auto -w 80 -Ifoo --all x"),
            &env,
        );
        assert_eq!(p.unknown, None);
        assert_eq!(p.operands, [1, 7]);
        // An abbreviation may stand for an option the list leaves out.
        let p = parse(&spec, &words("--colo=auto"), &env);
        assert_eq!(p.unknown.as_deref(), Some("--colo"));
        let p = parse(&spec, &words("-lz x"), &env);
        assert_eq!(p.unknown.as_deref(), Some("-z"));
        let p = parse(&spec, &words("--output=x"), &env);
        assert_eq!(p.unknown.as_deref(), Some("--output"));
        let p = parse(&spec, &words("-- -z"), &env);
        assert_eq!((p.unknown, p.operands), (None, vec![1]));
        let p = parse(&spec, &words("--all=x"), &env);
        assert!(p.unknown.is_some());
        let jq = Spec::new("r", "", "arg==");
        let p = parse(&jq, &words("--arg a b f"), &env);
        assert_eq!(p.operands, [3]);
    }
}
