//! `pincer demo`, part 3: the session store under a `kill -9` mid-write,
//! a crash mid-tool-call, trimming to a small context window and
//! compaction, on real files.

use anyhow::{Result, bail};
use pincer_core::config::FsyncPolicy;
use pincer_core::home::Home;
use pincer_core::message::{Message, ToolCall};
use pincer_core::session::{SessionStore, trim_stored};
use pincer_core::trim::{self, Budget, CharRatio, TokenCounter, TrimInput};
use serde::Serialize;
use serde_json::json;
use std::fs::OpenOptions;
use std::io::Write;

#[derive(Serialize)]
pub struct Step {
    title: String,
    lines: Vec<String>,
    data: serde_json::Value,
}

pub fn render(steps: &[Step], out: &mut String) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "Part 3: the session store under crashes, and turn-boundary trimming.\n"
    );
    for (i, s) in steps.iter().enumerate() {
        let _ = writeln!(out, "{}. {}", i + 1, s.title);
        for l in &s.lines {
            let _ = writeln!(out, "   {l}");
        }
        out.push('\n');
    }
}

fn sensor_turn(i: usize) -> Vec<Message> {
    let id = format!("call_{i}");
    vec![
        Message::user(format!(
            "Day {i}: what does the greenhouse log say about the temperature?"
        )),
        Message::assistant_calls(
            "",
            vec![ToolCall::new(
                id.clone(),
                "file_read",
                &json!({ "path": format!("greenhouse/day-{i}.log") }),
            )],
        ),
        Message::tool_result(
            id,
            "file_read",
            format!(
                "06:00 18.{i} C\n12:00 2{}.5 C\n18:00 21.{i} C\nvent opened at 11:40, closed at 16:10",
                i % 10
            ),
        ),
        Message::assistant(format!(
            "On day {i} it peaked at 2{}.5 °C around noon; the vent ran from 11:40 to 16:10.",
            i % 10
        )),
    ]
}

/// The five steps, each on the same session `greenhouse`.
pub fn story(home: &Home) -> Result<Vec<Step>> {
    let s = Story {
        store: SessionStore::open(home.sessions_dir(), FsyncPolicy::Turn)?,
        counter: CharRatio::default(),
        key: "greenhouse",
    };
    let budget = Budget {
        context_window: 900,
        tool_def_tokens: 120,
        output_reserve: 256,
        pinned_tokens: 0,
    };
    Ok(vec![
        s.conversation()?,
        s.torn_write()?,
        s.crash_mid_tool()?,
        s.trim_small_window(budget)?,
        s.current_turn_too_big(budget)?,
    ])
}

struct Story {
    store: SessionStore,
    counter: CharRatio,
    key: &'static str,
}

impl Story {
    /// A conversation of sensor turns, each with a tool call and its result.
    fn conversation(&self) -> Result<Step> {
        let (store, key) = (&self.store, self.key);
        let turns = 12;
        let mut w = store.writer(key)?;
        let mut appended = 0;
        for i in 1..=turns {
            appended += w.append(&sensor_turn(i))?.appended;
        }
        drop(w);
        Ok(Step {
            title: format!("A conversation of {turns} turns, each with a tool call and its result"),
            lines: vec![
                format!(
                    "appended {appended} messages, one JSON line each, to sessions/{key}.jsonl"
                ),
                "fsync = \"turn\": each user message is durable before the agent answers it".into(),
            ],
            data: json!({ "turns": turns, "messages": appended }),
        })
    }

    /// `kill -9` in the middle of a write: half a record at the end.
    fn torn_write(&self) -> Result<Step> {
        let (store, key) = (&self.store, self.key);
        let file = store.dir().join(&store.read(key)?.meta.file);
        let torn = br#"{"role":"user","content":"Day 13: and the humid"#;
        OpenOptions::new()
            .append(true)
            .open(&file)?
            .write_all(torn)?;
        let before = store.read(key)?;
        let mut w = store.writer(key)?;
        w.append(&sensor_turn(13))?;
        drop(w);
        let after = store.read(key)?;
        if after.stats.torn_tail_bytes != 0 || !after.stats.unreadable.is_empty() {
            bail!("demo: torn tail was not repaired");
        }
        Ok(Step {
            title: "kill -9 in the middle of a write leaves half a record at the end".into(),
            lines: vec![
                format!(
                    "a reader sees {} messages and ignores the torn tail ({} bytes)",
                    before.messages.len(),
                    before.stats.torn_tail_bytes
                ),
                format!(
                    "the next writer truncates it before appending: {} messages, {} unreadable lines, torn tails repaired: {}",
                    after.messages.len(),
                    after.stats.unreadable.len(),
                    after.stats.torn_tail_repairs
                ),
            ],
            data: json!({
                "torn_tail_bytes": before.stats.torn_tail_bytes,
                "messages_after": after.messages.len(),
                "unreadable_after": after.stats.unreadable.len(),
            }),
        })
    }

    /// A crash while a tool call was in flight.
    fn crash_mid_tool(&self) -> Result<Step> {
        let (store, key) = (&self.store, self.key);
        let mut w = store.writer(key)?;
        w.append(&[
            Message::user("Day 14: is the vent motor still running?"),
            Message::assistant_calls(
                "",
                vec![ToolCall::new("call_14", "gpio_read", &json!({ "pin": 17 }))],
            ),
        ])?;
        drop(w);
        let view = store.read(key)?;
        let (_, repair) = view.context();
        let mut w = store.writer(key)?;
        let mut view = w.view()?;
        let closed = w.close_interrupted_calls(&mut view)?;
        drop(w);
        let last = view
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(Step {
            title: "A crash while a tool call was in flight leaves a call with no result".into(),
            lines: vec![
                format!(
                    "a reader repairs it in memory: {} synthetic result(s) for {:?}, so a provider never sees an orphan call",
                    repair.synthetic_results.len(),
                    repair.synthetic_results
                ),
                format!(
                    "the next writer closes it on disk too ({closed:?}); the result says: {last}"
                ),
            ],
            data: json!({ "synthetic_results": repair.synthetic_results, "closed_on_disk": closed }),
        })
    }

    /// Trimming to a small context window, whole turns at a time.
    fn trim_small_window(&self, budget: Budget) -> Result<Step> {
        let (store, key, counter) = (&self.store, self.key, &self.counter);
        let live_before = store.read(key)?.messages.len();
        let report = trim_stored(store, key, budget, counter, 600)?;
        let after = store.read(key)?;
        // Checked on the stored lines themselves, not on a repaired copy.
        let orphans = usize::from(!trim::is_repaired(&after.messages));
        let summary_lines: Vec<String> = after
            .meta
            .summary
            .lines()
            .take(3)
            .map(str::to_string)
            .collect();
        let mut lines = vec![
            format!(
                "window {} tokens = messages + tool definitions ({}) + output reserve ({})",
                budget.context_window, budget.tool_def_tokens, budget.output_reserve
            ),
            format!(
                "turns kept {}, dropped {} whole turns ({} messages); tokens {} -> {}",
                report.kept_turns,
                report.dropped_turns,
                report.dropped_messages,
                report.tokens_before,
                report.tokens_after
            ),
            format!("stored messages with a tool call split from its result: {orphans}"),
            "dropped turns are folded into the session's running summary:".into(),
        ];
        lines.extend(summary_lines.iter().map(|l| format!("  {l}")));
        if let Some(c) = &report.compacted {
            lines.push(format!(
                "over half the file was skipped, so it was compacted: {} -> {} ({} -> {} bytes); {} live messages remain",
                c.old_file,
                c.new_file,
                c.bytes_before,
                c.bytes_after,
                after.messages.len()
            ));
        }
        Ok(Step {
            title: "Turn-boundary trimming to a small context window".into(),
            lines,
            data: json!({
                "live_messages_before": live_before,
                "report": report,
                "orphans_after": orphans,
            }),
        })
    }

    /// The current turn alone is too big: shortened, or a clear error.
    fn current_turn_too_big(&self, budget: Budget) -> Result<Step> {
        let counter = &self.counter;
        let huge = "reading ".repeat(5000);
        let current = vec![
            Message::user("Day 15: dump the whole sensor history"),
            Message::assistant_calls(
                "",
                vec![ToolCall::new(
                    "call_15",
                    "file_read",
                    &json!({ "path": "greenhouse/history.log" }),
                )],
            ),
            Message::tool_result("call_15", "file_read", huge.clone()),
        ];
        let input = TrimInput {
            messages: &current,
            summary: "",
            summary_max_chars: 600,
            budget,
        };
        let trimmed = trim::trim(&input, counter)?;
        let shortened = trimmed
            .shortened
            .first()
            .map(|s| (s.from_chars, s.to_chars))
            .unwrap_or_default();
        let tiny = TrimInput {
            messages: &[Message::user("word ".repeat(800))],
            summary: "",
            summary_max_chars: 600,
            budget,
        };
        let overflow = match trim::trim(&tiny, counter) {
            Err(e) => e.to_string(),
            Ok(_) => bail!("demo: an oversized user message should not fit"),
        };
        Ok(Step {
            title: "The current turn is never dropped".into(),
            lines: vec![
                format!(
                    "a {}-token tool result is shortened from {} to {} chars with a visible marker; tokens {} -> {}",
                    counter.text_tokens(&huge),
                    shortened.0,
                    shortened.1,
                    trimmed.tokens_before,
                    trimmed.tokens_after
                ),
                format!("a user message that cannot fit is an error, not a silent cut: {overflow}"),
            ],
            data: json!({ "shortened": [shortened.0, shortened.1], "overflow_error": overflow }),
        })
    }
}
