//! pincer run from a terminal: a command must not reach that terminal
//! (write to it, or push keystrokes into it with TIOCSTI). The fake pincer
//! gets a pty as its controlling terminal; the master side is watched.

use crate::support::{self, scratch, sh};
use libtest_mimic::{Failed, Trial};
use rustix::fs::{Mode, OFlags};
use rustix::pty::OpenptFlags;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub fn trials() -> Vec<Trial> {
    vec![Trial::test(
        "tty::the_command_cannot_reach_pincers_terminal",
        tty,
    )]
}

const ATTACK: &str = "echo INJECTED-TEXT > /dev/tty; python3 -c 'import fcntl, termios; fd = open(\"/dev/tty\", \"rb+\", buffering=0); [fcntl.ioctl(fd, termios.TIOCSTI, bytes([c])) for c in b\"QZQZQZ\"]'; echo end";

fn pty() -> Result<(OwnedFd, std::fs::File), Failed> {
    let master =
        rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let name = rustix::pty::ptsname(&master, Vec::new())?;
    let slave = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    rustix::fs::fcntl_setfl(&master, OFlags::NONBLOCK)?;
    Ok((master, std::fs::File::from(slave)))
}

/// What the terminal got within a short while after the run.
fn drain(master: &OwnedFd) -> String {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        let mut buf = [0u8; 4096];
        match rustix::io::read(master, &mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => std::thread::yield_now(),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

fn run_on_tty(cmd: &mut Command) -> Result<(String, String), Failed> {
    let (master, slave) = pty()?;
    let out = cmd
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .output()?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        drain(&master),
    ))
}

fn tty() -> Result<(), Failed> {
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: needs python3");
        return Ok(());
    }
    let dir = scratch();
    // Control: without the sandbox the attack does reach the terminal.
    let (_, term) = run_on_tty(Command::new("setsid").args(["-c", "sh", "-c", ATTACK]))?;
    if !term.contains("INJECTED-TEXT") || !term.contains("QZQZQZ") {
        return Err(format!("the control did not reach the terminal: {term:?}").into());
    }
    let spec = sh(dir.path(), ATTACK);
    let cmd = support::fake_pincer(dir.path(), &spec, 20);
    let mut setsid = Command::new("setsid");
    setsid.arg("-c").arg(cmd.get_program()).args(cmd.get_args());
    let (out, term) = run_on_tty(&mut setsid)?;
    if term.contains("INJECTED") || term.contains("QZQ") || !out.contains("end") {
        return Err(format!("terminal got {term:?}; output {out}").into());
    }
    Ok(())
}
