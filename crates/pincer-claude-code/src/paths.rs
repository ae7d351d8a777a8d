//! Where a path a Claude Code tool names really leads, judged without
//! touching it: the workspace boundary (the project Claude Code may write
//! in) and pincer's own state (`PINCER_HOME` and its protected entries).
//!
//! Claude Code resolves a tool's path itself (Node's `path.resolve`, which
//! removes `..` lexically, and the kernel, which follows symlinks), so a path
//! is read every way it could be taken, and the strictest reading wins:
//!
//! - relative paths are taken from the hook's `cwd`; a leading `~` or
//!   `~/` (and, in shell words, `$HOME`) is read both as the user's home and
//!   as a literal directory named `~`;
//! - each reading is resolved physically, component by component, following
//!   every symlink (the last component's too, a dangling one to its
//!   target), at most 40 hops; `..` is resolved both lexically first (as
//!   Node does) and after the symlinks (as the kernel does);
//! - the result is compared with the protected paths by prefix and by
//!   identity (device, inode) of the target and each of its directories, so
//!   a protected directory bind-mounted or moved into the project is still
//!   pincer's; a file with more than one hard link is looked for inside the
//!   protected directories (a bounded scan, paid only for such files).
//!
//! What this cannot do: a path that changes between this check and the
//! write (a symlink swapped in by another process) is written where it then
//! leads. Claude Code opens the path itself, after the answer; closing that
//! race takes an OS sandbox around Claude Code, which this adapter is not.

use pincer_core::home::Home;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Symlink hops allowed in one resolution (Linux's own limit is 40).
const MAX_HOPS: usize = 40;
/// Entries the hard-link scan of the protected directories looks at.
const MAX_SCAN: usize = 20_000;

/// Identity of a file: survives renames, sees through hard links and bind
/// mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(m: &std::fs::Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

#[derive(Debug)]
struct Protected {
    /// As resolved (symlinks followed) when the boundary was built.
    path: PathBuf,
    id: Option<FileId>,
    dir: bool,
}

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Into one of pincer's protected entries (the value).
    Protected(PathBuf),
    /// A Claude Code settings file, where pincer's hooks are installed (the
    /// value): whoever writes it can turn pincer off.
    HookConfig(PathBuf),
    /// Into `PINCER_HOME` outside its protected entries and outside the
    /// workspace.
    PincerHome,
    /// Outside the workspace.
    Outside,
    /// Inside the workspace.
    Inside,
}

impl Place {
    /// Higher is stricter.
    fn rank(&self) -> u8 {
        match self {
            Place::Protected(_) => 4,
            Place::HookConfig(_) => 3,
            Place::PincerHome => 2,
            Place::Outside => 1,
            Place::Inside => 0,
        }
    }
}

/// The strictest reading of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Where it leads, symlinks followed.
    pub resolved: PathBuf,
    pub place: Place,
}

/// The workspace and pincer's state, resolved once per hook call.
#[derive(Debug)]
pub struct Boundary {
    workspace: PathBuf,
    home: PathBuf,
    home_id: Option<FileId>,
    protected: Vec<Protected>,
    /// Claude Code's settings files, resolved.
    hook_config: Vec<PathBuf>,
    user_home: Option<PathBuf>,
    cwd: PathBuf,
}

impl Boundary {
    /// `workspace` must exist; `cwd` is the hook's (absolute) directory;
    /// `hook_config` the Claude Code settings files that hold pincer's hooks.
    pub fn new(
        workspace: &Path,
        home: &Home,
        user_home: Option<&Path>,
        cwd: &Path,
        hook_config: &[PathBuf],
    ) -> io::Result<Boundary> {
        let workspace = std::fs::canonicalize(workspace)?;
        let home_path = resolve(&absolute(home.root(), cwd))?;
        let home_id = std::fs::metadata(&home_path).ok().map(|m| FileId::of(&m));
        let mut protected = Vec::new();
        for p in home.protected() {
            let path = resolve(&absolute(&p, cwd))?;
            let meta = std::fs::metadata(&path).ok();
            protected.push(Protected {
                id: meta.as_ref().map(FileId::of),
                dir: meta.as_ref().is_some_and(|m| m.is_dir()),
                path,
            });
        }
        let hook_config = hook_config
            .iter()
            .map(|p| resolve(&absolute(p, cwd)))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Boundary {
            workspace,
            home: home_path,
            home_id,
            protected,
            hook_config,
            user_home: user_home.map(Path::to_path_buf),
            cwd: cwd.to_path_buf(),
        })
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The hook's directory, against which relative paths are read.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The strictest place `raw` (a tool's path) can lead to.
    pub fn locate(&self, raw: &str) -> Result<Located, String> {
        if raw.is_empty() {
            return Err("the path is empty".into());
        }
        if raw.contains('\0') {
            return Err("the path contains a NUL byte".into());
        }
        let mut worst: Option<Located> = None;
        for reading in self.readings(raw) {
            for path in [reading.clone(), lexical(&reading)] {
                let resolved = resolve(&path).map_err(|e| {
                    format!("cannot tell where `{raw}` leads ({}): {e}", path.display())
                })?;
                let place = self.place(&resolved);
                if worst.as_ref().is_none_or(|w| place.rank() > w.place.rank()) {
                    worst = Some(Located { resolved, place });
                }
            }
        }
        worst.ok_or_else(|| format!("cannot read the path `{raw}`"))
    }

    /// A protected entry beneath `dir` (a search root), if any.
    pub fn protected_beneath(&self, dir: &Path) -> Option<&Path> {
        self.protected
            .iter()
            .map(|p| p.path.as_path())
            .find(|p| p.starts_with(dir) && *p != dir)
    }

    /// Every way `raw` can be taken as an absolute path.
    fn readings(&self, raw: &str) -> Vec<PathBuf> {
        let mut out = vec![absolute(Path::new(raw), &self.cwd)];
        let rest = if raw == "~" || raw == "$HOME" || raw == "${HOME}" {
            Some("")
        } else {
            ["~/", "$HOME/", "${HOME}/"]
                .iter()
                .find_map(|p| raw.strip_prefix(p))
        };
        if let (Some(rest), Some(home)) = (rest, &self.user_home) {
            out.push(absolute(&home.join(rest), &self.cwd));
        }
        out
    }

    fn place(&self, resolved: &Path) -> Place {
        if let Some(p) = self
            .protected
            .iter()
            .find(|p| resolved.starts_with(&p.path))
        {
            return Place::Protected(p.path.clone());
        }
        if let Some(p) = self.protected_by_identity(resolved) {
            return Place::Protected(p);
        }
        if let Some(p) = self.hook_config.iter().find(|p| resolved == p.as_path()) {
            return Place::HookConfig(p.clone());
        }
        let in_home = resolved.starts_with(&self.home) || self.under_home_by_identity(resolved);
        let in_workspace = resolved.starts_with(&self.workspace);
        // A workspace inside the home (pincer's own default workspace) is
        // the workspace; a workspace that holds the home (Claude Code run
        // in `~`) does not make the home part of it.
        let workspace_in_home = self.workspace.starts_with(&self.home);
        match (in_home, in_workspace) {
            (true, true) if workspace_in_home => Place::Inside,
            (true, _) => Place::PincerHome,
            (false, true) => Place::Inside,
            (false, false) => Place::Outside,
        }
    }

    /// The target (if it exists) and each existing directory above it,
    /// compared by identity with the protected entries.
    fn protected_by_identity(&self, resolved: &Path) -> Option<PathBuf> {
        let mut at = Some(resolved);
        let mut first = true;
        while let Some(p) = at {
            if let Ok(m) = std::fs::symlink_metadata(p) {
                let id = FileId::of(&m);
                if let Some(hit) = self.protected.iter().find(|q| q.id == Some(id)) {
                    return Some(hit.path.clone());
                }
                if first && m.is_file() && m.nlink() > 1 && self.linked_into_protected(id) {
                    return Some(resolved.to_path_buf());
                }
            }
            first = false;
            at = p.parent();
        }
        None
    }

    fn under_home_by_identity(&self, resolved: &Path) -> bool {
        let Some(home) = self.home_id else {
            return false;
        };
        resolved
            .ancestors()
            .any(|p| std::fs::symlink_metadata(p).is_ok_and(|m| FileId::of(&m) == home))
    }

    /// Whether a file with id `id` also has a name inside a protected
    /// directory (a bounded walk; a walk cut short says yes, the safe side).
    fn linked_into_protected(&self, id: FileId) -> bool {
        let mut seen = 0usize;
        let mut queue: VecDeque<PathBuf> = self
            .protected
            .iter()
            .filter(|p| p.dir)
            .map(|p| p.path.clone())
            .collect();
        while let Some(dir) = queue.pop_front() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                seen += 1;
                if seen > MAX_SCAN {
                    return true;
                }
                let Ok(m) = e.metadata() else { continue };
                if m.is_dir() {
                    queue.push_back(e.path());
                } else if FileId::of(&m) == id {
                    return true;
                }
            }
        }
        false
    }
}

/// `p` made absolute against `cwd` (no resolution).
fn absolute(p: &Path, cwd: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// `p` with `.` removed and `..` applied to the text, as Node's
/// `path.resolve` does (`..` at the root stays at the root).
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

/// Where the absolute path `p` leads: every symlink followed, the last
/// component's too (a dangling one to where its target would be created),
/// the missing tail appended as written.
pub fn resolve(p: &Path) -> io::Result<PathBuf> {
    let mut out = PathBuf::from("/");
    let mut todo: VecDeque<OsString> = VecDeque::new();
    push_front(&mut todo, p);
    let mut hops = 0usize;
    let mut missing = false;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            out.pop();
            continue;
        }
        if name == "." || name.is_empty() {
            continue;
        }
        let next = out.join(&name);
        if missing {
            out = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(io::Error::other("too many levels of symbolic links"));
                }
                let target = std::fs::read_link(&next)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_front(&mut todo, &target);
            }
            Ok(_) => out = next,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = true;
                out = next;
            }
            Err(e) if e.raw_os_error() == Some(20) => {
                // ENOTDIR: a file used as a directory; nothing can be made
                // beneath it, so the rest is only text.
                missing = true;
                out = next;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

fn push_front(todo: &mut VecDeque<OsString>, p: &Path) {
    let names: Vec<OsString> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    for n in names.into_iter().rev() {
        todo.push_front(n);
    }
}

/// The words of a shell command that may name a path: split at blanks and
/// shell operators outside quotes, quotes and backslashes removed as the
/// shell would, `NAME=value` and `--opt=value` split at `=`; kept when the
/// word has a `/`, starts with `~` or `$HOME`, or names something in
/// `cwd`. At most `max` words. A rough reading, not a parser: the shell
/// classifier judges the command; this only looks for paths into pincer's
/// state that the classifier's text match cannot see (a relative path, a
/// symlink).
pub fn path_words(command: &str, cwd: &Path, max: usize) -> Vec<String> {
    let mut words = Vec::new();
    for raw in shell_words(command) {
        for w in raw.split('=') {
            if w.is_empty() || w.len() > 4096 {
                continue;
            }
            let keep = w.contains('/')
                || w.starts_with('~')
                || w.starts_with("$HOME")
                || w.starts_with("${HOME}")
                || std::fs::symlink_metadata(cwd.join(w)).is_ok();
            if keep && !words.iter().any(|x| x == w) {
                words.push(w.to_string());
                if words.len() >= max {
                    return words;
                }
            }
        }
    }
    words
}

/// `command` split into words the way sh splits them, quotes removed.
fn shell_words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = command.chars();
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        if !cur.is_empty() {
            out.push(std::mem::take(cur));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        _ => cur.push(q),
                    }
                }
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() || ";|&<>()`".contains(c) => flush(&mut cur, &mut out),
            c => cur.push(c),
        }
    }
    flush(&mut cur, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _tmp: tempfile::TempDir,
        project: PathBuf,
        home: Home,
        user: PathBuf,
    }

    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(tmp.path()).expect("canonical");
        let user = root.join("user");
        let project = user.join("project");
        std::fs::create_dir_all(project.join("src")).expect("mkdir");
        let home = Home::new(user.join(".pincer"));
        std::fs::create_dir_all(home.audit_dir()).expect("mkdir");
        std::fs::create_dir_all(home.memory_dir()).expect("mkdir");
        std::fs::write(home.config_path(), "").expect("write");
        Fixture {
            _tmp: tmp,
            project,
            home,
            user,
        }
    }

    fn boundary(f: &Fixture) -> Boundary {
        let settings = f.project.join(".claude/settings.json");
        Boundary::new(&f.project, &f.home, Some(&f.user), &f.project, &[settings])
            .expect("boundary")
    }

    fn place(b: &Boundary, raw: &str) -> Place {
        b.locate(raw).expect("locates").place
    }

    #[test]
    fn plain_paths() {
        let f = fixture();
        let b = boundary(&f);
        assert_eq!(place(&b, "src/main.rs"), Place::Inside);
        assert_eq!(
            place(&b, &format!("{}/new/dir/x", f.project.display())),
            Place::Inside
        );
        assert_eq!(place(&b, "/etc/passwd"), Place::Outside);
        assert_eq!(
            place(&b, &f.home.config_path().display().to_string()),
            Place::Protected(f.home.config_path())
        );
        assert_eq!(
            place(&b, &f.home.root().join("other").display().to_string()),
            Place::PincerHome
        );
        assert!(matches!(
            place(&b, ".claude/settings.json"),
            Place::HookConfig(_)
        ));
        assert!(matches!(
            place(&b, "src/../.claude/./settings.json"),
            Place::HookConfig(_)
        ));
        assert!(b.locate("").is_err());
        assert!(b.locate("a\0b").is_err());
    }

    #[test]
    fn dotdot_tilde_and_home_variables() {
        let f = fixture();
        let b = boundary(&f);
        assert_eq!(
            place(&b, "../.pincer/config.toml"),
            Place::Protected(f.home.config_path())
        );
        assert_eq!(place(&b, "src/../../outside"), Place::Outside);
        assert_eq!(
            place(&b, "~/.pincer/config.toml"),
            Place::Protected(f.home.config_path())
        );
        assert_eq!(
            place(&b, "$HOME/.pincer/audit/trail.jsonl"),
            Place::Protected(f.home.audit_dir())
        );
        assert_eq!(place(&b, "~"), Place::Outside);
        assert_eq!(place(&b, "/../../etc/x"), Place::Outside);
    }

    #[test]
    fn symlinks_are_followed_every_way() {
        let f = fixture();
        let b = boundary(&f);
        symlink(f.home.root(), f.project.join("state")).expect("symlink");
        symlink(f.home.config_path(), f.project.join("cfg")).expect("symlink");
        symlink("/nonexistent/target", f.project.join("dangling")).expect("symlink");
        symlink(f.project.join("src"), f.project.join("inner")).expect("symlink");
        assert_eq!(
            place(&b, "state/config.toml"),
            Place::Protected(f.home.config_path())
        );
        assert_eq!(place(&b, "cfg"), Place::Protected(f.home.config_path()));
        assert_eq!(place(&b, "dangling"), Place::Outside);
        assert_eq!(place(&b, "inner/x.rs"), Place::Inside);
        // The kernel's reading of `..` after a symlink: `inner/..` is the
        // project, lexically it is too; `state/../x` is the user's home by
        // the kernel, the project by Node: the strictest wins.
        assert_eq!(place(&b, "state/../x"), Place::Outside);
        // A loop is an error, never a pass.
        symlink(f.project.join("loop"), f.project.join("loop")).expect("symlink");
        assert!(b.locate("loop").is_err());
    }

    #[test]
    fn hard_links_and_moved_directories_are_found_by_identity() {
        let f = fixture();
        std::fs::write(f.home.audit_dir().join("trail.jsonl"), "x").expect("write");
        std::fs::hard_link(
            f.home.audit_dir().join("trail.jsonl"),
            f.project.join("innocent.txt"),
        )
        .expect("link");
        std::fs::write(f.project.join("two.txt"), "x").expect("write");
        std::fs::hard_link(f.project.join("two.txt"), f.project.join("three.txt")).expect("link");
        let b = boundary(&f);
        assert!(matches!(place(&b, "innocent.txt"), Place::Protected(_)));
        assert_eq!(place(&b, "two.txt"), Place::Inside);
        // The memory directory renamed into the project after the
        // boundary was built is still pincer's.
        std::fs::rename(f.home.memory_dir(), f.project.join("notes")).expect("rename");
        assert!(matches!(place(&b, "notes/page.md"), Place::Protected(_)));
    }

    #[test]
    fn a_workspace_that_holds_the_home_does_not_open_it() {
        let f = fixture();
        let b = Boundary::new(&f.user, &f.home, Some(&f.user), &f.user, &[]).expect("boundary");
        assert_eq!(place(&b, ".pincer/new-file"), Place::PincerHome);
        assert_eq!(place(&b, "project/x"), Place::Inside);
        let ws = f.home.root().join("workspace");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let b = Boundary::new(&ws, &f.home, Some(&f.user), &ws, &[]).expect("boundary");
        assert_eq!(place(&b, "notes.md"), Place::Inside);
        assert_eq!(place(&b, "../other"), Place::PincerHome);
        assert!(matches!(place(&b, "../config.toml"), Place::Protected(_)));
    }

    #[test]
    fn protected_beneath_a_search_root() {
        let f = fixture();
        let b = boundary(&f);
        assert!(b.protected_beneath(&f.user).is_some());
        assert!(b.protected_beneath(&f.project).is_none());
    }

    #[test]
    fn shell_words_that_may_be_paths() {
        let f = fixture();
        std::fs::write(f.project.join("cfg"), "").expect("write");
        let w = path_words(
            "cat 'a b/c' \"~/x\" --file=state/y cfg plain && echo $HOME/z > out/f",
            &f.project,
            64,
        );
        assert_eq!(w, ["a b/c", "~/x", "state/y", "cfg", "$HOME/z", "out/f"]);
        assert_eq!(
            shell_words(r#"a\ b "c\"d" 'e"f' g;h"#),
            ["a b", "c\"d", "e\"f", "g", "h"]
        );
        assert_eq!(path_words("a/1 b/2 c/3", &f.project, 2).len(), 2);
    }

    proptest::proptest! {
        /// Resolution agrees with the kernel on every path that exists.
        #[test]
        fn resolve_agrees_with_canonicalize(
            names in proptest::collection::vec(
                proptest::sample::select(vec!["a", "b", "up", "..", ".", "nope"]),
                1..7,
            )
        ) {
            let f = fixture();
            std::fs::create_dir_all(f.project.join("a/b")).expect("mkdir");
            symlink("../a", f.project.join("a/b/up")).expect("symlink");
            let p = names.iter().fold(f.project.clone(), |p, n| p.join(n));
            match std::fs::canonicalize(&p) {
                Ok(real) => proptest::prop_assert_eq!(resolve(&p).expect("resolves"), real),
                // Where the kernel finds nothing, the resolution still ends
                // under the real directory of the deepest part that exists.
                Err(_) => {
                    let r = resolve(&p).expect("resolves");
                    proptest::prop_assert!(r.is_absolute());
                    proptest::prop_assert!(!r.components().any(|c| c == Component::ParentDir));
                }
            }
        }
    }
}
