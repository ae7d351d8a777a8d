//! Approvals: what the gate asks a person ([`ApprovalRequest`]), what comes
//! back ([`ApprovalAnswer`]), who answers ([`Approver`]), and the
//! file-backed queue through which a person in another process answers.
//!
//! An agent that needs a person's yes or no [`ApprovalQueue::submit`]s the
//! call and [`ApprovalQueue::wait`]s; a person answers from another process
//! (`pincer approvals list | approve <id> | deny <id> --reason …`, later the
//! web gateway) with [`ApprovalQueue::answer`]. The queue is a directory of
//! small JSON files, so any number of processes can share it with no server
//! and no lock, and a person can read it with `ls` and `jq`.
//!
//! # Files
//!
//! Under `PINCER_HOME/approvals/` (mode 0700; files 0600), approval `ID`
//! (10 lowercase hex characters, never a path) is:
//!
//! - `ID.pending.json`: the [`Pending`] record, one JSON object:
//!   `{id, call_hash, session, call_id, tool, arguments, risk, why, created,
//!   expires}`, timestamps in RFC 3339 UTC with milliseconds.
//! - `ID.answer.json`: the answer, once there is one:
//!   `{id, call_hash, answer: "approved"|"denied", by, reason?, answered}`.
//!   `call_hash` is copied from the pending file: the waiter accepts an
//!   answer only if it carries the hash of the call it asked about, so an
//!   answer file copied from another approval (a replay) is a denial.
//! - `.NAME.PID-N.tmp`: a file being written. Names starting with `.` are
//!   never read as records; [`ApprovalQueue::prune`] removes stale ones.
//!
//! # Exactly one answer
//!
//! Both record files are *published* the same way: written to a fresh temp
//! file, fsynced, then `hard_link`ed to their final name (which fails if the
//! name exists: never check-then-write), then the directory is fsynced. So a
//! file under its final name is always complete, and of several processes
//! answering the same id at once exactly one wins; the others get
//! [`QueueError::AlreadyAnswered`]. This needs a filesystem with hard links
//! (any local Linux filesystem).
//!
//! The waiter takes part in the same race: when `expires` passes it
//! publishes a `denied` answer by `system` itself. If a person's answer got
//! there first, that answer is used instead; so an answer that
//! [`ApprovalQueue::answer`] acknowledged is always the one the agent acts
//! on, never silently overtaken by the timeout.
//!
//! # Lifecycle and durability
//!
//! - [`ApprovalQueue::submit`] returns only once the pending file and the
//!   directory entry are fsynced; [`ApprovalQueue::answer`] likewise for the
//!   answer file. A crash loses nothing that was acknowledged.
//! - When [`ApprovalQueue::wait`] finishes, however it finishes (answer,
//!   timeout, replay, withdrawn, or its future dropped), it removes the
//!   pending file and then the answer file, so the id cannot be answered
//!   again: a late `approve` gets "unknown or already resolved".
//!   An answer that races this removal re-checks the pending file after
//!   publishing and takes its answer back if the pending is gone. (If the
//!   agent stops waiting right after an answer was acknowledged, that answer
//!   changes nothing: there is nobody left to act on it.)
//! - An agent killed while waiting leaves its files behind. They expire by
//!   time: [`ApprovalQueue::list`] hides expired approvals, `answer` refuses
//!   them, and [`ApprovalQueue::prune`] (run by `submit`) deletes files that
//!   expired more than [`PRUNE_GRACE`] ago.
//!
//! # Waiting
//!
//! `wait` polls the answer file every [`POLL_INTERVAL`]. That is one `open`
//! of a tiny file every 150 ms while a person decides: cheap, portable to
//! any filesystem (tmpfs, NFS, overlay), and needs no inotify crate, fd, or
//! thread. The polls are plain blocking reads of a small file on the async
//! runtime, like a `stat`; they do not wait on anything.

#[cfg(test)]
mod tests;

use crate::canonical::sha256_hex;
use crate::fsutil::{create_private_dir, sync_dir};
use crate::message::Timestamp;
use crate::policy::Risk;
use crate::provider::BoxFuture;
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One call waiting for a person's yes or no (PO4). `call_hash` binds an
/// answer to this exact call: tool, arguments, call id and session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub call_hash: String,
    pub session: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub risk: Risk,
    /// Why the gate assigned this risk (e.g. the shell part that decided it).
    pub why: String,
}

/// A person's (or an approval hook's) answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Approves the call whose hash is `call_hash`; the gate refuses an
    /// approval whose hash is not the one it asked about.
    Approved {
        call_hash: String,
        by: String,
    },
    Denied {
        by: String,
        reason: String,
    },
}

/// Asks a person (terminal prompt, approval queue, chat button, hook).
pub trait Approver: Send + Sync {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer>;
}

/// An approver with nobody behind it: every request is denied, saying why.
#[derive(Debug, Clone)]
pub struct DenyAll(pub String);

impl Approver for DenyAll {
    fn approve<'a>(&'a self, _req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            ApprovalAnswer::Denied {
                by: "system".into(),
                reason: self.0.clone(),
            }
        })
    }
}

/// Length of an approval id, in lowercase hex characters.
pub const ID_LEN: usize = 10;
/// How often [`ApprovalQueue::wait`] looks for an answer.
pub const POLL_INTERVAL: Duration = Duration::from_millis(150);
/// How long after `expires` [`ApprovalQueue::prune`] leaves files alone, so
/// a waiter that is just deciding never has its files pulled from under it.
pub const PRUNE_GRACE: Duration = Duration::from_secs(60);
/// The longest approval timeout accepted: nobody waits a week for a yes.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

const PENDING_SUFFIX: &str = ".pending.json";
const ANSWER_SUFFIX: &str = ".answer.json";

/// One call waiting for an answer, as stored in `ID.pending.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    pub id: String,
    pub call_hash: String,
    pub session: String,
    pub call_id: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub risk: Risk,
    pub why: String,
    pub created: Timestamp,
    pub expires: Timestamp,
}

impl Pending {
    /// The timeout this approval was submitted with.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(
            self.expires
                .as_millis()
                .saturating_sub(self.created.as_millis()),
        )
    }

    pub fn is_expired(&self, now: Timestamp) -> bool {
        now >= self.expires
    }
}

/// A person's answer, as given to [`ApprovalQueue::answer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Resolution {
    Approved { by: String },
    Denied { by: String, reason: String },
}

/// `ID.answer.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct AnswerRecord {
    id: String,
    call_hash: String,
    #[serde(flatten)]
    resolution: Resolution,
    answered: Timestamp,
}

/// What [`ApprovalQueue::list`] found: the open approvals, oldest first, and
/// the files it could not read. A corrupt file is reported, never silently
/// skipped; it does not hide the good approvals a person must answer while
/// an agent waits.
#[derive(Debug, Default)]
pub struct Listing {
    pub pending: Vec<Pending>,
    pub problems: Vec<QueueError>,
}

/// Errors of the approval queue; each names the id, field or file.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error(
        "invalid approval id `{id}`: {reason} (an id is {ID_LEN} lowercase hex characters, as `pincer approvals list` shows it)"
    )]
    BadId { id: String, reason: &'static str },
    #[error(
        "no open approval `{id}`: unknown or already resolved; run `pincer approvals list` to see the open ones"
    )]
    Unknown { id: String },
    #[error("approval `{id}` is already answered; an approval is answered exactly once")]
    AlreadyAnswered { id: String },
    #[error(
        "approval `{id}` expired at {expires}; the waiting agent has been told no, nothing to answer"
    )]
    Expired { id: String, expires: Timestamp },
    #[error("field `{field}`: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("{}: unreadable approval file: {detail}", file.display())]
    Corrupt { file: PathBuf, detail: String },
    #[error("{}: cannot {action}: {source}", file.display())]
    Io {
        file: PathBuf,
        action: &'static str,
        #[source]
        source: io::Error,
    },
}

fn io_err(file: &Path, action: &'static str) -> impl FnOnce(io::Error) -> QueueError {
    let file = file.to_path_buf();
    move |source| QueueError::Io {
        file,
        action,
        source,
    }
}

/// Checks that `id` is an approval id: exactly [`ID_LEN`] characters of
/// `0-9a-f`. Ids are never paths: this is what keeps `../x` out.
pub fn validate_id(id: &str) -> Result<(), QueueError> {
    let bad = |reason| {
        // Shown back to a person: escaped (no terminal control characters)
        // and cut short.
        let mut shown: String = id.chars().take(40).collect();
        shown = shown.escape_debug().to_string();
        if id.chars().count() > 40 {
            shown.push('…');
        }
        Err(QueueError::BadId { id: shown, reason })
    };
    if id.len() != ID_LEN {
        return bad("wrong length");
    }
    if !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return bad("only the characters 0-9 and a-f are allowed");
    }
    Ok(())
}

/// A handle on the queue directory. Cheap to open; any number of handles,
/// in any number of processes, may share one directory.
#[derive(Debug, Clone)]
pub struct ApprovalQueue {
    dir: PathBuf,
}

impl ApprovalQueue {
    /// Opens the queue in `dir` (normally `PINCER_HOME/approvals`), creating
    /// it with mode 0700 if it is missing.
    pub fn open(dir: &Path) -> Result<Self, QueueError> {
        create_private_dir(dir).map_err(io_err(dir, "create the approvals directory"))?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn pending_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}{PENDING_SUFFIX}"))
    }

    fn answer_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}{ANSWER_SUFFIX}"))
    }

    /// Queues `req` for an answer within `timeout`. The pending file is
    /// durable before this returns. Also prunes long-expired files.
    pub fn submit(&self, req: &ApprovalRequest, timeout: Duration) -> Result<Pending, QueueError> {
        if timeout > MAX_TIMEOUT {
            return Err(QueueError::Invalid {
                field: "timeout",
                reason: format!(
                    "{} s is longer than the {} s maximum",
                    timeout.as_secs(),
                    MAX_TIMEOUT.as_secs()
                ),
            });
        }
        // Housekeeping only: a failed prune loses nothing, and the next
        // submit (or `pincer approvals list`) tries again.
        let _ = self.prune();
        let created = Timestamp::now();
        let expires = timestamp_after(created, timeout);
        // A fresh id is taken by publishing under it; a collision (or a
        // leftover answer file under that id) just means another draw.
        for attempt in 0..16u32 {
            let id = new_id(&req.call_hash, attempt);
            if self.answer_path(&id).exists() {
                continue;
            }
            let pending = Pending {
                id: id.clone(),
                call_hash: req.call_hash.clone(),
                session: req.session.clone(),
                call_id: req.call_id.clone(),
                tool: req.tool.clone(),
                arguments: req.arguments.clone(),
                risk: req.risk,
                why: req.why.clone(),
                created,
                expires,
            };
            let path = self.pending_path(&id);
            if publish_new(&self.dir, &path, &to_line(&pending))
                .map_err(io_err(&path, "write the pending approval"))?
            {
                return Ok(pending);
            }
        }
        Err(QueueError::Io {
            file: self.dir.clone(),
            action: "find a free approval id",
            source: io::Error::from(io::ErrorKind::AlreadyExists),
        })
    }

    /// The open approvals (unanswered, unexpired), oldest first, plus the
    /// files that could not be read. Fails only if the directory cannot be
    /// read.
    pub fn list(&self) -> Result<Listing, QueueError> {
        let now = Timestamp::now();
        let mut out = Listing::default();
        for id in self.ids_with(PENDING_SUFFIX)? {
            match self.read_pending(&id) {
                // Expired, or answered and about to be collected: not open.
                Ok(p) if p.is_expired(now) || self.answer_path(&id).exists() => {}
                Ok(p) => out.pending.push(p),
                // Removed by a waiter between readdir and read: resolved.
                Err(QueueError::Unknown { .. }) => {}
                Err(e) => out.problems.push(e),
            }
        }
        out.pending
            .sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The open approval `id`: refused if it is unknown, already answered or
    /// expired, exactly as [`ApprovalQueue::answer`] would refuse it.
    pub fn get(&self, id: &str) -> Result<Pending, QueueError> {
        validate_id(id)?;
        let p = self.read_pending(id)?;
        if self.answer_path(id).exists() {
            return Err(QueueError::AlreadyAnswered { id: id.to_string() });
        }
        if p.is_expired(Timestamp::now()) {
            return Err(QueueError::Expired {
                id: id.to_string(),
                expires: p.expires,
            });
        }
        Ok(p)
    }

    /// Answers approval `id`, exactly once. The answer file (carrying the
    /// pending's `call_hash`) is durable before this returns `Ok`.
    pub fn answer(&self, id: &str, resolution: Resolution) -> Result<Pending, QueueError> {
        let by = match &resolution {
            Resolution::Approved { by } | Resolution::Denied { by, .. } => by,
        };
        if by.trim().is_empty() {
            return Err(QueueError::Invalid {
                field: "by",
                reason: "say who answers (e.g. the user name)".into(),
            });
        }
        let pending = self.get(id)?;
        let record = AnswerRecord {
            id: pending.id.clone(),
            call_hash: pending.call_hash.clone(),
            resolution,
            answered: Timestamp::now(),
        };
        let path = self.answer_path(id);
        if !publish_new(&self.dir, &path, &to_line(&record))
            .map_err(io_err(&path, "write the answer"))?
        {
            return Err(QueueError::AlreadyAnswered { id: id.to_string() });
        }
        // The waiter may have finished (and removed the pending) between
        // `get` and the link: then nobody will read this answer. Take it
        // back rather than report a success that changes nothing.
        if !self.pending_path(id).exists() {
            let _ = fs::remove_file(&path);
            return Err(QueueError::Unknown { id: id.to_string() });
        }
        Ok(pending)
    }

    /// Waits until `pending` is answered or expires, then removes its files.
    /// Never fails: anything but a valid approval of this very call is a
    /// denial that says why. Cancel-safe: dropping the future removes the
    /// files too (and an agent killed outright leaves files that expire).
    pub async fn wait(&self, pending: &Pending) -> ApprovalAnswer {
        let _cleanup = RemoveOnDrop {
            queue: self,
            id: &pending.id,
        };
        self.wait_for_answer(pending).await
    }

    async fn wait_for_answer(&self, pending: &Pending) -> ApprovalAnswer {
        let id = &pending.id;
        let left = pending
            .expires
            .as_millis()
            .saturating_sub(Timestamp::now().as_millis());
        let deadline = tokio::time::Instant::now() + Duration::from_millis(left);
        let system_denial = |reason: String| ApprovalAnswer::Denied {
            by: "system".into(),
            reason,
        };
        loop {
            match self.read_answer(id) {
                Ok(Some(record)) => return judge(pending, record),
                Ok(None) => {}
                Err(e) => return system_denial(format!("the answer could not be read: {e}")),
            }
            if !self.pending_path(id).exists() {
                return system_denial(format!(
                    "approval {id} was withdrawn (its file was removed) before anyone answered"
                ));
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                let reason = format!("no answer within {}", seconds(pending.timeout()));
                let record = AnswerRecord {
                    id: id.clone(),
                    call_hash: pending.call_hash.clone(),
                    resolution: Resolution::Denied {
                        by: "system".into(),
                        reason: reason.clone(),
                    },
                    answered: Timestamp::now(),
                };
                // Take the answer slot, so a person's last-moment answer is
                // either refused or the one we use, never accepted and lost.
                match publish_new(&self.dir, &self.answer_path(id), &to_line(&record)) {
                    Ok(false) => continue, // someone answered first: read it
                    Ok(true) => return system_denial(reason),
                    Err(e) => {
                        return system_denial(format!(
                            "{reason} (and recording the timeout failed: {e})"
                        ));
                    }
                }
            }
            tokio::time::sleep(POLL_INTERVAL.min(deadline - now)).await;
        }
    }

    /// Deletes what crashed or cancelled agents left behind: pending and
    /// answer files that expired more than [`PRUNE_GRACE`] ago, answer
    /// files without a pending, and temp files older than that. Returns how
    /// many files it removed.
    pub fn prune(&self) -> Result<usize, QueueError> {
        let grace = u64::try_from(PRUNE_GRACE.as_millis()).unwrap_or(u64::MAX);
        let cutoff = Timestamp::now().as_millis().saturating_sub(grace);
        let mut removed = 0;
        for id in self.ids_with(PENDING_SUFFIX)? {
            let expired_long_ago = match self.read_pending(&id) {
                Ok(p) => p.expires.as_millis() < cutoff,
                // An unreadable file is left for a person to look at.
                Err(_) => false,
            };
            if expired_long_ago {
                removed += usize::from(fs::remove_file(self.pending_path(&id)).is_ok());
                removed += usize::from(fs::remove_file(self.answer_path(&id)).is_ok());
            }
        }
        let cutoff_time = SystemTime::now()
            .checked_sub(PRUNE_GRACE)
            .unwrap_or(UNIX_EPOCH);
        let old = |path: &Path| {
            fs::metadata(path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < cutoff_time)
        };
        for id in self.ids_with(ANSWER_SUFFIX)? {
            let path = self.answer_path(&id);
            if !self.pending_path(&id).exists() && old(&path) {
                removed += usize::from(fs::remove_file(&path).is_ok());
            }
        }
        for entry in self.read_dir()? {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') && name.ends_with(".tmp") && old(&entry.path()) {
                removed += usize::from(fs::remove_file(entry.path()).is_ok());
            }
        }
        if removed > 0 {
            sync_dir(&self.dir).map_err(io_err(&self.dir, "sync the approvals directory"))?;
        }
        Ok(removed)
    }

    fn read_dir(&self) -> Result<Vec<fs::DirEntry>, QueueError> {
        let rd =
            fs::read_dir(&self.dir).map_err(io_err(&self.dir, "read the approvals directory"))?;
        rd.collect::<Result<_, _>>()
            .map_err(io_err(&self.dir, "read the approvals directory"))
    }

    /// Ids of the valid-looking files named `ID{suffix}`.
    fn ids_with(&self, suffix: &str) -> Result<Vec<String>, QueueError> {
        Ok(self
            .read_dir()?
            .iter()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(suffix)?;
                validate_id(id).ok()?;
                Some(id.to_string())
            })
            .collect())
    }

    fn read_pending(&self, id: &str) -> Result<Pending, QueueError> {
        let path = self.pending_path(id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(QueueError::Unknown { id: id.to_string() });
            }
            Err(e) => return Err(io_err(&path, "read the pending approval")(e)),
        };
        let p: Pending = parse(&path, &bytes)?;
        if p.id != id {
            return Err(QueueError::Corrupt {
                file: path,
                detail: format!("field `id`: `{}` does not match the file name", p.id),
            });
        }
        // What a person is shown must be what the hash binds: a file whose
        // arguments were changed after submission is not an approval.
        if p.call_hash != crate::gate::call_hash(&p.session, &p.call_id, &p.tool, &p.arguments) {
            return Err(QueueError::Corrupt {
                file: path,
                detail: "field `call_hash` does not match the session, call id, tool and \
                         arguments (the file was changed after the agent wrote it)"
                    .into(),
            });
        }
        Ok(p)
    }

    fn read_answer(&self, id: &str) -> Result<Option<AnswerRecord>, QueueError> {
        let path = self.answer_path(id);
        match fs::read(&path) {
            Ok(bytes) => parse(&path, &bytes).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&path, "read the answer")(e)),
        }
    }

    /// Removes approval `id`'s files: pending first, so an answer racing
    /// this sees the pending gone and takes its answer back.
    fn remove_files(&self, id: &str) {
        // Best effort: a file that cannot be removed has expired anyway, so
        // it can no longer be answered, and `prune` retries later.
        let _ = fs::remove_file(self.pending_path(id));
        let _ = fs::remove_file(self.answer_path(id));
        let _ = sync_dir(&self.dir);
    }
}

/// Removes an approval's files when `wait` ends, including when its future
/// is dropped half-way.
struct RemoveOnDrop<'a> {
    queue: &'a ApprovalQueue,
    id: &'a str,
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        self.queue.remove_files(self.id);
    }
}

/// What an answer record means for `pending`.
fn judge(pending: &Pending, record: AnswerRecord) -> ApprovalAnswer {
    if record.call_hash != pending.call_hash || record.id != pending.id {
        return ApprovalAnswer::Denied {
            by: "system".into(),
            reason: format!(
                "the answer file for approval {} was made for a different call (approval {}, call_hash {}, not {}): a copied or replayed answer is not an approval",
                pending.id,
                record.id,
                short(&record.call_hash),
                short(&pending.call_hash),
            ),
        };
    }
    // Who answered is what the channel proves, not what the file says: a
    // file in this directory was put there by a process outside the
    // sandbox (no sandboxed command can see PINCER_HOME), which is a person
    // at pincer's command line. The `by` a file claims is never recorded.
    match record.resolution {
        Resolution::Approved { .. } => ApprovalAnswer::Approved {
            call_hash: pending.call_hash.clone(),
            by: QUEUE_PRINCIPAL.into(),
        },
        Resolution::Denied { reason, .. } => ApprovalAnswer::Denied {
            by: QUEUE_PRINCIPAL.into(),
            reason,
        },
    }
}

/// The principal an answer through the queue is recorded as: a person at
/// pincer's command line (see `docs/approvals.md` for why that is what the
/// queue can prove, and what it cannot).
pub const QUEUE_PRINCIPAL: &str = crate::actor::HUMAN_CLI;

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// `1.5 s`, `60 s`.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

fn to_line<T: Serialize>(v: &T) -> Vec<u8> {
    // Our records hold strings, JSON values and timestamps only: they
    // always serialise.
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    out
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, QueueError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| QueueError::Corrupt {
        file: path.to_path_buf(),
        detail: if e.path().iter().next().is_some() {
            format!("field `{}`: {}", e.path(), e.inner())
        } else {
            e.inner().to_string()
        },
    })
}

/// `t + d`, to the millisecond. `d` is at most [`MAX_TIMEOUT`].
fn timestamp_after(t: Timestamp, d: Duration) -> Timestamp {
    let ms = t
        .as_millis()
        .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    // `Timestamp` is built only from now or from RFC 3339 text; a date a
    // week from now always formats and parses (years 1970..=9999).
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .and_then(|st| Timestamp::parse(&humantime::format_rfc3339_millis(st).to_string()).ok())
        .unwrap_or(t)
}

/// A fresh id. Ids need to be unique, not secret (the directory is 0700 and
/// a person reads them off `list`); uniqueness is finally guaranteed by
/// publishing with `hard_link`, so the hash of the time, pid, a counter and
/// the call is plenty.
fn new_id(call_hash: &str, attempt: u32) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let seed = format!("{nanos}:{}:{n}:{attempt}:{call_hash}", std::process::id());
    let mut id = sha256_hex(seed.as_bytes());
    id.truncate(ID_LEN);
    id
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Publishes `bytes` as `target` unless `target` exists: temp file, fsync,
/// `hard_link` (the atomic create-if-absent), directory fsync. `Ok(false)`
/// if `target` already existed; it is left untouched.
fn publish_new(dir: &Path, target: &Path, bytes: &[u8]) -> io::Result<bool> {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
    let linked = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::hard_link(&tmp, target)
    })();
    // The temp name is ours alone; a leftover is pruned later.
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(dir)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Called once a request is queued, e.g. so a front-end can print
/// "waiting for approval ID: run `pincer approvals approve ID`". The core
/// never prints itself.
pub type OnPending = Arc<dyn Fn(&Pending) + Send + Sync>;

/// An [`Approver`] that queues each request and waits for a person to
/// answer it from another process.
#[derive(Clone)]
pub struct QueueApprover {
    queue: ApprovalQueue,
    timeout: Duration,
    on_pending: Option<OnPending>,
}

impl std::fmt::Debug for QueueApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueApprover")
            .field("queue", &self.queue)
            .field("timeout", &self.timeout)
            .field("on_pending", &self.on_pending.as_ref().map(|_| "Fn"))
            .finish()
    }
}

impl QueueApprover {
    pub fn new(queue: ApprovalQueue, timeout: Duration) -> Self {
        Self {
            queue,
            timeout,
            on_pending: None,
        }
    }

    pub fn on_pending(mut self, f: impl Fn(&Pending) + Send + Sync + 'static) -> Self {
        self.on_pending = Some(Arc::new(f));
        self
    }

    pub fn queue(&self) -> &ApprovalQueue {
        &self.queue
    }
}

impl Approver for QueueApprover {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            let pending = match self.queue.submit(req, self.timeout) {
                Ok(p) => p,
                Err(e) => {
                    return ApprovalAnswer::Denied {
                        by: "system".into(),
                        reason: format!("the approval could not be queued: {e}"),
                    };
                }
            };
            if let Some(f) = &self.on_pending {
                f(&pending);
            }
            self.queue.wait(&pending).await
        })
    }
}
