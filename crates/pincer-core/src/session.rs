//! The session store: append-only JSONL that no crash can corrupt (ST1–ST8).
//!
//! # Files
//!
//! Under `PINCER_HOME/sessions/`, a session `KEY` is:
//!
//! - `KEY.jsonl` (or `KEY.N.jsonl` after the N-th compaction): one
//!   [`Message`] per line, in the line format documented in
//!   [`crate::message`]. Lines are only ever appended, never rewritten.
//! - `KEY.meta.json`: `{version, file, skip, summary, torn_tail_repairs,
//!   skip_repairs}`.
//!   `file` names the data file in use, `skip` how many of its leading lines
//!   are logically truncated (ST3: it only grows), `summary` the running
//!   summary of dropped turns (CX5). A missing meta means
//!   `{file: "KEY.jsonl", skip: 0, summary: ""}`.
//! - `KEY.lock`: the advisory lock that makes one writer per session (ST7).
//!
//! # Durability contract
//!
//! - An append is one `write` of whole lines. With `fsync = "always"` every
//!   append is fdatasync'ed before it returns; with `"turn"` an append that
//!   holds a user message or a final reply is (so a user message is durable
//!   before the agent acknowledges it, ST6); with `"never"` the OS decides.
//!   [`SessionWriter::sync`] forces it.
//! - A kill at any instant loses at most the line being written. That line is
//!   a *torn tail* (no final `\n`): readers ignore it, and the next writer
//!   truncates it before appending, so a new record never fuses with it (ST4).
//!   Repairs are counted in meta.
//! - A line in the middle that does not parse is counted and reported in
//!   [`Stats::unreadable`], never silently dropped from the count.
//! - Meta is replaced atomically (temp, fsync, rename, dir fsync: ST2).
//! - Compaction (ST5) has one commit point, the rename of the new meta; see
//!   [`CrashPoint`] for every step and what a crash there leaves.
//! - If the disk is slow, appends are slow: the writer never buffers
//!   acknowledged records in memory.
//!
//! Readers take no lock. A reader that races a compaction may find the old
//! data file gone; it then re-reads meta and retries.

use crate::config::FsyncPolicy;
use crate::fsutil::{
    create_private_dir, rename, sync_all, sync_data, sync_dir, tmp_path, write_atomic,
};
use crate::message::{FieldError, Message, Role};
use crate::trim::{self, RepairReport, Trimmed};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Meta format version this build writes and reads.
pub const META_VERSION: u32 = 1;
const MAX_KEY_LEN: usize = 128;

/// Errors of the session store. Each variant says what the caller can do.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("invalid session key `{key}`: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    #[error(
        "session `{key}` is open for writing by another process (lock {lock}); close it or use another session key"
    )]
    Locked { key: String, lock: PathBuf },
    #[error("session `{key}` does not exist")]
    NotFound { key: String },
    #[error(
        "message {index} of the batch is invalid: {source}; nothing from this batch was written"
    )]
    InvalidMessage { index: usize, source: FieldError },
    #[error("{path}: corrupt session meta: {reason}")]
    CorruptMeta { path: PathBuf, reason: String },
    #[error("skip can only grow (ST3): it is {current}, asked for {requested}")]
    SkipBackwards { current: u64, requested: u64 },
    #[error("skip {requested} is past the end of the session ({lines} lines)")]
    SkipPastEnd { requested: u64, lines: u64 },
    #[error(
        "a previous write to session `{key}` failed, so what is on disk is uncertain; reopen the session"
    )]
    Poisoned { key: String },
    #[error(
        "session `{key}` changed since this view was read (file {view_file} skip {view_skip}, now {file} skip {skip}); read it again"
    )]
    StaleView {
        key: String,
        view_file: String,
        view_skip: u64,
        file: String,
        skip: u64,
    },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[cfg(test)]
    #[error("injected crash at {0:?}")]
    InjectedCrash(CrashPoint),
}

type Result<T, E = SessionError> = std::result::Result<T, E>;

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks a session key: it names files, so it must never escape `sessions/`.
pub fn validate_key(key: &str) -> Result<()> {
    let bad = |reason| {
        Err(SessionError::InvalidKey {
            key: key.to_string(),
            reason,
        })
    };
    if key.is_empty() {
        return bad("it is empty");
    }
    if key.len() > MAX_KEY_LEN {
        return bad("it is longer than 128 bytes");
    }
    if key.contains(['/', '\\']) {
        return bad("it contains a path separator");
    }
    if key.contains("..") {
        return bad("it contains `..`");
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return bad("only ASCII letters, digits, `-` and `_` are allowed");
    }
    Ok(())
}

/// The contents of `KEY.meta.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub version: u32,
    pub file: String,
    pub skip: u64,
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub torn_tail_repairs: u64,
    /// How many times a writer found `skip` past the end of the data file
    /// (lines lost below it, e.g. a power cut with `fsync = "never"`) and
    /// lowered it to the end so new messages are visible.
    #[serde(default)]
    pub skip_repairs: u64,
}

impl Meta {
    fn initial(key: &str) -> Self {
        Meta {
            version: META_VERSION,
            file: data_file_name(key, 0),
            skip: 0,
            summary: String::new(),
            torn_tail_repairs: 0,
            skip_repairs: 0,
        }
    }

    /// The generation of the data file: 0 for `KEY.jsonl`, N for `KEY.N.jsonl`.
    fn generation(&self, key: &str) -> Option<u64> {
        parse_data_file_name(key, &self.file)
    }
}

fn data_file_name(key: &str, generation: u64) -> String {
    if generation == 0 {
        format!("{key}.jsonl")
    } else {
        format!("{key}.{generation}.jsonl")
    }
}

fn parse_data_file_name(key: &str, name: &str) -> Option<u64> {
    let rest = name.strip_prefix(key)?.strip_suffix(".jsonl")?;
    if rest.is_empty() {
        return Some(0);
    }
    let digits = rest.strip_prefix('.')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|g| *g > 0)
}

/// One line that could not be read as a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// 1-based line number in the data file.
    pub line: u64,
    pub error: String,
}

/// What is on disk, for `pincer session show` and tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub file: String,
    pub bytes: u64,
    /// Complete (newline-terminated) lines in the data file.
    pub lines_on_disk: u64,
    pub skip: u64,
    /// Lines after `skip`, readable or not.
    pub live_lines: u64,
    pub unreadable: Vec<Unreadable>,
    /// Bytes of an unterminated last line, ignored on read; the next writer
    /// truncates them.
    pub torn_tail_bytes: u64,
    /// How many torn tails writers have repaired over the session's life.
    pub torn_tail_repairs: u64,
    /// True when meta's `skip` points past the last line on disk; the next
    /// writer lowers it to the end (counted in meta `skip_repairs`).
    pub skip_past_end: bool,
}

/// A consistent read of one session.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub key: String,
    pub meta: Meta,
    /// The live, readable messages, exactly as stored (not repaired).
    pub messages: Vec<Message>,
    /// `lines[i]` is the 0-based line index of `messages[i]` in the data file.
    pub lines: Vec<u64>,
    pub stats: Stats,
}

impl SessionView {
    /// Records messages a writer just appended (see
    /// [`AppendReceipt::first_line`]), so a long-lived owner of the session
    /// keeps its view current without reading the file again.
    pub fn record_appended(&mut self, batch: &[Message], first_line: u64) {
        for (i, m) in batch.iter().enumerate() {
            self.messages.push(m.clone());
            self.lines.push(first_line + i as u64);
        }
        let end = first_line + batch.len() as u64;
        self.stats.lines_on_disk = self.stats.lines_on_disk.max(end);
        self.stats.live_lines = self.stats.lines_on_disk.saturating_sub(self.meta.skip);
    }

    /// The messages to send to a provider: orphan tool calls left by a crash
    /// get a synthetic "interrupted" result, stray results are removed (CX7).
    /// Borrows the stored messages when they need no repair (the common
    /// case), so loading a long session does not copy it.
    pub fn context(&self) -> (Cow<'_, [Message]>, RepairReport) {
        if trim::is_repaired(&self.messages) {
            return (Cow::Borrowed(&self.messages), RepairReport::default());
        }
        let (repaired, report) = trim::repair_orphans(self.messages.clone());
        (Cow::Owned(repaired), report)
    }

    /// The data-file line at which the message `dropped` of the repaired
    /// context starts, i.e. the `skip` that logically removes the first
    /// `dropped` context messages. Trimming cuts only at user messages, which
    /// repair never adds or removes, so the n-th user message of the context
    /// is the n-th user message on disk.
    fn skip_for_context_prefix(&self, context: &[Message], dropped: usize) -> Option<u64> {
        if dropped == 0 {
            return Some(self.meta.skip);
        }
        if context.get(dropped)?.role != Role::User {
            return None;
        }
        let users_before = context[..dropped]
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        self.messages
            .iter()
            .zip(&self.lines)
            .filter(|(m, _)| m.role == Role::User)
            .nth(users_before)
            .map(|(_, line)| *line)
    }
}

/// Summary of a session for `pincer session list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    pub key: String,
    pub file: String,
    pub bytes: u64,
    pub lines_on_disk: u64,
    pub skip: u64,
    /// Seconds since the Unix epoch of the data file's last change.
    pub modified_unix: u64,
    /// Why the session could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The directory of sessions.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    fsync: FsyncPolicy,
}

impl SessionStore {
    /// Opens (creating with mode 0700 if needed) a store in `dir`.
    pub fn open(dir: impl Into<PathBuf>, fsync: FsyncPolicy) -> Result<Self> {
        let dir = dir.into();
        create_private_dir(&dir).map_err(io_err(&dir))?;
        Ok(Self { dir, fsync })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn meta_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.meta.json"))
    }

    fn lock_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.lock"))
    }

    /// Reads meta; a missing meta is the initial one. A meta that names a
    /// data file of another session, or a path, is corrupt.
    fn read_meta(&self, key: &str) -> Result<Option<Meta>> {
        let path = self.meta_path(key);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path)(e)),
        };
        let corrupt = |reason: String| SessionError::CorruptMeta {
            path: path.clone(),
            reason,
        };
        let meta: Meta = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if meta.version != META_VERSION {
            return Err(corrupt(format!(
                "version {} is not supported (this pincer reads {META_VERSION})",
                meta.version
            )));
        }
        if meta.generation(key).is_none() {
            return Err(corrupt(format!(
                "`file` is `{}`, not a data file of session `{key}`",
                meta.file
            )));
        }
        Ok(Some(meta))
    }

    /// True when the session has a meta or a data file.
    pub fn exists(&self, key: &str) -> Result<bool> {
        validate_key(key)?;
        Ok(self.meta_path(key).exists() || self.dir.join(data_file_name(key, 0)).exists())
    }

    /// Reads a session without locking it.
    pub fn read(&self, key: &str) -> Result<SessionView> {
        validate_key(key)?;
        // A compaction may delete the file our meta named between the two
        // reads; the new meta is then already in place, so read again.
        let mut attempts = 0;
        loop {
            let meta = self.read_meta(key)?;
            let exists = meta.is_some();
            let meta = meta.unwrap_or_else(|| Meta::initial(key));
            let path = self.dir.join(&meta.file);
            match fs::read(&path) {
                Ok(bytes) => return Ok(parse_session(key, meta, &bytes)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if !exists && meta.file == data_file_name(key, 0) {
                        return Err(SessionError::NotFound {
                            key: key.to_string(),
                        });
                    }
                    attempts += 1;
                    if attempts >= 5 {
                        return Err(io_err(&path)(e));
                    }
                }
                Err(e) => return Err(io_err(&path)(e)),
            }
        }
    }

    /// Lists sessions, sorted by key.
    pub fn list(&self) -> Result<Vec<SessionInfo>> {
        let mut keys = std::collections::BTreeSet::new();
        for entry in fs::read_dir(&self.dir).map_err(io_err(&self.dir))? {
            let entry = entry.map_err(io_err(&self.dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let key = name
                .strip_suffix(".meta.json")
                .or_else(|| name.strip_suffix(".jsonl"));
            if let Some(key) = key
                && validate_key(key).is_ok()
            {
                keys.insert(key.to_string());
            }
        }
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            // One broken session must not hide the others.
            out.push(self.info(&key).unwrap_or_else(|e| SessionInfo {
                key: key.clone(),
                file: String::new(),
                bytes: 0,
                lines_on_disk: 0,
                skip: 0,
                modified_unix: 0,
                error: Some(e.to_string()),
            }));
        }
        Ok(out)
    }

    fn info(&self, key: &str) -> Result<SessionInfo> {
        let meta = self.read_meta(key)?.unwrap_or_else(|| Meta::initial(key));
        let path = self.dir.join(&meta.file);
        let (bytes, lines, modified_unix) = match fs::read(&path) {
            Ok(data) => {
                let md = fs::metadata(&path).map_err(io_err(&path))?;
                let modified = md
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs());
                (
                    data.len() as u64,
                    memchr::memchr_iter(b'\n', &data).count() as u64,
                    modified,
                )
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => (0, 0, 0),
            Err(e) => return Err(io_err(&path)(e)),
        };
        Ok(SessionInfo {
            key: key.to_string(),
            file: meta.file,
            bytes,
            lines_on_disk: lines,
            skip: meta.skip,
            modified_unix,
            error: None,
        })
    }

    /// Opens the single writer of a session, creating it if needed (ST7).
    /// Cleans up what a crashed compaction left and repairs a torn tail.
    pub fn writer(&self, key: &str) -> Result<SessionWriter> {
        validate_key(key)?;
        let lock_path = self.lock_path(key);
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(SessionError::Locked {
                    key: key.to_string(),
                    lock: lock_path,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
        }
        let stored = self.read_meta(key)?;
        let has_meta = stored.is_some();
        let meta = stored.unwrap_or_else(|| Meta::initial(key));
        let mut w = SessionWriter {
            store: self.clone(),
            key: key.to_string(),
            _lock: lock,
            data: None,
            meta,
            lines: 0,
            bytes: 0,
            unsynced: false,
            poisoned: false,
            #[cfg(test)]
            crash_at: None,
        };
        if has_meta {
            // Without a meta no compaction ever ran, so other generations
            // are not ours to delete.
            w.remove_stale_files()?;
        }
        w.open_data(has_meta)?;
        Ok(w)
    }
}

/// Splits a data file into live messages and stats. Never fails: anything
/// unreadable is counted in the stats instead.
fn parse_session(key: &str, meta: Meta, bytes: &[u8]) -> SessionView {
    let complete = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
    let torn_tail_bytes = (bytes.len() - complete) as u64;
    let body = &bytes[..complete];
    let mut messages = Vec::new();
    let mut lines = Vec::new();
    let mut unreadable = Vec::new();
    let mut line_no: u64 = 0;
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', body) {
        let line = &body[start..end];
        start = end + 1;
        let idx = line_no;
        line_no += 1;
        if idx < meta.skip {
            continue;
        }
        match Message::from_line(line) {
            Ok(m) => {
                messages.push(m);
                lines.push(idx);
            }
            Err(e) => unreadable.push(Unreadable {
                line: idx + 1,
                error: e.to_string(),
            }),
        }
    }
    let stats = Stats {
        file: meta.file.clone(),
        bytes: bytes.len() as u64,
        lines_on_disk: line_no,
        skip: meta.skip,
        live_lines: line_no.saturating_sub(meta.skip),
        unreadable,
        torn_tail_bytes,
        torn_tail_repairs: meta.torn_tail_repairs,
        skip_past_end: meta.skip > line_no,
    };
    SessionView {
        key: key.to_string(),
        meta,
        messages,
        lines,
        stats,
    }
}

/// The steps of compaction, in order. A crash at any of them reads back the
/// same live messages; the comment on each says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// Nothing written yet: the old meta and file are untouched.
    Start,
    /// The new data file holds the live lines but is not fsynced. Meta still
    /// names the old file; the new one is a stray the next writer deletes.
    NewFileWritten,
    /// The new file is durable; meta still names the old one. Same as above.
    NewFileSynced,
    /// The new meta is in its temp file, not yet renamed. The old meta is
    /// intact; the temp is a stray the next writer deletes.
    MetaTempWritten,
    /// THE COMMIT POINT has passed: meta names the new file with `skip: 0`
    /// in one rename, so the old skip can never be applied to the new file.
    /// The rename may not be durable yet; if it is lost, the old meta and
    /// the old file (not yet deleted) are both still there.
    MetaRenamed,
    /// The rename is durable. The old file is a stray the next writer deletes.
    MetaSynced,
    /// The old file is gone; compaction is complete.
    OldFileDeleted,
}

impl CrashPoint {
    pub const ALL: [CrashPoint; 7] = [
        CrashPoint::Start,
        CrashPoint::NewFileWritten,
        CrashPoint::NewFileSynced,
        CrashPoint::MetaTempWritten,
        CrashPoint::MetaRenamed,
        CrashPoint::MetaSynced,
        CrashPoint::OldFileDeleted,
    ];
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendReceipt {
    pub appended: usize,
    /// 0-based line index of the first appended message.
    pub first_line: u64,
    /// True when the batch was fsynced before returning.
    pub durable: bool,
}

/// What applying a trim did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrimReport {
    pub kept_turns: usize,
    pub dropped_turns: usize,
    pub dropped_messages: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub skip_before: u64,
    pub skip_after: u64,
    pub compacted: Option<CompactReport>,
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    pub old_file: String,
    pub new_file: String,
    pub lines_dropped: u64,
    pub lines_kept: u64,
    /// Unreadable lines from the skipped part, carried into the new file so
    /// they stay counted and reported instead of vanishing.
    pub unreadable_kept: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Compaction committed, but removing the old file or syncing the
    /// directory afterwards failed; the next writer cleans up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup_error: Option<String>,
}

/// The one writer of a session; holds its advisory lock until dropped.
#[derive(Debug)]
pub struct SessionWriter {
    store: SessionStore,
    key: String,
    _lock: File,
    data: Option<File>,
    meta: Meta,
    /// Complete lines in the data file.
    lines: u64,
    /// Bytes in the data file (always ends on a line boundary).
    bytes: u64,
    unsynced: bool,
    poisoned: bool,
    #[cfg(test)]
    crash_at: Option<CrashPoint>,
}

impl SessionWriter {
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    fn data_path(&self) -> PathBuf {
        self.store.dir.join(&self.meta.file)
    }

    fn dir(&self) -> &Path {
        &self.store.dir
    }

    #[cfg(test)]
    fn point(&self, p: CrashPoint) -> Result<()> {
        if self.crash_at == Some(p) {
            return Err(SessionError::InjectedCrash(p));
        }
        Ok(())
    }

    #[cfg(not(test))]
    #[inline(always)]
    fn point(&self, _p: CrashPoint) -> Result<()> {
        Ok(())
    }

    /// Deletes data files meta does not name and a leftover meta temp file:
    /// what a compaction that crashed before or after its commit point left.
    fn remove_stale_files(&mut self) -> Result<()> {
        let dir = self.store.dir.clone();
        let mut removed = false;
        let meta_tmp = tmp_path(&self.store.meta_path(&self.key));
        match fs::remove_file(&meta_tmp) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&meta_tmp)(e)),
        }
        for entry in fs::read_dir(&dir).map_err(io_err(&dir))? {
            let entry = entry.map_err(io_err(&dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name != self.meta.file && parse_data_file_name(&self.key, name).is_some() {
                let p = entry.path();
                fs::remove_file(&p).map_err(io_err(&p))?;
                removed = true;
            }
        }
        if removed {
            sync_dir(&dir).map_err(io_err(&dir))?;
        }
        Ok(())
    }

    /// Opens (creating) the data file and repairs a torn tail (ST4).
    fn open_data(&mut self, has_meta: bool) -> Result<()> {
        let path = self.data_path();
        let created = !path.exists();
        if created && has_meta && (self.meta.generation(&self.key) != Some(0) || self.meta.skip > 0)
        {
            // Meta names a file that should exist: never paper over its loss
            // with an empty session.
            return Err(SessionError::CorruptMeta {
                path: self.store.meta_path(&self.key),
                reason: format!("its data file `{}` is missing", self.meta.file),
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        if created {
            sync_dir(self.dir()).map_err(io_err(self.dir()))?;
        }
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        let complete = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1) as u64;
        if complete < bytes.len() as u64 {
            // The torn line was never acknowledged: its append did not return.
            file.set_len(complete).map_err(io_err(&path))?;
            sync_all(&file, &path).map_err(io_err(&path))?;
            let meta = Meta {
                torn_tail_repairs: self.meta.torn_tail_repairs + 1,
                ..self.meta.clone()
            };
            self.write_meta(&meta)?;
            self.meta = meta;
        }
        self.lines = memchr::memchr_iter(b'\n', &bytes[..complete as usize]).count() as u64;
        self.bytes = complete;
        self.data = Some(file);
        if self.meta.skip > self.lines {
            // Lines below skip were lost (the data file lost its tail after
            // meta was written): keep skip at the end so nothing new hides.
            let meta = Meta {
                skip: self.lines,
                skip_repairs: self.meta.skip_repairs + 1,
                ..self.meta.clone()
            };
            self.write_meta(&meta)?;
            self.meta = meta;
        }
        Ok(())
    }

    /// Replaces meta atomically. A failure leaves it unknown whether the new
    /// meta is on disk, so the writer is poisoned rather than trusting its
    /// in-memory copy (a stale copy could let skip go backwards).
    fn write_meta(&mut self, meta: &Meta) -> Result<()> {
        let path = self.store.meta_path(&self.key);
        let mut bytes = serde_json::to_vec_pretty(meta).map_err(|e| SessionError::Io {
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        bytes.push(b'\n');
        write_atomic(&path, &bytes).map_err(|e| {
            self.poisoned = true;
            io_err(&path)(e)
        })
    }

    fn file(&mut self) -> Result<&mut File> {
        if self.poisoned {
            return Err(SessionError::Poisoned {
                key: self.key.clone(),
            });
        }
        let path = self.data_path();
        self.data.as_mut().ok_or_else(|| SessionError::Io {
            path,
            source: io::Error::other("data file is not open"),
        })
    }

    /// Appends a batch. Every message is validated first; if any is invalid,
    /// nothing is written. Returns once the batch is written, and fsynced if
    /// the policy asks for it (see the module's durability contract).
    pub fn append(&mut self, batch: &[Message]) -> Result<AppendReceipt> {
        let mut buf = Vec::with_capacity(batch.len() * 128);
        for (index, m) in batch.iter().enumerate() {
            m.validate()
                .map_err(|source| SessionError::InvalidMessage { index, source })?;
            serde_json::to_writer(&mut buf, m).map_err(|e| SessionError::InvalidMessage {
                index,
                source: FieldError::new("content", e.to_string()),
            })?;
            buf.push(b'\n');
        }
        if batch.is_empty() {
            return Ok(AppendReceipt {
                appended: 0,
                first_line: self.lines,
                durable: !self.unsynced,
            });
        }
        let first_line = self.lines;
        let path = self.data_path();
        let before = self.bytes;
        let file = self.file()?;
        if let Err(e) = file.write_all(&buf) {
            // Roll back a partial write so the file ends on a line boundary.
            if file.set_len(before).is_err() {
                self.poisoned = true;
            }
            return Err(io_err(&path)(e));
        }
        self.bytes += buf.len() as u64;
        self.lines += batch.len() as u64;
        self.unsynced = true;
        let sync_now = match self.store.fsync {
            FsyncPolicy::Always => true,
            FsyncPolicy::Turn => batch
                .iter()
                .any(|m| m.role == Role::User || m.is_final_reply()),
            FsyncPolicy::Never => false,
        };
        if sync_now {
            self.sync()?;
        }
        Ok(AppendReceipt {
            appended: batch.len(),
            first_line,
            durable: sync_now,
        })
    }

    /// Makes every appended line durable.
    pub fn sync(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        let path = self.data_path();
        if let Err(e) = sync_data(self.file()?, &path) {
            // Linux reports a writeback error once: a later fsync may
            // succeed although these pages are gone. Never say durable again.
            self.poisoned = true;
            return Err(io_err(&path)(e));
        }
        self.unsynced = false;
        Ok(())
    }

    /// When the session ends with an assistant tool call that has no result
    /// (the process died mid-tool), appends a synthetic "interrupted" result
    /// for each such call, so the file itself is valid again, not only the
    /// repaired view (CX7, AG2). `view` must be this writer's current view;
    /// it is updated. Returns the call ids closed.
    pub fn close_interrupted_calls(&mut self, view: &mut SessionView) -> Result<Vec<String>> {
        let Some(at) = view
            .messages
            .iter()
            .rposition(|m| m.role != Role::Tool)
            .filter(|&i| !view.messages[i].tool_calls.is_empty())
        else {
            return Ok(Vec::new());
        };
        let answered: Vec<&str> = view.messages[at + 1..]
            .iter()
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        let closing: Vec<Message> = view.messages[at]
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
            .map(|c| Message::tool_result(c.id.clone(), c.name.clone(), trim::INTERRUPTED_RESULT))
            .collect();
        if closing.is_empty() {
            return Ok(Vec::new());
        }
        let receipt = self.append(&closing)?;
        self.sync()?;
        view.record_appended(&closing, receipt.first_line);
        Ok(closing.into_iter().filter_map(|m| m.tool_call_id).collect())
    }

    /// Reads the session as this writer sees it.
    pub fn view(&self) -> Result<SessionView> {
        self.store.read(&self.key)
    }

    /// Logically truncates the first `skip` lines and sets the running
    /// summary, in one atomic meta write. `skip` never goes backwards (ST3).
    pub fn set_skip(&mut self, skip: u64, summary: String) -> Result<()> {
        if skip < self.meta.skip {
            return Err(SessionError::SkipBackwards {
                current: self.meta.skip,
                requested: skip,
            });
        }
        if skip > self.lines {
            return Err(SessionError::SkipPastEnd {
                requested: skip,
                lines: self.lines,
            });
        }
        // The lines below the new skip must be on disk before meta says so.
        self.sync()?;
        self.file()?;
        let meta = Meta {
            skip,
            summary,
            ..self.meta.clone()
        };
        self.write_meta(&meta)?;
        self.meta = meta;
        Ok(())
    }

    /// Applies a trim computed on `view.context()`: bumps skip to the first
    /// kept turn, stores the folded summary, and compacts when more than half
    /// the file is skipped (ST5).
    pub fn apply_trim(
        &mut self,
        view: &SessionView,
        context: &[Message],
        trimmed: &Trimmed,
    ) -> Result<TrimReport> {
        if view.meta.file != self.meta.file
            || view.meta.skip != self.meta.skip
            || view.stats.lines_on_disk > self.lines
        {
            return Err(SessionError::StaleView {
                key: self.key.clone(),
                view_file: view.meta.file.clone(),
                view_skip: view.meta.skip,
                file: self.meta.file.clone(),
                skip: self.meta.skip,
            });
        }
        let skip_before = self.meta.skip;
        let skip = view
            .skip_for_context_prefix(context, trimmed.dropped_messages)
            .ok_or_else(|| SessionError::Io {
                path: self.data_path(),
                source: io::Error::other("trim did not end on a turn boundary"),
            })?;
        if skip != skip_before || trimmed.summary != self.meta.summary {
            self.set_skip(skip, trimmed.summary.clone())?;
        }
        let compacted = if self.meta.skip * 2 > self.lines {
            Some(self.compact()?)
        } else {
            None
        };
        Ok(TrimReport {
            kept_turns: trimmed.kept_turns,
            dropped_turns: trimmed.dropped_turns,
            dropped_messages: trimmed.dropped_messages,
            tokens_before: trimmed.tokens_before,
            tokens_after: trimmed.tokens_after,
            skip_before,
            skip_after: self.meta.skip,
            compacted,
        })
    }

    /// Rewrites the live lines into a new data file and switches to it
    /// (ST5). Every step is a [`CrashPoint`]; the rename of meta is the one
    /// commit point.
    pub fn compact(&mut self) -> Result<CompactReport> {
        self.sync()?;
        self.point(CrashPoint::Start)?;
        let old_path = self.data_path();
        let old_file = self.meta.file.clone();
        let bytes = fs::read(&old_path).map_err(io_err(&old_path))?;
        let complete = (self.bytes as usize).min(bytes.len());
        let live_start = nth_line_start(&bytes[..complete], self.meta.skip);
        // Unreadable lines are evidence (a newer pincer's format, a bad
        // edit): they are never dropped silently, skipped or not.
        let mut carried = Vec::new();
        let mut unreadable_kept = 0u64;
        for line in bytes[..live_start].split_inclusive(|b| *b == b'\n') {
            if Message::from_line(line.strip_suffix(b"\n").unwrap_or(line)).is_err() {
                carried.extend_from_slice(line);
                unreadable_kept += 1;
            }
        }
        let live = &bytes[live_start..complete];
        let lines_kept =
            self.lines
                .checked_sub(self.meta.skip)
                .ok_or(SessionError::SkipPastEnd {
                    requested: self.meta.skip,
                    lines: self.lines,
                })?;
        let generation = self.meta.generation(&self.key).unwrap_or(0) + 1;
        let new_file = data_file_name(&self.key, generation);
        let new_path = self.store.dir.join(&new_file);
        let mut f = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&new_path)
            .map_err(io_err(&new_path))?;
        // A stray from an earlier crashed compaction may exist; start empty.
        f.set_len(0).map_err(io_err(&new_path))?;
        f.write_all(&carried).map_err(io_err(&new_path))?;
        f.write_all(live).map_err(io_err(&new_path))?;
        self.point(CrashPoint::NewFileWritten)?;
        sync_all(&f, &new_path).map_err(io_err(&new_path))?;
        sync_dir(self.dir()).map_err(io_err(self.dir()))?;
        self.point(CrashPoint::NewFileSynced)?;

        let meta = Meta {
            file: new_file.clone(),
            skip: 0,
            ..self.meta.clone()
        };
        let meta_path = self.store.meta_path(&self.key);
        let meta_tmp = tmp_path(&meta_path);
        let mut meta_bytes = serde_json::to_vec_pretty(&meta).map_err(|e| SessionError::Io {
            path: meta_path.clone(),
            source: io::Error::other(e),
        })?;
        meta_bytes.push(b'\n');
        {
            let mut t = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&meta_tmp)
                .map_err(io_err(&meta_tmp))?;
            t.write_all(&meta_bytes).map_err(io_err(&meta_tmp))?;
            sync_all(&t, &meta_tmp).map_err(io_err(&meta_tmp))?;
        }
        self.point(CrashPoint::MetaTempWritten)?;
        rename(&meta_tmp, &meta_path).map_err(io_err(&meta_path))?;
        // Committed: from here on, the session is the new file.
        let bytes_after = (carried.len() + live.len()) as u64;
        let mut report = CompactReport {
            old_file,
            new_file,
            lines_dropped: self.meta.skip - unreadable_kept,
            lines_kept,
            unreadable_kept,
            bytes_before: self.bytes,
            bytes_after,
            cleanup_error: None,
        };
        self.lines = lines_kept + unreadable_kept;
        self.bytes = bytes_after;
        self.meta = meta;
        self.data = Some(f);
        self.point(CrashPoint::MetaRenamed)?;
        // Past the commit point a failure does not undo the compaction; it
        // is reported, and the next writer removes the stray old file.
        match self.finish_compaction(&old_path) {
            Ok(()) => {}
            #[cfg(test)]
            Err(e @ SessionError::InjectedCrash(_)) => return Err(e),
            Err(e) => report.cleanup_error = Some(e.to_string()),
        }
        self.point(CrashPoint::OldFileDeleted)?;
        Ok(report)
    }
}

impl SessionWriter {
    /// The steps after compaction's commit point.
    fn finish_compaction(&self, old_path: &Path) -> Result<()> {
        sync_dir(self.dir()).map_err(io_err(self.dir()))?;
        self.point(CrashPoint::MetaSynced)?;
        fs::remove_file(old_path).map_err(io_err(old_path))?;
        sync_dir(self.dir()).map_err(io_err(self.dir()))
    }
}

/// Byte offset where line `n` (0-based) starts; the end if there are fewer.
fn nth_line_start(bytes: &[u8], n: u64) -> usize {
    if n == 0 {
        return 0;
    }
    memchr::memchr_iter(b'\n', bytes)
        .nth((n - 1) as usize)
        .map_or(bytes.len(), |i| i + 1)
}

/// Why [`trim_stored`] could not trim.
#[derive(Debug, thiserror::Error)]
pub enum StoredTrimError {
    #[error("session `{0}` does not exist")]
    Missing(String),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Trim(#[from] trim::TrimError),
}

/// Loads, repairs and trims the stored session `key` to `budget`, then
/// persists the trim (skip and summary, compaction when due): what a
/// person's `pincer session trim` does, outside any turn.
pub fn trim_stored(
    store: &SessionStore,
    key: &str,
    budget: trim::Budget,
    counter: &dyn trim::TokenCounter,
    summary_max_chars: usize,
) -> std::result::Result<TrimReport, StoredTrimError> {
    if !store.exists(key)? {
        return Err(StoredTrimError::Missing(key.to_string()));
    }
    let mut w = store.writer(key)?;
    let view = w.view()?;
    let (context, _repair) = view.context();
    let trimmed = trim::trim(
        &trim::TrimInput {
            messages: &context,
            summary: &view.meta.summary,
            summary_max_chars,
            budget,
        },
        counter,
    )?;
    Ok(w.apply_trim(&view, &context, &trimmed)?)
}

#[cfg(test)]
mod tests;
