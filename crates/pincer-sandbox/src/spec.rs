//! What one sandboxed run is: [`Spec`], its [`Limits`], and the [`Layer`]s
//! the sandbox is made of. A spec is built by pincer from its own config and
//! the tool call, validated ([`Spec::validate`], every error names the field)
//! on both sides of the helper boundary, and never read from the workspace.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Where `HOME` is inside the sandbox when the caller does not choose: a
/// directory created in the private `/tmp`, so it is empty at every start.
pub const DEFAULT_HOME: &str = "/tmp/home";

/// The host directories a command may read and execute from, when they
/// exist. Everything else outside the workspace, the private `/tmp` and
/// `HOME` is denied.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// One mechanism of the sandbox. Each is reported on its own (enforced,
/// degraded, not applied) so the audit entry and `doctor` can say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// `PR_SET_NO_NEW_PRIVS`: exec can never grant privileges (setuid, file caps).
    NoNewPrivs,
    /// The sandbox dies when its parent does (pincer, or the helper above it).
    ParentDeath,
    /// A user namespace, when pincer is not root (it is what makes the other
    /// namespaces possible without privileges).
    UserNamespace,
    /// A private mount table: nothing mounted inside is seen outside.
    MountNamespace,
    /// Its own PID namespace: the command cannot see or signal any host
    /// process, and everything in it dies with it.
    PidNamespace,
    /// Its own network namespace (only a loopback that is down): no network.
    NetworkNamespace,
    /// Its own System V IPC and POSIX message queues.
    IpcNamespace,
    /// Its own host name.
    UtsNamespace,
    /// Its own cgroup root (`/proc/self/cgroup` shows `/`).
    CgroupNamespace,
    /// A read-only `/proc` for the new PID namespace (only the sandbox's
    /// processes).
    Proc,
    /// A `/dev` holding only `null`, `zero`, `urandom` and `tty` (and a
    /// private `/dev/shm`).
    Devices,
    /// A fresh, empty, size-limited `/tmp` and `HOME` (tmpfs), gone at exit.
    PrivateTmp,
    /// pincer's own state, the host's `/run` (service sockets), `/sys` and
    /// root-only files of `/etc` mounted over with empty read-only ones.
    HiddenState,
    /// Landlock filesystem rules: workspace read-write, system directories
    /// read-only, the private `/tmp` and `HOME`, four devices; nothing else.
    LandlockFs,
    /// Landlock TCP rules: no TCP bind or connect (a second layer under the
    /// network namespace, when the network is off).
    LandlockNet,
    /// Landlock scopes: no abstract Unix socket and no signal outside the
    /// sandbox.
    LandlockScope,
    /// A memory limit through a cgroup (v2 `memory.max` or v1
    /// `memory.limit_in_bytes`), with the OOM killer's kills reported.
    CgroupMemory,
    /// A process-count limit through a cgroup (`pids.max`): fork bombs end.
    CgroupPids,
    /// CPU time, open files, core dumps, file size: `setrlimit`, per process.
    Rlimits,
    /// Every capability dropped (bounding, ambient, permitted, effective,
    /// inheritable), also when pincer runs as root.
    Capabilities,
    /// A new session without a controlling terminal: no `TIOCSTI` into the
    /// terminal pincer runs in.
    NoTerminal,
    /// The environment cleared except the allowlist, `HOME` and `PINCER_AGENT`.
    Environment,
}

impl Layer {
    pub const ALL: [Layer; 22] = [
        Layer::NoNewPrivs,
        Layer::ParentDeath,
        Layer::UserNamespace,
        Layer::MountNamespace,
        Layer::PidNamespace,
        Layer::NetworkNamespace,
        Layer::IpcNamespace,
        Layer::UtsNamespace,
        Layer::CgroupNamespace,
        Layer::Proc,
        Layer::Devices,
        Layer::PrivateTmp,
        Layer::HiddenState,
        Layer::LandlockFs,
        Layer::LandlockNet,
        Layer::LandlockScope,
        Layer::CgroupMemory,
        Layer::CgroupPids,
        Layer::Rlimits,
        Layer::Capabilities,
        Layer::NoTerminal,
        Layer::Environment,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Layer::NoNewPrivs => "no-new-privs",
            Layer::ParentDeath => "parent-death",
            Layer::UserNamespace => "user-namespace",
            Layer::MountNamespace => "mount-namespace",
            Layer::PidNamespace => "pid-namespace",
            Layer::NetworkNamespace => "network-namespace",
            Layer::IpcNamespace => "ipc-namespace",
            Layer::UtsNamespace => "uts-namespace",
            Layer::CgroupNamespace => "cgroup-namespace",
            Layer::Proc => "proc",
            Layer::Devices => "devices",
            Layer::PrivateTmp => "private-tmp",
            Layer::HiddenState => "hidden-state",
            Layer::LandlockFs => "landlock-fs",
            Layer::LandlockNet => "landlock-net",
            Layer::LandlockScope => "landlock-scope",
            Layer::CgroupMemory => "cgroup-memory",
            Layer::CgroupPids => "cgroup-pids",
            Layer::Rlimits => "rlimits",
            Layer::Capabilities => "capabilities",
            Layer::NoTerminal => "no-terminal",
            Layer::Environment => "environment",
        }
    }

    /// Whether this run needs the layer. A required layer that cannot be
    /// applied stops the run unless the spec lets it degrade; one that is
    /// not required (a second line of defence, or not needed as root) is
    /// reported as not applied.
    pub fn required(self, spec: &Spec, root: bool) -> bool {
        match self {
            Layer::UserNamespace => !root,
            Layer::NetworkNamespace => !spec.network,
            // With the network on there is no network namespace, so the
            // scope is what keeps the host's abstract Unix sockets away.
            Layer::LandlockScope => spec.network,
            Layer::LandlockNet | Layer::CgroupNamespace => false,
            _ => true,
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Layer {
    type Err = String;
    fn from_str(s: &str) -> Result<Layer, String> {
        Layer::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Layer::ALL.iter().map(|l| l.as_str()).collect();
                format!("unknown sandbox layer `{s}`; known: {}", names.join(", "))
            })
    }
}

/// Resource limits of one run. The wall-clock timeout is the caller's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Memory of the command and everything it starts (cgroup), bytes;
    /// its tmpfs pages count too. The sandbox's two helper processes leave
    /// the run's cgroups once the command runs (the OOM killer must not
    /// take the processes that report on the run).
    pub memory_bytes: u64,
    /// Processes and threads alive at once in the sandbox (cgroup): the
    /// command's, the helpers' only while they start it.
    pub pids: u64,
    /// CPU seconds per process (`RLIMIT_CPU`; SIGXCPU, then SIGKILL).
    pub cpu_secs: u64,
    /// Open file descriptors per process (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Largest file a process may write (`RLIMIT_FSIZE`), bytes.
    pub file_bytes: u64,
    /// Size of the private `/tmp` (and of `HOME`), bytes.
    pub tmp_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: 1 << 30,
            pids: 512,
            cpu_secs: 600,
            open_files: 1024,
            file_bytes: 4 << 30,
            tmp_bytes: 256 << 20,
        }
    }
}

/// The smallest memory limit accepted: the helpers (while they set the run
/// up) and a shell need some.
pub const MIN_MEMORY_BYTES: u64 = 16 << 20;
/// The smallest pids limit accepted: room for the init while it starts the
/// command, a shell and a few commands.
pub const MIN_PIDS: u64 = 8;

/// One sandboxed run. See the crate documentation for what each part does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The program and its arguments (the program is looked up in the
    /// sandbox's `PATH` when it has no `/`).
    pub argv: Vec<String>,
    /// The working directory: the workspace or a directory inside it.
    pub cwd: PathBuf,
    /// The one host directory the command may write (canonical, absolute).
    pub workspace: PathBuf,
    /// Host directories the command may read and execute from.
    pub read_only: Vec<PathBuf>,
    /// Host paths mounted over with an empty, read-only directory (or an
    /// empty file): pincer's own state. Missing ones are skipped.
    pub hide: Vec<PathBuf>,
    /// `HOME` inside the sandbox: a fresh empty tmpfs. Under `/tmp` it is
    /// made in the private `/tmp`; elsewhere it must be an existing host
    /// directory, which is mounted over (hiding the real one).
    pub home: PathBuf,
    /// The allowlisted environment (name → value), e.g. `PATH`, `LANG`.
    /// `HOME` and `PINCER_AGENT` are set by the sandbox and may not be here.
    pub env: BTreeMap<String, String>,
    /// `PINCER_AGENT`: which agent acted, so attribution survives the jail.
    pub agent: String,
    /// Network on: no network namespace (the host's network, as pincer has
    /// it). Off: a namespace with only a loopback that is down.
    pub network: bool,
    pub limits: Limits,
    /// Layers that may degrade on this machine instead of stopping the run.
    /// Empty by default: every required layer or nothing.
    pub degrade: BTreeSet<Layer>,
    /// The command's stdin is a pipe the caller writes
    /// ([`crate::Pending::take_stdin`]) instead of `/dev/null`: for a
    /// long-lived program that speaks over stdin and stdout (an MCP
    /// server). The read end reaches the command over the control socket
    /// (`SCM_RIGHTS`), never through an inherited descriptor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipe_stdin: bool,
    /// Fault injection for tests and `sandbox check`: this layer's set-up
    /// fails as if the machine lacked it (it can only make a run fail or,
    /// when also in `degrade`, degrade — never widen anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inject_failure: Option<Layer>,
}

/// A spec field that is wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox spec: `{field}` {message}")]
pub struct SpecError {
    pub field: String,
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        message: message.into(),
    }
}

/// The existing entries of [`SYSTEM_DIRS`].
pub fn default_read_only() -> Vec<PathBuf> {
    SYSTEM_DIRS
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .collect()
}

impl Spec {
    /// A spec with the defaults: cwd = workspace, the existing system
    /// directories read-only, nothing hidden, `HOME` in the private `/tmp`,
    /// no environment but `HOME` and `PINCER_AGENT`, network off, default
    /// limits, nothing allowed to degrade, stdin `/dev/null`.
    pub fn new(argv: Vec<String>, workspace: impl Into<PathBuf>, agent: &str) -> Spec {
        let workspace = workspace.into();
        Spec {
            argv,
            cwd: workspace.clone(),
            workspace,
            read_only: default_read_only(),
            hide: Vec::new(),
            home: PathBuf::from(DEFAULT_HOME),
            env: BTreeMap::new(),
            agent: agent.to_string(),
            network: false,
            limits: Limits::default(),
            degrade: BTreeSet::new(),
            pipe_stdin: false,
            inject_failure: None,
        }
    }

    /// Checks every field; the error names the first bad one. Pure (no
    /// filesystem access): existence is checked by the helper, which names
    /// the layer that needed the path.
    pub fn validate(&self) -> Result<(), SpecError> {
        match self.argv.first() {
            None => return Err(err("argv", "is empty: give the program to run")),
            Some(p) if p.is_empty() => return Err(err("argv[0]", "is empty")),
            Some(_) => {}
        }
        for (i, a) in self.argv.iter().enumerate() {
            if a.contains('\0') {
                return Err(err(format!("argv[{i}]"), "contains a NUL byte"));
            }
        }
        check_path("workspace", &self.workspace)?;
        if self.workspace == Path::new("/")
            || self.workspace == Path::new("/tmp")
            || self.workspace == Path::new("/run")
        {
            return Err(err(
                "workspace",
                "is `/`, `/tmp` or `/run`: a directory the sandbox replaces or the whole filesystem",
            ));
        }
        for special in ["/proc", "/dev", "/sys"] {
            if self.workspace.starts_with(special) {
                return Err(err("workspace", format!("is under {special}")));
            }
        }
        check_path("cwd", &self.cwd)?;
        if !self.cwd.starts_with(&self.workspace) {
            return Err(err(
                "cwd",
                format!("must be inside the workspace {}", self.workspace.display()),
            ));
        }
        for (i, p) in self.read_only.iter().enumerate() {
            let field = format!("read_only[{i}]");
            check_path(&field, p)?;
            if p == Path::new("/") {
                return Err(err(
                    field,
                    "is `/`: everything, pincer's state included, would be readable",
                ));
            }
        }
        for (i, h) in self.hide.iter().enumerate() {
            let field = format!("hide[{i}]");
            check_path(&field, h)?;
            if h == Path::new("/") {
                return Err(err(field, "is `/`"));
            }
            let allowed = std::iter::once(("workspace", &self.workspace))
                .chain(self.read_only.iter().map(|p| ("read_only", p)))
                .chain(std::iter::once(("home", &self.home)));
            for (what, p) in allowed {
                if p.starts_with(h) {
                    return Err(err(
                        field,
                        format!(
                            "({}) contains the {what} path {}, which must stay visible",
                            h.display(),
                            p.display()
                        ),
                    ));
                }
                if what == "read_only" && h.starts_with(p) {
                    return Err(err(
                        field,
                        format!(
                            "({}) is inside the read-only directory {}: pincer's state must not be readable even if the mount layer is missing",
                            h.display(),
                            p.display()
                        ),
                    ));
                }
            }
        }
        check_path("home", &self.home)?;
        if self.home == Path::new("/") || self.home == Path::new("/tmp") {
            return Err(err(
                "home",
                "must be a directory of its own, not `/` or `/tmp`",
            ));
        }
        // A workspace inside HOME stays visible (it is mounted back on top
        // of the fresh HOME); a HOME inside the workspace cannot be private.
        if self.home.starts_with(&self.workspace) {
            return Err(err(
                "home",
                "must not be inside the workspace (HOME is private and empty)",
            ));
        }
        for (k, v) in &self.env {
            let field = format!("env.{k}");
            let valid_name = k.bytes().enumerate().all(|(i, b)| {
                b == b'_' || b.is_ascii_alphabetic() || (i > 0 && b.is_ascii_digit())
            });
            if k.is_empty() || !valid_name {
                return Err(err(
                    field,
                    "is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)",
                ));
            }
            if k == "HOME" || k == "PINCER_AGENT" {
                return Err(err(field, "is set by the sandbox itself"));
            }
            if v.contains('\0') {
                return Err(err(field, "contains a NUL byte"));
            }
        }
        if self.agent.is_empty() || self.agent.contains('\0') {
            return Err(err("agent", "must be a non-empty name without NUL bytes"));
        }
        let l = &self.limits;
        if l.memory_bytes < MIN_MEMORY_BYTES {
            return Err(err(
                "limits.memory_bytes",
                format!("must be at least {MIN_MEMORY_BYTES}"),
            ));
        }
        if l.pids < MIN_PIDS {
            return Err(err("limits.pids", format!("must be at least {MIN_PIDS}")));
        }
        for (name, v) in [
            ("limits.cpu_secs", l.cpu_secs),
            ("limits.open_files", l.open_files),
            ("limits.file_bytes", l.file_bytes),
            ("limits.tmp_bytes", l.tmp_bytes),
        ] {
            if v == 0 {
                return Err(err(name, "must be at least 1"));
            }
        }
        if l.open_files < 16 {
            return Err(err("limits.open_files", "must be at least 16"));
        }
        Ok(())
    }

    /// The environment the command gets: the allowlist, `HOME`, `PINCER_AGENT`.
    pub fn command_env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("HOME".into(), self.home.display().to_string()));
        env.push(("PINCER_AGENT".into(), self.agent.clone()));
        env.sort();
        env
    }
}

/// Absolute, UTF-8 (the spec travels as JSON) and normal: no `.`/`..`
/// components, so `starts_with` comparisons mean what they say.
fn check_path(field: &str, p: &Path) -> Result<(), SpecError> {
    if p.to_str().is_none() {
        return Err(err(field, "is not valid UTF-8"));
    }
    if !p.is_absolute() {
        return Err(err(field, format!("({}) must be absolute", p.display())));
    }
    if p.components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(err(
            field,
            format!("({}) must not contain `.` or `..`", p.display()),
        ));
    }
    if p.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(err(field, "contains a NUL byte"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec::new(vec!["true".into()], "/srv/ws", "agent-1")
    }

    fn field_of(s: &Spec) -> String {
        s.validate().expect_err("must be refused").field
    }

    #[test]
    fn the_default_spec_is_valid() {
        spec().validate().expect("valid");
    }

    #[test]
    fn every_bad_field_is_named() {
        type Edit = Box<dyn Fn(&mut Spec)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|s| s.argv.clear()), "argv"),
            (Box::new(|s| s.argv = vec![String::new()]), "argv[0]"),
            (
                Box::new(|s| s.argv = vec!["a".into(), "b\0".into()]),
                "argv[1]",
            ),
            (Box::new(|s| s.workspace = "rel".into()), "workspace"),
            (Box::new(|s| s.workspace = "/".into()), "workspace"),
            (Box::new(|s| s.workspace = "/proc/1".into()), "workspace"),
            (Box::new(|s| s.cwd = "/srv/other".into()), "cwd"),
            (Box::new(|s| s.cwd = "/srv/ws/../x".into()), "cwd"),
            (Box::new(|s| s.read_only.push("/".into())), "read_only[9]"),
            (Box::new(|s| s.hide = vec!["/srv".into()]), "hide[0]"),
            (
                Box::new(|s| s.hide = vec!["/usr/share/pincer".into()]),
                "hide[0]",
            ),
            (Box::new(|s| s.home = "/tmp".into()), "home"),
            (Box::new(|s| s.home = "/srv/ws/h".into()), "home"),
            (
                Box::new(|s| {
                    s.env.insert("HOME".into(), "/x".into());
                }),
                "env.HOME",
            ),
            (
                Box::new(|s| {
                    s.env.insert("1A".into(), "x".into());
                }),
                "env.1A",
            ),
            (
                Box::new(|s| {
                    s.env.insert("A".into(), "x\0".into());
                }),
                "env.A",
            ),
            (Box::new(|s| s.agent.clear()), "agent"),
            (
                Box::new(|s| s.limits.memory_bytes = 1),
                "limits.memory_bytes",
            ),
            (Box::new(|s| s.limits.pids = 2), "limits.pids"),
            (Box::new(|s| s.limits.cpu_secs = 0), "limits.cpu_secs"),
            (Box::new(|s| s.limits.tmp_bytes = 0), "limits.tmp_bytes"),
        ];
        for (edit, field) in cases {
            let mut s = spec();
            s.read_only = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
            edit(&mut s);
            assert_eq!(field_of(&s), field, "{s:?}");
        }
    }

    #[test]
    fn layers_round_trip_by_name() {
        for l in Layer::ALL {
            assert_eq!(l.as_str().parse::<Layer>(), Ok(l));
            let json = serde_json::to_string(&l).expect("json");
            assert_eq!(json, format!("\"{}\"", l.as_str()));
        }
        assert!(
            "landlock"
                .parse::<Layer>()
                .unwrap_err()
                .contains("landlock-fs")
        );
    }

    #[test]
    fn the_spec_round_trips_as_json_and_refuses_unknown_fields() {
        let s = spec();
        let json = serde_json::to_string(&s).expect("json");
        assert_eq!(serde_json::from_str::<Spec>(&json).expect("parse"), s);
        let extra = json.replacen('{', "{\"allow_all\":true,", 1);
        assert!(serde_json::from_str::<Spec>(&extra).is_err());
    }

    proptest::proptest! {
        /// Whatever paths a spec is given, one that validates keeps the
        /// working directory in the workspace, hides nothing the command
        /// must see, and has no `..` anywhere (so prefix checks hold).
        #[test]
        fn a_valid_spec_keeps_its_paths_apart(
            ws in "(/[a-z.]{1,3}){1,4}",
            cwd in "(/[a-z.]{1,3}){1,5}",
            hide in proptest::collection::vec("(/[a-z.]{1,3}){1,4}", 0..3),
            home in "(/[a-z.]{1,3}){1,3}",
        ) {
            let mut s = Spec::new(vec!["true".into()], ws.as_str(), "a");
            s.read_only = vec![PathBuf::from("/usr")];
            s.cwd = PathBuf::from(&cwd);
            s.hide = hide.iter().map(PathBuf::from).collect();
            s.home = PathBuf::from(&home);
            if s.validate().is_ok() {
                let all = std::iter::once(&s.workspace).chain(&s.hide).chain([&s.cwd, &s.home]);
                for p in all {
                    proptest::prop_assert!(!p.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)));
                }
                proptest::prop_assert!(s.cwd.starts_with(&s.workspace));
                proptest::prop_assert!(!s.home.starts_with(&s.workspace));
                for h in &s.hide {
                    proptest::prop_assert!(!s.workspace.starts_with(h) && !s.cwd.starts_with(h) && !s.home.starts_with(h));
                    proptest::prop_assert!(!h.starts_with("/usr"));
                }
            }
        }
    }
}
