//! The strategies a run compares, by the names the command line and the
//! reports use.

use crate::error::BenchError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Strategy {
    LegacyOldest,
    LegacyNewest,
    Seahorse,
    SeahorsePorter,
    Trim,
    TrimSummary,
    TrimMemory,
    Recall,
    RecallNoWindow,
    RecallNoRecent,
}

impl Strategy {
    /// Every strategy, in report order.
    pub const ALL: [Strategy; 10] = [
        Self::LegacyOldest,
        Self::LegacyNewest,
        Self::Seahorse,
        Self::SeahorsePorter,
        Self::Trim,
        Self::TrimSummary,
        Self::TrimMemory,
        Self::Recall,
        Self::RecallNoWindow,
        Self::RecallNoRecent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::LegacyOldest => "picoclaw-legacy-oldest",
            Self::LegacyNewest => "picoclaw-legacy-newest",
            Self::Seahorse => "picoclaw-seahorse",
            Self::SeahorsePorter => "picoclaw-seahorse-porter",
            Self::Trim => "pincer-trim",
            Self::TrimSummary => "pincer-trim-summary",
            Self::TrimMemory => "pincer-trim-memory",
            Self::Recall => "pincer-recall",
            Self::RecallNoWindow => "pincer-recall-no-window",
            Self::RecallNoRecent => "pincer-recall-no-recent",
        }
    }

    /// One line for the report.
    pub fn description(self) -> &'static str {
        match self {
            Self::LegacyOldest => {
                "PicoClaw's default store as its merged code does it: the oldest turns that fit"
            }
            Self::LegacyNewest => {
                "PicoClaw's default store as its published table shows it: the newest turns that fit"
            }
            Self::Seahorse => {
                "PicoClaw's Seahorse: per-keyword FTS5 trigram search, bm25, LIKE fallback, best rank first"
            }
            Self::SeahorsePorter => {
                "the Seahorse algorithm with pincer's tokenizer (porter unicode61) instead of trigram"
            }
            Self::Trim => {
                "pincer's trimmer as it is: the newest turns within the budget, no summary"
            }
            Self::TrimSummary => {
                "pincer's trimmer with its running summary of dropped turns (summary_max_chars 4000)"
            }
            Self::TrimMemory => {
                "half the budget trimmed recent turns; dropped turns as memory pages; memory_search(question, 20)"
            }
            Self::Recall => {
                "a quarter recent turns; memory pages searched per keyword, scores summed, hits with 2 turns either side, session dates"
            }
            Self::RecallNoWindow => "pincer-recall without the neighbouring turns",
            Self::RecallNoRecent => {
                "pincer-recall with the whole budget for memory, no recent turns"
            }
        }
    }

    /// True for PicoClaw's strategies.
    pub fn is_picoclaw(self) -> bool {
        matches!(
            self,
            Self::LegacyOldest | Self::LegacyNewest | Self::Seahorse | Self::SeahorsePorter
        )
    }

    pub fn parse(name: &str) -> Result<Self, BenchError> {
        Self::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| BenchError::Invalid {
                field: "strategy",
                reason: format!(
                    "`{}` is not one of: {}",
                    name.escape_debug(),
                    Self::ALL.map(Self::name).join(", ")
                ),
            })
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
