//! Search queries: the user's text is tokenised here, never handed to FTS5.
//!
//! A query is split into words the way FTS5's `unicode61` tokenizer splits
//! text (runs of Unicode letters and digits; everything else separates) and
//! lowercased. Each word becomes a double-quoted FTS5 string, so `"`, `*`,
//! `:`, `-`, `(`, `NEAR(`, `OR`, `AND`, `NOT` are only ever text, never
//! syntax. Words are joined with `AND` (a page must hold every word); when
//! that finds nothing the search retries with `OR` and says so in the
//! warnings. The last word, when it has at least [`PREFIX_MIN`] characters,
//! also matches as a prefix (`"sens"*`), so a half-typed word still finds.

use crate::error::MemoryError;

/// Longest query text accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 1000;
/// Most distinct words kept from a query.
pub const MAX_QUERY_TERMS: usize = 32;
/// Shortest last word that also matches as a prefix.
pub const PREFIX_MIN: usize = 3;
/// Largest `limit`.
pub const MAX_LIMIT: usize = 100;

/// A tokenised query: distinct lowercase words in order of appearance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    pub terms: Vec<String>,
}

impl Query {
    pub fn parse(text: &str) -> Result<Self, MemoryError> {
        if text.trim().is_empty() {
            return Err(MemoryError::invalid("query", "is empty"));
        }
        if text.len() > MAX_QUERY_BYTES {
            return Err(MemoryError::invalid(
                "query",
                format!(
                    "is {} bytes long, at most {MAX_QUERY_BYTES} allowed",
                    text.len()
                ),
            ));
        }
        let mut terms: Vec<String> = Vec::new();
        for (s, e) in token_spans(text) {
            let t = text[s..e].to_lowercase();
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        if terms.is_empty() {
            return Err(MemoryError::invalid(
                "query",
                format!(
                    "`{}` has no words to search for (only punctuation)",
                    text.escape_debug()
                ),
            ));
        }
        terms.truncate(MAX_QUERY_TERMS);
        Ok(Self { terms })
    }

    /// Whether term `i` also matches as a prefix.
    pub fn is_prefix(&self, i: usize) -> bool {
        i + 1 == self.terms.len() && self.terms[i].chars().count() >= PREFIX_MIN
    }

    /// The FTS5 MATCH expression: every word quoted, joined by AND or OR.
    #[cfg_attr(not(feature = "fts5"), allow(dead_code))]
    pub fn fts5_expr(&self, all: bool) -> String {
        let op = if all { " AND " } else { " OR " };
        let mut out = String::new();
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                out.push_str(op);
            }
            out.push('"');
            // Tokens hold only letters and digits; escaping keeps this safe
            // even if the tokenizer ever changes.
            out.push_str(&t.replace('"', "\"\""));
            out.push('"');
            if self.is_prefix(i) {
                out.push('*');
            }
        }
        out
    }
}

/// Checks a search limit: 1..=[`MAX_LIMIT`].
pub(crate) fn check_limit(limit: usize) -> Result<(), MemoryError> {
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(MemoryError::invalid(
            "limit",
            format!("{limit} is not in 1..={MAX_LIMIT}"),
        ))
    }
}

/// Byte spans of the words of `text`: maximal runs of alphanumeric chars.
pub(crate) fn token_spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut it = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while let Some(&(_, c)) = it.peek() {
            if c.is_alphanumeric() {
                break;
            }
            it.next();
        }
        let (start, _) = *it.peek()?;
        let mut end = start;
        while let Some(&(i, c)) = it.peek() {
            if !c.is_alphanumeric() {
                break;
            }
            end = i + c.len_utf8();
            it.next();
        }
        Some((start, end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_is_only_text() {
        let q = Query::parse("\"a\" NEAR(b* -c:d) OR (e").expect("parse");
        assert_eq!(q.terms, ["a", "near", "b", "c", "d", "or", "e"]);
        assert_eq!(
            q.fts5_expr(true),
            "\"a\" AND \"near\" AND \"b\" AND \"c\" AND \"d\" AND \"or\" AND \"e\""
        );
        let q = Query::parse("Grün sensors").expect("parse");
        assert_eq!(q.fts5_expr(false), "\"grün\" OR \"sensors\"*");
    }

    #[test]
    fn empty_and_punctuation_only_name_query() {
        for q in ["", "  \n", "\"", "*", "-:()"] {
            let e = Query::parse(q).expect_err(q);
            assert_eq!(e.field(), Some("query"), "{q:?}: {e}");
        }
    }
}
