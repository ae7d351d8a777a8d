//! The per-program table of the shell classifier: what one program with
//! its arguments does, and what it runs in turn when it is a wrapper.
//!
//! A program is low only from an allowlist with its harmless options
//! (`programs/readonly.rs` for read-only tools, `programs/builtins.rs` for
//! shell builtins, `programs/tools.rs` and `programs/git.rs` for programs
//! whose options decide what they do). Anything not named is high
//! ("unknown program; when in doubt, high"). Options are read the GNU way
//! (see `programs/opts.rs`).
//!
//! A rule does not judge the files a program writes or deletes: it lists
//! them as [`Effect`]s, which the classifier resolves against the working
//! directories and variable values it knows (`cd / && rm -rf *`).

use crate::lex::Word;
use crate::paths::Cwds;
use crate::vars::Env;
use crate::{Risk, Shell, Stdin};
use opts::{
    Paths, any_long, any_short, is_option, long_is, may_be_option, operands, opt_values,
    option_width, opts, skip_opts, wrapper_opts,
};

mod builtins;
mod git;
pub(crate) mod opts;
pub(crate) mod readonly;
mod tools;
mod wrappers;

/// What a rule needs to know about where the command runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RuleCx<'a> {
    pub shell: Shell,
    pub stdin: Stdin,
    /// The text of a here-document or here-string on standard input.
    pub stdin_text: Option<&'a str>,
    pub env: &'a Env,
    pub cwds: &'a Cwds,
}

/// Which shell runs a string a command hands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialects {
    /// The shell the command itself runs in (`eval`, `trap`).
    Same,
    /// One named shell (`bash -c`, `dash -c`).
    Only(Shell),
    /// `sh`, which is dash or bash depending on the machine: both, and the
    /// worse verdict counts.
    Both,
}

/// What to classify after a program's own verdict.
pub(crate) enum Then<'w> {
    Done,
    /// A wrapper: these words are the command it runs.
    Run(&'w [Word]),
    /// A shell string it runs, with its `$0`, `$1`… (`None`: unknown).
    Script {
        src: String,
        shells: Dialects,
        args: Option<Vec<Word>>,
    },
    /// Commands it runs per item (`find -exec`), each at least this risk;
    /// a `{}` in them is a path found at run time.
    Each(Vec<&'w [Word]>, Risk, String),
}

/// A file a program changes, for the classifier to resolve and judge.
#[derive(Debug, Clone)]
pub(crate) enum Effect {
    /// Reads it (a file named inside a script, like sed's `r FILE`).
    Read(Word),
    /// Writes it.
    Write(Word),
    /// Deletes it and everything below it.
    RemoveTree(Word, String),
    /// Changes permissions or owners of it and everything below it.
    ChangeTree(Word, String),
}

pub(crate) struct Rule<'w> {
    pub risk: Risk,
    pub why: String,
    pub deny: Option<String>,
    pub then: Then<'w>,
    pub effects: Vec<Effect>,
    /// How the arguments are checked as paths.
    pub paths: Paths,
    /// An argument (by index) that is a pattern or program text, not a
    /// path.
    pub not_path: Option<usize>,
    /// It reads every file below its operands (`grep -r`, `rg`), so an
    /// operand above a hardware tree (`/sys`, `/`) reads hardware.
    pub recursive: bool,
}

impl<'w> Rule<'w> {
    pub(crate) fn new(risk: Risk, why: impl Into<String>) -> Self {
        Rule {
            risk,
            why: why.into(),
            deny: None,
            then: Then::Done,
            effects: Vec::new(),
            paths: Paths::Opened,
            not_path: None,
            recursive: false,
        }
    }

    pub(crate) fn low(why: impl Into<String>) -> Self {
        Rule::new(Risk::Low, why)
    }

    pub(crate) fn medium(why: impl Into<String>) -> Self {
        Rule::new(Risk::Medium, why)
    }

    pub(crate) fn high(why: impl Into<String>) -> Self {
        Rule::new(Risk::High, why)
    }

    pub(crate) fn then(mut self, then: Then<'w>) -> Self {
        self.then = then;
        self
    }

    pub(crate) fn paths(mut self, p: Paths) -> Self {
        self.paths = p;
        self
    }

    /// Raises to `risk` when it is higher.
    pub(crate) fn at_least(mut self, risk: Risk, why: impl Into<String>) -> Self {
        if risk > self.risk {
            self.risk = risk;
            self.why = why.into();
        }
        self
    }

    pub(crate) fn deny(mut self, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        if self.deny.is_none() {
            self.deny = Some(reason.clone());
        }
        self.at_least(Risk::High, reason)
    }

    /// The program writes `w`.
    pub(crate) fn writes(mut self, w: &Word) -> Self {
        self.effects.push(Effect::Write(w.clone()));
        self
    }
}

/// Shells whose syntax is modelled: `sh` may be either.
fn dialects_of(name: &str) -> Option<Dialects> {
    match name {
        "sh" => Some(Dialects::Both),
        "dash" => Some(Dialects::Only(Shell::Dash)),
        "bash" | "rbash" => Some(Dialects::Only(Shell::Bash)),
        _ => None,
    }
}

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "ash", "yash", "posh", "rbash",
    "fish", "csh", "tcsh", "nu", "elvish", "xonsh",
];

const INTERPRETERS: &[&str] = &[
    "perl*",
    "python*",
    "pypy*",
    "ruby*",
    "irb",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php*",
    "lua*",
    "tclsh*",
    "wish*",
    "Rscript",
    "R",
    "julia",
    "java",
    "jshell",
    "osascript",
    "pwsh",
    "powershell",
    "expect",
    "guile*",
    "racket",
    "sbcl",
    "ghci",
    "runghc",
    "scala",
    "kotlin",
    "groovy",
    "swift",
    "dotnet",
    "gdb",
    "lldb",
    "strace",
    "ltrace",
    "valgrind",
];

const EDITORS: &[&str] = &[
    "vi", "vim", "nvim", "gvim", "view", "vimdiff", "ex", "ed", "red", "nano", "pico", "emacs",
    "joe", "micro", "mcedit", "kak", "hx",
];

const NETWORK: &[&str] = &[
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "ssh",
    "scp",
    "sftp",
    "ftp",
    "tftp",
    "telnet",
    "ping",
    "ping6",
    "dig",
    "nslookup",
    "host",
    "traceroute",
    "tracepath",
    "mtr",
    "whois",
    "rsync",
    "aria2c",
    "lftp",
    "ssh-keyscan",
    "nmap",
    "openssl",
    "git-remote-*",
    "mosh",
    "rclone",
    "httpie",
    "http",
    "xh",
];

const PACKAGE_MANAGERS: &[&str] = &[
    "apt",
    "apt-get",
    "apt-cache",
    "aptitude",
    "dpkg",
    "rpm",
    "yum",
    "dnf",
    "zypper",
    "pacman",
    "apk",
    "emerge",
    "brew",
    "port",
    "snap",
    "flatpak",
    "nix",
    "nix-env",
    "nix-shell",
    "pip",
    "pip3",
    "pipx",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "gem",
    "bundle",
    "cargo",
    "go",
    "conda",
    "mamba",
    "poetry",
    "uv",
    "uvx",
    "composer",
    "opkg",
];

const SYSTEM: &[&str] = &[
    "systemctl",
    "service",
    "mount",
    "umount",
    "iptables",
    "ip6tables",
    "nft",
    "ufw",
    "crontab",
    "at",
    "batch",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "groupdel",
    "passwd",
    "chpasswd",
    "chsh",
    "chfn",
    "visudo",
    "insmod",
    "rmmod",
    "modprobe",
    "sysctl",
    "swapon",
    "losetup",
    "ip",
    "ifconfig",
    "route",
    "journalctl",
    "loginctl",
    "timedatectl",
    "hostnamectl",
    "update-alternatives",
    "setcap",
    "chattr",
    "mknod",
    "dmsetup",
    "cryptsetup",
    "busctl",
    "dbus-send",
    "gdbus",
];

const DESTRUCTIVE: &[&str] = &["rmdir", "unlink", "pkill", "killall"];

const WRITERS: &[&str] = &[
    "cp", "mv", "ln", "install", "mkdir", "touch", "truncate", "patch", "mktemp", "split",
    "csplit", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "zip", "unzip",
];

/// Writers with an option that runs a command.
const WRITERS_THAT_RUN: &[(&str, &str, &str)] = &[
    (
        "split",
        "filter",
        "`split --filter` runs a shell command per piece",
    ),
    ("zip", "TT", "`zip -TT` runs a command to test the archive"),
    (
        "zip",
        "unzip-command",
        "`zip --unzip-command` runs a command",
    ),
];

const PAGERS: &[&str] = &["less", "more", "most", "pg", "man", "info"];

/// Programs some of whose options run a program, write a file or change
/// the system: an argument that may turn into an option makes them high.
const OPTION_SENSITIVE: &[&str] = &[
    "find", "sort", "git", "sed", "awk", "gawk", "mawk", "nawk", "tar", "rg", "date", "hostname",
    "less", "more", "man", "file",
];

/// Builtins that run code given to them or change how later code runs.
const CODE_BUILTINS: &[&str] = &[
    "source",
    ".",
    "unalias",
    "enable",
    "shopt",
    "bind",
    "complete",
    "compgen",
    "compopt",
    "fc",
    "history",
    "let",
    "coproc",
    "hash",
    "ulimit",
    "umask",
    "mapfile",
    "readarray",
    "caller",
    "disown",
    "suspend",
    "logout",
    "times",
    "getopts",
];

fn in_table(table: &[&str], name: &str) -> bool {
    table.iter().any(|p| crate::glob::glob_match(p, name))
}

/// The verdict for `name args…`. `name` is already resolved (a basename
/// for `/usr/bin/x`).
pub(crate) fn rule<'w>(name: &str, args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    if OPTION_SENSITIVE.contains(&name)
        && let Some(w) = opts(args).iter().find(|w| may_be_option(w, cx.env))
    {
        return Rule::high(format!(
            "argument `{}` may expand to an option of `{name}` that runs a program or writes a file",
            w.lit
        ));
    }
    if let Some(r) = wrappers::rule(name, args, cx) {
        return r;
    }
    if let Some(r) = builtins::rule(name, args, cx) {
        return r;
    }
    if let Some(r) = tools::rule(name, args, cx) {
        return r;
    }
    if let Some(r) = readonly::rule(name, args, cx) {
        return r;
    }
    match name {
        "rm" => rm(args),
        "chmod" | "chown" | "chgrp" => {
            let mut r = Rule::high(format!("`{name}` changes permissions or ownership"));
            if any_short(args, 'R', "") || any_long(args, "recursive") {
                let takes: &[&str] = &["reference", "from"];
                for t in operands(args, "", takes) {
                    r.effects
                        .push(Effect::ChangeTree(t.clone(), format!("`{name} -R`")));
                }
            }
            r
        }
        "kill" => kill(args),
        "killall5" => Rule::high("`killall5` signals every process")
            .deny("`killall5` signals every process on the machine"),
        "dd" => {
            let mut r = Rule::high("`dd` writes raw data");
            for a in args {
                if a.lit.starts_with("of=") {
                    r = r.writes(&a.slice(3));
                }
            }
            r
        }
        "systemctl" => systemctl(args),
        "loginctl" => {
            let sub = operands(args, "pHMn", &["property", "host", "machine"]);
            match sub.first().map(|w| w.lit.as_str()) {
                Some(s @ ("poweroff" | "reboot" | "halt" | "suspend" | "hibernate" | "kexec")) => {
                    Rule::high("`loginctl` changes the system")
                        .deny(format!("`loginctl {s}` stops or restarts the machine"))
                }
                _ => Rule::high("`loginctl` changes sessions and the system"),
            }
        }
        // Wrappers: unwrap and classify what they run.
        "nohup" => Rule::medium(
            "`nohup` keeps the command running after a hang-up and may write `nohup.out`",
        )
        .then(Then::Run(skip_opts(args, "", &[]))),
        "setsid" => Rule::high(
            "`setsid` detaches from the tool's process group, so the time limit cannot stop it",
        )
        .then(Then::Run(skip_opts(args, "", &[]))),
        "exec" => Rule::high("`exec` replaces the shell (or redirects it for good)")
            .then(Then::Run(skip_opts(args, "a", &[]))),
        "chroot" => {
            let rest = skip_opts(args, "", &["userspec", "groups"]);
            Rule::high("`chroot` runs the command in another root, with privilege")
                .then(Then::Run(rest.get(1..).unwrap_or(&[])))
        }
        "sudo" | "doas" | "pkexec" => sudo(name, args),
        "su" | "runuser" => su(name, args),
        "xargs" => {
            let rest = skip_opts(
                args,
                "adEILnPs",
                &[
                    "arg-file",
                    "delimiter",
                    "eof",
                    "replace",
                    "max-lines",
                    "max-args",
                    "max-procs",
                    "max-chars",
                    "process-slot-var",
                ],
            );
            Rule::medium("`xargs` runs a command whose arguments come from its input")
                .then(Then::Run(rest))
        }
        "parallel" => parallel(args),
        "watch" => {
            let rest = skip_opts(args, "n", &["interval"]);
            let own = wrapper_opts(args, rest);
            let r = Rule::low("`watch` runs the command it is given, repeatedly");
            if any_short(own, 'x', "n") || any_long(own, "exec") {
                r.then(Then::Run(rest))
            } else {
                r.then(Then::Script {
                    src: joined(rest),
                    shells: Dialects::Both,
                    args: Some(Vec::new()),
                })
            }
        }
        "flock" => flock(args),
        "busybox" | "toybox" => match args.first().map(|w| w.lit.as_str()) {
            Some(a) if SHELLS.contains(&a) => Rule::high(format!(
                "`{name} {a}` is a shell whose syntax this classifier does not model"
            )),
            // Its applets are not the GNU programs the tables describe.
            _ => Rule::medium(format!(
                "`{name}` runs its own version of the applet, whose options are not modelled"
            ))
            .then(Then::Run(args)),
        },
        n if SHELLS.contains(&n) => shell(n, args, cx),
        n if PAGERS.contains(&n) => pager(n, args),
        n if WRITERS.contains(&n) => writer(n, args),
        "shred" => {
            let mut r = Rule::high("`shred` overwrites and deletes files");
            for t in operands(
                args,
                "nsu",
                &["iterations", "size", "random-source", "remove"],
            ) {
                r = r.writes(t);
            }
            r
        }
        n if DESTRUCTIVE.contains(&n) => {
            Rule::high(format!("`{n}` deletes files or stops processes"))
        }
        n if EDITORS.contains(&n) => {
            Rule::high(format!("`{n}` is an interactive editor with shell escapes"))
        }
        n if in_table(INTERPRETERS, n) => Rule::high(format!("`{n}` runs arbitrary code")),
        n if in_table(NETWORK, n) => Rule::high(format!("`{n}` talks to the network")),
        n if PACKAGE_MANAGERS.contains(&n) => Rule::high(format!(
            "`{n}` is a package manager: it installs or runs code"
        )),
        n if SYSTEM.contains(&n) => Rule::high(format!("`{n}` changes system configuration")),
        n if CODE_BUILTINS.contains(&n) => {
            Rule::high(format!("`{n}` runs code or changes how later commands run"))
        }
        n => Rule::high(format!("`{n}` is not a known program; when in doubt, high")),
    }
}

/// Words joined with spaces, as `watch` and `parallel` hand them to a shell.
pub(crate) fn joined(ws: &[Word]) -> String {
    ws.iter()
        .map(|w| w.lit.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

// ---- program names and variables -------------------------------------

const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
];

/// The table name for a program word: `/usr/bin/ls` is `ls`; a program
/// from an expansion, a glob, the home directory, the workspace (`./x`,
/// `bin/x`) or any other path is unknown code (`Err` with the reason).
pub(crate) fn resolve(w: &Word) -> Result<String, String> {
    let lit = &w.lit;
    if w.dynamic {
        return Err(format!(
            "the program name `{lit}` comes from an expansion, so what runs is unknown"
        ));
    }
    if lit.is_empty() {
        return Err("the program name is empty".into());
    }
    if w.glob && lit != "[" && lit != "[[" {
        return Err(format!(
            "the program name `{lit}` is a glob pattern, so what runs depends on the files present"
        ));
    }
    if lit.starts_with('~') {
        return Err(format!(
            "`{lit}` is a program from the home directory; its code is unknown"
        ));
    }
    if let Some((dir, base)) = lit.rsplit_once('/') {
        let parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        let clean = !parts.iter().any(|p| *p == "." || *p == "..");
        let dir = format!("/{}", parts.join("/"));
        if lit.starts_with('/') && clean && !base.is_empty() && SYSTEM_DIRS.contains(&dir.as_str())
        {
            return Ok(base.to_string());
        }
        return Err(format!(
            "`{lit}` is a program from the workspace or a non-system path; its code is unknown"
        ));
    }
    Ok(lit.clone())
}

/// Variables whose value changes which code runs or loads: setting one
/// makes the command high.
const DANGEROUS_VARS: &[&str] = &[
    "PATH",
    "*PATH",
    "LD_*",
    "DYLD_*",
    "GIT_*",
    "BASH_ENV",
    "ENV",
    "CDPATH",
    "BASH_FUNC_*",
    "BASH_XTRACEFD",
    "BASH_COMPAT",
    "BASH_ARGV0",
    "*PAGER",
    "*EDITOR",
    "VISUAL",
    "*SHELL",
    "IFS",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "*HOME",
    "XDG_*",
    "*OPT",
    "*OPTS",
    "*OPTIONS",
    "PYTHON*",
    "PERL*",
    "RUBY*",
    "NODE_*",
    "LESS*",
    "MAN*",
    "*ASKPASS",
    "BROWSER",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "EXECIGNORE",
    "*_CONFIG",
    "*CONF",
    "*RC",
    "HOSTALIASES",
    "RESOLV_*",
    "GCONV_*",
    "LOCPATH",
    "NLSPATH",
    "OPENSSL_*",
    "TERMINFO*",
    "npm_config_*",
    "NPM_CONFIG_*",
    "CARGO_*",
    "RUSTC*",
    "RUSTDOC*",
    "CC",
    "CXX",
    "MAKEFLAGS",
    "SSH_*",
    "TMPDIR",
    "POSIXLY_CORRECT",
    "GLIBC_TUNABLES",
    "MALLOC_*",
];

pub(crate) fn dangerous_var(name: &str) -> bool {
    in_table(DANGEROUS_VARS, name)
}

/// Variables the shell itself gives a meaning to (bash and dash), beyond
/// the dangerous ones: assigning one is not in the safe subset.
const SHELL_VARS: &[&str] = &[
    "BASH*",
    "CDPATH",
    "HIST*",
    "histchars",
    "FUNCNEST",
    "OPTARG",
    "OPTIND",
    "OPTERR",
    "MAIL*",
    "TMOUT",
    "TIMEFORMAT",
    "FCEDIT",
    "FIGNORE",
    "HOSTFILE",
    "IGNOREEOF",
    "INPUTRC",
    "COMP*",
    "READLINE_*",
    "PWD",
    "OLDPWD",
    "REPLY",
    "SECONDS",
    "RANDOM",
    "SRANDOM",
    "LINENO",
    "EPOCH*",
    "PIPESTATUS",
    "DIRSTACK",
    "GROUPS",
    "UID",
    "EUID",
    "PPID",
    "SHLVL",
    "COPROC",
    "FUNCNAME",
    "COLUMNS",
    "LINES",
    "PROMPT_DIRTRIM",
    "PS0",
    "EMACS",
    "INSIDE_EMACS",
    "CHILD_MAX",
    "GLOBSORT",
];

/// `NAME=value` in the shell alone is outside the safe subset.
pub(crate) fn special_var(name: &str) -> bool {
    dangerous_var(name) || in_table(SHELL_VARS, name)
}

/// Exporting `NAME` to the programs a command runs is known harmless:
/// names with a lower-case letter (programs read upper-case ones, by
/// convention; the proxy variables are the exception), and the locale,
/// time zone and colour variables.
pub(crate) fn harmless_export(name: &str) -> bool {
    const SAFE: &[&str] = &[
        "LC_*",
        "LANG",
        "LANGUAGE",
        "TZ",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "TERM",
    ];
    if special_var(name) {
        return false;
    }
    (name.chars().any(|c| c.is_ascii_lowercase()) && !name.to_ascii_lowercase().ends_with("_proxy"))
        || in_table(SAFE, name)
}

// ---- destructive programs --------------------------------------------

fn rm(args: &[Word]) -> Rule<'_> {
    let mut r = Rule::high("`rm` deletes files");
    if any_long(args, "no-preserve-root") {
        r = r.deny("`rm --no-preserve-root` may delete the whole file system");
    }
    let recursive =
        any_short(args, 'r', "") || any_short(args, 'R', "") || any_long(args, "recursive");
    if recursive {
        for t in operands(args, "", &[]) {
            r.effects
                .push(Effect::RemoveTree(t.clone(), "`rm -r`".into()));
        }
    }
    r
}

/// A pid argument of `kill` as a number: `-01` is -1.
fn signed(lit: &str) -> Option<i64> {
    let (neg, digits) = match lit.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, lit),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let v: i64 = digits.trim_start_matches('0').parse().unwrap_or(0);
    Some(if neg { -v } else { v })
}

fn kill(args: &[Word]) -> Rule<'_> {
    let r = Rule::high("`kill` stops processes");
    // Options, then pids; the first `-SIG`/`-N` is the signal.
    let mut rest = args;
    let mut signal_given = false;
    while let Some(w) = rest.first() {
        let lit = w.lit.as_str();
        match lit {
            "--" => {
                rest = &rest[1..];
                break;
            }
            "-s" | "-n" | "--signal" | "-q" | "--queue" => {
                rest = rest.get(2..).unwrap_or(&[]);
                signal_given = true;
            }
            "-l" | "-L" | "--list" | "--table" => return Rule::low("`kill -l` lists signals"),
            _ if lit.starts_with('-') && !signal_given && lit.len() > 1 => {
                rest = &rest[1..];
                signal_given = true;
            }
            _ => break,
        }
    }
    for w in rest {
        if w.dynamic {
            continue;
        }
        match signed(&w.lit) {
            Some(-1) => {
                return r.deny(format!(
                    "`kill {}` signals every process the user owns",
                    w.lit
                ));
            }
            Some(v) if v < -1 => {
                return r.at_least(
                    Risk::High,
                    format!("`kill {}` signals a whole process group", w.lit),
                );
            }
            _ => {}
        }
    }
    r
}

fn systemctl(args: &[Word]) -> Rule<'_> {
    let ops = operands(
        args,
        "tpHMns",
        &["type", "property", "host", "machine", "signal"],
    );
    const POWER: &[&str] = &[
        "poweroff",
        "reboot",
        "halt",
        "kexec",
        "emergency",
        "rescue",
        "soft-reboot",
        "suspend",
        "hibernate",
        "hybrid-sleep",
        "suspend-then-hibernate",
        "sleep",
        "exit",
    ];
    const STARTERS: &[&str] = &[
        "isolate",
        "start",
        "restart",
        "reload-or-restart",
        "try-restart",
        "enable",
        "reenable",
        "set-default",
    ];
    let Some(sub) = ops.first() else {
        return Rule::high("`systemctl` changes system services");
    };
    let sub_lit = sub.lit.as_str();
    if POWER.contains(&sub_lit) {
        return Rule::high("`systemctl` changes the system").deny(format!(
            "`systemctl {sub_lit}` stops or restarts the machine"
        ));
    }
    if STARTERS.contains(&sub_lit) {
        for unit in &ops[1..] {
            let u = unit.lit.strip_suffix(".target").unwrap_or(&unit.lit);
            let u = u.strip_suffix(".service").unwrap_or(u);
            if POWER.contains(&u) || matches!(u, "shutdown" | "ctrl-alt-del" | "final") {
                return Rule::high("`systemctl` changes the system").deny(format!(
                    "`systemctl {sub_lit} {}` stops or restarts the machine",
                    unit.lit
                ));
            }
            if unit.dynamic || unit.glob {
                return Rule::high(format!(
                    "`systemctl {sub_lit} {}`: the unit may be one that stops the machine",
                    unit.lit
                ));
            }
        }
    }
    Rule::high("`systemctl` changes system services")
}

// ---- wrappers --------------------------------------------------------

fn sudo<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    let why = format!("`{name}` runs the command with other privileges");
    let rest = match name {
        "sudo" => skip_opts(
            args,
            "ugpCDrtThU",
            &[
                "user",
                "group",
                "host",
                "prompt",
                "close-from",
                "chdir",
                "role",
                "type",
                "command-timeout",
                "other-user",
            ],
        ),
        "doas" => skip_opts(args, "uC", &[]),
        _ => skip_opts(args, "", &["user"]),
    };
    // Only sudo's own options count: `sudo find . -exec` is not `sudo -e`.
    let own = wrapper_opts(args, rest);
    if name == "sudo" && (any_short(own, 'e', "ugpCDrtThU") || any_long(own, "edit")) {
        return Rule::high(why);
    }
    Rule::high(why).then(Then::Run(rest))
}

fn su<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    let why = format!("`{name}` runs commands as another user");
    let cmd = opt_values(args, Some('c'), Some("command"), "sgGwu");
    if let Some(c) = cmd.first() {
        if c.dynamic {
            return Rule::high(format!(
                "{why}, from a command string that comes from an expansion"
            ));
        }
        return Rule::high(why).then(Then::Script {
            src: c.lit.clone(),
            shells: Dialects::Both,
            args: Some(Vec::new()),
        });
    }
    if name == "runuser" && any_short(args, 'u', "sgGw") {
        let rest = skip_opts(
            args,
            "sgGwu",
            &[
                "shell",
                "group",
                "supp-group",
                "whitelist-environment",
                "user",
            ],
        );
        return Rule::high(why).then(Then::Run(rest));
    }
    Rule::high(format!("{why} (an interactive shell)"))
}

fn parallel(args: &[Word]) -> Rule<'_> {
    let safe_flags = [
        "-k",
        "--keep-order",
        "-0",
        "--null",
        "--will-cite",
        "-v",
        "--verbose",
        "--bar",
        "-q",
        "--quote",
        "--dry-run",
        "--dryrun",
    ];
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if !is_option(w) {
            break;
        }
        if lit == "-j" || lit == "-P" || lit == "--jobs" {
            i += 2;
        } else if lit.starts_with("-j") || lit.starts_with("--jobs=") || safe_flags.contains(&lit) {
            i += 1;
        } else {
            return Rule::high(format!(
                "`parallel {lit}` is an option this classifier does not follow (remote hosts, output files)"
            ));
        }
    }
    let rest = args.get(i..).unwrap_or(&[]);
    let end = rest
        .iter()
        .position(|w| w.lit.starts_with(":::"))
        .unwrap_or(rest.len());
    if end == 0 {
        return Rule::high(
            "`parallel` without a command runs the commands it reads from its input",
        );
    }
    Rule::medium("`parallel` runs a shell command whose arguments come from its input").then(
        Then::Script {
            src: joined(&rest[..end]),
            shells: Dialects::Both,
            args: None,
        },
    )
}

fn flock(args: &[Word]) -> Rule<'_> {
    let takes_short = "wEc";
    let takes_long = ["timeout", "conflict-exit-code", "command"];
    let cmd = opt_values(args, Some('c'), Some("command"), "wE");
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if !is_option(w) || w.lit == "--" {
            break;
        }
        i += option_width(&w.lit, takes_short, &takes_long);
    }
    if args.get(i).is_some_and(|w| w.lit == "--") {
        i += 1;
    }
    let Some(file) = args.get(i) else {
        return Rule::high("`flock` without a lock file is not understood");
    };
    let fd = !file.dynamic && file.lit.chars().all(|c| c.is_ascii_digit());
    let mut r = if fd {
        Rule::low("`flock` locks an open descriptor")
    } else {
        Rule::medium(format!("`flock` may create the lock file `{}`", file.lit)).writes(file)
    };
    let mut rest = &args[i + 1..];
    let script = |s: &Word| Then::Script {
        src: s.lit.clone(),
        shells: Dialects::Both,
        args: Some(Vec::new()),
    };
    if let Some(first) = rest.first()
        && (first.lit == "-c" || long_is(&first.lit, "command"))
    {
        let s = rest
            .get(1)
            .cloned()
            .or_else(|| cmd.first().cloned())
            .unwrap_or_default();
        if s.dynamic {
            return r.at_least(
                Risk::High,
                "the `flock -c` command string comes from an expansion",
            );
        }
        return r.then(script(&s));
    }
    if let Some(c) = cmd.first() {
        if c.dynamic {
            return r.at_least(
                Risk::High,
                "the `flock -c` command string comes from an expansion",
            );
        }
        return r.then(script(c));
    }
    if rest.first().is_some_and(|w| w.lit == "--") {
        rest = &rest[1..];
    }
    r = r.then(Then::Run(rest));
    r
}

/// `set -o NAME` options that change nothing the classifier models.
pub(crate) const HARMLESS_SET_O: &[&str] = &[
    "errexit",
    "nounset",
    "pipefail",
    "xtrace",
    "verbose",
    "noglob",
    "noclobber",
    "notify",
    "hashall",
    "errtrace",
    "functrace",
    "noexec",
    "physical",
];

/// `sh`, `bash`… as a program.
fn shell<'w>(name: &str, args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    let mut command = false;
    let mut i = 0;
    let mut opts_seen: Vec<&str> = Vec::new();
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if lit == "--" || lit == "-" {
            i += 1;
            break;
        }
        if !(lit.starts_with('-') || lit.starts_with('+')) || lit.len() < 2 {
            break;
        }
        if lit.starts_with("--") {
            if long_is(lit, "rcfile") || long_is(lit, "init-file") {
                return Rule::high(format!("`{name} {lit}` runs a startup file"));
            }
            opts_seen.push(lit);
            i += 1;
            continue;
        }
        let flags = &lit[1..];
        if flags.contains('c') {
            command = true;
        }
        let next = args.get(i + 1).map_or("", |w| w.lit.as_str());
        if (lit.starts_with('-') && flags.contains('m'))
            || (flags.ends_with('o') && next == "monitor")
        {
            return Rule::high(format!(
                "`{name} {lit}` turns on job control: background commands leave the tool's process group, so the time limit cannot stop them"
            ));
        }
        if flags.ends_with('o') || flags.ends_with('O') {
            let name = next;
            if !HARMLESS_SET_O.contains(&name) {
                opts_seen.push(lit);
            }
            opts_seen.push(&lit[..lit.len() - 1]);
            i += 2;
        } else {
            opts_seen.push(lit);
            i += 1;
        }
    }
    let rest = args.get(i..).unwrap_or(&[]);
    let Some(dialects) = dialects_of(name) else {
        return Rule::high(format!(
            "`{name}` is a shell whose syntax this classifier does not model"
        ));
    };
    if command {
        return match rest.first() {
            None => Rule::high(format!("`{name} -c` without a command string")),
            Some(s) if s.dynamic => Rule::high(format!(
                "`{name} -c` runs a command string that comes from an expansion (`{}`)",
                s.lit
            )),
            Some(s) => {
                // Only options that change nothing the classifier models
                // keep it low: `-e`, `-u`, `-x`, `-o pipefail`… A login or
                // interactive shell (`-l`, `-i`) reads startup files, here
                // the workspace's own `~/.profile`.
                let mut r = Rule::low(format!("`{name} -c` runs the string it is given"));
                if let Some(o) = opts_seen.iter().find(|o| {
                    let set = o.trim_start_matches(['-', '+']);
                    !(set.chars().all(|c| "cefuvxC".contains(c))
                        || matches!(**o, "--noprofile" | "--norc"))
                }) {
                    r = r.at_least(
                        Risk::Medium,
                        format!("`{name} {o}` is not an option known to be harmless"),
                    );
                }
                r.then(Then::Script {
                    src: s.lit.clone(),
                    shells: dialects,
                    args: Some(rest[1..].to_vec()),
                })
            }
        };
    }
    if let Some(script) = rest.first() {
        return Rule::high(format!(
            "`{name} {}` runs a script whose code is not classified",
            script.lit
        ));
    }
    match (cx.stdin, cx.stdin_text) {
        // The script is right there: classified too (a denied command in it
        // is denied), though code read from input stays high.
        (Stdin::HereDoc, Some(text)) => {
            Rule::high(format!("`{name}` runs code from a here-document")).then(Then::Script {
                src: text.to_string(),
                shells: dialects,
                args: Some(Vec::new()),
            })
        }
        (Stdin::Pipe, _) => Rule::high(format!("`{name}` runs code read from a pipe")),
        (Stdin::HereDoc, None) => Rule::high(format!("`{name}` runs code from a here-document")),
        (Stdin::Inherited, _) => {
            Rule::high(format!("`{name}` runs code read from its standard input"))
        }
    }
}

fn pager<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    if args.iter().any(|w| w.lit.starts_with('+')) {
        return Rule::high(format!("`{name} +CMD` runs a command at start"));
    }
    if name == "man"
        && (any_short(args, 'P', "MSsmLeCRr")
            || any_short(args, 'H', "MSsmLeCRrP")
            || any_short(args, 'C', "MSsmLeRrP")
            || any_long(args, "pager")
            || any_long(args, "html")
            || any_long(args, "preprocessor")
            || any_long(args, "config-file")
            || any_short(args, 'l', "MSsmLeCRrP"))
    {
        return Rule::high(
            "`man` with a pager, browser, configuration or local file runs what it is told",
        );
    }
    Rule::medium(format!(
        "`{name}` is read-only, but an interactive pager can run a shell through `!`"
    ))
}

fn writer<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    for (prog, opt, why) in WRITERS_THAT_RUN {
        if *prog == name && (any_long(args, opt) || args.iter().any(|w| w.lit == format!("-{opt}")))
        {
            return Rule::high(*why);
        }
    }
    let mut r = Rule::medium(format!("`{name}` writes files"));
    let (takes, long): (&str, &[&str]) = match name {
        "cp" | "mv" | "ln" => ("tS", &["target-directory", "suffix"]),
        "install" => (
            "tSmog",
            &["target-directory", "suffix", "mode", "owner", "group"],
        ),
        "mkdir" => ("m", &["mode", "context"]),
        "touch" => ("dtr", &["date", "reference"]),
        "truncate" => ("sr", &["size", "reference"]),
        _ => return r,
    };
    let ops = operands(args, takes, long);
    let targets: Vec<Word> = match name {
        "cp" | "mv" | "ln" | "install" => {
            let t = opt_values(args, Some('t'), Some("target-directory"), takes);
            if t.is_empty() {
                ops.last().map(|w| (*w).clone()).into_iter().collect()
            } else {
                t
            }
        }
        _ => ops.into_iter().cloned().collect(),
    };
    for t in &targets {
        r = r.writes(t);
    }
    r
}
