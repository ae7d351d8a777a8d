//! The runtime end to end on a temporary home with a scripted model.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a failed fixture should panic

mod runtime;
