//! The per-program table of the shell classifier: what one program with
//! its arguments does, and what it runs in turn when it is a wrapper.
//!
//! Anything not named here is high ("unknown program; when in doubt,
//! high"). Options are read the GNU way: options may follow operands,
//! `--` ends them, short options cluster (`-rf`) and long options may be
//! abbreviated (`--compress-prog` is `--compress-program`).

use super::Stdin;
use super::lex::Word;
use crate::Risk;
use crate::glob::glob_match;
use tools::{awk, find, git, sed, sort, tar};

mod tools;

/// What to classify after a program's own verdict.
pub(super) enum Then<'w> {
    Done,
    /// A wrapper: these words are the command it runs.
    Run(&'w [Word]),
    /// A shell string it runs (`sh -c STRING`, `su -c`, `watch`).
    Script(String),
    /// Commands it runs per item (`find -exec`), each at least this risk.
    Each(Vec<&'w [Word]>, Risk, String),
}

pub(super) struct Rule<'w> {
    pub risk: Risk,
    pub why: String,
    pub deny: Option<String>,
    pub then: Then<'w>,
}

impl<'w> Rule<'w> {
    fn new(risk: Risk, why: impl Into<String>) -> Self {
        Rule {
            risk,
            why: why.into(),
            deny: None,
            then: Then::Done,
        }
    }

    fn low(why: impl Into<String>) -> Self {
        Rule::new(Risk::Low, why)
    }

    fn medium(why: impl Into<String>) -> Self {
        Rule::new(Risk::Medium, why)
    }

    fn high(why: impl Into<String>) -> Self {
        Rule::new(Risk::High, why)
    }

    fn then(mut self, then: Then<'w>) -> Self {
        self.then = then;
        self
    }

    /// Raises to `risk` when it is higher.
    fn at_least(mut self, risk: Risk, why: impl Into<String>) -> Self {
        if risk > self.risk {
            self.risk = risk;
            self.why = why.into();
        }
        self
    }

    fn deny(mut self, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        if self.deny.is_none() {
            self.deny = Some(reason.clone());
        }
        self.at_least(Risk::High, reason)
    }

    /// Folds in the verdict on a file the program writes.
    fn writes(mut self, w: &Word) -> Self {
        match write_target(w) {
            Target::Harmless => self,
            Target::Risk(r, why) => self.at_least(r, why),
            Target::Deny(why) => {
                self = self.deny(why.clone());
                self
            }
        }
    }
}

/// Read-only programs with no option that runs a program or writes a file.
const LOW: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "echo",
    "pwd",
    "whoami",
    "id",
    "uname",
    "stat",
    "du",
    "df",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "which",
    "type",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "sha256sum",
    "sha1sum",
    "sha224sum",
    "sha384sum",
    "sha512sum",
    "md5sum",
    "b2sum",
    "cksum",
    "jq",
    "ps",
    "free",
    "uptime",
    "seq",
    "nl",
    "true",
    "false",
    "column",
    "fold",
    "expand",
    "unexpand",
    "od",
    "hexdump",
    "strings",
    "tac",
    "rev",
    "paste",
    "join",
    "fmt",
    "printenv",
    "cd",
    "pushd",
    "popd",
    "dirs",
    ":",
    "exit",
    "return",
    "break",
    "continue",
    "shift",
    "wait",
    "jobs",
    "unset",
];

/// Programs some of whose options run a program or write a file: an
/// argument from an expansion or an unquoted glob may become such an option.
const OPTION_SENSITIVE: &[&str] = &[
    "find", "sort", "git", "sed", "awk", "gawk", "mawk", "nawk", "tar", "rg", "tree", "uniq",
    "xxd", "date", "hostname", "less", "more", "man", "file",
];

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "ash", "yash", "posh", "rbash", "fish",
    "csh", "tcsh",
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
];

const DESTRUCTIVE: &[&str] = &["rmdir", "shred", "unlink", "pkill", "killall"];

const WRITERS: &[&str] = &[
    "cp", "mv", "ln", "install", "mkdir", "touch", "truncate", "patch", "mktemp", "split",
    "csplit", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "zip", "unzip",
];

const PAGERS: &[&str] = &["less", "more", "most", "pg", "man", "info"];

/// Builtins that run code given to them or change how later code runs.
const CODE_BUILTINS: &[&str] = &[
    "eval",
    "source",
    ".",
    "alias",
    "unalias",
    "trap",
    "enable",
    "shopt",
    "bind",
    "complete",
    "compgen",
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
    table.iter().any(|p| glob_match(p, name))
}

/// The verdict for `name args…`. `name` is already resolved (a basename
/// for `/usr/bin/x`).
pub(super) fn rule<'w>(name: &str, args: &'w [Word], stdin: Stdin) -> Rule<'w> {
    if OPTION_SENSITIVE.contains(&name)
        && let Some(w) = opts(args).iter().find(|w| w.dynamic || w.glob)
    {
        return Rule::high(format!(
            "argument `{}` may expand to an option of `{name}` that runs a program or writes a file",
            w.lit
        ));
    }
    match name {
        "find" => find(args),
        "sort" => sort(args),
        "git" => git(args),
        "sed" => sed(args),
        "awk" | "gawk" | "mawk" | "nawk" => awk(name, args),
        "tar" => tar(args),
        "rg" => {
            if any_long(args, "pre") || any_long(args, "hostname-bin") {
                Rule::high("`rg --pre`/`--hostname-bin` runs a program")
            } else {
                Rule::low("`rg` only reads")
            }
        }
        "tree" => {
            let mut r = Rule::low("`tree` only reads");
            for v in opt_values(args, Some('o'), None, "LPIH") {
                r = r
                    .at_least(Risk::Medium, "`tree -o` writes a file")
                    .writes(&v);
            }
            r
        }
        "uniq" | "xxd" => {
            let takes = if name == "uniq" { "fsw" } else { "cglosn" };
            let ops = operands(args, takes, &[]);
            let mut r = Rule::low(format!("`{name}` only reads"));
            if let Some(out) = ops.get(1) {
                r = r
                    .at_least(Risk::Medium, format!("`{name}` writes its second operand"))
                    .writes(out);
            }
            r
        }
        "date" => {
            if any_short(args, 's', "dfrI") || any_long(args, "set") {
                Rule::high("`date -s` sets the system clock")
            } else {
                Rule::low("`date` only reads")
            }
        }
        "hostname" => {
            if !operands(args, "F", &["file"]).is_empty()
                || any_short(args, 'F', "")
                || any_long(args, "file")
            {
                Rule::high("`hostname NAME` sets the host name")
            } else {
                Rule::low("`hostname` only reads")
            }
        }
        "file" => {
            if any_short(args, 'C', "mfFeP") || any_long(args, "compile") {
                Rule::medium("`file -C` writes a compiled magic file")
            } else {
                Rule::low("`file` only reads")
            }
        }
        "printf" => printf(args),
        "read" => {
            let names = operands(args, "adinNptu", &[]);
            match names.iter().find(|w| dangerous_var(&w.lit)) {
                Some(w) => Rule::high(format!(
                    "`read {}` sets a variable that changes what programs run",
                    w.lit
                )),
                None => Rule::low("`read` only reads its input into variables"),
            }
        }
        "export" | "declare" | "typeset" | "local" | "readonly" => declare(name, args),
        "set" => Rule::low("`set` changes shell options or lists variables"),
        "test" | "[" | "[[" => test(name, args),
        "env" => env(args),
        "tee" => {
            let mut r = Rule::low("`tee` copies its input to standard output");
            for f in operands(args, "", &["output-error"]) {
                r = r.at_least(Risk::Medium, "`tee` writes files").writes(f);
            }
            r
        }
        "rm" => rm(args),
        "chmod" | "chown" | "chgrp" => {
            let mut r = Rule::high(format!("`{name}` changes permissions or ownership"));
            if any_short(args, 'R', "") || any_long(args, "recursive") {
                let takes: &[&str] = &["reference", "from"];
                if let Some(t) = operands(args, "", takes).into_iter().find(|w| rootish(w)) {
                    r = r.deny(format!(
                        "`{name} -R` on `{}` changes a whole system or home tree",
                        t.lit
                    ));
                }
            }
            r
        }
        "kill" => kill(args),
        "dd" => {
            let mut r = Rule::high("`dd` writes raw data");
            for a in args {
                if let Some(of) = a.lit.strip_prefix("of=") {
                    r = r.writes(&Word::derived(of, a));
                }
            }
            r
        }
        "systemctl" => {
            let sub = operands(args, "tpHMn", &["type", "property", "host", "machine"]);
            let power = [
                "poweroff",
                "reboot",
                "halt",
                "kexec",
                "emergency",
                "rescue",
                "soft-reboot",
            ];
            match sub.first() {
                Some(s) if power.contains(&s.lit.as_str()) => {
                    Rule::high("`systemctl` changes the system").deny(format!(
                        "`systemctl {}` stops or restarts the machine",
                        s.lit
                    ))
                }
                _ => Rule::high("`systemctl` changes system services"),
            }
        }
        // Wrappers: unwrap and classify what they run.
        "time" => {
            let mut r = Rule::low("`time` runs the command it is given");
            for v in opt_values(args, Some('o'), Some("output"), "f") {
                r = r
                    .at_least(Risk::Medium, "`time -o` writes a file")
                    .writes(&v);
            }
            r.then(Then::Run(skip_opts(args, "fo", &["format", "output"])))
        }
        "nice" => Rule::low("`nice` runs the command it is given").then(Then::Run(skip_opts(
            args,
            "n",
            &["adjustment"],
        ))),
        "ionice" => {
            let rest = skip_opts(args, "cnpPu", &["class", "classdata", "pid", "pgid", "uid"]);
            if rest.is_empty() && (any_short(args, 'p', "cn") || any_short(args, 'P', "cn")) {
                Rule::medium("`ionice -p` changes another process")
            } else {
                Rule::low("`ionice` runs the command it is given").then(Then::Run(rest))
            }
        }
        "nohup" => Rule::medium(
            "`nohup` keeps the command running after a hang-up and may write `nohup.out`",
        )
        .then(Then::Run(skip_opts(args, "", &[]))),
        "timeout" => {
            let rest = skip_opts(args, "sk", &["signal", "kill-after"]);
            Rule::low("`timeout` runs the command it is given")
                .then(Then::Run(rest.get(1..).unwrap_or(&[])))
        }
        "stdbuf" => Rule::low("`stdbuf` runs the command it is given").then(Then::Run(skip_opts(
            args,
            "ioe",
            &["input", "output", "error"],
        ))),
        "setsid" => Rule::high(
            "`setsid` detaches from the tool's process group, so the time limit cannot stop it",
        )
        .then(Then::Run(skip_opts(args, "", &[]))),
        "command" | "builtin" => {
            let own = wrapper_opts(args, skip_opts(args, "", &[]));
            if name == "command" && (any_short(own, 'v', "") || any_short(own, 'V', "")) {
                Rule::low("`command -v` only looks a name up")
            } else {
                Rule::low(format!("`{name}` runs the command it is given"))
                    .then(Then::Run(skip_opts(args, "", &[])))
            }
        }
        "exec" => Rule::high("`exec` replaces the shell (or redirects it for good)")
            .then(Then::Run(skip_opts(args, "a", &[]))),
        "chroot" => {
            let rest = skip_opts(args, "", &["userspec", "groups"]);
            Rule::high("`chroot` runs the command in another root, with privilege")
                .then(Then::Run(rest.get(1..).unwrap_or(&[])))
        }
        "sudo" | "doas" | "pkexec" => {
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
            // Only sudo's own options count: `sudo find . -exec` is not
            // `sudo -e`.
            let own = wrapper_opts(args, rest);
            if name == "sudo" && (any_short(own, 'e', "ugpCDrtThU") || any_long(own, "edit")) {
                return Rule::high(why);
            }
            Rule::high(why).then(Then::Run(rest))
        }
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
                r.then(Then::Script(super::joined(rest)))
            }
        }
        "flock" => flock(args),
        "busybox" | "toybox" => {
            Rule::low(format!("`{name}` runs the applet it is given")).then(Then::Run(args))
        }
        n if SHELLS.contains(&n) => shell(n, args, stdin),
        n if LOW.contains(&n) => Rule::low(format!("`{n}` only reads")),
        n if PAGERS.contains(&n) => pager(n, args),
        n if WRITERS.contains(&n) => writer(n, args),
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

// ---- option helpers --------------------------------------------------

/// Arguments before a literal `--`: the ones that may be options.
fn opts(args: &[Word]) -> &[Word] {
    let end = args
        .iter()
        .position(|w| w.lit == "--")
        .unwrap_or(args.len());
    &args[..end]
}

/// `lit` is `--name[=v]` and `--name` abbreviates `--full`.
fn long_is(lit: &str, full: &str) -> bool {
    lit.strip_prefix("--")
        .map(|r| r.split('=').next().unwrap_or(""))
        .is_some_and(|n| !n.is_empty() && full.starts_with(n))
}

/// `lit` is a short cluster (`-xyz`) holding `c` before any option that
/// takes a value (`takes`), whose value would be the rest.
fn short_has(lit: &str, c: char, takes: &str) -> bool {
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

fn any_short(args: &[Word], c: char, takes: &str) -> bool {
    opts(args).iter().any(|w| short_has(&w.lit, c, takes))
}

fn any_long(args: &[Word], full: &str) -> bool {
    opts(args).iter().any(|w| long_is(&w.lit, full))
}

/// Values given to `-c VALUE`/`-cVALUE` or `--long=VALUE`/`--long VALUE`.
/// `takes` lists the other short options that take a value.
fn opt_values(args: &[Word], short: Option<char>, long: Option<&str>, takes: &str) -> Vec<Word> {
    let o = opts(args);
    let mut out = Vec::new();
    let mut i = 0;
    while i < o.len() {
        let w = &o[i];
        if let Some(rest) = w.lit.strip_prefix("--") {
            if let Some(full) = long {
                let (n, v) = match rest.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (rest, None),
                };
                if !n.is_empty() && full.starts_with(n) {
                    match v {
                        Some(v) => out.push(Word::derived(v, w)),
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
                        out.push(Word::derived(tail, w));
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
fn option_width(lit: &str, takes_short: &str, takes_long: &[&str]) -> usize {
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

fn is_option(w: &Word) -> bool {
    w.lit.len() > 1 && w.lit.starts_with('-')
}

/// Non-option arguments (options may follow operands, GNU style).
fn operands<'w>(args: &'w [Word], takes_short: &str, takes_long: &[&str]) -> Vec<&'w Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
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

/// A wrapper's options, up to the first operand: returns the words from
/// there (the wrapped command).
/// A wrapper's own options: the words of `args` before `rest`, the
/// command it runs (as [`skip_opts`] found it).
fn wrapper_opts<'w>(args: &'w [Word], rest: &[Word]) -> &'w [Word] {
    &args[..args.len().saturating_sub(rest.len())]
}

fn skip_opts<'w>(args: &'w [Word], takes_short: &str, takes_long: &[&str]) -> &'w [Word] {
    let mut i = 0;
    while let Some(w) = args.get(i) {
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

// ---- program names, variables, write targets -------------------------

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
pub(super) fn resolve(w: &Word) -> Result<String, String> {
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
    "BASH_FUNC_*",
    "*PAGER",
    "*EDITOR",
    "VISUAL",
    "*SHELL",
    "IFS",
    "PS1",
    "PS2",
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
    "*_CONFIG",
    "*CONF",
    "*RC",
    "HOSTALIASES",
    "RESOLV_*",
    "GCONV_*",
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
];

pub(super) fn dangerous_var(name: &str) -> bool {
    in_table(DANGEROUS_VARS, name)
}

/// What writing a file does.
pub(super) enum Target {
    Harmless,
    Risk(Risk, String),
    Deny(String),
}

/// Lexically normalised components of an absolute path (`..` stops at `/`).
fn components(path: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

const BLOCK_DEVICES: &[&str] = &[
    "sd*", "hd*", "vd*", "xvd*", "nvme*", "mmcblk*", "loop*", "md*", "dm-*", "sr*", "mtd*", "ubi*",
    "nbd*", "rbd*", "mem", "kmem", "port", "root", "disk", "mapper", "zram*",
];

const STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".inputrc",
    ".gitconfig",
    ".gitattributes",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".envrc",
    ".pam_environment",
    ".wgetrc",
    ".curlrc",
    ".lesskey",
    ".vimrc",
    ".exrc",
    ".pincer",
];

/// The verdict on a file a command writes.
pub(super) fn write_target(w: &Word) -> Target {
    let lit = w.lit.as_str();
    if w.dynamic {
        return Target::Risk(
            Risk::High,
            format!("writes to `{lit}`, a path that comes from an expansion"),
        );
    }
    if lit.starts_with('~') {
        return Target::Risk(Risk::High, format!("writes `{lit}`, outside the workspace"));
    }
    if lit.starts_with('/') {
        let c = components(lit);
        let path = format!("/{}", c.join("/"));
        if matches!(
            path.as_str(),
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/zero"
        ) || (c.len() == 3 && c[0] == "dev" && c[1] == "fd")
        {
            return Target::Harmless;
        }
        if c.len() >= 2 && c[0] == "dev" && in_table(BLOCK_DEVICES, c[1]) {
            return Target::Deny(format!("writes the block device or memory `{path}`"));
        }
        if path == "/proc/sysrq-trigger" {
            return Target::Deny("writes `/proc/sysrq-trigger`, which can halt the machine".into());
        }
        if matches!(c.first(), Some(&("dev" | "proc" | "sys"))) {
            return Target::Risk(
                Risk::High,
                format!("writes the device or kernel file `{path}`"),
            );
        }
        if matches!(c.first(), Some(&"tmp")) || c.starts_with(&["var", "tmp"]) {
            return Target::Risk(Risk::Medium, format!("writes `{path}`"));
        }
        return Target::Risk(
            Risk::High,
            format!("writes `{path}`, outside the workspace"),
        );
    }
    let parts: Vec<&str> = lit.split('/').collect();
    if parts.contains(&"..") {
        return Target::Risk(
            Risk::High,
            format!("writes `{lit}`, which may be outside the workspace"),
        );
    }
    if parts
        .iter()
        .any(|p| *p == ".git" || *p == ".ssh" || *p == ".config")
    {
        return Target::Risk(
            Risk::High,
            format!("writes `{lit}`, configuration that runs code later (hooks, pagers, keys)"),
        );
    }
    if parts.iter().any(|p| STARTUP_FILES.contains(p)) {
        return Target::Risk(
            Risk::High,
            format!("writes `{lit}`, a startup or configuration file that runs code later"),
        );
    }
    Target::Risk(Risk::Medium, format!("writes `{lit}`"))
}

/// A path whose recursive removal or `chmod -R` wrecks the system or the
/// home directory: `/`, `/*`, any top-level directory, `/usr/lib`-like
/// second levels, `~`, `$HOME`.
fn rootish(w: &Word) -> bool {
    let mut lit = w.lit.as_str();
    let home;
    for prefix in ["$HOME", "${HOME}"] {
        if let Some(rest) = lit.strip_prefix(prefix) {
            home = format!("~{rest}");
            lit = home.as_str();
            break;
        }
    }
    if let Some(rest) = lit.strip_prefix('~') {
        // `~`, `~/`, `~/*`, `~user`: the whole home directory.
        let (user, path) = rest.split_once('/').unwrap_or((rest, ""));
        let c = components(path);
        return user.chars().all(|ch| ch != '$')
            && (c.is_empty() || (c.len() == 1 && c[0].chars().all(|ch| "*?.".contains(ch))));
    }
    if !lit.starts_with('/') || w.dynamic && !lit.starts_with("/$") && lit.contains('$') {
        return false;
    }
    let c = components(lit);
    const SYSTEM_TOP: &[&str] = &[
        "usr", "etc", "home", "boot", "var", "bin", "sbin", "lib", "lib32", "lib64", "opt", "root",
        "srv",
    ];
    match c.as_slice() {
        [] | [_] => true,
        [top, _] => SYSTEM_TOP.contains(top) || top.contains(['*', '?']),
        _ => false,
    }
}

// ---- programs --------------------------------------------------------

fn rm(args: &[Word]) -> Rule<'_> {
    let mut r = Rule::high("`rm` deletes files");
    if any_long(args, "no-preserve-root") {
        r = r.deny("`rm --no-preserve-root` may delete the whole file system");
    }
    let recursive =
        any_short(args, 'r', "") || any_short(args, 'R', "") || any_long(args, "recursive");
    if recursive && let Some(t) = operands(args, "", &[]).into_iter().find(|w| rootish(w)) {
        r = r.deny(format!(
            "`rm -r` on `{}` deletes a whole system or home tree",
            t.lit
        ));
    }
    r
}

fn kill(args: &[Word]) -> Rule<'_> {
    let r = Rule::high("`kill` stops processes");
    // The first `-SIG`/`-N` is the signal; a later `-1` is "every process".
    let mut rest = args;
    match rest.first().map(|w| w.lit.as_str()) {
        Some("-s" | "-n") => rest = rest.get(2..).unwrap_or(&[]),
        Some("--") => rest = &rest[1..],
        Some(s) if s.starts_with('-') => rest = &rest[1..],
        _ => {}
    }
    if rest.iter().any(|w| w.lit == "-1") {
        return r.deny("`kill -1` signals every process the user owns");
    }
    r
}

fn printf(args: &[Word]) -> Rule<'_> {
    match args.first() {
        Some(w) if w.dynamic => Rule::high(format!(
            "argument `{}` may expand to `printf -v`, which sets a variable",
            w.lit
        )),
        Some(w) if w.lit.starts_with("-v") => {
            let name = if w.lit == "-v" {
                args.get(1).map(|n| n.lit.as_str()).unwrap_or("")
            } else {
                &w.lit[2..]
            };
            if dangerous_var(name) || name.contains('[') {
                Rule::high(format!(
                    "`printf -v {name}` sets a variable that changes what runs"
                ))
            } else {
                Rule::low("`printf` only prints or sets a variable")
            }
        }
        _ => Rule::low("`printf` only prints"),
    }
}

fn declare<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    if any_short(args, 'f', "") {
        return Rule::high(format!("`{name} -f` exports or changes shell functions"));
    }
    if any_short(args, 'n', "") {
        return Rule::high(format!(
            "`{name} -n` makes a name reference, through which any variable can be set"
        ));
    }
    for w in args.iter().filter(|w| !is_option(w)) {
        let var = w.lit.split(['=', '[']).next().unwrap_or("");
        if dangerous_var(var) || w.lit.contains("$(") || w.lit.contains('`') {
            return Rule::high(format!(
                "`{name} {}` sets a variable that changes what programs run",
                w.lit
            ));
        }
    }
    Rule::low(format!("`{name}` only sets variables"))
}

/// `test`/`[`/`[[`: read-only, except that `-v` and (in `[[`) arithmetic
/// comparisons evaluate array subscripts, and bash runs a `$( … )` found
/// in one (`[[ 'a[$(id)]' -eq 1 ]]`).
fn test<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    let arith = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
    let evaluates = args.iter().any(|w| {
        w.lit == "-v"
            || (name == "[[" && arith.contains(&w.lit.as_str()))
            // An unquoted expansion may split into `-v NAME`.
            || (name != "[[" && w.dynamic && !w.quoted)
    });
    let hidden = args.iter().any(|w| {
        (name == "[[" && w.dynamic)
            || w.lit.contains("$(")
            || w.lit.contains('`')
            || w.lit.contains('[')
    });
    if evaluates && hidden {
        Rule::high(format!(
            "`{name}` evaluates an array subscript or arithmetic whose text may run a command"
        ))
    } else {
        Rule::low(format!("`{name}` only tests"))
    }
}

fn env(args: &[Word]) -> Rule<'_> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if lit == "--" {
            i += 1;
            break;
        }
        if lit == "-" || !lit.starts_with('-') {
            break;
        }
        if short_has(lit, 'S', "uC") || long_is(lit, "split-string") {
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
            return Rule::low("`env -S` splits a string into a command").then(Then::Script(script));
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
            if !known_long.iter().any(|l| long_is(lit, l)) {
                return Rule::high(format!(
                    "`env {lit}` is an option this classifier does not know"
                ));
            }
        } else if lit[1..].chars().any(|c| !"i0uCv".contains(c)) {
            return Rule::high(format!(
                "`env {lit}` is an option this classifier does not know"
            ));
        }
        i += option_width(lit, "uC", &["unset", "chdir"]);
    }
    let rest = args.get(i..).unwrap_or(&[]);
    let program = rest.iter().find(|w| w.assignment().is_none());
    if program.is_none() {
        // Only assignments (checked by the caller) and no command.
        return Rule::low("`env` only prints the environment").then(Then::Run(rest));
    }
    Rule::low("`env` runs the command it is given").then(Then::Run(rest))
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
        return Rule::high(why).then(Then::Script(c.lit.clone()));
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
    Rule::medium("`parallel` runs a shell command whose arguments come from its input")
        .then(Then::Script(super::joined(&rest[..end])))
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
        return r.then(Then::Script(s.lit));
    }
    if let Some(c) = cmd.first() {
        if c.dynamic {
            return r.at_least(
                Risk::High,
                "the `flock -c` command string comes from an expansion",
            );
        }
        return r.then(Then::Script(c.lit.clone()));
    }
    if rest.first().is_some_and(|w| w.lit == "--") {
        rest = &rest[1..];
    }
    r = r.then(Then::Run(rest));
    r
}

fn shell<'w>(name: &str, args: &'w [Word], stdin: Stdin) -> Rule<'w> {
    let mut command = false;
    let mut i = 0;
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
            i += 1;
            continue;
        }
        let flags = &lit[1..];
        if flags.contains('c') {
            command = true;
        }
        i += if flags.ends_with('o') || flags.ends_with('O') {
            2
        } else {
            1
        };
    }
    let rest = args.get(i..).unwrap_or(&[]);
    if command {
        return match rest.first() {
            None => Rule::high(format!("`{name} -c` without a command string")),
            Some(s) if s.dynamic => Rule::high(format!(
                "`{name} -c` runs a command string that comes from an expansion (`{}`)",
                s.lit
            )),
            Some(s) => Rule::low(format!("`{name} -c` runs the string it is given"))
                .then(Then::Script(s.lit.clone())),
        };
    }
    if let Some(script) = rest.first() {
        return Rule::high(format!(
            "`{name} {}` runs a script whose code is not classified",
            script.lit
        ));
    }
    match stdin {
        Stdin::Pipe => Rule::high(format!("`{name}` runs code read from a pipe")),
        Stdin::HereDoc => Rule::high(format!("`{name}` runs code from a here-document")),
        Stdin::Inherited => Rule::high(format!("`{name}` runs code read from its standard input")),
    }
}

fn pager<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    if args.iter().any(|w| w.lit.starts_with('+')) {
        return Rule::high(format!("`{name} +CMD` runs a command at start"));
    }
    if name == "man"
        && (any_short(args, 'P', "MSsmLeCRr")
            || any_short(args, 'H', "MSsmLeCRrP")
            || any_long(args, "pager")
            || any_long(args, "html")
            || any_long(args, "preprocessor")
            || any_short(args, 'l', "MSsmLeCRrP"))
    {
        return Rule::high("`man` with a pager, browser or local file runs what it is told");
    }
    Rule::medium(format!(
        "`{name}` is read-only, but an interactive pager can run a shell through `!`"
    ))
}

fn writer<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
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
