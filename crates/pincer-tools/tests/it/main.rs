//! One integration test binary for pincer-tools (CONVENTIONS: link once).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod escape;
mod files;
#[cfg(feature = "hw")]
mod hw;
mod protected;
mod sandbox;
mod shell;
mod support;
#[cfg(feature = "web")]
mod web;
