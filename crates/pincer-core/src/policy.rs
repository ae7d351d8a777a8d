//! The policy vocabulary: how risky an operation is ([`Risk`]), how much the
//! agent may do on its own ([`Autonomy`]), and the decision table that
//! combines them ([`decide_for`]). The gate applies it; tools declare a
//! risk; config names an autonomy level. Nothing here does I/O.

use serde::{Deserialize, Serialize};

/// Risk class of one tool operation (PO2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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

/// How much the agent may do on its own (PO1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Autonomy {
    /// Only low-risk operations.
    Readonly,
    /// Medium and high risk need a person's approval.
    #[default]
    Supervised,
    /// Everything (a deny list, when the gate lands, still applies).
    Full,
}

impl Autonomy {
    pub fn as_str(self) -> &'static str {
        match self {
            Autonomy::Readonly => "readonly",
            Autonomy::Supervised => "supervised",
            Autonomy::Full => "full",
        }
    }
}

/// What the decision table says about one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// A person must approve this exact call first; no answer is a denial.
    NeedsApproval,
    /// Refused outright; the reason goes back to the model as the result.
    Block(String),
}

/// PO3: `readonly` blocks everything above low; `supervised` needs an
/// approval for medium and high; `full` allows all. (The deny list is
/// applied before this table, at every level.)
pub fn decide(autonomy: Autonomy, risk: Risk) -> Decision {
    decide_for(autonomy, risk, false)
}

/// [`decide`], and PO3's rule that `readonly` blocks *all* hardware, even a
/// low-risk bus scan.
pub fn decide_for(autonomy: Autonomy, risk: Risk, hardware: bool) -> Decision {
    if hardware && autonomy == Autonomy::Readonly {
        return Decision::Block(
            "autonomy is readonly, which blocks all hardware operations, reads and scans included"
                .into(),
        );
    }
    match (autonomy, risk) {
        (_, Risk::Low) | (Autonomy::Full, _) => Decision::Allow,
        (Autonomy::Supervised, _) => Decision::NeedsApproval,
        (Autonomy::Readonly, r) => Decision::Block(format!(
            "autonomy is readonly, which allows only low-risk operations; this one is {} risk",
            r.as_str()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_table() {
        use Autonomy::*;
        let table = [
            (Readonly, Risk::Low, "allow"),
            (Readonly, Risk::Medium, "block"),
            (Readonly, Risk::High, "block"),
            (Supervised, Risk::Low, "allow"),
            (Supervised, Risk::Medium, "ask"),
            (Supervised, Risk::High, "ask"),
            (Full, Risk::Low, "allow"),
            (Full, Risk::Medium, "allow"),
            (Full, Risk::High, "allow"),
        ];
        for (autonomy, risk, want) in table {
            let got = match decide(autonomy, risk) {
                Decision::Allow => "allow",
                Decision::NeedsApproval => "ask",
                Decision::Block(reason) => {
                    assert!(reason.contains(risk.as_str()), "{reason}");
                    "block"
                }
            };
            assert_eq!(got, want, "{autonomy:?} × {risk:?}");
        }
    }
}
