//! `pincer audit verify|log|note|reanchor` (AU3–AU5). People at the
//! terminal are not gated, but what they do here is recorded (actor
//! `human:cli`).

use crate::Ctx;
use anyhow::Result;
use pincer_core::actor::HUMAN_CLI;
use pincer_core::audit::VerifyReport;
use pincer_core::audit::schema::AuditNote;
use pincer_core::text::terminal_safe;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum AuditCmd {
    /// Walk the chain and check the anchor; names the first bad seq and the
    /// defect. Exits 1 when there is a defect.
    Verify {
        #[arg(long)]
        json: bool,
    },
    /// Show the newest entries, oldest first.
    Log {
        /// How many entries (at least 1; default 20).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        limit: Option<u64>,
        /// Only this kind, or a kind family (`gate` matches `gate.decision`).
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Record an operator note (actor `human:cli`).
    Note {
        /// The note.
        text: String,
    },
    /// After `verify` shows the only defect is the anchor (a removed last
    /// line, a lost anchor file), record why in an `audit.note` and move the
    /// anchor to the real top. Refuses a defect inside the file.
    Reanchor {
        /// Why: required, recorded in the trail.
        #[arg(long, value_name = "TEXT", required = true)]
        reason: String,
    },
}

pub fn run(ctx: &Ctx, cmd: AuditCmd) -> Result<ExitCode> {
    let audit = pincer_runtime::open_audit(&ctx.home)?;
    match cmd {
        AuditCmd::Verify { json } => {
            let report = audit.verify()?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", render_verify(&report));
            }
            Ok(if report.defect.is_some() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        AuditCmd::Log { limit, kind, json } => {
            let limit = usize::try_from(limit.unwrap_or(20)).unwrap_or(usize::MAX);
            let entries = audit.log(Some(limit), kind.as_deref())?;
            for e in &entries {
                if json {
                    println!("{}", serde_json::to_string(e)?);
                } else {
                    let data = e.data.to_string();
                    let cut: String = data.chars().take(160).collect();
                    let more = if cut.len() < data.len() { "…" } else { "" };
                    println!(
                        "{:>6}  {}  {:<14}  {:<16}  {}{more}",
                        e.seq,
                        e.ts,
                        terminal_safe(&e.actor),
                        terminal_safe(&e.kind),
                        terminal_safe(&cut)
                    );
                }
            }
            if entries.is_empty() && !json {
                eprintln!("no entries");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCmd::Note { text } => {
            if text.trim().is_empty() {
                anyhow::bail!("the note is empty; say what happened");
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
            println!("recorded note as seq {}", r.seq);
            Ok(ExitCode::SUCCESS)
        }
        AuditCmd::Reanchor { reason } => {
            if reason.trim().is_empty() {
                anyhow::bail!("--reason is empty; say why the anchor is being moved");
            }
            let done = audit.reanchor(HUMAN_CLI, &reason)?;
            println!("{}", serde_json::to_string(&done)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn render_verify(r: &VerifyReport) -> String {
    let mut out = String::new();
    match &r.defect {
        None => {
            out.push_str(&format!(
                "audit trail ok: {} entries, top {}, anchor matches\n",
                r.entries,
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
            let kind = serde_json::to_value(d.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            out.push_str(&format!(
                "audit trail DEFECT: {kind} at seq {} (line {}): {}\n",
                d.seq,
                d.line,
                terminal_safe(&d.detail)
            ));
            out.push_str(if kind == "anchor_mismatch" {
                "the entries chain correctly but the anchor disagrees (a removed last line, or a lost or edited anchor.json). \
                 If you know why, run `pincer audit reanchor --reason \"…\"`; the reason is recorded.\n"
            } else {
                "the defect is inside the file; reanchor refuses it. Keep the file as evidence.\n"
            });
        }
    }
    out
}
