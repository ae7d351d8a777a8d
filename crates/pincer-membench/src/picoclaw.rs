//! PicoClaw's two memory baselines, reimplemented from the description of
//! its `cmd/membench` (our code, not a translation of theirs), so pincer's
//! strategies are compared with them in the same run on the same data.
//!
//! - **Legacy** (its default session store): every turn is one user
//!   message `"Speaker: text"`; the context is the history truncated to the
//!   budget by [`budget_truncate`]. Its merged code walks from the front,
//!   keeping the *oldest* turns; its published figure is what keeping the
//!   *newest* turns gives. Every question of a conversation gets the same
//!   context.
//! - **Seahorse** (its SQLite engine): all conversations in one database,
//!   each turn a row of `messages` and of an FTS5 table `messages_fts
//!   (message_id, content)` with the `trigram` tokenizer. Per question:
//!   [`keywords`]; per keyword `MATCH '"kw"'` within the conversation,
//!   `ORDER BY bm25 LIMIT 20`; when that finds nothing, `content LIKE
//!   '%kw%'` newest first, `LIMIT 20`, at rank 0. The union keeps each
//!   message's best (lowest) rank, best first, is truncated to the budget
//!   and joined with newlines. A question whose keywords find nothing at
//!   all scores 0.
//!
//! Ties: PicoClaw stamps every message with its ingest time, to the
//! second, so all of a conversation's messages share one `created_at` and
//! "newest first" is a tie that SQLite breaks as it likes; its rank sort is
//! not stable either. Here both ties break by message id, ascending, which
//! gives its published 0.6997 on LoCoMo-10; the LIKE tie broken the other
//! way gives 0.7002.

use crate::data::Conversation;
use crate::error::BenchError;
use crate::metrics::budget_truncate;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// PicoClaw's fixed English stopword list for keyword extraction.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "any", "are", "as", "at", "be", "been", "before",
    "being", "between", "but", "by", "can", "could", "did", "do", "does", "during", "each",
    "every", "for", "from", "go", "gone", "had", "has", "have", "he", "her", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "may", "me", "might", "must", "my", "no", "not", "of",
    "on", "or", "our", "over", "shall", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "them", "then", "they", "this", "through", "to", "until", "was", "we", "went",
    "were", "what", "when", "where", "who", "why", "will", "with", "would", "yes", "you", "your",
];

/// Most keywords Seahorse takes from a question.
pub const MAX_KEYWORDS: usize = 6;
/// Seahorse's per-keyword search limit.
pub const PER_KEYWORD_LIMIT: usize = 20;

/// The words of `text` as PicoClaw splits them: lowercased, split on
/// every char that is neither a letter nor a digit. (Go's `unicode.IsLetter`
/// / `IsDigit` and Rust's `is_alphabetic` / `is_numeric` differ only on
/// rare code points such as superscript digits.)
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphabetic() || c.is_numeric()))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

pub fn is_stopword(w: &str) -> bool {
    STOPWORDS.binary_search(&w).is_ok()
}

/// Seahorse's keywords of a question: [`words`] of at least 2 bytes that
/// are not [`STOPWORDS`], the first [`MAX_KEYWORDS`], repeats kept.
pub fn keywords(question: &str) -> Vec<String> {
    words(question)
        .filter(|w| w.len() >= 2 && !is_stopword(w))
        .take(MAX_KEYWORDS)
        .collect()
}

/// Which end of the history Legacy keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Oldest,
    Newest,
}

/// Legacy's context: the positions of the turns kept (in conversation
/// order) and their contents joined with newlines.
pub fn legacy(contents: &[String], budget: usize, keep: Keep) -> (std::ops::Range<usize>, String) {
    let range = match keep {
        Keep::Oldest => 0..budget_truncate(contents, budget),
        Keep::Newest => {
            let newest_first: Vec<&str> = contents.iter().rev().map(String::as_str).collect();
            let n = budget_truncate(&newest_first, budget);
            contents.len() - n..contents.len()
        }
    };
    let text = contents[range.clone()].join("\n");
    (range, text)
}

/// The FTS5 tokenizer Seahorse's message table is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    /// PicoClaw's: substrings of three chars, so `art` matches `party`.
    Trigram,
    /// pincer's memory index: words, English stemming, accents folded.
    Porter,
}

impl Tokenizer {
    fn sql(self) -> &'static str {
        match self {
            Self::Trigram => "trigram",
            Self::Porter => "porter unicode61 remove_diacritics 2",
        }
    }
}

/// One `created_at` for every message, as PicoClaw's ingest gives them.
const CREATED_AT: &str = "2026-01-01 00:00:00";

/// The Seahorse port's database: built once for all conversations (bm25
/// statistics are over the whole table, as in PicoClaw), then opened by
/// each worker thread.
#[derive(Debug)]
pub struct Seahorse {
    path: PathBuf,
    conn: Connection,
}

/// What Seahorse put in a question's context.
#[derive(Debug, Clone, PartialEq)]
pub struct SeahorseContext {
    pub text: String,
    /// Turn positions, in context order.
    pub turns: Vec<usize>,
    /// The keywords found nothing at all.
    pub no_result: bool,
}

impl Seahorse {
    /// Creates the database at `path` and ingests every conversation, in
    /// order: conversation `i` is `conversation_id = i + 1`.
    pub fn build(
        path: &Path,
        convs: &[Conversation],
        tokenizer: Tokenizer,
    ) -> Result<Self, BenchError> {
        let err = sql_err(path);
        let mut conn = Connection::open(path).map_err(&err)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE messages(
                 message_id INTEGER PRIMARY KEY AUTOINCREMENT,
                 conversation_id INTEGER NOT NULL,
                 turn INTEGER NOT NULL,
                 content TEXT NOT NULL,
                 created_at TEXT NOT NULL);
             CREATE INDEX idx_messages_created ON messages(conversation_id, created_at);
             CREATE VIRTUAL TABLE messages_fts USING fts5(message_id, content, tokenize = '{}');",
            tokenizer.sql()
        ))
        .map_err(&err)?;
        let tx = conn.transaction().map_err(&err)?;
        {
            let mut add = tx
                .prepare(
                    "INSERT INTO messages(conversation_id, turn, content, created_at) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(&err)?;
            let mut add_fts = tx
                .prepare("INSERT INTO messages_fts(message_id, content) VALUES (?1, ?2)")
                .map_err(&err)?;
            for (ci, conv) in convs.iter().enumerate() {
                let conv_id = i64::try_from(ci + 1).unwrap_or(i64::MAX);
                for (pos, t) in conv.turns().enumerate() {
                    let content = t.content();
                    let pos = i64::try_from(pos).unwrap_or(i64::MAX);
                    add.execute(params![conv_id, pos, content, CREATED_AT])
                        .map_err(&err)?;
                    add_fts
                        .execute(params![tx.last_insert_rowid(), content])
                        .map_err(&err)?;
                }
            }
        }
        tx.commit().map_err(&err)?;
        Ok(Self {
            path: path.to_path_buf(),
            conn,
        })
    }

    /// Another connection to a built database, for another thread.
    pub fn open(path: &Path) -> Result<Self, BenchError> {
        let conn = Connection::open(path).map_err(sql_err(path))?;
        Ok(Self {
            path: path.to_path_buf(),
            conn,
        })
    }

    /// Seahorse's context for `question` in conversation `conv_index`
    /// (0-based, the order given to [`Seahorse::build`]).
    pub fn context(
        &self,
        conv_index: usize,
        question: &str,
        budget: usize,
    ) -> Result<SeahorseContext, BenchError> {
        let err = sql_err(&self.path);
        let conv_id = i64::try_from(conv_index + 1).unwrap_or(i64::MAX);
        let limit = i64::try_from(PER_KEYWORD_LIMIT).unwrap_or(20);
        let mut fts = self
            .conn
            .prepare_cached(
                "SELECT m.message_id, bm25(messages_fts) AS rank
                 FROM messages_fts f JOIN messages m ON f.message_id = m.message_id
                 WHERE messages_fts MATCH ?1 AND m.conversation_id = ?2
                 ORDER BY rank LIMIT ?3",
            )
            .map_err(&err)?;
        let mut like = self
            .conn
            .prepare_cached(
                "SELECT message_id FROM messages
                 WHERE content LIKE ?1 AND conversation_id = ?2
                 ORDER BY created_at DESC, message_id ASC LIMIT ?3",
            )
            .map_err(&err)?;
        let mut best: HashMap<i64, f64> = HashMap::new();
        for kw in keywords(question) {
            // PicoClaw quotes each whitespace-separated token; a keyword is
            // letters and digits only, so this is the whole sanitiser.
            let expr = format!("\"{kw}\"");
            let found: Result<Vec<(i64, f64)>, _> = fts
                .query_map(params![expr, conv_id, limit], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .and_then(Iterator::collect);
            let rows = match found {
                Ok(rows) if !rows.is_empty() => rows,
                // Nothing (or an FTS error, as in PicoClaw): LIKE, at rank 0.
                _ => like
                    .query_map(params![format!("%{kw}%"), conv_id, limit], |r| {
                        Ok((r.get::<_, i64>(0)?, 0.0))
                    })
                    .and_then(Iterator::collect)
                    .map_err(&err)?,
            };
            for (id, rank) in rows {
                let slot = best.entry(id).or_insert(rank);
                if rank < *slot {
                    *slot = rank;
                }
            }
        }
        let mut ids: Vec<(i64, f64)> = best.into_iter().collect();
        ids.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let mut get = self
            .conn
            .prepare_cached("SELECT turn, content FROM messages WHERE message_id = ?1")
            .map_err(&err)?;
        let mut turns = Vec::with_capacity(ids.len());
        let mut parts = Vec::with_capacity(ids.len());
        for (id, _) in ids {
            let row: Option<(i64, String)> = get
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(&err)?;
            let (turn, content) = row.ok_or_else(|| {
                BenchError::Inconsistent(format!("seahorse port: message {id} vanished"))
            })?;
            turns.push(usize::try_from(turn).unwrap_or(usize::MAX));
            parts.push(content);
        }
        if parts.is_empty() {
            return Ok(SeahorseContext {
                text: String::new(),
                turns,
                no_result: true,
            });
        }
        let n = budget_truncate(&parts, budget);
        parts.truncate(n);
        turns.truncate(n);
        Ok(SeahorseContext {
            text: parts.join("\n"),
            turns,
            no_result: false,
        })
    }
}

fn sql_err(path: &Path) -> impl Fn(rusqlite::Error) -> BenchError + '_ {
    move |e| BenchError::Sqlite {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOPWORDS);
        assert_eq!(STOPWORDS.len(), 87);
    }

    #[test]
    fn keywords_as_picoclaw_takes_them() {
        assert_eq!(
            keywords("When did Caroline go to the LGBTQ support group?"),
            ["caroline", "lgbtq", "support", "group"]
        );
        // Under 2 bytes dropped, repeats kept, at most 6, café stays whole.
        assert_eq!(
            keywords("Is a b-c dog's dog at the café x1 y2 z3 w4?"),
            ["dog", "dog", "café", "x1", "y2", "z3"]
        );
        assert!(keywords("What is it?").is_empty());
    }

    #[test]
    fn legacy_ends() {
        let c: Vec<String> = ["a".repeat(8), "b".repeat(8), "c".repeat(8)].into();
        assert_eq!(legacy(&c, 4, Keep::Oldest).0, 0..2);
        assert_eq!(legacy(&c, 4, Keep::Newest).0, 1..3);
        assert_eq!(legacy(&c, 4, Keep::Newest).1, format!("{}\n{}", c[1], c[2]));
        assert_eq!(legacy(&c, 0, Keep::Newest).0, 2..3);
    }
}
