//! The command's limits and the sandbox's own processes: the memory
//! limit's OOM killer takes the command's processes, never the helpers,
//! which stay to report how the run ended; and should the init die all the
//! same, the result says that the command ran and how it ended.

use crate::support::{self, opts, scratch, sh};
use libtest_mimic::{Failed, Trial};
use pincer_sandbox::corpus::{Action, Case, Check, Fixture, Observation};
use pincer_sandbox::{Controller, Exit, Layer, Outcome, State};
use std::time::{Duration, Instant};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "limits::oom_kills_the_command_not_the_sandbox",
            oom_spares_the_helpers,
        ),
        Trial::test(
            "limits::a_dead_init_is_reported_as_such",
            dead_init_is_reported,
        ),
    ]
}

/// Many processes of about 1 MB each fill a 16 MiB memory cgroup. Each is
/// smaller than the helper processes (the pincer binary's mapped pages
/// alone are a few MB), so an OOM killer that may choose a helper kills it
/// first, and the run ends without its report ("the sandbox's init ended
/// (signal: 9 (SIGKILL)) without a report", or no report at all). The
/// helpers leave the command's cgroups once it runs: the kernel kills the
/// command's processes, and the run reports the limit that was reached.
fn oom_spares_the_helpers() -> Result<(), Failed> {
    if let Controller::Unavailable { why } = &support::sandbox().probe().cgroup.memory {
        eprintln!(
            "limits::oom_kills_the_command_not_the_sandbox: skipped: no memory cgroup: {why}"
        );
        return Ok(());
    }
    let dir = scratch();
    // The init leaves the command's cgroups right after the command
    // starts: wait for that (bounded) and show where each is. Then each
    // `tail -n 1` holds the 1 MB "line" it has read while its writer
    // (`sleep`, after `head`) keeps the pipe open.
    let mut spec = sh(
        dir.path(),
        "n=0; until grep -q -- -helpers /proc/1/cgroup || [ $n -gt 2000 ]; do n=$((n+1)); done; \
         echo init-apart=$(grep -c -- -helpers /proc/1/cgroup) command-apart=$(grep -c -- -helpers /proc/self/cgroup); \
         i=0; while [ $i -lt 16 ]; do (head -c 1000000 /dev/zero; exec sleep 1) | tail -n 1 > /dev/null & i=$((i+1)); done; wait; echo end",
    );
    spec.limits.memory_bytes = 16 << 20;
    spec.limits.pids = 256;
    let c = support::sandbox()
        .run(&spec, &opts(60))
        .map_err(|e| format!("the run did not report: {e}"))?;
    let f = &c.finished;
    let notes = f.notes().join("\n");
    let text = c.text();
    match f.report.as_ref().map(|r| &r.outcome) {
        Some(Outcome::Exited { .. } | Outcome::Signaled { .. }) => {}
        other => return Err(format!("{other:?}; {notes}").into()),
    }
    if f.oom_kills == 0 || !notes.contains("memory limit was reached") {
        return Err(format!("no OOM kill reported ({}): {notes}", f.oom_kills).into());
    }
    // Where the processes were (before the OOM killer came): the init in
    // the helpers' cgroups, the command in the run's.
    if text.contains("init-apart=0") || !text.contains("command-apart=0") {
        return Err(format!("the init is not apart from the command: {text}").into());
    }
    Ok(())
}

/// The init killed while the command runs (as the OOM killer could where
/// the init cannot leave the command's cgroups): the result says that the
/// command ran, under which layers, and that the sandbox died with it —
/// not that a layer could not be applied and the command did not run
/// (which is what it said before the init said it was starting it).
fn dead_init_is_reported() -> Result<(), Failed> {
    let dir = scratch();
    let mut fx = Fixture::create(dir.path(), vec![])?;
    let case = Case {
        id: "init-killed".into(),
        proves: vec![Layer::PidNamespace],
        network: false,
        // The runner below reads "alive" itself, as for `kill-parent`.
        action: Action::KillParent,
        timeout: Duration::from_secs(30),
        needs: vec![],
        checks: vec![Check::Dies],
        command: "exec 3> {fifo}; echo alive >&3; exec sleep 1000".into(),
    };
    fx.arm(&case)?;
    let spec = fx.spec(&case);
    let fxr: &Fixture = &fx;
    let mut killed = None;
    let run = support::sandbox().run_with(&spec, &opts(30), |helper| {
        if fxr.wait_alive(Duration::from_secs(20))
            && let Some(init) = child_of(helper.id())
        {
            // Once it has left the run's cgroups, right after starting the
            // command (a condition to wait for, bounded).
            let deadline = Instant::now() + Duration::from_secs(10);
            while !in_helpers_cgroup(init) && Instant::now() < deadline {
                std::thread::yield_now();
            }
            killed =
                Some(rustix::process::kill_process(init, rustix::process::Signal::KILL).is_ok());
        }
        false
    });
    if killed != Some(true) {
        return Err(format!("the init was not found and killed ({killed:?}): {run:?}").into());
    }
    let c = run.map_err(|e| format!("reported as a run that did not happen: {e}"))?;
    let f = &c.finished;
    let notes = f.notes().join("\n");
    let report = f.report.as_ref().ok_or("no report")?;
    if !matches!(report.outcome, Outcome::InitDied { .. }) || f.exit != Exit::Signal(9) {
        return Err(format!("{:?}, {}: {notes}", report.outcome, f.exit).into());
    }
    if !notes.contains("init ended (signal: 9 (SIGKILL)) while the command ran")
        || !notes.contains("killed the command")
    {
        return Err(format!("unclear notes: {notes}").into());
    }
    // The layers are those the init reported when the command started.
    if report.state(Layer::LandlockFs) != Some(State::Enforced)
        || report.state(Layer::Capabilities) != Some(State::Enforced)
    {
        return Err(format!("layers missing: {:?}", report.layers).into());
    }
    // And the command died with the init.
    let v = fx.judge(
        &case,
        &[Observation {
            text: String::new(),
        }],
    );
    if !v.refused {
        return Err(format!("{:?}", v.failures).into());
    }
    Ok(())
}

/// The (only) child of `parent`: the outer helper's is the init.
fn child_of(parent: u32) -> Option<rustix::process::Pid> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        let ppid: u32 = stat
            .rsplit_once(") ")?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == parent).then(|| rustix::process::Pid::from_raw(pid))?
    })
}

fn in_helpers_cgroup(pid: rustix::process::Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{}/cgroup", pid.as_raw_nonzero()))
        .is_ok_and(|s| s.contains("-helpers"))
}
