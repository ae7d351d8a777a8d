use pincer_core::approvals::{ApprovalAnswer, ApprovalRequest, Approver};
use pincer_core::provider::BoxFuture;
use std::sync::{Arc, Mutex};

/// Answers every request yes or no, as `by`, and records what it was
/// asked. A yes carries the hash of the call it was shown unless
/// [`Answer::forging`] replaces it (an approval for another call).
#[derive(Debug)]
pub struct Answer {
    approve: bool,
    by: String,
    forge: Option<String>,
    reason: String,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Answer {
    pub fn yes() -> Arc<Answer> {
        Arc::new(Answer::new(true))
    }

    pub fn no() -> Arc<Answer> {
        Arc::new(Answer::new(false))
    }

    pub fn new(approve: bool) -> Answer {
        Answer {
            approve,
            by: "human:test".into(),
            forge: None,
            reason: "no thanks".into(),
            asked: Mutex::new(Vec::new()),
        }
    }

    /// Answers as `by`.
    pub fn by(mut self, by: &str) -> Answer {
        self.by = by.into();
        self
    }

    /// Approves with this hash instead of the call's.
    pub fn forging(mut self, hash: &str) -> Answer {
        self.forge = Some(hash.into());
        self
    }

    /// Every request it was asked, in order.
    pub fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }

    /// The tools it was asked about, in order.
    pub fn asked_tools(&self) -> Vec<String> {
        self.asked().into_iter().map(|r| r.tool).collect()
    }
}

impl Approver for Answer {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        self.asked.lock().unwrap().push(req.clone());
        let a = if self.approve {
            ApprovalAnswer::Approved {
                call_hash: self.forge.clone().unwrap_or_else(|| req.call_hash.clone()),
                by: self.by.clone(),
            }
        } else {
            ApprovalAnswer::Denied {
                by: self.by.clone(),
                reason: self.reason.clone(),
            }
        };
        Box::pin(async move { a })
    }
}

/// Never answers: the gate's timeout must decide.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Approver for Silent {
    fn approve<'a>(&'a self, _req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(std::future::pending())
    }
}
