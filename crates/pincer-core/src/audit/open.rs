//! What an append checks before it writes, in time independent of the
//! trail's length (see the module doc: "What append checks, and what it
//! costs"), and how it writes one entry.

use super::segments::{Seal, line_ending_at, list_segments, make_read_only, read_range};
use super::*;

/// What lies past a position in a segment.
#[derive(Debug)]
enum Tail {
    /// Bytes without a `\n`: an interrupted write.
    Torn(u64),
    /// Exactly one complete line that is an entry (checked alone), of
    /// this many bytes.
    Entry(line::LineOk, u64),
    /// Anything else, said in words.
    Other(String),
}

impl Audit {
    /// Checks the anchor against the end of the trail and repairs the crash
    /// states; returns where the next entry goes. Under the exclusive lock.
    pub(super) fn prepare(&self) -> Result<Head> {
        let a = match self.read_anchor()? {
            AnchorState::Absent => return self.start_fresh(),
            AnchorState::Invalid(why) => {
                return Err(diverged(format!("{ANCHOR_FILE} is invalid: {why}")));
            }
            AnchorState::Present(a) => a,
        };
        let Some(len) = a.len else {
            return self.upgrade_legacy();
        };
        let head = Head {
            segment: a.segment,
            count: a.count,
            top: a.top,
            len,
        };
        // A seal a crash interrupted: its entry is alone in the next
        // segment and the anchor still names the sealed one.
        if let Some((entry, len)) = self.interrupted_seal(head.segment + 1)? {
            let head = Head {
                segment: head.segment + 1,
                count: entry.seq,
                top: entry.hash,
                len,
            };
            self.write_anchor(&head)?;
            return Ok(head);
        }
        let head = self.check_anchored(head)?;
        self.check_next(head)
    }

    /// The anchored segment: long enough, the line ending at `len` is the
    /// anchored entry, and what follows is nothing or a crash state (which
    /// is repaired).
    fn check_anchored(&self, head: Head) -> Result<Head> {
        let path = self.segment_path(head.segment);
        let name = segment_file_name(head.segment);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && head == Head::genesis() => {
                return Ok(head);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(diverged(format!(
                    "{name} is missing, but the anchor says entry {} ends in it",
                    head.count
                )));
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        let size = file.metadata().map_err(io_err(&path))?.len();
        if size < head.len {
            return Err(diverged(format!(
                "{name} is {size} bytes, but the anchor says entry {} ends at byte {}: the end of the trail was cut or lines were removed",
                head.count, head.len
            )));
        }
        if head.len == 0 {
            if head != Head::genesis() {
                return Err(diverged(format!(
                    "the anchor puts entry {} at byte 0 of {name}",
                    head.count
                )));
            }
        } else {
            self.check_anchored_line(&file, &head)?;
        }
        if size == head.len {
            return Ok(head);
        }
        match classify_tail(&file, head.len, size).map_err(io_err(&path))? {
            Tail::Torn(n) => {
                self.expect_nothing_after(head.segment)?;
                // Crash state 2: the torn line's append never returned.
                self.truncate(head.segment, head.len)?;
                self.repair(&head, n)
            }
            Tail::Entry(ok, n) if follows(&ok, &head) => {
                self.expect_nothing_after(head.segment)?;
                // Crash state 3: the entry was fsynced, the anchor not moved.
                let head = Head {
                    segment: head.segment,
                    count: ok.seq,
                    top: hex(&ok.hash),
                    len: head.len + n,
                };
                self.write_anchor(&head)?;
                Ok(head)
            }
            Tail::Entry(ok, _) => Err(diverged(format!(
                "the line after the anchored entry in {name} is seq {} but does not continue the chain from seq {} (or its hash is wrong)",
                ok.seq, head.count
            ))),
            Tail::Other(why) => Err(diverged(format!("past the anchor in {name}: {why}"))),
        }
    }

    /// The line ending at `head.len` is entry `head.count` with hash
    /// `head.top`, canonical and correctly hashed.
    fn check_anchored_line(&self, file: &File, head: &Head) -> Result<()> {
        let path = self.segment_path(head.segment);
        let name = segment_file_name(head.segment);
        let at = format!(
            "the anchored entry (seq {}, the line ending at byte {} of {name})",
            head.count, head.len
        );
        let Some(line) = line_ending_at(file, head.len).map_err(io_err(&path))? else {
            return Err(diverged(format!("{at} does not end with a newline")));
        };
        match check_line(&line, &mut line::Scratch::default()) {
            Err(e) => Err(diverged(format!("{at} is not a valid entry: {e}"))),
            Ok(ok) if ok.seq != head.count || hex(&ok.hash) != head.top => Err(diverged(format!(
                "{at} is seq {} with hash {}, but the anchor says seq {} with hash {}",
                ok.seq,
                hex(&ok.hash),
                head.count,
                head.top
            ))),
            Ok(ok) if !ok.hash_ok => Err(diverged(format!(
                "{at} does not hash to its stored hash: it was edited"
            ))),
            Ok(_) => Ok(()),
        }
    }

    /// The segment after the anchored one: absent, empty, or a crash state
    /// of a rotation (repaired); the one after that must not exist.
    fn check_next(&self, head: Head) -> Result<Head> {
        let next = head.segment + 1;
        let path = self.segment_path(next);
        let name = segment_file_name(next);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.expect_absent(next + 1, head.segment)?;
                return Ok(head);
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        self.expect_absent(next + 1, head.segment)?;
        let size = file.metadata().map_err(io_err(&path))?.len();
        if size == 0 {
            return Ok(head);
        }
        match classify_tail(&file, 0, size).map_err(io_err(&path))? {
            Tail::Torn(n) => {
                self.truncate(next, 0)?;
                self.repair(&head, n)
            }
            Tail::Entry(ok, n) if follows(&ok, &head) && n == size => {
                let head = Head {
                    segment: next,
                    count: ok.seq,
                    top: hex(&ok.hash),
                    len: n,
                };
                self.write_anchor(&head)?;
                Ok(head)
            }
            Tail::Entry(ok, _) => Err(diverged(format!(
                "{name} starts with seq {}, which does not continue the chain from the anchored entry {} (or its hash is wrong)",
                ok.seq, head.count
            ))),
            Tail::Other(why) => Err(diverged(format!(
                "{name}, after the anchored segment: {why}"
            ))),
        }
    }

    /// Before repairing the anchored segment's tail: no segment follows it
    /// (a segment is only started after the one before ends cleanly).
    fn expect_nothing_after(&self, segment: u64) -> Result<()> {
        let path = self.segment_path(segment + 1);
        match fs::symlink_metadata(&path) {
            Ok(_) => Err(diverged(format!(
                "{} has bytes past the anchor and {} exists too",
                segment_file_name(segment),
                segment_file_name(segment + 1)
            ))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    fn expect_absent(&self, n: u64, anchored: u64) -> Result<()> {
        let path = self.segment_path(n);
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path)(e)),
            Ok(_) => Err(diverged(format!(
                "{} exists, but the anchor names {}: no crash leaves two segments past the anchor",
                segment_file_name(n),
                segment_file_name(anchored)
            ))),
        }
    }

    /// Records the removal of a torn tail of `n` bytes.
    fn repair(&self, head: &Head, n: u64) -> Result<Head> {
        let (_, head) = self.write_entry(
            head,
            "system",
            KIND_REPAIR,
            serde_json::json!({
                "truncated_bytes": n,
                "why": "an append was interrupted before its line was complete",
            }),
        )?;
        Ok(head)
    }

    /// No anchor: only an empty trail (or one holding nothing but a torn
    /// first line) may start, anchored at genesis first.
    fn start_fresh(&self) -> Result<Head> {
        let segs = list_segments(&self.dir).map_err(io_err(&self.dir))?;
        if let Some(n) = segs.iter().find(|n| **n != 1) {
            return Err(diverged(format!(
                "{ANCHOR_FILE} is missing but the trail has {} segments (up to {})",
                segs.len(),
                segment_file_name(*n)
            )));
        }
        let path = self.trail_path();
        let size = match fs::metadata(&path) {
            Ok(md) => md.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io_err(&path)(e)),
        };
        if size > 0 {
            let file = File::open(&path).map_err(io_err(&path))?;
            if !matches!(
                classify_tail(&file, 0, size).map_err(io_err(&path))?,
                Tail::Torn(_)
            ) {
                return Err(diverged(format!(
                    "{ANCHOR_FILE} is missing but {TRAIL_FILE} holds entries"
                )));
            }
        }
        // Anchor genesis before the first line, so that from now on a
        // missing anchor is always a defect.
        let head = Head::genesis();
        self.write_anchor(&head)?;
        if size > 0 {
            self.truncate(1, 0)?;
            return self.repair(&head, size);
        }
        Ok(head)
    }

    /// An anchor from before segments (no `len`): walk the single-file
    /// trail once, then write the anchor in the new form.
    fn upgrade_legacy(&self) -> Result<Head> {
        let walked = self.walk(VerifyFrom::Start)?;
        if let Some(d) = walked.report.defect {
            return Err(diverged(d.to_string()));
        }
        let truncated = self.cut_torn_tail(&walked)?;
        let head = walked.head();
        self.write_anchor(&head)?;
        if truncated > 0 {
            return self.repair(&head, truncated);
        }
        Ok(head)
    }

    /// Segment `at` holds exactly one line: an intact seal of the segments
    /// before it (their files unchanged). Returns the entry and the line's
    /// length.
    pub(super) fn interrupted_seal(&self, at: u64) -> Result<Option<(Entry, u64)>> {
        if at < 2 {
            return Ok(None);
        }
        let path = self.segment_path(at);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path)(e)),
        };
        let size = file.metadata().map_err(io_err(&path))?.len();
        if size == 0 || size > MAX_LINE_BYTES as u64 {
            return Ok(None);
        }
        let bytes = read_range(&file, 0, size).map_err(io_err(&path))?;
        if memchr::memchr(b'\n', &bytes) != Some(bytes.len() - 1) {
            return Ok(None);
        }
        let Some(seal) = Seal::from_line(at, &bytes[..bytes.len() - 1]) else {
            return Ok(None);
        };
        if seal.entry.prev != hex(&seal.last_sha) {
            return Ok(None);
        }
        let (_, broken) = seal.check(&self.dir).map_err(io_err(&self.dir))?;
        Ok(broken.is_none().then_some((seal.entry, size)))
    }

    /// Seals and writes one entry after `head` (in the next segment when it
    /// would take this one past the limit), fsyncs it, moves the anchor.
    pub(super) fn write_entry(
        &self,
        head: &Head,
        actor: &str,
        kind: &str,
        data: Value,
    ) -> Result<(Receipt, Head)> {
        let entry = Entry::seal(
            head.count + 1,
            Timestamp::now(),
            actor,
            kind,
            data,
            &head.top,
        );
        let line = entry.to_line();
        // Once the next segment exists (empty, after a crash right after
        // creating it), nothing more goes into this one: readers rely on it.
        let rotate = head.len > 0
            && (head.len + line.len() as u64 > self.options.segment_bytes
                || self.segment_path(head.segment + 1).exists());
        let (segment, offset) = if rotate {
            let done = self.segment_path(head.segment);
            make_read_only(&done).map_err(io_err(&done))?;
            (head.segment + 1, 0)
        } else {
            (head.segment, head.len)
        };
        let path = self.segment_path(segment);
        let created = !path.exists();
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        let size = file.metadata().map_err(io_err(&path))?.len();
        if size != offset {
            return Err(diverged(format!(
                "{} is {size} bytes where {offset} were expected: it changed while the lock was held",
                segment_file_name(segment)
            )));
        }
        if created {
            crate::fsutil::sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        }
        file.write_all(line.as_bytes()).map_err(io_err(&path))?;
        file.sync_data().map_err(io_err(&path))?;
        let new = Head {
            segment,
            count: entry.seq,
            top: entry.hash.clone(),
            len: offset + line.len() as u64,
        };
        self.write_anchor(&new)?;
        Ok((
            Receipt {
                seq: entry.seq,
                hash: entry.hash,
            },
            new,
        ))
    }
}

/// True when `ok` is the valid entry right after `head`.
fn follows(ok: &line::LineOk, head: &Head) -> bool {
    ok.hash_ok && ok.seq == head.count + 1 && hex(&ok.prev) == head.top
}

/// Classifies `file[from..size]`.
fn classify_tail(file: &File, from: u64, size: u64) -> io::Result<Tail> {
    let n = size - from;
    if n > MAX_LINE_BYTES as u64 {
        return Ok(Tail::Other(format!(
            "{n} bytes, more than one entry can be; a crash leaves at most one"
        )));
    }
    let bytes = read_range(file, from, n)?;
    Ok(match memchr::memchr(b'\n', &bytes) {
        None => Tail::Torn(n),
        Some(i) if i + 1 == bytes.len() => {
            match check_line(&bytes[..i], &mut line::Scratch::default()) {
                Ok(ok) => Tail::Entry(ok, n),
                Err(e) => Tail::Other(format!("a line that is not a valid entry: {e}")),
            }
        }
        Some(_) => {
            let lines = memchr::memchr_iter(b'\n', &bytes).count();
            Tail::Other(format!(
                "{lines} complete lines ({n} bytes); a crash leaves at most one entry"
            ))
        }
    })
}
