//! A blocking run with captured output and a wall-clock timeout, for
//! callers without an async runtime: `pincer exec`, the self-test, the
//! benchmark. (The shell tool drives [`crate::Prepared`] with tokio.)

use crate::launch::{Finished, Prepared, Sandbox, SandboxError};
use crate::spec::Spec;
use rustix::event::{PollFd, PollFlags, Timespec};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::Child;
use std::time::{Duration, Instant};

/// How long to keep reading after the run was killed: only a process that
/// escaped the sandbox could hold the output open past that.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Wall-clock limit; then the whole sandbox is killed.
    pub timeout: Duration,
    /// Output bytes kept (stdout and stderr together, in order).
    pub output_cap: usize,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            timeout: Duration::from_secs(30),
            output_cap: 1 << 20,
        }
    }
}

/// What a blocking run gives back.
#[derive(Debug)]
pub struct Captured {
    /// The first `output_cap` bytes of stdout and stderr, interleaved.
    pub output: Vec<u8>,
    /// How many bytes were written in all.
    pub output_total: u64,
    pub timed_out: bool,
    pub finished: Finished,
}

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }
}

impl Sandbox {
    /// Runs `spec` to the end (or the timeout) and captures its output.
    pub fn run(&self, spec: &Spec, opts: &RunOptions) -> Result<Captured, SandboxError> {
        self.run_with(spec, opts, |_| false)
    }

    /// [`Sandbox::run`] with `started` called right after the helper was
    /// spawned; it returns true if it killed the run (the self-test kills
    /// the helper mid-run to prove the sandbox dies with it).
    pub fn run_with(
        &self,
        spec: &Spec,
        opts: &RunOptions,
        started: impl FnOnce(&mut Child) -> bool,
    ) -> Result<Captured, SandboxError> {
        let io = |what: &'static str| {
            move |source| SandboxError::Io {
                what: what.into(),
                source,
            }
        };
        let Prepared {
            mut command,
            pending,
        } = self.prepare(spec)?;
        let (mut reader, writer) = std::io::pipe().map_err(io("creating the output pipe"))?;
        let writer2 = writer.try_clone().map_err(io("creating the output pipe"))?;
        command.stdout(writer).stderr(writer2).process_group(0);
        let mut child = command.spawn().map_err(|e| SandboxError::Helper {
            helper: self.helper().display().to_string(),
            message: format!("could not be started: {e}"),
        })?;
        drop(command);
        let killed = started(&mut child);

        let mut output = Vec::new();
        let mut total = 0u64;
        let mut timed_out = false;
        let mut deadline = Instant::now() + opts.timeout;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                if timed_out {
                    break;
                }
                timed_out = true;
                pending.kill();
                let _ = child.kill();
                deadline = Instant::now() + DRAIN_GRACE;
                continue;
            }
            let ts = Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let mut fds = [PollFd::new(&reader, PollFlags::IN)];
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => {}
                Err(e) => {
                    return Err(SandboxError::Io {
                        what: "waiting for output".into(),
                        source: std::io::Error::from_raw_os_error(e.raw_os_error()),
                    });
                }
            }
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    total += n as u64;
                    let room = opts.output_cap.saturating_sub(output.len());
                    output.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io("reading output")(e)),
            }
        }
        let status = child.wait().map_err(io("waiting for the helper"))?;
        let finished = pending.finish(status, timed_out || killed)?;
        Ok(Captured {
            output,
            output_total: total,
            timed_out,
            finished,
        })
    }
}
