//! The web UI: one HTML page, one script, one stylesheet, compiled into the
//! binary (no build step, no Node at run time, nothing fetched from
//! elsewhere). The page holds no secret: it pairs with a code, keeps the
//! token in the tab's `sessionStorage`, and talks to the same API as any
//! client. It renders everything the agent or the trail says as text
//! (`textContent`), never as HTML, and the Content-Security-Policy allows
//! only this origin's script and style, so a model's reply cannot run code.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/app.css");

fn asset(body: &'static str, kind: &'static str) -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(kind))],
        body,
    )
        .into_response()
}

pub(crate) async fn index() -> Response {
    asset(INDEX, "text/html; charset=utf-8")
}

pub(crate) async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

pub(crate) async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// Browsers ask for it on their own; there is none (and asking is not an
/// unauthorised request worth a 401 in the console).
pub(crate) async fn favicon() -> Response {
    axum::http::StatusCode::NO_CONTENT.into_response()
}
