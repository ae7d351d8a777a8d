//! pincer's strategies, through pincer's real stores: every conversation is
//! appended to a `SessionStore` session, trimmed by `pincer_core::trim`
//! and the trim applied to the session (skip, summary, compaction), exactly
//! as the agent does before a request; what the session holds afterwards
//! is the recent part of the context. Strategies with memory write each
//! dropped turn as a `PageStore` page and search them through
//! `MemoryIndex` (SQLite FTS5, porter unicode61); what they put in the
//! context is read back from the pages.
//!
//! - `pincer-trim`: the trimmer with the whole budget and no summary.
//! - `pincer-trim-summary`: the same with the running summary (the
//!   config's default `summary_max_chars`), sent under the agent's heading.
//! - `pincer-trim-memory`: memory as the agent has it today: half the budget
//!   for recent turns, and `memory_search` with the question as the query
//!   and the tool's largest limit (20); the hits' pages fill the rest.
//! - `pincer-recall`: a quarter of the budget for recent turns; the
//!   question's keywords ([`recall_keywords`]), each searched on its own
//!   (limit 100) and the scores summed per page (the bm25 of an any-word
//!   query, which the search API does not offer directly); pages in score
//!   order, each with the two turns before and after it (a question's words
//!   are often in one turn and its answer in the reply), until the budget
//!   is full; shown in conversation order under each session's date.
//! - `pincer-recall-no-window`, `pincer-recall-no-recent`: ablations.
//!
//! Tokens: the trimmer counts with pincer's own `CharRatio` (chars / 4
//! rounded up, plus 4 per message), which is stricter than the benchmark's
//! `bytes / 4`; what a strategy adds to the trimmed part is kept within
//! `4 × budget` bytes of context in all.

use crate::data::Conversation;
use crate::error::BenchError;
use crate::picoclaw;
use crate::strategy::Strategy;
use pincer_core::config::Config;
use pincer_core::message::{Message, Timestamp};
use pincer_core::session::{SessionStore, SessionWriter};
use pincer_core::trim::{self, Budget, CharRatio, TrimInput};
use pincer_memory::{MemoryIndex, NewPage, PageStore};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// The session every strategy's conversation is appended to.
const SESSION_KEY: &str = "membench";
/// The heading the agent sends the running summary under.
const SUMMARY_HEADING: &str = "# Earlier in this conversation (summary of dropped turns)";
/// What the agent allows for that heading when it trims.
const SUMMARY_HEADING_TOKENS: usize = 16;
/// `memory_search`'s largest limit.
const TOOL_SEARCH_LIMIT: usize = 20;
/// `MemoryIndex::search`'s largest limit.
const INDEX_SEARCH_LIMIT: usize = 100;
/// The memory search keeps at most this many words of a query.
const MAX_QUERY_TERMS: usize = 32;
/// Turns taken on each side of a recalled page.
const WINDOW: usize = 2;
/// The title of every page built from a dropped turn: the same on every
/// page, so it weighs on no query (titles weigh 10× in the ranking).
const PAGE_TITLE: &str = "dropped turn";

/// The words `pincer-recall` searches for: [`picoclaw::words`] of at
/// least 2 bytes that are not stopwords, each once, at most 32 (the memory
/// search's own limit on query words).
pub fn recall_keywords(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in picoclaw::words(question) {
        if w.len() >= 2 && !picoclaw::is_stopword(&w) && !out.contains(&w) {
            out.push(w);
        }
        if out.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    out
}

/// A question's context from one of pincer's strategies.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub text: String,
    /// Positions of the turns in the context, ascending.
    pub turns: Vec<usize>,
}

/// One strategy prepared for one conversation.
#[derive(Debug)]
pub struct Prepared<'c> {
    strategy: Strategy,
    conv: &'c Conversation,
    budget: usize,
    /// Session index (into `conv.sessions`) of each turn position.
    session_of: Vec<usize>,
    /// Turns the session still holds after the trim (the recent part).
    kept: std::ops::Range<usize>,
    /// The contents of the messages the session holds after the trim.
    held: Vec<String>,
    /// The running summary the session holds after the trim.
    summary: String,
    memory: Option<Memory>,
    /// The context of the strategies that give every question the same.
    fixed: Option<Built>,
    /// Degradations the stores reported, by message, with counts.
    pub notes: BTreeMap<String, usize>,
}

#[derive(Debug)]
struct Memory {
    index: MemoryIndex,
    /// Page bodies read so far, by turn position.
    bodies: HashMap<usize, String>,
    /// Search results so far, by query and limit: (turn position, score).
    searches: HashMap<(String, usize), Vec<(usize, f64)>>,
}

fn page_id(pos: usize) -> String {
    format!("t{pos:06}")
}

fn page_pos(id: &str) -> Option<usize> {
    id.strip_prefix('t')?.parse().ok()
}

/// How a strategy trims: the window for the recent part (none: every turn
/// goes to memory), the summary cap and the tokens pinned for its heading.
fn trim_plan(
    strategy: Strategy,
    budget: usize,
) -> Result<(Option<usize>, usize, usize), BenchError> {
    Ok(match strategy {
        Strategy::Trim => (Some(budget), 0, 0),
        Strategy::TrimSummary => (
            Some(budget),
            Config::default().context.summary_max_chars,
            SUMMARY_HEADING_TOKENS,
        ),
        Strategy::TrimMemory => (Some(budget / 2), 0, 0),
        Strategy::Recall | Strategy::RecallNoWindow => (Some(budget / 4), 0, 0),
        Strategy::RecallNoRecent => (None, 0, 0),
        other => {
            return Err(BenchError::Inconsistent(format!(
                "{other} is not one of pincer's strategies"
            )));
        }
    })
}

/// Appends every session of `conv` as one batch of user messages stamped
/// with the session's date; returns each turn's content and session index.
fn append(
    writer: &mut SessionWriter,
    conv: &Conversation,
) -> Result<(Vec<String>, Vec<usize>), BenchError> {
    let mut session_of = Vec::new();
    let mut contents = Vec::new();
    for (si, s) in conv.sessions.iter().enumerate() {
        let mut batch = Vec::with_capacity(s.turns.len());
        for (i, t) in s.turns.iter().enumerate() {
            // The turn's index as milliseconds keeps stamps in order.
            let ts = Timestamp::parse(&s.when.rfc3339(u16::try_from(i % 1000).unwrap_or(0)))
                .map_err(|e| BenchError::Inconsistent(format!("session date: {e}")))?;
            let content = t.content();
            contents.push(content.clone());
            batch.push(Message {
                ts,
                ..Message::user(content)
            });
            session_of.push(si);
        }
        writer.append(&batch)?;
    }
    writer.sync()?;
    Ok((contents, session_of))
}

/// Trims the session to `window` tokens and applies the trim, as the agent
/// does before a request; returns how many turns were dropped and the part
/// of the running summary the request sends (the session keeps it whole).
fn trim_session(
    writer: &mut SessionWriter,
    n: usize,
    window: usize,
    summary_max_chars: usize,
    pinned: usize,
) -> Result<(usize, String), BenchError> {
    let view = writer.view()?;
    let (context, repair) = view.context();
    if !repair.is_clean() || context.len() != n {
        return Err(BenchError::Inconsistent(format!(
            "the session holds {} messages after appending {n} turns",
            context.len()
        )));
    }
    let trimmed = trim::trim(
        &TrimInput {
            messages: &context,
            summary: &view.meta.summary,
            summary_max_chars,
            budget: Budget {
                context_window: window,
                tool_def_tokens: 0,
                output_reserve: 0,
                pinned_tokens: pinned,
            },
        },
        &CharRatio::default(),
    )?;
    writer.apply_trim(&view, &context, &trimmed)?;
    Ok((trimmed.dropped_messages, trimmed.request_summary))
}

/// What the session holds after the trim (the recent part and the running
/// summary), checked against the turns it should be.
fn read_back(
    store: &SessionStore,
    kept: std::ops::Range<usize>,
    contents: &[String],
) -> Result<(Vec<String>, String), BenchError> {
    let after = store.read(SESSION_KEY)?;
    let held: Vec<String> = after.messages.into_iter().map(|m| m.content).collect();
    if held.len() != kept.len()
        || held
            .iter()
            .zip(&contents[kept.clone()])
            .any(|(a, b)| a != b)
    {
        return Err(BenchError::Inconsistent(format!(
            "after the trim the session holds {} messages, expected turns {kept:?}",
            held.len()
        )));
    }
    Ok((held, after.meta.summary))
}

/// Writes turns `0..dropped` as pages under `mem_dir` and opens their index
/// (synced once, so the first search is not the one that indexes them).
fn write_pages(
    mem_dir: &Path,
    conv: &Conversation,
    contents: &[String],
    session_of: &[usize],
    dropped: usize,
    notes: &mut BTreeMap<String, usize>,
) -> Result<Memory, BenchError> {
    let pages = PageStore::open(mem_dir)?;
    for (pos, (turn, content)) in conv.turns().zip(contents).enumerate().take(dropped) {
        let date = &conv.sessions[session_of[pos]].date_time;
        let source: String = format!("{} {} ({date})", conv.sample, turn.dia_id)
            .chars()
            .filter(|c| !c.is_control())
            .take(pincer_memory::page::MAX_SOURCE_CHARS)
            .collect();
        pages.write(NewPage {
            id: Some(page_id(pos)),
            title: PAGE_TITLE.to_owned(),
            tags: Vec::new(),
            source: source.trim().to_owned(),
            pinned: false,
            body: content.clone(),
        })?;
    }
    let mut index = MemoryIndex::open(mem_dir)?;
    for w in index.sync()?.warnings {
        *notes.entry(w).or_insert(0) += 1;
    }
    Ok(Memory {
        index,
        bodies: HashMap::new(),
        searches: HashMap::new(),
    })
}

impl<'c> Prepared<'c> {
    /// Appends `conv` to a session under `dir`, trims it as `strategy`
    /// says, applies the trim, and writes the dropped turns as pages when
    /// the strategy has memory.
    pub fn new(
        dir: &Path,
        conv: &'c Conversation,
        strategy: Strategy,
        budget: usize,
    ) -> Result<Self, BenchError> {
        let (recent, summary_max_chars, pinned) = trim_plan(strategy, budget)?;
        let store = SessionStore::open(dir.join("sessions"), Config::default().session.fsync)?;
        let mut writer = store.writer(SESSION_KEY)?;
        let (contents, session_of) = append(&mut writer, conv)?;
        let n = contents.len();
        let (dropped, sent) = match recent {
            None => (n, String::new()),
            Some(window) => trim_session(&mut writer, n, window, summary_max_chars, pinned)?,
        };
        drop(writer);
        let kept = dropped..n;
        // With no recent part, nothing the session holds is sent; with one,
        // the summary sent is the trimmer's, which the session's whole
        // summary ends with.
        let (held, summary) = match recent {
            Some(_) => {
                let (held, kept_summary) = read_back(&store, kept.clone(), &contents)?;
                if !kept_summary.ends_with(sent.trim_end_matches('…')) && !sent.ends_with('…') {
                    return Err(BenchError::Inconsistent(
                        "the summary sent is not the newest part of the session's".into(),
                    ));
                }
                (held, sent)
            }
            None => (Vec::new(), String::new()),
        };
        let mut notes = BTreeMap::new();
        let memory = match strategy {
            Strategy::TrimMemory
            | Strategy::Recall
            | Strategy::RecallNoWindow
            | Strategy::RecallNoRecent => Some(write_pages(
                &dir.join("memory"),
                conv,
                &contents,
                &session_of,
                dropped,
                &mut notes,
            )?),
            _ => None,
        };
        let mut me = Self {
            strategy,
            conv,
            budget,
            session_of,
            kept,
            held,
            summary,
            memory,
            fixed: None,
            notes,
        };
        if matches!(strategy, Strategy::Trim | Strategy::TrimSummary) {
            me.fixed = Some(me.trimmed_only());
        }
        Ok(me)
    }

    /// The context for `question`.
    pub fn context(&mut self, question: &str) -> Result<Built, BenchError> {
        match self.strategy {
            Strategy::Trim | Strategy::TrimSummary => {
                Ok(self.fixed.clone().unwrap_or_else(|| self.trimmed_only()))
            }
            Strategy::TrimMemory => self.tool_memory(question),
            _ => self.recall(question),
        }
    }

    /// Turn `pos` of the recent part, as the session holds it.
    fn held(&self, pos: usize) -> &str {
        pos.checked_sub(self.kept.start)
            .and_then(|i| self.held.get(i))
            .map_or("", String::as_str)
    }

    fn trimmed_only(&self) -> Built {
        let mut text = String::new();
        if !self.summary.is_empty() {
            text.push_str(SUMMARY_HEADING);
            text.push('\n');
            text.push_str(&self.summary);
            text.push_str("\n\n");
        }
        text.push_str(&self.held.join("\n"));
        Built {
            text,
            turns: self.kept.clone().collect(),
        }
    }

    fn tool_memory(&mut self, question: &str) -> Result<Built, BenchError> {
        let recent = self.held.join("\n");
        let max = self.budget.saturating_mul(4);
        let mut used = recent.len();
        let hits = self.search(question, TOOL_SEARCH_LIMIT)?;
        let mut lines = Vec::new();
        let mut turns = Vec::new();
        for (pos, _) in hits {
            let body = self.body(pos)?;
            if used + body.len() + 1 > max {
                continue;
            }
            used += body.len() + 1;
            lines.push(body);
            turns.push(pos);
        }
        lines.push(recent);
        turns.extend(self.kept.clone());
        turns.sort_unstable();
        Ok(Built {
            text: lines.join("\n"),
            turns,
        })
    }

    fn recall(&mut self, question: &str) -> Result<Built, BenchError> {
        let window = if self.strategy == Strategy::RecallNoWindow {
            0
        } else {
            WINDOW
        };
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for kw in recall_keywords(question) {
            for (pos, s) in self.search(&kw, INDEX_SEARCH_LIMIT)? {
                *scores.entry(pos).or_insert(0.0) += s;
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));

        // Start from the recent part; every line costs its bytes and a
        // newline, every session its date line.
        let mut chosen: BTreeSet<usize> = self.kept.clone().collect();
        let mut sessions: BTreeSet<usize> = chosen.iter().map(|&p| self.session_of[p]).collect();
        let mut used: usize = chosen
            .iter()
            .map(|&p| self.held(p).len() + 1)
            .sum::<usize>()
            + sessions
                .iter()
                .map(|&s| self.date_line(s).len() + 1)
                .sum::<usize>();
        let max = self.budget.saturating_mul(4);
        let dropped = self.kept.start;
        let mut bodies: HashMap<usize, String> = HashMap::new();
        'fill: for (hit, _) in ranked {
            for off in std::iter::once(0isize).chain((1..=window as isize).flat_map(|d| [d, -d])) {
                let Some(pos) = hit.checked_add_signed(off).filter(|p| *p < dropped) else {
                    continue;
                };
                if chosen.contains(&pos) {
                    continue;
                }
                let body = self.body(pos)?;
                let s = self.session_of[pos];
                let cost = body.len()
                    + 1
                    + if sessions.contains(&s) {
                        0
                    } else {
                        self.date_line(s).len() + 1
                    };
                if used + cost > max {
                    if max.saturating_sub(used) < 16 {
                        break 'fill;
                    }
                    continue;
                }
                used += cost;
                chosen.insert(pos);
                sessions.insert(s);
                bodies.insert(pos, body);
            }
        }

        let mut text = String::with_capacity(used);
        let mut last_session = None;
        for &pos in &chosen {
            let s = self.session_of[pos];
            if last_session != Some(s) {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&self.date_line(s));
                last_session = Some(s);
            }
            text.push('\n');
            match bodies.remove(&pos) {
                Some(b) => text.push_str(&b),
                None => text.push_str(self.held(pos)),
            }
        }
        Ok(Built {
            text,
            turns: chosen.into_iter().collect(),
        })
    }

    fn date_line(&self, session: usize) -> String {
        self.conv
            .sessions
            .get(session)
            .map(|s| format!("[{}]", s.when.day_text()))
            .unwrap_or_default()
    }

    /// A memory search, cached by query and limit (the index does not
    /// change once built): each hit as (turn position, score).
    fn search(&mut self, query: &str, limit: usize) -> Result<Vec<(usize, f64)>, BenchError> {
        let mem = self
            .memory
            .as_mut()
            .ok_or_else(|| BenchError::Inconsistent("no memory to search".into()))?;
        let key = (query.to_owned(), limit);
        if let Some(hits) = mem.searches.get(&key) {
            return Ok(hits.clone());
        }
        let r = mem.index.search(query, limit)?;
        for w in r.warnings {
            *self.notes.entry(w).or_insert(0) += 1;
        }
        let hits = r
            .hits
            .iter()
            .map(|h| {
                page_pos(&h.id)
                    .map(|p| (p, h.score))
                    .ok_or_else(|| BenchError::Inconsistent(format!("unknown page `{}`", h.id)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        mem.searches.insert(key, hits.clone());
        Ok(hits)
    }

    /// The body of the page of turn `pos`, read from the page store once.
    fn body(&mut self, pos: usize) -> Result<String, BenchError> {
        let mem = self
            .memory
            .as_mut()
            .ok_or_else(|| BenchError::Inconsistent("no memory to read".into()))?;
        if let Some(b) = mem.bodies.get(&pos) {
            return Ok(b.clone());
        }
        let page = mem.index.store().read(&page_id(pos))?;
        mem.bodies.insert(pos, page.body.clone());
        Ok(page.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_keywords_drop_stopwords_and_repeats() {
        assert_eq!(
            recall_keywords("What did Caroline and Caroline's dog eat at the café?"),
            ["caroline", "dog", "eat", "café"]
        );
        let long: String = (0..40).map(|i| format!("word{i} ")).collect();
        assert_eq!(recall_keywords(&long).len(), MAX_QUERY_TERMS);
    }

    #[test]
    fn page_ids_round_trip() {
        assert_eq!(page_id(42), "t000042");
        assert_eq!(page_pos("t000042"), Some(42));
        assert_eq!(page_pos("x1"), None);
        pincer_memory::validate_id(&page_id(999_999)).expect("valid id");
    }
}
