//! Shell command risk classifier: how risky one `sh -c` command line is,
//! for one shell.
//!
//! pincer's gate asks [`classify`] about a command before the shell tool
//! runs it. The answer is a [`Risk`] class, one sentence saying which part
//! decided it, the shell it was made for, every simple command found,
//! whether a deny rule matched (a denied command is blocked at every
//! autonomy level) and whether it touches hardware. This crate is a leaf:
//! it knows nothing of pincer.
//!
//! # Low means provably harmless
//!
//! The two boundaries that matter are *low vs. not low* (what runs without
//! asking, even under `readonly`) and *denied vs. not* (what `full` still
//! refuses). A command is **low only when it parses completely into the
//! safe subset below**, for the shell that will run it; anything the
//! classifier does not fully understand is at least medium, with the
//! reason naming the part. Not finding something bad is never enough.
//!
//! ## The safe subset
//!
//! - **Structure**: simple commands joined by `;`, `&&`, `||`, `|`, `&`
//!   and newlines; `( … )`, `{ …; }`, `!`, `if`/`elif`/`else`, `while`,
//!   `until`, `for NAME in WORDS`, `case … esac`; comments. In bash also
//!   `|&`, `[[ … ]]` (without `-v` on a subscript or an arithmetic
//!   comparison of anything but integers) and `select`.
//! - **Words**: literal text, `'…'`, `"…"`, backslash escapes, `~`, globs
//!   (`*`, `?`, `[…]`), and the parameter expansions `$NAME`, `${NAME}`,
//!   `$1`, `$@`, `$?`…, `${NAME:-WORD}`, `${NAME-WORD}`, `${NAME:+WORD}`,
//!   `${NAME+WORD}`, `${NAME:?WORD}`, `${#NAME}`, `${NAME%PAT}`,
//!   `${NAME%%PAT}`, `${NAME#PAT}`, `${NAME##PAT}`. In bash also `$'…'`,
//!   `$"…"`, brace expansion (`{a,b}`) and the string transforms
//!   `${x/a/b}`, `${x^^}`, `${x,,}`, `${x@Q}`….
//! - **Not in it** (at least medium, most of them high): `$( … )` and
//!   backticks (whose commands are classified too), `$(( … ))`, `$[ … ]`,
//!   `(( … ))`, `let`, process substitution `<( … )`, arrays and
//!   subscripts, `${!x}`, `${x@P}`, `${x:OFFSET}`, `${x:=WORD}` (it
//!   assigns), function definitions, `eval`, `source`, `trap`, `alias`,
//!   a bash-only form under dash (dash rejects it), and anything that does
//!   not parse.
//! - **Assignments**: `NAME=value`, `read NAME`, `for NAME in`, `export`,
//!   `local`, `readonly` (and `declare`, `typeset` in bash) of a plain
//!   name that the shell gives no meaning to and that changes no program's
//!   behaviour (not `PATH`, `IFS`, `PS4`, `BASH_ENV`, `LD_*`, `*PAGER`…).
//!   A name given to programs (a `NAME=value` prefix, `export`) must also
//!   be known harmless to them: a lower-case name, or the locale, time
//!   zone and colour variables. A value holding command text (`'$(…)'`)
//!   is not in the subset (a later expansion may run it).
//! - **Redirections**: writing only to `/dev/null` (and the other device
//!   files that discard or refuse what they get: `/dev/zero`, `/dev/full`,
//!   `/dev/random`, `/dev/urandom`), `/dev/stdout`, `/dev/stderr`,
//!   `/dev/fd/N`, and between descriptors (`2>&1`, `>&-`); reading a file
//!   with `<`, here-documents and (bash) here-strings.
//! - **Programs**: a known read-only program or builtin with only options
//!   known to be harmless (per-program option allowlists in
//!   `programs/readonly.rs`, `programs/builtins.rs`, `programs/tools.rs`,
//!   `programs/git.rs`): `ls`, `cat`, `head`, `tail`, `wc`, `grep`, `cut`,
//!   `tr`, `sort`, `uniq`, `diff`, `cmp`, `comm`, `find` (without
//!   `-exec`/`-delete`/`-fprint`), `sed` (without `-i`, `e`, `w`),
//!   `awk` (without `system`, `|`, `>`, `getline`), `jq`, `stat`, `du`,
//!   `df`, `ps`, `date`, `tar -t`, `git` read-only subcommands (`log`,
//!   `status`, `diff`, `show`, `config --get`…), the checksum tools, `echo`,
//!   `printf`, `test`, `cd`, `set` with harmless options, and the wrappers
//!   `env`, `nice`, `timeout`, `stdbuf`, `time`, `command`, `sh -c`/`bash
//!   -c`/`dash -c` whose command is itself in the subset. An unknown option
//!   is medium, and so is an abbreviated long option (`--colo`: the program
//!   may have an unlisted option of exactly that name). A program word from
//!   a system directory (`/usr/bin/ls`) is the program; one from anywhere
//!   else is unknown code.
//! - **Paths**: no word may name, after normalisation, a device node other
//!   than the harmless ones (not `/dev/tty`: that is the user's terminal),
//!   a sysfs device tree, kernel or process memory, or — where the program
//!   opens its operands — a path it cannot resolve; a recursive reader
//!   (`grep -r`, `rg`) may not start above a device tree (`/`, `/sys`).
//!   See "What a command does" below.
//!
//! ## One shell, modelled
//!
//! A classification is made for one [`Shell`]: dash (Debian's, Ubuntu's
//! and Raspberry Pi OS's `/bin/sh`) or bash. The lexer reads that shell's
//! syntax: under dash `echo $'\'; reboot; echo '\'` runs `reboot`,
//! `[[ x > FILE ]]` truncates FILE, and `((1<<2))` opens a here-document;
//! under bash `((…))` and `$[…]` are arithmetic (so the lines after them
//! are seen). A nested `bash -c` is classified as bash, `dash -c` as dash,
//! and `sh -c` (which may be either, depending on the machine) under both,
//! keeping the worse verdict. Other shells (`zsh -c`, `ksh -c`, `busybox
//! sh -c`) are not modelled: high. The model assumes the environment the
//! shell tool gives: no startup files, `HOME` = the workspace, `PATH`,
//! `LANG`, `LC_ALL`, `TERM`, `PINCER_AGENT` and nothing else.
//!
//! ## What a command does, not how it is spelled
//!
//! Deny rules and hardware detection look at normalised effects (see
//! `paths.rs`): paths with `//`, `.`, `..`, `/proc/self/root/…`, glob
//! patterns (`/dev/[s]da`), working directories changed by `cd`, and the
//! values variables may hold (`x=/; rm -rf $x`, `for f in *.md`) are
//! resolved before they are judged. When the classifier cannot tell, the
//! answer is high, never low.
//!
//! # Classes
//!
//! - **low**: in the safe subset above.
//! - **medium**: writes in the workspace (`cp`, `mkdir`, `git commit`,
//!   `> out.txt`, `sed -i`, `tee file`), `xargs`, `less`/`man`, an option
//!   or construct not known to be harmless, touching hardware.
//! - **high**: deletes (`rm`, `chmod`, `kill`), network, privilege
//!   (`sudo`), arbitrary code (interpreters, `eval`, `source`, `sh
//!   script`, `curl … | sh`, functions, a program name from an expansion or
//!   a workspace path), writes outside the workspace or into startup and
//!   git configuration files, code hidden in arithmetic or subscripts, and
//!   **every program not in the table**. Anything that cannot be parsed is
//!   high.
//! - **denied**: [`DEFAULT_DENY`] program names and the config's
//!   `deny_commands` globs (matched against every program on the line,
//!   wrappers included), recursive deletes or `chmod -R` of `/`, a
//!   top-level system directory or the home directory (also through `cd`,
//!   globs and variables: `cd / && rm -rf *`, `find / -delete`), writes to
//!   disks, memory and the watchdog (`/dev//sda`, `/dev/[s]da`,
//!   `/proc/self/root/dev/sda`, `cd /dev && cat x > sda`, by redirection,
//!   `tee`, `dd of=`, `cp`), power commands (`systemctl reboot`,
//!   `systemctl isolate poweroff.target`), killing every process (`kill -1`,
//!   `kill -KILL -01`, `killall5`), the fork-bomb shape, and denied
//!   commands inside `eval`, `trap`, `alias` and `sh -c` strings.
//!
//! Choices a policy author should know: the empty command (or only
//! comments) is low, since nothing runs; `xargs` and `parallel` are at least
//! medium, because their input chooses the arguments; `awk` is low only when
//! its program has no `system`, `|`, `>`, `@` or `getline` (so a
//! comparison `$3 > 1` is high) and is not read from a file; programs whose
//! options can run code or write (`find`, `sort`, `git`, `sed`, `awk`,
//! `tar`, `rg`…) are high when an argument may expand to an option (`tar cf
//! x.tar *` with a file named `--checkpoint-action=exec=sh`); `set -m`
//! (job control) and `setsid` are high, since the command would leave the
//! tool's process group and the time limit could not stop it; `git` is
//! high when it may run in a directory outside the workspace (`git -C
//! /elsewhere`, after `cd /tmp/x`), whose configuration can run code.
//!
//! # Known limits
//!
//! - It judges what a command *does*, not what it *reads*: `cat
//!   ~/.ssh/id_rsa` is low. Secrecy is the OS sandbox's job.
//! - Configuration the command reads is not followed: `git log` runs
//!   `core.pager` from `.git/config`, `make` runs the Makefile. Writing into
//!   `.git/` or shell startup files is therefore high, but a file written
//!   by an earlier approved step can still change what a later low command
//!   runs; so can a symbolic link made earlier to a device.
//! - Variable values are tracked without regard to order (every value any
//!   assignment gives, plus the one from before); values read at run time
//!   (`read`, substitutions) are unknown, and a command that would open
//!   such a path is medium.
//! - Nesting deeper than [`MAX_DEPTH`] levels of `sh -c` or substitution is
//!   high ("nested too deep"); a command longer than [`MAX_COMMAND_BYTES`]
//!   is high without being parsed (it is still searched word by word for
//!   denied program names), and so is one whose nested shells would need
//!   more work than a fixed multiple of its length.
//! - Aliases in startup files are not seen (the shell tool runs none); an
//!   alias or function defined on the line is high, and its text is
//!   classified, but a function defined elsewhere is just an unknown
//!   program name (high).
//! - Deny rules on a program name see the literal text before an
//!   expansion (`reboot$X`) and match a glob word against each deny name
//!   (`/sbin/reboo?`), but `$(printf reboot)` as a program is only high.
//!
//! Classification takes time linear in the length of the command: every
//! stage reads its input a bounded number of times (see the benchmark in
//! `benches/classify.rs`).

mod braces;
mod classify;
mod glob;
mod lex;
mod paths;
mod programs;
mod risk;
mod scope;
mod split;
mod vars;
mod work;

#[cfg(test)]
mod tests;

pub use crate::risk::Risk;

/// The shell a command is classified for: its syntax, builtins and
/// expansions. A classification holds only for the shell it was made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    /// The Debian Almquist shell, `/bin/sh` on Debian, Ubuntu and
    /// Raspberry Pi OS: POSIX syntax with few extensions.
    #[default]
    Dash,
    /// GNU bash, run without startup files (`--noprofile --norc`).
    Bash,
}

impl Shell {
    pub fn as_str(self) -> &'static str {
        match self {
            Shell::Dash => "dash",
            Shell::Bash => "bash",
        }
    }

    /// Both, dash first.
    pub const ALL: [Shell; 2] = [Shell::Dash, Shell::Bash];
}

impl std::fmt::Display for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How risky one shell command line is, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShellAssessment {
    /// Maximum over all parts; high when in doubt.
    pub risk: Risk,
    /// One sentence naming the part that decided it.
    pub why: String,
    /// The shell this classification is for (it holds for no other).
    pub shell: Shell,
    /// `Some(reason)` when a deny rule matched: blocked at every autonomy
    /// level.
    pub denied: Option<String>,
    /// `Some(what)` when the command touches (or may touch) hardware: a
    /// device node other than the harmless ones, a sysfs device tree, a
    /// path it would open that cannot be resolved, or a program made for
    /// buses, GPIO lines, cameras and sensors (`i2cget`, `gpioset`,
    /// `libcamera-still`…). Such a command is at least medium risk, and
    /// `readonly` blocks it like the hardware tools: a shell must not be
    /// the ungated way to the sensors. Paths are normalised first
    /// (`/dev//i2c-1`, `/dev/"i2c-1"`, `/dev/i2c-*`, `/dev/char/89:1`,
    /// `cd /dev && cat i2c-1`); a link made earlier is not followed (that
    /// is the OS sandbox's job).
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
    "killall5",
];

/// How many levels of `sh -c`, substitution and `find -exec` are followed.
pub const MAX_DEPTH: usize = 8;

/// The longest command classified; a longer one is high ("too long").
pub const MAX_COMMAND_BYTES: usize = 1 << 20;

/// Classifies one shell command line for `shell`. `extra_deny` are globs
/// from config `[policy] deny_commands`, matched against each program's
/// basename.
pub fn classify(command: &str, shell: Shell, extra_deny: &[String]) -> ShellAssessment {
    classify::run(command, shell, extra_deny)
}

/// Where a command's standard input comes from (for `sh` with no script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stdin {
    Inherited,
    Pipe,
    HereDoc,
}
