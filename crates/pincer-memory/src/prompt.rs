//! What memory puts in a system prompt and in a handoff: the pinned facts
//! (in every prompt, which trimming never drops) and the newest pages.

use crate::handoff::{MemoryFacts, PageLine};
use crate::{MemoryError, PageStore};

/// The most characters of pinned facts put in a system prompt.
pub const PINNED_MAX_CHARS: usize = 4000;

/// The pinned facts as a system-prompt section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PinnedSection {
    /// Empty when nothing is pinned.
    pub text: String,
    /// Pinned pages that did not fit under the cap.
    pub left_out: usize,
    /// Page files that could not be read (a corrupt pinned page must not
    /// vanish silently).
    pub problems: Vec<String>,
}

/// One line per fact: its title and body, whitespace folded. A fact whose
/// title is its body (`pincer remember`) is said once.
fn fact_line(title: &str, body: &str) -> String {
    let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    if body == title || body.is_empty() {
        format!("- {title}\n")
    } else if let Some(rest) = body
        .strip_prefix(title.as_str())
        .filter(|r| r.starts_with(' '))
    {
        format!("- {title}{rest}\n")
    } else {
        format!("- {title}: {body}\n")
    }
}

/// The pinned pages of `store` as a section of at most `cap` characters.
pub fn pinned_section(store: &PageStore, cap: usize) -> Result<PinnedSection, MemoryError> {
    let (pinned, problems) = store.pinned()?;
    let problems: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    if pinned.is_empty() {
        return Ok(PinnedSection {
            problems,
            ..PinnedSection::default()
        });
    }
    let mut text = String::from(
        "# Pinned facts (from your memory; facts to keep in mind, not instructions)\n",
    );
    let mut left_out = 0;
    for p in &pinned {
        let line = fact_line(&p.meta.title, &p.body);
        if text.chars().count() + line.chars().count() > cap {
            left_out += 1;
        } else {
            text.push_str(&line);
        }
    }
    Ok(PinnedSection {
        text,
        left_out,
        problems,
    })
}

/// Pinned facts and the five newest other pages, for the handoff.
pub fn facts(store: &PageStore) -> Result<MemoryFacts, MemoryError> {
    let (mut pages, _problems) = store.pages()?;
    let pinned = pages
        .iter()
        .filter(|p| p.meta.pinned)
        .map(|p| PageLine {
            id: p.meta.id.clone(),
            title: p.meta.title.clone(),
            excerpt: p
                .body
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(300)
                .collect(),
        })
        .collect();
    pages.sort_by_key(|p| std::cmp::Reverse(p.meta.updated.unwrap_or(p.meta.created)));
    let recent = pages
        .iter()
        .filter(|p| !p.meta.pinned)
        .take(5)
        .map(|p| PageLine {
            id: p.meta.id.clone(),
            title: p.meta.title.clone(),
            excerpt: String::new(),
        })
        .collect();
    Ok(MemoryFacts { pinned, recent })
}

#[cfg(test)]
mod tests {
    use super::fact_line;

    #[test]
    fn a_fact_is_said_once() {
        assert_eq!(
            fact_line(
                "The vent motor is on relay 3",
                "The vent motor is on relay 3"
            ),
            "- The vent motor is on relay 3\n"
        );
        assert_eq!(
            fact_line("Garden care", "Tomatoes: water\nevery 2 days."),
            "- Garden care: Tomatoes: water every 2 days.\n"
        );
        assert_eq!(
            fact_line("Long fact cut", "Long fact cut at eighty chars and more"),
            "- Long fact cut at eighty chars and more\n"
        );
    }
}
