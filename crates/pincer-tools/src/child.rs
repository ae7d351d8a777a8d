//! A child process the shell tool owns and reaps itself, whatever happens
//! to the call. A blocking-pool thread waits for it from the moment it
//! starts, so when the call is dropped (a cancelled turn) the child is
//! killed with its process group and that thread reaps it at once — it is
//! not left a zombie until the runtime next happens to poll (tokio's
//! orphan queue only runs inside the runtime, and a REPL waits for the next
//! line outside it). Signals go through a pidfd, which names this process
//! and no other even after it was reaped.

use rustix::process::{Pid, PidfdFlags, Signal};
use std::io;
use std::os::fd::OwnedFd;
use std::process::{Command, ExitStatus};
use tokio::task::JoinHandle;

pub(crate) struct Watched {
    /// The thread waiting for the child; `None` once its status was taken.
    exit: Option<JoinHandle<io::Result<ExitStatus>>>,
    pidfd: OwnedFd,
    /// The child leads its own process group (the caller set
    /// `process_group(0)`): its pid is the group's id.
    group: Pid,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

impl Watched {
    /// Spawns `cmd`, which must put the child in a process group of its
    /// own (`process_group(0)`). Needs a tokio runtime (its blocking pool).
    pub(crate) fn spawn(cmd: &mut Command) -> io::Result<Watched> {
        let mut child = cmd.spawn()?;
        let opened = i32::try_from(child.id())
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| io::Error::other("the child's pid is out of range"))
            .and_then(|pid| {
                rustix::process::pidfd_open(pid, PidfdFlags::empty())
                    .map(|fd| (pid, fd))
                    .map_err(io::Error::from)
            });
        let (group, pidfd) = match opened {
            Ok(v) => v,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        let exit = tokio::task::spawn_blocking(move || child.wait());
        Ok(Watched {
            exit: Some(exit),
            pidfd,
            group,
        })
    }

    /// Waits for the child to exit (it is reaped by then).
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        let Some(exit) = self.exit.as_mut() else {
            return Err(io::Error::other("the child's status was already taken"));
        };
        let status = exit
            .await
            .map_err(|e| io::Error::other(format!("the waiting thread failed: {e}")))?;
        self.exit = None;
        status
    }

    /// SIGKILLs the child's process group: the child, and whatever it left
    /// in the group. True if any process was there to receive it. (A group
    /// id is not reused while the group has members, so this is safe after
    /// the leader was reaped.)
    pub(crate) fn kill_group(&self) -> bool {
        rustix::process::kill_process_group(self.group, Signal::KILL).is_ok()
    }
}

impl Drop for Watched {
    /// A call dropped while its command runs: kill it (the waiting thread
    /// then reaps it).
    fn drop(&mut self) {
        if self.exit.is_some() {
            self.kill_group();
            let _ = rustix::process::pidfd_send_signal(&self.pidfd, Signal::KILL);
        }
    }
}
