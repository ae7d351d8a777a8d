//! Reading entries without verifying the chain: `log` (the newest, or
//! those since a seq or a time), following the trail as it grows, and a
//! seq range for consolidation. Sealed segments are skipped (their seal
//! entry says what they were); a line that is not an entry is an error,
//! never skipped; a torn tail is ignored.

use super::segments::{Heads, Seal, first_line, list_segments, read_range};
use super::walk::{count_lines, for_each_line_backwards};
use super::*;
use std::collections::VecDeque;
use std::io::BufRead;

/// What [`Audit::recent`] found.
#[derive(Debug)]
pub struct Recent {
    /// The entries, oldest first.
    pub entries: Vec<Entry>,
    /// Every entry that could match was read: the limit was reached, or
    /// the scan reached the trail's start. False when it stopped after
    /// `within` entries (older ones may exist, unread).
    pub complete: bool,
}

impl Audit {
    /// The last `limit` entries (all when None) whose kind is `kind` or
    /// starts with `kind.` (all kinds when None), oldest first. Reads the
    /// segments backwards, so a small limit costs little on a long trail.
    pub fn log(&self, limit: Option<usize>, kind: Option<&str>) -> Result<Vec<Entry>> {
        self.log_since(limit, kind, None)
    }

    /// [`Audit::log`] of the entries since a seq (read from the segment
    /// that holds it) or a time (the whole trail is read: timestamps need
    /// not grow); `limit` keeps the newest.
    pub fn log_since(
        &self,
        limit: Option<usize>,
        kind: Option<&str>,
        since: Option<Since>,
    ) -> Result<Vec<Entry>> {
        let _lock = self.flock(false)?;
        self.log_locked(limit, kind, since)
    }

    /// [`Audit::log_since`], and a [`Follower`] that returns every entry
    /// (of `kind`) appended after them.
    pub fn follow(
        &self,
        limit: Option<usize>,
        kind: Option<&str>,
        since: Option<Since>,
    ) -> Result<(Vec<Entry>, Follower)> {
        let _lock = self.flock(false)?;
        let entries = self.log_locked(limit, kind, since)?;
        let segs = list_segments(&self.dir).map_err(io_err(&self.dir))?;
        let segment = segs.last().copied().unwrap_or(1);
        let path = self.segment_path(segment);
        let offset = match File::open(&path) {
            Ok(f) => {
                let len = f.metadata().map_err(io_err(&path))?.len();
                complete_len(&f, len).map_err(io_err(&path))?
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io_err(&path)(e)),
        };
        Ok((
            entries,
            Follower {
                dir: self.dir.clone(),
                segment,
                offset,
                kind: kind.map(str::to_string),
            },
        ))
    }

    /// The entries with `from <= seq <= to`, in order, outside sealed
    /// segments. Reads from the segment that holds `from`; lines before
    /// `from` are not parsed.
    pub fn entries_between(&self, from: u64, to: u64) -> Result<Vec<Entry>> {
        let _lock = self.flock(false)?;
        let mut out = Vec::new();
        self.for_each_entry(Since::Seq(from), |e| {
            if e.seq > to {
                return false;
            }
            out.push(e);
            true
        })?;
        Ok(out)
    }

    fn log_locked(
        &self,
        limit: Option<usize>,
        kind: Option<&str>,
        since: Option<Since>,
    ) -> Result<Vec<Entry>> {
        let limit = limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let Some(since) = since else {
            return self.log_backwards(limit, kind);
        };
        let mut out = VecDeque::new();
        self.for_each_entry(since, |e| {
            if kind.is_none_or(|k| e.kind_matches(k)) {
                out.push_back(e);
                if out.len() > limit {
                    out.pop_front();
                }
            }
            true
        })?;
        Ok(out.into())
    }

    /// The newest `limit` entries whose kind is one of `kinds` (or starts
    /// with one and a dot), among the newest `within` entries of the trail,
    /// oldest first. The cost is bounded by `within` however long the
    /// trail and however rare the kinds: what a summary of recent events
    /// needs on every start. [`Recent::complete`] says whether every entry
    /// that could match was read.
    pub fn recent(&self, limit: usize, within: usize, kinds: &[&str]) -> Result<Recent> {
        let _lock = self.flock(false)?;
        let (entries, complete) =
            self.scan_backwards(limit, within, |e| kinds.iter().any(|k| e.kind_matches(k)))?;
        Ok(Recent { entries, complete })
    }

    fn log_backwards(&self, limit: usize, kind: Option<&str>) -> Result<Vec<Entry>> {
        let (entries, _) = self.scan_backwards(limit, usize::MAX, |e| {
            kind.is_none_or(|k| e.kind_matches(k))
        })?;
        Ok(entries)
    }

    /// The newest `limit` entries that `keep`, reading at most `within`
    /// lines from the end; and whether the scan was complete (the limit
    /// was reached or the trail's start).
    fn scan_backwards(
        &self,
        limit: usize,
        within: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> Result<(Vec<Entry>, bool)> {
        if limit == 0 {
            return Ok((Vec::new(), true));
        }
        let segs = list_segments(&self.dir).map_err(io_err(&self.dir))?;
        let mut out: VecDeque<Entry> = VecDeque::new();
        let mut read = 0usize;
        // Segments first..=last that a seal already read says are sealed.
        let mut sealed: Option<(u64, u64)> = None;
        for &n in segs.iter().rev() {
            if sealed.is_some_and(|(first, last)| first <= n && n <= last) {
                continue;
            }
            let path = self.segment_path(n);
            let file = File::open(&path).map_err(io_err(&path))?;
            let len = file.metadata().map_err(io_err(&path))?.len();
            let mut from_end: u64 = 0;
            let mut failed: Option<String> = None;
            for_each_line_backwards(&file, len, |line| {
                from_end += 1;
                read += 1;
                match serde_json::from_slice::<Entry>(line) {
                    Ok(e) => {
                        if keep(&e) {
                            out.push_front(e);
                        }
                        out.len() < limit && read < within
                    }
                    Err(e) => {
                        failed = Some(e.to_string());
                        false
                    }
                }
            })
            .map_err(io_err(&path))?;
            if let Some(detail) = failed {
                // Line numbers count from the start: count the lines.
                let total = count_lines(&file).map_err(io_err(&path))?;
                return Err(unreadable(n, total + 1 - from_end, &detail));
            }
            if out.len() >= limit {
                return Ok((out.into(), true));
            }
            if read >= within {
                return Ok((out.into(), false));
            }
            if let Ok(Some(line)) = first_line(&file)
                && let Some(seal) = Seal::from_line(n, &line)
            {
                sealed = Some((seal.first, n - 1));
            }
        }
        Ok((out.into(), true))
    }

    /// Calls `f` on each entry since `since`, in order, outside sealed
    /// segments, until it returns false.
    fn for_each_entry(&self, since: Since, mut f: impl FnMut(Entry) -> bool) -> Result<()> {
        let segs = list_segments(&self.dir).map_err(io_err(&self.dir))?;
        let heads = Heads::read(&self.dir, &segs)?;
        let start = match since {
            Since::Seq(q) => heads.segment_of(q),
            Since::Time(_) => 1,
        };
        let last = segs.last().copied().unwrap_or(0);
        for n in start..=last {
            if heads.is_sealed(n) {
                continue;
            }
            let path = self.segment_path(n);
            let file = match File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(AuditError::Unreadable(Defect {
                        segment: n,
                        line: 0,
                        seq: 0,
                        kind: DefectKind::MissingSegment,
                        detail: format!("{} is missing", segment_file_name(n)),
                    }));
                }
                Err(e) => return Err(io_err(&path)(e)),
            };
            let mut reader = io::BufReader::with_capacity(1 << 20, file);
            let mut line = Vec::with_capacity(512);
            let mut line_no = 0;
            loop {
                line.clear();
                let k = (&mut reader)
                    .take(MAX_LINE_BYTES as u64 + 1)
                    .read_until(b'\n', &mut line)
                    .map_err(io_err(&path))?;
                if k == 0 || line.last() != Some(&b'\n') {
                    if line.len() > MAX_LINE_BYTES {
                        return Err(unreadable(n, line_no + 1, "the line is too long"));
                    }
                    // The end, or a torn tail.
                    break;
                }
                line_no += 1;
                let body = &line[..line.len() - 1];
                let before = match since {
                    Since::Seq(q) => quick_seq(body).is_some_and(|s| s < q),
                    Since::Time(t) => quick_ts(body).is_some_and(|ts| ts < t),
                };
                if before {
                    continue;
                }
                let e: Entry = serde_json::from_slice(body)
                    .map_err(|e| unreadable(n, line_no, &e.to_string()))?;
                let keep = match since {
                    Since::Seq(q) => e.seq >= q,
                    Since::Time(t) => e.ts >= t,
                };
                if keep && !f(e) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

fn unreadable(segment: u64, line: u64, detail: &str) -> AuditError {
    AuditError::Unreadable(Defect {
        segment,
        line,
        seq: 0,
        kind: DefectKind::BadLine,
        detail: format!("not an audit entry: {detail}"),
    })
}

/// The top-level seq of a canonical line, without parsing it: `seq` is the
/// last key but `ts`, and inside `data` a `"` is always escaped, so the
/// last `,"seq":` is the entry's own. None when the line is not shaped so.
fn quick_seq(line: &[u8]) -> Option<u64> {
    let at = memchr::memmem::rfind(line, b",\"seq\":")? + 7;
    let digits = &line[at..];
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

/// The top-level `ts` of a canonical line, without parsing it.
fn quick_ts(line: &[u8]) -> Option<Timestamp> {
    let at = memchr::memmem::rfind(line, b",\"ts\":\"")? + 7;
    let rest = &line[at..];
    let end = memchr::memchr(b'"', rest)?;
    Timestamp::parse(std::str::from_utf8(&rest[..end]).ok()?).ok()
}

/// Bytes of `file[..len]` up to and including its last `\n`.
fn complete_len(file: &File, len: u64) -> io::Result<u64> {
    let mut end = len;
    while end > 0 {
        let take = end.min(64 << 10);
        let chunk = read_range(file, end - take, take)?;
        if let Some(i) = memchr::memrchr(b'\n', &chunk) {
            return Ok(end - take + i as u64 + 1);
        }
        end -= take;
    }
    Ok(0)
}

/// Returns the entries appended to a trail since it was made (see
/// [`Audit::follow`]), one [`Follower::poll`] at a time. It takes no lock
/// and reads only complete lines, so it never sees half an entry; it moves
/// to the next segment once that exists.
#[derive(Debug)]
pub struct Follower {
    dir: PathBuf,
    segment: u64,
    offset: u64,
    kind: Option<String>,
}

impl Follower {
    /// The entries appended since the last call (none yet is `Ok(vec![])`).
    pub fn poll(&mut self) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        loop {
            self.read_new(&mut out)?;
            let next = self.dir.join(segment_file_name(self.segment + 1));
            if !next.exists() {
                return Ok(out);
            }
            // Nothing is appended to a segment once the next one exists:
            // read what is left, then move on.
            self.read_new(&mut out)?;
            self.segment += 1;
            self.offset = 0;
        }
    }

    fn read_new(&mut self, out: &mut Vec<Entry>) -> Result<()> {
        let path = self.dir.join(segment_file_name(self.segment));
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.offset == 0 => return Ok(()),
            Err(e) => return Err(io_err(&path)(e)),
        };
        let size = file.metadata().map_err(io_err(&path))?.len();
        if size < self.offset {
            return Err(io_err(&path)(io::Error::other(format!(
                "it shrank from {} to {size} bytes while being followed",
                self.offset
            ))));
        }
        let mut take: u64 = 1 << 20;
        while self.offset < size {
            let n = take.min(size - self.offset);
            let bytes = read_range(&file, self.offset, n).map_err(io_err(&path))?;
            let Some(last) = memchr::memrchr(b'\n', &bytes) else {
                if n == size - self.offset {
                    break; // a line still being written
                }
                if take > MAX_LINE_BYTES as u64 {
                    return Err(unreadable(self.segment, 0, "the line is too long"));
                }
                take *= 2;
                continue;
            };
            for line in bytes[..last].split(|b| *b == b'\n') {
                let e: Entry = serde_json::from_slice(line)
                    .map_err(|e| unreadable(self.segment, 0, &e.to_string()))?;
                if self.kind.as_deref().is_none_or(|k| e.kind_matches(k)) {
                    out.push(e);
                }
            }
            self.offset += last as u64 + 1;
        }
        Ok(())
    }
}
