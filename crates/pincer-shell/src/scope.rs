//! What a script may do to its own surroundings, learnt before its parts
//! are judged: the values its variables may hold (every assignment, loop
//! list and `read` in it, in any order) and the directories it may `cd`
//! to. The model over-approximates, so that a path is judged on every
//! place it may name.

use crate::Shell;
use crate::classify::{Ctx, assignment_of};
use crate::lex::{ExpKind, Word, is_name};
use crate::paths::{self, Cwds, WS_ROOT};
use crate::split::{Cmd, Item};
use crate::vars::{Env, Vals, expand, merge};
use crate::work::tick;

/// The scope of a script: the variables it may set and the directories it
/// may `cd` to, learnt from all of its items (in any order).
pub(crate) fn scope(items: &[Item], ctx: &Ctx) -> Ctx {
    // Literal values first; values built from expansions, and loop lists,
    // are then expanded from what is known, with every name that is itself
    // built so counted unknown (so chains of them stay sound).
    let mut env = Env::child(&ctx.env, false, None);
    let mut pending: Vec<(String, Word, bool)> = Vec::new();
    for item in items {
        tick(1);
        match item {
            Item::Cmd(c) => learn_cmd(c, ctx.shell, &mut env, &mut pending),
            Item::For { name, words, .. } => match words {
                Some(ws) => {
                    for w in ws {
                        pending.push((name.lit.clone(), w.clone(), true));
                    }
                }
                None => {
                    let vals = env.values("@");
                    env.assign(&name.lit, vals);
                }
            },
            _ => {}
        }
        for w in item_words(item) {
            for e in &w.exps {
                if let ExpKind::Assign(name, alt) = &e.kind {
                    env.assign(name, alt.as_ref().map(|a| vec![escape_text(a)]));
                }
            }
        }
    }
    if !pending.is_empty() {
        let mut probe = env.clone();
        for (name, _, _) in &pending {
            probe.assign(name, None);
        }
        let probe = probe.sealed();
        for (name, w, globbed) in pending {
            let vals = if w.dynamic {
                expand(&w, &probe)
            } else if globbed {
                Some(vec![w.pattern()])
            } else {
                Some(vec![escape_text(&w.lit)])
            };
            env.assign(&name, vals);
        }
    }
    // One pass in order; a `cd` in a loop body may run again from where
    // the last one went, so then until nothing changes (a relative one
    // soon gives "unknown").
    let mut cwds = ctx.cwds.clone();
    let cds = |cwds: &mut Cwds| {
        for item in items {
            if let Item::Cmd(c) = item {
                cd_targets(c, ctx.shell, &env, cwds);
            }
        }
    };
    cds(&mut cwds);
    let looping = items
        .iter()
        .any(|i| matches!(i, Item::Cmd(c) if c.in_loop && is_cd(c)));
    if looping {
        for _ in 0..=paths::MAX_ALTERNATIVES {
            let before = cwds.clone();
            cds(&mut cwds);
            if cwds == before {
                break;
            }
        }
    }
    env.set_pwd(cwds.values());
    Ctx {
        env: env.sealed(),
        cwds,
        ..ctx.clone()
    }
}

/// Every word of an item.
fn item_words(item: &Item) -> Vec<&Word> {
    match item {
        Item::Cmd(c) => c
            .words
            .iter()
            .chain(c.redirs.iter().map(|r| &r.target))
            .collect(),
        Item::For { words, .. } => words.iter().flatten().collect(),
        Item::Words { words, .. } => words.iter().collect(),
        Item::Arith { word, .. } => vec![word],
        Item::Func { .. } => Vec::new(),
    }
}

/// Literal text as a pattern that matches only itself; `~` at the start
/// is the workspace root.
fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let rest = if let Some(r) = s.strip_prefix('~')
        && (r.is_empty() || r.starts_with('/'))
    {
        out.push(WS_ROOT);
        r
    } else {
        s
    };
    for c in rest.chars() {
        if matches!(c, '*' | '?' | '[' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What one command may assign: its `NAME=value` words, and the names
/// `read`, `export`, `local`… are given. A value with an expansion goes to
/// `pending` (see [`scope`]).
fn learn_cmd(c: &Cmd, shell: Shell, env: &mut Env, pending: &mut Vec<(String, Word, bool)>) {
    let mut assign = |w: &Word, env: &mut Env| {
        let lit = &w.lit;
        let Some(eq) = lit.find('=') else { return };
        let name = lit[..eq].trim_end_matches('+');
        let name = name.split('[').next().unwrap_or(name);
        if !is_name(name) {
            return;
        }
        let value = w.assigned_value();
        if value.dynamic {
            pending.push((name.to_string(), value, false));
        } else {
            env.assign(name, Some(vec![escape_text(&value.lit)]));
        }
    };
    let mut ws: &[Word] = &c.words;
    while let Some((w, rest)) = ws.split_first() {
        if assignment_of(w, shell).is_none() {
            break;
        }
        assign(w, env);
        ws = rest;
    }
    // The builtin may sit behind a wrapper (`env read x`, which does not
    // assign in truth): taking the first such word anywhere over-approximates.
    const STATEFUL: &[&str] = &[
        "export",
        "readonly",
        "local",
        "declare",
        "typeset",
        "read",
        "mapfile",
        "readarray",
        "getopts",
        "wait",
        "select",
        "printf",
        "set",
    ];
    let Some(at) = ws.iter().position(|w| STATEFUL.contains(&w.lit.as_str())) else {
        return;
    };
    let (prog, args) = (&ws[at], &ws[at + 1..]);
    match prog.lit.as_str() {
        "export" | "readonly" | "local" | "declare" | "typeset" => {
            for a in args.iter().filter(|a| !a.lit.starts_with('-')) {
                if a.lit.contains('=') {
                    assign(a, env);
                }
            }
        }
        "read" | "mapfile" | "readarray" | "getopts" | "wait" | "select" | "printf" => {
            for a in args {
                if is_name(&a.lit) {
                    env.assign(&a.lit, None);
                }
            }
            env.assign("REPLY", None);
        }
        "set" => {
            let mut vals: Vals = Some(Vec::new());
            for a in args.iter().filter(|a| !a.lit.starts_with(['-', '+'])) {
                let v = if a.dynamic {
                    None
                } else {
                    Some(vec![escape_text(&a.lit)])
                };
                merge(&mut vals, v);
            }
            env.add_positional(vals);
        }
        _ => {}
    }
}

/// A `cd` or `pushd`, maybe through `command`/`builtin`.
fn is_cd(c: &Cmd) -> bool {
    c.words
        .iter()
        .any(|w| matches!(w.lit.as_str(), "cd" | "pushd"))
}

/// The directories `cd`, `pushd` may change to. A `cd` word anywhere in
/// the command counts (`command cd /dev`; `echo cd /dev` too, which only
/// over-approximates).
fn cd_targets(c: &Cmd, shell: Shell, env: &Env, cwds: &mut Cwds) {
    let _ = shell;
    let Some(at) = c
        .words
        .iter()
        .position(|w| matches!(w.lit.as_str(), "cd" | "pushd"))
    else {
        return;
    };
    let args = &c.words[at + 1..];
    let target = args
        .iter()
        .find(|a| !(a.lit.starts_with('+') || (a.lit.starts_with('-') && a.lit.len() > 1)));
    match target {
        None => cwds.cd(Some(&[WS_ROOT.to_string()])),
        Some(t) if t.lit == "-" => {}
        Some(t) => {
            let alts = if t.dynamic {
                expand(t, env)
            } else {
                Some(vec![t.pattern()])
            };
            // With `CDPATH` set, a relative `cd` may go anywhere it names.
            let cdpath = env.values("CDPATH") != Some(vec![String::new()]);
            let relative = alts
                .as_ref()
                .is_some_and(|a| a.iter().any(|p| !p.starts_with(['/', WS_ROOT, '~'])));
            if cdpath && relative {
                cwds.cd(None);
            } else {
                cwds.cd(alts.as_deref());
            }
        }
    }
}
