//! The escape corpus, case by case, through the sandbox; the same attacks
//! without the sandbox, to show the judge does catch an escape; and the
//! whole self-test as `pincer sandbox check` runs it.

use crate::support::{self, scratch};
use libtest_mimic::{Failed, Trial};
use pincer_sandbox::corpus::{self, Case, Fixture, Observation};
use pincer_sandbox::{Layer, RowResult};
use std::process::Command;

pub fn trials() -> Vec<Trial> {
    let mut out: Vec<Trial> = corpus::cases()
        .into_iter()
        .map(|case| Trial::test(format!("corpus::{}", case.id), move || refused(&case)))
        .collect();
    for id in CONTROLS {
        out.push(Trial::test(format!("corpus::control::{id}"), move || {
            escapes_without_sandbox(id)
        }));
    }
    out.push(Trial::test("corpus::self_test_table", self_test_table));
    out
}

fn refused(case: &Case) -> Result<(), Failed> {
    let dir = scratch();
    let mut fx = Fixture::create(dir.path(), vec![]).map_err(|e| e.to_string())?;
    let row = pincer_sandbox::run_case(&support::sandbox(), &mut fx, case);
    match row.result {
        RowResult::Refused => Ok(()),
        RowResult::Skipped => {
            // Not vacuous: say so in the output.
            eprintln!("{}: skipped: {}", case.id, row.detail);
            Ok(())
        }
        RowResult::Escaped => Err(format!("{}: ESCAPED: {}", case.id, row.detail).into()),
    }
}

/// Attacks that are safe to run on this machine with no sandbox at all
/// (they only touch the fixture), each of which must then get through:
/// proof that the checks can fail.
const CONTROLS: &[&str] = &[
    "read-trail-absolute",
    "read-keys-absolute",
    "read-config-dotdot",
    "read-outside-landlock-only",
    "symlink-made-inside",
    "hardlink-made-inside",
    "list-state",
    "write-outside",
    "write-state",
    "write-read-only-dir",
    "tcp-loopback",
    "unix-socket-in-state",
    "abstract-socket-network-off",
    "host-processes",
    "signal-host-process",
    "environment-and-proc-environ",
    "home-is-private",
    "devices",
    "root-only-system-files",
];

fn escapes_without_sandbox(id: &str) -> Result<(), Failed> {
    let case = corpus::cases()
        .into_iter()
        .find(|c| c.id == id)
        .ok_or("no such case")?;
    let dir = scratch();
    let secret = format!("CONTROL-ENV-SECRET-{}", std::process::id());
    let mut fx = Fixture::create(dir.path(), vec![secret.clone()]).map_err(|e| e.to_string())?;
    if !fx.missing_programs(&case).is_empty() {
        return Ok(());
    }
    fx.arm(&case).map_err(|e| e.to_string())?;
    // What the shell tool did before the sandbox: sh -c in the workspace,
    // HOME = the workspace, and here a secret in its environment.
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(fx.command(&case))
        .current_dir(&fx.ws)
        .env("HOME", &fx.ws)
        .env("PINCER_TEST_API_KEY", &secret)
        .output()
        .map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = fx.judge(&case, &[Observation { text }]);
    if v.refused {
        return Err(format!(
            "{id}: the judge saw no escape without a sandbox, so it proves nothing"
        )
        .into());
    }
    Ok(())
}

fn self_test_table() -> Result<(), Failed> {
    let dir = scratch();
    let report = pincer_sandbox::self_test(&support::sandbox(), dir.path(), vec![])
        .map_err(|e| e.to_string())?;
    let table = report.render();
    if !report.passed() {
        return Err(format!("self-test failed:\n{table}").into());
    }
    // On these machines every layer a default run needs is proven both
    // ways; the user namespace is not needed as root.
    let probe_spec = pincer_sandbox::Spec::new(vec!["true".into()], dir.path(), "t");
    let root = support::sandbox().probe().root;
    for l in &report.layers {
        let must = l.layer.required(&probe_spec, root);
        if (must && l.fails_closed != Some(true)) || l.fails_closed == Some(false) {
            return Err(format!("{} was not shown to fail closed:\n{table}", l.layer).into());
        }
    }
    for l in [
        Layer::LandlockFs,
        Layer::HiddenState,
        Layer::PidNamespace,
        Layer::NetworkNamespace,
        Layer::CgroupMemory,
        Layer::CgroupPids,
        Layer::Capabilities,
        Layer::PrivateTmp,
        Layer::Environment,
        Layer::Devices,
        Layer::LandlockScope,
        Layer::ParentDeath,
    ] {
        let v = report.layers.iter().find(|v| v.layer == l).unwrap();
        if v.enforced != Some(true) {
            return Err(format!("{l} not proven enforced:\n{table}").into());
        }
    }
    if report.landlock_abi.is_none_or(|a| a < 3) {
        return Err(format!("Landlock ABI not reported:\n{table}").into());
    }
    eprintln!("{table}");
    Ok(())
}
