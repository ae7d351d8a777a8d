//! The classifier proper: lexes and splits a script for its shell, learns
//! what its variables and working directories may be, then judges every
//! part — words, redirections, the program and what it runs in turn — and
//! keeps the worst.

use crate::glob::glob_match;
use crate::lex::{Exp, ExpKind, Redir, RedirKind, Word, lex};
use crate::paths::{self, Cwds, Loc, Target, embedded, locate};
use crate::programs::{self, Dialects, Effect, RuleCx, Then, opts::Paths};
use crate::split::{Cmd, Item, split};
use crate::vars::{Env, Vals, expand, merge};
use crate::work::tick;
use crate::{
    DEFAULT_DENY, MAX_COMMAND_BYTES, MAX_DEPTH, PartVerdict, Risk, Shell, ShellAssessment, Stdin,
};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::rc::Rc;

/// Longest part text kept in a verdict (very long lines are cut).
pub(crate) const MAX_TEXT: usize = 160;

/// How many wrappers (`env nice time …`) one command may stack.
const MAX_WRAPPERS: usize = 64;

/// Characters all nested scripts together may make the classifier read,
/// per character of the command (plus a constant): the bound that keeps
/// nested `sh -c` strings, which are read once per shell, linear.
const WORK_PER_CHAR: usize = 64;

/// Programs made to talk to buses, GPIO lines, cameras and sensors.
const HARDWARE_PROGRAMS: &[&str] = &[
    "i2cdetect",
    "i2cget",
    "i2cset",
    "i2cdump",
    "i2ctransfer",
    "gpiodetect",
    "gpioinfo",
    "gpioget",
    "gpioset",
    "gpiomon",
    "gpiofind",
    "gpionotify",
    "raspi-gpio",
    "pinctrl",
    "spidev_test",
    "spi-pipe",
    "libcamera-still",
    "libcamera-vid",
    "libcamera-hello",
    "libcamera-jpeg",
    "rpicam-still",
    "rpicam-vid",
    "rpicam-hello",
    "rpicam-jpeg",
    "raspistill",
    "raspivid",
    "v4l2-ctl",
    "fswebcam",
    "gst-launch-1.0",
    "nvgstcapture-1.0",
    "sensors",
    "minicom",
    "picocom",
    "stty",
    "setserial",
    "vcgencmd",
    "gpio",
    "lsusb",
    "lspci",
    "usbreset",
    "uhubctl",
    "evtest",
    "arecord",
    "aplay",
    "cec-ctl",
    "dtoverlay",
    "dtparam",
];

/// A risk and the reason for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Verdict {
    risk: Risk,
    why: String,
}

impl Default for Verdict {
    fn default() -> Self {
        Verdict {
            risk: Risk::Low,
            why: String::new(),
        }
    }
}

impl Verdict {
    /// Raises to `risk` with its reason. On a tie the outer reason stays
    /// (`sudo rm`: the privilege), except that a low one gives way to the
    /// inner program's own.
    fn raise(&mut self, risk: Risk, why: impl Into<String>) {
        if risk > self.risk || (risk == self.risk && (risk == Risk::Low || self.why.is_empty())) {
            self.risk = risk;
            self.why = why.into();
        }
    }
}

/// Where a script runs.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub shell: Shell,
    pub env: Rc<Env>,
    pub cwds: Cwds,
    pub depth: usize,
    pub floor: Verdict,
}

/// A nested shell's result, kept for the other dialect.
#[derive(Clone)]
struct Outcome {
    parts: Vec<PartVerdict>,
    denied: Option<String>,
    hardware: Option<String>,
}

struct Classifier<'a> {
    extra_deny: &'a [String],
    parts: Vec<PartVerdict>,
    denied: Option<String>,
    hardware: Option<String>,
    /// Nested shells already classified, by (shell, source, context).
    memo: HashMap<u64, Outcome>,
    /// Characters scripts may still make the classifier read.
    budget: usize,
}

pub(crate) fn run(command: &str, shell: Shell, extra_deny: &[String]) -> ShellAssessment {
    let mut cx = Classifier {
        extra_deny,
        parts: Vec::new(),
        denied: None,
        hardware: None,
        memo: HashMap::new(),
        budget: command.len().saturating_mul(WORK_PER_CHAR) + 65_536,
    };
    if command.len() > MAX_COMMAND_BYTES {
        let chars: Vec<char> = command.chars().collect();
        cx.unparsed(
            &chars,
            &format!(
                "the command is {} bytes long, more than the {MAX_COMMAND_BYTES} this classifier reads",
                command.len()
            ),
        );
    } else {
        let ctx = Ctx {
            shell,
            env: Env::top(),
            cwds: Cwds::default(),
            depth: 0,
            floor: Verdict::default(),
        };
        cx.script(command, &ctx);
    }
    cx.finish(shell)
}

impl Classifier<'_> {
    fn finish(self, shell: Shell) -> ShellAssessment {
        let risk = self.parts.iter().map(|p| p.risk).max().unwrap_or(Risk::Low);
        let why = match (&self.denied, self.parts.iter().find(|p| p.risk == risk)) {
            (Some(d), _) => format!("{d} (denied at every autonomy level)"),
            (None, Some(p)) => format!("`{}`: {} ({})", p.text, p.why, risk.as_str()),
            (None, None) => "empty command: nothing runs (low)".to_string(),
        };
        ShellAssessment {
            risk,
            why,
            shell,
            denied: self.denied,
            hardware: self.hardware,
            parts: self.parts,
        }
    }

    fn part(&mut self, text: &str, program: &str, v: Verdict) {
        let why = if v.why.is_empty() {
            "only sets variables or redirects".to_string()
        } else {
            v.why
        };
        self.parts.push(PartVerdict {
            text: text.to_string(),
            program: program.to_string(),
            risk: v.risk,
            why,
        });
    }

    fn deny(&mut self, text: &str, reason: &str) {
        if self.denied.is_none() {
            self.denied = Some(format!("`{text}`: {reason}"));
        }
    }

    fn touches(&mut self, what: String, v: &mut Verdict) {
        v.raise(
            Risk::Medium,
            format!("it touches hardware ({what}): every hardware access is gated"),
        );
        if self.hardware.is_none() {
            self.hardware = Some(what);
        }
    }

    /// Deny globs against one program basename.
    fn check_deny(&mut self, text: &str, program: &str) {
        let base = basename(program);
        if base.is_empty() {
            return;
        }
        let hit = DEFAULT_DENY
            .iter()
            .copied()
            .chain(self.extra_deny.iter().map(String::as_str))
            .find(|p| glob_match(p, base));
        if let Some(p) = hit {
            self.deny(text, &format!("`{base}` matches the deny pattern `{p}`"));
        }
    }

    /// Deny globs against a program word. A word whose value is not
    /// fully known is checked on what is: the text before an expansion
    /// (`reboot$X`), and a glob word against each deny name (`/sbin/reboo?`).
    fn check_deny_word(&mut self, text: &str, w: &Word) {
        self.check_deny(text, &w.lit);
        if let Some(first) = w.exps.first() {
            self.check_deny(text, &w.lit[..first.at]);
        }
        if w.glob {
            let pattern = basename(&w.lit);
            let names = DEFAULT_DENY
                .iter()
                .copied()
                .chain(self.extra_deny.iter().map(String::as_str));
            let hit = names
                .map(|d| d.replace(['*', '?'], ""))
                .find(|d| !d.is_empty() && glob_match(pattern, d));
            if let Some(d) = hit {
                self.deny(
                    text,
                    &format!("the glob `{pattern}` can name the denied program `{d}`"),
                );
            }
        }
    }

    /// Classifies a whole script (the top line, a substitution, an
    /// `sh -c` string). Every part gets at least `ctx.floor`.
    fn script(&mut self, src: &str, ctx: &Ctx) {
        let chars: Vec<char> = src.chars().collect();
        if ctx.depth > MAX_DEPTH {
            self.unparsed(
                &chars,
                &format!(
                    "nested too deep (more than {MAX_DEPTH} levels of `sh -c` or substitution)"
                ),
            );
            return;
        }
        match self.budget.checked_sub(chars.len()) {
            Some(left) => self.budget = left,
            None => {
                self.unparsed(
                    &chars,
                    "its nested shells and substitutions need more work than the classifier gives one command",
                );
                return;
            }
        }
        let items = match lex(&chars, ctx.shell).and_then(|t| split(&t, ctx.shell)) {
            Ok(items) => items,
            Err(e) => {
                self.unparsed(
                    &chars,
                    &format!("could not be parsed by {}: {e}", ctx.shell),
                );
                return;
            }
        };
        let sctx = crate::scope::scope(&items, ctx);
        for item in &items {
            self.item(&chars, item, &sctx);
        }
    }

    fn item(&mut self, chars: &[char], item: &Item, ctx: &Ctx) {
        match item {
            Item::Cmd(c) => self.command(chars, c, ctx),
            Item::Func {
                name,
                start,
                end,
                fork_bomb,
            } => {
                let text = display(slice(chars, *start, *end));
                if *fork_bomb {
                    self.deny(
                        &text,
                        &format!(
                            "the fork-bomb shape: function `{name}` calls itself through a pipe or in the background"
                        ),
                    );
                }
                let mut v = ctx.floor.clone();
                v.raise(
                    Risk::High,
                    format!(
                        "defines shell function `{name}`; what a later call runs is not followed"
                    ),
                );
                self.part(&text, "", v);
            }
            Item::For {
                name,
                words,
                start,
                end,
            } => {
                let text = display(slice(chars, *start, *end));
                let mut v = ctx.floor.clone();
                self.assignment(&name.lit, name, false, ctx, &mut v);
                for w in words.iter().flatten() {
                    self.substitutions(w, ctx);
                    self.features(w, ctx, &mut v);
                }
                if v.risk > ctx.floor.risk || ctx.floor.risk > Risk::Low {
                    self.part(&text, "for", v);
                }
            }
            Item::Words { words, start, end } => {
                let text = display(slice(chars, *start, *end));
                let mut v = ctx.floor.clone();
                for w in words {
                    self.substitutions(w, ctx);
                    self.features(w, ctx, &mut v);
                }
                if v.risk > ctx.floor.risk || ctx.floor.risk > Risk::Low {
                    self.part(&text, "case", v);
                }
            }
            Item::Arith { word, start, end } => {
                let text = display(slice(chars, *start, *end));
                self.substitutions(word, ctx);
                let mut v = ctx.floor.clone();
                self.features(word, ctx, &mut v);
                self.part(&text, "", v);
            }
        }
    }

    /// The command and process substitutions in a word run first, in the
    /// same shell and scope.
    fn substitutions(&mut self, w: &Word, ctx: &Ctx) {
        for s in &w.subs {
            let sub = Ctx {
                depth: ctx.depth + 1,
                ..ctx.clone()
            };
            self.script(s, &sub);
        }
    }

    fn command(&mut self, chars: &[char], c: &Cmd, ctx: &Ctx) {
        let text = display(slice(chars, c.start, c.end));
        let bodies = c.redirs.iter().filter_map(|r| r.body.as_deref());
        let targets = c.redirs.iter().map(|r| &r.target);
        let all: Vec<&Word> = c.words.iter().chain(targets).chain(bodies).collect();
        for w in &all {
            self.substitutions(w, ctx);
        }
        let mut v = ctx.floor.clone();
        for w in &all {
            self.features(w, ctx, &mut v);
        }
        for r in &c.redirs {
            self.redirect(&text, r, ctx, &mut v);
        }
        if ctx.shell == Shell::Bash
            && let Some(w) = c.words.iter().find(|w| crate::braces::has_sequence(w))
        {
            v.raise(
                Risk::Medium,
                format!(
                    "`{}` is a brace sequence, which can make more words than memory holds",
                    w.lit
                ),
            );
        }
        let words = if ctx.shell == Shell::Bash {
            match crate::braces::expand_braces(&c.words) {
                Ok(words) => words,
                Err(why) => {
                    v.raise(Risk::High, why);
                    self.part(&text, "", v);
                    return;
                }
            }
        } else {
            c.words.clone()
        };
        // The last input redirection wins, as in the shell.
        let input = c.redirs.iter().rev().find(|r| {
            matches!(
                r.kind,
                RedirKind::HereDoc | RedirKind::HereString | RedirKind::Read
            ) || (r.kind == RedirKind::Dup && r.op.starts_with('<'))
        });
        let (stdin, stdin_text) = match input {
            Some(r) if r.kind == RedirKind::HereDoc => (Stdin::HereDoc, r.body_text.clone()),
            // A here-string is its word's text (and a newline).
            Some(r) if r.kind == RedirKind::HereString && !r.target.dynamic => {
                (Stdin::HereDoc, Some(r.target.lit.clone()))
            }
            Some(r) if r.kind == RedirKind::HereString => (Stdin::HereDoc, None),
            Some(_) => (Stdin::Inherited, None),
            None if c.after_pipe => (Stdin::Pipe, None),
            None => (Stdin::Inherited, None),
        };
        self.words(&text, &words, ctx, v, stdin, stdin_text.as_deref());
    }

    /// Judges the expansions in a word (see the safe subset in the crate
    /// doc).
    fn features(&mut self, w: &Word, ctx: &Ctx, v: &mut Verdict) {
        let bash = ctx.shell == Shell::Bash;
        for e in &w.exps {
            tick(1);
            let shown = exp_text(w, e);
            let not_posix = |v: &mut Verdict| {
                v.raise(
                    Risk::Medium,
                    format!("`{shown}` is not POSIX: dash rejects it (\"Bad substitution\")"),
                );
            };
            match &e.kind {
                ExpKind::Param(_)
                | ExpKind::Alt(..)
                | ExpKind::Length(_)
                | ExpKind::TrimEnd(_)
                | ExpKind::TrimStart(_) => {}
                ExpKind::Transform(_) if bash => {}
                ExpKind::Command => v.raise(
                    Risk::Medium,
                    format!("`{shown}` runs a command substitution (classified on its own), outside the safe subset"),
                ),
                ExpKind::Process => v.raise(
                    Risk::Medium,
                    format!("`{shown}` is a process substitution (classified on its own), outside the safe subset"),
                ),
                ExpKind::Assign(name, _) => {
                    let (risk, what) = if programs::dangerous_var(name) {
                        (Risk::High, "which changes what programs run or load")
                    } else {
                        (Risk::Medium, "an assignment inside a word")
                    };
                    v.raise(risk, format!("`{shown}` assigns `{name}`, {what}"));
                }
                ExpKind::Arith(expr) => {
                    self.arithmetic(&shown, expr, ctx, v);
                }
                ExpKind::Substring(_) | ExpKind::Subscript(_) if bash => {
                    let inner = shown.trim_start_matches("${").trim_end_matches('}');
                    let what = if matches!(e.kind, ExpKind::Subscript(_)) {
                        "an array subscript"
                    } else {
                        "a substring, whose offsets are arithmetic"
                    };
                    v.raise(Risk::Medium, format!("`{shown}` is {what}, outside the safe subset"));
                    let text = inner.split_once(['[', ':']).map_or("", |(_, t)| t);
                    if !arith_is_plain(text, ctx) {
                        v.raise(
                            Risk::High,
                            format!("`{shown}` evaluates {what} whose variables may hold code (bash runs a `$( … )` in one)"),
                        );
                    }
                }
                ExpKind::Indirect(_) | ExpKind::Prompt(_) if bash => v.raise(
                    Risk::High,
                    format!("`{shown}` evaluates a variable's value as a name or prompt, which can run a command"),
                ),
                ExpKind::Array if bash => v.raise(
                    Risk::Medium,
                    format!("`{shown}` is a bash array, outside the safe subset"),
                ),
                ExpKind::Unknown if bash => v.raise(
                    Risk::Medium,
                    format!("`{shown}` is an expansion this classifier does not understand"),
                ),
                _ => not_posix(v),
            }
        }
    }

    /// Arithmetic (`$((…))`, `$[…]`, `((…))`): not in the safe subset (it
    /// can assign); in bash, a variable in it whose value may be text is
    /// evaluated as an expression too, and an array subscript there runs a
    /// command.
    fn arithmetic(&mut self, shown: &str, expr: &str, ctx: &Ctx, v: &mut Verdict) {
        v.raise(
            Risk::Medium,
            format!("`{shown}` is arithmetic, outside the safe subset (it can assign variables)"),
        );
        if ctx.shell == Shell::Bash && !arith_is_plain(expr, ctx) {
            v.raise(
                Risk::High,
                format!("`{shown}`: bash evaluates the variables in it as expressions, and an array subscript in one runs a command"),
            );
        }
    }

    fn redirect(&mut self, text: &str, r: &Redir, ctx: &Ctx, v: &mut Verdict) {
        if let Some(name) = &r.named_fd {
            let risk = if programs::special_var(name) {
                Risk::High
            } else {
                Risk::Medium
            };
            v.raise(
                risk,
                format!(
                    "`{{{name}}}{}` assigns a descriptor number to `{name}` (bash)",
                    r.op
                ),
            );
        }
        match r.kind {
            RedirKind::Write => {
                let locs = self.locations(&r.target, ctx);
                self.written(
                    text,
                    &format!("redirection `{}`", r.op),
                    &r.target,
                    &locs,
                    v,
                );
            }
            RedirKind::Read => {
                let locs = self.locations(&r.target, ctx);
                if ctx.shell == Shell::Bash && network(&locs) {
                    v.raise(
                        Risk::High,
                        format!(
                            "redirection `<` from `{}` opens a network connection (bash)",
                            r.target.lit
                        ),
                    );
                }
                if let Some(what) = paths::hardware(&r.target.lit, &locs) {
                    self.touches(what, v);
                }
            }
            RedirKind::Dup | RedirKind::HereDoc | RedirKind::HereString => {}
        }
    }

    /// Every place a word may name.
    fn locations(&self, w: &Word, ctx: &Ctx) -> Vec<Loc> {
        let alts = if w.dynamic {
            expand(w, &ctx.env)
        } else {
            Some(vec![w.pattern()])
        };
        match alts {
            None => vec![Loc::Unknown],
            Some(alts) => alts.iter().flat_map(|a| locate(a, &ctx.cwds)).collect(),
        }
    }

    /// Judges a write to `w` (by a redirection or a program).
    fn written(&mut self, text: &str, by: &str, w: &Word, locs: &[Loc], v: &mut Verdict) {
        match paths::write_target(&w.lit, locs) {
            Target::Harmless => {}
            Target::Risk(risk, why) => v.raise(risk, format!("{by} {why}")),
            Target::Deny(why) => {
                self.deny(text, &format!("{by} {why}"));
                v.raise(Risk::High, format!("{by} {why}"));
            }
        }
        if let Some(what) = paths::hardware(&w.lit, locs) {
            self.touches(what, v);
        }
    }

    /// A variable assignment: `NAME=value` (`exported` when it prefixes a
    /// program), a `for` variable.
    fn assignment(&mut self, name: &str, w: &Word, exported: bool, ctx: &Ctx, v: &mut Verdict) {
        let lit = &w.lit;
        if w.code_text {
            v.raise(
                Risk::High,
                format!(
                    "stores command text in `{name}`; a later expansion (arithmetic, `@P`, `eval`) may run it"
                ),
            );
        }
        if programs::dangerous_var(name) {
            v.raise(
                Risk::High,
                format!("sets `{name}`, which changes what programs run or load"),
            );
        } else if programs::special_var(name) {
            v.raise(
                Risk::Medium,
                format!("sets `{name}`, which the shell gives a meaning to"),
            );
        } else if exported && !programs::harmless_export(name) {
            v.raise(
                Risk::Medium,
                format!(
                    "exports `{name}` to the program; only lower-case names and the locale, time-zone and colour variables are known harmless"
                ),
            );
        }
        let eq = lit.find('=').unwrap_or(lit.len());
        let target = &lit[..eq];
        if target.ends_with('+') && ctx.shell == Shell::Bash {
            v.raise(
                Risk::Medium,
                format!("`{target}=` appends (bash), outside the safe subset"),
            );
        }
        if let Some(open) = target.find('[') {
            v.raise(
                Risk::Medium,
                format!("`{target}` assigns an array element (bash), outside the safe subset"),
            );
            let sub = target[open + 1..].trim_end_matches(['+', ']']);
            if !arith_is_plain(sub, ctx) {
                v.raise(
                    Risk::High,
                    format!("`{target}`: bash evaluates the subscript, and a `$( … )` in it runs a command"),
                );
            }
        }
    }

    /// One simple command's words: assignments, then the program, whose
    /// table entry may unwrap to another command.
    fn words(
        &mut self,
        text: &str,
        words: &[Word],
        ctx: &Ctx,
        mut v: Verdict,
        stdin: Stdin,
        stdin_text: Option<&str>,
    ) {
        let mut ws = words;
        let mut hops = 0;
        loop {
            hops += 1;
            if hops > MAX_WRAPPERS {
                v.raise(
                    Risk::High,
                    format!("more than {MAX_WRAPPERS} wrappers around one command"),
                );
                self.part(text, "", v);
                return;
            }
            let n = ws
                .iter()
                .take_while(|w| assignment_of(w, ctx.shell).is_some())
                .count();
            let (assigns, rest) = ws.split_at(n);
            for w in assigns {
                if let Some(name) = assignment_of(w, ctx.shell) {
                    self.assignment(name, w, !rest.is_empty(), ctx, &mut v);
                }
            }
            let Some((w, args)) = rest.split_first() else {
                self.part(text, "", v);
                return;
            };
            self.check_deny_word(text, w);
            let name = match programs::resolve(w) {
                Ok(name) => name,
                Err(why) => {
                    v.raise(Risk::High, why);
                    self.part(text, basename(&w.lit), v);
                    return;
                }
            };
            if HARDWARE_PROGRAMS.contains(&name.as_str()) {
                self.touches(format!("`{name}`"), &mut v);
            }
            let rcx = RuleCx {
                shell: ctx.shell,
                stdin,
                stdin_text,
                env: &ctx.env,
                cwds: &ctx.cwds,
            };
            let rule = programs::rule(&name, args, &rcx);
            if let Some(d) = &rule.deny {
                self.deny(text, d);
            }
            v.raise(rule.risk, rule.why);
            for e in &rule.effects {
                self.effect(text, &name, e, ctx, &mut v);
            }
            // A wrapper's own words are checked here; the command it runs
            // when it is unwrapped.
            let own = match &rule.then {
                Then::Run(rest) => &args[..args.len() - rest.len()],
                _ => args,
            };
            self.path_words(own, rule.paths, rule.not_path, ctx, &mut v);
            if rule.recursive {
                self.recursive_reads(own, rule.not_path, ctx, &mut v);
            }
            match rule.then {
                Then::Done => {
                    self.part(text, &name, v);
                    return;
                }
                Then::Run(rest) if !rest.is_empty() => ws = rest,
                Then::Run(_) => {
                    self.part(text, &name, v);
                    return;
                }
                Then::Script { src, shells, args } => {
                    let before = self.parts.len();
                    self.nested_shell(&src, shells, args.as_deref(), ctx, &v);
                    if self.parts.len() == before {
                        self.part(text, &name, v);
                    }
                    return;
                }
                Then::Each(cmds, floor_risk, floor_why) => {
                    self.part(text, &name, v.clone());
                    let mut f = v;
                    f.raise(floor_risk, floor_why);
                    let inner_ctx = Ctx {
                        depth: ctx.depth + 1,
                        ..ctx.clone()
                    };
                    if inner_ctx.depth > MAX_DEPTH {
                        self.unparsed(&[], "nested too deep");
                        return;
                    }
                    for cmd in cmds {
                        let cmd: Vec<Word> = cmd.iter().map(found_path).collect();
                        let inner = display(&programs::joined(&cmd).chars().collect::<Vec<_>>());
                        self.words(&inner, &cmd, &inner_ctx, f.clone(), Stdin::Inherited, None);
                    }
                    return;
                }
            }
        }
    }

    /// Judges what a program changes.
    fn effect(&mut self, text: &str, program: &str, e: &Effect, ctx: &Ctx, v: &mut Verdict) {
        match e {
            Effect::Read(w) => {
                let locs = self.locations(w, ctx);
                if let Some(what) = paths::hardware(&w.lit, &locs) {
                    self.touches(what, v);
                }
            }
            Effect::Write(w) => {
                let locs = self.locations(w, ctx);
                self.written(text, &format!("`{program}`"), w, &locs, v);
            }
            Effect::RemoveTree(w, how) | Effect::ChangeTree(w, how) => {
                let locs = self.locations(w, ctx);
                let verb = if matches!(e, Effect::RemoveTree(..)) {
                    "deletes"
                } else {
                    "changes"
                };
                let hit = home_word(w)
                    .then(|| w.lit.clone())
                    .or_else(|| paths::rootish(&locs));
                if let Some(path) = hit {
                    let why = format!(
                        "{how} on `{}`{} {verb} a whole system or home tree",
                        w.lit,
                        if path == w.lit {
                            String::new()
                        } else {
                            format!(" (`{path}`)")
                        }
                    );
                    self.deny(text, &why);
                    v.raise(Risk::High, why);
                }
            }
        }
    }

    /// The path checks on a program's arguments: a word that names a
    /// device or sysfs tree touches hardware; for a program that opens
    /// its operands, so may one whose value is not known.
    fn path_words(
        &mut self,
        args: &[Word],
        how: Paths,
        skip: Option<usize>,
        ctx: &Ctx,
        v: &mut Verdict,
    ) {
        if how == Paths::Text {
            return;
        }
        for (i, w) in args.iter().enumerate() {
            tick(1);
            if Some(i) == skip {
                continue;
            }
            let alts = if w.dynamic {
                expand(w, &ctx.env)
            } else {
                Some(vec![w.pattern()])
            };
            let Some(alts) = alts else {
                if how == Paths::Opened {
                    self.touches(format!("`{}`, a path whose value is not known", w.lit), v);
                }
                continue;
            };
            for a in &alts {
                for p in embedded(a) {
                    if p.starts_with('-') {
                        continue; // an option; what it holds is in `embedded` too
                    }
                    let locs = locate(p, &ctx.cwds);
                    if ctx.cwds.unknown() && how == Paths::Opened && !p.starts_with('/') {
                        self.touches(
                            format!("`{p}` from a working directory that is not known"),
                            v,
                        );
                    }
                    if let Some(what) = paths::hardware(p, &locs) {
                        if matches!(locs.as_slice(), [Loc::Unknown]) && how != Paths::Opened {
                            continue;
                        }
                        self.touches(what, v);
                        return;
                    }
                }
            }
        }
    }

    /// A program that reads every file below its operands (the working
    /// directory without one) reads hardware from `/` or `/sys`.
    fn recursive_reads(&mut self, args: &[Word], skip: Option<usize>, ctx: &Ctx, v: &mut Verdict) {
        let dot = Word::plain(".");
        let mut ops: Vec<&Word> = args
            .iter()
            .enumerate()
            .filter(|(i, w)| Some(*i) != skip && !(w.lit.starts_with('-') && w.lit.len() > 1))
            .map(|(_, w)| w)
            .collect();
        if ops.is_empty() {
            ops.push(&dot);
        }
        for w in ops {
            let locs = self.locations(w, ctx);
            if let Some(what) = paths::hardware_below(&w.lit, &locs) {
                self.touches(what, v);
                return;
            }
        }
    }

    /// A string run by another shell (`sh -c`, `bash -c`, `eval`, `watch`):
    /// classified for each shell that may run it, with `args` as `$0`,
    /// `$1`… Parts are kept from the worse verdict.
    fn nested_shell(
        &mut self,
        src: &str,
        shells: Dialects,
        args: Option<&[Word]>,
        ctx: &Ctx,
        floor: &Verdict,
    ) {
        let list: Vec<Shell> = match shells {
            Dialects::Same => vec![ctx.shell],
            Dialects::Only(s) => vec![s],
            Dialects::Both => Shell::ALL.to_vec(),
        };
        let fresh = shells != Dialects::Same;
        let positional = match (fresh, args) {
            (false, _) => None,
            (true, None) => Some(None),
            (true, Some(a)) => {
                let mut pool: Vals = Some(Vec::new());
                for w in a {
                    let vals = if w.dynamic {
                        expand(w, &ctx.env)
                    } else {
                        Some(vec![w.pattern()])
                    };
                    merge(&mut pool, vals);
                }
                Some(pool)
            }
        };
        let env = Env::child(&ctx.env, fresh, positional).sealed();
        let mut best: Option<Outcome> = None;
        for shell in list {
            let sub = Ctx {
                shell,
                env: Rc::clone(&env),
                cwds: ctx.cwds.clone(),
                depth: ctx.depth + 1,
                floor: floor.clone(),
            };
            let key = {
                let mut h = DefaultHasher::new();
                (
                    shell,
                    src,
                    env.fingerprint(),
                    &sub.cwds.0,
                    &sub.floor,
                    sub.depth,
                )
                    .hash(&mut h);
                h.finish()
            };
            let out = match self.memo.get(&key) {
                Some(o) => o.clone(),
                None => {
                    let saved = (
                        std::mem::take(&mut self.parts),
                        self.denied.take(),
                        self.hardware.take(),
                    );
                    self.script(src, &sub);
                    let out = Outcome {
                        parts: std::mem::replace(&mut self.parts, saved.0),
                        denied: std::mem::replace(&mut self.denied, saved.1),
                        hardware: std::mem::replace(&mut self.hardware, saved.2),
                    };
                    self.memo.insert(key, out.clone());
                    out
                }
            };
            let risk = |o: &Outcome| o.parts.iter().map(|p| p.risk).max().unwrap_or(Risk::Low);
            if let Some(d) = &out.denied
                && self.denied.is_none()
            {
                self.denied = Some(d.clone());
            }
            if let Some(h) = &out.hardware
                && self.hardware.is_none()
            {
                self.hardware = Some(h.clone());
            }
            if best.as_ref().is_none_or(|b| risk(&out) > risk(b)) {
                best = Some(out);
            }
        }
        if let Some(b) = best {
            self.parts.extend(b.parts);
        }
    }

    /// Text the classifier gives up on: high, and searched word by word for
    /// denied program names so that a broken quote cannot hide `mkfs`.
    fn unparsed(&mut self, chars: &[char], why: &str) {
        let text = display(chars);
        let mut word = String::new();
        for &c in chars.iter().chain(std::iter::once(&' ')) {
            tick(1);
            if c.is_whitespace() || ";&|()<>`$'\"{}\\=".contains(c) {
                if !word.is_empty() {
                    self.check_deny(&text, &word);
                    word.clear();
                }
            } else {
                word.push(c);
            }
        }
        if let Some(name) = fork_bomb_text(chars) {
            self.deny(
                &text,
                &format!("the fork-bomb shape: function `{name}` calls itself through a pipe"),
            );
        }
        let v = Verdict {
            risk: Risk::High,
            why: format!("{why}; when in doubt, high"),
        };
        self.part(&text, "", v);
    }
}

/// `NAME` when the word is an assignment in this shell (dash has no
/// `NAME+=` and no `NAME[i]=`).
pub(crate) fn assignment_of(w: &Word, shell: Shell) -> Option<&str> {
    let name = w.assignment()?;
    if shell == Shell::Dash {
        let eq = w.lit.find('=')?;
        if w.lit[..eq].ends_with('+') || w.lit[..eq].contains('[') {
            return None;
        }
    }
    Some(name)
}

/// An arithmetic expression (or subscript) whose variables can only hold
/// numbers or nothing: bash will not find text to evaluate in them.
fn arith_is_plain(expr: &str, ctx: &Ctx) -> bool {
    let mut names = Vec::new();
    let mut cur = String::new();
    let mut after_dollar = false;
    for c in expr.chars().chain(std::iter::once(' ')) {
        if c == '_' || c.is_ascii_alphanumeric() {
            cur.push(c);
            continue;
        }
        if !cur.is_empty() {
            let leading_digit = cur.starts_with(|d: char| d.is_ascii_digit());
            if !leading_digit || after_dollar {
                names.push(std::mem::take(&mut cur));
            }
            cur.clear();
        }
        after_dollar = c == '$';
        if matches!(c, '[' | '`' | '\'' | '"' | '\\') {
            return false;
        }
    }
    names.iter().all(|n| {
        ctx.env.values(n).is_some_and(|vals| {
            vals.iter().all(|v| {
                v.chars()
                    .all(|c| c.is_ascii_digit() || c == crate::paths::OPAQUE || c == '-')
            })
        })
    })
}

/// Bash `/dev/tcp/…` or `/dev/udp/…`.
fn network(locs: &[Loc]) -> bool {
    locs.iter().any(|l| match l {
        Loc::Abs(c) => paths::classes(c).contains(&paths::Class::Network),
        _ => false,
    })
}

/// `~`, `~/`, `~/*`, `$HOME`, `${HOME}`: the home directory (in the shell
/// tool, the workspace root) as a whole.
fn home_word(w: &Word) -> bool {
    let mut lit = w.lit.as_str();
    let home;
    for prefix in ["$HOME", "${HOME}"] {
        if let Some(rest) = lit.strip_prefix(prefix) {
            home = format!("~{rest}");
            lit = home.as_str();
            break;
        }
    }
    let Some(rest) = lit.strip_prefix('~') else {
        return false;
    };
    let (user, path) = rest.split_once('/').unwrap_or((rest, ""));
    let c: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    user.chars().all(|ch| ch != '$')
        && (c.is_empty() || (c.len() == 1 && c[0].chars().all(|ch| "*?.".contains(ch))))
}

/// `{}` in a `find -exec` command is a path found at run time.
fn found_path(w: &Word) -> Word {
    if !w.lit.contains("{}") {
        return w.clone();
    }
    let mut x = Word::plain(&w.lit);
    x.dynamic = true;
    x.exps = vec![Exp {
        at: 0,
        len: w.lit.len(),
        kind: ExpKind::Unknown,
        quoted: true,
        nested: false,
    }];
    x
}

/// An expansion's source text.
fn exp_text(w: &Word, e: &Exp) -> String {
    w.lit.get(e.at..e.at + e.len).map_or_else(
        || w.lit.clone(),
        |s| {
            let cut: String = s.chars().take(MAX_TEXT).collect();
            if cut.len() < s.len() {
                format!("{cut}…")
            } else {
                cut
            }
        },
    )
}

/// The fork-bomb shape in text that did not parse (`sudo :(){ :|:& };:`
/// is a syntax error in bash, but no wrapper should hide the shape): a
/// `NAME(){` whose name later appears as `NAME|NAME`. One pass to collect
/// the defined names, one to look at every `|`.
fn fork_bomb_text(chars: &[char]) -> Option<String> {
    let sep = |c: char| c.is_whitespace() || ";&|(){}'\"`".contains(c);
    let mut defined: Vec<String> = Vec::new();
    let n = chars.len();
    let mut i = 0;
    while i < n {
        tick(1);
        if chars[i] == '(' {
            // NAME [ws] ( [ws] ) [ws] {
            let mut k = i;
            while k > 0 && chars[k - 1].is_whitespace() {
                k -= 1;
            }
            let end = k;
            while k > 0 && !sep(chars[k - 1]) && end - k < 64 {
                k -= 1;
            }
            let mut j = i + 1;
            while j < n && chars[j].is_whitespace() {
                j += 1;
            }
            let close = j < n && chars[j] == ')';
            j += 1;
            while j < n && chars[j].is_whitespace() {
                j += 1;
            }
            if close && j < n && chars[j] == '{' && k < end && defined.len() < 64 {
                defined.push(chars[k..end].iter().collect());
            }
        }
        i += 1;
    }
    if defined.is_empty() {
        return None;
    }
    let stripped: Vec<char> = chars
        .iter()
        .copied()
        .filter(|c| !c.is_whitespace())
        .collect();
    for (p, _) in stripped.iter().enumerate().filter(|(_, c)| **c == '|') {
        tick(1);
        let mut a = p;
        while a > 0 && !sep(stripped[a - 1]) && p - a < 64 {
            a -= 1;
        }
        let mut b = p + 1;
        while b < stripped.len() && !sep(stripped[b]) && b - p < 65 {
            b += 1;
        }
        let left: String = stripped[a..p].iter().collect();
        let right: String = stripped[p + 1..b].iter().collect();
        if !left.is_empty() && left == right && defined.contains(&left) {
            return Some(left);
        }
    }
    None
}

/// The last path component (`/usr/bin/rm` → `rm`).
fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

fn slice(chars: &[char], start: usize, end: usize) -> &[char] {
    let end = end.min(chars.len());
    &chars[start.min(end)..end]
}

/// Source text for a verdict: trimmed, control characters escaped, cut to
/// [`MAX_TEXT`] characters of output. Reads only what it shows (and the
/// blanks at both ends).
pub(crate) fn display(chars: &[char]) -> String {
    let start = chars
        .iter()
        .position(|c| !c.is_whitespace())
        .unwrap_or(chars.len());
    let end = chars
        .iter()
        .rposition(|c| !c.is_whitespace())
        .map_or(start, |e| e + 1);
    let mut out = String::new();
    let mut shown = 0;
    for &c in &chars[start..end.max(start)] {
        let piece = match c {
            '\n' => "\\n".to_string(),
            '\r' => "\\r".to_string(),
            '\t' => "\\t".to_string(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        };
        let n = piece.chars().count();
        if shown + n > MAX_TEXT {
            out.push('…');
            break;
        }
        shown += n;
        out.push_str(&piece);
    }
    out
}
