//! The scan fallback (ME3): no index, every search reads and parses
//! every page file.
//!
//! Matching mirrors the FTS5 backend minus the stemmer: text is split into
//! words as in [`crate::query`] and lowercased; a query word matches a page
//! word when they are equal, or, for the last query word of
//! [`crate::query::PREFIX_MIN`]+ chars, when the page word starts with it.
//! There is no Porter stemming and no diacritic folding, so `sensor` does
//! not find `sensors` here (it does with FTS5) unless it is the last word.
//!
//! Score: for each query word, 10 × its count in the title, plus 5 × its
//! count in the tags, plus its count in the body (the FTS5 backend's bm25
//! column weights, without bm25's length and rarity terms). Hits are ordered
//! by score, then id.

use crate::error::MemoryError;
use crate::index::{Hit, SyncReport};
use crate::page::{Page, PageStore, Problem, read_page_file};
use crate::query::{Query, token_spans};

/// One page matched against a query.
struct Scored {
    score: f64,
    page: Page,
}

/// Reads every page: (examined, pages, warnings).
pub(crate) fn load(store: &PageStore) -> Result<(usize, Vec<Page>, Vec<String>), MemoryError> {
    let files = store.page_files()?;
    let mut pages = Vec::with_capacity(files.len());
    let mut warnings = Vec::new();
    for path in &files {
        match read_page_file(path) {
            Ok(p) => pages.push(p),
            // Deleted between listing and reading: simply gone.
            Err(MemoryError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => warnings.push(excluded(&Problem::from_error(path, &e))),
        }
    }
    Ok((files.len(), pages, warnings))
}

pub(crate) fn excluded(p: &Problem) -> String {
    format!("{p}; the page is left out of search until it is fixed")
}

pub(crate) fn sync(store: &PageStore) -> Result<SyncReport, MemoryError> {
    let (examined, _, warnings) = load(store)?;
    Ok(SyncReport {
        examined,
        reindexed: 0,
        removed: 0,
        warnings,
    })
}

/// Scores `pages` against `q`: every word must match when `all`, any word
/// otherwise.
pub(crate) fn search(pages: Vec<Page>, q: &Query, all: bool, limit: usize) -> Vec<Hit> {
    let mut scored: Vec<Scored> = pages
        .into_iter()
        .filter_map(|page| {
            let title = words(&page.meta.title);
            let tags = words(&page.meta.tags.join(" "));
            let body = words(&page.body);
            let mut score = 0.0;
            let mut matched = 0;
            for (i, t) in q.terms.iter().enumerate() {
                let prefix = q.is_prefix(i);
                let n = |ws: &[String]| {
                    ws.iter()
                        .filter(|w| *w == t || (prefix && w.starts_with(t.as_str())))
                        .count()
                };
                let (a, b, c) = (n(&title), n(&tags), n(&body));
                if a + b + c > 0 {
                    matched += 1;
                }
                score += 10.0 * a as f64 + 5.0 * b as f64 + c as f64;
            }
            let hit = if all {
                matched == q.terms.len()
            } else {
                matched > 0
            };
            hit.then_some(Scored { score, page })
        })
        .collect();
    scored.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.page.meta.id.cmp(&b.page.meta.id))
    });
    scored.truncate(limit);
    scored
        .into_iter()
        .map(|s| Hit {
            snippet: snippet(&s.page.body, q),
            id: s.page.meta.id,
            title: s.page.meta.title,
            score: s.score,
            pinned: s.page.meta.pinned,
        })
        .collect()
}

fn words(text: &str) -> Vec<String> {
    token_spans(text)
        .map(|(s, e)| text[s..e].to_lowercase())
        .collect()
}

/// About a dozen words of `body` around the first match, matches in `[…]`.
fn snippet(body: &str, q: &Query) -> String {
    let spans: Vec<(usize, usize)> = token_spans(body).collect();
    let is_match = |&(s, e): &(usize, usize)| {
        let w = body[s..e].to_lowercase();
        q.terms
            .iter()
            .enumerate()
            .any(|(i, t)| w == *t || (q.is_prefix(i) && w.starts_with(t.as_str())))
    };
    if spans.is_empty() {
        return String::new();
    }
    let first = spans.iter().position(is_match).unwrap_or(0);
    let lo = first.saturating_sub(4);
    let hi = (lo + 12).min(spans.len());
    let mut out = String::new();
    if lo > 0 {
        out.push('…');
    }
    let mut pos = spans[lo].0;
    for sp in &spans[lo..hi] {
        out.push_str(&body[pos..sp.0]);
        if is_match(sp) {
            out.push('[');
            out.push_str(&body[sp.0..sp.1]);
            out.push(']');
        } else {
            out.push_str(&body[sp.0..sp.1]);
        }
        pos = sp.1;
    }
    if hi < spans.len() {
        out.push('…');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}
