//! `pincer audit verify|log|note|reanchor|seal` (AU3–AU5). People at the
//! terminal are not gated, but what they do here is recorded (actor
//! `human:cli`).

use crate::Ctx;
use anyhow::{Context, Result, bail};
use pincer_core::actor::HUMAN_CLI;
use pincer_core::audit::schema::{AuditNote, Kind};
use pincer_core::audit::{
    Audit, AuditError, Defect, Entry, Reanchored, SealOutcome, SealedReport, Since, VerifyFrom,
    VerifyReport, is_known_kind, segment_file_name,
};
use pincer_core::message::Timestamp;
use pincer_core::text::terminal_safe;
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// How often `audit log --follow` looks for new entries.
const FOLLOW_POLL: Duration = Duration::from_millis(250);
/// Longest summary of an entry's data in `audit log`, in characters.
const SUMMARY_CHARS: usize = 110;

#[derive(clap::Subcommand, Debug)]
pub enum AuditCmd {
    /// Walk the chain through every segment and check the anchor; names the
    /// first bad seq and the defect. Sealed segments are listed with what
    /// was sealed, and are not a failure. Exit 1 on a defect (and, with
    /// --strict, when any segment is sealed).
    Verify {
        /// Walk only from the segment that holds this seq (the link into it
        /// is still checked).
        #[arg(long, value_name = "SEQ", conflicts_with = "from_segment")]
        since: Option<u64>,
        /// Walk only from this segment (1 is trail.jsonl).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        from_segment: Option<u64>,
        /// Also fail (exit 1) when a segment is sealed.
        #[arg(long)]
        strict: bool,
        #[arg(long)]
        json: bool,
    },
    /// Show entries, oldest first, one line each: seq, time, actor, kind and
    /// what happened.
    Log {
        /// How many entries: the newest N (default 20; all with --since).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        limit: Option<u64>,
        /// Only this kind, or a kind family (`gate` matches `gate.decision`).
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// Only entries from this seq on, or recorded at or after this RFC
        /// 3339 time (2026-11-30T11:43:45Z; reads the whole trail).
        #[arg(long, value_name = "SEQ|TIME")]
        since: Option<String>,
        /// Keep printing entries as they are appended (Ctrl-C to stop).
        #[arg(long)]
        follow: bool,
        /// One JSON object per entry per line.
        #[arg(long)]
        json: bool,
    },
    /// Record an operator note (actor `human:cli`).
    Note {
        /// The note.
        text: String,
        #[arg(long)]
        json: bool,
    },
    /// After `verify` shows the only defect is the anchor (a removed last
    /// line, a lost anchor file), record why in an `audit.note` and move the
    /// anchor to the real top. Refuses a defect inside a segment (see seal).
    Reanchor {
        /// Why: required, recorded in the trail.
        #[arg(long, value_name = "TEXT", required = true)]
        reason: String,
        #[arg(long)]
        json: bool,
    },
    /// When a segment itself is damaged: keep it (and any after it)
    /// read-only as evidence, record its sha256, the defect and why in an
    /// `audit.seal` entry, and go on in a new segment. Nothing is deleted.
    Seal {
        /// Why: required, recorded in the trail.
        #[arg(long, value_name = "TEXT", required = true)]
        reason: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Ctx, cmd: AuditCmd) -> Result<ExitCode> {
    let audit = pincer_runtime::open_audit(&ctx.home)?;
    match cmd {
        AuditCmd::Verify {
            since,
            from_segment,
            strict,
            json,
        } => {
            let from = match (since, from_segment) {
                (Some(seq), _) => VerifyFrom::Seq(seq),
                (None, Some(n)) => VerifyFrom::Segment(n),
                (None, None) => VerifyFrom::Start,
            };
            let report = audit.verify_from(from).map_err(|e| match e {
                AuditError::Invalid { message, .. } => {
                    anyhow::anyhow!("--from-segment: {message}")
                }
                e => e.into(),
            })?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", render_verify(&report));
            }
            let failed = report.defect.is_some() || (strict && !report.sealed.is_empty());
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        AuditCmd::Log {
            limit,
            kind,
            since,
            follow,
            json,
        } => log(&audit, limit, kind, since, follow, json),
        AuditCmd::Note { text, json } => {
            if text.trim().is_empty() {
                bail!("the note is empty; say what happened");
            }
            let r = audit.record(
                HUMAN_CLI,
                &AuditNote {
                    note: Some(text),
                    reanchor: false,
                    reason: None,
                    rest: Default::default(),
                },
            )?;
            if json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                println!("recorded note as seq {}", r.seq);
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCmd::Reanchor { reason, json } => {
            if reason.trim().is_empty() {
                bail!("--reason is empty; say why the anchor is being moved");
            }
            let done = audit.reanchor(HUMAN_CLI, &reason)?;
            if json {
                println!("{}", serde_json::to_string(&done)?);
            } else {
                print!("{}", render_reanchor(&done));
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCmd::Seal { reason, json } => {
            if reason.trim().is_empty() {
                bail!("--reason is empty; say why the segment is being sealed");
            }
            let done = audit.seal(HUMAN_CLI, &reason)?;
            if json {
                println!("{}", serde_json::to_string(&done)?);
            } else {
                print!("{}", render_seal(&done));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--since` as a seq (digits) or an RFC 3339 time.
fn parse_since(s: &str) -> Result<Since> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Since::Seq(s.parse().with_context(|| {
            format!("--since: `{s}` is too large for a seq")
        })?));
    }
    Timestamp::parse(s).map(Since::Time).map_err(|_| {
        anyhow::anyhow!(
            "--since: `{s}` is neither a seq (a whole number) nor an RFC 3339 time such as 2026-11-30T11:43:45Z"
        )
    })
}

fn log(
    audit: &Audit,
    limit: Option<u64>,
    kind: Option<String>,
    since: Option<String>,
    follow: bool,
    json: bool,
) -> Result<ExitCode> {
    if let Some(k) = &kind
        && !is_known_kind(k)
    {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        let mut families: Vec<&str> = names
            .iter()
            .filter_map(|n| n.split_once('.').map(|(f, _)| f))
            .collect();
        families.dedup();
        bail!(
            "--kind: unknown kind `{}`; known kinds: {} (or a family: {})",
            terminal_safe(k),
            names.join(", "),
            families.join(", ")
        );
    }
    let since = since.as_deref().map(parse_since).transpose()?;
    let limit = match (limit, since) {
        (Some(n), _) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        (None, Some(_)) => None,
        (None, None) => Some(20),
    };
    let mut out = std::io::stdout().lock();
    let print = |out: &mut std::io::StdoutLock<'_>, entries: &[Entry]| -> std::io::Result<()> {
        for e in entries {
            if json {
                writeln!(out, "{}", serde_json::to_string(e)?)?;
            } else {
                writeln!(out, "{}", render_entry(e))?;
            }
        }
        out.flush()
    };
    if !follow {
        let entries = audit.log_since(limit, kind.as_deref(), since)?;
        if entries.is_empty() && !json {
            eprintln!("no entries");
        }
        return Ok(match print(&mut out, &entries) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
            _ => ExitCode::SUCCESS,
        });
    }
    let (mut batch, mut follower) = audit.follow(limit, kind.as_deref(), since)?;
    loop {
        // A reader that went away (`| head`) ends the follow quietly.
        match print(&mut out, &batch) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
            Err(e) => return Err(e.into()),
            Ok(()) => {}
        }
        if reader_gone(FOLLOW_POLL) {
            return Ok(ExitCode::SUCCESS);
        }
        batch = follower.poll()?;
    }
}

/// Waits up to `wait`, returning early (true) when stdout is a pipe whose
/// reader has closed it: no need to wait for the next entry to find out.
fn reader_gone(wait: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
    let timeout = Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) if n > 0 => fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP),
        // A signal or a poll that cannot run: just go on polling the trail.
        _ => false,
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// One line for a terminal: control characters (newlines too) escaped.
fn one_line(s: &str) -> String {
    terminal_safe(&s.replace('\n', "\\n").replace('\t', "\\t"))
}

/// At most `max` characters, cut at a word boundary with `…`.
fn cut_words(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max).collect();
    let at = head
        .rfind(' ')
        .filter(|i| *i > max / 2)
        .unwrap_or(head.len());
    format!("{}…", head[..at].trim_end())
}

fn str_of<'a>(data: &'a Value, key: &str) -> Option<&'a str> {
    data.get(key).and_then(Value::as_str)
}

/// A short word for a value: strings as they are, anything else as JSON.
fn word(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// What a subject (a device address, a path, a pin…) is, briefly.
fn subject(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Object(m) => ["address", "path", "pin", "bus", "url", "command"]
            .iter()
            .find_map(|k| m.get(*k).map(word))
            .or_else(|| Some(v.to_string())),
        v => Some(word(v)),
    }
}

/// One line per entry: seq, time, actor, kind, then what happened (the
/// tool, its subject, the risk, the outcome and by whom, the reason).
pub fn render_entry(e: &Entry) -> String {
    format!(
        "{:>7}  {}  {:<14} {:<18} {}",
        e.seq,
        e.ts,
        one_line(&e.actor),
        one_line(&e.kind),
        one_line(&cut_words(&summary(e), SUMMARY_CHARS))
    )
}

fn summary(e: &Entry) -> String {
    let d = &e.data;
    match e.kind.as_str() {
        pincer_core::audit::KIND_NOTE if d["reanchor"] == Value::Bool(true) => {
            format!("reanchor: {}", str_of(d, "reason").unwrap_or_default())
        }
        pincer_core::audit::KIND_NOTE => str_of(d, "note")
            .or_else(|| str_of(d, "text"))
            .map_or_else(|| d.to_string(), str::to_string),
        pincer_core::audit::KIND_REPAIR => format!(
            "removed {} bytes of an interrupted append",
            word(&d["truncated_bytes"])
        ),
        pincer_core::audit::KIND_SEAL => {
            let files: Vec<String> = d["sealed"]
                .as_array()
                .map(|a| a.iter().map(|s| word(&s["file"])).collect())
                .unwrap_or_default();
            format!(
                "sealed {}: {} at seq {}; reason: {}",
                files.join(", "),
                word(&d["defect"]["kind"]),
                word(&d["defect"]["seq"]),
                str_of(d, "reason").unwrap_or_default()
            )
        }
        _ => generic_summary(d),
    }
}

fn generic_summary(d: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for key in ["tool", "op", "hook", "id", "page", "file"] {
        if let Some(s) = str_of(d, key) {
            parts.push(s.to_string());
            break;
        }
    }
    if let Some(s) = d.get("subject").and_then(subject) {
        parts.push(s);
    }
    if let Some(r) = str_of(d, "risk") {
        parts.push(r.to_string());
    }
    let outcome = ["decision", "status", "verdict", "answer", "outcome"]
        .iter()
        .find_map(|k| str_of(d, k));
    if let Some(o) = outcome {
        let by = str_of(d, "by")
            .map(|b| format!(" by {b}"))
            .unwrap_or_default();
        parts.push(format!("{o}{by}"));
    }
    if let Some(exit) = str_of(d, "exit") {
        parts.push(exit.to_string());
    }
    if let Some(notes) = d.get("notes").and_then(Value::as_array)
        && !notes.is_empty()
    {
        parts.push(format!(
            "{} note(s): {}",
            notes.len(),
            notes.first().map(word).unwrap_or_default()
        ));
    }
    if let Some(why) = ["why", "reason", "error", "failure"]
        .iter()
        .find_map(|k| str_of(d, k))
    {
        parts.push(format!("— {why}"));
    }
    if parts.is_empty() {
        // Nothing known: the first few fields, key=value.
        if let Some(m) = d.as_object() {
            parts = m
                .iter()
                .take(4)
                .map(|(k, v)| format!("{k}={}", word(v)))
                .collect();
        }
    }
    parts.join("  ")
}

fn render_defect(d: &Defect) -> String {
    format!(
        "{} at seq {} ({} line {}): {}",
        d.kind,
        d.seq,
        segment_file_name(d.segment),
        d.line,
        one_line(&d.detail)
    )
}

fn render_sealed(s: &SealedReport) -> String {
    let files: Vec<String> = s
        .segments
        .iter()
        .map(|f| match &f.sha256 {
            Some(h) => format!("{} ({} bytes, sha256 {})", f.file, f.bytes, short(h)),
            None => format!("{} (missing when sealed)", f.file),
        })
        .collect();
    let d = &s.defect;
    let state = if s.intact {
        "still exactly as sealed"
    } else {
        "CHANGED since it was sealed"
    };
    format!(
        "sealed: {} at seq {} by {} on {}, {state}; the defect: {} at seq {} ({} line {}): {}; reason: {}\n",
        files.join(", "),
        s.seal_seq,
        one_line(&s.by),
        s.ts,
        word(&d["kind"]),
        word(&d["seq"]),
        segment_file_name(d["segment"].as_u64().unwrap_or(1)),
        word(&d["line"]),
        one_line(&word(&d["detail"])),
        one_line(&s.reason)
    )
}

fn render_verify(r: &VerifyReport) -> String {
    let mut out = String::new();
    let walked = if r.from_segment > 1 {
        format!(
            " (from {}: {} earlier segment{} not walked)",
            segment_file_name(r.from_segment),
            r.from_segment - 1,
            if r.from_segment == 2 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    match &r.defect {
        None => {
            let seqs = if r.entries > 0 {
                format!(", seq {}–{}", r.first_seq, r.last_seq)
            } else {
                String::new()
            };
            let sealed: usize = r.sealed.iter().map(|s| s.segments.len()).sum();
            let sealed = match sealed {
                0 => String::new(),
                1 => "; 1 segment sealed, not walked (below)".to_string(),
                n => format!("; {n} segments sealed, not walked (below)"),
            };
            out.push_str(&format!(
                "audit trail ok: {} entr{} in {} segment{}{seqs}{walked}, top {}, anchor matches{sealed}\n",
                r.entries,
                if r.entries == 1 { "y" } else { "ies" },
                r.segments,
                if r.segments == 1 { "" } else { "s" },
                short(&r.top)
            ));
            if r.unanchored > 0 {
                out.push_str(&format!(
                    "note: {} entry past the anchor (a crash between writing it and moving the anchor); the next append adopts it\n",
                    r.unanchored
                ));
            }
        }
        Some(d) => {
            out.push_str(&format!(
                "audit trail DEFECT: {}{walked}\n",
                render_defect(d)
            ));
            out.push_str(match d.kind {
                pincer_core::audit::DefectKind::AnchorMismatch => {
                    "the entries chain correctly but the anchor disagrees (a removed last line, or a lost or edited anchor.json). \
                     If you know why, run `pincer audit reanchor --reason \"…\"`; the reason is recorded. \
                     To keep the segment as it is instead, `pincer audit seal --reason \"…\"`.\n"
                }
                _ => {
                    "the defect is inside a segment; reanchor refuses it. Keep the file as evidence: \
                     `pincer audit seal --reason \"…\"` makes it read-only, records its sha256 and why, \
                     and the trail goes on in a new segment.\n"
                }
            });
        }
    }
    if r.torn_tail_bytes > 0 {
        out.push_str(&format!(
            "note: the last segment ends in {} bytes of an interrupted append (a torn tail, never acknowledged); the next append removes them and records an audit.repair entry\n",
            r.torn_tail_bytes
        ));
    }
    for s in &r.sealed {
        out.push_str(&render_sealed(s));
    }
    out
}

fn render_reanchor(r: &Reanchored) -> String {
    let mut out = String::new();
    let old = match &r.old_anchor {
        Some(a) => format!("{} entries ending in {}", a.count, short(&a.top)),
        None => "missing or unreadable".to_string(),
    };
    out.push_str(&format!(
        "re-anchored: the anchor said {old}; the trail's last entry is seq {} ({}, top {})\n",
        r.real_top.count,
        segment_file_name(r.real_top.segment),
        short(&r.real_top.top)
    ));
    if let Some(d) = &r.resolved {
        out.push_str(&format!("resolved: {}\n", render_defect(d)));
    }
    if r.truncated_bytes > 0 {
        out.push_str(&format!(
            "removed {} bytes of an interrupted append\n",
            r.truncated_bytes
        ));
    }
    out.push_str(&format!(
        "recorded as audit.note seq {} by {HUMAN_CLI}\n",
        r.note.seq
    ));
    out
}

fn render_seal(s: &SealOutcome) -> String {
    let mut out = String::new();
    if s.finished_interrupted {
        out.push_str("finished a seal a crash had interrupted:\n");
    }
    for f in &s.sealed {
        match &f.sha256 {
            Some(h) => out.push_str(&format!(
                "sealed {} ({} bytes, sha256 {h}): kept read-only as evidence\n",
                f.file, f.bytes
            )),
            None => out.push_str(&format!("sealed {} (it was already missing)\n", f.file)),
        }
    }
    if let Some(d) = &s.defect {
        out.push_str(&format!("defect: {}\n", render_defect(d)));
    }
    out.push_str(&format!(
        "the trail goes on in {}; recorded as audit.seal seq {} by {HUMAN_CLI}\n",
        segment_file_name(s.segment),
        s.seal.seq
    ));
    out
}
