//! The routes' handlers. Each is thin: parse and check the input (a bad
//! field is a `400` naming it), call the runtime or a store, answer JSON.
//! What a person does is done through `pincer_runtime::person`, recorded
//! under the caller's principal (`token:ID`).

// A handler's error is the response it answers with, built once per
// request: boxing it would buy nothing.
#![allow(clippy::result_large_err)]

use crate::State;
use crate::chat::{self, ChatError};
use crate::http::{ApproverCaller, Caller, error, internal, parse_json, peer, too_many};
use crate::pairing::RedeemError;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pincer_core::audit::schema::GatewayPair;
use pincer_runtime::inbox::InboxAnswer;
use pincer_runtime::person::{self, PersonError};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

type St = axum::extract::State<Arc<State>>;

fn ok(v: Value) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        v.to_string(),
    )
        .into_response()
}

/// Runs blocking work (file and SQLite I/O) off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Response> + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(internal(format!("the request's work failed: {e}"))))
}

pub(crate) async fn health() -> Response {
    ok(json!({"ok": true}))
}

pub(crate) async fn manifest(axum::extract::State(st): St) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        st.manifest.clone(),
    )
        .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairBody {
    code: String,
}

/// `POST /pair {"code"}` → `{"token", "id", "role"}`. Every refusal of a
/// code is the same `401`: which of wrong, used or expired it was is not
/// told. Locked or over the rate: `429`.
pub(crate) async fn pair(axum::extract::State(st): St, req: Request) -> Response {
    let from = peer(&req).ip();
    let body = match axum::body::to_bytes(req.into_body(), st.limits.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            );
        }
    };
    if let Err(l) = st.pair_limit.check(&from) {
        st.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        return too_many("too many pairing attempts from this address", l.retry_after);
    }
    let attempt = match st.lockout.begin(from) {
        Ok(a) => a,
        Err(locked) => {
            st.metrics.pairing_locked.fetch_add(1, Ordering::Relaxed);
            return too_many(
                "pairing is locked after too many failed attempts",
                locked.retry_after,
            );
        }
    };
    let body: PairBody = match parse_json(&body) {
        Ok(b) => b,
        Err(r) => {
            attempt.failed();
            st.metrics.pairing_failures.fetch_add(1, Ordering::Relaxed);
            return r;
        }
    };
    let codes = st.codes.clone();
    let code = body.code.trim().to_string();
    let redeemed = tokio::task::spawn_blocking(move || codes.redeem(&code)).await;
    let role = match redeemed {
        Ok(Ok(role)) => role,
        Ok(Err(RedeemError::Store(e))) => {
            attempt.failed();
            tracing::error!(error = %e, "pairing: the code store failed");
            return internal(e);
        }
        Ok(Err(why)) => {
            attempt.failed();
            st.metrics.pairing_failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%from, %why, "pairing refused");
            return error(StatusCode::UNAUTHORIZED, "invalid or expired pairing code");
        }
        Err(e) => {
            attempt.failed();
            return internal(e);
        }
    };
    attempt.succeeded();
    let issued = match st.tokens.issue(role, &from.to_string()) {
        Ok(i) => i,
        Err(e) => return internal(e),
    };
    let principal = issued.record.principal();
    if let Err(e) = st.runtime.audit().record(
        &principal,
        &GatewayPair {
            token: issued.record.id.clone(),
            role: role.as_str().to_string(),
            from: from.to_string(),
        },
    ) {
        // No token that the trail does not record.
        let _ = st.tokens.revoke(&issued.record.id);
        return internal(format!("the audit trail refused the pairing: {e}"));
    }
    st.metrics.pairings.fetch_add(1, Ordering::Relaxed);
    tracing::info!(%from, token = %issued.record.id, role = role.as_str(), "paired");
    ok(json!({
        "token": issued.token,
        "id": issued.record.id,
        "role": role.as_str(),
    }))
}

pub(crate) async fn whoami(caller: Caller) -> Response {
    ok(json!({
        "id": caller.record.id,
        "role": caller.record.role.as_str(),
        "principal": caller.principal(),
        "created": caller.record.created,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatBody {
    #[serde(default)]
    session: Option<String>,
    message: String,
}

fn chat_error(e: &ChatError) -> Response {
    error(e.status(), e.to_string())
}

/// `POST /api/chat {"session"?, "message"}`: one turn, answered when it
/// ends with the reply and every event.
pub(crate) async fn chat(axum::extract::State(st): St, _caller: Caller, body: Bytes) -> Response {
    let body: ChatBody = match parse_json(&body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let key = body
        .session
        .unwrap_or_else(|| chat::DEFAULT_SESSION.to_string());
    let events = std::sync::Mutex::new(Vec::new());
    let sink = |e: pincer_core::agent::AgentEvent| {
        if let Ok(v) = serde_json::to_value(&e) {
            events.lock().unwrap_or_else(|p| p.into_inner()).push(v);
        }
    };
    match chat::run_turn(&st, &key, &body.message, &sink).await {
        Ok(outcome) => ok(json!({
            "session": key,
            "reply": outcome.reply,
            "iterations": outcome.iterations,
            "stop": outcome.stop,
            "events": events.into_inner().unwrap_or_else(|p| p.into_inner()),
        })),
        Err(e) => chat_error(&e),
    }
}

pub(crate) async fn sessions(axum::extract::State(st): St, _caller: Caller) -> Response {
    let store = st.runtime.store().clone();
    match blocking(move || store.list().map_err(internal)).await {
        Ok(list) => ok(json!({ "sessions": list })),
        Err(r) => r,
    }
}

pub(crate) async fn session(
    axum::extract::State(st): St,
    _caller: Caller,
    Path(key): Path<String>,
) -> Response {
    if let Err(e) = pincer_core::session::validate_key(&key) {
        return error(StatusCode::BAD_REQUEST, format!("session key: {e}"));
    }
    let store = st.runtime.store().clone();
    let r = blocking(move || match store.exists(&key) {
        Ok(false) => Err(error(StatusCode::NOT_FOUND, format!("no session `{key}`"))),
        Ok(true) => store.read(&key).map_err(internal),
        Err(e) => Err(internal(e)),
    })
    .await;
    match r {
        Ok(view) => {
            let (_, repair) = view.context();
            ok(json!({
                "key": view.key,
                "stats": view.stats,
                "summary": view.meta.summary,
                "repair_on_load": {
                    "synthetic_results": repair.synthetic_results,
                    "removed_orphan_results": repair.removed_orphan_results,
                },
                "messages": view.messages,
            }))
        }
        Err(r) => r,
    }
}

pub(crate) async fn approvals(axum::extract::State(st): St, _caller: Caller) -> Response {
    ok(json!({ "pending": st.inbox.list() }))
}

fn answer(st: &State, caller: &Caller, id: &str, answer: InboxAnswer) -> Response {
    let word = match &answer {
        InboxAnswer::Approve => "approved",
        InboxAnswer::Deny { .. } => "denied",
    };
    match person::answer_inbox(
        st.runtime.audit(),
        &st.inbox,
        &caller.principal(),
        id,
        answer,
    ) {
        Ok(w) => ok(json!({ "answer": word, "by": caller.principal(), "approval": w })),
        Err(PersonError::Inbox(e)) => {
            use pincer_runtime::inbox::InboxError as E;
            let status = match e {
                E::BadId(_) => StatusCode::BAD_REQUEST,
                E::Unknown { .. } => StatusCode::NOT_FOUND,
                E::AlreadyAnswered { .. } | E::Expired { .. } => StatusCode::CONFLICT,
            };
            error(status, e.to_string())
        }
        Err(e) => internal(e),
    }
}

/// `POST /api/approvals/{id}/approve`: approver tokens only.
pub(crate) async fn approve(
    axum::extract::State(st): St,
    ApproverCaller(caller): ApproverCaller,
    Path(id): Path<String>,
) -> Response {
    answer(&st, &caller, &id, InboxAnswer::Approve)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DenyBody {
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /api/approvals/{id}/deny {"reason"?}`: approver tokens only.
pub(crate) async fn deny(
    axum::extract::State(st): St,
    ApproverCaller(caller): ApproverCaller,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let reason = if body.is_empty() {
        None
    } else {
        match parse_json::<DenyBody>(&body) {
            Ok(b) => b.reason,
            Err(r) => return r,
        }
    };
    let reason = reason
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "denied in the web UI".to_string());
    if reason.chars().count() > 1000 {
        return error(
            StatusCode::BAD_REQUEST,
            "field `reason`: longer than 1000 characters",
        );
    }
    answer(&st, &caller, &id, InboxAnswer::Deny { reason })
}

fn query_u64(
    q: &HashMap<String, String>,
    name: &'static str,
    max: u64,
) -> Result<Option<u64>, Response> {
    match q.get(name) {
        None => Ok(None),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n <= max => Ok(Some(n)),
            _ => Err(error(
                StatusCode::BAD_REQUEST,
                format!(
                    "query `{name}`: `{}` is not a whole number up to {max}",
                    v.escape_debug()
                ),
            )),
        },
    }
}

/// `GET /api/audit?limit=N&before=SEQ&kind=K`: a page of entries, newest
/// last, and the `before` of the next (older) page.
pub(crate) async fn audit_log(
    axum::extract::State(st): St,
    _caller: Caller,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let limit = match query_u64(&q, "limit", 500) {
        Ok(l) => l.unwrap_or(50).max(1),
        Err(r) => return r,
    };
    let before = match query_u64(&q, "before", u64::MAX) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let kind = q.get("kind").cloned().filter(|k| !k.is_empty());
    if let Some(k) = &kind
        && !pincer_core::audit::is_known_kind(k)
    {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "query `kind`: `{}` is no kind pincer writes",
                k.escape_debug()
            ),
        );
    }
    for k in q.keys() {
        if !matches!(k.as_str(), "limit" | "before" | "kind") {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "query `{}`: unknown (limit, before, kind)",
                    k.escape_debug()
                ),
            );
        }
    }
    let audit = st.runtime.audit().clone();
    let r = blocking(move || {
        let entries = match before {
            None => audit.log(Some(usize::try_from(limit).unwrap_or(50)), kind.as_deref()),
            Some(b) => {
                // Entries below `before`, newest `limit` of the kind.
                let from =
                    b.saturating_sub(limit.saturating_mul(if kind.is_some() { 20 } else { 1 }));
                audit
                    .entries_between(from.max(1), b.saturating_sub(1))
                    .map(|all| {
                        let mut v: Vec<_> = all
                            .into_iter()
                            .filter(|e| kind.as_deref().is_none_or(|k| e.kind_matches(k)))
                            .collect();
                        let cut = v.len().saturating_sub(usize::try_from(limit).unwrap_or(50));
                        v.drain(..cut);
                        v
                    })
            }
        };
        entries.map_err(internal)
    })
    .await;
    match r {
        Ok(entries) => {
            let next = entries.first().map(|e| e.seq).filter(|s| *s > 1);
            ok(json!({ "entries": entries, "next_before": next }))
        }
        Err(r) => r,
    }
}

/// `GET /api/audit/verify`: the whole chain walked.
pub(crate) async fn audit_verify(axum::extract::State(st): St, _caller: Caller) -> Response {
    let audit = st.runtime.audit().clone();
    match blocking(move || audit.verify().map_err(internal)).await {
        Ok(report) => ok(json!({
            "intact": report.defect.is_none(),
            "report": report,
        })),
        Err(r) => r,
    }
}

/// `GET /api/memory/search?q=…&limit=N`.
pub(crate) async fn memory_search(
    axum::extract::State(st): St,
    _caller: Caller,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let Some(query) = q
        .get("q")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "query `q`: missing or empty; what to search for",
        );
    };
    if query.chars().count() > 1000 {
        return error(
            StatusCode::BAD_REQUEST,
            "query `q`: longer than 1000 characters",
        );
    }
    let limit = match query_u64(&q, "limit", 100) {
        Ok(l) => usize::try_from(l.unwrap_or(10).max(1)).unwrap_or(10),
        Err(r) => return r,
    };
    let dir = st.runtime.home().memory_dir();
    let r = blocking(move || {
        let mut index = pincer_memory::MemoryIndex::open(dir).map_err(internal)?;
        index.search(&query, limit).map_err(|e| match e {
            pincer_memory::MemoryError::Invalid { .. } => {
                error(StatusCode::BAD_REQUEST, e.to_string())
            }
            e => internal(e),
        })
    })
    .await;
    match r {
        Ok(result) => ok(serde_json::to_value(result).unwrap_or_default()),
        Err(r) => r,
    }
}

/// `GET /api/hardware`: the board, recorded like `pincer hw info`.
pub(crate) async fn hardware(axum::extract::State(st): St, caller: Caller) -> Response {
    let st2 = st.clone();
    let r = blocking(move || {
        let hw = st2.runtime.hardware();
        person::record_hw_info(st2.runtime.audit(), &caller.principal(), hw).map_err(internal)?;
        Ok(hw.info())
    })
    .await;
    match r {
        Ok(info) => ok(info),
        Err(r) => r,
    }
}

/// `GET /api/hardware/gpio`: every GPIO pin's level, recorded.
pub(crate) async fn gpio(axum::extract::State(st): St, caller: Caller) -> Response {
    let st2 = st.clone();
    let r = blocking(move || {
        person::gpio_snapshot(
            st2.runtime.audit(),
            st2.runtime.hardware(),
            &caller.principal(),
        )
        .map_err(internal)
    })
    .await;
    match r {
        Ok(levels) => ok(json!({
            "board": st.runtime.hardware().board().name,
            "pins": levels,
        })),
        Err(r) => r,
    }
}

/// `GET /api/status`: what `pincer status --json` prints.
pub(crate) async fn status(axum::extract::State(st): St, _caller: Caller) -> Response {
    let rt = &st.runtime;
    let report = pincer_runtime::status::report(
        rt.home(),
        rt.settings(),
        rt.env(),
        pincer_runtime::status::Depth::Quick,
    )
    .await;
    ok(report.status())
}

/// `GET /metrics`: the Prometheus text format.
pub(crate) async fn metrics(axum::extract::State(st): St, _caller: Caller) -> Response {
    let audit = st.runtime.audit().clone();
    let last = tokio::task::spawn_blocking(move || audit.log(Some(1), None))
        .await
        .ok()
        .and_then(Result::ok)
        .map(|v| v.last().map_or(0, |e| e.seq));
    let text = st.metrics.render(crate::metrics::Gauges {
        approvals_pending: st.inbox.len(),
        audit_entries: last,
        sessions_open: st.sessions.len(),
        pairing_locked_now: st.lockout.locked_for_all(),
    });
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}
