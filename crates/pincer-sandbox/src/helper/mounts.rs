//! The sandbox's mount table, built in the outer helper's new mount
//! namespace (nothing propagates back to the host):
//!
//! - `/tmp`: a fresh tmpfs (size-limited), and `HOME` in it or on a tmpfs
//!   of its own mounted over an existing host directory;
//! - `/dev`: a tmpfs holding bind mounts of the host's `null`, `zero`,
//!   `urandom` and `tty` (and the usual `/proc/self/fd` symlinks), then
//!   made read-only;
//! - `/dev/shm`: a private tmpfs for POSIX shared memory;
//! - `/run` (the host's service sockets), `/sys`, every `hide` path and
//!   the root-only files of `/etc` (`shadow`, `gshadow`, `sudoers`, SSH host
//!   keys): mounted over with an empty read-only tmpfs (a file: with
//!   `/dev/null`).
//!
//! Whatever the spec allows (the workspace, the read-only directories) stays
//! visible at its own path even under a covered directory: it is cloned with
//! `open_tree` before the cover is mounted and moved back on top after.

use super::{Fatal, LayerLog, errno};
use crate::spec::{Layer, Spec};
use rustix::fs::CWD;
use rustix::mount::{MountFlags, MoveMountFlags, OpenTreeFlags};
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;

const DEVICES: [&str; 4] = ["null", "zero", "urandom", "tty"];

/// Root-only files of the system directories, hidden whenever they exist
/// (plus `/etc/ssh/ssh_host_*_key`).
const ROOT_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
];

pub(super) fn setup(spec: &Spec, log: &mut LayerLog<'_>) -> Result<(), Fatal> {
    let have_mnt = log.enforced(Layer::MountNamespace);
    let need = || -> Result<(), String> {
        if have_mnt {
            Ok(())
        } else {
            Err("needs the mount namespace, which is not in place".into())
        }
    };
    let mut keep = vec![Keep {
        path: &spec.workspace,
        read_only: false,
    }];
    keep.extend(spec.read_only.iter().map(|p| Keep {
        path: p,
        read_only: true,
    }));

    log.apply(Layer::PrivateTmp, || {
        need()?;
        private_tmp(spec, &keep).map(|d| ((), d))
    })?;
    log.apply(Layer::Devices, || {
        need()?;
        devices(&keep, spec.limits.tmp_bytes).map(|d| ((), d))
    })?;
    log.apply(Layer::HiddenState, || {
        need()?;
        hide(spec, &keep).map(|d| ((), d))
    })?;
    Ok(())
}

fn cstring(s: String) -> Result<CString, String> {
    CString::new(s).map_err(|_| "mount options contain a NUL byte".to_string())
}

fn tmpfs(target: &Path, flags: MountFlags, options: String) -> Result<(), String> {
    let data = cstring(options)?;
    rustix::mount::mount("tmpfs", target, "tmpfs", flags, data.as_c_str())
        .map_err(|e| format!("mounting a tmpfs on {}: {}", target.display(), errno(e)))
}

fn clone_tree(path: &Path) -> Result<OwnedFd, String> {
    rustix::mount::open_tree(
        CWD,
        path,
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_RECURSIVE,
    )
    .map_err(|e| format!("open_tree {}: {}", path.display(), errno(e)))
}

fn attach(tree: &OwnedFd, at: &Path) -> Result<(), String> {
    rustix::mount::move_mount(tree, "", CWD, at, MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)
        .map_err(|e| format!("move_mount onto {}: {}", at.display(), errno(e)))
}

/// Creates `at` (a directory, or an empty file) with its missing parents,
/// as a mount point inside a freshly mounted tmpfs.
fn mount_point(at: &Path, dir: bool) -> Result<(), String> {
    let made = if dir {
        std::fs::create_dir_all(at)
    } else {
        at.parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|()| std::fs::File::create(at).map(drop))
    };
    made.map_err(|e| format!("creating the mount point {}: {e}", at.display()))
}

/// A path that must stay visible at its own path under a covered
/// directory; `read_only` ones are put back read-only (see [`cover`]).
struct Keep<'a> {
    path: &'a Path,
    read_only: bool,
}

/// Mounts something over `target` with `mount`, keeping every path of
/// `keep` below it visible at its own path. A read-only one is made a
/// read-only mount: under a directory Landlock lets the command write (the
/// private `/tmp`, `HOME`), Landlock's rule for that directory would cover
/// it too, since its rules follow the path up through mount points.
fn cover(
    target: &Path,
    keep: &[Keep<'_>],
    mount: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let mut trees = Vec::new();
    for k in keep {
        let p = k.path;
        if p.starts_with(target) && p != target {
            let Ok(meta) = std::fs::metadata(p) else {
                continue;
            };
            // Flags the source mount has that a remount must keep (in a
            // user namespace they are locked).
            let locked = rustix::fs::statvfs(p)
                .map(|v| {
                    let mut f = MountFlags::empty();
                    for (st, ms) in [
                        (rustix::fs::StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
                        (rustix::fs::StatVfsMountFlags::NODEV, MountFlags::NODEV),
                        (rustix::fs::StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
                    ] {
                        if v.f_flag.contains(st) {
                            f |= ms;
                        }
                    }
                    f
                })
                .unwrap_or(MountFlags::empty());
            trees.push((p, clone_tree(p)?, meta.is_dir(), k.read_only, locked));
        }
    }
    mount()?;
    for (p, tree, dir, read_only, locked) in trees {
        mount_point(p, dir)?;
        attach(&tree, p)?;
        if read_only {
            rustix::mount::mount_remount(p, MountFlags::BIND | MountFlags::RDONLY | locked, "")
                .map_err(|e| format!("making {} read-only: {}", p.display(), errno(e)))?;
        }
    }
    Ok(())
}

fn private_tmp(spec: &Spec, keep: &[Keep<'_>]) -> Result<String, String> {
    let size = spec.limits.tmp_bytes;
    let tmp = Path::new("/tmp");
    if !tmp.is_dir() {
        return Err("/tmp does not exist on this machine".into());
    }
    let flags = MountFlags::NOSUID | MountFlags::NODEV;
    cover(tmp, keep, || {
        tmpfs(tmp, flags, format!("size={size},mode=1777"))
    })?;
    let home = &spec.home;
    if home.starts_with(tmp) {
        std::fs::create_dir_all(home)
            .map_err(|e| format!("creating HOME {}: {e}", home.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("chmod HOME {}: {e}", home.display()))?;
    } else {
        if !home.is_dir() {
            return Err(format!(
                "HOME {} is neither under /tmp nor an existing directory to mount over",
                home.display()
            ));
        }
        cover(home, keep, || {
            tmpfs(home, flags, format!("size={size},mode=0700"))
        })?;
    }
    Ok(format!(
        "tmpfs /tmp ({} MiB), HOME={} empty",
        size >> 20,
        home.display()
    ))
}

fn devices(keep: &[Keep<'_>], tmp_bytes: u64) -> Result<String, String> {
    let dev = Path::new("/dev");
    let mut nodes = Vec::new();
    for name in DEVICES {
        let host = dev.join(name);
        nodes.push((name, clone_tree(&host)?));
    }
    let flags = MountFlags::NOSUID | MountFlags::NOEXEC;
    cover(dev, keep, || tmpfs(dev, flags, "size=64k,mode=0755".into()))?;
    for (name, tree) in &nodes {
        let at = dev.join(name);
        mount_point(&at, false)?;
        attach(tree, &at)?;
    }
    // POSIX shared memory and semaphores (shm_open, sem_open: Python's
    // multiprocessing) live in /dev/shm: a private tmpfs, like /tmp.
    let shm = dev.join("shm");
    mount_point(&shm, true)?;
    tmpfs(
        &shm,
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        format!("size={tmp_bytes},mode=1777"),
    )?;
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(link))
            .map_err(|e| format!("creating /dev/{link}: {e}"))?;
    }
    rustix::mount::mount_remount(dev, flags | MountFlags::RDONLY, "")
        .map_err(|e| format!("making /dev read-only: {}", errno(e)))?;
    Ok(format!(
        "/dev holds only {} (and a private /dev/shm)",
        DEVICES.join(", ")
    ))
}

fn hide(spec: &Spec, keep: &[Keep<'_>]) -> Result<String, String> {
    let ro = MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    let mut done = Vec::new();
    let run = Path::new("/run");
    if run.is_dir() {
        let resolv = std::fs::canonicalize("/etc/resolv.conf").ok();
        let mut keep_run: Vec<Keep<'_>> = keep
            .iter()
            .map(|k| Keep {
                path: k.path,
                read_only: k.read_only,
            })
            .collect();
        // With the network on, name resolution may live under /run
        // (systemd-resolved's resolv.conf): keep that one file, read-only.
        if spec.network
            && let Some(r) = &resolv
            && r.starts_with(run)
        {
            keep_run.push(Keep {
                path: r,
                read_only: true,
            });
        }
        let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
        cover(run, &keep_run, || {
            tmpfs(run, flags, "size=64k,mode=0755".into())
        })?;
        rustix::mount::mount_remount(run, ro, "")
            .map_err(|e| format!("making /run read-only: {}", errno(e)))?;
        done.push("/run".to_string());
    }
    // /sys: Landlock denies it already; as root without capabilities a
    // process could otherwise still write root-owned files there.
    let sys = Path::new("/sys");
    if sys.is_dir() {
        cover(sys, keep, || tmpfs(sys, ro, "size=4k,mode=0755".into()))?;
        done.push("/sys".to_string());
    }
    // Files in the read-only system directories that only root may read:
    // as root, a command without capabilities would still be their owner.
    let mut secrets: Vec<std::path::PathBuf> = ROOT_SECRETS.iter().map(Into::into).collect();
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        secrets.extend(entries.flatten().map(|e| e.path()).filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
        }));
    }
    let mut hidden_secrets = 0;
    for f in &secrets {
        match std::fs::symlink_metadata(f) {
            Ok(m) if m.is_file() => {
                let null = clone_tree(Path::new("/dev/null"))?;
                attach(&null, f)?;
                hidden_secrets += 1;
            }
            Ok(m) if m.is_dir() => {
                cover(f, keep, || tmpfs(f, ro, "size=4k,mode=000".into()))?;
                hidden_secrets += 1;
            }
            _ => {}
        }
    }
    let mut missing = 0;
    for h in &spec.hide {
        match std::fs::symlink_metadata(h) {
            Err(_) => missing += 1,
            Ok(m) if m.is_dir() => {
                cover(h, keep, || {
                    tmpfs(h, ro, "size=4k,nr_inodes=1,mode=000".into())
                })?;
                done.push(h.display().to_string());
            }
            Ok(_) => {
                let null = clone_tree(Path::new("/dev/null"))?;
                attach(&null, h)?;
                done.push(h.display().to_string());
            }
        }
    }
    let mut detail = format!(
        "mounted over with empty read-only: {}; {hidden_secrets} root-only system file(s) (shadow, sudoers, SSH host keys)",
        done.join(", ")
    );
    if missing > 0 {
        detail.push_str(&format!(" ({missing} missing path(s) had nothing to hide)"));
    }
    Ok(detail)
}
