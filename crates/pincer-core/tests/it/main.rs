//! pincer-core through its public API: the gate (every level and risk,
//! deny lists, approvals, hooks, the trail it leaves) and the agent loop.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a failed fixture should panic

mod agent;
mod gate;
