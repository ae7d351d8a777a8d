//! Where a path word points, after normalisation, and what touching or
//! writing it does.
//!
//! A path is judged on what it names, not on how it is spelled: empty and
//! `.` components are dropped, `..` is applied, `/proc/self/root/…` (and
//! `/proc/PID/root`, `/proc/thread-self/root`, `…/task/TID/root`) is the
//! root, `/proc/self/cwd/…` the working directory, and a relative path is
//! resolved against every directory the command may have `cd`'d to
//! ([`Cwds`]). A component with live glob characters is kept as a pattern
//! and compared with the device tables by [`intersects`], so `/dev/[s]da`
//! and `/d?v/sd*` name a disk. A path that climbs out of the workspace
//! (`../../dev/i2c-1`) may be anywhere above it, the root included.
//!
//! Symbolic links cannot be seen from the text: `/dev/disk/…` and
//! `/dev/block/…` are disks by name, but a link made in the workspace to
//! a device is not followed (that is the OS sandbox's job).

use crate::Risk;
use crate::glob::{intersects, pattern_matches};
use crate::work::tick;

/// How many directories and path readings are kept before giving up
/// ("may be anywhere").
pub(crate) const MAX_ALTERNATIVES: usize = 16;

/// Marks a value that starts at the workspace root (`$HOME` and `~` in the
/// shell tool's environment are the workspace root).
pub(crate) const WS_ROOT: char = '\u{E000}';

/// Marks a value known to be harmless text: not an option, not a path
/// outside the workspace, no glob (`$LANG`, `$?`, a length).
pub(crate) const OPAQUE: char = '\u{E001}';

/// A directory the shell may be in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Dir {
    /// Inside the workspace: components below its root.
    Ws(Vec<String>),
    /// An absolute directory.
    Abs(Vec<String>),
    /// Not known (a `cd` to an expansion, or above the workspace root).
    Unknown,
}

/// Every directory a command may run in: the workspace root, plus what
/// `cd` may have changed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cwds(pub Vec<Dir>);

impl Default for Cwds {
    fn default() -> Self {
        Cwds(vec![Dir::Ws(Vec::new())])
    }
}

impl Cwds {
    pub fn unknown(&self) -> bool {
        self.0.contains(&Dir::Unknown)
    }

    /// Some directory is outside the workspace.
    pub fn leaves_workspace(&self) -> bool {
        self.0.iter().any(|d| !matches!(d, Dir::Ws(_)))
    }

    pub fn add(&mut self, d: Dir) {
        if self.0.contains(&d) {
            return;
        }
        if self.0.len() >= MAX_ALTERNATIVES {
            if !self.unknown() {
                self.0.push(Dir::Unknown);
            }
            return;
        }
        self.0.push(d);
    }

    /// Adds the result of `cd TARGET` from each directory already here.
    pub fn cd(&mut self, target: Option<&[String]>) {
        let Some(targets) = target else {
            self.add(Dir::Unknown);
            return;
        };
        // Once full and unknown, a `cd` can add nothing that matters.
        if self.0.len() > MAX_ALTERNATIVES && self.unknown() {
            return;
        }
        let now = Cwds(self.0.clone());
        for t in targets {
            for loc in locate(t, &now) {
                let d = match loc {
                    Loc::Ws(c) if c.iter().all(|x| !has_glob(x)) => Dir::Ws(c),
                    Loc::Abs(c) if c.iter().all(|x| !has_glob(x)) => Dir::Abs(c),
                    _ => Dir::Unknown,
                };
                self.add(d);
            }
        }
    }

    /// The directories as values of `$PWD` (`None` when one is unknown).
    pub fn values(&self) -> Option<Vec<String>> {
        self.0
            .iter()
            .map(|d| match d {
                Dir::Ws(c) => Some(format!("{WS_ROOT}/{}", c.join("/"))),
                Dir::Abs(c) => Some(format!("/{}", c.join("/"))),
                Dir::Unknown => None,
            })
            .collect()
    }
}

/// Where a path may point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Loc {
    /// Inside the workspace (components may be glob patterns).
    Ws(Vec<String>),
    /// An absolute path (components may be glob patterns).
    Abs(Vec<String>),
    /// Above the workspace root, by these components from an unknown
    /// ancestor (which may be `/`).
    Outside(Vec<String>),
    /// Anywhere.
    Unknown,
}

pub(crate) fn has_glob(component: &str) -> bool {
    let mut esc = false;
    for c in component.chars() {
        if esc {
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if matches!(c, '*' | '?' | '[') {
            return true;
        }
    }
    false
}

/// One component (a pattern) can name something a table pattern names.
fn may_be(component: &str, table_pattern: &str) -> bool {
    if has_glob(component) {
        return intersects(component, table_pattern);
    }
    if component.contains('\\') {
        let mut name = String::with_capacity(component.len());
        let mut esc = false;
        for c in component.chars() {
            if !esc && c == '\\' {
                esc = true;
                continue;
            }
            esc = false;
            name.push(c);
        }
        return pattern_matches(table_pattern, &name);
    }
    pattern_matches(table_pattern, component)
}

/// Every place the pattern `p` (a word's expanded text, glob syntax) may
/// name, from the directories in `cwds`.
pub(crate) fn locate(p: &str, cwds: &Cwds) -> Vec<Loc> {
    tick(p.len() / 8 + 1);
    let mut starts: Vec<Loc> = Vec::new();
    let rest: &str;
    if let Some(r) = p.strip_prefix(WS_ROOT) {
        starts.push(Loc::Ws(Vec::new()));
        rest = r;
    } else if p.starts_with(OPAQUE) {
        return vec![Loc::Ws(vec!["_".into()])];
    } else if let Some(r) = p.strip_prefix('/') {
        starts.push(Loc::Abs(Vec::new()));
        rest = r;
    } else if p == "~" || p.starts_with("~/") {
        starts.push(Loc::Ws(Vec::new()));
        rest = &p[1..];
    } else if p.starts_with('~') {
        return vec![Loc::Unknown];
    } else {
        for d in &cwds.0 {
            starts.push(match d {
                Dir::Ws(c) => Loc::Ws(c.clone()),
                Dir::Abs(c) => Loc::Abs(c.clone()),
                Dir::Unknown => Loc::Unknown,
            });
        }
        rest = p;
    }
    let mut out = Vec::new();
    for s in starts {
        walk(s, rest, cwds, &mut out);
    }
    out
}

/// Applies the components of `rest` to `start`, pushing every result.
fn walk(start: Loc, rest: &str, cwds: &Cwds, out: &mut Vec<Loc>) {
    let mut alts = vec![start];
    for comp in rest.split('/') {
        tick(1);
        if comp.is_empty() || comp == "." {
            continue;
        }
        let mut next = Vec::new();
        for loc in alts {
            // A glob that starts with a literal dot (`.*`) may also match
            // `..` (in dash; bash 5.2 skips it); `*` never does.
            let up =
                comp == ".." || (comp.starts_with('.') && has_glob(comp) && intersects(comp, ".."));
            if up {
                next.push(parent(&loc));
            }
            if comp != ".." {
                next.push(child(loc, comp));
            }
        }
        next.dedup();
        if next.len() > MAX_ALTERNATIVES {
            out.push(Loc::Unknown);
            return;
        }
        alts = next;
    }
    for loc in alts {
        let loc = proc_root(loc, cwds, out);
        if !out.contains(&loc) {
            out.push(loc);
        }
    }
}

fn parent(loc: &Loc) -> Loc {
    match loc {
        Loc::Ws(c) if c.is_empty() => Loc::Outside(Vec::new()),
        Loc::Ws(c) => Loc::Ws(c[..c.len() - 1].to_vec()),
        Loc::Abs(c) => Loc::Abs(c[..c.len().saturating_sub(1)].to_vec()),
        Loc::Outside(c) if c.is_empty() => Loc::Outside(Vec::new()),
        Loc::Outside(c) => Loc::Outside(c[..c.len() - 1].to_vec()),
        Loc::Unknown => Loc::Unknown,
    }
}

fn child(loc: Loc, comp: &str) -> Loc {
    let push = |mut c: Vec<String>| {
        c.push(comp.to_string());
        c
    };
    match loc {
        Loc::Ws(c) => Loc::Ws(push(c)),
        Loc::Abs(c) => Loc::Abs(push(c)),
        Loc::Outside(c) => Loc::Outside(push(c)),
        Loc::Unknown => Loc::Unknown,
    }
}

/// `/proc/self/root/X` is `/X`; `/proc/self/cwd/X` is `X` from the working
/// directory (another process's cwd is unknown); `/proc/self/fd/N` is
/// `/dev/fd/N`.
fn proc_root(loc: Loc, cwds: &Cwds, out: &mut Vec<Loc>) -> Loc {
    let Loc::Abs(mut c) = loc else { return loc };
    loop {
        tick(1);
        let is = |i: usize, p: &str| c.get(i).is_some_and(|x| may_be(x, p));
        let pid = |i: usize| is(i, "self") || is(i, "thread-self") || is(i, "[0-9]*");
        if !(is(0, "proc") && pid(1)) {
            return Loc::Abs(c);
        }
        let mut k = 2;
        if is(2, "task") && is(3, "[0-9]*") {
            k = 4;
        }
        if is(k, "root") {
            c.drain(..=k);
            continue;
        }
        if is(k, "cwd") {
            let rest = c[k + 1..].join("/");
            if !is(1, "self") && !is(1, "thread-self") {
                return Loc::Unknown;
            }
            let mut found = locate(&rest, cwds);
            let first = found.pop().unwrap_or(Loc::Unknown);
            for l in found {
                if !out.contains(&l) {
                    out.push(l);
                }
            }
            return first;
        }
        // Only the shell's own descriptors are its `/dev/fd`; another
        // process's (`/proc/1/fd/1`, init's console) stay as they are.
        if is(k, "fd") && c.len() == k + 2 && (c[1] == "self" || c[1] == "thread-self") {
            return Loc::Abs(vec!["dev".into(), "fd".into(), c[k + 1].clone()]);
        }
        return Loc::Abs(c);
    }
}

/// What a path under `/dev` or `/sys` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// An ordinary file or directory (as far as the text tells).
    Plain,
    /// `/dev/null`, `/dev/stdout`, `/dev/fd/N` and the like.
    Harmless,
    /// A kernel interface under `/proc` or `/sys` that is not a device tree.
    Kernel,
    /// A device node or device tree that is not one of the others.
    Device,
    /// A bus, GPIO line, camera, sensor or serial port.
    Hardware,
    /// Bash's `/dev/tcp/HOST/PORT` and `/dev/udp/…`.
    Network,
    /// A disk, memory or the watchdog: writing it destroys data or stops
    /// the machine.
    Disk,
}

/// Device names that are harmless to read and write. Not `/dev/tty`: the
/// command shares pincer's terminal, and reading or writing it reaches the
/// user's keyboard and screen.
const HARMLESS_DEV: &[&str] = &[
    "null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr",
];

/// Disks, memory and the watchdog (writing one is denied).
pub(crate) const DISK_DEV: &[&str] = &[
    "sd*",
    "hd*",
    "vd*",
    "xvd*",
    "nvme*",
    "mmcblk*",
    "loop*",
    "md*",
    "dm-*",
    "sr*",
    "mtd*",
    "ubi*",
    "nbd*",
    "rbd*",
    "zram*",
    "mem",
    "kmem",
    "port",
    "root",
    "disk",
    "block",
    "mapper",
    "watchdog*",
];

/// Buses, GPIO, cameras, sensors, serial ports and other hardware.
const HARDWARE_DEV: &[&str] = &[
    "i2c*",
    "spidev*",
    "gpiochip*",
    "gpiomem*",
    "video*",
    "media*",
    "v4l*",
    "iio*",
    "tty?*",
    "serial*",
    "hidraw*",
    "bus",
    "char",
    "input",
    "snd",
    "dri",
    "fb*",
    "rtc*",
    "cec*",
    "vchiq",
    "vcio",
    "vcsm*",
    "uinput",
    "pwm*",
    "dma_heap",
    "usb*",
    "ttyAMA*",
];

/// sysfs trees that lead to devices.
const HARDWARE_SYS: &[&str] = &["class", "bus", "devices", "dev", "block", "firmware"];

/// Every class an absolute path (maybe with glob components) may have.
pub(crate) fn classes(c: &[String]) -> Vec<Class> {
    let mut out = Vec::new();
    let mut add = |k: Class| {
        if !out.contains(&k) {
            out.push(k);
        }
    };
    let top = c.first().map(String::as_str);
    let second = c.get(1).map(String::as_str);
    let Some(top) = top else {
        add(Class::Plain);
        return out;
    };
    if may_be(top, "dev") {
        match second {
            None => add(Class::Plain),
            Some(n) => {
                let any = |t: &[&str]| t.iter().any(|p| may_be(n, p));
                let mut special = false;
                if (any(HARMLESS_DEV) && c.len() == 2) || (may_be(n, "fd") && c.len() == 3) {
                    add(Class::Harmless);
                    special = true;
                }
                if any(DISK_DEV) {
                    add(Class::Disk);
                    special = true;
                }
                if may_be(n, "tcp") || may_be(n, "udp") {
                    // Bash's network connections; to dash, a device path
                    // that does not exist.
                    add(Class::Network);
                    add(Class::Device);
                    special = true;
                }
                if any(HARDWARE_DEV) {
                    add(Class::Hardware);
                    special = true;
                }
                // Any other name under /dev, or a glob wide enough to
                // reach one, is some other device.
                if !special || has_glob(n) {
                    add(Class::Device);
                }
            }
        }
    }
    if may_be(top, "sys") {
        let tree = second.is_some_and(|n| HARDWARE_SYS.iter().any(|p| may_be(n, p)))
            || (second.is_some_and(|n| may_be(n, "kernel"))
                && c.get(2).is_some_and(|n| may_be(n, "config")));
        add(if tree { Class::Hardware } else { Class::Kernel });
    }
    if may_be(top, "proc") {
        add(Class::Kernel);
        // Kernel memory, and another process's memory.
        let mem = second.is_some_and(|n| may_be(n, "kcore"))
            || (c.len() == 3
                && second.is_some_and(|n| !may_be(n, "self") || has_glob(n))
                && may_be(&c[2], "mem"));
        if mem {
            add(Class::Device);
        }
    }
    if !may_be(top, "dev") && !may_be(top, "sys") && !may_be(top, "proc") || has_glob(top) {
        add(Class::Plain);
    }
    out
}

/// `Some(what)` when touching a word that may name one of `locs` may reach
/// hardware: a device node other than the harmless ones, a sysfs device
/// tree, or a path that cannot be resolved.
pub(crate) fn hardware(shown: &str, locs: &[Loc]) -> Option<String> {
    for loc in locs {
        let c = match loc {
            Loc::Abs(c) => c.as_slice(),
            // From an unknown ancestor, which may be the root.
            Loc::Outside(c) => c.as_slice(),
            Loc::Unknown => return Some(format!("`{shown}`, a path it cannot resolve")),
            Loc::Ws(_) => continue,
        };
        let k = classes(c);
        let path = format!("/{}", c.join("/"));
        if k.contains(&Class::Hardware) {
            return Some(format!("`{path}`"));
        }
        if k.contains(&Class::Disk) || k.contains(&Class::Device) {
            return Some(format!("`{path}`, a device node"));
        }
    }
    None
}

/// `Some(what)` when reading everything below one of `locs` reads
/// hardware: it is `/`, `/sys`, `/sys/bus`… (above a sysfs device tree),
/// or may be.
pub(crate) fn hardware_below(shown: &str, locs: &[Loc]) -> Option<String> {
    for loc in locs {
        let c = match loc {
            Loc::Abs(c) | Loc::Outside(c) => c,
            Loc::Unknown => return Some(format!("`{shown}`, a directory it cannot resolve")),
            Loc::Ws(_) => continue,
        };
        let above = match c.as_slice() {
            [] => true,
            [top] => may_be(top, "sys") || may_be(top, "dev"),
            [top, second] => {
                may_be(top, "sys")
                    && (HARDWARE_SYS.iter().any(|t| may_be(second, t)) || may_be(second, "kernel"))
            }
            _ => false,
        };
        if above {
            return Some(format!(
                "everything below `/{}`, hardware included",
                c.join("/")
            ));
        }
    }
    None
}

/// What writing a file does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Harmless,
    Risk(Risk, String),
    Deny(String),
}

const STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".inputrc",
    ".gitconfig",
    ".gitattributes",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".envrc",
    ".pam_environment",
    ".wgetrc",
    ".curlrc",
    ".lesskey",
    ".vimrc",
    ".exrc",
    ".pincer",
    ".jq",
];

/// The verdict on writing a file that may be any of `locs` (`shown` is
/// the word as written). The worst reading wins; a write is denied only
/// when the path definitely names a disk (a glob that can name one counts),
/// not when it merely climbs out of the workspace.
pub(crate) fn write_target(shown: &str, locs: &[Loc]) -> Target {
    let mut worst = Target::Harmless;
    let rank = |t: &Target| match t {
        Target::Harmless => 0,
        Target::Risk(Risk::Low, _) => 0,
        Target::Risk(Risk::Medium, _) => 1,
        Target::Risk(Risk::High, _) => 2,
        Target::Deny(_) => 3,
    };
    for loc in locs {
        let t = write_one(shown, loc);
        if rank(&t) > rank(&worst) {
            worst = t;
        }
    }
    worst
}

fn write_one(shown: &str, loc: &Loc) -> Target {
    match loc {
        Loc::Unknown => Target::Risk(
            Risk::High,
            format!("writes `{shown}`, a path it cannot resolve"),
        ),
        Loc::Outside(_) => Target::Risk(
            Risk::High,
            format!("writes `{shown}`, which may be outside the workspace"),
        ),
        Loc::Ws(c) => {
            let may = |p: &str| c.iter().any(|x| may_be(x, p));
            if may(".git") || may(".ssh") || may(".config") {
                return Target::Risk(
                    Risk::High,
                    format!(
                        "writes `{shown}`, configuration that runs code later (hooks, pagers, keys)"
                    ),
                );
            }
            if STARTUP_FILES.iter().any(|f| may(f)) {
                return Target::Risk(
                    Risk::High,
                    format!(
                        "writes `{shown}`, a startup or configuration file that runs code later"
                    ),
                );
            }
            Target::Risk(Risk::Medium, format!("writes `{shown}`"))
        }
        Loc::Abs(c) => {
            let path = format!("/{}", c.join("/"));
            let k = classes(c);
            if k.contains(&Class::Disk) {
                return Target::Deny(format!(
                    "writes the disk, memory or watchdog device `{path}`"
                ));
            }
            if c.len() == 2 && may_be(&c[0], "proc") && may_be(&c[1], "sysrq-trigger") {
                return Target::Deny(format!("writes `{path}`, which can halt the machine"));
            }
            if k.contains(&Class::Network) {
                return Target::Risk(
                    Risk::High,
                    format!("`{path}` opens a network connection (bash)"),
                );
            }
            if k.iter()
                .any(|x| matches!(x, Class::Hardware | Class::Device | Class::Kernel))
            {
                return Target::Risk(
                    Risk::High,
                    format!("writes the device or kernel file `{path}`"),
                );
            }
            if k == [Class::Harmless] {
                return Target::Harmless;
            }
            if c.first().is_some_and(|t| may_be(t, "tmp"))
                || (c.len() >= 2 && may_be(&c[0], "var") && may_be(&c[1], "tmp"))
            {
                if c.iter().any(|x| has_glob(x)) || c.len() < 2 {
                    return Target::Risk(
                        Risk::High,
                        format!("writes `{path}`, outside the workspace"),
                    );
                }
                return Target::Risk(Risk::Medium, format!("writes `{path}`"));
            }
            Target::Risk(
                Risk::High,
                format!("writes `{path}`, outside the workspace"),
            )
        }
    }
}

/// Top-level directories whose second level is still system-wide.
const SYSTEM_TOP: &[&str] = &[
    "usr", "etc", "home", "boot", "var", "bin", "sbin", "lib", "lib32", "lib64", "opt", "root",
    "srv",
];

/// A recursive delete or `chmod -R` of any of `locs` wrecks the system:
/// `/`, a top-level directory, a second level of a system directory
/// (`/usr/lib`, `/home/alice`), or a glob that can be one of these. Only
/// definite (absolute) paths count; one that merely climbs out of the
/// workspace is high, not denied.
pub(crate) fn rootish(locs: &[Loc]) -> Option<String> {
    for loc in locs {
        let Loc::Abs(c) = loc else { continue };
        let hit = match c.as_slice() {
            [] | [_] => true,
            [top, _] => SYSTEM_TOP.iter().any(|t| may_be(top, t)) || has_glob(top),
            _ => false,
        };
        if hit {
            return Some(format!("/{}", c.join("/")));
        }
    }
    None
}

/// Paths a word may hold besides itself: after `=` (`of=/dev/sda`,
/// `--file=/dev/i2c-1`), after `,` or `:` in a list, and after a short
/// option (`-f/dev/x`). At most a few per word, each cut at the next
/// separator, so a word costs time linear in its length.
pub(crate) fn embedded(s: &str) -> Vec<&str> {
    const MAX: usize = 8;
    let mut out = vec![s];
    if let Some(rest) = s.strip_prefix('-')
        && !rest.starts_with('-')
        && let Some(slash) = rest.find('/')
    {
        out.push(&rest[slash..]);
    }
    for (i, c) in s.char_indices() {
        if out.len() >= MAX {
            break;
        }
        if matches!(c, '=' | ',' | ':') {
            let tail = &s[i + 1..];
            let end = tail.find(['=', ',']).unwrap_or(tail.len());
            if end > 0 {
                out.push(&tail[..end]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locs(p: &str) -> Vec<Loc> {
        locate(p, &Cwds::default())
    }

    fn abs(p: &str) -> Loc {
        Loc::Abs(
            p.split('/')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect(),
        )
    }

    #[test]
    fn normalises_spellings_of_one_path() {
        for p in [
            "/dev//sda",
            "/dev/./sda",
            "/dev/x/../sda",
            "/proc/self/root/dev/sda",
            "/proc/1/root/dev/sda",
            "/proc/thread-self/root/proc/self/root/dev/sda",
            "//dev///sda",
        ] {
            assert_eq!(locs(p), [abs("/dev/sda")], "{p}");
        }
        assert_eq!(locs("src/../x"), [Loc::Ws(vec!["x".into()])]);
        assert_eq!(
            locs("../../dev/i2c-1")[0],
            Loc::Outside(vec!["dev".into(), "i2c-1".into()])
        );
    }

    #[test]
    fn cd_is_followed() {
        let mut cwds = Cwds::default();
        cwds.cd(Some(&["/dev".to_string()]));
        assert!(locs("sda").len() == 1);
        let l = locate("sda", &cwds);
        assert!(l.contains(&abs("/dev/sda")), "{l:?}");
        assert!(matches!(write_target("sda", &l), Target::Deny(_)));
        let mut cwds = Cwds::default();
        cwds.cd(Some(&["/".to_string()]));
        assert_eq!(rootish(&locate("*", &cwds)), Some("/*".to_string()));
    }

    #[test]
    fn device_classes() {
        let class = |p: &str| match &locs(p)[0] {
            Loc::Abs(c) => classes(c),
            other => panic!("{other:?}"),
        };
        assert_eq!(class("/dev/null"), [Class::Harmless]);
        assert_eq!(class("/dev/sda1"), [Class::Disk]);
        assert!(class("/dev/[s]da").contains(&Class::Disk));
        assert!(class("/dev/*").contains(&Class::Disk));
        assert!(!class("/dev/[n]ull").contains(&Class::Disk));
        assert_eq!(class("/dev/char/89:1"), [Class::Hardware]);
        assert_eq!(class("/dev/i2c-1"), [Class::Hardware]);
        assert_eq!(class("/sys/class/gpio"), [Class::Hardware]);
        assert_eq!(class("/dev/console"), [Class::Device]);
        assert_eq!(
            class("/dev/tcp/127.0.0.1/80"),
            [Class::Network, Class::Device]
        );
        assert_eq!(class("/etc/passwd"), [Class::Plain]);
        assert!(class("/proc/kcore").contains(&Class::Device));
        assert!(class("/proc/1/mem").contains(&Class::Device));
        assert_eq!(class("/proc/self/mem"), [Class::Kernel]);
        assert_eq!(class("/proc/1/fd/1"), [Class::Kernel]);
        assert_eq!(class("/proc/self/fd/1"), [Class::Harmless]);
    }

    #[test]
    fn embedded_paths() {
        assert_eq!(embedded("of=/dev/sda"), ["of=/dev/sda", "/dev/sda"]);
        assert_eq!(embedded("-f/dev/x"), ["-f/dev/x", "/dev/x"]);
        assert_eq!(embedded("a:/dev/x,y"), ["a:/dev/x,y", "/dev/x", "y"]);
    }
}
