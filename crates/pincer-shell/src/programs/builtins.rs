//! Shell builtins, per dialect: what each accepts in the safe subset, and
//! what makes it medium or high. A bash builtin under dash is not a
//! builtin at all (`declare`, `pushd`, `source` would be looked up in
//! `PATH`), so it falls through to the program tables (unknown: high).

use super::opts::{Paths, Spec, is_option, may_be_option, parse};
use super::{
    Dialects, HARMLESS_SET_O, Rule, RuleCx, Then, dangerous_var, harmless_export, special_var,
};
use crate::lex::{Word, is_name};
use crate::paths::OPAQUE;
use crate::vars::expand;
use crate::{Risk, Shell};

pub(super) fn rule<'w>(name: &str, args: &'w [Word], cx: &RuleCx) -> Option<Rule<'w>> {
    let bash = cx.shell == Shell::Bash;
    let text = |r: Rule<'w>| Some(r.paths(Paths::Text));
    match name {
        "echo" | ":" | "true" | "false" => text(Rule::low(format!("`{name}` only prints"))),
        "exit" | "return" | "break" | "continue" | "shift" => {
            text(Rule::low(format!("`{name}` only changes the shell's flow")))
        }
        "pwd" => text(options(
            name,
            Spec::new("LP", "", ""),
            args,
            cx,
            "only prints the directory",
        )),
        "type" => {
            let spec = if bash {
                Spec::new("afptP", "", "")
            } else {
                Spec::new("", "", "")
            };
            text(options(name, spec, args, cx, "only looks names up"))
        }
        "cd" => text(cd(
            name,
            args,
            cx,
            Spec::new(if bash { "LPe@" } else { "LP" }, "", ""),
        )),
        "pushd" | "popd" | "dirs" if bash => {
            text(cd(name, args, cx, Spec::new("nclpv", "", "").numeric()))
        }
        "set" => text(set(args, cx)),
        "read" => text(read(args, cx)),
        "export" | "readonly" | "local" => text(declare(name, args, cx)),
        "declare" | "typeset" if bash => text(declare(name, args, cx)),
        "unset" => text(unset(args, cx)),
        "printf" => text(printf(args, cx)),
        "test" | "[" => text(test(name, args, cx)),
        "[[" if bash => text(double_bracket(args, cx)),
        "wait" => {
            let spec = if bash {
                Spec::new("fn", "p", "")
            } else {
                Spec::new("", "", "")
            };
            let p = parse(&spec, args, cx.env);
            if p.has("p") {
                return text(Rule::medium("`wait -p` assigns a variable"));
            }
            text(verdict(
                name,
                p.problem(name),
                "only waits for background commands",
            ))
        }
        "jobs" => {
            if bash && args.iter().any(|w| w.lit.starts_with("-x")) {
                return text(Rule::high("`jobs -x` runs a command"));
            }
            let spec = if bash {
                Spec::new("lnprs", "", "")
            } else {
                Spec::new("lp", "", "")
            };
            text(options(
                name,
                spec,
                args,
                cx,
                "only lists background commands",
            ))
        }
        "eval" => Some(code(
            "eval",
            args,
            "`eval` runs its arguments as shell code",
        )),
        "trap" => {
            let action = args.iter().find(|w| w.lit != "--");
            match action.map(|w| w.lit.as_str()) {
                None | Some("-l" | "-p") => text(Rule::low("`trap` only lists traps")),
                Some(_) => Some(code(
                    "trap",
                    &args[..args.len().min(1)],
                    "`trap` runs its action when a signal or exit comes",
                )),
            }
        }
        "alias" => {
            let defs: Vec<&Word> = args.iter().filter(|w| w.lit.contains('=')).collect();
            if defs.is_empty() && !args.iter().any(|w| w.dynamic) {
                return text(Rule::low("`alias` only lists aliases"));
            }
            let mut src = String::new();
            for d in &defs {
                if let Some((_, v)) = d.lit.split_once('=') {
                    src.push_str(v);
                    src.push('\n');
                }
            }
            // dash expands aliases in a `-c` string; bash would with
            // `expand_aliases`. Their text is classified as code.
            Some(
                Rule::high("`alias` defines a command that runs other code").then(Then::Script {
                    src,
                    shells: Dialects::Same,
                    args: None,
                }),
            )
        }
        _ => None,
    }
}

/// The command `name`, low if its options are all in `spec`.
fn options<'w>(name: &str, spec: Spec, args: &[Word], cx: &RuleCx, what: &str) -> Rule<'w> {
    let p = parse(&spec, args, cx.env);
    verdict(name, p.problem(name), what)
}

fn verdict<'w>(name: &str, problem: Option<String>, what: &str) -> Rule<'w> {
    match problem {
        None => Rule::low(format!("`{name}` {what}")),
        Some(p) => Rule::medium(p),
    }
}

/// `eval`/`trap`: high, and the text is classified so that a denied
/// command inside is still denied.
fn code<'w>(name: &str, args: &[Word], why: &str) -> Rule<'w> {
    if let Some(w) = args.iter().find(|w| w.dynamic) {
        return Rule::high(format!(
            "`{name}` runs `{}`, code that comes from an expansion",
            w.lit
        ));
    }
    Rule::high(why).then(Then::Script {
        src: super::joined(args),
        shells: Dialects::Same,
        args: None,
    })
}

fn cd<'w>(name: &str, args: &[Word], cx: &RuleCx, spec: Spec) -> Rule<'w> {
    let p = parse(&spec, args, cx.env);
    if let Some(problem) = p.problem(name) {
        return Rule::medium(problem);
    }
    for &i in &p.operands {
        let w = &args[i];
        if w.dynamic && expand(w, cx.env).is_none() {
            return Rule::medium(format!(
                "`{name} {}` changes to a directory from an expansion, so later relative paths cannot be resolved",
                w.lit
            ));
        }
    }
    Rule::low(format!("`{name}` changes the working directory"))
}

fn set<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if lit == "--" || lit == "-" {
            break;
        }
        if may_be_option(w, cx.env) {
            return Rule::high(format!(
                "argument `{lit}` may expand to an option of `set` (`-m`, `-k`…)"
            ));
        }
        if !(lit.starts_with('-') || lit.starts_with('+')) || lit.len() < 2 {
            break;
        }
        let flags = &lit[1..];
        for c in flags.chars() {
            match c {
                'e' | 'u' | 'x' | 'v' | 'f' | 'C' | 'n' | 'b' | 'h' | 'E' | 'T' | 'P' | 't' => {}
                'o' => {
                    i += 1;
                    let Some(o) = args.get(i) else {
                        return Rule::low("`set -o` lists the shell options");
                    };
                    match o.lit.as_str() {
                        "monitor" => return monitor(),
                        "keyword" => return keyword(),
                        "allexport" => return allexport(),
                        n if HARMLESS_SET_O.contains(&n) => {}
                        n => {
                            return Rule::medium(format!(
                                "`set -o {n}` is not a shell option known to be harmless"
                            ));
                        }
                    }
                }
                'm' => return monitor(),
                'k' => return keyword(),
                'a' => return allexport(),
                c => {
                    return Rule::medium(format!(
                        "`set -{c}` is not a shell option known to be harmless"
                    ));
                }
            }
        }
        i += 1;
    }
    Rule::low(
        "`set` changes shell options that change nothing modelled here, or the positional parameters",
    )
}

fn monitor<'w>() -> Rule<'w> {
    Rule::high(
        "`set -m` turns on job control: background commands leave the tool's process group, so the time limit cannot stop them",
    )
}

fn keyword<'w>() -> Rule<'w> {
    Rule::high(
        "`set -k` makes every `NAME=value` word an environment assignment (`BASH_ENV`, `PATH`…)",
    )
}

fn allexport<'w>() -> Rule<'w> {
    Rule::medium("`set -a` exports every later assignment to the programs that run")
}

/// A variable name given to a builtin that assigns it (`read NAME`,
/// `export NAME=…`, `printf -v NAME`): `None` when it is harmless.
fn assigned_name(builtin: &str, w: &Word, exported: bool) -> Option<Rule<'static>> {
    let lit = w.lit.as_str();
    let name = lit.split(['=', '+']).next().unwrap_or("");
    if w.dynamic && w.exps.first().is_some_and(|e| e.at < name.len().max(1)) {
        return Some(Rule::high(format!(
            "`{builtin} {lit}` assigns a variable whose name comes from an expansion (it may be `PATH`)"
        )));
    }
    if !is_name(name) {
        return Some(Rule::high(format!(
            "`{builtin} {lit}`: `{name}` is not a plain variable name (bash evaluates an array subscript, which can run a command)"
        )));
    }
    if dangerous_var(name) {
        return Some(Rule::high(format!(
            "`{builtin} {lit}` sets `{name}`, which changes what programs run or load"
        )));
    }
    if special_var(name) {
        return Some(Rule::medium(format!(
            "`{builtin} {lit}` sets `{name}`, which the shell gives a meaning to"
        )));
    }
    if exported && !harmless_export(name) {
        return Some(Rule::medium(format!(
            "`{builtin} {lit}` exports `{name}` to the programs that run; only lower-case names and the locale, time-zone and colour variables are known harmless"
        )));
    }
    if w.code_text {
        return Some(Rule::high(format!(
            "`{builtin} {lit}` stores command text; a later expansion (arithmetic, `@P`, `eval`) may run it"
        )));
    }
    None
}

fn read<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    let spec = if cx.shell == Shell::Bash {
        Spec::new("rse", "adinNptu", "")
    } else {
        Spec::new("r", "p", "")
    };
    let p = parse(&spec, args, cx.env);
    if let Some(problem) = p.problem("read") {
        return Rule::medium(problem);
    }
    // `-a NAME` is a name too.
    let mut names: Vec<&Word> = p.operands.iter().map(|&i| &args[i]).collect();
    if p.has("a")
        && let Some(pos) = args.iter().position(|w| w.lit == "-a")
        && let Some(n) = args.get(pos + 1)
    {
        names.push(n);
    }
    for n in names {
        if let Some(r) = assigned_name("read", n, false) {
            return r;
        }
    }
    Rule::low("`read` only reads its input into variables")
}

fn declare<'w>(name: &str, args: &[Word], cx: &RuleCx) -> Rule<'w> {
    let bash = cx.shell == Shell::Bash;
    let mut exported = name == "export";
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if !(is_option(w) || (w.lit.starts_with('+') && w.lit.len() > 1)) {
            break;
        }
        if w.lit == "--" {
            i += 1;
            break;
        }
        for c in w.lit[1..].chars() {
            match c {
                'p' | 'r' | 'g' | 'l' | 'u' | 't' | 'a' | 'A' | 'F' if bash || c == 'p' => {}
                'x' if bash => exported = true,
                'f' => {
                    return Rule::high(format!("`{name} -f` exports or changes shell functions"));
                }
                'n' if name == "export" => {}
                'n' => {
                    return Rule::high(format!(
                        "`{name} -n` makes a name reference, through which any variable can be set"
                    ));
                }
                'i' => {
                    return Rule::high(format!(
                        "`{name} -i` makes later assignments arithmetic, which runs commands hidden in array subscripts"
                    ));
                }
                c => {
                    return Rule::medium(format!(
                        "`{name} -{c}` is not an option known to be harmless"
                    ));
                }
            }
        }
        i += 1;
    }
    for w in &args[i..] {
        if let Some(r) = assigned_name(name, w, exported) {
            return r;
        }
    }
    Rule::low(format!("`{name}` only sets variables"))
}

fn unset<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    let p = parse(&Spec::new("vfn", "", ""), args, cx.env);
    if let Some(problem) = p.problem("unset") {
        return Rule::medium(problem);
    }
    for &i in &p.operands {
        if let Some(r) = assigned_name("unset", &args[i], false) {
            return r;
        }
    }
    Rule::low("`unset` only removes variables")
}

fn printf<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    match args.first() {
        Some(w) if may_be_option(w, cx.env) => Rule::high(format!(
            "argument `{}` may expand to `printf -v`, which sets a variable",
            w.lit
        )),
        Some(w) if cx.shell == Shell::Bash && w.lit.starts_with("-v") => {
            let n = if w.lit == "-v" { args.get(1) } else { None };
            let shown = n.cloned().unwrap_or_else(|| w.slice(2));
            match assigned_name("printf -v", &shown, false) {
                Some(r) => r,
                None => Rule::low("`printf -v` only sets a variable"),
            }
        }
        _ => Rule::low("`printf` only prints"),
    }
}

/// A word whose value bash's `test -v` / arithmetic would evaluate as a
/// plain name or number (no subscript, no expansion of unknown text).
fn plain_operand(w: &Word, cx: &RuleCx) -> bool {
    let ok = |s: &str| {
        s.chars().all(|c| c == OPAQUE) || is_name(s) || {
            let d = s.strip_prefix('-').unwrap_or(s);
            d.chars().all(|c| c.is_ascii_digit())
        }
    };
    if !w.dynamic {
        return ok(&w.lit) && !w.code_text;
    }
    match expand(w, cx.env) {
        None => false,
        Some(alts) => alts.iter().all(|a| ok(a)),
    }
}

/// `test`/`[`: read-only; in bash, `-v` evaluates an array subscript, and
/// bash runs a `$( … )` found in one (`test -v 'a[$(id)]'`), and an
/// unquoted expansion may split into `-v` and such a word.
fn test<'w>(name: &str, args: &[Word], cx: &RuleCx) -> Rule<'w> {
    if cx.shell == Shell::Dash {
        return Rule::low(format!("`{name}` only tests"));
    }
    for (i, w) in args.iter().enumerate() {
        if w.lit == "-v" && args.get(i + 1).is_some_and(|n| !plain_operand(n, cx)) {
            return Rule::high(format!(
                "`{name} -v` evaluates an array subscript whose text may run a command"
            ));
        }
        if w.dynamic && !w.exps.iter().all(|e| e.quoted) && expand(w, cx.env).is_none() {
            return Rule::high(format!(
                "`{name}`: the unquoted `{}` may split into `-v` and a subscript that runs a command",
                w.lit
            ));
        }
    }
    Rule::low(format!("`{name}` only tests"))
}

/// Bash `[[ … ]]`: `-v` and arithmetic comparisons evaluate their operands
/// (an array subscript in them runs a command).
fn double_bracket<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    const ARITH: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
    let mut r = Rule::low("`[[` only tests");
    for (i, w) in args.iter().enumerate() {
        let lit = w.lit.as_str();
        if w.quoted {
            continue;
        }
        if lit == "-v"
            && let Some(n) = args.get(i + 1)
            && !plain_operand(n, cx)
        {
            return Rule::high("`[[ -v` evaluates an array subscript whose text may run a command");
        }
        if ARITH.contains(&lit) {
            for side in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
                let Some(o) = args.get(side) else { continue };
                let literal_int = !o.dynamic && {
                    let d = o.lit.strip_prefix('-').unwrap_or(&o.lit);
                    !d.is_empty() && d.chars().all(|c| c.is_ascii_digit())
                };
                if literal_int {
                    continue;
                }
                if !plain_operand(o, cx) {
                    return Rule::high(format!(
                        "`[[ … {lit} … ]]` evaluates `{}` as arithmetic, and an array subscript in it runs a command",
                        o.lit
                    ));
                }
                r = r.at_least(
                    Risk::Medium,
                    format!("`[[ … {lit} … ]]` evaluates `{}` as arithmetic", o.lit),
                );
            }
        }
    }
    r
}
