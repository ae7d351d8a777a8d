use super::*;
use crate::classify::MAX_TEXT;
use proptest::prelude::*;

mod linear;
mod props;

const CORPUS: &str = include_str!("../../tests/data/shell-corpus.tsv");

/// One corpus case: line number, expectation, the shells it is checked
/// for, command.
struct Case {
    line: usize,
    expect: String,
    shells: Vec<Shell>,
    command: String,
}

/// Parses the corpus (format in the file's header).
fn corpus_cases() -> Vec<Case> {
    CORPUS
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(n, l)| {
            let (expect, command) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("corpus line {}: no tab in {l:?}", n + 1));
            let (expect, shells) = match expect.split_once('@') {
                None => (expect, Shell::ALL.to_vec()),
                Some((e, "dash")) => (e, vec![Shell::Dash]),
                Some((e, "bash")) => (e, vec![Shell::Bash]),
                Some((_, other)) => panic!("corpus line {}: unknown shell {other:?}", n + 1),
            };
            Case {
                line: n + 1,
                expect: expect.to_string(),
                shells,
                command: command.replace('⏎', "\n").replace('␍', "\r"),
            }
        })
        .collect()
}

/// `None` when `a` meets `expect`, else what was wrong.
fn check(expect: &str, a: &ShellAssessment) -> Option<String> {
    let at_least = |r: Risk| (a.risk < r).then(|| format!("expected at least {}", r.as_str()));
    let exactly = |r: Risk| {
        (a.risk != r || a.denied.is_some()).then(|| format!("expected exactly {}", r.as_str()))
    };
    match expect {
        "low" => at_least(Risk::Low),
        "medium" => at_least(Risk::Medium),
        "high" => at_least(Risk::High),
        "deny" => a.denied.is_none().then(|| "expected denied".to_string()),
        "=low" => exactly(Risk::Low),
        "=medium" => exactly(Risk::Medium),
        "=high" => exactly(Risk::High),
        other => Some(format!("unknown expectation {other:?}")),
    }
}

#[test]
fn corpus() {
    let cases = corpus_cases();
    let mut failures = Vec::new();
    for c in &cases {
        for &shell in &c.shells {
            let a = classify(&c.command, shell, &[]);
            if let Some(wrong) = check(&c.expect, &a) {
                failures.push(format!(
                    "line {} ({shell}): {:?}: {wrong}, got {}{} ({})",
                    c.line,
                    c.command,
                    a.risk.as_str(),
                    if a.denied.is_some() { ", denied" } else { "" },
                    a.why
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_has_the_promised_shape() {
    let cases = corpus_cases();
    let count = |e: &str| cases.iter().filter(|c| c.expect == e).count();
    assert!(count("=low") >= 40, "exact-low cases: {}", count("=low"));
    let bypasses = cases.iter().filter(|c| !c.expect.starts_with('=')).count();
    assert!(bypasses >= 150, "bypass cases: {bypasses}");
}

fn risk(cmd: &str) -> Risk {
    classify(cmd, Shell::Dash, &[]).risk
}

#[test]
fn why_names_the_deciding_part() {
    let a = classify("ls -la; curl -s x | sh; echo hi", Shell::Dash, &[]);
    assert_eq!(a.risk, Risk::High);
    assert_eq!(a.why, "`curl -s x`: `curl` talks to the network (high)");

    let a = classify("grep foo x | sh", Shell::Dash, &[]);
    assert_eq!(a.why, "`sh`: `sh` runs code read from a pipe (high)");

    let a = classify("ls && cp a b", Shell::Dash, &[]);
    assert_eq!(a.why, "`cp a b`: `cp` writes files (medium)");

    let a = classify("ls > out.txt", Shell::Dash, &[]);
    assert_eq!(
        a.why,
        "`ls > out.txt`: redirection `>` writes `out.txt` (medium)"
    );

    let a = classify("echo 'oops", Shell::Dash, &[]);
    assert!(a.why.contains("could not be parsed"), "{}", a.why);
    assert!(a.why.contains("unterminated single quote"), "{}", a.why);

    let a = classify("", Shell::Dash, &[]);
    assert_eq!(
        (a.risk, a.why.as_str()),
        (Risk::Low, "empty command: nothing runs (low)")
    );
    assert!(a.parts.is_empty());
}

#[test]
fn parts_are_in_order_after_unwrapping() {
    let a = classify(
        "cd src && sudo nice rm -f x | wc -l; echo $(date)",
        Shell::Dash,
        &[],
    );
    let got: Vec<(&str, &str, Risk)> = a
        .parts
        .iter()
        .map(|p| (p.text.as_str(), p.program.as_str(), p.risk))
        .collect();
    assert_eq!(
        got,
        vec![
            ("cd src", "cd", Risk::Low),
            ("sudo nice rm -f x", "rm", Risk::High),
            ("wc -l", "wc", Risk::Low),
            ("date", "date", Risk::Low),
            ("echo $(date)", "echo", Risk::Medium),
        ]
    );
    // A wrapper's own class carries into the wrapped command's part.
    assert_eq!(
        a.parts[1].why,
        "`sudo` runs the command with other privileges"
    );

    let a = classify("bash -c 'ls; rm x'", Shell::Dash, &[]);
    let programs: Vec<&str> = a.parts.iter().map(|p| p.program.as_str()).collect();
    assert_eq!(programs, ["ls", "rm"]);

    let a = classify("find . -exec grep -l x {} +", Shell::Dash, &[]);
    let got: Vec<(&str, Risk)> = a
        .parts
        .iter()
        .map(|p| (p.program.as_str(), p.risk))
        .collect();
    assert_eq!(got, [("find", Risk::Medium), ("grep", Risk::Medium)]);

    let a = classify("X=1", Shell::Dash, &[]);
    assert_eq!(a.parts[0].program, "");
    assert_eq!(a.risk, Risk::Low);
}

#[test]
fn deny_sees_through_every_wrapper() {
    for cmd in [
        "sudo env nice bash -c \"mkfs.ext4 /dev/sda\"",
        "timeout 5 setsid sh -c 'exec busybox reboot'",
        "xargs -0 shutdown",
        "find . -exec halt \\;",
        "echo \"$(poweroff)\"",
        "watch -n 1 'ls; reboot'",
        "su -c 'bash -lc \"rm -rf /\"'",
        "env -i PATH=/bin stdbuf -oL nohup ionice -c3 /sbin/wipefs -a /dev/sda",
    ] {
        let a = classify(cmd, Shell::Dash, &[]);
        assert!(a.denied.is_some(), "{cmd}: {a:?}");
        assert_eq!(a.risk, Risk::High, "{cmd}");
        assert!(a.why.contains("denied"), "{cmd}: {}", a.why);
    }
}

#[test]
fn extra_deny_globs_match_every_program_basename() {
    let deny = vec![
        "docker*".to_string(),
        "sudo".to_string(),
        "?url".to_string(),
    ];
    for (cmd, denied) in [
        ("docker run x", true),
        ("/usr/bin/docker-compose up", true),
        ("nice -n 1 docker ps", true),
        ("bash -c 'ls && docker ps'", true),
        ("sudo ls", true),
        ("echo $(curl x)", true),
        ("ls docker", false),
        ("echo sudo", false),
        ("ls", false),
    ] {
        let a = classify(cmd, Shell::Dash, &deny);
        assert_eq!(a.denied.is_some(), denied, "{cmd}: {a:?}");
        if denied {
            assert!(a.denied.iter().any(|d| d.contains("deny pattern")), "{a:?}");
        }
    }
    // Without the extra list, the same commands are not denied.
    assert!(classify("docker run x", Shell::Dash, &[]).denied.is_none());
}

#[test]
fn nesting_is_bounded() {
    let mut cmd = "ls".to_string();
    for _ in 0..(MAX_DEPTH + 2) {
        cmd = format!("sh -c '{}'", cmd.replace('\'', "'\\''"));
    }
    let a = classify(&cmd, Shell::Dash, &[]);
    assert_eq!(a.risk, Risk::High);
    assert!(a.why.contains("nested too deep"), "{}", a.why);

    let mut ok = "ls".to_string();
    for _ in 0..3 {
        ok = format!("sh -c '{}'", ok.replace('\'', "'\\''"));
    }
    assert_eq!(risk(&ok), Risk::Low, "{ok}");

    // Deep substitutions fail closed, they do not overflow the stack.
    let deep = format!("{}ls{}", "$(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(risk(&deep), Risk::High);
    // Deep subshells are followed: `ls` in dash; to bash, `((…))` around
    // them is arithmetic (outside the safe subset).
    let deep = format!("{}ls{}", "(".repeat(10_000), ")".repeat(10_000));
    let a = classify(&deep, Shell::Dash, &[]);
    assert_eq!(a.risk, Risk::Low, "{}", a.why);
    assert_eq!(
        a.parts
            .iter()
            .map(|p| p.program.as_str())
            .collect::<Vec<_>>(),
        ["ls"]
    );
    assert_eq!(classify(&deep, Shell::Bash, &[]).risk, Risk::Medium);
    let deep = format!("echo {}x{}", "${a:-".repeat(10_000), "}".repeat(10_000));
    assert_eq!(risk(&deep), Risk::High);
}

#[test]
fn very_long_lines_are_fine() {
    let long = format!("echo {}", "a".repeat(200_000));
    let a = classify(&long, Shell::Dash, &[]);
    assert_eq!(a.risk, Risk::Low);
    assert!(a.parts[0].text.chars().count() <= MAX_TEXT + 1);
    let many = "ls; ".repeat(5_000) + "rm x";
    assert_eq!(risk(&many), Risk::High);
}

#[test]
fn default_deny_is_matched_by_glob() {
    for name in ["mkfs", "mkfs.ext4", "mkfs.vfat", "reboot", "swapoff"] {
        assert!(classify(name, Shell::Dash, &[]).denied.is_some(), "{name}");
    }
    assert!(classify("mkdir x", Shell::Dash, &[]).denied.is_none());
}

// ---- properties -------------------------------------------------------

/// Corpus commands whose meaning survives having text appended: no
/// comments and no here-documents (where `; B` would be commented out or
/// become part of the document, as in a real shell).
fn pool() -> Vec<String> {
    corpus_cases()
        .into_iter()
        .map(|c| c.command)
        .filter(|c| !c.contains('#') && !c.contains("<<"))
        .collect()
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The invariants every verdict keeps.
fn consistent(s: &str, shell: Shell) -> Result<(), TestCaseError> {
    let a = classify(s, shell, &[]);
    let worst = a.parts.iter().map(|p| p.risk).max().unwrap_or(Risk::Low);
    prop_assert_eq!(a.risk, worst, "{:?}", s);
    prop_assert_eq!(a.shell, shell);
    prop_assert!(!a.why.is_empty());
    if a.denied.is_some() {
        prop_assert_eq!(a.risk, Risk::High, "{:?}", s);
    }
    if a.hardware.is_some() {
        prop_assert!(a.risk >= Risk::Medium, "{:?}", s);
    }
    for p in &a.parts {
        prop_assert!(p.text.chars().count() <= MAX_TEXT + 1);
        prop_assert!(!p.text.contains('\n'));
    }
    Ok(())
}

fn operator_soup() -> impl Strategy<Value = String> {
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
        Just(">>"),
        Just("<<"),
        Just("<<-"),
        Just("<<<"),
        Just("2>&1"),
        Just("$"),
        Just("${"),
        Just("$(("),
        Just("))"),
        Just("#"),
        Just("<("),
        Just(">("),
        Just("$'"),
        Just("\\x"),
        Just("ls"),
        Just("rm"),
        Just("sh -c"),
        Just("sudo"),
        Just("env"),
        Just("EOF"),
        Just("if"),
        Just("then"),
        Just("fi"),
        Just("do"),
        Just("done"),
        Just("for"),
        Just("in"),
        Just("f()"),
        Just("[["),
        Just("]]"),
        Just("="),
        Just("x=1"),
        Just("-exec"),
        Just("find"),
        Just("\t"),
        Just("\r"),
        Just("é"),
        Just("\u{0}"),
    ];
    proptest::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any text, any shell: the verdict is one consistent answer (the
    /// risk is the worst part's, a denial or a hardware mark is never
    /// below its class, the shell is the one asked for, the reason is
    /// there and shown cut).
    #[test]
    fn any_text_gets_a_consistent_verdict(s in ".{0,200}", shell in 0usize..2) {
        consistent(&s, Shell::ALL[shell])?;
    }

    #[test]
    fn operator_soup_gets_a_consistent_verdict(s in operator_soup(), shell in 0usize..2) {
        consistent(&s, Shell::ALL[shell])?;
        // A deny pattern that matches every program containing `x`.
        let a = classify(&s, Shell::ALL[shell], &["*x*".to_string()]);
        if a.parts.iter().any(|p| p.program.contains('x')) {
            prop_assert!(a.denied.is_some(), "{:?}: {:?}", s, a);
        }
    }

    #[test]
    fn sequence_is_at_least_each_side(
        i in 0usize..10_000,
        j in 0usize..10_000,
        shell in 0usize..2,
    ) {
        let pool = pool();
        let shell = Shell::ALL[shell];
        let risk = |c: &str| classify(c, shell, &[]).risk;
        let (a, b) = (&pool[i % pool.len()], &pool[j % pool.len()]);
        let both = risk(&format!("{a} ; {b}"));
        prop_assert!(
            both >= risk(a).max(risk(b)),
            "{:?} ; {:?} gave {:?} ({})", a, b, both, shell
        );
    }

    #[test]
    fn wrappers_never_lower_risk_or_lose_a_denial(
        i in 0usize..10_000,
        w in 0usize..8,
        top in 0usize..2,
    ) {
        let pool = pool();
        let cmd = &pool[i % pool.len()];
        // A line that starts with an operator has no command to wrap.
        prop_assume!(!cmd.trim_start().starts_with(['|', '&', ';']));
        let top = Shell::ALL[top];
        // A program wrapper cannot wrap a compound command (`env for …` is
        // a syntax error, not a loop).
        let first = cmd.split_whitespace().next().unwrap_or("");
        let compound = ["for", "while", "until", "if", "case", "select", "function", "{", "(", "!", "[[", "(("]
            .iter()
            .any(|k| first == *k || first.starts_with('('));
        // Nor does it change the shell's own state: `env x=/` and `nice cd
        // /` set nothing in the shell that runs the next command.
        let state = first.contains('=')
            || ["cd", "pushd", "read", "export", "set", "unset", "local", "readonly", "declare", "typeset"]
                .contains(&first);
        prop_assume!(!((compound || state) && !matches!(w, 4..=6)));
        // The wrapped command runs in the wrapper's shell: the top one, or
        // the one `bash -c`/`dash -c` name, or either for `sh -c`.
        let (wrapped, shells) = match w {
            0 => (format!("env {cmd}"), vec![top]),
            1 => (format!("nice {cmd}"), vec![top]),
            2 => (format!("time {cmd}"), vec![top]),
            3 => (format!("sudo {cmd}"), vec![top]),
            4 => (format!("bash -c {}", sh_quote(cmd)), vec![Shell::Bash]),
            5 => (format!("dash -c {}", sh_quote(cmd)), vec![Shell::Dash]),
            6 => (format!("sh -c {}", sh_quote(cmd)), Shell::ALL.to_vec()),
            _ => (format!("timeout 5 {cmd}"), vec![top]),
        };
        let outer = classify(&wrapped, top, &[]);
        for shell in shells {
            let inner = classify(cmd, shell, &[]);
            prop_assert!(
                outer.risk >= inner.risk,
                "{:?} ({}): {:?} < {:?} ({})", wrapped, top, outer.risk, inner.risk, shell
            );
            prop_assert!(
                inner.denied.is_none() || outer.denied.is_some(),
                "{:?} lost the denial of {:?} ({})", wrapped, cmd, shell
            );
        }
    }
}

#[test]
fn the_shell_is_not_an_ungated_way_to_the_hardware() {
    let hardware = [
        "cat /dev/i2c-1",
        "od -N2 /dev/i2c-1",
        "head -c 2 /dev/spidev0.0",
        "cat /sys/class/hwmon/hwmon0/temp1_input",
        "cat /sys/bus/iio/devices/iio:device0/in_temp_input",
        "ls /dev/gpiochip*",
        "echo 1 > /sys/class/gpio/gpio17/value",
        "i2cget -y 1 0x48 0x00 w",
        "sudo i2cset -y 1 0x48 0x01 0x60",
        "env i2cdetect -y 1",
        "sh -c 'gpioget gpiochip0 17'",
        "/usr/bin/libcamera-still -o x.jpg",
        "rpicam-still -o x.jpg",
        "v4l2-ctl --list-devices",
        "cat < /dev/ttyUSB0",
        "ffmpeg -f v4l2 -i /dev/video0 out.jpg",
    ];
    for cmd in hardware {
        let a = classify(cmd, Shell::Dash, &[]);
        assert!(a.hardware.is_some(), "{cmd}: not seen as hardware");
        assert!(a.risk >= Risk::Medium, "{cmd}: {:?}", a.risk);
    }
    // A write stays high; the hardware mark never lowers a risk.
    let a = classify("echo 1 > /sys/class/gpio/gpio17/value", Shell::Dash, &[]);
    assert_eq!(a.risk, Risk::High, "{a:?}");
    let not = [
        "ls -la",
        "cat notes.txt 2>/dev/null",
        "echo hi > /dev/null",
        "tty",
        "grep -r sensors notes/",
        "cat /proc/cpuinfo",
    ];
    for cmd in not {
        let a = classify(cmd, Shell::Dash, &[]);
        assert!(a.hardware.is_none(), "{cmd}: {:?}", a.hardware);
    }
}
