//! The safe subset, as properties: an option not known to be harmless is
//! never low; a command substitution, backticks, arithmetic or a
//! subscript is never low; and text the real shell rejects is never low.

use super::*;
use crate::programs::readonly::SPECS;

/// `=low` corpus commands whose last word can take one more argument:
/// no quotes (the new word must not land inside one), no comments,
/// here-documents or compound commands.
fn simple_lows() -> Vec<String> {
    corpus_cases()
        .into_iter()
        .filter(|c| c.expect == "=low" && c.shells.len() == 2)
        .map(|c| c.command)
        .filter(|c| {
            !c.is_empty()
                && !c.contains([
                    '\'', '"', '#', '\\', '`', '$', '{', '}', '(', ')', '\n', '<', '>',
                ])
                && !c.split_whitespace().any(|w| {
                    [
                        "do", "done", "then", "fi", "else", "esac", "in", "&&", "||", "|", ";",
                    ]
                    .contains(&w)
                })
                && !c.trim_end().ends_with(['&', ';', '|'])
        })
        .collect()
}

/// An option letter `spec` does not list (any letter or digit, if the
/// program takes counts).
fn unlisted_short(flags: &str, valued: &str, attached: &str, numeric: bool) -> Vec<char> {
    ('a'..='z')
        .chain('A'..='Z')
        .chain(if numeric { '0'..='0' } else { '0'..='9' })
        .filter(|c| !flags.contains(*c) && !valued.contains(*c) && !attached.contains(*c))
        .filter(|c| !(numeric && c.is_ascii_digit()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A read-only program with an option not in its allowlist is not low,
    /// wherever the option stands.
    #[test]
    fn an_unknown_option_is_never_low(
        prog in 0usize..1000,
        pick in 0usize..1000,
        long in "[a-z]{2,8}",
        use_long in proptest::bool::ANY,
        at_end in proptest::bool::ANY,
        shell in 0usize..2,
    ) {
        let (name, spec) = SPECS[prog % SPECS.len()];
        let option = if use_long {
            // `zq` starts no option of any program, so it is no prefix either.
            format!("--zq{long}")
        } else {
            let free = unlisted_short(spec.flags, spec.valued, spec.attached, spec.numeric);
            prop_assume!(!free.is_empty());
            format!("-{}", free[pick % free.len()])
        };
        let cmd = if at_end {
            format!("{name} file {option}")
        } else {
            format!("{name} {option} file")
        };
        let a = classify(&cmd, Shell::ALL[shell], &[]);
        prop_assert!(a.risk >= Risk::Medium, "{:?}: {:?} ({})", cmd, a.risk, a.why);
    }

    /// The same for the programs with their own option readers.
    #[test]
    fn an_unknown_option_of_git_find_sed_and_the_builtins_is_never_low(
        which in 0usize..16,
        long in "[a-z]{2,8}",
        shell in 0usize..2,
    ) {
        let o = format!("--zq{long}");
        let cmd = match which {
            0 => format!("git log {o}"),
            1 => format!("git status {o}"),
            2 => format!("git diff {o} HEAD"),
            3 => format!("git {o} log"),
            4 => format!("find . -zq{long}"),
            5 => format!("sed {o} p f"),
            6 => format!("awk {o} 1 f"),
            7 => format!("tar -t {o} -f a.tar"),
            8 => format!("sort {o} f"),
            9 => format!("cd {o} src"),
            10 => format!("set -o zq{long}"),
            11 => format!("read {o} x"),
            12 => format!("nice {o} ls"),
            13 => format!("timeout {o} 5 ls"),
            14 => format!("env {o} ls"),
            _ => format!("git branch {o}"),
        };
        let a = classify(&cmd, Shell::ALL[shell], &[]);
        prop_assert!(a.risk >= Risk::Medium, "{:?}: {:?} ({})", cmd, a.risk, a.why);
    }

    /// A low command with a command substitution, backticks, arithmetic
    /// or a subscript added is not low any more.
    #[test]
    fn substitution_arithmetic_and_subscripts_are_never_low(
        i in 0usize..10_000,
        f in 0usize..12,
        shell in 0usize..2,
    ) {
        let lows = simple_lows();
        prop_assume!(!lows.is_empty());
        let cmd = &lows[i % lows.len()];
        let shell = Shell::ALL[shell];
        let both = [
            "$(ls)", "`ls`", "\"$(ls)\"", "$((1+1))", "\"$((1))\"", "${a[0]}", "${a[$i]}",
            "x$(ls)y", "$( (ls) )", "${x:-$(ls)}",
        ];
        let bash = ["$[1+1]", "<(ls)"];
        let feature = if f < both.len() {
            both[f]
        } else if shell == Shell::Bash {
            bash[f - both.len()]
        } else {
            both[f % both.len()]
        };
        let with = format!("{cmd} {feature}");
        let a = classify(&with, shell, &[]);
        prop_assert!(a.risk >= Risk::Medium, "{:?} ({}): {:?} ({})", with, shell, a.risk, a.why);
        // And as the value of an assignment before the command.
        let with = format!("v={feature} {cmd}");
        let a = classify(&with, shell, &[]);
        prop_assert!(a.risk >= Risk::Medium, "{:?} ({}): {:?} ({})", with, shell, a.risk, a.why);
    }
}

/// Harmless words and every kind of operator and quote: a soup that is
/// safe to hand to a real shell in parse-only mode (`-n`), which runs
/// nothing anyway.
fn harmless_soup() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just(" "),
        Just(";"),
        Just("&"),
        Just("&&"),
        Just("|"),
        Just("||"),
        Just("("),
        Just(")"),
        Just("{"),
        Just("}"),
        Just("$("),
        Just("`"),
        Just("'"),
        Just("\""),
        Just("\\"),
        Just("\n"),
        Just("<"),
        Just(">"),
        Just("<<"),
        Just("<<<"),
        Just("2>&1"),
        Just("$"),
        Just("${"),
        Just("$(("),
        Just("))"),
        Just("(("),
        Just("#"),
        Just("<("),
        Just("$'"),
        Just("$["),
        Just("]"),
        Just("true"),
        Just("echo"),
        Just("EOF"),
        Just("if"),
        Just("then"),
        Just("fi"),
        Just("do"),
        Just("done"),
        Just("for"),
        Just("in"),
        Just("case"),
        Just("esac"),
        Just(";;"),
        Just("f()"),
        Just("[["),
        Just("]]"),
        Just("="),
        Just("x=1"),
        Just("&>"),
        Just("|&"),
        Just("function"),
        Just("{a,b}"),
    ];
    proptest::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
}

/// Whether `shell` accepts the syntax of `s`, asked of the real shell in
/// parse-only mode, in an empty directory with an empty environment.
fn real_shell_accepts(shell: Shell, s: &str, dir: &std::path::Path) -> Option<bool> {
    let (program, flags): (&str, &[&str]) = match shell {
        Shell::Dash => ("/bin/dash", &["-n", "-c"]),
        Shell::Bash => ("/bin/bash", &["--noprofile", "--norc", "-n", "-c"]),
    };
    if !std::path::Path::new(program).exists() || s.contains('\0') {
        return None;
    }
    let out = std::process::Command::new(program)
        .args(flags)
        .arg(s)
        .env_clear()
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    Some(out.status.success())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Text the real dash or bash rejects as a syntax error is never low:
    /// the classifier's parser is no more forgiving than the shell's.
    #[test]
    fn what_the_real_shell_rejects_is_never_low(s in harmless_soup(), shell in 0usize..2) {
        let shell = Shell::ALL[shell];
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let Some(accepted) = real_shell_accepts(shell, &s, dir.path()) else {
            return Ok(());
        };
        let a = classify(&s, shell, &[]);
        if !accepted {
            prop_assert!(a.risk >= Risk::Medium, "{} rejects {:?}, classified {:?} ({})", shell, s, a.risk, a.why);
        }
    }
}
