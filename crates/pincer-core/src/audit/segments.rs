//! The files of a trail: segment names, small reads at either end of a
//! segment, and the seals found at the start of segments.

use super::*;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

/// The file name of segment `n`: `trail.jsonl` for 1, `trail.NNNNNN.jsonl`
/// (at least six digits) after it.
pub fn segment_file_name(n: u64) -> String {
    if n <= 1 {
        TRAIL_FILE.to_string()
    } else {
        format!("trail.{n:06}.jsonl")
    }
}

/// The segment a file name belongs to; None for any other file (only the
/// exact spelling [`segment_file_name`] gives counts).
pub(super) fn parse_segment_name(name: &str) -> Option<u64> {
    if name == TRAIL_FILE {
        return Some(1);
    }
    let digits = name.strip_prefix("trail.")?.strip_suffix(".jsonl")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    (n >= 2 && segment_file_name(n) == name).then_some(n)
}

/// The segments in `dir`, ascending (gaps included as they are).
pub(super) fn list_segments(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in rd {
        let entry = entry?;
        if let Some(n) = entry.file_name().to_str().and_then(parse_segment_name) {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The first complete line of `file` (without its `\n`), None when it has
/// none; an error for a first line longer than [`MAX_LINE_BYTES`].
pub(super) fn first_line(file: &File) -> io::Result<Option<Vec<u8>>> {
    let mut buf: Vec<u8> = Vec::new();
    let mut window = 4096usize;
    loop {
        let at = buf.len();
        buf.resize(at + window, 0);
        let n = read_at_most(file, &mut buf[at..], at as u64)?;
        buf.truncate(at + n);
        if let Some(i) = memchr::memchr(b'\n', &buf[at..]) {
            buf.truncate(at + i);
            return Ok(Some(buf));
        }
        if n == 0 {
            return Ok(None);
        }
        if buf.len() > MAX_LINE_BYTES {
            return Err(io::Error::other(format!(
                "the first line is longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        window = (window * 2).min(4 << 20);
    }
}

/// The line that ends with the `\n` at byte `end - 1` (without it). None
/// when that byte is not a `\n`; an error for a line longer than
/// [`MAX_LINE_BYTES`].
pub(super) fn line_ending_at(file: &File, end: u64) -> io::Result<Option<Vec<u8>>> {
    if end == 0 {
        return Ok(None);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, end - 1)?;
    if last[0] != b'\n' {
        return Ok(None);
    }
    let body_end = end - 1;
    // buf holds file[pos..body_end].
    let mut buf: Vec<u8> = Vec::new();
    let mut pos = body_end;
    let mut window = 1024u64;
    loop {
        if pos == 0 {
            return Ok(Some(buf));
        }
        let take = window.min(pos);
        let start = pos - take;
        let mut chunk = vec![0u8; usize::try_from(take).unwrap_or(usize::MAX)];
        file.read_exact_at(&mut chunk, start)?;
        if let Some(i) = memchr::memrchr(b'\n', &chunk) {
            chunk.drain(..=i);
            chunk.extend_from_slice(&buf);
            return Ok(Some(chunk));
        }
        chunk.extend_from_slice(&buf);
        buf = chunk;
        pos = start;
        if buf.len() > MAX_LINE_BYTES {
            return Err(io::Error::other(format!(
                "a line is longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        window = (window * 4).min(4 << 20);
    }
}

/// Reads `file[from..from + len]`.
pub(super) fn read_range(file: &File, from: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
    file.read_exact_at(&mut buf, from)?;
    Ok(buf)
}

/// `pread` until `buf` is full or the file ends.
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// SHA-256 of a whole file and its length, streamed; None when missing.
pub(super) fn sha256_file(path: &Path) -> io::Result<Option<(String, u64)>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = walk::read_full(&mut file, &mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        total += n as u64;
    }
    Ok(Some((hex(&h.finalize().into()), total)))
}

/// Makes a finished segment read-only (0400), unless it already is.
pub(super) fn make_read_only(path: &Path) -> io::Result<()> {
    let md = fs::metadata(path)?;
    if md.permissions().mode() & 0o777 != 0o400 {
        fs::set_permissions(path, fs::Permissions::from_mode(0o400))?;
    }
    Ok(())
}

/// A valid `audit.seal` entry at the start of segment `at`, sealing the
/// segments `first..at`.
#[derive(Debug, Clone)]
pub(super) struct Seal {
    pub(super) at: u64,
    pub(super) first: u64,
    pub(super) entry: Entry,
    pub(super) sealed: Vec<SealedSegment>,
    /// The recorded SHA-256 of the last sealed file that existed: the
    /// seal entry's `prev`.
    pub(super) last_sha: [u8; 32],
}

impl Seal {
    /// Reads a seal from the first line of segment `at`; None when that
    /// line is not a well-formed, correctly hashed `audit.seal` entry whose
    /// `sealed` list is the segments just before `at`, in order.
    pub(super) fn from_line(at: u64, line: &[u8]) -> Option<Seal> {
        let ok = check_line(line, &mut line::Scratch::default()).ok()?;
        if !ok.hash_ok {
            return None;
        }
        let entry: Entry = serde_json::from_slice(line).ok()?;
        if entry.kind != KIND_SEAL {
            return None;
        }
        let sealed: Vec<SealedSegment> =
            serde_json::from_value(entry.data.get("sealed")?.clone()).ok()?;
        let first = sealed.first()?.segment;
        let contiguous = sealed
            .iter()
            .enumerate()
            .all(|(i, s)| s.segment == first + i as u64 && s.file == segment_file_name(s.segment));
        let last = sealed.last()?;
        if first == 0 || !contiguous || last.segment + 1 != at {
            return None;
        }
        let last_sha = unhex(sealed.iter().rev().find_map(|s| s.sha256.as_deref())?)?;
        Some(Seal {
            at,
            first,
            entry,
            sealed,
            last_sha,
        })
    }

    /// Hashes each sealed file again; the report says whether all are
    /// unchanged, and names the first that is not.
    pub(super) fn check(&self, dir: &Path) -> io::Result<(SealedReport, Option<(u64, String)>)> {
        let mut broken = None;
        for s in &self.sealed {
            let now = sha256_file(&dir.join(&s.file))?;
            let same = match (&now, &s.sha256) {
                (None, None) => true,
                (Some((h, len)), Some(want)) => h == want && *len == s.bytes,
                _ => false,
            };
            if !same && broken.is_none() {
                let what = match now {
                    None => "it is missing".to_string(),
                    Some((h, len)) => format!("it is now {len} bytes with sha256 {h}"),
                };
                let was = match &s.sha256 {
                    None => "missing".to_string(),
                    Some(h) => format!("{} bytes with sha256 {h}", s.bytes),
                };
                broken = Some((
                    s.segment,
                    format!(
                        "{} was sealed at seq {} as {was}, but {what}",
                        s.file, self.entry.seq
                    ),
                ));
            }
        }
        let report = SealedReport {
            seal_seq: self.entry.seq,
            seal_segment: self.at,
            ts: self.entry.ts,
            by: self.entry.actor.clone(),
            reason: self.entry.data["reason"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            defect: self.entry.data["defect"].clone(),
            segments: self.sealed.clone(),
            intact: broken.is_none(),
        };
        Ok((report, broken))
    }
}

/// What the first lines of the segments say.
#[derive(Debug, Default)]
pub(super) struct Heads {
    /// The seals, by the first segment each one seals. Where seals nest
    /// (a later seal took in an earlier one), the widest wins.
    pub(super) seals: BTreeMap<u64, Seal>,
    /// Seq of each segment's first line, where it is a valid entry.
    pub(super) first_seq: BTreeMap<u64, u64>,
}

impl Heads {
    /// Reads the first line of every segment in `segs`.
    pub(super) fn read(dir: &Path, segs: &[u64]) -> Result<Heads> {
        let mut heads = Heads::default();
        for &n in segs {
            let path = dir.join(segment_file_name(n));
            let file = match File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(&path)(e)),
            };
            // An over-long first line is the walk's to report.
            let Ok(Some(line)) = first_line(&file) else {
                continue;
            };
            if let Ok(ok) = check_line(&line, &mut line::Scratch::default()) {
                heads.first_seq.insert(n, ok.seq);
            }
            if n >= 2
                && let Some(seal) = Seal::from_line(n, &line)
            {
                let wider = heads.seals.get(&seal.first).is_none_or(|s| s.at < seal.at);
                if wider {
                    heads.seals.insert(seal.first, seal);
                }
            }
        }
        // Drop seals inside a wider one: walking skips the whole block.
        let mut keep = BTreeMap::new();
        let mut covered_to = 0;
        for (first, seal) in std::mem::take(&mut heads.seals) {
            if first > covered_to {
                covered_to = seal.at - 1;
                keep.insert(first, seal);
            }
        }
        heads.seals = keep;
        Ok(heads)
    }

    /// The seal whose block ends at segment `n`.
    pub(super) fn seal_ending_at(&self, n: u64) -> Option<&Seal> {
        self.seals.values().find(|s| s.at == n + 1)
    }

    /// True when segment `n` is inside a sealed block.
    pub(super) fn is_sealed(&self, n: u64) -> bool {
        self.seals.values().any(|s| s.first <= n && n < s.at)
    }

    /// The segment that holds seq `q`: the last unsealed one whose first
    /// entry's seq is at most `q` (1 when none).
    pub(super) fn segment_of(&self, q: u64) -> u64 {
        self.first_seq
            .iter()
            .filter(|(n, s)| **s <= q && !self.is_sealed(**n))
            .map(|(n, _)| *n)
            .max()
            .unwrap_or(1)
    }
}
