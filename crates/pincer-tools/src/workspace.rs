//! The directory the agent may touch (TL1).
//!
//! A [`Workspace`] holds an open directory descriptor of its canonical root
//! and resolves every path a tool is given *relative to that descriptor*,
//! never by string concatenation:
//!
//! 1. **Lexical checks** on the model's string: no NUL byte, no `..`
//!    component; an absolute path is accepted only if it names something
//!    under the root, and is then made relative.
//! 2. **The parent directory** of the final component is opened beneath the
//!    root: with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, so the
//!    kernel refuses any symlink or `..` that would leave the root, atomically
//!    with the lookup; where `openat2` does not exist (`ENOSYS` on kernels
//!    before 5.6, or a seccomp filter answering `EPERM`) by walking the
//!    components with `openat(O_NOFOLLOW)`, one held directory descriptor per
//!    level, following symlinks by hand with the same rules
//!    ([`ResolutionMode::ComponentWalk`]).
//! 3. **The final component** is opened relative to that parent descriptor
//!    with `O_NOFOLLOW`. If it is a symlink, its target is appended to the
//!    parent's path and step 2 starts again from the root (at most 40 hops),
//!    so a symlink that stays inside is followed and one that leaves is
//!    refused. A symlink swapped in after the check makes the `O_NOFOLLOW`
//!    open fail instead of escaping.
//! 4. **Protected paths** (pincer's own state) are refused by identity
//!    (device, inode), not by name: the parent directory's chain is walked up
//!    through `..` to the root, and the final object is checked too, so a
//!    protected directory moved or bind-mounted into the workspace, or a
//!    hard link to a protected file, is still denied. A hard link to a file
//!    *inside* a protected directory (`audit/trail.jsonl`, a session, a
//!    memory page) is caught the same way: a file with more than one link
//!    on the device of a protected directory is looked up in an index of
//!    the inodes under the protected directories, built when the first such
//!    file is met in a call (a file with one link has no other name, and a
//!    hard link cannot cross filesystems, so most files never need it). An
//!    index that cannot be built, or would exceed
//!    [`MAX_PROTECTED_ENTRIES`], makes such files refused (fail closed).
//!
//! Absolute symlinks are never followed, even when they point inside the root
//! (that is what `RESOLVE_BENEATH` does; the component walk matches it).
//! Creating, replacing and listing are done with `*at` calls on the held
//! descriptors, so nothing the agent controls is ever turned back into a
//! path string. Everything here is blocking: the tools call it from
//! `spawn_blocking`.
//!
//! Residual risk: a directory that is *renamed* out of the workspace while a
//! call holds its descriptor is still written to (the classic rename race;
//! only someone who can already write outside can do it).

use crate::args::respond;
use pincer_core::tool::ToolError;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

/// Entries of the protected directories indexed at most when looking for
/// the other names of a hard-linked file; beyond that such files are
/// refused rather than checked partially.
pub const MAX_PROTECTED_ENTRIES: usize = 200_000;

/// Symlink hops allowed in one resolution (Linux's own limit is 40).
const MAX_SYMLINK_HOPS: usize = 40;
/// Bound on the `..` walk when checking a directory's ancestors.
const MAX_DEPTH: usize = 4096;
/// `openat2` answers `EAGAIN` when a concurrent rename made it unsure that
/// `..` stayed beneath the root; the caller may retry.
const OPENAT2_RETRIES: usize = 16;

/// How paths are resolved beneath the root (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolutionMode {
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the kernel keeps
    /// every lookup beneath the root.
    Openat2,
    /// `openat2` is unavailable: components are walked one by one with
    /// `openat(O_NOFOLLOW)`, symlinks followed by hand with the same rules.
    ComponentWalk,
}

impl ResolutionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ResolutionMode::Openat2 => "openat2 (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)",
            ResolutionMode::ComponentWalk => {
                "component walk with openat(O_NOFOLLOW) (openat2 unavailable on this kernel)"
            }
        }
    }
}

impl std::fmt::Display for ResolutionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("cannot open workspace root {path}: {source}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("workspace root {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("cannot check protected path {path}: {source}")]
    ProtectedPath {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The root and a protected path overlap; `relation` says how
    /// ("is", "is inside", "contains").
    #[error(
        "workspace root {root} {relation} protected path {protected}: pincer's own state must stay outside the directory the agent may edit"
    )]
    OverlapsProtected {
        root: PathBuf,
        relation: &'static str,
        protected: PathBuf,
    },
    #[error("openat2 is not available on this kernel ({0})")]
    Openat2Unavailable(std::io::Error),
}

/// Identity of a file: survives renames, sees through hard links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(st: &Stat) -> FileId {
        FileId {
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }
}

/// The identities of pincer's state for one call: the protected paths
/// themselves, and (built on first need) the inodes of every file under the
/// protected directories, to catch hard links. See the module doc.
#[derive(Debug)]
pub(crate) struct ProtectedIds {
    ids: Vec<FileId>,
    /// Protected directories with their device.
    dirs: Vec<(PathBuf, u64)>,
    /// (device, inode) of everything under `dirs`; `Err` if it could not be
    /// built completely.
    index: std::cell::OnceCell<Result<std::collections::HashSet<FileId>, String>>,
}

impl ProtectedIds {
    /// Is `st` pincer's state, under any name?
    pub(crate) fn contains(&self, st: &Stat) -> bool {
        let id = FileId::of(st);
        if self.ids.contains(&id) {
            return true;
        }
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory
            || st.st_nlink <= 1
            || !self.dirs.iter().any(|(_, dev)| *dev == id.dev)
        {
            return false;
        }
        match self.index.get_or_init(|| self.build_index()) {
            Ok(index) => index.contains(&id),
            // Cannot tell: refuse.
            Err(_) => true,
        }
    }

    fn contains_dir(&self, id: &FileId) -> bool {
        self.ids.contains(id)
    }

    fn build_index(&self) -> Result<std::collections::HashSet<FileId>, String> {
        let mut index = std::collections::HashSet::new();
        let mut stack: Vec<PathBuf> = self.dirs.iter().map(|(p, _)| p.clone()).collect();
        while let Some(dir) = stack.pop() {
            use std::os::unix::fs::{DirEntryExt, MetadataExt};
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("{}: {e}", dir.display())),
            };
            // d_ino is the inode of anything that is not a mount point, and
            // its device the directory's (a hard link cannot cross
            // filesystems, so only same-device inodes matter).
            let dev = std::fs::symlink_metadata(&dir)
                .map(|m| m.dev())
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            for e in entries {
                let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
                let ft = e
                    .file_type()
                    .map_err(|e| format!("{}: {e}", dir.display()))?;
                if ft.is_dir() {
                    stack.push(e.path());
                    continue;
                }
                index.insert(FileId { dev, ino: e.ino() });
                if index.len() > MAX_PROTECTED_ENTRIES {
                    return Err(format!(
                        "more than {MAX_PROTECTED_ENTRIES} files under pincer's protected directories"
                    ));
                }
            }
        }
        Ok(index)
    }
}

#[derive(Debug)]
struct Protected {
    /// Canonical where it exists (the deepest existing ancestor canonicalised,
    /// the rest appended).
    path: PathBuf,
    /// Its identity when the workspace was opened, if it existed: still
    /// denied if it is later moved into the workspace.
    id_at_open: Option<FileId>,
}

/// The directory the agent may touch. See the module doc for how paths are
/// resolved.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    /// The root as the caller spelled it (made absolute), also accepted as
    /// a prefix of absolute paths.
    given_root: PathBuf,
    root_fd: OwnedFd,
    root_id: FileId,
    protected: Vec<Protected>,
    mode: ResolutionMode,
}

/// Where a path leads, once resolved beneath the root.
#[derive(Debug)]
pub(crate) enum Resolved {
    /// A directory reached by the root itself or a path ending in `..`
    /// (through a symlink); opened `O_RDONLY | O_DIRECTORY`.
    Dir(OwnedFd),
    /// A name in a parent directory (opened `O_RDONLY | O_DIRECTORY`,
    /// beneath the root, its chain checked). The name may not exist yet; it
    /// is never `.`/`..` and never a symlink at the time of the check.
    Child { parent: OwnedFd, name: OsString },
}

/// Converts a rustix errno to a std error for display.
fn io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

impl Workspace {
    /// Opens `root` (canonicalised) as the workspace. `protected` are pincer's
    /// own state directories and files: a root that is, is inside or contains
    /// one is refused, and resolved paths that land in one are denied.
    pub fn open(root: &Path, protected: Vec<PathBuf>) -> Result<Workspace, WorkspaceError> {
        Self::open_inner(root, protected, None)
    }

    /// Like [`Workspace::open`] but with the resolution mode chosen by the
    /// caller: `ComponentWalk` exercises the fallback on a kernel that has
    /// `openat2` (tests, `doctor`); `Openat2` fails if the kernel lacks it.
    pub fn open_with_mode(
        root: &Path,
        protected: Vec<PathBuf>,
        mode: ResolutionMode,
    ) -> Result<Workspace, WorkspaceError> {
        Self::open_inner(root, protected, Some(mode))
    }

    fn open_inner(
        root: &Path,
        protected: Vec<PathBuf>,
        forced: Option<ResolutionMode>,
    ) -> Result<Workspace, WorkspaceError> {
        let root_err = |source| WorkspaceError::Root {
            path: root.to_path_buf(),
            source,
        };
        let given_root = std::path::absolute(root).map_err(root_err)?;
        let canonical = std::fs::canonicalize(root).map_err(root_err)?;
        let root_fd = rustix::fs::open(
            &canonical,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOTDIR => WorkspaceError::NotADirectory(canonical.clone()),
            e => root_err(io(e)),
        })?;
        let root_id = FileId::of(&rustix::fs::fstat(&root_fd).map_err(|e| root_err(io(e)))?);

        let mut prot = Vec::with_capacity(protected.len());
        for p in protected {
            let path =
                normalize_existing_prefix(&p).map_err(|source| WorkspaceError::ProtectedPath {
                    path: p.clone(),
                    source,
                })?;
            let lexical = std::path::absolute(&p).unwrap_or_else(|_| path.clone());
            for candidate in [&path, &lexical] {
                let relation = if *candidate == canonical {
                    Some("is")
                } else if canonical.starts_with(candidate) {
                    Some("is inside")
                } else if candidate.starts_with(&canonical) || candidate.starts_with(&given_root) {
                    Some("contains")
                } else {
                    None
                };
                if let Some(relation) = relation {
                    return Err(WorkspaceError::OverlapsProtected {
                        root: canonical,
                        relation,
                        protected: p,
                    });
                }
            }
            let id_at_open = rustix::fs::stat(&path).ok().map(|st| FileId::of(&st));
            if id_at_open == Some(root_id) {
                return Err(WorkspaceError::OverlapsProtected {
                    root: canonical,
                    relation: "is",
                    protected: p,
                });
            }
            prot.push(Protected { path, id_at_open });
        }

        let probe = rustix::fs::openat2(
            &root_fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        );
        let mode = match (probe, forced) {
            (Ok(_), None | Some(ResolutionMode::Openat2)) => ResolutionMode::Openat2,
            (_, Some(ResolutionMode::ComponentWalk)) => ResolutionMode::ComponentWalk,
            (Err(Errno::NOSYS | Errno::PERM), None) => ResolutionMode::ComponentWalk,
            (Err(e @ (Errno::NOSYS | Errno::PERM)), Some(ResolutionMode::Openat2)) => {
                return Err(WorkspaceError::Openat2Unavailable(io(e)));
            }
            (Err(e), _) => return Err(root_err(io(e))),
        };

        Ok(Workspace {
            root: canonical,
            given_root,
            root_fd,
            root_id,
            protected: prot,
            mode,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How paths are resolved on this machine (for `doctor` and results).
    pub fn resolution_mode(&self) -> ResolutionMode {
        self.mode
    }

    /// The protected paths, normalised.
    pub fn protected_paths(&self) -> Vec<&Path> {
        self.protected.iter().map(|p| p.path.as_path()).collect()
    }

    /// Turns the model's path string into validated relative components
    /// (all `Component::Normal`; empty means the root itself).
    pub(crate) fn relative(&self, user: &str) -> Result<Vec<OsString>, ToolError> {
        if user.contains('\0') {
            return Err(respond(format!(
                "path {user:?} contains a NUL byte; file names cannot"
            )));
        }
        if user.is_empty() {
            return Err(respond(
                "path is empty; give a path relative to the workspace root (\".\" is the root)",
            ));
        }
        let p = Path::new(user);
        let rel = if p.is_absolute() {
            match p
                .strip_prefix(&self.root)
                .or_else(|_| p.strip_prefix(&self.given_root))
            {
                Ok(r) => r,
                Err(_) => {
                    return Err(respond(format!(
                        "path `{user}` is outside the workspace ({}); use a path relative to the workspace root",
                        self.root.display()
                    )));
                }
            }
        } else {
            p
        };
        let mut out = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => out.push(n.to_os_string()),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(respond(format!(
                        "path `{user}`: `..` components are not allowed; give the path from the workspace root without `..`"
                    )));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(respond(format!(
                        "path `{user}` is outside the workspace ({})",
                        self.root.display()
                    )));
                }
            }
        }
        Ok(out)
    }

    /// Resolves the model's path beneath the root (see the module doc). With
    /// `create_dirs`, missing parent directories of the given path are made.
    pub(crate) fn resolve(&self, user: &str, create_dirs: bool) -> Result<Resolved, ToolError> {
        let mut comps = self.relative(user)?;
        let protected = self.protected_ids();
        let mut create = create_dirs;
        for _ in 0..=MAX_SYMLINK_HOPS {
            let Some(last) = comps.last() else {
                let dir = self.open_dir(&[]).map_err(|e| self.map_err(user, e))?;
                return Ok(Resolved::Dir(dir));
            };
            if last == ".." || last == "." {
                let dir = self.open_dir(&comps).map_err(|e| self.map_err(user, e))?;
                self.check_chain(dir.as_fd(), user, &protected)?;
                return Ok(Resolved::Dir(dir));
            }
            let name = last.clone();
            let parent_comps = &comps[..comps.len() - 1];
            let parent = if create {
                self.open_or_create_dirs(parent_comps)
            } else {
                self.open_dir(parent_comps)
            }
            .map_err(|e| match e {
                Errno::NOENT => respond(format!(
                    "the parent directory of `{user}` does not exist{}",
                    if create_dirs {
                        ""
                    } else {
                        " (file_write can create it with create_dirs: true)"
                    }
                )),
                e => self.map_err(user, e),
            })?;
            create = false;
            self.check_chain(parent.as_fd(), user, &protected)?;
            match rustix::fs::statat(&parent, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    let target = rustix::fs::readlinkat(&parent, name.as_os_str(), Vec::new())
                        .map_err(|e| self.map_err(user, e))?;
                    let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                    if target.is_absolute() {
                        return Err(respond(format!(
                            "path `{user}` leads to a symlink to the absolute path {}; absolute symlinks are not followed (only relative symlinks that stay inside the workspace are)",
                            target.display()
                        )));
                    }
                    let mut next = parent_comps.to_vec();
                    for c in target.components() {
                        match c {
                            Component::Normal(n) => next.push(n.to_os_string()),
                            Component::ParentDir => next.push(OsString::from("..")),
                            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                        }
                    }
                    comps = next;
                }
                Ok(st) => {
                    if protected.contains(&st) {
                        return Err(protected_err(user));
                    }
                    return Ok(Resolved::Child { parent, name });
                }
                Err(Errno::NOENT) => return Ok(Resolved::Child { parent, name }),
                Err(e) => return Err(self.map_err(user, e)),
            }
        }
        Err(respond(format!(
            "path `{user}`: too many levels of symlinks"
        )))
    }

    /// Refuses an opened object that is pincer's state under any name: a
    /// protected path, or a hard link to one or to a file inside one.
    pub(crate) fn check_not_protected(&self, st: &Stat, user: &str) -> Result<(), ToolError> {
        if self.protected_ids().contains(st) {
            return Err(protected_err(user));
        }
        Ok(())
    }

    /// True when `st` is in `ids` (from [`Workspace::protected_ids`]); for
    /// callers that check many entries with one set (one index build).
    pub(crate) fn is_protected(st: &Stat, ids: &ProtectedIds) -> bool {
        ids.contains(st)
    }

    /// Maps a resolution errno to a message for the model naming the path.
    pub(crate) fn map_err(&self, user: &str, e: Errno) -> ToolError {
        let msg = match e {
            Errno::XDEV => format!(
                "path `{user}` escapes the workspace (through a symlink or `..`); only paths inside the workspace root are allowed"
            ),
            Errno::LOOP => format!(
                "path `{user}`: too many levels of symlinks, or a symlink appeared where a file or directory was expected (it may have changed while being opened)"
            ),
            Errno::NOENT => format!("`{user}` does not exist"),
            Errno::NOTDIR => format!("path `{user}`: a component of the path is not a directory"),
            Errno::ACCESS | Errno::PERM => format!("`{user}`: permission denied"),
            Errno::NAMETOOLONG => format!("path `{user}` is too long"),
            e => format!("`{user}`: {}", io(e)),
        };
        respond(msg)
    }

    /// Identities of the protected paths: as they were at open, and as they
    /// are now; and the directories whose files are indexed on demand.
    pub(crate) fn protected_ids(&self) -> ProtectedIds {
        let mut ids = Vec::with_capacity(self.protected.len() * 2);
        let mut dirs = Vec::new();
        for p in &self.protected {
            if let Some(id) = p.id_at_open {
                ids.push(id);
            }
            if let Ok(st) = rustix::fs::stat(&p.path) {
                let id = FileId::of(&st);
                if !ids.contains(&id) {
                    ids.push(id);
                }
                if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                    dirs.push((p.path.clone(), id.dev));
                }
            }
        }
        ProtectedIds {
            ids,
            dirs,
            index: std::cell::OnceCell::new(),
        }
    }

    /// Opens the directory named by `comps` (which may contain `..` from
    /// symlink targets) beneath the root, `O_RDONLY | O_DIRECTORY`.
    pub(crate) fn open_dir(&self, comps: &[OsString]) -> Result<OwnedFd, Errno> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match self.mode {
            ResolutionMode::Openat2 => {
                let mut path = PathBuf::from(".");
                for c in comps {
                    path.push(c);
                }
                let mut last = Errno::AGAIN;
                for _ in 0..OPENAT2_RETRIES {
                    match rustix::fs::openat2(
                        &self.root_fd,
                        &path,
                        flags,
                        Mode::empty(),
                        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
                    ) {
                        Err(Errno::AGAIN) => last = Errno::AGAIN,
                        other => return other,
                    }
                }
                Err(last)
            }
            ResolutionMode::ComponentWalk => self.walk_dir(comps, flags),
        }
    }

    /// The `openat(O_NOFOLLOW)` walk: one held descriptor per level, `..`
    /// pops a level (and fails at the root), relative symlinks are expanded
    /// in place, absolute ones refused — `RESOLVE_BENEATH`'s rules.
    fn walk_dir(&self, comps: &[OsString], flags: OFlags) -> Result<OwnedFd, Errno> {
        let mut queue: VecDeque<OsString> = comps.iter().cloned().collect();
        let mut stack: Vec<OwnedFd> = Vec::new();
        let mut hops = 0usize;
        while let Some(c) = queue.pop_front() {
            if c.is_empty() || c == "." {
                continue;
            }
            if c == ".." {
                if stack.pop().is_none() {
                    return Err(Errno::XDEV);
                }
                continue;
            }
            let cur: BorrowedFd<'_> = match stack.last() {
                Some(fd) => fd.as_fd(),
                None => self.root_fd.as_fd(),
            };
            let st = rustix::fs::statat(cur, c.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
            if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(Errno::LOOP);
                }
                let target = rustix::fs::readlinkat(cur, c.as_os_str(), Vec::new())?;
                let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                if target.is_absolute() {
                    return Err(Errno::XDEV);
                }
                for comp in target.components().rev() {
                    match comp {
                        Component::Normal(n) => queue.push_front(n.to_os_string()),
                        Component::ParentDir => queue.push_front(OsString::from("..")),
                        Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                    }
                }
                continue;
            }
            let fd = rustix::fs::openat(
                cur,
                c.as_os_str(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            // O_PATH | O_NOFOLLOW opens a symlink itself rather than failing:
            // one swapped in since the stat is expanded on the next round.
            if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) == FileType::Symlink {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(Errno::LOOP);
                }
                queue.push_front(c);
                continue;
            }
            stack.push(fd);
        }
        let cur: BorrowedFd<'_> = match stack.last() {
            Some(fd) => fd.as_fd(),
            None => self.root_fd.as_fd(),
        };
        rustix::fs::openat(cur, ".", flags, Mode::empty())
    }

    /// Opens the directory `comps` (plain names only), creating missing
    /// levels one by one, each `mkdirat` relative to a descriptor that was
    /// itself resolved beneath the root.
    fn open_or_create_dirs(&self, comps: &[OsString]) -> Result<OwnedFd, Errno> {
        match self.open_dir(comps) {
            Err(Errno::NOENT) => {}
            other => return other,
        }
        let mut cur = self.open_dir(&[])?;
        for i in 0..comps.len() {
            cur = match self.open_dir(&comps[..=i]) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(
                        &cur,
                        comps[i].as_os_str(),
                        Mode::from_raw_mode(0o755),
                    ) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e),
                    }
                    // ENOENT again here means a dangling symlink sits there.
                    self.open_dir(&comps[..=i])?
                }
                Err(e) => return Err(e),
            };
        }
        Ok(cur)
    }

    /// Walks from `dir` up through `..` to the root, refusing a protected
    /// directory on the way, or a directory that is no longer under the root.
    fn check_chain(
        &self,
        dir: BorrowedFd<'_>,
        user: &str,
        protected: &ProtectedIds,
    ) -> Result<(), ToolError> {
        let e = |e| self.map_err(user, e);
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut cur = rustix::fs::openat(dir, ".", flags, Mode::empty()).map_err(e)?;
        for _ in 0..MAX_DEPTH {
            let id = FileId::of(&rustix::fs::fstat(&cur).map_err(e)?);
            if protected.contains_dir(&id) {
                return Err(protected_err(user));
            }
            if id == self.root_id {
                return Ok(());
            }
            let up = rustix::fs::openat(&cur, "..", flags, Mode::empty()).map_err(e)?;
            if FileId::of(&rustix::fs::fstat(&up).map_err(e)?) == id {
                break; // reached `/` without meeting the root
            }
            cur = up;
        }
        Err(respond(format!(
            "path `{user}` is no longer inside the workspace (a directory on the way was moved)"
        )))
    }
}

fn protected_err(user: &str) -> ToolError {
    respond(format!(
        "path `{user}` is denied: it is inside a protected path (pincer's own state: sessions, audit, memory, keys)"
    ))
}

/// Makes `p` absolute and canonical as far as it exists: the deepest
/// existing ancestor is canonicalised and the missing rest appended
/// (with `..` applied lexically, since there is nothing to follow).
fn normalize_existing_prefix(p: &Path) -> std::io::Result<PathBuf> {
    let abs = std::path::absolute(p)?;
    let comps: Vec<Component<'_>> = abs.components().collect();
    for i in (1..=comps.len()).rev() {
        let prefix: PathBuf = comps[..i].iter().collect();
        match std::fs::canonicalize(&prefix) {
            Ok(mut c) => {
                for part in &comps[i..] {
                    match part {
                        Component::ParentDir => {
                            c.pop();
                        }
                        Component::Normal(n) => c.push(n),
                        Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                    }
                }
                return Ok(c);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), vec![]).unwrap();
        (dir, ws)
    }

    #[test]
    fn relative_paths_are_split_into_plain_names() {
        let (_d, ws) = ws();
        let names = |s: &str| -> Vec<String> {
            ws.relative(s)
                .unwrap()
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names("a/b.txt"), ["a", "b.txt"]);
        assert_eq!(names("./a//b/"), ["a", "b"]);
        assert!(names(".").is_empty());
        let abs = ws.root().join("x/y");
        assert_eq!(names(abs.to_str().unwrap()), ["x", "y"]);
        assert!(names(ws.root().to_str().unwrap()).is_empty());
    }

    #[test]
    fn lexical_refusals_name_the_path() {
        let (_d, ws) = ws();
        for (p, want) in [
            ("../secret", "`..`"),
            ("a/../../secret", "`..`"),
            ("/etc/passwd", "outside the workspace"),
            ("", "empty"),
            ("a\0b", "NUL"),
        ] {
            match ws.relative(p) {
                Err(ToolError::RespondToModel(m)) => assert!(m.contains(want), "{p:?}: {m}"),
                other => panic!("{p:?}: {other:?}"),
            }
        }
        let inside_with_dotdot = format!("{}/../x", ws.root().display());
        assert!(ws.relative(&inside_with_dotdot).is_err());
    }

    #[test]
    fn normalize_appends_missing_parts() {
        let dir = tempfile::tempdir().unwrap();
        let canon = std::fs::canonicalize(dir.path()).unwrap();
        let p = dir.path().join("missing/deeper/../leaf");
        assert_eq!(
            normalize_existing_prefix(&p).unwrap(),
            canon.join("missing/leaf")
        );
    }

    proptest! {
        /// Any path with a `..` component is refused, however it is spelled.
        #[test]
        fn dotdot_is_always_refused(
            pre in proptest::collection::vec("[a-z.]{1,4}", 0..4),
            post in proptest::collection::vec("[a-z.]{1,4}", 0..4),
        ) {
            let (_d, ws) = ws();
            let mut parts = pre.clone();
            parts.push("..".to_string());
            parts.extend(post);
            let p = parts.join("/");
            prop_assert!(ws.relative(&p).is_err(), "{p} was accepted");
        }

        /// Accepted paths only ever contain plain names.
        #[test]
        fn accepted_paths_are_plain(s in "[a-z./]{1,16}") {
            let (_d, ws) = ws();
            if let Ok(comps) = ws.relative(&s) {
                for c in comps {
                    prop_assert!(c != ".." && c != "." && !c.is_empty() && !c.to_string_lossy().contains('/'));
                }
            }
        }
    }
}
