//! `pincer sandbox check`: the escape corpus run against this machine's
//! sandbox, and every layer's set-up failure injected to show the command
//! then does not run (and, when that layer may degrade, that the result
//! says so). A layer counts as enforced only if every attack that needs it
//! to hold was refused — judged from outside, never by exit statuses.

use crate::corpus::{self, Action, Case, Fixture, Observation};
use crate::launch::{Sandbox, SandboxError};
use crate::run::{Captured, RunOptions};
use crate::spec::{Layer, Spec};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowResult {
    /// The attack failed (every check held).
    Refused,
    /// The attack got through.
    Escaped,
    /// Not run on this machine (a program it needs is missing).
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelfTestRow {
    pub id: String,
    pub proves: Vec<Layer>,
    pub result: RowResult,
    pub detail: String,
}

/// One layer's line of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerVerdict {
    pub layer: Layer,
    /// Every attack relying on it was refused (`None`: no attack tested it).
    pub enforced: Option<bool>,
    /// With its set-up failing, the command did not run (`None`: the layer
    /// is not required in this configuration, so not tried).
    pub fails_closed: Option<bool>,
    pub attacks: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelfTest {
    pub landlock_abi: Option<u32>,
    pub layers: Vec<LayerVerdict>,
    pub rows: Vec<SelfTestRow>,
}

impl SelfTest {
    /// True when nothing escaped and every tried layer failed closed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.result != RowResult::Escaped)
    }

    /// A plain-text table (layer → enforced, fails closed), then the
    /// attacks that were not refused or were skipped.
    pub fn render(&self) -> String {
        let yn = |v: Option<bool>| match v {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let mut out = format!(
            "{:<20} {:<9} {:<13} attacks\n",
            "layer", "enforced", "fails closed"
        );
        for l in &self.layers {
            out.push_str(&format!(
                "{:<20} {:<9} {:<13} {}\n",
                l.layer.as_str(),
                yn(l.enforced),
                yn(l.fails_closed),
                l.attacks
            ));
        }
        for r in &self.rows {
            if r.result != RowResult::Refused {
                let what = if r.result == RowResult::Skipped {
                    "skipped"
                } else {
                    "ESCAPED"
                };
                out.push_str(&format!("{what}: {}: {}\n", r.id, r.detail));
            }
        }
        let refused = self
            .rows
            .iter()
            .filter(|r| r.result == RowResult::Refused)
            .count();
        out.push_str(&format!("{refused} of {} checks refused", self.rows.len()));
        if let Some(abi) = self.landlock_abi {
            out.push_str(&format!("; Landlock ABI {abi}"));
        }
        out.push('\n');
        out
    }
}

/// The text an observation carries: output and notes, or the refusal.
fn observe(r: Result<Captured, SandboxError>) -> Observation {
    match r {
        Ok(c) => {
            let mut text = c.text();
            for n in c.finished.notes() {
                text.push('\n');
                text.push_str(&n);
            }
            Observation { text }
        }
        Err(e) => Observation {
            text: format!("refused: {e}"),
        },
    }
}

fn opts(case: &Case) -> RunOptions {
    RunOptions {
        timeout: case.timeout,
        output_cap: 256 * 1024,
    }
}

/// Runs one corpus case through `sandbox` (the reference runner): stages
/// it, runs it as its action says, judges it.
pub fn run_case(sandbox: &Sandbox, fx: &mut Fixture, case: &Case) -> SelfTestRow {
    let row = |result, detail: String| SelfTestRow {
        id: case.id.clone(),
        proves: case.proves.clone(),
        result,
        detail,
    };
    let missing = fx.missing_programs(case);
    if !missing.is_empty() {
        return row(RowResult::Skipped, format!("needs {}", missing.join(", ")));
    }
    if let Err(e) = fx.arm(case) {
        return row(RowResult::Escaped, format!("could not stage the case: {e}"));
    }
    let spec = fx.spec(case);
    let runs = match case.action {
        Action::Once => vec![observe(sandbox.run(&spec, &opts(case)))],
        Action::Twice => vec![
            observe(sandbox.run(&spec, &opts(case))),
            observe(sandbox.run(&spec, &opts(case))),
        ],
        Action::KillParent => {
            let fxr: &Fixture = fx;
            vec![observe(sandbox.run_with(&spec, &opts(case), |helper| {
                if fxr.wait_alive(Duration::from_secs(10)) {
                    // SIGKILL the sandbox's parent, as when pincer is killed.
                    let _ = helper.kill();
                    true
                } else {
                    false
                }
            }))]
        }
    };
    let v = fx.judge(case, &runs);
    if v.refused {
        row(RowResult::Refused, "refused".into())
    } else {
        row(RowResult::Escaped, v.failures.join("; "))
    }
}

/// Injects `layer`'s failure: the command must not run; then with the
/// layer allowed to degrade, it must run and the result must say so (or
/// stop at a layer that depends on it).
fn fail_closed(sandbox: &Sandbox, fx: &Fixture, layer: Layer) -> SelfTestRow {
    let marker = fx.ws.join(format!("fail-closed-{layer}"));
    let mut spec = Spec::new(
        vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("echo ran > {}", marker.display()),
        ],
        &fx.ws,
        "corpus",
    );
    spec.limits = Fixture::limits();
    spec.inject_failure = Some(layer);
    let row = |result, detail: String| SelfTestRow {
        id: format!("fail-closed:{layer}"),
        proves: vec![layer],
        result,
        detail,
    };
    let opts = RunOptions {
        timeout: Duration::from_secs(10),
        output_cap: 64 * 1024,
    };
    match sandbox.run(&spec, &opts) {
        Err(SandboxError::Setup { layer: l, .. }) if l == layer => {}
        Err(e) => {
            return row(
                RowResult::Escaped,
                format!("refused, but not naming `{layer}`: {e}"),
            );
        }
        Ok(c) => {
            return row(
                RowResult::Escaped,
                format!(
                    "the command ran although `{layer}` failed (exit {})",
                    c.finished.exit
                ),
            );
        }
    }
    if marker.exists() {
        return row(RowResult::Escaped, "refused, yet the command ran".into());
    }
    spec.degrade.insert(layer);
    let detail = match sandbox.run(&spec, &opts) {
        Ok(c) => {
            let said = c
                .finished
                .notes()
                .iter()
                .any(|n| n.contains(&format!("`{layer}` is DEGRADED")));
            if !said || !marker.exists() {
                return row(
                    RowResult::Escaped,
                    format!("degraded run: ran {}, reported {said}", marker.exists()),
                );
            }
            "refused; with degrade allowed it ran and said so".to_string()
        }
        Err(SandboxError::Setup { layer: dep, .. }) if dep != layer => {
            format!("refused; with degrade allowed, `{dep}` (which needs it) stops the run")
        }
        Err(e) => return row(RowResult::Escaped, format!("degraded run failed: {e}")),
    };
    let _ = std::fs::remove_file(&marker);
    row(RowResult::Refused, detail)
}

/// Runs the whole corpus and the fail-closed checks in a fixture under
/// `scratch` (removed afterwards). `env_secrets`: values from pincer's own
/// environment that must never reach a command (e.g. API keys).
pub fn self_test(
    sandbox: &Sandbox,
    scratch: &Path,
    env_secrets: Vec<String>,
) -> std::io::Result<SelfTest> {
    let mut fx = Fixture::create(scratch, env_secrets)?;
    let cases = corpus::cases();
    let mut rows: Vec<SelfTestRow> = cases
        .iter()
        .map(|c| run_case(sandbox, &mut fx, c))
        .collect();
    let probe_spec = Spec::new(vec!["true".into()], &fx.ws, "corpus");
    let root = sandbox.probe().root;
    let mut closed = Vec::new();
    for layer in Layer::ALL {
        if layer.required(&probe_spec, root) {
            let r = fail_closed(sandbox, &fx, layer);
            closed.push((layer, r.result == RowResult::Refused));
            rows.push(r);
        }
    }
    let landlock_abi = sandbox
        .check_live(&fx.ws)
        .ok()
        .and_then(|f| f.report.and_then(|r| r.landlock_abi));
    let layers = Layer::ALL
        .iter()
        .map(|&layer| {
            let attacks: Vec<&SelfTestRow> = rows
                .iter()
                .filter(|r| !r.id.starts_with("fail-closed:") && r.proves.contains(&layer))
                .filter(|r| r.result != RowResult::Skipped)
                .collect();
            LayerVerdict {
                layer,
                enforced: (!attacks.is_empty())
                    .then(|| attacks.iter().all(|r| r.result == RowResult::Refused)),
                fails_closed: closed.iter().find(|(l, _)| *l == layer).map(|(_, ok)| *ok),
                attacks: attacks.len(),
            }
        })
        .collect();
    Ok(SelfTest {
        landlock_abi,
        layers,
        rows,
    })
}
