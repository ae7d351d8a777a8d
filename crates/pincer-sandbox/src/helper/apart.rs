//! The helper's two processes leave the command's cgroups once the command
//! runs.
//!
//! They must be in them at first: the outer helper joins the run's cgroups
//! before it creates anything, so that everything is born inside, and a
//! child is born in its parent's cgroup — the command in the init's. But
//! when the command fills its memory limit (a memory hog; a fork bomb,
//! whose kernel memory alone can reach it on a loaded machine, where freed
//! memory waits for RCU), the kernel's OOM killer kills the process of the
//! cgroup with the most memory, and among many small processes that is a
//! helper: the pincer binary's mapped pages alone are a few MB. The init's
//! death takes the sandbox down before it can say how the command ended;
//! the outer helper's leaves pincer with no report at all.
//!
//! So each hierarchy has a cgroup for this pincer's helpers, without
//! limits, beside the runs' (`pincer-<pid>-helpers`, see `cgroup.rs`). The
//! outer helper opens its process list while it still can (before the
//! namespaces; the mount table it builds hides `/sys`), moves itself there
//! once the mount table is built, and hands the open files to the init
//! over the control socket (`SCM_RIGHTS`, received close-on-exec: the
//! command never has them). The init moves itself right after it started
//! the command. Each moves itself, by writing `0`: moving another process
//! takes the kernel's global threadgroup lock and its RCU wait, about 15 ms
//! a run here. The limits then hold the command and everything it starts,
//! and only that; the OOM killer and the pids limit never reach the
//! helpers.
//!
//! In the moment between the command's start and the init's move the init
//! can still be chosen (a command would have to fill its memory limit in
//! it, with processes each smaller than the init); the outer helper then
//! reports the run as [`crate::Outcome::InitDied`], never as a command that
//! did not run.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The helpers' cgroups, opened for moving this process into them.
#[derive(Debug, Default)]
pub(super) struct Apart {
    files: Vec<(PathBuf, File)>,
    problems: Vec<String>,
}

impl Apart {
    /// Opens each helper cgroup's process list (v1: `tasks`, where `0`
    /// moves the writing thread without the kernel's global lock; v2:
    /// `cgroup.procs`). A cgroup that pincer could not make comes with the
    /// reason.
    pub(super) fn open(dirs: &[Result<PathBuf, String>]) -> Apart {
        let mut apart = Apart::default();
        for dir in dirs {
            match dir {
                Ok(dir) => match open_list(dir) {
                    Ok(f) => apart.files.push(f),
                    Err(e) => apart.problems.push(e),
                },
                Err(e) => apart.problems.push(e.clone()),
            }
        }
        apart
    }

    /// The same files, received from the outer helper (`paths` names them).
    pub(super) fn received(fds: Vec<OwnedFd>, paths: &[PathBuf]) -> Apart {
        let mut apart = Apart::default();
        if fds.len() != paths.len() {
            apart.problems.push(format!(
                "the init got {} of the helpers' {} cgroup(s)",
                fds.len(),
                paths.len()
            ));
        }
        apart.files = paths
            .iter()
            .cloned()
            .zip(fds.into_iter().map(File::from))
            .collect();
        apart
    }

    /// The files' paths and descriptors, to hand to the init.
    pub(super) fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|(p, _)| p.clone()).collect()
    }

    pub(super) fn fds(&self) -> Vec<BorrowedFd<'_>> {
        self.files.iter().map(|(_, f)| f.as_fd()).collect()
    }

    /// Moves this process (single-threaded) into the helper cgroups.
    pub(super) fn move_self(&mut self, who: &str) {
        for (path, f) in &mut self.files {
            if let Err(e) = f.write_all(b"0") {
                self.problems
                    .push(format!("moving {who} to {}: {e}", path.display()));
            }
        }
    }

    /// Records why a move could not be tried.
    pub(super) fn problem(&mut self, why: String) {
        self.problems.push(why);
    }

    /// A note for the result if a helper stayed in the command's cgroups.
    pub(super) fn note(&self) -> Option<String> {
        (!self.problems.is_empty()).then(|| {
            format!(
                "note: the sandbox's helpers stayed in the command's cgroups ({}): had the command filled its memory limit, the kernel's OOM killer could have killed them, and the run would have ended without saying how the command did",
                self.problems.join("; ")
            )
        })
    }
}

fn open_list(dir: &Path) -> Result<(PathBuf, File), String> {
    let tasks = dir.join("tasks");
    let path = if tasks.exists() {
        tasks
    } else {
        dir.join("cgroup.procs")
    };
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map(|f| (path.clone(), f))
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}
