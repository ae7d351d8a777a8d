//! What the corpus attacks, staged in a scratch directory, and the judge.

use super::{Action, Case, Check, Verdict};
use crate::spec::{Limits, Spec};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{CWD, FileType, Mode, OFlags};
use std::io::{ErrorKind, Read};
use std::net::TcpListener;
use std::os::fd::OwnedFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long the judge waits for a left-behind process to die.
const DIES_WITHIN: Duration = Duration::from_secs(10);

static SEQ: AtomicU64 = AtomicU64::new(0);

/// An unpredictable-enough token for markers and names.
fn token() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    format!(
        "{:x}{:x}{seq:x}",
        nanos & 0xffff_ffff_ffff,
        std::process::id()
    )
}

/// What one run gave back, as the runner saw it: for a run that happened,
/// the output and the result's notes; for a refused run, the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub text: String,
}

/// The staged targets. Dropping it kills the host process and removes the
/// scratch directory.
#[derive(Debug)]
pub struct Fixture {
    /// The scratch directory holding everything below.
    pub base: PathBuf,
    /// A fake `PINCER_HOME`: config, audit trail, keys, memory, sessions,
    /// approvals, a gateway-like Unix socket. Hidden in the sandbox.
    pub home: PathBuf,
    pub ws: PathBuf,
    /// Protected by Landlock alone (not hidden).
    pub outside: PathBuf,
    /// A directory the spec lists as read-only.
    pub ro: PathBuf,
    secrets: Vec<String>,
    env_secrets: Vec<String>,
    tcp: TcpListener,
    unix: UnixListener,
    unix_path: PathBuf,
    abstract_sock: UnixListener,
    abstract_name: String,
    marker: String,
    marker_child: Child,
    gitmarker: String,
    romarker: String,
    fifo: Option<OwnedFd>,
    before: Vec<(String, String)>,
}

fn io_err(what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("{what}: {e}"))
}

fn find_program(name: &str) -> Option<PathBuf> {
    ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

impl Fixture {
    /// Stages the targets in a fresh directory under `parent`.
    /// `env_secrets` are strings of the runner's own environment that must
    /// never show up in a sandboxed command's output.
    pub fn create(parent: &Path, env_secrets: Vec<String>) -> std::io::Result<Fixture> {
        let base = parent.join(format!("pincer-corpus-{}", token()));
        std::fs::create_dir(&base)?;
        let base = std::fs::canonicalize(&base)?;
        let home = base.join("home");
        let ws = base.join("ws");
        let outside = base.join("outside");
        let ro = base.join("ro");
        let t = token();
        let mut secrets = Vec::new();
        let mut put = |rel: &str, what: &str| -> std::io::Result<()> {
            let p = home.join(rel);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d)?;
            }
            let secret = format!("SECRET-{what}-{t}");
            std::fs::write(&p, format!("{secret}\n"))?;
            secrets.push(secret);
            Ok(())
        };
        put("config.toml", "CONFIG")?;
        put("audit/trail.jsonl", "TRAIL")?;
        put("audit/anchor.json", "ANCHOR")?;
        put("keys/api.key", "KEY")?;
        put("memory/pages/garden.md", "MEMORY")?;
        put("sessions/main.jsonl", "SESSION")?;
        put("skills/greet.md", "SKILL")?;
        std::fs::create_dir_all(home.join("approvals"))?;
        std::fs::create_dir_all(&outside)?;
        let outside_secret = format!("SECRET-OUTSIDE-{t}");
        std::fs::write(outside.join("secret.txt"), &outside_secret)?;
        secrets.push(outside_secret);
        std::fs::create_dir_all(&ro)?;
        let romarker = format!("READ-ONLY-{t}");
        std::fs::write(ro.join("file"), &romarker)?;
        std::fs::create_dir_all(&ws)?;
        let gitmarker = format!("GITCONFIG-{t}");
        std::fs::write(
            ws.join(".gitconfig"),
            format!("[user]\n\tname = {gitmarker}\n[core]\n\tpager = echo {gitmarker}\n"),
        )?;

        let tcp = TcpListener::bind("127.0.0.1:0")?;
        tcp.set_nonblocking(true)?;
        let unix_path = home.join("gateway.sock");
        let unix = UnixListener::bind(&unix_path)?;
        unix.set_nonblocking(true)?;
        let abstract_name = format!("pincer-corpus-{t}");
        let addr = SocketAddr::from_abstract_name(abstract_name.as_bytes())?;
        let abstract_sock = UnixListener::bind_addr(&addr)?;
        abstract_sock.set_nonblocking(true)?;

        let marker = format!("pincer-host-marker-{t}");
        let sleep = find_program("sleep").ok_or_else(|| io_err("no sleep program", "not found"))?;
        let marker_child = Command::new(sleep)
            .arg0(&marker)
            .arg("3600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Fixture {
            base,
            home,
            ws,
            outside,
            ro,
            secrets,
            env_secrets,
            tcp,
            unix,
            unix_path,
            abstract_sock,
            abstract_name,
            marker,
            marker_child,
            gitmarker,
            romarker,
            fifo: None,
            before: Vec::new(),
        })
    }

    fn fifo_path(&self) -> PathBuf {
        self.ws.join("corpus.fifo")
    }

    /// The case's script with the placeholders filled in.
    pub fn command(&self, case: &Case) -> String {
        self.expand(&case.command)
    }

    fn expand(&self, s: &str) -> String {
        let port = self.tcp.local_addr().map(|a| a.port()).unwrap_or(0);
        s.replace("{home}", &self.home.display().to_string())
            .replace("{ws}", &self.ws.display().to_string())
            .replace("{outside}", &self.outside.display().to_string())
            .replace("{ro}", &self.ro.display().to_string())
            .replace("{port}", &port.to_string())
            .replace("{unix}", &self.unix_path.display().to_string())
            .replace("{abstract}", &self.abstract_name)
            .replace("{fifo}", &self.fifo_path().display().to_string())
            .replace("{marker}", &self.marker)
            .replace("{hostpid}", &self.marker_child.id().to_string())
            .replace("{gitmarker}", &self.gitmarker)
            .replace("{romarker}", &self.romarker)
    }

    /// `sh -c <script>`.
    pub fn argv(&self, case: &Case) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), self.command(case)]
    }

    /// Limits small enough that the memory hog and the fork bomb hit them
    /// quickly.
    pub fn limits() -> Limits {
        Limits {
            memory_bytes: 128 << 20,
            pids: 64,
            cpu_secs: 60,
            file_bytes: 8 << 20,
            tmp_bytes: 16 << 20,
            ..Limits::default()
        }
    }

    /// The spec a runner should use: the workspace, the fake
    /// `PINCER_HOME` hidden, `{ro}` read-only, the case's network setting.
    pub fn spec(&self, case: &Case) -> Spec {
        let mut spec = Spec::new(self.argv(case), &self.ws, "corpus");
        spec.read_only.push(self.ro.clone());
        spec.hide = vec![self.home.clone()];
        spec.network = case.network;
        spec.limits = Fixture::limits();
        spec.env.insert(
            "PATH".into(),
            "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin".into(),
        );
        spec
    }

    /// Programs the case needs that this machine lacks.
    pub fn missing_programs(&self, case: &Case) -> Vec<String> {
        case.needs
            .iter()
            .filter(|p| find_program(p).is_none())
            .cloned()
            .collect()
    }

    /// Before each run: a fresh FIFO (its read end held here), the state
    /// snapshot, the listeners emptied.
    pub fn arm(&mut self, _case: &Case) -> std::io::Result<()> {
        let path = self.fifo_path();
        self.fifo = None;
        let _ = std::fs::remove_file(&path);
        rustix::fs::mknodat(CWD, &path, FileType::Fifo, Mode::from_raw_mode(0o666), 0)
            .map_err(|e| io_err("mkfifo", e))?;
        let fd = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io_err("opening the FIFO", e))?;
        self.fifo = Some(fd);
        self.before = self.snapshot();
        while self.tcp.accept().is_ok() {}
        while self.unix.accept().is_ok() {}
        while self.abstract_sock.accept().is_ok() {}
        Ok(())
    }

    /// Reads the FIFO until `until` returns true for what was read, EOF
    /// (every writer gone), or the deadline. Returns (what was read, eof).
    fn read_fifo(&self, deadline: Instant, until: impl Fn(&str) -> bool) -> (String, bool) {
        let Some(fd) = &self.fifo else {
            return (String::new(), false);
        };
        let mut got = Vec::new();
        loop {
            if until(&String::from_utf8_lossy(&got)) {
                return (String::from_utf8_lossy(&got).into_owned(), false);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return (String::from_utf8_lossy(&got).into_owned(), false);
            }
            let ts = Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let mut fds = [PollFd::new(fd, PollFlags::IN)];
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => {}
                Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
            }
            let mut buf = [0u8; 4096];
            match rustix::io::read(fd, &mut buf) {
                // EOF: only reported by poll once a writer came and went.
                Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
                Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
            }
        }
    }

    /// For `kill-parent`: waits until the command's child says it is alive.
    pub fn wait_alive(&self, within: Duration) -> bool {
        let (got, _) = self.read_fifo(Instant::now() + within, |s| s.contains("alive"));
        got.contains("alive")
    }

    fn snapshot(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for root in [&self.home, &self.outside, &self.ro] {
            walk(root, &mut out);
        }
        out.sort();
        out
    }

    /// Whether the host process is alive and running, judged once every
    /// signal sent to it has taken effect. Right after `kill -9` returns,
    /// the signal is only queued: the process dies when it next gets a CPU
    /// (on a loaded machine, a while later), then is a zombie until it is
    /// reaped; a `SIGSTOP` likewise stops it only when it runs. Until then
    /// it would pass for alive, and an attack that got through for
    /// refused. So while a signal is pending or the process is exiting,
    /// wait (bounded) for it to die or stop; and look twice before calling
    /// it running: `/proc/PID/status` reads the state before the pending
    /// signals, and a signal taken in between shows only in the next look.
    fn marker_alive(&mut self) -> Result<(), String> {
        let pid = self.marker_child.id();
        let deadline = Instant::now() + DIES_WITHIN;
        // Readable once the process has exited: a wait that ends at once.
        let pidfd = rustix::process::pidfd_open(
            rustix::process::Pid::from_child(&self.marker_child),
            rustix::process::PidfdFlags::empty(),
        )
        .ok();
        let mut looked_running = false;
        loop {
            if let Ok(Some(st)) = self.marker_child.try_wait() {
                return Err(format!("the host process died ({st})"));
            }
            let why = match host_state(pid) {
                HostState::Dead(what) => return Err(format!("the host process died ({what})")),
                HostState::Stopped => {
                    let _ = rustix::process::kill_process(
                        rustix::process::Pid::from_child(&self.marker_child),
                        rustix::process::Signal::CONT,
                    );
                    return Err("the host process was stopped from inside the sandbox".into());
                }
                HostState::Running if looked_running => return Ok(()),
                HostState::Running => {
                    looked_running = true;
                    continue;
                }
                HostState::Changing(why) => why,
            };
            looked_running = false;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "the host process was signalled from inside the sandbox ({why}, still after {}s)",
                    DIES_WITHIN.as_secs()
                ));
            }
            // Until it exits (the pidfd) or a little while, to look again
            // for a stop, which no descriptor reports.
            let step = left.min(Duration::from_millis(5));
            let ts = Timespec {
                tv_sec: 0,
                tv_nsec: i64::from(step.subsec_nanos()),
            };
            match &pidfd {
                Some(fd) => {
                    let mut fds = [PollFd::new(fd, PollFlags::IN)];
                    let _ = rustix::event::poll(&mut fds, Some(&ts));
                }
                None => {
                    let _ = rustix::event::poll(&mut [], Some(&ts));
                }
            }
        }
    }

    /// Judges a case from what its runs gave back (one observation, two
    /// for `twice`).
    pub fn judge(&mut self, case: &Case, runs: &[Observation]) -> Verdict {
        let mut failures = Vec::new();
        let want = if case.action == Action::Twice { 2 } else { 1 };
        if runs.len() != want {
            failures.push(format!("{} run(s) observed, want {want}", runs.len()));
        }
        let all: String = runs
            .iter()
            .map(|r| r.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let short = |s: &str| s.chars().take(600).collect::<String>();
        for check in &case.checks {
            let fail = match check {
                Check::NoSecret => self
                    .secrets
                    .iter()
                    .find(|s| all.contains(s.as_str()))
                    .map(|s| format!("secret {s} is in the output")),
                Check::NoEnvSecret => self
                    .env_secrets
                    .iter()
                    .find(|s| all.contains(s.as_str()))
                    .map(|_| "a value of the parent's environment is in the output".to_string()),
                Check::Untouched => {
                    let now = self.snapshot();
                    (now != self.before).then(|| {
                        let changed: Vec<&String> = now
                            .iter()
                            .filter(|e| !self.before.contains(e))
                            .chain(self.before.iter().filter(|e| !now.contains(e)))
                            .map(|(p, _)| p)
                            .collect();
                        format!("state outside the workspace changed: {changed:?}")
                    })
                }
                Check::NoTcp => accepted(&self.tcp)
                    .then(|| "the TCP listener on 127.0.0.1 got a connection".into()),
                Check::Tcp => (!accepted(&self.tcp)).then(|| {
                    "the TCP listener got no connection (network on should reach it)".into()
                }),
                Check::NoUnix => accepted_unix(&self.unix)
                    .then(|| "the Unix socket in PINCER_HOME got a connection".into()),
                Check::NoAbstract => accepted_unix(&self.abstract_sock)
                    .then(|| "the abstract Unix socket got a connection".into()),
                Check::NoMarker(m) => {
                    let m = self.expand(m);
                    all.contains(&m).then(|| format!("`{m}` is in the output"))
                }
                Check::Contains(m) => {
                    let m = self.expand(m);
                    (!all.contains(&m))
                        .then(|| format!("`{m}` is not in the output: {}", short(&all)))
                }
                Check::Absent(p) => {
                    let p = self.expand(p);
                    std::fs::symlink_metadata(&p)
                        .is_ok()
                        .then(|| format!("{p} exists"))
                }
                Check::AtMost(p, max) => {
                    let p = self.expand(p);
                    match std::fs::metadata(&p) {
                        Ok(m) if m.len() > *max => {
                            Some(format!("{p} is {} bytes, over {max}", m.len()))
                        }
                        Ok(_) => None,
                        Err(e) => Some(format!("{p}: {e} (the attack did not write it)")),
                    }
                }
                Check::Exists(p) => {
                    let p = self.expand(p);
                    std::fs::symlink_metadata(&p)
                        .is_err()
                        .then(|| format!("{p} does not exist"))
                }
                Check::Oom => (!all.contains("memory limit was reached"))
                    .then(|| format!("no OOM kill reported: {}", short(&all))),
                Check::Pids => (!all.contains("process limit was reached"))
                    .then(|| format!("no refused fork reported: {}", short(&all))),
                Check::Dies => {
                    let (got, eof) = self.read_fifo(Instant::now() + DIES_WITHIN, |_| false);
                    if !got.contains("alive") && case.action != Action::KillParent {
                        Some("the background process never said it was alive (the attack did not run)".into())
                    } else if !eof {
                        Some(format!(
                            "a process the command started was still alive {}s after the run",
                            DIES_WITHIN.as_secs()
                        ))
                    } else {
                        None
                    }
                }
                Check::Same => match runs {
                    [a, b] if a == b => None,
                    [a, b] => Some(format!(
                        "the second run differs:\n--- first\n{}\n--- second\n{}",
                        short(&a.text),
                        short(&b.text)
                    )),
                    _ => None,
                },
                Check::NoCaps => {
                    let caps: Vec<&str> = all.lines().filter(|l| l.starts_with("Cap")).collect();
                    let all_zero = caps.iter().all(|l| {
                        l.split_whitespace()
                            .nth(1)
                            .is_some_and(|v| v.chars().all(|c| c == '0'))
                    });
                    (caps.len() < 5 || !all_zero).then(|| format!("capabilities: {caps:?}"))
                }
                Check::MarkerAlive => self.marker_alive().err(),
                Check::Ran => (!all.contains("corpus-ran"))
                    .then(|| format!("the command did not get to its end: {}", short(&all))),
            };
            if let Some(f) = fail {
                failures.push(f);
            }
        }
        Verdict {
            refused: failures.is_empty(),
            failures,
        }
    }
}

/// The host process as `/proc` shows it.
#[derive(Debug, PartialEq, Eq)]
enum HostState {
    /// Gone, or a zombie waiting to be reaped.
    Dead(&'static str),
    Stopped,
    /// Running or sleeping, with no signal waiting to act and not exiting.
    Running,
    /// A signal is queued but not acted on yet, or it is exiting.
    Changing(String),
}

/// `PF_EXITING` in `/proc/PID/stat`'s flags: the process is in `exit`.
const PF_EXITING: u64 = 0x4;

fn host_state(pid: u32) -> HostState {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return HostState::Dead("gone from /proc");
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    match field("State:").and_then(|s| s.chars().next()) {
        None => return HostState::Dead("gone from /proc"),
        Some('Z' | 'X' | 'x') => return HostState::Dead("a zombie"),
        Some('T' | 't') => return HostState::Stopped,
        Some(_) => {}
    }
    // Signals queued to the thread (SigPnd) or the process (ShdPnd).
    for name in ["SigPnd:", "ShdPnd:"] {
        if let Some(mask) = field(name)
            && mask.chars().any(|c| c != '0')
        {
            return HostState::Changing(format!("signals {mask} pending"));
        }
    }
    let flags = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .and_then(|(_, rest)| rest.split_whitespace().nth(6)?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    if flags & PF_EXITING != 0 {
        return HostState::Changing("exiting".into());
    }
    HostState::Running
}

fn accepted(l: &TcpListener) -> bool {
    let mut any = false;
    loop {
        match l.accept() {
            Ok(_) => any = true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return any,
        }
    }
}

fn accepted_unix(l: &UnixListener) -> bool {
    let mut any = false;
    loop {
        match l.accept() {
            Ok(_) => any = true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return any,
        }
    }
}

/// (path, what it is) for everything under `dir`.
fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let what = if meta.is_dir() {
            walk(&p, out);
            "dir".to_string()
        } else if meta.file_type().is_file() {
            let mut s = String::new();
            let _ = std::fs::File::open(&p).and_then(|mut f| f.read_to_string(&mut s));
            format!("file {} {s}", meta.len())
        } else {
            format!("{:?}", meta.file_type())
        };
        out.push((p.display().to_string(), what));
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.marker_child.kill();
        let _ = self.marker_child.wait();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::process::{Pid, Signal, kill_process};

    fn marker_case() -> Case {
        Case {
            id: "marker".into(),
            proves: vec![],
            network: false,
            action: Action::Once,
            timeout: Duration::from_secs(1),
            needs: vec![],
            checks: vec![Check::MarkerAlive],
            command: String::new(),
        }
    }

    /// A fresh fixture whose host process got `signal` (from here, as the
    /// control run's `kill` would) just before the judge looks.
    fn judged_after(signal: Option<Signal>) -> Verdict {
        let dir = tempfile::tempdir().expect("tmp");
        let mut fx = Fixture::create(dir.path(), vec![]).expect("fixture");
        if let Some(sig) = signal {
            kill_process(Pid::from_child(&fx.marker_child), sig).expect("kill");
        }
        fx.judge(
            &marker_case(),
            &[Observation {
                text: String::new(),
            }],
        )
    }

    #[test]
    fn a_host_process_killed_just_now_is_judged_dead() {
        // The judge looks at once: the SIGKILL is queued, perhaps not yet
        // acted on, or the process is a zombie not yet reaped.
        for _ in 0..20 {
            let v = judged_after(Some(Signal::KILL));
            assert!(
                !v.refused && v.failures.iter().any(|f| f.contains("died")),
                "{v:?}"
            );
        }
    }

    #[test]
    fn a_host_process_stopped_just_now_is_judged_stopped() {
        for _ in 0..20 {
            let v = judged_after(Some(Signal::STOP));
            assert!(
                !v.refused && v.failures.iter().any(|f| f.contains("stopped")),
                "{v:?}"
            );
        }
    }

    #[test]
    fn an_untouched_host_process_is_judged_alive() {
        let v = judged_after(None);
        assert!(v.refused, "{v:?}");
    }
}
