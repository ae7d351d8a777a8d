//! `git`: its global options, then per subcommand. The read-only
//! subcommands are low only with options from their allowlists; the
//! options that write (`--output`), run a program (`--ext-diff`,
//! `--textconv`, `grep -O`, `--show-signature`'s gpg, `-p`'s pager) or
//! point git at another repository, whose configuration can run code
//! (`-C /elsewhere`, `--git-dir`, a `cd` out of the workspace), are not in
//! them.

use super::opts::{Spec, long_is, opts, parse};
use super::{Rule, RuleCx};
use crate::Risk;
use crate::lex::Word;
use crate::vars::expand;

/// Options of `git log`, `show`, `diff` and the other commands that read
/// revisions and print diffs.
const LOG_LONG: &str = "patch no-patch patch-with-raw patch-with-stat stat[=] shortstat numstat \
    dirstat[=] cumulative dirstat-by-file[=] summary compact-summary name-only name-status raw \
    submodule[=] color[=] no-color color-moved[=] no-color-moved color-moved-ws= \
    no-color-moved-ws word-diff[=] word-diff-regex= color-words[=] no-renames rename-empty \
    no-rename-empty check ws-error-highlight= full-index binary abbrev[=] no-abbrev \
    break-rewrites[=] find-renames[=] find-copies[=] find-copies-harder irreversible-delete \
    diff-filter= find-object= pickaxe-all pickaxe-regex relative[=] no-relative text \
    ignore-cr-at-eol ignore-space-at-eol ignore-space-change ignore-all-space \
    ignore-blank-lines ignore-matching-lines= inter-hunk-context= function-context exit-code \
    quiet no-ext-diff no-textconv ignore-submodules[=] src-prefix= dst-prefix= no-prefix \
    default-prefix line-prefix= ita-invisible-in-index ita-visible-in-index unified= \
    output-indicator-new= output-indicator-old= output-indicator-context= indent-heuristic \
    no-indent-heuristic minimal patience histogram anchored= diff-algorithm= stat-width= \
    stat-name-width= stat-graph-width= stat-count= cached staged merge-base no-index \
    rotate-to= skip-to= follow no-decorate decorate[=] decorate-refs= decorate-refs-exclude= \
    clear-decorations source mailmap no-mailmap use-mailmap no-use-mailmap full-diff log-size \
    max-count= skip= since= after= since-as-filter= until= before= author= committer= \
    grep-reflog= grep= all-match invert-grep regexp-ignore-case basic-regexp extended-regexp \
    fixed-strings perl-regexp remove-empty merges no-merges min-parents= max-parents= \
    no-min-parents no-max-parents first-parent exclude-first-parent-only not all branches[=] \
    tags[=] remotes[=] glob= exclude= exclude-hidden= reflog alternate-refs single-worktree \
    ignore-missing bisect stdin cherry-mark cherry-pick left-only right-only cherry \
    walk-reflogs merge boundary simplify-by-decoration show-pulls full-history dense sparse \
    simplify-merges ancestry-path[=] date-order author-date-order topo-order reverse \
    no-walk[=] do-walk format= pretty[=] abbrev-commit no-abbrev-commit oneline encoding= \
    expand-tabs[=] no-expand-tabs notes[=] no-notes show-notes[=] standard-notes \
    no-standard-notes relative-date date= parents children left-right graph no-graph \
    show-linear-break[=] diff-merges= no-diff-merges combined-all-paths remerge-diff dd \
    in-commit-order count objects objects-edge timestamp header root creation-factor= \
    no-dual-color numbered summary email group= contents= incremental porcelain \
    line-porcelain show-stats show-name show-number show-email ignore-rev= ignore-revs-file= \
    progress no-progress help";

const LOG: Spec = Spec::new("pusRabWmctgiEFPrDzqh", "nLSGO", LOG_LONG)
    .attached("UMCBwXl")
    .numeric()
    .partial();

/// `shortlog` and `blame` read `-n` (and more) as flags.
const SHORTLOG: Spec = Spec::new("nsecw", "", LOG_LONG).attached("w").partial();
const BLAME: Spec = Spec::new("bfnpsetcwlh", "LS", LOG_LONG)
    .attached("MC")
    .partial();

/// The read-only subcommands and the extra options each takes.
const READ_ONLY: &[(&str, Spec)] = &[
    ("log", LOG),
    ("show", LOG),
    ("diff", LOG),
    ("whatchanged", LOG),
    ("rev-list", LOG),
    ("diff-tree", LOG),
    ("diff-files", LOG),
    ("diff-index", LOG),
    ("range-diff", LOG),
    ("shortlog", SHORTLOG),
    ("blame", BLAME),
    ("annotate", BLAME),
    ("cherry", LOG),
    (
        "status",
        Spec::new(
            "sbvzh",
            "",
            "short branch show-stash porcelain[=] long verbose untracked-files[=] \
            ignore-submodules[=] ignored[=] column[=] no-column ahead-behind no-ahead-behind \
            renames no-renames find-renames[=] null help",
        )
        .attached("u")
        .partial(),
    ),
    (
        "ls-files",
        Spec::new(
            "cdmokisuvtfz",
            "xX",
            "cached deleted modified others ignored stage directory \
            no-empty-directory unmerged killed exclude= exclude-from= exclude-per-directory= \
            exclude-standard error-unmatch with-tree= full-name recurse-submodules abbrev[=] \
            debug eol deduplicate sparse format= resolve-undo help",
        )
        .partial(),
    ),
    (
        "ls-tree",
        Spec::new(
            "drtlz",
            "",
            "long name-only name-status object-only full-name full-tree \
            abbrev[=] format= help",
        )
        .partial(),
    ),
    (
        "rev-parse",
        Spec::new(
            "q",
            "",
            "abbrev-ref[=] short[=] verify quiet sq sq-quote not symbolic \
            symbolic-full-name all branches[=] tags[=] remotes[=] glob= exclude= disambiguate= \
            since= after= until= before= git-dir git-common-dir absolute-git-dir \
            is-inside-git-dir is-inside-work-tree is-bare-repository is-shallow-repository \
            resolve-git-dir= git-path= show-toplevel show-superproject-working-tree \
            shared-index-path show-prefix show-cdup show-object-format[=] show-ref-format \
            local-env-vars default= prefix= revs-only no-revs flags no-flags keep-dashdash \
            stop-at-non-option stuck-long path-format= end-of-options help",
        )
        .partial(),
    ),
    (
        "grep",
        Spec::new(
            "aiIwvhHEGFPnlLcozqWpr",
            "efABCm",
            "cached untracked no-index \
            exclude-standard recurse-submodules text no-textconv ignore-case word-regexp \
            invert-match full-name extended-regexp basic-regexp perl-regexp fixed-strings \
            line-number column files-with-matches name-only files-without-match null count \
            color[=] no-color break heading show-function context= after-context= \
            before-context= function-context threads= max-depth= max-count= quiet all-match and \
            or not only-matching help",
        )
        .numeric()
        .partial(),
    ),
    (
        "describe",
        Spec::new(
            "",
            "",
            "dirty[=] broken[=] all tags contains abbrev= candidates= exact-match \
            debug long match= exclude= always first-parent help",
        )
        .partial(),
    ),
    (
        "cat-file",
        Spec::new(
            "tspez",
            "",
            "batch[=] batch-check[=] batch-all-objects buffer unordered \
            allow-unknown-type follow-symlinks use-mailmap no-use-mailmap help",
        )
        .partial(),
    ),
    (
        "show-ref",
        Spec::new(
            "dsq",
            "",
            "head branches tags heads verify hash[=] abbrev[=] dereference \
            quiet exists help",
        )
        .partial(),
    ),
    (
        "for-each-ref",
        Spec::new(
            "",
            "",
            "count= shell perl python tcl sort= format= color[=] points-at= \
            merged[=] no-merged[=] contains[=] no-contains[=] ignore-case omit-empty \
            include-root-refs exclude= help",
        )
        .partial(),
    ),
    (
        "name-rev",
        Spec::new(
            "",
            "",
            "name-only tags refs= exclude= all always undefined no-undefined help",
        )
        .partial(),
    ),
    (
        "merge-base",
        Spec::new(
            "a",
            "",
            "all octopus independent is-ancestor fork-point help",
        )
        .partial(),
    ),
    (
        "count-objects",
        Spec::new("vH", "", "verbose human-readable help").partial(),
    ),
    (
        "check-ignore",
        Spec::new("qvnz", "", "quiet verbose non-matching no-index stdin help").partial(),
    ),
    (
        "check-attr",
        Spec::new("az", "", "all cached stdin source= help").partial(),
    ),
    ("version", Spec::new("", "", "build-options help").partial()),
    (
        "show-branch",
        Spec::new(
            "ar",
            "",
            "remotes all current topo-order date-order sparse more= list \
            merge-base independent no-name sha1-name reflog[=] color[=] no-color help",
        )
        .partial(),
    ),
];

/// `-C DIR` inside the workspace (relative, no `..`, known).
fn inside_workspace(w: &Word, cx: &RuleCx) -> bool {
    let vals = if w.dynamic {
        expand(w, cx.env)
    } else {
        Some(vec![w.lit.clone()])
    };
    vals.is_some_and(|v| {
        v.iter().all(|p| {
            !p.starts_with('/')
                && !p.starts_with('~')
                && !p.starts_with(crate::paths::OPAQUE)
                && !p.split('/').any(|c| c == ".." || crate::paths::has_glob(c))
        })
    })
}

pub(super) fn git<'w>(args: &'w [Word], cx: &RuleCx) -> Rule<'w> {
    let mut floor = Rule::low("`git` only reads");
    if cx.cwds.leaves_workspace() {
        return Rule::high(
            "`git` may run in a directory outside the workspace, whose repository configuration can run code",
        );
    }
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let lit = w.lit.as_str();
        if !lit.starts_with('-') {
            break;
        }
        if lit == "-C" {
            match args.get(i + 1) {
                Some(d) if inside_workspace(d, cx) => {}
                Some(d) => {
                    return Rule::high(format!(
                        "`git -C {}` points git at another repository, whose configuration can run code",
                        d.lit
                    ));
                }
                None => return Rule::high("`git -C` without a directory"),
            }
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
        if ["-p", "--paginate"].contains(&lit) {
            floor = floor.at_least(Risk::Medium, "`git -p` runs the pager program");
            i += 1;
            continue;
        }
        let harmless = [
            "-P",
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
    let r = subcommand(&sub.lit, sargs, cx);
    r.at_least(floor.risk, floor.why)
}

fn subcommand<'w>(sub: &str, sargs: &[Word], cx: &RuleCx) -> Rule<'w> {
    let what = format!("`git {sub}`");
    let has = |flags: &[&str]| {
        opts(sargs).iter().any(|w| {
            flags
                .iter()
                .any(|f| w.lit == *f || (f.starts_with("--") && long_is(&w.lit, &f[2..])))
        })
    };
    let checked = |spec: &Spec, args: &[Word], what: &str| -> Rule<'w> {
        if sub == "grep"
            && (has(&["--open-files-in-pager"]) || args.iter().any(|w| w.lit.starts_with("-O")))
        {
            return Rule::high("`git grep -O` runs a pager command");
        }
        if has(&["--ext-diff", "--textconv"]) {
            return Rule::high(format!(
                "{what} with an external diff or textconv runs a program"
            ));
        }
        let p = parse(spec, args, cx.env);
        let mut r = match p.problem(&format!("git {sub}")) {
            None => Rule::low(format!("{what} only reads")),
            Some(problem) => Rule::medium(problem),
        };
        for v in super::opts::opt_values(args, None, Some("output"), "") {
            r = r
                .at_least(Risk::Medium, format!("{what} --output writes a file"))
                .writes(&v);
        }
        r
    };
    if let Some((_, spec)) = READ_ONLY.iter().find(|(n, _)| *n == sub) {
        return checked(spec, sargs, &what);
    }
    let first_op = super::opts::operands(sargs, "", &[])
        .first()
        .map(|w| w.lit.as_str());
    match sub {
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
                "--create-reflog",
            ]);
            // Only these make a branch name a pattern to list; `-v`, `-a`
            // and `-r` do not (`git branch -v NAME` creates NAME).
            let list = has(&[
                "-l",
                "--list",
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
                "--show-current",
            ]);
            const BRANCH: Spec = Spec::new(
                "lavrq",
                "",
                "list all verbose remotes quiet \
                contains[=] no-contains[=] merged[=] no-merged[=] points-at= show-current \
                sort= format= color[=] no-color column[=] no-column abbrev[=] no-abbrev \
                ignore-case omit-empty help",
            )
            .partial();
            if modify || (first_op.is_some() && !list) {
                Rule::medium("`git branch` creates, renames or deletes a branch")
            } else {
                checked(&BRANCH, sargs, "`git branch`")
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
                "-e",
                "--edit",
            ]);
            let list = has(&[
                "-l",
                "--list",
                "--contains",
                "--no-contains",
                "--points-at",
                "--merged",
                "--no-merged",
            ]);
            const TAG: Spec = Spec::new(
                "l",
                "n",
                "list contains[=] no-contains[=] merged[=] \
                no-merged[=] points-at= sort= format= color[=] column[=] no-column ignore-case \
                omit-empty help",
            )
            .numeric()
            .partial();
            if has(&["-v", "--verify"]) {
                Rule::medium("`git tag -v` runs gpg to verify a signature")
            } else if modify || (first_op.is_some() && !list) {
                Rule::medium("`git tag NAME` creates or deletes a tag")
            } else {
                checked(&TAG, sargs, "`git tag -l`")
            }
        }
        "stash" | "worktree" | "reflog" => match first_op {
            None if sub == "reflog" => checked(&LOG, sargs, &what),
            Some("list" | "show") => {
                let pos = sargs
                    .iter()
                    .position(|w| !w.lit.starts_with('-'))
                    .unwrap_or(0);
                let rest = sargs.get(pos + 1..).unwrap_or(&[]);
                if sub == "worktree" {
                    const WT: Spec =
                        Spec::new("v", "", "porcelain verbose expire= z help").partial();
                    checked(&WT, rest, &format!("{what} list"))
                } else {
                    checked(&LOG, rest, &format!("{what} {}", first_op.unwrap_or("")))
                }
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
        // Listing remotes reads the configuration only; `remote show`
        // asks the remote.
        "remote" if first_op.is_none_or(|o| o == "get-url") => {
            const REMOTE: Spec = Spec::new("v", "", "verbose all push help").partial();
            checked(&REMOTE, sargs, "`git remote`")
        }
        // Reading configuration: `--get…`, `--list`, `get`, `list`.
        "config"
            if has(&["--get", "--get-all", "--get-regexp", "--list", "-l"])
                || matches!(first_op, Some("get" | "list")) =>
        {
            const CONFIG: Spec = Spec::new(
                "lz",
                "",
                "get get-all get-regexp list show-origin \
                show-scope name-only null local global system worktree type= default= \
                includes no-includes all regexp value= help",
            )
            .partial();
            let rest: Vec<Word> = sargs
                .iter()
                .filter(|w| !matches!(w.lit.as_str(), "get" | "list"))
                .cloned()
                .collect();
            // Anything more may write configuration, which can run code.
            if checked(&CONFIG, &rest, "`git config`").risk == Risk::Low {
                Rule::low("`git config --get`/`--list` only reads configuration")
            } else {
                Rule::high(
                    "`git config` with an option not known to only read may rewrite configuration, which can run code",
                )
            }
        }
        "push" | "pull" | "fetch" | "clone" | "ls-remote" | "remote" | "submodule"
        | "send-email" | "request-pull" | "archive" => {
            Rule::high(format!("{what} talks to other repositories or the network"))
        }
        "config" | "filter-branch" | "filter-repo" | "gc" | "clean" | "prune" | "repack"
        | "maintenance" | "update-ref" | "replace" | "bisect" | "difftool" | "mergetool"
        | "hook" | "credential" | "daemon" | "instaweb" => Rule::high(format!(
            "{what} rewrites configuration or history, deletes files, or runs programs"
        )),
        "help" => Rule::medium("`git help` runs `man` or a browser"),
        _ => Rule::high(format!(
            "{what} is not a known git subcommand (an alias can run anything)"
        )),
    }
}
