//! pincer as an ordinary user (uid 65534 here): the user namespace makes
//! the other namespaces possible; there is no cgroup to write, so the run
//! fails closed naming the cgroup layer — or, allowed to degrade, runs and
//! says so, with Landlock and the rest still in force.

use crate::support::{fake_pincer, scratch, sh};
use libtest_mimic::{Failed, Trial};
use pincer_sandbox::Layer;
use std::os::unix::process::CommandExt;
use std::path::Path;

const NOBODY: u32 = 65534;

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("nonroot::without_cgroups_it_fails_closed", fails_closed),
        Trial::test("nonroot::degraded_cgroups_still_sandboxed", degraded),
    ]
}

fn chown_tree(p: &Path) -> std::io::Result<()> {
    let uid = rustix::process::Uid::from_raw(NOBODY);
    let gid = rustix::process::Gid::from_raw(NOBODY);
    rustix::fs::chown(p, Some(uid), Some(gid))?;
    if p.is_dir() {
        for e in std::fs::read_dir(p)? {
            chown_tree(&e?.path())?;
        }
    }
    Ok(())
}

fn staged() -> Result<(tempfile::TempDir, std::path::PathBuf), Failed> {
    let dir = scratch();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws)?;
    chown_tree(dir.path())?;
    // World-readable, so only the sandbox keeps nobody from it.
    std::fs::write(dir.path().join("secret"), "NOBODY-MAY-READ")?;
    Ok((dir, ws))
}

fn as_nobody(dir: &Path, spec: &pincer_sandbox::Spec) -> Result<String, Failed> {
    let out = fake_pincer(dir, spec, 20)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn fails_closed() -> Result<(), Failed> {
    let (dir, ws) = staged()?;
    let spec = sh(&ws, "echo ran > made");
    let text = as_nobody(dir.path(), &spec)?;
    if !text.contains("refused: sandbox layer `cgroup-memory`") || ws.join("made").exists() {
        return Err(text.into());
    }
    Ok(())
}

fn degraded() -> Result<(), Failed> {
    let (dir, ws) = staged()?;
    let script = format!(
        "id -u; grep CapEff /proc/self/status; cat {}; ls /proc; echo ok > made; echo end",
        dir.path().join("secret").display()
    );
    let mut spec = sh(&ws, &script);
    spec.degrade.insert(Layer::CgroupMemory);
    spec.degrade.insert(Layer::CgroupPids);
    let text = as_nobody(dir.path(), &spec)?;
    let ok = text.starts_with(&format!("{NOBODY}\nCapEff:\t0000000000000000\n"))
        && !text.contains("NOBODY-MAY-READ")
        && text.contains("`cgroup-memory` is DEGRADED")
        && text.contains("end\n")
        && ws.join("made").exists();
    if !ok {
        return Err(text.into());
    }
    Ok(())
}
