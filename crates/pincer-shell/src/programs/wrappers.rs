//! Wrappers that run the command they are given without privilege:
//! `time`, `nice`, `timeout`, `stdbuf`, `env`, `command`, `builtin`,
//! `ionice`. Their own options are checked against an allowlist (an
//! unknown one may change what runs: high); what they run is classified in
//! turn, never lower than the wrapper.

use super::opts::{Spec, any_short, parse, short_has, skip_opts, wrapper_opts};
use super::{Dialects, Rule, RuleCx, Then};
use crate::lex::Word;
use crate::{Risk, Shell};

pub(super) fn rule<'w>(name: &str, args: &'w [Word], cx: &RuleCx) -> Option<Rule<'w>> {
    Some(match name {
        "time" if cx.shell == Shell::Bash => {
            // The bash keyword: `-p`, then the pipeline; any other word is
            // the command (`time -o f ls` runs a program `-o`).
            let rest = match args.first().map(|w| w.lit.as_str()) {
                Some("-p") => &args[1..],
                _ => args,
            };
            Rule::low("`time` runs the command it is given").then(Then::Run(rest))
        }
        "time" => {
            // dash has no `time` keyword: this is GNU time.
            const SPEC: Spec = Spec::new(
                "apvqV",
                "fo",
                "append format= output= portability verbose quiet help version",
            )
            .wrapper();
            let p = parse(&SPEC, args, cx.env);
            let rest = &args[p.operands.first().copied().unwrap_or(args.len())..];
            let mut r = own_options("time", &p.problem("time"));
            for v in
                super::opts::opt_values(wrapper_opts(args, rest), Some('o'), Some("output"), "f")
            {
                r = r
                    .at_least(Risk::Medium, "`time -o` writes a file")
                    .writes(&v);
            }
            r.then(Then::Run(rest))
        }
        "nice" => {
            const SPEC: Spec = Spec::new("", "n", "adjustment= help version")
                .numeric()
                .wrapper();
            let p = parse(&SPEC, args, cx.env);
            let rest = &args[p.operands.first().copied().unwrap_or(args.len())..];
            own_options("nice", &p.problem("nice")).then(Then::Run(rest))
        }
        "timeout" => {
            const SPEC: Spec = Spec::new(
                "v",
                "ks",
                "preserve-status foreground kill-after= signal= verbose help version",
            )
            .wrapper();
            let p = parse(&SPEC, args, cx.env);
            let rest = &args[p.operands.first().copied().unwrap_or(args.len())..];
            own_options("timeout", &p.problem("timeout"))
                .then(Then::Run(rest.get(1..).unwrap_or(&[])))
        }
        "stdbuf" => {
            const SPEC: Spec = Spec::new("", "ioe", "input= output= error= help version").wrapper();
            let p = parse(&SPEC, args, cx.env);
            let rest = &args[p.operands.first().copied().unwrap_or(args.len())..];
            own_options("stdbuf", &p.problem("stdbuf")).then(Then::Run(rest))
        }
        "ionice" => {
            let rest = skip_opts(args, "cnpPu", &["class", "classdata", "pid", "pgid", "uid"]);
            if rest.is_empty() && (any_short(args, 'p', "cn") || any_short(args, 'P', "cn")) {
                Rule::medium("`ionice -p` changes another process")
            } else {
                Rule::low("`ionice` runs the command it is given").then(Then::Run(rest))
            }
        }
        "command" | "builtin" => {
            if name == "builtin" && cx.shell == Shell::Dash {
                return None;
            }
            let rest = skip_opts(args, "", &[]);
            let own = wrapper_opts(args, rest);
            if name == "command" && (any_short(own, 'v', "") || any_short(own, 'V', "")) {
                return Some(
                    Rule::low("`command -v` only looks a name up").paths(super::Paths::Text),
                );
            }
            if let Some(o) = own
                .iter()
                .find(|w| !(w.lit == "--" || (name == "command" && w.lit == "-p")))
            {
                return Some(Rule::high(format!(
                    "`{name} {}` is an option this classifier does not know",
                    o.lit
                )));
            }
            Rule::low(format!("`{name}` runs the command it is given")).then(Then::Run(rest))
        }
        "env" => env(args),
        _ => return None,
    })
}

/// The wrapper's own verdict: low, or high when an option is not known
/// (it may change what runs).
fn own_options<'w>(name: &str, problem: &Option<String>) -> Rule<'w> {
    match problem {
        None => Rule::low(format!("`{name}` runs the command it is given")),
        Some(p) => Rule::high(p.clone()),
    }
}

fn env(args: &[Word]) -> Rule<'_> {
    let mut i = 0;
    let mut r = Rule::low("`env` runs the command it is given");
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if lit == "--" {
            i += 1;
            break;
        }
        if lit == "-" || !lit.starts_with('-') {
            break;
        }
        if short_has(lit, 'S', "uC") || super::opts::long_is(lit, "split-string") {
            let mut script = match lit.strip_prefix("--").and_then(|l| l.split_once('=')) {
                Some((_, v)) => v.to_string(),
                None if lit.ends_with('S') || lit.starts_with("--") => {
                    i += 1;
                    args.get(i).map(|w| w.lit.clone()).unwrap_or_default()
                }
                None => lit
                    .split_once('S')
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default(),
            };
            for w in args.get(i + 1..).unwrap_or(&[]) {
                script.push(' ');
                script.push_str(&w.lit);
            }
            // `env -S` has its own splitting rules (`\_`, `${VAR}`, `#`),
            // read here as shell words: close, not exact.
            return Rule::medium("`env -S` splits a string into a command by its own rules").then(
                Then::Script {
                    src: script,
                    shells: Dialects::Same,
                    args: Some(Vec::new()),
                },
            );
        }
        if short_has(lit, 'C', "u") || super::opts::long_is(lit, "chdir") {
            r = r.at_least(
                Risk::High,
                "`env -C` runs the command in another directory, which is not followed",
            );
        }
        let known_long = [
            "ignore-environment",
            "null",
            "unset",
            "chdir",
            "debug",
            "block-signal",
            "default-signal",
            "ignore-signal",
            "list-signal-handling",
        ];
        if lit.starts_with("--") {
            if !known_long.iter().any(|l| super::opts::long_is(lit, l)) {
                return Rule::high(format!(
                    "`env {lit}` is an option this classifier does not know"
                ));
            }
        } else if lit[1..].chars().any(|c| !"i0uCv".contains(c)) {
            return Rule::high(format!(
                "`env {lit}` is an option this classifier does not know"
            ));
        }
        i += super::opts::option_width(lit, "uC", &["unset", "chdir"]);
    }
    let rest = args.get(i..).unwrap_or(&[]);
    if rest.iter().all(|w| w.assignment().is_some()) {
        return Rule::low("`env` only prints the environment").then(Then::Run(rest));
    }
    r.then(Then::Run(rest))
}
