//! Programs whose options decide what they do: `find`, `sort`, `git`,
//! `sed`, `awk`, `tar`. Each reads its options the way the real program
//! does and raises the verdict for the ones that run programs or write.

use super::*;

pub(super) fn sort(args: &[Word]) -> Rule<'_> {
    if any_long(args, "compress-program") {
        return Rule::high("`sort --compress-program` runs a program");
    }
    let mut r = Rule::low("`sort` only reads");
    for v in opt_values(args, Some('o'), Some("output"), "kStT") {
        r = r
            .at_least(Risk::Medium, "`sort -o` writes a file")
            .writes(&v);
    }
    r
}

pub(super) fn find(args: &[Word]) -> Rule<'_> {
    let mut r = Rule::low("`find` only reads");
    let mut cmds = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.lit.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = i + 1;
                let mut end = start;
                while let Some(a) = args.get(end) {
                    if a.lit == ";" || (a.lit == "+" && end > start && args[end - 1].lit == "{}") {
                        break;
                    }
                    end += 1;
                }
                cmds.push(&args[start..end.min(args.len())]);
                i = end + 1;
                continue;
            }
            "-delete" => r = r.at_least(Risk::High, "`find -delete` deletes files"),
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                r = r.at_least(Risk::Medium, format!("`find {}` writes a file", w.lit));
                if let Some(f) = args.get(i + 1) {
                    r = r.writes(f);
                }
            }
            _ => {}
        }
        i += 1;
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

pub(super) fn git(args: &[Word]) -> Rule<'_> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if !lit.starts_with('-') {
            break;
        }
        if lit == "-C" {
            i += 2;
            continue;
        }
        if lit.starts_with("-c") {
            return Rule::high(
                "`git -c` sets configuration for this call (a pager, alias or ssh command runs code)",
            );
        }
        if ["exec-path", "config-env"].iter().any(|l| long_is(lit, l)) {
            return Rule::high(format!("`git {lit}` chooses the programs git runs"));
        }
        if ["git-dir", "work-tree", "namespace", "super-prefix"]
            .iter()
            .any(|l| long_is(lit, l))
        {
            return Rule::high(format!(
                "`git {lit}` points git at another repository, whose configuration can run code"
            ));
        }
        let harmless = [
            "-p",
            "-P",
            "--paginate",
            "--no-pager",
            "--bare",
            "--no-replace-objects",
            "--literal-pathspecs",
            "--glob-pathspecs",
            "--noglob-pathspecs",
            "--icase-pathspecs",
            "--no-optional-locks",
            "--no-lazy-fetch",
            "--no-advice",
        ];
        if [
            "--version",
            "-v",
            "--help",
            "-h",
            "--html-path",
            "--man-path",
            "--info-path",
        ]
        .contains(&lit)
        {
            return Rule::low("`git` only prints information");
        }
        if !harmless.contains(&lit) {
            return Rule::high(format!(
                "`git {lit}` is an option this classifier does not know"
            ));
        }
        i += 1;
    }
    let Some(sub) = args.get(i) else {
        return Rule::low("`git` only prints usage");
    };
    let sargs = &args[i + 1..];
    let sub = sub.lit.as_str();
    let what = format!("`git {sub}`");
    let has = |flags: &[&str]| {
        opts(sargs).iter().any(|w| {
            flags
                .iter()
                .any(|f| w.lit == *f || (f.starts_with("--") && long_is(&w.lit, &f[2..])))
        })
    };
    let first_op = operands(sargs, "", &[]).first().map(|w| w.lit.as_str());
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
        | "annotate" | "grep" | "describe" | "shortlog" | "cat-file" | "rev-list" | "show-ref"
        | "for-each-ref" | "name-rev" | "merge-base" | "whatchanged" | "count-objects"
        | "cherry" | "range-diff" | "diff-tree" | "diff-files" | "diff-index" | "check-ignore"
        | "check-attr" | "version" | "show-branch" => {
            if has(&["--ext-diff", "--textconv"]) {
                return Rule::high(format!(
                    "{what} with an external diff or textconv runs a program"
                ));
            }
            if sub == "grep"
                && (has(&["--open-files-in-pager"])
                    || sargs.iter().any(|w| w.lit.starts_with("-O")))
            {
                return Rule::high("`git grep -O` runs a pager command");
            }
            let mut r = Rule::low(format!("{what} only reads"));
            for v in opt_values(sargs, None, Some("output"), "") {
                r = r
                    .at_least(Risk::Medium, format!("{what} --output writes a file"))
                    .writes(&v);
            }
            r
        }
        "branch" => {
            let modify = has(&[
                "-d",
                "-D",
                "-m",
                "-M",
                "-c",
                "-C",
                "-f",
                "-u",
                "--delete",
                "--move",
                "--copy",
                "--force",
                "--set-upstream-to",
                "--unset-upstream",
                "--edit-description",
                "--track",
                "--no-track",
            ]);
            let list = has(&[
                "-l",
                "--list",
                "-a",
                "--all",
                "-r",
                "--remotes",
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
                "--show-current",
                "-v",
                "-vv",
                "--verbose",
            ]);
            if modify || (first_op.is_some() && !list) {
                Rule::medium("`git branch` creates, renames or deletes a branch")
            } else {
                Rule::low("`git branch` only lists branches")
            }
        }
        "tag" => {
            let modify = has(&[
                "-d",
                "--delete",
                "-a",
                "--annotate",
                "-s",
                "--sign",
                "-u",
                "-m",
                "-F",
                "-f",
                "--force",
            ]);
            let list = has(&[
                "-l",
                "--list",
                "-n",
                "--contains",
                "--no-contains",
                "--points-at",
                "--merged",
                "--no-merged",
                "-v",
                "--verify",
            ]);
            if modify || (first_op.is_some() && !list) {
                Rule::medium("`git tag NAME` creates or deletes a tag")
            } else {
                Rule::low("`git tag -l` only lists tags")
            }
        }
        "stash" | "worktree" | "reflog" => match first_op {
            None if sub == "reflog" => Rule::low(format!("{what} only reads")),
            Some("list" | "show") => {
                Rule::low(format!("{what} {} only reads", first_op.unwrap_or("")))
            }
            _ => Rule::medium(format!("{what} changes the repository or work tree")),
        },
        "reset" if has(&["--hard", "--merge", "--keep"]) => {
            Rule::high("`git reset --hard` discards uncommitted changes")
        }
        "checkout" | "switch" if has(&["-f", "--force", "--discard-changes"]) => {
            Rule::high(format!("{what} --force discards uncommitted changes"))
        }
        "rebase"
            if has(&["-x", "--exec", "-i", "--interactive"])
                || sargs.iter().any(|w| w.lit.starts_with("-x")) =>
        {
            Rule::high("`git rebase --exec`/`-i` runs commands or an editor")
        }
        "add" if has(&["-p", "--patch", "-i", "--interactive", "-e", "--edit"]) => {
            Rule::high("`git add -i/-p/-e` is interactive and may run an editor")
        }
        "add" | "commit" | "checkout" | "switch" | "restore" | "reset" | "merge" | "rebase"
        | "cherry-pick" | "revert" | "mv" | "rm" | "init" | "apply" | "am" | "format-patch"
        | "commit-tree" | "read-tree" | "write-tree" | "update-index" | "checkout-index"
        | "sparse-checkout" | "notes" => Rule::medium(format!(
            "{what} changes the repository or work tree (and runs its hooks)"
        )),
        "push" | "pull" | "fetch" | "clone" | "ls-remote" | "remote" | "submodule"
        | "send-email" | "request-pull" | "archive" => {
            Rule::high(format!("{what} talks to other repositories or the network"))
        }
        "config" | "filter-branch" | "filter-repo" | "gc" | "clean" | "prune" | "repack"
        | "maintenance" | "update-ref" | "replace" | "bisect" | "difftool" | "mergetool"
        | "hook" | "credential" | "daemon" | "instaweb" => Rule::high(format!(
            "{what} rewrites configuration or history, deletes files, or runs programs"
        )),
        _ => Rule::high(format!(
            "{what} is not a known git subcommand (an alias can run anything)"
        )),
    }
}

pub(super) fn sed(args: &[Word]) -> Rule<'_> {
    let mut r = Rule::low("`sed` only reads");
    let mut scripts: Vec<String> = Vec::new();
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
        let lit = w.lit.as_str();
        if !is_option(w) {
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
                    Some(v) => scripts.push(v.to_string()),
                    None => {
                        i += 1;
                        scripts.push(o.get(i).map(|w| w.lit.clone()).unwrap_or_default());
                    }
                }
            } else if long_is(lit, "file") {
                return Rule::high("`sed -f` runs a script read from a file");
            } else if !known_long.iter().any(|k| k.starts_with(n)) || n.is_empty() {
                return Rule::high(format!(
                    "`sed {lit}` is an option this classifier does not know"
                ));
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
                        scripts.push(o.get(i).map(|w| w.lit.clone()).unwrap_or_default());
                    } else {
                        scripts.push(tail.to_string());
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
                    return Rule::high(format!(
                        "`sed -{ch}` is an option this classifier does not know"
                    ));
                }
            }
        }
        i += 1;
    }
    let ops = operands(args, "el", &["expression", "line-length"]);
    let files: &[&Word] = if scripts.is_empty() {
        match ops.split_first() {
            Some((s, rest)) => {
                scripts.push(s.lit.clone());
                rest
            }
            None => return Rule::high("`sed` without a script"),
        }
    } else {
        &ops
    };
    for s in &scripts {
        if let Err(why) = sed_script(s) {
            return Rule::high(format!("`sed` script `{s}`: {why}"));
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

/// Checks a sed script: `Ok` when it has no `e`, `w` or `W` command or
/// flag (run a command, write a file) and parses.
fn sed_script(script: &str) -> Result<(), String> {
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while s.get(*i).is_some_and(|c| c.is_whitespace() || *c == ';') {
            *i += 1;
        }
    };
    // A delimited part (`/re/`, `s/a/b/`), starting after the delimiter.
    let delimited = |i: &mut usize, d: char| -> Result<(), String> {
        loop {
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
    let to_eol = |i: &mut usize| {
        while s.get(*i).is_some_and(|c| *c != '\n') {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        let Some(&c0) = s.get(i) else { return Ok(()) };
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
            '#' | ':' | 'a' | 'i' | 'c' | 'r' | 'R' | 'v' => to_eol(&mut i),
            'b' | 't' | 'T' => {
                while s
                    .get(i)
                    .is_some_and(|c| *c != '\n' && *c != ';' && *c != '}')
                {
                    i += 1;
                }
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

pub(super) fn awk<'w>(name: &str, args: &'w [Word]) -> Rule<'w> {
    let mut programs: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if lit == "--" {
            i += 1;
            break;
        }
        if !is_option(w) {
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
                Some((_, v)) => programs.push(v),
                None => {
                    i += 1;
                    programs.push(args.get(i).map(|w| w.lit.as_str()).unwrap_or(""));
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
            return Rule::high(format!(
                "`{name} {lit}` is an option this classifier does not know"
            ));
        }
        i += 1;
    }
    if programs.is_empty() {
        match args.get(i) {
            Some(p) => programs.push(p.lit.as_str()),
            None => return Rule::high(format!("`{name}` without a program")),
        }
    }
    for p in programs {
        if let Some(bad) = ["system", "|", ">", "@"].iter().find(|b| p.contains(**b)) {
            return Rule::high(format!(
                "the `{name}` program contains `{bad}`, which can run a command or write a file"
            ));
        }
    }
    Rule::low(format!(
        "`{name}` only reads (its program has no `system`, `|`, `>` or `@`)"
    ))
}

pub(super) fn tar(args: &[Word]) -> Rule<'_> {
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
    if letters.contains(['x', 'c', 'r', 'u', 'A']) {
        let mut r = Rule::medium("`tar` creates or extracts an archive (writes files)");
        for dir in opt_values(args, Some('C'), Some("directory"), "fbTXgKNV") {
            r = r.writes(&dir);
        }
        r
    } else if letters.contains(['t', 'd']) {
        Rule::low("`tar -t` only lists an archive")
    } else {
        Rule::medium("`tar` may write files")
    }
}
