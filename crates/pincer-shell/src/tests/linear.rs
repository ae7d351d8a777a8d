//! Classification work grows linearly with the input. Work is counted,
//! not timed: every character the lexer reads, every token the splitter
//! sees, every word a rule looks at and every step of a glob or path
//! comparison (`crate::work`). Wall-clock time is in the benchmark.

use super::*;
use crate::work;

/// Steps taken to classify `cmd` for `shell`.
fn steps(cmd: &str, shell: Shell) -> u64 {
    work::take();
    let _ = classify(cmd, shell, &[]);
    work::take()
}

/// Inputs built by repeating a piece: the shapes that used to be (or
/// could be) quadratic — unclosed groups and quotes, `((` that turn out
/// to be subshells, nested functions, brace groups, wrappers, long words
/// full of `/`, `=` and `:`, many `cd`s and assignments.
pub(super) const FAMILIES: &[(&str, &str, &str)] = &[
    ("", "(", ""),
    ("", "((", ""),
    ("", "(( ", "a) b"),
    ("", "$(", ""),
    ("", "$((", ""),
    ("", "$((a) ", ""),
    ("echo ", "${a:-", ""),
    ("", "{ ", ""),
    ("", "\"", ""),
    ("", "'", ""),
    ("", "`", ""),
    ("", "if ", ""),
    ("", "if true; then ", ""),
    ("", "f() { ", ""),
    ("", "f(){ f|f& }; ", ""),
    (":", "(){ :|:& };", ""),
    ("echo ", "{a,", ""),
    ("echo ", "{a,b}", ""),
    ("", "env ", "ls"),
    ("", "time ", "ls"),
    ("", "ionice ", "ls"),
    ("cat ", "/", "x"),
    ("cat ", "a=/dev/", "x"),
    ("cat x", ":/dev/i2c-1", ""),
    ("", "cd a; ", "cat x > sda"),
    ("", "x=1; ", "echo $x"),
    ("ls ", "-la ", ""),
    ("echo ", "\"$x\" ", ""),
    ("", "sh -c 'ls'; ", ""),
    ("", "[[ ", ""),
    ("", "<<E ", ""),
    ("", "case x in ", ""),
    ("", "for a in b; do ", ""),
    ("", "a|", "b"),
    ("", "../", "dev/sda"),
    ("cat ", ".*/", "x"),
    ("", "((1<<2))\n", "reboot"),
    ("", "\\", ""),
    ("", "é", ""),
];

fn build(prefix: &str, piece: &str, suffix: &str, n: usize) -> String {
    let mut s = String::with_capacity(prefix.len() + piece.len() * n + suffix.len());
    s.push_str(prefix);
    for _ in 0..n {
        s.push_str(piece);
    }
    s.push_str(suffix);
    s
}

#[test]
fn work_is_linear_in_the_input() {
    // Ten times the input may cost at most fifteen times the work.
    const SMALL: usize = 1_000;
    const FACTOR: u64 = 15;
    let mut bad = Vec::new();
    for (prefix, piece, suffix) in FAMILIES {
        for shell in Shell::ALL {
            let small = steps(&build(prefix, piece, suffix, SMALL), shell).max(1);
            let large = steps(&build(prefix, piece, suffix, SMALL * 10), shell);
            if large > small * FACTOR {
                bad.push(format!(
                    "{shell}: {prefix:?} + {piece:?} × n + {suffix:?}: {small} steps at n = {SMALL}, {large} at n = {}",
                    SMALL * 10
                ));
            }
        }
    }
    assert!(bad.is_empty(), "superlinear work:\n{}", bad.join("\n"));
}

#[test]
fn an_overlong_command_is_high_and_still_searched_for_denied_names() {
    let long = format!("{}; reboot", "echo a ".repeat(MAX_COMMAND_BYTES / 7 + 1));
    let a = classify(&long, Shell::Dash, &[]);
    assert_eq!(a.risk, Risk::High);
    assert!(a.why.contains("denied"), "{}", a.why);
    let a = classify(
        &"echo a ".repeat(MAX_COMMAND_BYTES / 7 + 1),
        Shell::Dash,
        &[],
    );
    assert_eq!(a.risk, Risk::High);
    assert!(a.parts[0].why.contains("bytes long"), "{}", a.parts[0].why);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the input, the work is at most a constant per character.
    #[test]
    fn work_per_character_is_bounded(s in operator_soup(), shell in 0usize..2) {
        let shell = Shell::ALL[shell];
        let n = s.chars().count() as u64;
        let w = steps(&s, shell);
        prop_assert!(w <= 2_000 * n + 20_000, "{} steps for {} chars: {:?}", w, n, s);
    }

    /// Repeating any corpus command k times costs at most about k times
    /// the work of one.
    #[test]
    fn repeating_a_command_scales_linearly(i in 0usize..10_000, shell in 0usize..2) {
        let pool = pool();
        let cmd = &pool[i % pool.len()];
        let shell = Shell::ALL[shell];
        let one = steps(&format!("{cmd}\n"), shell).max(1);
        let many = steps(&format!("{cmd}\n").repeat(50), shell);
        prop_assert!(many <= 50 * one * 3 + 10_000, "{:?}: {} for one, {} for 50", cmd, one, many);
    }
}
