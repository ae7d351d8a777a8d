//! The file tools: `file_read`, `file_list`, `file_write`, `file_edit`
//! (TL1, PO2: reads are low risk, writes medium).
//!
//! Every path is resolved by the [`Workspace`] (see its module doc); the final component is
//! opened or replaced relative to the resolved parent descriptor with
//! `O_NOFOLLOW` or `renameat`, so nothing here can leave the workspace even
//! if the tree changes under it. Writes are atomic: a temp file in the same
//! directory, `fsync`, `renameat` over the name, `fsync` of the directory —
//! a crash leaves the whole old file or the whole new one. The blocking
//! work runs on `spawn_blocking`.

use crate::args::{Args, object_schema, respond};
use crate::workspace::{Resolved, Workspace};
use pincer_core::gate::{Gated, Permit};
use pincer_core::policy::Risk;
use pincer_core::provider::BoxFuture;
use pincer_core::tool::{Assessment, Tool, ToolError};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use serde_json::{Value, json};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs blocking file work off the async runtime.
async fn blocking<T, F>(f: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::Fatal(format!("file tool task failed: {e}")))?
}

fn kind(ft: FileType) -> &'static str {
    match ft {
        FileType::RegularFile => "file",
        FileType::Directory => "dir",
        FileType::Symlink => "symlink",
        _ => "other",
    }
}

fn size_of(st: &Stat) -> u64 {
    u64::try_from(st.st_size).unwrap_or(0)
}

fn changed_err(user: &str) -> ToolError {
    respond(format!(
        "`{user}` changed into a symlink while it was being opened; nothing was read or written, try again"
    ))
}

/// The parent and name of a path that must name a file, not a directory.
fn child(resolved: Resolved, user: &str) -> Result<(OwnedFd, OsString), ToolError> {
    match resolved {
        Resolved::Child { parent, name } => Ok((parent, name)),
        Resolved::Dir(_) => Err(respond(format!(
            "`{user}` is a directory; file_list lists directories"
        ))),
    }
}

/// Opens an existing regular file for reading, relative to its resolved
/// parent, without following a symlink and without blocking on a FIFO.
fn open_regular(
    ws: &Workspace,
    parent: &OwnedFd,
    name: &OsStr,
    user: &str,
) -> Result<(File, Stat), ToolError> {
    let fd = rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP => changed_err(user),
        e => ws.map_err(user, e),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| ws.map_err(user, e))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => {
            return Err(respond(format!(
                "`{user}` is a directory; file_list lists directories"
            )));
        }
        other => {
            return Err(respond(format!(
                "`{user}` is not a regular file (it is a {})",
                kind(other)
            )));
        }
    }
    ws.check_not_protected(&st, user)?;
    Ok((File::from(fd), st))
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `name` in `parent` with `bytes`: temp file beside it, fsync,
/// renameat, fsync the directory. `mode` keeps an existing file's
/// permissions. `renameat` replaces the directory entry itself, so a symlink
/// swapped in meanwhile is replaced, never written through.
fn atomic_write(
    parent: &OwnedFd,
    name: &OsStr,
    bytes: &[u8],
    mode: Option<u32>,
) -> std::io::Result<()> {
    let mut attempts = 0;
    let (tmp, fd) = loop {
        let tmp = format!(
            ".pincer-tmp-{}-{}",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        match rustix::fs::openat(
            parent,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        ) {
            Ok(fd) => break (tmp, fd),
            Err(Errno::EXIST) if attempts < 16 => attempts += 1,
            Err(e) => return Err(e.into()),
        }
    };
    let result = (|| -> std::io::Result<()> {
        if let Some(m) = mode {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(m & 0o777))?;
        }
        let mut f = File::from(fd);
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        rustix::fs::renameat(parent, tmp.as_str(), parent, name)?;
        rustix::fs::fsync(parent)?;
        Ok(())
    })();
    if result.is_err() {
        // Best effort: after a successful rename this finds nothing.
        let _ = rustix::fs::unlinkat(parent, tmp.as_str(), AtFlags::empty());
    }
    result
}

/// What exists at `name` before a write: `None` if nothing, the stat of a
/// regular file otherwise; anything else is refused.
fn existing_regular(
    ws: &Workspace,
    parent: &OwnedFd,
    name: &OsStr,
    user: &str,
) -> Result<Option<Stat>, ToolError> {
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(ws.map_err(user, e)),
        Ok(st) => {
            match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => {}
                FileType::Symlink => return Err(changed_err(user)),
                FileType::Directory => {
                    return Err(respond(format!(
                        "`{user}` is a directory; give a file path"
                    )));
                }
                other => {
                    return Err(respond(format!(
                        "`{user}` is not a regular file (it is a {})",
                        kind(other)
                    )));
                }
            }
            ws.check_not_protected(&st, user)?;
            Ok(Some(st))
        }
    }
}

fn write_err(user: &str, e: std::io::Error) -> ToolError {
    respond(format!("could not write `{user}`: {e}"))
}

// ---------------------------------------------------------------- file_read

const READ_PARAMS: &[&str] = &["path", "offset", "limit"];

/// `file_read {path, offset?, limit?}`: UTF-8 text, at most `cap` bytes per
/// call, with a marker saying where to continue.
#[derive(Debug)]
pub struct FileRead {
    ws: Gated<Arc<Workspace>>,
    cap: usize,
    description: String,
}

impl FileRead {
    pub fn new(ws: Arc<Workspace>, cap: usize) -> FileRead {
        let cap = cap.max(1);
        let description = format!(
            "Read a UTF-8 text file in the workspace. `path` is relative to the workspace root. \
             Returns at most {cap} bytes per call; when more remains, the result ends with a \
             [truncated: ...] marker giving the `offset` to continue from. `offset` (bytes, default 0) \
             and `limit` (bytes, default and maximum {cap}) select a part. Binary files are refused."
        );
        FileRead {
            ws: Gated::new(ws),
            cap,
            description,
        }
    }
}

/// True for a UTF-8 continuation byte (`10xxxxxx`).
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Reads into `buf` at `offset` until it is full or the file ends.
fn read_full_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The text in `buf` (read at file offset `offset`), at most about `want`
/// bytes: a start inside a character skips to the next one, an end inside a
/// character is extended to complete it. `Ok((start, end))` are indexes into
/// `buf`; `Err(())` means the bytes are not text.
pub(crate) fn text_window(buf: &[u8], offset: u64, want: usize) -> Result<(usize, usize), ()> {
    let mut start = 0;
    if offset > 0 {
        while start < 3 && start < buf.len() && is_continuation(buf[start]) {
            start += 1;
        }
    }
    let mut end = (start + want).min(buf.len());
    loop {
        match std::str::from_utf8(&buf[start..end]) {
            Ok(t) if t.contains('\0') => return Err(()),
            Ok(_) => return Ok((start, end)),
            Err(e) if e.error_len().is_none() && end < buf.len() => end += 1,
            Err(_) => return Err(()),
        }
    }
}

fn read_blocking(
    ws: &Workspace,
    user: &str,
    offset: u64,
    limit: Option<u64>,
    cap: usize,
) -> Result<String, ToolError> {
    let (parent, name) = child(ws.resolve(user, false)?, user)?;
    let (file, st) = open_regular(ws, &parent, &name, user)?;
    let size = size_of(&st);
    if size == 0 && offset == 0 {
        return Ok(format!("(`{user}` is empty)"));
    }
    if offset >= size {
        return Err(respond(format!(
            "file_read: `offset` {offset} is at or past the end of `{user}` ({size} bytes)"
        )));
    }
    let want = limit
        .map_or(cap, |l| usize::try_from(l).unwrap_or(usize::MAX))
        .min(cap);
    // A few bytes more than wanted, to complete a character cut by the cap.
    let room = usize::try_from(size - offset).unwrap_or(usize::MAX);
    let mut buf = vec![0u8; (want + 6).min(room)];
    let n = read_full_at(&file, &mut buf, offset)
        .map_err(|e| respond(format!("could not read `{user}`: {e}")))?;
    buf.truncate(n);
    let (start, end) = text_window(&buf, offset, want).map_err(|()| {
        respond(format!(
            "`{user}` is not UTF-8 text (it looks binary, {size} bytes); file_read only returns text"
        ))
    })?;
    let mut text = String::from_utf8_lossy(&buf[start..end]).into_owned();
    let from = offset + start as u64;
    let next = offset + end as u64;
    if next < size {
        text.push_str(&format!(
            "\n\n[truncated: this is bytes {from}..{next} of {size} in `{user}`; \
             call file_read with offset={next} to read on (limit: at most {cap} bytes per call)]"
        ));
    }
    Ok(text)
}

impl Tool for FileRead {
    fn name(&self) -> &str {
        "file_read"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        object_schema(
            &[
                (
                    "path",
                    json!({"type": "string", "description": "File path relative to the workspace root"}),
                ),
                (
                    "offset",
                    json!({"type": "integer", "minimum": 0, "description": "Byte offset to start at (default 0)"}),
                ),
                (
                    "limit",
                    json!({"type": "integer", "minimum": 1, "maximum": self.cap, "description": "Most bytes to return"}),
                ),
            ],
            &["path"],
        )
    }

    fn assess(&self, _args: &Value) -> Assessment {
        Assessment::new(
            Risk::Low,
            "reads a file inside the workspace (file reads are low risk, PO2)",
        )
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args = permit.args();
            let a = Args::parse("file_read", args, READ_PARAMS)?;
            let path = a.req_str("path")?.to_owned();
            let offset = a.opt_u64("offset")?.unwrap_or(0);
            let limit = a.opt_u64("limit")?;
            if limit == Some(0) {
                return Err(a.error("argument `limit` must be at least 1"));
            }
            let (ws, cap) = (permit.open(&self.ws).clone(), self.cap);
            blocking(move || read_blocking(&ws, &path, offset, limit, cap)).await
        })
    }
}

// ---------------------------------------------------------------- file_list

const LIST_PARAMS: &[&str] = &["path", "recursive", "max_entries"];

/// `file_list {path?, recursive?, max_entries?}`: entries with type and size,
/// sorted, symlinks shown but never followed.
#[derive(Debug)]
pub struct FileList {
    ws: Gated<Arc<Workspace>>,
    max: usize,
    description: String,
}

impl FileList {
    pub fn new(ws: Arc<Workspace>, max: usize) -> FileList {
        let max = max.max(1);
        let description = format!(
            "List a directory in the workspace: one line per entry with its type (file, dir, symlink, \
             other), its path from the workspace root and, for files, its size. Sorted by name; \
             `recursive: true` descends into subdirectories (never through symlinks). `path` defaults \
             to the workspace root \".\"; at most `max_entries` entries (default and maximum {max}). \
             A name with a blank, a quote, a backslash, a control character (a newline) or bytes that \
             are not UTF-8 is shown in double quotes with escapes (\\n, \\\", \\\\, \\u{{1b}}, \\xff), so \
             each entry is one line."
        );
        FileList {
            ws: Gated::new(ws),
            max,
            description,
        }
    }
}

struct Frame {
    fd: OwnedFd,
    /// The directory's path from the workspace root, as raw bytes.
    prefix: Vec<u8>,
    names: Vec<OsString>,
    next: usize,
}

/// A path as `file_list` shows it. Bare when every character is printable,
/// not a blank, a quote or a backslash, and the bytes are UTF-8; otherwise
/// in double quotes with escapes (`\"`, `\\`, `\n`, `\t`, `\u{1b}` for
/// other control characters, `\xff` for a byte that is not UTF-8). So every
/// entry is one line, and no name can pass for another entry, a size or a
/// link target.
pub(crate) fn shown_path(bytes: &[u8]) -> String {
    let plain = std::str::from_utf8(bytes).ok().filter(|s| {
        !s.is_empty()
            && s.chars()
                .all(|c| !c.is_control() && !c.is_whitespace() && c != '"' && c != '\\')
    });
    if let Some(s) = plain {
        return s.to_string();
    }
    let mut out = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

/// `prefix/name` as raw bytes.
fn joined(prefix: &[u8], name: &OsStr) -> Vec<u8> {
    let name = <OsStr as std::os::unix::ffi::OsStrExt>::as_bytes(name);
    if prefix.is_empty() {
        return name.to_vec();
    }
    let mut p = prefix.to_vec();
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

fn read_names(fd: &OwnedFd) -> Result<Vec<OsString>, Errno> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        names.push(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name).to_os_string());
    }
    names.sort();
    Ok(names)
}

fn list_blocking(
    ws: &Workspace,
    user: &str,
    recursive: bool,
    max: usize,
    hard_max: usize,
) -> Result<String, ToolError> {
    let base = ws
        .relative(user)?
        .iter()
        .map(|c| <OsStr as std::os::unix::ffi::OsStrExt>::as_bytes(c).to_vec())
        .collect::<Vec<_>>()
        .join(&b'/');
    let dir = match ws.resolve(user, false)? {
        Resolved::Dir(fd) => fd,
        Resolved::Child { parent, name } => rustix::fs::openat(
            &parent,
            name.as_os_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOTDIR => respond(format!(
                "`{user}` is not a directory; file_read reads files"
            )),
            Errno::LOOP => changed_err(user),
            e => ws.map_err(user, e),
        })?,
    };
    let st = rustix::fs::fstat(&dir).map_err(|e| ws.map_err(user, e))?;
    ws.check_not_protected(&st, user)?;
    let protected = ws.protected_ids();

    let mut lines: Vec<String> = Vec::new();
    let mut truncated = false;
    let names = read_names(&dir).map_err(|e| ws.map_err(user, e))?;
    let mut stack = vec![Frame {
        fd: dir,
        prefix: base,
        names,
        next: 0,
    }];
    while let Some(frame) = stack.last_mut() {
        let Some(name) = frame.names.get(frame.next).cloned() else {
            stack.pop();
            continue;
        };
        frame.next += 1;
        if lines.len() >= max {
            truncated = true;
            break;
        }
        let raw = joined(&frame.prefix, &name);
        let path = shown_path(&raw);
        let st = match rustix::fs::statat(&frame.fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue, // removed since the directory was read
            Err(e) => {
                lines.push(format!("?        {path} ({})", std::io::Error::from(e)));
                continue;
            }
        };
        let ft = FileType::from_raw_mode(st.st_mode);
        if Workspace::is_protected(&st, &protected) {
            lines.push(format!("{:<8} {path} (protected: not listed)", kind(ft)));
            continue;
        }
        let mut descend = None;
        match ft {
            FileType::Directory => {
                let mut slash = raw.clone();
                slash.push(b'/');
                let dir_shown = shown_path(&slash);
                lines.push(format!("dir      {dir_shown}"));
                if recursive {
                    match rustix::fs::openat(
                        &frame.fd,
                        name.as_os_str(),
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    ) {
                        // Only descend into the very directory that was stat'ed.
                        Ok(fd)
                            if rustix::fs::fstat(&fd)
                                .is_ok_and(|s| s.st_dev == st.st_dev && s.st_ino == st.st_ino) =>
                        {
                            match read_names(&fd) {
                                Ok(names) => {
                                    descend = Some(Frame {
                                        fd,
                                        prefix: raw,
                                        names,
                                        next: 0,
                                    });
                                }
                                Err(e) => lines.push(format!(
                                    "         (could not list {dir_shown}: {})",
                                    std::io::Error::from(e)
                                )),
                            }
                        }
                        _ => lines.push(format!(
                            "         ({dir_shown} changed while listing; skipped)"
                        )),
                    }
                }
            }
            FileType::RegularFile => {
                lines.push(format!("file     {path} ({} bytes)", size_of(&st)))
            }
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(&frame.fd, name.as_os_str(), Vec::new())
                    .map(|t| shown_path(t.as_bytes()))
                    .unwrap_or_else(|_| "?".to_string());
                lines.push(format!("symlink  {path} -> {target}"));
            }
            _ => lines.push(format!("other    {path}")),
        }
        if let Some(f) = descend {
            stack.push(f);
        }
    }

    let what = if recursive { " (recursive)" } else { "" };
    let user = shown_path(user.as_bytes());
    if lines.is_empty() {
        return Ok(format!("`{user}` is empty{what}"));
    }
    let mut out = if truncated {
        format!("first {} entries of `{user}`{what}:\n", lines.len())
    } else {
        format!(
            "{} {} in `{user}`{what}:\n",
            lines.len(),
            if lines.len() == 1 { "entry" } else { "entries" }
        )
    };
    out.push_str(&lines.join("\n"));
    if truncated {
        out.push_str(&format!(
            "\n[truncated at {max} entries; list a subdirectory, or raise max_entries (at most {hard_max})]"
        ));
    }
    Ok(out)
}

impl Tool for FileList {
    fn name(&self) -> &str {
        "file_list"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        object_schema(
            &[
                (
                    "path",
                    json!({"type": "string", "description": "Directory relative to the workspace root (default \".\")"}),
                ),
                (
                    "recursive",
                    json!({"type": "boolean", "description": "Descend into subdirectories (default false)"}),
                ),
                (
                    "max_entries",
                    json!({"type": "integer", "minimum": 1, "maximum": self.max, "description": "Most entries to return"}),
                ),
            ],
            &[],
        )
    }

    fn assess(&self, _args: &Value) -> Assessment {
        Assessment::new(
            Risk::Low,
            "lists a directory inside the workspace (low risk, PO2)",
        )
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args = permit.args();
            let a = Args::parse("file_list", args, LIST_PARAMS)?;
            let path = a.opt_str("path")?.unwrap_or(".").to_owned();
            let recursive = a.opt_bool("recursive")?.unwrap_or(false);
            let max = match a.opt_u64("max_entries")? {
                None => self.max,
                Some(0) => return Err(a.error("argument `max_entries` must be at least 1")),
                Some(n) if n > self.max as u64 => {
                    return Err(a.error(format!(
                        "argument `max_entries` must be at most {}",
                        self.max
                    )));
                }
                Some(n) => usize::try_from(n).unwrap_or(self.max),
            };
            let (ws, hard_max) = (permit.open(&self.ws).clone(), self.max);
            blocking(move || list_blocking(&ws, &path, recursive, max, hard_max)).await
        })
    }
}

// --------------------------------------------------------------- file_write

const WRITE_PARAMS: &[&str] = &["path", "content", "create_dirs"];

/// `file_write {path, content, create_dirs?}`: atomic create-or-replace.
#[derive(Debug)]
pub struct FileWrite {
    ws: Gated<Arc<Workspace>>,
    cap: usize,
    description: String,
}

impl FileWrite {
    pub fn new(ws: Arc<Workspace>, cap: usize) -> FileWrite {
        let description = format!(
            "Create or replace a text file in the workspace with `content`, atomically (if anything \
             fails, the old file is left whole). At most {cap} bytes. `create_dirs: true` creates \
             missing parent directories. To change part of a file, prefer file_edit."
        );
        FileWrite {
            ws: Gated::new(ws),
            cap,
            description,
        }
    }
}

fn write_blocking(
    ws: &Workspace,
    user: &str,
    content: &str,
    create_dirs: bool,
) -> Result<String, ToolError> {
    let (parent, name) = child(ws.resolve(user, create_dirs)?, user)?;
    let existing = existing_regular(ws, &parent, &name, user)?;
    atomic_write(
        &parent,
        &name,
        content.as_bytes(),
        existing.as_ref().map(|st| st.st_mode),
    )
    .map_err(|e| write_err(user, e))?;
    Ok(format!(
        "wrote {} bytes to `{user}` ({})",
        content.len(),
        if existing.is_some() {
            "replaced"
        } else {
            "new file"
        }
    ))
}

impl Tool for FileWrite {
    fn name(&self) -> &str {
        "file_write"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        object_schema(
            &[
                (
                    "path",
                    json!({"type": "string", "description": "File path relative to the workspace root"}),
                ),
                (
                    "content",
                    json!({"type": "string", "description": "The whole new content of the file"}),
                ),
                (
                    "create_dirs",
                    json!({"type": "boolean", "description": "Create missing parent directories (default false)"}),
                ),
            ],
            &["path", "content"],
        )
    }

    fn assess(&self, _args: &Value) -> Assessment {
        Assessment::new(
            Risk::Medium,
            "writes a file inside the workspace (file writes are medium risk, PO2)",
        )
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args = permit.args();
            let a = Args::parse("file_write", args, WRITE_PARAMS)?;
            let path = a.req_str("path")?.to_owned();
            let content = a.req_str("content")?;
            let create_dirs = a.opt_bool("create_dirs")?.unwrap_or(false);
            if content.len() > self.cap {
                return Err(a.error(format!(
                    "argument `content` is {} bytes, over the {}-byte cap; write a smaller file",
                    content.len(),
                    self.cap
                )));
            }
            let content = content.to_owned();
            let ws = permit.open(&self.ws).clone();
            blocking(move || write_blocking(&ws, &path, &content, create_dirs)).await
        })
    }
}

// ---------------------------------------------------------------- file_edit

const EDIT_PARAMS: &[&str] = &["path", "old", "new", "replace_all"];

/// `file_edit {path, old, new, replace_all?}`: exact text replacement,
/// written atomically.
#[derive(Debug)]
pub struct FileEdit {
    ws: Gated<Arc<Workspace>>,
    cap: usize,
}

fn edit_blocking(
    ws: &Workspace,
    user: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    cap: usize,
) -> Result<String, ToolError> {
    let (parent, name) = child(ws.resolve(user, false)?, user)?;
    let (file, st) = open_regular(ws, &parent, &name, user)?;
    let size = size_of(&st);
    if size > cap as u64 {
        return Err(respond(format!(
            "`{user}` is {size} bytes, over the {cap}-byte cap for editing"
        )));
    }
    let mut bytes = Vec::new();
    file.take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| respond(format!("could not read `{user}`: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        respond(format!(
            "`{user}` is not UTF-8 text (it looks binary); file_edit only edits text"
        ))
    })?;
    let count = text.matches(old).count();
    if count == 0 {
        return Err(respond(format!(
            "file_edit: `old` was not found in `{user}`; it must match the file exactly, including whitespace and indentation (read the file first)"
        )));
    }
    if count > 1 && !replace_all {
        return Err(respond(format!(
            "file_edit: `old` was found {count} times in `{user}`; include more surrounding text to make it unique, or set replace_all: true"
        )));
    }
    let updated = if replace_all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    if updated.len() > cap {
        return Err(respond(format!(
            "file_edit: the edited `{user}` would be {} bytes, over the {cap}-byte cap",
            updated.len()
        )));
    }
    atomic_write(&parent, &name, updated.as_bytes(), Some(st.st_mode))
        .map_err(|e| write_err(user, e))?;
    let replaced = if replace_all { count } else { 1 };
    Ok(format!(
        "replaced {replaced} occurrence{} in `{user}`",
        if replaced == 1 { "" } else { "s" }
    ))
}

impl FileEdit {
    pub fn new(ws: Arc<Workspace>, cap: usize) -> FileEdit {
        FileEdit {
            ws: Gated::new(ws),
            cap,
        }
    }
}

impl Tool for FileEdit {
    fn name(&self) -> &str {
        "file_edit"
    }

    fn description(&self) -> &str {
        "Replace an exact piece of text in a workspace file. `old` must appear in the file exactly \
         once (whitespace and indentation included) unless `replace_all` is true, in which case \
         every occurrence is replaced. The file is rewritten atomically."
    }

    fn parameters_schema(&self) -> Value {
        object_schema(
            &[
                (
                    "path",
                    json!({"type": "string", "description": "File path relative to the workspace root"}),
                ),
                (
                    "old",
                    json!({"type": "string", "minLength": 1, "description": "The exact text to replace"}),
                ),
                (
                    "new",
                    json!({"type": "string", "description": "The replacement text"}),
                ),
                (
                    "replace_all",
                    json!({"type": "boolean", "description": "Replace every occurrence (default false: `old` must be unique)"}),
                ),
            ],
            &["path", "old", "new"],
        )
    }

    fn assess(&self, _args: &Value) -> Assessment {
        Assessment::new(
            Risk::Medium,
            "edits a file inside the workspace (file writes are medium risk, PO2)",
        )
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args = permit.args();
            let a = Args::parse("file_edit", args, EDIT_PARAMS)?;
            let path = a.req_str("path")?.to_owned();
            let old = a.req_str("old")?.to_owned();
            let new = a.req_str("new")?.to_owned();
            let replace_all = a.opt_bool("replace_all")?.unwrap_or(false);
            if old.is_empty() {
                return Err(a.error("argument `old` must not be empty"));
            }
            let (ws, cap) = (permit.open(&self.ws).clone(), self.cap);
            blocking(move || edit_blocking(&ws, &path, &old, &new, replace_all, cap)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn window_skips_a_split_start_and_completes_a_split_end() {
        let s = "aé€😀b".as_bytes(); // 1 + 2 + 3 + 4 + 1 bytes
        // Offset 2 lands inside 'é': skip to '€'.
        assert_eq!(text_window(&s[2..], 2, 100), Ok((1, s.len() - 2)));
        // A cap of 4 from the start ends inside '€': extend to complete it.
        assert_eq!(text_window(s, 0, 4), Ok((0, 6)));
        assert_eq!(text_window(b"a\0b", 0, 10), Err(()));
        assert_eq!(text_window(&[0xff, 0xfe, b'a'], 0, 10), Err(()));
    }

    /// The schema's properties are exactly the keys the parser accepts.
    #[test]
    fn schemas_match_accepted_keys() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::open(dir.path(), vec![]).unwrap());
        let tools: Vec<(Box<dyn Tool>, &[&str])> = vec![
            (Box::new(FileRead::new(ws.clone(), 10)), READ_PARAMS),
            (Box::new(FileList::new(ws.clone(), 10)), LIST_PARAMS),
            (Box::new(FileWrite::new(ws.clone(), 10)), WRITE_PARAMS),
            (Box::new(FileEdit::new(ws, 10)), EDIT_PARAMS),
        ];
        for (tool, params) in tools {
            let schema = tool.parameters_schema();
            let mut keys: Vec<&str> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            let mut want = params.to_vec();
            want.sort_unstable();
            assert_eq!(keys, want, "{}", tool.name());
            for r in schema["required"].as_array().unwrap() {
                assert!(params.contains(&r.as_str().unwrap()));
            }
        }
    }

    proptest! {
        /// Whatever the offset and cap, the window is valid text that
        /// neither loses nor duplicates characters across consecutive reads.
        #[test]
        fn consecutive_windows_reassemble_the_text(s in "\\PC{0,40}", want in 1usize..8) {
            let bytes = s.as_bytes();
            let mut offset = 0usize;
            let mut out = String::new();
            while offset < bytes.len() {
                let buf = &bytes[offset..(offset + want + 6).min(bytes.len())];
                let (a, b) = text_window(buf, offset as u64, want).unwrap();
                prop_assert!(b > a);
                out.push_str(std::str::from_utf8(&buf[a..b]).unwrap());
                offset += b;
            }
            prop_assert_eq!(out, s);
        }
    }
}
