//! An approver inside the process: the gate's requests wait in memory until
//! a person the front-end authenticated answers them, or they time out.
//!
//! The file queue ([`pincer_core::approvals::ApprovalQueue`]) serves a
//! person in *another* process; all it can prove about who wrote an answer
//! file is that it was a process outside the sandbox, so it records every
//! answer as `human:cli`. A front-end that authenticates its people itself
//! (the gateway's tokens, a chat channel's allowlist) needs the opposite:
//! the answer must carry the principal the front-end proved, and nobody else
//! may answer. [`ApprovalInbox`] is that approver. Its requests are not on
//! disk, so no other process can answer them; [`ApprovalInbox::answer`]
//! takes the principal as an argument, and the gate records it as the
//! approver (`gate.decision` `by`). Who may call `answer` is the
//! front-end's decision; [`crate::person::answer_inbox`] records the answer
//! in the trail before it is delivered.
//!
//! Each approval is answered at most once: an answer takes the request's
//! one reply channel under the lock. A request that times out is denied by
//! `system`, unless an answer took the channel first, in which case that
//! answer is the one the gate acts on (never silently overtaken). A request
//! whose turn is cancelled (its future dropped) disappears from the inbox.

use pincer_core::approvals::{ApprovalAnswer, ApprovalRequest, Approver, QueueError, validate_id};
use pincer_core::message::Timestamp;
use pincer_core::provider::BoxFuture;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::oneshot;

/// One call waiting for an answer: the same record the file queue keeps in
/// `ID.pending.json`, held in memory here.
pub use pincer_core::approvals::Pending as Waiting;

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboxAnswer {
    Approve,
    Deny { reason: String },
}

/// Why an answer was refused; each names the id.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error(transparent)]
    BadId(#[from] QueueError),
    #[error("no open approval `{id}`: unknown, withdrawn or already resolved")]
    Unknown { id: String },
    #[error("approval `{id}` is already answered; an approval is answered exactly once")]
    AlreadyAnswered { id: String },
    #[error("approval `{id}` expired at {expires}; the waiting agent has been told no")]
    Expired { id: String, expires: Timestamp },
}

struct Slot {
    waiting: Waiting,
    /// Taken by the one answer.
    reply: Option<oneshot::Sender<ApprovalAnswer>>,
}

/// The in-process approver; share it as `Arc<ApprovalInbox>` (it is also an
/// `Arc<dyn Approver>` for [`crate::Runtime::open_session`]).
pub struct ApprovalInbox {
    slots: Mutex<HashMap<String, Slot>>,
    timeout: Duration,
}

impl std::fmt::Debug for ApprovalInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalInbox")
            .field("waiting", &self.len())
            .field("timeout", &self.timeout)
            .finish()
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn new_id(call_hash: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut id =
        pincer_core::canonical::sha256_hex(format!("inbox:{nanos}:{n}:{call_hash}").as_bytes());
    id.truncate(pincer_core::approvals::ID_LEN);
    id
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    let ms = t
        .as_millis()
        .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    // A valid timestamp plus at most the approval timeout (the config caps
    // it at an hour): always formats and parses.
    let st = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    Timestamp::parse(&humantime::format_rfc3339_millis(st).to_string()).unwrap_or(t)
}

impl ApprovalInbox {
    /// An inbox whose requests wait at most `timeout` for an answer.
    pub fn new(timeout: Duration) -> ApprovalInbox {
        ApprovalInbox {
            slots: Mutex::new(HashMap::new()),
            timeout,
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        // A panic while holding this lock leaves a map that is still
        // consistent (every operation is a single insert/remove/take).
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many calls are waiting.
    pub fn len(&self) -> usize {
        self.slots().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The calls waiting for an answer (unanswered, unexpired), oldest
    /// first.
    pub fn list(&self) -> Vec<Waiting> {
        let now = Timestamp::now();
        let mut out: Vec<Waiting> = self
            .slots()
            .values()
            .filter(|s| s.reply.is_some() && now < s.waiting.expires)
            .map(|s| s.waiting.clone())
            .collect();
        out.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        out
    }

    /// The open approval `id`, refused exactly as [`ApprovalInbox::answer`]
    /// would refuse it.
    pub fn get(&self, id: &str) -> Result<Waiting, InboxError> {
        validate_id(id)?;
        let slots = self.slots();
        let slot = slots
            .get(id)
            .ok_or_else(|| InboxError::Unknown { id: id.to_string() })?;
        check_open(id, slot)?;
        Ok(slot.waiting.clone())
    }

    /// Answers approval `id` as `principal`, exactly once. The gate records
    /// `principal` as the approver. The caller must have authenticated
    /// `principal` and checked that it may approve.
    pub fn answer(
        &self,
        id: &str,
        principal: &str,
        answer: InboxAnswer,
    ) -> Result<Waiting, InboxError> {
        validate_id(id)?;
        let mut slots = self.slots();
        let slot = slots
            .get_mut(id)
            .ok_or_else(|| InboxError::Unknown { id: id.to_string() })?;
        check_open(id, slot)?;
        let Some(reply) = slot.reply.take() else {
            return Err(InboxError::AlreadyAnswered { id: id.to_string() });
        };
        let waiting = slot.waiting.clone();
        let answer = match answer {
            InboxAnswer::Approve => ApprovalAnswer::Approved {
                call_hash: waiting.call_hash.clone(),
                by: principal.to_string(),
            },
            InboxAnswer::Deny { reason } => ApprovalAnswer::Denied {
                by: principal.to_string(),
                reason,
            },
        };
        // The waiter removes its slot (under this lock) before it drops the
        // receiver, so a slot we found still has a live receiver.
        if reply.send(answer).is_err() {
            return Err(InboxError::Unknown { id: id.to_string() });
        }
        Ok(waiting)
    }

    fn remove(&self, id: &str) -> Option<Slot> {
        self.slots().remove(id)
    }

    fn submit(&self, req: &ApprovalRequest) -> (String, oneshot::Receiver<ApprovalAnswer>) {
        let (tx, rx) = oneshot::channel();
        let created = Timestamp::now();
        let expires = after(created, self.timeout);
        let mut slots = self.slots();
        let mut id = new_id(&req.call_hash);
        while slots.contains_key(&id) {
            id = new_id(&req.call_hash);
        }
        slots.insert(
            id.clone(),
            Slot {
                waiting: Waiting {
                    id: id.clone(),
                    call_hash: req.call_hash.clone(),
                    session: req.session.clone(),
                    call_id: req.call_id.clone(),
                    tool: req.tool.clone(),
                    arguments: req.arguments.clone(),
                    risk: req.risk,
                    why: req.why.clone(),
                    created,
                    expires,
                },
                reply: Some(tx),
            },
        );
        (id, rx)
    }
}

fn check_open(id: &str, slot: &Slot) -> Result<(), InboxError> {
    if slot.reply.is_none() {
        return Err(InboxError::AlreadyAnswered { id: id.to_string() });
    }
    if Timestamp::now() >= slot.waiting.expires {
        return Err(InboxError::Expired {
            id: id.to_string(),
            expires: slot.waiting.expires,
        });
    }
    Ok(())
}

/// Removes a request when its waiter ends, however it ends.
struct Withdraw<'a> {
    inbox: &'a ApprovalInbox,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.inbox.remove(&self.id);
    }
}

impl Approver for ApprovalInbox {
    fn approve<'a>(&'a self, req: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            let (id, mut rx) = self.submit(req);
            let withdraw = Withdraw { inbox: self, id };
            let waited = tokio::time::timeout(self.timeout, &mut rx).await;
            if let Ok(Ok(answer)) = waited {
                return answer;
            }
            // Timed out: take the slot. If an answer took the reply channel
            // first, that answer is in `rx` and is the one we use.
            let slot = self.remove(&withdraw.id);
            if slot.is_none_or(|s| s.reply.is_none())
                && let Ok(answer) = rx.try_recv()
            {
                return answer;
            }
            ApprovalAnswer::Denied {
                by: pincer_core::actor::SYSTEM.into(),
                reason: format!("no answer within {} s", self.timeout.as_secs()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pincer_core::policy::Risk;
    use std::sync::Arc;

    fn req(n: u32) -> ApprovalRequest {
        ApprovalRequest {
            call_id: format!("c{n}"),
            call_hash: format!("hash{n}"),
            session: "s".into(),
            tool: "hw_i2c_read".into(),
            arguments: serde_json::json!({"address": "0x48"}),
            risk: Risk::Medium,
            why: "reads a sensor".into(),
        }
    }

    async fn until_listed(inbox: &ApprovalInbox) -> Waiting {
        loop {
            if let Some(w) = inbox.list().into_iter().next() {
                return w;
            }
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn an_answer_carries_the_principal_and_counts_once() {
        let inbox = Arc::new(ApprovalInbox::new(Duration::from_secs(30)));
        let r = req(1);
        let waiter = {
            let inbox = inbox.clone();
            let r = r.clone();
            tokio::spawn(async move { inbox.approve(&r).await })
        };
        let w = until_listed(&inbox).await;
        assert_eq!(w.tool, "hw_i2c_read");
        inbox
            .answer(&w.id, "token:abc", InboxAnswer::Approve)
            .expect("answered");
        let again = inbox.answer(&w.id, "token:evil", InboxAnswer::Approve);
        assert!(
            matches!(
                again,
                Err(InboxError::AlreadyAnswered { .. } | InboxError::Unknown { .. })
            ),
            "{again:?}"
        );
        let answer = waiter.await.expect("join");
        assert_eq!(
            answer,
            ApprovalAnswer::Approved {
                call_hash: "hash1".into(),
                by: "token:abc".into()
            }
        );
        assert!(inbox.is_empty(), "the slot is gone once the waiter ends");
    }

    #[tokio::test]
    async fn no_answer_is_a_denial_by_system() {
        let inbox = ApprovalInbox::new(Duration::from_millis(20));
        let answer = inbox.approve(&req(2)).await;
        assert!(
            matches!(&answer, ApprovalAnswer::Denied { by, .. } if by == "system"),
            "{answer:?}"
        );
        assert!(inbox.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_waiter_withdraws_its_request() {
        let inbox = Arc::new(ApprovalInbox::new(Duration::from_secs(30)));
        let task = {
            let inbox = inbox.clone();
            tokio::spawn(async move { inbox.approve(&req(3)).await })
        };
        let w = until_listed(&inbox).await;
        task.abort();
        let _ = task.await;
        assert!(inbox.is_empty());
        assert!(matches!(
            inbox.answer(&w.id, "token:abc", InboxAnswer::Approve),
            Err(InboxError::Unknown { .. })
        ));
    }

    /// An answer that `answer` acknowledged is the one the waiter acts on,
    /// even when it races the timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_acknowledged_answer_is_never_overtaken_by_the_timeout() {
        for round in 0..200u32 {
            let inbox = Arc::new(ApprovalInbox::new(Duration::from_millis(u64::from(
                round % 3,
            ))));
            let waiter = {
                let inbox = inbox.clone();
                tokio::spawn(async move { inbox.approve(&req(round)).await })
            };
            let mut acknowledged = false;
            while !waiter.is_finished() {
                let ids: Vec<String> = inbox.slots().keys().cloned().collect();
                for id in ids {
                    acknowledged |= inbox.answer(&id, "token:t", InboxAnswer::Approve).is_ok();
                }
                tokio::task::yield_now().await;
            }
            let answer = waiter.await.expect("join");
            let approved = matches!(answer, ApprovalAnswer::Approved { .. });
            assert_eq!(approved, acknowledged, "round {round}: {answer:?}");
        }
    }

    #[test]
    fn bad_ids_are_refused_before_lookup() {
        let inbox = ApprovalInbox::new(Duration::from_secs(1));
        for id in ["", "../../etc", "ABCDEF0123", "0123456789a"] {
            assert!(matches!(
                inbox.answer(id, "token:x", InboxAnswer::Approve),
                Err(InboxError::BadId(_))
            ));
        }
    }

    #[test]
    fn timestamps_format_as_rfc3339() {
        let t = Timestamp::parse("2026-11-30T11:43:45.123Z").expect("ts");
        assert_eq!(
            after(t, Duration::from_secs(3600)).to_string(),
            "2026-11-30T12:43:45.123Z"
        );
        assert_eq!(
            after(t, Duration::from_secs(40 * 86_400)).to_string(),
            "2027-01-09T11:43:45.123Z"
        );
    }
}
