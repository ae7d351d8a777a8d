//! Memory consolidation (ME6): the audit trail since a watermark
//! becomes a markdown memory page whose lines cite the audit seq they
//! summarise, committed so that a kill -9 at any instant loses nothing and
//! duplicates nothing. A page holds at most [`PAGE_BUDGET_BYTES`]: a run
//! with a larger backlog writes the first page of it and says there is
//! more ([`Consolidated::more`]); the next run goes on from there.
//!
//! It depends only on [`pincer_core::audit`], [`pincer_core::fsutil`],
//! [`pincer_core::message`], [`pincer_core::canonical`] and the
//! [`PageSink`] trait the page store implements.
//!
//! # What a run does
//!
//! Under the lock file `consolidation.lock` beside the watermark (two runs
//! never interleave):
//!
//! 1. Verifies the whole chain ([`Audit::verify`]) and refuses a broken one,
//!    naming the seq and the defect; nothing is written.
//! 2. Reads the watermark `memory/consolidation.json` (the caller passes its
//!    path; absent means seq 0). A watermark that is not valid JSON of a
//!    [`Watermark`] is an error, never silently reset. If the trail's entry
//!    at the watermark's seq no longer has the watermark's hash (the trail
//!    was rewritten, or cut and reanchored, under it), the run refuses. If
//!    that entry is in a segment sealed since (`pincer audit seal`), the run
//!    goes on from the seal: entries in sealed segments are evidence, not
//!    activity, and are never consolidated.
//! 3. Reads the entries past the watermark, up to the last entry `verify`
//!    saw. Consolidation's own entries are skipped (see below); the range of
//!    a page runs from the first to the last entry that is not its own, or
//!    to the last one whose line fits in the page's budget. A
//!    run with nothing new returns `page: None` and writes nothing: not a
//!    page, not a record, not the watermark (only the empty lock file is
//!    created, once). The own entries past the watermark are skipped again
//!    by the next run; that costs a line parse each, and keeps "nothing
//!    new" from changing anything on disk.
//!
//! # What is consolidation's own
//!
//! Every `memory.consolidate` entry, and every `memory.write` entry whose
//! `data.source` starts with [`SOURCE_PREFIX`] (`audit:`): the page store
//! records the page's `source` when it audits a write, and only
//! consolidation gives a page that source. Own entries are never
//! summarised or counted on a page, so consolidating three times in a row
//! makes one page, never pages about pages.
//!
//! # What a page says
//!
//! Id `session-<from>-<to>` (deterministic from the range, so a retry finds
//! the page a crashed run wrote), title `Session activity, audit seq
//! <from>–<to>`, tags `session, audit`, source `audit:<from>-<to>`. The body
//! is markdown: a header line, then one line per summarised entry, each
//! starting `- [seq N] YYYY-MM-DD HH:MM <actor>` (UTC), then the counts of
//! the kinds it does not summarise (`not summarised: 3 hook.verdict, 1
//! approval.request`). Summarised kinds: `gate.decision` (the tool, its
//! arguments, allowed/blocked/approved/denied/unknown tool, by whom and
//! why), `tool.call` (the outcome, with the arguments of the same call's
//! gate decision when it is in the range), `approval.answer`, `audit.note`
//! (operator notes verbatim; a reanchor note with its reason),
//! `policy.change` (the keys that changed), `config.load`, and the five
//! `claude.*` kinds of Claude Code's hook points. An entry of one
//! of those kinds whose data lacks the fields a line needs is counted, not
//! guessed at. Text from the trail is escaped to one line: `\` becomes `\\`,
//! newline, carriage return and tab become `\n`, `\r`, `\t`, and any other
//! control character, Unicode line or paragraph separator or bidirectional
//! override becomes `\u{..}`; no raw control character reaches the page.
//!
//! # Commit order and crash points
//!
//! A run that has a page to make commits it in three steps; the watermark
//! moves only after the page exists and the trail records it. Each point a
//! kill -9 can fall between is a [`CrashPoint`], and
//! [`consolidate_with_crash`] stops there leaving the disk exactly as the
//! kill would:
//!
//! 1. The sink writes the page (atomically: the store writes temp + rename).
//!    [`CrashPoint::AfterPageWrite`]: the page exists, the trail does not
//!    record it. The next run computes the same first seq, finds the page
//!    by probing `session-<from>-<t>` for each candidate end `t` in its
//!    range (one `page_exists` per non-own entry past the watermark, so
//!    entries appended since the crash do not change the answer), does not
//!    write the page again, and finishes steps 2 and 3 for the range the
//!    page covers. Entries past that range wait for the following run.
//! 2. The trail records it: `memory.consolidate` by the caller's `actor`,
//!    data `{page, from_seq, to_seq, watermark_to}` ([`Audit::append`]
//!    fsyncs and anchors it). [`CrashPoint::AfterAuditRecord`]: the record
//!    exists, the watermark did not move. The next run finds the oldest
//!    `memory.consolidate` past the watermark whose `from_seq` is past it
//!    too, checks that it starts exactly at the next range, and only moves
//!    the watermark to its `watermark_to`: no second record, no second page
//!    (it rewrites the page, from the same entries, only if someone deleted
//!    it), and the record itself is never summarised. A kill inside the
//!    append leaves either no record (a torn tail the next append removes:
//!    the state after step 1) or an unanchored complete record, which
//!    `verify` accepts and the next append adopts (the state after step 2).
//! 3. The watermark `{seq: to, hash, page, updated}` is replaced: temp
//!    written and fsynced ([`CrashPoint::AfterWatermarkTemp`]: the old
//!    watermark is in force, a stale `consolidation.json.tmp` is
//!    overwritten later; the next run is the step-2 recovery), renamed
//!    ([`CrashPoint::AfterWatermarkRename`]: the new watermark is in place
//!    but its directory entry is not yet fsynced; after a power cut either
//!    watermark may be there, and both are handled: new = done, old = the
//!    step-2 recovery), then the directory is fsynced. Done.
//!
//! A run that recovers an interrupted commit finishes that page and stops;
//! the next run consolidates whatever came after it. Deleting the watermark
//! by hand walks the same recovery forward page by page instead of
//! duplicating pages, as long as the pages and records are still there.

use pincer_core::audit::schema::{
    ApprovalAnswered, AuditNote, ClaudePostToolUse, ClaudePreToolUse, ClaudePrompt,
    ClaudeSessionEnd, ClaudeSessionStart, ConfigLoad, GateDecision, Kind, MemoryConsolidate,
    MemoryWrite, Outcome, PolicyChange, ToolCallDone,
};
use pincer_core::audit::{Audit, AuditError, Defect, Entry, GENESIS, validate_label};
use pincer_core::canonical::to_canonical_string;
use pincer_core::fsutil::{create_private_dir, sync_dir, tmp_path};
use pincer_core::message::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The kind of the record a consolidation appends (commit step 2).
pub const KIND_CONSOLIDATE: &str = Kind::MemoryConsolidate.as_str();
/// The kind the page store records for a page write.
pub const KIND_MEMORY_WRITE: &str = Kind::MemoryWrite.as_str();
/// How the `source` of every page consolidation writes begins; a
/// `memory.write` entry with such a `data.source` is consolidation's own.
pub const SOURCE_PREFIX: &str = "audit:";
/// Tags of every consolidated page.
pub const PAGE_TAGS: [&str; 2] = ["session", "audit"];
/// Longest rendered value (arguments, reasons, errors) on a line, in
/// characters; operator notes get [`MAX_NOTE_CHARS`].
const MAX_VALUE_CHARS: usize = 300;
/// Longest operator note on a line, in characters (a 16 MiB note must not
/// make a 16 MiB line).
const MAX_NOTE_CHARS: usize = 4000;

/// Where consolidation writes its page. `pincer-memory`'s page store
/// implements it.
pub trait PageSink {
    /// Writes a new page atomically (a crash leaves the whole page or
    /// none). `page.id` is chosen by consolidation, deterministically from
    /// the range, so a retry after a crash finds the same page.
    fn write_page(&self, page: &SessionPage) -> Result<(), String>;
    /// Whether page `id` exists (complete: the store writes atomically).
    fn page_exists(&self, id: &str) -> Result<bool, String>;
}

/// A page consolidation asks the store to write.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionPage {
    pub id: String,
    pub title: String,
    pub tags: Vec<String>,
    pub source: String,
    pub body: String,
}

/// The contents of `memory/consolidation.json`: the last entry a page
/// covers. Entries with a greater seq are not consolidated yet.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watermark {
    pub seq: u64,
    /// The hash of entry `seq` ([`GENESIS`] for seq 0): a trail rewritten
    /// under the watermark is noticed, not consolidated on top of.
    pub hash: String,
    /// The page that moved the watermark here.
    pub page: Option<String>,
    pub updated: Timestamp,
}

impl Watermark {
    /// What an absent watermark file means: nothing consolidated yet.
    pub fn start() -> Watermark {
        Watermark {
            seq: 0,
            hash: GENESIS.to_string(),
            page: None,
            updated: Timestamp::default(),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Consolidated {
    /// The page this run wrote or finished committing; None when there was
    /// nothing new (and nothing was written).
    pub page: Option<String>,
    /// With a page: the first and last seq it covers. Without one: the
    /// range examined, `watermark + 1 ..= last entry` (empty when
    /// `from_seq > to_seq`).
    pub from_seq: u64,
    pub to_seq: u64,
    /// Lines on the page.
    pub summarised: usize,
    /// Consolidation's own entries skipped in the range.
    pub skipped_own: usize,
    /// Entries in the range the page only counts, by kind.
    pub unsummarised: BTreeMap<String, usize>,
    /// The watermark after the run ([`Watermark::start`] when none exists).
    pub watermark: Watermark,
    /// Which interrupted commit this run finished, if any: `AfterPageWrite`
    /// (it found the page and wrote the record and watermark) or
    /// `AfterAuditRecord` (it found the record and moved the watermark).
    pub recovered: Option<CrashPoint>,
    /// Entries past the page are left for the next run: the backlog was
    /// larger than one page ([`PAGE_BUDGET_BYTES`]), or this run finished an
    /// interrupted commit.
    pub more: bool,
}

/// The points between the durable steps of a commit (see the module docs
/// for what the next run does at each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CrashPoint {
    /// The page exists; the trail does not record it.
    AfterPageWrite,
    /// The `memory.consolidate` record is durable; the watermark is old.
    AfterAuditRecord,
    /// The new watermark's temp file is written and fsynced, not renamed.
    AfterWatermarkTemp,
    /// The new watermark is renamed into place; its directory is not
    /// fsynced.
    AfterWatermarkRename,
}

impl CrashPoint {
    /// Every crash point, in commit order.
    pub const ALL: [CrashPoint; 4] = [
        CrashPoint::AfterPageWrite,
        CrashPoint::AfterAuditRecord,
        CrashPoint::AfterWatermarkTemp,
        CrashPoint::AfterWatermarkRename,
    ];
}

/// Why a run failed. Each variant says what the caller can do; a failure
/// before commit step 1 wrote nothing, a later one left a state the next
/// run finishes (see the module docs).
#[derive(Debug, thiserror::Error)]
pub enum ConsolidateError {
    /// The chain failed verification: a person must look.
    #[error(
        "the audit trail is damaged at seq {seq} ({defect}), so nothing was consolidated: run `pincer audit verify`"
    )]
    BrokenChain { seq: u64, defect: Defect },
    /// The trail under the watermark is not the trail the watermark was
    /// written against.
    #[error(
        "{path}: the watermark is at seq {seq} with hash {expected}, but {found}: the trail was rewritten or reanchored under it, so nothing was consolidated; if that was deliberate, move the watermark aside to consolidate the trail from its start"
    )]
    WatermarkMismatch {
        path: PathBuf,
        seq: u64,
        expected: String,
        found: String,
    },
    /// The watermark file exists but is not a watermark.
    #[error("{path}: not a consolidation watermark ({detail}); fix or move it aside")]
    BadWatermark { path: PathBuf, detail: String },
    /// A `memory.consolidate` entry cannot be what consolidation wrote, or
    /// disagrees with the watermark.
    #[error("audit entry seq {seq} (`memory.consolidate`): {detail}")]
    BadRecord { seq: u64, detail: String },
    /// The trail changed under the read in a way appends cannot explain.
    #[error("the audit trail changed while it was read (seq {seq}: {detail}); run again")]
    TrailChanged { seq: u64, detail: String },
    /// The page store failed; see the module docs for what was committed.
    #[error("the page store could not {op} page `{id}`: {message}")]
    Sink {
        op: &'static str,
        id: String,
        message: String,
    },
    /// The actor argument is not a valid audit actor; nothing was written.
    #[error("invalid actor: {0}")]
    Actor(AuditError),
    /// Reading or appending the trail failed.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// Reading or writing the watermark or its lock failed.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// Test seam: [`consolidate_with_crash`] stopped at this point.
    #[error("stopped at crash point {0:?}")]
    Crashed(CrashPoint),
}

type Result<T, E = ConsolidateError> = std::result::Result<T, E>;

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ConsolidateError + '_ {
    move |source| ConsolidateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Consolidates the trail past the watermark at `watermark_path` into one
/// page in `sink`, recording it in `audit` as `actor` (see the module docs).
pub fn consolidate(
    audit: &Audit,
    sink: &dyn PageSink,
    watermark_path: &Path,
    actor: &str,
) -> Result<Consolidated> {
    consolidate_with_crash(audit, sink, watermark_path, actor, None)
}

/// [`consolidate`], stopping with [`ConsolidateError::Crashed`] at `crash`
/// and leaving the disk exactly as a kill -9 there would. A test seam.
pub fn consolidate_with_crash(
    audit: &Audit,
    sink: &dyn PageSink,
    watermark_path: &Path,
    actor: &str,
    crash: Option<CrashPoint>,
) -> Result<Consolidated> {
    // Checked now: append would refuse it only after the page is written.
    validate_label("actor", actor).map_err(ConsolidateError::Actor)?;
    let _lock = lock(watermark_path)?;

    let report = audit.verify()?;
    if let Some(defect) = report.defect {
        return Err(ConsolidateError::BrokenChain {
            seq: defect.seq,
            defect,
        });
    }
    let last = report.last_seq;
    let watermark = read_watermark(watermark_path)?;
    let w = watermark.seq;
    let entries = read_past(audit, watermark_path, &watermark, last)?;

    let run = Run {
        sink,
        watermark_path,
        crash,
    };

    // Crash after step 2: a record past the watermark for a range past it.
    if let Some(record) = pending_record(&entries, w)? {
        return run.finish_recorded(&entries, &record, watermark);
    }

    let own: Vec<bool> = entries.iter().map(is_own).collect();
    let first = entries.iter().zip(&own).find(|(_, o)| !**o);
    let Some((first, _)) = first else {
        return Ok(Consolidated {
            page: None,
            from_seq: w + 1,
            to_seq: last,
            summarised: 0,
            skipped_own: entries.len(),
            unsummarised: BTreeMap::new(),
            watermark,
            recovered: None,
            more: false,
        });
    };
    let from = first.seq;

    // Crash after step 1: a page for a range starting at `from`. Newest
    // candidate first; the trail only grows, so at most one can exist.
    let mut found = None;
    for (e, _) in entries.iter().zip(&own).rev().filter(|(_, o)| !**o) {
        let id = page_id(from, e.seq);
        if sink
            .page_exists(&id)
            .map_err(|message| ConsolidateError::Sink {
                op: "look up",
                id: id.clone(),
                message,
            })?
        {
            found = Some(e.seq);
            break;
        }
    }
    let (to, recovered) = match found {
        Some(to) => (to, Some(CrashPoint::AfterPageWrite)),
        None => {
            let to = entries
                .iter()
                .zip(&own)
                .rev()
                .find(|(_, o)| !**o)
                .map_or(from, |(e, _)| e.seq);
            (to, None)
        }
    };
    // A page found on disk is rebuilt exactly; a new one is cut to the
    // budget, and what is past the cut waits for the next run.
    let budget = recovered.is_none().then_some(PAGE_BUDGET_BYTES);
    let built = build_page(range(&entries, from, to), from, to, budget);
    let to = built.to;
    if recovered.is_none() {
        run.write_page(&built.page)?;
        run.crash_at(CrashPoint::AfterPageWrite)?;
    }
    audit.record(
        actor,
        &MemoryConsolidate {
            page: built.page.id.clone(),
            from_seq: from,
            to_seq: to,
            watermark_to: to,
        },
    )?;
    run.crash_at(CrashPoint::AfterAuditRecord)?;
    let watermark = run.move_watermark(&entries, to, &built.page.id)?;
    let more = entries.iter().any(|e| e.seq > to && !is_own(e));
    let mut done = built.into_result(watermark, recovered);
    done.more = more;
    Ok(done)
}

/// What one run needs to commit.
struct Run<'a> {
    sink: &'a dyn PageSink,
    watermark_path: &'a Path,
    crash: Option<CrashPoint>,
}

impl Run<'_> {
    fn crash_at(&self, point: CrashPoint) -> Result<()> {
        if self.crash == Some(point) {
            return Err(ConsolidateError::Crashed(point));
        }
        Ok(())
    }

    fn write_page(&self, page: &SessionPage) -> Result<()> {
        self.sink
            .write_page(page)
            .map_err(|message| ConsolidateError::Sink {
                op: "write",
                id: page.id.clone(),
                message,
            })
    }

    /// Step 3: the watermark moves to entry `to` (which is in `entries`).
    fn move_watermark(&self, entries: &[Entry], to: u64, page: &str) -> Result<Watermark> {
        let hash = entries
            .iter()
            .find(|e| e.seq == to)
            .map(|e| e.hash.clone())
            .ok_or_else(|| ConsolidateError::TrailChanged {
                seq: to,
                detail: "the entry the watermark moves to was not read".to_string(),
            })?;
        let watermark = Watermark {
            seq: to,
            hash,
            page: Some(page.to_string()),
            updated: Timestamp::now(),
        };
        self.write_watermark(&watermark)?;
        Ok(watermark)
    }

    /// Temp, fsync, rename, fsync dir: [`pincer_core::fsutil::write_atomic`],
    /// spelled out so the test seam can stop between the steps.
    fn write_watermark(&self, watermark: &Watermark) -> Result<()> {
        let path = self.watermark_path;
        let mut bytes =
            serde_json::to_vec_pretty(watermark).map_err(|e| io_err(path)(io::Error::other(e)))?;
        bytes.push(b'\n');
        let dir = parent_dir(path);
        let tmp = tmp_path(path);
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .map_err(io_err(&tmp))?;
            f.write_all(&bytes).map_err(io_err(&tmp))?;
            f.sync_all().map_err(io_err(&tmp))?;
        }
        self.crash_at(CrashPoint::AfterWatermarkTemp)?;
        fs::rename(&tmp, path).map_err(io_err(path))?;
        self.crash_at(CrashPoint::AfterWatermarkRename)?;
        sync_dir(dir).map_err(io_err(dir))
    }

    /// Recovery after step 2: the trail records the page; make sure the
    /// page exists and move the watermark. No second record.
    fn finish_recorded(
        &self,
        entries: &[Entry],
        record: &Record,
        watermark: Watermark,
    ) -> Result<Consolidated> {
        let next = entries.iter().find(|e| !is_own(e)).map(|e| e.seq);
        if next != Some(record.from) {
            return Err(ConsolidateError::BadRecord {
                seq: record.seq,
                detail: format!(
                    "it records page `{}` for seq {}–{}, but the first entry to consolidate after the watermark (seq {}) is {}",
                    record.page,
                    record.from,
                    record.to,
                    watermark.seq,
                    next.map_or_else(|| "none".to_string(), |s| format!("seq {s}")),
                ),
            });
        }
        let built = build_page(
            range(entries, record.from, record.to),
            record.from,
            record.to,
            None,
        );
        if built.page.id != record.page {
            return Err(ConsolidateError::BadRecord {
                seq: record.seq,
                detail: format!(
                    "it names page `{}`, but its range makes page `{}`",
                    record.page, built.page.id
                ),
            });
        }
        let exists =
            self.sink
                .page_exists(&record.page)
                .map_err(|message| ConsolidateError::Sink {
                    op: "look up",
                    id: record.page.clone(),
                    message,
                })?;
        if !exists {
            // Deleted since it was recorded: the same entries make it again.
            self.write_page(&built.page)?;
        }
        let watermark = self.move_watermark(entries, record.to, &record.page)?;
        let mut done = built.into_result(watermark, Some(CrashPoint::AfterAuditRecord));
        done.more = entries.iter().any(|e| e.seq > record.to && !is_own(e));
        Ok(done)
    }
}

/// A `memory.consolidate` record, parsed.
#[derive(Debug)]
struct Record {
    seq: u64,
    page: String,
    from: u64,
    to: u64,
}

/// The oldest `memory.consolidate` past the watermark whose range also
/// starts past it: a commit whose watermark never moved.
fn pending_record(entries: &[Entry], w: u64) -> Result<Option<Record>> {
    for e in entries.iter().filter(|e| e.kind == KIND_CONSOLIDATE) {
        let bad = |detail: String| ConsolidateError::BadRecord { seq: e.seq, detail };
        let r = match e.payload::<MemoryConsolidate>() {
            Some(Ok(r)) => r,
            Some(Err(err)) => return Err(bad(format!("its data does not fit the kind: {err}"))),
            None => continue,
        };
        let (from, to, mark, page) = (r.from_seq, r.to_seq, r.watermark_to, r.page.as_str());
        if from == 0 || from > to || to >= e.seq || mark != to {
            return Err(bad(format!(
                "its range is inconsistent (from_seq {from}, to_seq {to}, watermark_to {mark}, recorded at seq {})",
                e.seq
            )));
        }
        if from > w {
            return Ok(Some(Record {
                seq: e.seq,
                page: page.to_string(),
                from,
                to,
            }));
        }
    }
    Ok(None)
}

/// Whether an entry is consolidation's own (see the module docs).
fn is_own(e: &Entry) -> bool {
    e.kind == KIND_CONSOLIDATE
        || e.payload::<MemoryWrite>()
            .and_then(Result::ok)
            .is_some_and(|w| w.source.starts_with(SOURCE_PREFIX))
}

/// The entries with `from <= seq <= to` (`entries` is in seq order).
fn range(entries: &[Entry], from: u64, to: u64) -> &[Entry] {
    let start = entries.partition_point(|e| e.seq < from);
    let end = entries.partition_point(|e| e.seq <= to);
    entries.get(start..end).unwrap_or_default()
}

/// The id of the page covering `from..=to`.
pub fn page_id(from: u64, to: u64) -> String {
    format!("session-{from}-{to}")
}

/// A page and what went into it.
struct Built {
    page: SessionPage,
    from: u64,
    to: u64,
    summarised: usize,
    skipped_own: usize,
    unsummarised: BTreeMap<String, usize>,
}

impl Built {
    fn into_result(self, watermark: Watermark, recovered: Option<CrashPoint>) -> Consolidated {
        Consolidated {
            page: Some(self.page.id),
            from_seq: self.from,
            to_seq: self.to,
            summarised: self.summarised,
            skipped_own: self.skipped_own,
            unsummarised: self.unsummarised,
            watermark,
            recovered,
            more: false,
        }
    }
}

/// The largest body a consolidation page gets, in bytes: well under the
/// page store's limit, so a backlog of any length becomes several pages
/// instead of one that cannot be written.
pub const PAGE_BUDGET_BYTES: usize = 256 * 1024;

/// The page for `entries` (the range `from..=to`), ending early — at the
/// last entry that is not consolidation's own before the one whose line
/// would take the body past `budget` — when one is given. Pure: the same
/// entries always make the same page, which recovery relies on.
fn build_page(entries: &[Entry], from: u64, to: u64, budget: Option<usize>) -> Built {
    let header = |to: u64| {
        format!(
            "Activity from the audit trail, seq {from}–{to} (times UTC). Each line cites the audit entry it summarises.\n\n"
        )
    };
    // The header, the footer of counts and the empty-page line are small
    // next to the budget; the budget bounds the lines.
    let budget = budget.map(|b| b.saturating_sub(header(to).len() + 1024));
    let mut lines = String::new();
    let mut last = from;
    let mut summarised = 0;
    let mut unsummarised: BTreeMap<String, usize> = BTreeMap::new();
    // call_id → arguments, from the gate decisions seen so far.
    let mut args: HashMap<(String, String), Value> = HashMap::new();
    for e in entries.iter().take_while(|e| e.seq <= to) {
        if is_own(e) {
            continue;
        }
        if let Some(Ok(d)) = e.payload::<GateDecision>() {
            args.insert((d.call.session, d.call.call_id), d.arguments);
        }
        let line = summarise(e, &args);
        let grows = line.as_ref().map_or(0, |l| l.len() + 1);
        // The first entry always fits (a line is bounded far below the
        // budget); a later one that would not waits for the next page.
        if e.seq > from && budget.is_some_and(|b| lines.len() + grows > b) {
            break;
        }
        last = e.seq;
        match line {
            Some(line) => {
                summarised += 1;
                lines.push_str(&line);
                lines.push('\n');
            }
            None => *unsummarised.entry(e.kind.clone()).or_default() += 1,
        }
    }
    let to = last;
    let skipped_own = entries
        .iter()
        .filter(|e| (from..=to).contains(&e.seq) && is_own(e))
        .count();
    let mut body = header(to);
    body.push_str(&lines);
    if summarised == 0 {
        body.push_str("(no entry in this range is of a kind consolidation summarises)\n");
    }
    if !unsummarised.is_empty() {
        let counts: Vec<String> = unsummarised
            .iter()
            .map(|(kind, n)| format!("{n} {}", escape(kind, MAX_VALUE_CHARS)))
            .collect();
        body.push_str(&format!("\nnot summarised: {}\n", counts.join(", ")));
    }
    Built {
        page: SessionPage {
            id: page_id(from, to),
            title: format!("Session activity, audit seq {from}–{to}"),
            tags: PAGE_TAGS.iter().map(|t| t.to_string()).collect(),
            source: format!("{SOURCE_PREFIX}{from}-{to}"),
            body,
        },
        from,
        to,
        summarised,
        skipped_own,
        unsummarised,
    }
}

/// One page line for `e`, or None when its kind (or its data) is not one
/// consolidation summarises. `args` maps (session, call_id) to the
/// arguments of the gate decision for that call.
fn summarise(e: &Entry, args: &HashMap<(String, String), Value>) -> Option<String> {
    let what = match e.known_kind()? {
        Kind::GateDecision => gate_line(&e.payload::<GateDecision>()?.ok()?),
        Kind::ToolCall => {
            let c = e.payload::<ToolCallDone>()?.ok()?;
            let mut s = format!("ran {}", escape(&c.call.tool, MAX_VALUE_CHARS));
            if let Some(a) = args.get(&(c.call.session, c.call.call_id)) {
                s.push(' ');
                s.push_str(&json_text(a));
            }
            s.push_str(&format!(": {}", c.status.as_str()));
            push_paren(&mut s, c.error.as_deref());
            s
        }
        Kind::ApprovalAnswer => {
            let a = e.payload::<ApprovalAnswered>()?.ok()?;
            let mut s = format!(
                "answered the approval for {}: {}",
                escape(&a.call.tool, MAX_VALUE_CHARS),
                a.answer.as_str()
            );
            push_paren(&mut s, a.reason.as_deref());
            push_paren(&mut s, a.error.as_deref());
            s
        }
        Kind::AuditNote => {
            let n = e.payload::<AuditNote>()?.ok()?;
            if n.reanchor {
                format!(
                    "reanchored the audit trail: {}",
                    escape(n.reason.as_deref()?, MAX_VALUE_CHARS)
                )
            } else {
                format!("note: {}", escape(n.note.as_deref()?, MAX_NOTE_CHARS))
            }
        }
        Kind::PolicyChange => policy_line(&e.payload::<PolicyChange>()?.ok()?)?,
        Kind::ConfigLoad => {
            let c = e.payload::<ConfigLoad>()?.ok()?;
            let path = escape(&c.path, MAX_VALUE_CHARS);
            match (c.found, c.sha256.as_deref()) {
                (false, _) => format!("loaded the configuration: {path} not found, defaults"),
                (true, Some(h)) => format!(
                    "loaded the configuration {path} (sha256 {})",
                    escape(h.get(..12).unwrap_or(h), 12)
                ),
                (true, None) => format!("loaded the configuration {path}"),
            }
        }
        Kind::ClaudeSessionStart
        | Kind::ClaudePrompt
        | Kind::ClaudePreToolUse
        | Kind::ClaudePostToolUse
        | Kind::ClaudeSessionEnd => claude_line(e)?,
        _ => return None,
    };
    Some(format!(
        "- [seq {}] {} {} {what}",
        e.seq,
        minute(e.ts),
        escape(&e.actor, MAX_VALUE_CHARS)
    ))
}

/// The entries of Claude Code's hook points (`pincer hook claude-code`).
fn claude_line(e: &Entry) -> Option<String> {
    let session = |s: &str| escape(s.get(..8).unwrap_or(s), 8);
    Some(match e.known_kind()? {
        Kind::ClaudeSessionStart => {
            let s = e.payload::<ClaudeSessionStart>()?.ok()?;
            let mut line = format!(
                "Claude Code session {} started in {}",
                session(&s.session),
                escape(&s.cwd, MAX_VALUE_CHARS)
            );
            push_paren(&mut line, s.source.as_deref());
            line
        }
        Kind::ClaudePrompt => {
            let p = e.payload::<ClaudePrompt>()?.ok()?;
            format!("prompt: {}", escape(&p.prompt, MAX_VALUE_CHARS))
        }
        Kind::ClaudePreToolUse => {
            let d = e.payload::<ClaudePreToolUse>()?.ok()?;
            let mut line = format!(
                "Claude Code asked to run {} {}: {} by {}",
                escape(&d.tool, MAX_VALUE_CHARS),
                json_text(&d.arguments),
                d.decision.as_str(),
                escape(&d.by, MAX_VALUE_CHARS)
            );
            push_paren(&mut line, Some(&d.reason));
            line
        }
        Kind::ClaudePostToolUse => {
            let r = e.payload::<ClaudePostToolUse>()?.ok()?;
            format!(
                "Claude Code ran {}: {} ({} bytes of output)",
                escape(&r.tool, MAX_VALUE_CHARS),
                r.status.as_str(),
                r.response_bytes
            )
        }
        Kind::ClaudeSessionEnd => {
            let s = e.payload::<ClaudeSessionEnd>()?.ok()?;
            let mut line = format!("Claude Code session {} ended", session(&s.session));
            push_paren(&mut line, s.reason.as_deref());
            line
        }
        _ => return None,
    })
}

/// ` (text)`, escaped, when there is a text.
fn push_paren(s: &mut String, text: Option<&str>) {
    if let Some(t) = text {
        s.push_str(&format!(" ({})", escape(t, MAX_VALUE_CHARS)));
    }
}

fn gate_line(d: &GateDecision) -> String {
    let arguments = json_text(&d.arguments);
    let mut s = format!(
        "asked to run {} {arguments}: ",
        escape(&d.call.tool, MAX_VALUE_CHARS)
    );
    if d.decision == Outcome::UnknownTool {
        s.push_str("refused, there is no such tool");
        return s;
    }
    s.push_str(d.decision.as_str());
    if let Some(by) = &d.by {
        s.push_str(&format!(" by {}", escape(by, MAX_VALUE_CHARS)));
    }
    push_paren(&mut s, d.reason.as_deref());
    s
}

fn policy_line(p: &PolicyChange) -> Option<String> {
    let (Value::Object(before), Value::Object(after)) = (&p.before, &p.after) else {
        return None;
    };
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let changes: Vec<String> = keys
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| {
            let side = |v: Option<&Value>| v.map_or_else(|| "unset".to_string(), json_text);
            format!(
                "{} {} → {}",
                escape(k, MAX_VALUE_CHARS),
                side(before.get(k)),
                side(after.get(k))
            )
        })
        .collect();
    Some(if changes.is_empty() {
        "changed the policy (no key differs)".to_string()
    } else {
        format!("changed the policy: {}", changes.join("; "))
    })
}

/// `2026-11-30 10:01` (UTC).
fn minute(ts: Timestamp) -> String {
    let s = ts.to_string();
    let s = s.get(..16).unwrap_or(&s);
    s.replacen('T', " ", 1)
}

/// A JSON value as one line: canonical JSON (whose strings already escape
/// every control character), with what JSON leaves raw escaped too.
fn json_text(v: &Value) -> String {
    clean(&to_canonical_string(v), false, MAX_VALUE_CHARS)
}

/// Free text as one line (see the module docs), at most `max` characters
/// of it.
pub fn escape(s: &str, max: usize) -> String {
    clean(s, true, max)
}

fn clean(s: &str, backslash: bool, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max + 16));
    let mut rest = s.chars();
    for c in rest.by_ref().take(max) {
        match c {
            '\\' if backslash => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || needs_escape(c) => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    let more = rest.count();
    if more > 0 {
        out.push_str(&format!("… ({more} more characters)"));
    }
    out
}

/// Characters that are not control characters but can break a line or
/// reorder what a reader sees.
fn needs_escape(c: char) -> bool {
    matches!(c,
        '\u{2028}' | '\u{2029}' // line and paragraph separators
        | '\u{200e}' | '\u{200f}' | '\u{061c}' // direction marks
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' // bidi embeddings, overrides, isolates
        | '\u{feff}' | '\u{85}')
}

/// The directory `path` is in.
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Takes `consolidation.lock` beside the watermark (exclusive, blocking)
/// until the returned file is dropped; creates the directory if needed.
fn lock(watermark_path: &Path) -> Result<File> {
    let dir = parent_dir(watermark_path);
    create_private_dir(dir).map_err(io_err(dir))?;
    let path = watermark_path.with_extension("lock");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io_err(&path))?;
    file.lock().map_err(io_err(&path))?;
    Ok(file)
}

/// The watermark on disk, or [`Watermark::start`] when there is none.
pub fn read_watermark(path: &Path) -> Result<Watermark> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Watermark::start()),
        Err(e) => return Err(io_err(path)(e)),
    };
    let bad = |detail: String| ConsolidateError::BadWatermark {
        path: path.to_path_buf(),
        detail,
    };
    let w: Watermark = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    let hex = w.hash.len() == 64
        && w.hash
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex {
        return Err(bad(format!(
            "`hash` is `{}`, not 64 lowercase hex digits",
            w.hash
        )));
    }
    if w.seq == 0 && w.hash != GENESIS {
        return Err(bad(
            "`seq` is 0 but `hash` is not the genesis hash".to_string()
        ));
    }
    Ok(w)
}

/// Reads the entries `watermark.seq + 1 ..= last` (all verified a moment
/// ago; appends since only add entries past `last`) and checks the entry at
/// the watermark against its hash. Entries in sealed segments are not
/// read: when the watermark's own entry was sealed away (`pincer audit
/// seal`), the run goes on from the seal that took it, which is then the
/// first entry returned.
fn read_past(
    audit: &Audit,
    watermark_path: &Path,
    watermark: &Watermark,
    last: u64,
) -> Result<Vec<Entry>> {
    let w = watermark.seq;
    let mismatch = |found: String| ConsolidateError::WatermarkMismatch {
        path: watermark_path.to_path_buf(),
        seq: w,
        expected: watermark.hash.clone(),
        found,
    };
    if w > last {
        return Err(mismatch(format!("the trail has only {last} entries")));
    }
    if last == 0 {
        return Ok(Vec::new());
    }
    let mut entries = audit.entries_between(w.max(1), last)?;
    if w > 0 {
        match entries.first() {
            Some(e) if e.seq == w && e.hash != watermark.hash => {
                return Err(mismatch(format!(
                    "the trail's entry {w} has hash {}",
                    e.hash
                )));
            }
            Some(e) if e.seq == w => {
                entries.remove(0);
            }
            Some(e) if e.kind == Kind::AuditSeal.as_str() => {}
            Some(e) => {
                return Err(mismatch(format!(
                    "the trail has no entry {w} (the next one is seq {})",
                    e.seq
                )));
            }
            None => return Err(mismatch(format!("the trail has no entry {w}"))),
        }
    }
    // What verify walked a moment ago, read again: in order, linked (a
    // seal links to the file it seals, not to the entry before), up to
    // `last`.
    let mut prev: Option<&Entry> = None;
    for e in &entries {
        if let Some(p) = prev
            && (e.seq <= p.seq || (e.kind != Kind::AuditSeal.as_str() && e.prev != p.hash))
        {
            return Err(ConsolidateError::TrailChanged {
                seq: e.seq,
                detail: "its `prev` is not the hash of the entry before".to_string(),
            });
        }
        prev = Some(e);
    }
    if entries.last().map_or(w, |e| e.seq) != last {
        return Err(ConsolidateError::TrailChanged {
            seq: last,
            detail: "the trail ends before the entries verify counted".to_string(),
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests;

/// The page store as consolidation's [`PageSink`]: each page is written
/// with [`crate::PageStore::write`] (atomic, never over another page) and
/// recorded as a `memory.write` audit entry whose `source` marks it as
/// consolidation's own, so the next run skips it.
#[derive(Debug)]
pub struct AuditedStore<'a> {
    pub store: &'a crate::PageStore,
    pub audit: &'a Audit,
    pub actor: &'a str,
}

impl PageSink for AuditedStore<'_> {
    fn write_page(&self, page: &SessionPage) -> Result<(), String> {
        self.store
            .write(crate::NewPage {
                id: Some(page.id.clone()),
                title: page.title.clone(),
                tags: page.tags.clone(),
                source: page.source.clone(),
                pinned: false,
                body: page.body.clone(),
            })
            .map_err(|e| e.to_string())?;
        self.audit
            .record(
                self.actor,
                &MemoryWrite {
                    id: page.id.clone(),
                    title: page.title.clone(),
                    source: page.source.clone(),
                    pinned: false,
                },
            )
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    fn page_exists(&self, id: &str) -> Result<bool, String> {
        match self.store.read(id) {
            Ok(_) => Ok(true),
            Err(crate::MemoryError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    }
}
