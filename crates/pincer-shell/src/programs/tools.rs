//! Programs whose options decide what they do: `find`, `sort`, `sed`,
//! `awk`, `tar`, `xxd`, `date`, `hostname`, `file`, `tree`, `uniq`, `tee`,
//! `rg` (`git` has its own file). Each reads its options the way the real
//! program does; options that write, run a program or change the system
//! raise the verdict, and any option not known to be harmless is medium.

use super::opts::{Paths, Spec, any_long, any_short, long_is, opt_values, opts, parse};
use super::{Effect, Rule, RuleCx, Then};
use crate::Risk;
use crate::lex::Word;
use crate::work::tick;

pub(super) fn rule<'w>(name: &str, args: &'w [Word], cx: &RuleCx) -> Option<Rule<'w>> {
    Some(match name {
        "find" => find(args),
        "sort" => sort(args, cx),
        "git" => super::git::git(args, cx),
        "sed" => sed(args),
        "awk" | "gawk" | "mawk" | "nawk" => awk(name, args),
        "tar" => tar(args, cx),
        "xxd" => xxd(args),
        "date" => date(args, cx),
        "hostname" => hostname(args, cx),
        "file" => file(args, cx),
        "tree" => tree(args, cx),
        "uniq" => uniq(args, cx),
        "tee" => tee(args, cx),
        "rg" => rg(args, cx),
        _ => return None,
    })
}

/// A rule from a spec's verdict: low, or medium naming the option.
fn checked<'w>(name: &str, spec: &Spec, args: &[Word], cx: &RuleCx, what: &str) -> Rule<'w> {
    let p = parse(spec, args, cx.env);
    let r = match p.problem(name) {
        None => Rule::low(format!("`{name}` {what}")),
        Some(problem) => Rule::medium(problem),
    };
    r.paths(spec.paths)
}

fn sort<'w>(args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "bdfgiMhnRrVcCmsuzo",
        "kStTo",
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort \
         ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort \
         random-source= reverse sort= version-sort batch-size= check[=] debug key= merge \
         output= stable buffer-size= field-separator= temporary-directory= parallel= unique \
         zero-terminated help version",
    )
    .partial();
    if any_long(args, "compress-program") {
        return Rule::high("`sort --compress-program` runs a program");
    }
    let mut r = checked("sort", &SPEC, args, cx, "only reads");
    for v in opt_values(args, Some('o'), Some("output"), "kStT") {
        r = r
            .at_least(Risk::Medium, "`sort -o` writes a file")
            .writes(&v);
    }
    for v in opt_values(args, Some('T'), Some("temporary-directory"), "kSo") {
        r = r
            .at_least(Risk::Medium, "`sort -T` writes temporary files there")
            .writes(&v);
    }
    r
}

/// `find`'s primaries with no argument, and with one.
const FIND_FLAGS: &[&str] = &[
    "-depth",
    "-d",
    "-follow",
    "-mount",
    "-xdev",
    "-noleaf",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-daystart",
    "-nowarn",
    "-warn",
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-prune",
    "-quit",
    "-print",
    "-print0",
    "-ls",
    "-true",
    "-false",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "-help",
    "--help",
    "-version",
    "--version",
    "(",
    ")",
    "!",
    ",",
];
const FIND_VALUED: &[&str] = &[
    "-maxdepth",
    "-mindepth",
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-newer",
    "-anewer",
    "-cnewer",
    "-used",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-perm",
    "-links",
    "-inum",
    "-samefile",
    "-lname",
    "-ilname",
    "-fstype",
    "-printf",
    "-context",
];

/// Programs that delete what they are given.
const DELETERS: &[&str] = &["rm", "unlink", "shred", "rmdir"];

fn find(args: &[Word]) -> Rule<'_> {
    let mut r = Rule::low("`find` only reads").paths(Paths::Named);
    let mut cmds = Vec::new();
    let mut i = 0;
    // Leading options, then the starting points.
    while let Some(w) = args.get(i) {
        match w.lit.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            o if o.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut roots = Vec::new();
    while let Some(w) = args.get(i) {
        if w.lit.starts_with('-') || matches!(w.lit.as_str(), "(" | ")" | "!" | ",") {
            break;
        }
        roots.push(w.clone());
        i += 1;
    }
    if roots.is_empty() {
        roots.push(Word::plain("."));
    }
    let mut deletes = false;
    while let Some(w) = args.get(i) {
        tick(1);
        let lit = w.lit.as_str();
        match lit {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = i + 1;
                let mut end = start;
                while let Some(a) = args.get(end) {
                    if a.lit == ";" || (a.lit == "+" && end > start && args[end - 1].lit == "{}") {
                        break;
                    }
                    end += 1;
                }
                let cmd = &args[start..end.min(args.len())];
                if cmd
                    .first()
                    .is_some_and(|p| DELETERS.contains(&p.lit.rsplit('/').next().unwrap_or("")))
                {
                    deletes = true;
                }
                cmds.push(cmd);
                i = end + 1;
                continue;
            }
            "-delete" => {
                deletes = true;
                r = r.at_least(Risk::High, "`find -delete` deletes files");
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                r = r.at_least(Risk::Medium, format!("`find {lit}` writes a file"));
                if let Some(f) = args.get(i + 1) {
                    r = r.writes(f);
                }
                i += if lit == "-fprintf" { 3 } else { 2 };
                continue;
            }
            _ if FIND_FLAGS.contains(&lit) => {}
            _ if FIND_VALUED.contains(&lit)
                || (lit.len() == 8
                    && lit.starts_with("-newer")
                    && lit[6..].chars().all(|c| "aBcmt".contains(c))) =>
            {
                i += 1;
            }
            _ => {
                r = r.at_least(
                    Risk::Medium,
                    format!("`find {lit}` is not an expression known to be harmless"),
                );
            }
        }
        i += 1;
    }
    if deletes {
        for root in roots {
            r.effects
                .push(Effect::RemoveTree(root, "`find` with a delete".into()));
        }
    }
    if cmds.is_empty() {
        return r;
    }
    let r = r.at_least(
        Risk::Medium,
        "`find -exec` runs a command for each file found",
    );
    r.then(Then::Each(
        cmds,
        Risk::Medium,
        "run by `find -exec` for each file found".into(),
    ))
}

fn sed(args: &[Word]) -> Rule<'_> {
    let mut r = Rule::low("`sed` only reads");
    let mut scripts: Vec<&Word> = Vec::new();
    let mut owned: Vec<Word> = Vec::new();
    let mut i = 0;
    let mut inplace = false;
    let known_long = [
        "quiet",
        "silent",
        "debug",
        "posix",
        "sandbox",
        "regexp-extended",
        "separate",
        "unbuffered",
        "null-data",
        "zero-terminated",
        "follow-symlinks",
        "line-length",
    ];
    let o = opts(args);
    while let Some(w) = o.get(i) {
        tick(1);
        let lit = w.lit.as_str();
        if !super::is_option(w) {
            i += 1;
            continue;
        }
        if let Some(rest) = lit.strip_prefix("--") {
            let (n, v) = rest
                .split_once('=')
                .map_or((rest, None), |(n, v)| (n, Some(v)));
            if long_is(lit, "in-place") {
                inplace = true;
            } else if long_is(lit, "expression") {
                match v {
                    Some(_) => owned.push(w.slice(lit.find('=').map_or(0, |e| e + 1))),
                    None => {
                        i += 1;
                        if let Some(s) = o.get(i) {
                            scripts.push(s);
                        }
                    }
                }
            } else if long_is(lit, "file") {
                return Rule::high("`sed -f` runs a script read from a file");
            } else if !known_long.iter().any(|k| k.starts_with(n)) || n.is_empty() {
                return Rule::medium(format!("`sed {lit}` is not an option known to be harmless"));
            }
            i += 1;
            continue;
        }
        for (k, ch) in lit[1..].char_indices() {
            let tail = &lit[1 + k + ch.len_utf8()..];
            match ch {
                'n' | 'E' | 'r' | 's' | 'u' | 'z' => {}
                'i' => {
                    inplace = true;
                    break;
                }
                'e' => {
                    if tail.is_empty() {
                        i += 1;
                        if let Some(s) = o.get(i) {
                            scripts.push(s);
                        }
                    } else {
                        owned.push(w.slice(1 + k + 1));
                    }
                    break;
                }
                'l' => {
                    if tail.is_empty() {
                        i += 1;
                    }
                    break;
                }
                'f' => return Rule::high("`sed -f` runs a script read from a file"),
                _ => {
                    return Rule::medium(format!(
                        "`sed -{ch}` is not an option known to be harmless"
                    ));
                }
            }
        }
        i += 1;
    }
    let ops = super::opts::operands(args, "el", &["expression", "line-length"]);
    let files: &[&Word] = if scripts.is_empty() && owned.is_empty() {
        match ops.split_first() {
            Some((s, rest)) => {
                scripts.push(s);
                if let Some(pos) = args.iter().position(|a| std::ptr::eq(a, *s)) {
                    r.not_path = Some(pos);
                }
                rest
            }
            None => return Rule::high("`sed` without a script"),
        }
    } else {
        &ops
    };
    for s in scripts.iter().copied().chain(owned.iter()) {
        if s.dynamic {
            return Rule::high(format!(
                "the `sed` script `{}` comes from an expansion, so what it runs is unknown",
                s.lit
            ));
        }
        match sed_script(&s.lit) {
            Err(why) => return Rule::high(format!("`sed` script `{}`: {why}", s.lit)),
            Ok(reads) => {
                for f in reads {
                    r.effects.push(Effect::Read(Word::plain(&f)));
                }
            }
        }
    }
    if inplace {
        r = r.at_least(Risk::Medium, "`sed -i` edits files in place");
        for f in files {
            r = r.writes(f);
        }
    }
    r
}

/// Checks a GNU sed script: `Ok` (with the files its `r`/`R` commands
/// read) when it parses and has no `e`, `w` or `W` command or flag. A
/// label or a `v` argument ends at a blank, `;`, `}` or newline — at
/// least as early as GNU sed ends it — so `:a;e cmd` and `v;e cmd` show
/// their `e`.
fn sed_script(script: &str) -> Result<Vec<String>, String> {
    let s: Vec<char> = script.chars().collect();
    let mut reads = Vec::new();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while s.get(*i).is_some_and(|c| c.is_whitespace() || *c == ';') {
            *i += 1;
        }
    };
    // A delimited part (`/re/`, `s/a/b/`), starting after the delimiter.
    let delimited = |i: &mut usize, d: char| -> Result<(), String> {
        loop {
            tick(1);
            match s.get(*i) {
                None => return Err("unterminated expression".into()),
                Some('\\') => *i += 2,
                Some(c) if *c == d => {
                    *i += 1;
                    return Ok(());
                }
                Some(_) => *i += 1,
            }
        }
    };
    let to_eol = |i: &mut usize| -> String {
        let from = *i;
        while s.get(*i).is_some_and(|c| *c != '\n') {
            *i += 1;
        }
        s[from..*i].iter().collect()
    };
    let label = |i: &mut usize| {
        while s.get(*i).is_some_and(|c| *c == ' ' || *c == '\t') {
            *i += 1;
        }
        while s
            .get(*i)
            .is_some_and(|c| !c.is_whitespace() && *c != ';' && *c != '}')
        {
            *i += 1;
        }
    };
    loop {
        tick(1);
        skip_ws(&mut i);
        let Some(&c0) = s.get(i) else {
            return Ok(reads);
        };
        // Addresses.
        let mut c = c0;
        for _ in 0..2 {
            match c {
                '0'..='9' | '$' | '+' | '~' => {
                    while s
                        .get(i)
                        .is_some_and(|c| c.is_ascii_digit() || "$+~".contains(*c))
                    {
                        i += 1;
                    }
                }
                '/' => {
                    i += 1;
                    delimited(&mut i, '/')?;
                    while s.get(i).is_some_and(|c| *c == 'I' || *c == 'M') {
                        i += 1;
                    }
                }
                '\\' => {
                    let Some(&d) = s.get(i + 1) else {
                        return Err("bad address".into());
                    };
                    i += 2;
                    delimited(&mut i, d)?;
                }
                _ => {}
            }
            while s.get(i).is_some_and(|c| *c == ' ') {
                i += 1;
            }
            if s.get(i) == Some(&',') {
                i += 1;
                while s.get(i).is_some_and(|c| *c == ' ') {
                    i += 1;
                }
                c = s.get(i).copied().unwrap_or(' ');
                continue;
            }
            break;
        }
        while s.get(i).is_some_and(|c| *c == '!' || *c == ' ') {
            i += 1;
        }
        let Some(&cmd) = s.get(i) else {
            return Err("an address without a command".into());
        };
        i += 1;
        match cmd {
            'e' => return Err("the `e` command runs a shell command".into()),
            'w' | 'W' => return Err("the `w` command writes a file".into()),
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'q' | 'Q' | 'L' => {
                while s.get(i).is_some_and(|c| c.is_ascii_digit() || *c == ' ') {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => label(&mut i),
            '#' | 'a' | 'i' | 'c' => {
                to_eol(&mut i);
            }
            'r' | 'R' => {
                let f = to_eol(&mut i);
                reads.push(f.trim().to_string());
            }
            's' | 'y' => {
                let Some(&d) = s.get(i) else {
                    return Err(format!("unterminated `{cmd}` command"));
                };
                if d == '\\' || d == '\n' {
                    return Err("unsupported delimiter".into());
                }
                i += 1;
                delimited(&mut i, d)?;
                delimited(&mut i, d)?;
                if cmd == 's' {
                    while let Some(&f) = s.get(i) {
                        match f {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            'e' => return Err("the `e` flag runs the result as a command".into()),
                            'w' => return Err("the `w` flag writes a file".into()),
                            _ => break,
                        }
                    }
                }
            }
            other => {
                return Err(format!(
                    "`{other}` is not a sed command this classifier knows"
                ));
            }
        }
    }
}

fn awk<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    let mut programs: Vec<&Word> = Vec::new();
    let mut owned: Vec<Word> = Vec::new();
    let mut i = 0;
    let mut not_path = None;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if lit == "--" {
            i += 1;
            break;
        }
        if !super::is_option(w) {
            break;
        }
        if lit.starts_with("-f")
            || long_is(lit, "file")
            || lit.starts_with("-E")
            || long_is(lit, "exec")
        {
            return Rule::high(format!("`{name} -f` runs a program read from a file"));
        }
        if lit.starts_with("-i")
            || lit.starts_with("-l")
            || lit.starts_with("-W")
            || long_is(lit, "include")
            || long_is(lit, "load")
        {
            return Rule::high(format!("`{name} {lit}` loads code"));
        }
        if lit == "-e" || long_is(lit, "source") {
            match lit.split_once('=') {
                Some(_) => owned.push(w.slice(lit.find('=').map_or(0, |e| e + 1))),
                None => {
                    i += 1;
                    if let Some(p) = args.get(i) {
                        programs.push(p);
                    }
                }
            }
        } else if lit == "-F" || lit == "-v" {
            i += 1; // the separator or assignment is the next word
        } else if lit.starts_with("-F") || lit.starts_with("-v") {
            // `-F:`, `-vx=1`: the value is attached.
        } else if lit.starts_with("--")
            && ["field-separator", "assign"]
                .iter()
                .any(|l| long_is(lit, l))
        {
            if !lit.contains('=') {
                i += 1;
            }
        } else if ![
            "--posix",
            "--traditional",
            "--sandbox",
            "-S",
            "--lint",
            "--characters-as-bytes",
            "-b",
        ]
        .contains(&lit)
        {
            return Rule::medium(format!(
                "`{name} {lit}` is not an option known to be harmless"
            ));
        }
        i += 1;
    }
    if programs.is_empty() && owned.is_empty() {
        match args.get(i) {
            Some(p) => {
                programs.push(p);
                not_path = Some(i);
            }
            None => return Rule::high(format!("`{name}` without a program")),
        }
    }
    for p in programs.iter().copied().chain(owned.iter()) {
        if p.dynamic {
            return Rule::high(format!(
                "the `{name}` program `{}` comes from an expansion, so what it runs is unknown",
                p.lit
            ));
        }
        let text = p.lit.as_str();
        if let Some(bad) = ["system", "|", ">", "@"]
            .iter()
            .find(|b| text.contains(**b))
        {
            return Rule::high(format!(
                "the `{name}` program contains `{bad}`, which can run a command or write a file"
            ));
        }
        if text.contains("/inet") {
            return Rule::high(format!(
                "the `{name}` program names `/inet`, gawk's network connections"
            ));
        }
        if let Some(bad) = ["getline", "ARGV", "ARGC"]
            .iter()
            .find(|b| text.contains(**b))
        {
            return Rule::medium(format!(
                "the `{name}` program uses `{bad}`, which reads files it names at run time"
            ));
        }
    }
    let mut r = Rule::low(format!(
        "`{name}` only reads (its program has no `system`, `|`, `>`, `@` or `getline`)"
    ));
    r.not_path = not_path;
    r
}

fn tar<'w>(args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    let danger_long = [
        "to-command",
        "use-compress-program",
        "checkpoint-action",
        "info-script",
        "new-volume-script",
        "rsh-command",
        "rmt-command",
        "absolute-names",
    ];
    // The options allowed when only listing or comparing.
    const LIST: Spec = Spec::new(
        "tdvzjJZaOiknopsSwWBMGUl",
        "fbCTXKNVL",
        "list diff compare file= verbose gzip gunzip ungzip bzip2 xz lzip lzma lzop zstd \
         compress uncompress auto-compress to-stdout ignore-zeros ignore-case no-ignore-case \
         wildcards no-wildcards anchored no-anchored exclude= exclude-from= files-from= \
         directory= numeric-owner utc full-time show-transformed-names show-stored-names \
         quoting-style= quote-chars= no-quote-chars= block-number totals[=] occurrence[=] \
         blocking-factor= record-size= strip-components= transform= xform= null no-null \
         unquote no-unquote recursion no-recursion warning= verbatim-files-from \
         no-verbatim-files-from exclude-vcs exclude-vcs-ignores exclude-backups \
         exclude-caches exclude-caches-under exclude-caches-all exclude-tag= \
         exclude-tag-under= exclude-tag-all= format= sparse verify label= starting-file= \
         newer= after-date= newer-mtime= help version",
    )
    .partial();
    let mut letters = String::new();
    for (n, w) in opts(args).iter().enumerate() {
        let lit = w.lit.as_str();
        if let Some(l) = danger_long.iter().find(|l| long_is(lit, l)) {
            return Rule::high(format!(
                "`tar --{l}` runs a program or writes outside the workspace"
            ));
        }
        if lit.starts_with("--") {
            for (l, flag) in [
                ("extract", 'x'),
                ("get", 'x'),
                ("create", 'c'),
                ("append", 'r'),
                ("update", 'u'),
                ("concatenate", 'A'),
                ("catenate", 'A'),
                ("delete", 'x'),
                ("list", 't'),
                ("diff", 'd'),
                ("compare", 'd'),
            ] {
                if long_is(lit, l) {
                    letters.push(flag);
                }
            }
        } else if let Some(cluster) = lit.strip_prefix('-') {
            letters.push_str(cluster);
        } else if n == 0 {
            letters.push_str(lit); // old style: `tar xzf a.tgz`
        }
    }
    if letters.contains('I') || letters.contains('F') || letters.contains('P') {
        return Rule::high("`tar -I`/`-F`/`-P` runs a program or writes outside the workspace");
    }
    if let Some(f) = opt_values(args, Some('f'), Some("file"), "CbTXgKNV").first()
        && f.lit.contains(':')
    {
        return Rule::high(format!("`tar -f {}` may reach a remote host", f.lit));
    }
    let mut r = if letters.contains(['x', 'c', 'r', 'u', 'A']) {
        let mut r = Rule::medium("`tar` creates or extracts an archive (writes files)");
        for dir in opt_values(args, Some('C'), Some("directory"), "fbTXgKNV") {
            r = r.writes(&dir);
        }
        r
    } else if letters.contains(['t', 'd']) {
        // Old style `tar tzf x`: the first word is a cluster of letters.
        let mut rewritten: Vec<Word> = args.to_vec();
        if let Some(first) = rewritten.first_mut()
            && !first.lit.starts_with('-')
        {
            first.lit.insert(0, '-');
        }
        let p = parse(&LIST, &rewritten, cx.env);
        match p.problem("tar") {
            None => Rule::low("`tar -t` only lists an archive"),
            Some(problem) => Rule::medium(problem),
        }
    } else {
        Rule::medium("`tar` may write files")
    };
    for v in opt_values(args, None, Some("index-file"), "") {
        r = r
            .at_least(Risk::Medium, "`tar --index-file` writes a file")
            .writes(&v);
    }
    r
}

/// `xxd [options] [infile [outfile]]`: with an output file it writes it
/// (with `-r`, patches it in place). xxd matches options by prefix
/// (`-ps` is `-p`); only exact spellings of the options that take a value
/// consume the next word, so its operands are never undercounted.
fn xxd(args: &[Word]) -> Rule<'_> {
    const VALUED: &[&str] = &[
        "-c",
        "-cols",
        "-g",
        "-groupsize",
        "-l",
        "-len",
        "-n",
        "-name",
        "-o",
        "-offset",
        "-s",
        "-seek",
        "-R",
    ];
    let mut ops: Vec<&Word> = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if lit == "--" {
            ops.extend(&args[i + 1..]);
            break;
        }
        if lit.len() > 1 && lit.starts_with('-') {
            let known = lit[1..]
                .chars()
                .next()
                .is_some_and(|c| "abcCdeEghilnoprRsuv".contains(c));
            if !known {
                return Rule::medium(format!("`xxd {lit}` is not an option known to be harmless"));
            }
            i += if VALUED.contains(&lit) { 2 } else { 1 };
            continue;
        }
        ops.push(w);
        i += 1;
    }
    let mut r = Rule::low("`xxd` only reads");
    if let Some(out) = ops.get(1) {
        r = r
            .at_least(Risk::Medium, "`xxd` writes its second operand")
            .writes(out);
    }
    r
}

fn date<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "uR",
        "dfr",
        "date= debug file= iso-8601[=] resolution rfc-email rfc-3339= reference= utc universal \
         help version",
    )
    .attached("I")
    .partial()
    .paths(Paths::Text);
    if any_short(args, 's', "dfrI") || any_long(args, "set") {
        return Rule::high("`date -s` sets the system clock");
    }
    let p = parse(&SPEC, args, cx.env);
    if let Some(w) = p
        .operands
        .iter()
        .map(|&i| &args[i])
        .find(|w| !w.lit.starts_with('+'))
    {
        return Rule::high(format!("`date {}` sets the system clock", w.lit));
    }
    match p.problem("date") {
        Some(problem) => Rule::medium(problem),
        None => Rule::low("`date` only reads the clock").paths(Paths::Text),
    }
}

fn hostname<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "sfdiIAa",
        "",
        "short fqdn long domain ip-address all-ip-addresses all-fqdns alias help version",
    )
    .partial()
    .paths(Paths::Text);
    if any_short(args, 'F', "")
        || any_long(args, "file")
        || any_short(args, 'b', "")
        || any_long(args, "boot")
    {
        return Rule::high("`hostname -F`/`-b` sets the host name");
    }
    let p = parse(&SPEC, args, cx.env);
    if !p.operands.is_empty() {
        return Rule::high("`hostname NAME` sets the host name");
    }
    match p.problem("hostname") {
        Some(problem) => Rule::medium(problem),
        None => Rule::low("`hostname` only reads").paths(Paths::Text),
    }
}

fn file<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "bcEhiklLnNr0sv",
        "eFmP",
        "brief checking-printout exclude= exclude-quiet= separator= mime mime-type \
         mime-encoding apple extension keep-going list dereference no-dereference magic-file= \
         no-buffer no-pad print0 parameter= raw special-files help version",
    )
    .partial();
    if any_short(args, 'C', "eFmfP") || any_long(args, "compile") {
        return Rule::medium("`file -C` writes a compiled magic file");
    }
    checked("file", &SPEC, args, cx, "only reads")
}

fn tree<'w>(args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "adlfxiASnCXJqNQpugshDFvtcUro",
        "LPIHTo",
        "gitignore gitfile= ignore-case matchdirs metafirst prune info infofile= noreport \
         charset= filelimit= timefmt= si du inodes device dirsfirst filesfirst sort= nolinks \
         hintro= houtro= help version",
    )
    .partial()
    .paths(Paths::Named);
    let mut r = checked("tree", &SPEC, args, cx, "only reads");
    for v in opt_values(args, Some('o'), None, "LPIHT") {
        r = r
            .at_least(Risk::Medium, "`tree -o` writes a file")
            .writes(&v);
    }
    r
}

fn uniq<'w>(args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "cdDiuz",
        "fsw",
        "count repeated all-repeated[=] skip-fields= group[=] ignore-case skip-chars= unique \
         zero-terminated check-chars= help version",
    )
    .numeric()
    .partial();
    let p = parse(&SPEC, args, cx.env);
    let mut r = match p.problem("uniq") {
        None => Rule::low("`uniq` only reads"),
        Some(problem) => Rule::medium(problem),
    };
    if let Some(&out) = p.operands.get(1) {
        r = r
            .at_least(Risk::Medium, "`uniq` writes its second operand")
            .writes(&args[out]);
    }
    r
}

fn tee<'w>(args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "aip",
        "",
        "append ignore-interrupts output-error[=] help version",
    )
    .paths(Paths::Text);
    let p = parse(&SPEC, args, cx.env);
    let mut r = match p.problem("tee") {
        None => Rule::low("`tee` copies its input to standard output").paths(Paths::Text),
        Some(problem) => Rule::medium(problem).paths(Paths::Text),
    };
    for &i in &p.operands {
        r = r
            .at_least(Risk::Medium, "`tee` writes files")
            .writes(&args[i]);
    }
    r
}

fn rg<'w>(args: &[Word], cx: &RuleCx) -> Rule<'w> {
    const SPEC: Spec = Spec::new(
        "iSsFwxvcloqnNHhLuUa0.pIb",
        "egtTmABCMEdjr",
        "ignore-case smart-case case-sensitive fixed-strings word-regexp line-regexp \
         invert-match count count-matches files-with-matches files-without-match \
         only-matching quiet line-number no-line-number with-filename no-filename follow \
         unrestricted text null hidden no-ignore no-ignore-vcs no-ignore-parent no-ignore-dot \
         no-ignore-global no-ignore-exclude no-ignore-files pretty no-heading heading \
         column no-column byte-offset json vimgrep stats trim sort= sortr= glob= iglob= \
         type= type-not= max-count= after-context= before-context= context= max-columns= \
         max-columns-preview encoding= max-depth= threads= replace= regexp= color= colors= \
         multiline multiline-dotall crlf passthru files type-list max-filesize= one-file-system \
         binary no-binary pcre2 engine= auto-hybrid-regex dfa-size-limit= regex-size-limit= \
         field-context-separator= field-match-separator= context-separator= path-separator= \
         no-messages no-config help version",
    )
    .partial()
    .pattern_first();
    if any_long(args, "pre") || any_long(args, "hostname-bin") {
        return Rule::high("`rg --pre`/`--hostname-bin` runs a program");
    }
    if any_short(args, 'z', "egtTmABCMEdjr") || any_long(args, "search-zip") {
        return Rule::medium("`rg -z` runs decompression programs");
    }
    let p = parse(&SPEC, args, cx.env);
    let mut r = match p.problem("rg") {
        None => Rule::low("`rg` only reads"),
        Some(problem) => Rule::medium(problem),
    };
    if !p.has("e") && !p.has("regexp") {
        r.not_path = p.operands.first().copied();
    }
    // rg searches every file below its operands (`.` without one).
    r.recursive = true;
    r
}
