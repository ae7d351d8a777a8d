//! What is measured, exactly as PicoClaw's `cmd/membench` measures it.
//!
//! # HitRate of one question
//!
//! - Its `evidence` entries are split on `;` and whitespace; each piece
//!   that reads `D<session>:<turn>` is an id, with leading zeros dropped
//!   (`D01:05` is `D1:5`); other pieces are ignored.
//! - No evidence at all scores 1. Evidence with no valid id scores 0.
//! - An id that names no turn of the conversation leaves the denominator;
//!   when no id is left, the question scores 0.
//! - A resolvable id is a hit when the turn's text, lowercased, is a
//!   substring of the lowercased context. Score = hits / resolvable.
//!
//! Averages are over every question, category 5 (adversarial) included.
//!
//! # Id recall
//!
//! The same rules, but an id is a hit when its turn was put in the context
//! (by `dia_id`), whatever else the context holds: the LoCoMo authors'
//! evidence recall, which a short turn ("Yes!") cannot satisfy by accident.
//!
//! # Tokens
//!
//! `bytes / 4`, rounded down, as PicoClaw counts them.

use crate::data::Conversation;
use std::collections::HashMap;

/// PicoClaw's token estimate: `len(bytes) / 4`.
pub fn tokens(text: &str) -> usize {
    text.len() / 4
}

/// PicoClaw's `BudgetTruncate`: how many of `parts`, from the front, fit in
/// `budget` tokens, each part counted as [`tokens`]. The first part is
/// always kept, even when it alone is over the budget.
pub fn budget_truncate<S: AsRef<str>>(parts: &[S], budget: usize) -> usize {
    let mut total = 0usize;
    for (i, p) in parts.iter().enumerate() {
        let t = tokens(p.as_ref());
        if total + t > budget && i > 0 {
            return i;
        }
        total += t;
    }
    parts.len()
}

/// `D<digits>:<digits>` with the numbers' leading zeros dropped, or `None`.
pub fn normalize_dia_id(token: &str) -> Option<String> {
    let (s, t) = token.strip_prefix('D')?.split_once(':')?;
    let number = |x: &str| -> Option<u64> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Only zeros, or digits past u64: keep the value exact as text.
        x.parse().ok()
    };
    Some(format!("D{}:{}", number(s)?, number(t)?))
}

/// Every valid id in the `evidence` entries, in order (see the module doc).
pub fn split_evidence<S: AsRef<str>>(evidence: &[S]) -> Vec<String> {
    evidence
        .iter()
        .flat_map(|e| e.as_ref().split(';'))
        .flat_map(str::split_whitespace)
        .filter_map(normalize_dia_id)
        .collect()
}

/// A conversation's turns by `dia_id` (as written in the data; a repeated
/// id names its last turn, as in PicoClaw's map), with their lowercased
/// text.
#[derive(Debug, Clone)]
pub struct TurnIndex {
    by_id: HashMap<String, usize>,
    lower: Vec<String>,
}

impl TurnIndex {
    pub fn new(conv: &Conversation) -> Self {
        let mut by_id = HashMap::new();
        let mut lower = Vec::new();
        for (i, t) in conv.turns().enumerate() {
            by_id.insert(t.dia_id.clone(), i);
            lower.push(t.text.to_lowercase());
        }
        Self { by_id, lower }
    }

    /// The turn position (0-based, in conversation order) of an id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub fn len(&self) -> usize {
        self.lower.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }
}

/// A question's evidence, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The question has no evidence entry at all (scores 1).
    pub none_given: bool,
    /// Valid ids after splitting.
    pub ids: Vec<String>,
    /// Turn positions of the ids that resolve, in id order.
    pub resolved: Vec<usize>,
}

impl Evidence {
    pub fn new<S: AsRef<str>>(evidence: &[S], turns: &TurnIndex) -> Self {
        let ids = split_evidence(evidence);
        let resolved = ids.iter().filter_map(|id| turns.position(id)).collect();
        Self {
            none_given: evidence.is_empty(),
            ids,
            resolved,
        }
    }
}

/// How one context scores for one question.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub hit_rate: f64,
    pub id_recall: f64,
    /// For each resolvable evidence id: its turn position and whether the
    /// turn's text is in the context.
    pub evidence_hits: Vec<(usize, bool)>,
}

/// Scores `context` against `ev`. `included(pos)` says whether turn `pos`
/// was put in the context (for id recall). `no_result` marks a retrieval
/// that found nothing at all: PicoClaw scores it 0 before looking at the
/// evidence, so even a question without evidence scores 0.
pub fn score(
    ev: &Evidence,
    turns: &TurnIndex,
    context: &str,
    included: &dyn Fn(usize) -> bool,
    no_result: bool,
) -> Score {
    let lower = context.to_lowercase();
    let evidence_hits: Vec<(usize, bool)> = ev
        .resolved
        .iter()
        .map(|&p| (p, turns.lower.get(p).is_some_and(|t| lower.contains(t))))
        .collect();
    let rate = |hits: usize| -> f64 {
        if no_result {
            0.0
        } else if ev.none_given {
            1.0
        } else if ev.resolved.is_empty() {
            // No valid id, or none that names a turn.
            0.0
        } else {
            hits as f64 / ev.resolved.len() as f64
        }
    };
    let text_hits = evidence_hits.iter().filter(|(_, h)| *h).count();
    let id_hits = ev.resolved.iter().filter(|&&p| included(p)).count();
    Score {
        hit_rate: rate(text_hits),
        id_recall: rate(id_hits),
        evidence_hits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_and_normalise() {
        assert_eq!(
            split_evidence(&["D8:6; D9:17", "D9:1 D4:4  D04:006", "D", "D:11:26", "x"]),
            ["D8:6", "D9:17", "D9:1", "D4:4", "D4:6"]
        );
        assert_eq!(normalize_dia_id("D30:05").as_deref(), Some("D30:5"));
        assert_eq!(normalize_dia_id("D0:0").as_deref(), Some("D0:0"));
        for bad in ["", "D", "D1", "D1:", "d1:2", "D1:2x", "D-1:2", "D1:2:3"] {
            assert_eq!(normalize_dia_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn score_rules() {
        use crate::data::{DateTime, Session, Turn};
        let turn = |id: &str, text: &str| Turn {
            dia_id: id.into(),
            speaker: "A".into(),
            text: text.into(),
        };
        let conv = Conversation {
            sample: "s".into(),
            speakers: ["A".into(), "B".into()],
            sessions: vec![Session {
                number: 1,
                date_time: String::new(),
                when: DateTime {
                    year: 2024,
                    month: 1,
                    day: 1,
                    hour: 0,
                    minute: 0,
                },
                turns: vec![turn("D1:1", "The Red Kite"), turn("D1:2", "blue heron")],
            }],
            questions: Vec::new(),
        };
        let idx = TurnIndex::new(&conv);
        let s = |ev: &[&str], ctx: &str, no_result: bool| {
            let e = Evidence::new(ev, &idx);
            let r = score(&e, &idx, ctx, &|p| p == 1, no_result);
            (r.hit_rate, r.id_recall)
        };
        assert_eq!(s(&[], "", false), (1.0, 1.0));
        assert_eq!(s(&[], "anything", true), (0.0, 0.0));
        // Lowercased substring: "the red kite" is in "…THE RED KITE…".
        assert_eq!(s(&["D1:1"], "saw THE RED KITE today", false), (1.0, 0.0));
        assert_eq!(s(&["D01:001"], "the red kite", false), (1.0, 0.0));
        // D1:9 names no turn: the denominator is 1.
        assert_eq!(s(&["D1:9; D1:2"], "x", false), (0.0, 1.0));
        assert_eq!(s(&["D1:9", "D1:1 D1:2"], "the red kite", false), (0.5, 0.5));
        assert_eq!(s(&["D1:9"], "the red kite", false), (0.0, 0.0));
        assert_eq!(s(&["D", "nonsense"], "the red kite", false), (0.0, 0.0));
        let e = Evidence::new(&["D1:2 D1:1"], &idx);
        let r = score(&e, &idx, "blue heron", &|_| false, false);
        assert_eq!(r.evidence_hits, [(1, true), (0, false)]);
    }

    #[test]
    fn truncation_keeps_the_first_part() {
        let parts = ["a".repeat(40), "b".repeat(40), "c".repeat(40)];
        assert_eq!(budget_truncate(&parts, 20), 2);
        assert_eq!(budget_truncate(&parts, 19), 1);
        assert_eq!(budget_truncate(&parts, 0), 1);
        assert_eq!(budget_truncate(&parts, 30), 3);
        assert_eq!(budget_truncate::<&str>(&[], 30), 0);
        // Floor per part: 7 bytes are 1 token.
        assert_eq!(budget_truncate(&["abcdefg", "abcdefg"], 2), 2);
    }
}
