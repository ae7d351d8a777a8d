//! The chain walk behind `verify`: streams each segment in bounded chunks,
//! checks the lines of a chunk in parallel (`std::thread::scope`), then
//! their order (seq, links) on one thread, across segments and around
//! sealed ones; then judges the anchor against where the walk ended.

use super::line::{LineOk, Scratch, check_line};
use super::segments::{Heads, Seal, line_ending_at, list_segments};
use super::*;

/// Where one walked segment ended.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SegEnd {
    pub(super) segment: u64,
    /// Entries verified in it.
    pub(super) entries: u64,
    /// Bytes of its complete lines.
    pub(super) complete_len: u64,
    pub(super) torn: u64,
    /// Where its last line starts.
    pub(super) last_line_start: u64,
    /// The last entry verified up to its end (in it, or before it when it
    /// has none).
    pub(super) last_seq: u64,
    pub(super) top: [u8; 32],
}

/// A whole walk: the report, and where the trail ends.
#[derive(Debug)]
pub(super) struct Walked {
    pub(super) report: VerifyReport,
    pub(super) anchor: AnchorState,
    /// The segment that holds the last verified entry (1 when none), and
    /// the bytes of its complete lines.
    pub(super) end_segment: u64,
    pub(super) end_len: u64,
    /// The last segment file (1 when none), and the bytes of its complete
    /// lines.
    pub(super) last_segment: u64,
    pub(super) last_len: u64,
}

impl Walked {
    /// The last verified entry as a place to append after.
    pub(super) fn head(&self) -> Head {
        Head {
            segment: self.end_segment,
            count: self.report.last_seq,
            top: self.report.top.clone(),
            len: self.end_len,
        }
    }
}

/// How the trail's end relates to the anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Clean,
    /// One valid entry past the anchor (crash state 3).
    Lag,
    Mismatch(String),
}

impl Audit {
    /// Walks the trail from `from` (see [`Audit::verify_from`]). Call it
    /// under the lock.
    pub(super) fn walk(&self, from: VerifyFrom) -> Result<Walked> {
        let anchor = self.read_anchor()?;
        let segs = list_segments(&self.dir).map_err(io_err(&self.dir))?;
        let heads = Heads::read(&self.dir, &segs)?;
        let last = segs.last().copied().unwrap_or(0);
        let start = walk_start(from, &heads, last)?;
        let mut sc = Scanner::new();
        let mut sealed = Vec::new();
        let mut ends: Vec<SegEnd> = Vec::new();
        if start > 1 {
            ends.extend(self.link_into(start, &mut sc)?);
        }
        let mut k = start;
        while sc.defect.is_none() && k <= last {
            if let Some(seal) = heads.seals.get(&k) {
                let (report, broken) = seal.check(&self.dir).map_err(io_err(&self.dir))?;
                sealed.push(report);
                if let Some((segment, detail)) = broken {
                    sc.defect = Some(Defect {
                        segment,
                        line: 0,
                        seq: sc.next_seq,
                        kind: DefectKind::SealBroken,
                        detail,
                    });
                    break;
                }
                sc.after_seal(seal);
                k = seal.at;
                continue;
            }
            let name = segment_file_name(k);
            let path = self.segment_path(k);
            sc.start_segment(k);
            let Some(s) = scan_file(&path, &mut sc).map_err(io_err(&path))? else {
                sc.defect = Some(Defect {
                    segment: k,
                    line: 0,
                    seq: sc.next_seq,
                    kind: DefectKind::MissingSegment,
                    detail: format!(
                        "{name} is missing; the trail has segments up to {}",
                        segment_file_name(last)
                    ),
                });
                break;
            };
            if sc.defect.is_some() {
                break;
            }
            let not_last = |detail: String| Defect {
                segment: k,
                line: sc.line + 1,
                seq: sc.next_seq,
                kind: DefectKind::BadLine,
                detail,
            };
            if k != last && s.torn_tail_bytes > 0 {
                sc.defect = Some(not_last(format!(
                    "{name} ends in an incomplete line ({} bytes), but only the last segment may",
                    s.torn_tail_bytes
                )));
                break;
            }
            if k != last && s.complete_len == 0 {
                sc.defect = Some(not_last(format!(
                    "{name} is empty, but only the last segment may be"
                )));
                break;
            }
            ends.push(SegEnd {
                segment: k,
                entries: sc.seg_entries,
                complete_len: s.complete_len,
                torn: s.torn_tail_bytes,
                last_line_start: sc.last_line_start,
                last_seq: sc.last_seq,
                top: sc.top,
            });
            k += 1;
        }
        let last_end = ends.iter().rev().find(|e| e.segment == last).copied();
        let mut report = VerifyReport {
            entries: sc.entries,
            first_seq: sc.first_seq,
            last_seq: sc.last_seq,
            top: hex(&sc.top),
            anchor: anchor.anchor(),
            defect: None,
            unanchored: 0,
            torn_tail_bytes: last_end.map_or(0, |e| e.torn),
            segments: segs.len() as u64,
            from_segment: start,
            sealed,
        };
        if sc.defect.is_none() {
            match judge(&anchor, &ends, &heads, last, &sc, &report) {
                Verdict::Clean => {}
                Verdict::Lag => report.unanchored = 1,
                Verdict::Mismatch(detail) => {
                    sc.defect = Some(Defect {
                        segment: last.max(1),
                        line: last_end.map_or(0, |e| e.entries),
                        seq: sc.last_seq,
                        kind: DefectKind::AnchorMismatch,
                        detail,
                    });
                }
            }
        }
        report.defect = sc.defect;
        let (end_segment, end_len) = ends
            .iter()
            .rev()
            .find(|e| e.entries > 0 || e.segment < start)
            .map_or((1, 0), |e| (e.segment, e.complete_len));
        Ok(Walked {
            report,
            anchor,
            end_segment,
            end_len,
            last_segment: last.max(1),
            last_len: last_end.map_or(0, |e| e.complete_len),
        })
    }

    /// Starts a walk at segment `start` > 1: the last line of the segment
    /// before it gives the seq and hash the first entry must follow.
    fn link_into(&self, start: u64, sc: &mut Scanner) -> Result<Option<SegEnd>> {
        let p = start - 1;
        let name = segment_file_name(p);
        let path = self.segment_path(p);
        let bad = |line: u64, kind: DefectKind, detail: String| Defect {
            segment: p,
            line,
            seq: 0,
            kind,
            detail,
        };
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                sc.defect = Some(bad(
                    0,
                    DefectKind::MissingSegment,
                    format!("{name}, the segment before the walk's start, is missing"),
                ));
                return Ok(None);
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        let size = file.metadata().map_err(io_err(&path))?.len();
        let line = line_ending_at(&file, size).map_err(io_err(&path))?;
        let lines = || count_lines(&file).unwrap_or(0);
        let Some(line) = line else {
            sc.defect = Some(bad(
                lines() + 1,
                DefectKind::BadLine,
                format!("{name} does not end with a complete line"),
            ));
            return Ok(None);
        };
        match check_line(&line, &mut Scratch::default()) {
            Ok(ok) if ok.hash_ok => {
                sc.next_seq = ok.seq.saturating_add(1);
                sc.top = ok.hash;
                sc.last_seq = ok.seq;
                sc.last_prev = ok.prev;
                Ok(Some(SegEnd {
                    segment: p,
                    entries: 0,
                    complete_len: size,
                    torn: 0,
                    last_line_start: size - line.len() as u64 - 1,
                    last_seq: ok.seq,
                    top: ok.hash,
                }))
            }
            Ok(_) => {
                sc.defect = Some(bad(
                    lines(),
                    DefectKind::HashMismatch,
                    format!(
                        "the last entry of {name}, which the walk's first link relies on, does not hash to its stored hash"
                    ),
                ));
                Ok(None)
            }
            Err(e) => {
                sc.defect = Some(bad(
                    lines(),
                    DefectKind::BadLine,
                    format!("the last line of {name}, which the walk's first link relies on: {e}"),
                ));
                Ok(None)
            }
        }
    }
}

/// The first segment to walk: never inside a sealed block, nor the seal's
/// own segment (the block is walked, i.e. hashed, with it).
fn walk_start(from: VerifyFrom, heads: &Heads, last: u64) -> Result<u64> {
    let mut s = match from {
        VerifyFrom::Start => 1,
        VerifyFrom::Segment(n) => {
            if n == 0 || n > last.max(1) {
                return Err(AuditError::Invalid {
                    field: "from_segment",
                    message: format!(
                        "segment {n} does not exist; the trail has segments 1 to {}",
                        last.max(1)
                    ),
                });
            }
            n
        }
        VerifyFrom::Seq(q) => heads.segment_of(q),
    };
    while let Some(seal) = heads.seals.values().find(|b| b.first < s && s <= b.at) {
        s = seal.first;
    }
    Ok(s)
}

fn judge(
    anchor: &AnchorState,
    ends: &[SegEnd],
    heads: &Heads,
    last: u64,
    sc: &Scanner,
    report: &VerifyReport,
) -> Verdict {
    let top = hex(&sc.top);
    let end_of = |n: u64| ends.iter().rev().find(|e| e.segment == n).copied();
    let tail = end_of(last).unwrap_or_default();
    let torn = if tail.torn > 0 {
        format!(" and {} bytes of an incomplete line", tail.torn)
    } else {
        String::new()
    };
    let says = |a: &Anchor| {
        let at = a.len.map_or(String::new(), |len| {
            format!(" ({}, byte {len})", segment_file_name(a.segment))
        });
        format!(
            "the anchor says {} entries ending in {}{at}, the trail has {} complete entries ending in {top} ({}, {} bytes){torn}",
            a.count,
            a.top,
            sc.last_seq,
            segment_file_name(last.max(1)),
            tail.complete_len
        )
    };
    let a = match anchor {
        AnchorState::Absent if sc.entries == 0 && report.from_segment == 1 => {
            return if heads.seals.is_empty() {
                Verdict::Clean
            } else {
                Verdict::Mismatch(format!("{ANCHOR_FILE} is missing but the trail has seals"))
            };
        }
        AnchorState::Absent => {
            return Verdict::Mismatch(format!(
                "{ANCHOR_FILE} is missing but the trail has {} entries",
                sc.entries
            ));
        }
        AnchorState::Invalid(why) => {
            return Verdict::Mismatch(format!("{ANCHOR_FILE} is invalid: {why}"));
        }
        AnchorState::Present(a) => a,
    };
    let lag_here = |len: Option<u64>| {
        tail.entries >= 1
            && sc.last_seq == a.count + 1
            && hex(&sc.last_prev) == a.top
            && len.is_none_or(|l| tail.last_line_start == l)
    };
    let Some(len) = a.len else {
        // An anchor from before segments: count and top only.
        return if last > 1 {
            Verdict::Mismatch(format!(
                "the anchor has the form from before segments, but the trail has {last} segments"
            ))
        } else if a.count == sc.last_seq && a.top == top {
            Verdict::Clean
        } else if lag_here(None) {
            Verdict::Lag
        } else {
            Verdict::Mismatch(says(a))
        };
    };
    if a.segment == last.max(1) {
        if a.count == sc.last_seq && a.top == top && tail.complete_len == len {
            Verdict::Clean
        } else if lag_here(Some(len)) {
            Verdict::Lag
        } else {
            Verdict::Mismatch(says(a))
        }
    } else if a.segment + 1 == last {
        let interrupted_seal = heads
            .seal_ending_at(a.segment)
            .is_some_and(|s| s.at == last && tail.entries == 1);
        let anchored_ends_there = end_of(a.segment).is_some_and(|s| {
            s.complete_len == len && s.last_seq == a.count && hex(&s.top) == a.top
        });
        if interrupted_seal || (anchored_ends_there && tail.entries == 1) {
            Verdict::Lag
        } else if anchored_ends_there && tail.entries == 0 {
            Verdict::Clean
        } else {
            Verdict::Mismatch(says(a))
        }
    } else {
        Verdict::Mismatch(format!(
            "the anchor names {}, but the last segment is {}; {}",
            segment_file_name(a.segment),
            segment_file_name(last.max(1)),
            says(a)
        ))
    }
}

/// Per-thread state of the parallel line checks, reused between chunks.
#[derive(Debug, Default)]
pub(super) struct Worker {
    /// Each valid line, and where its `\n` is in the worker's share.
    oks: Vec<(LineOk, usize)>,
    /// The first bad line of this worker's share, after `oks`.
    err: Option<String>,
    scratch: Scratch,
}

impl Worker {
    fn run(&mut self, bytes: &[u8]) {
        self.oks.clear();
        self.err = None;
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', bytes) {
            match check_line(&bytes[start..end], &mut self.scratch) {
                Ok(ok) => self.oks.push((ok, end)),
                Err(e) => {
                    self.err = Some(e);
                    return;
                }
            }
            start = end + 1;
        }
    }
}

/// The chain walk: checks lines of a chunk in parallel, then their order.
#[derive(Debug)]
pub(super) struct Scanner {
    workers: Vec<Worker>,
    /// The segment being walked, and lines and entries verified in it.
    segment: u64,
    pub(super) line: u64,
    seg_entries: u64,
    /// Where the last verified line of the segment ends, and starts.
    last_end: u64,
    last_line_start: u64,
    /// The seq the next entry must have (at least, after a seal).
    pub(super) next_seq: u64,
    after_seal: Option<String>,
    pub(super) top: [u8; 32],
    pub(super) last_prev: [u8; 32],
    pub(super) last_seq: u64,
    first_seq: u64,
    entries: u64,
    pub(super) defect: Option<Defect>,
}

impl Scanner {
    pub(super) fn new() -> Self {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_THREADS);
        Scanner {
            workers: (0..threads).map(|_| Worker::default()).collect(),
            segment: 1,
            line: 0,
            seg_entries: 0,
            last_end: 0,
            last_line_start: 0,
            next_seq: 1,
            after_seal: None,
            top: [0; 32],
            last_prev: [0; 32],
            last_seq: 0,
            first_seq: 0,
            entries: 0,
            defect: None,
        }
    }

    fn start_segment(&mut self, n: u64) {
        self.segment = n;
        self.line = 0;
        self.seg_entries = 0;
        self.last_end = 0;
        self.last_line_start = 0;
    }

    /// The next entry is the seal after `seal`'s block: it links to the
    /// last sealed file's SHA-256, and its seq may skip.
    fn after_seal(&mut self, seal: &Seal) {
        self.top = seal.last_sha;
        let file = seal.sealed.iter().rev().find(|s| s.sha256.is_some());
        self.after_seal = Some(file.map_or_else(String::new, |s| s.file.clone()));
    }

    /// Checks `bytes`, whole lines each ending in `\n`, that start at byte
    /// `base` of the segment. Returns false once a defect is found.
    fn feed(&mut self, bytes: &[u8], base: u64) -> bool {
        let n = if bytes.len() < PARALLEL_MIN_BYTES {
            1
        } else {
            self.workers.len()
        };
        let shares = split_lines(bytes, n);
        if shares.len() == 1 {
            self.workers[0].run(shares[0]);
        } else {
            std::thread::scope(|s| {
                let mut workers = self.workers.iter_mut().zip(&shares);
                let first = workers.next();
                for (w, share) in workers {
                    s.spawn(move || w.run(share));
                }
                if let Some((w, share)) = first {
                    w.run(share);
                }
            });
        }
        let mut share_start = base;
        for (i, share) in shares.iter().enumerate() {
            for &(ok, end) in &self.workers[i].oks {
                if let Some(d) = self.check_order(&ok) {
                    self.defect = Some(d);
                    return false;
                }
                self.after_seal = None;
                self.line += 1;
                self.seg_entries += 1;
                self.entries += 1;
                if self.first_seq == 0 {
                    self.first_seq = ok.seq;
                }
                self.last_seq = ok.seq;
                self.next_seq = ok.seq.saturating_add(1);
                self.last_prev = ok.prev;
                self.top = ok.hash;
                self.last_line_start = self.last_end;
                self.last_end = share_start + end as u64 + 1;
            }
            if let Some(e) = &self.workers[i].err {
                self.defect = Some(Defect {
                    segment: self.segment,
                    line: self.line + 1,
                    seq: self.next_seq,
                    kind: DefectKind::BadLine,
                    detail: e.clone(),
                });
                return false;
            }
            share_start += share.len() as u64;
        }
        true
    }

    /// The checks of a line against the one before: seq, link, then its
    /// own hash (so a broken link is named before a hash mismatch).
    fn check_order(&self, ok: &LineOk) -> Option<Defect> {
        let defect = |kind, detail| {
            Some(Defect {
                segment: self.segment,
                line: self.line + 1,
                seq: self.next_seq,
                kind,
                detail,
            })
        };
        let seq_ok = if self.after_seal.is_some() {
            ok.seq >= self.next_seq
        } else {
            ok.seq == self.next_seq
        };
        if !seq_ok {
            let at_least = if self.after_seal.is_some() {
                "at least "
            } else {
                ""
            };
            return defect(
                DefectKind::SeqGap,
                format!("seq is {}, expected {at_least}{}", ok.seq, self.next_seq),
            );
        }
        if ok.prev != self.top {
            let what = match &self.after_seal {
                Some(file) => format!("the sha256 of sealed {file}"),
                None if self.last_seq == 0 => "the genesis hash".to_string(),
                None => format!("the hash of seq {}", self.last_seq),
            };
            return defect(
                DefectKind::BrokenLink,
                format!(
                    "prev is {}, expected {what} {}",
                    hex(&ok.prev),
                    hex(&self.top)
                ),
            );
        }
        if !ok.hash_ok {
            return defect(
                DefectKind::HashMismatch,
                format!("stored hash {} is not the hash of the entry", hex(&ok.hash)),
            );
        }
        None
    }
}

/// Splits whole lines into at most `n` runs of whole lines of similar size.
pub(super) fn split_lines(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for i in 1..n {
        let target = (bytes.len() * i / n).max(start);
        if target >= bytes.len() {
            break;
        }
        match memchr::memchr(b'\n', &bytes[target..]) {
            Some(off) if target + off + 1 < bytes.len() => {
                out.push(&bytes[start..=target + off]);
                start = target + off + 1;
            }
            _ => break,
        }
    }
    out.push(&bytes[start..]);
    out
}

/// What streaming one segment found (the scanner holds the rest).
#[derive(Debug, Clone, Copy)]
pub(super) struct SegScan {
    /// Bytes of the complete lines (up to the defect, if any).
    pub(super) complete_len: u64,
    pub(super) torn_tail_bytes: u64,
}

/// Streams `path` through `scanner` in bounded chunks; None when the file
/// is missing.
pub(super) fn scan_file(path: &Path, scanner: &mut Scanner) -> io::Result<Option<SegScan>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut scan = SegScan {
        complete_len: 0,
        torn_tail_bytes: 0,
    };
    let mut buf = vec![0u8; CHUNK_BYTES];
    // buf[..filled] holds unchecked bytes: the end of a line at most.
    let mut filled = 0;
    let mut offset: u64 = 0;
    loop {
        if filled == buf.len() {
            // One line longer than the buffer: grow, up to the line limit.
            if buf.len() > MAX_LINE_BYTES {
                scanner.defect = Some(Defect {
                    segment: scanner.segment,
                    line: scanner.line + 1,
                    seq: scanner.next_seq,
                    kind: DefectKind::BadLine,
                    detail: format!("the line is longer than {MAX_LINE_BYTES} bytes"),
                });
                break;
            }
            buf.resize(buf.len() * 2, 0);
        }
        let n = read_full(&mut file, &mut buf[filled..])?;
        let eof = n == 0;
        filled += n;
        if let Some(last) = memchr::memrchr(b'\n', &buf[..filled]) {
            if !scanner.feed(&buf[..=last], offset) {
                break;
            }
            offset += (last + 1) as u64;
            buf.copy_within(last + 1..filled, 0);
            filled -= last + 1;
        }
        if eof {
            scan.torn_tail_bytes = filled as u64;
            break;
        }
    }
    scan.complete_len = offset;
    Ok(Some(scan))
}

/// Reads until `buf` is full or the file ends.
pub(super) fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Calls `f` on each complete line of `file[..len]` (without its `\n`),
/// last first, until it returns false. A torn tail is skipped.
pub(super) fn for_each_line_backwards(
    file: &File,
    len: u64,
    mut f: impl FnMut(&[u8]) -> bool,
) -> io::Result<()> {
    const WINDOW: usize = 64 << 10;
    // buf[..filled] holds file[pos..pos + filled]; lines that end in it and
    // start before `pos` are completed by the next (earlier) read.
    let mut buf: Vec<u8> = Vec::new();
    let mut pos = len;
    let mut end_known = false;
    loop {
        if buf.len() > MAX_LINE_BYTES {
            return Err(io::Error::other(format!(
                "a line is longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        let take = usize::try_from(pos).unwrap_or(usize::MAX).min(WINDOW);
        let start = pos - take as u64;
        let mut chunk = vec![0u8; take];
        file.read_exact_at(&mut chunk, start)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        pos = start;
        if !end_known {
            // Drop the torn tail: bytes after the last newline.
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => {
                    buf.truncate(i + 1);
                    end_known = true;
                }
                None if pos == 0 => return Ok(()),
                None => continue,
            }
        }
        // buf ends with '\n'. Emit every line whose start is known.
        loop {
            let body = &buf[..buf.len() - 1];
            match memchr::memrchr(b'\n', body) {
                Some(i) => {
                    if !f(&body[i + 1..]) {
                        return Ok(());
                    }
                    buf.truncate(i + 1);
                }
                None if pos == 0 => {
                    f(body);
                    return Ok(());
                }
                None => break,
            }
        }
    }
}

pub(super) fn count_lines(mut file: &File) -> io::Result<u64> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(0))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = file.read(&mut buf)?;
        if k == 0 {
            return Ok(n);
        }
        n += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
    }
}
