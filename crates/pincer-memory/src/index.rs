//! Search over the pages: the disposable SQLite FTS5 index, or the scan
//! fallback (ME2, ME3).
//!
//! # What the index is, and is not
//!
//! `<memory>/index.sqlite` is a cache of the page files, nothing more. It
//! holds no fact that is not in a page: delete it and the next search
//! rebuilds it with no loss. A file with another schema version
//! (`PRAGMA user_version`) or one SQLite cannot read is deleted and rebuilt,
//! and the result's `warnings` say so. Nothing but this module writes it,
//! and it is never written into the agent's workspace.
//!
//! # Sync, before every search
//!
//! One transaction per sync:
//! 1. list `pages/*.md` and `lstat` each (the count is `examined`);
//! 2. a file whose (size, mtime_ns, inode) equal the row's, and whose mtime
//!    is not *racy*, is unchanged: skipped without being read;
//! 3. any other file is read and hashed (SHA-256); an equal hash only
//!    refreshes the stat columns; a new hash re-parses and re-indexes the
//!    page (`reindexed`);
//! 4. a page that does not parse (front matter, UTF-8, symlink, size) loses
//!    its FTS row and is reported in `warnings`, naming the file, on every
//!    search until it is fixed; the other pages stay searchable;
//! 5. rows whose file is gone are deleted.
//!
//! *Racy* (as in git's racy-clean check): a file whose mtime lies within
//! [`RACY_NS`] (2 s) of the start of the sync that last looked at it could
//! still be edited within the same mtime tick at the same size, which the
//! stat alone cannot see; such files are hashed again on every sync until a
//! sync starts more than 2 s after their mtime. No hand edit is missed, even
//! on file systems with one- or two-second mtimes.
//!
//! Cost: the sync is one `readdir` plus one `lstat` per page (through the
//! directory handle), one `SELECT` of the stat columns, and reads only of
//! changed or racy files. With 10 000 pages the `lstat`s dominate: on the
//! 2-vCPU dev VM they alone take ~40 ms (4 µs per syscall), so a warm search
//! there is ~75 ms, not the 20 ms target (see `benches/memory.rs`).
//!
//! Two processes may sync at once: SQLite's lock serialises them (5 s busy
//! timeout). An index of another schema version is deleted and rebuilt, so
//! two pincer versions sharing one home rebuild it in turn.
//!
//! # Ranking
//!
//! FTS5 `bm25` with column weights title 10, tags 5, body 1; ties by id, so
//! a rebuilt index gives the same hits in the same order. The tokenizer is
//! `porter unicode61 remove_diacritics 2` (stems English, folds accents).
//! The query language is described in [`crate::query`].

use crate::error::MemoryError;
use crate::page::PageStore;
use crate::query::{Query, check_limit};
use crate::scan;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// See the module doc: how close to the last sync an mtime must be for the
/// file to be hashed again even when its stat did not change.
pub const RACY_NS: i64 = 2_000_000_000;

/// Which search ran (ME3: a degraded search says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Fts5,
    Scan,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fts5 => "fts5",
            Self::Scan => "scan",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One matching page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub id: String,
    pub title: String,
    /// Higher is better; only comparable within one result.
    pub score: f64,
    /// A few words around the match, matched words in `[…]`.
    pub snippet: String,
    pub pinned: bool,
}

/// What a search found and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    /// Page files stat'ed (or read, for the scan) by this search.
    pub examined: usize,
    /// Pages (re)parsed into the index by this search's sync.
    pub reindexed: usize,
    pub backend: Backend,
    /// Degradations and excluded pages, each naming its file.
    pub warnings: Vec<String>,
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    pub examined: usize,
    pub reindexed: usize,
    /// Index rows dropped because their file is gone.
    pub removed: usize,
    pub warnings: Vec<String>,
}

/// Whether this build has the SQLite FTS5 index (`pincer doctor` reports
/// it; without it every search is a scan).
pub fn fts5_available() -> bool {
    cfg!(feature = "fts5")
}

#[derive(Debug)]
enum Inner {
    #[cfg(feature = "fts5")]
    Fts(crate::fts::FtsIndex),
    Scan,
}

/// Search over one memory directory. One owner: methods take `&mut self`,
/// and SQLite's own locking guards against other processes.
#[derive(Debug)]
pub struct MemoryIndex {
    store: PageStore,
    index_path: PathBuf,
    inner: Inner,
    /// Said once, by the next result (e.g. "the index was rebuilt").
    pending: Vec<String>,
    /// Said by every result (e.g. "built without FTS5").
    degraded: Option<String>,
}

impl MemoryIndex {
    /// Opens the index of `<memory_dir>` (creating `pages/` and
    /// `index.sqlite` as needed). Without the `fts5` feature this is the scan
    /// fallback, and every result says so.
    pub fn open(memory_dir: impl Into<PathBuf>) -> Result<Self, MemoryError> {
        #[cfg(feature = "fts5")]
        {
            let store = PageStore::open(memory_dir)?;
            let index_path = store.memory_dir().join("index.sqlite");
            let (fts, pending) = crate::fts::FtsIndex::open(&index_path)?;
            Ok(Self {
                store,
                index_path,
                inner: Inner::Fts(fts),
                pending,
                degraded: None,
            })
        }
        #[cfg(not(feature = "fts5"))]
        {
            let mut me = Self::open_scan(memory_dir)?;
            me.degraded =
                Some("this build has no SQLite FTS5 index; searched by scanning every page".into());
            Ok(me)
        }
    }

    /// Opens the scan fallback whatever the build: no index file is read or
    /// written.
    pub fn open_scan(memory_dir: impl Into<PathBuf>) -> Result<Self, MemoryError> {
        let store = PageStore::open(memory_dir)?;
        let index_path = store.memory_dir().join("index.sqlite");
        Ok(Self {
            store,
            index_path,
            inner: Inner::Scan,
            pending: Vec::new(),
            degraded: None,
        })
    }

    pub fn backend(&self) -> Backend {
        match self.inner {
            #[cfg(feature = "fts5")]
            Inner::Fts(_) => Backend::Fts5,
            Inner::Scan => Backend::Scan,
        }
    }

    pub fn store(&self) -> &PageStore {
        &self.store
    }

    /// `<memory>/index.sqlite` (unused by the scan backend).
    pub fn index_path(&self) -> &Path {
        &self.index_path
    }

    /// Brings the index up to date with the page files (see the module doc).
    /// The scan backend only checks that every page parses.
    pub fn sync(&mut self) -> Result<SyncReport, MemoryError> {
        let mut report = match &mut self.inner {
            #[cfg(feature = "fts5")]
            Inner::Fts(fts) => fts.sync(&self.store)?,
            Inner::Scan => scan::sync(&self.store)?,
        };
        self.take_notes(&mut report.warnings);
        Ok(report)
    }

    /// Syncs, then searches. `query` is plain text (see [`crate::query`]);
    /// `limit` is 1..=100.
    pub fn search(&mut self, query: &str, limit: usize) -> Result<SearchResult, MemoryError> {
        let q = Query::parse(query)?;
        check_limit(limit)?;
        let backend = self.backend();
        let (examined, reindexed, mut warnings, hits) = if backend == Backend::Fts5 {
            let r = self.sync()?;
            let mut warnings = r.warnings;
            let mut hits = self.fts_search(&q, true, limit)?;
            if hits.is_empty() && q.terms.len() > 1 {
                hits = self.fts_search(&q, false, limit)?;
                if !hits.is_empty() {
                    warnings.push(any_word_note());
                }
            }
            (r.examined, r.reindexed, warnings, hits)
        } else {
            let (examined, pages, mut warnings) = scan::load(&self.store)?;
            let mut hits = scan::search(pages.clone(), &q, true, limit);
            if hits.is_empty() && q.terms.len() > 1 {
                hits = scan::search(pages, &q, false, limit);
                if !hits.is_empty() {
                    warnings.push(any_word_note());
                }
            }
            self.take_notes(&mut warnings);
            (examined, 0, warnings, hits)
        };
        warnings.dedup();
        Ok(SearchResult {
            hits,
            examined,
            reindexed,
            backend,
            warnings,
        })
    }

    /// Deletes the index and builds it again from the page files. The scan
    /// backend has nothing to rebuild and only syncs.
    pub fn rebuild(&mut self) -> Result<SyncReport, MemoryError> {
        let mut report = match &mut self.inner {
            #[cfg(feature = "fts5")]
            Inner::Fts(fts) => fts.rebuild(&self.store)?,
            Inner::Scan => scan::sync(&self.store)?,
        };
        self.take_notes(&mut report.warnings);
        Ok(report)
    }

    fn fts_search(&self, q: &Query, all: bool, limit: usize) -> Result<Vec<Hit>, MemoryError> {
        match &self.inner {
            #[cfg(feature = "fts5")]
            Inner::Fts(fts) => fts.search(q, all, limit),
            Inner::Scan => {
                let _ = (q, all, limit);
                Ok(Vec::new())
            }
        }
    }

    fn take_notes(&mut self, warnings: &mut Vec<String>) {
        let mut notes: Vec<String> = self.degraded.iter().cloned().collect();
        notes.append(&mut self.pending);
        notes.append(warnings);
        *warnings = notes;
    }
}

fn any_word_note() -> String {
    "no page holds every word of the query; showing pages that hold any of them".into()
}
