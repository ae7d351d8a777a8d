//! Sealing: the declared way back from a damaged segment (see the module
//! doc, "Sealing").

use super::segments::{Heads, list_segments, make_read_only, sha256_file};
use super::*;

impl Audit {
    /// Seals the segment holding the first defect and every segment after
    /// it: makes them read-only, keeps them where they are, and starts a new
    /// segment whose first entry is an `audit.seal` by `actor` recording
    /// each sealed file's SHA-256, the defect and `reason`. Refuses
    /// ([`AuditError::NothingToSeal`]) when the trail verifies. If a crash
    /// interrupted an earlier seal, finishes that one instead (and says so).
    ///
    /// Costs one full verify.
    pub fn seal(&self, actor: &str, reason: &str) -> Result<SealOutcome> {
        validate_label("actor", actor)?;
        check_reason(reason)?;
        let _lock = self.flock(true)?;
        let segs = list_segments(&self.dir).map_err(io_err(&self.dir))?;
        let last = segs.last().copied().unwrap_or(0);
        if let Some(done) = self.finish_interrupted_seal(last)? {
            return Ok(done);
        }
        let walked = self.walk(VerifyFrom::Start)?;
        let report = walked.report;
        let Some(defect) = report.defect else {
            return Err(AuditError::NothingToSeal(format!(
                "the trail verifies ({} entries, {} sealed segments)",
                report.entries,
                report.sealed.len()
            )));
        };
        // A broken seal is sealed again from the start of its block, so the
        // new seal takes the old one in.
        let heads = Heads::read(&self.dir, &segs)?;
        let mut first = defect.segment.clamp(1, last.max(1));
        while let Some(s) = heads
            .seals
            .values()
            .find(|s| s.first < first && first < s.at)
        {
            first = s.first;
        }
        // An anchor naming a segment past the last file: that file is
        // missing, and sealed as such.
        let anchored = walked.anchor.anchor().map_or(0, |a| a.segment);
        let last = last.max(first).max(anchored);
        let mut sealed = Vec::new();
        let mut max_seq = report.last_seq;
        if let AnchorState::Present(a) = &walked.anchor {
            max_seq = max_seq.max(a.count);
        }
        for n in first..=last {
            let path = self.segment_path(n);
            let found = sha256_file(&path).map_err(io_err(&path))?;
            if found.is_some() {
                make_read_only(&path).map_err(io_err(&path))?;
                max_seq = max_seq.max(highest_seq(&path).map_err(io_err(&path))?);
            }
            sealed.push(SealedSegment {
                segment: n,
                file: segment_file_name(n),
                bytes: found.as_ref().map_or(0, |(_, len)| *len),
                sha256: found.map(|(h, _)| h),
            });
        }
        // The new chain is bound to the last file that is there.
        let Some(prev) = sealed.iter().rev().find_map(|s| s.sha256.clone()) else {
            return Err(AuditError::NothingToSeal(format!(
                "{} to {} are missing: there is no file to keep as evidence; if only the anchor disagrees, `pincer audit reanchor` moves it",
                segment_file_name(first),
                segment_file_name(last)
            )));
        };
        let seq = max_seq.checked_add(1).ok_or_else(|| AuditError::Invalid {
            field: "seq",
            message: "the sealed files hold the largest possible seq".to_string(),
        })?;
        let data = serde_json::json!({
            "sealed": sealed,
            "defect": defect,
            "reason": reason,
            "anchor": walked.anchor.anchor(),
            "verified_to": {"seq": report.last_seq, "hash": report.top},
        });
        check_data(&data)?;
        let entry = Entry::seal(seq, Timestamp::now(), actor, KIND_SEAL, data, &prev);
        let segment = last + 1;
        let line = entry.to_line();
        let path = self.segment_path(segment);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        crate::fsutil::sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        file.write_all(line.as_bytes()).map_err(io_err(&path))?;
        file.sync_data().map_err(io_err(&path))?;
        self.write_anchor(&Head {
            segment,
            count: entry.seq,
            top: entry.hash.clone(),
            len: line.len() as u64,
        })?;
        Ok(SealOutcome {
            seal: Receipt {
                seq: entry.seq,
                hash: entry.hash,
            },
            segment,
            sealed,
            defect: Some(defect),
            finished_interrupted: false,
        })
    }

    /// When the last segment holds only a seal (its files unchanged) that
    /// the anchor does not name yet, moves the anchor to it.
    fn finish_interrupted_seal(&self, last: u64) -> Result<Option<SealOutcome>> {
        let Some((entry, len)) = self.interrupted_seal(last)? else {
            return Ok(None);
        };
        let head = Head {
            segment: last,
            count: entry.seq,
            top: entry.hash.clone(),
            len,
        };
        if matches!(self.read_anchor()?, AnchorState::Present(a) if a == head.anchor()) {
            return Ok(None);
        }
        self.write_anchor(&head)?;
        let sealed = serde_json::from_value(entry.data["sealed"].clone()).unwrap_or_default();
        Ok(Some(SealOutcome {
            seal: Receipt {
                seq: entry.seq,
                hash: entry.hash,
            },
            segment: last,
            sealed,
            defect: None,
            finished_interrupted: true,
        }))
    }
}

/// The highest seq of a correctly hashed entry in a (damaged) file; lines
/// that are not entries are skipped.
fn highest_seq(path: &Path) -> io::Result<u64> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut max = 0;
    let mut scratch = line::Scratch::default();
    // A line too long to read ends the search there: damage, not entries.
    let _ = walk::for_each_line_backwards(&file, len, |line| {
        if let Ok(ok) = check_line(line, &mut scratch)
            && ok.hash_ok
        {
            max = max.max(ok.seq);
        }
        true
    });
    Ok(max)
}
