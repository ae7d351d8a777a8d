//! The tamper-evident audit trail (AU1–AU5).
//!
//! # Files
//!
//! Under the audit directory (`PINCER_HOME/audit/`):
//!
//! - `trail.jsonl`: one [`Entry`] per line, `{actor, data, hash, kind, prev,
//!   seq, ts}`. `seq` starts at 1 and grows by 1; `prev` is the `hash` of the
//!   entry before ([`GENESIS`], 64 zeros, for seq 1); `hash` is the
//!   lowercase hex SHA-256 of the canonical JSON ([`crate::canonical`]) of
//!   the entry *without* its `hash` field. A stored line is exactly the
//!   canonical JSON of the whole entry followed by `\n`, so a line that parses
//!   to the right value but is not byte-identical to its canonical form is a
//!   defect too: every byte of the file is covered.
//! - `anchor.json`: `{"count": N, "top": "<hash of entry N>"}`, replaced
//!   atomically (temp, fsync, rename, fsync dir). The first append writes the
//!   genesis anchor `{count: 0, top: GENESIS}` before the first line, so a
//!   missing anchor beside a non-empty trail always means someone removed it.
//! - `lock`: the advisory `flock` that serialises writers. An append holds it
//!   (exclusive) for the duration of one append only, so `pincer audit note`
//!   in another terminal works while an agent runs; `verify` and `log` hold
//!   it shared while they read, so appends wait for a running verify.
//!
//! # Durability contract
//!
//! An append (under the lock) checks the anchor against the file, writes one
//! line with one `write`, `fdatasync`s it, then replaces the anchor
//! atomically. It returns only after all of that: an acknowledged entry is on
//! disk and anchored. fsync happens for every entry, always; if the disk is
//! slow, appends are slow. A kill -9 (or power cut) at each point leaves:
//!
//! 1. Before the line is written: nothing changed.
//! 2. During the write: a *torn tail*, bytes after the last `\n`, over an
//!    anchor that matches the complete lines. The next append truncates it
//!    (and fsyncs), then appends an `audit.repair` entry (actor `system`,
//!    data `{truncated_bytes}`) before its own entry. `verify` reports it in
//!    [`VerifyReport::torn_tail_bytes`], not as a defect.
//! 3. After the line's fsync, before the anchor is replaced: exactly one
//!    complete, valid entry past the anchor, chained to `anchor.top` with seq
//!    `count + 1`. The next append adopts it (moves the anchor first).
//!    `verify` reports it as [`VerifyReport::unanchored`] `= 1`, not as a
//!    defect. It was never acknowledged, so nothing acknowledged is lost.
//! 4. During the anchor replacement: the old or the new anchor, whole; the
//!    old one is case 3.
//!
//! Anything else (two entries past the anchor, an anchor ahead of the file, a
//! torn tail that cuts into an anchored entry, a bad line anywhere) is not a
//! crash state, and append refuses with [`AuditError::Diverged`] until a
//! person looks (`pincer audit verify`) and decides (`pincer audit
//! reanchor`). A write error mid-append leaves the same states as a crash
//! and makes the handle forget what it knew, so its next append re-verifies.
//!
//! # What append checks, and what it costs
//!
//! A handle verifies the whole chain (O(n), streamed, see `verify`) the
//! first time it appends, and again whenever `trail.jsonl`'s (length,
//! mtime, ctime, inode, device) differ from what it last wrote or verified —
//! which includes every time *another* handle or process appended. In steady
//! state (one writer) an append reads only the anchor and the last line,
//! plus three fsyncs (line, anchor temp, directory). So a fresh process's
//! first append on a 1 000 000-entry trail pays one full verify (about a
//! second), and a handle that interleaves with another writer pays it on
//! each interleaving. A same-length edit that also leaves mtime and ctime
//! unchanged (ctime cannot be set from user space, so this takes a clock
//! change or raw disk access) is only caught by `verify`, or by append when
//! it touches the last line.
//!
//! # How verify walks
//!
//! `verify` streams the file in 4 MiB chunks (memory: the buffer, the
//! longest line, and a few bytes per line of one chunk; it does not grow
//! with the file), checks the lines of a chunk in parallel with
//! `std::thread::scope` (is it an entry, is it byte-identical to its
//! canonical form, is its hash right: independent per line), then checks
//! seq and links in order on one thread. The per-line check has a strict
//! allocation-free fast path and a serde_json reference it defers to on any
//! doubt; see `audit/line.rs`. It holds the lock shared, so appends wait
//! for a running verify.
//!
//! # What the anchor does and does not protect against
//!
//! The chain makes any edit, deletion or reordering inside the file visible
//! to `verify`, and the anchor makes the *end* of the file visible: deleting
//! the last entries, or cutting into the last line, no longer leaves a valid
//! shorter chain, and append refuses to write on top of it, so a removed
//! line is never silently "healed" by the next append. That is all. There is
//! no secret in any hash: **anyone who can write the audit directory can
//! forge a whole new, perfectly valid chain and a matching anchor**. The
//! trail detects accidents and careless tampering, and it stops silent
//! truncation; it is not proof against an attacker with write access. Copy
//! the anchor (or the trail) somewhere that attacker cannot write if you
//! need that.
//!
//! Timestamps are recorded as the wall clock says; they are not required to
//! grow.

use crate::canonical::write_canonical;
use crate::fsutil::{create_private_dir, sync_dir, write_atomic};
use crate::message::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt::{self, Write as _};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// `prev` of the first entry, and `top` of an empty trail: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// A note a person or the system adds (`pincer audit note`, reanchor).
pub const KIND_NOTE: &str = "audit.note";
/// What an append writes after truncating a torn tail.
pub const KIND_REPAIR: &str = "audit.repair";
/// The trail file in the audit directory.
pub const TRAIL_FILE: &str = "trail.jsonl";
/// The anchor file in the audit directory.
pub const ANCHOR_FILE: &str = "anchor.json";
const LOCK_FILE: &str = "lock";
/// Longest `actor` or `kind`, in characters.
pub const MAX_LABEL_CHARS: usize = 128;
/// Longest stored line, `\n` included. Appends larger than this are refused
/// (`data` names the field), and `verify` reports a longer line as a bad
/// line: it bounds the memory a verify needs whatever the file holds.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// How much of the trail `verify` reads at a time (small in tests, so they
/// cross many chunk boundaries with few entries).
const CHUNK_BYTES: usize = if cfg!(test) { 16 << 10 } else { 4 << 20 };
/// Below this, a chunk is checked on the calling thread alone.
const PARALLEL_MIN_BYTES: usize = if cfg!(test) { 4 << 10 } else { 64 << 10 };
const MAX_THREADS: usize = 8;

/// Errors of the audit trail. Each variant says what the caller can do.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Reading or writing a file failed; nothing acknowledged was lost.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// The caller's input is invalid; nothing was written.
    #[error("invalid `{field}`: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    /// The trail is damaged, or it and its anchor disagree in a way no
    /// crash leaves: a person must look. Nothing was written.
    #[error(
        "the audit trail failed its check, so nothing was written ({detail}): run `pincer audit verify` to see the defect, then `pincer audit reanchor --reason \"…\"`"
    )]
    Diverged { detail: String },
    /// `log` met a line that is not an entry.
    #[error(
        "the audit trail has a line that is not an entry ({0}); run `pincer audit verify` to see every defect"
    )]
    Unreadable(Defect),
    /// Reanchor refused: the defect is inside the file, and moving the
    /// anchor would bless an edited trail.
    #[error(
        "reanchor refused: the trail itself is damaged ({0}); reanchor only re-anchors a trail whose entries are intact — restore trail.jsonl from a copy, or move the directory aside to start a new trail"
    )]
    Defect(Defect),
}

type Result<T, E = AuditError> = std::result::Result<T, E>;

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> AuditError + '_ {
    move |source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One line of the trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub seq: u64,
    pub ts: Timestamp,
    pub actor: String,
    pub kind: String,
    /// Always a JSON object.
    pub data: Value,
    pub prev: String,
    pub hash: String,
}

impl Entry {
    /// Builds the entry and computes its hash. Does not validate: append
    /// does that before it seals.
    pub fn seal(
        seq: u64,
        ts: Timestamp,
        actor: &str,
        kind: &str,
        data: Value,
        prev: &str,
    ) -> Entry {
        let mut buf = Vec::with_capacity(256);
        let ts_text = ts.to_string();
        let split = write_entry_bytes(&mut buf, actor, &data, None, kind, prev, seq, &ts_text);
        let hash = hex(&hash_without(&buf, split, split));
        Entry {
            seq,
            ts,
            actor: actor.to_string(),
            kind: kind.to_string(),
            data,
            prev: prev.to_string(),
            hash,
        }
    }

    /// The exact stored line, `\n` included: the canonical JSON of the
    /// whole entry.
    pub fn to_line(&self) -> String {
        let mut buf = Vec::with_capacity(256);
        write_entry_bytes(
            &mut buf,
            &self.actor,
            &self.data,
            Some(&self.hash),
            &self.kind,
            &self.prev,
            self.seq,
            &self.ts.to_string(),
        );
        buf.push(b'\n');
        // Only valid UTF-8 is ever written.
        String::from_utf8(buf).unwrap_or_default()
    }

    /// The hash this entry should have (the stored `hash` is not read).
    pub fn compute_hash(&self) -> String {
        Entry::seal(
            self.seq,
            self.ts,
            &self.actor,
            &self.kind,
            self.data.clone(),
            &self.prev,
        )
        .hash
    }

    /// True when `kind` is selected by the filter `f`: equal, or `f` is a
    /// dotted prefix (`gate` selects `gate.decision`).
    fn kind_matches(&self, f: &str) -> bool {
        self.kind == f
            || (self.kind.len() > f.len()
                && self.kind.starts_with(f)
                && self.kind.as_bytes()[f.len()] == b'.')
    }
}

/// Writes the canonical JSON of an entry (keys in byte order: actor, data,
/// hash, kind, prev, seq, ts) into `out`, without the `hash` member when
/// `hash` is None. Returns where the `hash` member starts (or would start),
/// so the hashed bytes are `out[..at] + out[at + HASH_MEMBER_LEN..]`.
#[allow(clippy::too_many_arguments)] // the seven fields of an entry, in key order
fn write_entry_bytes(
    out: &mut Vec<u8>,
    actor: &str,
    data: &Value,
    hash: Option<&str>,
    kind: &str,
    prev: &str,
    seq: u64,
    ts: &str,
) -> usize {
    out.extend_from_slice(b"{\"actor\":");
    write_json_str(actor, out);
    out.extend_from_slice(b",\"data\":");
    write_canonical(data, out);
    out.push(b',');
    let at = out.len();
    if let Some(h) = hash {
        out.extend_from_slice(b"\"hash\":");
        write_json_str(h, out);
        out.push(b',');
    }
    out.extend_from_slice(b"\"kind\":");
    write_json_str(kind, out);
    out.extend_from_slice(b",\"prev\":");
    write_json_str(prev, out);
    out.extend_from_slice(b",\"seq\":");
    let _ = write!(WriteVec(out), "{seq}");
    out.extend_from_slice(b",\"ts\":");
    write_json_str(ts, out);
    out.push(b'}');
    at
}

/// `"hash":"<64 hex>",`
const HASH_MEMBER_LEN: usize = 8 + 64 + 2;

/// The same string spelling [`crate::canonical`] uses (serde_json's).
fn write_json_str(s: &str, out: &mut Vec<u8>) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

struct WriteVec<'a>(&'a mut Vec<u8>);

impl fmt::Write for WriteVec<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// SHA-256 of `buf` without `buf[from..to]`.
fn hash_without(buf: &[u8], from: usize, to: usize) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(&buf[..from]);
    h.update(&buf[to..]);
    h.finalize().into()
}

fn hex(bytes: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(64);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Decodes 64 lowercase hex digits.
fn unhex(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (digit(b[2 * i])? << 4) | digit(b[2 * i + 1])?;
    }
    Some(out)
}

/// Checks an `actor` or `kind`: non-empty, at most 128 characters, no
/// control characters.
pub fn validate_label(field: &'static str, value: &str) -> Result<()> {
    let bad = |message: &str| {
        Err(AuditError::Invalid {
            field,
            message: message.to_string(),
        })
    };
    if value.is_empty() {
        return bad("it is empty");
    }
    if value.chars().count() > MAX_LABEL_CHARS {
        return bad("it is longer than 128 characters");
    }
    if value.chars().any(char::is_control) {
        return bad("it contains a control character");
    }
    Ok(())
}

/// What is wrong with a trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DefectKind {
    /// Not valid JSON, not an entry, or not byte-identical to its canonical
    /// form.
    BadLine,
    /// `seq` is not the previous seq + 1.
    SeqGap,
    /// `prev` is not the previous entry's hash.
    BrokenLink,
    /// `hash` is not the hash of the entry.
    HashMismatch,
    /// The anchor does not name the file's last entry.
    AnchorMismatch,
}

impl DefectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DefectKind::BadLine => "bad_line",
            DefectKind::SeqGap => "seq_gap",
            DefectKind::BrokenLink => "broken_link",
            DefectKind::HashMismatch => "hash_mismatch",
            DefectKind::AnchorMismatch => "anchor_mismatch",
        }
    }
}

impl fmt::Display for DefectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first defect of a trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Defect {
    /// 1-based line of `trail.jsonl`; for an anchor mismatch, the number of
    /// complete lines.
    pub line: u64,
    /// The seq expected at that line.
    pub seq: u64,
    pub kind: DefectKind,
    pub detail: String,
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} (seq {}): {}",
            self.kind, self.line, self.seq, self.detail
        )
    }
}

/// The contents of `anchor.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    pub count: u64,
    pub top: String,
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    /// Entries verified: all complete lines when there is no defect inside
    /// the file, else the ones before the defect.
    pub entries: u64,
    /// Hash of the last verified entry ([`GENESIS`] for none).
    pub top: String,
    /// The anchor as read, None when missing or unreadable.
    pub anchor: Option<Anchor>,
    /// The first defect; None means the trail is intact.
    pub defect: Option<Defect>,
    /// 1 when the last entry is not yet anchored (a crash between its fsync
    /// and the anchor update; the next append adopts it), else 0.
    pub unanchored: u64,
    /// Bytes after the last `\n` (an interrupted append; the next append
    /// truncates them). Not a defect while the complete lines match the
    /// anchor.
    pub torn_tail_bytes: u64,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.defect.is_none()
    }
}

/// What an append wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub seq: u64,
    pub hash: String,
}

/// What a reanchor did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reanchored {
    /// The `audit.note` entry that records the reanchor.
    pub note: Receipt,
    /// The anchor before, None when it was missing or unreadable.
    pub old_anchor: Option<Anchor>,
    /// The last entry of the file before the note.
    pub real_top: Anchor,
    /// The anchor defect the reanchor resolved, if there was one.
    pub resolved: Option<Defect>,
    /// Bytes of a torn tail removed before the note was written.
    pub truncated_bytes: u64,
}

/// The audit trail in one directory. Cheap to open; `Send + Sync`, and any
/// number of handles in any number of processes may append at once.
#[derive(Debug)]
pub struct Audit {
    dir: PathBuf,
    /// What this handle last wrote or verified; None until its first append
    /// and after any failed one.
    known: Mutex<Option<Known>>,
}

/// A verified state of the trail, and the file identity it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    stat: Option<FileStat>,
    count: u64,
    top: String,
}

/// Enough of `stat` to notice that someone else changed the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStat {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    dev: u64,
}

impl FileStat {
    fn of(md: &fs::Metadata) -> Self {
        FileStat {
            len: md.len(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
            ino: md.ino(),
            dev: md.dev(),
        }
    }
}

/// `anchor.json` as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AnchorState {
    Absent,
    Invalid(String),
    Present(Anchor),
}

impl AnchorState {
    fn anchor(&self) -> Option<Anchor> {
        match self {
            AnchorState::Present(a) => Some(a.clone()),
            _ => None,
        }
    }
}

/// How the file's complete entries relate to the anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Clean,
    /// One valid entry past the anchor (crash state 3).
    Lag,
    Mismatch(String),
}

/// Where the next entry goes.
#[derive(Debug)]
struct Head {
    count: u64,
    top: String,
}

impl Audit {
    /// Opens the trail in `dir`, creating the directory (mode 0700) if it is
    /// missing. Reads nothing and takes no lock.
    pub fn open(dir: &Path) -> Result<Audit> {
        create_private_dir(dir).map_err(io_err(dir))?;
        Ok(Audit {
            dir: dir.to_path_buf(),
            known: Mutex::new(None),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn trail_path(&self) -> PathBuf {
        self.dir.join(TRAIL_FILE)
    }

    pub fn anchor_path(&self) -> PathBuf {
        self.dir.join(ANCHOR_FILE)
    }

    /// Appends one entry; returns once it is durable and anchored. Refuses
    /// (writing nothing) when the trail diverged from its anchor; repairs
    /// the two crash states first (see the module's durability contract).
    pub fn append(&self, actor: &str, kind: &str, data: Value) -> Result<Receipt> {
        validate_label("actor", actor)?;
        validate_label("kind", kind)?;
        check_data(&data)?;
        let mut known = self.lock_known();
        let _lock = self.flock(true)?;
        let result = self
            .prepare(&mut known)
            .and_then(|mut head| self.write_entry(&mut known, &mut head, actor, kind, data));
        if result.is_err() {
            // What is on disk is uncertain: verify again next time.
            *known = None;
        }
        result
    }

    /// Walks the whole chain and names the first defect. `Err` only for
    /// I/O; defects are in the report. Holds the lock shared while it
    /// reads, so appends wait for it. Memory stays bounded whatever the
    /// file's size (a 4 MiB buffer plus the longest line).
    pub fn verify(&self) -> Result<VerifyReport> {
        let _lock = self.flock(false)?;
        let anchor = self.read_anchor()?;
        let scan = self.scan()?;
        let mut report = VerifyReport {
            entries: scan.entries,
            top: hex(&scan.top),
            anchor: anchor.anchor(),
            defect: scan.defect.clone(),
            unanchored: 0,
            torn_tail_bytes: scan.torn_tail_bytes,
        };
        if report.defect.is_none() {
            match judge(&scan, &anchor) {
                Verdict::Clean => {
                    // Spare this handle's next append a second full walk.
                    if scan.torn_tail_bytes == 0
                        && let Ok(mut known) = self.known.try_lock()
                    {
                        *known = Some(Known {
                            stat: scan.stat,
                            count: scan.entries,
                            top: report.top.clone(),
                        });
                    }
                }
                Verdict::Lag => report.unanchored = 1,
                Verdict::Mismatch(detail) => report.defect = Some(anchor_defect(&scan, detail)),
            }
        }
        Ok(report)
    }

    /// The last `limit` entries (all when None) whose kind is `kind` or
    /// starts with `kind.` (all kinds when None), oldest first. Reads the
    /// file backwards, so a small limit costs little on a long trail. Does
    /// not verify the chain (that is `verify`), but a line that is not an
    /// entry is an error, never skipped; a torn tail is ignored.
    pub fn log(&self, limit: Option<usize>, kind: Option<&str>) -> Result<Vec<Entry>> {
        let _lock = self.flock(false)?;
        let path = self.trail_path();
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&path)(e)),
        };
        let len = file.metadata().map_err(io_err(&path))?.len();
        let limit = limit.unwrap_or(usize::MAX);
        let mut out: VecDeque<Entry> = VecDeque::new();
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut lines_seen: u64 = 0;
        let mut failed: Option<(u64, String)> = None;
        for_each_line_backwards(&file, len, |line| {
            lines_seen += 1;
            let entry = serde_json::from_slice::<Entry>(line).map_err(|e| e.to_string());
            match entry {
                Ok(e) => {
                    if kind.is_none_or(|k| e.kind_matches(k)) {
                        out.push_front(e);
                    }
                    out.len() < limit
                }
                Err(e) => {
                    failed = Some((lines_seen, e));
                    false
                }
            }
        })
        .map_err(io_err(&path))?;
        if let Some((from_end, detail)) = failed {
            // Line numbers count from the start: count the lines we skipped.
            let total = count_lines(&file).map_err(io_err(&path))?;
            let line = total + 1 - from_end;
            return Err(AuditError::Unreadable(Defect {
                line,
                seq: line,
                kind: DefectKind::BadLine,
                detail: format!("not an audit entry: {detail}"),
            }));
        }
        Ok(out.into())
    }

    /// Accepts the file's complete entries as the truth and moves the anchor
    /// to them, recording an `audit.note` with `{reanchor: true, reason,
    /// old_anchor, real_top}` (plus `truncated_bytes` when a torn tail was
    /// removed) by `actor`. Refuses ([`AuditError::Defect`]) when the defect
    /// is inside the file. Harmless on a clean trail (it records the note).
    ///
    /// A crash after the note's fsync and before the anchor moves leaves the
    /// old mismatch plus one more valid entry; running reanchor again
    /// records a second note.
    pub fn reanchor(&self, actor: &str, reason: &str) -> Result<Reanchored> {
        validate_label("actor", actor)?;
        if reason.trim().is_empty() {
            return Err(AuditError::Invalid {
                field: "reason",
                message: "a reason is required".to_string(),
            });
        }
        let mut known = self.lock_known();
        let _lock = self.flock(true)?;
        let result = self.reanchor_locked(&mut known, actor, reason);
        if result.is_err() {
            *known = None;
        }
        result
    }

    fn reanchor_locked(
        &self,
        known: &mut Option<Known>,
        actor: &str,
        reason: &str,
    ) -> Result<Reanchored> {
        let anchor = self.read_anchor()?;
        let scan = self.scan()?;
        if let Some(d) = scan.defect.clone() {
            return Err(AuditError::Defect(d));
        }
        let resolved = match judge(&scan, &anchor) {
            Verdict::Mismatch(detail) => Some(anchor_defect(&scan, detail)),
            Verdict::Clean | Verdict::Lag => None,
        };
        if scan.torn_tail_bytes > 0 {
            self.truncate(scan.complete_len)?;
        }
        if anchor == AnchorState::Absent && scan.entries == 0 {
            // As in append: anchor genesis before the first line.
            self.write_anchor(0, GENESIS)?;
        }
        let old_anchor = anchor.anchor();
        let real_top = Anchor {
            count: scan.entries,
            top: hex(&scan.top),
        };
        let mut data = serde_json::json!({
            "reanchor": true,
            "reason": reason,
            "old_anchor": old_anchor,
            "real_top": real_top,
        });
        if scan.torn_tail_bytes > 0 {
            data["truncated_bytes"] = scan.torn_tail_bytes.into();
        }
        if let AnchorState::Invalid(why) = &anchor {
            data["old_anchor_error"] = why.clone().into();
        }
        check_data(&data)?;
        let mut head = Head {
            count: real_top.count,
            top: real_top.top.clone(),
        };
        *known = None;
        let note = self.write_entry(known, &mut head, actor, KIND_NOTE, data)?;
        Ok(Reanchored {
            note,
            old_anchor,
            real_top,
            resolved,
            truncated_bytes: scan.torn_tail_bytes,
        })
    }

    fn lock_known(&self) -> MutexGuard<'_, Option<Known>> {
        self.known.lock().unwrap_or_else(|poisoned| {
            // A thread panicked mid-append: trust nothing it left.
            let mut g = poisoned.into_inner();
            *g = None;
            g
        })
    }

    /// Takes the lock file, exclusive or shared, until the returned file is
    /// dropped.
    fn flock(&self, exclusive: bool) -> Result<File> {
        let path = self.dir.join(LOCK_FILE);
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => f,
            // A reader without write access to the directory can still lock
            // an existing lock file.
            Err(e) if !exclusive && e.kind() == io::ErrorKind::PermissionDenied => {
                File::open(&path).map_err(io_err(&path))?
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        if exclusive {
            file.lock().map_err(io_err(&path))?;
        } else {
            file.lock_shared().map_err(io_err(&path))?;
        }
        Ok(file)
    }

    fn read_anchor(&self) -> Result<AnchorState> {
        let path = self.anchor_path();
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(AnchorState::Absent),
            Err(e) => return Err(io_err(&path)(e)),
        };
        Ok(match serde_json::from_slice::<Anchor>(&bytes) {
            Ok(a) if unhex(&a.top).is_some() => AnchorState::Present(a),
            Ok(a) => {
                AnchorState::Invalid(format!("`top` is `{}`, not 64 lowercase hex digits", a.top))
            }
            Err(e) => AnchorState::Invalid(e.to_string()),
        })
    }

    fn write_anchor(&self, count: u64, top: &str) -> Result<()> {
        let path = self.anchor_path();
        let mut bytes = serde_json::to_vec(&Anchor {
            count,
            top: top.to_string(),
        })
        .map_err(|e| io_err(&path)(io::Error::other(e)))?;
        bytes.push(b'\n');
        write_atomic(&path, &bytes).map_err(io_err(&path))
    }

    fn stat_trail(&self) -> Result<Option<FileStat>> {
        let path = self.trail_path();
        match fs::metadata(&path) {
            Ok(md) => Ok(Some(FileStat::of(&md))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    fn truncate(&self, len: u64) -> Result<()> {
        let path = self.trail_path();
        let f = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        f.set_len(len).map_err(io_err(&path))?;
        f.sync_all().map_err(io_err(&path))
    }

    /// Checks the anchor against the file and repairs the two crash states;
    /// returns where the next entry goes. Under the exclusive lock.
    fn prepare(&self, known: &mut Option<Known>) -> Result<Head> {
        let anchor = self.read_anchor()?;
        if let Some(k) = known.as_ref()
            && matches!(&anchor, AnchorState::Present(a) if a.count == k.count && a.top == k.top)
            && self.stat_trail()? == k.stat
            && self.last_line_is(k)?
        {
            return Ok(Head {
                count: k.count,
                top: k.top.clone(),
            });
        }
        *known = None;
        let scan = self.scan()?;
        if let Some(d) = &scan.defect {
            return Err(AuditError::Diverged {
                detail: d.to_string(),
            });
        }
        let mut head = Head {
            count: scan.entries,
            top: hex(&scan.top),
        };
        match judge(&scan, &anchor) {
            Verdict::Clean => {
                if anchor == AnchorState::Absent {
                    // Empty trail: anchor it before the first line, so that
                    // from now on a missing anchor is always a defect.
                    self.write_anchor(0, GENESIS)?;
                }
            }
            // Crash state 3: the entry was fsynced, the anchor was not moved.
            Verdict::Lag => self.write_anchor(head.count, &head.top)?,
            Verdict::Mismatch(detail) => {
                return Err(AuditError::Diverged {
                    detail: anchor_defect(&scan, detail).to_string(),
                });
            }
        }
        if scan.torn_tail_bytes > 0 {
            // Crash state 2: the torn line's append never returned.
            self.truncate(scan.complete_len)?;
            self.write_entry(
                known,
                &mut head,
                "system",
                KIND_REPAIR,
                serde_json::json!({
                    "truncated_bytes": scan.torn_tail_bytes,
                    "why": "an append was interrupted before its line was complete",
                }),
            )?;
        } else {
            *known = Some(Known {
                stat: scan.stat,
                count: head.count,
                top: head.top.clone(),
            });
        }
        Ok(head)
    }

    /// True when the file's last line is entry `k.count` with hash `k.top`.
    fn last_line_is(&self, k: &Known) -> Result<bool> {
        let Some(stat) = k.stat else {
            return Ok(k.count == 0);
        };
        if k.count == 0 {
            return Ok(stat.len == 0);
        }
        let path = self.trail_path();
        let file = File::open(&path).map_err(io_err(&path))?;
        let mut found = None;
        for_each_line_backwards(&file, stat.len, |line| {
            found = Some(line.to_vec());
            false
        })
        .map_err(io_err(&path))?;
        let Some(line) = found else { return Ok(false) };
        Ok(match check_line(&line, &mut line::Scratch::default()) {
            Ok(ok) => ok.seq == k.count && ok.hash_ok && hex(&ok.hash) == k.top,
            Err(_) => false,
        })
    }

    /// Seals and writes one entry after `head`, fsyncs it, moves the anchor.
    fn write_entry(
        &self,
        known: &mut Option<Known>,
        head: &mut Head,
        actor: &str,
        kind: &str,
        data: Value,
    ) -> Result<Receipt> {
        let entry = Entry::seal(
            head.count + 1,
            Timestamp::now(),
            actor,
            kind,
            data,
            &head.top,
        );
        let line = entry.to_line();
        let path = self.trail_path();
        let created = !path.exists();
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        if created {
            sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        }
        file.write_all(line.as_bytes()).map_err(io_err(&path))?;
        file.sync_data().map_err(io_err(&path))?;
        self.write_anchor(entry.seq, &entry.hash)?;
        let stat = FileStat::of(&file.metadata().map_err(io_err(&path))?);
        head.count = entry.seq;
        head.top = entry.hash.clone();
        *known = Some(Known {
            stat: Some(stat),
            count: entry.seq,
            top: entry.hash.clone(),
        });
        Ok(Receipt {
            seq: entry.seq,
            hash: entry.hash,
        })
    }

    /// Walks `trail.jsonl` (see [`Scanner`]).
    fn scan(&self) -> Result<Scan> {
        let path = self.trail_path();
        scan_file(&path).map_err(io_err(&path))
    }
}

/// Refuses data that is not an object or would make a line too long.
fn check_data(data: &Value) -> Result<()> {
    if !data.is_object() {
        return Err(AuditError::Invalid {
            field: "data",
            message: "it must be a JSON object".to_string(),
        });
    }
    fn depth(v: &Value) -> usize {
        match v {
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    if depth(data) > line::MAX_DEPTH {
        return Err(AuditError::Invalid {
            field: "data",
            message: format!("it is nested deeper than {} levels", line::MAX_DEPTH),
        });
    }
    let mut buf = Vec::new();
    write_canonical(data, &mut buf);
    // Actor, kind, the two hashes, seq, ts and punctuation fit in 1 KiB.
    if buf.len() + 1024 > MAX_LINE_BYTES {
        return Err(AuditError::Invalid {
            field: "data",
            message: format!(
                "it is {} bytes as JSON; an entry is at most {MAX_LINE_BYTES} bytes",
                buf.len()
            ),
        });
    }
    Ok(())
}

fn judge(scan: &Scan, anchor: &AnchorState) -> Verdict {
    let torn = if scan.torn_tail_bytes > 0 {
        format!(" and {} bytes of an incomplete line", scan.torn_tail_bytes)
    } else {
        String::new()
    };
    match anchor {
        AnchorState::Absent if scan.entries == 0 => Verdict::Clean,
        AnchorState::Absent => Verdict::Mismatch(format!(
            "{ANCHOR_FILE} is missing but the trail has {} entries",
            scan.entries
        )),
        AnchorState::Invalid(why) => Verdict::Mismatch(format!("{ANCHOR_FILE} is invalid: {why}")),
        AnchorState::Present(a) => {
            let top = hex(&scan.top);
            if a.count == scan.entries && a.top == top {
                Verdict::Clean
            } else if scan.entries == a.count + 1 && hex(&scan.last_prev) == a.top {
                Verdict::Lag
            } else {
                Verdict::Mismatch(format!(
                    "the anchor says {} entries ending in {}, the file has {} complete entries ending in {top}{torn}",
                    a.count, a.top, scan.entries
                ))
            }
        }
    }
}

fn anchor_defect(scan: &Scan, detail: String) -> Defect {
    Defect {
        line: scan.entries,
        seq: scan.entries,
        kind: DefectKind::AnchorMismatch,
        detail,
    }
}

mod line;
pub mod schema;
mod walk;

use line::check_line;
#[cfg(test)]
use walk::split_lines;
use walk::{Scan, count_lines, for_each_line_backwards, scan_file};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
