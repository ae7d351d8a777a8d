//! The chain walk behind `verify` and append's first check: streams the
//! trail in bounded chunks, checks the lines of a chunk in parallel
//! (`std::thread::scope`), then their order (seq, links) on one thread.

use super::line::{LineOk, Scratch, check_line};
use super::*;

/// What a walk of the file found (the anchor is not read).
#[derive(Debug, Clone)]
pub(super) struct Scan {
    /// Complete entries verified (all of them when `defect` is None).
    pub(super) entries: u64,
    /// Hash of the last verified entry, zeros for none.
    pub(super) top: [u8; 32],
    /// `prev` of the last verified entry, zeros for none.
    pub(super) last_prev: [u8; 32],
    /// Bytes of the complete lines.
    pub(super) complete_len: u64,
    pub(super) torn_tail_bytes: u64,
    /// First defect inside the file.
    pub(super) defect: Option<Defect>,
    /// The file's identity when the walk started; None when it is missing.
    pub(super) stat: Option<FileStat>,
}

/// Per-thread state of the parallel line checks, reused between chunks.
#[derive(Debug, Default)]
pub(super) struct Worker {
    oks: Vec<LineOk>,
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
                Ok(ok) => self.oks.push(ok),
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
    entries: u64,
    top: [u8; 32],
    last_prev: [u8; 32],
    defect: Option<Defect>,
}

impl Scanner {
    fn new() -> Self {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_THREADS);
        Scanner {
            workers: (0..threads).map(|_| Worker::default()).collect(),
            entries: 0,
            top: [0; 32],
            last_prev: [0; 32],
            defect: None,
        }
    }

    /// Checks `bytes`, whole lines each ending in `\n`. Returns false once a
    /// defect is found.
    fn feed(&mut self, bytes: &[u8]) -> bool {
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
        for w in &self.workers[..shares.len()] {
            for ok in &w.oks {
                let line = self.entries + 1;
                let defect = |kind, detail| Defect {
                    line,
                    seq: line,
                    kind,
                    detail,
                };
                if ok.seq != line {
                    self.defect = Some(defect(
                        DefectKind::SeqGap,
                        format!("seq is {}, expected {line}", ok.seq),
                    ));
                } else if ok.prev != self.top {
                    let what = if line == 1 {
                        "the genesis hash".to_string()
                    } else {
                        format!("the hash of seq {}", line - 1)
                    };
                    self.defect = Some(defect(
                        DefectKind::BrokenLink,
                        format!(
                            "prev is {}, expected {what} {}",
                            hex(&ok.prev),
                            hex(&self.top)
                        ),
                    ));
                } else if !ok.hash_ok {
                    self.defect = Some(defect(
                        DefectKind::HashMismatch,
                        format!("stored hash {} is not the hash of the entry", hex(&ok.hash)),
                    ));
                }
                if self.defect.is_some() {
                    return false;
                }
                self.entries = line;
                self.last_prev = ok.prev;
                self.top = ok.hash;
            }
            if let Some(e) = &w.err {
                let line = self.entries + 1;
                self.defect = Some(Defect {
                    line,
                    seq: line,
                    kind: DefectKind::BadLine,
                    detail: e.clone(),
                });
                return false;
            }
        }
        true
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

/// Streams `path` through a [`Scanner`] in bounded chunks.
pub(super) fn scan_file(path: &Path) -> io::Result<Scan> {
    let mut scan = Scan {
        entries: 0,
        top: [0; 32],
        last_prev: [0; 32],
        complete_len: 0,
        torn_tail_bytes: 0,
        defect: None,
        stat: None,
    };
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(scan),
        Err(e) => return Err(e),
    };
    scan.stat = Some(FileStat::of(&file.metadata()?));
    let mut scanner = Scanner::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    // buf[..filled] holds unchecked bytes: the end of a line at most.
    let mut filled = 0;
    let mut offset: u64 = 0;
    loop {
        if filled == buf.len() {
            // One line longer than the buffer: grow, up to the line limit.
            if buf.len() > MAX_LINE_BYTES {
                let line = scanner.entries + 1;
                scanner.defect = Some(Defect {
                    line,
                    seq: line,
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
            if !scanner.feed(&buf[..=last]) {
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
    scan.entries = scanner.entries;
    scan.top = scanner.top;
    scan.last_prev = scanner.last_prev;
    scan.complete_len = offset;
    scan.defect = scanner.defect;
    Ok(scan)
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
