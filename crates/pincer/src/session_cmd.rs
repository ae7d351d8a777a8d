//! `pincer session …`: the session store for people and scripts.

use crate::Ctx;
use anyhow::{Context, Result, bail};
use clap::Subcommand;
use pincer_core::message::{Message, Role};
use pincer_core::session::{SessionStore, SessionView, TrimReport};
use pincer_core::text::one_line;
use pincer_core::trim::{Budget, CharRatio, RepairReport};
use serde_json::json;
use std::io::Read;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum SessionCmd {
    /// List sessions.
    List {
        /// Print `{"sessions": [...]}`.
        #[arg(long)]
        json: bool,
    },
    /// Show a session's live messages and what is on disk.
    Show {
        key: String,
        #[arg(long)]
        json: bool,
    },
    /// Append messages read as JSON lines from stdin. The whole batch is
    /// validated first; exit 0 means every message is durable.
    Append {
        key: String,
        #[arg(long)]
        json: bool,
    },
    /// Trim whole turns from the oldest until the session fits a token budget.
    Trim {
        key: String,
        /// The context window to fit, in tokens.
        #[arg(long, value_name = "TOKENS")]
        budget: usize,
        /// Tokens taken by tool definitions sent with every request.
        #[arg(long, value_name = "TOKENS", default_value_t = 0)]
        tool_def_tokens: usize,
        /// Tokens kept free for the reply (default: `[context] output_reserve`).
        #[arg(long, value_name = "TOKENS")]
        output_reserve: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Rewrite the session without its skipped lines.
    Compact {
        key: String,
        #[arg(long)]
        json: bool,
    },
}

/// Flags in tokens above this are typos, not context windows; keeping them
/// bounded also keeps every sum of them far from overflow.
const MAX_TOKENS: usize = 100_000_000;

pub fn run(ctx: &Ctx, cmd: SessionCmd) -> Result<ExitCode> {
    let store = SessionStore::open(ctx.home.sessions_dir(), ctx.settings.core.session.fsync)?;
    match cmd {
        SessionCmd::List { json } => list(&store, json),
        SessionCmd::Show { key, json } => show(&store, &key, json),
        SessionCmd::Append { key, json } => append(&store, &key, json),
        SessionCmd::Trim {
            key,
            budget,
            tool_def_tokens,
            output_reserve,
            json,
        } => {
            let output_reserve = output_reserve.unwrap_or(ctx.settings.core.context.output_reserve);
            for (flag, v) in [
                ("--budget", budget),
                ("--tool-def-tokens", tool_def_tokens),
                ("--output-reserve", output_reserve),
            ] {
                if v > MAX_TOKENS {
                    bail!(
                        "{flag} {v} is more than {MAX_TOKENS} tokens, larger than any model's window"
                    );
                }
            }
            if output_reserve + tool_def_tokens >= budget {
                bail!(
                    "--budget {budget} leaves no room for messages after --output-reserve \
                     {output_reserve} and --tool-def-tokens {tool_def_tokens}"
                );
            }
            let budget = Budget {
                context_window: budget,
                tool_def_tokens,
                output_reserve,
                pinned_tokens: 0,
            };
            let counter = CharRatio::new(ctx.settings.core.context.chars_per_token);
            let report = pincer_core::session::trim_stored(
                &store,
                &key,
                budget,
                &counter,
                ctx.settings.core.context.summary_max_chars,
            )?;
            print_trim(&report, json);
            Ok(ExitCode::SUCCESS)
        }
        SessionCmd::Compact { key, json } => {
            if !store.exists(&key)? {
                bail!("session `{key}` does not exist");
            }
            let mut w = store.writer(&key)?;
            let report = if w.meta().skip == 0 {
                None
            } else {
                Some(w.compact()?)
            };
            if json {
                println!("{}", json!({ "key": key, "compacted": report }));
            } else {
                match report {
                    None => println!("session {key}: nothing to compact (no skipped lines)"),
                    Some(r) => println!(
                        "session {key}: {} -> {}, dropped {} skipped lines, kept {}, {} -> {} bytes",
                        r.old_file,
                        r.new_file,
                        r.lines_dropped,
                        r.lines_kept,
                        r.bytes_before,
                        r.bytes_after
                    ),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list(store: &SessionStore, json: bool) -> Result<ExitCode> {
    let sessions = store.list()?;
    if json {
        println!("{}", json!({ "sessions": sessions }));
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        println!("no sessions in {}", store.dir().display());
    }
    for s in sessions {
        println!(
            "{:<24} {:>8} lines  skip {:<8} {:>10} bytes  {}",
            s.key, s.lines_on_disk, s.skip, s.bytes, s.file
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(store: &SessionStore, key: &str, json: bool) -> Result<ExitCode> {
    let view = store.read(key)?;
    let (_, repair) = view.context();
    if json {
        println!("{}", show_json(&view, &repair));
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", render_show(&view, &repair));
    Ok(ExitCode::SUCCESS)
}

pub fn show_json(view: &SessionView, repair: &RepairReport) -> serde_json::Value {
    json!({
        "key": view.key,
        "stats": view.stats,
        "summary": view.meta.summary,
        "repair_on_load": {
            "synthetic_results": repair.synthetic_results,
            "removed_orphan_results": repair.removed_orphan_results,
        },
        "messages": view.messages,
    })
}

/// The stored messages and what is on disk; `repair` says what loading
/// would add or leave out before sending them to a model.
pub fn render_show(view: &SessionView, repair: &RepairReport) -> String {
    use std::fmt::Write as _;
    let st = &view.stats;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "session {}  ({}, {} bytes)",
        view.key, st.file, st.bytes
    );
    let _ = writeln!(
        out,
        "lines on disk: {}  skip: {}  live lines: {}  messages: {}",
        st.lines_on_disk,
        st.skip,
        st.live_lines,
        view.messages.len()
    );
    let _ = writeln!(out, "unreadable lines: {}", st.unreadable.len());
    for u in &st.unreadable {
        let _ = writeln!(out, "  line {}: {}", u.line, one_line(&u.error, 100));
    }
    let torn = if st.torn_tail_bytes == 0 {
        "none".to_string()
    } else {
        format!(
            "{} bytes, ignored; the next writer repairs it",
            st.torn_tail_bytes
        )
    };
    let _ = writeln!(
        out,
        "torn tail: {torn}  (repaired before: {})",
        st.torn_tail_repairs
    );
    if st.skip_past_end {
        let _ = writeln!(
            out,
            "skip points past the end of the file (lines were lost); the next writer resets it"
        );
    }
    if !repair.is_clean() {
        let _ = writeln!(
            out,
            "on load: {} interrupted tool call(s) get a synthetic result, {} stray result(s) are left out",
            repair.synthetic_results.len(),
            repair.removed_orphan_results
        );
    }
    if !view.meta.summary.is_empty() {
        let _ = writeln!(out, "summary of dropped turns:");
        for line in view.meta.summary.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out, "--- messages ---");
    for m in &view.messages {
        let _ = match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<String> = m
                    .tool_calls
                    .iter()
                    .map(|c| format!("{}[{}] {}", c.name, c.id, one_line(c.arguments.get(), 60)))
                    .collect();
                writeln!(out, "assistant → {}", calls.join("; "))
            }
            Role::Tool => writeln!(
                out,
                "tool {}[{}]: {}",
                m.name.as_deref().unwrap_or(""),
                m.tool_call_id.as_deref().unwrap_or(""),
                one_line(&m.content, 100)
            ),
            role => writeln!(out, "{}: {}", role.as_str(), one_line(&m.content, 100)),
        };
    }
    out
}

fn append(store: &SessionStore, key: &str, json: bool) -> Result<ExitCode> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("cannot read stdin")?;
    let mut batch = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in input.split(|b| *b == b'\n').enumerate() {
        let Ok(line) = std::str::from_utf8(line) else {
            errors.push(format!("stdin line {}: not UTF-8 text", i + 1));
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        match Message::from_input(line) {
            Ok(m) => batch.push(m),
            Err(e) => errors.push(format!("stdin line {}: {e}", i + 1)),
        }
    }
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("{e}");
        }
        bail!(
            "{} invalid line(s); nothing from this batch was written",
            errors.len()
        );
    }
    if batch.is_empty() {
        bail!("stdin held no messages; expected one JSON message per line");
    }
    let mut w = store.writer(key)?;
    let receipt = w.append(&batch)?;
    w.sync()?;
    if json {
        println!(
            "{}",
            json!({ "key": key, "appended": receipt.appended, "durable": true })
        );
    } else {
        println!("appended {} message(s) to session {key}", receipt.appended);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_trim(r: &TrimReport, json: bool) {
    if json {
        println!("{}", serde_json::to_string(r).unwrap_or_default());
        return;
    }
    println!(
        "turns kept: {}  dropped: {} ({} messages)",
        r.kept_turns, r.dropped_turns, r.dropped_messages
    );
    println!("tokens: {} -> {}", r.tokens_before, r.tokens_after);
    println!("skip: {} -> {}", r.skip_before, r.skip_after);
    if let Some(c) = &r.compacted {
        println!(
            "compacted: {} -> {} ({} skipped lines dropped, {} -> {} bytes)",
            c.old_file, c.new_file, c.lines_dropped, c.bytes_before, c.bytes_after
        );
    }
}
