//! Fixtures shared by pincer's integration tests and benchmarks: approvers
//! that answer as told ([`Answer`], [`Silent`]), a tool that records what it
//! ran ([`Probe`]), a model that replays replies and records requests
//! ([`Model`]), and temporary homes with a scripted provider
//! ([`TempHome`]). A dev-dependency only; nothing here ships.
//!
//! pincer-core's own unit tests cannot use it (a dev-dependency that
//! depends on pincer-core would link a second copy of its types), so the
//! core's gate and agent tests are integration tests.

#![allow(clippy::expect_used, clippy::unwrap_used)] // fixtures: a broken one should panic

mod approver;
mod home;
mod model;
mod tool;

pub use approver::{Answer, Silent};
pub use home::TempHome;
pub use model::{Model, calls, text};
pub use tool::Probe;
