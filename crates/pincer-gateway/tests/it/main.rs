//! The gateway's one integration test binary: a real gateway on a loopback
//! port, attacked and used through real sockets.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a failed fixture should panic

mod api;
mod approvals;
mod auth;
mod chat;
mod jcs;
mod load;
mod loadgen;
mod manifest;
mod pairing;
mod support;
