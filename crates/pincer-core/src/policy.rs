//! The decision table of autonomy × risk (DESIGN PO1, PO3).
//!
//! This is the table the full policy gate (deny list, hooks, audit trail)
//! will be built around; today the agent loop consults it for every tool
//! call before anything runs. Nothing a tool returns can change the autonomy
//! level: it is fixed when the agent is built (PO5, tool output is data).

use crate::config::Autonomy;
use crate::tool::Risk;

/// What the gate says about one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// A person must approve this exact call first; no answer is a denial.
    NeedsApproval,
    /// Refused outright; the reason goes back to the model as the result.
    Block(String),
}

/// PO3: `readonly` blocks everything above low; `supervised` needs an
/// approval for medium and high; `full` allows all.
pub fn decide(autonomy: Autonomy, risk: Risk) -> Decision {
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
        use Decision::*;
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
                Allow => "allow",
                NeedsApproval => "ask",
                Block(reason) => {
                    assert!(reason.contains(risk.as_str()), "{reason}");
                    "block"
                }
            };
            assert_eq!(got, want, "{autonomy:?} × {risk:?}");
        }
    }
}
