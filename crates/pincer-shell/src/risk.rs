//! The classifier's answer. pincer's policy has its own `Risk` with the same
//! three classes; this crate is a leaf and knows nothing of it, so the shell
//! tool maps one to the other (the names and their order are the same).

/// How risky a command is: low (provably read-only), medium (writes in the
/// workspace), high (anything else, and anything not understood).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}
