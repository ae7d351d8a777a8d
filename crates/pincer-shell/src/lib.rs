//! Shell command risk classifier (PO2).
//!
//! The gate asks [`classify`] how risky one `sh -c` command line is. The
//! answer is a [`Risk`] class, one sentence saying which part decided it,
//! every simple command found, and whether a deny rule matched (a denied
//! command is blocked at every autonomy level, PO3).
//!
//! # Approach
//!
//! The line is parsed, never judged by its first word:
//!
//! 1. a lexer (`shell/lex.rs`) reads quotes, escapes, `$'…'`, operators,
//!    redirections, here-documents and every `$( … )`, `` ` … ` ``,
//!    `<( … )` and `>( … )`, whose source is classified recursively;
//! 2. a splitter cuts the tokens into simple commands, through `;`, `&&`,
//!    `||`, `|`, `&`, newlines, `( … )`, `{ …; }`, `if`/`while`/`for`
//!    bodies and function definitions;
//! 3. brace expansion is applied (`{rm,x}` is `rm x`), then each simple
//!    command goes through a per-program table (`shell/programs.rs`, with
//!    option-level rules for `find`, `sort`, `git`, `sed`, `awk` and `tar`
//!    in `shell/programs/tools.rs`): wrappers (`env`, `nice`, `timeout`, `sudo`,
//!    `xargs`, `find -exec`, `sh -c 'STRING'`…) are unwrapped and what they
//!    run is classified in turn, never lower than the wrapper itself.
//!
//! The result is the maximum over all parts.
//!
//! # Classes
//!
//! - **low**: an allowlisted read-only program (`ls`, `grep`, `git log`…)
//!   with no option that runs a program or writes a file, no redirection
//!   that writes a file, and no substitution above low.
//! - **medium**: writes in the workspace (`cp`, `mkdir`, `git commit`,
//!   `> out.txt`, `sed -i`, `tee file`), and `xargs`, `less`/`man`.
//! - **high**: deletes (`rm`, `chmod`, `kill`), network, privilege
//!   (`sudo`), arbitrary code (interpreters, `eval`, `source`, `sh script`,
//!   `curl … | sh`, functions, a program name from an expansion or a
//!   workspace path), writes outside the workspace or into startup and git
//!   configuration files, and **every program not in the table**: when in
//!   doubt, the higher class. Anything that cannot be parsed is high.
//! - **denied**: [`DEFAULT_DENY`] program names and the config's
//!   `deny_commands` globs (matched against every program on the line,
//!   wrappers included), `rm -r` / `chmod -R` / `chown -R` on `/`, a
//!   top-level system directory or the home directory, `--no-preserve-root`,
//!   writes to block devices and `/dev/mem` (by redirection, `tee`, `dd
//!   of=`, `cp`), `systemctl reboot`-style power commands, `kill -1`, and the
//!   fork-bomb shape.
//!
//! Choices a policy author should know: the empty command (or only
//! comments) is low, since nothing runs; `xargs` and `parallel` are at least
//! medium, because their input chooses the arguments (`xargs sort` may
//! receive `-o ~/.bashrc`); `awk` is low only when its program has no
//! `system`, `|`, `>` or `@` (so a comparison `$3 > 1` is high) and is not
//! read from a file; `sed` is low unless `-i` (medium) or a script with an
//! `e`, `w` or `W` command or flag, or a script it cannot parse (high);
//! `cd`, `read`, `export NAME=value`, `set` and the control keywords are
//! low; `nohup` is medium, `setsid` high (it escapes the tool's process
//! group, so the time limit cannot stop it). Programs whose options can run
//! code or write (`find`, `sort`, `git`, `sed`, `awk`, `tar`, `rg`…) are
//! high when an argument comes from an expansion or an unquoted glob, since
//! it may expand to such an option (`tar cf x.tar *` with a file named
//! `--checkpoint-action=exec=sh`), so `sed "s/x/$V/"` is high. Bash
//! evaluates array subscripts in arithmetic, `[[ … -eq … ]]` and `-v`,
//! running a `$( … )` hidden in them: `[[ $n -gt 0 ]]` is therefore high,
//! and so is assigning quoted command text (`x='a[$(rm x)]'`) or a
//! `${x@P}` expansion. A program path is trusted only in `/bin`,
//! `/usr/bin`, `/usr/local/bin` and the `sbin`s; `./x`, `bin/x`, `~/x` are
//! workspace code (high).
//!
//! # Known limits
//!
//! - It judges what a command *does*, not what it *reads*: `cat
//!   ~/.ssh/id_rsa` is low. Secrecy is the sandbox's job (SB1).
//! - Configuration the command reads is not followed: `git log` runs
//!   `core.pager` from `.git/config`, `make` runs the Makefile. Writing into
//!   `.git/` or shell startup files is therefore high, but a file written
//!   by an earlier approved step can still change what a later low command
//!   runs.
//! - Variable values are not tracked: `x=/; rm -rf $x` is high, not denied.
//!   Deny rules see literal text only.
//! - `case … esac` and arithmetic `for (( ))` loops are not parsed (high).
//! - Nesting deeper than [`MAX_DEPTH`] levels of `sh -c` or substitution is
//!   high ("nested too deep"); text that cannot be parsed is high and is
//!   only searched word by word for denied program names.
//! - Aliases in the shell's startup files are not seen; the shell tool runs
//!   `sh -c` without them. A function defined on the line is high, and its
//!   body is classified, but a function defined elsewhere is just an
//!   unknown program name (high).
//! - Deny rules on a program name see the literal text before an
//!   expansion (`reboot$X`) and match a glob word against each deny name
//!   (`/sbin/reboo?`), but `$(printf reboot)` as a program is only high.
//! - Values read at run time (`read x < file; echo $((x))`) can still
//!   carry code into arithmetic evaluation; the line is judged as written.

mod glob;
mod lex;
mod programs;
mod risk;
#[cfg(test)]
mod tests;

use crate::glob::glob_match;
pub use crate::risk::Risk;
use lex::{Cmd, Item, Redir, RedirKind, Word};
use programs::{Target, Then};

/// How risky one shell command line is, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShellAssessment {
    /// Maximum over all parts; high when in doubt.
    pub risk: Risk,
    /// One sentence naming the part that decided it.
    pub why: String,
    /// `Some(reason)` when a deny rule matched: blocked at every autonomy
    /// level.
    pub denied: Option<String>,
    /// `Some(what)` when the command touches hardware: a device node or
    /// sysfs tree of a bus, GPIO, camera or sensor, or a program made for
    /// them (`i2cget`, `gpioset`, `libcamera-still`…). Such a command is at
    /// least medium risk, and `readonly` blocks it like the hardware tools
    /// (PO3, HW4): a shell must not be the ungated way to the sensors.
    /// Seen by its text, so a path built at run time (`/dev/$BUS`, `cd /dev
    /// && cat i2c-1`) is missed; the OS sandbox is what closes that.
    pub hardware: Option<String>,
    /// Every simple command found, in order, after unwrapping wrappers.
    /// `program` is empty for a part that runs no program: assignments or
    /// redirections alone, a function definition, text that could not be
    /// parsed.
    pub parts: Vec<PartVerdict>,
}

/// The verdict on one simple command.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PartVerdict {
    pub text: String,
    pub program: String,
    pub risk: Risk,
    pub why: String,
}

/// Built-in deny patterns: globs on the program basename. Structural deny
/// rules (see the module doc) come on top.
pub const DEFAULT_DENY: &[&str] = &[
    "mkfs*",
    "mke2fs",
    "mkswap",
    "mkdosfs",
    "fdisk",
    "sfdisk",
    "cfdisk",
    "gdisk",
    "sgdisk",
    "parted",
    "wipefs",
    "blkdiscard",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "swapoff",
    "kexec",
];

/// How many levels of `sh -c`, substitution and `find -exec` are followed.
pub const MAX_DEPTH: usize = 8;

/// Longest part text kept in a verdict (very long lines are cut).
const MAX_TEXT: usize = 160;

/// Classifies one shell command line. `extra_deny` are globs from config
/// `[policy] deny_commands`, matched against each program's basename.
pub fn classify(command: &str, extra_deny: &[String]) -> ShellAssessment {
    let mut cx = Classifier {
        extra_deny,
        parts: Vec::new(),
        denied: None,
    };
    cx.script(command, 0, &Verdict::default());
    let mut a = cx.finish();
    if let Some(what) = hardware_use(command, &a.parts) {
        if a.risk < Risk::Medium {
            a.risk = Risk::Medium;
            a.why =
                format!("it touches hardware ({what}): every hardware access is gated (medium)");
        }
        a.hardware = Some(what);
    }
    a
}

/// Device nodes and sysfs trees through which a command reaches a bus, a
/// GPIO line, a camera or a sensor.
const HARDWARE_PATHS: &[&str] = &[
    "/dev/i2c",
    "/dev/spidev",
    "/dev/gpiochip",
    "/dev/gpiomem",
    "/dev/mem",
    "/dev/video",
    "/dev/media",
    "/dev/v4l",
    "/dev/iio",
    "/dev/tty",
    "/dev/serial",
    "/dev/hidraw",
    "/dev/bus/usb",
    "/sys/class/",
    "/sys/bus/",
    "/sys/devices/",
    "/sys/kernel/config",
];

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
];

/// What hardware `command` touches, if any: a hardware path in its text, or
/// a hardware program among its parts (after wrappers are unwrapped).
pub fn hardware_use(command: &str, parts: &[PartVerdict]) -> Option<String> {
    if let Some(p) = HARDWARE_PATHS.iter().find(|p| command.contains(*p)) {
        // `/dev/tty` alone is the controlling terminal, not a serial port.
        let serial = |c: &str| {
            c.match_indices("/dev/tty").any(|(i, m)| {
                c[i + m.len()..]
                    .chars()
                    .next()
                    .is_some_and(|ch| ch.is_ascii_alphanumeric())
            })
        };
        if *p != "/dev/tty" || serial(command) {
            return Some(format!("`{p}`"));
        }
    }
    parts.iter().find_map(|part| {
        let base = part.program.rsplit('/').next().unwrap_or_default();
        HARDWARE_PROGRAMS
            .contains(&base)
            .then(|| format!("`{base}`"))
    })
}

/// A risk and the reason for it.
#[derive(Debug, Clone)]
struct Verdict {
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

struct Classifier<'a> {
    extra_deny: &'a [String],
    parts: Vec<PartVerdict>,
    denied: Option<String>,
}

impl Classifier<'_> {
    fn finish(self) -> ShellAssessment {
        let risk = self.parts.iter().map(|p| p.risk).max().unwrap_or(Risk::Low);
        let why = match (&self.denied, self.parts.iter().find(|p| p.risk == risk)) {
            (Some(d), _) => format!("{d} (denied at every autonomy level)"),
            (None, Some(p)) => format!("`{}`: {} ({})", p.text, p.why, risk.as_str()),
            (None, None) => "empty command: nothing runs (low)".to_string(),
        };
        ShellAssessment {
            risk,
            why,
            denied: self.denied,
            hardware: None,
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
        if w.dynamic
            && let Some(at) = w.lit.find(['$', '`'])
        {
            self.check_deny(text, &w.lit[..at]);
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
    /// `sh -c` string). Every part gets at least `floor`.
    fn script(&mut self, src: &str, depth: usize, floor: &Verdict) {
        let chars: Vec<char> = src.chars().collect();
        if depth > MAX_DEPTH {
            self.unparsed(
                &chars,
                &format!(
                    "nested too deep (more than {MAX_DEPTH} levels of `sh -c` or substitution)"
                ),
            );
            return;
        }
        let items = match lex::lex(&chars).and_then(|t| lex::split(&t)) {
            Ok(items) => items,
            Err(e) => {
                self.unparsed(&chars, &format!("could not be parsed: {e}"));
                return;
            }
        };
        for item in items {
            match item {
                Item::Cmd(c) => self.command(&chars, &c, depth, floor),
                Item::Func {
                    name,
                    start,
                    end,
                    fork_bomb,
                } => {
                    let text = display(&chars[start..end.max(start)]);
                    if fork_bomb {
                        self.deny(
                            &text,
                            &format!(
                                "the fork-bomb shape: function `{name}` calls itself through a pipe or in the background"
                            ),
                        );
                    }
                    let mut v = floor.clone();
                    v.raise(
                        Risk::High,
                        format!(
                            "defines shell function `{name}`; what a later call runs is not followed"
                        ),
                    );
                    self.part(&text, "", v);
                }
                Item::Subs(subs) => {
                    for s in subs {
                        self.script(&s, depth + 1, floor);
                    }
                }
            }
        }
    }

    /// Text the classifier gives up on: high, and searched word by word for
    /// denied program names so that a broken quote cannot hide `mkfs`.
    fn unparsed(&mut self, chars: &[char], why: &str) {
        let text = display(chars);
        let src: String = chars.iter().collect();
        for word in src.split(|c: char| c.is_whitespace() || ";&|()<>`$'\"{}\\=".contains(c)) {
            self.check_deny(&text, word);
        }
        if let Some(name) = fork_bomb_text(&src) {
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

    fn command(&mut self, chars: &[char], c: &Cmd, depth: usize, floor: &Verdict) {
        let text = display(&chars[c.start.min(chars.len())..c.end.min(chars.len())]);
        // Substitutions run before the command; classify them first.
        let subs = c.words.iter().flat_map(|w| &w.subs).chain(
            c.redirs
                .iter()
                .flat_map(|r| r.target.subs.iter().chain(&r.body_subs)),
        );
        for s in subs {
            self.script(s, depth + 1, floor);
        }
        let mut v = floor.clone();
        for r in &c.redirs {
            self.redirect(&text, r, &mut v);
        }
        let targets = c.redirs.iter().map(|r| &r.target);
        if let Some(w) = c.words.iter().chain(targets).find(|w| w.reeval) {
            v.raise(
                Risk::High,
                format!(
                    "the prompt expansion `{}` runs command text stored in a variable",
                    w.lit
                ),
            );
        }
        let words = match expand_braces(&c.words) {
            Ok(words) => words,
            Err(why) => {
                v.raise(Risk::High, why);
                self.part(&text, "", v);
                return;
            }
        };
        let stdin = if c
            .redirs
            .iter()
            .any(|r| matches!(r.kind, RedirKind::HereDoc | RedirKind::HereString))
        {
            Stdin::HereDoc
        } else if c.after_pipe {
            Stdin::Pipe
        } else {
            Stdin::Inherited
        };
        self.words(&text, &words, depth, v, stdin);
    }

    fn redirect(&mut self, text: &str, r: &Redir, v: &mut Verdict) {
        if r.kind != RedirKind::Write {
            return;
        }
        match programs::write_target(&r.target) {
            Target::Harmless => {}
            Target::Risk(risk, why) => v.raise(risk, format!("redirection `{}` {why}", r.op)),
            Target::Deny(why) => {
                self.deny(text, &format!("redirection `{}` {why}", r.op));
                v.raise(Risk::High, format!("redirection `{}` {why}", r.op));
            }
        }
    }

    /// One simple command's words: assignments, then the program, whose
    /// table entry may unwrap to another command.
    fn words(&mut self, text: &str, words: &[Word], depth: usize, mut v: Verdict, stdin: Stdin) {
        let mut ws = words;
        loop {
            while let Some((w, rest)) = ws.split_first() {
                let Some(name) = w.assignment() else { break };
                if programs::dangerous_var(name) {
                    v.raise(
                        Risk::High,
                        format!("sets `{name}`, which changes what programs run or load"),
                    );
                }
                if w.code_text {
                    v.raise(
                        Risk::High,
                        format!(
                            "stores command text in `{name}`; a later expansion (arithmetic, `@P`, `eval`) may run it"
                        ),
                    );
                }
                ws = rest;
            }
            let Some((w, args)) = ws.split_first() else {
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
            let rule = programs::rule(&name, args, stdin);
            if let Some(d) = &rule.deny {
                self.deny(text, d);
            }
            v.raise(rule.risk, rule.why);
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
                Then::Script(src) => {
                    let before = self.parts.len();
                    self.script(&src, depth + 1, &v);
                    if self.parts.len() == before {
                        self.part(text, &name, v);
                    }
                    return;
                }
                Then::Each(cmds, floor_risk, floor_why) => {
                    self.part(text, &name, v.clone());
                    let mut f = v;
                    f.raise(floor_risk, floor_why);
                    for cmd in cmds {
                        if depth + 1 > MAX_DEPTH {
                            self.unparsed(&[], "nested too deep");
                            return;
                        }
                        let inner = display(&joined(cmd).chars().collect::<Vec<_>>());
                        self.words(&inner, cmd, depth + 1, f.clone(), Stdin::Inherited);
                    }
                    return;
                }
            }
        }
    }
}

/// Where a command's standard input comes from (for `sh` with no script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stdin {
    Inherited,
    Pipe,
    HereDoc,
}

/// The fork-bomb shape in text that did not parse (`sudo :(){ :|:& };:`
/// is a syntax error in bash, but no wrapper should hide the shape): a
/// `NAME(){` whose text later pipes `NAME|NAME`.
fn fork_bomb_text(src: &str) -> Option<String> {
    let chars: Vec<char> = src.chars().collect();
    let sep = |c: char| c.is_whitespace() || ";&|(){}'\"`".contains(c);
    for (open, _) in chars.iter().enumerate().filter(|(_, c)| **c == '(') {
        // NAME [ws] ( [ws] ) [ws] {
        let mut k = open;
        while k > 0 && chars[k - 1].is_whitespace() {
            k -= 1;
        }
        let end = k;
        while k > 0 && !sep(chars[k - 1]) {
            k -= 1;
        }
        let name: String = chars[k..end].iter().collect();
        let after: String = chars[open + 1..]
            .iter()
            .filter(|c| !c.is_whitespace())
            .collect();
        if name.is_empty() || !after.starts_with("){") {
            continue;
        }
        if after.contains(&format!("{name}|{name}")) {
            return Some(name);
        }
    }
    None
}

/// The last path component (`/usr/bin/rm` → `rm`).
fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Brace expansion, which bash does before anything else
/// (`{rm,-rf,x}` runs `rm -rf x`): unquoted, expansion-free words with a
/// `{a,b}` group become one word per alternative.
fn expand_braces(words: &[Word]) -> Result<Vec<Word>, String> {
    const MAX_WORDS: usize = 256;
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        if w.quoted || w.dynamic || !w.lit.contains('{') || !w.lit.contains(',') {
            out.push(w.clone());
            continue;
        }
        let mut alts = Vec::new();
        let mut budget = MAX_WORDS;
        if !brace_alternatives(&w.lit, &mut alts, &mut budget, 0) {
            return Err(format!(
                "brace expansion of `{}` makes more than {MAX_WORDS} words",
                w.lit
            ));
        }
        out.extend(alts.into_iter().map(|lit| {
            let mut x = w.clone();
            x.lit = lit;
            x
        }));
    }
    Ok(out)
}

/// Expands the first `{a,b,…}` group of `s` (recursively); false when the
/// result would pass the budget or nest too deep.
fn brace_alternatives(s: &str, out: &mut Vec<String>, budget: &mut usize, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    let chars: Vec<char> = s.chars().collect();
    for (open, _) in chars.iter().enumerate().filter(|(_, c)| **c == '{') {
        let mut level = 0usize;
        let mut cuts = vec![open];
        let mut close = None;
        for (j, c) in chars.iter().enumerate().skip(open + 1) {
            match c {
                '{' => level += 1,
                '}' if level == 0 => {
                    close = Some(j);
                    break;
                }
                '}' => level -= 1,
                ',' if level == 0 => cuts.push(j),
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        if cuts.len() < 2 {
            continue;
        }
        cuts.push(close);
        let prefix: String = chars[..open].iter().collect();
        let suffix: String = chars[close + 1..].iter().collect();
        for pair in cuts.windows(2) {
            let alt: String = chars[pair[0] + 1..pair[1]].iter().collect();
            if !brace_alternatives(&format!("{prefix}{alt}{suffix}"), out, budget, depth + 1) {
                return false;
            }
        }
        return true;
    }
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    out.push(s.to_string());
    true
}

/// Words joined with spaces, as `watch` and `parallel` hand them to a shell.
fn joined(ws: &[Word]) -> String {
    ws.iter()
        .map(|w| w.lit.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Source text for a verdict: trimmed, control characters escaped, cut to
/// [`MAX_TEXT`] characters.
fn display(chars: &[char]) -> String {
    let s: String = chars.iter().collect();
    let mut out = String::new();
    for (n, c) in s.trim().chars().enumerate() {
        if n >= MAX_TEXT {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}
