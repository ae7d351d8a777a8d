//! The tamper-evident audit trail (AU1–AU5).
//!
//! # Files
//!
//! Under the audit directory (`PINCER_HOME/audit/`):
//!
//! - **Segments**, one [`Entry`] per line, `{actor, data, hash, kind, prev,
//!   seq, ts}`: segment 1 is `trail.jsonl` (the name the whole trail had
//!   before it was split, so a trail written by an older pincer *is*
//!   segment 1 and nothing is renamed), segment *n* ≥ 2 is
//!   `trail.NNNNNN.jsonl` (`trail.000002.jsonl`, …). The chain runs through
//!   all of them: `seq` starts at 1 and grows by 1, `prev` is the `hash` of
//!   the entry before ([`GENESIS`], 64 zeros, for seq 1) even when that entry
//!   is the last one of the previous segment; `hash` is the lowercase hex
//!   SHA-256 of the canonical JSON ([`crate::canonical`]) of the entry
//!   *without* its `hash` field. A stored line is exactly the canonical JSON
//!   of the whole entry followed by `\n`, so a line that parses to the right
//!   value but is not byte-identical to its canonical form is a defect too:
//!   every byte of a segment is covered.
//! - A segment is closed when the next entry would take it past
//!   [`AuditOptions::segment_bytes`] (default [`DEFAULT_SEGMENT_BYTES`],
//!   64 MiB; a segment always holds at least one entry). A closed segment is
//!   made read-only (mode 0400) and is never rewritten, moved, compressed or
//!   deleted by pincer: the trail only grows. (Compressing old segments is
//!   not implemented.)
//! - `anchor.json`: `{"count":N,"len":B,"segment":S,"top":"<hash>"}`, the
//!   last acknowledged entry: its seq `count`, its hash `top`, the segment
//!   `S` it is in and the byte length `len` of that segment up to and
//!   including its line. Replaced atomically (temp, fsync, rename, fsync
//!   dir). The first append writes the genesis anchor (`count` 0, `top`
//!   GENESIS, segment 1, `len` 0) before the first line, so a missing anchor
//!   beside a non-empty trail always means someone removed it. An anchor
//!   written before segments existed, `{"count":N,"top":"…"}`, is still
//!   read; the next append walks the (single-file) trail once and rewrites
//!   it in the new form.
//! - `lock`: the advisory `flock` that serialises writers. An append holds it
//!   (exclusive) for the duration of one append only, so `pincer audit note`
//!   in another terminal works while an agent runs; `verify` and `log` hold
//!   it shared while they read, so appends wait for a running verify.
//!
//! # Durability contract
//!
//! An append (under the lock) checks the anchor against the end of the
//! trail, writes one line with one `write`, `fdatasync`s it (and fsyncs the
//! directory when the line opened a new segment), then replaces the anchor
//! atomically. It returns only after all of that: an acknowledged entry is
//! on disk and anchored. fsync happens for every entry, always; if the disk
//! is slow, appends are slow. A kill -9 (or power cut) at each point leaves:
//!
//! 1. Before the line is written: nothing changed.
//! 2. During the write: a *torn tail*, bytes after the last `\n` of the
//!    anchored segment (or a new segment holding only such bytes), over an
//!    anchor that matches the complete lines. The next append truncates it
//!    (and fsyncs), then appends an `audit.repair` entry (actor `system`,
//!    data `{truncated_bytes}`) before its own entry. `verify` reports it in
//!    [`VerifyReport::torn_tail_bytes`], not as a defect.
//! 3. After the line's fsync, before the anchor is replaced: exactly one
//!    complete, valid entry past the anchor, chained to `anchor.top` with seq
//!    `count + 1`, at the anchor's `len` in its segment or alone in the next
//!    segment. The next append adopts it (moves the anchor first). `verify`
//!    reports it as [`VerifyReport::unanchored`] `= 1`, not as a defect. It
//!    was never acknowledged, so nothing acknowledged is lost.
//! 4. During the anchor replacement: the old or the new anchor, whole; the
//!    old one is case 3.
//!
//! A new segment that exists but is empty (a crash right after creating it)
//! is harmless: the next entry goes into it. Once a segment exists, nothing
//! more is ever added to the one before it.
//!
//! Anything else (two entries past the anchor, a segment shorter than the
//! anchor says, an anchored last entry that is not the one the anchor
//! names, a bad line past the anchor) is not a crash state, and append
//! refuses with [`AuditError::Diverged`] until a person looks (`pincer
//! audit verify`) and decides: `pincer audit reanchor` when the entries are
//! intact and only the anchor disagrees, `pincer audit seal` when a segment
//! itself is damaged (see "Sealing"). A write error mid-append leaves the
//! same states as a crash.
//!
//! # What append checks, and what it costs
//!
//! Every append checks, under the lock and whatever process wrote last: the
//! anchor; that its segment is at least `len` bytes long; that the line
//! ending at byte `len` is a valid entry (canonical form, right hash) with
//! seq `count` and hash `top`; the bytes past `len` (nothing, a torn tail,
//! or one entry that continues the chain); and that the next segment (and
//! the one after it) holds nothing unexpected. That is a few small reads (the
//! anchor, the last line, the tail) and `stat`s, whatever the trail's
//! length, plus three fsyncs (line, anchor temp, directory). So a removed
//! or cut last line, a truncated or extended segment and an edit of the last
//! entry are refused by the next append.
//!
//! An edit that keeps the anchored segment's length and leaves its last line
//! alone (a changed byte in the middle, two lines swapped), and anything in
//! an older segment (edited, truncated, removed), is **not** seen by append:
//! only `pincer audit verify` (or anything that calls [`Audit::verify`],
//! such as `pincer doctor` and memory consolidation) walks the chain and
//! finds it. The full walk is verify's job, not every audited command's.
//! The one exception is a trail with an anchor from before segments: its
//! first append walks it once to upgrade the anchor.
//!
//! # How verify walks
//!
//! `verify` lists the segments (they must be numbered 1, 2, … with no gap),
//! reads the first line of each to find seals, then streams each segment in
//! 4 MiB chunks (memory: the buffer, the longest line, and a few bytes per
//! line of one chunk; it does not grow with the trail), checks the lines of
//! a chunk in parallel with `std::thread::scope` (is it an entry, is it
//! byte-identical to its canonical form, is its hash right: independent per
//! line), then checks seq and links in order on one thread, across segment
//! boundaries. Only the last segment may end in a torn tail. The per-line
//! check has a strict allocation-free fast path and a serde_json reference
//! it defers to on any doubt; see `audit/line.rs`. [`Audit::verify_from`]
//! starts at a later segment (or the segment holding a seq) and checks its
//! first link against the last line of the segment before; what lies
//! before is not walked, and the report says where it started. It holds
//! the lock shared, so appends wait for a running verify.
//!
//! # Sealing
//!
//! When a segment itself is damaged (a changed byte, a cut line), the chain
//! cannot be repaired without rewriting evidence, and reanchor refuses.
//! [`Audit::seal`] (`pincer audit seal --reason "…"`) is the declared way
//! back. Under the lock it walks the whole trail, takes the segment holding
//! the first defect and every segment after it (usually just the last one),
//! makes them read-only (0400; never moved, never deleted) and starts a new
//! segment whose first entry is `audit.seal` by the caller (the CLI records
//! `human:cli`), data `{sealed: [{segment, file, bytes, sha256}], defect,
//! reason, anchor, verified_to}`. Its `prev` is the SHA-256 of the last
//! sealed file (so the new chain is bound to the exact bytes kept as
//! evidence), and its seq is one more than the highest seq the sealed files,
//! the anchor and the verified part knew (so no seq is ever reused; seqs may
//! skip). From then on verify does not walk the sealed segments; it checks
//! that each is still byte for byte what was sealed (a changed sealed file is
//! a [`DefectKind::SealBroken`] defect), lists them with the recorded defect,
//! reason and who in [`VerifyReport::sealed`], and verifies everything
//! before and after them as usual. A sealed defect is acknowledged, not
//! hidden: the trail then counts as intact ([`VerifyReport::is_clean`]).
//! `log` and `--follow` skip sealed segments (the seal entry says what they
//! were). A crash while sealing leaves the seal entry alone in the new
//! segment without the anchor moved; the next append, or `seal` again,
//! finishes it.
//!
//! # What the anchor does and does not protect against
//!
//! The chain makes any edit, deletion or reordering inside the trail visible
//! to `verify`, and the anchor makes the *end* of the trail visible:
//! deleting the last entries, or cutting into the last line, no longer
//! leaves a valid shorter chain, and append refuses to write on top of it,
//! so a removed line is never silently "healed" by the next append. That is
//! all. There is no secret in any hash: **anyone who can write the audit
//! directory can forge a whole new, perfectly valid chain and a matching
//! anchor**, or a seal. The trail detects accidents and careless
//! tampering, and it stops silent truncation; it is not proof against an
//! attacker with write access. Copy the anchor (or the segments) somewhere
//! that attacker cannot write if you need that.
//!
//! Timestamps are recorded as the wall clock says; they are not required to
//! grow (a board without a real-time clock may boot in the past), so
//! `log --since TIME` reads the whole trail.

use crate::canonical::write_canonical;
use crate::fsutil::{create_private_dir, write_atomic};
use crate::message::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `prev` of the first entry, and `top` of an empty trail: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// A note a person or the system adds (`pincer audit note`, reanchor).
pub const KIND_NOTE: &str = schema::Kind::AuditNote.as_str();
/// What an append writes after truncating a torn tail.
pub const KIND_REPAIR: &str = schema::Kind::AuditRepair.as_str();
/// The first entry of the segment a seal starts.
pub const KIND_SEAL: &str = schema::Kind::AuditSeal.as_str();
/// Segment 1 of the trail (the whole trail until it first rotates).
pub const TRAIL_FILE: &str = "trail.jsonl";
/// The anchor file in the audit directory.
pub const ANCHOR_FILE: &str = "anchor.json";
const LOCK_FILE: &str = "lock";
/// The default largest segment, in bytes.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
/// Longest `actor` or `kind`, in characters.
pub const MAX_LABEL_CHARS: usize = 128;
/// Longest stored line, `\n` included. Appends larger than this are refused
/// (`data` names the field), and `verify` reports a longer line as a bad
/// line: it bounds the memory a verify needs whatever the file holds.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// How much of a segment `verify` reads at a time (small in tests, so they
/// cross many chunk boundaries with few entries).
const CHUNK_BYTES: usize = if cfg!(test) { 16 << 10 } else { 4 << 20 };
/// Below this, a chunk is checked on the calling thread alone.
const PARALLEL_MIN_BYTES: usize = if cfg!(test) { 4 << 10 } else { 64 << 10 };
const MAX_THREADS: usize = 8;

/// True when `filter` is a kind pincer writes ([`schema::Kind`]) or a
/// family of them (`gate`, `approval`, `audit`…: a dotted prefix).
pub fn is_known_kind(filter: &str) -> bool {
    !filter.is_empty()
        && schema::Kind::ALL
            .iter()
            .any(|k| kind_matches(k.as_str(), filter))
}

/// True when `kind` is selected by the filter `f`: equal, or `f` is a
/// dotted prefix (`gate` selects `gate.decision`).
fn kind_matches(kind: &str, f: &str) -> bool {
    kind == f || (kind.len() > f.len() && kind.starts_with(f) && kind.as_bytes()[f.len()] == b'.')
}

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
    /// The trail and its anchor disagree in a way no crash leaves: a person
    /// must look. Nothing was written.
    #[error(
        "the audit trail failed its check, so nothing was written ({detail}): run `pincer audit verify` to see the defect, then `pincer audit reanchor --reason \"…\"` if only the anchor disagrees, or `pincer audit seal --reason \"…\"` to keep a damaged segment as evidence and go on in a new one"
    )]
    Diverged { detail: String },
    /// `log` met a line that is not an entry.
    #[error(
        "the audit trail has a line that is not an entry ({0}); run `pincer audit verify` to see every defect"
    )]
    Unreadable(Defect),
    /// Reanchor refused: the defect is inside a segment, and moving the
    /// anchor would bless an edited trail.
    #[error(
        "reanchor refused: the trail itself is damaged ({0}); reanchor only re-anchors a trail whose entries are intact — restore the segment from a copy, or run `pincer audit seal --reason \"…\"` to keep it as evidence and go on in a new segment"
    )]
    Defect(Defect),
    /// Seal refused: nothing is damaged.
    #[error("nothing to seal: {0}")]
    NothingToSeal(String),
}

type Result<T, E = AuditError> = std::result::Result<T, E>;

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> AuditError + '_ {
    move |source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn diverged(detail: impl Into<String>) -> AuditError {
    AuditError::Diverged {
        detail: detail.into(),
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

    /// True when this entry's kind is selected by the filter `f`: equal,
    /// or `f` is a dotted prefix (`gate` selects `gate.decision`).
    pub fn kind_matches(&self, f: &str) -> bool {
        kind_matches(&self.kind, f)
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
    /// Not valid JSON, not an entry, not byte-identical to its canonical
    /// form; or an incomplete line or an empty segment where only the last
    /// segment may have one.
    BadLine,
    /// `seq` is not the previous seq + 1.
    SeqGap,
    /// `prev` is not the previous entry's hash.
    BrokenLink,
    /// `hash` is not the hash of the entry.
    HashMismatch,
    /// The anchor does not name the trail's last entry.
    AnchorMismatch,
    /// A segment between the first and the last is missing.
    MissingSegment,
    /// A sealed segment is no longer what was sealed.
    SealBroken,
}

impl DefectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DefectKind::BadLine => "bad_line",
            DefectKind::SeqGap => "seq_gap",
            DefectKind::BrokenLink => "broken_link",
            DefectKind::HashMismatch => "hash_mismatch",
            DefectKind::AnchorMismatch => "anchor_mismatch",
            DefectKind::MissingSegment => "missing_segment",
            DefectKind::SealBroken => "seal_broken",
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
    /// The segment it is in (for an anchor mismatch, the last segment).
    pub segment: u64,
    /// 1-based line in that segment; for an anchor mismatch, the number of
    /// its complete lines.
    pub line: u64,
    /// The seq expected at that line (for an anchor mismatch, the seq of
    /// the last complete entry).
    pub seq: u64,
    pub kind: DefectKind,
    pub detail: String,
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at seq {} ({} line {}): {}",
            self.kind,
            self.seq,
            segment_file_name(self.segment),
            self.line,
            self.detail
        )
    }
}

/// The contents of `anchor.json`: the last acknowledged entry and where it
/// ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anchor {
    /// The segment that entry is in.
    pub segment: u64,
    /// Its seq (0 for an empty trail). The number of entries, unless a seal
    /// skipped seqs.
    pub count: u64,
    /// Its hash ([`GENESIS`] for an empty trail).
    pub top: String,
    /// Bytes of the segment up to and including its line. None in an
    /// anchor written before segments existed (upgraded by the next append).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    /// Entries walked and verified: all of them (outside sealed segments)
    /// when there is no defect, else the ones before the defect.
    pub entries: u64,
    /// Seq of the first walked entry (0 for none).
    pub first_seq: u64,
    /// Seq of the last verified entry (0 for none).
    pub last_seq: u64,
    /// Hash of the last verified entry ([`GENESIS`] for none).
    pub top: String,
    /// The anchor as read, None when missing or unreadable.
    pub anchor: Option<Anchor>,
    /// The first defect; None means the trail is intact (sealed segments
    /// are acknowledged, not defects: see `sealed`).
    pub defect: Option<Defect>,
    /// 1 when the last entry is not yet anchored (a crash between its fsync
    /// and the anchor update; the next append adopts it), else 0.
    pub unanchored: u64,
    /// Bytes after the last `\n` of the last segment (an interrupted
    /// append; the next append truncates them). Not a defect while the
    /// complete lines match the anchor.
    pub torn_tail_bytes: u64,
    /// Segment files found.
    pub segments: u64,
    /// The first segment walked (1 unless asked to start later).
    pub from_segment: u64,
    /// Sealed segments met on the walk, with what each seal recorded.
    pub sealed: Vec<SealedReport>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.defect.is_none()
    }
}

/// One file a seal keeps as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealedSegment {
    pub segment: u64,
    pub file: String,
    pub bytes: u64,
    /// SHA-256 of the whole file; None when it was already missing.
    pub sha256: Option<String>,
}

/// A seal `verify` met: the segments it keeps and what it recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SealedReport {
    /// The `audit.seal` entry.
    pub seal_seq: u64,
    /// The segment it starts.
    pub seal_segment: u64,
    pub ts: Timestamp,
    /// Who sealed (the entry's actor).
    pub by: String,
    pub reason: String,
    /// The defect as recorded when sealing.
    pub defect: Value,
    pub segments: Vec<SealedSegment>,
    /// Every sealed file is still byte for byte what was sealed.
    pub intact: bool,
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
    /// The last entry of the trail before the note.
    pub real_top: Anchor,
    /// The anchor defect the reanchor resolved, if there was one.
    pub resolved: Option<Defect>,
    /// Bytes of a torn tail removed before the note was written.
    pub truncated_bytes: u64,
}

/// What a seal did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SealOutcome {
    /// The `audit.seal` entry.
    pub seal: Receipt,
    /// The new segment it starts.
    pub segment: u64,
    pub sealed: Vec<SealedSegment>,
    /// The defect that was sealed (None when this call only finished a seal
    /// a crash interrupted).
    pub defect: Option<Defect>,
    /// True when a crash had interrupted an earlier seal and this call
    /// only moved the anchor to it.
    pub finished_interrupted: bool,
}

/// How a trail is written; readers need none of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditOptions {
    /// A segment is closed once the next entry would take it past this
    /// many bytes (it always holds at least one entry).
    pub segment_bytes: u64,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
        }
    }
}

/// Where [`Audit::verify_from`] starts walking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VerifyFrom {
    #[default]
    Start,
    /// The segment that holds this seq (from its first line).
    Seq(u64),
    Segment(u64),
}

/// Which entries [`Audit::log_since`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// Seq at least this.
    Seq(u64),
    /// Recorded at or after this time (a whole-trail read: timestamps need
    /// not grow).
    Time(Timestamp),
}

/// The audit trail in one directory. Cheap to open; `Send + Sync`, and any
/// number of handles in any number of processes may append at once.
#[derive(Debug)]
pub struct Audit {
    dir: PathBuf,
    options: AuditOptions,
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

/// `anchor.json` as stored: the legacy form has neither `len` nor
/// `segment`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnchor {
    count: u64,
    top: String,
    #[serde(default)]
    len: Option<u64>,
    #[serde(default)]
    segment: Option<u64>,
}

/// Where the next entry goes: the last acknowledged one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Head {
    segment: u64,
    count: u64,
    top: String,
    len: u64,
}

impl Head {
    fn genesis() -> Head {
        Head {
            segment: 1,
            count: 0,
            top: GENESIS.to_string(),
            len: 0,
        }
    }

    fn anchor(&self) -> Anchor {
        Anchor {
            segment: self.segment,
            count: self.count,
            top: self.top.clone(),
            len: Some(self.len),
        }
    }
}

impl Audit {
    /// Opens the trail in `dir` with the default options, creating the
    /// directory (mode 0700) if it is missing. Reads nothing and takes no
    /// lock.
    pub fn open(dir: &Path) -> Result<Audit> {
        Audit::open_with(dir, AuditOptions::default())
    }

    /// [`Audit::open`] with `options` (how large a segment may grow).
    pub fn open_with(dir: &Path, options: AuditOptions) -> Result<Audit> {
        if options.segment_bytes == 0 {
            return Err(AuditError::Invalid {
                field: "segment_bytes",
                message: "it must be at least 1".to_string(),
            });
        }
        create_private_dir(dir).map_err(io_err(dir))?;
        Ok(Audit {
            dir: dir.to_path_buf(),
            options,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn options(&self) -> AuditOptions {
        self.options
    }

    /// Segment 1, `trail.jsonl`: the whole trail until it first rotates.
    pub fn trail_path(&self) -> PathBuf {
        self.dir.join(TRAIL_FILE)
    }

    /// The file of segment `n` (1-based).
    pub fn segment_path(&self, n: u64) -> PathBuf {
        self.dir.join(segment_file_name(n))
    }

    pub fn anchor_path(&self) -> PathBuf {
        self.dir.join(ANCHOR_FILE)
    }

    /// Appends one entry; returns once it is durable and anchored. Refuses
    /// (writing nothing) when the end of the trail diverged from its anchor;
    /// repairs the crash states first (see the module's durability
    /// contract). Costs the same whatever the trail's length.
    pub fn append(&self, actor: &str, kind: &str, data: Value) -> Result<Receipt> {
        validate_label("actor", actor)?;
        validate_label("kind", kind)?;
        check_data(&data)?;
        let _lock = self.flock(true)?;
        let head = self.prepare()?;
        let (receipt, _) = self.write_entry(&head, actor, kind, data)?;
        Ok(receipt)
    }

    /// Walks the whole chain and names the first defect. `Err` only for
    /// I/O; defects are in the report. Holds the lock shared while it
    /// reads, so appends wait for it. Memory stays bounded whatever the
    /// trail's size (a 4 MiB buffer plus the longest line).
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_from(VerifyFrom::Start)
    }

    /// [`Audit::verify`] from a later segment: the segments before it are
    /// not walked (their last line is read to check the first link).
    pub fn verify_from(&self, from: VerifyFrom) -> Result<VerifyReport> {
        let _lock = self.flock(false)?;
        Ok(self.walk(from)?.report)
    }

    /// Accepts the trail's complete entries as the truth and moves the
    /// anchor to them, recording an `audit.note` with `{reanchor: true,
    /// reason, old_anchor, real_top}` (plus `truncated_bytes` when a torn
    /// tail was removed) by `actor`. Refuses ([`AuditError::Defect`]) when
    /// the defect is inside a segment. Harmless on a clean trail (it
    /// records the note).
    ///
    /// A crash after the note's fsync and before the anchor moves leaves the
    /// old mismatch plus one more valid entry; running reanchor again
    /// records a second note.
    pub fn reanchor(&self, actor: &str, reason: &str) -> Result<Reanchored> {
        validate_label("actor", actor)?;
        check_reason(reason)?;
        let _lock = self.flock(true)?;
        let walked = self.walk(VerifyFrom::Start)?;
        let resolved = match walked.report.defect.clone() {
            Some(d) if d.kind == DefectKind::AnchorMismatch => Some(d),
            Some(d) => return Err(AuditError::Defect(d)),
            None => None,
        };
        let truncated = self.cut_torn_tail(&walked)?;
        if walked.anchor == AnchorState::Absent && walked.report.entries == 0 {
            // As in append: anchor genesis before the first line.
            self.write_anchor(&Head::genesis())?;
        }
        let head = walked.head();
        let old_anchor = walked.anchor.anchor();
        let real_top = head.anchor();
        let mut data = serde_json::json!({
            "reanchor": true,
            "reason": reason,
            "old_anchor": old_anchor,
            "real_top": real_top,
        });
        if truncated > 0 {
            data["truncated_bytes"] = truncated.into();
        }
        if let AnchorState::Invalid(why) = &walked.anchor {
            data["old_anchor_error"] = why.clone().into();
        }
        check_data(&data)?;
        let (note, _) = self.write_entry(&head, actor, KIND_NOTE, data)?;
        Ok(Reanchored {
            note,
            old_anchor,
            real_top,
            resolved,
            truncated_bytes: truncated,
        })
    }

    /// Truncates the last segment's torn tail found by a walk; returns how
    /// many bytes went.
    fn cut_torn_tail(&self, walked: &walk::Walked) -> Result<u64> {
        if walked.report.torn_tail_bytes == 0 {
            return Ok(0);
        }
        self.truncate(walked.last_segment, walked.last_len)?;
        Ok(walked.report.torn_tail_bytes)
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
        let raw = match serde_json::from_slice::<RawAnchor>(&bytes) {
            Ok(raw) => raw,
            Err(e) => return Ok(AnchorState::Invalid(e.to_string())),
        };
        if unhex(&raw.top).is_none() {
            return Ok(AnchorState::Invalid(format!(
                "`top` is `{}`, not 64 lowercase hex digits",
                raw.top
            )));
        }
        Ok(match (raw.segment, raw.len) {
            (None, None) => AnchorState::Present(Anchor {
                segment: 1,
                count: raw.count,
                top: raw.top,
                len: None,
            }),
            (Some(0), _) => AnchorState::Invalid("`segment` is 0; segments count from 1".into()),
            (Some(segment), Some(len)) => AnchorState::Present(Anchor {
                segment,
                count: raw.count,
                top: raw.top,
                len: Some(len),
            }),
            _ => AnchorState::Invalid("it has one of `len` and `segment` but not the other".into()),
        })
    }

    fn write_anchor(&self, head: &Head) -> Result<()> {
        let path = self.anchor_path();
        // Keys in byte order, as canonical JSON would have them.
        let bytes = format!(
            "{{\"count\":{},\"len\":{},\"segment\":{},\"top\":\"{}\"}}\n",
            head.count, head.len, head.segment, head.top
        );
        write_atomic(&path, bytes.as_bytes()).map_err(io_err(&path))
    }

    fn truncate(&self, segment: u64, len: u64) -> Result<()> {
        let path = self.segment_path(segment);
        let f = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        f.set_len(len).map_err(io_err(&path))?;
        f.sync_all().map_err(io_err(&path))
    }
}

fn check_reason(reason: &str) -> Result<()> {
    if reason.trim().is_empty() {
        return Err(AuditError::Invalid {
            field: "reason",
            message: "a reason is required".to_string(),
        });
    }
    Ok(())
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

mod bulk;
mod line;
mod open;
mod read;
pub mod schema;
mod seal;
mod segments;
mod walk;

pub use bulk::{NewEntry, write_new_trail};
pub use read::{Follower, Recent};
pub use segments::segment_file_name;

use line::check_line;
#[cfg(test)]
use walk::split_lines;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;

#[cfg(test)]
mod segment_tests;
