//! pincer's long-term memory (ME1-ME3): markdown pages that are the
//! canonical copy of what the agent remembers, and a disposable SQLite FTS5
//! index over them.
//!
//! Owns: the page file format and its validation ([`page`]), atomic page
//! writes ([`PageStore`]), the index and its sync-before-search
//! ([`MemoryIndex`]), the query language ([`query`]) and the scan fallback
//! used when the build has no FTS5 (feature `fts5`, on by default).
//!
//! Consolidation ([`consolidate`], ME6) reads the audit trail and writes a
//! page through [`consolidate::PageSink`], which [`consolidate::AuditedStore`]
//! implements over the page store.
//!
//! Must not know: the CLI, agent tools or the gate. Those sit on top of
//! this API; nothing here prints.

pub mod consolidate;
pub mod error;
#[cfg(feature = "fts5")]
mod fts;
pub mod handoff;
pub mod index;
pub mod page;
pub mod prompt;
pub mod query;
mod scan;

pub use error::MemoryError;
pub use index::{Backend, Hit, MemoryIndex, SearchResult, SyncReport, fts5_available};
pub use page::{NewPage, Page, PageMeta, PageStore, Problem, parse_page, validate_id};
