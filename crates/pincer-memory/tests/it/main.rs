//! One integration-test binary for pincer-memory.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod pages;
mod search;

use pincer_memory::{MemoryError, NewPage, PageStore};
use tempfile::TempDir;

/// A fresh memory directory and its page store.
pub fn mem() -> (TempDir, PageStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = PageStore::open(dir.path().join("memory")).expect("open store");
    (dir, store)
}

pub fn new_page(title: &str, body: &str) -> NewPage {
    NewPage {
        title: title.into(),
        body: body.into(),
        ..NewPage::default()
    }
}

/// Asserts `r` failed naming `field`, and returns the message.
#[track_caller]
pub fn assert_field<T: std::fmt::Debug>(r: Result<T, MemoryError>, field: &str) -> String {
    let e = r.expect_err("expected an error");
    assert_eq!(e.field(), Some(field), "wrong field in: {e}");
    let msg = e.to_string();
    assert!(
        msg.contains(field),
        "message does not name `{field}`: {msg}"
    );
    msg
}
