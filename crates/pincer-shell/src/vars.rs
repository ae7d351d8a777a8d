//! What variables may hold, so that a path built from one is judged on
//! what it names: `for f in *.md; do head "$f"; done` reads workspace
//! files, `x=/dev/sda; cat img > $x` writes a disk, and `cat "$f"` with
//! `f` read from a file may read anything.
//!
//! The model is flow-insensitive and over-approximates: a variable may
//! hold every value any assignment in the script gives it, plus its value
//! from before the script (the shell tool's environment: `HOME` is the
//! workspace root, `PATH`, `LANG`, `LC_ALL`, `TERM` and `PINCER_AGENT` are
//! harmless text, anything else is unset). A value that comes from input
//! (`read`), a substitution, or more than [`MAX_ALTERNATIVES`] choices is
//! unknown (`None`).
//!
//! Values are kept as glob patterns, like the words they came from: a
//! literal value has its `*`, `?`, `[` and `\\` escaped, a loop word
//! keeps its live globs (`f` from `for f in /dev/i2c-*` is some name that
//! pattern matches). An unquoted expansion makes every glob character of
//! its value live.
//!
//! Scopes are persistent: a nested shell or substitution gets a child
//! scope in constant time, whatever the size of its parent.

use crate::lex::{ExpKind, Word};
use crate::paths::{MAX_ALTERNATIVES, OPAQUE, WS_ROOT};
use crate::work::tick;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::rc::Rc;

/// Possible values, or `None` for unknown.
pub(crate) type Vals = Option<Vec<String>>;

/// Variables that hold harmless text before the script runs.
const OPAQUE_VARS: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "TERM",
    "PINCER_AGENT",
    "IFS",
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "LINENO",
    "BASHPID",
    "PPID",
    "UID",
    "EUID",
    "SHLVL",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "HISTCMD",
    "OPTIND",
    "BASH_SUBSHELL",
    "BASH_VERSION",
    "BASH",
    "HOSTNAME",
    "HOSTTYPE",
    "MACHTYPE",
    "OSTYPE",
    "COLUMNS",
    "LINES",
    "?",
    "$",
    "!",
    "#",
    "-",
];

/// One scope of variables.
#[derive(Debug, Default, Clone)]
pub(crate) struct Env {
    parent: Option<Rc<Env>>,
    /// A new shell process: a variable of the parent may also be unset
    /// here (only exported ones are inherited).
    fresh: bool,
    /// Values assigned in this scope (on top of the parent's).
    vars: HashMap<String, Vals>,
    /// Every value `$0`, `$1`… and `$@` may hold (one pool for all of
    /// them), `None` when unknown.
    positional: Option<Rc<Vec<String>>>,
    /// `$PWD` and `$OLDPWD`.
    pwd: Vals,
    /// A hash of everything above, for memoising nested shells.
    fingerprint: u64,
}

impl Env {
    /// The shell tool's environment, with no positional parameters.
    pub fn top() -> Rc<Env> {
        Env {
            positional: Some(Rc::new(Vec::new())),
            pwd: Some(vec![format!("{WS_ROOT}/")]),
            ..Env::default()
        }
        .sealed()
    }

    /// A scope inside `parent`: a substitution or function (`fresh` false)
    /// or a new shell (`fresh` true), with its own positional parameters
    /// when given.
    pub fn child(parent: &Rc<Env>, fresh: bool, positional: Option<Option<Vec<String>>>) -> Env {
        Env {
            parent: Some(Rc::clone(parent)),
            fresh,
            vars: HashMap::new(),
            positional: match positional {
                Some(Some(p)) => Some(Rc::new(p)),
                Some(None) => None,
                None => parent.positional.clone(),
            },
            pwd: parent.pwd.clone(),
            fingerprint: 0,
        }
    }

    /// Adds `vals` to what `name` may hold here.
    pub fn assign(&mut self, name: &str, vals: Vals) {
        tick(1);
        let slot = self
            .vars
            .entry(name.to_string())
            .or_insert_with(|| Some(Vec::new()));
        merge(slot, vals);
    }

    /// `set -- WORDS`: more values the positional parameters may hold.
    pub fn add_positional(&mut self, vals: Vals) {
        let mut now: Vals = self.positional.as_ref().map(|p| p.as_ref().clone());
        merge(&mut now, vals);
        self.positional = now.map(Rc::new);
    }

    pub fn set_pwd(&mut self, pwd: Vals) {
        self.pwd = pwd;
    }

    /// Freezes the scope and computes its fingerprint.
    pub fn sealed(self) -> Rc<Env> {
        let mut env = self;
        let mut h = DefaultHasher::new();
        env.parent.as_ref().map(|p| p.fingerprint).hash(&mut h);
        env.fresh.hash(&mut h);
        let mut names: Vec<(&String, &Vals)> = env.vars.iter().collect();
        names.sort();
        names.hash(&mut h);
        env.positional.hash(&mut h);
        env.pwd.hash(&mut h);
        env.fingerprint = h.finish();
        Rc::new(env)
    }

    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Was `name` assigned anywhere in this scope or a parent?
    fn assigned(&self, name: &str) -> Option<Vals> {
        let mut out: Option<Vals> = None;
        let mut scope = Some(self);
        let mut fresh = false;
        while let Some(s) = scope {
            tick(1);
            if let Some(v) = s.vars.get(name) {
                let slot = out.get_or_insert_with(|| Some(Vec::new()));
                merge(slot, v.clone());
                if fresh {
                    merge(slot, Some(vec![String::new()]));
                }
            }
            fresh |= s.fresh;
            scope = s.parent.as_deref();
        }
        out
    }

    /// What `$name` may expand to (each value whole, before splitting).
    pub fn values(&self, name: &str) -> Vals {
        let before: Vals = match name {
            "HOME" => Some(vec![WS_ROOT.to_string()]),
            "PWD" | "OLDPWD" => self.pwd.clone(),
            n if n == "@" || n == "*" || n.chars().all(|c| c.is_ascii_digit()) => {
                self.positional.as_ref().map(|p| {
                    let mut v = p.as_ref().clone();
                    v.push(if n == "0" {
                        OPAQUE.to_string()
                    } else {
                        String::new()
                    });
                    v
                })
            }
            n if OPAQUE_VARS.contains(&n) => Some(vec![OPAQUE.to_string()]),
            _ => Some(vec![String::new()]),
        };
        match self.assigned(name) {
            None => before,
            Some(mut v) => {
                merge(&mut v, before);
                v
            }
        }
    }
}

/// Adds `more` to `into`; too many values, or an unknown one, make the
/// whole unknown.
pub(crate) fn merge(into: &mut Vals, more: Vals) {
    match (into.as_mut(), more) {
        (Some(v), Some(m)) => {
            for x in m {
                if !v.contains(&x) {
                    v.push(x);
                }
            }
            if v.len() > MAX_ALTERNATIVES {
                *into = None;
            }
        }
        _ => *into = None,
    }
}

/// Characters a derived value (`${x%.txt}`) may keep and stay harmless:
/// no `/`, `.`, `-`, glob or space.
fn simple(v: &str) -> bool {
    v.chars()
        .all(|c| c == OPAQUE || c.is_ascii_alphanumeric() || "_+,=:@%".contains(c))
}

/// What one expansion may produce.
pub(crate) fn exp_values(kind: &ExpKind, env: &Env) -> Vals {
    let with = |name: &str, extra: &Option<String>| {
        let mut v = env.values(name);
        let extra = extra.as_ref().map(|e| {
            let mut p = String::new();
            escape(e, &mut p);
            vec![p, String::new()]
        });
        merge(&mut v, extra);
        v
    };
    match kind {
        ExpKind::Param(n) => env.values(n),
        ExpKind::Alt(n, alt) | ExpKind::Assign(n, alt) => with(n, alt),
        ExpKind::Length(_) => Some(vec![OPAQUE.to_string()]),
        ExpKind::TrimEnd(n) | ExpKind::TrimStart(n) | ExpKind::Transform(n) => env
            .values(n)
            .filter(|v| v.iter().all(|x| simple(x)))
            .map(|_| vec![OPAQUE.to_string()]),
        _ => None,
    }
}

/// A pattern with its escapes dropped (every glob character live).
fn unescape(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut esc = false;
    for c in p.chars() {
        if !esc && c == '\\' {
            esc = true;
            continue;
        }
        esc = false;
        out.push(c);
    }
    out
}

/// Escapes glob characters so that text matches itself as a pattern.
fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Every text the word may become, as glob patterns (live glob characters
/// bare, others escaped), or `None` when a part is unknown. An unquoted
/// expansion's value is split on blanks and its glob characters are live;
/// each resulting field is one alternative.
pub(crate) fn expand(w: &Word, env: &Env) -> Vals {
    tick(w.lit.len() / 8 + 1);
    let mut alts = vec![String::new()];
    let mut at = 0;
    let mut live = w.globs.iter().peekable();
    let mut lit_piece = |alts: &mut Vec<String>, from: usize, to: usize| {
        let mut piece = String::new();
        for (i, c) in w.lit[from..to].char_indices() {
            while live.peek().is_some_and(|g| **g < from + i) {
                live.next();
            }
            if live.peek() == Some(&&(from + i)) {
                piece.push(c);
            } else {
                escape(&c.to_string(), &mut piece);
            }
        }
        for a in alts.iter_mut() {
            a.push_str(&piece);
        }
    };
    for e in w.exps.iter().filter(|e| !e.nested) {
        if e.at < at {
            continue;
        }
        lit_piece(&mut alts, at, e.at);
        at = e.at + e.len;
        let vals = exp_values(&e.kind, env)?;
        let mut fields = Vec::new();
        for v in vals {
            if e.quoted {
                fields.push(v);
            } else {
                // Unquoted: split into fields, every glob character live.
                let live = unescape(&v);
                let split: Vec<&str> = live
                    .split([' ', '\t', '\n'])
                    .filter(|f| !f.is_empty())
                    .collect();
                if split.is_empty() {
                    fields.push(String::new());
                }
                fields.extend(split.into_iter().map(String::from));
            }
        }
        let mut next = Vec::new();
        for a in &alts {
            for f in &fields {
                if f.starts_with(WS_ROOT) && !a.is_empty() {
                    return None;
                }
                let mut s = a.clone();
                s.push_str(f);
                next.push(s);
            }
        }
        next.dedup();
        if next.len() > MAX_ALTERNATIVES {
            return None;
        }
        alts = next;
    }
    lit_piece(&mut alts, at, w.lit.len());
    Some(alts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shell;

    fn word(src: &str) -> Word {
        let chars: Vec<char> = src.chars().collect();
        match crate::lex::lex(&chars, Shell::Bash)
            .ok()
            .and_then(|t| t.into_iter().next())
        {
            Some(crate::lex::Tok {
                kind: crate::lex::TokKind::Word(w),
                ..
            }) => w,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn expansion_uses_known_values() {
        let top = Env::top();
        let mut env = Env::child(&top, false, None);
        env.assign("d", Some(vec!["/dev".into()]));
        env.assign("f", None);
        let env = env.sealed();
        assert_eq!(
            expand(&word("$d/sd[a]"), &env),
            Some(vec!["/dev/sd[a]".into(), "/sd[a]".into()])
        );
        assert_eq!(
            expand(&word("\"$d\"/'*'"), &env),
            Some(vec!["/dev/\\*".into(), "/\\*".into()])
        );
        assert_eq!(expand(&word("$f"), &env), None);
        assert_eq!(
            expand(&word("$HOME/x"), &env),
            Some(vec![format!("{WS_ROOT}/x")])
        );
        assert_eq!(expand(&word("$(ls)"), &env), None);
        // A new shell may not have inherited `d`.
        let sub = Env::child(&env, true, Some(Some(vec!["/dev/i2c-1".into()]))).sealed();
        assert_eq!(sub.values("d"), Some(vec!["/dev".into(), String::new()]));
        assert_eq!(
            sub.values("1"),
            Some(vec!["/dev/i2c-1".into(), String::new()])
        );
    }
}
