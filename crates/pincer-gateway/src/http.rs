//! The checks every request passes, in order, and the router.
//!
//! 1. `Host` must name this gateway (its bind address, `localhost` for a
//!    loopback bind, or a configured origin's host): a page on another
//!    site that rebinds its DNS name to 127.0.0.1 still sends its own name
//!    and is refused (unless the bind address is unspecified, `0.0.0.0`,
//!    where any name is accepted).
//! 2. `Origin`, when a browser sends one, must be this gateway's own
//!    (`http://` + the request's `Host`) or a configured origin: no
//!    cross-site request — and no cross-site WebSocket — gets through. No
//!    CORS headers are ever sent, so a browser never lets another site read
//!    an answer either.
//! 3. Every path but the public few (the UI's files, `/health`,
//!    `/pair`, `/.well-known/*`) needs a paired token (`Authorization:
//!    Bearer TOKEN`; for `/ws` also the subprotocol `bearer.TOKEN`): deny
//!    by default, so `/api/*`, `/metrics`, `/ws` and any path nobody
//!    thought of are covered however they are spelt. A missing, malformed,
//!    unknown or revoked token gets the same `401` with the same body, on
//!    every such path, existing or not: nothing about the API is learnt
//!    without a token. There is no exemption for loopback clients: behind
//!    a reverse proxy every client is local.
//! 4. Per-token rate limit (`429` with `Retry-After`).
//!
//! Bodies are capped (`413`). Every response carries the security headers
//! (`nosniff`, no framing, no referrer, a strict Content-Security-Policy,
//! `no-store`).

// A handler's error is the response it answers with, built once per
// request: boxing it would buy nothing.
#![allow(clippy::result_large_err)]

use crate::State;
use crate::tokens::{Role, TokenRecord};
use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequestParts, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A JSON error response.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({ "error": message.into() }).to_string();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// `429` with `Retry-After` in whole seconds (at least 1).
pub(crate) fn too_many(what: &str, retry_after: Duration) -> Response {
    let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    let secs = secs.max(1);
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        format!("{what}: try again in {secs} s"),
    );
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// The one answer to a request without a valid token.
fn unauthorized() -> Response {
    let mut r = error(StatusCode::UNAUTHORIZED, "unauthorized");
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"pincer\""),
    );
    r
}

/// The authenticated caller, put in the request by [`require_token`].
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub record: TokenRecord,
}

impl Caller {
    pub fn principal(&self) -> String {
        self.record.principal()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        // Only routes behind `require_token` use this extractor; a missing
        // caller there would be a routing mistake, answered as unauthorized.
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(unauthorized)
    }
}

/// A caller whose token has the approver role.
#[derive(Debug, Clone)]
pub(crate) struct ApproverCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for ApproverCaller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, Self::Rejection> {
        let c = Caller::from_request_parts(parts, s).await?;
        if c.record.role != Role::Approver {
            if let Some(st) = parts.extensions.get::<Arc<State>>() {
                st.metrics.forbidden.fetch_add(1, Ordering::Relaxed);
            }
            return Err(error(
                StatusCode::FORBIDDEN,
                format!(
                    "token {} has the role `{}`, which may not answer approvals; pair a device with an approver code (`pincer pair --approver`)",
                    c.record.id,
                    c.record.role.as_str()
                ),
            ));
        }
        Ok(ApproverCaller(c))
    }
}

/// The token a request presents: the bearer header, or for `/ws` a
/// `bearer.TOKEN` subprotocol.
fn presented(headers: &HeaderMap, allow_subprotocol: bool) -> Option<String> {
    if let Some(v) = headers.get(header::AUTHORIZATION) {
        let v = v.to_str().ok()?;
        let (scheme, token) = v.split_once(' ')?;
        return scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_string());
    }
    if !allow_subprotocol {
        return None;
    }
    let protos = headers.get(header::SEC_WEBSOCKET_PROTOCOL)?.to_str().ok()?;
    protos
        .split(',')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("bearer."))
        .map(str::to_string)
}

pub(crate) fn peer(req: &Request) -> SocketAddr {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)), |c| c.0)
}

/// The paths anyone may ask for.
fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/" | "/app.js" | "/app.css" | "/favicon.ico" | "/health" | "/pair"
    ) || path.starts_with("/.well-known/")
}

/// Step 3 and 4: the token, then its rate limit.
async fn require_token(
    axum::extract::State(st): axum::extract::State<Arc<State>>,
    mut req: Request,
    next: Next,
) -> Response {
    if is_public(req.uri().path()) {
        return next.run(req).await;
    }
    let is_ws = req.uri().path() == "/ws";
    let record = presented(req.headers(), is_ws).and_then(|t| st.tokens.verify(&t));
    let Some(record) = record else {
        st.metrics.unauthorized.fetch_add(1, Ordering::Relaxed);
        return unauthorized();
    };
    if let Err(l) = st.api_limit.check(&record.id) {
        st.metrics.rate_limited.fetch_add(1, Ordering::Relaxed);
        return too_many("rate limit for this token", l.retry_after);
    }
    req.extensions_mut().insert(Caller { record });
    req.extensions_mut().insert(st.clone());
    next.run(req).await
}

/// The host part of an `Origin` value, if it is `http://HOST`.
fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .to_ascii_lowercase()
        .strip_prefix("http://")
        .is_some_and(|h| h == host.to_ascii_lowercase())
}

/// Steps 1 and 2, and the headers every response carries.
async fn guard(
    axum::extract::State(st): axum::extract::State<Arc<State>>,
    req: Request,
    next: Next,
) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let refused = if host.is_empty() {
        Some("a request without a Host header")
    } else if st
        .hosts
        .as_ref()
        .is_some_and(|hosts| !hosts.contains(&host))
    {
        Some("Host is not this gateway's address")
    } else if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("null").trim_end_matches('/');
        let allowed =
            same_origin(origin, &host) || st.origins.iter().any(|o| o.eq_ignore_ascii_case(origin));
        (!allowed).then_some("cross-origin requests are refused")
    } else {
        None
    };
    let mut resp = match refused {
        Some(why) => {
            st.metrics.forbidden.fetch_add(1, Ordering::Relaxed);
            error(StatusCode::FORBIDDEN, why)
        }
        None => next.run(req).await,
    };
    let h = resp.headers_mut();
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        (
            "permissions-policy",
            "camera=(), microphone=(), geolocation=(), usb=(), serial=()",
        ),
        (
            "content-security-policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    resp
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such route")
}

/// Every route behind its checks.
pub(crate) fn router(st: Arc<State>) -> Router {
    let api = Router::new()
        .route("/whoami", get(crate::api::whoami))
        .route("/chat", post(crate::api::chat))
        .route("/sessions", get(crate::api::sessions))
        .route("/sessions/{key}", get(crate::api::session))
        .route("/approvals", get(crate::api::approvals))
        .route("/approvals/{id}/approve", post(crate::api::approve))
        .route("/approvals/{id}/deny", post(crate::api::deny))
        .route("/audit", get(crate::api::audit_log))
        .route("/audit/verify", get(crate::api::audit_verify))
        .route("/memory/search", get(crate::api::memory_search))
        .route("/hardware", get(crate::api::hardware))
        .route("/hardware/gpio", get(crate::api::gpio))
        .route("/status", get(crate::api::status));
    Router::new()
        .route("/", get(crate::ui::index))
        .route("/app.js", get(crate::ui::script))
        .route("/app.css", get(crate::ui::style))
        .route("/favicon.ico", get(crate::ui::favicon))
        .route("/health", get(crate::api::health))
        .route("/pair", post(crate::api::pair))
        .route("/.well-known/asap/manifest.json", get(crate::api::manifest))
        .route("/metrics", get(crate::api::metrics))
        .route("/ws", get(crate::ws::upgrade))
        .nest("/api", api)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(st.clone(), require_token))
        .layer(DefaultBodyLimit::max(st.limits.max_body_bytes))
        .layer(middleware::from_fn_with_state(st.clone(), guard))
        .with_state(st)
}

/// A body that is JSON, read with every bad field named.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Response> {
    if body.is_empty() {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "the request body is empty; send a JSON object",
        ));
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let msg = if path == "." || path.is_empty() {
            format!("the body is not the expected JSON object: {}", e.inner())
        } else {
            format!("field `{path}`: {}", e.inner())
        };
        error(StatusCode::BAD_REQUEST, msg)
    })
}

/// A 500 for a failure a person must look at; the message is for the
/// authenticated caller (it may name a file in `PINCER_HOME`).
pub(crate) fn internal(e: impl std::fmt::Display) -> Response {
    error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}
