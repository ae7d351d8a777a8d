//! The policy gate (DESIGN PO1–PO5, HK1): the one place a tool call is
//! decided, approved, run and audited.
//!
//! Skeleton: the shared types first; the `Gate` itself follows.

pub mod shell;

use crate::provider::BoxFuture;
use crate::tool::Risk;
use serde::Serialize;

/// One call waiting for a person's yes or no (PO4). `call_hash` binds an
/// answer to this exact call: tool, arguments, call id and session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub call_hash: String,
    pub session: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub risk: Risk,
    /// Why the gate assigned this risk (e.g. the shell part that decided it).
    pub why: String,
}

/// A person's (or an approval hook's) answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Approves the call whose hash is `call_hash`; the gate refuses an
    /// approval whose hash is not the one it asked about.
    Approved {
        call_hash: String,
        by: String,
    },
    Denied {
        by: String,
        reason: String,
    },
}

/// Asks a person (terminal prompt, approval queue, chat button, hook).
pub trait Approver: Send + Sync {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer>;
}

/// An approver with nobody behind it: every request is denied, saying why.
#[derive(Debug, Clone)]
pub struct DenyAll(pub String);

impl Approver for DenyAll {
    fn approve<'a>(&'a self, _req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            ApprovalAnswer::Denied {
                by: "system".into(),
                reason: self.0.clone(),
            }
        })
    }
}

/// Matches `name` against a glob where `*` is any run of characters
/// (including none) and `?` is exactly one; everything else is literal.
/// Used for hook tool filters and deny lists.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Greedy with backtracking to the last `*`: linear in practice.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod glob_tests {
    use super::glob_match;

    #[test]
    fn glob_table() {
        for (p, n, want) in [
            ("shell", "shell", true),
            ("shell", "shells", false),
            ("file_*", "file_write", true),
            ("file_*", "file_", true),
            ("file_*", "fil", false),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("i2c_?ead", "i2c_read", true),
            ("*_write", "gpio_write", true),
            ("*_write", "gpio_writer", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("mkfs*", "mkfs.ext4", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} vs {n}");
        }
    }
}
