//! Writing a whole new trail at once, for benchmarks, tests and imports.

use super::*;
use std::io::BufWriter;

/// One entry for [`write_new_trail`].
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub ts: Timestamp,
    pub actor: String,
    pub kind: String,
    pub data: Value,
}

/// Writes a valid trail of `entries` into `dir` fast: sealed in memory,
/// buffered, cut into segments as [`Audit::append`] would cut them, one
/// fsync per segment, the anchor last. Returns the anchor. Refuses a
/// directory that already holds a segment or an anchor; it takes no lock,
/// so it is not for a trail anything else writes. Labels and data are
/// checked as `append` checks them.
pub fn write_new_trail(
    dir: &Path,
    options: AuditOptions,
    entries: impl IntoIterator<Item = NewEntry>,
) -> Result<Anchor> {
    let audit = Audit::open_with(dir, options)?;
    let segs = segments::list_segments(dir).map_err(io_err(dir))?;
    if !segs.is_empty() || audit.anchor_path().exists() {
        return Err(AuditError::Invalid {
            field: "dir",
            message: format!("{} already holds a trail", dir.display()),
        });
    }
    let mut head = Head::genesis();
    let mut out: Option<(BufWriter<File>, PathBuf)> = None;
    let mut buf = Vec::with_capacity(512);
    for e in entries {
        validate_label("actor", &e.actor)?;
        validate_label("kind", &e.kind)?;
        check_data(&e.data)?;
        buf.clear();
        let seq = head.count + 1;
        let ts = e.ts.to_string();
        let at = write_entry_bytes(
            &mut buf, &e.actor, &e.data, None, &e.kind, &head.top, seq, &ts,
        );
        let hash = hex(&hash_without(&buf, at, at));
        buf.clear();
        write_entry_bytes(
            &mut buf,
            &e.actor,
            &e.data,
            Some(&hash),
            &e.kind,
            &head.top,
            seq,
            &ts,
        );
        buf.push(b'\n');
        let line_len = buf.len() as u64;
        if head.len > 0 && head.len + line_len > options.segment_bytes {
            if let Some(path) = finish(out.take())? {
                segments::make_read_only(&path).map_err(io_err(&path))?;
            }
            head.segment += 1;
            head.len = 0;
        }
        if out.is_none() {
            let path = audit.segment_path(head.segment);
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(io_err(&path))?;
            out = Some((BufWriter::with_capacity(1 << 20, f), path));
        }
        if let Some((w, path)) = out.as_mut() {
            w.write_all(&buf).map_err(io_err(path))?;
        }
        head.count = seq;
        head.top = hash;
        head.len += line_len;
    }
    finish(out)?;
    crate::fsutil::sync_dir(dir).map_err(io_err(dir))?;
    audit.write_anchor(&head)?;
    Ok(head.anchor())
}

/// Flushes and fsyncs a segment; returns its path.
fn finish(out: Option<(BufWriter<File>, PathBuf)>) -> Result<Option<PathBuf>> {
    let Some((w, path)) = out else {
        return Ok(None);
    };
    let f = w.into_inner().map_err(|e| io_err(&path)(e.into_error()))?;
    f.sync_all().map_err(io_err(&path))?;
    Ok(Some(path))
}
