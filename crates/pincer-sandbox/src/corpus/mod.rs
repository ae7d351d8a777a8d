//! The escape corpus: attacks as data (`escapes.tsv`), a [`Fixture`] that
//! stages what they go after (a fake `PINCER_HOME` with secrets, a TCP
//! listener on 127.0.0.1, Unix sockets, a host process, a FIFO the host
//! watches), and [`Fixture::judge`], which decides from outside the sandbox
//! whether an attack got through. Exit statuses are never evidence.
//!
//! Any runner can drive it — [`crate::self_test`] runs it through
//! [`crate::Sandbox`], the shell tool's tests through the shell tool:
//! for each [`Case`], [`Fixture::arm`] before the run, run
//! [`Fixture::command`] with a spec like [`Fixture::spec`], then
//! [`Fixture::judge`] with what came back.

mod fixture;

pub use fixture::{Fixture, Observation};

use crate::spec::Layer;
use std::time::Duration;

/// The corpus as shipped.
pub const ESCAPES_TSV: &str = include_str!("escapes.tsv");

/// What the runner does with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run it once.
    Once,
    /// Run it twice; the two results must be the same.
    Twice,
    /// Start it, wait until the FIFO says the command's child is alive,
    /// then kill the sandbox's parent (the helper, or pincer itself).
    KillParent,
}

/// One check on a run, made from outside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// No secret of the fake `PINCER_HOME` or `{outside}` in the output.
    NoSecret,
    /// No value of the parent's environment that the runner named.
    NoEnvSecret,
    /// The fake `PINCER_HOME`, `{outside}` and `{ro}` are byte for byte as
    /// before.
    Untouched,
    NoTcp,
    /// The TCP listener did get a connection (the network switch works).
    Tcp,
    NoUnix,
    NoAbstract,
    /// The output does not contain this text.
    NoMarker(String),
    Contains(String),
    /// This host path does not exist after the run.
    Absent(String),
    /// This host file is at most this many bytes (`smaller:PATH:BYTES`).
    AtMost(String, u64),
    Exists(String),
    /// The result reports the memory limit's OOM kill.
    Oom,
    /// The result reports forks refused by the pids limit.
    Pids,
    /// Whatever held the FIFO open (a process the command left running)
    /// is dead by the time the run is over.
    Dies,
    /// Both runs of a `twice` case gave the same output.
    Same,
    /// `/proc/self/status` shows every capability set empty.
    NoCaps,
    /// The host process the fixture started is still alive.
    MarkerAlive,
    /// The shell got to the end (`corpus-ran` in the output): the attack
    /// really was attempted, so the other checks are not passing vacuously.
    Ran,
}

/// One attack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub id: String,
    /// The layers whose enforcement this case proves.
    pub proves: Vec<Layer>,
    pub network: bool,
    pub action: Action,
    pub timeout: Duration,
    /// Programs the command needs; a runner skips the case (and says so)
    /// when one is missing, rather than passing it vacuously.
    pub needs: Vec<String>,
    pub checks: Vec<Check>,
    /// The `sh -c` script, with placeholders.
    pub command: String,
}

fn parse_check(s: &str) -> Result<Check, String> {
    let arg = |p: &str| s.strip_prefix(p).map(|a| a.replace("\\s", " "));
    if let Some(a) = arg("no-marker:") {
        return Ok(Check::NoMarker(a));
    }
    if let Some(a) = arg("contains:") {
        return Ok(Check::Contains(a));
    }
    if let Some(a) = arg("absent:") {
        return Ok(Check::Absent(a));
    }
    if let Some(a) = arg("exists:") {
        return Ok(Check::Exists(a));
    }
    if let Some(a) = arg("at-most:") {
        let (path, bytes) = a
            .rsplit_once(':')
            .ok_or_else(|| format!("`{s}`: want at-most:PATH:BYTES"))?;
        let bytes = bytes
            .parse()
            .map_err(|_| format!("`{s}`: `{bytes}` is not a number of bytes"))?;
        return Ok(Check::AtMost(path.to_string(), bytes));
    }
    Ok(match s {
        "no-secret" => Check::NoSecret,
        "no-env-secret" => Check::NoEnvSecret,
        "untouched" => Check::Untouched,
        "no-tcp" => Check::NoTcp,
        "tcp" => Check::Tcp,
        "no-unix" => Check::NoUnix,
        "no-abstract" => Check::NoAbstract,
        "oom" => Check::Oom,
        "pids" => Check::Pids,
        "dies" => Check::Dies,
        "same" => Check::Same,
        "no-caps" => Check::NoCaps,
        "marker-alive" => Check::MarkerAlive,
        "ran" => Check::Ran,
        other => return Err(format!("unknown check `{other}`")),
    })
}

/// Parses a corpus table; the error names the line and the column.
pub fn parse(tsv: &str) -> Result<Vec<Case>, String> {
    let mut out = Vec::new();
    for (i, line) in tsv.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let [id, proves, net, action, timeout, needs, checks, command] = cols[..] else {
            return Err(format!("line {n}: {} columns, want 8", cols.len()));
        };
        let proves = proves
            .split(',')
            .map(|l| {
                l.parse::<Layer>()
                    .map_err(|e| format!("line {n}: proves: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let network = match net {
            "off" => false,
            "on" => true,
            o => return Err(format!("line {n}: net `{o}` (want off or on)")),
        };
        let action = match action {
            "once" => Action::Once,
            "twice" => Action::Twice,
            "kill-parent" => Action::KillParent,
            o => return Err(format!("line {n}: action `{o}`")),
        };
        let timeout = timeout
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| format!("line {n}: timeout `{timeout}` is not whole seconds"))?;
        let needs = if needs == "-" {
            Vec::new()
        } else {
            needs.split(',').map(str::to_string).collect()
        };
        let checks = checks
            .split(' ')
            .filter(|c| !c.is_empty())
            .map(|c| parse_check(c).map_err(|e| format!("line {n}: checks: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        if checks.is_empty() {
            return Err(format!("line {n}: no checks"));
        }
        if (action == Action::Twice) != checks.contains(&Check::Same) {
            return Err(format!(
                "line {n}: `same` goes with action `twice`, and only there"
            ));
        }
        if id.is_empty() || out.iter().any(|c: &Case| c.id == id) {
            return Err(format!("line {n}: id `{id}` is empty or repeated"));
        }
        out.push(Case {
            id: id.to_string(),
            proves,
            network,
            action,
            timeout,
            needs,
            checks,
            command: command.to_string(),
        });
    }
    Ok(out)
}

/// The shipped corpus.
pub fn cases() -> Vec<Case> {
    // The table is part of the source and parsed by a unit test, so a
    // failure here is a build defect, not input.
    parse(ESCAPES_TSV).unwrap_or_default()
}

/// The result of judging one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Every check held: the attack failed.
    pub refused: bool,
    /// One line per failed check (empty when refused).
    pub failures: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_corpus_parses() {
        let cases = parse(ESCAPES_TSV).expect("parses");
        assert!(cases.len() >= 30, "{}", cases.len());
        for c in &cases {
            assert!(c.command.len() > 3, "{}", c.id);
        }
    }

    #[test]
    fn bad_tables_name_the_line_and_column() {
        for (tsv, want) in [
            ("a\tb", "line 1: 2 columns"),
            ("x\tnope\toff\tonce\t1\t-\tran\techo", "line 1: proves"),
            ("x\tproc\tmaybe\tonce\t1\t-\tran\techo", "net `maybe`"),
            (
                "x\tproc\toff\tonce\t1\t-\tbogus\techo",
                "unknown check `bogus`",
            ),
            ("x\tproc\toff\tonce\t1\t-\tsame\techo", "`same` goes with"),
            ("x\tproc\toff\tonce\tsoon\t-\tran\techo", "timeout `soon`"),
            (
                "# c\n\nx\tproc\toff\tonce\t1\t-\tran\techo\nx\tproc\toff\tonce\t1\t-\tran\techo",
                "line 4: id `x`",
            ),
        ] {
            let e = parse(tsv).expect_err(tsv);
            assert!(e.contains(want), "{tsv:?}: {e}");
        }
    }

    #[test]
    fn check_arguments_unescape_spaces() {
        assert_eq!(
            parse_check("no-marker:Linux\\sversion"),
            Ok(Check::NoMarker("Linux version".into()))
        );
    }
}
