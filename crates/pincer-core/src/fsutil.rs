//! Small durable-file helpers shared by every store that must survive a crash.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Creates `dir` (and parents) with mode 0700 if it is missing, fsyncing
/// each parent so the new directory survives a crash. An existing directory
/// keeps its mode: pincer never loosens or silently rewrites a directory a
/// person made.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(parent)?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        // Another process made it first: fine, it exists.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sync_dir(parent)
}

/// fsyncs a directory so a create, rename or unlink inside it is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()?;
    #[cfg(test)]
    ledger::record(ledger::Op::SyncDir(dir.to_path_buf()));
    Ok(())
}

/// `fdatasync` of `file`, which is at `path` (named for the test ledger).
#[cfg_attr(not(test), allow(unused_variables))]
pub(crate) fn sync_data(file: &File, path: &Path) -> io::Result<()> {
    file.sync_data()?;
    #[cfg(test)]
    ledger::record(ledger::Op::SyncData(path.to_path_buf()));
    Ok(())
}

/// `fsync` of `file`, which is at `path` (named for the test ledger).
#[cfg_attr(not(test), allow(unused_variables))]
pub(crate) fn sync_all(file: &File, path: &Path) -> io::Result<()> {
    file.sync_all()?;
    #[cfg(test)]
    ledger::record(ledger::Op::SyncAll(path.to_path_buf()));
    Ok(())
}

/// `rename(2)`, recorded in the test ledger.
pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)?;
    #[cfg(test)]
    ledger::record(ledger::Op::Rename {
        from: from.to_path_buf(),
        to: to.to_path_buf(),
    });
    Ok(())
}

/// A test seam: every fsync and rename the stores make through this module,
/// in order, on the calling thread. Tests take it to check that what a
/// store calls durable was synced, and that a commit point (a rename) comes
/// after the fsyncs it depends on. Compiled in tests only.
#[cfg(test)]
pub(crate) mod ledger {
    use std::cell::RefCell;
    use std::path::PathBuf;

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Op {
        SyncData(PathBuf),
        SyncAll(PathBuf),
        SyncDir(PathBuf),
        Rename { from: PathBuf, to: PathBuf },
    }

    thread_local! {
        static OPS: RefCell<Vec<Op>> = const { RefCell::new(Vec::new()) };
    }

    pub(crate) fn record(op: Op) {
        OPS.with(|o| o.borrow_mut().push(op));
    }

    /// Everything recorded on this thread since the last `take`.
    pub(crate) fn take() -> Vec<Op> {
        OPS.with(|o| std::mem::take(&mut *o.borrow_mut()))
    }
}

/// Replaces `path` with `bytes` atomically: write a temp file beside it,
/// fsync it, rename it over `path`, fsync the directory. A crash at any
/// instant leaves either the whole old file or the whole new one, never an
/// empty or partial one (ST2).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = tmp_path(path);
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        sync_all(&f, &tmp)?;
    }
    rename(&tmp, path)?;
    sync_dir(dir)
}

/// The temp file [`write_atomic`] uses for `path`.
pub fn tmp_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("meta.json");
        write_atomic(&p, b"one").expect("write");
        write_atomic(&p, b"two, longer").expect("write");
        assert_eq!(fs::read(&p).expect("read"), b"two, longer");
        assert!(!tmp_path(&p).exists());
        let mode = fs::metadata(&p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn private_dir_is_0700() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a/b");
        create_private_dir(&p).expect("mkdir");
        let mode = fs::metadata(&p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
