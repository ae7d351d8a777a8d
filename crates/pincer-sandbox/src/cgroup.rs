//! Memory and pids limits through cgroups, on whatever hierarchy the
//! machine has: per controller, cgroup v2 when the unified hierarchy offers
//! it, else the v1 hierarchy that holds it (hybrid machines have memory and
//! pids only in v1). A run's cgroups are children of pincer's own cgroup in
//! each hierarchy, so limits nest under whatever pincer itself is given.
//!
//! The caller side owns a run's cgroups ([`RunCgroups`]): it creates them
//! and writes the limits before the helper starts, the helper joins them
//! before it creates anything, and the caller reads the OOM and pids events,
//! kills whatever is left and removes them after the run — also when the
//! helper was killed.

use crate::report::{LayerStatus, State};
use crate::spec::{Layer, Limits};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CgroupVersion {
    #[serde(rename = "v1")]
    V1,
    #[serde(rename = "v2")]
    V2,
}

impl std::fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        })
    }
}

/// Where runs get a controller: children of `parent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControllerHome {
    pub version: CgroupVersion,
    pub parent: PathBuf,
}

/// What the machine offers for one controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "status")]
pub enum Controller {
    Available(ControllerHome),
    Unavailable { why: String },
}

/// The cgroup hierarchies as pincer sees them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupProbe {
    /// Where the unified (v2) hierarchy is mounted, if it is.
    pub v2_mount: Option<PathBuf>,
    /// The controllers the unified hierarchy offers pincer's cgroup.
    pub v2_controllers: Vec<String>,
    pub memory: Controller,
    pub pids: Controller,
}

impl CgroupProbe {
    /// "v2", "v1", "v1+v2" (hybrid, per controller) or "none".
    pub fn version_used(&self) -> &'static str {
        let v = |c: &Controller| match c {
            Controller::Available(h) => Some(h.version),
            Controller::Unavailable { .. } => None,
        };
        match (v(&self.memory), v(&self.pids)) {
            (None, None) => "none",
            (Some(a), Some(b)) if a != b => "v1+v2",
            (Some(CgroupVersion::V2), _) | (None, Some(CgroupVersion::V2)) => "v2",
            _ => "v1",
        }
    }
}

/// One line of `/proc/self/mountinfo` that is a cgroup mount.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CgroupMount {
    root: String,
    mount_point: PathBuf,
    v2: bool,
    /// v1: the controllers in the super options.
    controllers: Vec<String>,
}

/// `\040`-style escapes of mountinfo fields.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && let Some(oct) = b.get(i + 1..i + 4)
            && oct.iter().all(|d| (b'0'..=b'7').contains(d))
        {
            out.push(
                oct.iter()
                    .fold(0u8, |acc, d| acc.wrapping_mul(8).wrapping_add(d - b'0')),
            );
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        if pre.len() < 5 || post.len() < 3 {
            continue;
        }
        let fstype = post[0];
        let v2 = match fstype {
            "cgroup2" => true,
            "cgroup" => false,
            _ => continue,
        };
        let controllers = if v2 {
            Vec::new()
        } else {
            post[2]
                .split(',')
                .filter(|o| {
                    !matches!(
                        *o,
                        "rw" | "ro" | "xattr" | "noprefix" | "clone_children" | "cpuset_v2_mode"
                    ) && !o.contains('=')
                })
                .map(str::to_string)
                .collect()
        };
        out.push(CgroupMount {
            root: unescape(pre[3]),
            mount_point: PathBuf::from(unescape(pre[4])),
            v2,
            controllers,
        });
    }
    out
}

/// `/proc/self/cgroup`: (v1 controllers or empty for v2, path).
fn parse_proc_cgroup(text: &str) -> Vec<(Vec<String>, String)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let _id = it.next()?;
            let ctrl = it.next()?;
            let path = it.next()?;
            let ctrls = if ctrl.is_empty() {
                Vec::new()
            } else {
                ctrl.split(',').map(str::to_string).collect()
            };
            Some((ctrls, path.to_string()))
        })
        .collect()
}

/// The directory of our cgroup under a mount whose root is `root`.
fn dir_under(mount: &CgroupMount, path: &str) -> Option<PathBuf> {
    let rel = if mount.root == "/" {
        path
    } else {
        path.strip_prefix(mount.root.as_str())?
    };
    let rel = rel.trim_start_matches('/');
    Some(if rel.is_empty() {
        mount.mount_point.clone()
    } else {
        mount.mount_point.join(rel)
    })
}

fn writable(dir: &Path) -> bool {
    rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok()
}

/// Reads the machine's hierarchies from `/proc/self/mountinfo` and
/// `/proc/self/cgroup`.
pub fn detect() -> CgroupProbe {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    detect_from(&mountinfo, &cgroup)
}

fn detect_from(mountinfo: &str, proc_cgroup: &str) -> CgroupProbe {
    let mounts = parse_mountinfo(mountinfo);
    let ours = parse_proc_cgroup(proc_cgroup);
    let v2_mount = mounts.iter().find(|m| m.v2);
    let v2_path = ours
        .iter()
        .find(|(c, _)| c.is_empty())
        .map(|(_, p)| p.as_str());
    let v2_dir = match (v2_mount, v2_path) {
        (Some(m), Some(p)) => dir_under(m, p),
        _ => None,
    };
    let v2_controllers: Vec<String> = v2_dir
        .as_ref()
        .and_then(|d| std::fs::read_to_string(d.join("cgroup.controllers")).ok())
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();

    let find = |name: &str| -> Controller {
        if let Some(dir) = &v2_dir
            && v2_controllers.iter().any(|c| c == name)
        {
            return v2_controller(dir, name);
        }
        let v1 = mounts
            .iter()
            .find(|m| !m.v2 && m.controllers.iter().any(|c| c == name));
        let Some(m) = v1 else {
            let why = match &v2_dir {
                Some(d) => format!(
                    "no cgroup hierarchy offers the {name} controller (cgroup v2 at {} offers: {})",
                    d.display(),
                    if v2_controllers.is_empty() {
                        "nothing".to_string()
                    } else {
                        v2_controllers.join(" ")
                    }
                ),
                None => format!("no cgroup hierarchy offers the {name} controller"),
            };
            return Controller::Unavailable { why };
        };
        let Some((_, path)) = ours.iter().find(|(c, _)| c.iter().any(|c| c == name)) else {
            return Controller::Unavailable {
                why: format!("/proc/self/cgroup has no {name} line"),
            };
        };
        let Some(dir) = dir_under(m, path) else {
            return Controller::Unavailable {
                why: format!("pincer's {name} cgroup {path} is outside the mounted hierarchy"),
            };
        };
        if !writable(&dir) {
            return Controller::Unavailable {
                why: format!(
                    "cannot create cgroups under {} (cgroup v1, not writable: run as root or delegate it)",
                    dir.display()
                ),
            };
        }
        Controller::Available(ControllerHome {
            version: CgroupVersion::V1,
            parent: dir,
        })
    };
    CgroupProbe {
        v2_mount: v2_mount.map(|m| m.mount_point.clone()),
        v2_controllers: v2_controllers.clone(),
        memory: find("memory"),
        pids: find("pids"),
    }
}

/// A v2 controller is usable when our cgroup can hand it to children: it
/// is already in `cgroup.subtree_control`, or can be put there (which the
/// kernel refuses while our cgroup holds processes, unless it is the root).
fn v2_controller(dir: &Path, name: &str) -> Controller {
    let sub = dir.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&sub)
        .map(|s| s.split_whitespace().any(|c| c == name))
        .unwrap_or(false);
    if !writable(dir) {
        return Controller::Unavailable {
            why: format!(
                "cannot create cgroups under {} (cgroup v2, not writable: delegate it to pincer's user)",
                dir.display()
            ),
        };
    }
    if !enabled && let Err(e) = std::fs::write(&sub, format!("+{name}")) {
        return Controller::Unavailable {
            why: format!(
                "cgroup v2: cannot enable {name} for children of {} ({e}); a cgroup that holds processes cannot delegate controllers — run pincer in its own delegated cgroup (systemd: Delegate=yes)",
                dir.display()
            ),
        };
    }
    Controller::Available(ControllerHome {
        version: CgroupVersion::V2,
        parent: dir.to_path_buf(),
    })
}

/// The cgroups of one run.
#[derive(Debug, Default)]
pub(crate) struct RunCgroups {
    /// (directory, version, which layers it serves)
    pub dirs: Vec<(PathBuf, CgroupVersion, Vec<Layer>)>,
    /// Per hierarchy of `dirs`, the cgroup the sandbox's helper processes
    /// move to once the command runs ([`helper_dir`]), or why there is none.
    pub helpers: Vec<Result<PathBuf, String>>,
}

/// Per cgroup layer: what was set up, or why it could not be.
pub(crate) type Results = Vec<(Layer, Result<String, String>)>;

static SEQ: AtomicU64 = AtomicU64::new(0);

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value)
        .map_err(|e| format!("cannot write {value:?} to {}: {e}", path.display()))
}

/// Removes the empty cgroups of pincers that died without cleaning up
/// (`kill -9`): `pincer-<pid>-…` whose pid is gone. A cgroup that still
/// holds processes cannot be removed, so this never disturbs a live run.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("pincer-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// The cgroup of this pincer's sandbox helpers under `parent`, made on
/// first use: no limits, shared by every run (a run's limits are for the
/// command and what it starts, not for the helpers that set it up and
/// report on it); once this pincer is gone, the next one's [`sweep`]
/// removes it.
fn helper_dir(parent: &Path) -> Result<PathBuf, String> {
    let dir = parent.join(format!("pincer-{}-helpers", std::process::id()));
    match std::fs::create_dir(&dir) {
        Ok(()) => Ok(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(dir),
        Err(e) => Err(format!("cannot create {}: {e}", dir.display())),
    }
}

fn mkdir_fresh(parent: &Path) -> Result<PathBuf, String> {
    sweep(parent);
    let base = format!(
        "pincer-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    for attempt in 0..16 {
        let dir = if attempt == 0 {
            parent.join(&base)
        } else {
            parent.join(format!("{base}-{attempt}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Left by an earlier pincer with our pid that was killed;
                // an empty cgroup directory can be removed, a busy one not.
                let _ = std::fs::remove_dir(&dir);
            }
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    Err(format!(
        "cannot create a fresh cgroup under {}",
        parent.display()
    ))
}

impl RunCgroups {
    /// Creates the run's cgroups and writes the limits. Returns the layer
    /// statuses (enforced, or the reason it failed); a failure here is
    /// decided by the caller (fail or degrade).
    pub(crate) fn create(probe: &CgroupProbe, limits: &Limits) -> (RunCgroups, Results) {
        let mut run = RunCgroups::default();
        let mut results = Vec::new();
        let mut v2_dir: Option<PathBuf> = None;
        for (layer, ctrl) in [
            (Layer::CgroupMemory, &probe.memory),
            (Layer::CgroupPids, &probe.pids),
        ] {
            let home = match ctrl {
                Controller::Available(h) => h,
                Controller::Unavailable { why } => {
                    results.push((layer, Err(why.clone())));
                    continue;
                }
            };
            let dir = match (home.version, &v2_dir) {
                (CgroupVersion::V2, Some(d)) => Ok(d.clone()),
                _ => mkdir_fresh(&home.parent),
            };
            let dir = match dir {
                Ok(d) => d,
                Err(e) => {
                    results.push((layer, Err(e)));
                    continue;
                }
            };
            if home.version == CgroupVersion::V2 {
                v2_dir = Some(dir.clone());
            }
            match run.dirs.iter_mut().find(|(d, _, _)| *d == dir) {
                Some((_, _, layers)) => layers.push(layer),
                None => {
                    run.dirs.push((dir.clone(), home.version, vec![layer]));
                    run.helpers.push(helper_dir(&home.parent));
                }
            }
            let r = match layer {
                Layer::CgroupMemory => set_memory(&dir, home.version, limits.memory_bytes),
                _ => write(&dir.join("pids.max"), &limits.pids.to_string()).map(|()| {
                    format!(
                        "cgroup {}: pids.max = {} ({})",
                        home.version,
                        limits.pids,
                        dir.display()
                    )
                }),
            };
            results.push((layer, r));
        }
        (run, results)
    }

    /// The directories the helper joins, with the layers each serves.
    pub(crate) fn joins(&self) -> Vec<(PathBuf, Vec<Layer>)> {
        self.dirs
            .iter()
            .map(|(d, _, l)| (d.clone(), l.clone()))
            .collect()
    }

    fn dir_of(&self, layer: Layer) -> Option<(&Path, CgroupVersion)> {
        self.dirs
            .iter()
            .find(|(_, _, l)| l.contains(&layer))
            .map(|(d, v, _)| (d.as_path(), *v))
    }

    /// Processes the OOM killer killed in the run's memory cgroup.
    pub(crate) fn oom_kills(&self) -> u64 {
        let Some((dir, v)) = self.dir_of(Layer::CgroupMemory) else {
            return 0;
        };
        let file = match v {
            CgroupVersion::V1 => "memory.oom_control",
            CgroupVersion::V2 => "memory.events",
        };
        counter(&dir.join(file), "oom_kill")
    }

    /// Forks refused because the pids limit was reached.
    pub(crate) fn pids_refused(&self) -> u64 {
        self.dir_of(Layer::CgroupPids)
            .map(|(d, _)| counter(&d.join("pids.events"), "max"))
            .unwrap_or(0)
    }

    /// SIGKILLs every process in the run's cgroups; true if there were any.
    pub(crate) fn kill_all(&self) -> bool {
        let mut any = false;
        for (dir, v, _) in &self.dirs {
            if *v == CgroupVersion::V2 && std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
                any |= !procs(dir).is_empty();
                continue;
            }
            // v1 has no cgroup.kill: kill what is listed until nothing is
            // (a process forking meanwhile shows up in the next round).
            for _ in 0..64 {
                let pids = procs(dir);
                if pids.is_empty() {
                    break;
                }
                any = true;
                for pid in pids {
                    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                }
            }
        }
        any
    }

    /// Kills what is left and removes the directories; the error names the
    /// ones that could not be removed in time.
    pub(crate) fn remove(&mut self) -> Result<(), String> {
        let mut left = Vec::new();
        let dirs = std::mem::take(&mut self.dirs);
        for (dir, _, _) in &dirs {
            let deadline = Instant::now() + Duration::from_millis(500);
            let mut pause = Duration::from_micros(100);
            loop {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e) => {
                        if Instant::now() >= deadline {
                            left.push(format!("{} ({e})", dir.display()));
                            break;
                        }
                        // Killed processes leave the cgroup asynchronously.
                        for pid in procs(dir) {
                            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                                let _ = rustix::process::kill_process(
                                    pid,
                                    rustix::process::Signal::KILL,
                                );
                            }
                        }
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_millis(20));
                    }
                }
            }
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "cgroup directories left behind: {}",
                left.join(", ")
            ))
        }
    }
}

impl Drop for RunCgroups {
    /// A run dropped before it finished (a cancelled call): kill what is in
    /// its cgroups and remove them, off the caller's thread if the killed
    /// processes are still on their way out.
    fn drop(&mut self) {
        if self.dirs.is_empty() {
            return;
        }
        self.kill_all();
        let dirs: Vec<PathBuf> = self.dirs.iter().map(|(d, _, _)| d.clone()).collect();
        if dirs.iter().all(|d| std::fs::remove_dir(d).is_ok()) {
            self.dirs.clear();
            return;
        }
        let mut rest = std::mem::take(&mut self.dirs);
        let _ = std::thread::Builder::new()
            .name("pincer-cgroup-cleanup".into())
            .spawn(move || {
                let mut run = RunCgroups {
                    dirs: std::mem::take(&mut rest),
                    helpers: Vec::new(),
                };
                let _ = run.remove();
            });
    }
}

fn set_memory(dir: &Path, v: CgroupVersion, bytes: u64) -> Result<String, String> {
    match v {
        CgroupVersion::V1 => {
            write(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
            // With swap accounting, memory+swap gets the same limit so the
            // limit is not dodged by swapping out.
            let memsw = dir.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                write(&memsw, &bytes.to_string())?;
            }
            let got = std::fs::read_to_string(dir.join("memory.limit_in_bytes"))
                .map_err(|e| format!("cannot read back memory.limit_in_bytes: {e}"))?;
            match got.trim().parse::<u64>() {
                Ok(n) if n <= bytes => Ok(format!(
                    "cgroup v1: memory.limit_in_bytes = {n} ({})",
                    dir.display()
                )),
                _ => Err(format!(
                    "memory.limit_in_bytes reads back {:?}, not at most {bytes}",
                    got.trim()
                )),
            }
        }
        CgroupVersion::V2 => {
            write(&dir.join("memory.max"), &bytes.to_string())?;
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                write(&swap, "0")?;
            }
            Ok(format!(
                "cgroup v2: memory.max = {bytes} ({})",
                dir.display()
            ))
        }
    }
}

fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// `key N` from a flat-keyed cgroup file (`memory.events`, `pids.events`).
fn counter(path: &Path, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0)
}

/// Status lines for the caller-side cgroup results.
pub(crate) fn statuses(results: Results) -> Vec<(Layer, Result<LayerStatus, String>)> {
    results
        .into_iter()
        .map(|(layer, r)| {
            (
                layer,
                r.map(|detail| LayerStatus {
                    layer,
                    state: State::Enforced,
                    detail,
                }),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
25 30 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
27 25 0:24 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,memory
28 25 0:25 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,pids
29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw shared:13 - cgroup cgroup rw,cpu,cpuacct
30 25 0:27 / /sys/fs/cgroup/sys\\040tem rw - cgroup cgroup rw,xattr,name=systemd
";

    #[test]
    fn mountinfo_lists_cgroup_mounts_with_their_controllers() {
        let m = parse_mountinfo(HYBRID);
        assert_eq!(m.len(), 5);
        assert!(m[0].v2);
        assert_eq!(m[1].controllers, ["memory"]);
        assert_eq!(m[3].controllers, ["cpu", "cpuacct"]);
        assert_eq!(m[4].mount_point, PathBuf::from("/sys/fs/cgroup/sys tem"));
        assert!(m[4].controllers.is_empty(), "{:?}", m[4].controllers);
    }

    #[test]
    fn proc_cgroup_lines_are_split() {
        let c = parse_proc_cgroup("4:memory:/a/b\n8:pids:/\n0::/user.slice\n");
        assert_eq!(c[0], (vec!["memory".to_string()], "/a/b".to_string()));
        assert_eq!(c[2], (vec![], "/user.slice".to_string()));
    }

    #[test]
    fn a_cgroup_path_is_placed_under_its_mount() {
        let m = CgroupMount {
            root: "/".into(),
            mount_point: "/sys/fs/cgroup/memory".into(),
            v2: false,
            controllers: vec!["memory".into()],
        };
        assert_eq!(
            dir_under(&m, "/process_api/x"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/x"))
        );
        assert_eq!(
            dir_under(&m, "/"),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        let container = CgroupMount {
            root: "/docker/abc".into(),
            ..m
        };
        assert_eq!(
            dir_under(&container, "/docker/abc/inner"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/inner"))
        );
        assert_eq!(dir_under(&container, "/elsewhere"), None);
    }

    #[test]
    fn a_missing_controller_says_what_v2_offers() {
        // No v1 memory mount and a v2 directory that does not exist here:
        // the controller is unavailable and the reason names the controller.
        let p = detect_from(
            "26 25 0:23 / /nonexistent/unified rw - cgroup2 cgroup2 rw\n",
            "0::/\n",
        );
        match &p.memory {
            Controller::Unavailable { why } => assert!(why.contains("memory"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.version_used(), "none");
    }

    #[test]
    fn flat_keyed_counters_are_read() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("memory.oom_control");
        std::fs::write(&f, "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n").expect("w");
        assert_eq!(counter(&f, "oom_kill"), 3);
        assert_eq!(counter(&f, "missing"), 0);
    }
}
